//! External target RTLs found by naming convention (`libomptarget.rtl.<name>.so`), the start-up
//! discovery of the original offload design (seed 004, sections 3 and 6): search for target RTLs,
//! verify the RTL interface, add them to the available device types.
//!
//! Discovery ([`discover`], only when `OMP_TARGET_OFFLOAD` is not `disabled`): the directory
//! holding this library (found with `dladdr`), then each directory of `LD_LIBRARY_PATH`, in that
//! order; the first file of a given `<name>` wins. Each is opened with `RTLD_NOW | RTLD_LOCAL` and
//! must export every function of [`Rtl`]; a library missing one is closed and skipped, with a
//! `LIBOMPTARGET_INFO` (0x10) line naming the file and the symbol. Names our built-in plugins
//! cover (`host`, `x86_64`, `cuda`) are skipped: the built-in plugin is used, never shadowed, and
//! external plugins come after the built-in ones in the plugin list, so they only get images the
//! built-ins cannot run.
//!
//! The interface, as called here (the seed's shapes; C types):
//!
//! ```c
//! int32_t __tgt_rtl_number_of_devices(void);
//! int32_t __tgt_rtl_init_device(int32_t device);                 // 0 = success
//! int32_t __tgt_rtl_is_valid_binary(__tgt_device_image *image);  // non-zero = can run it
//! __tgt_target_table *__tgt_rtl_load_binary(int32_t device, __tgt_device_image *image); // NULL = error
//! void   *__tgt_rtl_data_alloc(int32_t device, int64_t size, void *host_ptr);            // NULL = error
//! int32_t __tgt_rtl_data_submit(int32_t device, void *target, void *host, int64_t size);
//! int32_t __tgt_rtl_data_retrieve(int32_t device, void *host, void *target, int64_t size);
//! int32_t __tgt_rtl_data_delete(int32_t device, void *target);
//! int32_t __tgt_rtl_run_target_team_region(int32_t device, void *entry, void **args,
//!                                          int32_t arg_num, int32_t num_teams, int32_t thread_limit);
//! ```
//!
//! - `data_alloc` gets a third argument, `host_ptr` (always NULL): the seed declares two
//!   parameters, LLVM's later RTLs three; in the SysV x86_64 ABI an extra integer argument is a
//!   register the two-parameter callee never reads, so both kinds are served.
//! - `run_target_team_region` is the seed's six-parameter shape, not LLVM's later one (with
//!   `ptrdiff_t *offsets` after `args` and a trip count at the end): an RTL built for that shape
//!   would misread its arguments, so it must not be named by this convention.
//! - `args` are the region's argument values exactly as the front computes them (device
//!   addresses and literals, one per `TARGET_PARAM` item). The clang-22 launch environment our
//!   built-in plugins put first is not passed: the old interface has no such parameter.
//! - The image given to `is_valid_binary` and `load_binary` spans the raw image bytes (inside an
//!   `OffloadBinary` container, the inner image); its entry range is empty. The table that
//!   `load_binary` returns is read once, by name: LLVM 20+'s 56-byte `__tgt_offload_entry` whose
//!   `address` is the device address of the entry named by `symbol_name`.
//! - No device-to-device copy exists in the interface: `copy_within_device` goes through a host
//!   buffer. Only `AllocKind::Device` allocations are offered (no host or shared memory kinds),
//!   and no indirect-call table.
//!
//! An RTL is never closed: its code and tables live for the process, as the devices do.

use crate::diag::{self, debug, info};
use core::ffi::{c_char, c_void};
use core::ptr::NonNull;
use rustomp_abi::{DeviceImage, OffloadEntry};
use rustomp_plugin::{
    AllocKind, Device, DeviceGlobal, ErrorKind, ImageInfo, KernelHandle, LaunchConfig, LoadedImage,
    OffloadError, Plugin, Result,
};
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

const PREFIX: &str = "libomptarget.rtl.";
const SUFFIX: &str = ".so";
/// RTL names the built-in plugins serve (LLVM's `x86_64` is our `host`).
const BUILT_IN: [&str; 3] = ["host", "x86_64", "cuda"];

/// `__tgt_target_table`: the bounds of the entries `load_binary` built.
#[repr(C)]
struct TargetTable {
    entries_begin: *mut OffloadEntry,
    entries_end: *mut OffloadEntry,
}
const _: () = assert!(size_of::<TargetTable>() == 16);

type NumberOfDevices = unsafe extern "C" fn() -> i32;
type InitDevice = unsafe extern "C" fn(i32) -> i32;
type IsValidBinary = unsafe extern "C" fn(*mut DeviceImage) -> i32;
type LoadBinary = unsafe extern "C" fn(i32, *mut DeviceImage) -> *mut TargetTable;
type DataAlloc = unsafe extern "C" fn(i32, i64, *mut c_void) -> *mut c_void;
type DataSubmit = unsafe extern "C" fn(i32, *mut c_void, *mut c_void, i64) -> i32;
type DataRetrieve = unsafe extern "C" fn(i32, *mut c_void, *mut c_void, i64) -> i32;
type DataDelete = unsafe extern "C" fn(i32, *mut c_void) -> i32;
type RunTeamRegion = unsafe extern "C" fn(i32, *mut c_void, *mut *mut c_void, i32, i32, i32) -> i32;

/// The resolved interface of one RTL, and the file it came from (for messages).
struct Rtl {
    file: String,
    number_of_devices: NumberOfDevices,
    init_device: InitDevice,
    is_valid_binary: IsValidBinary,
    load_binary: LoadBinary,
    data_alloc: DataAlloc,
    data_submit: DataSubmit,
    data_retrieve: DataRetrieve,
    data_delete: DataDelete,
    run_target_team_region: RunTeamRegion,
}

/// The required symbols, in the order they are checked.
const REQUIRED: [&CStr; 9] = [
    c"__tgt_rtl_number_of_devices",
    c"__tgt_rtl_init_device",
    c"__tgt_rtl_is_valid_binary",
    c"__tgt_rtl_load_binary",
    c"__tgt_rtl_data_alloc",
    c"__tgt_rtl_data_submit",
    c"__tgt_rtl_data_retrieve",
    c"__tgt_rtl_data_delete",
    c"__tgt_rtl_run_target_team_region",
];

/// Finds, opens and checks the external RTLs; one plugin per valid library.
pub fn discover() -> Vec<Box<dyn Plugin>> {
    let mut plugins: Vec<Box<dyn Plugin>> = Vec::new();
    let mut seen_names = HashSet::new();
    for dir in search_dirs() {
        for (name, path) in candidates(&dir) {
            if BUILT_IN.contains(&name.as_str()) {
                info!(
                    diag::infotype::PLUGIN,
                    "-",
                    "{}: not loaded, the built-in {name} plugin serves it",
                    path.display()
                );
                continue;
            }
            if !seen_names.insert(name.clone()) {
                debug!(
                    "{}: an RTL named {name} was already found earlier in the search",
                    path.display()
                );
                continue;
            }
            match open(&path) {
                Ok(rtl) => {
                    info!(
                        diag::infotype::PLUGIN,
                        "-", "found target RTL {name} ({})", rtl.file
                    );
                    plugins.push(Box::new(ExternalPlugin {
                        name,
                        rtl: Arc::new(rtl),
                        devices: OnceLock::new(),
                    }));
                }
                Err(why) => info!(
                    diag::infotype::PLUGIN,
                    "-",
                    "target RTL {} skipped: {why}",
                    path.display()
                ),
            }
        }
    }
    plugins
}

/// The directory of this library, then `LD_LIBRARY_PATH`'s, each once.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(own) = own_directory() {
        dirs.push(own);
    }
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths).filter(|d| !d.as_os_str().is_empty()));
    }
    let mut seen = HashSet::new();
    dirs.retain(|d| seen.insert(std::fs::canonicalize(d).unwrap_or_else(|_| d.clone())));
    dirs
}

/// Where the object holding this code (`libomptarget.so.22.1`) was loaded from.
pub(crate) fn own_directory() -> Option<PathBuf> {
    let anchor: fn() -> Vec<Box<dyn Plugin>> = discover;
    // SAFETY: Dl_info is plain data; all-zero is a valid value for dladdr to overwrite.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: any address may be asked about; `info` is writable.
    let found = unsafe { libc::dladdr(anchor as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set a NUL-terminated path owned by the loader.
    let file = unsafe { CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let file = std::fs::canonicalize(&file).unwrap_or_else(|_| PathBuf::from(file));
    file.parent().map(Path::to_path_buf)
}

/// The `libomptarget.rtl.<name>.so` files of `dir`, by file name.
fn candidates(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let file_name = entry.file_name().into_string().ok()?;
            let name = rtl_name(&file_name)?.to_string();
            Some((name, entry.path()))
        })
        .collect();
    found.sort();
    found
}

/// `<name>` of `libomptarget.rtl.<name>.so`.
fn rtl_name(file_name: &str) -> Option<&str> {
    let name = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    (!name.is_empty()).then_some(name)
}

/// Opens one RTL and resolves its interface; closes it again when a symbol is missing.
fn open(path: &Path) -> std::result::Result<Rtl, String> {
    let file = path.display().to_string();
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| "a NUL in its path".to_string())?;
    // SAFETY: a valid path; the loader runs the library's initializers, which is what loading
    // an RTL means.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!(
            "cannot be loaded: {}",
            rustomp_plugin::last_dl_error()
        ));
    }
    let mut addresses = [std::ptr::null_mut::<c_void>(); REQUIRED.len()];
    for (slot, name) in addresses.iter_mut().zip(REQUIRED) {
        // SAFETY: a live handle and a C string.
        let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if address.is_null() {
            // SAFETY: the handle came from dlopen; nothing of the library is referenced.
            unsafe { libc::dlclose(handle) };
            return Err(format!("it does not export {}", name.to_string_lossy()));
        }
        *slot = address;
    }
    // SAFETY: each address is the named function of the RTL interface, whose C signature is the
    // matching type above (documented at the top of this module); a function pointer and a data
    // pointer have the same representation on the platforms the loader runs on.
    unsafe {
        Ok(Rtl {
            file,
            number_of_devices: std::mem::transmute::<*mut c_void, NumberOfDevices>(addresses[0]),
            init_device: std::mem::transmute::<*mut c_void, InitDevice>(addresses[1]),
            is_valid_binary: std::mem::transmute::<*mut c_void, IsValidBinary>(addresses[2]),
            load_binary: std::mem::transmute::<*mut c_void, LoadBinary>(addresses[3]),
            data_alloc: std::mem::transmute::<*mut c_void, DataAlloc>(addresses[4]),
            data_submit: std::mem::transmute::<*mut c_void, DataSubmit>(addresses[5]),
            data_retrieve: std::mem::transmute::<*mut c_void, DataRetrieve>(addresses[6]),
            data_delete: std::mem::transmute::<*mut c_void, DataDelete>(addresses[7]),
            run_target_team_region: std::mem::transmute::<*mut c_void, RunTeamRegion>(addresses[8]),
        })
    }
}

/// One thin wrapper per RTL call: the raw result, no interpretation.
impl Rtl {
    fn number_of_devices(&self) -> i32 {
        // SAFETY: takes no arguments.
        unsafe { (self.number_of_devices)() }
    }
    fn init_device(&self, device: i32) -> i32 {
        // SAFETY: any device number may be passed; the RTL checks it.
        unsafe { (self.init_device)(device) }
    }
    /// # Safety
    /// `image` spans readable memory that stays valid during the call.
    unsafe fn is_valid_binary(&self, image: &mut DeviceImage) -> i32 {
        // SAFETY: guaranteed by the caller.
        unsafe { (self.is_valid_binary)(image) }
    }
    /// # Safety
    /// `image` spans readable memory that stays valid while the image is loaded, and so does
    /// the `DeviceImage` itself (the RTL may keep the pointer).
    unsafe fn load_binary(&self, device: i32, image: *mut DeviceImage) -> *mut TargetTable {
        // SAFETY: guaranteed by the caller.
        unsafe { (self.load_binary)(device, image) }
    }
    fn data_alloc(&self, device: i32, size: i64) -> *mut c_void {
        // SAFETY: allocation reads no caller memory; the third argument (host_ptr, NULL) is
        // ignored by the seed's two-parameter RTLs (an unread register in the SysV ABI).
        unsafe { (self.data_alloc)(device, size, std::ptr::null_mut()) }
    }
    /// # Safety
    /// `host` is readable for `size` bytes; `target` is this device's memory holding them.
    unsafe fn data_submit(
        &self,
        device: i32,
        target: *mut c_void,
        host: *const c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: guaranteed by the caller; the RTL only reads `host`.
        unsafe { (self.data_submit)(device, target, host as *mut c_void, size) }
    }
    /// # Safety
    /// `host` is writable for `size` bytes; `target` is this device's memory holding them.
    unsafe fn data_retrieve(
        &self,
        device: i32,
        host: *mut c_void,
        target: *const c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: guaranteed by the caller; the RTL only reads `target`.
        unsafe { (self.data_retrieve)(device, host, target as *mut c_void, size) }
    }
    /// # Safety
    /// `target` came from `data_alloc` on this device and is not used afterwards.
    unsafe fn data_delete(&self, device: i32, target: *mut c_void) -> i32 {
        // SAFETY: guaranteed by the caller.
        unsafe { (self.data_delete)(device, target) }
    }
    /// # Safety
    /// `entry` is from this device's table; `args` are the values the entry expects.
    unsafe fn run_target_team_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: &[*mut c_void],
        teams: i32,
        threads: i32,
    ) -> i32 {
        let count = i32::try_from(args.len()).unwrap_or(i32::MAX);
        // SAFETY: guaranteed by the caller; the RTL reads `count` values at `args` and writes none.
        unsafe {
            (self.run_target_team_region)(
                device,
                entry,
                args.as_ptr() as *mut *mut c_void,
                count,
                teams,
                threads,
            )
        }
    }

    /// The error for a failed call on one device.
    fn failed(
        &self,
        kind: ErrorKind,
        call: &str,
        device: &DeviceName,
        what: String,
    ) -> OffloadError {
        OffloadError::new(
            kind,
            format!(
                "device {} ({}, RTL device {}): {call} {what}",
                device.global, self.file, device.index
            ),
        )
    }
}

/// A device image as the RTL interface describes one: the bytes, no entries.
fn device_image(bytes: &[u8]) -> DeviceImage {
    let start = bytes.as_ptr() as *mut c_void;
    DeviceImage {
        image_start: start,
        image_end: start.wrapping_byte_add(bytes.len()),
        entries_begin: std::ptr::null_mut(),
        entries_end: std::ptr::null_mut(),
    }
}

/// One external RTL as a [`Plugin`].
struct ExternalPlugin {
    name: String,
    rtl: Arc<Rtl>,
    devices: OnceLock<usize>,
}

impl Plugin for ExternalPlugin {
    fn name(&self) -> &str {
        &self.name
    }
    fn number_of_devices(&self) -> usize {
        *self
            .devices
            .get_or_init(|| usize::try_from(self.rtl.number_of_devices()).unwrap_or(0))
    }
    fn unavailable_reason(&self) -> Option<String> {
        Some(format!(
            "{}: __tgt_rtl_number_of_devices reported none",
            self.rtl.file
        ))
    }
    fn is_compatible(&self, image: &ImageInfo<'_>) -> bool {
        let mut described = device_image(image.bytes);
        // SAFETY: the image bytes are borrowed for the call.
        unsafe { self.rtl.is_valid_binary(&mut described) != 0 }
    }
    fn open_device(&self, index: usize, global: usize, _total: usize) -> Result<Box<dyn Device>> {
        let name = DeviceName {
            index: i32::try_from(index).unwrap_or(i32::MAX),
            global,
        };
        let rc = self.rtl.init_device(name.index);
        if rc != 0 {
            return Err(self.rtl.failed(
                ErrorKind::DeviceUnavailable,
                "__tgt_rtl_init_device",
                &name,
                format!("returned {rc}"),
            ));
        }
        Ok(Box::new(ExternalDevice {
            rtl: self.rtl.clone(),
            name,
        }))
    }
}

/// A device's number in the RTL (`index`) and in OpenMP (`global`).
struct DeviceName {
    index: i32,
    global: usize,
}

struct ExternalDevice {
    rtl: Arc<Rtl>,
    name: DeviceName,
}

fn size_arg(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl Device for ExternalDevice {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        if kind != AllocKind::Device {
            return Err(self.rtl.failed(
                ErrorKind::Unsupported,
                "__tgt_rtl_data_alloc",
                &self.name,
                format!("cannot provide {kind:?} memory (the RTL interface allocates device memory only)"),
            ));
        }
        let ptr = self.rtl.data_alloc(self.name.index, size_arg(bytes));
        if ptr.is_null() {
            return Err(self.rtl.failed(
                ErrorKind::OutOfMemory,
                "__tgt_rtl_data_alloc",
                &self.name,
                format!("returned NULL for {bytes} bytes"),
            ));
        }
        Ok(ptr)
    }
    unsafe fn free(&self, ptr: *mut c_void, _kind: AllocKind) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // SAFETY: the caller frees only pointers this device allocated, once.
        let rc = unsafe { self.rtl.data_delete(self.name.index, ptr) };
        if rc != 0 {
            return Err(self.rtl.failed(
                ErrorKind::InvalidArgument,
                "__tgt_rtl_data_delete",
                &self.name,
                format!("of {ptr:p} returned {rc}"),
            ));
        }
        Ok(())
    }
    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the caller guarantees both ranges.
        let rc = unsafe {
            self.rtl
                .data_submit(self.name.index, device, host, size_arg(bytes))
        };
        if rc != 0 {
            let what = format!("of {bytes} bytes from {host:p} to {device:p} returned {rc}");
            return Err(self.rtl.failed(
                ErrorKind::TransferFailed,
                "__tgt_rtl_data_submit",
                &self.name,
                what,
            ));
        }
        Ok(())
    }
    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: the caller guarantees both ranges.
        let rc = unsafe {
            self.rtl
                .data_retrieve(self.name.index, host, device, size_arg(bytes))
        };
        if rc != 0 {
            let what = format!("of {bytes} bytes from {device:p} to {host:p} returned {rc}");
            return Err(self.rtl.failed(
                ErrorKind::TransferFailed,
                "__tgt_rtl_data_retrieve",
                &self.name,
                what,
            ));
        }
        Ok(())
    }
    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        // The interface has no device-to-device copy: through a host buffer.
        let mut bounce = vec![0u8; bytes];
        // SAFETY: the buffer holds `bytes`; the caller guarantees `src`.
        unsafe { self.copy_from_device(bounce.as_mut_ptr() as *mut c_void, src, bytes)? };
        // SAFETY: as above, for `dst`.
        unsafe { self.copy_to_device(dst, bounce.as_ptr() as *const c_void, bytes) }
    }
    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        // The RTL may keep the descriptor: it lives as long as the loaded image.
        let mut described = Box::new(device_image(image.bytes));
        // SAFETY: the image lies in the registered program's memory while the program is
        // registered, which outlives its loaded images; the descriptor is boxed above.
        let table = unsafe { self.rtl.load_binary(self.name.index, &mut *described) };
        if table.is_null() {
            let what = format!(
                "returned NULL for the {} image ({} bytes)",
                image.triple,
                image.bytes.len()
            );
            return Err(self.rtl.failed(
                ErrorKind::InvalidImage,
                "__tgt_rtl_load_binary",
                &self.name,
                what,
            ));
        }
        // SAFETY: a non-null table from load_binary: its bounds enclose entries that the RTL
        // keeps while the image is loaded; each name is NUL-terminated or null.
        let symbols = unsafe { read_table(&*table) };
        debug!(
            "device {}: {} loaded an image with {} entries",
            self.name.global,
            self.rtl.file,
            symbols.len()
        );
        Ok(Box::new(ExternalImage {
            rtl: self.rtl.clone(),
            name: DeviceName {
                index: self.name.index,
                global: self.name.global,
            },
            symbols,
            _descriptor: described,
        }))
    }
    fn describe(&self) -> String {
        format!(
            "device {}: external RTL {} device {}",
            self.name.global, self.rtl.file, self.name.index
        )
    }
}

/// The entries of a target table, by name: device address and size.
///
/// # Safety
/// `table`'s bounds enclose readable entries whose names are NUL-terminated or null.
unsafe fn read_table(table: &TargetTable) -> HashMap<String, (usize, usize)> {
    let mut symbols = HashMap::new();
    let (begin, end) = (table.entries_begin, table.entries_end);
    if begin.is_null() || end <= begin {
        return symbols;
    }
    let count = (end as usize - begin as usize) / size_of::<OffloadEntry>();
    // SAFETY: guaranteed by the caller.
    let entries = unsafe { std::slice::from_raw_parts(begin, count) };
    for entry in entries {
        if entry.symbol_name.is_null() {
            continue;
        }
        // SAFETY: guaranteed by the caller.
        let name = unsafe { CStr::from_ptr(entry.symbol_name as *const c_char) }
            .to_string_lossy()
            .into_owned();
        symbols.insert(name, (entry.address as usize, entry.size as usize));
    }
    symbols
}

/// An image loaded by an external RTL: the names it returned.
struct ExternalImage {
    rtl: Arc<Rtl>,
    name: DeviceName,
    symbols: HashMap<String, (usize, usize)>,
    _descriptor: Box<DeviceImage>,
}

// SAFETY: the descriptor only points at the registered program's read-only image bytes, and is
// never written after load; the symbols are plain addresses, never dereferenced here.
unsafe impl Send for ExternalImage {}
// SAFETY: as above; nothing is mutated after construction.
unsafe impl Sync for ExternalImage {}

impl LoadedImage for ExternalImage {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        // The RTL's loaded table: kernels are its entries of size 0.
        Ok(self
            .symbols
            .get(name)
            .filter(|&&(_, size)| size == 0)
            .and_then(|&(address, _)| NonNull::new(address as *mut c_void)))
    }

    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        Ok(self
            .symbols
            .get(name)
            .filter(|&&(address, size)| size > 0 && address != 0)
            .map(|&(address, size)| DeviceGlobal {
                address: address as *mut c_void,
                size,
            }))
    }

    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let teams = i32::try_from(config.num_teams).unwrap_or(i32::MAX);
        let threads = i32::try_from(config.thread_limit).unwrap_or(i32::MAX);
        // SAFETY: the caller guarantees the kernel (from this image's table) takes these values.
        let rc = unsafe {
            self.rtl
                .run_target_team_region(self.name.index, kernel.raw(), args, teams, threads)
        };
        if rc != 0 {
            let what = format!(
                "of the entry at {:p} ({} arguments) returned {rc}",
                kernel.raw(),
                args.len()
            );
            return Err(self.rtl.failed(
                ErrorKind::LaunchFailed,
                "__tgt_rtl_run_target_team_region",
                &self.name,
                what,
            ));
        }
        Ok(())
    }

    fn set_indirect_table(&self, table: &rustomp_plugin::layout::IndirectTable) -> Result<()> {
        if table.is_empty() {
            return Ok(());
        }
        let what = format!(
            "cannot receive {} indirect-call entries (the RTL interface has no such call)",
            table.len()
        );
        Err(self.rtl.failed(
            ErrorKind::Unsupported,
            "declare target indirect:",
            &self.name,
            what,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtl_names_follow_the_convention() {
        assert_eq!(rtl_name("libomptarget.rtl.fake.so"), Some("fake"));
        assert_eq!(rtl_name("libomptarget.rtl.x86_64.so"), Some("x86_64"));
        assert_eq!(rtl_name("libomptarget.rtl..so"), None);
        assert_eq!(rtl_name("libomptarget.rtl.fake.so.1"), None);
        assert_eq!(rtl_name("libomptarget.so.22.1"), None);
    }

    #[test]
    fn candidates_are_sorted_and_non_objects_refused() {
        let dir = std::env::temp_dir().join(format!("rustomp-external-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libomptarget.so.22.1"), b"").unwrap();
        std::fs::write(dir.join("libomptarget.rtl.b.so"), b"").unwrap();
        std::fs::write(dir.join("libomptarget.rtl.a.so"), b"").unwrap();
        let names: Vec<String> = candidates(&dir).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b"]);
        // Not an ELF object: refused by the loader, reported, not a panic.
        let refused = open(&dir.join("libomptarget.rtl.a.so"))
            .err()
            .expect("not an ELF object");
        assert!(refused.contains("cannot be loaded"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
