//! Diagnostics: `LIBOMPTARGET_INFO` (user-facing bitmask), `LIBOMPTARGET_DEBUG` (tracing), and
//! fatal errors that name the construct's source location.

use rustomp_abi::Ident;
use std::ffi::CStr;

// The flags and their parser are shared with the plugins (one `LIBOMPTARGET_INFO` for all).
pub use rustomp_plugin::diag::{debug_enabled, info_enabled, infotype, init_from_env, set_info_flags};

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
