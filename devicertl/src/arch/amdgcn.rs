//! AMD GCN backend (`amdgcn-amd-amdhsa`), code object v5.

unsafe extern "C" {
    #[link_name = "llvm.amdgcn.s.sleep"]
    fn s_sleep(clocks_of_64: i32);
    #[link_name = "llvm.amdgcn.workitem.id.x"]
    fn workitem_id_x() -> u32;
    #[link_name = "llvm.amdgcn.workitem.id.y"]
    fn workitem_id_y() -> u32;
    #[link_name = "llvm.amdgcn.workitem.id.z"]
    fn workitem_id_z() -> u32;
    #[link_name = "llvm.amdgcn.workgroup.id.x"]
    fn workgroup_id_x() -> u32;
    #[link_name = "llvm.amdgcn.workgroup.id.y"]
    fn workgroup_id_y() -> u32;
    #[link_name = "llvm.amdgcn.workgroup.id.z"]
    fn workgroup_id_z() -> u32;
    #[link_name = "llvm.amdgcn.mbcnt.lo"]
    fn mbcnt_lo(mask: u32, base: u32) -> u32;
    #[link_name = "llvm.amdgcn.mbcnt.hi"]
    fn mbcnt_hi(mask: u32, base: u32) -> u32;
    #[link_name = "llvm.amdgcn.ballot.i64"]
    fn ballot_i64(pred: bool) -> u64;
    #[link_name = "llvm.amdgcn.ds.bpermute"]
    fn ds_bpermute(index: u32, value: u32) -> u32;
    #[link_name = "llvm.amdgcn.wave.barrier"]
    fn wave_barrier();
    #[link_name = "llvm.amdgcn.s.memrealtime"]
    fn memrealtime() -> u64;
    #[link_name = "llvm.amdgcn.wavefrontsize"]
    fn wavefrontsize() -> u32;
    #[link_name = "llvm.trap"]
    fn llvm_trap() -> !;
    // Provided by ir/amdgcn.ll.
    fn __rustomp_team_shared_ptr() -> *mut u8;
    fn __rustomp_dynamic_shared_ptr() -> *mut u8;
    fn __rustomp_team_barrier();
    fn __rustomp_opaque_code_ptr(p: *const core::ffi::c_void) -> *const core::ffi::c_void;
    fn __rustomp_team_fence();
    fn __rustomp_team_fence_release();
    fn __rustomp_team_fence_acquire();
    fn __rustomp_workgroup_size(dim: u32) -> u32;
    fn __rustomp_grid_size(dim: u32) -> u32;
}

// SAFETY (all wrappers below): the work-item registers, the dispatch packet (always present
// for HSA kernels) and the wave intrinsics have no preconditions beyond being executed by a
// device thread, which every caller is.

#[inline(always)]
pub fn thread_id_in_block() -> u32 {
    // SAFETY: see above.
    unsafe { workitem_id_x() }
}
#[inline(always)]
pub fn num_threads_in_block() -> u32 {
    block_dim(0)
}
#[inline(always)]
pub fn block_id() -> u32 {
    // SAFETY: see above.
    unsafe { workgroup_id_x() }
}
#[inline(always)]
pub fn num_blocks() -> u32 {
    grid_dim(0)
}
/// Thread, block and grid extents in dimension `dim` (0 = x, 1 = y, 2 = z; others as x).
#[inline(always)]
pub fn thread_id_in_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => workitem_id_y(),
            2 => workitem_id_z(),
            _ => workitem_id_x(),
        }
    }
}
#[inline(always)]
pub fn block_dim(dim: u32) -> u32 {
    // SAFETY: see above (reads the dispatch packet, always present for HSA kernels).
    unsafe { __rustomp_workgroup_size(dim.min(2)) }
}
#[inline(always)]
pub fn block_id_in_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe {
        match dim {
            1 => workgroup_id_y(),
            2 => workgroup_id_z(),
            _ => workgroup_id_x(),
        }
    }
}
/// Blocks in dimension `dim`: the packet's grid size counts work-items.
#[inline(always)]
pub fn grid_dim(dim: u32) -> u32 {
    // SAFETY: see above.
    unsafe { __rustomp_grid_size(dim.min(2)) }.div_ceil(block_dim(dim).max(1))
}
#[inline(always)]
pub fn warp_size() -> u32 {
    // SAFETY: see above.
    unsafe { wavefrontsize() }
}
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: see above.
    unsafe { mbcnt_hi(!0, mbcnt_lo(!0, 0)) }
}
/// Every lane of a wavefront (wave32 targets ignore the upper half).
pub const FULL_MASK: u64 = !0;
#[inline(always)]
pub fn ballot(mask: u64, pred: bool) -> u64 {
    // SAFETY: see above.
    unsafe { ballot_i64(pred) & mask }
}
#[inline(always)]
pub fn active_mask() -> u64 {
    // SAFETY: see above.
    unsafe { ballot_i64(true) }
}
/// Lanes of a wavefront run in lock step; this only keeps the compiler from moving memory
/// operations across it.
#[inline(always)]
pub fn sync_warp(_mask: u64) {
    // SAFETY: see above.
    unsafe { wave_barrier() }
}
#[inline(always)]
pub fn shuffle_down_u32(_mask: u64, value: u32, delta: u32, width: u32) -> u32 {
    let lane = lane_id();
    let segment_end = (lane & !(width - 1)) + width;
    let source = if lane + delta < segment_end {
        lane + delta
    } else {
        lane
    };
    // SAFETY: see above; bpermute takes a byte address of the source lane.
    unsafe { ds_bpermute(source << 2, value) }
}
#[inline(always)]
pub fn team_barrier() {
    // SAFETY: see above; every work-item of the workgroup reaches it.
    unsafe { __rustomp_team_barrier() }
}
/// No named barriers on these targets: a region on part of the team counts arrivals instead.
pub const HAS_REGION_BARRIER: bool = false;
pub fn region_barrier(_count: u32) {
    trap()
}
/// No hardware barrier for an arbitrary subset of the workgroup either: such a region counts
/// arrivals (`sync::counting_barrier`).
#[inline(always)]
pub fn has_subset_barrier() -> bool {
    false
}
/// # Safety
/// Never called (`has_subset_barrier` is false); the signature of the other targets'.
pub unsafe fn subset_barrier_init(_barrier: *mut u64, _count: u32) {
    trap()
}
/// # Safety
/// As `subset_barrier_init`.
pub unsafe fn subset_barrier_wait(_barrier: *mut u64, _count: u32) {
    trap()
}
/// # Safety
/// As `subset_barrier_init`.
pub unsafe fn subset_barrier_inval(_barrier: *mut u64) {
    trap()
}
#[inline(always)]
pub fn team_fence() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence() }
}
#[inline(always)]
pub fn team_fence_release() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence_release() }
}
#[inline(always)]
pub fn team_fence_acquire() {
    // SAFETY: see above.
    unsafe { __rustomp_team_fence_acquire() }
}
#[inline(always)]
pub fn dynamic_shared() -> *mut u8 {
    // SAFETY: see above.
    unsafe { __rustomp_dynamic_shared_ptr() }
}
#[inline(always)]
pub fn team_shared() -> *mut u8 {
    // SAFETY: see above.
    unsafe { __rustomp_team_shared_ptr() }
}
/// The constant 100 MHz real-time counter.
#[inline(always)]
pub fn clock_ns() -> u64 {
    // SAFETY: see above.
    unsafe { memrealtime() * 10 }
}
pub const CLOCK_TICK_SECONDS: f64 = 1.0e-8;
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: see above.
    unsafe { llvm_trap() }
}

pub use crate::heap::device_heap::{free, malloc};
/// Appends `message` to the printf buffer the plugin prints after the launch.
pub fn print_message(message: &core::ffi::CStr) {
    crate::printf::print_bytes(message.to_bytes());
}
/// One step of a spin-wait: `s_sleep 1` (64 clocks), which lets the waves the waiter waits for
/// run.
#[inline(always)]
pub fn pause() {
    // SAFETY: s_sleep has no preconditions.
    unsafe { s_sleep(1) }
}

/// The calling thread arrives at the counting barrier's `phase` (`sync::counting_barrier`):
/// what it did before is ordered before what every thread of the phase does after it. amdgcn
/// has no hardware barrier for part of a workgroup, so this is how an OpenMP barrier of a
/// region on part of a team meets, and racecheck must see it.
#[inline(always)]
pub fn note_counting_barrier_arrival(phase: usize) {
    super::vgpu_marks::note_lock_released(phase);
}
/// It leaves the phase: what every thread did before arriving is ordered before its present.
#[inline(always)]
pub fn note_counting_barrier_departure(phase: usize) {
    super::vgpu_marks::note_lock_acquired(phase);
}

/// Team memory the runtime reads or writes plainly where another thread may touch it: the host
/// emulation checks that a hardware meeting orders such accesses (`host::race`); nothing here.
#[inline(always)]
pub fn watch_read(_addr: *const u8, _bytes: usize, _what: &'static str) {}
/// As `watch_read`, for a write.
#[inline(always)]
pub fn watch_write(_addr: *const u8, _bytes: usize, _what: &'static str) {}

/// `p`, hidden from the optimizer: an indirect call through it stays one call (see
/// `ir/amdgcn.ll`: the closed-world specialization would inline every candidate).
#[inline(always)]
#[allow(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "the asm returns its operand: nothing is dereferenced"
)]
pub fn opaque_code_ptr(p: *const core::ffi::c_void) -> *const core::ffi::c_void {
    // SAFETY: an empty asm statement returning its operand.
    unsafe { __rustomp_opaque_code_ptr(p) }
}
