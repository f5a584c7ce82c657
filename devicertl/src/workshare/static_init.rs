//! Static schedules: each thread's (or team's) share of a loop, `__kmpc_for_static_init_*` and
//! `__kmpc_distribute_static_init_*` for every width and signedness.

use crate::schedule::{sched, trip_count};
use crate::state;
use core::ffi::c_void;

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
pub(super) fn team_entity() -> (i128, i128) {
    (
        crate::arch::block_id() as i128,
        crate::arch::num_blocks() as i128,
    )
}

/// A thread's share of a worksharing loop of its region.
fn region_share(kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128) -> StaticShare {
    let (id, n) = region_entity();
    static_share(kind, lb, ub, incr, chunk, id, n)
}

/// A team's share of a `distribute` loop. A chunked one in an SPMD kernel is clang's chunk loop
/// of `distribute parallel for` (one parallel region per chunk): the team's threads may defer
/// the regions' reductions to its last chunk, so they learn how many chunks the team runs.
fn team_share(kind: i32, lb: i128, ub: i128, incr: i128, chunk: i128) -> StaticShare {
    let (id, n) = team_entity();
    let share = static_share(kind, lb, ub, incr, chunk, id, n);
    if sched::base(kind) == sched::DISTRIBUTE_STATIC_CHUNKED && chunk > 0 && state::is_spmd() {
        let trip = trip_count(lb, ub, if incr == 0 { 1 } else { incr });
        let chunks = (trip + chunk - 1) / chunk;
        // In 32 bits (a 128-bit division is long code inlined into the kernel, which takes
        // registers from every thread of it); a loop of more chunks does not defer.
        if id < chunks && chunks <= u32::MAX as i128 {
            let mine = (chunks - 1 - id) as u32 / (n.clamp(1, u32::MAX as i128) as u32) + 1;
            crate::reduction::deferred::open(mine);
        }
    }
    share
}

macro_rules! static_init {
    ($name:ident, $share:ident, $t:ty, $st:ty) => {
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
            // SAFETY: guaranteed by the caller.
            unsafe {
                let share = $share(
                    kind,
                    *plower as i128,
                    *pupper as i128,
                    incr as i128,
                    chunk as i128,
                );
                *plower = share.lb as $t;
                *pupper = share.ub as $t;
                *pstride = share.stride as $st;
                *plast = share.last as i32;
            }
        }
    };
}
static_init!(__kmpc_for_static_init_4, region_share, i32, i32);
static_init!(__kmpc_for_static_init_4u, region_share, u32, i32);
static_init!(__kmpc_for_static_init_8, region_share, i64, i64);
static_init!(__kmpc_for_static_init_8u, region_share, u64, i64);
static_init!(__kmpc_distribute_static_init_4, team_share, i32, i32);
static_init!(__kmpc_distribute_static_init_4u, team_share, u32, i32);
static_init!(__kmpc_distribute_static_init_8, team_share, i64, i64);
static_init!(__kmpc_distribute_static_init_8u, team_share, u64, i64);

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_for_static_fini(_ident: *const c_void, _gtid: i32) {}
/// The end of a `distribute` loop: a deferring team's stash goes back (see `team_share`).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_distribute_static_fini(_ident: *const c_void, _gtid: i32) {
    crate::reduction::deferred::close();
}
