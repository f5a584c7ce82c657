//! `target update to/from`, contiguous and non-contiguous.

use super::items::{
    expand, item_size, non_contiguous_dims, non_contiguous_pieces, present_missing, MapItem,
};
use super::phase::Phase;
use super::short::ShortList;
use super::table::{Lookup, MappingTable};
use crate::runtime::DeviceState;
use rustomp_abi::MapType;
use rustomp_plugin::{ErrorKind, OffloadError, Result};

/// `target update to/from`.
pub fn update(device: &DeviceState, items: &[MapItem]) -> Result<()> {
    let mut steps = ShortList::new();
    expand(items, &mut steps);
    let mut phase = Phase::new(device);
    let mut table = phase.lock(steps.iter().map(|s| &s.item));
    let decided = steps.iter().try_for_each(|step| {
        let item = &step.item;
        if item.kind.intersects(MapType::LITERAL | MapType::PRIVATE) {
            Ok(())
        } else if item.kind.contains(MapType::NON_CONTIG) {
            update_non_contiguous(&mut phase, &mut table, item)
        } else {
            update_contiguous(
                &mut phase,
                &mut table,
                item.kind,
                item.begin as usize,
                item_size(item),
            )
        }
    });
    phase.complete(table, decided, false)
}

/// One contiguous piece of a `target update`: it must lie inside one mapping.
pub(super) fn update_contiguous(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    kind: MapType,
    host: usize,
    size: usize,
) -> Result<()> {
    let Lookup::Contained(key) = table.lookup(host, size) else {
        if kind.contains(MapType::PRESENT) {
            present_missing("motion", host, size);
            return Err(OffloadError::new(
                ErrorKind::MappingError,
                "'present' update of an unmapped item",
            ));
        }
        return Ok(());
    };
    if size == 0 {
        return Ok(());
    }
    let device_address = table.get(key).expect("looked up").device_address(host);
    if kind.contains(MapType::TO) {
        phase.copy_to(table, key, host, device_address, size);
    }
    if kind.contains(MapType::FROM) {
        phase.copy_from(table, key, host, device_address, size);
    }
    Ok(())
}

/// Non-contiguous `target update`.
pub(super) fn update_non_contiguous(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    item: &MapItem,
) -> Result<()> {
    let Some(dims) = non_contiguous_dims(item) else {
        return Ok(());
    };
    let base = item.base as usize;
    for (offset, length) in non_contiguous_pieces(dims) {
        let host = base.wrapping_add(offset as usize);
        update_contiguous(phase, table, item.kind, host, length.max(0) as usize)?;
    }
    Ok(())
}
