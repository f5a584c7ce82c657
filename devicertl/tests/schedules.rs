//! Loop schedules against a brute-force reference: every iteration of `lb..=ub` by `incr` runs
//! exactly once, on the entity OpenMP says, and exactly the entity that runs the last
//! iteration is told so.

mod common;

use common::{parallel, spmd_kernel, Rng, Shared};
use devicertl::ids::{omp_get_num_threads, omp_get_thread_num};
use devicertl::workshare::{
    __kmpc_dispatch_init_8, __kmpc_dispatch_next_8, __kmpc_for_static_init_4,
    __kmpc_for_static_init_8u,
};
use devicertl::workshare::{sched, static_share, trip_count};
use std::collections::BTreeMap;
use std::sync::Mutex;

fn is_chunked(kind: i32) -> bool {
    !matches!(sched::base(kind), sched::STATIC | sched::DISTRIBUTE_STATIC)
}

/// The iterations (as 0-based indices) entity `id` of `n` runs, and its last flag.
fn static_iterations(
    kind: i32,
    lb: i128,
    ub: i128,
    incr: i128,
    chunk: i128,
    id: i128,
    n: i128,
) -> (Vec<i128>, bool) {
    let share = static_share(kind, lb, ub, incr, chunk, id, n);
    let trip = trip_count(lb, ub, incr);
    let index = |i: i128| (i - lb) / incr;
    let in_loop = |i: i128| {
        if incr > 0 {
            i >= lb && i <= ub
        } else {
            i <= lb && i >= ub
        }
    };
    let mut mine = Vec::new();
    let chunked = is_chunked(kind);
    let mut chunk_lb = share.lb;
    loop {
        // The compiler clamps each chunk's upper bound to the loop's.
        let chunk_ub = if incr > 0 {
            share.ub.min(ub) + (chunk_lb - share.lb)
        } else {
            share.ub.max(ub) + (chunk_lb - share.lb)
        };
        let chunk_ub = if incr > 0 {
            chunk_ub.min(ub)
        } else {
            chunk_ub.max(ub)
        };
        let mut i = chunk_lb;
        while in_loop(i)
            && (if incr > 0 {
                i <= chunk_ub
            } else {
                i >= chunk_ub
            })
        {
            mine.push(index(i));
            i += incr;
        }
        if !chunked || trip == 0 {
            break;
        }
        chunk_lb += share.stride;
        if !in_loop(chunk_lb) {
            break;
        }
    }
    (mine, share.last)
}

fn check_static(kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128, n: i128) {
    let trip = trip_count(lb, ub, incr);
    let mut owner = vec![None; trip as usize];
    let mut last_owners = Vec::new();
    let mut sizes = Vec::new();
    for id in 0..n {
        let (mine, last) = static_iterations(kind, lb, ub, incr, chunk, id, n);
        let case = format!("kind {kind} lb {lb} ub {ub} incr {incr} chunk {chunk} n {n} id {id}");
        for &k in &mine {
            assert!(k >= 0 && k < trip, "{case}: iteration {k} outside the loop");
            assert!(owner[k as usize].is_none(), "{case}: iteration {k} twice");
            owner[k as usize] = Some(id);
        }
        if last {
            last_owners.push(id);
        }
        sizes.push(mine.len() as i128);
        if chunk > 0 && is_chunked(kind) {
            for &k in &mine {
                assert_eq!((k / chunk) % n, id, "{case}: round robin");
            }
        }
    }
    let case = format!("kind {kind} lb {lb} ub {ub} incr {incr} chunk {chunk} n {n}");
    assert!(
        owner.iter().all(Option::is_some),
        "{case}: iteration missed"
    );
    if trip > 0 {
        assert_eq!(
            last_owners,
            vec![owner[trip as usize - 1].unwrap()],
            "{case}: last flag"
        );
    } else {
        assert!(last_owners.is_empty(), "{case}: last flag on an empty loop");
    }
    if !is_chunked(kind) || chunk <= 0 {
        // Contiguous blocks in id order whose sizes differ by at most one.
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min <= 1, "{case}: unbalanced {sizes:?}");
        let mut expected_owner = 0;
        for o in owner.iter().flatten() {
            assert!(*o >= expected_owner, "{case}: blocks out of order");
            expected_owner = *o;
        }
    }
}

#[test]
fn static_schedules_match_brute_force() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let kinds = [
        sched::STATIC,
        sched::STATIC_CHUNKED,
        sched::DISTRIBUTE_STATIC,
        sched::DISTRIBUTE_STATIC_CHUNKED,
    ];
    for case in 0..6000 {
        let kind = kinds[case % kinds.len()];
        let incr = match rng.range(0, 5) {
            0 => -1,
            1 => 1,
            2 => rng.range(-9, -2),
            _ => rng.range(2, 9),
        } as i128;
        let lb = rng.range(-200, 200) as i128;
        // Mostly real loops, some empty or single-iteration ones.
        let span = match rng.range(0, 9) {
            0 => -(rng.range(1, 20) as i128),
            1 => 0,
            _ => rng.range(1, 400) as i128,
        };
        let ub = lb + span * incr.signum();
        let chunk = if kind == sched::STATIC_CHUNKED || kind == sched::DISTRIBUTE_STATIC_CHUNKED {
            rng.range(1, 40) as i128
        } else {
            1
        };
        let n = rng.range(1, 70) as i128;
        check_static(kind, lb, ub, incr, chunk, n);
    }
}

#[test]
fn static_schedules_at_the_edges_of_the_types() {
    for (lb, ub, incr) in [
        (i32::MIN as i128, i32::MAX as i128, 1 << 20),
        (i64::MAX as i128 - 100, i64::MAX as i128, 1),
        (u64::MAX as i128 - 64, u64::MAX as i128, 3),
        (i64::MIN as i128, i64::MIN as i128 + 10, 1),
        (10, 10, 1),
        (10, 10, -1),
    ] {
        for n in [1, 2, 3, 7, 64] {
            check_static(sched::STATIC, lb, ub, incr, 1, n);
            check_static(sched::STATIC_CHUNKED, lb, ub, incr, 5, n);
        }
    }
}

/// The entry points convert widths with the caller's wrap-around.
#[test]
fn static_init_entry_points_in_a_region() {
    let seen = Mutex::new(BTreeMap::new());
    spmd_kernel(1, 8, 4, Shared(core::ptr::null_mut()), || {
        parallel(true, 0, &|| {
            let (mut last, mut lb, mut ub, mut stride) = (0, 0i32, 99i32, 0i32);
            // SAFETY: writable locals, as clang passes them.
            unsafe {
                __kmpc_for_static_init_4(
                    core::ptr::null(),
                    0,
                    sched::STATIC,
                    &mut last,
                    &mut lb,
                    &mut ub,
                    &mut stride,
                    1,
                    1,
                )
            };
            seen.lock()
                .unwrap()
                .insert(omp_get_thread_num(), (lb, ub, last));
            // An unsigned 64-bit loop near the top of the type.
            let (mut last, mut lb, mut ub, mut stride) = (0, u64::MAX - 15, u64::MAX, 0i64);
            // SAFETY: as above.
            unsafe {
                __kmpc_for_static_init_8u(
                    core::ptr::null(),
                    0,
                    sched::STATIC,
                    &mut last,
                    &mut lb,
                    &mut ub,
                    &mut stride,
                    1,
                    1,
                )
            };
            let t = omp_get_thread_num() as u64;
            assert_eq!((lb, ub), (u64::MAX - 15 + 2 * t, u64::MAX - 14 + 2 * t));
            assert_eq!(last == 1, t == 7);
        });
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 8);
    let mut next = 0;
    for (t, (lb, ub, last)) in seen {
        assert_eq!(lb, next);
        assert!(ub - lb + 1 == 12 || ub - lb + 1 == 13);
        assert_eq!(last == 1, t == 7);
        next = ub + 1;
    }
    assert_eq!(next, 100);
}

/// Dynamic and guided schedules: the threads of a region claim chunks until the loop is done.
#[test]
fn dispatch_schedules_cover_every_iteration_once() {
    const CASES: usize = 150;
    let results = Mutex::new(vec![Vec::new(); CASES]);
    let lasts = Mutex::new(vec![0u32; CASES]);
    spmd_kernel(1, 12, 4, Shared(core::ptr::null_mut()), || {
        parallel(true, 0, &|| {
            assert_eq!(omp_get_num_threads(), 12);
            // Every thread draws the same cases.
            let mut rng = Rng(0x1234_5678_9abc_def1);
            for case in 0..CASES {
                let kind = [
                    sched::DYNAMIC_CHUNKED,
                    sched::GUIDED_CHUNKED,
                    sched::STATIC,
                    sched::RUNTIME,
                ][case % 4];
                let incr: i64 = [1, -1, 3, -7][rng.range(0, 3) as usize];
                let lb = rng.range(-1000, 1000);
                let span = [0, -3, 1, rng.range(2, 2000)][rng.range(0, 3) as usize];
                let ub = lb + span * incr.signum();
                let chunk = rng.range(0, 17);
                __kmpc_dispatch_init_8(core::ptr::null(), 0, kind, lb, ub, incr, chunk);
                let (mut last, mut low, mut high, mut stride) = (0, 0i64, 0i64, 0i64);
                let mut mine = Vec::new();
                // SAFETY: writable locals, as clang passes them.
                while unsafe {
                    __kmpc_dispatch_next_8(
                        core::ptr::null(),
                        0,
                        &mut last,
                        &mut low,
                        &mut high,
                        &mut stride,
                    )
                } == 1
                {
                    let mut i = low;
                    while if incr > 0 { i <= high } else { i >= high } {
                        mine.push(i);
                        i += incr;
                    }
                    if last == 1 {
                        lasts.lock().unwrap()[case] += 1;
                    }
                }
                results.lock().unwrap()[case].extend(mine);
            }
        });
    });
    let results = results.into_inner().unwrap();
    let lasts = lasts.into_inner().unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for case in 0..CASES {
        let incr: i64 = [1, -1, 3, -7][rng.range(0, 3) as usize];
        let lb = rng.range(-1000, 1000);
        let span = [0, -3, 1, rng.range(2, 2000)][rng.range(0, 3) as usize];
        let ub = lb + span * incr.signum();
        let _chunk = rng.range(0, 17);
        let mut want: Vec<i64> = Vec::new();
        let mut i = lb;
        while if incr > 0 { i <= ub } else { i >= ub } {
            want.push(i);
            i += incr;
        }
        let mut got = results[case].clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "case {case}: lb {lb} ub {ub} incr {incr}");
        assert_eq!(
            lasts[case],
            (!want.is_empty()) as u32,
            "case {case}: last chunk flagged once"
        );
    }
}
