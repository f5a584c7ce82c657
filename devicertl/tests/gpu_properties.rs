//! Host-emulation tests of GPU properties the CPU plugin never shows: private memory that other
//! threads cannot read, parallel regions on part of a team (named and counting barriers),
//! loops that one thread runs alone while others run theirs, dynamic shared memory, and the
//! `ompx_*` warp routines.
mod common;

use common::{generic_kernel, parallel, spmd_kernel, Shared};
use core::ffi::c_void;
use devicertl::arch::host::{
    block_id, launch_with_dynamic_shared, private, race, thread_id_in_block,
};
use devicertl::ids::omp_get_num_threads;
use devicertl::sync::{__kmpc_barrier, __kmpc_copyprivate, __kmpc_end_single, __kmpc_single};
use devicertl::workshare::{
    __kmpc_dispatch_deinit, __kmpc_dispatch_init_4, __kmpc_dispatch_next_4, sched,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

fn no_launch_env() -> Shared<rustomp_abi::KernelLaunchEnvironment> {
    Shared(core::ptr::null_mut())
}

/// Sizes of the three copyprivate variables of the test (an int, a 40-byte struct, a double).
const SIZES: [usize; 3] = [4, 40, 8];

/// The compiler's copy function for the list: reads through every source pointer, so a source
/// in another thread's private memory is caught (a GPU would read the reader's own memory).
unsafe extern "C" fn copy_three(dst: *mut c_void, src: *mut c_void) {
    let (dst, src) = (dst as *const *mut u8, src as *const *const u8);
    private::check_readable(src as *const u8);
    for (i, size) in SIZES.iter().enumerate() {
        // SAFETY: both lists hold three pointers to variables of SIZES[i] bytes.
        unsafe {
            let (d, s) = (*dst.add(i), *src.add(i));
            private::check_readable(s);
            // `copy`, not `copy_nonoverlapping`: like the llvm.memcpy clang emits, the source may
            // be the destination itself.
            core::ptr::copy(s, d, *size);
        }
    }
}

/// One round of `single copyprivate(a, b, c)` with everything in private memory, as clang-22
/// emits it for GPUs. Returns what this thread ended with.
fn copyprivate_round(round: u32) -> (u32, [u8; 40], f64) {
    let list = private::alloc(3 * 8) as *mut *mut u8;
    let vars: Vec<*mut u8> = SIZES.iter().map(|s| private::alloc(*s)).collect();
    // SAFETY: `list` has room for three pointers.
    unsafe {
        for (i, v) in vars.iter().enumerate() {
            *list.add(i) = *v;
        }
    }
    let did_it = __kmpc_single(core::ptr::null(), 0);
    if did_it != 0 {
        let team = block_id();
        // SAFETY: the variables are this thread's, of SIZES bytes.
        unsafe {
            *(vars[0] as *mut u32) = 1000 * team + round;
            core::ptr::write_bytes(vars[1], (round + 7) as u8, 40);
            *(vars[2] as *mut f64) = round as f64 + 0.5;
        }
        __kmpc_end_single(core::ptr::null(), 0);
    }
    // SAFETY: arguments as clang passes them.
    unsafe {
        __kmpc_copyprivate(
            core::ptr::null(),
            0,
            24,
            list as *mut c_void,
            copy_three,
            did_it,
        )
    };
    // SAFETY: as above.
    unsafe {
        (
            *(vars[0] as *const u32),
            *(vars[1] as *const [u8; 40]),
            *(vars[2] as *const f64),
        )
    }
}

#[test]
fn copyprivate_copies_through_memory_every_thread_can_read() {
    let results = Mutex::new(Vec::new());
    let body = || {
        for round in 0..4 {
            let got = copyprivate_round(round);
            results.lock().unwrap().push((block_id(), round, got));
        }
    };
    // Whole team (hardware barrier), part of it in whole warps (named barrier), part of it in
    // a partial warp (the barrier for any count), and a generic-mode region.
    spmd_kernel(2, 24, 8, no_launch_env(), || parallel(true, 0, &body));
    spmd_kernel(1, 40, 8, no_launch_env(), || parallel(true, 16, &body));
    spmd_kernel(1, 40, 8, no_launch_env(), || parallel(true, 13, &body));
    generic_kernel(1, 44, 8, no_launch_env(), false, || {
        parallel(true, 0, &body)
    });
    let results = results.into_inner().unwrap();
    // The generic region gets every worker (44 threads less the main thread's warp of 8).
    assert_eq!(results.len(), 4 * (2 * 24 + 16 + 13 + 36));
    for (team, round, (a, b, c)) in results {
        assert_eq!(a, 1000 * team + round);
        assert_eq!(b, [(round + 7) as u8; 40]);
        assert_eq!(c, round as f64 + 0.5);
    }
}

/// Regions on part of a team: after each barrier every thread sees what the others wrote
/// before it, for sizes that are whole warps and sizes that are not (generic regions of 13 and
/// 20 threads too, which get exactly that many). The slots stand for variables the region
/// shares in team memory (program 118's `rounds`): watched, so a barrier made of atomics, which
/// compute-sanitizer's racecheck cannot see (it reported 3 hazards there on an H200), fails.
#[test]
fn barriers_of_part_of_a_team_meet_and_order() {
    let mismatches = AtomicU32::new(0);
    let slots: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
    let slots = &slots;
    let mismatches = &mismatches;
    let body = |n: u32| {
        move || {
            let tid = thread_id_in_block();
            assert_eq!(omp_get_num_threads() as u32, n);
            let watch = |t: u32| &slots[t as usize] as *const AtomicU32 as *const u8;
            for round in 1..=60u32 {
                race::write(watch(tid), 4, "my slot");
                slots[tid as usize].store(round * 100 + tid, Ordering::Relaxed);
                __kmpc_barrier(core::ptr::null(), 0);
                let next = (tid + 1) % n;
                race::read(watch(next), 4, "the neighbour's slot");
                if slots[next as usize].load(Ordering::Relaxed) != round * 100 + next {
                    mismatches.fetch_add(1, Ordering::Relaxed);
                }
                __kmpc_barrier(core::ptr::null(), 0);
            }
        }
    };
    for n in [3u32, 8, 20, 24, 37] {
        let region = body(n);
        spmd_kernel(1, 40, 8, no_launch_env(), || {
            parallel(true, n as i32, &region)
        });
    }
    for n in [8u32, 13, 16, 20, 32] {
        let region = body(n);
        generic_kernel(1, 44, 8, no_launch_env(), false, || {
            parallel(true, n as i32, &region)
        });
    }
    assert_eq!(mismatches.load(Ordering::Relaxed), 0);
}

/// The barrier amdgcn (and nvptx before sm_80) uses for a region that is not whole warps, which
/// the emulation otherwise replaces with the hardware barrier for any count: it counts one
/// arrival per warp in team memory and orders with fences, so it is checked for meeting and
/// ordering with atomics (it is invisible to the watched-memory check by design).
#[test]
fn counting_barrier_meets_and_orders() {
    let mismatches = AtomicU32::new(0);
    let slots: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
    for (threads, n) in [(40u32, 13u32), (40, 3), (64, 37)] {
        let region = || {
            let tid = thread_id_in_block();
            for round in 1..=40u32 {
                slots[tid as usize].store(round * 100 + tid, Ordering::Relaxed);
                devicertl::sync::counting_barrier(n);
                let next = (tid + 1) % n;
                if slots[next as usize].load(Ordering::Relaxed) != round * 100 + next {
                    mismatches.fetch_add(1, Ordering::Relaxed);
                }
                devicertl::sync::counting_barrier(n);
            }
        };
        spmd_kernel(1, threads, 8, no_launch_env(), || {
            parallel(true, n as i32, &region)
        });
    }
    assert_eq!(mismatches.load(Ordering::Relaxed), 0);
}

/// `for schedule(dynamic)` in a nested (serialized) region: each thread runs its own loop at the
/// same time as the others run theirs, and must see every iteration exactly once.
fn own_loop(kind: i32, trip: i32, chunk: i32) -> Vec<u32> {
    let mut seen = vec![0u32; trip as usize];
    __kmpc_dispatch_init_4(core::ptr::null(), 0, kind, 0, trip - 1, 1, chunk);
    let (mut last, mut lb, mut ub, mut stride) = (0, 0, 0, 0);
    // SAFETY: writable out-parameters, as clang passes them.
    while unsafe {
        __kmpc_dispatch_next_4(
            core::ptr::null(),
            0,
            &mut last,
            &mut lb,
            &mut ub,
            &mut stride,
        )
    } != 0
    {
        for i in lb..=ub {
            seen[i as usize] += 1;
            std::thread::yield_now();
        }
    }
    __kmpc_dispatch_deinit(core::ptr::null(), 0);
    seen
}

#[test]
fn loops_a_thread_runs_alone_are_its_own() {
    let bad = Mutex::new(Vec::new());
    let inner = || {
        for (kind, chunk) in [
            (sched::DYNAMIC_CHUNKED, 1),
            (sched::GUIDED_CHUNKED, 2),
            (sched::DYNAMIC_CHUNKED, 7),
        ] {
            let seen = own_loop(kind, 97, chunk);
            if seen.iter().any(|&c| c != 1) {
                bad.lock().unwrap().push((thread_id_in_block(), kind, seen));
            }
        }
        // A loop of one thread inside the body of another.
        __kmpc_dispatch_init_4(core::ptr::null(), 0, sched::DYNAMIC_CHUNKED, 0, 9, 1, 1);
        let (mut last, mut lb, mut ub, mut stride) = (0, 0, 0, 0);
        let mut outer = 0;
        // SAFETY: as in `own_loop`.
        while unsafe {
            __kmpc_dispatch_next_4(
                core::ptr::null(),
                0,
                &mut last,
                &mut lb,
                &mut ub,
                &mut stride,
            )
        } != 0
        {
            outer += ub - lb + 1;
            let seen = own_loop(sched::DYNAMIC_CHUNKED, 13, 2);
            if seen.iter().any(|&c| c != 1) {
                bad.lock().unwrap().push((thread_id_in_block(), -1, seen));
            }
        }
        if outer != 10 {
            bad.lock()
                .unwrap()
                .push((thread_id_in_block(), -2, vec![outer as u32]));
        }
    };
    let body = || parallel(true, 0, &inner); // nested: serialized on this thread
    spmd_kernel(2, 16, 8, no_launch_env(), || parallel(true, 0, &body));
    generic_kernel(1, 40, 8, no_launch_env(), false, || {
        inner(); // the main thread alone, outside any region
        parallel(true, 0, &body);
    });
    let bad = bad.into_inner().unwrap();
    assert!(
        bad.is_empty(),
        "iterations lost or repeated: {:?}",
        &bad[..bad.len().min(3)]
    );
}

#[test]
fn dynamic_shared_memory_is_one_block_per_team() {
    use devicertl::ompx::{llvm_omp_get_dynamic_shared, llvm_omp_target_dynamic_shared_alloc};
    let seen = Mutex::new(Vec::new());
    launch_with_dynamic_shared(3, 16, 8, 256, || {
        let p = llvm_omp_target_dynamic_shared_alloc() as *mut u32;
        assert_eq!(p as *mut c_void, llvm_omp_get_dynamic_shared());
        let tid = thread_id_in_block();
        // SAFETY: 256 bytes = 64 words per team; each thread writes its own word.
        unsafe { p.add(tid as usize).write_volatile(block_id() * 100 + tid) };
        devicertl::arch::team_barrier();
        // SAFETY: as above; the barrier ordered the writes.
        let neighbour = unsafe { p.add(((tid + 1) % 16) as usize).read_volatile() };
        seen.lock()
            .unwrap()
            .push((block_id(), tid, p as usize, neighbour));
    });
    let seen = seen.into_inner().unwrap();
    for (team, tid, p, neighbour) in &seen {
        assert_eq!(*neighbour, team * 100 + (tid + 1) % 16);
        let same_team = seen.iter().filter(|s| s.0 == *team).all(|s| s.2 == *p);
        let other_teams = seen.iter().filter(|s| s.0 != *team).all(|s| s.2 != *p);
        assert!(same_team && other_teams);
    }
}

#[test]
fn ompx_warp_routines() {
    use devicertl::ompx::*;
    let bad = AtomicU32::new(0);
    launch_with_dynamic_shared(2, 20, 8, 0, || {
        let tid = thread_id_in_block();
        let lane = tid % 8;
        let lanes = (20 - tid / 8 * 8).min(8);
        let ballot = ompx_ballot_sync(!0, lane.is_multiple_of(3) as i32);
        let expected = (0..lanes)
            .filter(|l| l % 3 == 0)
            .fold(0u64, |a, l| a | 1 << l);
        let down = ompx_shfl_down_sync_d(!0, tid as f64 * 1.5, 1, 8);
        let want_down = if lane + 1 < lanes {
            (tid + 1) as f64 * 1.5
        } else {
            tid as f64 * 1.5
        };
        let long = ompx_shfl_down_sync_l(!0, (tid as i64) << 40, 2, 4);
        let want_long = if lane % 4 + 2 < 4 && lane + 2 < lanes {
            ((tid + 2) as i64) << 40
        } else {
            (tid as i64) << 40
        };
        let ids_ok = ompx_thread_id(0) == tid as i32
            && ompx_block_dim(0) == 20
            && ompx_block_id(0) == block_id() as i32
            && ompx_grid_dim(0) == 2
            && ompx_thread_id(1) == 0
            && ompx_block_dim(2) == 1;
        ompx_sync_block_acq_rel();
        if ballot != expected || down != want_down || long != want_long || !ids_ok {
            bad.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(bad.load(Ordering::Relaxed), 0);
}
