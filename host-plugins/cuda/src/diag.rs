//! The plugin's own diagnostics, gated at run time like LLVM's: `LIBOMPTARGET_INFO` bit 0x10
//! (`OMP_INFOTYPE_PLUGIN_KERNEL`) prints each launch's geometry, `LIBOMPTARGET_DEBUG` traces
//! driver-level steps.

use std::fmt;
use std::sync::OnceLock;

/// `OMP_INFOTYPE_PLUGIN_KERNEL` of LLVM's `Shared/Debug.h`.
pub const PLUGIN_KERNEL: u32 = 0x10;

struct Flags {
    info: u32,
    debug: bool,
}

fn parse(value: &str) -> Option<u32> {
    let v = value.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse::<i64>().ok().map(|n| n as u32),
    }
}

fn flags() -> &'static Flags {
    static FLAGS: OnceLock<Flags> = OnceLock::new();
    FLAGS.get_or_init(|| Flags {
        info: std::env::var("LIBOMPTARGET_INFO").ok().and_then(|v| parse(&v)).unwrap_or(0),
        debug: std::env::var("LIBOMPTARGET_DEBUG").ok().and_then(|v| parse(&v)).is_some_and(|v| v != 0),
    })
}

pub fn info_enabled(bit: u32) -> bool {
    flags().info & bit != 0
}

pub fn info(device: usize, message: fmt::Arguments<'_>) {
    eprintln!("omptarget device {device} info: {message}");
}

pub fn debug(message: fmt::Arguments<'_>) {
    if flags().debug {
        eprintln!("omptarget --> cuda: {message}");
    }
}

/// A numeric environment variable (decimal or 0x hex), `None` when unset or unparsable.
pub fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let v = value.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn info_masks_parse_as_llvm_reads_them() {
        assert_eq!(parse("16"), Some(16));
        assert_eq!(parse("0x10"), Some(16));
        assert_eq!(parse(" -1 "), Some(u32::MAX));
        assert_eq!(parse("yes"), None);
    }
}
