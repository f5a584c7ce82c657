//! A `target data` region ends on the device it began on. Its begin and end are the same calls
//! as `target enter data` and `target exit data` (`__tgt_target_data_{begin,end}_mapper`), and
//! without a `device` clause both pass "the default device". When the region's body changes
//! the default device (`omp_set_default_device`), the end would resolve to the new one and
//! unmap there, leaving the region's data mapped on the device it began on. OpenMP fixes the
//! device when the construct is encountered.
//!
//! The compilers (clang-22 and flang-22) pass a region's begin and end the same map-type array
//! (one constant per construct), and `enter data` / `exit data` each their own: so each thread
//! remembers the device its begins resolved to by that array, and an end with the same array
//! and no device of its own takes the latest such begin's device. Regions nest per thread, so
//! the latest matching begin is the one this end closes. An `enter data` is remembered too but
//! never matched (its `exit data` has another array); the list is bounded.

use std::cell::RefCell;

/// Begins a thread remembers at most (the oldest go first).
const REMEMBERED: usize = 64;

/// What pairs a data begin with its end: the compiler's map-type array and its length.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key {
    map_types: usize,
    items: i32,
}

impl Key {
    pub fn new(map_types: *const i64, items: i32) -> Key {
        Key {
            map_types: map_types as usize,
            items,
        }
    }
}

#[derive(Clone, Copy)]
struct Begin {
    key: Key,
    device: i64,
}

thread_local! {
    static BEGINS: RefCell<Vec<Begin>> = const { RefCell::new(Vec::new()) };
}

/// A data begin with `key` resolved to `device`.
pub fn began(key: Key, device: i64) {
    BEGINS.with(|b| {
        let mut begins = b.borrow_mut();
        if begins.len() == REMEMBERED {
            begins.remove(0);
        }
        begins.push(Begin { key, device });
    });
}

/// The device a data end with this array must use: its region's begin's, when it matches one;
/// else `device_id` as given.
pub fn ending(key: Key, device_id: i64) -> i64 {
    BEGINS.with(|b| {
        let mut begins = b.borrow_mut();
        let Some(at) = begins.iter().rposition(|b| b.key == key) else {
            return device_id;
        };
        let begin = begins.remove(at);
        if device_id == rustomp_abi::device_id::UNDEFINED {
            begin.device
        } else {
            device_id
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(map_types: usize, items: i32) -> Key {
        Key::new(map_types as *const i64, items)
    }

    #[test]
    fn an_end_takes_its_begins_device_and_enter_exit_pairs_do_not_match() {
        let (region, enter, exit) = (key(0x1000, 2), key(0x2000, 1), key(0x3000, 1));
        began(region, 1);
        began(enter, 0); // an enter data inside the region
        assert_eq!(
            ending(exit, -1),
            -1,
            "exit data: its own array, the default device"
        );
        assert_eq!(ending(region, -1), 1, "the region ends where it began");
        assert_eq!(ending(region, -1), -1, "matched once");
        assert_eq!(ending(region, 3), 3, "an explicit device stays");
    }

    #[test]
    fn nested_regions_pair_innermost_first() {
        let region = key(0x4000, 1);
        began(region, 1);
        began(region, 2);
        assert_eq!(ending(region, -1), 2);
        assert_eq!(ending(region, -1), 1);
    }
}
