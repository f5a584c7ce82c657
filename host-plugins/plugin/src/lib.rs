//! The contract between the host runtime and its device backends, and the device-independent
//! layer above it.
//!
//! The front drives every kind of device through [`Plugin`], [`Device`] and [`LoadedImage`].
//! GPU backends (`cuda`, `amdgpu`) do not implement those themselves: they implement the small
//! driver-level traits of [`generic`] (allocate, copy, load an image, look up a symbol, launch),
//! and the generic layer owns the rest — image classification ([`image`]), environment layouts
//! ([`layout`]), launch geometry ([`geometry`]), constructors, the indirect-call table, the
//! host-call port, settings and messages ([`diag`]). The CPU plugin (`host`) implements the
//! front's traits directly: it has no device environment to publish and no geometry to
//! compute. The mapping table with its reference counts is the front's (`omptarget::mapping`).
//!
//! Errors: every fallible call returns [`OffloadError`], which keeps a stable [`ErrorKind`] and a
//! message naming the device, pointer or image involved. Only the front's `extern "C"` shims
//! turn it into an integer.

pub mod diag;
pub mod fortran;
pub mod generic;
pub mod geometry;
pub mod host_call;
pub mod image;
pub mod layout;
pub mod op_times;

use core::ffi::c_void;
use core::ptr::NonNull;
use std::fmt;

/// Stable error classes (the front maps them to return codes and messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The device ran out of memory or refused an allocation.
    OutOfMemory,
    /// An image could not be read or loaded.
    InvalidImage,
    /// A kernel or global is not in the loaded image.
    SymbolNotFound,
    /// A launch failed or the kernel faulted.
    LaunchFailed,
    /// A copy between host and device failed.
    TransferFailed,
    /// A map clause asked for something the mapping table cannot do.
    MappingError,
    /// The driver or device is unavailable.
    DeviceUnavailable,
    /// Argument values that cannot be right (unknown device, null where required).
    InvalidArgument,
    /// The feature exists in OpenMP but this runtime or device does not provide it.
    Unsupported,
}

#[derive(Debug, Clone)]
pub struct OffloadError {
    pub kind: ErrorKind,
    pub message: String,
}

impl OffloadError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The same error with `what` in front of its message ("device 0 (cuda plugin): ...").
    pub fn context(self, what: impl fmt::Display) -> Self {
        Self {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }

    /// The same error with another kind.
    pub fn with_kind(self, kind: ErrorKind) -> Self {
        Self {
            kind,
            message: self.message,
        }
    }
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OffloadError {}

/// The dynamic loader's message for the last failed `dlopen`/`dlsym` on this thread (backends
/// and external plugins are all loaded with `dlopen`).
pub fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated thread-local string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown dynamic loader error".into();
    }
    // SAFETY: non-null and NUL-terminated, see above.
    unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}

pub type Result<T> = std::result::Result<T, OffloadError>;

/// Where an allocation should live (`omp_target_alloc` flavours and `llvm_omp_target_alloc_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    Device,
    Host,
    Shared,
}

/// What an image container says about its contents.
#[derive(Debug, Clone)]
pub struct ImageInfo<'a> {
    /// The raw image (ELF shared object, cubin, hsaco) without the container.
    pub bytes: &'a [u8],
    pub triple: String,
    pub arch: String,
}

/// A global of a loaded image: its device address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceGlobal {
    pub address: *mut c_void,
    pub size: usize,
}

// SAFETY: an address in a loaded image, valid on any thread while the image is loaded; it is
// never dereferenced through this type.
unsafe impl Send for DeviceGlobal {}
// SAFETY: as above.
unsafe impl Sync for DeviceGlobal {}

/// A kernel of a loaded image. Only [`LoadedImage::kernel`] makes one, so a global can never be
/// launched and a launch always names something a kernel lookup found. What the value means
/// (an entry address, a handle of the generic layer) is up to the image that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelHandle(NonNull<c_void>);

impl KernelHandle {
    /// The value the image gave in [`LoadedImage::find_kernel`].
    pub fn raw(self) -> *mut c_void {
        self.0.as_ptr()
    }
}

// SAFETY: an opaque value of the image that made it, meaningful on any thread while the image
// is loaded; never dereferenced through this type.
unsafe impl Send for KernelHandle {}
// SAFETY: as above.
unsafe impl Sync for KernelHandle {}

/// Launch geometry asked for by the construct (0 = let the backend choose).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchConfig {
    pub num_teams: u32,
    pub thread_limit: u32,
    /// The y and z values of `num_teams(x, y, z)` / `thread_limit(x, y, z)` (0: not given);
    /// only `ompx_bare` kernels launch in more than one dimension.
    pub teams_yz: [u32; 2],
    pub threads_yz: [u32; 2],
    pub dyn_shared_bytes: u32,
    pub tripcount: u64,
}

/// A device backend: the kinds of device one driver provides.
pub trait Plugin: Send + Sync {
    /// Short name (`host`, `cuda`), used in messages.
    fn name(&self) -> &str;
    /// Devices this plugin drives; 0 with a reason in `unavailable_reason` when none.
    fn number_of_devices(&self) -> usize;
    /// Why there are no devices (missing driver, no GPU), for `LIBOMPTARGET_INFO`.
    fn unavailable_reason(&self) -> Option<String> {
        None
    }
    /// Whether this plugin can run `image` at all (its triple and format; decided without
    /// initializing the plugin's driver).
    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool;
    /// Whether device `index` (0-based within this plugin) can run `image`, which
    /// `is_compatible` accepted; `Err` says why not (e.g. the GPU's architecture).
    fn device_compatibility(
        &self,
        _index: usize,
        image: &ImageInfo<'_>,
    ) -> std::result::Result<(), String> {
        if self.is_compatible(image) {
            Ok(())
        } else {
            Err(format!(
                "the {} plugin cannot run a {} image",
                self.name(),
                image.triple
            ))
        }
    }
    /// Where device `index` is, when that is not this machine (`rank 1, device 0` for a
    /// remote device), for listings.
    fn device_location(&self, _index: usize) -> Option<String> {
        None
    }
    /// Whether the front numbers this plugin's devices after every other plugin's, in the
    /// plugin's own order over all of a program's images (the remote plugin: the application's
    /// local devices first, then each rank's), instead of image by image.
    fn numbered_last(&self) -> bool {
        false
    }
    /// Opens device `index` (0-based within this plugin).
    fn open_device(
        &self,
        index: usize,
        global_device_number: usize,
        total_devices: usize,
    ) -> Result<Box<dyn Device>>;
}

/// One device. Pointers returned by `alloc` are device addresses: the front never dereferences
/// them, it only passes them back to this device.
/// The host's monotonic clock (`CLOCK_MONOTONIC`) in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec to a live local; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

pub trait Device: Send + Sync {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void>;
    /// Frees what `alloc` returned; a null `ptr` does nothing.
    ///
    /// # Safety
    /// `ptr` is null or came from `alloc` of this device with this `kind`, and is freed once
    /// (device code and copies no longer use it).
    unsafe fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()>;
    /// # Safety
    /// `host` is readable for `bytes`; `device` came from this device and holds `bytes`.
    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()>;
    /// # Safety
    /// `host` is writable for `bytes`; `device` came from this device and holds `bytes`.
    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()>;
    /// # Safety
    /// Both ranges are device memory of this device holding `bytes`.
    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()>;
    /// Page-locks `bytes` of the user's memory at `host` for this device, so copies of it run
    /// at pinned speed (`llvm_omp_target_lock_mem`; libomp calls it for `omp_alloc` with the
    /// pinned trait). Returns the address the device reaches the memory at. Devices without
    /// pinning (the CPU) answer `host`.
    ///
    /// # Safety
    /// `host` is live memory of `bytes`, unlocked again before it is freed.
    unsafe fn lock_host(&self, host: *mut c_void, _bytes: usize) -> Result<*mut c_void> {
        Ok(host)
    }
    /// Undoes one `lock_host` of the range holding `host`.
    ///
    /// # Safety
    /// No copy or kernel uses the range any more if this was its last lock.
    unsafe fn unlock_host(&self, _host: *mut c_void) -> Result<()> {
        Ok(())
    }
    /// The device's clock in nanoseconds (OMPT device tracing's time). The default is the
    /// host's monotonic clock, which is the CPU plugin's device clock.
    fn clock_ns(&self) -> u64 {
        monotonic_ns()
    }
    /// A time of `clock_ns` on the host's monotonic clock.
    fn clock_to_host_ns(&self, device_ns: u64) -> u64 {
        device_ns
    }
    /// Loads an image and returns a handle to look up its symbols.
    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>>;
    /// Waits until everything queued on this device finished.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    /// Whether device memory is the host's (the CPU plugin), so host pointers are accessible.
    fn shares_host_memory(&self) -> bool {
        false
    }
    /// Whether a call on this device (allocation, free, copy, launch) made while one of its
    /// kernels runs waits for that kernel, as CUDA's and HSA's synchronous calls do: a host
    /// function that kernel called (`__llvm_omp_host_call`) must then not make one, or both
    /// wait for each other.
    fn waits_for_running_kernels(&self) -> bool {
        false
    }
    /// Whether maps use host memory without copies even without `requires
    /// unified_shared_memory` (LLVM's automatic zero-copy on AMD APUs, `OMPX_APU_MAPS`).
    fn uses_auto_zero_copy(&self) -> bool {
        false
    }
    /// Whether device code can use any host address (what `requires unified_shared_memory`
    /// needs), or why not: a program that requires it runs only on devices that can.
    fn unified_memory(&self) -> std::result::Result<(), String> {
        if self.shares_host_memory() {
            Ok(())
        } else {
            Err("the device cannot access host memory".into())
        }
    }
    /// One line describing the device (`__tgt_print_device_info`).
    fn describe(&self) -> String;
    /// Copies `bytes` from `src` on this device to `dst` on `peer`, another device, without
    /// passing through the host's memory, when this device knows a way (two remote devices:
    /// rank to rank). `None`: no such way; the front stages the copy through host memory.
    ///
    /// # Safety
    /// `src` holds `bytes` on this device, `dst` holds `bytes` on `peer`.
    unsafe fn copy_to_peer(
        &self,
        _peer: &dyn Device,
        _dst: *mut c_void,
        _src: *const c_void,
        _bytes: usize,
    ) -> Option<Result<()>> {
        None
    }
    /// The device as `Any`, so that a plugin can recognize its own devices behind
    /// `&dyn Device` (for `copy_to_peer`). Wrappers forward it.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// The device's facts as labelled values, for listings (`rustomp-info`, after LLVM's
    /// `llvm-offload-device-info`): kind, name, architecture, memory, limits, driver version,
    /// as far as the plugin knows them. The default is the description line.
    fn properties(&self) -> Vec<(&'static str, String)> {
        vec![("Description", self.describe())]
    }
}

/// An image loaded on one device.
///
/// The front asks for each offload entry by its kind, as LLVM's plugins do: an entry of size 0
/// (a kernel, constructor or destructor) through [`kernel`](Self::kernel), anything else (a
/// global, the global holding an indirect function's address) through
/// [`global`](Self::global). Neither is ever asked for a name of the other kind. `Ok(None)`
/// means the image has no such symbol; `Err` is a failure of the lookup itself, with the
/// driver's words.
pub trait LoadedImage: Send + Sync {
    /// The kernel `name`, as a value that only this image's `launch` interprets; `None` when the
    /// image has no such kernel. Implementations provide this; callers use [`kernel`](Self::kernel).
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>>;
    /// The global `name`; `None` when the image does not define it.
    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>>;
    /// The kernel `name`, the only way to get a [`KernelHandle`].
    fn kernel(&self, name: &str) -> Result<Option<KernelHandle>> {
        Ok(self.find_kernel(name)?.map(KernelHandle))
    }
    /// Launches `kernel` (from this image's `kernel`) with the given argument values.
    ///
    /// # Safety
    /// `args` are the values the kernel expects (device pointers or literals), one per parameter
    /// after the launch environment.
    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()>;
    /// Publishes the indirect-call table to the image.
    fn set_indirect_table(&self, table: &layout::IndirectTable) -> Result<()>;
}
