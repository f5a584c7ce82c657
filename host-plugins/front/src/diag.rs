//! Diagnostics: `LIBOMPTARGET_INFO` (user-facing bitmask), `LIBOMPTARGET_DEBUG` (tracing), and
//! fatal errors that name the construct's source location.

use rustomp_abi::Ident;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// `LIBOMPTARGET_INFO` bits, LLVM's `OMP_INFOTYPE_*` values.
pub mod infotype {
    /// Each launch: kernel, argument count, geometry, location.
    pub const KERNEL_ARGS: u32 = 0x1;
    /// A map clause found its data already present.
    pub const MAPPING_EXISTS: u32 = 0x2;
    /// The mapping table when a device is torn down.
    pub const DUMP_TABLE: u32 = 0x4;
    /// An entry was created or removed.
    pub const MAPPING_CHANGED: u32 = 0x8;
    /// Plugin-level events: images loaded, plugins without devices and why.
    pub const PLUGIN: u32 = 0x10;
}

static INFO: AtomicU32 = AtomicU32::new(0);
static DEBUG: AtomicU32 = AtomicU32::new(0);

pub fn init_from_env() {
    let parse = |name: &str| {
        std::env::var(name).ok().and_then(|v| {
            let v = v.trim();
            v.parse::<i64>().ok().or_else(|| i64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        })
    };
    if let Some(v) = parse("LIBOMPTARGET_INFO") {
        INFO.store(v as u32, Ordering::Relaxed);
    }
    if let Some(v) = parse("LIBOMPTARGET_DEBUG") {
        DEBUG.store(v as u32, Ordering::Relaxed);
    }
}

pub fn set_info_flags(flags: u32) {
    INFO.store(flags, Ordering::Relaxed);
}

pub fn info_enabled(bit: u32) -> bool {
    INFO.load(Ordering::Relaxed) & bit != 0
}

pub fn debug_enabled() -> bool {
    DEBUG.load(Ordering::Relaxed) != 0
}

macro_rules! info {
    ($bit:expr, $device:expr, $($arg:tt)*) => {
        if $crate::diag::info_enabled($bit) {
            eprintln!("omptarget device {} info: {}", $device, format_args!($($arg)*));
        }
    };
}
macro_rules! debug {
    ($($arg:tt)*) => {
        if $crate::diag::debug_enabled() {
            eprintln!("omptarget --> {}", format_args!($($arg)*));
        }
    };
}
pub(crate) use {debug, info};

/// A construct's source location, formatted (`file:line:column in function`, or "unknown
/// location") only when a message prints it: every construct carries one, few report it.
#[derive(Clone, Copy)]
pub struct Location(*const Ident);

pub fn location(ident: *const Ident) -> Location {
    Location(ident)
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_null() {
            return f.write_str("unknown location");
        }
        // SAFETY: clang passes a valid ident_t whose psource is null or a NUL-terminated string.
        let psource = unsafe { (*self.0).psource };
        if psource.is_null() {
            return f.write_str("unknown location");
        }
        // SAFETY: as above.
        let text = unsafe { CStr::from_ptr(psource) }.to_string_lossy();
        // ";file;function;line;column;;"
        let mut parts = text.split(';').skip(1);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(file), Some(function), Some(line), Some(column)) if file != "unknown" => {
                write!(f, "{file}:{line}:{column} in {function}")
            }
            _ => f.write_str("unknown location"),
        }
    }
}

/// Reports an error that ends the program (mandatory offload, or a broken map clause).
pub fn fatal(message: &str) -> ! {
    eprintln!("omptarget fatal error: {message}");
    eprintln!("omptarget fatal error 1: failure of target construct while offloading is mandatory");
    // Not exit(): on a libomp hidden helper thread (a `nowait` construct) libomp's exit handler
    // waits for the helper threads, this one included, and the process never ends. The user's
    // buffered output is flushed first so that none of it is lost.
    // SAFETY: fflush(NULL) flushes every C stream; _exit ends the process at once.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(1)
    }
}

pub fn error(message: &str) {
    eprintln!("omptarget error: {message}");
}
