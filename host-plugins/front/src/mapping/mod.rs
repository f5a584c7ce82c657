//! The map clauses as clang-22 lowers them: `target data` begin/end, `target update`, and the
//! argument list of a kernel launch. Semantics follow LLVM's libomptarget: dynamic and hold
//! reference counts, copy on first map or `always`, copy back when the last reference goes,
//! `ATTACH` items attach a device pointer after every item of the construct is mapped.
//!
//! Each phase of a construct (enter, update, exit, the launch's argument translation) decides
//! under the device's table lock what to allocate, count and copy, then copies after releasing
//! it, so transfers of different entries overlap. Meanwhile the ranges whose data is in flight
//! are busy: a phase that touches one waits for it (and only for it) before deciding, so another
//! thread never sees an entry whose data is not yet on the device, nor one half-way through
//! removal. An entering phase that fails is undone (its new entries removed and freed, its
//! references dropped); a leaving one still removes and frees what lost its last reference.
//!
//! Where LLVM 22 has known defects this module does what the OpenMP specification asks:
//! the first component of a user-defined mapper counts a reference like any list item (LLVM
//! leaks that entry), a copy of an object with attached pointers keeps each side's pointer
//! values instead of skipping the copy, and non-contiguous updates copy whole contiguous rows.

//!
//! Files: [`table`] (the mapping table and its reference counts) over [`sorted_map`] (a sorted
//! vector while small, a B-tree when large), [`items`] (list items and mappers), [`phase`]
//! (phases, copies outside the lock, undo), [`enter`], [`exit`], [`update`], [`launch`] (kernel
//! arguments), [`short`] (the inline lists every construct uses).

mod enter;
mod exit;
mod items;
mod launch;
mod phase;
mod short;
mod sorted_map;
pub mod table;
mod update;

pub use enter::begin;
pub use exit::{end, release};
pub use items::{
    mapper_num_components, print_kernel_arguments, push_mapper_component, MapItem, MapList,
};
pub use launch::{enter_for_launch, LaunchArguments};
pub use phase::free_device;
pub use update::update;
