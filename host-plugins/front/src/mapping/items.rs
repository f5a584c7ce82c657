//! Map items as clang passes them, user-defined mappers replaced by their components, and
//! the helpers every phase shares (sizes, names, LLVM's info lines and messages).

use super::short::ShortList;
use super::table::{MapEntry, MappingTable};
use crate::diag::{self, debug};
use crate::runtime::DeviceState;
use diag::Ptr;
use rustomp_abi::{MapType, NonContigDim};
use rustomp_plugin::{ErrorKind, OffloadError};
use std::cell::RefCell;
use std::ffi::{c_char, c_void};

/// One list item of a map clause.
#[derive(Debug, Clone, Copy)]
pub struct MapItem {
    pub base: *mut c_void,
    pub begin: *mut c_void,
    pub size: i64,
    pub kind: MapType,
    pub mapper: *mut c_void,
    /// clang's name of the item (`;expression;file;line;column;;`, with `-g`), or null.
    pub name: *const c_char,
}

/// The arrays clang passes, gathered into items.
#[derive(Default)]
pub struct MapList {
    pub items: ShortList<MapItem>,
}

/// `void mapper(void *handle, void *base, void *begin, int64_t size, int64_t type, void *name)`
pub(super) type MapperFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, i64, i64, *mut c_void);

/// `OMP_MAP_FB_NULLIFY`: a `use_device_ptr` whose pointee is not mapped yields null, not the
/// host pointer (not in the shared `MapType` set: only this module reads it).
pub(super) const FB_NULLIFY: u64 = 0x8000;
/// The map-type bits clang gives a by-reference capture of a lambda mapped into a region.
pub(super) const LAMBDA_CAPTURE: MapType = MapType::PTR_AND_OBJ
    .union(MapType::LITERAL)
    .union(MapType::IMPLICIT);
pub(super) const POINTER_SIZE: usize = std::mem::size_of::<usize>();

thread_local! {
    /// Components reported by the mapper function running on this thread. Mapper functions
    /// run synchronously inside [`expand`], which saves and restores the list around each call.
    static MAPPER_COMPONENTS: RefCell<Vec<MapItem>> = const { RefCell::new(Vec::new()) };
}

/// `__tgt_push_mapper_component`: a user-defined mapper reports one component.
pub fn push_mapper_component(item: MapItem) {
    MAPPER_COMPONENTS.with(|c| c.borrow_mut().push(item));
}

pub fn mapper_num_components() -> i64 {
    MAPPER_COMPONENTS.with(|c| c.borrow().len() as i64)
}

impl MapList {
    /// An empty list, filled by [`gather`](Self::gather) where it lies (it is inline: returning
    /// a filled one would copy it).
    #[inline]
    pub fn new() -> Self {
        MapList {
            items: ShortList::new(),
        }
    }

    /// Appends the items of clang's arrays.
    ///
    /// # Safety
    /// The arrays hold `count` elements each (names and mappers may be null).
    #[allow(
        clippy::too_many_arguments,
        reason = "clang's arrays, one argument each"
    )]
    pub unsafe fn gather(
        &mut self,
        count: i32,
        bases: *mut *mut c_void,
        begins: *mut *mut c_void,
        sizes: *const i64,
        types: *const i64,
        names: *const *const c_char,
        mappers: *mut *mut c_void,
    ) {
        let items = &mut self.items;
        items.reserve(count.max(0) as usize);
        for i in 0..count.max(0) as usize {
            // SAFETY: guaranteed by the caller.
            unsafe {
                items.push(MapItem {
                    base: *bases.add(i),
                    begin: *begins.add(i),
                    size: *sizes.add(i),
                    kind: MapType::from_bits_retain(*types.add(i) as u64),
                    mapper: if mappers.is_null() {
                        std::ptr::null_mut()
                    } else {
                        *mappers.add(i)
                    },
                    name: if names.is_null() {
                        std::ptr::null()
                    } else {
                        *names.add(i)
                    },
                });
            }
        }
    }
}

/// One item to map after user-defined mappers were replaced by their components.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    /// Index of the clause item it came from.
    pub(super) origin: usize,
    /// The list its MEMBER_OF field counts in: the clause (`None`) or the components of the
    /// mapper of clause item `origin`.
    pub(super) list: Option<usize>,
    /// Its index in that list.
    pub(super) index: usize,
    pub(super) item: MapItem,
}

/// Replaces items that have a user-defined mapper by the components the mapper reports.
/// Nested mappers are called by the generated mapper itself, so components carry no mapper.
/// Ending a construct walks this list backwards, which is LLVM's order: clause items last to
/// first, each mapper's components last to first. `steps` (empty) receives them: the caller's
/// inline list, filled where it lies.
pub(super) fn expand(items: &[MapItem], steps: &mut ShortList<Step>) {
    let plain = |(origin, item): (usize, &MapItem)| Step {
        origin,
        list: None,
        index: origin,
        item: *item,
    };
    if items.iter().all(|item| item.mapper.is_null()) {
        // No mapper (the usual case): one step per item, written in one pass.
        steps.extend(items.iter().enumerate().map(plain));
        return;
    }
    steps.reserve(items.len());
    for (origin, item) in items.iter().enumerate() {
        if item.mapper.is_null() {
            steps.push(plain((origin, item)));
            continue;
        }
        let saved = MAPPER_COMPONENTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
        // SAFETY: clang's mapper functions have this signature; they pass the handle only back
        // to `__tgt_push_mapper_component` / `__tgt_mapper_num_components`, which ignore it.
        let mapper: MapperFn = unsafe { std::mem::transmute::<*mut c_void, MapperFn>(item.mapper) };
        // SAFETY: as above; base, begin, size and type are the clause item's own.
        unsafe {
            mapper(
                std::ptr::null_mut(),
                item.base,
                item.begin,
                item.size,
                item.kind.bits() as i64,
                item.name as *mut c_void,
            )
        };
        let components = MAPPER_COMPONENTS.with(|c| std::mem::replace(&mut *c.borrow_mut(), saved));
        // The list item's `always` holds for everything its mapper maps.
        let always = item.kind & MapType::ALWAYS;
        debug!(
            "mapper of item {origin} reported {} component(s)",
            components.len()
        );
        steps.extend(components.into_iter().enumerate().map(|(index, c)| Step {
            origin,
            list: Some(origin),
            index,
            item: MapItem {
                mapper: std::ptr::null_mut(),
                kind: c.kind | always,
                ..c
            },
        }));
    }
}

/// The pointer variable of a PTR_AND_OBJ item (at its base), keeping only the `kept` bits.
pub(super) fn pointer_item(item: &MapItem, kept: MapType) -> MapItem {
    MapItem {
        base: item.base,
        begin: item.base,
        size: POINTER_SIZE as i64,
        kind: item.kind & kept,
        mapper: std::ptr::null_mut(),
        name: std::ptr::null(),
    }
}

pub(super) fn item_size(item: &MapItem) -> usize {
    item.size.max(0) as usize
}

/// The name of the entry at `key`, as LLVM's messages show it.
pub(super) fn entry_name(table: &MappingTable, key: usize) -> String {
    diag::map_name(table.get(key).map_or(0, |e| e.name) as *const c_char)
}

/// LLVM's `LIBOMPTARGET_INFO` 0x20 line for a copy to the device.
pub(super) fn info_to_device(
    device: &DeviceState,
    host: usize,
    device_address: usize,
    size: usize,
    name: impl FnOnce() -> String,
) {
    if diag::info_enabled(diag::infotype::DATA_TRANSFER) {
        rustomp_plugin::diag::info(
            device.id,
            format_args!(
                "Copying data from host to device, HstPtr={}, TgtPtr={}, Size={size}, Name={}",
                Ptr(host),
                Ptr(device_address),
                name()
            ),
        );
    }
}

/// LLVM's `LIBOMPTARGET_INFO` 0x20 line for a copy to the host.
pub(super) fn info_from_device(
    device: &DeviceState,
    host: usize,
    device_address: usize,
    size: usize,
    name: impl FnOnce() -> String,
) {
    if diag::info_enabled(diag::infotype::DATA_TRANSFER) {
        rustomp_plugin::diag::info(
            device.id,
            format_args!(
                "Copying data from device to host, TgtPtr={}, HstPtr={}, Size={size}, Name={}",
                Ptr(device_address),
                Ptr(host),
                name()
            ),
        );
    }
}

/// `INF` for an entry that is never unmapped, else its dynamic count (LLVM's notation).
pub(super) fn dynamic_refs(entry: &MapEntry) -> String {
    if entry.infinite {
        "INF".into()
    } else {
        entry.dynamic_refs.to_string()
    }
}

/// Whether maps of `kind` on `device` use the host's memory directly: `requires
/// unified_shared_memory` on a device that reaches host memory (unless `close`), or the
/// device's automatic zero-copy (LLVM's AMD APU mode, `OMPX_APU_MAPS`).
pub(super) fn zero_copy(device: &DeviceState, kind: MapType) -> bool {
    let usm = crate::runtime::runtime().requires_unified_shared_memory()
        && device.backend.unified_memory().is_ok();
    (usm && !kind.contains(MapType::CLOSE)) || device.backend.uses_auto_zero_copy()
}

/// LLVM's message for a `present` item (`what`: "map type" or "motion") that is not mapped.
pub(super) fn present_missing(what: &str, begin: usize, size: usize) {
    diag::message(format_args!(
        "device mapping required by 'present' {what} modifier does not exist for host address {} ({size} bytes)",
        Ptr(begin)
    ));
}

/// An item that must be mapped and cannot be: LLVM's messages (the 'present' one when the map
/// has the modifier), and the error that ends the construct (reported already, see `report`).
pub(super) fn not_mapped(begin: usize, size: usize, present: bool) -> OffloadError {
    if present {
        present_missing("map type", begin, size);
    }
    let why = if present {
        "'present' map type modifier"
    } else {
        "device failure or illegal mapping"
    };
    let report = format!("Call to getTargetPointer returned null pointer ({why}).");
    diag::error(&report);
    OffloadError::new(ErrorKind::MappingError, report)
}

/// Whether step `n` is the combined entry of a struct mapped member by member: the next item
/// of its list is a member of it.
pub(super) fn is_partial_struct(steps: &[Step], n: usize) -> bool {
    let step = &steps[n];
    step.item.kind.member_of().is_none()
        && steps.get(n + 1).is_some_and(|next| {
            next.list == step.list && next.item.kind.member_of() == Some(step.index)
        })
}

/// Where the device allocation of a struct mapped member by member starts, in bytes before
/// its first mapped member: at the struct's beginning (its base), so that members mapped later
/// by other constructs find room at their offsets (`MappingTable::room_for`), unless that is
/// more than `STRUCT_ROOM` bytes away; then only as far back as keeps the alignment the host
/// copy has (up to 16 bytes), so members keep their alignment.
pub(super) fn struct_padding(item: &MapItem) -> usize {
    let (base, begin) = (item.base as usize, item.begin as usize);
    match begin.checked_sub(base) {
        Some(room) if room <= super::table::STRUCT_ROOM => room,
        _ => alignment_padding(item),
    }
}

/// Padding that gives a struct's device copy the alignment its host copy has (up to 16 bytes),
/// though the mapped part starts after the struct's beginning: members keep their alignment.
pub(super) fn alignment_padding(item: &MapItem) -> usize {
    const MAX_ALIGNMENT: usize = 16;
    let base = item.base as usize;
    let alignment = if base == 0 {
        MAX_ALIGNMENT
    } else {
        (1usize << base.trailing_zeros()).min(MAX_ALIGNMENT)
    };
    (item.begin as usize) % alignment
}

/// Items of a construct that map memory (not private copies, attachments or descriptors).
pub(super) fn maps_memory(item: &MapItem) -> bool {
    !item
        .kind
        .intersects(MapType::LITERAL | MapType::PRIVATE | MapType::ATTACH | MapType::NON_CONTIG)
}

/// LLVM's `LIBOMPTARGET_INFO` 0x1 listing of a construct's map items.
pub fn print_kernel_arguments(id: usize, region: &str, loc: &diag::Location, items: &[MapItem]) {
    let at = loc.source();
    rustomp_plugin::diag::info(
        id,
        format_args!(
            "{region} at {}:{}:{} with {} arguments:",
            at.file,
            at.line,
            at.column,
            items.len()
        ),
    );
    for item in items {
        let k = item.kind;
        let kind = if k.contains(MapType::ATTACH) && k.contains(MapType::ALWAYS) {
            "attach:always"
        } else if k.contains(MapType::ATTACH) {
            "attach"
        } else if k.contains(MapType::TO | MapType::FROM) {
            "tofrom"
        } else if k.contains(MapType::TO) {
            "to"
        } else if k.contains(MapType::FROM) {
            "from"
        } else if k.contains(MapType::PRIVATE) {
            "private"
        } else if k.contains(MapType::LITERAL) {
            "firstprivate"
        } else if item.size != 0 {
            "alloc"
        } else {
            "use_address"
        };
        let implicit = if k.contains(MapType::IMPLICIT) {
            "(implicit)"
        } else {
            ""
        };
        rustomp_plugin::diag::info(
            id,
            format_args!(
                "{kind}({})[{}] {implicit}",
                diag::map_name(item.name),
                item.size
            ),
        );
    }
}

/// The contiguous pieces `(byte offset from the base, length)` of a non-contiguous section.
/// Dimensions are outermost first; a piece's offset in dimension `d` is `(offset + i) * stride`
/// (clang-22's descriptor: the offset counts strides). Inner dimensions whose pieces abut are
/// merged, so a section of whole rows is copied row by row, not element by element.
pub(super) fn non_contiguous_pieces(dims: &[NonContigDim]) -> Vec<(i64, i64)> {
    let Some((innermost, outer)) = dims.split_last() else {
        return Vec::new();
    };
    let mut inner_offset = innermost.offset * innermost.stride;
    let mut length = innermost.count * innermost.stride;
    let mut walked = outer.len();
    while walked > 0 {
        let dim = &outer[walked - 1];
        if dim.stride != length {
            break;
        }
        inner_offset += dim.offset * dim.stride;
        length *= dim.count;
        walked -= 1;
    }
    let mut pieces = Vec::new();
    fn walk(dims: &[NonContigDim], offset: i64, inner: (i64, i64), pieces: &mut Vec<(i64, i64)>) {
        match dims.split_first() {
            None => pieces.push((offset + inner.0, inner.1)),
            Some((dim, rest)) => {
                for i in 0..dim.count.max(0) {
                    walk(rest, offset + (dim.offset + i) * dim.stride, inner, pieces);
                }
            }
        }
    }
    walk(&outer[..walked], 0, (inner_offset, length), &mut pieces);
    pieces
}

/// The dimension descriptors of a non-contiguous item: `begin` points at `size` of them.
pub(super) fn non_contiguous_dims(item: &MapItem) -> Option<&[NonContigDim]> {
    let dims_count = item_size(item);
    if dims_count == 0 || item.begin.is_null() {
        return None;
    }
    // SAFETY: clang passes `size` descriptors at `begin` for NON_CONTIG items; they live as long
    // as the construct, which outlives the borrow of its item.
    Some(unsafe { std::slice::from_raw_parts(item.begin as *const NonContigDim, dims_count) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(offset: i64, count: i64, stride: i64) -> NonContigDim {
        NonContigDim {
            offset,
            count,
            stride,
        }
    }

    #[test]
    fn strided_one_dimension_copies_one_element_per_stride() {
        // a[0:4:2] of int: clang adds the element dimension {0, 1, 4}.
        let pieces = non_contiguous_pieces(&[dim(0, 4, 8), dim(0, 1, 4)]);
        assert_eq!(pieces, vec![(0, 4), (8, 4), (16, 4), (24, 4)]);
    }

    #[test]
    fn whole_rows_are_merged() {
        // m[0:3:2][0:8] of int m[6][8]: rows 0, 2, 4, each 32 contiguous bytes.
        let pieces = non_contiguous_pieces(&[dim(0, 3, 64), dim(0, 8, 4), dim(0, 1, 4)]);
        assert_eq!(pieces, vec![(0, 32), (64, 32), (128, 32)]);
    }

    #[test]
    fn offsets_count_strides() {
        // m[1:3][0:3:2]: rows 1..3, columns 0, 2, 4.
        let pieces = non_contiguous_pieces(&[dim(1, 3, 32), dim(0, 3, 8), dim(0, 1, 4)]);
        assert_eq!(pieces.len(), 9);
        assert_eq!(pieces[0], (32, 4));
        assert_eq!(pieces[1], (40, 4));
        assert_eq!(pieces[3], (64, 4));
        assert_eq!(pieces[8], (96 + 16, 4));
    }
}
