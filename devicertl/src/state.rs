//! Per-team state, kept in team-shared memory (`arch::team_shared`), and the per-thread view of
//! the parallel nesting derived from it.
//!
//! One owner per field: thread 0 initializes the team in `__kmpc_target_init`; the thread that
//! opens a team-wide parallel region writes the region fields before the barrier that starts it;
//! each thread writes only its own `thread_flags` slot.

use crate::arch;
use crate::schedule::{sched, trip_count};
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::sync::atomic::{
    AtomicI64, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use rustomp_abi::KernelLaunchEnvironment;

/// Arguments of a generic-mode parallel region copied to team-shared memory (workers cannot
/// read the main thread's stack); more fall back to the device heap.
pub const SHARED_ARG_SLOTS: usize = 32;
/// Largest team the per-thread slots cover (the hardware limit of both GPU families).
pub const MAX_TEAM_THREADS: usize = 1024;
/// Bytes of the team-shared stack behind `__kmpc_alloc_shared`.
pub const SHARED_STACK_BYTES: usize = 4096;

/// `thread_flags` bits: the low 6 bits count the parallel regions the thread is inside.
pub const LEVEL_MASK: u8 = 0x3f;
/// The thread's outermost region is the team-wide one (its thread number is its id).
pub const IN_TEAM_REGION: u8 = 0x80;
/// SPMD: the thread's team code is in the chunk loop of a `distribute parallel for` whose
/// parallel reductions it defers to the last chunk (`reduction::deferred`); kept through the
/// chunk regions.
pub const DEFERRED_REDUCTION: u8 = 0x40;

/// What one thread keeps beyond its flags, on the device heap: the loops it runs alone and the
/// ICVs it set inside a parallel region (its implicit task's data environment).
#[repr(C)]
pub struct ThreadSlot {
    /// Innermost loop of the thread's own stack (see `workshare`), or null.
    pub loops: AtomicPtr<DispatchState>,
    /// run-sched-var as `(kind << 32) | chunk`, 0 when not set by this thread.
    pub run_schedule: AtomicU64,
    /// max-active-levels-var + 1, 0 when not set by this thread.
    pub max_active_levels: AtomicU32,
}

/// This thread's slot, allocating the team's table on first use.
pub fn thread_slot() -> &'static ThreadSlot {
    let team = team();
    let mut table = team.thread_slots.load(Ordering::Acquire);
    if table.is_null() {
        let threads = arch::num_threads_in_block() as usize;
        let bytes = threads * core::mem::size_of::<ThreadSlot>();
        let fresh = crate::heap::device_malloc_or_trap(
            bytes,
            c"rustomp device runtime: no device heap memory for thread state\n",
        ) as *mut ThreadSlot;
        // SAFETY: `fresh` has room for `threads` slots and is not yet visible; all zero is an
        // empty slot.
        unsafe { core::ptr::write_bytes(fresh as *mut u8, 0, bytes) };
        // A compare-exchange keeps its ordering on every target (unlike a release RMW).
        match team.thread_slots.compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => table = fresh,
            Err(existing) => {
                // SAFETY: `fresh` was never published.
                unsafe { crate::heap::device_free(fresh as *mut u8) };
                table = existing;
            }
        }
    }
    // SAFETY: the table has a slot per thread of the block and lives until the kernel ends.
    unsafe { &*table.add(arch::thread_id_in_block() as usize) }
}

/// This thread's slot if the team has the table.
pub fn existing_thread_slot() -> Option<&'static ThreadSlot> {
    let table = team().thread_slots.load(Ordering::Acquire);
    // SAFETY: as in `thread_slot`.
    (!table.is_null()).then(|| unsafe { &*table.add(arch::thread_id_in_block() as usize) })
}

/// The thread's implicit task in a parallel region ends: the ICVs it set go with it. This is on
/// every region's path, so the table pointer is read relaxed (an acquire is a cache
/// invalidation on amdgcn): the thread only writes its own slot here.
pub fn end_implicit_task() {
    let table = team().thread_slots.load(Ordering::Relaxed);
    if !table.is_null() {
        // SAFETY: as in `thread_slot`; this thread's own slot.
        let slot = unsafe { &*table.add(arch::thread_id_in_block() as usize) };
        slot.run_schedule.store(0, Ordering::Relaxed);
        slot.max_active_levels.store(0, Ordering::Relaxed);
    }
}

/// Kernel end (no thread of the team runs any more): the table goes back to the heap.
pub fn release_thread_slots() {
    // A load and a store, no atomic exchange: no other thread of the team runs any more.
    let slots = &team().thread_slots;
    let table = slots.load(Ordering::Relaxed);
    slots.store(core::ptr::null_mut(), Ordering::Relaxed);
    if !table.is_null() {
        // SAFETY: allocated by `thread_slot`; nobody uses it any more.
        unsafe { crate::heap::device_free(table as *mut u8) };
    }
}

/// An ICV kept per thread inside parallel regions and per team outside them.
pub enum Icv {
    RunSchedule,
    MaxActiveLevels,
}

impl Icv {
    fn team_word(&self) -> &'static AtomicU64 {
        &team().scratch[match self {
            Icv::RunSchedule => SCRATCH_RUN_SCHEDULE,
            Icv::MaxActiveLevels => SCRATCH_MAX_ACTIVE_LEVELS,
        }]
    }

    /// The encoded value in effect for this thread (0: never set).
    pub fn get(&self) -> u64 {
        if thread_view().level > 0 {
            if let Some(slot) = existing_thread_slot() {
                let own = match self {
                    Icv::RunSchedule => slot.run_schedule.load(Ordering::Relaxed),
                    Icv::MaxActiveLevels => slot.max_active_levels.load(Ordering::Relaxed) as u64,
                };
                if own != 0 {
                    return own;
                }
            }
        }
        self.team_word().load(Ordering::Relaxed)
    }

    /// Sets the encoded value (non-zero) for this thread's data environment: the team's outside
    /// any region (what its regions inherit), the thread's own inside one.
    pub fn set(&self, value: u64) {
        if thread_view().level == 0 {
            self.team_word().store(value, Ordering::Relaxed);
            return;
        }
        let slot = thread_slot();
        match self {
            Icv::RunSchedule => slot.run_schedule.store(value, Ordering::Relaxed),
            Icv::MaxActiveLevels => slot
                .max_active_levels
                .store(value as u32, Ordering::Relaxed),
        }
    }
}

/// `scratch` words: the teams reduction's chunk base and arrival number, copyprivate's source.
pub const SCRATCH_REDUCTION_BASE: usize = 0;
pub const SCRATCH_REDUCTION_ARRIVAL: usize = 1;
pub const SCRATCH_COPYPRIVATE: usize = 2;
/// Whether `__kmpc_begin_sharing_variables` took the argument space from the heap.
pub const SCRATCH_SHARED_ARGS_ON_HEAP: usize = 3;
/// `omp_set_schedule`'s kind and chunk (the run-sched-var ICV), 0 until set.
pub const SCRATCH_RUN_SCHEDULE: usize = 4;
/// The doacross loop of the current region: its completion flags (see `workshare`).
pub const SCRATCH_DOACROSS: usize = 5;
/// `omp_set_max_active_levels` outside regions: the value + 1, 0 until set.
pub const SCRATCH_MAX_ACTIVE_LEVELS: usize = 6;
/// The kernel's `thread_limit` clause (its kernel environment's `MaxThreads`), 0 when none.
pub const SCRATCH_THREAD_LIMIT: usize = 7;

#[repr(C)]
pub struct TeamState {
    pub exec_mode: AtomicU32,
    /// Threads of the current team-wide parallel region.
    pub parallel_team_size: AtomicU32,
    /// Generic mode: the wrapper of the region the workers should run; 0 tells them to exit.
    pub work_fn: AtomicUsize,
    pub shared_args: AtomicPtr<*mut c_void>,
    pub launch_env: AtomicPtr<KernelLaunchEnvironment>,
    /// Top of the team-shared stack (bytes used).
    pub stack_top: AtomicU32,
    /// Software barrier for a subset of the team: arrivals and generation.
    pub barrier_arrived: AtomicU32,
    pub barrier_generation: AtomicU32,
    /// The hardware barrier of a region that is not whole warps (nvptx: an mbarrier object),
    /// set up by the region's opener; never touched as an integer.
    pub subset_barrier: AtomicU64,
    /// Dynamic loop schedule shared by the threads of a team-wide region.
    pub dispatch: DispatchState,
    /// One `ThreadSlot` per thread of the block, allocated when a thread first needs one.
    pub thread_slots: AtomicPtr<ThreadSlot>,
    /// Words one thread publishes to the others of its team (indices below).
    pub scratch: [AtomicU64; 32],
    pub shared_args_slots: [AtomicPtr<c_void>; SHARED_ARG_SLOTS],
    pub thread_flags: [AtomicU8; MAX_TEAM_THREADS],
    /// SPMD kernels: each thread's top of the team-shared stack (see `memory::alloc_shared`).
    pub spmd_stack_top: [AtomicU16; MAX_TEAM_THREADS],
    /// The team-shared stack behind `__kmpc_alloc_shared`: the program writes its variables
    /// there through the pointers it gets, while every thread holds a `&TeamState`, so the
    /// bytes are an `UnsafeCell` (same layout as the array); `stack_top` and the compiler's
    /// barriers order the accesses.
    pub stack: UnsafeCell<[u8; SHARED_STACK_BYTES]>,
}

const _: () = assert!(core::mem::size_of::<TeamState>() <= arch::TEAM_SHARED_BYTES);
// The stack is the last field and ends the state: the team-shared layout the device build
// checks does not change with the `UnsafeCell`.
const _: () = assert!(
    core::mem::offset_of!(TeamState, stack) + SHARED_STACK_BYTES
        == core::mem::size_of::<TeamState>()
);

#[inline(always)]
pub fn team() -> &'static TeamState {
    // SAFETY: `team_shared` points at TEAM_SHARED_BYTES of suitably aligned team memory, large
    // enough for TeamState (checked above); every field is an atomic or bytes in an
    // `UnsafeCell`, so any bit pattern is valid and concurrent access through `&TeamState` is
    // defined (the stack's bytes are only written through raw pointers from `stack.get()`).
    unsafe { &*(arch::team_shared() as *const TeamState) }
}

/// Resets the team: SPMD, thread 0 before the first barrier of the kernel; generic, the main
/// thread before it first uses the team state.
pub fn init_team(exec_mode: u8, max_threads: i32, launch_env: *mut KernelLaunchEnvironment) {
    let team = team();
    team.scratch[SCRATCH_THREAD_LIMIT].store(max_threads.max(0) as u64, Ordering::Relaxed);
    team.exec_mode.store(exec_mode as u32, Ordering::Relaxed);
    // What a region of the whole team sets: an SPMD kernel's first such region then starts
    // without publishing it (`__kmpc_parallel_60`). Only threads inside a team-wide region read
    // it, so the value outside regions is never seen.
    let team_size = if rustomp_abi::exec_mode::is_spmd(exec_mode) {
        arch::num_threads_in_block()
    } else {
        1
    };
    team.parallel_team_size.store(team_size, Ordering::Relaxed);
    team.work_fn.store(0, Ordering::Relaxed);
    team.shared_args
        .store(core::ptr::null_mut(), Ordering::Relaxed);
    team.launch_env.store(launch_env, Ordering::Relaxed);
    team.stack_top.store(0, Ordering::Relaxed);
    team.barrier_arrived.store(0, Ordering::Relaxed);
    team.barrier_generation.store(0, Ordering::Relaxed);
    team.dispatch.reset();
    team.thread_slots
        .store(core::ptr::null_mut(), Ordering::Relaxed);
    // The scratch words read before they are written (the others are written first).
    for word in &team.scratch[SCRATCH_SHARED_ARGS_ON_HEAP..=SCRATCH_MAX_ACTIVE_LEVELS] {
        word.store(0, Ordering::Relaxed);
    }
}

/// Each thread clears its own slots before the first barrier of the kernel.
pub fn init_thread(tid: u32) {
    if let Some(slot) = team().thread_flags.get(tid as usize) {
        slot.store(0, Ordering::Relaxed);
    }
    if let Some(top) = team().spmd_stack_top.get(tid as usize) {
        top.store(0, Ordering::Relaxed);
    }
}

#[inline(always)]
pub fn thread_flags(tid: u32) -> u8 {
    team()
        .thread_flags
        .get(tid as usize)
        .map_or(0, |f| f.load(Ordering::Relaxed))
}

#[inline(always)]
pub fn set_thread_flags(tid: u32, flags: u8) {
    if let Some(slot) = team().thread_flags.get(tid as usize) {
        slot.store(flags, Ordering::Relaxed);
    }
}

pub fn is_spmd() -> bool {
    rustomp_abi::exec_mode::is_spmd(team().exec_mode.load(Ordering::Relaxed) as u8)
}

/// Whether the kernel is SPMD as clang emitted it (a combined `distribute parallel for`), not
/// a generic kernel openmp-opt made SPMD (generic-SPMD), whose distribute loop body may hold
/// any number of parallel regions per iteration.
pub fn is_spmd_as_emitted() -> bool {
    team().exec_mode.load(Ordering::Relaxed) as u8 == rustomp_abi::exec_mode::SPMD
}

/// Generic mode: the thread that runs the sequential part, alone in the last warp (its first
/// lane; as in LLVM). It must not share a warp with workers: a warp whose lanes wait at
/// different barriers (or where one lane waits for another's barrier) hangs or is undefined.
pub fn main_thread_id() -> u32 {
    let warp = arch::warp_size();
    arch::num_threads_in_block().saturating_sub(1) & !(warp - 1)
}

/// Generic mode: the threads that may work in parallel regions, `0..max_workers()`: all but a
/// warp's worth (LLVM's and openmp-opt's rule). The rest of the block leaves at kernel start.
pub fn max_workers() -> u32 {
    arch::num_threads_in_block().saturating_sub(arch::warp_size())
}

/// Threads a team-level parallel region can get: the whole block in SPMD mode, the workers
/// (at least one: the main thread itself) in generic mode.
/// The thread-limit-var ICV: the kernel's `thread_limit` clause where the compiler put it in the
/// kernel environment and the block holds that many threads (a generic kernel with a limit
/// below a warp gets fewer workers than the limit: they still may not exceed it); otherwise
/// what a team-level region can get.
pub fn thread_limit() -> u32 {
    let clause = team().scratch[SCRATCH_THREAD_LIMIT].load(Ordering::Relaxed) as u32;
    if clause > 0 && clause <= arch::num_threads_in_block() {
        clause
    } else {
        level_zero_thread_limit()
    }
}

pub fn level_zero_thread_limit() -> u32 {
    if is_spmd() {
        arch::num_threads_in_block()
    } else {
        max_workers().max(1)
    }
}

/// The calling thread's OpenMP view: (level, thread number, team size, in an active region).
pub struct ThreadView {
    pub level: u32,
    pub thread_num: u32,
    pub num_threads: u32,
    pub active_level: u32,
    /// The thread's level-1 region is the team-wide one (else it was serialized, or there is
    /// none): its thread number there is the hardware id, its size `team_size`.
    pub in_team_region: bool,
    /// Threads of the team-wide region the thread is in (1 outside it).
    pub team_size: u32,
}

pub fn thread_view() -> ThreadView {
    let tid = arch::thread_id_in_block();
    let flags = thread_flags(tid);
    let level = (flags & LEVEL_MASK) as u32;
    let team_size = team().parallel_team_size.load(Ordering::Relaxed);
    let in_team_region = flags & IN_TEAM_REGION != 0;
    let outermost = in_team_region && level == 1;
    ThreadView {
        level,
        thread_num: if outermost { tid } else { 0 },
        num_threads: if outermost { team_size } else { 1 },
        active_level: (in_team_region && team_size > 1) as u32,
        in_team_region,
        team_size: if in_team_region { team_size } else { 1 },
    }
}

/// A dynamically scheduled loop: shared by the threads of a team-wide region (in team-shared
/// memory), or one thread's own (a loop in a serialized nested region, on the device heap).
#[repr(C)]
pub struct DispatchState {
    next: AtomicU64,
    trip: AtomicU64,
    lb: AtomicI64,
    incr: AtomicI64,
    chunk: AtomicU64,
    kind: AtomicU32,
    threads: AtomicU32,
    /// A thread's own loops form a stack (a nested loop inside another's body): the outer one.
    pub(crate) outer: AtomicPtr<DispatchState>,
}

impl DispatchState {
    pub fn reset(&self) {
        self.next.store(0, Ordering::Relaxed);
        self.trip.store(0, Ordering::Relaxed);
    }

    /// Sets up a loop of `lb..=ub` by `incr` for `threads` threads.
    pub(crate) fn configure(
        &self,
        kind: i32,
        lb: i128,
        ub: i128,
        incr: i128,
        chunk: i128,
        threads: u32,
    ) {
        let incr = if incr == 0 { 1 } else { incr };
        let trip = trip_count(lb, ub, incr);
        let chunk = match sched::base(kind) {
            sched::STATIC | sched::AUTO | sched::RUNTIME if chunk <= 0 => {
                // One near-equal block per thread, claimed dynamically.
                (trip + threads as i128 - 1) / threads.max(1) as i128
            }
            _ => chunk.max(1),
        };
        self.next.store(0, Ordering::Relaxed);
        self.trip.store(trip as u64, Ordering::Relaxed);
        self.lb.store(lb as i64, Ordering::Relaxed);
        self.incr.store(incr as i64, Ordering::Relaxed);
        self.chunk.store(chunk.max(1) as u64, Ordering::Relaxed);
        self.kind.store(kind as u32, Ordering::Relaxed);
        self.threads.store(threads, Ordering::Relaxed);
    }

    /// Claims the next chunk: `(first iteration, iterations)`, or `None` when the loop is done.
    pub fn claim(&self) -> Option<(u64, u64)> {
        let trip = self.trip.load(Ordering::Relaxed);
        let chunk = self.chunk.load(Ordering::Relaxed).max(1);
        if sched::base(self.kind.load(Ordering::Relaxed) as i32) == sched::GUIDED_CHUNKED {
            let threads = self.threads.load(Ordering::Relaxed).max(1) as u64;
            let mut current = self.next.load(Ordering::Relaxed);
            loop {
                if current >= trip {
                    return None;
                }
                let remaining = trip - current;
                let size = remaining.div_ceil(2 * threads).max(chunk).min(remaining);
                match self.next.compare_exchange_weak(
                    current,
                    current + size,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some((current, size)),
                    Err(seen) => current = seen,
                }
            }
        }
        let start = self.next.fetch_add(chunk, Ordering::Relaxed);
        (start < trip).then(|| (start, chunk.min(trip - start)))
    }

    /// The next chunk as inclusive bounds `(low, high, incr, last)`, or `None`.
    pub(crate) fn next_chunk(&self) -> Option<(i128, i128, i128, bool)> {
        let (first, count) = self.claim()?;
        let lb = self.lb.load(Ordering::Relaxed) as i128;
        let incr = self.incr.load(Ordering::Relaxed) as i128;
        let trip = self.trip.load(Ordering::Relaxed);
        let low = lb + first as i128 * incr;
        Some((
            low,
            low + (count as i128 - 1) * incr,
            incr,
            first + count == trip,
        ))
    }
}
