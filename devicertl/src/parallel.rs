//! `#pragma omp parallel` on the device: `__kmpc_parallel_60` and `__kmpc_get_shared_variables`.
//!
//! A region opened by the team as a whole (SPMD: all threads call in; generic: the main thread
//! calls in and the workers run it) runs on up to the team's threads. A region opened from
//! inside another one runs serialized on the calling thread, as LLVM's runtime does.

use crate::state::{self, DEFERRED_REDUCTION, IN_TEAM_REGION, LEVEL_MASK, SHARED_ARG_SLOTS};
use crate::{arch, heap, sync};
use core::ffi::c_void;
use core::sync::atomic::Ordering;

/// `void outlined(int32_t *gtid, int32_t *btid, arg0, arg1, ...)`
type Microtask = *mut c_void;

/// Calls `fn_ptr(&gtid, &zero, args[0..nargs])`.
///
/// # Safety
/// `fn_ptr` is an outlined function taking two `i32*` and `nargs` pointer-sized arguments;
/// `args` holds `nargs` values.
#[allow(
    clippy::undocumented_unsafe_blocks,
    reason = "clippy does not see the SAFETY comments inside the macro expansion below"
)]
unsafe fn invoke_microtask(
    thread_num: u32,
    fn_ptr: Microtask,
    args: *mut *mut c_void,
    nargs: usize,
) {
    // One indirect call per argument count below: kept indirect on amdgcn (`arch`).
    let fn_ptr = arch::opaque_code_ptr(fn_ptr) as Microtask;
    let mut gtid = thread_num as i32;
    let mut btid = 0i32;
    let (g, b) = (&mut gtid as *mut i32, &mut btid as *mut i32);
    macro_rules! call_with {
        ($($i:literal)*) => {{
            // SAFETY: the caller guarantees the function's arity and argument types.
            let f: unsafe extern "C" fn(*mut i32, *mut i32 $(, call_with!(@ty $i))*) =
                unsafe { core::mem::transmute(fn_ptr) };
            // SAFETY: as above; `args` holds `nargs` values.
            unsafe { f(g, b $(, *args.add($i))*) }
        }};
        (@ty $i:literal) => { *mut c_void };
    }
    match nargs {
        0 => call_with!(),
        1 => call_with!(0),
        2 => call_with!(0 1),
        3 => call_with!(0 1 2),
        4 => call_with!(0 1 2 3),
        5 => call_with!(0 1 2 3 4),
        6 => call_with!(0 1 2 3 4 5),
        7 => call_with!(0 1 2 3 4 5 6),
        8 => call_with!(0 1 2 3 4 5 6 7),
        9 => call_with!(0 1 2 3 4 5 6 7 8),
        10 => call_with!(0 1 2 3 4 5 6 7 8 9),
        11 => call_with!(0 1 2 3 4 5 6 7 8 9 10),
        12 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11),
        13 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        15 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
        16 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        17 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
        18 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
        19 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18),
        20 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19),
        21 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20),
        22 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21),
        23 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22),
        24 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
        25 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24),
        26 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25),
        27 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26),
        28 => call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27),
        29 => {
            call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
        }
        30 => {
            call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29)
        }
        31 => {
            call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)
        }
        32 => {
            call_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
        }
        // More captured variables than any outlined region clang packs: stop loudly.
        _ => arch::trap(),
    }
}

fn requested_threads(if_expr: i32, num_threads: i32, available: u32) -> u32 {
    if if_expr == 0 {
        return 1;
    }
    let wanted = if num_threads > 0 {
        num_threads as u32
    } else {
        available
    };
    wanted.clamp(1, available.max(1))
}

/// Generic-mode workers: run the published region wrapper `void wrapper(i16, i32)`.
pub(crate) fn run_generic_region_worker(wrapper: usize, tid: u32) {
    state::set_thread_flags(tid, IN_TEAM_REGION | 1);
    // The address went through the team state as an integer (`as usize` exposed it).
    let wrapper = core::ptr::with_exposed_provenance::<()>(wrapper);
    // SAFETY: the main thread published a region wrapper emitted by clang with this signature.
    let wrapper: extern "C" fn(u16, u32) = unsafe { core::mem::transmute(wrapper) };
    wrapper(0, tid);
    state::end_implicit_task();
    state::set_thread_flags(tid, 0);
}

/// # Safety
/// Arguments as clang-22 emits them: `fn_ptr` the outlined region, `wrapper_fn` its generic-mode
/// wrapper, `args` an array of `nargs` captured values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_parallel_60(
    _ident: *const c_void,
    _gtid: i32,
    if_expr: i32,
    num_threads: i32,
    _proc_bind: i32,
    fn_ptr: Microtask,
    wrapper_fn: *mut c_void,
    args: *mut *mut c_void,
    nargs: i64,
    _strict: i32,
) {
    let tid = arch::thread_id_in_block();
    let nargs = nargs.max(0) as usize;
    // max-active-levels-var 0: the region is inactive, one thread runs it (as `if(false)`).
    let if_expr = if crate::ids::omp_get_max_active_levels() == 0 {
        0
    } else {
        if_expr
    };
    let flags = state::thread_flags(tid);
    let level = flags & LEVEL_MASK;
    // The region is the team's (SPMD: every thread of the team arrives here together, from the
    // same team code), the generic main thread's for its workers, or serialized on the
    // calling thread (nested, `if(false)`, one thread).
    let team_wide = level == 0 && state::is_spmd();
    let size = if team_wide {
        requested_threads(if_expr, num_threads, arch::num_threads_in_block())
    } else if level == 0 {
        requested_threads(if_expr, num_threads, state::max_workers())
    } else {
        1
    };
    if !team_wide && size > 1 && !wrapper_fn.is_null() {
        run_generic_region(wrapper_fn, args, nargs, size);
        return;
    }
    if team_wide {
        open_spmd_region(size, flags);
    }
    // One call of the outlined region (clang marks it always-inline): one copy of its code
    // in the kernel.
    if !team_wide || tid < size {
        let (thread_num, inner) = if team_wide {
            (tid, flags | IN_TEAM_REGION | 1)
        } else {
            // A serialized region is never the team-wide one: keep the IN_TEAM_REGION bit only
            // for the enclosing levels, which the level count already distinguishes.
            (0, (flags & !LEVEL_MASK) | (level + 1).min(LEVEL_MASK))
        };
        state::set_thread_flags(tid, inner);
        // SAFETY: forwarded from the caller.
        unsafe { invoke_microtask(thread_num, fn_ptr, args, nargs) };
        if team_wide {
            state::end_implicit_task();
        }
        state::set_thread_flags(tid, flags);
    }
    if team_wide {
        arch::team_barrier();
        if tid == 0 {
            sync::close_region(size);
        }
    }
}

/// SPMD: the team's region of `size` threads begins (`flags`: the team code's).
fn open_spmd_region(size: u32, flags: u8) {
    let team = state::team();
    // The team code's flags: none, or a distribute chunk loop that defers its reductions.
    if flags & DEFERRED_REDUCTION != 0 {
        crate::reduction::deferred::enter_chunk_region();
    }
    // The region's size is published in the team state. A region like the last one (the
    // chunk regions of a `distribute parallel for`) finds it there and starts at once: the
    // previous region's closing barrier already separates it. Otherwise every thread reads the
    // old value before thread 0 writes the new one, and reads it after.
    let same = team.parallel_team_size.load(Ordering::Relaxed) == size
        && sync::region_barrier_kind(size) != sync::RegionBarrier::Subset;
    if !same {
        arch::team_barrier();
        if arch::thread_id_in_block() == 0 {
            team.parallel_team_size.store(size, Ordering::Relaxed);
            sync::open_region(size);
        }
        arch::team_barrier();
    }
}

/// Generic mode: only the main thread gets here. The region gets the threads it asks for
/// (dyn-var is false, so OpenMP's algorithm gives `num_threads` when that many are free): not
/// rounded to whole warps as LLVM's runtime does. Its barriers meet at the hardware barrier for
/// any count, its reductions handle a partial warp (`reduction`), and the worker lanes outside
/// it wait at the team barrier, which is not the aligned form.
fn run_generic_region(wrapper_fn: *mut c_void, args: *mut *mut c_void, nargs: usize, size: u32) {
    let team = state::team();
    let (shared_args, heap_args) = share_args(args, nargs);
    team.shared_args.store(shared_args, Ordering::Relaxed);
    team.parallel_team_size.store(size, Ordering::Relaxed);
    sync::open_region(size);
    // The barrier publishes the region (a release store would be a system-scope
    // `st.release.sys` on nvptx; the barrier orders every state space at CTA scope).
    team.work_fn.store(wrapper_fn as usize, Ordering::Relaxed);
    arch::team_barrier(); // workers start
    arch::team_barrier(); // workers done
    sync::close_region(size);
    team.parallel_team_size.store(1, Ordering::Relaxed);
    if heap_args {
        // SAFETY: `share_args` took it from the heap; the region is over.
        unsafe { heap::device_free(shared_args as *mut u8) };
    }
}

/// Room for `nargs` arguments every worker can read: team-shared slots, or the heap (`true`).
fn argument_space(nargs: usize) -> (*mut *mut c_void, bool) {
    let team = state::team();
    if nargs <= SHARED_ARG_SLOTS {
        (team.shared_args_slots.as_ptr() as *mut *mut c_void, false)
    } else {
        let bytes = nargs * core::mem::size_of::<*mut c_void>();
        let dest = heap::device_malloc(bytes) as *mut *mut c_void;
        if dest.is_null() {
            arch::trap();
        }
        (dest, true)
    }
}

/// Copies the argument array where every worker can read it: team-shared slots, or the heap.
fn share_args(args: *mut *mut c_void, nargs: usize) -> (*mut *mut c_void, bool) {
    let (dest, heap) = argument_space(nargs);
    for i in 0..nargs {
        // SAFETY: `args` holds `nargs` values (clang's contract) and `dest` has room for them.
        unsafe { dest.add(i).write_volatile(args.add(i).read()) };
    }
    (dest, heap)
}

/// The compiler's own generic-mode state machine shares a region's arguments itself: the main
/// thread asks for room here, fills it, and the workers read it with
/// `__kmpc_get_shared_variables`.
///
/// # Safety
/// `out` points at writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_begin_sharing_variables(out: *mut *mut *mut c_void, nargs: usize) {
    let (space, heap) = argument_space(nargs);
    let team = state::team();
    team.shared_args.store(space, Ordering::Relaxed);
    team.scratch[state::SCRATCH_SHARED_ARGS_ON_HEAP].store(heap as u64, Ordering::Relaxed);
    // SAFETY: guaranteed by the caller.
    unsafe { out.write(space) };
}

/// The region whose arguments `__kmpc_begin_sharing_variables` placed is over.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_sharing_variables() {
    let team = state::team();
    if team.scratch[state::SCRATCH_SHARED_ARGS_ON_HEAP].swap(0, Ordering::Relaxed) != 0 {
        let space = team
            .shared_args
            .swap(core::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `argument_space` took it from the heap; the region is over.
        unsafe { heap::device_free(space as *mut u8) };
    }
}

/// `__kmpc_parallel_60` without the `strict` modifier (clang before 21 and flang emit it).
///
/// # Safety
/// As `__kmpc_parallel_60`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments, reason = "clang-22's signature")]
pub unsafe extern "C" fn __kmpc_parallel_51(
    ident: *const c_void,
    gtid: i32,
    if_expr: i32,
    num_threads: i32,
    proc_bind: i32,
    fn_ptr: Microtask,
    wrapper_fn: *mut c_void,
    args: *mut *mut c_void,
    nargs: i64,
) {
    // SAFETY: forwarded.
    unsafe {
        __kmpc_parallel_60(
            ident,
            gtid,
            if_expr,
            num_threads,
            proc_bind,
            fn_ptr,
            wrapper_fn,
            args,
            nargs,
            0,
        )
    }
}

/// LLVM's name for the body of the `__kmpc_parallel_*` entry points.
///
/// # Safety
/// As `__kmpc_parallel_60`.
#[unsafe(no_mangle)]
#[allow(
    clippy::too_many_arguments,
    reason = "the signature of __kmpc_parallel_60, which it implements"
)]
pub unsafe extern "C" fn __kmpc_parallel_impl(
    ident: *const c_void,
    gtid: i32,
    if_expr: i32,
    num_threads: i32,
    proc_bind: i32,
    fn_ptr: Microtask,
    wrapper_fn: *mut c_void,
    args: *mut *mut c_void,
    nargs: i64,
    strict: i32,
) {
    // SAFETY: forwarded.
    unsafe {
        __kmpc_parallel_60(
            ident,
            gtid,
            if_expr,
            num_threads,
            proc_bind,
            fn_ptr,
            wrapper_fn,
            args,
            nargs,
            strict,
        )
    }
}

/// `__kmpc_parallel_spmd` with the `strict` modifier of `num_threads`.
///
/// # Safety
/// As `__kmpc_parallel_60`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_parallel_spmd_60(
    ident: *const c_void,
    num_threads: i32,
    fn_ptr: Microtask,
    args: *mut *mut c_void,
    nargs: i64,
    strict: i32,
) {
    // SAFETY: forwarded.
    unsafe {
        __kmpc_parallel_60(
            ident,
            0,
            1,
            num_threads,
            -1,
            fn_ptr,
            core::ptr::null_mut(),
            args,
            nargs,
            strict,
        )
    }
}

/// LLVM's name for the body of the SPMD entry points.
///
/// # Safety
/// As `__kmpc_parallel_60`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_parallel_spmd_impl(
    ident: *const c_void,
    num_threads: i32,
    fn_ptr: Microtask,
    args: *mut *mut c_void,
    nargs: i64,
    strict: i32,
) {
    // SAFETY: forwarded.
    unsafe { __kmpc_parallel_spmd_60(ident, num_threads, fn_ptr, args, nargs, strict) }
}

/// A parallel region in an SPMD kernel (what OpenMPIRBuilder emits): every thread of the team
/// calls it.
///
/// # Safety
/// As `__kmpc_parallel_60`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_parallel_spmd(
    ident: *const c_void,
    num_threads: i32,
    fn_ptr: Microtask,
    args: *mut *mut c_void,
    nargs: i64,
) {
    // SAFETY: forwarded.
    unsafe {
        __kmpc_parallel_60(
            ident,
            0,
            1,
            num_threads,
            -1,
            fn_ptr,
            core::ptr::null_mut(),
            args,
            nargs,
            0,
        )
    }
}

/// `num_teams` / `thread_limit` and `proc_bind` are the launch's business on the device.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_teams(
    _ident: *const c_void,
    _gtid: i32,
    _num_teams: i32,
    _thread_limit: i32,
) {
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_teams_51(
    _ident: *const c_void,
    _gtid: i32,
    _lower: i32,
    _upper: i32,
    _thread_limit: i32,
) {
}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_proc_bind(_ident: *const c_void, _gtid: i32, _proc_bind: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_threads(_ident: *const c_void, _gtid: i32, _num_threads: i32) {}

/// Generic-mode wrappers fetch the region's arguments here.
///
/// # Safety
/// `out` points at writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_get_shared_variables(out: *mut *mut *mut c_void) {
    // SAFETY: guaranteed by the caller.
    unsafe { out.write(state::team().shared_args.load(Ordering::Relaxed)) };
}
