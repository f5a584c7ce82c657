//! Process-wide state: the offload policy, the plugins and their devices, and the libraries
//! registered by `__tgt_register_lib`.
//!
//! Devices are numbered as LLVM numbers them: a plugin's devices count only once a registered
//! program brings an image that plugin's devices can run, and they get the next numbers in
//! registration order (image by image, plugin by plugin). So a host-offload program sees the
//! host plugin's devices as 0..N, and the CUDA plugin's driver is not even loaded for it. A
//! device is opened, and its images loaded, on its first use. The remote plugin's devices
//! (other nodes', through `rustomp-proxy` ranks under MPI) come after all local ones, rank by
//! rank in rank order, each rank's in its own order.

mod device;
mod library;

pub use device::{dump_table, DeviceState};

use crate::diag::{self, debug, info};
use library::{entries, parse_container, Library, RawImage};
use rustomp_abi::{BinDesc, EntryFlags};
use rustomp_plugin::{ErrorKind, OffloadError, Plugin, Result};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

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
    /// The first devices once open, read without the lock on the device list: the path of
    /// every construct.
    opened: [OnceLock<&'static DeviceState>; LOCK_FREE_DEVICES],
    libraries: Mutex<Vec<Library>>,
    /// Why registered images found no device to run on (for `mandatory` with no device), per
    /// registered program (its descriptor's address): unregistering drops its reasons.
    unserved: Mutex<Vec<(u64, String)>>,
    generation: AtomicU64,
    pub requires: AtomicU64,
}

/// Devices whose numbers are below this are found without a lock (see `Runtime::opened`).
const LOCK_FREE_DEVICES: usize = 16;

/// A device, once open, lives as long as the process: the runtime is a static and never drops
/// one. Constructs borrow it for `'static` instead of counting references to it (an atomic
/// increment and decrement per construct).
struct DeviceSlot {
    plugin: usize,
    index: usize,
    state: OnceLock<std::result::Result<&'static DeviceState, OffloadError>>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(Runtime::from_env)
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
            let mut built_in: Vec<Box<dyn Plugin>> = Vec::new();
            // RUSTOMP_VGPU=1: nvptx and amdgcn images run on the virtual GPU, before any real
            // one.
            if rustomp_vgpu_plugin::enabled() {
                built_in.extend(rustomp_vgpu_plugin::plugins());
            }
            built_in.extend::<[Box<dyn Plugin>; 3]>([
                Box::new(rustomp_cuda_plugin::CudaPlugin::new(
                    rustomp_cuda_plugin::CudaDriver::new(),
                )),
                Box::new(rustomp_amdgpu_plugin::AmdgpuPlugin::new(
                    rustomp_amdgpu_plugin::AmdgpuDriver::new(),
                )),
                Box::new(rustomp_host_plugin::HostPlugin::new()),
            ]);
            // Target RTLs found by naming convention come after ours (see `external`).
            built_in.extend(crate::external::discover());
            // Other nodes' devices, through rustomp-proxy ranks, after every local plugin
            // (`numbered_last`). It loads MPI only in a process an MPI launcher started with
            // proxies.
            built_in.push(Box::new(rustomp_remote_plugin::RemotePlugin::new()));
            built_in
        };
        debug!("{} plugin(s), policy {:?}", plugins.len(), policy);
        Self {
            policy,
            plugins,
            slots: RwLock::new(Vec::new()),
            opened: std::array::from_fn(|_| OnceLock::new()),
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
    /// devices not numbered yet get the next numbers. Plugins numbered last (the remote plugin)
    /// come after that, device by device in their own order, each device that runs any of the
    /// images: a program sees its local devices first, then each rank's in rank order.
    /// Records why an image found no device.
    fn assign_devices(&self, library: u64, images: &[RawImage]) {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let mut used: HashSet<(usize, usize)> = HashSet::new();
        let mut served = vec![false; images.len()];
        let mut reasons: Vec<Vec<String>> = vec![Vec::new(); images.len()];
        let mut add = |slots: &mut Vec<Arc<DeviceSlot>>, p: usize, index: usize| {
            // One image per device and program, as LLVM registers them.
            if !used.insert((p, index)) || slots.iter().any(|s| s.plugin == p && s.index == index) {
                return;
            }
            debug!(
                "device {}: {} plugin device {index}",
                slots.len(),
                self.plugins[p].name()
            );
            slots.push(Arc::new(DeviceSlot {
                plugin: p,
                index,
                state: OnceLock::new(),
            }));
        };
        // Each plugin's device count, asked once per registration and only of plugins that
        // one of the images concerns (a plugin loads its driver when asked).
        let mut counts: Vec<Option<usize>> = vec![None; self.plugins.len()];
        let mut count = |p: usize, reasons: &mut Vec<String>| -> usize {
            let plugin = &self.plugins[p];
            let n = *counts[p].get_or_insert_with(|| plugin.number_of_devices());
            if n == 0 {
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
            }
            n
        };
        let usable = |raw: &RawImage| raw.corrupted.is_none();
        for (i, raw) in images.iter().enumerate() {
            if let Some(why) = &raw.corrupted {
                reasons[i].push(format!("corrupted image: {why}"));
                continue;
            }
            let info = raw.info();
            for (p, plugin) in self.plugins.iter().enumerate() {
                if plugin.numbered_last() || !plugin.is_compatible(&info) {
                    continue;
                }
                for index in 0..count(p, &mut reasons[i]) {
                    if let Err(why) = plugin.device_compatibility(index, &info) {
                        reasons[i].push(format!("{} device {index}: {why}", plugin.name()));
                        continue;
                    }
                    served[i] = true;
                    add(&mut slots, p, index);
                }
            }
        }
        for (p, plugin) in self.plugins.iter().enumerate() {
            if !plugin.numbered_last() {
                continue;
            }
            let compatible: Vec<usize> = (0..images.len())
                .filter(|&i| usable(&images[i]) && plugin.is_compatible(&images[i].info()))
                .collect();
            let Some(&first) = compatible.first() else {
                continue;
            };
            let devices = count(p, &mut reasons[first]);
            if devices == 0 {
                for &i in &compatible[1..] {
                    let why = reasons[first].last().cloned().unwrap_or_default();
                    reasons[i].push(why);
                }
            }
            for index in 0..devices {
                let mut runs_one = false;
                for &i in &compatible {
                    match plugin.device_compatibility(index, &images[i].info()) {
                        Ok(()) => {
                            served[i] = true;
                            runs_one = true;
                        }
                        Err(why) => {
                            reasons[i].push(format!("{} device {index}: {why}", plugin.name()))
                        }
                    }
                }
                if runs_one {
                    add(&mut slots, p, index);
                }
            }
        }
        for (i, raw) in images.iter().enumerate() {
            if served[i] {
                continue;
            }
            let mut reasons = std::mem::take(&mut reasons[i]);
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

    /// The device if it is open already (no device is opened just to be looked at).
    pub fn opened_device(&self, id: usize) -> Option<&'static DeviceState> {
        let slot = self.slots().get(id).cloned()?;
        slot.state
            .get()
            .and_then(|state| state.as_ref().ok().copied())
    }

    /// Device `id` when it is open and has every registered image loaded (what a construct
    /// finds but on its first visit): no lock and no atomic read-modify-write for the first
    /// [`LOCK_FREE_DEVICES`], one read of the device list beyond. `None` sends the caller to
    /// [`device`](Self::device).
    #[inline]
    pub fn ready_device(&self, id: usize) -> Option<&'static DeviceState> {
        let state = match self.opened.get(id) {
            Some(opened) => *opened.get()?,
            None => *self.slots().get(id)?.state.get()?.as_ref().ok()?,
        };
        state
            .loaded(self.generation.load(Ordering::Acquire))
            .then_some(state)
    }

    /// The device, opened and with every registered library's images loaded.
    pub fn device(&self, id: usize) -> Result<&'static DeviceState> {
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
                    let state = DeviceState::new(id, crate::profile::observe(id, backend));
                    let state: &'static DeviceState = Box::leak(Box::new(state));
                    // LLVM's host plugin calls its devices `generic-64bit`.
                    let kind = match plugin.name() {
                        "host" => "generic-64bit",
                        other => other,
                    };
                    crate::ompt::device_initialized(id, kind, &*state.backend);
                    state
                })
            })
            .clone()?;
        let generation = self.generation.load(Ordering::Acquire);
        if !state.loaded(generation) {
            self.load_images(state, generation)?;
        }
        if let Some(opened) = self.opened.get(id) {
            opened.get_or_init(|| state);
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
        const CLAUSES: [(u64, &str); 4] = [
            (0x2, "reverse_offload"),
            (0x4, "unified_address"),
            (0x8, "unified_shared_memory"),
            (0x10, "dynamic_allocators"),
        ];
        if flags == 0 {
            return;
        }
        let previous =
            self.requires
                .compare_exchange(0, flags, Ordering::AcqRel, Ordering::Acquire);
        let Err(set) = previous else { return };
        for (bit, clause) in CLAUSES {
            if set & bit != flags & bit {
                diag::fatal(
                    2,
                    &format!("'#pragma omp requires {clause}' not used consistently!"),
                );
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
                state.unload(id);
            }
        }
        let mut libraries = self.libraries.lock().unwrap_or_else(|e| e.into_inner());
        libraries.retain(|l| l.id != id);
        if libraries.is_empty() {
            // The program's last images go (at exit): the devices are done, as LLVM's runtime
            // reports them when it deinitializes, before libomp finalizes the tool.
            crate::ompt::devices_finalized();
        }
        self.unserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(library, _)| *library != id);
    }

    fn load_images(&self, state: &DeviceState, generation: u64) -> Result<()> {
        let libraries = self.libraries.lock().unwrap_or_else(|e| e.into_inner());
        let (plugin, index) = {
            let slots = self.slots();
            (slots[state.id].plugin, slots[state.id].index)
        };
        let requires_usm = self.requires_unified_shared_memory();
        state.load_images(
            &*self.plugins[plugin],
            index,
            &libraries,
            generation,
            requires_usm,
        )
    }
}
