//! Watched team memory: accesses that the code under test declares (the compiler's transfer
//! array, variables a region shares), checked for the race compute-sanitizer's racecheck
//! reports on a GPU: a word written by one thread and read or written by another with no
//! hardware meeting (barrier, warp sync; see `Meeting`) between them. Races are collected and
//! reported when the launch ends (a panic in one emulated thread would leave the others
//! waiting at a barrier).

use super::this_thread::{geometry, CLOCK};
use core::cell::Cell;
use std::collections::HashMap;
use std::string::String;
use std::sync::Mutex;
use std::vec::Vec;

std::thread_local! {
    /// The calling thread's team's shadow (set while it runs in a launch).
    static SHADOW: Cell<*const Mutex<Shadow>> = const { Cell::new(core::ptr::null()) };
}

/// The calling thread runs in the team whose shadow is `shadow`, which outlives it: `leave`
/// comes before the team goes.
pub(super) fn enter(shadow: &Mutex<Shadow>) {
    SHADOW.with(|s| s.set(shadow));
}
pub(super) fn leave() {
    SHADOW.with(|s| s.set(core::ptr::null()));
}

fn team_shadow() -> &'static Mutex<Shadow> {
    let shadow = SHADOW.with(Cell::get);
    assert!(
        !shadow.is_null(),
        "device runtime called outside devicertl::arch::host::launch"
    );
    // SAFETY: set by `enter` from the team, which `launch` keeps alive until `leave`.
    unsafe { &*shadow }
}

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
        let mut shadow = team_shadow().lock().unwrap_or_else(|e| e.into_inner());
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
