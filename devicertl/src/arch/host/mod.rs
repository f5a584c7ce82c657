//! Host emulation backend: runs a "kernel" as `teams × threads` CPU threads so `cargo test`
//! exercises the runtime's real algorithms. Each team has its own barrier and its own block of
//! team-shared memory; warps are emulated with a chosen width.

extern crate std;

use core::cell::Cell;
use std::boxed::Box;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::TEAM_SHARED_BYTES;

mod barriers;
mod this_thread;
use barriers::{CountingBarrier, ExitAwareBarrier, SubsetBarrier};
use this_thread::{check_aborted, geometry, Geometry};

/// What one emulated team shares.
struct Team {
    barrier: ExitAwareBarrier,
    /// Named barrier for part of the team (GPU: `barrier.sync 1, count`).
    region: CountingBarrier,
    /// Barrier for any number of threads (GPU: an mbarrier object), set up by a region's opener.
    subset: SubsetBarrier,
    shared: Box<[SharedWord]>,
    dynamic_shared: Box<[SharedWord]>,
    /// One slot per thread for warp shuffles, and one barrier per warp.
    lanes: Box<[std::sync::atomic::AtomicU32]>,
    warp_barriers: Box<[ExitAwareBarrier]>,
    /// Per warp: a meeting of the lanes a `sync_warp` mask names, when not all of them.
    warp_subsets: Box<[CountingBarrier]>,
    /// Who last wrote and read each watched word of team memory (see `race`).
    shadow: Mutex<race::Shadow>,
    /// A thread of the team panicked: every wait gives up (else a failed assertion in one
    /// emulated thread would leave the others waiting for it forever).
    aborted: std::sync::atomic::AtomicBool,
}

/// Team-shared memory is written through raw pointers by every thread of the team, exactly as
/// on a GPU; `UnsafeCell` makes that legal, and the runtime's barriers and atomics order it.
#[repr(transparent)]
struct SharedWord(core::cell::UnsafeCell<u128>);
// SAFETY: access goes through raw pointers handed out by `team_shared`, whose users order it
// with team barriers and atomics, as the device runtime does on real hardware.
unsafe impl Sync for SharedWord {}

std::thread_local! {
    static TEAM: Cell<*const Team> = const { Cell::new(core::ptr::null()) };
}

fn team() -> &'static Team {
    let team = TEAM.with(Cell::get);
    assert!(
        !team.is_null(),
        "device runtime called outside devicertl::arch::host::launch"
    );
    // SAFETY: `launch` keeps the team alive until every thread that can see this pointer joined.
    unsafe { &*team }
}

/// Runs `body` on `teams × threads` emulated device threads, warps of `warp` lanes (when
/// `threads` is not a multiple of `warp` the last warp is partial, as on a GPU).
pub fn launch(teams: u32, threads: u32, warp: u32, body: impl Fn() + Sync) {
    launch_with_dynamic_shared(teams, threads, warp, 0, body)
}

/// `launch` with `dynamic_bytes` of dynamic shared memory per team.
pub fn launch_with_dynamic_shared(
    teams: u32,
    threads: u32,
    warp: u32,
    dynamic_bytes: usize,
    body: impl Fn() + Sync,
) {
    assert!(teams > 0 && threads > 0 && warp > 0);
    let team_state: Vec<Arc<Team>> = (0..teams)
        .map(|_| {
            Arc::new(Team {
                barrier: ExitAwareBarrier::new(threads),
                region: CountingBarrier::new(),
                subset: SubsetBarrier::new(),
                shared: (0..TEAM_SHARED_BYTES / 16)
                    .map(|_| SharedWord(Default::default()))
                    .collect(),
                dynamic_shared: (0..dynamic_bytes.div_ceil(16))
                    .map(|_| SharedWord(Default::default()))
                    .collect(),
                lanes: (0..threads).map(|_| Default::default()).collect(),
                warp_barriers: (0..threads.div_ceil(warp))
                    .map(|w| ExitAwareBarrier::new((threads - w * warp).min(warp)))
                    .collect(),
                warp_subsets: (0..threads.div_ceil(warp))
                    .map(|_| CountingBarrier::new())
                    .collect(),
                shadow: Mutex::new(race::Shadow::default()),
                aborted: Default::default(),
            })
        })
        .collect();
    std::thread::scope(|scope| {
        for block in 0..teams {
            for thread in 0..threads {
                let team = Arc::clone(&team_state[block as usize]);
                let body = &body;
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(scope, move || {
                        let place = Geometry {
                            thread,
                            threads,
                            block,
                            blocks: teams,
                            warp,
                        };
                        // The team outlives the thread's run: `leave` below comes first.
                        this_thread::enter(place, &team.aborted);
                        race::enter(&team.shadow);
                        TEAM.with(|t| t.set(Arc::as_ptr(&team)));
                        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&body));
                        if let Err(panic) = outcome {
                            team.aborted
                                .store(true, std::sync::atomic::Ordering::Relaxed);
                            std::panic::resume_unwind(panic);
                        }
                        private::release_thread();
                        team.barrier.leave();
                        team.warp_barriers[(thread / warp) as usize].leave();
                        TEAM.with(|t| t.set(core::ptr::null()));
                        race::leave();
                        this_thread::leave();
                    })
                    .expect("spawn emulated device thread");
            }
        }
    });
    let races: Vec<std::string::String> = team_state
        .iter()
        .flat_map(|t| {
            core::mem::take(&mut t.shadow.lock().unwrap_or_else(|e| e.into_inner()).races)
        })
        .collect();
    if !races.is_empty() {
        panic!(
            "{} race(s) on watched team memory (a write and an access by another thread with no \
             hardware barrier between them); the first: {}",
            races.len(),
            races[..races.len().min(4)].join("; ")
        );
    }
}

pub fn thread_id_in_block() -> u32 {
    geometry().thread
}
/// Emulated launches are one-dimensional: y and z have extent 1.
pub fn thread_id_in_dim(dim: u32) -> u32 {
    if dim == 0 {
        geometry().thread
    } else {
        0
    }
}
pub fn block_dim(dim: u32) -> u32 {
    if dim == 0 {
        geometry().threads
    } else {
        1
    }
}
pub fn block_id_in_dim(dim: u32) -> u32 {
    if dim == 0 {
        geometry().block
    } else {
        0
    }
}
pub fn grid_dim(dim: u32) -> u32 {
    if dim == 0 {
        geometry().blocks
    } else {
        1
    }
}
pub fn num_threads_in_block() -> u32 {
    geometry().threads
}
pub fn block_id() -> u32 {
    geometry().block
}
pub fn num_blocks() -> u32 {
    geometry().blocks
}
pub fn warp_size() -> u32 {
    geometry().warp
}
pub fn lane_id() -> u32 {
    let g = geometry();
    g.thread % g.warp
}
/// Every lane of an emulated warp (the lanes that exist).
pub const FULL_MASK: u64 = !0;
/// Lanes of `mask` whose `pred` is true; every lane of the warp calls it together.
pub fn ballot(mask: u64, pred: bool) -> u64 {
    use std::sync::atomic::Ordering::SeqCst;
    let g = geometry();
    let team = team();
    let warp_base = g.thread - g.thread % g.warp;
    team.lanes[g.thread as usize].store(pred as u32, SeqCst);
    lock_step(mask);
    let lanes = (g.threads - warp_base).min(g.warp);
    let bits = (0..lanes)
        .filter(|l| team.lanes[(warp_base + l) as usize].load(SeqCst) != 0)
        .fold(0u64, |acc, l| acc | 1 << l);
    lock_step(mask);
    bits & mask
}
/// Emulated warps always run all their lanes (a partial last warp: the lanes that exist).
pub fn active_mask() -> u64 {
    let g = geometry();
    let lanes = (g.threads - g.thread / g.warp * g.warp).min(g.warp);
    if lanes >= 64 {
        !0
    } else {
        (1u64 << lanes) - 1
    }
}
/// Emulated warps are not lock-step, so a warp sync is a real meeting of the lanes in `mask`
/// (every lane of the warp when the mask covers them all).
/// `bar.warp.sync` also orders memory among the lanes it names.
pub fn sync_warp(mask: u64) {
    let g = geometry();
    let warp = (g.thread / g.warp) as usize;
    let all = active_mask();
    if mask & all == all {
        team().warp_barriers[warp].wait(true);
    } else {
        team().warp_subsets[warp].wait((mask & all).count_ones(), true);
    }
}
/// The lanes of `mask` in step for a shuffle or a ballot, which exchange registers and order no
/// memory on the GPU (the lanes outside the mask may be elsewhere, as on the GPU).
fn lock_step(mask: u64) {
    let g = geometry();
    let warp = (g.thread / g.warp) as usize;
    let all = active_mask();
    if mask & all == all {
        team().warp_barriers[warp].wait(false);
    } else {
        team().warp_subsets[warp].wait((mask & all).count_ones(), false);
    }
}
/// Every lane of `mask` calls this together, as on the GPU; a source lane outside the mask
/// gives an undefined value on the GPU, here the caller's own.
pub fn shuffle_down_u32(mask: u64, value: u32, delta: u32, width: u32) -> u32 {
    use std::sync::atomic::Ordering::SeqCst;
    let g = geometry();
    let team = team();
    let warp_base = g.thread - g.thread % g.warp;
    let lane = g.thread % g.warp;
    team.lanes[g.thread as usize].store(value, SeqCst);
    lock_step(mask);
    let segment_end = (lane & !(width - 1)) + width;
    let source_in_mask = lane + delta < 64 && mask & (1u64 << (lane + delta)) != 0;
    let result =
        if lane + delta < segment_end && warp_base + lane + delta < g.threads && source_in_mask {
            team.lanes[(warp_base + lane + delta) as usize].load(SeqCst)
        } else {
            value
        };
    lock_step(mask);
    result
}
pub fn team_barrier() {
    team().barrier.wait(true);
}
/// How many times the calling thread's team has met at the team barrier so far (for the tests
/// that count what a launch costs).
pub fn team_barriers_met() -> u64 {
    team().barrier.generation()
}
/// Named barriers are emulated, so both ways of meeting on part of a team get tested.
pub const HAS_REGION_BARRIER: bool = true;
/// As on the GPU, the count is whole warps.
pub fn region_barrier(count: u32) {
    assert!(
        count.is_multiple_of(warp_size()),
        "named barrier for {count} threads: not whole warps of {}",
        warp_size()
    );
    team().region.wait(count, true);
}
/// The emulation has the GPU's barrier for any number of threads (an mbarrier on sm_80+).
pub fn has_subset_barrier() -> bool {
    true
}
/// The region's opener sets it up (the GPU's object lives at `_barrier` in team memory; the
/// emulation checks the protocol instead: set up once, used with its count, taken down).
///
/// # Safety
/// As on the GPU (`arch::nvptx`); the emulation itself touches no memory at `_barrier`.
pub unsafe fn subset_barrier_init(_barrier: *mut u64, count: u32) {
    team().subset.init(count);
}
/// # Safety
/// As `subset_barrier_init`.
pub unsafe fn subset_barrier_wait(_barrier: *mut u64, count: u32) {
    team().subset.wait(count);
}
/// # Safety
/// As `subset_barrier_init`.
pub unsafe fn subset_barrier_inval(_barrier: *mut u64) {
    team().subset.inval();
}
pub fn team_fence() {
    fence(core::sync::atomic::Ordering::SeqCst);
}
pub fn team_fence_release() {
    fence(core::sync::atomic::Ordering::Release);
}
pub fn team_fence_acquire() {
    fence(core::sync::atomic::Ordering::Acquire);
}
/// `core::sync::atomic::fence`, which is what the runtime's fences are on the host.
///
/// ThreadSanitizer does not model fences: it would report every access ordered by a fence
/// paired with a relaxed atomic (the runtime's barriers and reductions, which avoid release
/// RMWs for clang-22's NVPTX backend) as a race. Under it (`cfg(rustomp_tsan)`, set by
/// build.rs for `-Zsanitizer=thread`) every fence is also an acquire-release RMW of one
/// atomic, so a fence synchronizes with every fence that ran before it: stronger than a fence,
/// so it can hide a race whose fix is a missing flag read, but it invents none. Plain tests and
/// Miri (which models fences) run the fence alone.
#[inline(always)]
pub fn fence(order: core::sync::atomic::Ordering) {
    core::sync::atomic::fence(order);
    #[cfg(rustomp_tsan)]
    {
        static FENCES: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
        FENCES.fetch_add(0, core::sync::atomic::Ordering::AcqRel);
    }
}
pub fn dynamic_shared() -> *mut u8 {
    team().dynamic_shared.as_ptr() as *mut u8
}
pub fn team_shared() -> *mut u8 {
    team().shared.as_ptr() as *mut u8 // UnsafeCell<u128> is layout-compatible with its contents
}
pub fn clock_ns() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
pub const CLOCK_TICK_SECONDS: f64 = 1.0e-9;
pub fn print_message(message: &core::ffi::CStr) {
    std::eprint!("{}", message.to_string_lossy());
}
pub fn trap() -> ! {
    panic!("device trap")
}

unsafe extern "C" {
    /// The host's C allocator stands in for the device heap.
    pub fn malloc(size: usize) -> *mut u8;
    pub fn free(ptr: *mut u8);
}
/// Marks for the virtual GPU (device code only): nothing here.
#[inline(always)]
pub fn note_lock_acquired(_lock: usize) {}
#[inline(always)]
pub fn note_lock_released(_lock: usize) {}
#[inline(always)]
pub fn note_omp_barrier(_entering: bool) {}
#[inline(always)]
pub fn note_counting_barrier_arrival(_phase: usize) {}
#[inline(always)]
pub fn note_counting_barrier_departure(_phase: usize) {}

/// One step of a spin-wait: emulated threads outnumber the cores, so let the others run.
pub fn pause() {
    check_aborted();
    std::thread::yield_now();
}

/// The runtime's own watched accesses (its stash of deferred reductions): checked like the
/// tests' (`race`), a no-op on a GPU.
pub fn watch_read(addr: *const u8, bytes: usize, what: &'static str) {
    race::read(addr, bytes, what);
}
/// As `watch_read`, for a write.
pub fn watch_write(addr: *const u8, bytes: usize, what: &'static str) {
    race::write(addr, bytes, what);
}

pub mod private;
pub mod race;

/// `p` (amdgcn hides it from its link-time indirect-call specialization; nvptx has none).
#[inline(always)]
pub fn opaque_code_ptr(p: *const core::ffi::c_void) -> *const core::ffi::c_void {
    p
}
