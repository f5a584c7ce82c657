//! Loop worksharing: `__kmpc_for_static_init_*`, `__kmpc_distribute_static_init_*` and the
//! `__kmpc_dispatch_*` family (dynamic, guided; other schedules run dynamically with their chunk).
//!
//! The arithmetic is done once, on `i128`, for every width and signedness: bounds are inclusive
//! (`for (i = lb; i <= ub; i += incr)` for positive `incr`, `>=` for negative), and every result
//! converts back with the caller's wrap-around.

use crate::{state, sync};
use core::ffi::c_void;
use core::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// `kmp_sched_t` values clang-22 passes.
pub mod sched {
    pub const STATIC_CHUNKED: i32 = 33;
    pub const STATIC: i32 = 34;
    pub const DYNAMIC_CHUNKED: i32 = 35;
    pub const GUIDED_CHUNKED: i32 = 36;
    pub const RUNTIME: i32 = 37;
    pub const AUTO: i32 = 38;
    pub const STATIC_BALANCED_CHUNKED: i32 = 45;
    pub const ORDERED_OFFSET: i32 = 32;
    pub const DISTRIBUTE_STATIC_CHUNKED: i32 = 91;
    pub const DISTRIBUTE_STATIC: i32 = 92;
    /// monotonic / nonmonotonic modifier bits.
    pub const MODIFIERS: i32 = (1 << 29) | (1 << 30);

    /// The base schedule without modifiers or `ordered`.
    pub fn base(kind: i32) -> i32 {
        let kind = kind & !MODIFIERS;
        if (65..=74).contains(&kind) {
            kind - ORDERED_OFFSET
        } else {
            kind
        }
    }
}

/// Iterations of `lb..=ub` by `incr` (0 when empty).
pub fn trip_count(lb: i128, ub: i128, incr: i128) -> i128 {
    match incr {
        i if i > 0 && ub >= lb => (ub - lb) / i + 1,
        i if i < 0 && lb >= ub => (lb - ub) / -i + 1,
        _ => 0,
    }
}

/// One entity's share of a statically scheduled loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticShare {
    pub lb: i128,
    pub ub: i128,
    pub stride: i128,
    pub last: bool,
}

/// Entity `id` of `n` (threads of a region, or teams) gets chunks of `chunk` iterations round
/// robin (chunked kinds), or one near-equal block (the others).
pub fn static_share(
    kind: i32,
    lb: i128,
    ub: i128,
    incr: i128,
    chunk: i128,
    id: i128,
    n: i128,
) -> StaticShare {
    let incr = if incr == 0 { 1 } else { incr };
    let n = n.max(1);
    let trip = trip_count(lb, ub, incr);
    let chunked = matches!(
        sched::base(kind),
        sched::STATIC_CHUNKED | sched::DISTRIBUTE_STATIC_CHUNKED | sched::STATIC_BALANCED_CHUNKED
    ) && chunk > 0;
    if chunked {
        let first = lb + id * chunk * incr;
        let last_chunk = if trip > 0 { (trip - 1) / chunk } else { -1 };
        return StaticShare {
            lb: first,
            ub: first + (chunk - 1) * incr,
            stride: n * chunk * incr,
            last: trip > 0 && last_chunk % n == id,
        };
    }
    let (quotient, remainder) = (trip / n, trip % n);
    let count = quotient + (id < remainder) as i128;
    let first = id * quotient + id.min(remainder);
    let (my_lb, my_ub) = if count > 0 {
        (lb + first * incr, lb + (first + count - 1) * incr)
    } else {
        (lb + trip * incr, lb + trip * incr - incr)
    };
    StaticShare {
        lb: my_lb,
        ub: my_ub,
        stride: trip.max(1) * incr,
        last: count > 0 && first + count == trip,
    }
}

fn region_entity() -> (i128, i128) {
    let view = state::thread_view();
    (view.thread_num as i128, view.num_threads as i128)
}
fn team_entity() -> (i128, i128) {
    (
        crate::arch::block_id() as i128,
        crate::arch::num_blocks() as i128,
    )
}

macro_rules! static_init {
    ($name:ident, $entity:ident, $t:ty, $st:ty) => {
        /// # Safety
        /// The pointers are writable, as clang passes them.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            _ident: *const c_void,
            _gtid: i32,
            kind: i32,
            plast: *mut i32,
            plower: *mut $t,
            pupper: *mut $t,
            pstride: *mut $st,
            incr: $st,
            chunk: $st,
        ) {
            let (id, n) = $entity();
            // SAFETY: guaranteed by the caller.
            unsafe {
                let share = static_share(
                    kind,
                    *plower as i128,
                    *pupper as i128,
                    incr as i128,
                    chunk as i128,
                    id,
                    n,
                );
                *plower = share.lb as $t;
                *pupper = share.ub as $t;
                *pstride = share.stride as $st;
                *plast = share.last as i32;
            }
        }
    };
}
static_init!(__kmpc_for_static_init_4, region_entity, i32, i32);
static_init!(__kmpc_for_static_init_4u, region_entity, u32, i32);
static_init!(__kmpc_for_static_init_8, region_entity, i64, i64);
static_init!(__kmpc_for_static_init_8u, region_entity, u64, i64);
static_init!(__kmpc_distribute_static_init_4, team_entity, i32, i32);
static_init!(__kmpc_distribute_static_init_4u, team_entity, u32, i32);
static_init!(__kmpc_distribute_static_init_8, team_entity, i64, i64);
static_init!(__kmpc_distribute_static_init_8u, team_entity, u64, i64);

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_for_static_fini(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_distribute_static_fini(_ident: *const c_void, _gtid: i32) {}

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
    outer: AtomicPtr<DispatchState>,
}

impl DispatchState {
    pub fn reset(&self) {
        self.next.store(0, Ordering::Relaxed);
        self.trip.store(0, Ordering::Relaxed);
    }

    /// Sets up a loop of `lb..=ub` by `incr` for `threads` threads.
    fn configure(&self, kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128, threads: u32) {
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
    fn next_chunk(&self) -> Option<(i128, i128, i128, bool)> {
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

/// Loops of one thread: each thread's stack of its own `DispatchState`s, rooted in its
/// `state::ThreadSlot`.
mod own_loops {
    use super::DispatchState;
    use crate::{memory, state};
    use core::sync::atomic::Ordering;

    /// Starts a loop of this thread alone.
    pub fn push() -> &'static DispatchState {
        let slot = &state::thread_slot().loops;
        let state = memory::device_malloc_or_trap(
            core::mem::size_of::<DispatchState>(),
            c"rustomp device runtime: no device heap memory for a dynamic loop\n",
        ) as *mut DispatchState;
        // SAFETY: fresh memory of the right size, owned by this thread.
        unsafe {
            state.write(core::mem::zeroed());
            (*state)
                .outer
                .store(slot.load(Ordering::Relaxed), Ordering::Relaxed);
            slot.store(state, Ordering::Relaxed);
            &*state
        }
    }

    /// This thread's innermost loop, if it runs one.
    pub fn top() -> Option<&'static DispatchState> {
        // SAFETY: only this thread touches its slot and its states.
        unsafe {
            state::existing_thread_slot()?
                .loops
                .load(Ordering::Relaxed)
                .as_ref()
        }
    }

    /// Ends this thread's innermost loop.
    pub fn pop() {
        let Some(slot) = state::existing_thread_slot() else {
            return;
        };
        let state = slot.loops.load(Ordering::Relaxed);
        if state.is_null() {
            return;
        }
        // SAFETY: `push` allocated it; this thread alone uses it and is done with it.
        unsafe {
            slot.loops
                .store((*state).outer.load(Ordering::Relaxed), Ordering::Relaxed);
            memory::device_free(state as *mut u8);
        }
    }
}

/// A loop of one thread (a serialized nested region, or the generic main thread outside
/// regions) gets its own state: two threads that each run such a loop must not share one.
fn dispatch_init(kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        own_loops::push().configure(kind, lb, ub, incr, chunk, 1);
        return;
    }
    let dispatch = &state::team().dispatch;
    // Everyone is done with the previous loop before thread 0 reuses the state.
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        dispatch.configure(kind, lb, ub, incr, chunk, view.num_threads);
    }
    sync::region_barrier(view.num_threads);
}

/// The next chunk as inclusive bounds, or `None` (a thread's own loop then ends).
fn dispatch_next() -> Option<(i128, i128, i128, bool)> {
    if state::thread_view().num_threads <= 1 {
        let own = own_loops::top()?;
        let chunk = own.next_chunk();
        if chunk.is_none() {
            own_loops::pop();
        }
        return chunk;
    }
    state::team().dispatch.next_chunk()
}

macro_rules! dispatch {
    ($init:ident, $next:ident, $t:ty, $st:ty) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $init(
            _ident: *const c_void,
            _gtid: i32,
            kind: i32,
            lb: $t,
            ub: $t,
            st: $st,
            chunk: $st,
        ) {
            dispatch_init(kind, lb as i128, ub as i128, st as i128, chunk as i128);
        }
        /// # Safety
        /// The pointers are writable, as clang passes them.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $next(
            _ident: *const c_void,
            _gtid: i32,
            plast: *mut i32,
            plower: *mut $t,
            pupper: *mut $t,
            pstride: *mut $st,
        ) -> i32 {
            let Some((low, high, incr, last)) = dispatch_next() else {
                return 0;
            };
            // SAFETY: guaranteed by the caller.
            unsafe {
                *plower = low as $t;
                *pupper = high as $t;
                *pstride = incr as $st;
                if !plast.is_null() {
                    *plast = last as i32;
                }
            }
            1
        }
    };
}
dispatch!(__kmpc_dispatch_init_4, __kmpc_dispatch_next_4, i32, i32);
dispatch!(__kmpc_dispatch_init_4u, __kmpc_dispatch_next_4u, u32, i32);
dispatch!(__kmpc_dispatch_init_8, __kmpc_dispatch_next_8, i64, i64);
dispatch!(__kmpc_dispatch_init_8u, __kmpc_dispatch_next_8u, u64, i64);

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_deinit(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_4(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_4u(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_8(_ident: *const c_void, _gtid: i32) {}
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_dispatch_fini_8u(_ident: *const c_void, _gtid: i32) {}

/// The loop body OpenMPIRBuilder outlines: `void body(iv, arg)`.
type StaticLoopBody<T> = unsafe extern "C" fn(T, *mut c_void);

/// The ranges `start..end` of `0..iterations` that `entity` of `entities` gets under a static
/// schedule: chunks of `chunk` round robin, or (chunk 0) one near-equal contiguous block each.
fn static_chunks(
    iterations: i128,
    entity: i128,
    entities: i128,
    chunk: i128,
    mut range: impl FnMut(i128, i128),
) {
    let entities = entities.max(1);
    if entity >= entities || iterations <= 0 {
        return;
    }
    if chunk <= 0 {
        let share = static_share(sched::STATIC, 0, iterations - 1, 1, 0, entity, entities);
        range(share.lb, share.ub + 1);
        return;
    }
    let mut start = entity * chunk;
    while start < iterations {
        range(start, (start + chunk).min(iterations));
        start += entities * chunk;
    }
}

/// `static_chunks`, one iteration at a time.
fn static_iterations(
    iterations: i128,
    entity: i128,
    entities: i128,
    chunk: i128,
    mut body: impl FnMut(i128),
) {
    static_chunks(iterations, entity, entities, chunk, |start, end| {
        for iv in start..end {
            body(iv);
        }
    });
}

macro_rules! static_loops {
    ($for_name:ident, $distribute_name:ident, $distribute_for_name:ident, $t:ty) => {
        /// `for` of OpenMPIRBuilder: the threads of the current region share the iterations.
        ///
        /// # Safety
        /// `body` is the compiler's loop body taking `arg`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $for_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            _num_threads: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let view = state::thread_view();
            static_iterations(
                iterations as i128,
                view.thread_num as i128,
                view.num_threads as i128,
                thread_chunk as i128,
                // SAFETY: guaranteed by the caller.
                |iv| unsafe { body(iv as $t, arg) },
            );
        }

        /// `distribute` of OpenMPIRBuilder: the teams share the iterations.
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            block_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let (team, teams) = team_entity();
            static_iterations(
                iterations as i128,
                team,
                teams,
                block_chunk as i128,
                // SAFETY: guaranteed by the caller.
                |iv| unsafe { body(iv as $t, arg) },
            );
        }

        /// `distribute parallel for` of OpenMPIRBuilder, called by every thread of an SPMD
        /// kernel: the teams share the iterations (chunks of `block_chunk`), and the first
        /// `num_threads` threads of each team share its part (chunks of `thread_chunk`).
        ///
        /// # Safety
        /// As above.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $distribute_for_name(
            _ident: *const c_void,
            body: StaticLoopBody<$t>,
            arg: *mut c_void,
            iterations: $t,
            num_threads: $t,
            block_chunk: $t,
            thread_chunk: $t,
            _one_iteration_per_thread: u8,
        ) {
            let (team, teams) = team_entity();
            let block = crate::arch::num_threads_in_block() as i128;
            let threads = if (num_threads as i128) > 0 {
                (num_threads as i128).min(block)
            } else {
                block
            };
            let tid = crate::arch::thread_id_in_block() as i128;
            let iterations = iterations as i128;
            if block_chunk as i128 <= 0 && thread_chunk as i128 <= 0 {
                // Every thread of the grid one iteration at a time, as one flat range.
                static_iterations(iterations, team * threads + tid, teams * threads, 1, |iv| {
                    // SAFETY: guaranteed by the caller.
                    unsafe { body(iv as $t, arg) }
                });
                return;
            }
            let block_chunk = if block_chunk as i128 > 0 {
                block_chunk as i128
            } else {
                (iterations + teams.max(1) - 1) / teams.max(1)
            };
            // The team's chunks, each shared by its threads.
            static_chunks(iterations, team, teams, block_chunk, |start, end| {
                static_iterations(
                    end - start,
                    tid,
                    threads,
                    (thread_chunk as i128).max(1),
                    |i| {
                        // SAFETY: guaranteed by the caller.
                        unsafe { body((start + i) as $t, arg) }
                    },
                )
            });
        }
    };
}
static_loops!(
    __kmpc_for_static_loop_4,
    __kmpc_distribute_static_loop_4,
    __kmpc_distribute_for_static_loop_4,
    i32
);
static_loops!(
    __kmpc_for_static_loop_4u,
    __kmpc_distribute_static_loop_4u,
    __kmpc_distribute_for_static_loop_4u,
    u32
);
static_loops!(
    __kmpc_for_static_loop_8,
    __kmpc_distribute_static_loop_8,
    __kmpc_distribute_for_static_loop_8,
    i64
);
static_loops!(
    __kmpc_for_static_loop_8u,
    __kmpc_distribute_static_loop_8u,
    __kmpc_distribute_for_static_loop_8u,
    u64
);

/// `kmp_dim`: one dimension of a doacross loop nest (inclusive bounds).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DoacrossDim {
    pub lo: i64,
    pub up: i64,
    pub st: i64,
}

/// The doacross loop of a team-wide region: its dimensions and one completion flag per iteration.
#[repr(C)]
struct Doacross {
    dims: u32,
    iterations: u64,
}

/// Linear iteration number of `vec`, or `None` when outside the loop nest (a dependence on an
/// iteration that does not exist is satisfied).
///
/// # Safety
/// `dims` has `count` entries and `vec` `count` values.
unsafe fn doacross_index(dims: *const DoacrossDim, count: usize, vec: *const i64) -> Option<u64> {
    let mut index: u64 = 0;
    for d in 0..count {
        // SAFETY: guaranteed by the caller.
        let (dim, v) = unsafe { (*dims.add(d), *vec.add(d)) };
        let extent = trip_count(dim.lo as i128, dim.up as i128, dim.st as i128);
        let offset = if dim.st > 0 {
            v as i128 - dim.lo as i128
        } else {
            dim.lo as i128 - v as i128
        };
        let step = (dim.st as i128).abs().max(1);
        if offset < 0 || offset % step != 0 || offset / step >= extent {
            return None;
        }
        index = index * extent as u64 + (offset / step) as u64;
    }
    Some(index)
}

/// The current doacross loop's header, dimensions and flags, if any.
fn doacross_current() -> Option<(*const DoacrossDim, usize, *const AtomicU32)> {
    let state =
        state::team().scratch[state::SCRATCH_DOACROSS].load(Ordering::Acquire) as *mut Doacross;
    if state.is_null() {
        return None;
    }
    // SAFETY: `__kmpc_doacross_init` laid out header, dims and flags in one block.
    unsafe {
        let dims = (state as *mut u8).add(16) as *const DoacrossDim;
        let count = (*state).dims as usize;
        let flags = dims.add(count) as *const AtomicU32;
        Some((dims, count, flags))
    }
}

/// `for ordered(n)` with `depend(sink/source)` (doacross): every thread of the region calls
/// it before the loop. LLVM's device runtime has none of the `__kmpc_doacross_*` functions.
///
/// # Safety
/// `dims` has `num_dims` entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_init(
    _ident: *const c_void,
    _gtid: i32,
    num_dims: i32,
    dims: *const DoacrossDim,
) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        return; // one thread runs the iterations in order: every dependence is met
    }
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        let count = num_dims.max(0) as usize;
        let mut iterations: u64 = 1;
        for d in 0..count {
            // SAFETY: guaranteed by the caller.
            let dim = unsafe { *dims.add(d) };
            iterations =
                iterations.saturating_mul(
                    trip_count(dim.lo as i128, dim.up as i128, dim.st as i128) as u64,
                );
        }
        let bytes = 16 + count * core::mem::size_of::<DoacrossDim>() + iterations as usize * 4;
        let block = crate::memory::device_malloc_or_trap(
            bytes,
            c"rustomp device runtime: no device heap memory for a doacross loop\n",
        ) as *mut Doacross;
        // SAFETY: `block` has room for the header, the dims and one flag per iteration.
        unsafe {
            block.write(Doacross {
                dims: count as u32,
                iterations,
            });
            let own = (block as *mut u8).add(16) as *mut DoacrossDim;
            core::ptr::copy_nonoverlapping(dims, own, count);
            let flags = own.add(count) as *mut u32;
            for i in 0..iterations as usize {
                flags.add(i).write(0);
            }
        }
        state::team().scratch[state::SCRATCH_DOACROSS].store(block as u64, Ordering::Release);
    }
    sync::region_barrier(view.num_threads);
}

/// `depend(source)`: the iteration `vec` is done.
///
/// # Safety
/// `vec` has one value per dimension.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_post(_ident: *const c_void, _gtid: i32, vec: *const i64) {
    let Some((dims, count, flags)) = doacross_current() else {
        return;
    };
    // SAFETY: guaranteed by the caller; `flags` has one entry per iteration.
    if let Some(i) = unsafe { doacross_index(dims, count, vec) } {
        // A release store (lowered correctly on NVPTX, unlike a release RMW).
        // SAFETY: `i` is below the product of the dimensions' trip counts, the number of flags
        // `__kmpc_doacross_init` allocated after the dimensions.
        unsafe { (*flags.add(i as usize)).store(1, Ordering::Release) };
    }
}

/// `depend(sink: vec)`: waits until iteration `vec` posted.
///
/// # Safety
/// As `__kmpc_doacross_post`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_wait(_ident: *const c_void, _gtid: i32, vec: *const i64) {
    let Some((dims, count, flags)) = doacross_current() else {
        return;
    };
    // SAFETY: as above.
    if let Some(i) = unsafe { doacross_index(dims, count, vec) } {
        // SAFETY: as above.
        while unsafe { (*flags.add(i as usize)).load(Ordering::Acquire) } == 0 {
            crate::arch::pause();
        }
    }
}

/// End of the doacross loop: every thread is done with it before its flags go.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_doacross_fini(_ident: *const c_void, _gtid: i32) {
    let view = state::thread_view();
    if view.num_threads <= 1 {
        return;
    }
    sync::region_barrier(view.num_threads);
    if view.thread_num == 0 {
        let block = state::team().scratch[state::SCRATCH_DOACROSS].swap(0, Ordering::Relaxed);
        // SAFETY: `__kmpc_doacross_init` took it from the heap; nobody uses it any more.
        unsafe { crate::memory::device_free(block as *mut u8) };
    }
    sync::region_barrier(view.num_threads);
}
