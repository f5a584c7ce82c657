//! The calling emulated thread: its place in the launch, its vector clock over the threads of
//! its team (see `barriers::Meeting`), and its team's abort flag. What the barriers and the race
//! checker read; set by `launch` around each emulated thread's run.

use core::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::vec::Vec;

#[derive(Clone, Copy)]
pub(super) struct Geometry {
    pub(super) thread: u32,
    pub(super) threads: u32,
    pub(super) block: u32,
    pub(super) blocks: u32,
    pub(super) warp: u32,
}

std::thread_local! {
    static GEOMETRY: Cell<Option<Geometry>> = const { Cell::new(None) };
    /// The thread's vector clock over the threads of its team.
    pub(super) static CLOCK: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// Its team's flag: a thread of the team panicked.
    static ABORTED: Cell<*const AtomicBool> = const { Cell::new(core::ptr::null()) };
}

/// The calling OS thread becomes emulated thread `place`, of the team whose abort flag is
/// `aborted` (which outlives it: `leave` comes before the team goes).
pub(super) fn enter(place: Geometry, aborted: &AtomicBool) {
    GEOMETRY.with(|g| g.set(Some(place)));
    ABORTED.with(|a| a.set(aborted));
    CLOCK.with(|c| {
        let mut c = c.borrow_mut();
        *c = std::vec![0; place.threads as usize];
        c[place.thread as usize] = 1;
    });
}

pub(super) fn leave() {
    ABORTED.with(|a| a.set(core::ptr::null()));
    GEOMETRY.with(|g| g.set(None));
}

pub(super) fn geometry() -> Geometry {
    GEOMETRY
        .with(Cell::get)
        .expect("device runtime called outside devicertl::arch::host::launch")
}

/// Gives up with a panic when another thread of the team panicked (else a failed assertion in
/// one emulated thread would leave the others waiting for it forever).
pub(super) fn check_aborted() {
    let aborted = ABORTED.with(Cell::get);
    assert!(
        !aborted.is_null(),
        "device runtime called outside devicertl::arch::host::launch"
    );
    // SAFETY: set by `enter` from the team, which `launch` keeps alive until `leave`.
    if unsafe { &*aborted }.load(Ordering::Relaxed) {
        panic!("emulated kernel abandoned: another thread of the team panicked");
    }
}
