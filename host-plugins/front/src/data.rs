//! The map clauses as clang-22 lowers them: `target data` begin/end, `target update`, and the
//! argument list of a kernel launch. Semantics follow LLVM's libomptarget: dynamic and hold
//! reference counts, copy on first map or `always`, copy back when the last reference goes.

use crate::diag::{self, debug, info};
use crate::runtime::DeviceState;
use rustomp_abi::{MapType, NonContigDim};
use rustomp_plugin::mapping::{Lookup, MapEntry};
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Result};
use std::cell::RefCell;
use std::ffi::c_void;

/// One list item of a map clause.
#[derive(Debug, Clone, Copy)]
pub struct MapItem {
    pub base: *mut c_void,
    pub begin: *mut c_void,
    pub size: i64,
    pub kind: MapType,
    pub mapper: *mut c_void,
}

/// The arrays clang passes, gathered into items (mappers expanded into their components).
pub struct MapList {
    pub items: Vec<MapItem>,
}

/// `void mapper(void *handle, void *base, void *begin, int64_t size, int64_t type, void *name)`
type MapperFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, i64, i64, *mut c_void);

thread_local! {
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
    /// # Safety
    /// The arrays hold `count` elements each (names and mappers may be null).
    pub unsafe fn from_raw(
        count: i32,
        bases: *mut *mut c_void,
        begins: *mut *mut c_void,
        sizes: *const i64,
        types: *const i64,
        mappers: *mut *mut c_void,
    ) -> Self {
        let mut items = Vec::with_capacity(count.max(0) as usize);
        for i in 0..count.max(0) as usize {
            // SAFETY: guaranteed by the caller.
            unsafe {
                items.push(MapItem {
                    base: *bases.add(i),
                    begin: *begins.add(i),
                    size: *sizes.add(i),
                    kind: MapType::from_bits_retain(*types.add(i) as u64),
                    mapper: if mappers.is_null() { std::ptr::null_mut() } else { *mappers.add(i) },
                });
            }
        }
        Self { items }
    }

    /// Replaces items that have a user-defined mapper by the components the mapper reports.
    pub fn expand_mappers(&self) -> Vec<MapItem> {
        let mut out = Vec::with_capacity(self.items.len());
        for item in &self.items {
            if item.mapper.is_null() {
                out.push(*item);
                continue;
            }
            let saved = MAPPER_COMPONENTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
            // SAFETY: clang's mapper functions have this signature; the handle is unused by them
            // beyond passing it back to `__tgt_push_mapper_component`.
            let mapper: MapperFn = unsafe { std::mem::transmute(item.mapper) };
            // SAFETY: as above.
            unsafe {
                mapper(std::ptr::null_mut(), item.base, item.begin, item.size, item.kind.bits() as i64, std::ptr::null_mut())
            };
            let components = MAPPER_COMPONENTS.with(|c| std::mem::replace(&mut *c.borrow_mut(), saved));
            out.extend(components.into_iter().map(|c| MapItem { mapper: std::ptr::null_mut(), ..c }));
        }
        out
    }
}

/// The pointer variable of a PTR_AND_OBJ item (at its base), keeping only the `kept` bits.
fn pointer_item(item: &MapItem, kept: MapType) -> MapItem {
    MapItem {
        base: item.base,
        begin: item.base,
        size: std::mem::size_of::<usize>() as i64,
        kind: item.kind & kept,
        mapper: std::ptr::null_mut(),
    }
}

fn skip_for_mapping(kind: MapType) -> bool {
    kind.intersects(MapType::LITERAL | MapType::PRIVATE) || kind.contains(MapType::NON_CONTIG)
}

fn mapping_error(device: &DeviceState, loc: &str, what: String) -> OffloadError {
    OffloadError::new(ErrorKind::MappingError, format!("device {} at {loc}: {what}", device.id))
}

/// Maps one item: finds or creates its entry, counts the reference, copies when due.
/// Returns the device address of `begin`.
/// `fresh` collects the entries this construct created: members of a struct (which share
/// their parent's entry without counting a reference) are copied in when the entry is fresh.
fn map_one(
    device: &DeviceState,
    item: &MapItem,
    update_ref: bool,
    fresh: &mut Vec<usize>,
    loc: &str,
) -> Result<usize> {
    let begin = item.begin as usize;
    let size = item.size.max(0) as usize;
    let hold = item.kind.contains(MapType::OMPX_HOLD);
    let mut table = device.table();
    match table.lookup(begin, size) {
        Lookup::Contained(key) => {
            let entry = table.get_mut(key).expect("looked up");
            if update_ref && !entry.infinite {
                if hold { entry.hold_refs += 1 } else { entry.dynamic_refs += 1 }
            }
            let device_address = entry.device_address(begin);
            info!(diag::infotype::MAPPING_EXISTS, device.id, "mapping exists: host {begin:#x} -> device {device_address:#x}, {size} bytes");
            let first_use = !update_ref && fresh.contains(&key);
            if item.kind.contains(MapType::TO) && (item.kind.contains(MapType::ALWAYS) || first_use) && size > 0 {
                // SAFETY: the host range is the user's mapped object; the device range lies in the entry.
                unsafe { device.backend.copy_to_device(device_address as *mut c_void, item.begin, size)? };
            }
            Ok(device_address)
        }
        Lookup::PartialOverlap(key) => {
            let entry = table.get(key).expect("looked up");
            Err(mapping_error(
                device,
                loc,
                format!(
                    "host range {begin:#x}+{size} only partly overlaps the mapped range {:#x}+{} (explicit extension is not allowed)",
                    entry.host_begin,
                    entry.host_end - entry.host_begin
                ),
            ))
        }
        Lookup::Absent => {
            if item.kind.contains(MapType::PRESENT) {
                return Err(mapping_error(
                    device,
                    loc,
                    format!("'present' map of host address {begin:#x} ({size} bytes), which is not mapped"),
                ));
            }
            if size == 0 {
                // A zero-length section maps nothing; the region sees the host address.
                return Ok(begin);
            }
            let device_begin = device.backend.alloc(size, AllocKind::Device)? as usize;
            fresh.push(begin);
            table.insert(MapEntry {
                host_begin: begin,
                host_end: begin + size,
                device_begin,
                dynamic_refs: (!hold) as u64,
                hold_refs: hold as u64,
                infinite: false,
                owned: true,
            });
            info!(diag::infotype::MAPPING_CHANGED, device.id, "mapped host {begin:#x} -> device {device_begin:#x}, {size} bytes");
            if item.kind.contains(MapType::TO) && size > 0 {
                // SAFETY: as above; the device range was just allocated with `size` bytes.
                unsafe { device.backend.copy_to_device(device_begin as *mut c_void, item.begin, size)? };
            }
            Ok(device_begin)
        }
    }
}

/// Writes the device address of the pointee into the device copy of the pointer at `base`
/// (pointer attachment), when both are mapped.
fn attach(device: &DeviceState, pointer_location: usize, pointee: usize) -> Result<()> {
    let table = device.table();
    let Some(slot) = table.find(pointer_location, std::mem::size_of::<usize>()) else { return Ok(()) };
    let Some(target) = table.find(pointee, 0) else { return Ok(()) };
    // SAFETY: `pointer_location` is a mapped host pointer variable (clang's base for attach).
    let host_pointer = unsafe { *(pointer_location as *const usize) };
    let device_pointer = target.device_address(pointee).wrapping_sub(pointee.wrapping_sub(host_pointer));
    let slot_address = slot.device_address(pointer_location);
    debug!("attach: device pointer at {slot_address:#x} = {device_pointer:#x}");
    // SAFETY: the slot lies in a mapped device range of pointer size.
    unsafe {
        device.backend.copy_to_device(
            slot_address as *mut c_void,
            &device_pointer as *const usize as *const c_void,
            std::mem::size_of::<usize>(),
        )
    }
}

/// `target data` / `target enter data` / the map part of a `target` construct.
/// `return_bases` receives device addresses for `use_device_ptr`/`use_device_addr` items.
pub fn begin(device: &DeviceState, items: &[MapItem], mut return_bases: Option<&mut [*mut c_void]>, loc: &str) -> Result<()> {
    let mut attachments = Vec::new();
    let mut fresh = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if skip_for_mapping(item.kind) {
            continue;
        }
        if item.kind.contains(MapType::ATTACH) {
            attachments.push((item.base as usize, item.begin as usize));
            continue;
        }
        let update_ref = item.kind.member_of().is_none();
        if item.kind.contains(MapType::PTR_AND_OBJ) {
            let pointer = pointer_item(item, MapType::OMPX_HOLD);
            map_one(device, &pointer, update_ref, &mut fresh, loc)?;
            map_one(device, item, true, &mut fresh, loc)?;
            // For PTR_AND_OBJ clang's base is the host address of the pointer variable.
            attachments.push((item.base as usize, item.begin as usize));
        } else {
            let device_begin = map_one(device, item, update_ref, &mut fresh, loc)?;
            if item.kind.contains(MapType::RETURN_PARAM) {
                if let Some(bases) = return_bases.as_deref_mut() {
                    let delta = (item.base as usize).wrapping_sub(item.begin as usize);
                    bases[i] = device_begin.wrapping_add(delta) as *mut c_void;
                }
            }
        }
    }
    for (pointer_location, pointee) in attachments {
        attach(device, pointer_location, pointee)?;
    }
    Ok(())
}

/// Removes one reference; copies back and frees when due.
fn unmap_one(device: &DeviceState, item: &MapItem, update_ref: bool, frees: &mut Vec<usize>, loc: &str) -> Result<()> {
    let begin = item.begin as usize;
    let size = item.size.max(0) as usize;
    let mut table = device.table();
    let key = match table.lookup(begin, size) {
        Lookup::Contained(key) => key,
        Lookup::PartialOverlap(_) | Lookup::Absent => {
            if item.kind.contains(MapType::PRESENT) {
                return Err(mapping_error(
                    device,
                    loc,
                    format!("'present' unmap of host address {begin:#x} ({size} bytes), which is not mapped"),
                ));
            }
            return Ok(());
        }
    };
    let entry = table.get_mut(key).expect("looked up");
    if update_ref && !entry.infinite {
        if item.kind.contains(MapType::DELETE) {
            entry.dynamic_refs = 0;
        } else if item.kind.contains(MapType::OMPX_HOLD) {
            entry.hold_refs = entry.hold_refs.saturating_sub(1);
        } else {
            entry.dynamic_refs = entry.dynamic_refs.saturating_sub(1);
        }
    }
    let last = !entry.infinite && entry.total_refs() == 0;
    // A struct member's entry loses its parent's reference later in this same construct.
    let last_use = last || (!update_ref && !entry.infinite && entry.total_refs() == 1);
    let device_address = entry.device_address(begin);
    if item.kind.contains(MapType::FROM) && (last_use || item.kind.contains(MapType::ALWAYS)) && size > 0 {
        // SAFETY: the host range is the user's object; the device range lies in the entry.
        unsafe { device.backend.copy_from_device(item.begin, device_address as *const c_void, size)? };
    }
    if last {
        let entry = table.remove(key).expect("looked up");
        info!(diag::infotype::MAPPING_CHANGED, device.id, "unmapped host {:#x} ({} bytes)", entry.host_begin, entry.host_end - entry.host_begin);
        if entry.owned {
            frees.push(entry.device_begin);
        }
    }
    Ok(())
}

/// End of `target data` / `target exit data` / a `target` construct.
pub fn end(device: &DeviceState, items: &[MapItem], loc: &str) -> Result<()> {
    let mut frees = Vec::new();
    for item in items.iter().rev() {
        if skip_for_mapping(item.kind) || item.kind.contains(MapType::ATTACH) {
            continue;
        }
        let update_ref = item.kind.member_of().is_none();
        unmap_one(device, item, update_ref, &mut frees, loc)?;
        if item.kind.contains(MapType::PTR_AND_OBJ) {
            let pointer = pointer_item(item, MapType::OMPX_HOLD | MapType::DELETE);
            unmap_one(device, &pointer, update_ref, &mut frees, loc)?;
        }
    }
    for ptr in frees {
        device.backend.free(ptr as *mut c_void, AllocKind::Device)?;
    }
    Ok(())
}

/// `target update to/from`.
pub fn update(device: &DeviceState, items: &[MapItem], loc: &str) -> Result<()> {
    for item in items {
        if item.kind.contains(MapType::NON_CONTIG) {
            update_non_contiguous(device, item, loc)?;
            continue;
        }
        let begin = item.begin as usize;
        let size = item.size.max(0) as usize;
        let address = match device.table().find(begin, size) {
            Some(entry) => entry.device_address(begin),
            None if item.kind.contains(MapType::PRESENT) => {
                return Err(mapping_error(device, loc, format!("'present' update of unmapped host address {begin:#x}")));
            }
            None => continue,
        };
        copy_direction(device, item.kind, begin, address, size)?;
    }
    Ok(())
}

fn copy_direction(device: &DeviceState, kind: MapType, host: usize, device_address: usize, size: usize) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    // SAFETY: `host` lies in the user's mapped object and `device_address` in its device copy.
    unsafe {
        if kind.contains(MapType::TO) {
            device.backend.copy_to_device(device_address as *mut c_void, host as *const c_void, size)?;
        }
        if kind.contains(MapType::FROM) {
            device.backend.copy_from_device(host as *mut c_void, device_address as *const c_void, size)?;
        }
    }
    Ok(())
}

/// Non-contiguous `target update`: `begin` points at `size` dimension descriptors (outermost
/// first, strides in bytes); the innermost dimension's `count * stride` bytes are contiguous.
fn update_non_contiguous(device: &DeviceState, item: &MapItem, loc: &str) -> Result<()> {
    let dims_count = item.size.max(0) as usize;
    if dims_count == 0 {
        return Ok(());
    }
    // SAFETY: clang passes `size` descriptors at `begin` for NON_CONTIG items.
    let dims = unsafe { std::slice::from_raw_parts(item.begin as *const NonContigDim, dims_count) };
    let base = item.base as usize;
    let entry = device.table().find(base, 0).cloned();
    let Some(entry) = entry else {
        if item.kind.contains(MapType::PRESENT) {
            return Err(mapping_error(device, loc, format!("'present' update of unmapped host address {base:#x}")));
        }
        return Ok(());
    };
    fn walk(dims: &[NonContigDim], offset: i64, visit: &mut dyn FnMut(i64, i64) -> Result<()>) -> Result<()> {
        let (dim, rest) = dims.split_first().expect("non-empty");
        if rest.is_empty() {
            return visit(offset + dim.offset * dim.stride, dim.count * dim.stride);
        }
        for i in 0..dim.count {
            walk(rest, offset + (dim.offset + i) * dim.stride, visit)?;
        }
        Ok(())
    }
    walk(dims, 0, &mut |offset, bytes| {
        let host = base.wrapping_add(offset as usize);
        if entry.device_address(base) == 0 || host + bytes as usize > entry.host_end {
            return Err(mapping_error(device, loc, format!("non-contiguous update at {host:#x}+{bytes} leaves the mapped range")));
        }
        copy_direction(device, item.kind, host, entry.device_address(host), bytes as usize)
    })
}

/// The kernel's argument values for the `TARGET_PARAM` items, and device buffers to free after.
pub fn kernel_arguments(device: &DeviceState, items: &[MapItem], loc: &str) -> Result<(Vec<*mut c_void>, Vec<usize>)> {
    let mut values = Vec::new();
    let mut temporaries = Vec::new();
    for item in items {
        if !item.kind.contains(MapType::TARGET_PARAM) {
            continue;
        }
        let delta = (item.base as usize).wrapping_sub(item.begin as usize);
        if item.kind.contains(MapType::LITERAL) {
            values.push(item.begin);
        } else if item.kind.contains(MapType::PRIVATE) {
            let size = item.size.max(0) as usize;
            let buffer = device.backend.alloc(size, AllocKind::Device)?;
            // SAFETY: the host object holds `size` bytes; the buffer was just allocated.
            unsafe { device.backend.copy_to_device(buffer, item.begin, size)? };
            temporaries.push(buffer as usize);
            values.push((buffer as usize).wrapping_add(delta) as *mut c_void);
        } else {
            let begin = item.begin as usize;
            let found = device.table().find(begin, item.size.max(0) as usize).map(|e| e.device_address(begin));
            match found {
                Some(address) => values.push(address.wrapping_add(delta) as *mut c_void),
                None if item.size == 0 || item.begin.is_null() => values.push(item.base),
                None => {
                    return Err(mapping_error(
                        device,
                        loc,
                        format!("kernel argument at host address {begin:#x} ({} bytes) is not mapped", item.size),
                    ))
                }
            }
        }
    }
    Ok((values, temporaries))
}
