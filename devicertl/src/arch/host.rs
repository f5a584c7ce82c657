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
    /// Named barrier for part of the team (GPU: `barrier.sync 1, count`).
    region: CountingBarrier,
    shared: Box<[SharedWord]>,
    dynamic_shared: Box<[SharedWord]>,
    /// One slot per thread for warp shuffles, and one barrier per warp.
    lanes: Box<[std::sync::atomic::AtomicU32]>,
    warp_barriers: Box<[ExitAwareBarrier]>,
    /// Per warp: a meeting of the lanes a `sync_warp` mask names, when not all of them.
    warp_subsets: Box<[CountingBarrier]>,
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
            state: Mutex::new(BarrierState {
                live: threads,
                arrived: 0,
                generation: 0,
            }),
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

/// A barrier for however many threads the caller says take part (all callers pass the same
/// count), like a named barrier with a thread count.
struct CountingBarrier {
    state: Mutex<(u32, u64)>,
    released: Condvar,
}

impl CountingBarrier {
    fn new() -> Self {
        CountingBarrier {
            state: Mutex::new((0, 0)),
            released: Condvar::new(),
        }
    }

    fn wait(&self, count: u32) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += 1;
        if s.0 >= count {
            s.0 = 0;
            s.1 += 1;
            self.released.notify_all();
            return;
        }
        let generation = s.1;
        while s.1 == generation {
            s = self.released.wait(s).unwrap_or_else(|e| e.into_inner());
        }
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
                            g.set(Some(Geometry {
                                thread,
                                threads,
                                block,
                                blocks: teams,
                                warp,
                            }))
                        });
                        TEAM.with(|t| t.set(Arc::as_ptr(&team)));
                        body();
                        private::release_thread();
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
    sync_warp(!0);
    let lanes = (g.threads - warp_base).min(g.warp);
    let bits = (0..lanes)
        .filter(|l| team.lanes[(warp_base + l) as usize].load(SeqCst) != 0)
        .fold(0u64, |acc, l| acc | 1 << l);
    sync_warp(!0);
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
pub fn sync_warp(mask: u64) {
    let g = geometry();
    let warp = (g.thread / g.warp) as usize;
    let all = active_mask();
    if mask & all == all {
        team().warp_barriers[warp].wait();
    } else {
        team().warp_subsets[warp].wait((mask & all).count_ones());
    }
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
/// Named barriers are emulated, so both ways of meeting on part of a team get tested.
pub const HAS_REGION_BARRIER: bool = true;
pub fn region_barrier(count: u32) {
    team().region.wait(count);
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
/// One step of a spin-wait: emulated threads outnumber the cores, so let the others run.
pub fn pause() {
    std::thread::yield_now();
}

/// Per-thread private memory, as a GPU thread's `.local` / scratch memory: a pointer into it
/// means the *reading* thread's own memory at that address, so another thread must never read
/// through it. Tests allocate the variables a compiler would keep private here and check every
/// pointer a runtime hands across threads with `check_readable`.
pub mod private {
    use std::boxed::Box;
    use std::cell::RefCell;
    use std::sync::Mutex;
    use std::vec::Vec;

    struct Arena {
        start: usize,
        end: usize,
        owner: std::thread::ThreadId,
    }

    static ARENAS: Mutex<Vec<Arena>> = Mutex::new(Vec::new());

    std::thread_local! {
        static BLOCKS: RefCell<Vec<Box<[u128]>>> = const { RefCell::new(Vec::new()) };
    }

    /// `bytes` of zeroed private memory of the calling thread, 16-byte aligned, valid until the
    /// thread leaves the emulated kernel.
    pub fn alloc(bytes: usize) -> *mut u8 {
        let block: Box<[u128]> = std::vec![0u128; bytes.div_ceil(16).max(1)].into_boxed_slice();
        let start = block.as_ptr() as usize;
        let ptr = block.as_ptr() as *mut u8;
        ARENAS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arena {
                start,
                end: start + block.len() * 16,
                owner: std::thread::current().id(),
            });
        BLOCKS.with(|b| b.borrow_mut().push(block));
        ptr
    }

    /// Panics when `ptr` points into another thread's private memory: on a GPU that read would
    /// see the reader's own memory, not the value the other thread published.
    pub fn check_readable(ptr: *const u8) {
        let addr = ptr as usize;
        let me = std::thread::current().id();
        let arenas = ARENAS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = arenas
            .iter()
            .find(|a| a.start <= addr && addr < a.end && a.owner != me)
        {
            panic!(
                "thread {me:?} accessed {addr:#x}, private memory of thread {:?}: on a GPU it \
                 would read its own private memory instead",
                a.owner
            );
        }
    }

    /// The thread leaves the kernel: its private memory goes away.
    pub(super) fn release_thread() {
        let me = std::thread::current().id();
        ARENAS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|a| a.owner != me);
        BLOCKS.with(|b| b.borrow_mut().clear());
    }
}
