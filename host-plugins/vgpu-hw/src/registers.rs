//! PTX special registers, warp-level operations, barriers and fences, as NVVM intrinsics name
//! them (`llvm.nvvm.read.ptx.sreg.tid.x` is `__vgpu_nvvm_read_ptx_sreg_tid_x`), on the calling
//! emulated thread's team (`team`).

use crate::team::{self, with_team, Pause};
use std::cell::Cell;

std::thread_local! {
    /// The running launch's grid and block dimensions (`[n, 1, 1]` for a one-dimensional one).
    static DIMENSIONS: Cell<([u32; 3], [u32; 3])> = const { Cell::new(([1; 3], [1; 3])) };
}

/// Sets the dimensions of the launch the calling OS thread runs.
pub fn set_dimensions(grid: [u32; 3], block: [u32; 3]) {
    DIMENSIONS.with(|d| d.set((grid, block)));
    crate::amdgcn::set_dispatch_packet(grid, block);
}

pub(crate) fn geometry() -> (u32, u32, u32, u32, u32) {
    let me = team::thread();
    with_team(|t| (me, t.threads, t.block, t.blocks, t.warp))
}

/// Component `axis` of linear index `index` in a box of `dims` (x fastest, as CUDA numbers
/// threads and blocks).
fn component(index: u32, dims: [u32; 3], axis: usize) -> u32 {
    match axis {
        0 => index % dims[0].max(1),
        1 => index / dims[0].max(1) % dims[1].max(1),
        _ => index / (dims[0].max(1) * dims[1].max(1)),
    }
}

pub(crate) fn thread_index(axis: usize) -> u32 {
    component(geometry().0, DIMENSIONS.with(Cell::get).1, axis)
}
pub(crate) fn block_index(axis: usize) -> u32 {
    component(geometry().2, DIMENSIONS.with(Cell::get).0, axis)
}
pub(crate) fn block_dimension(axis: usize) -> u32 {
    DIMENSIONS.with(Cell::get).1[axis]
}
pub(crate) fn grid_dimension(axis: usize) -> u32 {
    DIMENSIONS.with(Cell::get).0[axis]
}

pub(crate) fn lane() -> u32 {
    let (me, _, _, _, warp) = geometry();
    me % warp
}

/// Special registers as exported functions of no arguments (nvvm's here, amdgcn's in `amdgcn`).
macro_rules! registers {
    ($($name:ident => $value:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $value
        }
    )*};
}
pub(crate) use registers;

registers! {
    __vgpu_nvvm_read_ptx_sreg_tid_x => thread_index(0);
    __vgpu_nvvm_read_ptx_sreg_tid_y => thread_index(1);
    __vgpu_nvvm_read_ptx_sreg_tid_z => thread_index(2);
    __vgpu_nvvm_read_ptx_sreg_ntid_x => block_dimension(0);
    __vgpu_nvvm_read_ptx_sreg_ntid_y => block_dimension(1);
    __vgpu_nvvm_read_ptx_sreg_ntid_z => block_dimension(2);
    __vgpu_nvvm_read_ptx_sreg_ctaid_x => block_index(0);
    __vgpu_nvvm_read_ptx_sreg_ctaid_y => block_index(1);
    __vgpu_nvvm_read_ptx_sreg_ctaid_z => block_index(2);
    __vgpu_nvvm_read_ptx_sreg_nctaid_x => grid_dimension(0);
    __vgpu_nvvm_read_ptx_sreg_nctaid_y => grid_dimension(1);
    __vgpu_nvvm_read_ptx_sreg_nctaid_z => grid_dimension(2);
    __vgpu_nvvm_read_ptx_sreg_laneid => lane();
    __vgpu_nvvm_read_ptx_sreg_warpsize => geometry().4;
    __vgpu_nvvm_read_ptx_sreg_warpid => geometry().0 / geometry().4;
    __vgpu_nvvm_read_ptx_sreg_nwarpid => 64;
    __vgpu_nvvm_read_ptx_sreg_smid => 0;
    __vgpu_nvvm_read_ptx_sreg_nsmid => 1;
    __vgpu_nvvm_read_ptx_sreg_lanemask_eq => 1 << lane();
    __vgpu_nvvm_read_ptx_sreg_lanemask_lt => (1u32 << lane()) - 1;
    __vgpu_nvvm_read_ptx_sreg_lanemask_le => ((1u64 << (lane() + 1)) - 1) as u32;
    __vgpu_nvvm_read_ptx_sreg_lanemask_gt => !(((1u64 << (lane() + 1)) - 1) as u32);
    __vgpu_nvvm_read_ptx_sreg_lanemask_ge => !((1u32 << lane()) - 1);
    __vgpu_nvvm_read_ptx_sreg_clock => clock_ns() as u32;
    __vgpu_nvvm_activemask => team::converged_lanes() as u32;
}

pub(crate) fn clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_read_ptx_sreg_globaltimer() -> u64 {
    clock_ns()
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_read_ptx_sreg_clock64() -> u64 {
    clock_ns()
}

/// `i1` arguments arrive in the low bit of a byte whose other bits are undefined.
pub(crate) fn bit(value: u8) -> bool {
    value & 1 != 0
}

/// The lanes of `mask` whose predicate is true.
fn ballot(mask: u32, pred: bool) -> u32 {
    let (values, met) = team::warp_exchange(mask as u64, pred as u32);
    (0..32)
        .filter(|&l| met & (1 << l) != 0 && values[l] != 0)
        .fold(0u32, |b, l| b | 1 << l)
        & mask
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_ballot_sync(mask: u32, pred: u8) -> u32 {
    ballot(mask, bit(pred))
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_all_sync(mask: u32, pred: u8) -> bool {
    let live = mask & team::active_lanes() as u32;
    ballot(mask, bit(pred)) & live == live
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_any_sync(mask: u32, pred: u8) -> bool {
    ballot(mask, bit(pred)) != 0
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_vote_uni_sync(mask: u32, pred: u8) -> bool {
    let live = mask & team::active_lanes() as u32;
    let votes = ballot(mask, bit(pred)) & live;
    votes == 0 || votes == live
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_bar_warp_sync(mask: u32) {
    team::warp_sync(mask as u64);
}

/// Which lane a PTX `shfl.sync` reads (its `.mode`).
#[derive(Clone, Copy)]
enum Mode {
    Up,
    Down,
    Butterfly,
    Index,
}

/// The lane `lane` reads in `shfl.sync.<mode> d, a, b, c`, as the ISA defines it: `c` packs the
/// segment mask (bits 12:8) and the clamp (bits 4:0); `None` (the lane reads its own value)
/// when the source is outside its segment.
fn source_lane(mode: Mode, lane: u32, b: u32, c: u32) -> Option<u32> {
    let segment_mask = (c >> 8) & 0x1f;
    let min_lane = lane & segment_mask;
    let max_lane = min_lane | (c & 0x1f & !segment_mask);
    let (j, in_range) = match mode {
        Mode::Up => {
            let j = lane as i64 - b as i64;
            (j, j >= max_lane as i64)
        }
        Mode::Down => {
            let j = lane as i64 + b as i64;
            (j, j <= max_lane as i64)
        }
        Mode::Butterfly => {
            let j = (lane ^ b) as i64;
            (j, j <= max_lane as i64)
        }
        Mode::Index => {
            let j = (min_lane | (b & 0x1f & !segment_mask)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    (in_range && (0..32).contains(&j)).then_some(j as u32)
}

fn shuffle(mode: Mode, mask: u32, value: u32, b: u32, c: u32) -> u32 {
    let lane = lane();
    let (values, met) = team::warp_exchange(mask as u64, value);
    match source_lane(mode, lane, b, c) {
        Some(j) if met & (1 << j) != 0 => values[j as usize],
        _ => value,
    }
}

macro_rules! shuffles {
    ($($int:ident, $float:ident => $mode:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $int(mask: u32, value: u32, b: u32, c: u32) -> u32 {
            shuffle($mode, mask, value, b, c)
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn $float(mask: u32, value: f32, b: u32, c: u32) -> f32 {
            f32::from_bits(shuffle($mode, mask, value.to_bits(), b, c))
        }
    )*};
}

shuffles! {
    __vgpu_nvvm_shfl_sync_down_i32, __vgpu_nvvm_shfl_sync_down_f32 => Mode::Down;
    __vgpu_nvvm_shfl_sync_up_i32, __vgpu_nvvm_shfl_sync_up_f32 => Mode::Up;
    __vgpu_nvvm_shfl_sync_bfly_i32, __vgpu_nvvm_shfl_sync_bfly_f32 => Mode::Butterfly;
    __vgpu_nvvm_shfl_sync_idx_i32, __vgpu_nvvm_shfl_sync_idx_f32 => Mode::Index;
}

/// `bar.sync 0` / `barrier.sync 0`: every thread of the team that has not exited.
macro_rules! team_barriers {
    ($($name:ident($($arg:ident),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: u32),*) {
            $(let _ = $arg;)*
            team::team_barrier()
        }
    )*};
}

team_barriers! {
    __vgpu_nvvm_barrier0();
    __vgpu_nvvm_barrier_sync(_id);
    __vgpu_nvvm_barrier_cta_sync_all(_id);
    __vgpu_nvvm_barrier_cta_sync_aligned_all(_id);
}

/// `barrier.sync id, count`: `count` threads meet at barrier `id`.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_cta_sync_count(id: u32, count: u32) {
    if id == 0 && count == geometry().1 {
        return team::team_barrier();
    }
    team::named_barrier(id, count)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_cta_sync_aligned_count(id: u32, count: u32) {
    __vgpu_nvvm_barrier_cta_sync_count(id, count)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_barrier_sync_cnt(id: u32, count: u32) {
    __vgpu_nvvm_barrier_cta_sync_count(id, count)
}

#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_init_shared(barrier: *mut u64, count: u32) {
    team::mbarrier_init(barrier as usize, count)
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_inval_shared(barrier: *mut u64) {
    team::mbarrier_inval(barrier as usize)
}
/// `mbarrier.arrive`: the arrival and the wait for the phase to complete (the token's wait
/// then finds it complete), which is what arrive-then-wait does.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_arrive_shared(barrier: *mut u64) -> u64 {
    team::mbarrier_arrive_and_wait(barrier as usize);
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_test_wait_shared(_barrier: *mut u64, _token: u64) -> bool {
    true
}
/// sm_90's `mbarrier.try_wait` (CTA scope, acquire): as `test_wait`, the phase is complete.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_mbarrier_try_wait_scope_cta_space_cta(
    _barrier: *mut u64,
    _token: u64,
) -> bool {
    true
}

macro_rules! fences {
    ($($name:ident;)*) => {$(
        /// One team runs on one OS thread; the fence orders its memory for the host's threads
        /// (the host-call port).
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() {
            core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst)
        }
    )*};
}

fences! {
    __vgpu_nvvm_membar_cta;
    __vgpu_nvvm_membar_gl;
    __vgpu_nvvm_membar_sys;
    __vgpu_nvvm_fence_sc_cluster;
}

/// `nanosleep.u32`: a spin-wait's pause; the other emulated threads run.
#[unsafe(no_mangle)]
pub extern "C" fn __vgpu_nvvm_nanosleep(_ns: u32) {
    team::pause(Pause::Spinning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_dimensional_ids_number_x_fastest() {
        let ids: Vec<[u32; 3]> = (0..16)
            .map(|i| [0, 1, 2].map(|axis| component(i, [4, 2, 2], axis)))
            .collect();
        assert_eq!(ids[0], [0, 0, 0]);
        assert_eq!(ids[5], [1, 1, 0]);
        assert_eq!(ids[13], [1, 1, 1]);
        assert_eq!(ids[15], [3, 1, 1]);
    }

    #[test]
    fn shuffle_sources_follow_the_isa() {
        // Full warp, clamp 31: down by 1 reads the next lane, the last lane its own.
        assert_eq!(source_lane(Mode::Down, 3, 1, 0x1f), Some(4));
        assert_eq!(source_lane(Mode::Down, 31, 1, 0x1f), None);
        // Segments of 8 (c = (32 - 8) << 8 | 0x1f): down stays in the segment.
        let c = (24 << 8) | 0x1f;
        assert_eq!(source_lane(Mode::Down, 7, 1, c), None);
        assert_eq!(source_lane(Mode::Index, 9, 2, c), Some(10));
        // Up: c's clamp is 0; lanes below the offset read their own.
        assert_eq!(source_lane(Mode::Up, 1, 2, 0), None);
        assert_eq!(source_lane(Mode::Up, 5, 2, 0), Some(3));
        assert_eq!(source_lane(Mode::Butterfly, 5, 1, 0x1f), Some(4));
    }
}
