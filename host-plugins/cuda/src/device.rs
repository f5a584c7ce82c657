//! One GPU: its primary context, a pool of streams, memory and copies.
//!
//! Every operation makes the context current on the calling thread (the front calls from any
//! host thread, e.g. libomp's hidden helpers for `nowait`), takes a stream from the pool, queues
//! its work and waits for it before returning: the `Device` contract is synchronous. Streams
//! are non-blocking and per operation, so host threads working on one device overlap.

use crate::driver::error::DriverError;
use crate::driver::result as r;
use crate::driver::safe::{Context, DeviceMemory, PrimaryContext, Stream};
use crate::driver::sys::{device_attribute as attr, limit, Api, CUdevice, CUdeviceptr};
use crate::geometry::DeviceGrid;
use crate::image::ComputeCapability;
use crate::module::CudaImage;
use crate::{diag, layout};
use core::ffi::c_void;
use rustomp_abi::DeviceEnvironment;
use rustomp_plugin::{AllocKind, Device, ErrorKind, ImageInfo, LoadedImage, Result};
use std::sync::{Arc, Mutex, MutexGuard};

/// Facts about one GPU, read when the plugin initializes (before any context exists).
#[derive(Debug, Clone)]
pub struct DeviceProps {
    pub handle: CUdevice,
    pub name: String,
    pub capability: ComputeCapability,
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
    pub warp_size: u32,
    pub max_block_dim_x: u32,
    pub max_grid_dim_x: u32,
    pub total_memory: usize,
}

impl DeviceProps {
    pub fn query(api: &Api, ordinal: usize) -> std::result::Result<Self, DriverError> {
        let handle = r::device_get(api, ordinal)?;
        let get = |a| r::device_attribute(api, handle, a).map(|v| v.max(0) as u32);
        Ok(Self {
            handle,
            name: r::device_name(api, handle)?,
            capability: ComputeCapability {
                major: get(attr::COMPUTE_CAPABILITY_MAJOR)?,
                minor: get(attr::COMPUTE_CAPABILITY_MINOR)?,
            },
            multiprocessors: get(attr::MULTIPROCESSOR_COUNT)?,
            max_threads_per_multiprocessor: get(attr::MAX_THREADS_PER_MULTIPROCESSOR)?,
            warp_size: get(attr::WARP_SIZE)?,
            max_block_dim_x: get(attr::MAX_BLOCK_DIM_X)?,
            max_grid_dim_x: get(attr::MAX_GRID_DIM_X)?,
            total_memory: r::device_total_memory(api, handle)?,
        })
    }

    /// Warps resident on the whole GPU at once (`HardwareParallelism` of the device environment).
    pub fn hardware_parallelism(&self) -> u64 {
        u64::from(self.multiprocessors) * u64::from(self.max_threads_per_multiprocessor / self.warp_size.max(1))
    }
}

/// The device environment LLVM's plugin writes for a device (before any indirect table).
pub fn device_environment(props: &DeviceProps, global: usize, total: usize) -> DeviceEnvironment {
    DeviceEnvironment {
        debug_kind: diag::env_u64("LIBOMPTARGET_DEVICE_RTL_DEBUG").unwrap_or(0) as u32,
        num_devices: total as u32,
        device_num: global as u32,
        dynamic_mem_size: diag::env_u64("LIBOMPTARGET_SHARED_MEMORY_SIZE").unwrap_or(0) as u32,
        // Device time is read from the nanosecond %globaltimer, as LLVM's NVPTX plugin states.
        clock_frequency: 1_000_000_000,
        indirect_call_table: 0,
        indirect_call_table_size: 0,
        hardware_parallelism: props.hardware_parallelism(),
    }
}

/// What a device and the images loaded on it share.
pub struct DeviceCore {
    pub context: Context,
    pub props: DeviceProps,
    /// The OpenMP device number and the plugin-local index.
    pub global: usize,
    pub index: usize,
    pub grid: DeviceGrid,
    pub environment: DeviceEnvironment,
    streams: Mutex<Vec<Stream>>,
    /// A zeroed launch environment shared by the launches of kernels without a teams reduction
    /// (device code only writes a launch environment's counters during a teams reduction).
    idle_launch_environment: Mutex<Option<DeviceMemory>>,
}

impl DeviceCore {
    pub fn open(api: &'static Api, props: DeviceProps, index: usize, global: usize, total: usize) -> Result<Arc<Self>> {
        let fail = |what: &str, e: DriverError| e.offload(format!("device {global} (cuda plugin): {what}"), ErrorKind::DeviceUnavailable);
        let context = PrimaryContext::retain(api, props.handle).map_err(|e| fail("cannot retain the primary context", e))?;
        context.make_current().map_err(|e| fail("cannot make the context current", e))?;
        for (variable, which) in [("LIBOMPTARGET_STACK_SIZE", limit::STACK_SIZE), ("LIBOMPTARGET_HEAP_SIZE", limit::MALLOC_HEAP_SIZE)] {
            if let Some(bytes) = diag::env_u64(variable) {
                r::context_set_limit(api, which, bytes as usize)
                    .map_err(|e| fail(&format!("cannot apply {variable}={bytes}"), e))?;
            }
        }
        let env_u32 = |name| diag::env_u64(name).map_or(0, |v| v.min(u64::from(u32::MAX)) as u32);
        let grid = DeviceGrid::nvptx(
            props.max_block_dim_x,
            props.max_grid_dim_x,
            props.warp_size,
            env_u32("OMP_NUM_TEAMS"),
            env_u32("OMP_TEAMS_THREAD_LIMIT"),
        );
        let environment = device_environment(&props, global, total);
        diag::debug(format_args!(
            "device {global}: CUDA device {index} ({}, {}) opened, grid {grid:?}",
            props.name, props.capability
        ));
        Ok(Arc::new(Self {
            context,
            props,
            global,
            index,
            grid,
            environment,
            streams: Mutex::new(Vec::new()),
            idle_launch_environment: Mutex::new(None),
        }))
    }

    pub fn api(&self) -> &'static Api {
        self.context.api()
    }

    fn stream_pool(&self) -> MutexGuard<'_, Vec<Stream>> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` on a stream of the pool and waits for it (also when `work` failed halfway,
    /// so no queued copy still refers to the caller's memory when this returns).
    pub fn with_stream<T>(
        &self,
        work: impl FnOnce(&Stream) -> std::result::Result<T, DriverError>,
    ) -> std::result::Result<T, DriverError> {
        self.context.make_current()?;
        let pooled = self.stream_pool().pop();
        let stream = match pooled {
            Some(s) => s,
            None => Stream::new(&self.context)?,
        };
        let result = work(&stream);
        let synchronized = stream.synchronize();
        self.stream_pool().push(stream);
        let value = result?;
        synchronized?;
        Ok(value)
    }

    /// Copies `bytes` to device address `device`.
    pub fn upload(&self, device: CUdeviceptr, bytes: &[u8]) -> std::result::Result<(), DriverError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.with_stream(|s| {
            // SAFETY: `bytes` lives until `with_stream` synchronized; the callers pass device
            // ranges they allocated or looked up with at least this size.
            unsafe { r::memcpy_htod_async(self.api(), device, bytes.as_ptr() as *const c_void, bytes.len(), s.handle()) }
        })
    }

    /// Copies from device address `device` into `out`.
    pub fn download(&self, device: CUdeviceptr, out: &mut [u8]) -> std::result::Result<(), DriverError> {
        if out.is_empty() {
            return Ok(());
        }
        let len = out.len();
        self.with_stream(|s| {
            // SAFETY: `out` lives until `with_stream` synchronized; see `upload`.
            unsafe { r::memcpy_dtoh_async(self.api(), out.as_mut_ptr() as *mut c_void, device, len, s.handle()) }
        })
    }

    /// The shared zeroed launch environment, allocated on first use.
    pub fn idle_launch_environment(&self) -> std::result::Result<CUdeviceptr, DriverError> {
        let mut slot = self.idle_launch_environment.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(memory) = slot.as_ref() {
            return Ok(memory.address());
        }
        let memory = DeviceMemory::new(&self.context, layout::LAUNCH_ENVIRONMENT_SIZE)?;
        self.upload(memory.address(), &layout::launch_environment_bytes(0))?;
        let address = memory.address();
        *slot = Some(memory);
        Ok(address)
    }

    /// "device N (cuda plugin)" for messages.
    pub fn label(&self) -> String {
        format!("device {} (cuda plugin)", self.global)
    }
}

/// The `Device` the front drives.
pub struct CudaDevice {
    core: Arc<DeviceCore>,
}

impl CudaDevice {
    pub fn new(core: Arc<DeviceCore>) -> Self {
        Self { core }
    }
}

fn kind_name(kind: AllocKind) -> &'static str {
    match kind {
        AllocKind::Device => "device",
        AllocKind::Host => "pinned host",
        AllocKind::Shared => "managed",
    }
}

impl Device for CudaDevice {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        let core = &self.core;
        let fail = |e: DriverError| {
            e.offload(format!("{}: cannot allocate {bytes} bytes of {} memory", core.label(), kind_name(kind)), ErrorKind::OutOfMemory)
        };
        core.context.make_current().map_err(fail)?;
        let api = core.api();
        // Zero bytes still get a distinct address, as on the host plugin.
        let bytes = bytes.max(1);
        let ptr = match kind {
            AllocKind::Device => r::mem_alloc(api, bytes).map(|p| p as *mut c_void),
            AllocKind::Host => r::mem_alloc_host(api, bytes),
            AllocKind::Shared => r::mem_alloc_managed(api, bytes).map(|p| p as *mut c_void),
        }
        .map_err(fail)?;
        Ok(ptr)
    }

    fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let core = &self.core;
        let fail = |e: DriverError| {
            e.offload(format!("{}: cannot free {} memory at {ptr:p}", core.label(), kind_name(kind)), ErrorKind::InvalidArgument)
        };
        core.context.make_current().map_err(fail)?;
        // SAFETY: the front frees only what `alloc` of this device returned, with its kind, once.
        unsafe {
            match kind {
                AllocKind::Device | AllocKind::Shared => r::mem_free(core.api(), ptr as CUdeviceptr),
                AllocKind::Host => r::mem_free_host(core.api(), ptr),
            }
        }
        .map_err(fail)
    }

    unsafe fn copy_to_device(&self, device: *mut c_void, host: *const c_void, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let core = &self.core;
        core.with_stream(|s| {
            // SAFETY: the trait's contract: `host` readable and `device` holding `bytes`; the
            // copy has finished when `with_stream` returns.
            unsafe { r::memcpy_htod_async(core.api(), device as CUdeviceptr, host, bytes, s.handle()) }
        })
        .map_err(|e| e.offload(format!("{}: copy of {bytes} bytes from host {host:p} to {device:p}", core.label()), ErrorKind::TransferFailed))
    }

    unsafe fn copy_from_device(&self, host: *mut c_void, device: *const c_void, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let core = &self.core;
        core.with_stream(|s| {
            // SAFETY: the trait's contract: `host` writable and `device` holding `bytes`; the
            // copy has finished when `with_stream` returns.
            unsafe { r::memcpy_dtoh_async(core.api(), host, device as CUdeviceptr, bytes, s.handle()) }
        })
        .map_err(|e| e.offload(format!("{}: copy of {bytes} bytes from {device:p} to host {host:p}", core.label()), ErrorKind::TransferFailed))
    }

    unsafe fn copy_within_device(&self, dst: *mut c_void, src: *const c_void, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let core = &self.core;
        core.with_stream(|s| {
            // SAFETY: the trait's contract: both ranges are this device's memory of `bytes`.
            unsafe { r::memcpy_dtod_async(core.api(), dst as CUdeviceptr, src as CUdeviceptr, bytes, s.handle()) }
        })
        .map_err(|e| e.offload(format!("{}: copy of {bytes} bytes from {src:p} to {dst:p}", core.label()), ErrorKind::TransferFailed))
    }

    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        CudaImage::load(self.core.clone(), image).map(|i| Box::new(i) as Box<dyn LoadedImage>)
    }

    fn synchronize(&self) -> Result<()> {
        // Every operation waits for its own stream before returning: nothing is pending.
        Ok(())
    }

    fn describe(&self) -> String {
        let p = &self.core.props;
        let version = r::driver_version(self.core.api()).map_or_else(|e| e.to_string(), |v| format!("{}.{}", v / 1000, (v % 1000) / 10));
        format!(
            "device {}: cuda plugin device {} ({}, {}, {} multiprocessors, {} MiB, CUDA driver {version})",
            self.core.global,
            self.core.index,
            p.name,
            p.capability,
            p.multiprocessors,
            p.total_memory >> 20
        )
    }
}
