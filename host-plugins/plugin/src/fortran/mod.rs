//! flang's runtime as the plugins meet it: the program's own (found in the process) and, for
//! host offload, the image's copy.
//!
//! - Output order of Fortran `print` in host-offload kernels. A flang-22 x86_64 image carries
//!   its own copy of flang's runtime, whose unit 6 buffers apart from the program's: a region's
//!   `print` came out at exit, after everything the program printed later. So around a kernel
//!   of an image that has the runtime, the CPU plugin flushes unit 6 of the program's runtime
//!   before (what the program printed comes first) and of the image's after (what the region
//!   printed comes before what the program prints next): program order, as C's `printf` has it
//!   through the one libc.
//! - Fortran output from GPU code ([`output`]): statements the device recorded are replayed
//!   into the program's runtime.

pub mod output;

use core::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

const BEGIN_FLUSH: &CStr = c"_FortranAioBeginFlush";
const END_STATEMENT: &CStr = c"_FortranAioEndIoStatement";
/// Standard output's unit.
const OUTPUT_UNIT: i32 = 6;

/// One copy of flang's runtime: `Cookie BeginFlush(int unit, const char *file, int line)` and
/// `int EndIoStatement(Cookie)`.
#[derive(Clone, Copy)]
pub struct FortranRuntime {
    begin_flush: BeginFlush,
    end_statement: EndStatement,
}
type BeginFlush = unsafe extern "C" fn(i32, *const c_char, i32) -> *mut c_void;
type EndStatement = unsafe extern "C" fn(*mut c_void) -> i32;

impl FortranRuntime {
    /// The runtime whose entry points `lookup` finds, if both are there.
    pub fn find(lookup: impl Fn(&CStr) -> Option<*mut c_void>) -> Option<FortranRuntime> {
        let (begin, end) = (lookup(BEGIN_FLUSH)?, lookup(END_STATEMENT)?);
        // SAFETY: flang's runtime entry points with these signatures (flang/Runtime/io-api.h).
        unsafe {
            Some(FortranRuntime {
                begin_flush: entry_point(begin),
                end_statement: entry_point(end),
            })
        }
    }

    /// The program's own runtime, when it is a Fortran program (and links flang's `FLUSH`).
    pub fn program() -> Option<FortranRuntime> {
        FortranRuntime::find(program_entry)
    }

    /// `flush(6)`: writes what unit 6 buffered.
    pub fn flush_output(&self) {
        // SAFETY: a complete FLUSH statement on a preconnected unit; the runtime owns the
        // cookie between the two calls.
        unsafe {
            let cookie = (self.begin_flush)(OUTPUT_UNIT, c"rustomp host plugin".as_ptr(), 0);
            (self.end_statement)(cookie);
        }
    }
}

/// Every flang runtime entry point the plugins call in the program's runtime: looked up once.
const PROGRAM_ENTRY_POINTS: [&CStr; 17] = [
    BEGIN_FLUSH,
    END_STATEMENT,
    c"_FortranAioBeginExternalListOutput",
    c"_FortranAioBeginExternalFormattedOutput",
    c"_FortranAioEnableHandlers",
    c"_FortranAioOutputInteger8",
    c"_FortranAioOutputInteger16",
    c"_FortranAioOutputInteger32",
    c"_FortranAioOutputInteger64",
    c"_FortranAioOutputReal32",
    c"_FortranAioOutputReal64",
    c"_FortranAioOutputComplex32",
    c"_FortranAioOutputComplex64",
    c"_FortranAioOutputLogical",
    c"_FortranAioOutputAscii",
    c"_FortranAioOutputCharacter",
    c"_FortranAioOutputDescriptor",
];

/// The address of the program's flang runtime entry point `name` (one of
/// [`PROGRAM_ENTRY_POINTS`]), if the program links it: a static program holds only the members
/// of flang's runtime its own code uses (list-directed output and formatted output are apart).
pub fn program_entry(name: &CStr) -> Option<*mut c_void> {
    static FOUND: OnceLock<Vec<Option<usize>>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        program_symbols(&PROGRAM_ENTRY_POINTS)
            .into_iter()
            .map(|a| a.map(|a| a as usize))
            .collect()
    });
    let i = PROGRAM_ENTRY_POINTS.iter().position(|n| *n == name)?;
    found[i].map(|a| a as *mut c_void)
}

/// A function's address as the function pointer type `F`.
///
/// # Safety
/// `address` is a function of type `F`.
pub(crate) unsafe fn entry_point<F: Copy>(address: *mut c_void) -> F {
    const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut c_void>()) };
    // SAFETY: a function pointer has an address's size (checked) and the caller vouches for
    // the type.
    unsafe { core::mem::transmute_copy::<*mut c_void, F>(&address) }
}

/// The addresses of the program's own functions `names` (flang's runtime entry points): exported
/// (a shared flang runtime), or else, as flang links its runtime, static in the executable and
/// found in its symbol table (not when the executable is stripped).
fn program_symbols(names: &[&CStr]) -> Vec<Option<*mut c_void>> {
    let exported: Vec<Option<*mut c_void>> = names
        .iter()
        .map(|name| {
            // SAFETY: dlsym with a NUL-terminated name in the default scope.
            let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!address.is_null() && !in_our_libraries(address)).then_some(address)
        })
        .collect();
    if exported.iter().all(Option::is_some) {
        return exported;
    }
    match in_the_executable(names) {
        Some(in_file) => exported
            .into_iter()
            .zip(in_file)
            .map(|(e, f)| e.or(f))
            .collect(),
        None => exported,
    }
}

/// Whether `address` lies in one of rustomp's own libraries (the device runtime's GPU entry
/// points of the same names must never stand in for the program's flang runtime).
fn in_our_libraries(address: *mut c_void) -> bool {
    // SAFETY: an all-zero Dl_info is valid; dladdr only fills it.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr reads no memory at `address`; `info` outlives the call.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let file = path.rsplit('/').next().unwrap_or_default();
    file.starts_with("librustomp") || file.starts_with("libomptarget")
}

/// The symbols' values in the executable's symbol table, moved by where the executable is
/// loaded (the first object `dl_iterate_phdr` reports).
fn in_the_executable(names: &[&CStr]) -> Option<Vec<Option<*mut c_void>>> {
    let bytes = std::fs::read("/proc/self/exe").ok()?;
    let names: Vec<&str> = names
        .iter()
        .map(|n| n.to_str().unwrap_or_default())
        .collect();
    let values = crate::image::elf_symbol_values(&bytes, &names);
    let bias = executable_load_bias()?;
    Some(
        values
            .into_iter()
            .map(|v| v.map(|v| (v + bias) as usize as *mut c_void))
            .collect(),
    )
}

fn executable_load_bias() -> Option<u64> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        out: *mut c_void,
    ) -> i32 {
        // SAFETY: dl_iterate_phdr passes a valid info and our `out`.
        unsafe { *(out as *mut u64) = (*info).dlpi_addr };
        1 // the executable comes first: stop
    }
    let mut bias = 0u64;
    // SAFETY: the callback writes one u64 to `bias`, which outlives the call.
    let visited =
        unsafe { libc::dl_iterate_phdr(Some(first), &mut bias as *mut u64 as *mut c_void) };
    (visited == 1).then_some(bias)
}
