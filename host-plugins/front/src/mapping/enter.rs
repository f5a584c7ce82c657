//! Entering: `target data`, `target enter data`, and the map part of a `target` construct.

use super::items::{
    dynamic_refs, entry_name, expand, info_to_device, is_partial_struct, item_size, maps_memory,
    not_mapped, pointer_item, present_missing, struct_padding, zero_copy, MapItem, Step,
    FB_NULLIFY, POINTER_SIZE,
};
use super::phase::{Phase, Transfer, Undo};
use super::short::ShortList;
use super::table::{Lookup, MapEntry, MappingTable, ShadowPointer};
use crate::diag::{self, debug, info};
use crate::runtime::DeviceState;
use diag::Ptr;
use rustomp_abi::MapType;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};
use std::ffi::c_void;

/// What the map-entering part of one construct did so far.
pub(super) struct Entering {
    /// Host ranges of the entries this construct created: their `to` data is due, and a pointer
    /// or pointee among them makes an attachment due.
    pub(super) created: ShortList<(usize, usize)>,
    /// Pointer attachments, performed once every item is mapped.
    pub(super) attachments: Vec<Attachment>,
}

impl Entering {
    pub(super) fn new() -> Self {
        Entering {
            created: ShortList::new(),
            attachments: Vec::new(),
        }
    }

    pub(super) fn created_entry(&self, key: usize) -> bool {
        self.created.iter().any(|&(begin, _)| begin == key)
    }
    pub(super) fn created_covers(&self, address: usize) -> bool {
        self.created
            .iter()
            .any(|&(begin, end)| begin <= address && address < end)
    }
}

/// "Make the device copy of the pointer at `pointer` point at the device copy of `pointee_begin`".
pub(super) struct Attachment {
    pub(super) pointer: usize,
    pub(super) pointer_size: usize,
    pub(super) pointee_begin: usize,
    /// Attach even when neither side is new (`attach(always)`, and PTR_AND_OBJ items).
    pub(super) always: bool,
}

/// Maps one item: finds or creates its entry, counts the reference, copies when due.
/// A new entry's device copy starts `padding` bytes into its allocation.
/// Returns the device address of `begin`, or `None` for a zero-length item nothing maps.
pub(super) fn map_one(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    item: &MapItem,
    update_ref: bool,
    padding: usize,
    entering: &mut Entering,
) -> Result<Option<usize>> {
    let device = phase.device;
    let begin = item.begin as usize;
    let size = item_size(item);
    let hold = item.kind.contains(MapType::OMPX_HOLD);
    let present = item.kind.contains(MapType::PRESENT);
    let found = match table.lookup(begin, size) {
        Lookup::Contained(key) => Some(key),
        // An implicit map (a variable the region uses) takes whatever part of it is mapped.
        Lookup::PartialOverlap(key) if item.kind.contains(MapType::IMPLICIT) => Some(key),
        Lookup::PartialOverlap(key) => {
            let entry = table.get(key).expect("looked up");
            diag::message(format_args!(
                "explicit extension not allowed: host address specified is {} ({size} bytes), but device allocation maps to host at {} ({} bytes)",
                Ptr(begin),
                Ptr(entry.host_begin),
                entry.host_end - entry.host_begin
            ));
            return Err(not_mapped(begin, size, present));
        }
        Lookup::Absent => None,
    };
    // The entry, where it lies, and whether this construct created it.
    let (key, entry_range, device_address, created) = match found {
        Some(key) => {
            let entry = table.get_mut(key).expect("looked up");
            // An infinite entry (global, associated pointer) still counts holds, as LLVM's.
            if update_ref && (hold || !entry.infinite) {
                if hold {
                    entry.hold_refs += 1
                } else {
                    entry.dynamic_refs += 1
                }
                phase.undo.push(Undo::Counted { key, hold });
            }
            let device_address = entry.device_address(begin);
            if diag::info_enabled(diag::infotype::MAPPING_EXISTS) {
                let action = if update_ref {
                    " (incremented)"
                } else {
                    " (update suppressed)"
                };
                let (dynamic_action, hold_action) = if hold { ("", action) } else { (action, "") };
                rustomp_plugin::diag::info(
                    device.id,
                    format_args!(
                        "Mapping exists{} with HstPtrBegin={}, TgtPtrBegin={}, Size={size}, DynRefCount={}{dynamic_action}, HoldRefCount={}{hold_action}, Name={}",
                        if item.kind.contains(MapType::IMPLICIT) { " (implicit)" } else { "" },
                        Ptr(begin),
                        Ptr(device_address),
                        dynamic_refs(entry),
                        entry.hold_refs,
                        diag::map_name(item.name)
                    ),
                );
            }
            let range = (entry.host_begin, entry.host_end);
            (key, range, device_address, entering.created_entry(key))
        }
        None => {
            if zero_copy(device, item.kind) {
                // No entry and no copy: the region uses the host's copy ('present' holds).
                if size != 0 {
                    info!(
                        diag::infotype::MAPPING_CHANGED,
                        device.id,
                        "Return HstPtrBegin {} Size={size} for unified shared memory",
                        Ptr(begin)
                    );
                }
                return Ok(Some(begin));
            }
            if present {
                return Err(not_mapped(begin, size, true));
            }
            if size == 0 {
                let counted = item.kind.bits() != 0
                    && item.kind.member_of().is_none()
                    && !item.kind.contains(MapType::IMPLICIT);
                if counted {
                    info!(
                        diag::infotype::EMPTY_MAPPING,
                        device.id,
                        "variable {} does not have a valid device counterpart",
                        diag::map_name(item.name)
                    );
                }
                return Ok(None);
            }
            let base = item.base as usize;
            // A member of a struct whose later members another construct mapped gets its
            // device copy where the struct's device copy has it (`MappingTable::room_for`).
            let room = table.room_for(begin, size, base);
            let (allocation, device_begin) = match room {
                Some(device_begin) => (device_begin, device_begin),
                None => match crate::ompt::alloc(device.id, begin, size + padding, || {
                    device.backend.alloc(size + padding, AllocKind::Device)
                }) {
                    Ok(allocation) => (allocation as usize, allocation as usize + padding),
                    Err(e) => {
                        // A device failure, not a broken map clause: LLVM's words, the device's
                        // error kind (so the policy decides whether it is fatal).
                        diag::error(&format!(
                            "device {}: cannot map host address {} ({size} bytes): {e}",
                            device.id,
                            Ptr(begin)
                        ));
                        return Err(OffloadError::new(e.kind, "Call to getTargetPointer returned null pointer (device failure or illegal mapping)."));
                    }
                },
            };
            let entry = MapEntry {
                host_begin: begin,
                host_end: begin + size,
                device_begin,
                dynamic_refs: (!hold) as u64,
                hold_refs: hold as u64,
                infinite: false,
                owned: true,
                name: item.name as usize,
            };
            if room.is_some() {
                table.insert_in_room(entry, base);
            } else {
                table.insert_mapped(entry, base, padding);
            }
            entering.created.push((begin, begin + size));
            phase.undo.push(Undo::Created(begin));
            info!(
                diag::infotype::MAPPING_CHANGED,
                device.id,
                "Creating new map entry with HstPtrBase={}, HstPtrBegin={}, TgtAllocBegin={}, TgtPtrBegin={}, Size={size}, DynRefCount={}, HoldRefCount={}, Name={}",
                Ptr(item.base as usize),
                Ptr(begin),
                Ptr(allocation),
                Ptr(device_begin),
                (!hold) as u64,
                hold as u64,
                diag::map_name(item.name)
            );
            (begin, (begin, begin + size), device_begin, true)
        }
    };
    // Members of a struct share their parent's entry: their data goes over with the entry's
    // creation, whichever item of the construct created it.
    if item.kind.contains(MapType::TO) && size > 0 {
        if created {
            phase.copy_to_created(table, key, entry_range, begin, device_address, size);
        } else if item.kind.contains(MapType::ALWAYS) {
            phase.copy_to(table, key, begin, device_address, size);
        }
    }
    Ok(Some(device_address))
}

/// Performs the attachments whose pointer or pointee this construct mapped anew.
pub(super) fn attach_all(phase: &mut Phase<'_>, table: &mut MappingTable, entering: &Entering) {
    for a in entering.attachments.iter() {
        let due = a.always
            || entering.created_covers(a.pointee_begin)
            || entering.created_covers(a.pointer);
        if !due {
            continue;
        }
        let Some(pointee) = table.find(a.pointee_begin, 0) else {
            continue;
        };
        let device_pointee_begin = pointee.device_address(a.pointee_begin);
        let Lookup::Contained(pointer_key) =
            table.lookup(a.pointer, a.pointer_size.max(POINTER_SIZE))
        else {
            continue;
        };
        // SAFETY: clang's base for an attachment is the host pointer variable, which is mapped
        // (looked up just above) and so is live host memory of at least pointer size.
        let host_pointee_base = unsafe { (a.pointer as *const usize).read_unaligned() };
        // The pointer may point before the mapped section (`p` for `p[10:5]`): keep its offset.
        let device_value =
            device_pointee_begin.wrapping_sub(a.pointee_begin.wrapping_sub(host_pointee_base));
        let slot = table
            .get(pointer_key)
            .expect("looked up")
            .device_address(a.pointer);
        let previous = table.shadow(pointer_key, a.pointer);
        if !table.attach(
            pointer_key,
            ShadowPointer {
                host_address: a.pointer,
                device_address: slot,
                device_value,
            },
        ) {
            continue; // already attached to this pointee
        }
        phase.undo.push(Undo::Attached {
            key: pointer_key,
            host_address: a.pointer,
            previous,
        });
        debug!(
            "attach: device pointer at {slot:#x} = {device_value:#x} (host pointer at {:#x})",
            a.pointer
        );
        info_to_device(
            phase.device,
            &device_value as *const usize as usize,
            slot,
            POINTER_SIZE,
            || entry_name(table, pointer_key),
        );
        phase.hold(table, pointer_key);
        phase.transfers.push(Transfer::Pointer {
            device: slot,
            value: device_value,
        });
        if a.pointer_size > POINTER_SIZE {
            // A descriptor (Fortran): its fields after the address come from the host copy.
            phase.transfers.push(Transfer::ToDevice {
                host: a.pointer + POINTER_SIZE,
                device: slot + POINTER_SIZE,
                size: a.pointer_size - POINTER_SIZE,
                shadows: Vec::new(),
            });
        }
    }
}

/// `target data` / `target enter data` / the map part of a `target` construct.
/// `return_bases` (clang's base array) receives device addresses for
/// `use_device_ptr`/`use_device_addr` items.
pub fn begin(
    device: &DeviceState,
    items: &[MapItem],
    return_bases: Option<&mut [*mut c_void]>,
) -> Result<()> {
    let mut steps = ShortList::new();
    expand(items, &mut steps);
    let mut phase = Phase::new(device);
    let mut table = phase.lock(steps.iter().map(|s| &s.item));
    let decided = begin_locked(&mut phase, &mut table, &steps, return_bases, &mut []);
    phase.complete(table, decided, true)
}

pub(super) fn begin_locked(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    steps: &[Step],
    mut return_bases: Option<&mut [*mut c_void]>,
    found: &mut [usize],
) -> Result<()> {
    check_present_on_entry(phase.device, table, steps)?;
    let mut entering = Entering::new();
    for (n, step) in steps.iter().enumerate() {
        let item = &step.item;
        // Private copies are made at launch; non-contiguous descriptors only mean something
        // to `target update`.
        if item.kind.intersects(MapType::LITERAL | MapType::PRIVATE)
            || item.kind.contains(MapType::NON_CONTIG)
        {
            continue;
        }
        if item.kind.contains(MapType::ATTACH) {
            entering.attachments.push(Attachment {
                pointer: item.base as usize,
                pointer_size: item_size(item),
                pointee_begin: item.begin as usize,
                always: item.kind.contains(MapType::ALWAYS),
            });
            continue;
        }
        let update_ref = item.kind.member_of().is_none();
        if item.kind.contains(MapType::PTR_AND_OBJ) {
            let pointer = pointer_item(
                item,
                MapType::OMPX_HOLD | MapType::IMPLICIT | MapType::PRESENT,
            );
            map_one(phase, table, &pointer, update_ref, 0, &mut entering)?;
            let device_begin = map_one(phase, table, item, true, 0, &mut entering)?;
            remember(found, step, device_begin);
            // For PTR_AND_OBJ clang's base is the host address of the pointer variable.
            entering.attachments.push(Attachment {
                pointer: item.base as usize,
                pointer_size: POINTER_SIZE,
                pointee_begin: item.begin as usize,
                always: true,
            });
            continue;
        }
        let padding = if is_partial_struct(steps, n) {
            struct_padding(item)
        } else {
            0
        };
        let device_begin = map_one(phase, table, item, update_ref, padding, &mut entering)?;
        remember(found, step, device_begin);
        if item.kind.contains(MapType::RETURN_PARAM) {
            let Some(bases) = return_bases.as_deref_mut() else {
                continue;
            };
            let Some(slot) = bases.get_mut(step.origin) else {
                continue;
            };
            let delta = (item.begin as usize).wrapping_sub(item.base as usize);
            *slot = match device_begin {
                Some(address) => address.wrapping_sub(delta) as *mut c_void,
                None if item.kind.bits() & FB_NULLIFY != 0 => {
                    0usize.wrapping_sub(delta) as *mut c_void
                }
                // Not mapped: the host address stays (the user vouches it is device-accessible).
                None => item.base,
            };
        }
    }
    attach_all(phase, table, &entering);
    Ok(())
}

/// Notes where clause item `step` landed for the kernel's arguments (`found[i]`: the device
/// address of item `i`'s begin), so that they need not look it up again. A zero-length item
/// nothing maps yet is left to the lookup after the whole list (a later item may map it);
/// mapper components are not clause items; `found` may be short.
fn remember(found: &mut [usize], step: &Step, device_begin: Option<usize>) {
    if let (None, Some(device_begin)) = (step.list, device_begin) {
        if let Some(slot) = found.get_mut(step.origin) {
            *slot = device_begin;
        }
    }
}

/// Several map entries for one item in one construct (upstream's direction after LLVM 22):
/// `present` is checked against the table as the construct found it, so another entry of the
/// same construct that maps the item does not make it present. An item with no such sibling
/// is checked where it is mapped, with LLVM 22's messages.
pub(super) fn check_present_on_entry(
    device: &DeviceState,
    table: &MappingTable,
    steps: &[Step],
) -> Result<()> {
    for (i, step) in steps.iter().enumerate() {
        let item = &step.item;
        if !item.kind.contains(MapType::PRESENT)
            || !maps_memory(item)
            || zero_copy(device, item.kind)
        {
            continue;
        }
        let (begin, size) = (item.begin as usize, item_size(item));
        if !matches!(table.lookup(begin, size), Lookup::Absent) {
            continue;
        }
        let end = begin + size.max(1);
        let sibling = steps.iter().enumerate().any(|(j, other)| {
            let (b, e) = (
                other.item.begin as usize,
                other.item.begin as usize + item_size(&other.item).max(1),
            );
            j != i && maps_memory(&other.item) && b < end && begin < e
        });
        if sibling {
            present_missing("map type", begin, size);
            let report = format!(
                "Pointer {} was not present on the device upon entry to the region.",
                Ptr(begin)
            );
            diag::error(&report);
            return Err(OffloadError::new(ErrorKind::MappingError, report));
        }
    }
    Ok(())
}
