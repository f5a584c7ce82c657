//! OpenMP locks on the device (`omp_lock_t`, `omp_nest_lock_t`: one pointer-sized word each,
//! in memory every thread that uses the lock can reach).
//!
//! A simple lock is 0 (unset) or 1; a nestable lock holds its owner (a global thread number + 1)
//! in the low half and the nesting depth in the high half, changed with compare-exchange only
//! (a compare-exchange keeps its ordering on clang-22 NVPTX, unlike a release RMW).

use crate::arch;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// # Safety
/// `lock` points at a live `omp_lock_t`.
unsafe fn simple<'a>(lock: *mut u64) -> &'a AtomicU32 {
    // SAFETY: `omp_lock_t` is pointer-sized and aligned; its first word is the lock.
    unsafe { AtomicU32::from_ptr(lock as *mut u32) }
}

/// # Safety
/// `lock` points at a live `omp_nest_lock_t`.
unsafe fn nestable<'a>(lock: *mut u64) -> &'a AtomicU64 {
    // SAFETY: `omp_nest_lock_t` is one 8-byte aligned pointer-sized word.
    unsafe { AtomicU64::from_ptr(lock) }
}

/// This thread, numbered across the whole launch, + 1 (0 means no owner).
fn owner_id() -> u64 {
    (arch::block_id() as u64 * arch::num_threads_in_block() as u64
        + arch::thread_id_in_block() as u64)
        + 1
}

/// # Safety
/// `lock` points at an `omp_lock_t` (every routine below: at the lock it names).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { simple(lock) }.store(0, Ordering::Release);
}
/// # Safety
/// As `omp_init_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { simple(lock) }.store(0, Ordering::Release);
}
/// # Safety
/// As `omp_init_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    let word = unsafe { simple(lock) };
    take(word);
    arch::note_lock_acquired(lock as usize);
}
/// Takes a 0/1 lock word, spinning with relaxed reads: an acquire in the loop is, on gfx90a and
/// gfx942, an L2 invalidate on every turn. The acquire load after the loop reads the value the
/// taking compare-exchange wrote, which continues the release sequence of the store that freed
/// the word, so it synchronizes with that release.
pub(crate) fn take(word: &AtomicU32) {
    while word.load(Ordering::Relaxed) != 0
        || word
            .compare_exchange_weak(0, 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        arch::pause();
    }
    let _ = word.load(Ordering::Acquire);
}

/// # Safety
/// As `omp_init_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_lock(lock: *mut u64) {
    arch::note_lock_released(lock as usize);
    // SAFETY: guaranteed by the caller.
    unsafe { simple(lock) }.store(0, Ordering::Release);
}
/// 1 when this call took the lock, 0 when it was held.
///
/// # Safety
/// As `omp_init_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_lock(lock: *mut u64) -> i32 {
    // SAFETY: guaranteed by the caller.
    let taken = unsafe { simple(lock) }
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok();
    if taken {
        arch::note_lock_acquired(lock as usize);
    }
    taken as i32
}

/// # Safety
/// `lock` points at an `omp_nest_lock_t` (every routine below: at the lock it names).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_nest_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { nestable(lock) }.store(0, Ordering::Release);
}
/// # Safety
/// As `omp_init_nest_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_nest_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { nestable(lock) }.store(0, Ordering::Release);
}

/// Takes the lock or nests it again; `wait`: until it is free. Returns the new depth, or 0.
fn acquire_nest(word: &AtomicU64, wait: bool) -> i32 {
    let me = owner_id();
    let mut seen = word.load(Ordering::Relaxed);
    loop {
        let (owner, depth) = (seen & 0xffff_ffff, seen >> 32);
        let wanted = if owner == 0 {
            (1u64 << 32) | me
        } else if owner == me {
            ((depth + 1) << 32) | me
        } else if wait {
            arch::pause();
            seen = word.load(Ordering::Relaxed);
            continue;
        } else {
            return 0;
        };
        // Relaxed in the loop, then one acquire load (see `take`).
        match word.compare_exchange_weak(seen, wanted, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                let _ = word.load(Ordering::Acquire);
                arch::note_lock_acquired(word.as_ptr() as usize);
                return (wanted >> 32) as i32;
            }
            Err(now) => seen = now,
        }
    }
}

/// # Safety
/// As `omp_init_nest_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_nest_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    acquire_nest(unsafe { nestable(lock) }, true);
}
/// The nesting depth after the call, or 0 when another thread holds the lock.
///
/// # Safety
/// As `omp_init_nest_lock`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_nest_lock(lock: *mut u64) -> i32 {
    // SAFETY: guaranteed by the caller.
    acquire_nest(unsafe { nestable(lock) }, false)
}
/// # Safety
/// As `omp_init_nest_lock`; the calling thread holds the lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_nest_lock(lock: *mut u64) {
    // SAFETY: guaranteed by the caller.
    let word = unsafe { nestable(lock) };
    arch::note_lock_released(lock as usize);
    let mut seen = word.load(Ordering::Relaxed);
    loop {
        let depth = seen >> 32;
        let wanted = if depth <= 1 {
            0
        } else {
            ((depth - 1) << 32) | (seen & 0xffff_ffff)
        };
        match word.compare_exchange_weak(seen, wanted, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => seen = now,
        }
    }
}
