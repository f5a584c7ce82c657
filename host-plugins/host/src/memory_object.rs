//! A shared object loaded from bytes in memory (`memfd_create` + `dlopen`), its symbols found
//! with `dlsym`: the CPU plugin's images, and the virtual GPU's.
//!
//! The loader knows an object by the path it was opened with (`/proc/self/fd/N`) and returns
//! the already loaded object for a path it has seen, so the file stays open while the object is
//! loaded: no other object (another device's copy included) can be opened under the same name.

use core::ffi::c_void;
use core::ptr::NonNull;
use std::ffi::CString;

pub struct MemoryObject {
    handle: *mut c_void,
    fd: libc::c_int,
    path: CString,
}

// SAFETY: the handle is only used with dlsym/dlclose, which are thread-safe.
unsafe impl Send for MemoryObject {}
// SAFETY: as above.
unsafe impl Sync for MemoryObject {}

impl MemoryObject {
    /// Loads `bytes` (an ELF shared object) with every symbol bound now and none made global;
    /// `Err` is the system's or the loader's words.
    pub fn open(bytes: &[u8]) -> Result<Self, String> {
        // SAFETY: the name is a valid C string; flags are valid.
        let fd =
            unsafe { libc::memfd_create(c"rustomp-offload-image".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
        }
        let mut written = 0;
        while written < bytes.len() {
            // SAFETY: fd is open; the range lies inside `bytes`.
            let n = unsafe {
                libc::write(
                    fd,
                    bytes[written..].as_ptr() as *const c_void,
                    bytes.len() - written,
                )
            };
            if n <= 0 {
                // SAFETY: fd is open.
                unsafe { libc::close(fd) };
                return Err(format!(
                    "writing the image: {}",
                    std::io::Error::last_os_error()
                ));
            }
            written += n as usize;
        }
        let path =
            CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL in a path we formatted");
        // SAFETY: a valid path; the loader validates the ELF itself and reports errors.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            let why = rustomp_plugin::last_dl_error();
            // SAFETY: fd is open and nothing refers to it.
            unsafe { libc::close(fd) };
            return Err(why);
        }
        Ok(Self { handle, fd, path })
    }

    /// The `dlopen` handle.
    pub fn handle(&self) -> *mut c_void {
        self.handle
    }

    /// A symbol of the loaded object by name: its address and the size its symbol table gives
    /// (0 for functions), `None` when the object has none.
    pub fn lookup(&self, name: &str) -> Option<(NonNull<c_void>, usize)> {
        let name = CString::new(name).ok()?;
        // SAFETY: a valid handle and C string.
        let address = NonNull::new(unsafe { libc::dlsym(self.handle, name.as_ptr()) })?;
        let mut info: libc::Dl_info = libc::Dl_info {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        let mut entry: *const libc::Elf64_Sym = std::ptr::null();
        // SAFETY: an address inside a loaded object; `dladdr1` writes the two out-values.
        let found = unsafe {
            libc::dladdr1(
                address.as_ptr(),
                &mut info,
                (&raw mut entry) as *mut *mut c_void,
                RTLD_DL_SYMENT,
            )
        };
        let size = if found != 0 && !entry.is_null() {
            // SAFETY: non-null: a symbol-table entry of the loaded object.
            unsafe { (*entry).st_size as usize }
        } else {
            0
        };
        Some((address, size))
    }
}

/// glibc's `dladdr1` flag for the symbol-table entry (`<dlfcn.h>`; not in the libc crate).
const RTLD_DL_SYMENT: libc::c_int = 1;

impl Drop for MemoryObject {
    fn drop(&mut self) {
        // SAFETY: the handle came from dlopen and is closed once.
        unsafe { libc::dlclose(self.handle) };
        // An object the loader keeps (marked NODELETE, e.g. for C++ unique symbols) still owns
        // the name: keep its file open so the name is never reused.
        // SAFETY: a valid path; RTLD_NOLOAD only looks the object up.
        let still_loaded =
            unsafe { libc::dlopen(self.path.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if still_loaded.is_null() {
            // SAFETY: the fd is ours and the object loaded from it is gone.
            unsafe { libc::close(self.fd) };
        } else {
            // SAFETY: balances the lookup just above.
            unsafe { libc::dlclose(still_loaded) };
        }
    }
}
