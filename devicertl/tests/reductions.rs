//! Parallel and teams reductions through the runtime's real algorithm, with callbacks written
//! the way clang-22 generates them, for a list of three variables of different types and
//! operators: `+` on i64, `max` on f64, `^` on u32.

// The callbacks below stand in for compiler-generated code: every raw pointer they touch is
// the calling thread's own list or the launch's buffer, set up by the functions at the bottom.
#![allow(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    reason = "stand-ins for compiler-generated callbacks; the comment above says what they touch"
)]

mod common;

use common::{generic_kernel, parallel, spmd_kernel, Shared};
use core::ffi::c_void;
use devicertl::arch::host::race;
use devicertl::arch::{block_id, warp_size};
use devicertl::ids::{
    __kmpc_get_hardware_thread_id_in_block, omp_get_num_threads, omp_get_thread_num,
};
use devicertl::reduction::{
    __kmpc_nvptx_parallel_reduce_nowait_v2, __kmpc_nvptx_teams_reduce_nowait_v2,
    __kmpc_reduction_get_fixed_buffer, __kmpc_shuffle_int32, __kmpc_shuffle_int64,
};
use devicertl::sync::__kmpc_barrier;
use rustomp_abi::KernelLaunchEnvironment;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// One thread's reduction variables.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vars {
    sum: i64,
    max: f64,
    xor: u32,
}
const IDENTITY: Vars = Vars {
    sum: 0,
    max: f64::NEG_INFINITY,
    xor: 0,
};

impl Vars {
    fn of(team: u32, thread: u32) -> Self {
        let v = (team as i64) * 1000 + thread as i64 + 1;
        Vars {
            sum: v,
            max: (v as f64) * 0.5 - (thread % 7) as f64,
            xor: (v as u32).wrapping_mul(2_654_435_761),
        }
    }
    fn combine(&mut self, other: Vars) {
        self.sum += other.sum;
        self.max = self.max.max(other.max);
        self.xor ^= other.xor;
    }
}

/// What clang passes as the reduce list: pointers to the variables, plus (our addition, where
/// clang uses its team-shared global) the team's transfer array.
#[repr(C)]
struct List {
    sum: *mut i64,
    max: *mut f64,
    xor: *mut u32,
    medium: *const AtomicU32,
}

impl List {
    fn new(vars: &mut Vars, medium: &Medium) -> Self {
        List {
            sum: &mut vars.sum,
            max: &mut vars.max,
            xor: &mut vars.xor,
            medium: medium.0[block_id() as usize * MEDIUM_WORDS..].as_ptr(),
        }
    }
    /// # Safety
    /// The pointers are live (they point at the calling thread's variables).
    unsafe fn read(&self) -> Vars {
        unsafe {
            Vars {
                sum: *self.sum,
                max: *self.max,
                xor: *self.xor,
            }
        }
    }
    unsafe fn write(&self, v: Vars) {
        unsafe {
            *self.sum = v.sum;
            *self.max = v.max;
            *self.xor = v.xor;
        }
    }
}

const MEDIUM_WORDS: usize = 64;
/// The compiler's `__openmp_nvptx_data_transfer_temporary_storage`, one per team.
struct Medium(Vec<AtomicU32>);
impl Medium {
    fn new(teams: u32) -> Self {
        Medium(
            (0..teams as usize * MEDIUM_WORDS)
                .map(|_| AtomicU32::new(0))
                .collect(),
        )
    }
}

unsafe extern "C" fn shuffle_and_reduce(list: *mut c_void, lane: i16, offset: i16, algorithm: i16) {
    let list = unsafe { &*(list as *const List) };
    let mine = unsafe { list.read() };
    let width = warp_size() as i16;
    let remote = Vars {
        sum: __kmpc_shuffle_int64(mine.sum, offset, width),
        max: f64::from_bits(__kmpc_shuffle_int64(mine.max.to_bits() as i64, offset, width) as u64),
        xor: __kmpc_shuffle_int32(mine.xor as i32, offset, width) as u32,
    };
    let reduce = algorithm == 0
        || (algorithm == 1 && lane < offset)
        || (algorithm == 2 && lane & 1 == 0 && offset > 0);
    if reduce {
        let mut combined = mine;
        combined.combine(remote);
        unsafe { list.write(combined) };
    }
    if algorithm == 1 && lane >= offset {
        unsafe { list.write(remote) };
    }
}

unsafe extern "C" fn inter_warp_copy(list: *mut c_void, warps: i32) {
    let list = unsafe { &*(list as *const List) };
    let tid = __kmpc_get_hardware_thread_id_in_block() as u32;
    let (warp_id, lane) = (tid / warp_size(), tid % warp_size());
    let medium = |i: u32| unsafe { &*list.medium.add(i as usize) };
    // Word by word, as clang does: i64, f64 (two words each) and u32.
    let words: [*mut u32; 5] = [
        list.sum as *mut u32,
        unsafe { (list.sum as *mut u32).add(1) },
        list.max as *mut u32,
        unsafe { (list.max as *mut u32).add(1) },
        list.xor,
    ];
    // The transfer array is team-shared memory that the compiler's code reads and writes
    // plainly: watched, so a barrier the GPU's tools cannot see is reported as the race
    // compute-sanitizer reported on an H200 (program 120, regions of 40 threads).
    let watch = |i: u32| medium(i) as *const AtomicU32 as *const u8;
    for word in words {
        __kmpc_barrier(core::ptr::null(), 0);
        if lane == 0 {
            race::write(watch(warp_id), 4, "inter_warp_copy: warp master stores");
            medium(warp_id).store(unsafe { *word }, Relaxed);
        }
        __kmpc_barrier(core::ptr::null(), 0);
        if tid < warps as u32 {
            race::read(watch(tid), 4, "inter_warp_copy: thread `warp` loads");
            unsafe { *word = medium(tid).load(Relaxed) };
        }
    }
}

/// The teams buffer: struct of arrays, one slot per record.
struct TeamsBuffer {
    sum: Vec<AtomicI64>,
    max: Vec<AtomicU64>,
    xor: Vec<AtomicU32>,
}
impl TeamsBuffer {
    fn new(slots: u32) -> Self {
        let n = slots as usize;
        TeamsBuffer {
            sum: (0..n).map(|_| AtomicI64::new(0x5555)).collect(),
            max: (0..n).map(|_| AtomicU64::new(0x5555)).collect(),
            xor: (0..n).map(|_| AtomicU32::new(0x5555)).collect(),
        }
    }
    fn get(&self, slot: usize) -> Vars {
        Vars {
            sum: self.sum[slot].load(Relaxed),
            max: f64::from_bits(self.max[slot].load(Relaxed)),
            xor: self.xor[slot].load(Relaxed),
        }
    }
    fn set(&self, slot: usize, v: Vars) {
        self.sum[slot].store(v.sum, Relaxed);
        self.max[slot].store(v.max.to_bits(), Relaxed);
        self.xor[slot].store(v.xor, Relaxed);
    }
}

unsafe extern "C" fn list_to_global_copy(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let (buffer, list) = unsafe { (&*(buffer as *const TeamsBuffer), &*(list as *const List)) };
    buffer.set(slot as usize, unsafe { list.read() });
}
unsafe extern "C" fn list_to_global_reduce(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let (buffer, list) = unsafe { (&*(buffer as *const TeamsBuffer), &*(list as *const List)) };
    let mut v = buffer.get(slot as usize);
    v.combine(unsafe { list.read() });
    buffer.set(slot as usize, v);
}
unsafe extern "C" fn global_to_list_copy(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let (buffer, list) = unsafe { (&*(buffer as *const TeamsBuffer), &*(list as *const List)) };
    unsafe { list.write(buffer.get(slot as usize)) };
}
unsafe extern "C" fn global_to_list_reduce(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let (buffer, list) = unsafe { (&*(buffer as *const TeamsBuffer), &*(list as *const List)) };
    let mut v = unsafe { list.read() };
    v.combine(buffer.get(slot as usize));
    unsafe { list.write(v) };
}

fn parallel_reduce(vars: &mut Vars, medium: &Medium) -> bool {
    let mut list = List::new(vars, medium);
    let list_ptr = &mut list as *mut List as *mut c_void;
    // SAFETY: list and callbacks as the compiler would pass them.
    unsafe {
        __kmpc_nvptx_parallel_reduce_nowait_v2(
            core::ptr::null(),
            24,
            list_ptr,
            shuffle_and_reduce,
            inter_warp_copy,
        ) == 1
    }
}

fn teams_reduce(vars: &mut Vars, medium: &Medium, slots: u32) -> bool {
    let mut list = List::new(vars, medium);
    let list_ptr = &mut list as *mut List as *mut c_void;
    // SAFETY: as above; the buffer is the launch's.
    unsafe {
        __kmpc_nvptx_teams_reduce_nowait_v2(
            core::ptr::null(),
            __kmpc_reduction_get_fixed_buffer(),
            slots,
            24,
            list_ptr,
            shuffle_and_reduce,
            inter_warp_copy,
            list_to_global_copy,
            list_to_global_reduce,
            global_to_list_copy,
            global_to_list_reduce,
        ) == 1
    }
}

fn expected(teams: u32, threads_per_team: u32) -> Vars {
    let mut all = IDENTITY;
    for team in 0..teams {
        for thread in 0..threads_per_team {
            all.combine(Vars::of(team, thread));
        }
    }
    all
}

/// `#pragma omp parallel reduction(...)` in every team of an SPMD kernel.
fn check_parallel_spmd(teams: u32, threads: u32, warp: u32, num_threads: i32) {
    let medium = Medium::new(teams);
    let results = Mutex::new(Vec::new());
    spmd_kernel(teams, threads, warp, Shared(core::ptr::null_mut()), || {
        parallel(true, num_threads, &|| {
            let mut mine = Vars::of(block_id(), omp_get_thread_num() as u32);
            if parallel_reduce(&mut mine, &medium) {
                results.lock().unwrap().push((
                    block_id(),
                    omp_get_thread_num(),
                    omp_get_num_threads(),
                    mine,
                ));
            }
        });
    });
    let results = results.into_inner().unwrap();
    assert_eq!(
        results.len(),
        teams as usize,
        "one winner per team ({teams}x{threads}, warp {warp})"
    );
    for (team, thread, region_threads, value) in results {
        assert_eq!(thread, 0);
        let mut want = IDENTITY;
        for t in 0..region_threads as u32 {
            want.combine(Vars::of(team, t));
        }
        assert_eq!(
            value, want,
            "team {team}, {region_threads} threads, warp {warp}"
        );
    }
}

#[test]
fn parallel_reduction_full_warps() {
    check_parallel_spmd(2, 32, 32, 0);
    check_parallel_spmd(1, 64, 32, 0);
    check_parallel_spmd(1, 128, 32, 0);
}

#[test]
fn parallel_reduction_partial_last_warp() {
    check_parallel_spmd(1, 40, 32, 0);
    check_parallel_spmd(2, 100, 32, 0);
    check_parallel_spmd(1, 7, 4, 0);
    check_parallel_spmd(1, 1, 32, 0);
}

#[test]
fn parallel_reduction_narrow_warps_and_num_threads() {
    check_parallel_spmd(3, 64, 8, 0);
    check_parallel_spmd(1, 64, 4, 16);
    check_parallel_spmd(1, 64, 32, 32);
    check_parallel_spmd(1, 96, 16, 48);
}

/// A region on part of the team that is not whole warps (program 120: `parallel
/// num_threads(40)` in a kernel of 128 threads): the barriers inside the compiler's
/// inter_warp_copy must be hardware barriers. The runtime's earlier barrier for such regions
/// counted arrivals with atomics, which orders memory but which compute-sanitizer's racecheck
/// cannot see: it reported 16 races in `__kmpc_nvptx_parallel_reduce_nowait_v2` (the transfer
/// array written by one warp's master and read by another thread). The emulation watches the
/// transfer array and only counts hardware meetings, so it reports them too.
#[test]
fn parallel_reduction_of_part_of_a_team_meets_at_hardware_barriers() {
    check_parallel_spmd(1, 128, 32, 40);
    check_parallel_spmd(2, 64, 8, 13);
    check_parallel_spmd(1, 96, 16, 20);
    check_parallel_generic(1, 128, 32, 40);
    check_parallel_generic(2, 72, 8, 13);
}

/// `#pragma omp parallel num_threads(n) reduction(...)` from the main thread of a generic kernel:
/// the region gets exactly `n` threads (whole warps or not) and reduces over them.
fn check_parallel_generic(teams: u32, threads: u32, warp: u32, num_threads: i32) {
    let medium = Medium::new(teams);
    let results = Mutex::new(Vec::new());
    generic_kernel(
        teams,
        threads,
        warp,
        Shared(core::ptr::null_mut()),
        false,
        || {
            let mut team_copy = IDENTITY;
            let team_copy_ptr = Shared(&mut team_copy as *mut Vars);
            parallel(true, num_threads, &|| {
                assert_eq!(omp_get_num_threads(), num_threads);
                let mut mine = Vars::of(block_id(), omp_get_thread_num() as u32);
                if parallel_reduce(&mut mine, &medium) {
                    // SAFETY: only the winning thread writes the team copy, which outlives the region.
                    unsafe { (*team_copy_ptr.get()).combine(mine) };
                }
            });
            results.lock().unwrap().push((block_id(), team_copy));
        },
    );
    let results = results.into_inner().unwrap();
    assert_eq!(results.len(), teams as usize);
    for (team, value) in results {
        let mut want = IDENTITY;
        for t in 0..num_threads as u32 {
            want.combine(Vars::of(team, t));
        }
        assert_eq!(
            value, want,
            "generic team {team}, num_threads({num_threads}), warp {warp}"
        );
    }
}

#[test]
fn parallel_reduction_if_false_is_one_thread() {
    let medium = Medium::new(1);
    let winners = AtomicU32::new(0);
    spmd_kernel(1, 32, 32, Shared(core::ptr::null_mut()), || {
        parallel(false, 0, &|| {
            let mut mine = Vars::of(0, 5);
            assert_eq!(omp_get_num_threads(), 1);
            if parallel_reduce(&mut mine, &medium) {
                assert_eq!(mine, Vars::of(0, 5));
                winners.fetch_add(1, Relaxed);
            }
        });
    });
    // The team's region has one thread: it runs once, and that thread holds the value.
    assert_eq!(winners.load(Relaxed), 1);
}

#[derive(Clone, Copy)]
enum Kernel {
    Spmd,
    Generic { compiler_state_machine: bool },
}

/// `#pragma omp target teams distribute parallel for reduction(...)`: a parallel reduction into
/// the team's copy, then the teams reduction. SPMD: every thread has its own team copy and takes
/// part in the teams reduction. Generic: the workers reduce, the main thread holds the team
/// copy and takes part in the teams reduction alone.
fn check_teams(kernel: Kernel, teams: u32, threads: u32, warp: u32, slots: u32) {
    let medium = Medium::new(teams);
    let buffer = TeamsBuffer::new(slots);
    let mut launch_env = KernelLaunchEnvironment {
        reduction_cnt: 0,
        reduction_iter_cnt: 0,
        reduction_buffer: &buffer as *const TeamsBuffer as *mut c_void,
    };
    let winners = Mutex::new(Vec::new());
    // Generic kernels keep the main thread's warp out of parallel regions.
    let region_threads = if let Kernel::Spmd = kernel {
        threads
    } else {
        threads - warp
    };
    let team_body = || {
        let mut team_copy = IDENTITY;
        let team_copy_ptr = Shared(&mut team_copy as *mut Vars);
        parallel(true, 0, &|| {
            assert_eq!(omp_get_num_threads() as u32, region_threads);
            let mut mine = Vars::of(block_id(), omp_get_thread_num() as u32);
            if parallel_reduce(&mut mine, &medium) {
                // SAFETY: only the winning thread writes its team copy, which outlives the region.
                unsafe { (*team_copy_ptr.get()).combine(mine) };
            }
        });
        if teams_reduce(&mut team_copy, &medium, slots) {
            winners.lock().unwrap().push(team_copy);
        }
    };
    let env = Shared(&mut launch_env as *mut KernelLaunchEnvironment);
    match kernel {
        Kernel::Spmd => spmd_kernel(teams, threads, warp, env, team_body),
        Kernel::Generic {
            compiler_state_machine,
        } => generic_kernel(teams, threads, warp, env, compiler_state_machine, team_body),
    }
    let winners = winners.into_inner().unwrap();
    assert_eq!(
        winners.len(),
        1,
        "exactly one thread finishes the teams reduction"
    );
    assert_eq!(
        winners[0],
        expected(teams, region_threads),
        "{teams} teams x {threads}, warp {warp}, {slots} slots"
    );
    assert_eq!(
        (launch_env.reduction_cnt, launch_env.reduction_iter_cnt),
        (0, 0),
        "counters reset for the next launch"
    );
}

fn check_teams_spmd(teams: u32, threads: u32, warp: u32, slots: u32) {
    check_teams(Kernel::Spmd, teams, threads, warp, slots);
}

#[test]
fn teams_reduction_spmd_fewer_teams_than_slots() {
    check_teams_spmd(1, 32, 32, 1024);
    check_teams_spmd(5, 64, 32, 1024);
    check_teams_spmd(12, 40, 8, 1024);
}

#[test]
fn teams_reduction_spmd_more_teams_than_slots() {
    // Teams go through the buffer in chunks of `slots`.
    check_teams_spmd(9, 32, 8, 4);
    check_teams_spmd(10, 16, 4, 3);
    check_teams_spmd(7, 8, 8, 1);
    check_teams_spmd(8, 16, 4, 4);
}

#[test]
fn teams_reduction_spmd_more_slots_in_use_than_threads() {
    // The last team holds more records than it has threads.
    check_teams_spmd(20, 8, 4, 1024);
}

#[test]
fn teams_reduction_generic() {
    check_teams(
        Kernel::Generic {
            compiler_state_machine: false,
        },
        3,
        64,
        32,
        1024,
    );
    check_teams(
        Kernel::Generic {
            compiler_state_machine: false,
        },
        6,
        24,
        8,
        4,
    );
    check_teams(
        Kernel::Generic {
            compiler_state_machine: true,
        },
        4,
        24,
        8,
        2,
    );
}
