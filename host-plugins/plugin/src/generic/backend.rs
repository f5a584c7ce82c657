//! The contract a GPU backend implements: the one file a backend author reads.
//!
//! [`Driver`] is the plugin side (load the driver, list devices and what each runs, open one);
//! [`Backend`] is one opened device (allocate and free each memory kind, copy each direction,
//! load an image, look a global or a kernel up by name, launch, wait). Every method is
//! synchronous and returns the driver's own words in its errors; the generic layer
//! ([`super`]) does everything else and adds which device and what it was doing.

use crate::geometry::GridValues;
use crate::image::ImageKind;
pub use crate::image::KernelParameters;
use crate::{AllocKind, Result};

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

/// Which way a copy between host and device memory goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ToDevice,
    FromDevice,
}

/// One piece of a staged copy ([`Backend::copy_pieces`]): `bytes` between the pinned host
/// buffer `pinned` and device memory at `device`. `buffer` and `chunk` are the generic layer's
/// own bookkeeping (which ring buffer, which chunk of the copy), handed back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedPiece {
    pub device: u64,
    pub pinned: u64,
    pub bytes: usize,
    pub buffer: usize,
    pub chunk: usize,
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
    /// [`Self::copy_to_device`] or [`Self::copy_from_device`], by `direction`.
    ///
    /// # Safety
    /// As the one `direction` names: `host` readable (to the device) or writable (from it) for
    /// `bytes`, `device` device memory holding `bytes`.
    unsafe fn copy_host(
        &self,
        direction: Direction,
        host: u64,
        device: u64,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe {
            match direction {
                Direction::ToDevice => self.copy_to_device(device, host as *const u8, bytes),
                Direction::FromDevice => self.copy_from_device(host as *mut u8, device, bytes),
            }
        }
    }
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
    /// See `Device::waits_for_running_kernels`: true for a GPU driver's synchronous calls.
    fn waits_for_running_kernels(&self) -> bool {
        true
    }
    /// Whether the generic layer should stage large copies of pageable host memory through
    /// pinned buffers ([`staging`]): for a driver whose own pageable copies are slow (CUDA)
    /// and that does not stage itself.
    fn stages_pageable_copies(&self) -> bool {
        false
    }
    /// Copies the pieces `next` yields (until it yields `None`), all in `direction`, and calls
    /// `finished` with each once its copy has completed, in the order they came. A driver with
    /// asynchronous copies keeps two in flight, so its copy engine starts the next piece while
    /// the host waits for the one before; the default copies each synchronously. When this
    /// returns, also with an error, no copy of a piece is running any more.
    ///
    /// # Safety
    /// Each piece's pinned buffer holds `bytes` (readable to the device, or writable from it)
    /// and its device range lies in this device's memory; the caller leaves the buffer alone
    /// from `next` yielding it until `finished` hands it back (or this returns).
    unsafe fn copy_pieces(
        &self,
        direction: Direction,
        next: &mut dyn FnMut() -> Option<StagedPiece>,
        finished: &mut dyn FnMut(StagedPiece),
    ) -> Result<()> {
        while let Some(piece) = next() {
            // SAFETY: the caller's contract for each piece.
            unsafe { self.copy_host(direction, piece.pinned, piece.device, piece.bytes) }?;
            finished(piece);
        }
        Ok(())
    }
    /// Whether the driver already has `bytes` at `host` pinned (the user's `cudaMallocHost`,
    /// `cuMemHostRegister`, memory another library locked): such a copy goes straight to the
    /// driver, unstaged. The default does not know.
    fn host_memory_pinned(&self, _host: u64, _bytes: usize) -> bool {
        false
    }
    /// Page-locks `bytes` of the user's memory at `host` for this device (LLVM's
    /// `llvm_omp_target_lock_mem`, which libomp calls for `omp_alloc` with the pinned trait).
    /// Returns the address the device reaches it at. The default has nothing to lock.
    ///
    /// # Safety
    /// `host` is the caller's live memory of `bytes`, unlocked (`unlock_host`) before it is freed.
    unsafe fn lock_host(&self, host: u64, _bytes: usize) -> Result<u64> {
        Ok(host)
    }
    /// Undoes `lock_host` of `host`.
    ///
    /// # Safety
    /// `host` was locked by `lock_host` of this device and no copy or kernel uses it.
    unsafe fn unlock_host(&self, _host: u64) -> Result<()> {
        Ok(())
    }
    /// Whether kernels can use any host address (see `Device::unified_memory`), or why not.
    fn unified_memory(&self) -> std::result::Result<(), String> {
        Err("the GPU cannot access pageable host memory".into())
    }
}
