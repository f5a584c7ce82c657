//! Reused lists for the per-construct path: every construct gathers its items, their steps,
//! its copies, undo records and kernel arguments in short lists, which would cost a heap
//! allocation and a free each (about ten per region). A [`Scratch`] list is taken from the
//! calling thread's spare list of its type and goes back there, emptied but with its capacity,
//! when dropped. A thread keeps one spare per type: a nested construct, which takes a second
//! list while the first is out, gets a new one, and the larger of the two is kept; a list that
//! grew past [`KEPT_CAPACITY`] is freed instead. Behaviour does not change, only where the
//! memory comes from. Lists that are usually empty (attachments, private copies) stay plain
//! `Vec`s: an empty `Vec` costs nothing, while taking a spare costs a thread-local access.

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::thread::LocalKey;

/// Lists longer than this are not kept for reuse (a construct with thousands of items).
pub(super) const KEPT_CAPACITY: usize = 256;

/// A thread's spare list of `T`.
pub(super) type Pool<T> = LocalKey<Cell<Vec<T>>>;

/// A list from the thread's spare list of `T`, given back when dropped.
pub struct Scratch<T: 'static> {
    list: Vec<T>,
    pool: &'static Pool<T>,
}

impl<T: 'static> Scratch<T> {
    /// An empty list: the thread's spare (a new one when it is out or, at thread exit, gone).
    pub(super) fn take(pool: &'static Pool<T>) -> Self {
        let list = pool.try_with(Cell::take).unwrap_or_default();
        Scratch { list, pool }
    }
}

impl<T: 'static> Drop for Scratch<T> {
    fn drop(&mut self) {
        let capacity = self.list.capacity();
        if capacity == 0 || capacity > KEPT_CAPACITY {
            return;
        }
        self.list.clear();
        let list = std::mem::take(&mut self.list);
        let _ = self.pool.try_with(|spare| {
            // Keep the larger of this list and a spare a nested construct gave back; the
            // other is freed when this closure ends.
            let other = spare.take();
            spare.set(if other.capacity() > capacity {
                other
            } else {
                list
            });
        });
    }
}

impl<T: 'static> Deref for Scratch<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.list
    }
}

impl<T: 'static> DerefMut for Scratch<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.list
    }
}

impl<T: 'static + std::fmt::Debug> std::fmt::Debug for Scratch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.list.fmt(f)
    }
}

/// Declares a thread's spare list of `$t` named `$name`.
macro_rules! pool {
    ($($name:ident: $t:ty;)*) => {
        $(
            thread_local! {
                pub(super) static $name: std::cell::Cell<Vec<$t>> =
                    const { std::cell::Cell::new(Vec::new()) };
            }
        )*
    };
}
pub(super) use pool;

#[cfg(test)]
mod tests {
    use super::*;

    pool! {
        NUMBERS: u32;
    }

    #[test]
    fn lists_come_back_empty_with_their_capacity() {
        let mut a = Scratch::take(&NUMBERS);
        a.extend([1, 2, 3]);
        let capacity = a.capacity();
        drop(a);
        let b = Scratch::take(&NUMBERS);
        assert!(b.is_empty());
        assert_eq!(b.capacity(), capacity, "the same list again");
        // Taken while `b` is out: another list.
        let c = Scratch::take(&NUMBERS);
        assert_eq!(c.capacity(), 0);
        drop((b, c));
    }

    #[test]
    fn of_two_lists_out_at_once_the_larger_is_kept() {
        let mut outer = Scratch::take(&NUMBERS);
        outer.extend(0..100);
        let mut inner = Scratch::take(&NUMBERS);
        inner.extend([1]);
        let large = outer.capacity();
        drop(outer);
        drop(inner);
        assert_eq!(Scratch::take(&NUMBERS).capacity(), large);
    }

    #[test]
    fn long_lists_are_not_kept() {
        let mut a = Scratch::take(&NUMBERS);
        a.extend(0..(KEPT_CAPACITY as u32 + 1));
        drop(a);
        assert!(Scratch::take(&NUMBERS).capacity() <= KEPT_CAPACITY);
    }
}
