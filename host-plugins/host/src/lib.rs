//! The CPU plugin: runs `-fopenmp-targets=x86_64-pc-linux-gnu` images on the host.
//!
//! An image is an x86_64 ELF shared object; it is loaded from memory (`memfd_create` +
//! `dlopen`), kernels and globals are found with `dlsym`, and a kernel is called with the launch
//! environment followed by one 64-bit value per argument, the layout clang-22 emits for host
//! offload. "Device" memory comes from the host heap but is distinct from the user's copy, so
//! mapping mistakes show up exactly as on a GPU. Each loaded copy of an image answers
//! `omp_get_device_num` with its device and translates function pointers with its own table
//! (`indirect`: calls through host function pointers reach the copy's version of the function).
//!
//! Tests of the runtime's error paths: `RUSTOMP_HOST_FAULTS=OP:N,...` makes the `N`th
//! allocation (`alloc`), host-to-device copy (`to`), device-to-host copy (`from`), copy within a
//! device (`within`) or kernel launch (`launch`) of the process fail, and while it is set (or
//! `RUSTOMP_HOST_LEAK_CHECK=1`) each opened device's outstanding allocations are printed at exit
//! (`rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding`) and at abort. Details
//! in [`faults`].

pub mod call;
mod device_number;
pub mod faults;
mod got;
mod indirect;
mod kernel_stack;
pub mod memory_object;
mod stderr_line;
mod teams;

use memory_object::MemoryObject;

use faults::Op;

use core::ffi::c_void;
use core::ptr::NonNull;
use rustomp_abi::{ConfigurationEnvironment, KernelLaunchEnvironment};
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{
    AllocKind, Device, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig, LoadedImage,
    OffloadError, Plugin, Result,
};

/// The triple of images this plugin runs.
pub const TRIPLE: &str = "x86_64-pc-linux-gnu";
/// Devices reported, as LLVM's host plugin does; `RUSTOMP_HOST_DEVICES` overrides.
const DEFAULT_DEVICES: usize = 4;

pub struct HostPlugin {
    devices: usize,
}

impl HostPlugin {
    pub fn new() -> Self {
        faults::init();
        let devices = std::env::var("RUSTOMP_HOST_DEVICES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_DEVICES);
        // A malformed RUSTOMP_HOST_FAULTS leaves the plugin without devices (and says why).
        let devices = if faults::configuration_error().is_some() {
            0
        } else {
            devices
        };
        Self { devices }
    }
}

impl Default for HostPlugin {
    fn default() -> Self {
        Self::new()
    }
}

impl Plugin for HostPlugin {
    fn name(&self) -> &str {
        "host"
    }
    fn number_of_devices(&self) -> usize {
        self.devices
    }
    fn unavailable_reason(&self) -> Option<String> {
        faults::configuration_error().map(str::to_string)
    }
    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool {
        let triple_ok = image.triple.starts_with("x86_64") && image.triple.contains("linux");
        triple_ok
            && rustomp_plugin::image::classify(image.bytes)
                == Some(rustomp_plugin::image::ImageKind::HostElf)
    }
    fn open_device(&self, index: usize, global: usize, _total: usize) -> Result<Box<dyn Device>> {
        faults::opened(global);
        Ok(Box::new(HostDevice { index, global }))
    }
}

pub struct HostDevice {
    index: usize,
    global: usize,
}

impl Device for HostDevice {
    fn alloc(&self, bytes: usize, _kind: AllocKind) -> Result<*mut c_void> {
        faults::inject(Op::Alloc, self.global, || format!("{bytes} bytes"))?;
        // SAFETY: malloc accepts any size and returns null on failure.
        let ptr = unsafe { libc::malloc(bytes.max(1)) };
        if ptr.is_null() {
            return Err(OffloadError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "device {} (host plugin): cannot allocate {bytes} bytes",
                    self.global
                ),
            ));
        }
        faults::allocated(self.global, ptr as usize, bytes);
        Ok(ptr)
    }
    unsafe fn free(&self, ptr: *mut c_void, _kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // Under the allocation accounting a double free is refused here, before free(3).
        faults::freeing(self.global, ptr as usize)?;
        // SAFETY: the caller frees only pointers this device allocated (malloc), once.
        unsafe { libc::free(ptr) };
        Ok(())
    }
    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        faults::inject(Op::To, self.global, || {
            format!("{bytes} bytes to {device:p}")
        })?;
        // SAFETY: the caller guarantees both ranges; they may overlap only if identical.
        unsafe { std::ptr::copy(host as *const u8, device as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        faults::inject(Op::From, self.global, || {
            format!("{bytes} bytes from {device:p}")
        })?;
        // SAFETY: as above.
        unsafe { std::ptr::copy(device as *const u8, host as *mut u8, bytes) };
        Ok(())
    }
    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        faults::inject(Op::Within, self.global, || {
            format!("{bytes} bytes from {src:p} to {dst:p}")
        })?;
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }
    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        HostImage::load(image, self.global).map(|i| Box::new(i) as Box<dyn LoadedImage>)
    }
    fn shares_host_memory(&self) -> bool {
        true
    }
    fn describe(&self) -> String {
        format!(
            "device {}: host plugin device {} ({TRIPLE}, {} CPUs)",
            self.global,
            self.index,
            num_cpus()
        )
    }
    fn properties(&self) -> Vec<(&'static str, String)> {
        let memory =
            host_memory().map_or_else(|| "unknown".to_string(), |b| format!("{} MiB", b >> 20));
        vec![
            ("Kind", "CPU".to_string()),
            ("Triple", TRIPLE.to_string()),
            ("CPUs", num_cpus().to_string()),
            ("Memory", format!("{memory} (host memory)")),
        ]
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Physical memory of the host in bytes, when sysconf knows it.
fn host_memory() -> Option<u64> {
    // SAFETY: sysconf takes a constant and returns a number (-1 when unknown).
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let pages = u64::try_from(pages).ok()?;
    let page = u64::try_from(page).ok()?;
    pages.checked_mul(page)
}

/// A loaded x86_64 image: the shared object loaded from memory, and what this copy answers for
/// its device.
pub struct HostImage {
    object: MemoryObject,
    device: usize,
    /// This copy's `__kmpc_target_translate_fptr`, when its code calls through function
    /// pointers (`indirect`).
    indirect: Option<indirect::Binding>,
    /// Kernels with a kernel environment (flang-22's GPU-style code, which forms no teams of
    /// its own, see `teams`), by address: the `thread_limit` the environment carries (its
    /// `MaxThreads`, where flang puts a constant clause; 0 none).
    gpu_style_kernels: std::sync::Mutex<std::collections::HashMap<usize, u32>>,
    /// Whether `gpu_style_kernels` holds any: clang's images have none, and their launches skip
    /// the lock.
    any_gpu_style: std::sync::atomic::AtomicBool,
    /// The image's own copy of flang's runtime, if it has one (see `rustomp_plugin::fortran`).
    fortran: Option<rustomp_plugin::fortran::FortranRuntime>,
}

impl HostImage {
    fn load(image: &ImageInfo<'_>, device: usize) -> Result<Self> {
        let bytes = image.bytes;
        let fail = |why: String| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "device {device} (host plugin): cannot load the {} image ({} bytes at {:p}): {why}",
                    image.triple,
                    bytes.len(),
                    bytes.as_ptr()
                ),
            )
        };
        let object = MemoryObject::open(bytes).map_err(fail)?;
        let handle = object.handle();
        let mut loaded = Self {
            object,
            device,
            indirect: None,
            gpu_style_kernels: Default::default(),
            any_gpu_style: Default::default(),
            fortran: None,
        };
        loaded.fortran = rustomp_plugin::fortran::FortranRuntime::find(|name| {
            loaded
                .object
                .lookup(&name.to_string_lossy())
                .map(|(address, _)| address.as_ptr())
        });
        if let Some(answer) = device_number::answer_for(device) {
            // SAFETY: the image was just loaded and none of its code runs yet; the answer has
            // omp_get_device_num's signature.
            unsafe { got::rebind(handle, c"omp_get_device_num", answer) }.map_err(|why| {
                fail(format!(
                    "binding omp_get_device_num to device {device}: {why}"
                ))
            })?;
        }
        // SAFETY: as above.
        loaded.indirect = unsafe { indirect::Binding::bind(handle) }.map_err(|why| {
            fail(format!(
                "binding {} for device {device}: {why}",
                indirect::SYMBOL.to_string_lossy()
            ))
        })?;
        Ok(loaded)
    }
}

impl LoadedImage for HostImage {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        let found = self.object.lookup(name).map(|(address, _)| address);
        if let Some(address) = found {
            let environment = format!("{name}{}", rustomp_abi::symbols::KERNEL_ENVIRONMENT_SUFFIX);
            if let Some((at, size)) = self.object.lookup(&environment) {
                let max_threads = (size >= size_of::<ConfigurationEnvironment>()).then(|| {
                    // SAFETY: the image's kernel environment, a ConfigurationEnvironment first
                    // (checked size), read-only data of the loaded object.
                    unsafe {
                        at.cast::<ConfigurationEnvironment>()
                            .as_ptr()
                            .read_unaligned()
                    }
                    .max_threads
                });
                self.any_gpu_style
                    .store(true, std::sync::atomic::Ordering::Release);
                self.gpu_style_kernels
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        address.as_ptr() as usize,
                        max_threads.map_or(0, |m| u32::try_from(m).unwrap_or(0)),
                    );
            }
        }
        Ok(found)
    }

    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        Ok(self
            .object
            .lookup(name)
            .map(|(address, size)| DeviceGlobal {
                address: address.as_ptr(),
                size,
            }))
    }

    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        // Host images ignore the launch environment; give them a valid, empty one.
        let mut launch_env = KernelLaunchEnvironment {
            reduction_cnt: 0,
            reduction_iter_cnt: 0,
            reduction_buffer: std::ptr::null_mut(),
        };
        // Most regions have few arguments: keep them on the stack (at least as many as the
        // argument registers, which the call reads whatever the count).
        const INLINE: usize = 16;
        let count = args.len() + 1;
        let mut inline = [0u64; INLINE];
        let mut spilled = Vec::new();
        let values: &mut [u64] = if count <= INLINE {
            &mut inline
        } else {
            spilled.resize(count, 0);
            &mut spilled
        };
        values[0] = &mut launch_env as *mut KernelLaunchEnvironment as u64;
        for (slot, &arg) in values[1..].iter_mut().zip(args) {
            *slot = arg as u64;
        }
        faults::inject(Op::Launch, self.device, || {
            format!("kernel at {:p}", kernel.raw())
        })?;
        // A GPU-style kernel's thread limit: the launch's, else its kernel environment's.
        let any_gpu_style = self
            .any_gpu_style
            .load(std::sync::atomic::Ordering::Acquire);
        let team_thread_limit = any_gpu_style
            .then(|| {
                self.gpu_style_kernels
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&(kernel.raw() as usize))
                    .copied()
            })
            .flatten()
            .map(|constant| {
                if config.thread_limit > 0 {
                    config.thread_limit
                } else {
                    constant
                }
            })
            .filter(|&limit| limit > 0);
        let mut run = || {
            // SAFETY: the caller guarantees the kernel takes these values; `call` passes them
            // per the SysV calling convention; `values` holds at least INLINE >= 6 of them.
            unsafe { call::call_with_u64_args(kernel.raw(), values, count) }
        };
        let program_fortran = self
            .fortran
            .and_then(|_| rustomp_plugin::fortran::FortranRuntime::program());
        if let Some(program) = program_fortran {
            program.flush_output();
        }
        kernel_stack::run_on_kernel_stack(self.device, kernel.raw(), || {
            if let Some(limit) = team_thread_limit {
                teams::in_one_team(limit, &mut run);
            } else {
                run();
            }
        });
        if let Some(image) = self.fortran {
            image.flush_output();
        }
        Ok(())
    }

    fn set_indirect_table(&self, table: &IndirectTable) -> Result<()> {
        // Code compiled without the pass calls host function pointers as they are (the host's
        // versions); code compiled with it asks this copy's binding.
        if let Some(binding) = &self.indirect {
            binding.publish(table);
        }
        Ok(())
    }
}
