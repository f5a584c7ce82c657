//! The host→device mapping table of one device, with LLVM's two reference counts.
//!
//! Pure bookkeeping: this module decides *what* happens to an entry (allocate, copy, free);
//! the front performs the device operations. It decides under the table's lock and copies
//! after releasing it, so transfers of different entries overlap; the host ranges whose data
//! is in flight meanwhile are marked busy ([`MappingTable::mark_busy`]), and another construct
//! that touches one of them waits until its owner releases it ([`MappingTable::is_blocked`]):
//! nobody sees an entry before its data arrived, nor reuses a range whose copy-back runs.
//!
//! Besides the entries themselves the table keeps, per entry, the base address clang gave when
//! the entry was created (a zero-length lookup of a pointer into the "extended" range
//! `[base, begin)` still finds the entry, as OpenMP's pointer initialization requires) and the
//! attached pointers inside it ([`ShadowPointer`]), so copies of the whole object never replace
//! a host pointer by a device address or a device pointer by a host address.
//!
//! A struct mapped member by member gets a device allocation that starts at the struct's
//! beginning (up to [`STRUCT_ROOM`] bytes before the first mapped member), so that a member of
//! the same struct mapped later by another construct gets its device copy at the same offset
//! from the struct's device copy ([`MappingTable::room_for`]): a region that maps one member
//! and uses the others through the struct finds all of them where it looks. Such an entry shares
//! its allocation, which goes only with the last entry using it.

use super::sorted_map::SortedMap;
use std::collections::HashMap;

/// The most bytes a partially mapped struct's device allocation reaches back before its first
/// mapped member, to the struct's beginning (beyond that, only the alignment padding).
pub const STRUCT_ROOM: usize = 64 * 1024;

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
    /// Address of the NUL-terminated name clang gave the item that created the entry
    /// (`;expression;file;line;column;;`) or of a global's symbol name; 0 when unknown. Static
    /// data of the registered program, only read for messages.
    pub name: usize,
}

impl MapEntry {
    /// An entry that unmapping never removes (`declare target` globals, indirect functions,
    /// associated pointers): `[host, host + bytes)` at `device`, owned by whoever made `device`
    /// (not this table), named by the C string at `name` (0: none).
    pub fn infinite(host: usize, bytes: usize, device: usize, name: usize) -> Self {
        MapEntry {
            host_begin: host,
            host_end: host + bytes,
            device_begin: device,
            dynamic_refs: 1,
            hold_refs: 0,
            infinite: true,
            owned: false,
            name,
        }
    }

    pub fn total_refs(&self) -> u64 {
        self.dynamic_refs + self.hold_refs
    }
    /// Device address of host address `host` relative to this entry. `host` may lie before the
    /// entry (a pointer to the base of a mapped section), hence the wrapping arithmetic.
    pub fn device_address(&self, host: usize) -> usize {
        self.device_begin
            .wrapping_add(host.wrapping_sub(self.host_begin))
    }
    /// Whether an unmap of this entry with the given counter is the one that removes it
    /// (LLVM's "is last"): the other counter is zero and this one would reach zero.
    pub fn is_last_reference(&self, hold: bool, force_delete: bool) -> bool {
        if self.infinite {
            return false;
        }
        let (this, other) = if hold {
            (self.hold_refs, self.dynamic_refs)
        } else {
            (self.dynamic_refs, self.hold_refs)
        };
        other == 0 && (force_delete || this == 1)
    }
}

/// A pointer stored inside a mapped object whose device copy points at a device pointee
/// (pointer attachment). Copies of the object keep the host and device values apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowPointer {
    /// Host address of the pointer variable.
    pub host_address: usize,
    /// Device address of the pointer variable's copy.
    pub device_address: usize,
    /// The device address stored in the device copy.
    pub device_value: usize,
}

/// What a lookup of `[begin, begin + size)` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Entirely inside the entry starting at this host address (for `size == 0`: inside it or
    /// inside its extended range starting at the entry's base).
    Contained(usize),
    /// Overlaps the entry at this host address without being contained in it.
    PartialOverlap(usize),
    Absent,
}

#[derive(Debug)]
struct Record {
    entry: MapEntry,
    host_base: usize,
    /// Bytes the device allocation starts before `entry.device_begin` (alignment padding, the
    /// room of a partially mapped struct, or where this entry lies in a shared allocation).
    padding: usize,
    shadows: Vec<ShadowPointer>,
}

/// A host range with device copies in flight, decided by construct `owner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BusyRange {
    begin: usize,
    end: usize,
    owner: u64,
}

#[derive(Debug, Default)]
pub struct MappingTable {
    records: SortedMap<Record>,
    /// Few at a time (one per entry with copies in flight): a list beats a tree here.
    busy: Vec<BusyRange>,
    /// Allocations that several entries share ([`room_for`](Self::room_for)): how many entries
    /// use each (two or more; an allocation of one entry is not listed).
    shared: HashMap<usize, usize>,
}

impl MappingTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn lookup(&self, begin: usize, size: usize) -> Lookup {
        let end = begin.saturating_add(size);
        let below = self.records.at_or_below(begin);
        // Asked for only when the entry below does not answer (a present item is found with
        // one search).
        let above = || self.records.above(begin);
        if size == 0 {
            if let Some((key, record)) = below {
                let entry = &record.entry;
                // A zero-length entry is found at its own address.
                if begin < entry.host_end || (begin == key && entry.host_end == key) {
                    return Lookup::Contained(key);
                }
            }
            // A pointer to the base of a section mapped further on (`p` for `p[3:2]`).
            return match above() {
                Some((key, record)) if begin >= record.host_base => Lookup::Contained(key),
                _ => Lookup::Absent,
            };
        }
        if let Some((key, record)) = below {
            if begin < record.entry.host_end {
                return if end <= record.entry.host_end {
                    Lookup::Contained(key)
                } else {
                    Lookup::PartialOverlap(key)
                };
            }
        }
        match above() {
            Some((key, _)) if key < end => Lookup::PartialOverlap(key),
            _ => Lookup::Absent,
        }
    }

    pub fn get(&self, key: usize) -> Option<&MapEntry> {
        self.records.get(key).map(|r| &r.entry)
    }

    pub fn get_mut(&mut self, key: usize) -> Option<&mut MapEntry> {
        self.records.get_mut(key).map(|r| &mut r.entry)
    }

    /// The entry containing `[begin, begin + size)`, if any.
    pub fn find(&self, begin: usize, size: usize) -> Option<&MapEntry> {
        match self.lookup(begin, size) {
            Lookup::Contained(key) => self.get(key),
            _ => None,
        }
    }

    /// Adds an entry whose base is its own begin (globals, associated pointers).
    pub fn insert(&mut self, entry: MapEntry) {
        let host_base = entry.host_begin;
        self.insert_mapped(entry, host_base, 0);
    }

    /// Adds an entry created for a list item whose base address is `host_base`; its device
    /// allocation starts `padding` bytes before `entry.device_begin`.
    pub fn insert_mapped(&mut self, entry: MapEntry, host_base: usize, padding: usize) {
        self.records.insert(
            entry.host_begin,
            Record {
                entry,
                host_base,
                padding,
                shadows: Vec::new(),
            },
        );
    }

    /// Removes an entry together with its attached pointers.
    pub fn remove(&mut self, key: usize) -> Option<MapEntry> {
        self.remove_with_allocation(key).map(|(entry, _)| entry)
    }

    /// Removes an entry together with its attached pointers; also returns where its device
    /// allocation starts.
    pub fn remove_with_allocation(&mut self, key: usize) -> Option<(MapEntry, usize)> {
        self.take(key)
            .map(|(entry, allocation, _)| (entry, allocation))
    }

    /// Removes an entry together with its attached pointers; also returns its device allocation
    /// when no other entry uses it (the memory to free), else `None`.
    pub fn remove_releasing(&mut self, key: usize) -> Option<(MapEntry, Option<usize>)> {
        self.take(key)
            .map(|(entry, allocation, last)| (entry, last.then_some(allocation)))
    }

    /// The removed entry, where its allocation starts, and whether it was the allocation's last
    /// user.
    fn take(&mut self, key: usize) -> Option<(MapEntry, usize, bool)> {
        let r = self.records.remove(key)?;
        let allocation = r.entry.device_begin - r.padding;
        let last = match self.shared.get_mut(&allocation) {
            Some(users) if *users > 2 => {
                *users -= 1;
                false
            }
            Some(_) => {
                self.shared.remove(&allocation);
                false
            }
            None => true,
        };
        Some((r.entry, allocation, last))
    }

    /// Device memory for `[begin, begin + size)`, a part of the struct at `host_base` that no
    /// entry maps, inside the allocation of an entry mapping a later part of the same struct:
    /// the device address of `begin` at the same offset from the struct's device copy as on the
    /// host. `None` when no such entry has room there (or the range is mapped).
    pub fn room_for(&self, begin: usize, size: usize, host_base: usize) -> Option<usize> {
        let end = begin.checked_add(size)?;
        let (key, record) = self.records.at_or_above(begin)?;
        let entry = &record.entry;
        let reaches = key - record.padding;
        let fits = !entry.infinite
            && entry.owned
            && record.host_base == host_base
            && reaches <= begin
            && end <= key
            && self
                .records
                .below(begin)
                .is_none_or(|(_, below)| below.entry.host_end <= begin);
        fits.then(|| entry.device_begin - (key - begin))
    }

    /// Adds an entry at `device_begin`, inside the allocation [`room_for`](Self::room_for)
    /// found; that allocation now goes with the last of the entries using it.
    pub fn insert_in_room(&mut self, entry: MapEntry, host_base: usize) {
        let (key, above) = self
            .records
            .at_or_above(entry.host_end)
            .expect("room_for found an entry above");
        let allocation = above.entry.device_begin - above.padding;
        let padding = entry.device_begin - allocation;
        debug_assert!(key - above.padding <= entry.host_begin);
        *self.shared.entry(allocation).or_insert(1) += 1;
        self.insert_mapped(entry, host_base, padding);
    }

    pub fn iter(&self) -> impl Iterator<Item = &MapEntry> {
        self.records.values().map(|r| &r.entry)
    }

    /// Records that the device copy of the pointer at `shadow.host_address` (inside entry `key`)
    /// now holds `shadow.device_value`. Returns false when it already did, so the caller can
    /// skip writing it again.
    pub fn attach(&mut self, key: usize, shadow: ShadowPointer) -> bool {
        let Some(record) = self.records.get_mut(key) else {
            return false;
        };
        match record
            .shadows
            .iter_mut()
            .find(|s| s.host_address == shadow.host_address)
        {
            Some(existing) if *existing == shadow => false,
            Some(existing) => {
                *existing = shadow;
                true
            }
            None => {
                record.shadows.push(shadow);
                true
            }
        }
    }

    /// Drops the attached pointer at `host_address` of entry `key` (undoing an [`attach`]
    /// whose copy failed), or restores `previous` when the attachment replaced one.
    ///
    /// [`attach`]: Self::attach
    pub fn detach(&mut self, key: usize, host_address: usize, previous: Option<ShadowPointer>) {
        let Some(record) = self.records.get_mut(key) else {
            return;
        };
        record.shadows.retain(|s| s.host_address != host_address);
        record.shadows.extend(previous);
    }

    /// The attached pointer recorded at `host_address` in entry `key`.
    pub fn shadow(&self, key: usize, host_address: usize) -> Option<ShadowPointer> {
        self.records
            .get(key)?
            .shadows
            .iter()
            .find(|s| s.host_address == host_address)
            .copied()
    }

    /// Marks `[begin, end)` busy for construct `owner` until [`release`](Self::release).
    pub fn mark_busy(&mut self, begin: usize, end: usize, owner: u64) {
        let end = end.max(begin.saturating_add(1));
        if !self.busy.contains(&BusyRange { begin, end, owner }) {
            self.busy.push(BusyRange { begin, end, owner });
        }
    }

    /// Ends every busy mark of construct `owner`; whether it had any.
    pub fn release(&mut self, owner: u64) -> bool {
        let before = self.busy.len();
        self.busy.retain(|b| b.owner != owner);
        self.busy.len() != before
    }

    /// Whether any range is busy (the common case, none, skips the per-item checks).
    pub fn has_busy(&self) -> bool {
        !self.busy.is_empty()
    }

    /// Whether a lookup of `[begin, begin + size)` by construct `owner` must wait: the range,
    /// or the entry the lookup finds (a zero-length lookup reaches entries through their base),
    /// overlaps a range another construct has copies in flight for.
    pub fn is_blocked(&self, begin: usize, size: usize, owner: u64) -> bool {
        if self.busy.is_empty() {
            return false;
        }
        let overlaps = |b: usize, e: usize| {
            self.busy
                .iter()
                .any(|r| r.owner != owner && r.begin < e && b < r.end)
        };
        if overlaps(begin, begin.saturating_add(size.max(1))) {
            return true;
        }
        match self.lookup(begin, size) {
            Lookup::Contained(key) | Lookup::PartialOverlap(key) => {
                let entry = &self.records.get(key).expect("looked up").entry;
                overlaps(
                    entry.host_begin,
                    entry.host_end.max(entry.host_begin.saturating_add(1)),
                )
            }
            Lookup::Absent => false,
        }
    }

    /// The attached pointers of entry `key` that lie entirely inside `[begin, begin + size)`.
    pub fn shadows_within(&self, key: usize, begin: usize, size: usize) -> Vec<ShadowPointer> {
        self.range_and_shadows(key, begin, size)
            .map_or_else(Vec::new, |(_, shadows)| shadows)
    }

    /// The host range of entry `key` and its attached pointers that lie entirely inside
    /// `[begin, begin + size)`.
    pub fn range_and_shadows(
        &self,
        key: usize,
        begin: usize,
        size: usize,
    ) -> Option<((usize, usize), Vec<ShadowPointer>)> {
        let r = self.records.get(key)?;
        Some((
            (r.entry.host_begin, r.entry.host_end),
            r.shadows_within(begin, size),
        ))
    }
}

impl Record {
    fn shadows_within(&self, begin: usize, size: usize) -> Vec<ShadowPointer> {
        if self.shadows.is_empty() {
            return Vec::new();
        }
        let pointer = std::mem::size_of::<usize>();
        let end = begin.saturating_add(size);
        self.shadows
            .iter()
            .filter(|s| s.host_address >= begin && s.host_address + pointer <= end)
            .copied()
            .collect()
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
            name: 0,
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
        assert_eq!(
            table.find(310, 4).map(|e| e.device_address(310)),
            Some(310 + 0x1000_0000)
        );
    }

    #[test]
    fn zero_length_entries_are_found_at_their_address() {
        let mut table = MappingTable::new();
        table.insert(entry(500, 500));
        assert_eq!(table.lookup(500, 0), Lookup::Contained(500));
        assert_eq!(table.lookup(501, 0), Lookup::Absent);
    }

    #[test]
    fn zero_length_lookups_reach_back_to_the_base() {
        // `q[3:2]` with q = 1000 and rows of 80 bytes: entry [1240, 1400), base 1000.
        let mut table = MappingTable::new();
        table.insert_mapped(entry(1240, 1400), 1000, 0);
        assert_eq!(table.lookup(1000, 0), Lookup::Contained(1240));
        assert_eq!(
            table.find(1000, 0).map(|e| e.device_address(1000)),
            Some(1000 + 0x1000_0000)
        );
        assert_eq!(table.lookup(999, 0), Lookup::Absent);
        // Sized lookups never use the extended range.
        assert_eq!(table.lookup(1000, 1), Lookup::Absent);
        assert_eq!(table.lookup(1239, 1), Lookup::Absent);
    }

    #[test]
    fn last_reference_follows_both_counters() {
        let mut e = entry(0, 8);
        assert!(e.is_last_reference(false, false));
        e.hold_refs = 1;
        assert!(!e.is_last_reference(false, false));
        assert!(!e.is_last_reference(false, true));
        e.dynamic_refs = 0;
        assert!(e.is_last_reference(true, false));
        e.dynamic_refs = 3;
        e.hold_refs = 0;
        assert!(!e.is_last_reference(false, false));
        assert!(e.is_last_reference(false, true));
        e.infinite = true;
        assert!(!e.is_last_reference(false, true));
    }

    #[test]
    fn attached_pointers_are_recorded_once_and_go_with_their_entry() {
        let mut table = MappingTable::new();
        table.insert(entry(100, 200));
        let shadow = ShadowPointer {
            host_address: 108,
            device_address: 0x1000_0000 + 108,
            device_value: 0x5000,
        };
        assert!(table.attach(100, shadow));
        assert!(!table.attach(100, shadow));
        assert!(table.attach(
            100,
            ShadowPointer {
                device_value: 0x6000,
                ..shadow
            }
        ));
        assert_eq!(table.shadows_within(100, 100, 100).len(), 1);
        assert_eq!(table.shadows_within(100, 100, 8).len(), 0);
        assert_eq!(table.shadows_within(100, 108, 8)[0].device_value, 0x6000);
        table.remove(100);
        table.insert(entry(100, 200));
        assert!(table.shadows_within(100, 100, 100).is_empty());
    }

    #[test]
    fn removal_reports_the_padded_allocation() {
        let mut table = MappingTable::new();
        table.insert_mapped(entry(108, 200), 100, 8);
        assert_eq!(
            table.remove_with_allocation(108),
            Some((entry(108, 200), 108 + 0x1000_0000 - 8))
        );
        assert!(table.is_empty());
    }

    #[test]
    fn members_before_a_partial_struct_share_its_allocation() {
        // struct at 1000: members [1024, 1032) mapped with the room back to the struct (24).
        let mut table = MappingTable::new();
        let outer = MapEntry {
            device_begin: 0x9000 + 24,
            ..entry(1024, 1032)
        };
        table.insert_mapped(outer, 1000, 24);
        // Another struct's member, a mapped range, a range past the room: no room.
        assert_eq!(table.room_for(1000, 4, 2000), None);
        assert_eq!(table.room_for(1020, 8, 1000), None);
        assert_eq!(table.room_for(996, 4, 1000), None);
        // The struct's first member: at the same offset on the device.
        assert_eq!(table.room_for(1000, 4, 1000), Some(0x9000));
        table.insert_in_room(
            MapEntry {
                device_begin: 0x9000,
                ..entry(1000, 1004)
            },
            1000,
        );
        assert_eq!(table.lookup(1000, 4), Lookup::Contained(1000));
        // A member between the two: still room, below the first entry's end it is mapped.
        assert_eq!(table.room_for(1002, 4, 1000), None);
        assert_eq!(table.room_for(1008, 8, 1000), Some(0x9008));
        table.insert_in_room(
            MapEntry {
                device_begin: 0x9008,
                ..entry(1008, 1016)
            },
            1000,
        );
        // The allocation goes with the last of its three entries, whichever order they leave.
        assert_eq!(
            table.remove_releasing(1024).map(|(_, free)| free),
            Some(None)
        );
        assert_eq!(
            table.remove_releasing(1000).map(|(_, free)| free),
            Some(None)
        );
        // The allocation lives on with its last entry, room before it included.
        assert_eq!(table.room_for(1004, 4, 1000), Some(0x9004));
        assert_eq!(
            table.remove_releasing(1008).map(|(_, free)| free),
            Some(Some(0x9000))
        );
        assert!(table.shared.is_empty());
        // An entry alone frees its allocation at once.
        table.insert_mapped(entry(1024, 1032), 1000, 0);
        assert_eq!(
            table
                .remove_releasing(1024)
                .map(|(e, free)| (e.host_begin, free)),
            Some((1024, Some(1024 + 0x1000_0000)))
        );
    }

    #[test]
    fn no_room_in_entries_the_runtime_did_not_allocate() {
        let mut table = MappingTable::new();
        let mut global = entry(1024, 1032);
        global.owned = false;
        table.insert_mapped(global, 1000, 24);
        assert_eq!(table.room_for(1000, 4, 1000), None);
    }

    #[test]
    fn busy_ranges_block_other_constructs_only() {
        let mut table = MappingTable::new();
        table.insert_mapped(entry(1240, 1400), 1000, 0);
        assert!(!table.has_busy());
        table.mark_busy(1240, 1400, 7);
        assert!(table.has_busy());
        assert!(table.is_blocked(1300, 4, 8));
        assert!(
            !table.is_blocked(1300, 4, 7),
            "a construct never waits for itself"
        );
        assert!(!table.is_blocked(1400, 8, 8));
        // A zero-length lookup of the base finds the busy entry.
        assert!(table.is_blocked(1000, 0, 8));
        // A removed entry's range stays busy while its copy-back runs.
        table.remove(1240);
        table.mark_busy(2000, 2000, 9);
        assert!(table.is_blocked(1240, 1, 8));
        assert!(
            table.is_blocked(2000, 0, 8),
            "a zero-length range blocks its own address"
        );
        assert!(table.release(7));
        assert!(!table.release(7));
        assert!(!table.is_blocked(1240, 160, 8));
        table.release(9);
        assert!(!table.has_busy());
    }

    #[test]
    fn detach_undoes_an_attachment() {
        let mut table = MappingTable::new();
        table.insert(entry(100, 200));
        let first = ShadowPointer {
            host_address: 108,
            device_address: 0x1000_0000 + 108,
            device_value: 0x5000,
        };
        table.attach(100, first);
        let second = ShadowPointer {
            device_value: 0x6000,
            ..first
        };
        table.attach(100, second);
        table.detach(100, 108, Some(first));
        assert_eq!(table.shadow(100, 108), Some(first));
        table.detach(100, 108, None);
        assert_eq!(table.shadow(100, 108), None);
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
