//! Reductions across the threads of a parallel region and across the teams of a kernel.
//!
//! The compiler emits the element-wise work as callbacks; the runtime only decides who combines
//! with whom:
//! - `shuffle_reduce(list, lane, offset, algorithm)` pulls every element from lane
//!   `lane + offset` of the warp and, depending on `algorithm`, combines or copies it;
//! - `inter_warp_copy(list, warps)` moves lane 0's value of each warp to thread `warp` through
//!   the compiler's team-shared transfer array (it contains region barriers, so every thread of
//!   the region must call it);
//! - the four list/global callbacks copy or combine a thread's list with a slot of the
//!   per-launch teams buffer (`KernelLaunchEnvironment::reduction_buffer`).

pub mod deferred;

use crate::{arch, state};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

pub use deferred::ShuffleReduceFn;
pub type InterWarpCopyFn = unsafe extern "C" fn(list: *mut c_void, warps: i32);
pub type ListGlobalFn = unsafe extern "C" fn(buffer: *mut c_void, slot: i32, list: *mut c_void);

/// Every lane of a full warp combines with `lane + offset`.
const FULL_WARP: i16 = 0;
/// Lanes `0..size` hold values: lanes below `offset` combine, the others copy from `lane + offset`.
const CONTIGUOUS_PARTIAL: i16 = 1;

/// Tree reduction of a full warp into lane 0.
///
/// # Safety
/// `shuffle_reduce` and `list` are the compiler's; every lane of the warp calls together.
unsafe fn reduce_full_warp(list: *mut c_void, shuffle_reduce: ShuffleReduceFn) {
    let mut offset = arch::warp_size() / 2;
    while offset > 0 {
        // SAFETY: forwarded from the caller.
        unsafe { shuffle_reduce(list, 0, offset as i16, FULL_WARP) };
        offset /= 2;
    }
}

/// Reduction of the values held by lanes `0..size` into lane 0. Lanes at or past `size` may take
/// part (their values are only ever copied into lanes that are not read again).
///
/// # Safety
/// As `reduce_full_warp`, for the lanes that execute it.
unsafe fn reduce_partial_warp(
    list: *mut c_void,
    shuffle_reduce: ShuffleReduceFn,
    size: u32,
    lane: u32,
) {
    let mut size = size;
    while size > 1 {
        // SAFETY: forwarded from the caller.
        unsafe { shuffle_reduce(list, lane as i16, (size / 2) as i16, CONTIGUOUS_PARTIAL) };
        size = size.div_ceil(2);
    }
}

/// Reduces the values of threads `0..count` of the block into thread 0.
///
/// Every thread that can reach `inter_warp_copy`'s barriers must call this (threads at or past
/// `count` too, when they are part of the region): their values are never combined.
///
/// # Safety
/// Callbacks and `list` as the compiler passes them.
unsafe fn reduce_block(
    list: *mut c_void,
    shuffle_reduce: ShuffleReduceFn,
    inter_warp_copy: InterWarpCopyFn,
    count: u32,
    tid: u32,
) {
    let warp = arch::warp_size();
    let (warp_id, lane) = (tid / warp, tid % warp);
    let in_my_warp = count.saturating_sub(warp_id * warp).min(warp);
    if in_my_warp == warp {
        // SAFETY: forwarded; the whole warp holds values and executes this branch.
        unsafe { reduce_full_warp(list, shuffle_reduce) };
    } else if in_my_warp > 1 {
        // SAFETY: forwarded; `in_my_warp` is the same for every lane of the warp.
        unsafe { reduce_partial_warp(list, shuffle_reduce, in_my_warp, lane) };
    }
    if count > warp {
        let warps = count.div_ceil(warp);
        // SAFETY: forwarded; every thread of the region calls it.
        unsafe { inter_warp_copy(list, warps as i32) };
        if warp_id == 0 {
            // SAFETY: forwarded; all of warp 0 executes this branch.
            unsafe { reduce_partial_warp(list, shuffle_reduce, warps, lane) };
        }
    }
}

/// `reduction(...)` at the end of a parallel region: returns 1 to the thread that holds the
/// region's combined value (it then folds it into the original variable), 0 to the others.
///
/// # Safety
/// Arguments as clang-22 emits them; every thread of the region calls it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_nvptx_parallel_reduce_nowait_v2(
    _ident: *const c_void,
    _list_bytes: u64,
    list: *mut c_void,
    shuffle_reduce: ShuffleReduceFn,
    inter_warp_copy: InterWarpCopyFn,
) -> i32 {
    let view = state::thread_view();
    // SAFETY: forwarded from the caller.
    if deferred::applies(&view) && unsafe { deferred::chunk(list, shuffle_reduce, &view) } {
        // The value waits in the thread's stash for the team's last chunk region.
        return 0;
    }
    if view.num_threads <= 1 {
        return 1;
    }
    // SAFETY: forwarded; the region's threads are 0..num_threads of the block.
    unsafe {
        reduce_block(
            list,
            shuffle_reduce,
            inter_warp_copy,
            view.num_threads,
            view.thread_num,
        )
    };
    (view.thread_num == 0) as i32
}

/// The teams-reduction buffer the plugin allocated for this launch.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_reduction_get_fixed_buffer() -> *mut c_void {
    let launch_env = state::team().launch_env.load(Ordering::Relaxed);
    if launch_env.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: the plugin passes a valid launch environment for the whole launch.
    unsafe { (*launch_env).reduction_buffer }
}

/// The two per-launch counters in the launch environment.
fn launch_counters() -> (&'static AtomicU32, &'static AtomicU32) {
    let launch_env = state::team().launch_env.load(Ordering::Relaxed);
    if launch_env.is_null() {
        // A kernel with a teams reduction always gets a launch environment: stop loudly.
        arch::trap();
    }
    // SAFETY: the launch environment lives in device memory for the whole launch, 4-byte aligned;
    // its counters are only accessed atomically by the teams of this launch.
    unsafe {
        (
            AtomicU32::from_ptr(&raw mut (*launch_env).reduction_cnt),
            AtomicU32::from_ptr(&raw mut (*launch_env).reduction_iter_cnt),
        )
    }
}

/// `reduction(...)` on `teams`: each team deposits its value in slot `team % slots` of the
/// buffer (the first `slots` teams copy, later ones combine, one chunk of `slots` teams at a time
/// so no two teams touch a slot at once); the team that arrives last combines the slots and
/// gets 1 on the thread holding the result.
///
/// # Safety
/// Arguments as clang-22 emits them. SPMD: every thread of the team calls it, each with its own
/// list. Generic: only the main thread does.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments, reason = "clang-22's signature")]
pub unsafe extern "C" fn __kmpc_nvptx_teams_reduce_nowait_v2(
    _ident: *const c_void,
    buffer: *mut c_void,
    slots: u32,
    _list_bytes: u64,
    list: *mut c_void,
    shuffle_reduce: ShuffleReduceFn,
    inter_warp_copy: InterWarpCopyFn,
    list_to_global_copy: ListGlobalFn,
    list_to_global_reduce: ListGlobalFn,
    global_to_list_copy: ListGlobalFn,
    global_to_list_reduce: ListGlobalFn,
) -> i32 {
    let spmd = state::is_spmd();
    let (tid, threads) = if spmd {
        (arch::thread_id_in_block(), arch::num_threads_in_block())
    } else {
        (0, 1)
    };
    let team_num = arch::block_id();
    let teams = arch::num_blocks();
    let slots = slots.max(1);
    let (deposited, chunk_base) = launch_counters();
    let is_master = tid == 0;
    let team = state::team();

    if is_master {
        // Wait until this team's chunk of `slots` teams may write the buffer.
        // Relaxed while spinning, one acquire after (an acquire per turn is an L2 invalidate
        // on gfx90a/gfx942): it reads the advance that admitted this team or a later value,
        // and synchronizes with the fence before that advance. The base cannot move on while
        // this team is waiting in its chunk, so the value that admitted it is the base.
        let base = loop {
            let base = chunk_base.load(Ordering::Relaxed);
            if team_num < base + slots {
                let _ = chunk_base.load(Ordering::Acquire);
                break base;
            }
            arch::pause();
        };
        let slot = (team_num % slots) as i32;
        if team_num < slots {
            // SAFETY: compiler callback on the launch's buffer and this thread's list.
            unsafe { list_to_global_copy(buffer, slot, list) };
        } else {
            // SAFETY: as above.
            unsafe { list_to_global_reduce(buffer, slot, list) };
        }
        arch::fence(Ordering::Release);
        let arrival = deposited
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(if n >= slots - 1 { 0 } else { n + 1 })
            })
            .unwrap_or_else(|n| n);
        team.scratch[state::SCRATCH_REDUCTION_BASE].store(base as u64, Ordering::Relaxed);
        team.scratch[state::SCRATCH_REDUCTION_ARRIVAL].store(arrival as u64, Ordering::Relaxed);
    }
    if spmd {
        arch::team_barrier();
    }
    let base = team.scratch[state::SCRATCH_REDUCTION_BASE].load(Ordering::Relaxed) as u32;
    let arrival = team.scratch[state::SCRATCH_REDUCTION_ARRIVAL].load(Ordering::Relaxed) as u32;
    if spmd {
        // Nobody may overwrite the scratch words before everyone read them.
        arch::team_barrier();
    }

    if arrival != teams - base - 1 {
        if is_master && arrival == slots - 1 {
            // This chunk is complete: let the next `slots` teams in. The fence releases what
            // this chunk wrote (a release RMW loses its ordering on clang-22 NVPTX).
            arch::fence(Ordering::Release);
            chunk_base.fetch_add(slots, Ordering::Relaxed);
        }
        return 0;
    }

    // The last team: every slot holds a partial result.
    arch::fence(Ordering::Acquire);
    let records = teams.min(slots);
    let holders = threads.min(records);
    if tid < holders {
        // SAFETY: compiler callbacks; slots `tid`, `tid + holders`, ... are filled.
        unsafe { global_to_list_copy(buffer, tid as i32, list) };
        let mut slot = tid + holders;
        while slot < records {
            // SAFETY: as above.
            unsafe { global_to_list_reduce(buffer, slot as i32, list) };
            slot += holders;
        }
    }
    if holders > 1 {
        // SAFETY: forwarded; in SPMD every thread of the team calls it.
        unsafe { reduce_block(list, shuffle_reduce, inter_warp_copy, holders, tid) };
    }
    if is_master {
        deposited.store(0, Ordering::Relaxed);
        chunk_base.store(0, Ordering::Release);
        return 1;
    }
    0
}

/// Warp shuffle for the compiler's reduction callbacks: the value of lane `lane + delta` within
/// segments of `width` lanes, or the caller's own value past the segment.
///
/// The mask names every lane of the warp that belongs to the current region, not the lanes
/// `activemask()` happens to see: after divergence (the data-dependent loop before a
/// reduction) that can be a subset and leave out the source lane, whose value is then
/// undefined. For a whole warp this is the full mask, as LLVM's; only the last warp of a
/// region that is not whole warps (SPMD `num_threads(20)`) names fewer lanes, because the others
/// are not in the region and never reach the shuffle.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_shuffle_int32(value: i32, delta: i16, width: i16) -> i32 {
    if delta >= deferred::COMBINE {
        // Not a lane: the runtime's own call of the compiler's callback (`deferred`).
        return deferred::shuffle(value as u32, delta) as i32;
    }
    let (_, mask) = crate::sync::warp_lanes_in_region(crate::sync::current_region_threads());
    arch::shuffle_down_u32(mask, value as u32, delta as u32, width as u32) as i32
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_shuffle_int64(value: i64, delta: i16, width: i16) -> i64 {
    let low = __kmpc_shuffle_int32(value as i32, delta, width) as u32 as u64;
    let high = __kmpc_shuffle_int32((value >> 32) as i32, delta, width) as u32 as u64;
    ((high << 32) | low) as i64
}
