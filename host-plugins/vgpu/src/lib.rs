//! The virtual-GPU plugins: run a program's nvptx64 or amdgcn device code on the CPU, warp by
//! warp, with the GPU's execution model, when `RUSTOMP_VGPU=1`. One plugin per GPU family
//! ([`Family`]: [`Nvptx`], warps of 32, and [`Amdgcn`], wavefronts of 64), each taking its
//! family's images, so that a program's device 0 is the virtual GPU its images are for.
//!
//! `cargo xtask cc --offload-arch=sm_XX` (or `gfxNNN`) puts the program's real device IR,
//! retargeted to x86_64, into the program as the section `.rustomp.vgpu` (`.rustomp.vgpu.amdgcn`)
//! (`build-tools/src/vgpu`). When the program registers its image, the plugin finds that section
//! in the file the image lies in, loads the shared object it holds, and runs its kernels on
//! `librustomp_vgpu.so`
//! (`host-plugins/vgpu-hw`): each team's threads are OS threads, warps meet for shuffles and
//! votes, barriers are real meetings, and a kernel that does not finish within
//! `RUSTOMP_VGPU_WATCHDOG` seconds (300 by default) is named and stopped.
//!
//! Everything else is the generic GPU layer's, exactly as for CUDA and AMDGPU: the image's
//! declared parameters (read from the cubin or the code object's notes), the device environment, the kernel environment and the
//! geometry it gives, launch environments and teams-reduction buffers, constructors, the
//! indirect-call table, the host-call port. The device's memory is host memory that the
//! program's own copies never alias, so a missing map fails here as it would on a GPU.

use core::ffi::{c_char, c_void};
use rustomp_abi::{VgpuLaunch, VgpuSharedLayout};
use rustomp_host_plugin::call;
use rustomp_host_plugin::memory_object::MemoryObject;
use rustomp_plugin::generic::{
    Backend, DeviceInfo, Driver, GenericPlugin, GlobalSymbol, Initializers, KernelLaunch,
};
use rustomp_plugin::geometry::{GridValues, AMDGPU_GRID_VALUES, NVPTX_GRID_VALUES};
use rustomp_plugin::image::ImageKind;
use rustomp_plugin::{AllocKind, ErrorKind, OffloadError, Plugin, Result};
use std::ffi::CString;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

/// The section of a program that holds its nvptx virtual-GPU image.
pub const SECTION: &str = ".rustomp.vgpu";
/// The section that holds its amdgcn virtual-GPU image.
pub const SECTION_AMDGCN: &str = ".rustomp.vgpu.amdgcn";
/// The virtual GPU's hardware library, beside this library.
pub const HARDWARE_LIBRARY: &str = "librustomp_vgpu.so";
/// The environment variable that turns the plugin on.
pub const ENABLE: &str = "RUSTOMP_VGPU";

/// Whether the program asked for the virtual GPU.
pub fn enabled() -> bool {
    std::env::var(ENABLE).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A GPU family the virtual GPU runs: what of its images it takes, where their retargeted code
/// lies, and the device it presents (warp size, grid values, clock).
pub trait Family: Send + Sync + 'static {
    /// The plugin's name.
    const NAME: &'static str;
    /// The arch the device reports.
    const ARCH: &'static str;
    /// The image triple's family (`nvptx64`, `amdgcn`).
    const TRIPLE_PREFIX: &'static str;
    const SECTION: &'static str;
    /// How the family's images run their global constructors.
    const INITIALIZERS: Initializers;
    const GRID_VALUES: GridValues;
    /// Ticks per second of the device clock the family's runtime reads.
    const CLOCK_HZ: u64;
    /// The `--offload-arch` family a user builds with, for messages.
    const BUILD_ARCH: &'static str;
    /// The launch's `family` (`VGPU_FAMILY_*`): how the virtual GPU names its meetings.
    const HARDWARE: u32;
    /// Whether an image of this kind is the family's.
    fn takes(kind: &ImageKind) -> bool;
}

/// nvptx64: cubins, warps of 32, `%globaltimer` in nanoseconds.
pub struct Nvptx;
impl Family for Nvptx {
    const NAME: &'static str = "vgpu";
    const ARCH: &'static str = "sm_90";
    const TRIPLE_PREFIX: &'static str = "nvptx64";
    const SECTION: &'static str = SECTION;
    const INITIALIZERS: Initializers = Initializers::ObjectArray {
        init_kernel: "nvptx$device$init",
        fini_kernel: "nvptx$device$fini",
    };
    const GRID_VALUES: GridValues = NVPTX_GRID_VALUES;
    const CLOCK_HZ: u64 = 1_000_000_000;
    const BUILD_ARCH: &'static str = "sm_XX";
    const HARDWARE: u32 = rustomp_abi::VGPU_FAMILY_NVPTX;
    fn takes(kind: &ImageKind) -> bool {
        matches!(kind, ImageKind::Cubin { .. })
    }
}

/// amdgcn: code objects, wavefronts of 64, the 100 MHz `s_memrealtime`.
pub struct Amdgcn;
impl Family for Amdgcn {
    const NAME: &'static str = "vgpu-amdgcn";
    const ARCH: &'static str = "gfx90a";
    const TRIPLE_PREFIX: &'static str = "amdgcn";
    const SECTION: &'static str = SECTION_AMDGCN;
    // The kernels the AMDGPU backend would make; a retargeted image has none (it is taken
    // before code generation) and its constructors ran from `.init_array` when it was loaded.
    const INITIALIZERS: Initializers = Initializers::LinkedArray {
        init_kernel: "amdgcn.device.init",
        fini_kernel: "amdgcn.device.fini",
    };
    const GRID_VALUES: GridValues = AMDGPU_GRID_VALUES;
    const CLOCK_HZ: u64 = 100_000_000;
    const BUILD_ARCH: &'static str = "gfxNNN";
    const HARDWARE: u32 = rustomp_abi::VGPU_FAMILY_AMDGCN;
    fn takes(kind: &ImageKind) -> bool {
        matches!(kind, ImageKind::AmdgpuCodeObject { .. })
    }
}

pub type VgpuPlugin = GenericPlugin<VgpuDriver<Nvptx>>;
pub type VgpuAmdgcnPlugin = GenericPlugin<VgpuDriver<Amdgcn>>;

/// The virtual GPU's plugins, nvptx's first, as the host library and `rustomp-info` list them.
pub fn plugins() -> Vec<Box<dyn Plugin>> {
    vec![
        Box::new(VgpuPlugin::new(VgpuDriver::new())),
        Box::new(VgpuAmdgcnPlugin::new(VgpuDriver::new())),
    ]
}

type LaunchFn = unsafe extern "C" fn(*const VgpuLaunch, *mut c_char, usize) -> i32;
/// `rustomp_vgpu_host_memory(start, bytes, present)`: host memory the device reaches over the
/// bus, where the hardware refuses atomic read-modify-writes.
type HostMemoryFn = extern "C" fn(*const c_void, usize, bool);

/// The hardware library, loaded once and never unloaded (retargeted images link to it).
#[derive(Clone, Copy)]
pub struct Hardware {
    launch: LaunchFn,
    host_memory: HostMemoryFn,
}

pub struct VgpuDriver<F: Family> {
    hardware: std::sync::OnceLock<Hardware>,
    family: PhantomData<F>,
}

impl<F: Family> VgpuDriver<F> {
    pub fn new() -> Self {
        Self {
            hardware: std::sync::OnceLock::new(),
            family: PhantomData,
        }
    }
}

impl<F: Family> Default for VgpuDriver<F> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the hardware library is: `RUSTOMP_VGPU_LIBRARY`, else beside the library this code is
/// in (`dist/lib`).
fn hardware_path() -> std::result::Result<PathBuf, String> {
    if let Ok(path) = std::env::var("RUSTOMP_VGPU_LIBRARY") {
        return Ok(PathBuf::from(path));
    }
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: the address of a function of this object; dladdr fills `info`.
    let found = unsafe { libc::dladdr(hardware_path as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return Err("cannot tell which file the runtime was loaded from".into());
    }
    // SAFETY: dladdr's file name is a NUL-terminated string of the loader's.
    let own = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let dir = Path::new(own.as_ref())
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Beside libomptarget.so in dist/lib, or in ../lib of a program in dist/bin (rustomp-info).
    let beside = dir.join(HARDWARE_LIBRARY);
    let lib = dir.join("../lib").join(HARDWARE_LIBRARY);
    Ok(if !beside.is_file() && lib.is_file() {
        lib
    } else {
        beside
    })
}

fn load_hardware() -> std::result::Result<Hardware, String> {
    let path = hardware_path()?;
    let c_path = CString::new(path.display().to_string()).map_err(|e| e.to_string())?;
    // SAFETY: a valid path. RTLD_GLOBAL: the retargeted images find its symbols.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(format!(
            "cannot load {}: {}",
            path.display(),
            rustomp_plugin::last_dl_error()
        ));
    }
    // SAFETY: a valid handle and name.
    let launch = unsafe { libc::dlsym(handle, c"rustomp_vgpu_launch".as_ptr()) };
    // SAFETY: as above.
    let host_memory = unsafe { libc::dlsym(handle, c"rustomp_vgpu_host_memory".as_ptr()) };
    if launch.is_null() || host_memory.is_null() {
        return Err(format!(
            "{} lacks rustomp_vgpu_launch or rustomp_vgpu_host_memory (another version's?)",
            path.display()
        ));
    }
    Ok(Hardware {
        // SAFETY: the symbols are the hardware library's, of these signatures.
        launch: unsafe { core::mem::transmute::<*mut c_void, LaunchFn>(launch) },
        // SAFETY: as above.
        host_memory: unsafe { core::mem::transmute::<*mut c_void, HostMemoryFn>(host_memory) },
    })
}

/// The one virtual device.
#[derive(Clone)]
pub struct Properties;

impl<F: Family> Driver for VgpuDriver<F> {
    type Device = VgpuDevice<F>;
    type Properties = Properties;

    fn name(&self) -> &'static str {
        F::NAME
    }

    fn accepts(&self, kind: &ImageKind, triple: &str) -> bool {
        (triple.is_empty() || triple.starts_with(F::TRIPLE_PREFIX)) && F::takes(kind)
    }

    fn initialize(&self) -> std::result::Result<Vec<Properties>, String> {
        let hardware = load_hardware()?;
        let _ = self.hardware.set(hardware);
        Ok(vec![Properties])
    }

    fn runs(
        &self,
        _: &Properties,
        kind: &ImageKind,
        _arch: &str,
    ) -> std::result::Result<(), String> {
        if F::takes(kind) {
            return Ok(());
        }
        Err(format!(
            "the {} virtual GPU runs programs' {} images (with their retargeted device code), not a {}",
            F::TRIPLE_PREFIX,
            F::TRIPLE_PREFIX,
            kind.label()
        ))
    }

    fn open(&self, _: &Properties, _index: usize) -> Result<VgpuDevice<F>> {
        let hardware = *self.hardware.get().ok_or_else(|| {
            OffloadError::new(
                ErrorKind::DeviceUnavailable,
                "the virtual GPU is not initialized",
            )
        })?;
        Ok(VgpuDevice::new(hardware))
    }
}

pub struct VgpuDevice<F: Family> {
    family: PhantomData<F>,
    hardware: Hardware,
    runner: std::sync::OnceLock<std::sync::mpsc::Sender<Job>>,
    info: DeviceInfo,
    stack_bytes: u64,
    watchdog_ms: u64,
    /// `RUSTOMP_VGPU_RACECHECK`: what is checked of team memory (`VGPU_CHECK_*`).
    checks: u32,
}

/// `RUSTOMP_VGPU_RACECHECK`: unset or `1` fails a launch with races or out-of-bounds accesses
/// of team memory, `warn` reports them and goes on, `0` checks nothing.
fn checks_from_environment() -> u32 {
    match std::env::var("RUSTOMP_VGPU_RACECHECK").as_deref() {
        Ok("0") | Ok("off") => rustomp_abi::VGPU_CHECK_NONE,
        Ok("warn") => rustomp_abi::VGPU_CHECK_WARN,
        _ => rustomp_abi::VGPU_CHECK_FAIL,
    }
}

impl<F: Family> VgpuDevice<F> {
    fn new(hardware: Hardware) -> Self {
        let seconds = std::env::var("RUSTOMP_VGPU_WATCHDOG")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(300);
        Self {
            family: PhantomData,
            hardware,
            runner: std::sync::OnceLock::new(),
            info: DeviceInfo {
                name: "rustomp virtual GPU".into(),
                arch: F::ARCH.into(),
                // A small GPU: a launch's teams run one after another on the host.
                grid_values: GridValues {
                    default_teams: 4,
                    ..F::GRID_VALUES
                },
                max_block_threads: 1024,
                max_grid_teams: 65535,
                hardware_parallelism: 4 * 64,
                clock_frequency: F::CLOCK_HZ,
                total_memory: 16 << 30,
            },
            stack_bytes: 1 << 20,
            watchdog_ms: seconds.saturating_mul(1000),
            checks: checks_from_environment(),
        }
    }
}

/// A loaded image: the retargeted shared object.
pub struct VgpuModule {
    object: MemoryObject,
    /// The address of its team memory's layout (`__vgpu_shared_layout`; 0 in images from
    /// before racecheck).
    shared_layout: usize,
    /// The names of the kernels looked up, for messages (each function points at its own).
    names: std::sync::Mutex<Vec<Box<std::ffi::CStr>>>,
}

/// A kernel of a loaded image.
#[derive(Clone, Copy)]
pub struct VgpuFunction {
    entry: *const c_void,
    /// The module's team memory, for racecheck.
    shared_layout: *const VgpuSharedLayout,
    /// NUL-terminated, owned by the module.
    name: *const c_char,
}
// SAFETY: the address of code in a loaded object; calling it is the launch's business.
unsafe impl Send for VgpuFunction {}
// SAFETY: as above.
unsafe impl Sync for VgpuFunction {}

fn failed(kind: ErrorKind) -> impl Fn(String) -> OffloadError {
    move |why| OffloadError::new(kind, why)
}

/// The file a loaded object was mapped from, for the object holding `address`.
fn file_holding(address: *const u8) -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables for `address`.
    let found = unsafe { libc::dladdr(address as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string of the loader's.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    // The main program's name is empty or how it was started; its file is /proc/self/exe.
    let main = std::env::current_exe().ok();
    if name.is_empty()
        || main
            .as_deref()
            .is_some_and(|m| Path::new(name.as_ref()) == m)
    {
        return main;
    }
    let path = PathBuf::from(name.as_ref());
    if path.is_file() {
        Some(path)
    } else {
        main
    }
}

/// The bytes of `section` in the ELF file `bytes`.
fn section<'a>(bytes: &'a [u8], name: &str) -> std::result::Result<Option<&'a [u8]>, String> {
    use object::elf::FileHeader64;
    use object::read::elf::{FileHeader, SectionHeader};
    use object::LittleEndian as LE;
    let header = FileHeader64::<LE>::parse(bytes).map_err(|e| e.to_string())?;
    let sections = header.sections(LE, bytes).map_err(|e| e.to_string())?;
    let Some((_, found)) = sections.section_by_name(LE, name.as_bytes()) else {
        return Ok(None);
    };
    found
        .data(LE, bytes)
        .map(Some)
        .map_err(|e| format!("section {name}: {e}"))
}

impl<F: Family> Backend for VgpuDevice<F> {
    /// Host memory and a runner thread per device: its allocations and copies never wait for
    /// a running kernel.
    fn waits_for_running_kernels(&self) -> bool {
        false
    }
    /// Kernels run in the host's address space: any host address is theirs, as on a GPU with
    /// HMM or ATS (`requires unified_shared_memory` programs run).
    fn unified_memory(&self) -> std::result::Result<(), String> {
        Ok(())
    }
    type Module = VgpuModule;
    type Function = VgpuFunction;
    const INITIALIZERS: Initializers = F::INITIALIZERS;

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64> {
        // 256-byte aligned, as cuMemAlloc's; never null, even for 0 bytes.
        // SAFETY: a valid alignment and a size that is a multiple of it.
        let p = unsafe { libc::aligned_alloc(256, bytes.max(1).next_multiple_of(256)) };
        if p.is_null() {
            return Err(OffloadError::new(
                ErrorKind::OutOfMemory,
                format!("no host memory for {bytes} bytes of virtual-GPU memory"),
            ));
        }
        if kind == AllocKind::Host {
            // Pinned host memory on a GPU: reached over the bus, without atomics.
            (self.hardware.host_memory)(p, bytes, true);
        }
        Ok(p as u64)
    }

    unsafe fn free(&self, address: u64, _kind: AllocKind) -> Result<()> {
        // Whatever kind the caller names (`omp_target_free` of host memory says device): the
        // address may come back as device memory.
        (self.hardware.host_memory)(address as *const c_void, 0, false);
        // SAFETY: the caller's contract: from `alloc`, freed once.
        unsafe { libc::free(address as *mut c_void) };
        Ok(())
    }

    /// Page-locked host memory (`llvm_omp_target_lock_mem`) is reached over the bus as pinned
    /// allocations are: registered with the hardware, whose atomics check refuses it.
    unsafe fn lock_host(&self, host: u64, bytes: usize) -> Result<u64> {
        (self.hardware.host_memory)(host as *const c_void, bytes, true);
        Ok(host)
    }

    unsafe fn unlock_host(&self, host: u64) -> Result<()> {
        (self.hardware.host_memory)(host as *const c_void, 0, false);
        Ok(())
    }

    unsafe fn copy_to_device(&self, device: u64, host: *const u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract: both ranges hold `bytes`.
        unsafe { std::ptr::copy(host, device as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn copy_from_device(&self, host: *mut u8, device: u64, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(device as *const u8, host, bytes) };
        Ok(())
    }

    unsafe fn copy_within_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    fn load_module(&self, bytes: &[u8], _kind: &ImageKind) -> Result<VgpuModule> {
        let file = file_holding(bytes.as_ptr()).ok_or_else(|| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "cannot tell which file the {} image was registered from",
                    F::TRIPLE_PREFIX
                ),
            )
        })?;
        let whole = std::fs::read(&file).map_err(|e| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!("cannot read {}: {e}", file.display()),
            )
        })?;
        let image = section(&whole, F::SECTION)
            .map_err(|why| {
                OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!("{} is not a readable ELF file: {why}", file.display()),
                )
            })?
            .ok_or_else(|| {
                OffloadError::new(
                    ErrorKind::InvalidImage,
                    format!(
                        "{} has no virtual-GPU image (section {}): build it with `cargo xtask cc --offload-arch={}` in one command that compiles and links its sources (RUSTOMP_VGPU_BUILD unset)",
                        file.display(),
                        F::SECTION,
                        F::BUILD_ARCH
                    ),
                )
            })?;
        let object = MemoryObject::open(image).map_err(|why| {
            OffloadError::new(
                ErrorKind::InvalidImage,
                format!(
                    "cannot load the virtual-GPU image of {}: {why}",
                    file.display()
                ),
            )
        })?;
        let shared_layout = object
            .lookup("__vgpu_shared_layout")
            .map_or(0, |(address, _)| address.as_ptr() as usize);
        Ok(VgpuModule {
            object,
            shared_layout,
            names: Default::default(),
        })
    }

    fn global(&self, module: &VgpuModule, name: &str) -> Result<Option<GlobalSymbol>> {
        Ok(module
            .object
            .lookup(name)
            .map(|(address, size)| GlobalSymbol {
                address: address.as_ptr() as u64,
                size,
            }))
    }

    fn function(&self, module: &VgpuModule, name: &str) -> Result<Option<VgpuFunction>> {
        let Some((address, _)) = module.object.lookup(name) else {
            return Ok(None);
        };
        let owned: Box<std::ffi::CStr> = CString::new(name)
            .map_err(|e| OffloadError::new(ErrorKind::InvalidArgument, e.to_string()))?
            .into_boxed_c_str();
        let name_ptr = owned.as_ptr();
        module
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(owned);
        Ok(Some(VgpuFunction {
            entry: address.as_ptr(),
            shared_layout: module.shared_layout as *const VgpuSharedLayout,
            name: name_ptr,
        }))
    }

    fn function_max_threads(&self, _function: VgpuFunction) -> Result<u32> {
        Ok(self.info.max_block_threads)
    }

    unsafe fn launch(
        &self,
        function: VgpuFunction,
        launch: &KernelLaunch<'_>,
        while_running: Option<&mut dyn FnMut() -> bool>,
    ) -> Result<()> {
        let blocks = launch
            .blocks
            .iter()
            .try_fold(1u32, |n, &d| n.checked_mul(d));
        let threads = launch
            .threads
            .iter()
            .try_fold(1u32, |n, &d| n.checked_mul(d));
        let (Some(blocks), Some(threads)) = (blocks, threads) else {
            return Err(OffloadError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "a launch of {:?} teams of {:?} threads is too large",
                    launch.blocks, launch.threads
                ),
            ));
        };
        // The call reads at least one value per argument register.
        let mut values = launch.args.to_vec();
        values.resize(values.len().max(call::REGISTER_VALUES), 0);
        let context = Call {
            entry: function.entry,
            values: &values,
            count: launch.args.len(),
        };
        let spec = VgpuLaunch {
            blocks,
            threads,
            warp: self.info.grid_values.warp_size,
            dynamic_shared_bytes: launch.dynamic_shared_bytes,
            stack_bytes: self.stack_bytes,
            watchdog_ms: self.watchdog_ms,
            kernel_name: function.name,
            thread_entry: run_thread,
            context: &context as *const Call as *mut c_void,
            checks: self.checks,
            family: F::HARDWARE,
            shared_layout: function.shared_layout,
            grid: launch.blocks,
            block: launch.threads,
        };
        let mut error = vec![0 as c_char; 1024];
        let done = Arc::new(Done::default());
        let job = Job {
            launch: SendLaunch(spec),
            error: ErrorBuffer(error.as_mut_ptr()),
            error_len: error.len(),
            done: Arc::clone(&done),
        };
        self.runner()?.send(job).map_err(|_| {
            failed(ErrorKind::LaunchFailed)("the virtual GPU's runner thread is gone".into())
        })?;
        // The host-call port and the printf drain are served while the kernel runs.
        let mut serve = while_running;
        let status = loop {
            let guard = done.status.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(status) = *guard {
                break Ok(status);
            }
            match serve.as_mut() {
                Some(serve) => {
                    drop(guard);
                    if !serve() {
                        let guard = done.status.lock().unwrap_or_else(|e| e.into_inner());
                        if guard.is_none() {
                            let _ = done
                                .signal
                                .wait_timeout(guard, std::time::Duration::from_micros(50));
                        }
                    }
                }
                None => {
                    let _guard = done.signal.wait(guard);
                }
            }
        };
        let status: std::result::Result<i32, ()> = status;
        match status {
            Ok(0) => Ok(()),
            Ok(_) => {
                // SAFETY: the hardware wrote a NUL-terminated message.
                let why = unsafe { std::ffi::CStr::from_ptr(error.as_ptr()) }.to_string_lossy();
                Err(failed(ErrorKind::LaunchFailed)(why.into_owned()))
            }
            Err(()) => Err(failed(ErrorKind::LaunchFailed)(
                "the virtual GPU's launch thread panicked".into(),
            )),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} device code retargeted to the host, warps of {}; teams run in turn, each team's threads fibers of one OS thread; watchdog {} s; racecheck {}",
            F::ARCH,
            self.info.grid_values.warp_size,
            self.watchdog_ms / 1000,
            match self.checks {
                rustomp_abi::VGPU_CHECK_NONE => "off",
                rustomp_abi::VGPU_CHECK_WARN => "reports",
                _ => "fails launches",
            }
        )
    }
}

/// A launch's outcome, for the thread that asked for it.
#[derive(Default)]
struct Done {
    status: Mutex<Option<i32>>,
    signal: Condvar,
}

/// The caller's buffer for the hardware's message.
struct ErrorBuffer(*mut c_char);
// SAFETY: written only by the runner while the caller waits for the launch to be done.
unsafe impl Send for ErrorBuffer {}

/// One launch for the runner: the spec, the caller's error buffer, and where to say it is
/// over. The caller waits for `done`, so everything the pointers reach lives until the runner
/// is finished with it.
struct Job {
    launch: SendLaunch,
    error: ErrorBuffer,
    error_len: usize,
    done: Arc<Done>,
}

impl<F: Family> VgpuDevice<F> {
    /// The device's runner: one OS thread that runs its launches in turn, so that the fibers'
    /// stacks and the fault handler's alternate stack are made once, not per launch.
    fn runner(&self) -> Result<std::sync::mpsc::Sender<Job>> {
        if let Some(sender) = self.runner.get() {
            return Ok(sender.clone());
        }
        let (sender, jobs) = std::sync::mpsc::channel::<Job>();
        let launch = self.hardware.launch;
        std::thread::Builder::new()
            .name("rustomp-vgpu".into())
            .spawn(move || {
                for job in jobs {
                    let error = job.error.0;
                    // SAFETY: the caller keeps the spec's pointers and the error buffer alive
                    // until `done` is set.
                    let status = unsafe { launch(&job.launch.0, error, job.error_len) };
                    *job.done.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
                    job.done.signal.notify_all();
                }
            })
            .map_err(|e| {
                failed(ErrorKind::DeviceUnavailable)(format!(
                    "cannot start the virtual GPU's runner thread: {e}"
                ))
            })?;
        let _ = self.runner.set(sender);
        Ok(self.runner.get().expect("set above").clone())
    }
}

/// The launch, handed to the thread that runs it.
struct SendLaunch(VgpuLaunch);
// SAFETY: its pointers (the kernel's name, the `Call`) live until the launch's scope ends, and
// the hardware calls the entry with the context from its own threads, as the launch allows.
unsafe impl Send for SendLaunch {}
// SAFETY: as above.
unsafe impl Sync for SendLaunch {}

/// One kernel call, as every emulated thread makes it.
struct Call<'a> {
    entry: *const c_void,
    values: &'a [u64],
    count: usize,
}

unsafe extern "C" fn run_thread(context: *mut c_void) {
    // SAFETY: `launch` passes a `Call` that outlives the launch.
    let call = unsafe { &*(context as *const Call<'_>) };
    // SAFETY: the kernel takes `count` 64-bit values (the generic layer checked them against
    // the image's parameters); `values` holds at least REGISTER_VALUES.
    unsafe { call::call_with_u64_args(call.entry, call.values, call.count) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_section_is_none_and_garbage_is_an_error() {
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(section(&own, SECTION).unwrap(), None);
        assert!(section(&own, ".text").unwrap().is_some());
        assert!(section(b"not an elf file", SECTION).is_err());
    }

    #[test]
    fn each_family_takes_its_own_images() {
        let d = VgpuDriver::<Nvptx>::new();
        assert!(d.accepts(&ImageKind::Cubin { sm: 90 }, ""));
        assert!(d.accepts(&ImageKind::Cubin { sm: 70 }, "nvptx64-nvidia-cuda"));
        assert!(!d.accepts(&ImageKind::HostElf, ""));
        assert!(!d.accepts(&ImageKind::Ptx { sm: None }, ""));
        let code_object = ImageKind::AmdgpuCodeObject {
            target: rustomp_plugin::image::TargetId::parse("gfx90a").unwrap(),
        };
        assert!(!d.accepts(&code_object, "amdgcn-amd-amdhsa"));
        let a = VgpuDriver::<Amdgcn>::new();
        assert!(a.accepts(&code_object, "amdgcn-amd-amdhsa"));
        assert!(a.accepts(&code_object, ""));
        assert!(!a.accepts(&ImageKind::Cubin { sm: 90 }, ""));
        assert!(!a.accepts(&code_object, "nvptx64-nvidia-cuda"));
    }
}
