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
    // Word by word, as clang does: i64, f64 (two words each) and u32.
    let words: [*mut u32; 5] = [
        list.sum as *mut u32,
        unsafe { (list.sum as *mut u32).add(1) },
        list.max as *mut u32,
        unsafe { (list.max as *mut u32).add(1) },
        list.xor,
    ];
    for word in words {
        copy_word_between_warps(word, list.medium, warps);
    }
}

/// One 32-bit word through the team's transfer array `medium`, between two barriers, as
/// clang-22's inter-warp copy moves it: each warp's first lane stores its warp's value, then
/// thread `w` of the first `warps` loads warp `w`'s. The transfer array is team-shared memory
/// that the compiler's code reads and writes plainly: watched, so a barrier the GPU's tools
/// cannot see is reported as the race compute-sanitizer reported on an H200 (program 120,
/// regions of 40 threads).
fn copy_word_between_warps(word: *mut u32, medium: *const AtomicU32, warps: i32) {
    let tid = __kmpc_get_hardware_thread_id_in_block() as u32;
    let (warp_id, lane) = (tid / warp_size(), tid % warp_size());
    let medium = |i: u32| unsafe { &*medium.add(i as usize) };
    let watch = |i: u32| medium(i) as *const AtomicU32 as *const u8;
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

// ---------------------------------------------------------------------------------------------
// `target teams distribute parallel for reduction(...)` as clang-22 emits it for an SPMD
// kernel: every thread runs the team's chunk loop (`__kmpc_distribute_static_init_8u`, kind 91,
// chunk = the block's threads), one parallel region per chunk (`__kmpc_for_static_init_8u`,
// kind 33, chunk 1, then `__kmpc_nvptx_parallel_reduce_nowait_v2`; the thread that gets 1
// combines into the region's copy), then `__kmpc_distribute_static_fini` and the teams
// reduction of each thread's team copy. Every type and operator clang-22 emits for the
// construct, with callbacks shaped as clang-22 generates them (below), against a sequential
// fold of the same values.
// ---------------------------------------------------------------------------------------------

use devicertl::workshare::{
    __kmpc_distribute_static_fini, __kmpc_distribute_static_init_8u, __kmpc_for_static_init_8u,
};
use std::sync::atomic::AtomicUsize;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    I32,
    I64,
    F32,
    F64,
    /// A `declare reduction` over `struct { double sum; long count; }` (16 bytes: two 64-bit
    /// shuffles, as clang shuffles an aggregate in 8-byte pieces).
    Pair,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Mul,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    LogAnd,
    LogOr,
    /// The user's combiner of `Ty::Pair`: member-wise sum.
    Udr,
}

/// One reduction variable of the clause.
#[derive(Clone, Copy, Debug)]
struct Var {
    ty: Ty,
    op: Op,
}

/// A variable's bits (the low 4 bytes for 32-bit types; both words for `Pair`).
type Val = [u64; 2];

fn hash(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 17
}

impl Var {
    const fn new(ty: Ty, op: Op) -> Self {
        Var { ty, op }
    }

    fn int_bits(&self, v: i64) -> Val {
        match self.ty {
            Ty::I32 => [v as i32 as u32 as u64, 0],
            Ty::I64 => [v as u64, 0],
            Ty::F32 => [(v as f32).to_bits() as u64, 0],
            Ty::F64 | Ty::Pair => [(v as f64).to_bits(), 0],
        }
    }

    fn float_bits(&self, v: f64) -> Val {
        match self.ty {
            Ty::F32 => [(v as f32).to_bits() as u64, 0],
            Ty::F64 => [v.to_bits(), 0],
            _ => self.int_bits(v as i64),
        }
    }

    fn as_f(&self, v: Val) -> f64 {
        match self.ty {
            Ty::I32 => v[0] as u32 as i32 as f64,
            Ty::I64 => v[0] as i64 as f64,
            Ty::F32 => f32::from_bits(v[0] as u32) as f64,
            Ty::F64 | Ty::Pair => f64::from_bits(v[0]),
        }
    }

    fn is_float(&self) -> bool {
        matches!(self.ty, Ty::F32 | Ty::F64)
    }

    fn identity(&self) -> Val {
        match self.op {
            Op::Add | Op::BitOr | Op::BitXor | Op::LogOr | Op::Udr => [0; 2],
            Op::Mul | Op::LogAnd => self.int_bits(1),
            Op::BitAnd => [!0 >> if self.ty == Ty::I32 { 32 } else { 0 }, 0],
            Op::Min => match self.ty {
                Ty::I32 => self.int_bits(i32::MAX as i64),
                Ty::I64 => self.int_bits(i64::MAX),
                _ => self.float_bits(f64::INFINITY),
            },
            Op::Max => match self.ty {
                Ty::I32 => self.int_bits(i32::MIN as i64),
                Ty::I64 => self.int_bits(i64::MIN),
                _ => self.float_bits(f64::NEG_INFINITY),
            },
        }
    }

    /// Iteration `i`'s contribution: values whose combination is exact in any order.
    fn value(&self, i: u64) -> Val {
        match self.op {
            Op::Add if self.is_float() => self.float_bits((i % 5) as f64),
            Op::Add => self.int_bits((hash(i) % 2001) as i64 - 1000),
            Op::Mul if self.is_float() => self.float_bits(match i {
                i if i % 97 == 0 => 2.0,
                i if i % 89 == 0 => 0.5,
                i if i % 11 == 0 => -1.0,
                _ => 1.0,
            }),
            Op::Mul => self.int_bits(match i % 13 {
                0 => 3,
                5 => -1,
                _ => 1,
            }),
            Op::Min | Op::Max => self.int_bits((hash(i) % 100_001) as i64 - 50_000),
            Op::BitAnd => [!(1u64 << (i % 45)) & self.identity()[0], 0],
            Op::BitOr => [1u64 << (i % if self.ty == Ty::I32 { 31 } else { 53 }), 0],
            Op::BitXor => [hash(i) & self.identity_bits(), 0],
            Op::LogAnd => self.int_bits((i % 301 != 300) as i64),
            Op::LogOr => self.int_bits((i % 301 == 300) as i64),
            Op::Udr => [((i % 3) as f64).to_bits(), 1],
        }
    }

    fn identity_bits(&self) -> u64 {
        if matches!(self.ty, Ty::I32 | Ty::F32) {
            0xffff_ffff
        } else {
            !0
        }
    }

    fn combine(&self, a: Val, b: Val) -> Val {
        let float = self.is_float();
        match (self.op, self.ty) {
            (Op::Udr, _) => [
                (f64::from_bits(a[0]) + f64::from_bits(b[0])).to_bits(),
                a[1].wrapping_add(b[1]),
            ],
            (Op::Add, Ty::I32) => self.int_bits((a[0] as i32).wrapping_add(b[0] as i32) as i64),
            (Op::Add, Ty::I64) => [a[0].wrapping_add(b[0]), 0],
            (Op::Add, _) => self.float_bits(self.as_f(a) + self.as_f(b)),
            (Op::Mul, Ty::I32) => self.int_bits((a[0] as i32).wrapping_mul(b[0] as i32) as i64),
            (Op::Mul, Ty::I64) => [a[0].wrapping_mul(b[0]), 0],
            (Op::Mul, _) => self.float_bits(self.as_f(a) * self.as_f(b)),
            (Op::Min, Ty::I32) => self.int_bits((a[0] as i32).min(b[0] as i32) as i64),
            (Op::Min, Ty::I64) => [(a[0] as i64).min(b[0] as i64) as u64, 0],
            (Op::Min, _) => self.float_bits(self.as_f(a).min(self.as_f(b))),
            (Op::Max, Ty::I32) => self.int_bits((a[0] as i32).max(b[0] as i32) as i64),
            (Op::Max, Ty::I64) => [(a[0] as i64).max(b[0] as i64) as u64, 0],
            (Op::Max, _) => self.float_bits(self.as_f(a).max(self.as_f(b))),
            (Op::BitAnd, _) => [a[0] & b[0], 0],
            (Op::BitOr, _) => [a[0] | b[0], 0],
            (Op::BitXor, _) => [a[0] ^ b[0], 0],
            (Op::LogAnd, _) if float => {
                self.int_bits((self.as_f(a) != 0.0 && self.as_f(b) != 0.0) as i64)
            }
            (Op::LogOr, _) if float => {
                self.int_bits((self.as_f(a) != 0.0 || self.as_f(b) != 0.0) as i64)
            }
            (Op::LogAnd, _) => self.int_bits((a[0] != 0 && b[0] != 0) as i64),
            (Op::LogOr, _) => self.int_bits((a[0] != 0 || b[0] != 0) as i64),
        }
    }

    /// clang's shuffle pieces of the variable: (64-bit shuffles, 32-bit shuffles).
    fn pieces(&self) -> (usize, usize) {
        match self.ty {
            Ty::I32 | Ty::F32 => (0, 1),
            Ty::I64 | Ty::F64 => (1, 0),
            Ty::Pair => (2, 0),
        }
    }

    fn bytes(&self) -> usize {
        let (w64, w32) = self.pieces();
        w64 * 8 + w32 * 4
    }
}

/// Every variable of a clause of several, and the sequential reference.
#[derive(Clone)]
struct Clause(Vec<Var>);

impl Clause {
    fn identity(&self) -> Vec<Val> {
        self.0.iter().map(Var::identity).collect()
    }
    fn fold(&self, into: &mut [Val], from: &[Val]) {
        for ((v, a), b) in self.0.iter().zip(into.iter_mut()).zip(from) {
            *a = v.combine(*a, *b);
        }
    }
    fn values(&self, i: u64) -> Vec<Val> {
        self.0.iter().map(|v| v.value(i)).collect()
    }
    fn expected(&self, n: u64) -> Vec<Val> {
        let mut all = self.identity();
        for i in 0..n {
            self.fold(&mut all, &self.values(i));
        }
        all
    }
}

/// Counts of the compiler callbacks' work, per team (to see what runs per chunk).
struct Counters {
    inter_warp_copies: Vec<AtomicUsize>,
}

/// The reduce list as clang passes it (pointers to the thread's variables), with what the
/// callbacks need and clang keeps elsewhere: the clause, the team's transfer array, counters.
#[repr(C)]
struct CList {
    vars: *mut Val,
    clause: *const Clause,
    medium: *const AtomicU32,
    counters: *const Counters,
}

impl CList {
    fn clause(&self) -> &Clause {
        // SAFETY: the clause outlives every kernel that uses the list.
        unsafe { &*self.clause }
    }
    fn var(&self, k: usize) -> *mut Val {
        // SAFETY: `vars` has one value per variable of the clause.
        unsafe { self.vars.add(k) }
    }
}

/// clang-22's `_omp_reduction_shuffle_and_reduce_func`: each variable's pieces through
/// `__kmpc_shuffle_int64/32(piece, offset, warp size)` into a remote copy, then (unsigned
/// compares, as clang's IR) reduce into the list, or copy the remote copy into it.
unsafe extern "C" fn c_shuffle_and_reduce(
    list: *mut c_void,
    lane: i16,
    offset: i16,
    algorithm: i16,
) {
    let list = unsafe { &*(list as *const CList) };
    let clause = list.clause();
    let width = warp_size() as i16;
    let remote: Vec<Val> = clause
        .0
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let mine = unsafe { *list.var(k) };
            let (w64, w32) = v.pieces();
            let mut r = [0u64; 2];
            for (p, slot) in r.iter_mut().enumerate().take(w64) {
                *slot = __kmpc_shuffle_int64(mine[p] as i64, offset, width) as u64;
            }
            if w32 == 1 {
                r[0] = __kmpc_shuffle_int32(mine[0] as u32 as i32, offset, width) as u32 as u64;
            }
            r
        })
        .collect();
    let (lane_u, offset_u) = (lane as u16, offset as u16);
    let reduce = algorithm == 0
        || (algorithm == 1 && lane_u < offset_u)
        || (algorithm == 2 && lane & 1 == 0 && offset > 0);
    if reduce {
        for (k, v) in clause.0.iter().enumerate() {
            unsafe { *list.var(k) = v.combine(*list.var(k), remote[k]) };
        }
    }
    if algorithm == 1 && lane_u >= offset_u {
        for (k, r) in remote.iter().enumerate() {
            unsafe { *list.var(k) = *r };
        }
    }
}

/// clang-22's `_omp_reduction_inter_warp_copy_func`: every 32-bit word of every variable
/// through the team's transfer array, between two barriers.
unsafe extern "C" fn c_inter_warp_copy(list: *mut c_void, warps: i32) {
    let list = unsafe { &*(list as *const CList) };
    if __kmpc_get_hardware_thread_id_in_block() == 0 {
        let counters = unsafe { &*list.counters };
        counters.inter_warp_copies[block_id() as usize].fetch_add(1, Relaxed);
    }
    for (k, v) in list.clause().0.iter().enumerate() {
        let words = v.bytes() / 4;
        for w in 0..words {
            let word = unsafe { (list.var(k) as *mut u32).add(if words == 1 { 0 } else { w }) };
            copy_word_between_warps(word, list.medium, warps);
        }
    }
}

/// The teams buffer: one record of every variable per slot.
struct CBuffer {
    slots: Vec<Mutex<Vec<Val>>>,
}

fn c_buffer(buffer: *mut c_void) -> &'static CBuffer {
    unsafe { &*(buffer as *const CBuffer) }
}
fn c_list(list: *mut c_void) -> &'static CList {
    unsafe { &*(list as *const CList) }
}
fn c_read(list: &CList) -> Vec<Val> {
    (0..list.clause().0.len())
        .map(|k| unsafe { *list.var(k) })
        .collect()
}
fn c_write(list: &CList, v: &[Val]) {
    for (k, x) in v.iter().enumerate() {
        unsafe { *list.var(k) = *x };
    }
}
unsafe extern "C" fn c_list_to_global_copy(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    *c_buffer(buffer).slots[slot as usize].lock().unwrap() = c_read(c_list(list));
}
unsafe extern "C" fn c_list_to_global_reduce(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let list = c_list(list);
    let mut record = c_buffer(buffer).slots[slot as usize].lock().unwrap();
    list.clause().fold(&mut record, &c_read(list));
}
unsafe extern "C" fn c_global_to_list_copy(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let record = c_buffer(buffer).slots[slot as usize]
        .lock()
        .unwrap()
        .clone();
    c_write(c_list(list), &record);
}
unsafe extern "C" fn c_global_to_list_reduce(buffer: *mut c_void, slot: i32, list: *mut c_void) {
    let list = c_list(list);
    let record = c_buffer(buffer).slots[slot as usize]
        .lock()
        .unwrap()
        .clone();
    let mut mine = c_read(list);
    list.clause().fold(&mut mine, &record);
    c_write(list, &mine);
}

/// Where the parallel reduction's thread 1 combines: the team copy of each thread (what
/// clang-22's SPMD kernels have), or one variable of the whole team (a shared variable of the
/// region, e.g. `distribute parallel for reduction(+: t)` with `t` mapped and one team running
/// chunks, or clang's generic kernels' team copy).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Target {
    PerThread,
    PerTeam,
}

/// What each chunk region asks for: `num_threads` (0 none) and `if`, by chunk index.
type RegionShape = fn(u64) -> (i32, bool);

struct Combined {
    clause: Clause,
    teams: u32,
    threads: u32,
    warp: u32,
    n: u64,
    slots: u32,
    target: Target,
    spmd: bool,
    region: RegionShape,
    /// The compiler's callback: clang-22's, or another producer's.
    shuffle_reduce: devicertl::reduction::deferred::ShuffleReduceFn,
}

fn whole_team(_: u64) -> (i32, bool) {
    (0, true)
}

impl Combined {
    fn new(clause: &[Var], teams: u32, threads: u32, warp: u32, n: u64) -> Self {
        Combined {
            clause: Clause(clause.to_vec()),
            teams,
            threads,
            warp,
            n,
            slots: 1024,
            target: Target::PerThread,
            spmd: true,
            region: whole_team,
            shuffle_reduce: c_shuffle_and_reduce,
        }
    }

    /// Runs the kernel; returns the number of inter-warp copies each team made.
    fn run(&self) -> Vec<usize> {
        let clause = &self.clause;
        let vars = clause.0.len();
        let medium = Medium::new(self.teams);
        let counters = Counters {
            inter_warp_copies: (0..self.teams).map(|_| AtomicUsize::new(0)).collect(),
        };
        let buffer = CBuffer {
            slots: (0..self.slots)
                .map(|_| Mutex::new(vec![[0x5555; 2]; vars]))
                .collect(),
        };
        let mut launch_env = KernelLaunchEnvironment {
            reduction_cnt: 0,
            reduction_iter_cnt: 0,
            reduction_buffer: &buffer as *const CBuffer as *mut c_void,
        };
        // The per-team shared copies (Target::PerTeam), written plainly, watched.
        let team_shared_cells: Vec<Vec<Val>> = (0..self.teams).map(|_| clause.identity()).collect();
        let cells = Shared(team_shared_cells.as_ptr() as *mut Vec<Val>);
        let winners = Mutex::new(Vec::new());
        let n = self.n;
        let chunk = if self.spmd {
            self.threads
        } else {
            self.threads - self.warp
        } as u64;
        let list_of = |vals: &mut Vec<Val>| CList {
            vars: vals.as_mut_ptr(),
            clause,
            medium: medium.0[block_id() as usize * MEDIUM_WORDS..].as_ptr(),
            counters: &counters,
        };
        let team_body = || {
            let mut team_copy = clause.identity();
            let team_copy_ptr = Shared(&mut team_copy as *mut Vec<Val>);
            let (mut last, mut lb, mut ub, mut stride) = (0i32, 0u64, n - 1, 0i64);
            // Where the thread's team-shared stack ends before the loop: it must end there
            // again after `__kmpc_distribute_static_fini` (the stash given back whole).
            let stack_top = devicertl::memory::__kmpc_alloc_shared(16);
            devicertl::memory::__kmpc_free_shared(stack_top, 16);
            // SAFETY: the pointers are this thread's locals.
            unsafe {
                __kmpc_distribute_static_init_8u(
                    core::ptr::null(),
                    0,
                    91,
                    &mut last,
                    &mut lb,
                    &mut ub,
                    &mut stride,
                    1,
                    chunk as i64,
                )
            };
            ub = ub.min(n - 1);
            let mut index = 0u64;
            while lb < n {
                let (chunk_lb, chunk_ub) = (lb, ub);
                let (num_threads, if_expr) = (self.region)(index);
                parallel(if_expr, num_threads, &|| {
                    let (mut last, mut lo, mut hi, mut st) = (0i32, chunk_lb, chunk_ub, 0i64);
                    unsafe {
                        __kmpc_for_static_init_8u(
                            core::ptr::null(),
                            0,
                            33,
                            &mut last,
                            &mut lo,
                            &mut hi,
                            &mut st,
                            1,
                            1,
                        )
                    };
                    assert_eq!(hi, lo, "schedule(static, 1)");
                    // clang's loop for chunks of one: from the thread's first iteration by the
                    // stride, to the end of the distribute chunk.
                    let mut private = clause.identity();
                    let mut i = lo;
                    while i <= chunk_ub {
                        clause.fold(&mut private, &clause.values(i));
                        i += st as u64;
                    }
                    let mut list = list_of(&mut private);
                    let lp = &mut list as *mut CList as *mut c_void;
                    let got = unsafe {
                        __kmpc_nvptx_parallel_reduce_nowait_v2(
                            core::ptr::null(),
                            8 * vars as u64,
                            lp,
                            self.shuffle_reduce,
                            c_inter_warp_copy,
                        )
                    };
                    if got == 1 {
                        match self.target {
                            // SAFETY: this thread's own team copy (clang's per-thread alloca).
                            Target::PerThread => unsafe {
                                clause.fold(&mut *team_copy_ptr.get(), &private)
                            },
                            Target::PerTeam => {
                                // One shared variable per team, updated plainly by whoever
                                // got 1: watched, so two updates no barrier orders are a race.
                                let cell = unsafe { &mut *cells.get().add(block_id() as usize) };
                                race::read(
                                    cell.as_ptr() as *const u8,
                                    16 * vars,
                                    "the region's shared copy: read",
                                );
                                race::write(
                                    cell.as_ptr() as *const u8,
                                    16 * vars,
                                    "the region's shared copy: combine",
                                );
                                clause.fold(cell, &private);
                            }
                        }
                    }
                });
                lb += stride as u64;
                ub = (ub + stride as u64).min(n - 1);
                index += 1;
            }
            __kmpc_distribute_static_fini(core::ptr::null(), 0);
            let after = devicertl::memory::__kmpc_alloc_shared(16);
            devicertl::memory::__kmpc_free_shared(after, 16);
            assert_eq!(
                after, stack_top,
                "the distribute loop left part of its reduction stash reserved"
            );
            if self.target == Target::PerThread {
                let mut list = list_of(&mut team_copy);
                let lp = &mut list as *mut CList as *mut c_void;
                let got = unsafe {
                    __kmpc_nvptx_teams_reduce_nowait_v2(
                        core::ptr::null(),
                        __kmpc_reduction_get_fixed_buffer(),
                        self.slots,
                        8 * vars as u64,
                        lp,
                        c_shuffle_and_reduce,
                        c_inter_warp_copy,
                        c_list_to_global_copy,
                        c_list_to_global_reduce,
                        c_global_to_list_copy,
                        c_global_to_list_reduce,
                    )
                };
                if got == 1 {
                    winners.lock().unwrap().push(team_copy.clone());
                }
            }
        };
        let env = Shared(&mut launch_env as *mut KernelLaunchEnvironment);
        if self.spmd {
            spmd_kernel(self.teams, self.threads, self.warp, env, team_body);
        } else {
            generic_kernel(self.teams, self.threads, self.warp, env, false, team_body);
        }
        let what = format!(
            "{:?}, {} teams x {} threads (warp {}), n {}, {} slots, {:?}",
            clause.0, self.teams, self.threads, self.warp, n, self.slots, self.target
        );
        let want = clause.expected(n);
        match self.target {
            Target::PerThread => {
                let winners = winners.into_inner().unwrap();
                assert_eq!(
                    winners.len(),
                    1,
                    "one thread finishes the teams reduction: {what}"
                );
                assert_eq!(winners[0], want, "{what}");
                assert_eq!(
                    (launch_env.reduction_cnt, launch_env.reduction_iter_cnt),
                    (0, 0),
                    "{what}"
                );
            }
            Target::PerTeam => {
                let mut all = clause.identity();
                for cell in &team_shared_cells {
                    clause.fold(&mut all, cell);
                }
                assert_eq!(all, want, "{what}");
            }
        }
        counters
            .inter_warp_copies
            .iter()
            .map(|c| c.load(Relaxed))
            .collect()
    }

    /// Chunk regions team `team` runs.
    fn chunks_of(&self, team: u32) -> u64 {
        let chunk = if self.spmd {
            self.threads
        } else {
            self.threads - self.warp
        } as u64;
        let chunks = self.n.div_ceil(chunk);
        if (team as u64) < chunks {
            (chunks - 1 - team as u64) / self.teams as u64 + 1
        } else {
            0
        }
    }
}

const TYPES: [Ty; 4] = [Ty::I32, Ty::I64, Ty::F32, Ty::F64];

/// Every (type, operator) pair clang-22 accepts on `teams distribute parallel for reduction`.
fn every_type_and_operator() -> Vec<Var> {
    let mut all = Vec::new();
    for ty in TYPES {
        for op in [Op::Add, Op::Mul, Op::Min, Op::Max, Op::LogAnd, Op::LogOr] {
            all.push(Var::new(ty, op));
        }
        if matches!(ty, Ty::I32 | Ty::I64) {
            for op in [Op::BitAnd, Op::BitOr, Op::BitXor] {
                all.push(Var::new(ty, op));
            }
        }
    }
    all
}

/// The reduction of the chunk regions waits for the team's last chunk: the compiler's
/// inter-warp copy (two barriers per 32-bit word) runs once per team for the last chunk and at
/// most once more in the teams reduction, never once per chunk. (Before the deferral it ran in
/// every chunk region: `chunks_of(team)` times.)
fn assert_deferred(c: &Combined, copies: &[usize]) {
    for (team, &made) in copies.iter().enumerate() {
        let chunks = c.chunks_of(team as u32);
        assert!(chunks >= 3, "the test needs several chunks per team");
        assert!(
            made <= 2,
            "team {team}: {made} inter-warp copies for {chunks} chunks ({:?})",
            c.clause.0
        );
    }
}

#[test]
fn combined_construct_every_type_and_operator() {
    for var in every_type_and_operator() {
        let c = Combined::new(&[var], 2, 64, 32, 64 * 2 * 3 + 17);
        let copies = c.run();
        assert_deferred(&c, &copies);
    }
}

#[test]
fn combined_construct_several_variables_and_user_defined() {
    let pair = Var::new(Ty::Pair, Op::Udr);
    let clauses: [&[Var]; 4] = [
        &[Var::new(Ty::F64, Op::Add), Var::new(Ty::I32, Op::Max)],
        &[
            Var::new(Ty::I64, Op::Mul),
            Var::new(Ty::F32, Op::Min),
            Var::new(Ty::I32, Op::BitXor),
        ],
        &[pair],
        &[
            pair,
            Var::new(Ty::F64, Op::Add),
            Var::new(Ty::I32, Op::LogOr),
        ],
    ];
    for clause in clauses {
        let c = Combined::new(clause, 3, 32, 8, 32 * 3 * 4 + 5);
        let copies = c.run();
        assert_deferred(&c, &copies);
    }
}

/// A `double` sum defers in a team of 256 threads, AMD's default (issue 32, item 2: with three
/// header rows the 4 KiB team stack held one word per thread at 256 threads, and a double
/// never deferred: "team 0: 6 inter-warp copies for 6 chunks").
#[test]
fn combined_construct_double_at_256_threads() {
    let c = Combined::new(&[Var::new(Ty::F64, Op::Add)], 2, 256, 32, 256 * 2 * 5 + 7);
    let copies = c.run();
    assert_deferred(&c, &copies);
}

/// At 512 threads the stash has no room for a double: every chunk reduces as without the
/// deferral, exactly.
#[test]
fn combined_construct_double_at_512_threads_without_room() {
    let c = Combined::new(&[Var::new(Ty::F64, Op::Add)], 2, 512, 32, 512 * 2 * 3 + 5);
    let copies = c.run();
    for (team, &made) in copies.iter().enumerate() {
        assert!(made as u64 >= c.chunks_of(team as u32), "team {team}");
    }
}

/// Another producer's callback that does not pass `offset` through to its shuffles (here it
/// clamps the delta to the warp, which shuffles nothing in) records nothing in the stash: the
/// deferral must fall back and stay exact (issue 32, item 3: before, the thread's value was
/// dropped and the reduction came out wrong).
unsafe extern "C" fn shuffle_and_reduce_clamped_delta(
    list: *mut c_void,
    lane: i16,
    offset: i16,
    algorithm: i16,
) {
    let clamped = offset.min(warp_size() as i16);
    // SAFETY: forwarded.
    unsafe { c_shuffle_and_reduce(list, lane, clamped, algorithm) }
}

#[test]
fn combined_construct_with_a_callback_that_ignores_the_offset() {
    for var in [Var::new(Ty::F64, Op::Add), Var::new(Ty::I32, Op::Max)] {
        let mut c = Combined::new(&[var], 2, 64, 32, 64 * 2 * 3 + 17);
        c.shuffle_reduce = shuffle_and_reduce_clamped_delta;
        c.run();
    }
}

/// A list larger than the stash (every type and operator at once: 30 variables) is reduced
/// chunk by chunk, as before; still exact.
#[test]
fn combined_construct_list_larger_than_the_stash() {
    let all = every_type_and_operator();
    assert!(
        all.iter().map(Var::bytes).sum::<usize>() / 4 > devicertl::reduction::deferred::MAX_WORDS
    );
    let c = Combined::new(&all, 2, 16, 4, 16 * 2 * 3 + 3);
    let copies = c.run();
    for (team, &made) in copies.iter().enumerate() {
        assert!(
            made as u64 >= c.chunks_of(team as u32),
            "team {team}: not deferred, one copy per chunk"
        );
    }
}

/// Partial teams: the last chunk is short, some teams run one chunk (nothing to defer) or none,
/// blocks that are not whole warps, a team count above and below the buffer's slots.
#[test]
fn combined_construct_partial_teams_and_slots() {
    let add = [Var::new(Ty::F64, Op::Add), Var::new(Ty::I64, Op::Min)];
    // 10 chunks of 16 over 7 teams: teams 0-2 run two chunks, 3-6 one.
    Combined::new(&add, 7, 16, 4, 16 * 9 + 1).run();
    // 3 chunks over 5 teams: teams 3 and 4 run none.
    Combined::new(&add, 5, 16, 4, 16 * 2 + 9).run();
    // 40 threads: the block's last warp is partial.
    let c = Combined::new(&add, 2, 40, 32, 40 * 2 * 3 + 39);
    assert_deferred(&c, &c.run());
    // More teams than slots (the buffer is used in rounds) and fewer.
    let mut c = Combined::new(&add, 9, 16, 8, 16 * 9 * 3 + 2);
    c.slots = 4;
    assert_deferred(&c, &c.run());
    let mut c = Combined::new(&add, 3, 16, 8, 16 * 3 * 3);
    c.slots = 1024;
    assert_deferred(&c, &c.run());
}

/// The region's copy is one variable of the team, not the thread's (a shared variable of the
/// regions): exactly one thread combines into it, when the deferral ends.
#[test]
fn combined_construct_into_one_shared_variable() {
    let mut c = Combined::new(
        &[Var::new(Ty::I64, Op::Add), Var::new(Ty::F32, Op::Max)],
        3,
        32,
        8,
        32 * 3 * 4 + 7,
    );
    c.target = Target::PerTeam;
    assert_deferred(&c, &c.run());
}

/// Chunk regions that are not the whole block (`num_threads`, `if(false)`) end the deferral:
/// the region's thread 0 also takes the stashed values of the threads outside the region.
#[test]
fn combined_construct_regions_on_part_of_the_team() {
    let clause = [Var::new(Ty::F64, Op::Add), Var::new(Ty::I32, Op::BitOr)];
    let shapes: [RegionShape; 4] = [
        |chunk| {
            if chunk % 3 == 2 {
                (20, true)
            } else {
                (0, true)
            }
        },
        |chunk| {
            if chunk % 4 == 1 {
                (0, false)
            } else {
                (0, true)
            }
        },
        |chunk| if chunk == 0 { (24, true) } else { (0, true) },
        |_| (40, true),
    ];
    for (k, shape) in shapes.into_iter().enumerate() {
        for target in [Target::PerThread, Target::PerTeam] {
            let mut c = Combined::new(&clause, 2, 64, 32, 64 * 2 * 6 + 11);
            c.region = shape;
            c.target = target;
            let copies = c.run();
            if k == 3 {
                // No region has every thread: nothing is deferred.
                assert!(copies
                    .iter()
                    .zip(0..)
                    .all(|(&m, t)| m as u64 >= c.chunks_of(t)));
            }
        }
    }
}

/// A generic kernel (the main thread runs the chunk loop, the workers the regions) does not
/// defer; the result is the same.
#[test]
fn combined_construct_in_a_generic_kernel() {
    let mut c = Combined::new(
        &[Var::new(Ty::F64, Op::Add), Var::new(Ty::I32, Op::Min)],
        3,
        24,
        8,
        16 * 3 * 3 + 5,
    );
    c.spmd = false;
    c.target = Target::PerTeam;
    c.run();
}
