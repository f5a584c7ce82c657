//! One phase of a construct: its table changes, the copies it decided under the lock and
//! performs after it, and the undo of an entering phase that failed.

use super::items::{
    entry_name, info_from_device, info_to_device, item_size, non_contiguous_dims,
    non_contiguous_pieces, MapItem, POINTER_SIZE,
};
use super::short::ShortList;
use super::table::{MappingTable, ShadowPointer};
use crate::diag::{self, debug, info};
use crate::runtime::DeviceState;
use diag::Ptr;
use rustomp_abi::MapType;
use rustomp_plugin::{AllocKind, Device, Result};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;

/// The most bytes a phase copies while it holds the table lock, on a device whose memory is
/// the host's (a memcpy of 4 KiB takes about as long as taking the lock again); more are copied
/// outside it, their ranges busy, so other threads' constructs go on meanwhile.
const IN_PLACE_BYTES: usize = 4096;

/// Numbers the phases that mark ranges busy: the owner of the marks (0 is nobody's).
static NEXT_PHASE: AtomicU64 = AtomicU64::new(1);

/// One device copy, decided under the table lock and performed after it is released.
#[derive(Debug)]
pub(super) enum Transfer {
    /// Host → device; the attached pointers inside the range then get their device values
    /// (the host copy holds host addresses there).
    ToDevice {
        host: usize,
        device: usize,
        size: usize,
        shadows: Vec<ShadowPointer>,
    },
    /// Device → host, keeping the host values of the attached pointers inside the range (their
    /// device copies hold device addresses).
    FromDevice {
        host: usize,
        device: usize,
        size: usize,
        shadows: Vec<ShadowPointer>,
    },
    /// A pointer the runtime computed (an attachment, a lambda capture, a private pointer).
    Pointer { device: usize, value: usize },
}

impl Transfer {
    pub(super) fn perform(&self, id: usize, backend: &dyn Device) -> Result<()> {
        let write_pointer = |device: usize, value: usize| {
            let source = &value as *const usize as usize;
            crate::ompt::to_device(id, source, device, POINTER_SIZE, || {
                // SAFETY: `device` is a pointer slot inside an entry this phase holds busy, or
                // inside a private buffer it owns.
                unsafe {
                    backend.copy_to_device(
                        device as *mut c_void,
                        source as *const c_void,
                        POINTER_SIZE,
                    )
                }
            })
        };
        match self {
            Transfer::ToDevice {
                host,
                device,
                size,
                shadows,
            } => {
                crate::ompt::to_device(id, *host, *device, *size, || {
                    // SAFETY: `host` is the user's object of `size` bytes; the device range lies
                    // in an entry this phase holds busy (nobody frees it meanwhile) or in its own
                    // buffer.
                    unsafe {
                        backend.copy_to_device(
                            *device as *mut c_void,
                            *host as *const c_void,
                            *size,
                        )
                    }
                })?;
                shadows
                    .iter()
                    .try_for_each(|s| write_pointer(s.device_address, s.device_value))
            }
            Transfer::FromDevice {
                host,
                device,
                size,
                shadows,
            } => {
                // SAFETY: each shadow's host address is a pointer variable inside the user's range.
                let kept: Vec<usize> = shadows
                    .iter()
                    .map(|s| unsafe { (s.host_address as *const usize).read_unaligned() })
                    .collect();
                crate::ompt::from_device(id, *device, *host, *size, || {
                    // SAFETY: as for `ToDevice`.
                    unsafe {
                        backend.copy_from_device(
                            *host as *mut c_void,
                            *device as *const c_void,
                            *size,
                        )
                    }
                })?;
                for (shadow, value) in shadows.iter().zip(kept) {
                    debug!(
                        "keeping host pointer at {:#x} = {value:#x}",
                        shadow.host_address
                    );
                    // SAFETY: as above.
                    unsafe { (shadow.host_address as *mut usize).write_unaligned(value) };
                }
                Ok(())
            }
            Transfer::Pointer { device, value } => write_pointer(*device, *value),
        }
    }
}

/// A table change of an entering phase, undone when the phase fails.
#[derive(Debug)]
pub(super) enum Undo {
    Created(usize),
    Counted {
        key: usize,
        hold: bool,
    },
    Attached {
        key: usize,
        host_address: usize,
        previous: Option<ShadowPointer>,
    },
}

/// One phase of a construct (entering, leaving, update): the table changes it made under the
/// lock, the copies they call for, performed after the lock is released (transfers of
/// different entries overlap, see `MappingTable::mark_busy`), and the allocations to free.
pub(super) struct Phase<'d> {
    pub(super) device: &'d DeviceState,
    /// The number of this phase's busy marks, given when it marks any (its copies run outside
    /// the lock); 0 before, which no mark has, so that no mark is taken for its own.
    owner: u64,
    pub(super) transfers: ShortList<Transfer>,
    pub(super) undo: ShortList<Undo>,
    /// Device memory of entries that left the table: freed once the copies are done.
    pub(super) frees: ShortList<usize>,
    /// Host ranges of the entries the transfers touch: marked busy only when the copies run
    /// outside the lock (under it, nobody could see the marks).
    held: ShortList<(usize, usize)>,
}

impl<'d> Phase<'d> {
    /// A new phase of a construct on `device`. Built where it is used and borrowed from there
    /// on: its lists are inline (see `short.rs`), and moving them would cost a copy each.
    #[inline]
    pub(super) fn new(device: &'d DeviceState) -> Self {
        Self {
            device,
            owner: 0,
            transfers: ShortList::new(),
            undo: ShortList::new(),
            frees: ShortList::new(),
            held: ShortList::new(),
        }
    }

    /// The device's table, once no other phase has copies in flight for what `items` touch.
    /// A phase waits only while it holds nothing busy itself: no deadlock.
    pub(super) fn lock<'a>(
        &self,
        items: impl Iterator<Item = &'a MapItem> + Clone,
    ) -> MutexGuard<'d, MappingTable> {
        let device = self.device;
        let mut table = device.table();
        while table.has_busy()
            && items
                .clone()
                .any(|item| touches_busy(&table, item, self.owner))
        {
            table = device.wait_for_transfers(table);
        }
        table
    }

    /// The entry at `key` is busy while this phase's copies run.
    pub(super) fn hold(&mut self, table: &MappingTable, key: usize) {
        if let Some(entry) = table.get(key) {
            self.held.push((entry.host_begin, entry.host_end));
        }
    }

    /// The attached pointers inside `[host, host + size)` of entry `key`, which is busy while
    /// this phase's copies run (one table search for both).
    fn hold_with_shadows(
        &mut self,
        table: &MappingTable,
        key: usize,
        host: usize,
        size: usize,
    ) -> Vec<ShadowPointer> {
        match table.range_and_shadows(key, host, size) {
            Some((range, shadows)) => {
                self.held.push(range);
                shadows
            }
            None => Vec::new(),
        }
    }

    /// Copies host → device into entry `key`.
    pub(super) fn copy_to(
        &mut self,
        table: &mut MappingTable,
        key: usize,
        host: usize,
        device_address: usize,
        size: usize,
    ) {
        info_to_device(self.device, host, device_address, size, || {
            entry_name(table, key)
        });
        let shadows = self.hold_with_shadows(table, key, host, size);
        self.transfers.push(Transfer::ToDevice {
            host,
            device: device_address,
            size,
            shadows,
        });
    }

    /// Copies host → device into entry `key`, spanning `entry`, which this construct created:
    /// no pointer is attached in it yet (attachments come after every item is mapped), so the
    /// table need not be asked.
    pub(super) fn copy_to_created(
        &mut self,
        table: &MappingTable,
        key: usize,
        entry: (usize, usize),
        host: usize,
        device_address: usize,
        size: usize,
    ) {
        info_to_device(self.device, host, device_address, size, || {
            entry_name(table, key)
        });
        self.held.push(entry);
        self.transfers.push(Transfer::ToDevice {
            host,
            device: device_address,
            size,
            shadows: Vec::new(),
        });
    }

    /// Copies device → host from entry `key`.
    pub(super) fn copy_from(
        &mut self,
        table: &mut MappingTable,
        key: usize,
        host: usize,
        device_address: usize,
        size: usize,
    ) {
        info_from_device(self.device, host, device_address, size, || {
            entry_name(table, key)
        });
        let shadows = self.hold_with_shadows(table, key, host, size);
        self.transfers.push(Transfer::FromDevice {
            host,
            device: device_address,
            size,
            shadows,
        });
    }

    /// Performs the copies outside the lock, then ends this phase's busy ranges and frees what
    /// left the table. A failure, of the table changes (`decided`) or of a copy, undoes the
    /// changes of an entering phase (`undo_on_failure`: the construct did not happen, and its
    /// new entries go); a leaving phase still completes what it decided (an entry whose last
    /// reference went is removed and freed, even when its copy back failed).
    pub(super) fn complete(
        &mut self,
        mut table: MutexGuard<'d, MappingTable>,
        decided: Result<()>,
        undo_on_failure: bool,
    ) -> Result<()> {
        if decided.is_err() && undo_on_failure {
            self.transfers.clear();
            self.held.clear();
            self.undo(&mut table);
        }
        let mut copied = Ok(());
        let mut marked = false;
        if !self.transfers.is_empty() && self.copies_in_place() {
            // A few bytes copied by memcpy (the CPU plugin): cheaper under the lock than a
            // second round through it, and nothing needs to be marked busy.
            let backend = &*self.device.backend;
            copied = self
                .transfers
                .iter()
                .try_for_each(|t| t.perform(self.device.id, backend));
            if copied.is_err() && undo_on_failure {
                self.undo(&mut table);
            }
        } else if !self.transfers.is_empty() {
            marked = !self.held.is_empty();
            if marked {
                self.owner = NEXT_PHASE.fetch_add(1, Ordering::Relaxed);
                for &(begin, end) in &self.held {
                    table.mark_busy(begin, end, self.owner);
                }
            }
            drop(table);
            let backend = &*self.device.backend;
            copied = self
                .transfers
                .iter()
                .try_for_each(|t| t.perform(self.device.id, backend));
            table = self.device.table();
            if copied.is_err() && undo_on_failure {
                self.undo(&mut table);
            }
        }
        crate::profile::table_size(self.device.id, table.len());
        if marked && table.release(self.owner) {
            self.device.transfers_ended(&table);
        }
        drop(table);
        let mut freed = Ok(());
        for ptr in self.frees.drain(..) {
            freed = freed.and(free_device(self.device, ptr));
        }
        decided.and(copied).and(freed)
    }

    /// Whether this phase's copies are small host memcpys (a device whose memory is the
    /// host's, at most [`IN_PLACE_BYTES`] in all), done without releasing the table lock.
    fn copies_in_place(&self) -> bool {
        if !self.device.shares_host_memory {
            return false;
        }
        let mut bytes = 0usize;
        self.transfers.iter().all(|t| {
            bytes += match t {
                Transfer::ToDevice { size, shadows, .. }
                | Transfer::FromDevice { size, shadows, .. } => size + shadows.len() * POINTER_SIZE,
                Transfer::Pointer { .. } => POINTER_SIZE,
            };
            bytes <= IN_PLACE_BYTES
        })
    }

    /// Removes the entry at `key` (LLVM's 0x8 line gives `size`, the item's, else the entry's);
    /// its device memory, if the runtime allocated it, goes to the phase's frees.
    pub(super) fn remove_entry(
        &mut self,
        table: &mut MappingTable,
        key: usize,
        size: Option<usize>,
    ) {
        let Some((entry, allocation)) = table.remove_releasing(key) else {
            return;
        };
        info!(
            diag::infotype::MAPPING_CHANGED,
            self.device.id,
            "Removing map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, Name={}",
            Ptr(entry.host_begin),
            Ptr(entry.device_begin),
            size.unwrap_or(entry.host_end - entry.host_begin),
            diag::map_name(entry.name as *const c_char)
        );
        // An allocation other entries still use (a struct's, see `MappingTable::room_for`)
        // goes with the last of them.
        if let (true, Some(allocation)) = (entry.owned, allocation) {
            self.frees.push(allocation);
        }
    }

    pub(super) fn undo(&mut self, table: &mut MappingTable) {
        for change in std::mem::take(&mut self.undo).into_iter().rev() {
            match change {
                Undo::Created(key) => self.remove_entry(table, key, None),
                Undo::Counted { key, hold } => {
                    if let Some(entry) = table.get_mut(key) {
                        let counter = if hold {
                            &mut entry.hold_refs
                        } else {
                            &mut entry.dynamic_refs
                        };
                        *counter = counter.saturating_sub(1);
                    }
                }
                Undo::Attached {
                    key,
                    host_address,
                    previous,
                } => table.detach(key, host_address, previous),
            }
        }
    }
}

/// Frees device memory the runtime allocated for a map entry or a private copy.
pub fn free_device(device: &DeviceState, ptr: usize) -> Result<()> {
    crate::ompt::delete(device.id, ptr, || {
        // SAFETY: callers pass device memory this runtime allocated on `device` (an entry's or
        // a private copy's), when its last reference goes, once.
        unsafe { device.backend.free(ptr as *mut c_void, AllocKind::Device) }
    })
}

/// Whether what `item` looks up overlaps a range another phase (not `owner`) has copies in
/// flight for.
pub(super) fn touches_busy(table: &MappingTable, item: &MapItem, owner: u64) -> bool {
    let (base, begin, size) = (item.base as usize, item.begin as usize, item_size(item));
    if item.kind.contains(MapType::LITERAL) {
        return false;
    }
    if item.kind.contains(MapType::NON_CONTIG) {
        return non_contiguous_dims(item).is_some_and(|dims| {
            non_contiguous_pieces(dims).iter().any(|&(o, n)| {
                table.is_blocked(base.wrapping_add(o as usize), n.max(0) as usize, owner)
            })
        });
    }
    if item.kind.contains(MapType::ATTACH) {
        // The pointer variable at `base` and the pointee at `begin`.
        return table.is_blocked(base, size.max(POINTER_SIZE), owner)
            || table.is_blocked(begin, 0, owner);
    }
    let pointer =
        item.kind.contains(MapType::PTR_AND_OBJ) && table.is_blocked(base, POINTER_SIZE, owner);
    pointer || table.is_blocked(begin, size, owner)
}
