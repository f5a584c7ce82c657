//! The `ompx_*` kernel-language routines of clang's `<ompx.h>` (used in `ompx_bare` kernels,
//! which launch with the grid and block the program asks for, in up to three dimensions), and
//! the dynamic shared memory queries.

use crate::arch;
use core::ffi::c_void;

#[unsafe(no_mangle)]
pub extern "C" fn ompx_thread_id(dim: i32) -> i32 {
    arch::thread_id_in_dim(dim as u32) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_block_id(dim: i32) -> i32 {
    arch::block_id_in_dim(dim as u32) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_block_dim(dim: i32) -> i32 {
    arch::block_dim(dim as u32) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_grid_dim(dim: i32) -> i32 {
    arch::grid_dim(dim as u32) as i32
}

/// Every thread of the block meets; memory is ordered at block scope whatever `ordering` asks.
#[unsafe(no_mangle)]
pub extern "C" fn ompx_sync_block(_ordering: i32) {
    arch::team_barrier();
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_sync_block_acq_rel() {
    arch::team_barrier();
}
/// The threads of a warp may arrive from different places (the barrier is not the aligned form).
#[unsafe(no_mangle)]
pub extern "C" fn ompx_sync_block_divergent(_ordering: i32) {
    arch::team_barrier();
}

#[unsafe(no_mangle)]
pub extern "C" fn ompx_ballot_sync(mask: u64, pred: i32) -> u64 {
    arch::ballot(mask, pred != 0)
}

fn shuffle_down_u64(mask: u64, value: u64, delta: u32, width: u32) -> u64 {
    let low = arch::shuffle_down_u32(mask, value as u32, delta, width) as u64;
    let high = arch::shuffle_down_u32(mask, (value >> 32) as u32, delta, width) as u64;
    (high << 32) | low
}

#[unsafe(no_mangle)]
pub extern "C" fn ompx_shfl_down_sync_i(mask: u64, value: i32, delta: u32, width: i32) -> i32 {
    arch::shuffle_down_u32(mask, value as u32, delta, width as u32) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_shfl_down_sync_f(mask: u64, value: f32, delta: u32, width: i32) -> f32 {
    f32::from_bits(arch::shuffle_down_u32(
        mask,
        value.to_bits(),
        delta,
        width as u32,
    ))
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_shfl_down_sync_l(mask: u64, value: i64, delta: u32, width: i32) -> i64 {
    shuffle_down_u64(mask, value as u64, delta, width as u32) as i64
}
#[unsafe(no_mangle)]
pub extern "C" fn ompx_shfl_down_sync_d(mask: u64, value: f64, delta: u32, width: i32) -> f64 {
    f64::from_bits(shuffle_down_u64(mask, value.to_bits(), delta, width as u32))
}

/// The launch's dynamic shared memory (`ompx_dyn_cgroup_mem(N)` on the construct): the same
/// block for every thread of a team, after all static shared memory.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_get_dynamic_shared() -> *mut c_void {
    arch::dynamic_shared() as *mut c_void
}
#[unsafe(no_mangle)]
pub extern "C" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
    __kmpc_get_dynamic_shared()
}
#[unsafe(no_mangle)]
pub extern "C" fn llvm_omp_get_dynamic_shared() -> *mut c_void {
    __kmpc_get_dynamic_shared()
}
