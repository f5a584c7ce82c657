//! `omptarget::mapping::table::MappingTable` (the host library's) driven by a sequence of operations, checked after
//! each one against a model: a plain vector of entries searched linearly.
//!
//! Entries are created the way the front creates them: only where a lookup of their range finds
//! nothing (so entries never overlap), and the device copy starts `padding` bytes into its
//! allocation. Addresses come from a small window (so that entries meet and nest) placed either
//! low or against the top of the address space (so that a lookup's `begin + size` saturates;
//! no entry ends beyond it). Attached pointers are attached, detached and restored; busy ranges
//! (copies in flight) are marked and released by a few constructs, and `is_blocked` is checked
//! against the model for every lookup.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use omptarget::mapping::table::{Lookup, MapEntry, MappingTable, ShadowPointer};

const POINTER: usize = std::mem::size_of::<usize>();

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Insert {
        begin: u16,
        size: u16,
        base_before: u8,
        padding: u8,
        device: u16,
        hold: bool,
        infinite: bool,
        plain: bool,
    },
    Lookup {
        begin: u16,
        size: u16,
    },
    /// One more reference to the `n`-th entry (in address order).
    Retain {
        n: u8,
        hold: bool,
    },
    /// One reference less; the entry goes when it was the last one (LLVM's "is last").
    Release {
        n: u8,
        hold: bool,
        force: bool,
    },
    Remove {
        n: u8,
    },
    RemoveAt {
        begin: u16,
    },
    Attach {
        n: u8,
        offset: u16,
        value: u16,
    },
    Shadows {
        n: u8,
        offset: u16,
        size: u16,
    },
    /// Undo an attachment at a pointer inside the `n`-th entry, restoring another value or none.
    Detach {
        n: u8,
        offset: u16,
        restore: Option<u16>,
    },
    /// Copies in flight for `[begin, begin + size)` by construct `owner`.
    MarkBusy {
        begin: u16,
        size: u16,
        owner: u8,
    },
    Unbusy {
        owner: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Addresses start at 0x1000, or 0xffff bytes below the top of the address space.
    high: bool,
    ops: Vec<Op>,
}

/// A construct's busy range, as the table keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Busy {
    begin: usize,
    end: usize,
    owner: u64,
}

#[derive(Debug, Clone)]
struct Model {
    entry: MapEntry,
    base: usize,
    padding: usize,
    shadows: Vec<ShadowPointer>,
}

/// The specified lookup, by linear search.
fn model_lookup(model: &[Model], begin: usize, size: usize) -> Lookup {
    let end = begin.saturating_add(size);
    if size == 0 {
        // Inside an entry, or a zero-length entry at its own address.
        if let Some(m) = model.iter().find(|m| {
            let e = &m.entry;
            (e.host_begin <= begin && begin < e.host_end)
                || (e.host_begin == begin && e.host_end == begin)
        }) {
            return Lookup::Contained(m.entry.host_begin);
        }
        // In the extended range [base, begin) of the next entry.
        let next = model
            .iter()
            .filter(|m| m.entry.host_begin > begin)
            .min_by_key(|m| m.entry.host_begin);
        return match next {
            Some(m) if begin >= m.base => Lookup::Contained(m.entry.host_begin),
            _ => Lookup::Absent,
        };
    }
    if let Some(m) = model
        .iter()
        .find(|m| m.entry.host_begin <= begin && begin < m.entry.host_end)
    {
        let e = &m.entry;
        return if end <= e.host_end {
            Lookup::Contained(e.host_begin)
        } else {
            Lookup::PartialOverlap(e.host_begin)
        };
    }
    match model
        .iter()
        .filter(|m| begin < m.entry.host_begin && m.entry.host_begin < end)
        .min_by_key(|m| m.entry.host_begin)
    {
        Some(m) => Lookup::PartialOverlap(m.entry.host_begin),
        None => Lookup::Absent,
    }
}

/// The specified `is_blocked`: the range (at least one byte), or the entry a lookup of it
/// finds, overlaps a range another construct has busy.
fn model_blocked(model: &[Model], busy: &[Busy], begin: usize, size: usize, owner: u64) -> bool {
    let overlaps = |b: usize, e: usize| {
        busy.iter()
            .any(|r| r.owner != owner && r.begin < e && b < r.end)
    };
    if overlaps(begin, begin.saturating_add(size.max(1))) {
        return true;
    }
    match model_lookup(model, begin, size) {
        Lookup::Contained(key) | Lookup::PartialOverlap(key) => {
            let e = &model
                .iter()
                .find(|m| m.entry.host_begin == key)
                .expect("found in the model")
                .entry;
            overlaps(e.host_begin, e.host_end.max(e.host_begin.saturating_add(1)))
        }
        Lookup::Absent => false,
    }
}

fn sorted(mut shadows: Vec<ShadowPointer>) -> Vec<ShadowPointer> {
    shadows.sort_by_key(|s| s.host_address);
    shadows
}

fn check(table: &MappingTable, model: &[Model], busy: &[Busy]) {
    assert_eq!(table.has_busy(), !busy.is_empty());
    assert_eq!(table.len(), model.len());
    assert_eq!(table.is_empty(), model.is_empty());
    let entries: Vec<&MapEntry> = table.iter().collect();
    let expected: Vec<&MapEntry> = model.iter().map(|m| &m.entry).collect();
    assert_eq!(entries, expected, "entries in address order");
    for m in model {
        assert_eq!(table.get(m.entry.host_begin), Some(&m.entry));
        for s in &m.shadows {
            assert_eq!(table.shadow(m.entry.host_begin, s.host_address), Some(*s));
        }
    }
}

fuzz_target!(|input: Input| {
    let origin: usize = if input.high {
        usize::MAX - 0xffff
    } else {
        0x1000
    };
    let address = |offset: u16| origin + usize::from(offset);
    let mut table = MappingTable::new();
    // Sorted by host_begin, as the table iterates.
    let mut model: Vec<Model> = Vec::new();
    let mut busy: Vec<Busy> = Vec::new();
    for op in input.ops.into_iter().take(512) {
        match op {
            Op::Insert {
                begin,
                size,
                base_before,
                padding,
                device,
                hold,
                infinite,
                plain,
            } => {
                let (begin, size) = (address(begin), usize::from(size));
                // Host objects end inside the address space.
                let Some(end) = begin.checked_add(size) else {
                    continue;
                };
                if model_lookup(&model, begin, size) != Lookup::Absent {
                    continue;
                }
                // A zero-length entry at `begin` is not found by a sized lookup; the front never
                // creates zero-length entries, so neither does this (a second entry at the same
                // begin would replace the first).
                if model.iter().any(|m| m.entry.host_begin == begin) {
                    continue;
                }
                let padding = usize::from(padding);
                let entry = MapEntry {
                    host_begin: begin,
                    host_end: end,
                    device_begin: 0x4000_0000 + usize::from(device) * 0x100 + padding,
                    dynamic_refs: u64::from(!hold),
                    hold_refs: u64::from(hold),
                    infinite,
                    owned: !infinite,
                    name: 0,
                };
                let (base, padding) = if plain {
                    table.insert(entry.clone());
                    (begin, 0)
                } else {
                    let base = begin.saturating_sub(usize::from(base_before));
                    table.insert_mapped(entry.clone(), base, padding);
                    (base, padding)
                };
                let at = model.partition_point(|m| m.entry.host_begin < begin);
                model.insert(
                    at,
                    Model {
                        entry,
                        base,
                        padding,
                        shadows: Vec::new(),
                    },
                );
            }
            Op::Lookup { begin, size } => {
                let (begin, size) = (address(begin), usize::from(size));
                let expected = model_lookup(&model, begin, size);
                let found = table.lookup(begin, size);
                assert_eq!(found, expected, "lookup({begin:#x}, {size})");
                let contained = match expected {
                    Lookup::Contained(key) => model
                        .iter()
                        .find(|m| m.entry.host_begin == key)
                        .map(|m| &m.entry),
                    _ => None,
                };
                assert_eq!(table.find(begin, size), contained);
                for owner in 0..3 {
                    let blocked = model_blocked(&model, &busy, begin, size, owner);
                    assert_eq!(
                        table.is_blocked(begin, size, owner),
                        blocked,
                        "is_blocked({begin:#x}, {size}, {owner}) with {busy:?}"
                    );
                }
                if let Some(e) = contained {
                    assert_eq!(
                        e.device_address(begin),
                        e.device_begin
                            .wrapping_add(begin.wrapping_sub(e.host_begin))
                    );
                }
            }
            Op::Retain { n, hold } => {
                if model.is_empty() {
                    continue;
                }
                let i = usize::from(n) % model.len();
                let m = &mut model[i].entry;
                let e = table
                    .get_mut(m.host_begin)
                    .expect("modelled entry in the table");
                if hold {
                    e.hold_refs += 1;
                    m.hold_refs += 1;
                } else {
                    e.dynamic_refs += 1;
                    m.dynamic_refs += 1;
                }
                assert_eq!(e.total_refs(), m.dynamic_refs + m.hold_refs);
            }
            Op::Release { n, hold, force } => {
                if model.is_empty() {
                    continue;
                }
                let i = usize::from(n) % model.len();
                let m = &mut model[i].entry;
                let e = table
                    .get_mut(m.host_begin)
                    .expect("modelled entry in the table");
                let (this, other) = if hold {
                    (m.hold_refs, m.dynamic_refs)
                } else {
                    (m.dynamic_refs, m.hold_refs)
                };
                let last = !m.infinite && other == 0 && (force || this == 1);
                assert_eq!(e.is_last_reference(hold, force), last, "{m:?}");
                if last {
                    let key = m.host_begin;
                    let gone = model.remove(i);
                    let (entry, allocation) = table.remove_with_allocation(key).expect("removable");
                    assert_eq!(entry, gone.entry);
                    assert_eq!(allocation, gone.entry.device_begin - gone.padding);
                    assert!(table.get(key).is_none());
                    assert!(table.shadows_within(key, 0, usize::MAX).is_empty());
                } else {
                    let counter = if hold {
                        &mut e.hold_refs
                    } else {
                        &mut e.dynamic_refs
                    };
                    *counter = counter.saturating_sub(1);
                    let counter = if hold {
                        &mut m.hold_refs
                    } else {
                        &mut m.dynamic_refs
                    };
                    *counter = counter.saturating_sub(1);
                }
            }
            Op::Remove { n } => {
                if model.is_empty() {
                    continue;
                }
                let gone = model.remove(usize::from(n) % model.len());
                assert_eq!(table.remove(gone.entry.host_begin), Some(gone.entry));
            }
            Op::RemoveAt { begin } => {
                let begin = address(begin);
                let expected = model
                    .iter()
                    .position(|m| m.entry.host_begin == begin)
                    .map(|i| model.remove(i).entry);
                assert_eq!(table.remove(begin), expected);
            }
            Op::Attach { n, offset, value } => {
                if model.is_empty() {
                    // Nothing to attach to: refused.
                    let shadow = ShadowPointer {
                        host_address: address(offset),
                        device_address: 0,
                        device_value: 0,
                    };
                    assert!(!table.attach(address(offset), shadow));
                    continue;
                }
                let i = usize::from(n) % model.len();
                let m = &mut model[i];
                let size = m.entry.host_end - m.entry.host_begin;
                if size < POINTER {
                    continue;
                }
                // A pointer inside the entry.
                let host_address = m.entry.host_begin + usize::from(offset) % (size - POINTER + 1);
                let shadow = ShadowPointer {
                    host_address,
                    device_address: m.entry.device_address(host_address),
                    device_value: 0x7000_0000 + usize::from(value),
                };
                let changed = match m
                    .shadows
                    .iter_mut()
                    .find(|s| s.host_address == host_address)
                {
                    Some(s) if *s == shadow => false,
                    Some(s) => {
                        *s = shadow;
                        true
                    }
                    None => {
                        m.shadows.push(shadow);
                        true
                    }
                };
                assert_eq!(table.attach(m.entry.host_begin, shadow), changed);
            }
            Op::Shadows { n, offset, size } => {
                if model.is_empty() {
                    continue;
                }
                let m = &model[usize::from(n) % model.len()];
                let begin = m
                    .entry
                    .host_begin
                    .saturating_add(usize::from(offset))
                    .saturating_sub(0x80);
                let size = usize::from(size);
                let end = begin.saturating_add(size);
                let expected: Vec<ShadowPointer> = m
                    .shadows
                    .iter()
                    .filter(|s| s.host_address >= begin && s.host_address + POINTER <= end)
                    .copied()
                    .collect();
                assert_eq!(
                    sorted(table.shadows_within(m.entry.host_begin, begin, size)),
                    sorted(expected)
                );
            }
            Op::Detach { n, offset, restore } => {
                if model.is_empty() {
                    continue;
                }
                let i = usize::from(n) % model.len();
                let m = &mut model[i];
                let size = m.entry.host_end - m.entry.host_begin;
                if size < POINTER {
                    continue;
                }
                let host_address = m.entry.host_begin + usize::from(offset) % (size - POINTER + 1);
                let previous = restore.map(|value| ShadowPointer {
                    host_address,
                    device_address: m.entry.device_address(host_address),
                    device_value: 0x7000_0000 + usize::from(value),
                });
                m.shadows.retain(|s| s.host_address != host_address);
                m.shadows.extend(previous);
                table.detach(m.entry.host_begin, host_address, previous);
                assert_eq!(table.shadow(m.entry.host_begin, host_address), previous);
            }
            Op::MarkBusy { begin, size, owner } => {
                let begin = address(begin);
                let end = begin
                    .saturating_add(usize::from(size))
                    .max(begin.saturating_add(1));
                let owner = u64::from(owner % 3);
                let range = Busy { begin, end, owner };
                if !busy.contains(&range) {
                    busy.push(range);
                }
                table.mark_busy(begin, begin.saturating_add(usize::from(size)), owner);
            }
            Op::Unbusy { owner } => {
                let owner = u64::from(owner % 3);
                let had = busy.iter().any(|b| b.owner == owner);
                busy.retain(|b| b.owner != owner);
                assert_eq!(table.release(owner), had);
            }
        }
        check(&table, &model, &busy);
    }
});
