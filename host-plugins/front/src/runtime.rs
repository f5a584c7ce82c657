//! Process-wide state: the offload policy, the plugins and their devices, and the libraries
//! registered by `__tgt_register_lib`.
//!
//! Devices are numbered as LLVM numbers them: a plugin's devices count only once a registered
//! program brings an image that plugin's devices can run, and they get the next numbers in
//! registration order (image by image, plugin by plugin). So a host-offload program sees the
//! host plugin's devices as 0..N, and the CUDA plugin's driver is not even loaded for it. A
//! device is opened, and its images loaded, on its first use.

use crate::diag::{self, debug, info};
use rustomp_abi::{BinDesc, EntryFlags, FptrMapEntry, OffloadEntry};
use rustomp_plugin::image;
use rustomp_plugin::layout::IndirectTable;
use crate::mapping::table::{MapEntry, MappingTable};
use rustomp_plugin::{
    Device, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig, LoadedImage, OffloadError, Plugin,
    Result,
};
use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};

/// `OMP_TARGET_OFFLOAD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Mandatory,
    Disabled,
    Default,
}

pub struct Runtime {
    pub policy: Policy,
    plugins: Vec<Box<dyn Plugin>>,
    /// The devices in OpenMP numbering; appended as registrations bring images for them, never
    /// removed.
    slots: RwLock<Vec<Arc<DeviceSlot>>>,
    libraries: Mutex<Vec<Library>>,
    /// Why registered images found no device to run on (for `mandatory` with no device), per
    /// registered program (its descriptor's address): unregistering drops its reasons.
    unserved: Mutex<Vec<(u64, String)>>,
    generation: AtomicU64,
    pub requires: AtomicU64,
}

struct DeviceSlot {
    plugin: usize,
    index: usize,
    state: OnceLock<std::result::Result<Arc<DeviceState>, OffloadError>>,
}

/// One registered executable or shared object.
struct Library {
    id: u64,
    host_entries: Vec<OffloadEntry>,
    images: Vec<RawImage>,
}

/// An image inside the registered program's memory (valid while the library is registered).
#[derive(Clone)]
struct RawImage {
    start: usize,
    len: usize,
    triple: String,
    arch: String,
    /// Why the image's headers cannot be trusted (`image::validate`): it goes to no plugin.
    corrupted: Option<String>,
}

// SAFETY: the entries' pointers refer to the registered program's static data, valid for the
// whole registration, and are only read.
unsafe impl Send for Library {}

/// A target region's kernel on one device: its image, entry point and name.
pub type BoundKernel = (Arc<dyn LoadedImage>, KernelHandle, Arc<str>);

pub struct DeviceState {
    pub id: usize,
    pub backend: Box<dyn Device>,
    table: Mutex<MappingTable>,
    /// Signalled when a phase of a construct ends its busy ranges (`mapping::phase::Phase`), if a phase
    /// waits: `waiting` counts them (changed under the table lock), so the common case, nobody
    /// waiting, costs no futex call.
    transfers_done: Condvar,
    waiting: AtomicUsize,
    images: Mutex<DeviceImages>,
    loaded_generation: AtomicU64,
}

#[derive(Default)]
struct DeviceImages {
    per_library: Vec<LoadedLibrary>,
    kernels: HashMap<usize, BoundKernel>,
}

struct LoadedLibrary {
    library: u64,
    image: Arc<dyn LoadedImage>,
    kernels: Vec<usize>,
    globals: Vec<usize>,
    destructors: Vec<KernelHandle>,
}

impl DeviceState {
    pub fn table(&self) -> MutexGuard<'_, MappingTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases the table until another phase ends its busy ranges.
    pub fn wait_for_transfers<'a>(&'a self, table: MutexGuard<'a, MappingTable>) -> MutexGuard<'a, MappingTable> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let table = self.transfers_done.wait(table).unwrap_or_else(|e| e.into_inner());
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

    /// The kernel clang registered under host address `region_id`.
    pub fn kernel(&self, region_id: usize) -> Option<BoundKernel> {
        let images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        images.kernels.get(&region_id).cloned()
    }
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(Runtime::from_env)
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

impl Runtime {
    fn from_env() -> Self {
        diag::init_from_env();
        // Arranges the trace and the summary (if asked for) before the program's own exit work.
        crate::profile::recorder();
        let policy = match std::env::var("OMP_TARGET_OFFLOAD").map(|v| v.to_ascii_lowercase()) {
            Ok(v) if v == "mandatory" => Policy::Mandatory,
            Ok(v) if v == "disabled" => Policy::Disabled,
            _ => Policy::Default,
        };
        // Constructing a plugin is free: each loads its driver only when asked for devices.
        let plugins: Vec<Box<dyn Plugin>> = if policy == Policy::Disabled {
            Vec::new()
        } else {
            let mut built_in: Vec<Box<dyn Plugin>> = vec![
                Box::new(rustomp_cuda_plugin::CudaPlugin::new(rustomp_cuda_plugin::CudaDriver::new())),
                Box::new(rustomp_amdgpu_plugin::AmdgpuPlugin::new(rustomp_amdgpu_plugin::AmdgpuDriver::new())),
                Box::new(rustomp_host_plugin::HostPlugin::new()),
            ];
            // Target RTLs found by naming convention come after ours (see `external`).
            built_in.extend(crate::external::discover());
            built_in
        };
        debug!("{} plugin(s), policy {:?}", plugins.len(), policy);
        Self {
            policy,
            plugins,
            slots: RwLock::new(Vec::new()),
            libraries: Mutex::new(Vec::new()),
            unserved: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            requires: AtomicU64::new(0),
        }
    }

    fn slots(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<DeviceSlot>>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn num_devices(&self) -> usize {
        self.slots().len()
    }

    /// Under `mandatory`, with no device at all: why, so that a construct fails instead of
    /// quietly running on the host (LLVM stops such a program at its first construct).
    pub fn missing_devices(&self) -> Option<String> {
        if self.policy != Policy::Mandatory || self.num_devices() > 0 {
            return None;
        }
        let unserved = self.unserved.lock().unwrap_or_else(|e| e.into_inner());
        Some(if unserved.is_empty() {
            "no offload device is available".to_string()
        } else {
            let reasons: Vec<&str> = unserved.iter().map(|(_, why)| why.as_str()).collect();
            format!("no offload device is available: {}", reasons.join("; "))
        })
    }

    /// Gives the devices that can run `images` (of one registered program) OpenMP numbers, the
    /// way LLVM's plugin manager does: image by image, each compatible plugin's compatible
    /// devices not numbered yet get the next numbers. Records why an image found no device.
    fn assign_devices(&self, library: u64, images: &[RawImage]) {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let mut used: HashSet<(usize, usize)> = HashSet::new();
        for (i, raw) in images.iter().enumerate() {
            let info = raw.info();
            let mut served = false;
            let mut reasons = Vec::new();
            if let Some(why) = &raw.corrupted {
                reasons.push(format!("corrupted image: {why}"));
            }
            let plugins = if raw.corrupted.is_some() { &[][..] } else { &self.plugins[..] };
            for (p, plugin) in plugins.iter().enumerate() {
                if !plugin.is_compatible(&info) {
                    continue;
                }
                let count = plugin.number_of_devices();
                if count == 0 {
                    let why = plugin
                        .unavailable_reason()
                        .unwrap_or_else(|| "it has no devices".into());
                    info!(
                        diag::infotype::PLUGIN,
                        "-",
                        "plugin {} has no devices: {why}",
                        plugin.name()
                    );
                    reasons.push(format!("{} plugin: {why}", plugin.name()));
                    continue;
                }
                for index in 0..count {
                    if let Err(why) = plugin.device_compatibility(index, &info) {
                        reasons.push(format!("{} device {index}: {why}", plugin.name()));
                        continue;
                    }
                    served = true;
                    // One image per device and program, as LLVM registers them.
                    if !used.insert((p, index))
                        || slots.iter().any(|s| s.plugin == p && s.index == index)
                    {
                        continue;
                    }
                    debug!(
                        "device {}: {} plugin device {index}",
                        slots.len(),
                        plugin.name()
                    );
                    slots.push(Arc::new(DeviceSlot {
                        plugin: p,
                        index,
                        state: OnceLock::new(),
                    }));
                }
            }
            if !served {
                if reasons.is_empty() {
                    reasons.push(if raw.triple.is_empty() {
                        "the image names no target triple".to_string()
                    } else {
                        format!("no plugin runs {} images", raw.triple)
                    });
                }
                let message = format!(
                    "image {i} ({}) of the registered program: {}",
                    raw.describe(),
                    reasons.join("; ")
                );
                info!(diag::infotype::PLUGIN, "-", "{message}");
                self.unserved
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((library, message));
            }
        }
    }

    /// The device if it is open already (no device is opened just to be looked at).
    pub fn opened_device(&self, id: usize) -> Option<Arc<DeviceState>> {
        let slot = self.slots().get(id).cloned()?;
        slot.state.get().and_then(|state| state.as_ref().ok().cloned())
    }

    /// The device, opened and with every registered library's images loaded.
    pub fn device(&self, id: usize) -> Result<Arc<DeviceState>> {
        let (slot, total) = {
            let slots = self.slots();
            let slot = slots.get(id).cloned().ok_or_else(|| {
                OffloadError::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "device {id} is not available ({} device(s) present)",
                        slots.len()
                    ),
                )
            })?;
            (slot, slots.len())
        };
        let state = slot
            .state
            .get_or_init(|| {
                let plugin = &self.plugins[slot.plugin];
                plugin.open_device(slot.index, id, total).map(|backend| {
                    Arc::new(DeviceState {
                        id,
                        backend: crate::profile::observe(id, backend),
                        table: Mutex::new(MappingTable::new()),
                        transfers_done: Condvar::new(),
                        waiting: AtomicUsize::new(0),
                        images: Mutex::new(DeviceImages::default()),
                        loaded_generation: AtomicU64::new(u64::MAX),
                    })
                })
            })
            .clone()?;
        let generation = self.generation.load(Ordering::Acquire);
        if state.loaded_generation.load(Ordering::Acquire) != generation {
            self.load_images(&state, generation)?;
        }
        Ok(state)
    }

    pub fn register(&self, desc: &BinDesc) {
        let host_entries = entries(desc.host_entries_begin, desc.host_entries_end);
        let mut images = Vec::new();
        for i in 0..desc.num_device_images.max(0) as usize {
            // SAFETY: clang's descriptor holds `num_device_images` images.
            let image = unsafe { &*desc.device_images.add(i) };
            match parse_container(image.image_start as usize, image.image_end as usize) {
                Ok(raw) => {
                    if let Some(why) = &raw.corrupted {
                        diag::error(&format!("device image {i} ({}) of the registered program is corrupted and will not be loaded: {why}", raw.describe()));
                    }
                    images.push(raw)
                }
                Err(why) => diag::error(&format!(
                    "device image {i} of the registered program: {why}"
                )),
            }
        }
        for entry in &host_entries {
            if EntryFlags::from_bits_retain(entry.flags).contains(EntryFlags::REQUIRES) {
                self.add_requirements(entry.data);
            }
        }
        let id = desc as *const BinDesc as u64;
        self.assign_devices(id, &images);
        let mut libraries = self.libraries.lock().unwrap_or_else(|e| e.into_inner());
        debug!(
            "registering library {id:#x}: {} image(s), {} entries",
            images.len(),
            host_entries.len()
        );
        libraries.push(Library {
            id,
            host_entries,
            images,
        });
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// A registered program's `requires` flags: the first non-zero set is kept, and every later
    /// one must agree on each clause LLVM compares (fatal error 2 otherwise, as LLVM's).
    fn add_requirements(&self, flags: u64) {
        const CLAUSES: [(u64, &str); 4] = [(0x2, "reverse_offload"), (0x4, "unified_address"), (0x8, "unified_shared_memory"), (0x10, "dynamic_allocators")];
        if flags == 0 {
            return;
        }
        let previous = self.requires.compare_exchange(0, flags, Ordering::AcqRel, Ordering::Acquire);
        let Err(set) = previous else { return };
        for (bit, clause) in CLAUSES {
            if set & bit != flags & bit {
                diag::fatal(2, &format!("'#pragma omp requires {clause}' not used consistently!"));
            }
        }
    }

    /// Whether the program requires unified shared memory (`requires unified_shared_memory`).
    pub fn requires_unified_shared_memory(&self) -> bool {
        self.requires.load(Ordering::Acquire) & 0x8 != 0
    }

    pub fn unregister(&self, desc: &BinDesc) {
        let id = desc as *const BinDesc as u64;
        let slots: Vec<Arc<DeviceSlot>> = self.slots().clone();
        for slot in &slots {
            if let Some(Ok(state)) = slot.state.get() {
                let mut images = state.images.lock().unwrap_or_else(|e| e.into_inner());
                let mut table = state.table();
                if info_enabled_table() {
                    dump_table(state.id, &table, &diag::SourceInfo::libomptarget(), false);
                }
                let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut images.per_library)
                    .into_iter()
                    .partition(|l| l.library == id);
                images.per_library = kept;
                for library in gone {
                    for dtor in &library.destructors {
                        // SAFETY: destructor entries take no arguments besides the launch env.
                        if let Err(e) = unsafe { library.image.launch(*dtor, &[], &ONE_THREAD) } {
                            debug!("device {}: destructor at unload: {e}", state.id);
                        }
                    }
                    for region in library.kernels {
                        images.kernels.remove(&region);
                    }
                    for global in library.globals {
                        table.remove(global);
                    }
                }
            }
        }
        let mut libraries = self.libraries.lock().unwrap_or_else(|e| e.into_inner());
        libraries.retain(|l| l.id != id);
        self.unserved.lock().unwrap_or_else(|e| e.into_inner()).retain(|(library, _)| *library != id);
    }

    fn load_images(&self, state: &DeviceState, generation: u64) -> Result<()> {
        let libraries = self.libraries.lock().unwrap_or_else(|e| e.into_inner());
        let mut images = state.images.lock().unwrap_or_else(|e| e.into_inner());
        if state.loaded_generation.load(Ordering::Acquire) == generation {
            return Ok(());
        }
        let (plugin_index, index) = {
            let slots = self.slots();
            (slots[state.id].plugin, slots[state.id].index)
        };
        let plugin = &self.plugins[plugin_index];
        if self.requires_unified_shared_memory() {
            // As LLVM's: a program that requires unified shared memory cannot run where device
            // code cannot use host addresses; say why instead of faulting in its kernels.
            if let Err(why) = state.backend.unified_memory() {
                return Err(OffloadError::new(
                    ErrorKind::DeviceUnavailable,
                    format!("device {} ({} plugin) cannot run a program that requires unified_shared_memory: {why}", state.id, plugin.name()),
                ));
            }
        }
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
                    state.id,
                    "no image for this device ({} plugin) among [{}]",
                    plugin.name(),
                    found.join(", ")
                );
                continue;
            };
            let image: Arc<dyn LoadedImage> = Arc::from(state.backend.load_image(&raw.info())?);
            info!(
                diag::infotype::PLUGIN,
                state.id,
                "loaded image for {} ({} bytes)",
                raw.describe(),
                raw.len
            );
            let loaded = self.bind_entries(state, &mut images, library, image)?;
            images.per_library.push(loaded);
        }
        state.loaded_generation.store(generation, Ordering::Release);
        Ok(())
    }

    /// Resolves the library's host entries in a freshly loaded image.
    fn bind_entries(
        &self,
        state: &DeviceState,
        images: &mut DeviceImages,
        library: &Library,
        image: Arc<dyn LoadedImage>,
    ) -> Result<LoadedLibrary> {
        let mut loaded = LoadedLibrary {
            library: library.id,
            image: image.clone(),
            kernels: vec![],
            globals: vec![],
            destructors: vec![],
        };
        let mut indirect = Vec::new();
        let mut constructors = Vec::new();
        let mut table = state.table();
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
                    format!("device {}: {kind} '{name}' of the registered program is not in its device image", state.id),
                )
            };
            let lookup_failed = |e: OffloadError| e.context(format_args!("device {}: looking up '{name}' of the registered program", state.id));
            let kernel = || -> Result<KernelHandle> { image.kernel(&name).map_err(lookup_failed)?.ok_or_else(|| missing("kernel")) };
            let global = || -> Result<DeviceGlobal> { image.global(&name).map_err(lookup_failed)?.ok_or_else(|| missing("global")) };
            if flags.intersects(EntryFlags::INDIRECT | EntryFlags::INDIRECT_VTABLE) {
                let symbol = global()?;
                let mut device_fn = 0u64;
                // SAFETY: the device global holds the function's (or vtable's) device address.
                unsafe {
                    state.backend.copy_from_device(
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
                if flags.contains(EntryFlags::INDIRECT) && table.find(host, POINTER_BYTES).is_none() {
                    table.insert(MapEntry::infinite(host, POINTER_BYTES, device_fn as usize, entry.symbol_name as usize));
                    loaded.globals.push(host);
                }
            } else if entry.size == 0 {
                let kernel = kernel()?;
                if flags.contains(EntryFlags::DTOR) {
                    loaded.destructors.push(kernel);
                } else if flags.contains(EntryFlags::CTOR_OR_ENTER) {
                    constructors.push(kernel);
                } else {
                    images
                        .kernels
                        .insert(entry.address as usize, (image.clone(), kernel, name.into()));
                    loaded.kernels.push(entry.address as usize);
                }
            } else {
                let symbol = global()?;
                let host = entry.address as usize;
                if self.requires_unified_shared_memory() && state.backend.unified_memory().is_ok() {
                    // Under unified shared memory the device's reference pointer of a declare
                    // target global is set to the host copy's address (clang's host global of
                    // the same name holds it).
                    // SAFETY: the host entry's global holds `size` bytes; the device global too.
                    unsafe { state.backend.copy_to_device(symbol.address, entry.address, entry.size as usize)? };
                }
                table.insert(MapEntry::infinite(host, entry.size as usize, symbol.address as usize, entry.symbol_name as usize));
                loaded.globals.push(host);
            }
        }
        drop(table);
        image.set_indirect_table(&IndirectTable::new(indirect))?;
        for ctor in constructors {
            // SAFETY: constructor entries take no arguments besides the launch environment.
            unsafe { image.launch(ctor, &[], &ONE_THREAD)? };
        }
        Ok(loaded)
    }
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
        line(format_args!("OpenMP Host-Device pointer mappings table empty"));
        return;
    }
    line(format_args!("OpenMP Host-Device pointer mappings after block at {}:{}:{}:", at.file, at.line, at.column));
    line(format_args!("{:<18} {:<18} {} {} {} {}", "Host Ptr", "Target Ptr", "Size (B)", "DynRefCount", "HoldRefCount", "Declaration"));
    for e in table.iter() {
        let dynamic = if e.infinite { "INF".to_string() } else { e.dynamic_refs.to_string() };
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

fn entries(begin: *mut OffloadEntry, end: *mut OffloadEntry) -> Vec<OffloadEntry> {
    if begin.is_null() || end <= begin {
        return Vec::new();
    }
    let count = (end as usize - begin as usize) / std::mem::size_of::<OffloadEntry>();
    // SAFETY: the linker-provided section bounds enclose `count` entries.
    unsafe { std::slice::from_raw_parts(begin, count) }.to_vec()
}

impl RawImage {
    /// "nvptx64-nvidia-cuda sm_90" and the like.
    fn describe(&self) -> String {
        if self.triple.is_empty() && self.arch.is_empty() {
            "no target triple".into()
        } else if self.arch.is_empty() {
            self.triple.clone()
        } else {
            format!("{} {}", self.triple, self.arch)
        }
    }

    fn info(&self) -> ImageInfo<'static> {
        ImageInfo {
            // SAFETY: the image lies in the registered program's memory while it is registered.
            bytes: unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) },
            triple: self.triple.clone(),
            arch: self.arch.clone(),
        }
    }
}

/// The image inside the registered program's memory: its `OffloadBinary` container read, or a
/// bare image taken as it is (see `rustomp_plugin::image::unwrap_container`).
fn parse_container(start: usize, end: usize) -> std::result::Result<RawImage, String> {
    if start == 0 || end <= start {
        return Err("empty image".into());
    }
    // SAFETY: the compiler-provided bounds enclose the image.
    let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, end - start) };
    let found = image::unwrap_container(bytes)?;
    let contained = &bytes[found.offset..found.offset + found.len];
    // An image of a format the built-in plugins read (or claiming to be an ELF) is checked
    // here, once, before any loader; any other format is an external plugin's to judge.
    let ours = contained.starts_with(b"\x7fELF") || image::classify(contained).is_some();
    let corrupted = if ours { image::validate(contained).err() } else { None };
    Ok(RawImage { start: start + found.offset, len: found.len, triple: found.triple, arch: found.arch, corrupted })
}

#[cfg(test)]
mod tests {
    use super::*;

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
