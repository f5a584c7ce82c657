//! One team at a time, its threads as fibers of one OS thread.
//!
//! Each emulated GPU thread is a coroutine with its own stack; a scheduler resumes them in turn,
//! and a thread runs until it waits: at a barrier (`bar.sync`, named barriers with counts,
//! mbarriers), at a warp operation (its lanes meet to exchange values), or in a spin-wait's
//! `nanosleep`. A meeting is a few plain stores and a switch, not an OS rendezvous, so a team
//! of 1024 threads meets about as fast as one thread runs. And since every thread's state is
//! known, a meeting that can never complete (a barrier some of the threads it counts never
//! reach, a warp operation whose lanes went elsewhere) is found at once and reported with
//! where each thread waits: the synccheck of the virtual GPU.

use crate::racecheck;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rustomp_abi::VgpuAccessSite;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// Why a thread gave the others their turn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pause {
    /// It waits for a meeting.
    Blocked(Wait),
    /// A spin-wait's `nanosleep`: it waits for something the scheduler cannot see.
    Spinning,
}

/// Whose hardware the team's device code was compiled for: the names of its meetings in the
/// deadlock report.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    Nvptx,
    Amdgcn,
}

impl Family {
    /// The launch's `family` (`VGPU_FAMILY_*`).
    pub fn of_launch(family: u32) -> Family {
        if family == rustomp_abi::VGPU_FAMILY_AMDGCN {
            Family::Amdgcn
        } else {
            Family::Nvptx
        }
    }
}

/// The meeting a blocked thread waits at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    TeamBarrier,
    /// `barrier.sync id, count` (nvptx).
    NamedBarrier,
    /// An mbarrier's phase (nvptx).
    Mbarrier,
    /// To enter a warp meeting while the previous one drains.
    WarpDraining,
    /// For the other lanes of a warp meeting.
    WarpMeeting,
    /// To ask which lanes run together while the previous answer drains.
    LanesDraining,
    /// For the lanes that run together (nvptx `activemask`, an amdgcn execution mask).
    LanesTogether,
}

impl Wait {
    /// The meeting as the family's programmers know it.
    fn describe(self, family: Family) -> &'static str {
        match (self, family) {
            (Wait::TeamBarrier, Family::Nvptx) => "the team barrier (bar.sync 0)",
            (Wait::TeamBarrier, Family::Amdgcn) => "the workgroup barrier (s_barrier)",
            (Wait::NamedBarrier, _) => "a named barrier (barrier.sync with a count)",
            (Wait::Mbarrier, _) => "an mbarrier",
            (Wait::WarpDraining, Family::Nvptx) => "a warp operation (the previous one draining)",
            (Wait::WarpDraining, Family::Amdgcn) => {
                "a wavefront operation (the previous one draining)"
            }
            (Wait::WarpMeeting, Family::Nvptx) => "a warp operation (shfl, vote, bar.warp.sync)",
            (Wait::WarpMeeting, Family::Amdgcn) => {
                "a wavefront operation (ds_bpermute, ballot, readfirstlane, wave_barrier)"
            }
            (Wait::LanesDraining, Family::Nvptx) => "activemask (the previous one draining)",
            (Wait::LanesDraining, Family::Amdgcn) => {
                "a cross-lane operation's execution mask (the previous one draining)"
            }
            (Wait::LanesTogether, Family::Nvptx) => "activemask",
            (Wait::LanesTogether, Family::Amdgcn) => "a cross-lane operation's execution mask",
        }
    }
}

/// A barrier's state: arrivals in the current phase and the phase's number.
#[derive(Default)]
struct Meeting {
    arrived: u32,
    generation: u64,
}

impl Meeting {
    /// One more arrival (`arriving`: 0 when a thread only left, so fewer are expected): the
    /// phase completes once `expected` have arrived. Returns the phase the arrival belongs to.
    fn arrive(&mut self, arriving: u32, expected: u32) -> u64 {
        let phase = self.generation;
        self.arrived += arriving;
        if self.arrived > 0 && self.arrived >= expected {
            self.arrived = 0;
            self.generation += 1;
        }
        phase
    }
}

/// One warp's meeting place for shuffles, votes and `bar.warp.sync`, and for `activemask`.
struct WarpExchange {
    values: [u32; 64],
    arrived: u64,
    departed: u64,
    /// Lanes asking `activemask` together, and those that have read the answer.
    converged: u64,
    converged_departed: u64,
    /// The execution mask of an amdgcn round, fixed by the first lane that found every lane
    /// there or elsewhere (0: the round is open); each lane of the round gets it.
    closed: u64,
}

/// What one team's threads share.
pub struct TeamState {
    pub block: u32,
    pub blocks: u32,
    pub threads: u32,
    pub warp: u32,
    family: Family,
    exited: Vec<bool>,
    live: u32,
    team_barrier: Meeting,
    /// `barrier.sync id, count` for id 1..15 (id 0 with the block's size is the team barrier).
    named: [Meeting; 16],
    /// mbarrier objects by address: (arrivals per phase, meeting).
    mbarriers: HashMap<usize, (u32, Meeting)>,
    warps: Vec<WarpExchange>,
    /// Bumped by every arrival, departure and exit: a pass of the scheduler that leaves it
    /// unchanged while every thread waits at a meeting is a deadlock.
    progress: u64,
    waiting: Vec<Option<Wait>>,
    /// How often each thread found its wait not over (a meeting's, or a spin-wait's): a thread
    /// that waits may have been let through since it last looked, until it looks again.
    blocked_checks: Vec<u64>,
    /// Threads whose last pause was a spin-wait's.
    spinning: Vec<bool>,
    /// Per thread, the site of the OpenMP barrier (`__kmpc_barrier`) it is in, or null.
    omp_barrier: Vec<*const VgpuAccessSite>,
    /// Per thread, the site of the call of `__kmpc_barrier` it is making (where the image
    /// calls it rather than inlining it), or null: the barrier's site, not the runtime's.
    barrier_call: Vec<*const VgpuAccessSite>,
    /// The threads that arrived in the team barrier's current phase, each with the OpenMP
    /// barrier it came from (null: another barrier), and those that returned from the kernel
    /// meanwhile.
    arrivals: Vec<(u32, *const VgpuAccessSite)>,
    returned_in_phase: Vec<u32>,
    /// A team barrier passed by threads from different barriers (synccheck), described.
    divergence: Option<String>,
}

impl TeamState {
    fn new(block: u32, blocks: u32, threads: u32, warp: u32, family: Family) -> Self {
        TeamState {
            block,
            blocks,
            threads,
            warp,
            family,
            exited: vec![false; threads as usize],
            live: threads,
            team_barrier: Meeting::default(),
            named: Default::default(),
            mbarriers: HashMap::new(),
            warps: (0..threads.div_ceil(warp))
                .map(|_| WarpExchange {
                    values: [0; 64],
                    arrived: 0,
                    departed: 0,
                    converged: 0,
                    converged_departed: 0,
                    closed: 0,
                })
                .collect(),
            progress: 0,
            waiting: vec![None; threads as usize],
            blocked_checks: vec![0; threads as usize],
            spinning: vec![false; threads as usize],
            omp_barrier: vec![core::ptr::null(); threads as usize],
            barrier_call: vec![core::ptr::null(); threads as usize],
            arrivals: Vec::new(),
            returned_in_phase: Vec::new(),
            divergence: None,
        }
    }

    /// The lanes of warp `w` that have not exited.
    fn live_lanes(&self, w: u32) -> u64 {
        let base = w * self.warp;
        let lanes = (self.threads - base).min(self.warp);
        (0..lanes)
            .filter(|l| !self.exited[(base + l) as usize])
            .fold(0u64, |m, l| m | 1 << l)
    }

    /// Thread `t` has returned from the kernel: meetings that waited for it may complete.
    fn exit(&mut self, t: u32) {
        self.exited[t as usize] = true;
        self.live -= 1;
        self.progress += 1;
        let phase = self.team_barrier.generation;
        if !self.arrivals.is_empty() {
            // It returned while others wait at the barrier.
            self.returned_in_phase.push(t);
        }
        self.team_barrier.arrive(0, self.live);
        if self.team_barrier.generation != phase {
            self.team_barrier_passed();
        }
    }

    /// Thread `t` arrives at the team barrier, from an OpenMP barrier or not.
    fn note_team_barrier_arrival(&mut self, t: u32) {
        self.arrivals.push((t, self.omp_barrier[t as usize]));
    }

    /// The team barrier's phase completed: it ordered everything (racecheck), and it must not
    /// have joined threads at an OpenMP barrier with threads at another barrier, or with
    /// threads that returned instead (synccheck: a barrier reached in divergent code).
    fn team_barrier_passed(&mut self) {
        racecheck::whole_team_met();
        let arrivals = core::mem::take(&mut self.arrivals);
        let mut returned = core::mem::take(&mut self.returned_in_phase);
        let Some(&(_, omp_site)) = arrivals.iter().find(|(_, site)| !site.is_null()) else {
            return;
        };
        let (mut same, mut other): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for &(t, site) in &arrivals {
            if site == omp_site {
                same.push(t)
            } else {
                other.push(t)
            }
        }
        if (other.is_empty() && returned.is_empty()) || self.divergence.is_some() {
            return;
        }
        same.sort_unstable();
        other.sort_unstable();
        returned.sort_unstable();
        let mut elsewhere = Vec::new();
        if !other.is_empty() {
            elsewhere.push(format!(
                "threads {} at another barrier (another OpenMP barrier, the end of the region, or one of the runtime's)",
                ranges(&other)
            ));
        }
        if !returned.is_empty() {
            elsewhere.push(format!(
                "threads {} returned from the kernel",
                ranges(&returned)
            ));
        }
        self.divergence = Some(format!(
            "team {} of {}: a barrier reached in divergent code: threads {} are at an OpenMP barrier ({}), {}; on a GPU the team's hardware barrier lets them all pass together",
            self.block,
            self.blocks,
            ranges(&same),
            racecheck::describe_site(omp_site),
            elsewhere.join(", ")
        ));
    }
}

struct Current {
    thread: Cell<u32>,
    yielder: Cell<*const Yielder<(), Pause>>,
}

std::thread_local! {
    static TEAM: RefCell<Option<TeamState>> = const { RefCell::new(None) };
    static CURRENT: Current = const {
        Current { thread: Cell::new(0), yielder: Cell::new(core::ptr::null()) }
    };
}

/// Stacks of finished threads, for the next team's (of any launch).
static STACKS: std::sync::Mutex<Vec<DefaultStack>> = std::sync::Mutex::new(Vec::new());

fn pooled_stack(bytes: usize) -> DefaultStack {
    let reused = STACKS.lock().unwrap_or_else(|e| e.into_inner()).pop();
    reused
        .map_or_else(|| DefaultStack::new(bytes), Ok)
        .expect("a stack for an emulated thread")
}

/// `f` on the running team's state.
pub fn with_team<R>(f: impl FnOnce(&mut TeamState) -> R) -> R {
    TEAM.with(|t| {
        let mut t = t.borrow_mut();
        f(t.as_mut()
            .expect("a virtual-GPU call outside a kernel launch"))
    })
}

/// The calling emulated thread's number in its team.
pub fn thread() -> u32 {
    CURRENT.with(|c| c.thread.get())
}

/// Gives the other threads their turn.
pub fn pause(why: Pause) {
    let yielder = CURRENT.with(|c| c.yielder.get());
    assert!(
        !yielder.is_null(),
        "a virtual-GPU wait outside a kernel launch"
    );
    // SAFETY: set by the scheduler to the running coroutine's yielder, which lives while the
    // coroutine runs, and the coroutine is the caller.
    unsafe { &*yielder }.suspend(why);
}

/// Waits (letting the others run) until `ready` holds.
fn wait_until(what: Wait, mut ready: impl FnMut(&mut TeamState) -> bool) {
    let me = thread() as usize;
    loop {
        if with_team(|t| ready(t)) {
            with_team(|t| t.waiting[me] = None);
            return;
        }
        with_team(|t| {
            t.waiting[me] = Some(what);
            t.blocked_checks[me] += 1;
        });
        pause(Pause::Blocked(what));
    }
}

/// `bar.sync 0`: every thread of the team that has not exited.
pub fn team_barrier() {
    let me = thread();
    let generation = with_team(|t| {
        t.progress += 1;
        t.note_team_barrier_arrival(me);
        let phase = t.team_barrier.arrive(1, t.live);
        if t.team_barrier.generation != phase {
            t.team_barrier_passed();
        }
        phase
    });
    wait_until(Wait::TeamBarrier, |t| {
        t.team_barrier.generation != generation
    });
}

/// Around a call of `__kmpc_barrier` in the image (an OpenMP barrier, explicit or the end of a
/// worksharing construct): `entering` 1 before it with its site, 0 after it.
///
/// # Safety
/// `site` is the image's site constant (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_omp_barrier(entering: i32, site: *const VgpuAccessSite) {
    let me = thread() as usize;
    with_team(|t| {
        let called_from = core::mem::replace(&mut t.barrier_call[me], core::ptr::null());
        t.omp_barrier[me] = match entering {
            0 => core::ptr::null(),
            _ if !called_from.is_null() => called_from,
            _ => site,
        };
    });
}

/// Before a call of `__kmpc_barrier` that the image did not inline: the call's site, which the
/// barrier's mark inside the runtime (whose code has no source lines) takes as its own.
///
/// # Safety
/// `site` is the image's site constant.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_omp_barrier_call(site: *const VgpuAccessSite) {
    let me = thread() as usize;
    with_team(|t| t.barrier_call[me] = site);
}

/// `barrier.sync id, count`: `count` threads.
pub fn named_barrier(id: u32, count: u32) {
    let id = (id & 15) as usize;
    let (generation, whole_team) = with_team(|t| {
        t.progress += 1;
        let whole_team = count >= t.live;
        let phase = t.named[id].arrive(1, count);
        met(
            whole_team,
            phase,
            t.named[id].generation,
            racecheck::Meeting::Named(id as u32, phase),
        );
        (phase, whole_team)
    });
    wait_until(Wait::NamedBarrier, |t| t.named[id].generation != generation);
    if !whole_team {
        racecheck::depart(racecheck::Meeting::Named(id as u32, generation));
    }
}

/// For racecheck, a thread arrived at a meeting: all the team's threads (`whole_team`), whose
/// completion (`phase` ended: `generation` moved on) orders everything, or some of them.
fn met(whole_team: bool, phase: u64, generation: u64, meeting: racecheck::Meeting) {
    if !whole_team {
        racecheck::arrive(meeting);
    } else if generation != phase {
        racecheck::whole_team_met();
    }
}

pub fn mbarrier_init(address: usize, count: u32) {
    with_team(|t| {
        t.mbarriers
            .insert(address, (count.max(1), Meeting::default()));
    });
}

pub fn mbarrier_inval(address: usize) {
    with_team(|t| {
        t.mbarriers.remove(&address);
    });
}

/// `mbarrier.arrive` and the wait for its phase.
pub fn mbarrier_arrive_and_wait(address: usize) {
    let generation = with_team(|t| {
        let live = t.live;
        let (count, m) = t.mbarriers.get_mut(&address)?;
        let whole_team = *count >= live;
        let phase = m.arrive(1, *count);
        met(
            whole_team,
            phase,
            m.generation,
            racecheck::Meeting::Mbarrier(address, phase),
        );
        t.progress += 1;
        Some((phase, whole_team))
    });
    let Some((generation, whole_team)) = generation else {
        eprintln!(
            "rustomp virtual GPU: thread {} arrived at an mbarrier at {address:#x} that was never set up (mbarrier.init)",
            thread()
        );
        crate::__vgpu_trap();
    };
    wait_until(Wait::Mbarrier, |t| {
        t.mbarriers
            .get(&address)
            .is_none_or(|(_, m)| m.generation != generation)
    });
    if !whole_team {
        racecheck::depart(racecheck::Meeting::Mbarrier(address, generation));
    }
}

/// The lanes of `mask` in the caller's warp meet; each gets every lane's `value` (lanes that
/// did not take part read as their old value). Returns the values and the lanes that met.
pub fn warp_exchange(mask: u64, value: u32) -> ([u32; 64], u64) {
    exchange(mask, value, false)
}

/// A warp meeting; `orders_memory`: a warp sync's, which racecheck sees.
fn exchange(mask: u64, value: u32, orders_memory: bool) -> ([u32; 64], u64) {
    let me = thread();
    let (w, lane) = with_team(|t| (me / t.warp, me % t.warp));
    let bit = 1u64 << lane;
    // A meeting still draining (a lane has left, others not yet) must end first.
    wait_until(Wait::WarpDraining, |t| t.warps[w as usize].departed == 0);
    with_team(|t| {
        let x = &mut t.warps[w as usize];
        x.values[lane as usize] = value;
        x.arrived |= bit;
        t.progress += 1;
    });
    if orders_memory {
        racecheck::arrive(racecheck::Meeting::Warp(w));
    }
    wait_until(Wait::WarpMeeting, |t| {
        let need = (mask | bit) & t.live_lanes(w);
        t.warps[w as usize].arrived & need == need
    });
    let exchanged = with_team(|t| {
        let live = t.live_lanes(w);
        let x = &mut t.warps[w as usize];
        let values = x.values;
        // The lanes that took part: those that arrived (one may have exited since).
        let met = x.arrived & (mask | bit);
        x.departed |= bit;
        t.progress += 1;
        if x.departed & live == x.arrived & live {
            x.arrived = 0;
            x.departed = 0;
        }
        (values, met)
    });
    if orders_memory {
        racecheck::depart(racecheck::Meeting::Warp(w));
    }
    exchanged
}

/// `bar.warp.sync`: the lanes of `mask` meet, and (unlike a shuffle or a vote, which only
/// exchange values) what each did before is ordered before what each does after, for racecheck.
pub fn warp_sync(mask: u64) {
    let _ = exchange(mask, 0, true);
}

/// The lanes of the caller's warp that have not exited.
pub fn active_lanes() -> u64 {
    let me = thread();
    with_team(|t| t.live_lanes(me / t.warp))
}

/// `activemask`: the lanes of the caller's warp that ask it together. A GPU answers the lanes
/// executing the instruction in step; here a lane waits until each other live lane of its warp
/// also asks, or waits at another meeting, or spins, and the answer is the lanes that asked.
/// So lanes that left a loop early (waiting at a barrier after it) are not in the mask of the
/// lanes still in it, as on a GPU with independent thread scheduling.
pub fn converged_lanes() -> u64 {
    lanes_together(false)
}

/// The lanes of an amdgcn wavefront that execute a cross-lane operation together (its
/// execution mask): as [`converged_lanes`], but a lane that a meeting or a spin-wait may have
/// let through and that has not looked again since (it still shows as waiting or spinning
/// there), or that is still leaving a warp meeting that is over, is on its way, not elsewhere. A wavefront runs in lock step: the lanes of one
/// shuffle are all in the next, which a lane that came out of the last meeting first must not
/// take for divergence.
pub fn executing_lanes() -> u64 {
    lanes_together(true)
}

/// `on_their_way`: lanes let through a meeting they have not left yet are waited for.
fn lanes_together(on_their_way: bool) -> u64 {
    let me = thread();
    let (w, lane) = with_team(|t| (me / t.warp, me % t.warp));
    let bit = 1u64 << lane;
    wait_until(Wait::LanesDraining, |t| {
        let x = &t.warps[w as usize];
        x.converged_departed == 0 && x.closed == 0
    });
    let checks_on_arrival = with_team(|t| {
        t.warps[w as usize].converged |= bit;
        t.progress += 1;
        let base = (w * t.warp) as usize;
        let lanes = (t.threads as usize - base).min(t.warp as usize);
        let mut checks = [0u64; 64];
        checks[..lanes].copy_from_slice(&t.blocked_checks[base..base + lanes]);
        checks
    });
    wait_until(Wait::LanesTogether, |t| {
        let base = w * t.warp;
        let live = t.live_lanes(w);
        let x = &t.warps[w as usize];
        if x.closed != 0 {
            return true;
        }
        let together = (0..64u32).filter(|l| live & (1 << l) != 0).all(|l| {
            let thread = (base + l) as usize;
            let leaving_a_meeting = x.departed != 0 && x.arrived & (1 << l) != 0;
            // Waiting at a meeting that let it through since this lane arrived is not
            // waiting: it has not looked again yet.
            let looked_since = t.blocked_checks[thread] > checks_on_arrival[l as usize];
            let on_its_way = on_their_way
                && (!looked_since
                    || match t.waiting[thread] {
                        Some(Wait::WarpDraining) => true,
                        Some(Wait::WarpMeeting) => leaving_a_meeting,
                        _ => false,
                    });
            let elsewhere = t.spinning[thread]
                || t.waiting[thread]
                    .is_some_and(|what| !matches!(what, Wait::LanesDraining | Wait::LanesTogether));
            x.converged & (1 << l) != 0 || (elsewhere && !on_its_way)
        });
        if together && on_their_way {
            // One mask for the whole round: the lanes leave one by one, and one that came
            // late must not widen the mask the first ones left with.
            let x = &mut t.warps[w as usize];
            x.closed = x.converged;
        }
        together
    });
    with_team(|t| {
        let x = &mut t.warps[w as usize];
        let mask = if x.closed != 0 { x.closed } else { x.converged };
        x.converged_departed |= bit;
        t.progress += 1;
        if x.converged_departed == mask {
            x.converged = 0;
            x.converged_departed = 0;
            x.closed = 0;
        }
        mask
    })
}

/// Runs team `block` of `blocks`: `threads` fibers (warps of `warp`) each calling `body`, until
/// all return. `Err` describes a deadlock: where each waiting thread waits.
pub fn run_team(
    block: u32,
    blocks: u32,
    threads: u32,
    warp: u32,
    family: Family,
    stack_bytes: usize,
    body: impl Fn() + Clone + 'static,
) -> Result<(), String> {
    TEAM.with(|t| *t.borrow_mut() = Some(TeamState::new(block, blocks, threads, warp, family)));
    let mut fibers: Vec<Option<Coroutine<(), Pause, ()>>> = (0..threads)
        .map(|_| {
            let stack = pooled_stack(stack_bytes);
            let body = body.clone();
            Some(Coroutine::with_stack(
                stack,
                move |yielder: &Yielder<(), Pause>, ()| {
                    CURRENT.with(|c| c.yielder.set(yielder));
                    body();
                },
            ))
        })
        .collect();
    let outcome = loop {
        let mut live = 0;
        let mut stuck = true;
        let progress_before = with_team(|t| t.progress);
        for (t, slot) in fibers.iter_mut().enumerate() {
            let Some(fiber) = slot else { continue };
            live += 1;
            CURRENT.with(|c| c.thread.set(t as u32));
            with_team(|team| team.spinning[t] = false);
            match fiber.resume(()) {
                CoroutineResult::Yield(Pause::Blocked(_)) => {}
                CoroutineResult::Yield(Pause::Spinning) => {
                    stuck = false;
                    with_team(|team| {
                        team.spinning[t] = true;
                        team.blocked_checks[t] += 1;
                    });
                }
                CoroutineResult::Return(()) => {
                    stuck = false;
                    with_team(|team| team.exit(t as u32));
                    if let Some(done) = slot.take() {
                        STACKS
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(done.into_stack());
                    }
                }
            }
        }
        if live == 0 {
            break Ok(());
        }
        if stuck && with_team(|t| t.progress) == progress_before {
            break Err(with_team(deadlock_report));
        }
    };
    CURRENT.with(|c| c.yielder.set(core::ptr::null()));
    // A deadlocked team's fibers are dropped unfinished (their stacks unwound by corosensei
    // forcing them to return is not possible through the kernel's C frames: leak them).
    for fiber in fibers.into_iter().flatten() {
        std::mem::forget(fiber);
    }
    let divergence = TEAM.with(|t| t.borrow_mut().take().and_then(|t| t.divergence));
    match (outcome, divergence) {
        (Ok(()), Some(why)) => Err(why),
        (outcome, _) => outcome,
    }
}

/// Where each thread of a deadlocked team waits, as ranges of threads.
fn deadlock_report(t: &mut TeamState) -> String {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for thread in 0..t.threads {
        let place = if t.exited[thread as usize] {
            "have returned from the kernel".to_string()
        } else {
            match t.waiting[thread as usize] {
                Some(what) => format!("wait at {}", what.describe(t.family)),
                None => "are elsewhere".to_string(),
            }
        };
        match groups.iter_mut().find(|(p, _)| *p == place) {
            Some((_, list)) => list.push(thread),
            None => groups.push((place, vec![thread])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(place, list)| format!("threads {} {place}", ranges(list)))
        .collect();
    let lanes_meet_at = match t.family {
        Family::Nvptx => "warp",
        Family::Amdgcn => "wavefront",
    };
    format!(
        "team {} of {}: no thread can go on (a barrier or {lanes_meet_at} operation that not all the threads it counts reach): {}",
        t.block,
        t.blocks,
        parts.join("; ")
    )
}

/// `0-31,64,96-127`.
fn ranges(list: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let start = list[i];
        let mut end = start;
        while i + 1 < list.len() && list[i + 1] == end + 1 {
            i += 1;
            end = list[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn run(threads: u32, body: impl Fn() + Clone + 'static) -> Result<(), String> {
        run_team(0, 1, threads, 32, Family::Nvptx, 64 << 10, body)
    }

    #[test]
    fn a_barrier_holds_every_thread_until_the_last_arrives() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let l = Rc::clone(&log);
        run(64, move || {
            l.borrow_mut().push(('a', thread()));
            team_barrier();
            l.borrow_mut().push(('b', thread()));
        })
        .unwrap();
        let log = log.borrow();
        let first_b = log.iter().position(|(p, _)| *p == 'b').unwrap();
        assert_eq!(first_b, 64, "every 'a' before any 'b'");
    }

    #[test]
    fn threads_that_returned_are_not_waited_for() {
        run(64, || {
            if thread() >= 40 {
                return;
            }
            team_barrier();
            team_barrier();
        })
        .unwrap();
    }

    #[test]
    fn a_barrier_in_divergent_code_is_reported_as_a_deadlock() {
        let err = run(64, || {
            if thread() < 32 {
                team_barrier();
            } else {
                let _ = warp_exchange(!0, 0);
                named_barrier(1, 64);
            }
        })
        .unwrap_err();
        assert!(
            err.contains("threads 0-31 wait at the team barrier"),
            "{err}"
        );
        assert!(
            err.contains("threads 32-63 wait at a named barrier"),
            "{err}"
        );
    }

    #[test]
    fn a_deadlock_is_reported_in_the_familys_words() {
        // amdgcn code cannot build this deadlock (its workgroup barrier counts arrivals, and
        // its cross-lane operations take the lanes that reach them): the team's report of a
        // barrier half the team waits at names it as amdgcn's, not as PTX.
        let err = run_team(0, 1, 64, 64, Family::Amdgcn, 64 << 10, || {
            if thread() < 32 {
                team_barrier();
            } else {
                named_barrier(1, 64);
            }
        })
        .unwrap_err();
        assert!(err.contains("a barrier or wavefront operation"), "{err}");
        assert!(
            err.contains("threads 0-31 wait at the workgroup barrier (s_barrier)"),
            "{err}"
        );
        assert!(!err.contains("bar.sync 0"), "{err}");
    }

    #[test]
    fn activemask_names_the_lanes_that_ask_together() {
        let masks = Rc::new(RefCell::new(vec![0u64; 32]));
        let m = Rc::clone(&masks);
        run(32, move || {
            let me = thread();
            m.borrow_mut()[me as usize] = converged_lanes();
            if me < 8 {
                // Lanes 0-7 go round once more while the others wait at the barrier.
                let again = converged_lanes();
                assert_eq!(again, 0xff);
                let _ = warp_exchange(again, me);
            }
            team_barrier();
        })
        .unwrap();
        assert!(masks.borrow().iter().all(|&m| m == u32::MAX as u64));
    }

    #[test]
    fn warp_lanes_exchange_values() {
        let seen = Rc::new(RefCell::new(vec![0u32; 64]));
        let s = Rc::clone(&seen);
        run(64, move || {
            let me = thread();
            let (values, met) = warp_exchange(!0, me * 10);
            assert_eq!(met, u32::MAX as u64);
            let lane = me % 32;
            s.borrow_mut()[me as usize] = values[((lane + 1) % 32) as usize];
        })
        .unwrap();
        let seen = seen.borrow();
        assert_eq!(seen[0], 10);
        assert_eq!(seen[31], 0);
        assert_eq!(seen[32], 330);
    }
}
