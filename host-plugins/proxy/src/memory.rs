//! What memory of a device the application may name: the allocations this proxy made for it
//! and the globals of its loaded images. A copy whose range is not inside one of them is
//! refused before any byte moves, so a wrong or corrupted address in a request cannot make
//! the proxy write over its own memory.

use std::collections::BTreeMap;

#[derive(Default)]
pub struct Ranges {
    /// Start → length, non-overlapping for allocations; globals may repeat.
    ranges: BTreeMap<u64, u64>,
}

impl Ranges {
    pub fn add(&mut self, start: u64, len: u64) {
        let len = len.max(1);
        let entry = self.ranges.entry(start).or_insert(len);
        *entry = (*entry).max(len);
    }

    /// Forgets the range that starts exactly at `start`; false when there is none.
    pub fn remove(&mut self, start: u64) -> bool {
        self.ranges.remove(&start).is_some()
    }

    /// Whether `[start, start + len)` lies inside one known range.
    pub fn contains(&self, start: u64, len: u64) -> bool {
        let Some(end) = start.checked_add(len) else {
            return false;
        };
        self.ranges
            .range(..=start)
            .next_back()
            .is_some_and(|(&base, &size)| end <= base.saturating_add(size))
    }
}

#[cfg(test)]
mod tests {
    use super::Ranges;

    #[test]
    fn inside_one_range_only() {
        let mut r = Ranges::default();
        r.add(1000, 100);
        r.add(2000, 8);
        assert!(r.contains(1000, 100));
        assert!(r.contains(1050, 50));
        assert!(!r.contains(1050, 51));
        assert!(!r.contains(999, 2));
        assert!(!r.contains(1100, 1));
        assert!(r.contains(2000, 8));
        assert!(!r.contains(u64::MAX - 1, 4));
        assert!(r.remove(1000));
        assert!(!r.contains(1000, 1));
        assert!(!r.remove(1000));
    }
}
