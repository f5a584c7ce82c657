//! Leaving: the end of `target data`, `target exit data`, and of a `target` construct.

use super::items::{
    dynamic_refs, expand, item_size, maps_memory, pointer_item, present_missing, zero_copy,
    MapItem, Step,
};
use super::phase::Phase;
use super::short::ShortList;
use super::table::{Lookup, MappingTable};
use crate::diag;
use crate::runtime::DeviceState;
use diag::Ptr;
use rustomp_abi::MapType;
use rustomp_plugin::{ErrorKind, OffloadError, Result};

/// Copies back the `from` items of the construct that lie in the entry at `key`, which is about
/// to go: `from` applies when the construct releases the item, whichever of its entries does,
/// and before a `delete` of it.
pub(super) fn copy_back_pending(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    key: usize,
    pending: &mut ShortList<(usize, usize)>,
) {
    let entry = table.get(key).expect("looked up");
    let (entry_begin, entry_end) = (entry.host_begin, entry.host_end);
    // In the construct's order (`retain` visits each once, in order), the others kept in theirs.
    pending.retain(|&mut (begin, size)| {
        if entry_begin <= begin && begin + size <= entry_end {
            let device_address = table.get(key).expect("looked up").device_address(begin);
            phase.copy_from(table, key, begin, device_address, size);
            false
        } else {
            true
        }
    });
}

/// Removes one reference; copies back (unless `copy_back` is off) and removes the entry when
/// due, its allocation going to the phase's frees.
pub(super) fn unmap_one(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    item: &MapItem,
    update_ref: bool,
    pending_from: &mut ShortList<(usize, usize)>,
    copy_back: bool,
) -> Result<()> {
    let device = phase.device;
    let begin = item.begin as usize;
    let size = item_size(item);
    let key = match table.lookup(begin, size) {
        Lookup::Contained(key) => key,
        Lookup::PartialOverlap(key) if item.kind.contains(MapType::IMPLICIT) => key,
        Lookup::PartialOverlap(_) | Lookup::Absent => {
            if item.kind.contains(MapType::PRESENT) && !zero_copy(device, item.kind) {
                present_missing("map type", begin, size);
                return Err(OffloadError::new(
                    ErrorKind::MappingError,
                    "'present' unmap of an unmapped item",
                ));
            }
            return Ok(()); // not mapped on exit: ignored (OpenMP 5.1, map clause)
        }
    };
    let hold = item.kind.contains(MapType::OMPX_HOLD);
    let force_delete = item.kind.contains(MapType::DELETE);
    let entry = table.get_mut(key).expect("looked up");
    let last = entry.is_last_reference(hold, force_delete);
    if hold || !entry.infinite {
        let counter = if hold {
            &mut entry.hold_refs
        } else {
            &mut entry.dynamic_refs
        };
        if force_delete {
            *counter = 0;
        } else if update_ref {
            *counter = counter.saturating_sub(1);
        }
    }
    let device_address = entry.device_address(begin);
    // A struct member never removes its parent's entry; a pointee reached through a member does.
    let removable = !entry.infinite
        && entry.total_refs() == 0
        && (item.kind.member_of().is_none() || item.kind.contains(MapType::PTR_AND_OBJ));
    if diag::info_enabled(diag::infotype::MAPPING_EXISTS) {
        let action = match (force_delete, update_ref, removable) {
            (true, _, _) => " (reset, delayed deletion)",
            (false, true, true) => " (decremented, delayed deletion)",
            (false, true, false) => " (decremented)",
            (false, false, _) => " (update suppressed)",
        };
        let (dynamic_action, hold_action) = if hold { ("", action) } else { (action, "") };
        rustomp_plugin::diag::info(
            device.id,
            format_args!(
                "Mapping exists with HstPtrBegin={}, TgtPtrBegin={}, Size={size}, DynRefCount={}{dynamic_action}, HoldRefCount={}{hold_action}",
                Ptr(begin),
                Ptr(device_address),
                dynamic_refs(entry),
                entry.hold_refs
            ),
        );
    }
    if copy_back
        && item.kind.contains(MapType::FROM)
        && (last || item.kind.contains(MapType::ALWAYS))
        && size > 0
    {
        phase.copy_from(table, key, begin, device_address, size);
        if let Some(at) = pending_from
            .iter()
            .position(|&range| range == (begin, size))
        {
            pending_from.swap_remove(at);
        }
    }
    if !removable {
        return Ok(());
    }
    if copy_back {
        copy_back_pending(phase, table, key, pending_from);
    }
    // The range stays busy while a copy back runs: nobody maps it anew meanwhile.
    phase.remove_entry(table, key, Some(size));
    Ok(())
}

/// End of `target data` / `target exit data` / a `target` construct.
pub fn end(device: &DeviceState, items: &[MapItem]) -> Result<()> {
    leave(device, items, true)
}

/// The references a `target` construct whose kernel did not run holds, released without copying
/// anything back: the device copies hold no results (a `from` item's is uninitialized), and the
/// host's data must stay as it was for the host fallback.
pub fn release(device: &DeviceState, items: &[MapItem]) -> Result<()> {
    leave(device, items, false)
}

pub(super) fn leave(device: &DeviceState, items: &[MapItem], copy_back: bool) -> Result<()> {
    if items.is_empty() {
        return Ok(()); // nothing mapped: no phase, no lock
    }
    let mut steps = ShortList::new();
    expand(items, &mut steps);
    let mut phase = Phase::new(device);
    let mut table = phase.lock(steps.iter().map(|s| &s.item));
    let decided = end_locked(&mut phase, &mut table, &steps, copy_back);
    phase.complete(table, decided, false)
}

pub(super) fn end_locked(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    steps: &[Step],
    copy_back: bool,
) -> Result<()> {
    let mut pending_from = ShortList::new();
    pending_from.extend(
        steps
            .iter()
            .map(|s| &s.item)
            .filter(|item| item.kind.contains(MapType::FROM) && maps_memory(item) && item.size > 0)
            .map(|item| (item.begin as usize, item_size(item))),
    );
    for step in steps.iter().rev() {
        let item = &step.item;
        let skipped = MapType::LITERAL | MapType::PRIVATE | MapType::ATTACH | MapType::NON_CONTIG;
        if item.kind.intersects(skipped) {
            continue; // attachments only happen on entry
        }
        let is_member = item.kind.member_of().is_some();
        let pointee_refs = !is_member || item.kind.contains(MapType::PTR_AND_OBJ);
        unmap_one(
            phase,
            table,
            item,
            pointee_refs,
            &mut pending_from,
            copy_back,
        )?;
        if item.kind.contains(MapType::PTR_AND_OBJ) {
            // The pointer variable counted a reference on entry unless it is a member.
            let pointer = pointer_item(
                item,
                MapType::OMPX_HOLD | MapType::DELETE | MapType::IMPLICIT,
            );
            unmap_one(
                phase,
                table,
                &pointer,
                !is_member,
                &mut pending_from,
                copy_back,
            )?;
        }
    }
    Ok(())
}
