//! `__kmpc_parallel_60`: a parallel region of a flang-22 host-offload image, as a libomp
//! parallel region.
//!
//! OpenMPIRBuilder's device code passes the outlined region with libomp's microtask signature
//! (`fn(int *gtid, int *btid, values...)`) and its captured values as an array, so the region
//! forks a libomp team exactly as clang's host code does (`__kmpc_fork_call`): the team's
//! threads, `omp_get_thread_num`, barriers, reductions and nested regions are libomp's. The
//! clauses map to libomp's pushes: `num_threads` to `__kmpc_push_num_threads`, `proc_bind` to
//! `__kmpc_push_proc_bind`, and `if(.false.)` to a team of one thread, which libomp runs as a
//! serialized (inactive) region.

use crate::libomp;
use core::ffi::c_void;
use core::ptr::null_mut;

/// The most captured values a region may pass. OpenMPIRBuilder packs a region's captures into
/// one structure (it passes one value, or none), so this is far from any real program.
pub const MAX_CAPTURED: usize = 16;

/// OpenMPIRBuilder's `omp::ProcBindKind` values libomp's `kmp_proc_bind_t` shares: primary (2),
/// close (3), spread (4). -1 (no clause) and the rest leave libomp's policy alone.
const PROC_BIND_POLICIES: core::ops::RangeInclusive<i32> = 2..=4;

/// # Safety
/// Arguments as flang-22 emits them: `ident` its source location (or null), `gtid` libomp's
/// number for the calling thread (`__kmpc_global_thread_num`), `outlined` a function taking two
/// `int *` and `nargs` pointer-sized values, `args` an array of `nargs` such values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_parallel_60(
    ident: *const c_void,
    gtid: i32,
    if_expr: i32,
    num_threads: i32,
    proc_bind: i32,
    outlined: *const c_void,
    _wrapper: *const c_void,
    args: *const *mut c_void,
    nargs: i64,
    _strict: i32,
) {
    let Some(count) = usize::try_from(nargs).ok().filter(|n| *n <= MAX_CAPTURED) else {
        libomp::fatal(b"rustomp (x86_64 device runtime): a parallel region passes more than 16 captured values to __kmpc_parallel_60\n")
    };
    let mut values = [null_mut::<c_void>(); MAX_CAPTURED];
    for (i, slot) in values.iter_mut().take(count).enumerate() {
        // SAFETY: the caller passes `nargs` values.
        *slot = unsafe { *args.add(i) };
    }
    let threads = if if_expr == 0 { 1 } else { num_threads };
    if threads > 0 {
        // SAFETY: libomp's entry point, for the calling thread's own next fork.
        unsafe { libomp::__kmpc_push_num_threads(ident, gtid, threads) };
    }
    if PROC_BIND_POLICIES.contains(&proc_bind) {
        // SAFETY: as above, with one of libomp's policies.
        unsafe { libomp::__kmpc_push_proc_bind(ident, gtid, proc_bind) };
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15] = values;
    // SAFETY: `outlined` has the microtask signature and reads `count` values (`argc`); C's
    // variadic convention lets the call carry more, which libomp never reads.
    unsafe {
        libomp::__kmpc_fork_call(
            ident,
            count as i32,
            outlined,
            a0,
            a1,
            a2,
            a3,
            a4,
            a5,
            a6,
            a7,
            a8,
            a9,
            a10,
            a11,
            a12,
            a13,
            a14,
            a15,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// What one region saw: the team size per thread, and which threads ran.
    struct Seen {
        team_sizes: Mutex<Vec<i32>>,
        threads: AtomicUsize,
        marker: AtomicI32,
    }

    unsafe extern "C" fn region(
        _gtid: *mut i32,
        _btid: *mut i32,
        seen: *mut c_void,
        marker: *mut c_void,
    ) {
        // SAFETY: the test passes a `Seen` and an `i32`, both alive for the region.
        let (seen, marker) = unsafe { (&*(seen as *const Seen), *(marker as *const i32)) };
        seen.team_sizes.lock().unwrap().push(libomp_threads());
        // SAFETY: libomp's query, inside its region.
        let me = unsafe { libomp::omp_get_thread_num() };
        seen.threads.fetch_or(1 << me, Ordering::Relaxed);
        seen.marker.store(marker, Ordering::Relaxed);
    }

    fn libomp_threads() -> i32 {
        // SAFETY: libomp's query.
        unsafe { libomp::omp_get_num_threads() }
    }

    unsafe extern "C" {
        fn __kmpc_global_thread_num(loc: *const c_void) -> i32;
    }

    fn run(if_expr: i32, num_threads: i32) -> Seen {
        let seen = Seen {
            team_sizes: Mutex::new(Vec::new()),
            threads: AtomicUsize::new(0),
            marker: AtomicI32::new(0),
        };
        let marker = 7i32;
        let args = [
            &seen as *const Seen as *mut c_void,
            &marker as *const i32 as *mut c_void,
        ];
        // SAFETY: libomp's query (it registers this thread as a root on first use).
        let gtid = unsafe { __kmpc_global_thread_num(core::ptr::null()) };
        // SAFETY: `region` takes the two values in `args`; no source location.
        unsafe {
            __kmpc_parallel_60(
                core::ptr::null(),
                gtid,
                if_expr,
                num_threads,
                -1,
                region as *const c_void,
                core::ptr::null(),
                args.as_ptr(),
                2,
                0,
            )
        };
        seen
    }

    #[test]
    fn a_region_is_a_libomp_team_of_the_requested_size() {
        let seen = run(1, 3);
        assert_eq!(*seen.team_sizes.lock().unwrap(), vec![3, 3, 3]);
        assert_eq!(seen.threads.load(Ordering::Relaxed), 0b111);
        assert_eq!(
            seen.marker.load(Ordering::Relaxed),
            7,
            "the captured values reach the region"
        );
        assert_eq!(libomp_threads(), 1, "the team is gone after the region");
    }

    #[test]
    fn if_false_runs_one_thread() {
        let seen = run(0, 4);
        assert_eq!(*seen.team_sizes.lock().unwrap(), vec![1]);
        assert_eq!(seen.threads.load(Ordering::Relaxed), 0b1);
    }
}
