//! The shim's C ABI: its functions' types, where the shim is found, loading it and checking
//! its ABI, and MPI's error text.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;

/// The shim ABI this code speaks (`RMPI_ABI` in the C file).
const SHIM_ABI: c_int = 1;
/// Bytes reserved for one `MPI_Request` or `MPI_Message` (a pointer in Open MPI, an int in
/// MPICH); the shim's actual sizes are checked against it at load.
pub(super) const HANDLE_BYTES: usize = 16;
pub const SHIM_NAME: &str = "librustomp-mpi.so";

type FnAbi = unsafe extern "C" fn() -> c_int;
type FnSizes = unsafe extern "C" fn(*mut c_int, *mut c_int);
type FnInit = unsafe extern "C" fn(
    c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_char,
    c_int,
) -> c_int;
type FnVoid = unsafe extern "C" fn() -> c_int;
type FnAbort = unsafe extern "C" fn(c_int) -> c_int;
type FnIsend = unsafe extern "C" fn(*const c_void, c_int, c_int, c_int, *mut c_void) -> c_int;
type FnIrecv = unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, *mut c_void) -> c_int;
type FnSend = unsafe extern "C" fn(*const c_void, c_int, c_int, c_int) -> c_int;
type FnRecv = unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int) -> c_int;
type FnTest = unsafe extern "C" fn(
    *mut c_void,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
) -> c_int;
type FnHandle = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnImprobe = unsafe extern "C" fn(
    c_int,
    c_int,
    *mut c_int,
    *mut c_void,
    *mut c_int,
    *mut c_int,
    *mut c_int,
) -> c_int;
type FnMrecv = unsafe extern "C" fn(*mut c_void, c_int, *mut c_void) -> c_int;
type FnText = unsafe extern "C" fn(*mut c_char, c_int);
type FnErrorString = unsafe extern "C" fn(c_int, *mut c_char, c_int);

/// The shim's functions.
pub(super) struct Shim {
    pub(super) init: FnInit,
    pub(super) finalize: FnVoid,
    pub(super) abort: FnAbort,
    pub(super) isend: FnIsend,
    pub(super) irecv: FnIrecv,
    pub(super) send: FnSend,
    pub(super) recv: FnRecv,
    pub(super) test: FnTest,
    pub(super) cancel: FnHandle,
    pub(super) request_free: FnHandle,
    pub(super) improbe: FnImprobe,
    pub(super) mrecv: FnMrecv,
    pub(super) error_string: FnErrorString,
    pub(super) gpu_aware: FnVoid,
    pub(super) library_version: FnText,
}

/// Where the shim is: `RUSTOMP_MPI_SHIM`, else beside the object holding this code (the
/// runtime library in `lib/`), else in `../lib` from it (`bin/rustomp-proxy`).
pub fn shim_candidates() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("RUSTOMP_MPI_SHIM") {
        return vec![PathBuf::from(path)];
    }
    let mut out = Vec::new();
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr reads the address of a function of this object and fills `info`.
    let found = unsafe { libc::dladdr(shim_candidates as *const c_void, &mut info) };
    if found != 0 && !info.dli_fname.is_null() {
        // SAFETY: dladdr's file name is a NUL-terminated string of the loader's.
        let file = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        let mut path = PathBuf::from(file.as_ref());
        if path.is_relative() {
            // The main program appears under the name it was started with.
            if let Ok(exe) = std::env::current_exe() {
                path = exe;
            }
        }
        if let Some(dir) = path.parent() {
            out.push(dir.join(SHIM_NAME));
            out.push(dir.join("../lib").join(SHIM_NAME));
        }
    }
    out
}

impl Shim {
    /// Loads the shim (RTLD_GLOBAL: Open MPI's own components, loaded later, resolve MPI's
    /// symbols through the global scope) and checks its ABI.
    pub(super) fn load() -> Result<Shim, String> {
        let candidates = shim_candidates();
        let mut tried = Vec::new();
        for path in &candidates {
            if !path.exists() {
                tried.push(format!("{} (absent)", path.display()));
                continue;
            }
            let c_path = CString::new(path.as_os_str().as_encoded_bytes())
                .map_err(|_| format!("{}: a path with a NUL byte", path.display()))?;
            // SAFETY: a valid C string; the library's constructors are MPI's own.
            let handle =
                unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if handle.is_null() {
                tried.push(format!(
                    "{}: {}",
                    path.display(),
                    rustomp_plugin::last_dl_error()
                ));
                continue;
            }
            // SAFETY: a valid handle from dlopen, never closed: the functions stay valid.
            return unsafe { Self::bind(handle) }.map_err(|e| format!("{}: {e}", path.display()));
        }
        Err(format!(
            "cannot load {SHIM_NAME} (built by `cargo xtask host` with Open MPI's mpicc; run `cargo xtask setup` to install Open MPI): {}",
            tried.join("; ")
        ))
    }

    /// # Safety
    /// `handle` is a live dlopen handle that stays open.
    unsafe fn bind(handle: *mut c_void) -> Result<Shim, String> {
        fn symbol(handle: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
            // SAFETY: a live handle and a C string.
            let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
            if address.is_null() {
                Err(format!("no {}", name.to_string_lossy()))
            } else {
                Ok(address)
            }
        }
        macro_rules! bind {
            ($name:literal as $ty:ty) => {{
                let address = symbol(handle, $name)?;
                // SAFETY: the shim defines the function with this signature (rustomp_mpi.c,
                // same RMPI_ABI as checked below).
                unsafe { std::mem::transmute::<*mut c_void, $ty>(address) }
            }};
        }
        let abi: FnAbi = bind!(c"rmpi_abi" as FnAbi);
        // SAFETY: takes nothing, returns an int.
        let version = unsafe { abi() };
        if version != SHIM_ABI {
            return Err(format!(
                "shim ABI {version}, this library needs {SHIM_ABI}: rebuild it (`cargo xtask host`)"
            ));
        }
        let sizes: FnSizes = bind!(c"rmpi_sizes" as FnSizes);
        let (mut request, mut message) = (0, 0);
        // SAFETY: writes two ints.
        unsafe { sizes(&mut request, &mut message) };
        if request as usize > HANDLE_BYTES || message as usize > HANDLE_BYTES {
            return Err(format!(
                "MPI handles of {request} and {message} bytes (at most {HANDLE_BYTES} supported)"
            ));
        }
        Ok(Shim {
            init: bind!(c"rmpi_init" as FnInit),
            finalize: bind!(c"rmpi_finalize" as FnVoid),
            abort: bind!(c"rmpi_abort" as FnAbort),
            isend: bind!(c"rmpi_isend" as FnIsend),
            irecv: bind!(c"rmpi_irecv" as FnIrecv),
            send: bind!(c"rmpi_send" as FnSend),
            recv: bind!(c"rmpi_recv" as FnRecv),
            test: bind!(c"rmpi_test" as FnTest),
            cancel: bind!(c"rmpi_cancel" as FnHandle),
            request_free: bind!(c"rmpi_request_free" as FnHandle),
            improbe: bind!(c"rmpi_improbe" as FnImprobe),
            mrecv: bind!(c"rmpi_mrecv" as FnMrecv),
            error_string: bind!(c"rmpi_error_string" as FnErrorString),
            gpu_aware: bind!(c"rmpi_gpu_aware" as FnVoid),
            library_version: bind!(c"rmpi_library_version" as FnText),
        })
    }

    pub(super) fn error_text(&self, code: c_int) -> String {
        let mut buf = [0 as c_char; 512];
        // SAFETY: the shim writes at most `len` bytes, NUL-terminated.
        unsafe { (self.error_string)(code, buf.as_mut_ptr(), buf.len() as c_int) };
        // SAFETY: NUL-terminated by the shim.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        if text.is_empty() {
            format!("MPI error {code}")
        } else {
            format!("{text} (MPI error {code})")
        }
    }
}
