//! The mapping table's map from host address to record. A program maps a few objects at a
//! time far more often than thousands: while the map is small it is a sorted vector of keys (a
//! binary search over contiguous keys, no node allocation per insert) beside the values, which
//! never move on insert; past [`SMALL_MAX`] entries a B-tree (inserts and removes stay
//! logarithmic with 100 000 entries). It goes back to vectors once it has shrunk to
//! [`SMALL_AGAIN`] entries; the gap keeps a map at the threshold from converting on every
//! insert and remove.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

/// The most entries kept in vectors (an insert moves up to this many keys, 16 bytes each).
pub(super) const SMALL_MAX: usize = 64;
/// A B-tree that shrank to this many entries becomes vectors again.
pub(super) const SMALL_AGAIN: usize = 16;

#[derive(Debug)]
pub(super) struct SortedMap<V> {
    repr: Repr<V>,
}

#[derive(Debug)]
enum Repr<V> {
    Small(Small<V>),
    Large(BTreeMap<usize, V>),
}

/// `keys` sorted and distinct, each with the index of its value in `values` (which holds
/// each value beside its key, in no order).
#[derive(Debug)]
struct Small<V> {
    keys: Vec<(usize, usize)>,
    values: Vec<(usize, V)>,
    /// Where in `keys` the last key asked for was: a construct asks for the same entry several
    /// times in a row (look it up, count, copy, remove), and this answers without a search.
    hint: Cell<usize>,
}

impl<V> Default for Small<V> {
    fn default() -> Self {
        Small {
            keys: Vec::new(),
            values: Vec::new(),
            hint: Cell::new(0),
        }
    }
}

impl<V> Small<V> {
    /// Where `key` is in `keys`, or where it would go.
    fn position(&self, key: usize) -> Result<usize, usize> {
        let hint = self.hint.get();
        if self.keys.get(hint).is_some_and(|&(k, _)| k == key) {
            return Ok(hint);
        }
        let found = self.keys.binary_search_by_key(&key, |&(k, _)| k);
        if let Ok(i) = found {
            self.hint.set(i);
        }
        found
    }

    fn get(&self, key: usize) -> Option<&V> {
        let i = self.position(key).ok()?;
        Some(&self.values[self.keys[i].1].1)
    }

    fn get_mut(&mut self, key: usize) -> Option<&mut V> {
        let i = self.position(key).ok()?;
        Some(&mut self.values[self.keys[i].1].1)
    }

    /// The entry at position `i` of `keys` (the next one asked for, likely).
    fn at(&self, i: usize) -> Option<(usize, &V)> {
        let &(key, slot) = self.keys.get(i)?;
        self.hint.set(i);
        Some((key, &self.values[slot].1))
    }

    fn remove(&mut self, key: usize) -> Option<V> {
        let i = self.position(key).ok()?;
        let (_, slot) = self.keys.remove(i);
        let (_, value) = self.values.swap_remove(slot);
        // The last value moved into `slot`: its key follows it.
        if let Some(&(moved, _)) = self.values.get(slot) {
            let j = self.position(moved).expect("every value has its key");
            self.keys[j].1 = slot;
        }
        Some(value)
    }

    fn into_tree(self) -> BTreeMap<usize, V> {
        self.values.into_iter().collect()
    }

    fn from_tree(tree: BTreeMap<usize, V>) -> Self {
        let values: Vec<(usize, V)> = tree.into_iter().collect();
        let keys = values
            .iter()
            .enumerate()
            .map(|(i, &(k, _))| (k, i))
            .collect();
        Small {
            keys,
            values,
            hint: Cell::new(0),
        }
    }
}

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap {
            repr: Repr::Small(Small::default()),
        }
    }
}

impl<V> SortedMap<V> {
    pub(super) fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.keys.len(),
            Repr::Large(m) => m.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn get(&self, key: usize) -> Option<&V> {
        match &self.repr {
            Repr::Small(s) => s.get(key),
            Repr::Large(m) => m.get(&key),
        }
    }

    pub(super) fn get_mut(&mut self, key: usize) -> Option<&mut V> {
        match &mut self.repr {
            Repr::Small(s) => s.get_mut(key),
            Repr::Large(m) => m.get_mut(&key),
        }
    }

    /// Inserts or replaces the value at `key`; the replaced one is returned.
    pub(super) fn insert(&mut self, key: usize, value: V) -> Option<V> {
        match &mut self.repr {
            Repr::Small(s) => match s.position(key) {
                Ok(i) => Some(std::mem::replace(&mut s.values[s.keys[i].1].1, value)),
                Err(i) if s.keys.len() < SMALL_MAX => {
                    s.keys.insert(i, (key, s.values.len()));
                    s.values.push((key, value));
                    s.hint.set(i);
                    None
                }
                Err(_) => {
                    let mut tree = std::mem::take(s).into_tree();
                    tree.insert(key, value);
                    self.repr = Repr::Large(tree);
                    None
                }
            },
            Repr::Large(m) => m.insert(key, value),
        }
    }

    pub(super) fn remove(&mut self, key: usize) -> Option<V> {
        match &mut self.repr {
            Repr::Small(s) => s.remove(key),
            Repr::Large(m) => {
                let removed = m.remove(&key);
                if m.len() <= SMALL_AGAIN {
                    self.repr = Repr::Small(Small::from_tree(std::mem::take(m)));
                }
                removed
            }
        }
    }

    /// The entry with the greatest key at or below `key`.
    pub(super) fn at_or_below(&self, key: usize) -> Option<(usize, &V)> {
        match &self.repr {
            Repr::Small(s) => {
                let end = s.keys.partition_point(|&(k, _)| k <= key);
                s.at(end.checked_sub(1)?)
            }
            Repr::Large(m) => m.range(..=key).next_back().map(|(&k, r)| (k, r)),
        }
    }

    /// The entry with the greatest key below `key`.
    pub(super) fn below(&self, key: usize) -> Option<(usize, &V)> {
        match &self.repr {
            Repr::Small(s) => {
                let end = s.keys.partition_point(|&(k, _)| k < key);
                s.at(end.checked_sub(1)?)
            }
            Repr::Large(m) => m.range(..key).next_back().map(|(&k, r)| (k, r)),
        }
    }

    /// The entry with the least key at or above `key`.
    pub(super) fn at_or_above(&self, key: usize) -> Option<(usize, &V)> {
        match &self.repr {
            Repr::Small(s) => s.at(s.keys.partition_point(|&(k, _)| k < key)),
            Repr::Large(m) => m.range(key..).next().map(|(&k, r)| (k, r)),
        }
    }

    /// The entry with the least key above `key`.
    pub(super) fn above(&self, key: usize) -> Option<(usize, &V)> {
        match &self.repr {
            Repr::Small(s) => s.at(s.keys.partition_point(|&(k, _)| k <= key)),
            Repr::Large(m) => m
                .range((Excluded(key), Unbounded))
                .next()
                .map(|(&k, r)| (k, r)),
        }
    }

    /// The values in key order.
    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        let (small, large) = match &self.repr {
            Repr::Small(s) => (
                Some(s.keys.iter().map(|&(_, slot)| &s.values[slot].1)),
                None,
            ),
            Repr::Large(m) => (None, Some(m.values())),
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten())
    }

    #[cfg(test)]
    fn is_small(&self) -> bool {
        matches!(self.repr, Repr::Small(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every query of the map against a `BTreeMap` holding the same entries.
    fn assert_same(map: &SortedMap<u64>, model: &BTreeMap<usize, u64>, probes: &[usize]) {
        assert_eq!(map.len(), model.len());
        assert!(map.values().copied().eq(model.values().copied()));
        let pair = |e: Option<(&usize, &u64)>| e.map(|(&k, &v)| (k, v));
        let ours = |e: Option<(usize, &u64)>| e.map(|(k, &v)| (k, v));
        for &p in probes {
            assert_eq!(map.get(p), model.get(&p), "get {p}");
            assert_eq!(
                ours(map.at_or_below(p)),
                pair(model.range(..=p).next_back()),
                "at_or_below {p}"
            );
            assert_eq!(
                ours(map.below(p)),
                pair(model.range(..p).next_back()),
                "below {p}"
            );
            assert_eq!(
                ours(map.at_or_above(p)),
                pair(model.range(p..).next()),
                "at_or_above {p}"
            );
            let above = model.range((Excluded(p), Unbounded)).next();
            assert_eq!(ours(map.above(p)), pair(above), "above {p}");
        }
    }

    #[test]
    fn answers_as_a_btree_map_through_growth_and_shrinking() {
        let mut map = SortedMap::default();
        let mut model = BTreeMap::new();
        // A fixed pseudo-random sequence (LCG): inserts outnumber removes until the map is
        // past SMALL_MAX, then only removes until it is small again.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let mut was_large = false;
        for step in 0..3000 {
            let growing = step < 1000;
            let key = (next() % 300) * 16;
            let insert = growing && next() % 4 != 0;
            if insert {
                assert_eq!(map.insert(key, step as u64), model.insert(key, step as u64));
            } else {
                assert_eq!(map.remove(key), model.remove(&key));
            }
            was_large |= !map.is_small();
            if step % 97 == 0 {
                let probes: Vec<usize> = (0..40)
                    .map(|_| next() % 4900)
                    .chain([0, usize::MAX])
                    .collect();
                assert_same(&map, &model, &probes);
            }
            if let Some(v) = map.get_mut(key) {
                *v += 1;
                *model.get_mut(&key).unwrap() += 1;
            }
        }
        assert!(
            was_large,
            "the sequence must take the map past {SMALL_MAX} entries"
        );
        assert!(map.is_small(), "and back: {} entries", map.len());
        assert_same(&map, &model, &(0..4900).step_by(8).collect::<Vec<_>>());
    }

    #[test]
    fn converts_at_its_thresholds() {
        let mut map = SortedMap::default();
        for k in 0..SMALL_MAX {
            map.insert(k, ());
        }
        assert!(map.is_small());
        map.insert(SMALL_MAX, ());
        assert!(!map.is_small());
        for k in 0..SMALL_MAX + 1 - SMALL_AGAIN {
            map.remove(k);
            assert_eq!(
                map.is_small(),
                map.len() <= SMALL_AGAIN,
                "{} entries",
                map.len()
            );
        }
        assert!(map.is_small());
        assert_eq!(map.len(), SMALL_AGAIN);
        assert_eq!(
            map.at_or_above(0).map(|(k, _)| k),
            Some(SMALL_MAX + 1 - SMALL_AGAIN)
        );
    }
}
