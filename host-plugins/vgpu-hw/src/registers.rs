//! PTX special registers, warp-level operations, barriers and fences, as NVVM intrinsics name
//! them (`llvm.nvvm.read.ptx.sreg.tid.x` is `__vgpu_nvvm_read_ptx_sreg_tid_x`), on the calling
//! emulated thread's team.

use devicertl::arch as hw;
use devicertl::arch::ShuffleMode;

macro_rules! registers {
    ($($name:ident => $value:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $value
        }
    )*};
}

registers! {
    __vgpu_nvvm_read_ptx_sreg_tid_x => hw::thread_id_in_dim(0);
    __vgpu_nvvm_read_ptx_sreg_tid_y => hw::thread_id_in_dim(1);
    __vgpu_nvvm_read_ptx_sreg_tid_z => hw::thread_id_in_dim(2);
    __vgpu_nvvm_read_ptx_sreg_ntid_x => hw::block_dim(0);
    __vgpu_nvvm_read_ptx_sreg_ntid_y => hw::block_dim(1);
    __vgpu_nvvm_read_ptx_sreg_ntid_z => hw::block_dim(2);
    __vgpu_nvvm_read_ptx_sreg_ctaid_x => hw::block_id_in_dim(0);
    __vgpu_nvvm_read_ptx_sreg_ctaid_y => hw::block_id_in_dim(1);
    __vgpu_nvvm_read_ptx_sreg_ctaid_z => hw::block_id_in_dim(2);
    __vgpu_nvvm_read_ptx_sreg_nctaid_x => hw::grid_dim(0);
    __vgpu_nvvm_read_ptx_sreg_nctaid_y => hw::grid_dim(1);
    __vgpu_nvvm_read_ptx_sreg_nctaid_z => hw::grid_dim(2);
    __vgpu_nvvm_read_ptx_sreg_laneid => hw::lane_id();
    __vgpu_nvvm_read_ptx_sreg_warpsize => hw::warp_size();
    __vgpu_nvvm_read_ptx_sreg_warpid => hw::thread_id_in_block() / hw::warp_size();
    __vgpu_nvvm_read_ptx_sreg_nwarpid => 64;
    __vgpu_nvvm_read_ptx_sreg_smid => 0;
    __vgpu_nvvm_read_ptx_sreg_nsmid => 1;
    __vgpu_nvvm_read_ptx_sreg_lanemask_eq => 1 << hw::lane_id();
    __vgpu_nvvm_read_ptx_sreg_lanemask_lt => (1u32 << hw::lane_id()) - 1;
    __vgpu_nvvm_read_ptx_sreg_lanemask_le => ((1u64 << (hw::lane_id() + 1)) - 1) as u32;
    __vgpu_nvvm_read_ptx_sreg_lanemask_gt => !(((1u64 << (hw::lane_id() + 1)) - 1) as u32);
    __vgpu_nvvm_read_ptx_sreg_lanemask_ge => !((1u32 << hw::lane_id()) - 1);
    __vgpu_nvvm_read_ptx_sreg_clock => hw::clock_ns() as u32;
    __vgpu_nvvm_activemask => hw::active_mask() as u32;
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_read_ptx_sreg_globaltimer() -> u64 {
    hw::clock_ns()
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_read_ptx_sreg_clock64() -> u64 {
    hw::clock_ns()
}

/// `i1` arguments arrive in the low bit of a byte whose other bits are undefined.
fn bit(value: u8) -> bool {
    value & 1 != 0
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_ballot_sync(mask: u32, pred: u8) -> u32 {
    hw::ballot(mask as u64, bit(pred)) as u32
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_all_sync(mask: u32, pred: u8) -> bool {
    hw::ballot(mask as u64, bit(pred)) as u32 == mask & hw::active_mask() as u32
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_any_sync(mask: u32, pred: u8) -> bool {
    hw::ballot(mask as u64, bit(pred)) != 0
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_uni_sync(mask: u32, pred: u8) -> bool {
    let votes = hw::ballot(mask as u64, bit(pred)) as u32;
    votes == 0 || votes == mask & hw::active_mask() as u32
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_bar_warp_sync(mask: u32) {
    hw::sync_warp(mask as u64)
}

macro_rules! shuffles {
    ($($int:ident, $float:ident => $mode:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $int(mask: u32, value: u32, b: u32, c: u32) -> u32 {
            hw::shuffle_sync($mode, mask as u64, value, b, c)
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn $float(mask: u32, value: f32, b: u32, c: u32) -> f32 {
            f32::from_bits(hw::shuffle_sync($mode, mask as u64, value.to_bits(), b, c))
        }
    )*};
}

shuffles! {
    __vgpu_nvvm_shfl_sync_down_i32, __vgpu_nvvm_shfl_sync_down_f32 => ShuffleMode::Down;
    __vgpu_nvvm_shfl_sync_up_i32, __vgpu_nvvm_shfl_sync_up_f32 => ShuffleMode::Up;
    __vgpu_nvvm_shfl_sync_bfly_i32, __vgpu_nvvm_shfl_sync_bfly_f32 => ShuffleMode::Butterfly;
    __vgpu_nvvm_shfl_sync_idx_i32, __vgpu_nvvm_shfl_sync_idx_f32 => ShuffleMode::Index;
}

/// `bar.sync 0` / `barrier.sync 0`: every thread of the team that has not exited.
macro_rules! team_barriers {
    ($($name:ident($($arg:ident),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: u32),*) {
            $(let _ = $arg;)*
            hw::team_barrier()
        }
    )*};
}

team_barriers! {
    __vgpu_nvvm_barrier0();
    __vgpu_nvvm_barrier_sync(_id);
    __vgpu_nvvm_barrier_cta_sync_all(_id);
    __vgpu_nvvm_barrier_cta_sync_aligned_all(_id);
}

/// `barrier.sync id, count`: `count` threads (whole warps) meet. The emulation has one such
/// barrier besides barrier 0, which is the one the device runtime uses (id 1).
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_cta_sync_count(id: u32, count: u32) {
    if id == 0 && count == hw::num_threads_in_block() {
        return hw::team_barrier();
    }
    hw::region_barrier(count)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_cta_sync_aligned_count(id: u32, count: u32) {
    __vgpu_nvvm_barrier_cta_sync_count(id, count)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_sync_cnt(id: u32, count: u32) {
    __vgpu_nvvm_barrier_cta_sync_count(id, count)
}

/// `mbarrier.init.shared`: the emulation keeps the count; the object in team memory is not
/// touched (as `arch::host`'s subset barrier).
///
/// # Safety
/// As on the GPU: `barrier` is the team's mbarrier object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_nvvm_mbarrier_init_shared(barrier: *mut u64, count: u32) {
    // SAFETY: forwarded.
    unsafe { hw::subset_barrier_init(barrier, count) }
}
/// # Safety
/// As `__vgpu_nvvm_mbarrier_init_shared`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_nvvm_mbarrier_inval_shared(barrier: *mut u64) {
    // SAFETY: forwarded.
    unsafe { hw::subset_barrier_inval(barrier) }
}
/// `mbarrier.arrive`: the arrival and the wait for the phase to complete (the token's wait
/// then finds it complete), which is what arrive-then-wait does.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_arrive_shared(_barrier: *mut u64) -> u64 {
    hw::subset_barrier_arrive_and_wait();
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_test_wait_shared(_barrier: *mut u64, _token: u64) -> bool {
    true
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_try_wait_shared(_barrier: *mut u64, _token: u64) -> bool {
    true
}

macro_rules! fences {
    ($($name:ident;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() {
            hw::fence(core::sync::atomic::Ordering::SeqCst)
        }
    )*};
}

fences! {
    __vgpu_nvvm_membar_cta;
    __vgpu_nvvm_membar_gl;
    __vgpu_nvvm_membar_sys;
    __vgpu_nvvm_fence_sc_cluster;
}

/// `nanosleep.u32`: a spin-wait's pause; let the other emulated threads run.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_nanosleep(_ns: u32) {
    std::thread::yield_now()
}
