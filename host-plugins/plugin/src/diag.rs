//! Diagnostics shared by the front and every plugin, gated at run time like LLVM's:
//! `LIBOMPTARGET_INFO` is a bitmask of user-facing messages (`OMP_INFOTYPE_*`; the front's
//! `__tgt_set_info_flag` changes it for everyone), `LIBOMPTARGET_DEBUG` turns on tracing.
//! Both are read once, with one parser: decimal, or hexadecimal with `0x`; anything else is 0.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Once, OnceLock};

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
    /// Plugin-level events: images loaded, plugins without devices and why, each launch's
    /// geometry (`OMP_INFOTYPE_PLUGIN_KERNEL`).
    pub const PLUGIN: u32 = 0x10;
    /// Every copy between host and device (`OMP_INFOTYPE_DATA_TRANSFER`).
    pub const DATA_TRANSFER: u32 = 0x20;
    /// A mapped list item without a device counterpart (`OMP_INFOTYPE_EMPTY_MAPPING`).
    pub const EMPTY_MAPPING: u32 = 0x40;
}

static INFO: AtomicU32 = AtomicU32::new(0);
static DEBUG: AtomicU32 = AtomicU32::new(0);
static FROM_ENV: Once = Once::new();

/// A numeric setting as LLVM's runtime reads one: decimal (possibly negative, kept as its
/// two's complement) or `0x` hexadecimal; `None` for anything else.
pub fn parse_number(value: &str) -> Option<u64> {
    let v = value.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v
            .parse::<u64>()
            .ok()
            .or_else(|| v.parse::<i64>().ok().map(|n| n as u64)),
    }
}

/// A numeric environment variable, `None` when unset or unparsable.
pub fn env_u64(name: &str) -> Option<u64> {
    parse_number(&std::env::var(name).ok()?)
}

/// Reads `LIBOMPTARGET_INFO` and `LIBOMPTARGET_DEBUG` (once; later calls do nothing, so a flag
/// set with [`set_info_flags`] is not overwritten).
pub fn init_from_env() {
    FROM_ENV.call_once(|| {
        if let Some(v) = env_u64("LIBOMPTARGET_INFO") {
            INFO.store(v as u32, Ordering::Relaxed);
        }
        if let Some(v) = env_u64("LIBOMPTARGET_DEBUG") {
            DEBUG.store(v as u32, Ordering::Relaxed);
        }
    });
}

/// `__tgt_set_info_flag`.
pub fn set_info_flags(flags: u32) {
    init_from_env();
    INFO.store(flags, Ordering::Relaxed);
}

#[inline]
pub fn info_enabled(bit: u32) -> bool {
    init_from_env();
    INFO.load(Ordering::Relaxed) & bit != 0
}

#[inline]
pub fn debug_enabled() -> bool {
    init_from_env();
    DEBUG.load(Ordering::Relaxed) != 0
}

/// `omptarget device N info: ...` (the caller checked the bit).
pub fn info(device: impl fmt::Display, message: fmt::Arguments<'_>) {
    eprintln!("omptarget device {device} info: {message}");
}

/// A trace line of one plugin: `omptarget --> cuda: ...`.
pub fn debug(plugin: &str, message: fmt::Arguments<'_>) {
    if debug_enabled() {
        eprintln!("omptarget --> {plugin}: {message}");
    }
}

/// Writes `bytes` to the C library's stdout, so they keep their place among the program's own
/// `printf` output (device printf, `ompx_dump_mapping_tables`); `flush` empties the stream.
pub fn c_stdout(bytes: &[u8], flush: bool) {
    unsafe extern "C" {
        static mut stdout: *mut libc::FILE;
    }
    // SAFETY: glibc's `stdout` is initialized before any user code runs and never reassigned
    // by this runtime; fwrite of a live buffer, fflush of that stream.
    unsafe {
        let stream = stdout;
        libc::fwrite(
            bytes.as_ptr() as *const libc::c_void,
            1,
            bytes.len(),
            stream,
        );
        if flush {
            libc::fflush(stream);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_number;

    #[test]
    fn numbers_parse_as_llvm_reads_them() {
        assert_eq!(parse_number("16"), Some(16));
        assert_eq!(parse_number("0x10"), Some(16));
        assert_eq!(parse_number("0XfF"), Some(255));
        assert_eq!(parse_number(" -1 ").map(|v| v as u32), Some(u32::MAX));
        assert_eq!(parse_number("ff"), None);
        assert_eq!(parse_number("yes"), None);
    }
}

/// The environment variables LLVM's plugins read, read once per process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// `LIBOMPTARGET_STACK_SIZE`: bytes of stack per device thread.
    pub stack_size: Option<u64>,
    /// `LIBOMPTARGET_HEAP_SIZE`: bytes of device `malloc` heap.
    pub heap_size: Option<u64>,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic shared memory given to every launch.
    pub shared_memory_size: u32,
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG`: the device runtime's debug kind.
    pub device_rtl_debug: u32,
    /// `OMP_NUM_TEAMS`, `OMP_TEAMS_THREAD_LIMIT`: caps on teams and threads (0: none).
    pub num_teams: u32,
    pub teams_thread_limit: u32,
}

impl Settings {
    pub fn from_env() -> Self {
        let u32_of = |name| env_u64(name).map_or(0, |v| v.min(u64::from(u32::MAX)) as u32);
        Settings {
            stack_size: env_u64("LIBOMPTARGET_STACK_SIZE"),
            heap_size: env_u64("LIBOMPTARGET_HEAP_SIZE"),
            shared_memory_size: u32_of("LIBOMPTARGET_SHARED_MEMORY_SIZE"),
            device_rtl_debug: u32_of("LIBOMPTARGET_DEVICE_RTL_DEBUG"),
            num_teams: u32_of("OMP_NUM_TEAMS"),
            teams_thread_limit: u32_of("OMP_TEAMS_THREAD_LIMIT"),
        }
    }

    /// The process's settings.
    pub fn get() -> &'static Settings {
        static SETTINGS: OnceLock<Settings> = OnceLock::new();
        SETTINGS.get_or_init(Settings::from_env)
    }
}
