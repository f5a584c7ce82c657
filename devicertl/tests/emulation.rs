//! The runtime's team machinery on emulated teams: the generic-mode state machine (the
//! runtime's and the compiler's), nested and `if(false)` regions, critical sections under
//! contention, and the team-shared stack behind `__kmpc_alloc_shared`.

mod common;

use common::{generic_kernel, parallel, spmd_kernel, Shared};
use core::ffi::c_void;
use devicertl::arch::block_id;
use devicertl::ids::{
    omp_get_level, omp_get_max_threads, omp_get_num_threads, omp_get_thread_num, omp_in_parallel,
};
use devicertl::memory::{__kmpc_alloc_shared, __kmpc_free_shared};
use devicertl::sync::{__kmpc_critical, __kmpc_end_critical};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

fn no_launch_env() -> Shared<rustomp_abi::KernelLaunchEnvironment> {
    Shared(core::ptr::null_mut())
}

/// Several regions in a row from the main thread: each runs on the right threads, with the
/// right ids, and the main thread sees the region finished when `parallel` returns. With a
/// block that is not whole warps, the main thread's warp-mates and the threads past the last
/// worker leave at once and must not hold up any barrier. A region gets the threads it asks
/// for, whole warps or not (up to the workers).
fn check_generic_regions(compiler_state_machine: bool, threads: u32) {
    let (teams, warp) = (2, 8);
    let workers = threads - warp;
    let seen = Mutex::new(Vec::new());
    generic_kernel(
        teams,
        threads,
        warp,
        no_launch_env(),
        compiler_state_machine,
        || {
            assert_eq!(omp_in_parallel(), 0);
            for (region, clause) in [0, 16, 3, 20, 0, 64].into_iter().enumerate() {
                let ran = AtomicU32::new(0);
                let ids = Mutex::new(BTreeSet::new());
                parallel(true, clause, &|| {
                    ran.fetch_add(1, Relaxed);
                    ids.lock().unwrap().insert(omp_get_thread_num());
                    assert_eq!(omp_get_level(), 1);
                    // Nested regions run on the calling thread alone.
                    parallel(true, 8, &|| {
                        assert_eq!(omp_get_num_threads(), 1);
                        assert_eq!(omp_get_thread_num(), 0);
                        assert_eq!(omp_get_level(), 2);
                    });
                });
                let ran = ran.load(Relaxed);
                let want = match clause {
                    0 => workers,
                    c => (c as u32).min(workers),
                };
                assert_eq!(ran, want, "region {region} num_threads({clause})");
                let ids = ids.into_inner().unwrap();
                assert_eq!(ids, (0..want as i32).collect::<BTreeSet<_>>());
                seen.lock().unwrap().push((block_id(), region));
            }
            // if(false): the main thread runs the region itself.
            let ran = AtomicU32::new(0);
            parallel(false, 0, &|| {
                assert_eq!(omp_get_num_threads(), 1);
                ran.fetch_add(1, Relaxed);
            });
            assert_eq!(ran.load(Relaxed), 1);
        },
    );
    assert_eq!(seen.into_inner().unwrap().len(), teams as usize * 6);
}

#[test]
fn generic_state_machine_runs_every_region() {
    check_generic_regions(false, 72);
    check_generic_regions(false, 44); // main thread 40 alone in warp 5; workers 0..36
}

#[test]
fn compiler_state_machine_runs_every_region() {
    check_generic_regions(true, 72);
    check_generic_regions(true, 44);
}

#[test]
fn generic_main_thread_is_alone_in_its_warp() {
    // LLVM's rule: the first lane of the warp holding the last thread.
    for (threads, warp, main) in [
        (64u32, 32u32, 32u32),
        (52, 32, 32),
        (33, 32, 32),
        (44, 8, 40),
        (72, 8, 64),
    ] {
        let seen = AtomicU32::new(u32::MAX);
        generic_kernel(1, threads, warp, no_launch_env(), false, || {
            seen.store(devicertl::arch::thread_id_in_block(), Relaxed);
            assert_eq!(omp_get_max_threads() as u32, threads - warp);
        });
        assert_eq!(
            seen.load(Relaxed),
            main,
            "{threads} threads, warps of {warp}"
        );
    }
}

#[test]
fn spmd_regions_honour_num_threads_and_if() {
    let ran = AtomicU32::new(0);
    spmd_kernel(2, 64, 32, no_launch_env(), || {
        parallel(true, 0, &|| {
            assert_eq!(omp_get_num_threads(), 64);
            ran.fetch_add(1, Relaxed);
        });
        parallel(true, 20, &|| {
            assert_eq!(omp_get_num_threads(), 20);
            assert!(omp_get_thread_num() < 20);
            ran.fetch_add(1, Relaxed);
        });
    });
    assert_eq!(ran.load(Relaxed), 2 * (64 + 20));
}

#[test]
fn critical_sections_exclude_each_other() {
    // clang's `_gomp_critical_user_<name>` lock: [8 x i32], zero-initialized.
    let lock = [
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
        AtomicU32::new(0),
    ];
    let lock_ptr = Shared(lock.as_ptr() as *mut c_void);
    // Read and write separately, so a missing exclusion loses updates.
    let counter = AtomicU64::new(0);
    let rounds = 300;
    spmd_kernel(4, 16, 8, no_launch_env(), || {
        for _ in 0..rounds {
            __kmpc_critical(core::ptr::null(), 0, lock_ptr.get());
            let value = counter.load(Relaxed);
            std::thread::yield_now();
            counter.store(value + 1, Relaxed);
            __kmpc_end_critical(core::ptr::null(), 0, lock_ptr.get());
        }
    });
    assert_eq!(counter.load(Relaxed), 4 * 16 * rounds);
    assert_eq!(lock[0].load(Relaxed), 0, "lock released");
}

/// Allocations that must not overlap and must come back in LIFO order from the team stack;
/// what does not fit comes from the heap.
fn nested_allocations(sizes: &[usize]) -> Vec<(usize, usize)> {
    allocations_filled_if(sizes, true)
}

/// `nested_allocations`, writing each block only if `fill`: in an SPMD team's code every thread
/// gets the same team-stack block, so only one of them may write it.
fn allocations_filled_if(sizes: &[usize], fill: bool) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    for &size in sizes {
        let ptr = __kmpc_alloc_shared(size) as usize;
        assert_ne!(ptr, 0);
        if fill {
            // The block is usable memory.
            // SAFETY: `ptr` holds `size` bytes; no other thread writes it meanwhile.
            unsafe { core::ptr::write_bytes(ptr as *mut u8, 0xa5, size) };
        }
        blocks.push((ptr, size));
    }
    let mut sorted = blocks.clone();
    sorted.sort();
    for pair in sorted.windows(2) {
        assert!(
            pair[0].0 + pair[0].1 <= pair[1].0,
            "blocks overlap: {pair:x?}"
        );
    }
    for &(ptr, size) in blocks.iter().rev() {
        __kmpc_free_shared(ptr as *mut c_void, size);
    }
    blocks
}

#[test]
fn shared_stack_nests_and_falls_back_to_the_heap() {
    generic_kernel(2, 64, 32, no_launch_env(), false, || {
        let first = nested_allocations(&[24, 100, 1000, 2000]);
        // Freed in LIFO order: the same sizes come back at the same addresses.
        let again = nested_allocations(&[24, 100, 1000, 2000]);
        assert_eq!(first, again);
        // Past the team stack: still distinct, usable memory.
        nested_allocations(&[3000, 3000, 16, 5000, 8]);
        // Workers (and the main thread's region) may allocate too, each its own memory.
        let blocks = Mutex::new(Vec::new());
        parallel(true, 0, &|| {
            let got = nested_allocations(&[64, 8]);
            blocks.lock().unwrap().extend(got);
        });
        assert_eq!(blocks.into_inner().unwrap().len(), 2 * 32);
        // After all that the stack is empty again.
        assert_eq!(nested_allocations(&[24]), first[..1].to_vec());
    });
    // SPMD, the team's code: one team-stack block per team for every thread (16 and 32 bytes),
    // while what does not fit (4096 after the 16) comes from the heap. Only
    // thread 0 writes the team's blocks (every thread writing them would be a data race).
    let per_thread = Mutex::new(Vec::new());
    spmd_kernel(1, 32, 32, no_launch_env(), || {
        let tid = devicertl::arch::thread_id_in_block();
        let blocks = allocations_filled_if(&[16, 4096, 32], tid == 0);
        per_thread.lock().unwrap().push(blocks);
    });
    let per_thread = per_thread.into_inner().unwrap();
    assert_eq!(per_thread.len(), 32);
    let team_blocks = |b: &Vec<(usize, usize)>| (b[0], b[2]);
    assert!(
        per_thread
            .iter()
            .all(|b| team_blocks(b) == team_blocks(&per_thread[0])),
        "the team's code got different team-stack blocks: {per_thread:x?}"
    );
}

/// `target teams distribute parallel for lastprivate(x)` as clang-22 compiles it for a GPU (an
/// SPMD kernel; program 62, `for (i = 100; i > 0; i -= 7) x = i`, last value 2): every thread
/// runs the team's code and gets the team's copy of `x` from `__kmpc_alloc_shared`, the thread
/// that runs the last iteration of the inner loop stores into it, and after the region every
/// thread of the team that had the last chunk copies it out. The copy must be the team's one
/// variable: on an H200 the runtime gave each thread its own and the program read 0.
#[test]
fn spmd_team_variables_are_one_per_team() {
    use devicertl::workshare::{__kmpc_distribute_static_init_4, __kmpc_for_static_init_4, sched};
    const TRIP: i32 = 15; // i = 100, 93, ..., 2
    let copied_out = Mutex::new(Vec::new());
    for (teams, threads) in [(2u32, 40u32), (1, 8), (3, 16)] {
        copied_out.lock().unwrap().clear();
        spmd_kernel(teams, threads, 8, no_launch_env(), || {
            // Four bytes, freed below in reverse order.
            let team_copy = Shared(__kmpc_alloc_shared(4) as *mut i32);
            let (mut last, mut lb, mut ub, mut stride) = (0, 0, TRIP - 1, 1);
            // SAFETY: writable out-parameters, as clang passes them.
            unsafe {
                __kmpc_distribute_static_init_4(
                    core::ptr::null(),
                    0,
                    sched::DISTRIBUTE_STATIC_CHUNKED,
                    &mut last,
                    &mut lb,
                    &mut ub,
                    &mut stride,
                    1,
                    threads as i32,
                )
            };
            ub = ub.min(TRIP - 1);
            while lb < TRIP {
                let (chunk_lb, chunk_ub) = (lb, ub);
                parallel(true, 0, &|| {
                    let (mut ilast, mut ilb, mut iub, mut istride) = (0, chunk_lb, chunk_ub, 1);
                    // SAFETY: as above.
                    unsafe {
                        __kmpc_for_static_init_4(
                            core::ptr::null(),
                            0,
                            sched::STATIC_CHUNKED,
                            &mut ilast,
                            &mut ilb,
                            &mut iub,
                            &mut istride,
                            1,
                            1,
                        )
                    };
                    let mut x = -1;
                    let mut i = ilb;
                    while i <= chunk_ub {
                        x = 100 - 7 * i;
                        i += istride;
                    }
                    if ilast != 0 {
                        // SAFETY: the team's copy, live until the team code frees it.
                        unsafe { *team_copy.get() = x };
                    }
                });
                lb += stride;
                ub = (ub + stride).min(TRIP - 1);
            }
            if last != 0 {
                // SAFETY: as above; the region's end barrier ordered the store.
                copied_out.lock().unwrap().push(unsafe { *team_copy.get() });
            }
            devicertl::memory::__kmpc_free_shared(team_copy.get() as *mut c_void, 4);
        });
        let copied_out = copied_out.lock().unwrap();
        assert_eq!(
            copied_out.len(),
            threads as usize,
            "every thread of the last team copies out"
        );
        assert!(
            copied_out.iter().all(|&x| x == 2),
            "{teams} teams of {threads}: lastprivate copied out {copied_out:?}, expected 2 from every thread"
        );
    }
}

/// What a kernel with one `parallel` costs in team barriers up to the region's end (issue 22,
/// item 4: a generic-mode region within 1.5 us of the SPMD one). Generic: the main thread sets
/// the team up without a barrier, then one barrier starts the region and one ends it (before:
/// one more at kernel start, 3). SPMD: the start of the kernel, and the region's end; the region
/// finds its size already published and starts without a barrier (before: 3). The kernel's end
/// adds one barrier in both.
#[test]
fn one_region_costs_two_team_barriers_in_both_modes() {
    use devicertl::arch::host::team_barriers_met;
    for compiler_state_machine in [false, true] {
        let met = AtomicU64::new(0);
        generic_kernel(2, 40, 8, no_launch_env(), compiler_state_machine, || {
            parallel(true, 0, &|| {});
            met.store(team_barriers_met(), Relaxed);
        });
        assert_eq!(
            met.load(Relaxed),
            2,
            "generic (compiler state machine: {compiler_state_machine})"
        );
    }
    let met = AtomicU64::new(0);
    spmd_kernel(2, 40, 8, no_launch_env(), || {
        parallel(true, 0, &|| {});
        met.store(team_barriers_met(), Relaxed);
    });
    assert_eq!(met.load(Relaxed), 2, "SPMD");
}
