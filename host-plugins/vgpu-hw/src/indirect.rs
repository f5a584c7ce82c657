//! Calls through pointers in device code: on a GPU, a call to an address that is not device
//! code (a host function pointer the program never translated: no `declare target indirect`,
//! or a table the runtime did not publish) faults with an illegal address. On the virtual GPU
//! the host's code would run instead, silently, so every call through a pointer is checked
//! against the image's code (`__vgpu_indirect_call`, inserted by `build-tools`'
//! `vgpu::instrument`) and a call elsewhere stops the program naming what it called.

use crate::team;
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};
use rustomp_abi::VgpuAccessSite;

/// The running launch's image code (an empty range: nothing checked).
static CODE_BEGIN: AtomicUsize = AtomicUsize::new(0);
static CODE_END: AtomicUsize = AtomicUsize::new(0);

/// The executable segments of the loaded object holding `inside` (one range from the first to
/// the last), or `None`.
fn code_of_object_holding(inside: usize) -> Option<(usize, usize)> {
    struct Search {
        inside: usize,
        found: Option<(usize, usize)>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader's description of one object, and our `Search`.
        let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
        // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
        let headers =
            unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
        let holds = loads.clone().any(|h| {
            let start = base + h.p_vaddr as usize;
            (start..start + h.p_memsz as usize).contains(&search.inside)
        });
        if !holds {
            return 0;
        }
        search.found = loads
            .filter(|h| h.p_flags & libc::PF_X != 0)
            .map(|h| {
                let start = base + h.p_vaddr as usize;
                (start, start + h.p_memsz as usize)
            })
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
        1
    }
    let mut search = Search {
        inside,
        found: None,
    };
    // SAFETY: `visit` matches the callback's contract and only reads what the loader passes.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut c_void) };
    search.found
}

/// Loaded objects known to be virtual-GPU images (their load bases).
static IMAGES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// Whether the object `info` describes is a virtual-GPU image: it defines its own
/// `__vgpu_shared_layout`.
fn is_virtual_gpu_image(info: &libc::Dl_info) -> bool {
    let base = info.dli_fbase as usize;
    let mut images = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    if images.contains(&base) {
        return true;
    }
    if info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: the loader's name of a loaded object; RTLD_NOLOAD only finds it, loads nothing.
    let handle = unsafe { libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: a valid handle and a C string.
    let layout = unsafe { libc::dlsym(handle, c"__vgpu_shared_layout".as_ptr()) };
    let mut owner = libc::Dl_info {
        dli_fname: core::ptr::null(),
        dli_fbase: core::ptr::null_mut(),
        dli_sname: core::ptr::null(),
        dli_saddr: core::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables; the handle from RTLD_NOLOAD is released.
    let own = !layout.is_null()
        && unsafe { libc::dladdr(layout, &mut owner) } != 0
        && owner.dli_fbase as usize == base;
    // SAFETY: the reference RTLD_NOLOAD took.
    unsafe { libc::dlclose(handle) };
    if own {
        images.push(base);
    }
    own
}

/// The function of the ELF file at `path` whose symbol covers `offset` (from the file's load
/// base), if its symbol table has one.
fn symbol_in_file(path: &str, offset: usize) -> Option<String> {
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let offset = offset as u64;
    file.symbols()
        .find(|s| {
            s.is_definition() && s.address() <= offset && offset < s.address() + s.size().max(1)
        })
        .and_then(|s| s.name().ok().map(str::to_string))
}

/// Checks the calls of a launch whose image holds `image_address` (0: none to check) until the
/// guard goes.
pub struct Checked;

impl Checked {
    pub fn begin(image_address: usize) -> Checked {
        let (begin, end) = if image_address == 0 {
            (0, 0)
        } else {
            code_of_object_holding(image_address).unwrap_or((0, 0))
        };
        CODE_BEGIN.store(begin, Ordering::Relaxed);
        CODE_END.store(end, Ordering::Relaxed);
        Checked
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        CODE_BEGIN.store(0, Ordering::Relaxed);
        CODE_END.store(0, Ordering::Relaxed);
    }
}

/// Before a call through `callee` in device code.
///
/// # Safety
/// `site` is the image's site constant for the call (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_indirect_call(callee: *const c_void, site: *const VgpuAccessSite) {
    let address = callee as usize;
    let begin = CODE_BEGIN.load(Ordering::Relaxed);
    if begin == 0 || (begin..CODE_END.load(Ordering::Relaxed)).contains(&address) {
        return;
    }
    let mut info = libc::Dl_info {
        dli_fname: core::ptr::null(),
        dli_fbase: core::ptr::null_mut(),
        dli_sname: core::ptr::null(),
        dli_saddr: core::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables.
    let known = unsafe { libc::dladdr(callee, &mut info) } != 0;
    // Device code of another image (a shared library's, called through the indirect-call
    // table), as a GPU calls into another loaded module.
    if known && is_virtual_gpu_image(&info) {
        return;
    }
    let what = if !known {
        "no loaded code".to_string()
    } else {
        let text = |p: *const libc::c_char| {
            if p.is_null() {
                "?".to_string()
            } else {
                // SAFETY: NUL-terminated strings of the loader's.
                unsafe { core::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned()
            }
        };
        let object = text(info.dli_fname);
        let object = if object.is_empty() {
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "the program".into())
        } else {
            object
        };
        // A program's own functions are not in its dynamic symbols: its symbol table says.
        let name = if info.dli_sname.is_null() {
            symbol_in_file(&object, address - info.dli_fbase as usize).unwrap_or_else(|| "?".into())
        } else {
            text(info.dli_sname)
        };
        format!("host code: `{name}` in {object}")
    };
    eprintln!(
        "rustomp virtual GPU: kernel {}: team {} thread {} calls through {address:#x}, which is {what}, not device code ({}): a GPU faults here with an illegal address; a host function pointer called in device code needs its function `declare target indirect` (and the pointer translated)",
        crate::current_kernel(),
        crate::CURRENT_TEAM.load(Ordering::Relaxed),
        team::thread(),
        crate::racecheck::describe_site(site),
    );
    std::process::abort()
}
