//! Fault injection and device-memory accounting, so tests can drive the front's error paths
//! through the CPU plugin and check what they leave behind.
//!
//! `RUSTOMP_HOST_FAULTS=OP:N[,OP:N...]` makes the `N`th operation of kind `OP` fail (counted from
//! 1, per process, across all devices of this plugin; each listed operation fails once, and an
//! `OP` may be listed more than once). Operations:
//!
//! | `OP`     | counts                                   | fails with                  |
//! |----------|------------------------------------------|-----------------------------|
//! | `alloc`  | `Device::alloc` (every kind of memory)   | `ErrorKind::OutOfMemory`    |
//! | `to`     | `Device::copy_to_device`                 | `ErrorKind::TransferFailed` |
//! | `from`   | `Device::copy_from_device`               | `ErrorKind::TransferFailed` |
//! | `within` | `Device::copy_within_device`             | `ErrorKind::TransferFailed` |
//! | `launch` | `LoadedImage::launch` (constructors and destructors of images included) | `ErrorKind::LaunchFailed` |
//!
//! A failed operation does nothing (no memory is allocated, no byte is copied, no code runs) and
//! returns the plugin's normal error, whose message names the device, the operation and its
//! number: `device 0 (host plugin): injected fault: host-to-device copy #2 (400 bytes) fails
//! (RUSTOMP_HOST_FAULTS: to:2)`. An empty value injects nothing. A malformed value is reported
//! once on stderr, naming the variable and the bad item, and the plugin then offers no devices
//! (the reason is the same text: `mandatory` stops with it, the default policy runs on the host).
//!
//! Accounting: while `RUSTOMP_HOST_FAULTS` is set (even empty) or `RUSTOMP_HOST_LEAK_CHECK=1`,
//! the plugin keeps every live allocation of each device (address and size) and prints, for each
//! device opened, one line on stderr when the process exits (after the program's
//! `__tgt_unregister_lib`):
//!
//! ```text
//! rustomp host plugin: device 0: 0 allocations (0 bytes) outstanding
//! ```
//!
//! and the same line ending in `outstanding (at abort)` when the process aborts (a fatal offload
//! error ends it with SIGABRT). A `free` of an address that is not a live allocation of that
//! device (a double free) is refused with an error and a line on stderr instead of reaching
//! `free(3)`.

use crate::stderr_line::{self, Line};
use rustomp_plugin::{ErrorKind, OffloadError, Result};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};

/// The variable naming the operations that fail.
pub const FAULTS_VAR: &str = "RUSTOMP_HOST_FAULTS";
/// The variable that turns the allocation report on without injecting anything.
pub const LEAK_CHECK_VAR: &str = "RUSTOMP_HOST_LEAK_CHECK";

/// A kind of plugin operation that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Alloc,
    To,
    From,
    Within,
    Launch,
}

impl Op {
    const ALL: [Op; 5] = [Op::Alloc, Op::To, Op::From, Op::Within, Op::Launch];

    /// The spelling in `RUSTOMP_HOST_FAULTS`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Alloc => "alloc",
            Op::To => "to",
            Op::From => "from",
            Op::Within => "within",
            Op::Launch => "launch",
        }
    }

    /// The operation in messages.
    fn describe(self) -> &'static str {
        match self {
            Op::Alloc => "allocation",
            Op::To => "host-to-device copy",
            Op::From => "device-to-host copy",
            Op::Within => "device-to-device copy",
            Op::Launch => "kernel launch",
        }
    }

    fn error_kind(self) -> ErrorKind {
        match self {
            Op::Alloc => ErrorKind::OutOfMemory,
            Op::To | Op::From | Op::Within => ErrorKind::TransferFailed,
            Op::Launch => ErrorKind::LaunchFailed,
        }
    }
}

/// Parses the value of `RUSTOMP_HOST_FAULTS`: `OP:N` items separated by commas (spaces around
/// items allowed, empty value or items ignored). `Err` names the bad item and why.
pub fn parse(value: &str) -> std::result::Result<Vec<(Op, u64)>, String> {
    let mut faults = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((op, n)) = item.split_once(':') else {
            return Err(format!("bad item '{item}': expected OP:N, e.g. alloc:3"));
        };
        let op = op.trim();
        let Some(op) = Op::ALL.into_iter().find(|o| o.name() == op) else {
            let known: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
            return Err(format!(
                "bad item '{item}': unknown operation '{op}' (one of {})",
                known.join(", ")
            ));
        };
        match n.trim().parse::<u64>() {
            Ok(n) if n >= 1 => faults.push((op, n)),
            _ => {
                return Err(format!(
                    "bad item '{item}': '{}' is not an operation number (1 for the first {}, 2 for the second, ...)",
                    n.trim(),
                    op.name()
                ))
            }
        }
    }
    Ok(faults)
}

struct Settings {
    /// The faults to inject, or why the variable is malformed.
    faults: std::result::Result<Vec<(Op, u64)>, String>,
    accounting: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Operations done so far, per `Op` (only counted while faults are configured).
static COUNTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

/// Neither faults nor accounting are configured (the usual case): every hook returns at once.
/// Inlined into the plugin's operations, so that a hook costs them a load and a compare.
#[inline]
fn idle() -> bool {
    SETTINGS.get().is_some_and(|s| !s.accounting)
}

fn settings() -> &'static Settings {
    SETTINGS.get_or_init(|| {
        let value = std::env::var(FAULTS_VAR).ok();
        let faults = match &value {
            None => Ok(Vec::new()),
            Some(v) => parse(v).map_err(|why| format!("{FAULTS_VAR}={v}: {why}")),
        };
        if let Err(why) = &faults {
            eprintln!("rustomp host plugin: {why}; the host plugin offers no devices");
        }
        let leak_check = std::env::var(LEAK_CHECK_VAR).is_ok_and(|v| !v.is_empty() && v != "0");
        Settings {
            faults,
            accounting: value.is_some() || leak_check,
        }
    })
}

/// Why the plugin offers no devices: a malformed `RUSTOMP_HOST_FAULTS`.
pub fn configuration_error() -> Option<&'static str> {
    settings().faults.as_ref().err().map(String::as_str)
}

/// Reads the settings and, when accounting, arranges the reports at exit and at abort. Called
/// when the plugin is constructed, which the front does while the program registers its images:
/// before the program arranges its `__tgt_unregister_lib` at exit, so the report comes after it.
pub fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if !settings().accounting {
        return;
    }
    ONCE.call_once(|| {
        // SAFETY: a plain function without arguments.
        unsafe { libc::atexit(report_at_exit) };
        // SAFETY: a zeroed sigaction with our handler and an empty mask is valid; SA_RESETHAND
        // puts the default action back, so abort ends the process after the report.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction =
                report_at_abort as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
        }
    });
}

/// Fails the operation when it is the one `RUSTOMP_HOST_FAULTS` names; `detail` says what it
/// was asked to do ("400 bytes").
#[inline]
pub fn inject(op: Op, device: usize, detail: impl FnOnce() -> String) -> Result<()> {
    if idle() {
        return Ok(());
    }
    inject_configured(op, device, detail)
}

fn inject_configured(op: Op, device: usize, detail: impl FnOnce() -> String) -> Result<()> {
    let Ok(faults) = &settings().faults else {
        return Ok(());
    };
    if faults.is_empty() {
        return Ok(());
    }
    let n = COUNTS[op as usize].fetch_add(1, Ordering::Relaxed) + 1;
    if !faults.contains(&(op, n)) {
        return Ok(());
    }
    Err(OffloadError::new(
        op.error_kind(),
        format!(
            "device {device} (host plugin): injected fault: {} #{n} ({}) fails ({FAULTS_VAR}: {}:{n})",
            op.describe(),
            detail(),
            op.name()
        ),
    ))
}

/// Live allocations of one device: address → size.
#[derive(Default)]
struct Live {
    sizes: HashMap<usize, usize>,
    bytes: u64,
}

/// Per device (global number), while accounting.
static LIVE: Mutex<BTreeMap<usize, Live>> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, BTreeMap<usize, Live>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A device was opened: it gets a line in the report even if it never allocates.
pub fn opened(device: usize) {
    if settings().accounting {
        live().entry(device).or_default();
    }
}

/// `bytes` at `ptr` were allocated on `device`.
#[inline]
pub fn allocated(device: usize, ptr: usize, bytes: usize) {
    if !idle() {
        account_allocation(device, ptr, bytes);
    }
}

fn account_allocation(device: usize, ptr: usize, bytes: usize) {
    if !settings().accounting {
        return;
    }
    let mut live = live();
    let tally = live.entry(device).or_default();
    tally.sizes.insert(ptr, bytes);
    tally.bytes += bytes as u64;
}

/// `ptr` is about to be freed on `device`: `Err` when it is not a live allocation of it (it must
/// then not reach `free(3)`).
#[inline]
pub fn freeing(device: usize, ptr: usize) -> Result<()> {
    if idle() {
        return Ok(());
    }
    account_free(device, ptr)
}

fn account_free(device: usize, ptr: usize) -> Result<()> {
    if !settings().accounting {
        return Ok(());
    }
    let mut live = live();
    let tally = live.entry(device).or_default();
    match tally.sizes.remove(&ptr) {
        Some(bytes) => {
            tally.bytes -= bytes as u64;
            Ok(())
        }
        None => {
            let message = format!(
                "device {device} (host plugin): free of {ptr:#x}, which is not a live allocation of this device (freed twice, or never allocated here)"
            );
            eprintln!("rustomp host plugin: {message}");
            Err(OffloadError::new(ErrorKind::InvalidArgument, message))
        }
    }
}

/// One line per device opened. Allocation-free: runs in the SIGABRT handler too, where it does
/// not wait for the lock (`blocking` false).
fn report(suffix: &str, blocking: bool) {
    use std::fmt::Write;
    let live = match LIVE.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        Err(TryLockError::WouldBlock) if blocking => live(),
        Err(TryLockError::WouldBlock) => {
            stderr_line::write_stderr(b"rustomp host plugin: allocation report unavailable (an allocation was in progress)\n");
            return;
        }
    };
    for (device, tally) in live.iter() {
        // The abort handler must not allocate.
        let mut line = Line::<160>::new();
        let _ = writeln!(
            line,
            "rustomp host plugin: device {device}: {} allocations ({} bytes) outstanding{suffix}",
            tally.sizes.len(),
            tally.bytes
        );
        line.write_to_stderr();
    }
}

extern "C" fn report_at_exit() {
    report("", true);
}

extern "C" fn report_at_abort(_signal: libc::c_int) {
    report(" (at abort)", false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_and_names_the_bad_one() {
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(
            parse("alloc:3, to:2,from:1,launch:1,within:4,alloc:5"),
            Ok(vec![
                (Op::Alloc, 3),
                (Op::To, 2),
                (Op::From, 1),
                (Op::Launch, 1),
                (Op::Within, 4),
                (Op::Alloc, 5)
            ])
        );
        let unknown = parse("alloc:1,copy:2").unwrap_err();
        assert!(
            unknown.contains("'copy:2'") && unknown.contains("unknown operation 'copy'"),
            "{unknown}"
        );
        let zero = parse("to:0").unwrap_err();
        assert!(
            zero.contains("'to:0'") && zero.contains("'0' is not an operation number"),
            "{zero}"
        );
        let word = parse("from:x").unwrap_err();
        assert!(word.contains("'from:x'"), "{word}");
        let bare = parse("alloc").unwrap_err();
        assert!(
            bare.contains("'alloc'") && bare.contains("expected OP:N"),
            "{bare}"
        );
    }

    #[test]
    fn report_lines_fit_the_buffer() {
        use std::fmt::Write;
        let mut line = Line::<160>::new();
        let ok = writeln!(
            line,
            "rustomp host plugin: device {}: {} allocations ({} bytes) outstanding (at abort)",
            usize::MAX,
            usize::MAX,
            u64::MAX
        );
        assert!(ok.is_ok(), "{}", String::from_utf8_lossy(line.as_bytes()));
    }
}
