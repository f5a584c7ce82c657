//! Reused lists for the per-construct path: every construct gathers its items, their steps,
//! its copies, undo records and kernel arguments in short lists, which would cost a heap
//! allocation and a free each (about ten per region). A [`Scratch`] list is taken from a pool of
//! the calling thread and goes back to it, emptied but with its capacity, when dropped; a
//! thread that needs more at once (a nested construct) gets more, and a list that grew past
//! [`KEPT_CAPACITY`] is freed instead of kept. Behaviour does not change, only where the memory
//! comes from.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::thread::LocalKey;

/// Lists longer than this are not kept for reuse (a construct with thousands of items).
pub(super) const KEPT_CAPACITY: usize = 256;
/// Lists of one kind a thread keeps (nested constructs take more than one at a time).
const KEPT_LISTS: usize = 4;

/// The pools of one element type.
pub(super) type Pool<T> = LocalKey<RefCell<Vec<Vec<T>>>>;

/// A list from the thread's pool of `T` lists, given back when dropped.
pub struct Scratch<T: 'static> {
    list: Vec<T>,
    pool: &'static Pool<T>,
}

impl<T: 'static> Scratch<T> {
    /// An empty list from `pool` (a new one when the pool is empty or, at thread exit, gone).
    pub(super) fn take(pool: &'static Pool<T>) -> Self {
        let list = pool
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        Scratch { list, pool }
    }
}

impl<T: 'static> Drop for Scratch<T> {
    fn drop(&mut self) {
        if self.list.capacity() == 0 || self.list.capacity() > KEPT_CAPACITY {
            return;
        }
        self.list.clear();
        let list = std::mem::take(&mut self.list);
        let _ = self.pool.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < KEPT_LISTS {
                    p.push(list);
                }
            }
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

/// Declares a thread-local pool of `Vec<$t>` lists named `$name`.
macro_rules! pool {
    ($($name:ident: $t:ty;)*) => {
        $(
            thread_local! {
                pub(super) static $name: std::cell::RefCell<Vec<Vec<$t>>> =
                    const { std::cell::RefCell::new(Vec::new()) };
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
    fn long_lists_are_not_kept() {
        let mut a = Scratch::take(&NUMBERS);
        a.extend(0..(KEPT_CAPACITY as u32 + 1));
        drop(a);
        assert!(Scratch::take(&NUMBERS).capacity() <= KEPT_CAPACITY);
    }
}
