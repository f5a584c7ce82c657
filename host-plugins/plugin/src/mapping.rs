//! The host→device mapping table of one device, with LLVM's two reference counts.
//!
//! Pure bookkeeping: this module decides *what* happens to an entry (allocate, copy, free);
//! the front performs the device operations while it holds the table's lock.

use std::collections::BTreeMap;

/// One mapped host range `[host_begin, host_end)` and its device copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    pub host_begin: usize,
    pub host_end: usize,
    pub device_begin: usize,
    /// References from `map` clauses and `target enter/exit data`.
    pub dynamic_refs: u64,
    /// References from `ompx_hold` maps (structured regions only).
    pub hold_refs: u64,
    /// `declare target` globals and associated pointers: never removed by unmapping.
    pub infinite: bool,
    /// The runtime allocated `device_begin` (so it frees it on removal).
    pub owned: bool,
}

impl MapEntry {
    pub fn total_refs(&self) -> u64 {
        self.dynamic_refs + self.hold_refs
    }
    /// Device address of host address `host` inside this entry.
    pub fn device_address(&self, host: usize) -> usize {
        self.device_begin + (host - self.host_begin)
    }
}

/// What a lookup of `[begin, begin + size)` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Entirely inside the entry starting at this host address.
    Contained(usize),
    /// Overlaps the entry at this host address without being contained in it.
    PartialOverlap(usize),
    Absent,
}

#[derive(Debug, Default)]
pub struct MappingTable {
    entries: BTreeMap<usize, MapEntry>,
}

impl MappingTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn lookup(&self, begin: usize, size: usize) -> Lookup {
        let end = begin.saturating_add(size);
        if let Some((&key, entry)) = self.entries.range(..=begin).next_back() {
            let inside = begin < entry.host_end || (begin == key && entry.host_end == key);
            if inside {
                return if end <= entry.host_end { Lookup::Contained(key) } else { Lookup::PartialOverlap(key) };
            }
        }
        if size > 0 {
            if let Some((&key, _)) = self.entries.range(begin..).next() {
                if key < end {
                    return Lookup::PartialOverlap(key);
                }
            }
        }
        Lookup::Absent
    }

    pub fn get(&self, key: usize) -> Option<&MapEntry> {
        self.entries.get(&key)
    }

    pub fn get_mut(&mut self, key: usize) -> Option<&mut MapEntry> {
        self.entries.get_mut(&key)
    }

    /// The entry containing `[begin, begin + size)`, if any.
    pub fn find(&self, begin: usize, size: usize) -> Option<&MapEntry> {
        match self.lookup(begin, size) {
            Lookup::Contained(key) => self.entries.get(&key),
            _ => None,
        }
    }

    pub fn insert(&mut self, entry: MapEntry) {
        self.entries.insert(entry.host_begin, entry);
    }

    pub fn remove(&mut self, key: usize) -> Option<MapEntry> {
        self.entries.remove(&key)
    }

    pub fn iter(&self) -> impl Iterator<Item = &MapEntry> {
        self.entries.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(begin: usize, end: usize) -> MapEntry {
        MapEntry {
            host_begin: begin,
            host_end: end,
            device_begin: begin + 0x1000_0000,
            dynamic_refs: 1,
            hold_refs: 0,
            infinite: false,
            owned: true,
        }
    }

    #[test]
    fn contained_partial_and_absent() {
        let mut table = MappingTable::new();
        table.insert(entry(100, 200));
        table.insert(entry(300, 400));
        assert_eq!(table.lookup(100, 100), Lookup::Contained(100));
        assert_eq!(table.lookup(150, 10), Lookup::Contained(100));
        assert_eq!(table.lookup(199, 0), Lookup::Contained(100));
        assert_eq!(table.lookup(150, 100), Lookup::PartialOverlap(100));
        assert_eq!(table.lookup(50, 60), Lookup::PartialOverlap(100));
        assert_eq!(table.lookup(200, 100), Lookup::Absent);
        assert_eq!(table.lookup(200, 0), Lookup::Absent);
        assert_eq!(table.lookup(250, 60), Lookup::PartialOverlap(300));
        assert_eq!(table.find(310, 4).map(|e| e.device_address(310)), Some(310 + 0x1000_0000));
    }

    #[test]
    fn zero_length_entries_are_found_at_their_address() {
        let mut table = MappingTable::new();
        table.insert(entry(500, 500));
        assert_eq!(table.lookup(500, 0), Lookup::Contained(500));
        assert_eq!(table.lookup(501, 0), Lookup::Absent);
    }

    #[test]
    fn remove_empties_the_table() {
        let mut table = MappingTable::new();
        table.insert(entry(1, 2));
        assert_eq!(table.len(), 1);
        assert!(table.remove(1).is_some());
        assert!(table.is_empty());
    }
}
