//! Host emulation backend: runs a "kernel" as `teams × threads` CPU threads so `cargo test`
//! exercises the runtime's real algorithms. Each team has its own barrier and its own block of
//! team-shared memory; warps are emulated with a chosen width.

extern crate std;

use core::cell::Cell;
use std::boxed::Box;
use std::sync::{Arc, Condvar, Mutex};
use std::vec::Vec;

use super::TEAM_SHARED_BYTES;

/// What one emulated team shares.
struct Team {
    barrier: ExitAwareBarrier,
    shared: Box<[SharedWord]>,
    /// One slot per thread for warp shuffles, and one barrier per warp.
    lanes: Box<[std::sync::atomic::AtomicU32]>,
    warp_barriers: Box<[ExitAwareBarrier]>,
}

/// A barrier of a block or a warp as the GPU has it: a thread that has left the kernel no
/// longer counts (generic-mode kernels let the threads that cannot work leave at once).
struct ExitAwareBarrier {
    state: Mutex<BarrierState>,
    released: Condvar,
}

struct BarrierState {
    live: u32,
    arrived: u32,
    generation: u64,
}

impl ExitAwareBarrier {
    fn new(threads: u32) -> Self {
        ExitAwareBarrier {
            state: Mutex::new(BarrierState { live: threads, arrived: 0, generation: 0 }),
            released: Condvar::new(),
        }
    }

    fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.arrived += 1;
        if !Self::release_if_complete(&mut s, &self.released) {
            let generation = s.generation;
            while s.generation == generation {
                s = self.released.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// The calling thread has left the kernel.
    fn leave(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.live -= 1;
        Self::release_if_complete(&mut s, &self.released);
    }

    fn release_if_complete(s: &mut BarrierState, released: &Condvar) -> bool {
        if s.arrived == 0 || s.arrived < s.live {
            return false;
        }
        s.arrived = 0;
        s.generation += 1;
        released.notify_all();
        true
    }
}

/// Team-shared memory is written through raw pointers by every thread of the team, exactly as
/// on a GPU; `UnsafeCell` makes that legal, and the runtime's barriers and atomics order it.
#[repr(transparent)]
struct SharedWord(core::cell::UnsafeCell<u128>);
// SAFETY: access goes through raw pointers handed out by `team_shared`, whose users order it
// with team barriers and atomics, as the device runtime does on real hardware.
unsafe impl Sync for SharedWord {}

#[derive(Clone, Copy)]
struct Geometry {
    thread: u32,
    threads: u32,
    block: u32,
    blocks: u32,
    warp: u32,
}

std::thread_local! {
    static GEOMETRY: Cell<Option<Geometry>> = const { Cell::new(None) };
    static TEAM: Cell<*const Team> = const { Cell::new(core::ptr::null()) };
}

fn geometry() -> Geometry {
    GEOMETRY
        .with(Cell::get)
        .expect("device runtime called outside devicertl::arch::host::launch")
}

fn team() -> &'static Team {
    let team = TEAM.with(Cell::get);
    assert!(!team.is_null(), "device runtime called outside devicertl::arch::host::launch");
    // SAFETY: `launch` keeps the team alive until every thread that can see this pointer joined.
    unsafe { &*team }
}

/// Runs `body` on `teams × threads` emulated device threads, warps of `warp` lanes (when
/// `threads` is not a multiple of `warp` the last warp is partial, as on a GPU).
pub fn launch(teams: u32, threads: u32, warp: u32, body: impl Fn() + Sync) {
    assert!(teams > 0 && threads > 0 && warp > 0);
    let team_state: Vec<Arc<Team>> = (0..teams)
        .map(|_| {
            Arc::new(Team {
                barrier: ExitAwareBarrier::new(threads),
                shared: (0..TEAM_SHARED_BYTES / 16).map(|_| SharedWord(Default::default())).collect(),
                lanes: (0..threads).map(|_| Default::default()).collect(),
                warp_barriers: (0..threads.div_ceil(warp))
                    .map(|w| ExitAwareBarrier::new((threads - w * warp).min(warp)))
                    .collect(),
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
                        GEOMETRY.with(|g| {
                            g.set(Some(Geometry { thread, threads, block, blocks: teams, warp }))
                        });
                        TEAM.with(|t| t.set(Arc::as_ptr(&team)));
                        body();
                        team.barrier.leave();
                        team.warp_barriers[(thread / warp) as usize].leave();
                        TEAM.with(|t| t.set(core::ptr::null()));
                        GEOMETRY.with(|g| g.set(None));
                    })
                    .expect("spawn emulated device thread");
            }
        }
    });
}

pub fn thread_id_in_block() -> u32 {
    geometry().thread
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
/// Emulated warps always run all their lanes (a partial last warp: the lanes that exist).
pub fn active_mask() -> u64 {
    let g = geometry();
    let lanes = (g.threads - g.thread / g.warp * g.warp).min(g.warp);
    if lanes >= 64 { !0 } else { (1u64 << lanes) - 1 }
}
/// Emulated warps are not lock-step, so a warp sync is a real meeting of all lanes.
pub fn sync_warp(_mask: u64) {
    let g = geometry();
    team().warp_barriers[(g.thread / g.warp) as usize].wait();
}
/// Every lane of the warp must call this together, as on the GPU.
pub fn shuffle_down_u32(_mask: u64, value: u32, delta: u32, width: u32) -> u32 {
    use std::sync::atomic::Ordering::SeqCst;
    let g = geometry();
    let team = team();
    let warp_base = g.thread - g.thread % g.warp;
    let lane = g.thread % g.warp;
    team.lanes[g.thread as usize].store(value, SeqCst);
    sync_warp(!0);
    let segment_end = (lane & !(width - 1)) + width;
    let result = if lane + delta < segment_end && warp_base + lane + delta < g.threads {
        team.lanes[(warp_base + lane + delta) as usize].load(SeqCst)
    } else {
        value
    };
    sync_warp(!0);
    result
}
pub fn team_barrier() {
    team().barrier.wait();
}
pub fn team_fence() {
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}
pub fn team_shared() -> *mut u8 {
    team().shared.as_ptr() as *mut u8 // UnsafeCell<u128> is layout-compatible with its contents
}
pub fn clock_ns() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
pub const CLOCK_TICK_SECONDS: f64 = 1.0e-9;
pub fn trap() -> ! {
    panic!("device trap")
}

unsafe extern "C" {
    /// The host's C allocator stands in for the device heap.
    pub fn malloc(size: usize) -> *mut u8;
    pub fn free(ptr: *mut u8);
}
/// One step of a spin-wait: emulated threads outnumber the cores, so let the others run.
pub fn pause() {
    std::thread::yield_now();
}
