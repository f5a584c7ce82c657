//! The device's own times of an operation, for OMPT device tracing.
//!
//! While a tool traces a device ([`set_wanted`], from the front), a backend whose driver can
//! time work on the device itself (CUDA events) records each kernel's and copy's start and end
//! there and leaves them here, per host thread ([`record`]); the front takes them after the
//! operation ([`take`]) and puts them in the trace record. Times are nanoseconds of the
//! device's `clock_ns` base. A backend that records nothing leaves the front to read the
//! device's clock around the operation (the CPU plugin's clock is the device's own).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

static WANTED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static LAST: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// Whether a tool traces any device: backends time their work only then.
pub fn wanted() -> bool {
    WANTED.load(Ordering::Relaxed)
}

pub fn set_wanted(on: bool) {
    WANTED.store(on, Ordering::Relaxed);
}

/// The device times of the operation this thread just finished.
pub fn record(start_ns: u64, end_ns: u64) {
    LAST.with(|l| l.set(Some((start_ns, end_ns))));
}

/// What the last operation recorded, once; `None` when its backend recorded nothing.
pub fn take() -> Option<(u64, u64)> {
    LAST.with(Cell::take)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_taken_once() {
        assert_eq!(take(), None);
        record(5, 9);
        assert_eq!(take(), Some((5, 9)));
        assert_eq!(take(), None);
    }
}
