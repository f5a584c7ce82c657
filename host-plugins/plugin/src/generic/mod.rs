//! The generic GPU device layer (LLVM's `GenericPluginTy` / `GenericDeviceTy` /
//! `GenericKernelTy`): everything a GPU plugin does that is not a driver call, written once.
//!
//! A backend implements two small traits: [`Driver`] (initialize, list devices and their
//! properties, say which images a device runs, open a device) and [`Backend`] (one device:
//! allocate and free each memory kind, copy each direction, load an image, look up a global or
//! a kernel, launch with a grid, a block, arguments and dynamic shared memory). This module turns
//! them into the [`Plugin`], [`Device`] and [`LoadedImage`] the front drives, and owns:
//!
//! - the device environment (`__omp_rtl_device_environment`) written at image load, and the
//!   sorted indirect-call table published through it and through `__omp_offloading_fptr_map_*`;
//! - C++ global constructors and destructors, in either style clang-22 emits;
//! - the `__llvm_omp_host_call` port, served while kernels run;
//! - each kernel's `<name>_kernel_environment`, read at its first launch, and the launch
//!   geometry derived from it ([`crate::geometry`]);
//! - the launch environment and teams-reduction buffer of every launch;
//! - draining the device `printf` buffer (`__rustomp_printf_buffer`) after each launch;
//! - the `LIBOMPTARGET_*` / `OMP_*` settings ([`Settings`]) and the messages naming the device.

mod staging;

use crate::diag;
use crate::geometry::{self, DeviceGrid, GridValues, KernelShape};
use crate::image::{self, ImageKind};
use crate::layout::{self, IndirectTable};
use crate::{
    AllocKind, Device, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig,
    LoadedImage, OffloadError, Plugin, Result,
};
pub use crate::image::KernelParameters;
use core::ffi::c_void;
use core::ptr::NonNull;
use rustomp_abi::{exec_mode, symbols, ConfigurationEnvironment, DeviceEnvironment};
use std::collections::HashMap;
use std::fmt;
use staging::{Direction, Staging};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The environment variables LLVM's plugins read, read once per process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// `LIBOMPTARGET_STACK_SIZE`: bytes of stack per device thread.
    pub stack_size: Option<u64>,
    /// `LIBOMPTARGET_HEAP_SIZE`: bytes of device `malloc` heap.
    pub heap_size: Option<u64>,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic shared memory given to every launch.
    pub shared_memory_size: u32,
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG`: the device runtime's debug kind.
    pub device_rtl_debug: u32,
    /// `OMP_NUM_TEAMS`, `OMP_TEAMS_THREAD_LIMIT`: caps on teams and threads (0: none).
    pub num_teams: u32,
    pub teams_thread_limit: u32,
}

impl Settings {
    pub fn from_env() -> Self {
        let u32_of = |name| diag::env_u64(name).map_or(0, |v| v.min(u64::from(u32::MAX)) as u32);
        Settings {
            stack_size: diag::env_u64("LIBOMPTARGET_STACK_SIZE"),
            heap_size: diag::env_u64("LIBOMPTARGET_HEAP_SIZE"),
            shared_memory_size: u32_of("LIBOMPTARGET_SHARED_MEMORY_SIZE"),
            device_rtl_debug: u32_of("LIBOMPTARGET_DEVICE_RTL_DEBUG"),
            num_teams: u32_of("OMP_NUM_TEAMS"),
            teams_thread_limit: u32_of("OMP_TEAMS_THREAD_LIMIT"),
        }
    }

    /// The process's settings.
    pub fn get() -> &'static Settings {
        static SETTINGS: OnceLock<Settings> = OnceLock::new();
        SETTINGS.get_or_init(Settings::from_env)
    }
}

/// What the generic layer needs to know about a device, read when it is opened.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Product name ("NVIDIA H100 80GB HBM3", "AMD Instinct MI210").
    pub name: String,
    /// Architecture as images name it ("sm_90", "gfx90a:sramecc+:xnack-").
    pub arch: String,
    /// The family's grid values with the device's warp or wavefront size and default teams.
    pub grid_values: GridValues,
    /// Most threads in a block and blocks in a launch the device allows.
    pub max_block_threads: u32,
    pub max_grid_teams: u32,
    /// Warps resident on the whole device at once (`HardwareParallelism`).
    pub hardware_parallelism: u64,
    /// Ticks per second of the device clock the runtime reads (`omp_get_wtime`).
    pub clock_frequency: u64,
    pub total_memory: usize,
}

/// A global of a loaded image: its device address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalSymbol {
    pub address: u64,
    pub size: usize,
}

/// How an image's C++ global constructors and destructors are found and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initializers {
    /// NVPTX: clang-22 emits one `__init_array_object_<...>_<priority>` pointer per constructor
    /// (`__fini_array_object_` per destructor) and a kernel that calls those between
    /// `__init_array_start` and `__init_array_end`; the plugin builds that array in priority
    /// order.
    ObjectArray {
        init_kernel: &'static str,
        fini_kernel: &'static str,
    },
    /// AMDGPU: the linker built `.init_array` / `.fini_array`; a kernel walks them.
    LinkedArray {
        init_kernel: &'static str,
        fini_kernel: &'static str,
    },
}

/// One kernel launch as a backend performs it.
#[derive(Debug, Clone, Copy)]
pub struct KernelLaunch<'a> {
    /// Blocks (teams) and threads per block in x, y, z.
    pub blocks: [u32; 3],
    pub threads: [u32; 3],
    pub dynamic_shared_bytes: u32,
    /// The kernel's parameters: the launch environment's device address, then one 64-bit value
    /// per argument, as clang-22 emits target regions.
    pub args: &'a [u64],
}

/// The plugin side of a backend: its driver and the devices it finds.
pub trait Driver: Send + Sync + 'static {
    type Device: Backend;
    /// Facts about one device, known without opening it.
    type Properties: Send + Sync;
    /// Short name (`cuda`, `amdgpu`), used in messages.
    fn name(&self) -> &'static str;
    /// Whether images of this kind (and container triple, empty when unknown) are for this
    /// plugin at all; decided without the driver.
    fn accepts(&self, kind: &ImageKind, triple: &str) -> bool;
    /// Loads and initializes the driver and lists its devices; `Err` says why there are none
    /// (no library, no device), which is not an error of the program.
    fn initialize(&self) -> std::result::Result<Vec<Self::Properties>, String>;
    /// Whether a device can run an image this plugin accepts; `Err` says why not.
    fn runs(
        &self,
        device: &Self::Properties,
        kind: &ImageKind,
        arch: &str,
    ) -> std::result::Result<(), String>;
    /// Opens device `index` of the list `initialize` returned.
    fn open(&self, device: &Self::Properties, index: usize) -> Result<Self::Device>;
}

/// One opened device of a backend. Every method is synchronous: work queued on the device has
/// finished when it returns. Errors carry the driver's words; the generic layer adds the device
/// and what it was doing.
pub trait Backend: Send + Sync + 'static {
    /// A loaded image; dropping it unloads the image.
    type Module: Send + Sync;
    /// A kernel of a loaded image.
    type Function: Copy + Send + Sync;
    /// How this target runs global constructors and destructors.
    const INITIALIZERS: Initializers;

    fn info(&self) -> &DeviceInfo;
    /// Memory of `kind`: device memory, host memory the device reaches (pinned, fine-grained),
    /// or memory both use at the same address. Returns its address.
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64>;
    /// # Safety
    /// `address` came from `alloc` of this device with this `kind` and is not used afterwards.
    unsafe fn free(&self, address: u64, kind: AllocKind) -> Result<()>;
    /// # Safety
    /// `host` is readable for `bytes`; `device` is device memory holding `bytes`.
    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()>;
    /// # Safety
    /// `host` is writable for `bytes`; `device` is device memory holding `bytes`.
    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()>;
    /// # Safety
    /// Both ranges are device memory of this device holding `bytes`.
    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()>;
    /// Loads an image the driver accepted (`is_complete` already checked its headers).
    fn load_module(&self, bytes: &[u8], kind: &ImageKind) -> Result<Self::Module>;
    /// A global by name; `None` when the image does not define it. Only ever asked for names
    /// of globals (the generic layer knows each name's kind from its offload entry or its
    /// own conventions): a driver may answer the name of a function with an error (CUDA's
    /// `cuModuleGetGlobal` does), which is reported as it is.
    fn global(&self, module: &Self::Module, name: &str) -> Result<Option<GlobalSymbol>>;
    /// A kernel by name; `None` when the image does not define it. Only ever asked for names
    /// of kernels.
    fn function(&self, module: &Self::Module, name: &str) -> Result<Option<Self::Function>>;
    /// The parameters `function` declares, when the driver can tell (CUDA 12.4's
    /// `cuFuncGetParamInfo`); `None` when it cannot, and the generic layer uses what the image
    /// states ([`crate::image::kernel_parameters`]).
    fn function_parameters(&self, _function: Self::Function) -> Result<Option<KernelParameters>> {
        Ok(None)
    }
    /// Most threads a block of this kernel may have (registers, launch bounds).
    fn function_max_threads(&self, function: Self::Function) -> Result<u32>;
    /// Lets `function` use `bytes` of dynamic shared memory (CUDA's opt-in above 48 KiB).
    fn reserve_dynamic_shared(&self, _function: Self::Function, _bytes: u32) -> Result<()> {
        Ok(())
    }
    /// Launches and waits for the kernel. While it runs, calls `while_running` (if given) until
    /// it finishes; the call returns whether it found work, so an idle wait can yield.
    ///
    /// # Safety
    /// `launch.args` are the values the kernel takes; the memory they point to lives until
    /// this returns.
    unsafe fn launch(
        &self,
        function: Self::Function,
        launch: &KernelLaunch<'_>,
        while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()>;
    /// The driver's details for the device's description line (version, memory, units).
    fn describe(&self) -> String;
    /// Whether maps should use host memory directly (see `Device::uses_auto_zero_copy`).
    fn uses_auto_zero_copy(&self) -> bool {
        false
    }
    /// Whether the generic layer should stage large copies of pageable host memory through
    /// pinned buffers ([`staging`]): for a driver whose own pageable copies are slow (CUDA)
    /// and that does not stage itself.
    fn stages_pageable_copies(&self) -> bool {
        false
    }
    /// Whether kernels can use any host address (see `Device::unified_memory`), or why not.
    fn unified_memory(&self) -> std::result::Result<(), String> {
        Err("the GPU cannot access pageable host memory".into())
    }
}

/// A [`Plugin`] over a [`Driver`]: the driver is initialized the first time devices are
/// counted, never before (LLVM initializes a plugin only when an image needs it).
pub struct GenericPlugin<D: Driver> {
    driver: Arc<D>,
    devices: OnceLock<std::result::Result<Vec<D::Properties>, String>>,
}

impl<D: Driver> GenericPlugin<D> {
    pub fn new(driver: D) -> Self {
        Self {
            driver: Arc::new(driver),
            devices: OnceLock::new(),
        }
    }

    fn devices(&self) -> &std::result::Result<Vec<D::Properties>, String> {
        self.devices.get_or_init(|| {
            let found = self.driver.initialize().and_then(|devices| {
                if devices.is_empty() {
                    Err(format!(
                        "the {} driver reports no device",
                        self.driver.name()
                    ))
                } else {
                    Ok(devices)
                }
            });
            match &found {
                Ok(devices) => diag::debug(
                    self.driver.name(),
                    format_args!("{} device(s)", devices.len()),
                ),
                Err(why) => diag::debug(self.driver.name(), format_args!("no devices: {why}")),
            }
            found
        })
    }
}

impl<D: Driver> Plugin for GenericPlugin<D> {
    fn name(&self) -> &str {
        self.driver.name()
    }

    fn number_of_devices(&self) -> usize {
        self.devices().as_ref().map_or(0, Vec::len)
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.devices().as_ref().err().cloned()
    }

    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool {
        image::classify(image.bytes).is_some_and(|kind| self.driver.accepts(&kind, &image.triple))
    }

    fn device_compatibility(
        &self,
        index: usize,
        image: &ImageInfo<'_>,
    ) -> std::result::Result<(), String> {
        let name = self.driver.name();
        let kind = image::classify(image.bytes).filter(|k| self.driver.accepts(k, &image.triple));
        let kind = kind.ok_or_else(|| format!("not an image the {name} plugin runs"))?;
        let devices = self.devices().as_ref().map_err(Clone::clone)?;
        let device = devices
            .get(index)
            .ok_or_else(|| format!("the {name} plugin has no device {index}"))?;
        self.driver.runs(device, &kind, &image.arch)
    }

    fn open_device(&self, index: usize, global: usize, total: usize) -> Result<Box<dyn Device>> {
        let name = self.driver.name();
        let label = format!("device {global} ({name} plugin)");
        let devices = self.devices().as_ref().map_err(|why| {
            OffloadError::new(ErrorKind::DeviceUnavailable, format!("{label}: {why}"))
        })?;
        let properties = devices.get(index).ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!("{label}: the {name} plugin has no device {index}"),
            )
        })?;
        let backend = self
            .driver
            .open(properties, index)
            .map_err(|e| e.context(format!("{label}: cannot open the device")))?;
        let device = GenericDevice::new(backend, name, index, global, total, Settings::get());
        diag::debug(
            name,
            format_args!(
                "{label}: {} ({}) opened, grid {:?}",
                device.core.info().name,
                device.core.info().arch,
                device.core.grid
            ),
        );
        Ok(Box::new(device))
    }
}

/// What a device and the images loaded on it share.
struct DeviceCore<B: Backend> {
    backend: B,
    plugin: &'static str,
    global: usize,
    index: usize,
    /// "device N (cuda plugin)" for messages.
    label: String,
    grid: DeviceGrid,
    environment: DeviceEnvironment,
    /// A zeroed launch environment shared by the launches of kernels without a teams reduction
    /// (device code only writes a launch environment during a teams reduction). Its address
    /// only, freed in `drop`: an `Allocation` would keep the core alive in a cycle.
    idle_launch_environment: Mutex<Option<u64>>,
}

impl<B: Backend> Drop for DeviceCore<B> {
    fn drop(&mut self) {
        let idle = self
            .idle_launch_environment
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(address) = idle.take() {
            // SAFETY: allocated as device memory in `launch_environment`; no image (and so no
            // launch) of this device is left.
            if let Err(e) = unsafe { self.backend.free(address, AllocKind::Device) } {
                diag::debug(self.plugin, format_args!("{}: {e}", self.label));
            }
        }
    }
}

impl<B: Backend> DeviceCore<B> {
    fn info(&self) -> &DeviceInfo {
        self.backend.info()
    }

    fn upload(&self, address: u64, bytes: &[u8], what: impl fmt::Display) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: `bytes` is a live slice; callers pass device ranges they allocated or looked
        // up with at least this size.
        unsafe {
            self.backend
                .copy_to_device(address, bytes.as_ptr(), bytes.len())
        }
        .map_err(|e| e.context(format_args!("{}: writing {what}", self.label)))
    }

    fn download(&self, address: u64, out: &mut [u8], what: impl fmt::Display) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `upload`, for a writable slice.
        unsafe {
            self.backend
                .copy_from_device(out.as_mut_ptr(), address, out.len())
        }
        .map_err(|e| e.context(format_args!("{}: reading {what}", self.label)))
    }
}

/// Device memory the generic layer owns (launch environments, reduction buffers, the indirect
/// table, constructor arrays, the host-call port); freed on drop.
struct Allocation<B: Backend> {
    core: Arc<DeviceCore<B>>,
    address: u64,
    kind: AllocKind,
}

impl<B: Backend> Allocation<B> {
    fn new(
        core: &Arc<DeviceCore<B>>,
        bytes: usize,
        kind: AllocKind,
        what: impl fmt::Display,
    ) -> Result<Self> {
        let address = core
            .backend
            .alloc(bytes, kind)
            .map_err(|e| e.context(format_args!("{}: allocating {what}", core.label)))?;
        Ok(Self {
            core: Arc::clone(core),
            address,
            kind,
        })
    }
}

impl<B: Backend> Drop for Allocation<B> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this kind, freed once; nothing uses it after its owner.
        if let Err(e) = unsafe { self.core.backend.free(self.address, self.kind) } {
            // At process exit the driver may be shut down already: nothing left to do.
            diag::debug(self.core.plugin, format_args!("{}: {e}", self.core.label));
        }
    }
}

/// The [`Device`] the front drives, over one backend device.
pub struct GenericDevice<B: Backend> {
    core: Arc<DeviceCore<B>>,
    /// Pinned buffers for large copies of pageable memory (here, not in the core: they hold
    /// the core alive).
    staging: Staging<B>,
}

impl<B: Backend> GenericDevice<B> {
    pub fn new(
        backend: B,
        plugin: &'static str,
        index: usize,
        global: usize,
        total: usize,
        settings: &Settings,
    ) -> Self {
        let info = backend.info();
        let grid = DeviceGrid::new(
            info.grid_values,
            info.max_block_threads,
            info.max_grid_teams,
            settings.num_teams,
            settings.teams_thread_limit,
        );
        let environment = DeviceEnvironment {
            debug_kind: settings.device_rtl_debug,
            num_devices: total as u32,
            device_num: global as u32,
            dynamic_mem_size: settings.shared_memory_size,
            clock_frequency: info.clock_frequency,
            indirect_call_table: 0,
            indirect_call_table_size: 0,
            hardware_parallelism: info.hardware_parallelism,
        };
        let core = DeviceCore {
            backend,
            plugin,
            global,
            index,
            label: format!("device {global} ({plugin} plugin)"),
            grid,
            environment,
            idle_launch_environment: Mutex::new(None),
        };
        Self {
            core: Arc::new(core),
            staging: Staging::default(),
        }
    }
}

fn kind_name(kind: AllocKind) -> &'static str {
    match kind {
        AllocKind::Device => "device",
        AllocKind::Host => "pinned host",
        AllocKind::Shared => "shared",
    }
}

impl<B: Backend> Device for GenericDevice<B> {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        // Zero bytes still get a distinct address, as on the host plugin.
        let address = self.core.backend.alloc(bytes.max(1), kind);
        let address = address.map_err(|e| {
            e.context(format_args!(
                "{}: cannot allocate {bytes} bytes of {} memory",
                self.core.label,
                kind_name(kind)
            ))
        })?;
        if kind == AllocKind::Host {
            self.staging.pinned_allocated(address, bytes.max(1));
        }
        Ok(address as *mut c_void)
    }

    unsafe fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        if kind == AllocKind::Host {
            self.staging.pinned_freed(ptr as u64);
        }
        // SAFETY: the caller frees only what `alloc` of this device returned, with its kind, once.
        unsafe { self.core.backend.free(ptr as u64, kind) }.map_err(|e| {
            e.context(format_args!(
                "{}: cannot free {} memory at {ptr:p}",
                self.core.label,
                kind_name(kind)
            ))
        })
    }

    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let staged = self.core.backend.stages_pageable_copies() && self.staging.wanted(host as u64, bytes);
        // SAFETY: the trait's contract, which the staged copy's asks for too.
        unsafe {
            if staged {
                self.staging.copy(&self.core, Direction::ToDevice, host as u64, device as u64, bytes)
            } else {
                self.core.backend.copy_to_device(device as u64, host as *const u8, bytes)
            }
        }
        .map_err(|e| {
            e.context(format_args!(
                "{}: copy of {bytes} bytes from host {host:p} to {device:p}",
                self.core.label
            ))
        })
    }

    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let staged = self.core.backend.stages_pageable_copies() && self.staging.wanted(host as u64, bytes);
        // SAFETY: the trait's contract, which the staged copy's asks for too.
        unsafe {
            if staged {
                self.staging.copy(&self.core, Direction::FromDevice, host as u64, device as u64, bytes)
            } else {
                self.core.backend.copy_from_device(host as *mut u8, device as u64, bytes)
            }
        }
        .map_err(|e| {
            e.context(format_args!(
                "{}: copy of {bytes} bytes from {device:p} to host {host:p}",
                self.core.label
            ))
        })
    }

    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the trait's contract.
        unsafe {
            self.core
                .backend
                .copy_within_device(dst as u64, src as u64, bytes)
        }
        .map_err(|e| {
            e.context(format_args!(
                "{}: copy of {bytes} bytes from {src:p} to {dst:p}",
                self.core.label
            ))
        })
    }

    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        GenericImage::load(&self.core, image).map(|i| Box::new(i) as Box<dyn LoadedImage>)
    }

    fn uses_auto_zero_copy(&self) -> bool {
        self.core.backend.uses_auto_zero_copy()
    }

    fn unified_memory(&self) -> std::result::Result<(), String> {
        self.core.backend.unified_memory()
    }

    fn describe(&self) -> String {
        let core = &self.core;
        let info = core.info();
        format!(
            "device {}: {} plugin device {} ({}, {}, {})",
            core.global,
            core.plugin,
            core.index,
            info.name,
            info.arch,
            core.backend.describe()
        )
    }

    fn properties(&self) -> Vec<(&'static str, String)> {
        let core = &self.core;
        let info = core.info();
        let grid = &core.grid;
        vec![
            ("Kind", "GPU".to_string()),
            ("Name", info.name.clone()),
            ("Architecture", info.arch.clone()),
            ("Memory", format!("{} MiB", info.total_memory >> 20)),
            ("Warp size", grid.warp_size.to_string()),
            ("Max threads per team", grid.max_threads.to_string()),
            ("Max teams", grid.max_teams.to_string()),
            (
                "Default teams x threads",
                format!("{} x {}", grid.default_teams, grid.default_threads),
            ),
            ("Resident warps", info.hardware_parallelism.to_string()),
            ("Timer frequency", format!("{} Hz (omp_get_wtime)", info.clock_frequency)),
            ("Driver", core.backend.describe()),
        ]
    }
}

/// A kernel of an image, looked up by the front through `symbol`.
struct Kernel<B: Backend> {
    name: String,
    function: B::Function,
    /// Read at the first launch.
    facts: OnceLock<std::result::Result<KernelFacts, OffloadError>>,
}

#[derive(Clone, Copy)]
struct KernelFacts {
    config: ConfigurationEnvironment,
    shape: KernelShape,
    reduction_bytes: usize,
    /// What the kernel declares (driver first, else the image), `None` when neither says.
    parameters: Option<KernelParameters>,
}

/// The environment published to the image and the memory behind its indirect table.
struct Published<B: Backend> {
    environment: DeviceEnvironment,
    table: Option<Allocation<B>>,
}

/// The device `printf` buffer's header: `u32 cursor`, `u32 truncated`, then the text.
const PRINTF_HEADER_BYTES: usize = 8;

/// An image loaded on one device.
pub struct GenericImage<B: Backend> {
    core: Arc<DeviceCore<B>>,
    module: Option<B::Module>,
    kind: ImageKind,
    /// Destructor objects (`ObjectArray` style), run before unloading.
    destructors: Vec<String>,
    /// Whether the constructors ran (the destructors run only then).
    initialized: bool,
    /// The `__llvm_omp_host_call` port when the image's runtime can call host functions.
    host_call: Option<Allocation<B>>,
    /// `__rustomp_printf_buffer` when the image prints through it (amdgcn).
    printf_buffer: Option<GlobalSymbol>,
    /// Kernels by the handle given to the front (the address of their `Kernel`).
    kernels: Mutex<HashMap<usize, Arc<Kernel<B>>>>,
    /// Each kernel's parameters as the image states them.
    declared_parameters: HashMap<String, KernelParameters>,
    published: Mutex<Published<B>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl<B: Backend> GenericImage<B> {
    fn load(core: &Arc<DeviceCore<B>>, image: &ImageInfo<'_>) -> Result<Self> {
        let label = &core.label;
        let invalid = |why: String| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!("{label}: cannot load image: {why}"),
            )
        };
        let kind = image::validate(image.bytes).map_err(|why| {
            invalid(format!("{} bytes, corrupted or of no format the {} plugin runs: {why}", image.bytes.len(), core.plugin))
        })?;
        let module = core
            .backend
            .load_module(image.bytes, &kind)
            .map_err(|e| e.context(format_args!("{label}: cannot load the {}", kind.label())))?;
        diag::debug(
            core.plugin,
            format_args!(
                "{label}: loaded a {} of {} bytes",
                kind.label(),
                image.bytes.len()
            ),
        );
        let destructor_prefix = match B::INITIALIZERS {
            Initializers::ObjectArray { .. } => Some("__fini_array_object_"),
            Initializers::LinkedArray { .. } => None,
        };
        let declared_parameters = image::kernel_parameters(image.bytes, &kind);
        let mut loaded = Self {
            core: Arc::clone(core),
            module: Some(module),
            destructors: destructor_prefix.map_or_else(Vec::new, |prefix| {
                image::symbols_with_prefix(image.bytes, &kind, prefix)
            }),
            kind,
            initialized: false,
            host_call: None,
            printf_buffer: None,
            kernels: Mutex::new(HashMap::new()),
            declared_parameters,
            published: Mutex::new(Published {
                environment: core.environment,
                table: None,
            }),
        };
        loaded.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&core.environment),
        )?;
        loaded.host_call = loaded.open_host_call_port()?;
        loaded.printf_buffer = loaded
            .lookup_global(PRINTF_BUFFER)?
            .filter(|g| g.size > PRINTF_HEADER_BYTES);
        loaded.run_initializers(true, image.bytes)?;
        loaded.initialized = true;
        Ok(loaded)
    }

    fn module(&self) -> &B::Module {
        self.module
            .as_ref()
            .expect("the module lives until the image is dropped")
    }

    /// A global of the image, `None` when it does not define it.
    fn lookup_global(&self, name: &str) -> Result<Option<GlobalSymbol>> {
        self.core.backend.global(self.module(), name).map_err(|e| {
            e.context(format_args!(
                "{}: looking up global {name}",
                self.core.label
            ))
        })
    }

    /// Writes `bytes` to global `name` if the image has it (`Ok(false)` when it does not); its
    /// size must match.
    fn write_global(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let Some(global) = self.lookup_global(name)? else {
            diag::debug(
                self.core.plugin,
                format_args!(
                    "{}: the {} has no {name}; not written",
                    self.core.label,
                    self.kind.label()
                ),
            );
            return Ok(false);
        };
        if global.size != bytes.len() {
            return Err(OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "{}: global {name} of the {} has {} bytes, expected {}",
                    self.core.label,
                    self.kind.label(),
                    global.size,
                    bytes.len()
                ),
            ));
        }
        self.core.upload(global.address, bytes, name)?;
        Ok(true)
    }

    /// Allocates the `__llvm_omp_host_call` port in host memory the device reaches and
    /// publishes its address, when the image's runtime has the pointer for it.
    fn open_host_call_port(&self) -> Result<Option<Allocation<B>>> {
        if self.lookup_global(symbols::HOST_CALL_PORT)?.is_none() {
            return Ok(None);
        }
        let bytes = core::mem::size_of::<rustomp_abi::HostCallPort>();
        let port = Allocation::new(&self.core, bytes, AllocKind::Host, "the host-call port")?;
        // SAFETY: fresh host-accessible memory of the port's size; all zero is a free port.
        unsafe { core::ptr::write_bytes(port.address as *mut u8, 0, bytes) };
        self.write_global(symbols::HOST_CALL_PORT, &port.address.to_le_bytes())?;
        Ok(Some(port))
    }

    /// Runs the image's global constructors (`init`) or destructors once, one thread.
    fn run_initializers(&self, init: bool, image_bytes: &[u8]) -> Result<()> {
        let label = &self.core.label;
        let kernel = match (B::INITIALIZERS, init) {
            (
                Initializers::ObjectArray { init_kernel, .. }
                | Initializers::LinkedArray { init_kernel, .. },
                true,
            ) => init_kernel,
            (
                Initializers::ObjectArray { fini_kernel, .. }
                | Initializers::LinkedArray { fini_kernel, .. },
                false,
            ) => fini_kernel,
        };
        // The array the kernel walks, kept alive until it finished.
        let mut array_walked = None;
        if let Initializers::ObjectArray { .. } = B::INITIALIZERS {
            let objects = if init {
                image::symbols_with_prefix(image_bytes, &self.kind, "__init_array_object_")
            } else {
                self.destructors.clone()
            };
            if objects.is_empty() {
                return Ok(());
            }
            let Some(array) = self.object_array(&objects, kernel)? else {
                return Ok(());
            };
            let (start, end) = if init {
                ("__init_array_start", "__init_array_end")
            } else {
                ("__fini_array_start", "__fini_array_end")
            };
            self.write_global(start, &array.0.address.to_le_bytes())?;
            self.write_global(end, &(array.0.address + array.1 as u64 * 8).to_le_bytes())?;
            array_walked = Some(array.0);
        }
        let function = self
            .core
            .backend
            .function(self.module(), kernel)
            .map_err(|e| e.context(format_args!("{label}: looking up {kernel}")))?;
        let Some(function) = function else {
            if array_walked.is_some() {
                diag::debug(
                    self.core.plugin,
                    format_args!("{label}: constructor objects but no {kernel} kernel; not run"),
                );
            }
            return Ok(());
        };
        let one = KernelLaunch {
            blocks: [1, 1, 1],
            threads: [1, 1, 1],
            dynamic_shared_bytes: 0,
            args: &[],
        };
        // SAFETY: the initializer kernels take no parameters; the array they walk lives until
        // the launch returned.
        unsafe { self.core.backend.launch(function, &one, None) }.map_err(|e| {
            e.context(format_args!(
                "{label}: running {kernel} of the {}",
                self.kind.label()
            ))
            .with_kind(ErrorKind::LaunchFailed)
        })?;
        diag::debug(self.core.plugin, format_args!("{label}: ran {kernel}"));
        Ok(())
    }

    /// The `ObjectArray` constructor array: the objects' function pointers in priority order,
    /// in device memory, and how many; `None` when none of the objects is in the image.
    fn object_array(
        &self,
        objects: &[String],
        kernel: &str,
    ) -> Result<Option<(Allocation<B>, usize)>> {
        let mut ordered: Vec<(u16, &String)> = objects
            .iter()
            .map(|n| (image::init_priority(n).unwrap_or(u16::MAX), n))
            .collect();
        ordered.sort_by_key(|(priority, _)| *priority);
        let mut pointers = Vec::with_capacity(ordered.len() * 8);
        for (_, name) in &ordered {
            let Some(global) = self.lookup_global(name)? else {
                continue;
            };
            if global.size != 8 {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{}: {name} has {} bytes, expected a pointer",
                        self.core.label, global.size
                    ),
                ));
            }
            let mut pointer = [0u8; 8];
            self.core.download(global.address, &mut pointer, name)?;
            pointers.extend_from_slice(&pointer);
        }
        if pointers.is_empty() {
            return Ok(None);
        }
        let array = Allocation::new(
            &self.core,
            pointers.len(),
            AllocKind::Device,
            format_args!("the array {kernel} walks"),
        )?;
        self.core.upload(
            array.address,
            &pointers,
            format_args!("the array {kernel} walks"),
        )?;
        Ok(Some((array, pointers.len() / 8)))
    }

    fn read_facts(&self, kernel: &Kernel<B>) -> Result<KernelFacts> {
        let label = &self.core.label;
        let environment_name = format!("{}{}", kernel.name, symbols::KERNEL_ENVIRONMENT_SUFFIX);
        let config = match self.lookup_global(&environment_name)? {
            Some(global) if global.size >= layout::KERNEL_ENVIRONMENT_SIZE => {
                let mut bytes = [0u8; layout::KERNEL_ENVIRONMENT_SIZE];
                self.core
                    .download(global.address, &mut bytes, &environment_name)?;
                layout::parse_kernel_environment(&bytes).unwrap_or_default()
            }
            Some(global) => {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{label}: {environment_name} has {} bytes, expected {}",
                        global.size,
                        layout::KERNEL_ENVIRONMENT_SIZE
                    ),
                ));
            }
            None => {
                // Not an OpenMP kernel (no environment): launched as given, like LLVM's bare mode.
                diag::debug(
                    self.core.plugin,
                    format_args!(
                        "{label}: kernel {} has no kernel environment; bare launch",
                        kernel.name
                    ),
                );
                ConfigurationEnvironment {
                    exec_mode: exec_mode::BARE,
                    ..Default::default()
                }
            }
        };
        let function_max_threads = self
            .core
            .backend
            .function_max_threads(kernel.function)
            .map_err(|e| e.context(format_args!("{label}: querying kernel {}", kernel.name)))?;
        let parameters = match self.core.backend.function_parameters(kernel.function) {
            Ok(Some(declared)) => Some(declared),
            Ok(None) => self.declared_parameters.get(&kernel.name).copied(),
            Err(e) => {
                return Err(e.context(format_args!(
                    "{label}: asking for the parameters of kernel {}",
                    kernel.name
                )))
            }
        };
        Ok(KernelFacts {
            parameters,
            config,
            shape: KernelShape {
                exec_mode: config.exec_mode,
                min_threads: config.min_threads,
                max_threads: config.max_threads,
                function_max_threads: function_max_threads.max(1),
            },
            reduction_bytes: layout::reduction_buffer_bytes(&config),
        })
    }

    /// The launch environment of one launch: a fresh one with its teams-reduction buffer, or
    /// the device's shared zeroed one. The returned allocations live until the launch ended.
    fn launch_environment(&self, facts: &KernelFacts) -> Result<(u64, Vec<Allocation<B>>)> {
        let core = &self.core;
        if facts.reduction_bytes > 0 {
            let buffer = Allocation::new(
                core,
                facts.reduction_bytes,
                AllocKind::Device,
                "the teams-reduction buffer",
            )?;
            let environment = Allocation::new(
                core,
                layout::LAUNCH_ENVIRONMENT_SIZE,
                AllocKind::Device,
                "the launch environment",
            )?;
            core.upload(
                environment.address,
                &layout::launch_environment_bytes(buffer.address),
                "the launch environment",
            )?;
            return Ok((environment.address, vec![environment, buffer]));
        }
        let mut idle = locked(&core.idle_launch_environment);
        if let Some(address) = *idle {
            return Ok((address, Vec::new()));
        }
        // Owned by the core (freed in its `drop`), so not an `Allocation`.
        let address = core
            .backend
            .alloc(layout::LAUNCH_ENVIRONMENT_SIZE, AllocKind::Device)
            .map_err(|e| {
                e.context(format_args!(
                    "{}: allocating the launch environment",
                    core.label
                ))
            })?;
        if let Err(e) = core.upload(
            address,
            &layout::launch_environment_bytes(0),
            "the launch environment",
        ) {
            // SAFETY: allocated just above and not handed out.
            let _ = unsafe { core.backend.free(address, AllocKind::Device) };
            return Err(e);
        }
        *idle = Some(address);
        Ok((address, Vec::new()))
    }

    /// Prints what device code wrote to the `printf` buffer and empties it.
    fn drain_printf(&self) -> Result<()> {
        let Some(buffer) = self.printf_buffer else {
            return Ok(());
        };
        let mut header = [0u8; PRINTF_HEADER_BYTES];
        self.core
            .download(buffer.address, &mut header, PRINTF_BUFFER)?;
        let cursor = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let truncated = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if cursor == 0 && truncated == 0 {
            return Ok(());
        }
        let mut text = vec![0u8; cursor.min(buffer.size - PRINTF_HEADER_BYTES)];
        self.core.download(
            buffer.address + PRINTF_HEADER_BYTES as u64,
            &mut text,
            PRINTF_BUFFER,
        )?;
        self.core
            .upload(buffer.address, &[0u8; PRINTF_HEADER_BYTES], PRINTF_BUFFER)?;
        // Flushed at once: the output of a launch comes before what the host prints next.
        diag::c_stdout(&text, true);
        if truncated > 0 {
            eprintln!("omptarget warning: {}: device printf output of {truncated} call(s) was cut short (the buffer holds {} bytes per launch)", self.core.label, buffer.size - PRINTF_HEADER_BYTES);
        }
        Ok(())
    }
}

/// Refuses a launch whose values (the launch environment, then one per argument) are not what
/// the kernel declares: a driver would read past them (or ignore some) and the kernel would
/// run on garbage, or the host process die inside the driver. LLVM stops such a launch with
/// "mismatch in kernel arguments" too.
fn check_arguments(
    kernel: &str,
    declared: Option<KernelParameters>,
    given: usize,
) -> Result<()> {
    let Some(declared) = declared else {
        return Ok(());
    };
    let bytes = given * core::mem::size_of::<u64>();
    if declared.count == given && declared.bytes == bytes {
        return Ok(());
    }
    Err(OffloadError::new(
        ErrorKind::LaunchFailed,
        format!(
            "mismatch in kernel arguments: kernel {kernel} declares {} parameter(s) ({} bytes) \
             but the program passed {given} ({bytes} bytes: the launch environment and {} \
             argument(s)); not launched. The host and device compilations of the target region \
             disagree on what it captures (e.g. code under `#ifdef __NVPTX__` or \
             `#if defined(__AMDGCN__)` that uses a variable the host's code does not)",
            declared.count,
            declared.bytes,
            given.saturating_sub(1),
        ),
    ))
}

/// The device runtime's `printf` buffer (amdgcn; nvptx prints through the CUDA driver).
const PRINTF_BUFFER: &str = "__rustomp_printf_buffer";

impl<B: Backend> LoadedImage for GenericImage<B> {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        let function = self.core.backend.function(self.module(), name).map_err(|e| {
            e.context(format_args!("{}: looking up kernel {name}", self.core.label))
        })?;
        let Some(function) = function else {
            diag::debug(
                self.core.plugin,
                format_args!("{}: the {} has no kernel {name}", self.core.label, self.kind.label()),
            );
            return Ok(None);
        };
        let mut kernels = locked(&self.kernels);
        if let Some(known) = kernels.values().find(|k| k.name == name) {
            return Ok(Some(NonNull::from(&**known).cast()));
        }
        let kernel = Arc::new(Kernel {
            name: name.to_string(),
            function,
            facts: OnceLock::new(),
        });
        let handle = NonNull::from(&*kernel).cast();
        kernels.insert(handle.as_ptr() as usize, kernel);
        Ok(Some(handle))
    }

    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        Ok(self.lookup_global(name)?.map(|g| DeviceGlobal {
            address: g.address as *mut c_void,
            size: g.size,
        }))
    }

    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let core = &self.core;
        let label = &core.label;
        let found = locked(&self.kernels).get(&(kernel.raw() as usize)).cloned();
        let kernel = found.ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{label}: {:p} is not a kernel of the {}",
                    kernel.raw(),
                    self.kind.label()
                ),
            )
        })?;
        let facts = kernel
            .facts
            .get_or_init(|| self.read_facts(&kernel))
            .clone()?;
        let g = geometry::compute(&core.grid, &facts.shape, config);
        let dynamic_shared_bytes = config
            .dyn_shared_bytes
            .max(core.environment.dynamic_mem_size);
        let mode = geometry::mode_name(facts.config.exec_mode);
        let what = || {
            format!("kernel {} ({} blocks of {} threads, {mode} mode, {dynamic_shared_bytes} bytes of dynamic shared memory)", kernel.name, g.blocks, g.threads)
        };
        core.backend
            .reserve_dynamic_shared(kernel.function, dynamic_shared_bytes)
            .map_err(|e| e.context(format_args!("{label}: {}", what())))?;
        let (environment, _per_launch) = self
            .launch_environment(&facts)
            .map_err(|e| e.context(format_args!("preparing {}", what())))?;
        let mut values: Vec<u64> = Vec::with_capacity(args.len() + 1);
        values.push(environment);
        values.extend(args.iter().map(|&a| a as u64));
        check_arguments(&kernel.name, facts.parameters, values.len())
            .map_err(|e| e.context(format_args!("{label}")))?;
        if diag::info_enabled(diag::infotype::PLUGIN) {
            // LLVM's plugin layer names itself and the plugin's own device number.
            eprintln!(
                "\"PluginInterface\" device {} info: {}",
                core.index,
                format_args!(
                    "Launching kernel {} with [{},{},{}] blocks and [{},{},{}] threads in {mode} mode",
                    kernel.name, g.blocks, g.blocks_yz[0], g.blocks_yz[1], g.threads, g.threads_yz[0], g.threads_yz[1]
                ),
            );
        }
        let launch = KernelLaunch {
            blocks: [g.blocks, g.blocks_yz[0], g.blocks_yz[1]],
            threads: [g.threads, g.threads_yz[0], g.threads_yz[1]],
            dynamic_shared_bytes,
            args: &values,
        };
        // The kernel may call host functions: serve them while it runs.
        let mut server = self.host_call.as_ref().map(|port| {
            let port = port.address as *mut rustomp_abi::HostCallPort;
            // SAFETY: the image's live port, shared with its device runtime.
            move || unsafe { crate::host_call::serve(port) }
        });
        let while_running = server.as_mut().map(|s| s as &mut dyn FnMut() -> bool);
        // SAFETY: the caller's values follow the launch environment, which lives in
        // `_per_launch` or the device until the launch returned.
        unsafe { core.backend.launch(kernel.function, &launch, while_running) }
            .map_err(|e| e.context(format_args!("{label}: {}", what())))?;
        self.drain_printf()
    }

    fn set_indirect_table(&self, table: &IndirectTable) -> Result<()> {
        if table.is_empty() {
            return Ok(());
        }
        let core = &self.core;
        let bytes = table.bytes();
        let memory = Allocation::new(
            core,
            bytes.len(),
            AllocKind::Device,
            "the indirect-call table",
        )?;
        core.upload(memory.address, &bytes, "the indirect-call table")?;
        let mut published = locked(&self.published);
        published.environment.indirect_call_table = memory.address as usize;
        published.environment.indirect_call_table_size = table.len() as u64;
        self.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&published.environment),
        )?;
        self.write_global(symbols::FPTR_MAP_POINTER, &memory.address.to_le_bytes())?;
        self.write_global(symbols::FPTR_MAP_SIZE, &(table.len() as u64).to_le_bytes())?;
        diag::debug(
            core.plugin,
            format_args!(
                "{}: indirect-call table of {} entries at {:#x}",
                core.label,
                table.len(),
                memory.address
            ),
        );
        // The previous table (if any) is freed only now that nothing points at it.
        published.table = Some(memory);
        Ok(())
    }
}

impl<B: Backend> Drop for GenericImage<B> {
    fn drop(&mut self) {
        // Destructors before the module goes; at process exit the driver may already be shut
        // down, which leaves nothing to do but say so.
        if self.initialized {
            if let Err(e) = self.run_initializers(false, &[]) {
                diag::debug(self.core.plugin, format_args!("{e}"));
            }
        }
        // The kernels' handles die with the module.
        locked(&self.kernels).clear();
        self.module = None;
    }
}
