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

use crate::diag::{self, debug, info};
use crate::runtime::DeviceState;
use rustomp_abi::{MapType, NonContigDim};
use rustomp_plugin::mapping::{Lookup, MapEntry, MappingTable, ShadowPointer};
use rustomp_plugin::{AllocKind, Device, ErrorKind, OffloadError, Result};
use diag::Ptr;
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;

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
pub struct MapList {
    pub items: Vec<MapItem>,
}

/// `void mapper(void *handle, void *base, void *begin, int64_t size, int64_t type, void *name)`
type MapperFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, i64, i64, *mut c_void);

/// `OMP_MAP_FB_NULLIFY`: a `use_device_ptr` whose pointee is not mapped yields null, not the
/// host pointer (not in the shared `MapType` set: only this module reads it).
const FB_NULLIFY: u64 = 0x8000;
/// The map-type bits clang gives a by-reference capture of a lambda mapped into a region.
const LAMBDA_CAPTURE: MapType = MapType::PTR_AND_OBJ.union(MapType::LITERAL).union(MapType::IMPLICIT);
const POINTER_SIZE: usize = std::mem::size_of::<usize>();

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
    /// # Safety
    /// The arrays hold `count` elements each (names and mappers may be null).
    pub unsafe fn from_raw(
        count: i32,
        bases: *mut *mut c_void,
        begins: *mut *mut c_void,
        sizes: *const i64,
        types: *const i64,
        names: *const *const c_char,
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
                    name: if names.is_null() { std::ptr::null() } else { *names.add(i) },
                });
            }
        }
        Self { items }
    }
}

/// One item to map after user-defined mappers were replaced by their components.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Index of the clause item it came from.
    origin: usize,
    /// The list its MEMBER_OF field counts in: the clause (`None`) or the components of the
    /// mapper of clause item `origin`.
    list: Option<usize>,
    /// Its index in that list.
    index: usize,
    item: MapItem,
}

/// Replaces items that have a user-defined mapper by the components the mapper reports.
/// Nested mappers are called by the generated mapper itself, so components carry no mapper.
/// Ending a construct walks this list backwards, which is LLVM's order: clause items last to
/// first, each mapper's components last to first.
fn expand(items: &[MapItem]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(items.len());
    for (origin, item) in items.iter().enumerate() {
        if item.mapper.is_null() {
            steps.push(Step { origin, list: None, index: origin, item: *item });
            continue;
        }
        let saved = MAPPER_COMPONENTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
        // SAFETY: clang's mapper functions have this signature; they pass the handle only back
        // to `__tgt_push_mapper_component` / `__tgt_mapper_num_components`, which ignore it.
        let mapper: MapperFn = unsafe { std::mem::transmute::<*mut c_void, MapperFn>(item.mapper) };
        // SAFETY: as above; base, begin, size and type are the clause item's own.
        unsafe {
            mapper(std::ptr::null_mut(), item.base, item.begin, item.size, item.kind.bits() as i64, item.name as *mut c_void)
        };
        let components = MAPPER_COMPONENTS.with(|c| std::mem::replace(&mut *c.borrow_mut(), saved));
        // The list item's `always` holds for everything its mapper maps.
        let always = item.kind & MapType::ALWAYS;
        debug!("mapper of item {origin} reported {} component(s)", components.len());
        steps.extend(components.into_iter().enumerate().map(|(index, c)| Step {
            origin,
            list: Some(origin),
            index,
            item: MapItem { mapper: std::ptr::null_mut(), kind: c.kind | always, ..c },
        }));
    }
    steps
}

/// The pointer variable of a PTR_AND_OBJ item (at its base), keeping only the `kept` bits.
fn pointer_item(item: &MapItem, kept: MapType) -> MapItem {
    MapItem {
        base: item.base,
        begin: item.base,
        size: POINTER_SIZE as i64,
        kind: item.kind & kept,
        mapper: std::ptr::null_mut(),
        name: std::ptr::null(),
    }
}


fn item_size(item: &MapItem) -> usize {
    item.size.max(0) as usize
}

/// The name of the entry at `key`, as LLVM's messages show it.
fn entry_name(table: &MappingTable, key: usize) -> String {
    diag::map_name(table.get(key).map_or(0, |e| e.name) as *const c_char)
}

/// LLVM's `LIBOMPTARGET_INFO` 0x20 line for a copy to the device.
fn info_to_device(device: &DeviceState, host: usize, device_address: usize, size: usize, name: impl FnOnce() -> String) {
    if diag::info_enabled(diag::infotype::DATA_TRANSFER) {
        rustomp_plugin::diag::info(
            device.id,
            format_args!("Copying data from host to device, HstPtr={}, TgtPtr={}, Size={size}, Name={}", Ptr(host), Ptr(device_address), name()),
        );
    }
}

/// LLVM's `LIBOMPTARGET_INFO` 0x20 line for a copy to the host.
fn info_from_device(device: &DeviceState, host: usize, device_address: usize, size: usize, name: impl FnOnce() -> String) {
    if diag::info_enabled(diag::infotype::DATA_TRANSFER) {
        rustomp_plugin::diag::info(
            device.id,
            format_args!("Copying data from device to host, TgtPtr={}, HstPtr={}, Size={size}, Name={}", Ptr(device_address), Ptr(host), name()),
        );
    }
}

/// Numbers the phases of constructs: the owner of their busy ranges.
static NEXT_PHASE: AtomicU64 = AtomicU64::new(1);

/// One device copy, decided under the table lock and performed after it is released.
#[derive(Debug)]
enum Transfer {
    /// Host → device; the attached pointers inside the range then get their device values
    /// (the host copy holds host addresses there).
    ToDevice { host: usize, device: usize, size: usize, shadows: Vec<ShadowPointer> },
    /// Device → host, keeping the host values of the attached pointers inside the range (their
    /// device copies hold device addresses).
    FromDevice { host: usize, device: usize, size: usize, shadows: Vec<ShadowPointer> },
    /// A pointer the runtime computed (an attachment, a lambda capture, a private pointer).
    Pointer { device: usize, value: usize },
}

impl Transfer {
    fn perform(&self, backend: &dyn Device) -> Result<()> {
        let write_pointer = |device: usize, value: usize| {
            // SAFETY: `device` is a pointer slot inside an entry this phase holds busy, or inside
            // a private buffer it owns.
            unsafe { backend.copy_to_device(device as *mut c_void, &value as *const usize as *const c_void, POINTER_SIZE) }
        };
        match self {
            Transfer::ToDevice { host, device, size, shadows } => {
                // SAFETY: `host` is the user's object of `size` bytes; the device range lies in
                // an entry this phase holds busy (nobody frees it meanwhile) or in its own buffer.
                unsafe { backend.copy_to_device(*device as *mut c_void, *host as *const c_void, *size)? };
                shadows.iter().try_for_each(|s| write_pointer(s.device_address, s.device_value))
            }
            Transfer::FromDevice { host, device, size, shadows } => {
                // SAFETY: each shadow's host address is a pointer variable inside the user's range.
                let kept: Vec<usize> = shadows.iter().map(|s| unsafe { (s.host_address as *const usize).read_unaligned() }).collect();
                // SAFETY: as for `ToDevice`.
                unsafe { backend.copy_from_device(*host as *mut c_void, *device as *const c_void, *size)? };
                for (shadow, value) in shadows.iter().zip(kept) {
                    debug!("keeping host pointer at {:#x} = {value:#x}", shadow.host_address);
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
enum Undo {
    Created(usize),
    Counted { key: usize, hold: bool },
    Attached { key: usize, host_address: usize, previous: Option<ShadowPointer> },
}

/// One phase of a construct (entering, leaving, update): the table changes it made under the
/// lock, the copies they call for, performed after the lock is released (transfers of
/// different entries overlap, see `MappingTable::mark_busy`), and the allocations to free.
struct Phase<'d> {
    device: &'d DeviceState,
    owner: u64,
    transfers: Vec<Transfer>,
    undo: Vec<Undo>,
    /// Device memory of entries that left the table: freed once the copies are done.
    frees: Vec<usize>,
}

impl<'d> Phase<'d> {
    /// A new phase and the device's table, once no other phase has copies in flight for what
    /// `items` touch. A phase waits only while it holds nothing busy itself: no deadlock.
    fn start<'a>(device: &'d DeviceState, items: impl Iterator<Item = &'a MapItem> + Clone) -> (Self, MutexGuard<'d, MappingTable>) {
        let owner = NEXT_PHASE.fetch_add(1, Ordering::Relaxed);
        let mut table = device.table();
        while table.has_busy() && items.clone().any(|item| touches_busy(&table, item, owner)) {
            table = device.wait_for_transfers(table);
        }
        (Self { device, owner, transfers: Vec::new(), undo: Vec::new(), frees: Vec::new() }, table)
    }

    /// Marks the entry at `key` busy: its data is in flight.
    fn hold(&self, table: &mut MappingTable, key: usize) {
        if let Some(entry) = table.get(key) {
            let (begin, end) = (entry.host_begin, entry.host_end);
            table.mark_busy(begin, end, self.owner);
        }
    }

    /// Copies host → device into entry `key`.
    fn copy_to(&mut self, table: &mut MappingTable, key: usize, host: usize, device_address: usize, size: usize) {
        info_to_device(self.device, host, device_address, size, || entry_name(table, key));
        let shadows = table.shadows_within(key, host, size);
        self.hold(table, key);
        self.transfers.push(Transfer::ToDevice { host, device: device_address, size, shadows });
    }

    /// Copies device → host from entry `key`.
    fn copy_from(&mut self, table: &mut MappingTable, key: usize, host: usize, device_address: usize, size: usize) {
        info_from_device(self.device, host, device_address, size, || entry_name(table, key));
        let shadows = table.shadows_within(key, host, size);
        self.hold(table, key);
        self.transfers.push(Transfer::FromDevice { host, device: device_address, size, shadows });
    }

    /// Performs the copies outside the lock, then ends this phase's busy ranges and frees what
    /// left the table. A failure, of the table changes (`decided`) or of a copy, undoes the
    /// changes of an entering phase (`undo_on_failure`: the construct did not happen, and its
    /// new entries go); a leaving phase still completes what it decided (an entry whose last
    /// reference went is removed and freed, even when its copy back failed).
    fn complete(mut self, mut table: MutexGuard<'d, MappingTable>, decided: Result<()>, undo_on_failure: bool) -> Result<()> {
        if decided.is_err() && undo_on_failure {
            self.transfers.clear();
            self.undo(&mut table);
        }
        let mut copied = Ok(());
        if !self.transfers.is_empty() {
            drop(table);
            let backend = &*self.device.backend;
            copied = self.transfers.iter().try_for_each(|t| t.perform(backend));
            table = self.device.table();
            if copied.is_err() && undo_on_failure {
                self.undo(&mut table);
            }
        }
        crate::profile::table_size(self.device.id, table.len());
        if table.release(self.owner) {
            self.device.transfers_ended(&table);
        }
        drop(table);
        let mut freed = Ok(());
        for ptr in self.frees.drain(..) {
            freed = freed.and(free_device(self.device, ptr));
        }
        decided.and(copied).and(freed)
    }

    /// Removes the entry at `key` (LLVM's 0x8 line gives `size`, the item's, else the entry's);
    /// its device memory, if the runtime allocated it, goes to the phase's frees.
    fn remove_entry(&mut self, table: &mut MappingTable, key: usize, size: Option<usize>) {
        let Some((entry, allocation)) = table.remove_with_allocation(key) else { return };
        info!(
            diag::infotype::MAPPING_CHANGED,
            self.device.id,
            "Removing map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, Name={}",
            Ptr(entry.host_begin),
            Ptr(entry.device_begin),
            size.unwrap_or(entry.host_end - entry.host_begin),
            diag::map_name(entry.name as *const c_char)
        );
        if entry.owned {
            self.frees.push(allocation);
        }
    }

    fn undo(&mut self, table: &mut MappingTable) {
        for change in std::mem::take(&mut self.undo).into_iter().rev() {
            match change {
                Undo::Created(key) => self.remove_entry(table, key, None),
                Undo::Counted { key, hold } => {
                    if let Some(entry) = table.get_mut(key) {
                        let counter = if hold { &mut entry.hold_refs } else { &mut entry.dynamic_refs };
                        *counter = counter.saturating_sub(1);
                    }
                }
                Undo::Attached { key, host_address, previous } => table.detach(key, host_address, previous),
            }
        }
    }
}

/// Frees device memory the runtime allocated for a map entry or a private copy.
pub fn free_device(device: &DeviceState, ptr: usize) -> Result<()> {
    // SAFETY: callers pass device memory this runtime allocated on `device` (an entry's or a
    // private copy's), when its last reference goes, once.
    unsafe { device.backend.free(ptr as *mut c_void, AllocKind::Device) }
}

/// Whether what `item` looks up overlaps a range another phase (not `owner`) has copies in
/// flight for.
fn touches_busy(table: &MappingTable, item: &MapItem, owner: u64) -> bool {
    let (base, begin, size) = (item.base as usize, item.begin as usize, item_size(item));
    if item.kind.contains(MapType::LITERAL) {
        return false;
    }
    if item.kind.contains(MapType::NON_CONTIG) {
        return non_contiguous_dims(item)
            .is_some_and(|dims| non_contiguous_pieces(dims).iter().any(|&(o, n)| table.is_blocked(base.wrapping_add(o as usize), n.max(0) as usize, owner)));
    }
    if item.kind.contains(MapType::ATTACH) {
        // The pointer variable at `base` and the pointee at `begin`.
        return table.is_blocked(base, size.max(POINTER_SIZE), owner) || table.is_blocked(begin, 0, owner);
    }
    let pointer = item.kind.contains(MapType::PTR_AND_OBJ) && table.is_blocked(base, POINTER_SIZE, owner);
    pointer || table.is_blocked(begin, size, owner)
}

/// What the map-entering part of one construct did so far.
#[derive(Default)]
struct Entering {
    /// Host ranges of the entries this construct created: their `to` data is due, and a pointer
    /// or pointee among them makes an attachment due.
    created: Vec<(usize, usize)>,
    /// Pointer attachments, performed once every item is mapped.
    attachments: Vec<Attachment>,
}

impl Entering {
    fn created_entry(&self, key: usize) -> bool {
        self.created.iter().any(|&(begin, _)| begin == key)
    }
    fn created_covers(&self, address: usize) -> bool {
        self.created.iter().any(|&(begin, end)| begin <= address && address < end)
    }
}

/// "Make the device copy of the pointer at `pointer` point at the device copy of `pointee_begin`".
struct Attachment {
    pointer: usize,
    pointer_size: usize,
    pointee_begin: usize,
    /// Attach even when neither side is new (`attach(always)`, and PTR_AND_OBJ items).
    always: bool,
}

/// Maps one item: finds or creates its entry, counts the reference, copies when due.
/// A new entry's device copy starts `padding` bytes into its allocation.
/// Returns the device address of `begin`, or `None` for a zero-length item nothing maps.
fn map_one(
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
    let (key, device_address, created) = match found {
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
                let action = if update_ref { " (incremented)" } else { " (update suppressed)" };
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
            (key, device_address, entering.created_entry(key))
        }
        None => {
            if zero_copy(device, item.kind) {
                // No entry and no copy: the region uses the host's copy ('present' holds).
                if size != 0 {
                    info!(diag::infotype::MAPPING_CHANGED, device.id, "Return HstPtrBegin {} Size={size} for unified shared memory", Ptr(begin));
                }
                return Ok(Some(begin));
            }
            if present {
                return Err(not_mapped(begin, size, true));
            }
            if size == 0 {
                let counted = item.kind.bits() != 0 && item.kind.member_of().is_none() && !item.kind.contains(MapType::IMPLICIT);
                if counted {
                    info!(diag::infotype::EMPTY_MAPPING, device.id, "variable {} does not have a valid device counterpart", diag::map_name(item.name));
                }
                return Ok(None);
            }
            let allocation = match device.backend.alloc(size + padding, AllocKind::Device) {
                Ok(allocation) => allocation as usize,
                Err(e) => {
                    // A device failure, not a broken map clause: LLVM's words, the device's
                    // error kind (so the policy decides whether it is fatal).
                    diag::error(&format!("device {}: cannot map host address {} ({size} bytes): {e}", device.id, Ptr(begin)));
                    return Err(OffloadError::new(e.kind, "Call to getTargetPointer returned null pointer (device failure or illegal mapping)."));
                }
            };
            let device_begin = allocation + padding;
            table.insert_mapped(
                MapEntry {
                    host_begin: begin,
                    host_end: begin + size,
                    device_begin,
                    dynamic_refs: (!hold) as u64,
                    hold_refs: hold as u64,
                    infinite: false,
                    owned: true,
                    name: item.name as usize,
                },
                item.base as usize,
                padding,
            );
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
            (begin, device_begin, true)
        }
    };
    // Members of a struct share their parent's entry: their data goes over with the entry's
    // creation, whichever item of the construct created it.
    if item.kind.contains(MapType::TO) && size > 0 && (created || item.kind.contains(MapType::ALWAYS)) {
        phase.copy_to(table, key, begin, device_address, size);
    }
    Ok(Some(device_address))
}

/// `INF` for an entry that is never unmapped, else its dynamic count (LLVM's notation).
fn dynamic_refs(entry: &MapEntry) -> String {
    if entry.infinite {
        "INF".into()
    } else {
        entry.dynamic_refs.to_string()
    }
}

/// Whether maps of `kind` on `device` use the host's memory directly: `requires
/// unified_shared_memory` on a device that reaches host memory (unless `close`), or the
/// device's automatic zero-copy (LLVM's AMD APU mode, `OMPX_APU_MAPS`).
fn zero_copy(device: &DeviceState, kind: MapType) -> bool {
    let usm = crate::runtime::runtime().requires_unified_shared_memory() && device.backend.unified_memory().is_ok();
    (usm && !kind.contains(MapType::CLOSE)) || device.backend.uses_auto_zero_copy()
}

/// LLVM's message for a `present` item (`what`: "map type" or "motion") that is not mapped.
fn present_missing(what: &str, begin: usize, size: usize) {
    diag::message(format_args!(
        "device mapping required by 'present' {what} modifier does not exist for host address {} ({size} bytes)",
        Ptr(begin)
    ));
}

/// An item that must be mapped and cannot be: LLVM's messages (the 'present' one when the map
/// has the modifier), and the error that ends the construct (reported already, see `report`).
fn not_mapped(begin: usize, size: usize, present: bool) -> OffloadError {
    if present {
        present_missing("map type", begin, size);
    }
    let why = if present { "'present' map type modifier" } else { "device failure or illegal mapping" };
    let report = format!("Call to getTargetPointer returned null pointer ({why}).");
    diag::error(&report);
    OffloadError::new(ErrorKind::MappingError, report)
}

/// Whether step `n` is the combined entry of a struct mapped member by member: the next item
/// of its list is a member of it.
fn is_partial_struct(steps: &[Step], n: usize) -> bool {
    let step = &steps[n];
    step.item.kind.member_of().is_none()
        && steps.get(n + 1).is_some_and(|next| next.list == step.list && next.item.kind.member_of() == Some(step.index))
}

/// Padding that gives a struct's device copy the alignment its host copy has (up to 16 bytes),
/// though the mapped part starts after the struct's beginning: members keep their alignment.
fn alignment_padding(item: &MapItem) -> usize {
    const MAX_ALIGNMENT: usize = 16;
    let base = item.base as usize;
    let alignment = if base == 0 { MAX_ALIGNMENT } else { (1usize << base.trailing_zeros()).min(MAX_ALIGNMENT) };
    (item.begin as usize) % alignment
}

/// Performs the attachments whose pointer or pointee this construct mapped anew.
fn attach_all(phase: &mut Phase<'_>, table: &mut MappingTable, entering: &Entering) {
    for a in &entering.attachments {
        let due = a.always || entering.created_covers(a.pointee_begin) || entering.created_covers(a.pointer);
        if !due {
            continue;
        }
        let Some(pointee) = table.find(a.pointee_begin, 0) else { continue };
        let device_pointee_begin = pointee.device_address(a.pointee_begin);
        let Lookup::Contained(pointer_key) = table.lookup(a.pointer, a.pointer_size.max(POINTER_SIZE)) else { continue };
        // SAFETY: clang's base for an attachment is the host pointer variable, which is mapped
        // (looked up just above) and so is live host memory of at least pointer size.
        let host_pointee_base = unsafe { (a.pointer as *const usize).read_unaligned() };
        // The pointer may point before the mapped section (`p` for `p[10:5]`): keep its offset.
        let device_value = device_pointee_begin.wrapping_sub(a.pointee_begin.wrapping_sub(host_pointee_base));
        let slot = table.get(pointer_key).expect("looked up").device_address(a.pointer);
        let previous = table.shadow(pointer_key, a.pointer);
        if !table.attach(pointer_key, ShadowPointer { host_address: a.pointer, device_address: slot, device_value }) {
            continue; // already attached to this pointee
        }
        phase.undo.push(Undo::Attached { key: pointer_key, host_address: a.pointer, previous });
        debug!("attach: device pointer at {slot:#x} = {device_value:#x} (host pointer at {:#x})", a.pointer);
        info_to_device(phase.device, &device_value as *const usize as usize, slot, POINTER_SIZE, || entry_name(table, pointer_key));
        phase.hold(table, pointer_key);
        phase.transfers.push(Transfer::Pointer { device: slot, value: device_value });
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
pub fn begin(device: &DeviceState, items: &[MapItem], return_bases: Option<&mut [*mut c_void]>) -> Result<()> {
    let steps = expand(items);
    let (mut phase, mut table) = Phase::start(device, steps.iter().map(|s| &s.item));
    let decided = begin_locked(&mut phase, &mut table, &steps, return_bases);
    phase.complete(table, decided, true)
}

fn begin_locked(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    steps: &[Step],
    mut return_bases: Option<&mut [*mut c_void]>,
) -> Result<()> {
    check_present_on_entry(phase.device, table, steps)?;
    let mut entering = Entering::default();
    for (n, step) in steps.iter().enumerate() {
        let item = &step.item;
        // Private copies are made at launch; non-contiguous descriptors only mean something
        // to `target update`.
        if item.kind.intersects(MapType::LITERAL | MapType::PRIVATE) || item.kind.contains(MapType::NON_CONTIG) {
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
            let pointer = pointer_item(item, MapType::OMPX_HOLD | MapType::IMPLICIT | MapType::PRESENT);
            map_one(phase, table, &pointer, update_ref, 0, &mut entering)?;
            map_one(phase, table, item, true, 0, &mut entering)?;
            // For PTR_AND_OBJ clang's base is the host address of the pointer variable.
            entering.attachments.push(Attachment {
                pointer: item.base as usize,
                pointer_size: POINTER_SIZE,
                pointee_begin: item.begin as usize,
                always: true,
            });
            continue;
        }
        let padding = if is_partial_struct(steps, n) { alignment_padding(item) } else { 0 };
        let device_begin = map_one(phase, table, item, update_ref, padding, &mut entering)?;
        if item.kind.contains(MapType::RETURN_PARAM) {
            let Some(bases) = return_bases.as_deref_mut() else { continue };
            let Some(slot) = bases.get_mut(step.origin) else { continue };
            let delta = (item.begin as usize).wrapping_sub(item.base as usize);
            *slot = match device_begin {
                Some(address) => address.wrapping_sub(delta) as *mut c_void,
                None if item.kind.bits() & FB_NULLIFY != 0 => 0usize.wrapping_sub(delta) as *mut c_void,
                // Not mapped: the host address stays (the user vouches it is device-accessible).
                None => item.base,
            };
        }
    }
    attach_all(phase, table, &entering);
    Ok(())
}

/// Items of a construct that map memory (not private copies, attachments or descriptors).
fn maps_memory(item: &MapItem) -> bool {
    !item.kind.intersects(MapType::LITERAL | MapType::PRIVATE | MapType::ATTACH | MapType::NON_CONTIG)
}

/// Several map entries for one item in one construct (upstream's direction after LLVM 22):
/// `present` is checked against the table as the construct found it, so another entry of the
/// same construct that maps the item does not make it present. An item with no such sibling
/// is checked where it is mapped, with LLVM 22's messages.
fn check_present_on_entry(device: &DeviceState, table: &MappingTable, steps: &[Step]) -> Result<()> {
    for (i, step) in steps.iter().enumerate() {
        let item = &step.item;
        if !item.kind.contains(MapType::PRESENT) || !maps_memory(item) || zero_copy(device, item.kind) {
            continue;
        }
        let (begin, size) = (item.begin as usize, item_size(item));
        if !matches!(table.lookup(begin, size), Lookup::Absent) {
            continue;
        }
        let end = begin + size.max(1);
        let sibling = steps.iter().enumerate().any(|(j, other)| {
            let (b, e) = (other.item.begin as usize, other.item.begin as usize + item_size(&other.item).max(1));
            j != i && maps_memory(&other.item) && b < end && begin < e
        });
        if sibling {
            present_missing("map type", begin, size);
            let report = format!("Pointer {} was not present on the device upon entry to the region.", Ptr(begin));
            diag::error(&report);
            return Err(OffloadError::new(ErrorKind::MappingError, report));
        }
    }
    Ok(())
}

/// Copies back the `from` items of the construct that lie in the entry at `key`, which is about
/// to go: `from` applies when the construct releases the item, whichever of its entries does,
/// and before a `delete` of it.
fn copy_back_pending(phase: &mut Phase<'_>, table: &mut MappingTable, key: usize, pending: &mut Vec<(usize, usize)>) {
    let entry = table.get(key).expect("looked up");
    let (entry_begin, entry_end) = (entry.host_begin, entry.host_end);
    let (due, kept): (Vec<_>, Vec<_>) = pending.iter().partition(|&&(b, n)| entry_begin <= b && b + n <= entry_end);
    *pending = kept;
    for (begin, size) in due {
        let device_address = table.get(key).expect("looked up").device_address(begin);
        phase.copy_from(table, key, begin, device_address, size);
    }
}

/// Removes one reference; copies back (unless `copy_back` is off) and removes the entry when
/// due, its allocation going to the phase's frees.
fn unmap_one(
    phase: &mut Phase<'_>,
    table: &mut MappingTable,
    item: &MapItem,
    update_ref: bool,
    pending_from: &mut Vec<(usize, usize)>,
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
                return Err(OffloadError::new(ErrorKind::MappingError, "'present' unmap of an unmapped item"));
            }
            return Ok(()); // not mapped on exit: ignored (OpenMP 5.1, map clause)
        }
    };
    let hold = item.kind.contains(MapType::OMPX_HOLD);
    let force_delete = item.kind.contains(MapType::DELETE);
    let entry = table.get_mut(key).expect("looked up");
    let last = entry.is_last_reference(hold, force_delete);
    if hold || !entry.infinite {
        let counter = if hold { &mut entry.hold_refs } else { &mut entry.dynamic_refs };
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
    if copy_back && item.kind.contains(MapType::FROM) && (last || item.kind.contains(MapType::ALWAYS)) && size > 0 {
        phase.copy_from(table, key, begin, device_address, size);
        if let Some(at) = pending_from.iter().position(|&range| range == (begin, size)) {
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

fn leave(device: &DeviceState, items: &[MapItem], copy_back: bool) -> Result<()> {
    let steps = expand(items);
    let (mut phase, mut table) = Phase::start(device, steps.iter().map(|s| &s.item));
    let decided = end_locked(&mut phase, &mut table, &steps, copy_back);
    phase.complete(table, decided, false)
}

fn end_locked(phase: &mut Phase<'_>, table: &mut MappingTable, steps: &[Step], copy_back: bool) -> Result<()> {
    let mut pending_from: Vec<(usize, usize)> = steps
        .iter()
        .map(|s| &s.item)
        .filter(|item| item.kind.contains(MapType::FROM) && maps_memory(item) && item.size > 0)
        .map(|item| (item.begin as usize, item_size(item)))
        .collect();
    for step in steps.iter().rev() {
        let item = &step.item;
        let skipped = MapType::LITERAL | MapType::PRIVATE | MapType::ATTACH | MapType::NON_CONTIG;
        if item.kind.intersects(skipped) {
            continue; // attachments only happen on entry
        }
        let is_member = item.kind.member_of().is_some();
        let pointee_refs = !is_member || item.kind.contains(MapType::PTR_AND_OBJ);
        unmap_one(phase, table, item, pointee_refs, &mut pending_from, copy_back)?;
        if item.kind.contains(MapType::PTR_AND_OBJ) {
            // The pointer variable counted a reference on entry unless it is a member.
            let pointer = pointer_item(item, MapType::OMPX_HOLD | MapType::DELETE | MapType::IMPLICIT);
            unmap_one(phase, table, &pointer, !is_member, &mut pending_from, copy_back)?;
        }
    }
    Ok(())
}

/// `target update to/from`.
pub fn update(device: &DeviceState, items: &[MapItem]) -> Result<()> {
    let steps = expand(items);
    let (mut phase, mut table) = Phase::start(device, steps.iter().map(|s| &s.item));
    let decided = steps.iter().try_for_each(|step| {
        let item = &step.item;
        if item.kind.intersects(MapType::LITERAL | MapType::PRIVATE) {
            Ok(())
        } else if item.kind.contains(MapType::NON_CONTIG) {
            update_non_contiguous(&mut phase, &mut table, item)
        } else {
            update_contiguous(&mut phase, &mut table, item.kind, item.begin as usize, item_size(item))
        }
    });
    phase.complete(table, decided, false)
}

/// One contiguous piece of a `target update`: it must lie inside one mapping.
fn update_contiguous(phase: &mut Phase<'_>, table: &mut MappingTable, kind: MapType, host: usize, size: usize) -> Result<()> {
    let Lookup::Contained(key) = table.lookup(host, size) else {
        if kind.contains(MapType::PRESENT) {
            present_missing("motion", host, size);
            return Err(OffloadError::new(ErrorKind::MappingError, "'present' update of an unmapped item"));
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

/// The contiguous pieces `(byte offset from the base, length)` of a non-contiguous section.
/// Dimensions are outermost first; a piece's offset in dimension `d` is `(offset + i) * stride`
/// (clang-22's descriptor: the offset counts strides). Inner dimensions whose pieces abut are
/// merged, so a section of whole rows is copied row by row, not element by element.
fn non_contiguous_pieces(dims: &[NonContigDim]) -> Vec<(i64, i64)> {
    let Some((innermost, outer)) = dims.split_last() else { return Vec::new() };
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
fn non_contiguous_dims(item: &MapItem) -> Option<&[NonContigDim]> {
    let dims_count = item_size(item);
    if dims_count == 0 || item.begin.is_null() {
        return None;
    }
    // SAFETY: clang passes `size` descriptors at `begin` for NON_CONTIG items; they live as long
    // as the construct, which outlives the borrow of its item.
    Some(unsafe { std::slice::from_raw_parts(item.begin as *const NonContigDim, dims_count) })
}

/// Non-contiguous `target update`.
fn update_non_contiguous(phase: &mut Phase<'_>, table: &mut MappingTable, item: &MapItem) -> Result<()> {
    let Some(dims) = non_contiguous_dims(item) else { return Ok(()) };
    let base = item.base as usize;
    for (offset, length) in non_contiguous_pieces(dims) {
        let host = base.wrapping_add(offset as usize);
        update_contiguous(phase, table, item.kind, host, length.max(0) as usize)?;
    }
    Ok(())
}

/// LLVM's `LIBOMPTARGET_INFO` 0x1 listing of a construct's map items.
pub fn print_kernel_arguments(id: usize, region: &str, loc: &diag::Location, items: &[MapItem]) {
    let at = loc.source();
    rustomp_plugin::diag::info(id, format_args!("{region} at {}:{}:{} with {} arguments:", at.file, at.line, at.column, items.len()));
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
        let implicit = if k.contains(MapType::IMPLICIT) { "(implicit)" } else { "" };
        rustomp_plugin::diag::info(id, format_args!("{kind}({})[{}] {implicit}", diag::map_name(item.name), item.size));
    }
}

/// What a kernel launch needs from the map clauses: the argument values and the private
/// buffers to free after it.
pub struct LaunchArguments {
    pub values: Vec<*mut c_void>,
    pub temporaries: Vec<usize>,
}

/// The map part of a `target` construct followed by the kernel's argument values, under one
/// hold of the table lock (no other thread can unmap what the arguments point at in between).
pub fn enter_for_launch(device: &DeviceState, items: &[MapItem]) -> Result<LaunchArguments> {
    let steps = expand(items);
    let (mut phase, mut table) = Phase::start(device, steps.iter().map(|s| &s.item).chain(items));
    let mut arguments = LaunchArguments { values: Vec::new(), temporaries: Vec::new() };
    let decided = begin_locked(&mut phase, &mut table, &steps, None)
        .and_then(|()| kernel_arguments(&mut phase, &table, items, &mut arguments));
    let result = phase.complete(table, decided, true);
    if result.is_err() {
        // The private copies go with the construct; the first failure is the one reported.
        for buffer in arguments.temporaries.drain(..) {
            let _ = free_device(device, buffer);
        }
    }
    result.map(|()| arguments)
}

/// The kernel's argument values for the `TARGET_PARAM` items of the clause list (mappers are
/// not expanded: a mapped item's argument is its own device address).
fn kernel_arguments(phase: &mut Phase<'_>, table: &MappingTable, items: &[MapItem], out: &mut LaunchArguments) -> Result<()> {
    let mut positions: Vec<Option<usize>> = vec![None; items.len()];
    for (i, item) in items.iter().enumerate() {
        if !item.kind.contains(MapType::TARGET_PARAM) {
            if item.kind.contains(LAMBDA_CAPTURE) {
                fix_lambda_capture(phase, table, items, item, &positions, &out.values);
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
            let device_begin = match table.lookup(begin, size) {
                Lookup::Contained(key) | Lookup::PartialOverlap(key) => table.get(key).expect("looked up").device_address(begin),
                // Not mapped: the pointer keeps its host value (OpenMP 5.2 firstprivate rules).
                Lookup::Absent => begin,
            };
            device_begin.wrapping_add(host_base.wrapping_sub(begin))
        };
        positions[i] = Some(out.values.len());
        out.values.push(value as *mut c_void);
    }
    Ok(())
}

/// A private or firstprivate argument: a device buffer, initialized from the host for
/// firstprivate, or (PRIVATE | ATTACH) holding the device address of the pointee.
fn private_argument(phase: &mut Phase<'_>, table: &MappingTable, item: &MapItem, temporaries: &mut Vec<usize>) -> Result<usize> {
    let size = item_size(item);
    let attach = item.kind.contains(MapType::ATTACH);
    let buffer = phase.device.backend.alloc(size.max(POINTER_SIZE), AllocKind::Device)? as usize;
    temporaries.push(buffer);
    if attach {
        // Corresponding-pointer initialization: base is the host pointer, begin its pointee.
        let pointer = item.base as usize;
        let pointee_begin = item.begin as usize;
        // SAFETY: clang's base for PRIVATE | ATTACH is the host pointer variable.
        let host_pointee_base = unsafe { (pointer as *const usize).read_unaligned() };
        let value = match table.find(pointee_begin, 0) {
            Some(entry) if pointee_begin != 0 => {
                entry.device_address(pointee_begin).wrapping_sub(pointee_begin.wrapping_sub(host_pointee_base))
            }
            _ => host_pointee_base,
        };
        phase.transfers.push(Transfer::Pointer { device: buffer, value });
        return Ok(buffer);
    }
    if item.kind.contains(MapType::TO) && size > 0 {
        let name = || table.find(item.begin as usize, size).map_or(0, |e| e.name);
        info_to_device(phase.device, item.begin as usize, buffer, size, || diag::map_name(name() as *const c_char));
        phase.transfers.push(Transfer::ToDevice { host: item.begin as usize, device: buffer, size, shadows: Vec::new() });
    }
    Ok(buffer.wrapping_add((item.base as usize).wrapping_sub(item.begin as usize)))
}

/// A lambda captured a variable by reference: its device copy must refer to the variable's
/// device copy. Clang's item: base = the capture field in the host lambda, begin = the
/// captured variable, MEMBER_OF = the lambda's own item.
fn fix_lambda_capture(
    phase: &mut Phase<'_>,
    table: &MappingTable,
    items: &[MapItem],
    item: &MapItem,
    positions: &[Option<usize>],
    values: &[*mut c_void],
) {
    let Some(parent) = item.kind.member_of() else { return };
    let (Some(Some(position)), Some(lambda)) = (positions.get(parent), items.get(parent)) else { return };
    let device_lambda = values[*position] as usize;
    let field = device_lambda.wrapping_add((item.base as usize).wrapping_sub(lambda.begin as usize));
    let captured = item.begin as usize;
    let device_captured = match table.lookup(captured, item_size(item)) {
        Lookup::Contained(key) | Lookup::PartialOverlap(key) => table.get(key).expect("looked up").device_address(captured),
        Lookup::Absent => return,
    };
    debug!("lambda capture at device {field:#x} -> {device_captured:#x}");
    // The field lies inside the lambda's device copy, which holds the whole object.
    phase.transfers.push(Transfer::Pointer { device: field, value: device_captured });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(offset: i64, count: i64, stride: i64) -> NonContigDim {
        NonContigDim { offset, count, stride }
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
