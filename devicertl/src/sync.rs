//! Barriers, critical sections, single/master/masked, warp masks and flushes.

use crate::{arch, state};
use core::ffi::c_void;
use core::sync::atomic::{fence, AtomicU32, Ordering};

/// Waits until the `count` threads of the current region arrived. All threads of the team: the
/// hardware barrier; a subset (a generic-mode region on part of the workers): a counting barrier
/// in team-shared memory.
pub fn region_barrier(count: u32) {
    if count <= 1 {
        fence(Ordering::SeqCst);
        return;
    }
    if count == arch::num_threads_in_block() {
        arch::team_barrier();
        return;
    }
    let team = state::team();
    let generation = team.barrier_generation.load(Ordering::Acquire);
    if team.barrier_arrived.fetch_add(1, Ordering::AcqRel) + 1 == count {
        team.barrier_arrived.store(0, Ordering::Relaxed);
        team.barrier_generation.fetch_add(1, Ordering::Release);
    } else {
        while team.barrier_generation.load(Ordering::Acquire) == generation {
            arch::pause();
        }
    }
}

/// Threads that meet at a barrier of the current region.
fn current_region_threads() -> u32 {
    let view = state::thread_view();
    // Outside any parallel region an SPMD kernel runs its team-level code on every thread.
    if view.level == 0 && state::is_spmd() { arch::num_threads_in_block() } else { view.num_threads }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier(_ident: *const c_void, _gtid: i32) {
    region_barrier(current_region_threads());
}

/// `single copyprivate(...)`: the thread that ran the `single` block publishes its variables,
/// every other thread of the region copies them with the compiler's `copy(dst, src)`.
///
/// # Safety
/// Arguments as clang-22 emits them; every thread of the region calls it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_copyprivate(
    _ident: *const c_void,
    _gtid: i32,
    _bytes: usize,
    data: *mut c_void,
    copy: unsafe extern "C" fn(dst: *mut c_void, src: *mut c_void),
    did_it: i32,
) {
    let count = current_region_threads();
    if count <= 1 {
        return;
    }
    let published = &state::team().scratch[state::SCRATCH_COPYPRIVATE];
    if did_it != 0 {
        published.store(data as u64, Ordering::Relaxed);
    }
    region_barrier(count);
    if did_it == 0 {
        // SAFETY: compiler callback; the source stays live until the barrier below.
        unsafe { copy(data, published.load(Ordering::Relaxed) as *mut c_void) };
    }
    region_barrier(count);
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier_simple_spmd(_ident: *const c_void, _gtid: i32) {
    arch::team_barrier();
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier_simple_generic(_ident: *const c_void, _gtid: i32) {
    arch::team_barrier();
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancel_barrier(ident: *const c_void, gtid: i32) -> i32 {
    __kmpc_barrier(ident, gtid);
    0
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_flush(_ident: *const c_void) {
    fence(Ordering::SeqCst);
}

/// The lock word of a `critical` construct: the first 32 bits of clang's `kmp_critical_name`.
fn lock_word(name: *mut c_void) -> &'static AtomicU32 {
    // SAFETY: clang passes its `_gomp_critical_user_*` global ([8 x i32], zero-initialized,
    // 4-byte aligned) which lives for the program.
    unsafe { &*(name as *const AtomicU32) }
}

/// clang serializes the lanes of a warp around this call, so lanes never contend with each
/// other here and spinning is safe.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_critical(_ident: *const c_void, _gtid: i32, name: *mut c_void) {
    let lock = lock_word(name);
    while lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        arch::pause();
    }
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_critical(_ident: *const c_void, _gtid: i32, name: *mut c_void) {
    lock_word(name).store(0, Ordering::Release);
}

/// The `single` block goes to thread 0 of the region (the main thread outside regions).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_single(_ident: *const c_void, _gtid: i32) -> i32 {
    (state::thread_view().thread_num == 0) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_single(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_master(_ident: *const c_void, _gtid: i32) -> i32 {
    (state::thread_view().thread_num == 0) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_master(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_masked(_ident: *const c_void, _gtid: i32, filter: i32) -> i32 {
    (state::thread_view().thread_num as i32 == filter) as i32
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_masked(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_ordered(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_ordered(_ident: *const c_void, _gtid: i32) {}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_warp_active_thread_mask() -> u64 {
    arch::active_mask()
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_syncwarp(mask: u64) {
    arch::sync_warp(mask);
}
