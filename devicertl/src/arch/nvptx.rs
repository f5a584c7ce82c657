//! NVIDIA PTX backend (`nvptx64-nvidia-cuda`).

unsafe extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.x"]
    fn tid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.x"]
    fn ntid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.x"]
    fn ctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.x"]
    fn nctaid_x() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.y"]
    fn tid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.tid.z"]
    fn tid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.y"]
    fn ntid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ntid.z"]
    fn ntid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.y"]
    fn ctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.ctaid.z"]
    fn ctaid_z() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.y"]
    fn nctaid_y() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.nctaid.z"]
    fn nctaid_z() -> u32;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn vote_ballot_sync(mask: u32, pred: bool) -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn laneid() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.globaltimer"]
    fn globaltimer() -> u64;
    #[link_name = "llvm.nvvm.activemask"]
    fn activemask() -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
    #[link_name = "llvm.trap"]
    fn llvm_trap() -> !;
    // Provided by ir/nvptx.ll.
    fn __rustomp_team_shared_ptr() -> *mut u8;
    fn __rustomp_dynamic_shared_ptr() -> *mut u8;
    fn __rustomp_team_barrier();
    fn __rustomp_region_barrier(count: u32);
    fn __rustomp_has_subset_barrier() -> bool;
    fn __rustomp_subset_barrier_init(barrier: *mut u64, count: u32);
    fn __rustomp_subset_barrier_wait(barrier: *mut u64);
    fn __rustomp_subset_barrier_inval(barrier: *mut u64);
    fn __rustomp_team_fence();
    fn __rustomp_team_fence_release();
    fn __rustomp_team_fence_acquire();
    fn __rustomp_pause();
}

// SAFETY (all wrappers below): the PTX special registers and warp intrinsics have no
// preconditions beyond being executed by a device thread, which every caller is.

#[inline(always)]
pub fn thread_id_in_block() -> u32 {
    // SAFETY: see above.
    unsafe { tid_x() }
}
#[inline(always)]
pub fn num_threads_in_block() -> u32 {
    // SAFETY: see above.
    unsafe { ntid_x() }
}
#[inline(always)]
pub fn block_id() -> u32 {
    // SAFETY: see above.
    unsafe { ctaid_x() }
}
#[inline(always)]
pub fn num_blocks() -> u32 {
    // SAFETY: see above.
    unsafe { nctaid_x() }
}
/// Thread, block and grid extents in dimension `dim` (0 = x, 1 = y, 2 = z; others as x).
#[inline(always)]
pub fn thread_id_in_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => tid_y(),
            2 => tid_z(),
            _ => tid_x(),
        }
    }
}
#[inline(always)]
pub fn block_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => ntid_y(),
            2 => ntid_z(),
            _ => ntid_x(),
        }
    }
}
#[inline(always)]
pub fn block_id_in_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => ctaid_y(),
            2 => ctaid_z(),
            _ => ctaid_x(),
        }
    }
}
#[inline(always)]
pub fn grid_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => nctaid_y(),
            2 => nctaid_z(),
            _ => nctaid_x(),
        }
    }
}
#[inline(always)]
pub fn warp_size() -> u32 {
    32
}
/// Every lane of a warp: the mask for warp-synchronous code that every lane reaches together
/// (a mask taken from `activemask()` after divergence can leave out a source lane).
pub const FULL_MASK: u64 = 0xffff_ffff;
/// Lanes of `mask` whose `pred` is true (the calling lanes must all be in `mask`).
#[inline(always)]
pub fn ballot(mask: u64, pred: bool) -> u64 {
    // SAFETY: see above.
    unsafe { vote_ballot_sync(mask as u32, pred) as u64 }
}
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: see above.
    unsafe { laneid() }
}
/// Lanes of the calling warp that are executing this instruction.
#[inline(always)]
pub fn active_mask() -> u64 {
    // SAFETY: see above.
    unsafe { activemask() as u64 }
}
/// Waits for the lanes in `mask` (a fence among them, not a team barrier).
#[inline(always)]
pub fn sync_warp(mask: u64) {
    // SAFETY: see above; every lane named in `mask` must reach the same call.
    unsafe { bar_warp_sync(mask as u32) }
}
/// The value of lane `lane_id() + delta` (within `width`), or our own when that lane is outside.
#[inline(always)]
pub fn shuffle_down_u32(mask: u64, value: u32, delta: u32, width: u32) -> u32 {
    let clamp = ((32 - width) << 8) | 0x1f;
    // SAFETY: see above.
    unsafe { shfl_sync_down_i32(mask as u32, value as i32, delta, clamp) as u32 }
}
/// Every thread of the team meets here; memory is ordered at team scope.
#[inline(always)]
pub fn team_barrier() {
    // SAFETY: see above; all threads of the CTA that have not exited reach it.
    unsafe { __rustomp_team_barrier() }
}
/// Named barriers exist: `region_barrier` waits for `count` threads (a multiple of the warp
/// size) without the rest of the team.
pub const HAS_REGION_BARRIER: bool = true;
/// `count` threads of the team (a multiple of `warp_size()`) meet; memory is ordered among them.
#[inline(always)]
pub fn region_barrier(count: u32) {
    // SAFETY: see above; exactly `count` threads of the CTA reach this barrier id together.
    unsafe { __rustomp_region_barrier(count) }
}
/// Whether the target has `mbarrier` (sm_80 and later; decided when the program is compiled for
/// its `--offload-arch`, through `__nvvm_reflect("__CUDA_ARCH")`): a hardware barrier for any
/// number of threads, which a region that is not whole warps uses. `barrier.sync id, count`
/// cannot serve such a region: its count must be a multiple of the warp size, and a thread
/// executing it waits for every non-exited thread of its warp, whose other lanes are not in the
/// region (PTX ISA, `barrier`). A barrier counted in memory works, but tools (compute-sanitizer
/// racecheck) do not see it and report every access it orders as a race.
#[inline(always)]
pub fn has_subset_barrier() -> bool {
    // SAFETY: see above.
    unsafe { __rustomp_has_subset_barrier() }
}
/// One thread sets up the subset barrier at `barrier` for `count` arrivals per phase.
///
/// # Safety
/// `barrier` is 8 bytes of team-shared memory, 8-byte aligned, not a barrier in use (fresh or
/// taken down by `subset_barrier_inval`); a team barrier separates this from its first use.
#[inline(always)]
pub unsafe fn subset_barrier_init(barrier: *mut u64, count: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { __rustomp_subset_barrier_init(barrier, count) }
}
/// One of the `count` threads (the count given to `subset_barrier_init`) arrives and waits for
/// the others; memory is ordered among them (arrive releases, the wait acquires, CTA scope).
///
/// # Safety
/// `barrier` was set up by `subset_barrier_init` for `count` threads, which all call this.
#[inline(always)]
pub unsafe fn subset_barrier_wait(barrier: *mut u64, _count: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { __rustomp_subset_barrier_wait(barrier) }
}
/// The region is over: the barrier's memory may be set up again.
///
/// # Safety
/// `barrier` was set up by `subset_barrier_init`; a team barrier separates its last use.
#[inline(always)]
pub unsafe fn subset_barrier_inval(barrier: *mut u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { __rustomp_subset_barrier_inval(barrier) }
}
#[inline(always)]
pub fn team_fence() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence() }
}
/// Earlier memory accesses are ordered before later writes, at team scope.
#[inline(always)]
pub fn team_fence_release() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence_release() }
}
/// Earlier reads are ordered before later memory accesses, at team scope.
#[inline(always)]
pub fn team_fence_acquire() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence_acquire() }
}
/// Start of the launch's dynamic shared memory.
#[inline(always)]
pub fn dynamic_shared() -> *mut u8 {
    // SAFETY: see above.
    unsafe { __rustomp_dynamic_shared_ptr() }
}
/// Start of this team's `TEAM_SHARED_BYTES` of shared memory.
#[inline(always)]
pub fn team_shared() -> *mut u8 {
    // SAFETY: see above.
    unsafe { __rustomp_team_shared_ptr() }
}
/// Nanoseconds from the GPU's global timer.
#[inline(always)]
pub fn clock_ns() -> u64 {
    // SAFETY: see above.
    unsafe { globaltimer() }
}
/// Resolution of `clock_ns` ticks, in seconds.
pub const CLOCK_TICK_SECONDS: f64 = 1.0e-9;
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: see above.
    unsafe { llvm_trap() }
}

unsafe extern "C" {
    fn vprintf(format: *const u8, args: *const u8) -> i32;
}
/// Prints `message` (any text, `%` included) through the driver's printf.
pub fn print_message(message: &core::ffi::CStr) {
    // vprintf's argument buffer: the one `%s` argument, 8-byte aligned.
    let args: [*const u8; 1] = [message.as_ptr() as *const u8];
    // SAFETY: a NUL-terminated format whose one conversion takes the pointer in `args`.
    unsafe { vprintf(c"%s".as_ptr() as *const u8, args.as_ptr() as *const u8) };
}

unsafe extern "C" {
    /// The CUDA driver provides `malloc`/`free` for device code.
    pub fn malloc(size: usize) -> *mut u8;
    pub fn free(ptr: *mut u8);
}
/// One step of a spin-wait: a short `nanosleep` on sm_70 and later (ir/nvptx.ll).
#[inline(always)]
pub fn pause() {
    // SAFETY: see above.
    unsafe { __rustomp_pause() }
}

/// The counting barrier (below sm_80) is not marked: compute-sanitizer's racecheck does not see
/// it, so neither does the virtual GPU's, which is how the need for mbarriers on sm_80+ showed.
#[inline(always)]
pub fn note_counting_barrier_arrival(_phase: usize) {}
#[inline(always)]
pub fn note_counting_barrier_departure(_phase: usize) {}

/// Team memory the runtime reads or writes plainly where another thread may touch it: the host
/// emulation checks that a hardware meeting orders such accesses (`host::race`); nothing here.
#[inline(always)]
pub fn watch_read(_addr: *const u8, _bytes: usize, _what: &'static str) {}
/// As `watch_read`, for a write.
#[inline(always)]
pub fn watch_write(_addr: *const u8, _bytes: usize, _what: &'static str) {}

/// `p` (amdgcn hides it from its link-time indirect-call specialization; nvptx has none).
#[inline(always)]
pub fn opaque_code_ptr(p: *const core::ffi::c_void) -> *const core::ffi::c_void {
    p
}
