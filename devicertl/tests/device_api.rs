//! Host-emulation tests of the device API beyond the compiler's core ABI: locks, taskloop,
//! cancellation, doacross loops, OpenMPIRBuilder's static loops, the assertion message and
//! the C library basics.
mod common;

use common::{generic_kernel, parallel, spmd_kernel, Shared};
use core::ffi::c_void;
use devicertl::arch::host::{block_id, thread_id_in_block};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

fn no_launch_env() -> Shared<rustomp_abi::KernelLaunchEnvironment> {
    Shared(core::ptr::null_mut())
}

#[test]
fn locks_exclude_64_threads() {
    use devicertl::locks::*;
    let mut lock = 0u64;
    let mut counter = 0u64;
    let (lock, counter) = (
        Shared(&mut lock as *mut u64),
        Shared(&mut counter as *mut u64),
    );
    // SAFETY: the lock word lives across the launch.
    unsafe { omp_init_lock(lock.get()) };
    spmd_kernel(2, 32, 8, no_launch_env(), || {
        for _ in 0..200 {
            // SAFETY: a live lock; the counter is only touched while holding it.
            unsafe {
                omp_set_lock(lock.get());
                let c = counter.get().read_volatile();
                std::thread::yield_now();
                counter.get().write_volatile(c + 1);
                omp_unset_lock(lock.get());
            }
        }
    });
    // SAFETY: the kernel is over.
    unsafe {
        assert_eq!(*counter.get(), 64 * 200);
        assert_eq!(omp_test_lock(lock.get()), 1, "free lock taken");
        assert_eq!(omp_test_lock(lock.get()), 0, "held lock refused");
        omp_unset_lock(lock.get());
        omp_destroy_lock(lock.get());
    }
}

#[test]
fn nest_locks_count_their_owner() {
    use devicertl::locks::*;
    let mut lock = 0u64;
    let lock = Shared(&mut lock as *mut u64);
    let held = AtomicU32::new(0);
    let refused = AtomicU32::new(0);
    // SAFETY: the lock word lives across the launch.
    unsafe { omp_init_nest_lock(lock.get()) };
    spmd_kernel(1, 8, 8, no_launch_env(), || {
        let tid = thread_id_in_block();
        // SAFETY: a live nest lock.
        unsafe {
            if tid == 0 {
                omp_set_nest_lock(lock.get());
                omp_set_nest_lock(lock.get());
                assert_eq!(omp_test_nest_lock(lock.get()), 3);
                held.store(1, Ordering::SeqCst);
                while refused.load(Ordering::SeqCst) < 7 {
                    std::thread::yield_now();
                }
                for _ in 0..3 {
                    omp_unset_nest_lock(lock.get());
                }
            } else {
                while held.load(Ordering::SeqCst) == 0 {
                    std::thread::yield_now();
                }
                assert_eq!(omp_test_nest_lock(lock.get()), 0, "another thread holds it");
                refused.fetch_add(1, Ordering::SeqCst);
                omp_set_nest_lock(lock.get()); // waits for thread 0's last unset
                omp_unset_nest_lock(lock.get());
            }
        }
    });
    // SAFETY: the kernel is over.
    assert_eq!(unsafe { *lock.get() }, 0, "released");
}

/// The compiler's task for a taskloop: `lb`/`ub` at the offsets below, a counter array pointer
/// in the shareds.
const LB: usize = 32;
const UB: usize = 40;
unsafe extern "C" fn taskloop_body(_gtid: i32, task: *mut devicertl::tasks::TaskHeader) -> i32 {
    // SAFETY: laid out by `taskloop`.
    unsafe {
        let counts = *((*task).shareds as *const *const AtomicU32);
        let (lb, ub) = (
            *((task as *const u8).add(LB) as *const u64),
            *((task as *const u8).add(UB) as *const u64),
        );
        for i in lb..=ub {
            (*counts.add(i as usize)).fetch_add(1, Ordering::Relaxed);
        }
    }
    0
}

fn taskloop(counts: &[AtomicU32], lb: u64, ub: u64) {
    use devicertl::tasks::{__kmpc_omp_task_alloc, __kmpc_taskloop};
    let task = __kmpc_omp_task_alloc(core::ptr::null(), 0, 1, 48, 8, Some(taskloop_body));
    // SAFETY: a fresh task of 48 bytes plus 8 of shareds.
    unsafe {
        *((*task).shareds as *mut *const AtomicU32) = counts.as_ptr();
        let lower = (task as *mut u8).add(LB) as *mut u64;
        let upper = (task as *mut u8).add(UB) as *mut u64;
        lower.write(lb);
        upper.write(ub);
        __kmpc_taskloop(
            core::ptr::null(),
            0,
            task,
            1,
            lower,
            upper,
            1,
            0,
            1,
            7,
            core::ptr::null_mut(),
        );
    }
}

#[test]
fn taskloop_runs_every_iteration_once_and_cancel_cancels_nothing() {
    use devicertl::tasks::{__kmpc_cancel, __kmpc_cancellationpoint};
    let counts: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
    let cancelled = AtomicU32::new(0);
    spmd_kernel(1, 4, 4, no_launch_env(), || {
        if thread_id_in_block() == 0 {
            taskloop(&counts, 0, 63);
            taskloop(&counts, 5, 4); // empty
        }
        // parallel = 1, for = 2, taskgroup = 4 (kmp_cancel_kind_t)
        for kind in [1, 2, 4] {
            cancelled.fetch_add(
                (__kmpc_cancel(core::ptr::null(), 0, kind)
                    + __kmpc_cancellationpoint(core::ptr::null(), 0, kind)) as u32,
                Ordering::Relaxed,
            );
        }
    });
    assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    assert_eq!(
        cancelled.load(Ordering::Relaxed),
        0,
        "cancellation is off on the device"
    );
}

#[test]
fn doacross_orders_a_chain() {
    use devicertl::workshare::{
        __kmpc_doacross_fini, __kmpc_doacross_init, __kmpc_doacross_post, __kmpc_doacross_wait,
        DoacrossDim,
    };
    let values: Vec<AtomicU32> = (0..100).map(|_| AtomicU32::new(0)).collect();
    let body = || {
        let dims = [DoacrossDim {
            lo: 0,
            up: 99,
            st: 1,
        }];
        // SAFETY: one dimension, as declared.
        unsafe { __kmpc_doacross_init(core::ptr::null(), 0, 1, dims.as_ptr()) };
        let n = devicertl::ids::omp_get_num_threads() as usize;
        let mut i = devicertl::ids::omp_get_thread_num() as usize;
        while i < 100 {
            let sink = [i as i64 - 1];
            // SAFETY: one value per dimension.
            unsafe { __kmpc_doacross_wait(core::ptr::null(), 0, sink.as_ptr()) };
            let before = if i == 0 {
                0
            } else {
                values[i - 1].load(Ordering::Relaxed)
            };
            std::thread::yield_now();
            values[i].store(before + 1, Ordering::Relaxed);
            let source = [i as i64];
            // SAFETY: as above.
            unsafe { __kmpc_doacross_post(core::ptr::null(), 0, source.as_ptr()) };
            i += n;
        }
        __kmpc_doacross_fini(core::ptr::null(), 0);
    };
    spmd_kernel(1, 12, 4, no_launch_env(), || parallel(true, 0, &body));
    let got: Vec<u32> = values.iter().map(|v| v.load(Ordering::Relaxed)).collect();
    assert_eq!(got, (1..=100).collect::<Vec<u32>>());
}

unsafe extern "C" fn count_iteration(iv: i32, arg: *mut c_void) {
    // SAFETY: `arg` is the test's counter slice.
    let counts = unsafe { &*(arg as *const Vec<AtomicU32>) };
    counts[iv as usize].fetch_add(1, Ordering::Relaxed);
}

#[test]
fn static_loops_of_openmpirbuilder_cover_each_iteration_once() {
    use devicertl::workshare::*;
    for (threads, block_chunk, thread_chunk) in [(0, 0, 0), (0, 7, 3), (10, 0, 2), (16, 50, 0)] {
        let counts: Vec<AtomicU32> = (0..1000).map(|_| AtomicU32::new(0)).collect();
        let arg = Shared(&counts as *const Vec<AtomicU32> as *mut c_void);
        spmd_kernel(3, 16, 8, no_launch_env(), || {
            // SAFETY: the body takes the counters.
            unsafe {
                __kmpc_distribute_for_static_loop_4(
                    core::ptr::null(),
                    count_iteration,
                    arg.get(),
                    1000,
                    threads,
                    block_chunk,
                    thread_chunk,
                    0,
                )
            };
        });
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "distribute for {threads} {block_chunk} {thread_chunk}"
        );
    }
    for chunk in [0, 5] {
        let counts: Vec<AtomicU32> = (0..333).map(|_| AtomicU32::new(0)).collect();
        let arg = Shared(&counts as *const Vec<AtomicU32> as *mut c_void);
        let body = || {
            // SAFETY: as above.
            unsafe {
                __kmpc_for_static_loop_4(
                    core::ptr::null(),
                    count_iteration,
                    arg.get(),
                    333,
                    0,
                    chunk,
                    0,
                )
            };
        };
        spmd_kernel(1, 24, 8, no_launch_env(), || parallel(true, 20, &body));
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "for, chunk {chunk}"
        );
        let counts: Vec<AtomicU32> = (0..333).map(|_| AtomicU32::new(0)).collect();
        let arg = Shared(&counts as *const Vec<AtomicU32> as *mut c_void);
        generic_kernel(4, 40, 8, no_launch_env(), false, || {
            // SAFETY: as above.
            unsafe {
                __kmpc_distribute_static_loop_4(
                    core::ptr::null(),
                    count_iteration,
                    arg.get(),
                    333,
                    chunk,
                    0,
                )
            };
        });
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "distribute, chunk {chunk}"
        );
    }
}

#[test]
fn sharing_variables_for_the_compilers_state_machine() {
    use devicertl::parallel::{
        __kmpc_begin_sharing_variables, __kmpc_end_sharing_variables, __kmpc_get_shared_variables,
    };
    let seen = Mutex::new(Vec::new());
    spmd_kernel(1, 4, 4, no_launch_env(), || {
        if thread_id_in_block() == 0 {
            for n in [3usize, 40] {
                let mut space: *mut *mut c_void = core::ptr::null_mut();
                let mut back: *mut *mut c_void = core::ptr::null_mut();
                // SAFETY: writable out-parameters; `space` has room for `n` pointers.
                unsafe {
                    __kmpc_begin_sharing_variables(&mut space, n);
                    for i in 0..n {
                        *space.add(i) = (i * 8 + block_id() as usize) as *mut c_void;
                    }
                    __kmpc_get_shared_variables(&mut back);
                    seen.lock().unwrap().push((
                        space == back,
                        (0..n).all(|i| *back.add(i) as usize == i * 8),
                    ));
                }
                __kmpc_end_sharing_variables();
            }
        }
    });
    assert_eq!(seen.into_inner().unwrap(), vec![(true, true), (true, true)]);
}

#[test]
fn assertion_message_is_glibcs() {
    let mut out = [0u8; 256];
    // SAFETY: NUL-terminated strings.
    let n = unsafe {
        devicertl::libc::assertion_text(
            c"x == 42".as_ptr(),
            c"prog.c".as_ptr(),
            17,
            c"main".as_ptr(),
            &mut out,
        )
    };
    assert_eq!(
        std::str::from_utf8(&out[..n]).unwrap(),
        "prog.c:17: main: Assertion `x == 42' failed.\n"
    );
}

#[test]
fn c_library_basics() {
    use devicertl::libc::*;
    let mut buf = *b"abcdefgh";
    // SAFETY: in bounds; memmove allows the overlap.
    unsafe {
        memmove(
            buf.as_mut_ptr().add(2) as *mut c_void,
            buf.as_ptr() as *const c_void,
            5,
        );
        assert_eq!(&buf, b"ababcdeh");
        memset(buf.as_mut_ptr() as *mut c_void, b'z' as i32, 3);
        assert_eq!(&buf, b"zzzbcdeh");
        let mut copy = [0u8; 8];
        memcpy(
            copy.as_mut_ptr() as *mut c_void,
            buf.as_ptr() as *const c_void,
            8,
        );
        assert_eq!(
            memcmp(
                copy.as_ptr() as *const c_void,
                buf.as_ptr() as *const c_void,
                8
            ),
            0
        );
        assert!(
            memcmp(
                b"ab".as_ptr() as *const c_void,
                b"ac".as_ptr() as *const c_void,
                2
            ) < 0
        );
        assert_eq!(strlen(c"device".as_ptr()), 6);
        let zeroed = calloc(10, 4) as *mut u32;
        assert!((0..10).all(|i| *zeroed.add(i) == 0));
        devicertl::heap::device_free(zeroed as *mut u8);
        assert!(calloc(usize::MAX, 2).is_null(), "overflow refused");
    }
}

#[test]
fn task_reductions_reduce_into_the_item() {
    use devicertl::tasks::{__kmpc_task_reduction_get_th_data, __kmpc_taskred_init};
    let mut item = 5u64;
    let p = &mut item as *mut u64 as *mut c_void;
    let group = __kmpc_taskred_init(0, 1, core::ptr::null_mut());
    assert!(!group.is_null());
    assert_eq!(__kmpc_task_reduction_get_th_data(0, group, p), p);
}

#[test]
fn icvs_are_per_data_environment() {
    use devicertl::ids::*;
    let bad = Mutex::new(Vec::new());
    let check = |what: &'static str, ok: bool| {
        if !ok {
            bad.lock().unwrap().push((what, thread_id_in_block()));
        }
    };
    generic_kernel(1, 40, 8, no_launch_env(), false, || {
        let (mut kind, mut chunk) = (0, 0);
        omp_set_schedule(2, 5); // dynamic, 5: the team's, inherited by its regions
        let region = || {
            let (mut k, mut c) = (0, 0);
            // SAFETY: writable out-parameters.
            unsafe { omp_get_schedule(&mut k, &mut c) };
            check("inherited", (k, c) == (2, 5));
            let me = omp_get_thread_num();
            omp_set_schedule(3, me); // guided, own chunk
            std::thread::yield_now();
            // SAFETY: as above.
            unsafe { omp_get_schedule(&mut k, &mut c) };
            check("own", (k, c) == (3, me));
        };
        parallel(true, 0, &region);
        // SAFETY: as above.
        unsafe { omp_get_schedule(&mut kind, &mut chunk) };
        check("sequential part keeps its value", (kind, chunk) == (2, 5));
        check("default levels", omp_get_max_active_levels() == 1);
        omp_set_max_active_levels(0);
        check("levels 0", omp_get_max_active_levels() == 0);
        let inactive = || {
            check(
                "inactive region",
                omp_get_num_threads() == 1 && omp_in_parallel() == 0,
            )
        };
        parallel(true, 0, &inactive);
        omp_set_max_active_levels(3);
        check(
            "levels capped",
            omp_get_max_active_levels() == 1 && omp_get_nested() == 0,
        );
        let active = || check("active again", omp_get_num_threads() == 32);
        parallel(true, 0, &active);
    });
    let bad = bad.into_inner().unwrap();
    assert!(bad.is_empty(), "{bad:?}");
}

/// `omp_get_ancestor_thread_num` / `omp_get_team_size` inside a nested (serialized) region: level
/// 1 is the team-wide region (hardware thread number, team size) or, when that region was itself
/// serialized (`if(false)`, one thread), thread 0 of a team of 1. Program 128 on an H200: a nested
/// region under a serialized one asked `omp_get_ancestor_thread_num(1) == 0` and got the main
/// thread's hardware id.
#[test]
fn ancestors_of_a_nested_region() {
    use devicertl::ids::*;
    let seen = Mutex::new(Vec::new());
    let record = |outer_active: bool| {
        let inner = || {
            seen.lock().unwrap().push((
                outer_active,
                thread_id_in_block(),
                omp_get_level(),
                omp_get_ancestor_thread_num(1),
                omp_get_team_size(1),
                omp_get_ancestor_thread_num(2),
                omp_get_team_size(2),
                omp_get_thread_num(),
                omp_get_num_threads(),
            ))
        };
        parallel(true, 0, &inner);
    };
    let serialized_outer = || record(false);
    let team_outer = || record(true);
    // 40 threads, warps of 8: the main thread is thread 32, the workers 0..32.
    generic_kernel(1, 40, 8, no_launch_env(), false, || {
        parallel(false, 0, &serialized_outer);
        parallel(true, 0, &team_outer);
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1 + 32);
    for (outer_active, tid, level, anc1, size1, anc2, size2, num, nthreads) in seen {
        let (want_anc1, want_size1) = if outer_active {
            (tid as i32, 32)
        } else {
            (0, 1)
        };
        assert_eq!(
            (level, anc1, size1, anc2, size2, num, nthreads),
            (2, want_anc1, want_size1, 0, 1, 0, 1),
            "thread {tid}, outer region {}",
            if outer_active {
                "team-wide"
            } else {
                "serialized"
            }
        );
    }
}
