//! Diagnostics: `LIBOMPTARGET_INFO` (user-facing bitmask), `LIBOMPTARGET_DEBUG` (tracing), and
//! fatal errors that name the construct's source location.

use rustomp_abi::Ident;
use std::ffi::{c_char, CStr};

// The flags and their parser are shared with the plugins (one `LIBOMPTARGET_INFO` for all).
pub use rustomp_plugin::diag::{
    debug_enabled, info_enabled, infotype, init_from_env, set_info_flags,
};

macro_rules! info {
    ($bit:expr, $device:expr, $($arg:tt)*) => {
        if $crate::diag::info_enabled($bit) {
            rustomp_plugin::diag::info($device, format_args!($($arg)*));
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

/// A C string clang emitted (`ident_t::psource`, a map name), `None` when null.
fn c_text(text: *const c_char) -> Option<String> {
    (!text.is_null()).then(|| {
        // SAFETY: clang's strings are null or NUL-terminated static data.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    })
}

/// LLVM's `SourceInfo`: what a `;name-or-file;...;line;column;;` string says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    pub name: String,
    /// The file name without its directory.
    pub file: String,
    pub line: i32,
    pub column: i32,
}

impl SourceInfo {
    fn from_fields(name: &str, file: &str, line: &str, column: &str) -> Self {
        SourceInfo {
            name: name.to_string(),
            file: file.rsplit('/').next().unwrap_or(file).to_string(),
            line: line.trim().parse().unwrap_or(0),
            column: column.trim().parse().unwrap_or(0),
        }
    }

    fn unknown() -> Self {
        Self::from_fields("unknown", "unknown", "0", "0")
    }

    /// A construct's location: `;file;function;line;column;;`.
    pub fn of_ident(ident: *const Ident) -> Self {
        // SAFETY: clang passes null or a valid ident_t.
        let text = (!ident.is_null())
            .then(|| unsafe { (*ident).psource })
            .and_then(c_text);
        let Some(text) = text else {
            return Self::unknown();
        };
        let f: Vec<&str> = text.split(';').skip(1).collect();
        match f.as_slice() {
            [file, function, line, column, ..] => Self::from_fields(function, file, line, column),
            _ => Self::unknown(),
        }
    }

    /// A map item's or a table entry's name: `;expression;file;line;column;;`, or a plain
    /// symbol name (declare-target globals).
    pub fn of_name(name: *const c_char) -> Self {
        let Some(text) = c_text(name) else {
            return Self::unknown();
        };
        if !text.contains(';') {
            return Self::from_fields(&text, "unknown", "0", "0");
        }
        let f: Vec<&str> = text.split(';').skip(1).collect();
        match f.as_slice() {
            [name, file, line, column, ..] => Self::from_fields(name, file, line, column),
            _ => Self::unknown(),
        }
    }

    /// The location LLVM gives its own dumps (at exit, `ompx_dump_mapping_tables`).
    pub fn libomptarget() -> Self {
        Self::from_fields("libomptarget", "libomptarget", "0", "0")
    }

    pub fn is_available(&self) -> bool {
        self.line != 0 || self.column != 0
    }
}

/// LLVM's `getNameFromMapping`: the expression of a map name, or "unknown".
pub fn map_name(name: *const c_char) -> String {
    match c_text(name) {
        None => "unknown".into(),
        Some(text) => match text.split(';').nth(1) {
            Some(expression) if text.starts_with(';') => expression.to_string(),
            _ => text,
        },
    }
}

impl Location {
    pub fn source(&self) -> SourceInfo {
        SourceInfo::of_ident(self.0)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = self.source();
        if source.file == "unknown" {
            return f.write_str("unknown location");
        }
        write!(
            f,
            "{}:{}:{} in {}",
            source.file, source.line, source.column, source.name
        )
    }
}

/// Ends the process as LLVM's `FATAL_MESSAGE` does: `omptarget fatal error N: ...`, then
/// SIGABRT. The user's buffered output is flushed first so that none of it is lost, and
/// `abort` runs no exit handlers (on a libomp hidden helper thread, a `nowait` construct,
/// libomp's exit handler would wait for the helper threads, this one included, forever).
pub fn fatal(number: i32, message: &str) -> ! {
    eprintln!("omptarget fatal error {number}: {message}");
    // SAFETY: fflush(NULL) flushes every C stream; abort ends the process at once.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::abort()
    }
}

/// LLVM's `REPORT`: `omptarget error: ...`.
pub fn error(message: &str) {
    eprintln!("omptarget error: {message}");
}

/// LLVM's `MESSAGE`: `omptarget message: ...`.
pub fn message(message: std::fmt::Arguments<'_>) {
    eprintln!("omptarget message: {message}");
}

/// A line on the C library's stdout (where LLVM's `DUMP_INFO(toStdOut)` writes).
pub fn stdout_line(text: std::fmt::Arguments<'_>) {
    rustomp_plugin::diag::c_stdout(format!("{text}\n").as_bytes(), false);
}

/// A pointer as LLVM prints one (`DPxMOD`: `0x` and 16 hex digits).
pub struct Ptr(pub usize);

impl std::fmt::Display for Ptr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_locations_read_as_llvm_reads_them() {
        let name = c";a[2:4];/home/u/b.c;4;26;;";
        assert_eq!(map_name(name.as_ptr()), "a[2:4]");
        let info = SourceInfo::of_name(name.as_ptr());
        assert_eq!(
            (
                info.name.as_str(),
                info.file.as_str(),
                info.line,
                info.column
            ),
            ("a[2:4]", "b.c", 4, 26)
        );
        assert_eq!(map_name(std::ptr::null()), "unknown");
        assert_eq!(
            map_name(c"g_decl_tgt_ref_ptr".as_ptr()),
            "g_decl_tgt_ref_ptr"
        );
        let global = SourceInfo::of_name(c"counter".as_ptr());
        assert_eq!(
            (global.name.as_str(), global.file.as_str(), global.line),
            ("counter", "unknown", 0)
        );
        assert!(!global.is_available());
        let ident = Ident {
            reserved_1: 0,
            flags: 0,
            reserved_2: 0,
            reserved_3: 0,
            psource: c";/tmp/p1.c;main;10;1;;".as_ptr(),
        };
        let at = SourceInfo::of_ident(&ident);
        assert_eq!(
            (at.file.as_str(), at.name.as_str(), at.line, at.column),
            ("p1.c", "main", 10, 1)
        );
        assert_eq!(location(&ident).to_string(), "p1.c:10:1 in main");
        assert_eq!(location(std::ptr::null()).to_string(), "unknown location");
        assert_eq!(Ptr(0x7ffd2e09ec90).to_string(), "0x00007ffd2e09ec90");
    }
}
