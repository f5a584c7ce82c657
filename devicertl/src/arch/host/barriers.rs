//! The meetings the GPU's hardware provides, emulated: the team barrier (threads that have
//! exited the kernel no longer count, as with `bar.sync`), a named barrier's count of
//! arrivals, the subset barrier (an mbarrier), and the happens-before each of them gives the
//! race checker (`Meeting`). A thread of the team that panicked makes every wait give up.

use super::this_thread::{check_aborted, geometry, CLOCK};
use std::sync::{Condvar, Mutex};
use std::vec::Vec;

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
    pub(super) fn leave(&self, generation: u64) {
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
pub(super) struct ExitAwareBarrier {
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
    /// How many times the team has met here so far.
    pub(super) fn generation(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .generation
    }
    pub(super) fn new(threads: u32) -> Self {
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
    pub(super) fn wait(&self, orders: bool) {
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
    pub(super) fn leave(&self) {
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
pub(super) struct CountingBarrier {
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
    pub(super) fn new() -> Self {
        CountingBarrier {
            state: Mutex::new(CountingState::default()),
            released: Condvar::new(),
        }
    }

    pub(super) fn wait(&self, count: u32, orders: bool) {
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
pub(super) struct SubsetBarrier {
    count: Mutex<Option<u32>>,
    barrier: CountingBarrier,
}

impl SubsetBarrier {
    pub(super) fn new() -> Self {
        SubsetBarrier {
            count: Mutex::new(None),
            barrier: CountingBarrier::new(),
        }
    }
    pub(super) fn init(&self, count: u32) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            c.is_none(),
            "subset barrier set up twice without being taken down"
        );
        assert!(count > 0, "subset barrier of 0 threads");
        *c = Some(count);
    }
    pub(super) fn wait(&self, count: u32) {
        let set = *self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(
            set,
            Some(count),
            "subset barrier used for {count} threads, set up for {set:?}"
        );
        self.barrier.wait(count, true);
    }
    pub(super) fn inval(&self) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        assert!(c.is_some(), "subset barrier taken down while not set up");
        *c = None;
    }
}
