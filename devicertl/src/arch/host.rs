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

/// Waits on `cv` until woken, giving up with a panic when a thread of the team panicked.
fn wait_on<'a, T>(
    cv: &Condvar,
    guard: std::sync::MutexGuard<'a, T>,
) -> std::sync::MutexGuard<'a, T> {
    check_aborted();
    cv.wait_timeout(guard, std::time::Duration::from_millis(20))
        .unwrap_or_else(|e| e.into_inner())
        .0
}

fn check_aborted() {
    if team().aborted.load(std::sync::atomic::Ordering::Relaxed) {
        panic!("emulated kernel abandoned: another thread of the team panicked");
    }
}

/// Happens-before as the GPU's hardware orders it: each emulated thread has a vector clock
/// (`CLOCK`), and only the meetings the hardware provides (team, named and subset barriers,
/// warp syncs) join the clocks of the threads that meet. Atomics and fences do not: an
/// algorithm that orders memory with them alone is invisible to the GPU's tools (racecheck),
/// and `race` reports the accesses it was meant to order.
#[derive(Default)]
struct Meeting {
    /// The join of the clocks of the threads arrived so far.
    joined: Vec<u32>,
    /// The join each of the last generations released with (generation, clock).
    released: std::collections::VecDeque<(u64, Vec<u32>)>,
}

impl Meeting {
    /// The calling thread arrives with its clock.
    fn arrive(&mut self) {
        CLOCK.with(|c| join(&mut self.joined, &c.borrow()));
    }
    /// Generation `generation` is complete: it releases the joined clock.
    fn release(&mut self, generation: u64) {
        let joined = core::mem::take(&mut self.joined);
        self.released.push_back((generation, joined));
        while self.released.len() > 8 {
            self.released.pop_front();
        }
    }
    /// The calling thread leaves generation `generation`: it has seen everything the others did
    /// before they arrived, and starts a new interval of its own.
    fn leave(&self, generation: u64) {
        if let Some((_, joined)) = self.released.iter().find(|(g, _)| *g == generation) {
            CLOCK.with(|c| {
                let mut c = c.borrow_mut();
                join(&mut c, joined);
                let me = geometry().thread as usize;
                c[me] += 1;
            });
        }
    }
}

fn join(into: &mut Vec<u32>, other: &[u32]) {
    if into.len() < other.len() {
        into.resize(other.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(other) {
        *a = (*a).max(*b);
    }
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
    meeting: Meeting,
}

impl ExitAwareBarrier {
    fn new(threads: u32) -> Self {
        ExitAwareBarrier {
            state: Mutex::new(BarrierState {
                live: threads,
                arrived: 0,
                generation: 0,
                meeting: Meeting::default(),
            }),
            released: Condvar::new(),
        }
    }

    /// Waits for the others; `orders` says whether the hardware orders memory here (a barrier
    /// or a warp sync does; the emulation's own lock step for shuffles does not).
    fn wait(&self, orders: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let generation = s.generation;
        s.arrived += 1;
        if orders {
            s.meeting.arrive();
        }
        if !Self::release_if_complete(&mut s, &self.released) {
            while s.generation == generation {
                s = wait_on(&self.released, s);
            }
        }
        if orders {
            s.meeting.leave(generation);
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
        let generation = s.generation;
        s.meeting.release(generation);
        s.generation += 1;
        released.notify_all();
        true
    }
}

/// A barrier for however many threads the caller says take part (all callers pass the same
/// count), like a named barrier with a thread count.
struct CountingBarrier {
    state: Mutex<CountingState>,
    released: Condvar,
}

#[derive(Default)]
struct CountingState {
    arrived: u32,
    generation: u64,
    meeting: Meeting,
}

impl CountingBarrier {
    fn new() -> Self {
        CountingBarrier {
            state: Mutex::new(CountingState::default()),
            released: Condvar::new(),
        }
    }

    fn wait(&self, count: u32, orders: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let generation = s.generation;
        s.arrived += 1;
        if orders {
            s.meeting.arrive();
        }
        if s.arrived >= count {
            s.arrived = 0;
            s.meeting.release(generation);
            s.generation += 1;
            self.released.notify_all();
        } else {
            while s.generation == generation {
                s = wait_on(&self.released, s);
            }
        }
        if orders {
            s.meeting.leave(generation);
        }
    }
}

/// The GPU's barrier for any number of threads (an mbarrier): one thread sets it up with the
/// number of arrivals per phase before anyone uses it and takes it down after the last use.
/// Misuse the hardware leaves undefined is a test failure here.
struct SubsetBarrier {
    count: Mutex<Option<u32>>,
    barrier: CountingBarrier,
}

impl SubsetBarrier {
    fn init(&self, count: u32) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            c.is_none(),
            "subset barrier set up twice without being taken down"
        );
        assert!(count > 0, "subset barrier of 0 threads");
        *c = Some(count);
    }
    fn wait(&self, count: u32) {
        let set = *self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(
            set,
            Some(count),
            "subset barrier used for {count} threads, set up for {set:?}"
        );
        self.barrier.wait(count, true);
    }
    fn inval(&self) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert!(c.is_some(), "subset barrier taken down while not set up");
        *c = None;
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
    /// The thread's vector clock over the threads of its team (see `Meeting`).
    static CLOCK: core::cell::RefCell<Vec<u32>> = const { core::cell::RefCell::new(Vec::new()) };
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
                subset: SubsetBarrier {
                    count: Mutex::new(None),
                    barrier: CountingBarrier::new(),
                },
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
                        CLOCK.with(|c| {
                            let mut c = c.borrow_mut();
                            *c = std::vec![0; threads as usize];
                            c[thread as usize] = 1;
                        });
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
                        GEOMETRY.with(|g| g.set(None));
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
    team()
        .barrier
        .state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .generation
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

/// Watched team memory: accesses that the code under test declares (the compiler's transfer
/// array, variables a region shares), checked for the race compute-sanitizer's racecheck
/// reports on a GPU: a word written by one thread and read or written by another with no
/// hardware meeting (barrier, warp sync; see `Meeting`) between them. Races are collected and
/// reported when the launch ends (a panic in one emulated thread would leave the others
/// waiting at a barrier).
pub mod race {
    use super::{geometry, team, CLOCK};
    use std::collections::HashMap;
    use std::string::String;
    use std::vec::Vec;

    /// One access: the thread and its own clock component at the time.
    #[derive(Clone, Copy)]
    struct Access {
        thread: u32,
        clock: u32,
        what: &'static str,
    }

    #[derive(Default)]
    struct Word {
        write: Option<Access>,
        reads: Vec<Access>,
    }

    #[derive(Default)]
    pub(super) struct Shadow {
        words: HashMap<usize, Word>,
        pub(super) races: Vec<String>,
    }

    /// Whether `earlier` is ordered before the calling thread's present (its clock has seen
    /// `earlier`'s interval).
    fn ordered(clock: &[u32], earlier: &Access) -> bool {
        clock.get(earlier.thread as usize).copied().unwrap_or(0) >= earlier.clock
    }

    fn access(addr: *const u8, bytes: usize, what: &'static str, write: bool) {
        let me = geometry().thread;
        CLOCK.with(|clock| {
            let clock = clock.borrow();
            let now = Access { thread: me, clock: clock[me as usize], what };
            let mut shadow = team().shadow.lock().unwrap_or_else(|e| e.into_inner());
            let Shadow { words, races } = &mut *shadow;
            let first = addr as usize / 4;
            let last = (addr as usize + bytes.max(1) - 1) / 4;
            for word in first..=last {
                let w = words.entry(word).or_default();
                let mut conflict = |other: &Access, kind: &str| {
                    if other.thread != me && !ordered(&clock, other) {
                        races.push(std::format!(
                            "thread {me} {} {:#x} ({what}) after thread {} {kind} it ({}) in the same barrier interval",
                            if write { "wrote" } else { "read" },
                            word * 4,
                            other.thread,
                            other.what
                        ));
                    }
                };
                if let Some(prev) = w.write {
                    conflict(&prev, "wrote");
                }
                if write {
                    for r in &w.reads {
                        conflict(r, "read");
                    }
                    w.write = Some(now);
                    w.reads.clear();
                } else {
                    w.reads.retain(|r| r.thread != me);
                    w.reads.push(now);
                }
            }
        });
    }

    /// The calling emulated thread reads `bytes` at `addr`, watched.
    pub fn read(addr: *const u8, bytes: usize, what: &'static str) {
        access(addr, bytes, what, false);
    }
    /// The calling emulated thread writes `bytes` at `addr`, watched.
    pub fn write(addr: *const u8, bytes: usize, what: &'static str) {
        access(addr, bytes, what, true);
    }
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
