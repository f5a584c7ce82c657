//! Short lists for the per-construct path. Every construct gathers its items, their steps, its
//! copies, undo records and kernel arguments in lists of about as many elements as the construct
//! has map items: a few. Kept inline (on the stack) up to [`INLINE`] elements, they cost neither
//! a heap allocation nor a thread-local access; a construct with more items spills to the heap,
//! once per list, where the per-item work outweighs it. Lists that are usually empty
//! (attachments, private copies, attached pointers) stay plain `Vec`s, which cost nothing empty.

use smallvec::SmallVec;

/// Elements a [`ShortList`] holds without a heap allocation.
pub(super) const INLINE: usize = 8;

/// A list of a construct's items (or of what it does per item).
pub type ShortList<T> = SmallVec<[T; INLINE]>;
