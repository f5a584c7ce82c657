//! One opened device: its backend, its mapping table, and the images of the registered
//! programs loaded on it with their entries bound (kernels by host region id, globals and
//! indirect functions in the table), constructors run at load and destructors at unload.

use super::library::{Library, RawImage};
use crate::diag::{self, debug, info};
use crate::mapping::table::{MapEntry, MappingTable};
use rustomp_abi::{EntryFlags, FptrMapEntry};
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{
    Device, DeviceGlobal, ErrorKind, KernelHandle, LaunchConfig, LoadedImage, OffloadError, Plugin,
    Result,
};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A target region's kernel on one device: its image, entry point and name.
pub struct Bound {
    pub image: Arc<dyn LoadedImage>,
    pub kernel: KernelHandle,
    pub name: Arc<str>,
}

/// One reference count for the three.
pub type BoundKernel = Arc<Bound>;

/// A kernel a thread found, and where: the cache of [`KernelLease`].
struct CachedKernel {
    device: usize,
    region: usize,
    /// The device's [`DeviceState::kernels_epoch`] when it was found.
    epoch: u64,
    bound: BoundKernel,
}

thread_local! {
    /// The kernel this thread launched last; a construct takes it out while it runs.
    static LAST_KERNEL: Cell<Option<CachedKernel>> = const { Cell::new(None) };
}

/// A construct's kernel while it runs. A thread that launches the same region on the same
/// device again, with no library loaded or unloaded there since, finds it in its cache: no lock
/// and no reference count (four atomic read-modify-writes, a fifth of a small construct's
/// time). The lease goes back to the cache when the construct ends; a thread keeps one kernel
/// there, so an unloaded image lives on until that thread's next construct (or its exit).
pub struct KernelLease(Option<CachedKernel>, CacheSlot);

/// This thread's [`LAST_KERNEL`], found once per construct (a thread-local access in a shared
/// library is a call); `None` while the thread is exiting. The raw pointer keeps the lease on
/// its thread (not `Send`).
#[derive(Clone, Copy)]
struct CacheSlot(Option<*const Cell<Option<CachedKernel>>>);

impl CacheSlot {
    fn this_thread() -> Self {
        CacheSlot(LAST_KERNEL.try_with(|last| last as *const _).ok())
    }

    fn cell(&self) -> Option<&Cell<Option<CachedKernel>>> {
        // SAFETY: the pointer is this thread's `LAST_KERNEL` (a lease does not leave its
        // thread), which lives as long as the thread, and so longer than the lease.
        self.0.map(|cell| unsafe { &*cell })
    }
}

impl std::ops::Deref for KernelLease {
    type Target = Bound;
    fn deref(&self) -> &Bound {
        &self
            .0
            .as_ref()
            .expect("a lease holds its kernel until dropped")
            .bound
    }
}

impl Drop for KernelLease {
    fn drop(&mut self) {
        // A nested construct's lease, given back meanwhile, makes room (at thread exit the
        // kernel just goes).
        if let Some(last) = self.1.cell() {
            last.set(self.0.take());
        }
    }
}

/// Hashes a region id (a host address, unique in the process) with one multiplication: the
/// kernel table is read on every construct, where SipHash's rounds cost more than the rest of
/// the lookup. No key comes from outside the program's own registration.
#[derive(Default, Clone, Copy)]
pub(super) struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Fibonacci hashing: the high bits, which hashbrown uses, mix every bit of the address.
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type AddressMap<V> = HashMap<usize, V, std::hash::BuildHasherDefault<AddressHasher>>;

pub struct DeviceState {
    pub id: usize,
    pub backend: Box<dyn Device>,
    /// The backend's `shares_host_memory`, asked once: every phase with copies wants it.
    pub shares_host_memory: bool,
    table: Mutex<MappingTable>,
    /// Signalled when a phase of a construct ends its busy ranges (`mapping::phase::Phase`), if a phase
    /// waits: `waiting` counts them (changed under the table lock), so the common case, nobody
    /// waiting, costs no futex call.
    transfers_done: Condvar,
    waiting: AtomicUsize,
    images: Mutex<DeviceImages>,
    /// Changed, under the `images` lock, whenever kernels come or go (see [`KernelLease`]).
    kernels_epoch: AtomicU64,
    loaded_generation: AtomicU64,
}

#[derive(Default)]
pub(super) struct DeviceImages {
    per_library: Vec<LoadedLibrary>,
    kernels: AddressMap<BoundKernel>,
}

struct LoadedLibrary {
    library: u64,
    image: Arc<dyn LoadedImage>,
    kernels: Vec<usize>,
    globals: Vec<usize>,
    destructors: Vec<KernelHandle>,
    /// The `{host, device}` pairs of its `declare target indirect` functions and vtables.
    indirect: Vec<FptrMapEntry>,
}

impl DeviceImages {
    /// The device's indirect-call table: the pairs of every library loaded on it, so a
    /// function pointer of one (a shared library's function) is translated in the device code
    /// of another (the program's region), as a pointer of the image's own library is.
    fn indirect_table(&self, more: &[FptrMapEntry]) -> IndirectTable {
        let pairs = self.per_library.iter().flat_map(|l| l.indirect.iter());
        IndirectTable::new(pairs.chain(more).copied().collect())
    }

    /// Publishes the device's table to every loaded image (after libraries came or went).
    fn publish_indirect_table(&self, device: usize) -> Result<()> {
        let table = self.indirect_table(&[]);
        debug!(
            "device {device}: indirect-call table of {} pairs for {} image(s)",
            table.len(),
            self.per_library.len()
        );
        self.per_library
            .iter()
            .try_for_each(|l| l.image.set_indirect_table(&table))
    }
}

impl DeviceState {
    pub(super) fn new(id: usize, backend: Box<dyn Device>) -> Self {
        Self {
            id,
            shares_host_memory: backend.shares_host_memory(),
            backend,
            table: Mutex::new(MappingTable::new()),
            transfers_done: Condvar::new(),
            waiting: AtomicUsize::new(0),
            images: Mutex::new(DeviceImages::default()),
            kernels_epoch: AtomicU64::new(0),
            loaded_generation: AtomicU64::new(u64::MAX),
        }
    }

    /// Whether the images of registration `generation` are loaded.
    pub(super) fn loaded(&self, generation: u64) -> bool {
        self.loaded_generation.load(Ordering::Acquire) == generation
    }

    pub fn table(&self) -> MutexGuard<'_, MappingTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases the table until another phase ends its busy ranges.
    pub fn wait_for_transfers<'a>(
        &'a self,
        table: MutexGuard<'a, MappingTable>,
    ) -> MutexGuard<'a, MappingTable> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let table = self
            .transfers_done
            .wait(table)
            .unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        table
    }

    /// Wakes the phases waiting for busy ranges; the caller holds the table lock and just
    /// ended some (a waiter counted itself under that lock before it released it).
    pub fn transfers_ended(&self, _table: &MutexGuard<'_, MappingTable>) {
        if self.waiting.load(Ordering::Relaxed) > 0 {
            self.transfers_done.notify_all();
        }
    }

    /// The kernel clang registered under host address `region_id`, for one construct.
    pub fn kernel(&self, region_id: usize) -> Option<KernelLease> {
        let epoch = self.kernels_epoch.load(Ordering::Acquire);
        let slot = CacheSlot::this_thread();
        if let Some(last) = slot.cell().and_then(Cell::take) {
            if last.device == self.id && last.region == region_id && last.epoch == epoch {
                return Some(KernelLease(Some(last), slot));
            }
        }
        let images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        let bound = images.kernels.get(&region_id)?.clone();
        let cached = CachedKernel {
            device: self.id,
            region: region_id,
            // Read under the lock that its changes take: the epoch of this very map.
            epoch: self.kernels_epoch.load(Ordering::Relaxed),
            bound,
        };
        Some(KernelLease(Some(cached), slot))
    }

    /// Loads the image of each registered library not loaded yet that suits this device (the
    /// caller holds the libraries' lock) and binds its entries.
    pub(super) fn load_images(
        &self,
        plugin: &dyn Plugin,
        index: usize,
        libraries: &[Library],
        generation: u64,
        requires_usm: bool,
    ) -> Result<()> {
        let mut images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        if self.loaded_generation.load(Ordering::Acquire) == generation {
            return Ok(());
        }
        if requires_usm {
            // As LLVM's: a program that requires unified shared memory cannot run where device
            // code cannot use host addresses; say why instead of faulting in its kernels.
            if let Err(why) = self.backend.unified_memory() {
                return Err(OffloadError::new(
                    ErrorKind::DeviceUnavailable,
                    format!("device {} ({} plugin) cannot run a program that requires unified_shared_memory: {why}", self.id, plugin.name()),
                ));
            }
        }
        let before = images.per_library.len();
        for library in libraries.iter() {
            if images.per_library.iter().any(|l| l.library == library.id) {
                continue;
            }
            let candidate = library.images.iter().find(|raw| {
                let info = raw.info();
                if raw.corrupted.is_some() {
                    return false;
                }
                plugin.is_compatible(&info) && plugin.device_compatibility(index, &info).is_ok()
            });
            let Some(raw) = candidate else {
                let found: Vec<String> = library.images.iter().map(RawImage::describe).collect();
                info!(
                    diag::infotype::PLUGIN,
                    self.id,
                    "no image for this device ({} plugin) among [{}]",
                    plugin.name(),
                    found.join(", ")
                );
                continue;
            };
            let image: Arc<dyn LoadedImage> = Arc::from(self.backend.load_image(&raw.info())?);
            crate::ompt::image_loaded(
                self.id,
                raw.start as *const std::ffi::c_void,
                raw.len,
                raw.start as u64,
            );
            info!(
                diag::infotype::PLUGIN,
                self.id,
                "loaded image for {} ({} bytes)",
                raw.describe(),
                raw.len
            );
            let loaded = self.bind_entries(&mut images, library, image, requires_usm)?;
            images.per_library.push(loaded);
        }
        // The images loaded before learn the new libraries' functions (each new image got the
        // table as it stood when it was bound).
        let translating = images.per_library.iter().any(|l| !l.indirect.is_empty());
        if images.per_library.len() > before && images.per_library.len() > 1 && translating {
            images.publish_indirect_table(self.id)?;
        }
        self.loaded_generation.store(generation, Ordering::Release);
        Ok(())
    }

    /// Resolves the library's host entries in a freshly loaded image.
    fn bind_entries(
        &self,
        images: &mut DeviceImages,
        library: &Library,
        image: Arc<dyn LoadedImage>,
        requires_usm: bool,
    ) -> Result<LoadedLibrary> {
        let mut loaded = LoadedLibrary {
            library: library.id,
            image: image.clone(),
            kernels: vec![],
            globals: vec![],
            destructors: vec![],
            indirect: vec![],
        };
        let mut indirect = Vec::new();
        let mut constructors = Vec::new();
        let mut table = self.table();
        for entry in &library.host_entries {
            let flags = EntryFlags::from_bits_retain(entry.flags);
            if flags.contains(EntryFlags::REQUIRES) || entry.symbol_name.is_null() {
                continue;
            }
            // SAFETY: clang's entry names are NUL-terminated static strings.
            let name = unsafe { CStr::from_ptr(entry.symbol_name) }
                .to_string_lossy()
                .into_owned();
            // Each entry by its kind, as LLVM's plugins: size 0 is a function (kernel,
            // constructor, destructor), anything else a global (for an indirect function, the
            // device global holding its address).
            let missing = |kind: &str| {
                OffloadError::new(
                    ErrorKind::SymbolNotFound,
                    format!("device {}: {kind} '{name}' of the registered program is not in its device image", self.id),
                )
            };
            let lookup_failed = |e: OffloadError| {
                e.context(format_args!(
                    "device {}: looking up '{name}' of the registered program",
                    self.id
                ))
            };
            let kernel = || -> Result<KernelHandle> {
                image
                    .kernel(&name)
                    .map_err(lookup_failed)?
                    .ok_or_else(|| missing("kernel"))
            };
            let global = || -> Result<DeviceGlobal> {
                image
                    .global(&name)
                    .map_err(lookup_failed)?
                    .ok_or_else(|| missing("global"))
            };
            if flags.intersects(EntryFlags::INDIRECT | EntryFlags::INDIRECT_VTABLE) {
                let symbol = global()?;
                let mut device_fn = 0u64;
                // SAFETY: the device global holds the function's (or vtable's) device address.
                unsafe {
                    self.backend.copy_from_device(
                        &mut device_fn as *mut u64 as *mut _,
                        symbol.address,
                        std::mem::size_of::<u64>(),
                    )?
                };
                indirect.extend(indirect_pairs(
                    flags,
                    entry.address as u64,
                    entry.size,
                    device_fn,
                ));
                // As LLVM 22: the host function maps to the device function, so a function
                // pointer a region captures arrives as the device's address.
                let host = entry.address as usize;
                if flags.contains(EntryFlags::INDIRECT) && table.find(host, POINTER_BYTES).is_none()
                {
                    table.insert(MapEntry::infinite(
                        host,
                        POINTER_BYTES,
                        device_fn as usize,
                        entry.symbol_name as usize,
                    ));
                    loaded.globals.push(host);
                }
            } else if entry.size == 0 {
                let kernel = kernel()?;
                if flags.contains(EntryFlags::DTOR) {
                    loaded.destructors.push(kernel);
                } else if flags.contains(EntryFlags::CTOR_OR_ENTER) {
                    constructors.push(kernel);
                } else {
                    images.kernels.insert(
                        entry.address as usize,
                        Arc::new(Bound {
                            image: image.clone(),
                            kernel,
                            name: name.into(),
                        }),
                    );
                    loaded.kernels.push(entry.address as usize);
                    self.kernels_epoch.fetch_add(1, Ordering::Release);
                }
            } else {
                let symbol = global()?;
                let host = entry.address as usize;
                if requires_usm && self.backend.unified_memory().is_ok() {
                    // Under unified shared memory the device's reference pointer of a declare
                    // target global is set to the host copy's address (clang's host global of
                    // the same name holds it).
                    // SAFETY: the host entry's global holds `size` bytes; the device global too.
                    unsafe {
                        self.backend.copy_to_device(
                            symbol.address,
                            entry.address,
                            entry.size as usize,
                        )?
                    };
                }
                table.insert(MapEntry::infinite(
                    host,
                    entry.size as usize,
                    symbol.address as usize,
                    entry.symbol_name as usize,
                ));
                loaded.globals.push(host);
            }
        }
        drop(table);
        image.set_indirect_table(&images.indirect_table(&indirect))?;
        loaded.indirect = indirect;
        for ctor in constructors {
            // SAFETY: constructor entries take no arguments besides the launch environment.
            unsafe { image.launch(ctor, &[], &ONE_THREAD)? };
        }
        Ok(loaded)
    }

    /// Runs the destructors of `library`'s image on this device and forgets its kernels and
    /// globals (its mapping-table entries too).
    pub(super) fn unload(&self, library: u64) {
        let mut images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        let mut table = self.table();
        if info_enabled_table() {
            dump_table(self.id, &table, &diag::SourceInfo::libomptarget(), false);
        }
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut images.per_library)
            .into_iter()
            .partition(|l| l.library == library);
        images.per_library = kept;
        let translated = gone.iter().any(|l| !l.indirect.is_empty());
        for unloaded in gone {
            for dtor in &unloaded.destructors {
                // SAFETY: destructor entries take no arguments besides the launch env.
                if let Err(e) = unsafe { unloaded.image.launch(*dtor, &[], &ONE_THREAD) } {
                    debug!("device {}: destructor at unload: {e}", self.id);
                }
            }
            for region in unloaded.kernels {
                images.kernels.remove(&region);
            }
            self.kernels_epoch.fetch_add(1, Ordering::Release);
            for global in unloaded.globals {
                table.remove(global);
            }
        }
        drop(table);
        // The other images stop translating the unloaded library's functions.
        if translated && !images.per_library.is_empty() {
            if let Err(e) = images.publish_indirect_table(self.id) {
                debug!("device {}: indirect-call table at unload: {e}", self.id);
            }
        }
    }
}

/// The `{host, device}` pairs of one indirect entry. A function is one pair. A vtable entry
/// covers the whole table (`size` bytes) and gives a pair per 8-byte slot: objects point into
/// it (past the offset-to-top and RTTI slots), and the device looks up exactly that address.
fn indirect_pairs(
    flags: EntryFlags,
    host: u64,
    size: u64,
    device: u64,
) -> impl Iterator<Item = FptrMapEntry> {
    let slots = if flags.contains(EntryFlags::INDIRECT_VTABLE) {
        (size / 8).max(1)
    } else {
        1
    };
    (0..slots).map(move |i| FptrMapEntry {
        host: host + i * 8,
        device: device + i * 8,
    })
}

const POINTER_BYTES: usize = std::mem::size_of::<usize>();

/// Constructors and destructors run once: one team of one thread (LLVM's ctor/dtor launch).
const ONE_THREAD: LaunchConfig = LaunchConfig {
    num_teams: 1,
    thread_limit: 1,
    teams_yz: [0, 0],
    threads_yz: [0, 0],
    dyn_shared_bytes: 0,
    tripcount: 0,
};

fn info_enabled_table() -> bool {
    diag::info_enabled(diag::infotype::DUMP_TABLE)
}

/// LLVM's mapping-table dump (`LIBOMPTARGET_INFO` 0x4, `ompx_dump_mapping_tables` on stdout).
pub fn dump_table(device: usize, table: &MappingTable, at: &diag::SourceInfo, to_stdout: bool) {
    let line = |text: std::fmt::Arguments<'_>| {
        if to_stdout {
            diag::stdout_line(format_args!("omptarget device {device} info: {text}"));
        } else {
            rustomp_plugin::diag::info(device, text);
        }
    };
    if table.is_empty() {
        line(format_args!(
            "OpenMP Host-Device pointer mappings table empty"
        ));
        return;
    }
    line(format_args!(
        "OpenMP Host-Device pointer mappings after block at {}:{}:{}:",
        at.file, at.line, at.column
    ));
    line(format_args!(
        "{:<18} {:<18} {} {} {} {}",
        "Host Ptr", "Target Ptr", "Size (B)", "DynRefCount", "HoldRefCount", "Declaration"
    ));
    for e in table.iter() {
        let dynamic = if e.infinite {
            "INF".to_string()
        } else {
            e.dynamic_refs.to_string()
        };
        let name = diag::SourceInfo::of_name(e.name as *const std::ffi::c_char);
        line(format_args!(
            "{} {} {:<8} {:<11} {:<12} {} at {}:{}:{}",
            diag::Ptr(e.host_begin),
            diag::Ptr(e.device_begin),
            e.host_end - e.host_begin,
            dynamic,
            e.hold_refs,
            name.name,
            name.file,
            name.line,
            name.column
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustomp_plugin::{AllocKind, ImageInfo};
    use std::ffi::c_void;
    use std::ptr::NonNull;

    /// A device that is never asked for anything but its description.
    struct Idle;

    impl Device for Idle {
        fn alloc(&self, _: usize, _: AllocKind) -> Result<*mut c_void> {
            unreachable!()
        }
        unsafe fn free(&self, _: *mut c_void, _: AllocKind) -> Result<()> {
            unreachable!()
        }
        unsafe fn copy_to_device(&self, _: *mut c_void, _: *const c_void, _: usize) -> Result<()> {
            unreachable!()
        }
        unsafe fn copy_from_device(
            &self,
            _: *mut c_void,
            _: *const c_void,
            _: usize,
        ) -> Result<()> {
            unreachable!()
        }
        unsafe fn copy_within_device(
            &self,
            _: *mut c_void,
            _: *const c_void,
            _: usize,
        ) -> Result<()> {
            unreachable!()
        }
        fn load_image(&self, _: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
            unreachable!()
        }
        fn describe(&self) -> String {
            "idle".into()
        }
    }

    /// An image whose every name is a kernel.
    struct AnyKernel;

    impl LoadedImage for AnyKernel {
        fn find_kernel(&self, _: &str) -> Result<Option<NonNull<c_void>>> {
            Ok(Some(NonNull::dangling()))
        }
        fn global(&self, _: &str) -> Result<Option<DeviceGlobal>> {
            Ok(None)
        }
        unsafe fn launch(
            &self,
            _: KernelHandle,
            _: &[*mut c_void],
            _: &LaunchConfig,
        ) -> Result<()> {
            unreachable!()
        }
        fn set_indirect_table(&self, _: &IndirectTable) -> Result<()> {
            Ok(())
        }
    }

    /// What loading and unloading a library do to the kernel table: its entries, the epoch.
    fn bind(device: &DeviceState, region: usize, name: &str) -> BoundKernel {
        let image: Arc<dyn LoadedImage> = Arc::new(AnyKernel);
        let kernel = image.kernel(name).unwrap().unwrap();
        let bound = Arc::new(Bound {
            image,
            kernel,
            name: name.into(),
        });
        let mut images = device.images.lock().unwrap();
        images.kernels.insert(region, bound.clone());
        device.kernels_epoch.fetch_add(1, Ordering::Release);
        bound
    }

    fn unbind(device: &DeviceState, region: usize) {
        let mut images = device.images.lock().unwrap();
        images.kernels.remove(&region);
        device.kernels_epoch.fetch_add(1, Ordering::Release);
    }

    #[test]
    fn a_threads_kernel_cache_answers_only_for_the_same_region_device_and_kernels() {
        let device = DeviceState::new(7, Box::new(Idle));
        let other = DeviceState::new(8, Box::new(Idle));
        let region = 0x1000;
        let first = bind(&device, region, "first");
        bind(&other, region, "other's");
        let name = |lease: Option<KernelLease>| lease.map(|k| k.name.to_string());
        assert_eq!(name(device.kernel(region)).as_deref(), Some("first"));
        // Found in the cache: no reference taken (the table's, ours, the cache's).
        let lease = device.kernel(region).unwrap();
        assert_eq!(Arc::strong_count(&first), 3);
        drop(lease);
        // The same region on another device, another region: not the cached kernel.
        assert_eq!(name(other.kernel(region)).as_deref(), Some("other's"));
        assert_eq!(name(device.kernel(0x2000)), None);
        // The library went and another one's kernel has the same host address: the cache,
        // which held the first, must not answer with it.
        assert_eq!(name(device.kernel(region)).as_deref(), Some("first"));
        unbind(&device, region);
        assert_eq!(name(device.kernel(region)), None);
        bind(&device, region, "second");
        assert_eq!(name(device.kernel(region)).as_deref(), Some("second"));
    }

    #[test]
    fn indirect_functions_give_one_pair_and_vtables_one_per_slot() {
        let pairs = |flags, size| -> Vec<(u64, u64)> {
            indirect_pairs(flags, 0x1000, size, 0x9000)
                .map(|e| (e.host, e.device))
                .collect()
        };
        assert_eq!(pairs(EntryFlags::INDIRECT, 8), [(0x1000, 0x9000)]);
        // clang-22's vtable entry for a class with one virtual function: 24 bytes, and objects
        // hold vtable + 16, which must be a key of its own.
        assert_eq!(
            pairs(EntryFlags::INDIRECT_VTABLE, 24),
            [(0x1000, 0x9000), (0x1008, 0x9008), (0x1010, 0x9010)]
        );
        assert_eq!(pairs(EntryFlags::INDIRECT_VTABLE, 0), [(0x1000, 0x9000)]);
    }
}
