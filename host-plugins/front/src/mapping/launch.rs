//! A kernel launch's arguments: the entering phase of a `target` construct, translated into
//! device addresses, with private copies for firstprivate items.

use super::enter::begin_locked;
use super::items::{expand, info_to_device, item_size, MapItem, LAMBDA_CAPTURE, POINTER_SIZE};
use super::phase::{free_device, Phase, Transfer};
use super::short::ShortList;
use super::table::{Lookup, MappingTable};
use crate::diag::{self, debug};
use crate::runtime::DeviceState;
use rustomp_abi::MapType;
use rustomp_plugin::{AllocKind, Result};
use std::ffi::{c_char, c_void};

/// What a kernel launch needs from the map clauses: the argument values and the private
/// buffers to free after it.
#[derive(Default)]
pub struct LaunchArguments {
    pub values: ShortList<*mut c_void>,
    pub temporaries: Vec<usize>,
}

impl LaunchArguments {
    /// Empty, filled by [`enter_for_launch`] where it lies (inline: returning it would copy it).
    #[inline]
    pub fn new() -> Self {
        LaunchArguments {
            values: ShortList::new(),
            temporaries: Vec::new(),
        }
    }
}

/// The map part of a `target` construct followed by the kernel's argument values (into
/// `arguments`, empty), under one hold of the table lock (no other thread can unmap what the
/// arguments point at in between). On failure `arguments` holds no private copy.
pub fn enter_for_launch(
    device: &DeviceState,
    items: &[MapItem],
    arguments: &mut LaunchArguments,
) -> Result<()> {
    if items.is_empty() {
        // Nothing to map, nothing to pass: no phase, no lock.
        return Ok(());
    }
    let mut steps = ShortList::new();
    expand(items, &mut steps);
    let mut phase = Phase::new(device);
    let mut table = phase.lock(steps.iter().map(|s| &s.item).chain(items));
    // Where each clause item landed, as the entering phase found it (`NOT_FOUND`: ask the table).
    let mut found = [NOT_FOUND; 32];
    let found = &mut found[..items.len().min(32)];
    let decided = begin_locked(&mut phase, &mut table, &steps, None, found)
        .and_then(|()| kernel_arguments(&mut phase, &table, items, found, arguments));
    let result = phase.complete(table, decided, true);
    if result.is_err() {
        // The private copies go with the construct; the first failure is the one reported.
        for buffer in arguments.temporaries.drain(..) {
            let _ = free_device(device, buffer);
        }
    }
    result
}

/// An item the entering phase did not map (or beyond the first 32).
const NOT_FOUND: usize = usize::MAX;

/// The kernel's argument values for the `TARGET_PARAM` items of the clause list (mappers are
/// not expanded: a mapped item's argument is its own device address); `found` holds where the
/// entering phase mapped them, [`NOT_FOUND`] where it did not say.
pub(super) fn kernel_arguments(
    phase: &mut Phase<'_>,
    table: &MappingTable,
    items: &[MapItem],
    found: &[usize],
    out: &mut LaunchArguments,
) -> Result<()> {
    for (i, item) in items.iter().enumerate() {
        if !item.kind.contains(MapType::TARGET_PARAM) {
            if item.kind.contains(LAMBDA_CAPTURE) {
                fix_lambda_capture(phase, table, &items[..i], item, &out.values);
            }
            continue;
        }
        let base = item.base as usize;
        let begin = item.begin as usize;
        let size = item_size(item);
        let value = if item.kind.contains(MapType::LITERAL) {
            base
        } else if item.kind.contains(MapType::PRIVATE) {
            private_argument(phase, table, item, &mut out.temporaries)?
        } else {
            let host_base = if item.kind.contains(MapType::PTR_AND_OBJ) {
                // SAFETY: for PTR_AND_OBJ clang's base is the host pointer variable.
                unsafe { (base as *const usize).read_unaligned() }
            } else {
                base
            };
            let device_begin = match found.get(i) {
                Some(&known) if known != NOT_FOUND => known,
                _ => match table.lookup(begin, size) {
                    Lookup::Contained(key) | Lookup::PartialOverlap(key) => {
                        table.get(key).expect("looked up").device_address(begin)
                    }
                    // Not mapped: the pointer keeps its host value (OpenMP 5.2 firstprivate
                    // rules).
                    Lookup::Absent => begin,
                },
            };
            device_begin.wrapping_add(host_base.wrapping_sub(begin))
        };
        out.values.push(value as *mut c_void);
    }
    Ok(())
}

/// A private or firstprivate argument: a device buffer, initialized from the host for
/// firstprivate, or (PRIVATE | ATTACH) holding the device address of the pointee.
pub(super) fn private_argument(
    phase: &mut Phase<'_>,
    table: &MappingTable,
    item: &MapItem,
    temporaries: &mut Vec<usize>,
) -> Result<usize> {
    let size = item_size(item);
    let attach = item.kind.contains(MapType::ATTACH);
    let device = phase.device;
    let buffer = crate::ompt::alloc(
        device.id,
        item.begin as usize,
        size.max(POINTER_SIZE),
        || {
            device
                .backend
                .alloc(size.max(POINTER_SIZE), AllocKind::Device)
        },
    )? as usize;
    temporaries.push(buffer);
    if attach {
        // Corresponding-pointer initialization: base is the host pointer, begin its pointee.
        let pointer = item.base as usize;
        let pointee_begin = item.begin as usize;
        // SAFETY: clang's base for PRIVATE | ATTACH is the host pointer variable.
        let host_pointee_base = unsafe { (pointer as *const usize).read_unaligned() };
        let value = match table.find(pointee_begin, 0) {
            Some(entry) if pointee_begin != 0 => entry
                .device_address(pointee_begin)
                .wrapping_sub(pointee_begin.wrapping_sub(host_pointee_base)),
            _ => host_pointee_base,
        };
        phase.transfers.push(Transfer::Pointer {
            device: buffer,
            value,
        });
        return Ok(buffer);
    }
    if item.kind.contains(MapType::TO) && size > 0 {
        let name = || table.find(item.begin as usize, size).map_or(0, |e| e.name);
        info_to_device(phase.device, item.begin as usize, buffer, size, || {
            diag::map_name(name() as *const c_char)
        });
        phase.transfers.push(Transfer::ToDevice {
            host: item.begin as usize,
            device: buffer,
            size,
            shadows: Vec::new(),
        });
    }
    Ok(buffer.wrapping_add((item.base as usize).wrapping_sub(item.begin as usize)))
}

/// A lambda captured a variable by reference: its device copy must refer to the variable's
/// device copy. Clang's item: base = the capture field in the host lambda, begin = the
/// captured variable, MEMBER_OF = the lambda's own item. `before`: the clause items before
/// this one, whose arguments are in `values` (one per `TARGET_PARAM` item, in order).
pub(super) fn fix_lambda_capture(
    phase: &mut Phase<'_>,
    table: &MappingTable,
    before: &[MapItem],
    item: &MapItem,
    values: &[*mut c_void],
) {
    let Some(parent) = item.kind.member_of() else {
        return;
    };
    let Some(lambda) = before.get(parent) else {
        return; // not an argument yet
    };
    if !lambda.kind.contains(MapType::TARGET_PARAM) {
        return;
    }
    let position = before[..parent]
        .iter()
        .filter(|i| i.kind.contains(MapType::TARGET_PARAM))
        .count();
    let Some(&device_lambda) = values.get(position) else {
        return;
    };
    let device_lambda = device_lambda as usize;
    let field =
        device_lambda.wrapping_add((item.base as usize).wrapping_sub(lambda.begin as usize));
    let captured = item.begin as usize;
    let device_captured = match table.lookup(captured, item_size(item)) {
        Lookup::Contained(key) | Lookup::PartialOverlap(key) => {
            table.get(key).expect("looked up").device_address(captured)
        }
        Lookup::Absent => return,
    };
    debug!("lambda capture at device {field:#x} -> {device_captured:#x}");
    // The field lies inside the lambda's device copy, which holds the whole object.
    phase.transfers.push(Transfer::Pointer {
        device: field,
        value: device_captured,
    });
}
