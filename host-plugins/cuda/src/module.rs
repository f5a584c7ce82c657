//! An image loaded on one GPU: symbol lookup, the device environment, the indirect-call table,
//! and kernel launches.
//!
//! At load the plugin writes `__omp_rtl_device_environment` and runs the image's C++ global
//! constructors (clang-22 lowers them for NVPTX to pointers `__init_array_object_<..>_<prio>`
//! and a kernel `nvptx$device$init` that calls those between `__init_array_start` and `_end`;
//! the destructors likewise run before the image is unloaded). `set_indirect_table` uploads the
//! sorted `{host, device}` table and points both the device environment and, when the image has
//! them, seed 000's `__omp_offloading_fptr_map_p` / `_size` at it. A kernel's
//! `<name>_kernel_environment` is read at its first launch and decides its geometry.

use crate::device::DeviceCore;
use crate::driver::error::DriverError;
use crate::driver::result::{self as r, LaunchDims};
use crate::driver::safe::{DeviceMemory, Module};
use crate::driver::sys::{function_attribute, CUdeviceptr, CUfunction};
use crate::geometry::{self, Geometry, KernelShape};
use crate::image::{self, ImageKind};
use crate::{diag, layout};
use core::ffi::c_void;
use rustomp_abi::{exec_mode, symbols, ConfigurationEnvironment, DeviceEnvironment, FptrMapEntry};
use rustomp_plugin::{
    ErrorKind, ImageInfo, LaunchConfig, LoadedImage, OffloadError, Result, Symbol,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// `CUDA_ERROR_NOT_FOUND`: a symbol the image does not have.
const NOT_FOUND: i32 = 500;
/// `Kernel::dynamic_shared_limit` before the function was asked: its limit without opting in
/// is 48 KiB less its own static shared memory (the runtime's team state, clang's globals).
const DYNAMIC_SHARED_LIMIT_UNKNOWN: u32 = 0;

/// The names clang-22 gives an image's global constructors (or destructors).
struct GlobalInitializers {
    kernel: &'static str,
    objects: &'static str,
    start: &'static str,
    end: &'static str,
}

const GLOBAL_CTORS: GlobalInitializers = GlobalInitializers {
    kernel: "nvptx$device$init",
    objects: "__init_array_object_",
    start: "__init_array_start",
    end: "__init_array_end",
};
const GLOBAL_DTORS: GlobalInitializers = GlobalInitializers {
    kernel: "nvptx$device$fini",
    objects: "__fini_array_object_",
    start: "__fini_array_start",
    end: "__fini_array_end",
};

/// A kernel of the image, looked up by the front through `symbol`.
struct Kernel {
    name: String,
    function: CUfunction,
    /// Read at the first launch.
    facts: OnceLock<std::result::Result<KernelFacts, OffloadError>>,
    /// Dynamic shared memory the function has been opted in to.
    dynamic_shared_limit: AtomicU32,
    /// Serializes querying and raising `dynamic_shared_limit`.
    opt_in: Mutex<()>,
}

// SAFETY: a function handle is only passed to the driver, which is thread-safe.
unsafe impl Send for Kernel {}
// SAFETY: as above; the mutable state is atomic or behind `OnceLock`.
unsafe impl Sync for Kernel {}

#[derive(Clone, Copy)]
struct KernelFacts {
    config: ConfigurationEnvironment,
    shape: KernelShape,
    reduction_bytes: usize,
}

/// The environment published to the image and the memory behind its indirect table.
struct Published {
    environment: DeviceEnvironment,
    table: Option<DeviceMemory>,
}

/// The `__llvm_omp_host_call` port of an image: pinned host memory, which the device reaches
/// at the same address while a kernel runs.
struct HostCallPort {
    core: Arc<DeviceCore>,
    port: *mut rustomp_abi::HostCallPort,
}

// SAFETY: the port is plain memory accessed with atomics by the protocol
// (`rustomp_plugin::host_call`); the pointer is owned here and freed once, in `drop`.
unsafe impl Send for HostCallPort {}
// SAFETY: as above.
unsafe impl Sync for HostCallPort {}

impl Drop for HostCallPort {
    fn drop(&mut self) {
        // SAFETY: allocated by `mem_alloc_host` in `CudaImage::open_host_call_port`; no kernel
        // of the image runs any more.
        if let Err(e) = unsafe { r::mem_free_host(self.core.api(), self.port as *mut c_void) } {
            diag::debug(format_args!("freeing the host-call port: {e}"));
        }
    }
}

pub struct CudaImage {
    core: Arc<DeviceCore>,
    module: Module,
    /// Present when the image's runtime can call host functions (`__llvm_omp_host_call`).
    host_call: Option<HostCallPort>,
    /// "sm_90 cubin" and the like, for messages.
    label: String,
    /// `__fini_array_object_*` globals, for the destructors run before unloading.
    destructors: Vec<String>,
    kernels: Mutex<HashMap<usize, Arc<Kernel>>>,
    published: Mutex<Published>,
}

impl CudaImage {
    pub fn load(core: Arc<DeviceCore>, image: &ImageInfo<'_>) -> Result<Self> {
        let device = core.label();
        let invalid = |why: String| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!("{device}: cannot load image: {why}"),
            )
        };
        let kind = image::classify(image.bytes).ok_or_else(|| {
            invalid(format!(
                "{} bytes that are neither a CUDA cubin, PTX nor a fatbinary",
                image.bytes.len()
            ))
        })?;
        if !image::is_complete(image.bytes, kind) {
            return Err(invalid(format!(
                "the {} bytes of the image are truncated",
                image.bytes.len()
            )));
        }
        let label = match kind {
            ImageKind::Cubin { sm } => format!("sm_{sm} cubin"),
            ImageKind::Ptx { sm: Some(sm) } => format!("sm_{sm} PTX"),
            ImageKind::Ptx { sm: None } => "PTX".to_string(),
            ImageKind::Fatbinary => "fatbinary".to_string(),
        };
        // The driver reads PTX up to its NUL.
        let bytes: Cow<'_, [u8]> = match kind {
            ImageKind::Ptx { .. } if image.bytes.last() != Some(&0) => {
                let mut owned = image.bytes.to_vec();
                owned.push(0);
                Cow::Owned(owned)
            }
            _ => Cow::Borrowed(image.bytes),
        };
        // SAFETY: `classify` and `is_complete` checked the kind and that the headers' extent
        // lies within the bytes; PTX is NUL-terminated above.
        let module = unsafe { Module::load(&core.context, &bytes) }.map_err(|e| {
            e.offload(
                format!("{device}: cannot load the {label} image"),
                ErrorKind::InvalidImage,
            )
        })?;
        diag::debug(format_args!(
            "{device}: loaded a {label} image of {} bytes",
            image.bytes.len()
        ));
        let environment = core.environment;
        let mut loaded = Self {
            core,
            module,
            host_call: None,
            label,
            destructors: image::symbols_with_prefix(image.bytes, kind, GLOBAL_DTORS.objects),
            kernels: Mutex::new(HashMap::new()),
            published: Mutex::new(Published {
                environment,
                table: None,
            }),
        };
        loaded.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&environment),
        )?;
        loaded.host_call = loaded.open_host_call_port()?;
        let constructors = image::symbols_with_prefix(image.bytes, kind, GLOBAL_CTORS.objects);
        loaded.run_global_initializers(&GLOBAL_CTORS, &constructors)?;
        Ok(loaded)
    }

    /// Allocates the `__llvm_omp_host_call` port in pinned host memory and publishes its address
    /// to the image, when the image's runtime has the pointer for it.
    fn open_host_call_port(&self) -> Result<Option<HostCallPort>> {
        if self.global(symbols::HOST_CALL_PORT)?.is_none() {
            return Ok(None);
        }
        let bytes = core::mem::size_of::<rustomp_abi::HostCallPort>();
        let port = r::mem_alloc_host(self.core.api(), bytes).map_err(|e| {
            e.offload(
                format!("{}: allocating the host-call port", self.device()),
                ErrorKind::OutOfMemory,
            )
        })? as *mut rustomp_abi::HostCallPort;
        // SAFETY: fresh pinned memory of the port's size; all zero is a free port.
        unsafe { core::ptr::write_bytes(port as *mut u8, 0, bytes) };
        // Owned before publishing: an error below frees it.
        let owned = HostCallPort {
            core: Arc::clone(&self.core),
            port,
        };
        self.write_global(symbols::HOST_CALL_PORT, &(port as u64).to_ne_bytes())?;
        Ok(Some(owned))
    }

    /// Calls the image's global constructors or destructors: their pointers, in priority order,
    /// go into a device array that the image's `nvptx$device$init` (`fini`) kernel walks.
    fn run_global_initializers(
        &self,
        names: &GlobalInitializers,
        objects: &[String],
    ) -> Result<()> {
        if objects.is_empty() {
            return Ok(());
        }
        let device = self.device();
        let function = match self.module.function(names.kernel) {
            Ok(f) => f,
            Err(e) if e.code == NOT_FOUND => {
                diag::debug(format_args!(
                    "{device}: {} objects but no {} kernel; not run",
                    objects.len(),
                    names.kernel
                ));
                return Ok(());
            }
            Err(e) => {
                return Err(e.offload(
                    format!("{device}: looking up {}", names.kernel),
                    ErrorKind::SymbolNotFound,
                ))
            }
        };
        let mut ordered: Vec<(u16, &String)> = objects
            .iter()
            .map(|n| (image::init_priority(n).unwrap_or(u16::MAX), n))
            .collect();
        ordered.sort_by_key(|(priority, _)| *priority);
        let mut pointers = Vec::with_capacity(ordered.len() * 8);
        for (_, name) in &ordered {
            let Some((address, size)) = self.global(name)? else {
                continue;
            };
            if size != 8 {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!("{device}: {name} has {size} bytes, expected a pointer"),
                ));
            }
            let mut pointer = [0u8; 8];
            self.core.download(address, &mut pointer).map_err(|e| {
                e.offload(
                    format!("{device}: reading {name}"),
                    ErrorKind::TransferFailed,
                )
            })?;
            pointers.extend_from_slice(&pointer);
        }
        let failed = |e: DriverError| {
            e.offload(
                format!(
                    "{device}: running {} of the {} image",
                    names.kernel, self.label
                ),
                ErrorKind::LaunchFailed,
            )
        };
        let array = DeviceMemory::new(&self.core.context, pointers.len()).map_err(failed)?;
        self.core
            .upload(array.address(), &pointers)
            .map_err(failed)?;
        self.write_global(names.start, &array.address().to_le_bytes())?;
        self.write_global(
            names.end,
            &(array.address() + pointers.len() as u64).to_le_bytes(),
        )?;
        let one = LaunchDims {
            blocks: [1, 1, 1],
            threads: [1, 1, 1],
            dynamic_shared_bytes: 0,
        };
        self.core
            .with_stream(|stream| {
                // SAFETY: the kernel takes no parameters and belongs to this device's current
                // context; the array it walks lives until after the synchronization.
                unsafe {
                    r::launch_kernel(self.core.api(), function, one, stream.handle(), &mut [])
                }
            })
            .map_err(failed)?;
        diag::debug(format_args!(
            "{device}: ran {} global {}",
            pointers.len() / 8,
            names.kernel
        ));
        Ok(())
    }

    fn device(&self) -> String {
        self.core.label()
    }

    /// A global's (address, size), `None` when the image does not define it.
    fn global(&self, name: &str) -> Result<Option<(CUdeviceptr, usize)>> {
        match self.module.global(name) {
            Ok(found) => Ok(Some(found)),
            Err(e) if e.code == NOT_FOUND => Ok(None),
            Err(e) => Err(e.offload(
                format!("{}: looking up global {name}", self.device()),
                ErrorKind::SymbolNotFound,
            )),
        }
    }

    /// Writes `bytes` to global `name` if the image has it (`Ok(false)` when it does not); its
    /// size must match.
    fn write_global(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        let Some((address, size)) = self.global(name)? else {
            diag::debug(format_args!(
                "{}: the {} image has no {name}; not written",
                self.device(),
                self.label
            ));
            return Ok(false);
        };
        if size != bytes.len() {
            return Err(OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "{}: global {name} of the {} image has {size} bytes, expected {}",
                    self.device(),
                    self.label,
                    bytes.len()
                ),
            ));
        }
        self.core.upload(address, bytes).map_err(|e| {
            e.offload(
                format!("{}: writing {name}", self.device()),
                ErrorKind::TransferFailed,
            )
        })?;
        Ok(true)
    }

    fn read_facts(&self, kernel: &Kernel) -> std::result::Result<KernelFacts, OffloadError> {
        let device = self.device();
        let environment_name = format!("{}{}", kernel.name, symbols::KERNEL_ENVIRONMENT_SUFFIX);
        let config = match self.global(&environment_name)? {
            Some((address, size)) if size >= layout::KERNEL_ENVIRONMENT_SIZE => {
                let mut bytes = [0u8; layout::KERNEL_ENVIRONMENT_SIZE];
                self.core.download(address, &mut bytes).map_err(|e| {
                    e.offload(
                        format!("{device}: reading {environment_name}"),
                        ErrorKind::TransferFailed,
                    )
                })?;
                layout::parse_kernel_environment(&bytes).unwrap_or_default()
            }
            Some((_, size)) => {
                return Err(OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{device}: {environment_name} has {size} bytes, expected {}",
                        layout::KERNEL_ENVIRONMENT_SIZE
                    ),
                ));
            }
            None => {
                // Not an OpenMP kernel (no environment): launched as given, like LLVM's bare mode.
                diag::debug(format_args!(
                    "{device}: kernel {} has no kernel environment; bare launch",
                    kernel.name
                ));
                ConfigurationEnvironment {
                    exec_mode: exec_mode::BARE,
                    ..Default::default()
                }
            }
        };
        // SAFETY: the function belongs to this image's module, alive while `self` is.
        let function_max_threads = unsafe {
            r::function_attribute(
                self.core.api(),
                kernel.function,
                function_attribute::MAX_THREADS_PER_BLOCK,
            )
        }
        .map_err(|e| {
            e.offload(
                format!("{device}: querying kernel {}", kernel.name),
                ErrorKind::LaunchFailed,
            )
        })?;
        Ok(KernelFacts {
            config,
            shape: KernelShape {
                exec_mode: config.exec_mode,
                min_threads: config.min_threads,
                max_threads: config.max_threads,
                function_max_threads: function_max_threads.max(1) as u32,
            },
            reduction_bytes: layout::reduction_buffer_bytes(&config),
        })
    }

    fn facts(&self, kernel: &Kernel) -> Result<KernelFacts> {
        kernel.facts.get_or_init(|| self.read_facts(kernel)).clone()
    }

    /// Opts the function in to `bytes` of dynamic shared memory when above its current limit.
    /// The limit only grows, under `opt_in`, so no launch sees it lowered under its feet.
    fn reserve_dynamic_shared(&self, kernel: &Kernel, bytes: u32) -> Result<()> {
        if bytes == 0 || bytes <= kernel.dynamic_shared_limit.load(Ordering::Acquire) {
            return Ok(());
        }
        let _serial = kernel.opt_in.lock().unwrap_or_else(|e| e.into_inner());
        let mut limit = kernel.dynamic_shared_limit.load(Ordering::Acquire);
        if limit == DYNAMIC_SHARED_LIMIT_UNKNOWN {
            // SAFETY: the function belongs to this image's module, alive while `self` is.
            let current = unsafe {
                r::function_attribute(
                    self.core.api(),
                    kernel.function,
                    function_attribute::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )
            };
            // Not known: opt in below, which is harmless when already allowed.
            limit = current.map_or(DYNAMIC_SHARED_LIMIT_UNKNOWN, |v| v.max(0) as u32);
        }
        if bytes > limit {
            self.opt_in_dynamic_shared(kernel, bytes)?;
            limit = bytes;
        }
        kernel.dynamic_shared_limit.store(limit, Ordering::Release);
        Ok(())
    }

    fn opt_in_dynamic_shared(&self, kernel: &Kernel, bytes: u32) -> Result<()> {
        // SAFETY: the function belongs to this image's module, alive while `self` is.
        unsafe {
            r::function_set_attribute(
                self.core.api(),
                kernel.function,
                function_attribute::MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes.min(i32::MAX as u32) as i32,
            )
        }
        .map_err(|e| {
            e.offload(
                format!(
                    "{}: kernel {} cannot get {bytes} bytes of dynamic shared memory",
                    self.device(),
                    kernel.name
                ),
                ErrorKind::LaunchFailed,
            )
        })
    }
}

impl LoadedImage for CudaImage {
    fn symbol(&self, name: &str) -> Option<Symbol> {
        if let Err(e) = self.core.context.make_current() {
            diag::debug(format_args!("{}: looking up {name}: {e}", self.device()));
            return None;
        }
        match self.global(name) {
            Ok(Some((address, size))) => {
                return Some(Symbol {
                    address: address as *mut c_void,
                    size,
                })
            }
            Ok(None) => {}
            Err(e) => {
                diag::debug(format_args!("{e}"));
                return None;
            }
        }
        let function = match self.module.function(name) {
            Ok(f) => f,
            Err(e) => {
                diag::debug(format_args!(
                    "{}: {name} is neither a global nor a kernel of the {} image: {e}",
                    self.device(),
                    self.label
                ));
                return None;
            }
        };
        let mut kernels = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        kernels.entry(function as usize).or_insert_with(|| {
            Arc::new(Kernel {
                name: name.to_string(),
                function,
                facts: OnceLock::new(),
                dynamic_shared_limit: AtomicU32::new(DYNAMIC_SHARED_LIMIT_UNKNOWN),
                opt_in: Mutex::new(()),
            })
        });
        Some(Symbol {
            address: function,
            size: 0,
        })
    }

    unsafe fn launch(
        &self,
        kernel: Symbol,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let device = self.device();
        let found = self
            .kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kernel.address as usize))
            .cloned();
        let kernel = found.ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{device}: {:p} is not a kernel of the {} image",
                    kernel.address, self.label
                ),
            )
        })?;
        self.core.context.make_current().map_err(|e| {
            e.offload(
                format!("{device}: launching {}", kernel.name),
                ErrorKind::DeviceUnavailable,
            )
        })?;
        let facts = self.facts(&kernel)?;
        let Geometry {
            blocks,
            threads,
            blocks_yz,
            threads_yz,
        } = geometry::compute(&self.core.grid, &facts.shape, config);
        let dynamic_shared_bytes = config
            .dyn_shared_bytes
            .max(self.core.environment.dynamic_mem_size);
        self.reserve_dynamic_shared(&kernel, dynamic_shared_bytes)?;

        // The launch environment: per launch with the teams-reduction buffer, else the shared
        // zeroed one. `_per_launch` keeps the allocations alive until the kernel finished.
        let environment_failed = |e: DriverError| {
            e.offload(
                format!(
                    "{device}: preparing the launch environment of {}",
                    kernel.name
                ),
                ErrorKind::OutOfMemory,
            )
        };
        let mut _per_launch: Vec<DeviceMemory> = Vec::new();
        let environment = if facts.reduction_bytes > 0 {
            let buffer = DeviceMemory::new(&self.core.context, facts.reduction_bytes)
                .map_err(environment_failed)?;
            let env = DeviceMemory::new(&self.core.context, layout::LAUNCH_ENVIRONMENT_SIZE)
                .map_err(environment_failed)?;
            self.core
                .upload(
                    env.address(),
                    &layout::launch_environment_bytes(buffer.address()),
                )
                .map_err(environment_failed)?;
            let address = env.address();
            _per_launch.push(env);
            _per_launch.push(buffer);
            address
        } else {
            self.core
                .idle_launch_environment()
                .map_err(environment_failed)?
        };

        let mut values: Vec<u64> = Vec::with_capacity(args.len() + 1);
        values.push(environment);
        values.extend(args.iter().map(|&a| a as u64));
        let mut params: Vec<*mut c_void> = values
            .iter_mut()
            .map(|v| v as *mut u64 as *mut c_void)
            .collect();
        if diag::info_enabled(diag::PLUGIN_KERNEL) {
            diag::info(
                self.core.global,
                format_args!(
                    "Launching kernel {} with [{blocks},{},{}] blocks and [{threads},{},{}] threads in {} mode",
                    kernel.name,
                    blocks_yz[0],
                    blocks_yz[1],
                    threads_yz[0],
                    threads_yz[1],
                    geometry::mode_name(facts.config.exec_mode)
                ),
            );
        }
        let dims = LaunchDims {
            blocks: [blocks, blocks_yz[0], blocks_yz[1]],
            threads: [threads, threads_yz[0], threads_yz[1]],
            dynamic_shared_bytes,
        };
        self.core
            .with_stream(|stream| {
                // SAFETY: the function and stream belong to this device's current context;
                // `params` holds one pointer per parameter (the launch environment, then one
                // 64-bit value per argument as clang emits them, guaranteed by the caller), each
                // alive across the call.
                unsafe { r::launch_kernel(self.core.api(), kernel.function, dims, stream.handle(), &mut params) }?;
                if let Some(host_call) = &self.host_call {
                    // The kernel may call host functions: serve them until it finishes.
                    loop {
                        // SAFETY: the image's live port, shared with its device runtime.
                        let served = unsafe { rustomp_plugin::host_call::serve(host_call.port) };
                        // SAFETY: the pooled stream of this context.
                        if unsafe { r::stream_query(self.core.api(), stream.handle()) }? {
                            break;
                        }
                        if !served {
                            std::thread::yield_now();
                        }
                    }
                }
                Ok(())
            })
            .map_err(|e| {
                let what = if e.call == "cuLaunchKernel" { "cannot launch" } else { "failure while running" };
                e.offload(
                    format!(
                        "{device}: {what} kernel {} ({blocks} blocks of {threads} threads, {} mode, {dynamic_shared_bytes} bytes of dynamic shared memory)",
                        kernel.name,
                        geometry::mode_name(facts.config.exec_mode)
                    ),
                    ErrorKind::LaunchFailed,
                )
            })
    }

    fn set_indirect_table(&self, table: &[FptrMapEntry]) -> Result<()> {
        let sorted = layout::sorted_table(table);
        if sorted.is_empty() {
            return Ok(());
        }
        let device = self.device();
        let bytes = layout::table_bytes(&sorted);
        let memory = DeviceMemory::new(&self.core.context, bytes.len()).map_err(|e| {
            e.offload(
                format!("{device}: allocating the indirect-call table"),
                ErrorKind::OutOfMemory,
            )
        })?;
        self.core.upload(memory.address(), &bytes).map_err(|e| {
            e.offload(
                format!("{device}: uploading the indirect-call table"),
                ErrorKind::TransferFailed,
            )
        })?;
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        published.environment.indirect_call_table = memory.address() as usize;
        published.environment.indirect_call_table_size = sorted.len() as u64;
        self.write_global(
            symbols::DEVICE_ENVIRONMENT,
            &layout::device_environment_bytes(&published.environment),
        )?;
        self.write_global(symbols::FPTR_MAP_POINTER, &memory.address().to_le_bytes())?;
        self.write_global(symbols::FPTR_MAP_SIZE, &(sorted.len() as u64).to_le_bytes())?;
        diag::debug(format_args!(
            "{device}: indirect-call table of {} entries at {:#x}",
            sorted.len(),
            memory.address()
        ));
        // The previous table (if any) is freed only now that nothing points at it.
        published.table = Some(memory);
        Ok(())
    }
}

impl Drop for CudaImage {
    fn drop(&mut self) {
        // Destructors before the module goes; at process exit the driver may already be shut
        // down, which leaves nothing to do but say so.
        let destructors = std::mem::take(&mut self.destructors);
        if let Err(e) = self.run_global_initializers(&GLOBAL_DTORS, &destructors) {
            diag::debug(format_args!("{e}"));
        }
    }
}
