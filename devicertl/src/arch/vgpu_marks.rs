//! Marks for the virtual GPU, the same on both GPU targets: assembly comments (`ir/nvptx.ll`,
//! `ir/amdgcn.ll`: no instruction on a GPU) that the virtual GPU's retarget turns into calls of
//! its hardware, so its racecheck sees the synchronization the runtime builds from atomics and
//! its synccheck which threads are in an OpenMP barrier.

unsafe extern "C" {
    // Provided by ir/nvptx.ll and ir/amdgcn.ll.
    fn __rustomp_note_lock_acquired(lock: *const u8);
    fn __rustomp_note_lock_released(lock: *const u8);
    fn __rustomp_note_omp_barrier(entering: i32);
}

/// The calling thread took the lock (or critical section, or barrier phase) at address `lock`.
#[inline(always)]
pub fn note_lock_acquired(lock: usize) {
    // SAFETY: an asm comment; only the address is passed.
    unsafe { __rustomp_note_lock_acquired(lock as *const u8) }
}
/// The calling thread is about to release the lock at `lock`.
#[inline(always)]
pub fn note_lock_released(lock: usize) {
    // SAFETY: as above.
    unsafe { __rustomp_note_lock_released(lock as *const u8) }
}
/// The calling thread enters (`true`) or leaves an OpenMP barrier.
#[inline(always)]
pub fn note_omp_barrier(entering: bool) {
    // SAFETY: as above.
    unsafe { __rustomp_note_omp_barrier(entering as i32) }
}
