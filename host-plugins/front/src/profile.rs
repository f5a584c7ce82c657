//! What a run did, for its user: a timeline and a summary.
//!
//! - `LIBOMPTARGET_PROFILE=<file.json>` (LLVM's variable; its library writes a time-trace of its
//!   own there) writes a Chrome trace: a `traceEvents` array of complete events (`"ph":"X"`,
//!   `ts` and `dur` in microseconds since the runtime started) for image loads, kernel launches
//!   (name, teams, threads), transfers (direction, bytes), allocations and frees, and the
//!   data-environment phases of each construct. Perfetto and `chrome://tracing` open it.
//! - `RUSTOMP_SUMMARY=1` prints, when the program exits, one table per device used: kernels with
//!   their count and total and average time, bytes moved each way, the allocations' high-water
//!   mark and the mapping table's peak size. `RUSTOMP_SUMMARY=<file>` writes it to a file.
//!
//! Both observe the devices through [`Observed`], a `Device` that wraps the plugin's and records
//! each call. Without either variable no device is wrapped and nothing is recorded.

use crate::diag;
use rustomp_plugin::{
    layout, AllocKind, Device, DeviceGlobal, ImageInfo, KernelHandle, LaunchConfig, LoadedImage,
    Result,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::fmt::Write as _;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The variable naming the trace file (LLVM's).
pub const PROFILE_VAR: &str = "LIBOMPTARGET_PROFILE";
/// The variable asking for the summary: `1` for stderr, else a file name.
pub const SUMMARY_VAR: &str = "RUSTOMP_SUMMARY";

/// One complete event of the trace.
struct Event {
    name: String,
    category: &'static str,
    start: Duration,
    duration: Duration,
    thread: i64,
    args: Vec<(&'static str, String)>,
}

/// What the summary counts for one device.
#[derive(Default)]
struct DeviceStats {
    description: String,
    /// Kernel name → (launches, total time).
    kernels: BTreeMap<String, (u64, Duration)>,
    to_device: (u64, u64),
    from_device: (u64, u64),
    within_device: (u64, u64),
    allocations: u64,
    live_bytes: u64,
    peak_bytes: u64,
    /// Sizes of the live allocations, to count frees.
    live: HashMap<usize, u64>,
    table_peak: usize,
}

pub struct Recorder {
    start: Instant,
    trace: Option<(String, Mutex<Vec<Event>>)>,
    summary: Option<String>,
    devices: Mutex<BTreeMap<usize, DeviceStats>>,
}

static RECORDER: OnceLock<Option<Recorder>> = OnceLock::new();

/// The recorder, when `LIBOMPTARGET_PROFILE` or `RUSTOMP_SUMMARY` asks for one. The first call
/// (the runtime's start) arranges the output at exit.
#[inline]
pub fn recorder() -> Option<&'static Recorder> {
    match RECORDER.get() {
        Some(recorder) => recorder.as_ref(),
        None => start_recorder(),
    }
}

#[cold]
fn start_recorder() -> Option<&'static Recorder> {
    RECORDER
        .get_or_init(|| {
            let set = |var: &str| {
                std::env::var(var)
                    .ok()
                    .filter(|v| !v.is_empty() && v != "0")
            };
            let trace = set(PROFILE_VAR).map(|path| (path, Mutex::new(Vec::new())));
            let summary = set(SUMMARY_VAR);
            if trace.is_none() && summary.is_none() {
                return None;
            }
            // SAFETY: a plain function without arguments. Registered while the program registers
            // its images, before clang's code registers their unregistration: it runs after it.
            unsafe { libc::atexit(write_at_exit) };
            Some(Recorder {
                start: Instant::now(),
                trace,
                summary,
                devices: Mutex::new(BTreeMap::new()),
            })
        })
        .as_ref()
}

extern "C" fn write_at_exit() {
    // No panic may leave an atexit handler.
    let _ = std::panic::catch_unwind(|| {
        if let Some(recorder) = recorder() {
            recorder.finish();
        }
    });
}

/// Wraps a device's backend when something is recorded.
pub fn observe(device: usize, backend: Box<dyn Device>) -> Box<dyn Device> {
    match recorder() {
        Some(recorder) => {
            recorder.stats(device, |s| s.description = backend.describe());
            Box::new(Observed {
                device,
                inner: backend,
                recorder,
            })
        }
        None => backend,
    }
}

/// Runs `f` as one data-environment phase of a construct (`name`: "map in", ...) on `device`.
#[inline]
pub fn phase<T>(device: usize, name: &'static str, items: usize, f: impl FnOnce() -> T) -> T {
    let Some(recorder) = recorder() else {
        return f();
    };
    let start = Instant::now();
    let result = f();
    recorder.event(
        name.to_string(),
        "data",
        start,
        vec![("device", device.to_string()), ("items", items.to_string())],
    );
    result
}

/// Records the size the mapping table of `device` reached.
#[inline]
pub fn table_size(device: usize, entries: usize) {
    if let Some(recorder) = recorder() {
        recorder.stats(device, |s| s.table_peak = s.table_peak.max(entries));
    }
}

fn thread_id() -> i64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as i64 }
}

impl Recorder {
    fn stats(&self, device: usize, f: impl FnOnce(&mut DeviceStats)) {
        if self.summary.is_some() {
            f(self
                .devices
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(device)
                .or_default());
        }
    }

    fn event(
        &self,
        name: String,
        category: &'static str,
        start: Instant,
        args: Vec<(&'static str, String)>,
    ) {
        if let Some((_, events)) = &self.trace {
            let event = Event {
                name,
                category,
                start: start.saturating_duration_since(self.start),
                duration: start.elapsed(),
                thread: thread_id(),
                args,
            };
            events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
        }
    }

    fn finish(&self) {
        if let Some((path, events)) = &self.trace {
            let events = events.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = std::fs::write(path, chrome_trace(&events)) {
                diag::error(&format!(
                    "{PROFILE_VAR}={path}: cannot write the trace: {e}"
                ));
            }
        }
        if let Some(target) = &self.summary {
            let text = summary(&self.devices.lock().unwrap_or_else(|e| e.into_inner()));
            if target == "1" {
                eprint!("{text}");
            } else if let Err(e) = std::fs::write(target, text) {
                diag::error(&format!(
                    "{SUMMARY_VAR}={target}: cannot write the summary: {e}"
                ));
            }
        }
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn micros(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e6)
}

fn chrome_trace(events: &[Event]) -> String {
    let pid = std::process::id();
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    for (i, e) in events.iter().enumerate() {
        let args: Vec<String> = e
            .args
            .iter()
            .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
            .collect();
        let _ = writeln!(
            out,
            "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{},\"args\":{{{}}}}}{}",
            json_string(&e.name),
            e.category,
            micros(e.start),
            micros(e.duration),
            e.thread,
            args.join(","),
            if i + 1 < events.len() { "," } else { "" }
        );
    }
    out.push_str("]}\n");
    out
}

/// `1536` → `1.5 KiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn summary(devices: &BTreeMap<usize, DeviceStats>) -> String {
    let mut out = format!(
        "rustomp run summary ({SUMMARY_VAR}): {} device(s) used\n",
        devices.len()
    );
    for (id, s) in devices {
        // The plugin's description starts with "device N".
        let _ = if s.description.starts_with(&format!("device {id}")) {
            writeln!(out, "{}", s.description)
        } else {
            writeln!(out, "device {id}: {}", s.description)
        };
        let name_width = s.kernels.keys().map(String::len).max().unwrap_or(0).max(6);
        let _ = writeln!(
            out,
            "  {:name_width$}  {:>8}  {:>12}  {:>12}",
            "kernel", "launches", "total ms", "average us"
        );
        for (name, (count, total)) in &s.kernels {
            let average = total.as_secs_f64() * 1e6 / (*count).max(1) as f64;
            let _ = writeln!(
                out,
                "  {name:name_width$}  {count:>8}  {:>12.3}  {average:>12.1}",
                total.as_secs_f64() * 1e3
            );
        }
        if s.kernels.is_empty() {
            let _ = writeln!(out, "  (no kernel launched)");
        }
        let moved = |(count, total): (u64, u64)| format!("{} in {count} copies", bytes(total));
        let _ = writeln!(out, "  host to device    {}", moved(s.to_device));
        let _ = writeln!(out, "  device to host    {}", moved(s.from_device));
        let _ = writeln!(out, "  within device     {}", moved(s.within_device));
        let _ = writeln!(
            out,
            "  allocations       {} in all, high-water mark {}",
            s.allocations,
            bytes(s.peak_bytes)
        );
        let _ = writeln!(out, "  mapping table     peak {} entries", s.table_peak);
    }
    out
}

/// A device whose calls are recorded; everything else is the plugin's device.
struct Observed {
    device: usize,
    inner: Box<dyn Device>,
    recorder: &'static Recorder,
}

impl Observed {
    fn transfer(
        &self,
        name: &'static str,
        bytes: usize,
        start: Instant,
        counter: fn(&mut DeviceStats) -> &mut (u64, u64),
    ) {
        self.recorder.event(
            name.to_string(),
            "transfer",
            start,
            vec![
                ("device", self.device.to_string()),
                ("bytes", bytes.to_string()),
            ],
        );
        self.recorder.stats(self.device, |s| {
            let c = counter(s);
            c.0 += 1;
            c.1 += bytes as u64;
        });
    }
}

fn kind_name(kind: AllocKind) -> String {
    format!("{kind:?}").to_lowercase()
}

impl Device for Observed {
    fn alloc(&self, bytes: usize, kind: AllocKind) -> Result<*mut c_void> {
        let start = Instant::now();
        let ptr = self.inner.alloc(bytes, kind)?;
        let args = vec![
            ("device", self.device.to_string()),
            ("bytes", bytes.to_string()),
            ("kind", kind_name(kind)),
        ];
        self.recorder.event("alloc".into(), "memory", start, args);
        self.recorder.stats(self.device, |s| {
            s.allocations += 1;
            s.live_bytes += bytes as u64;
            s.peak_bytes = s.peak_bytes.max(s.live_bytes);
            s.live.insert(ptr as usize, bytes as u64);
        });
        Ok(ptr)
    }
    unsafe fn free(&self, ptr: *mut c_void, kind: AllocKind) -> Result<()> {
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.free(ptr, kind)? };
        self.recorder.event(
            "free".into(),
            "memory",
            start,
            vec![
                ("device", self.device.to_string()),
                ("kind", kind_name(kind)),
            ],
        );
        self.recorder.stats(self.device, |s| {
            s.live_bytes -= s.live.remove(&(ptr as usize)).unwrap_or(0);
        });
        Ok(())
    }
    fn clock_ns(&self) -> u64 {
        self.inner.clock_ns()
    }
    fn clock_to_host_ns(&self, device_ns: u64) -> u64 {
        self.inner.clock_to_host_ns(device_ns)
    }
    unsafe fn lock_host(&self, host: *mut c_void, bytes: usize) -> Result<*mut c_void> {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.lock_host(host, bytes) }
    }
    unsafe fn unlock_host(&self, host: *mut c_void) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock_host(host) }
    }
    unsafe fn copy_to_device(
        &self,
        device: *mut c_void,
        host: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.copy_to_device(device, host, bytes)? };
        self.transfer("host to device", bytes, start, |s| &mut s.to_device);
        Ok(())
    }
    unsafe fn copy_from_device(
        &self,
        host: *mut c_void,
        device: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.copy_from_device(host, device, bytes)? };
        self.transfer("device to host", bytes, start, |s| &mut s.from_device);
        Ok(())
    }
    unsafe fn copy_within_device(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.copy_within_device(dst, src, bytes)? };
        self.transfer("within device", bytes, start, |s| &mut s.within_device);
        Ok(())
    }
    fn load_image(&self, image: &ImageInfo<'_>) -> Result<Box<dyn LoadedImage>> {
        let start = Instant::now();
        let loaded = self.inner.load_image(image)?;
        let what = if image.arch.is_empty() {
            image.triple.to_string()
        } else {
            format!("{} {}", image.triple, image.arch)
        };
        let args = vec![
            ("device", self.device.to_string()),
            ("image", what),
            ("bytes", image.bytes.len().to_string()),
        ];
        self.recorder
            .event("load image".into(), "image", start, args);
        Ok(Box::new(ObservedImage {
            device: self.device,
            inner: loaded,
            recorder: self.recorder,
            names: Mutex::new(HashMap::new()),
        }))
    }
    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }
    fn shares_host_memory(&self) -> bool {
        self.inner.shares_host_memory()
    }
    fn uses_auto_zero_copy(&self) -> bool {
        self.inner.uses_auto_zero_copy()
    }
    fn waits_for_running_kernels(&self) -> bool {
        self.inner.waits_for_running_kernels()
    }
    fn unified_memory(&self) -> std::result::Result<(), String> {
        self.inner.unified_memory()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn properties(&self) -> Vec<(&'static str, String)> {
        self.inner.properties()
    }
    unsafe fn copy_to_peer(
        &self,
        peer: &dyn Device,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
    ) -> Option<Result<()>> {
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        let result = unsafe { self.inner.copy_to_peer(peer, dst, src, bytes)? };
        if result.is_ok() {
            self.transfer("to peer device", bytes, start, |s| &mut s.within_device);
        }
        Some(result)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.inner.as_any()
    }
}

fn requested(n: u32) -> String {
    if n == 0 {
        "default".into()
    } else {
        (n as i32).to_string()
    }
}

/// A loaded image whose launches are recorded under their kernels' names.
struct ObservedImage {
    device: usize,
    inner: Box<dyn LoadedImage>,
    recorder: &'static Recorder,
    /// Kernel address → name, from the lookups that found them.
    names: Mutex<HashMap<usize, String>>,
}

impl LoadedImage for ObservedImage {
    fn find_kernel(&self, name: &str) -> Result<Option<NonNull<c_void>>> {
        let Some(kernel) = self.inner.kernel(name)? else {
            return Ok(None);
        };
        self.names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kernel.raw() as usize, name.to_string());
        // The inner image's own value: the handle made from it launches the inner kernel.
        Ok(NonNull::new(kernel.raw()))
    }
    fn global(&self, name: &str) -> Result<Option<DeviceGlobal>> {
        self.inner.global(name)
    }
    unsafe fn launch(
        &self,
        kernel: KernelHandle,
        args: &[*mut c_void],
        config: &LaunchConfig,
    ) -> Result<()> {
        let name = self
            .names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kernel.raw() as usize))
            .cloned();
        let name = name.unwrap_or_else(|| format!("kernel at {:p}", kernel.raw()));
        let start = Instant::now();
        // SAFETY: forwarded from the caller.
        let launched = unsafe { self.inner.launch(kernel, args, config) };
        let elapsed = start.elapsed();
        let args = vec![
            ("device", self.device.to_string()),
            // As the construct asked (0: the plugin's default, which it chose at launch).
            ("teams", requested(config.num_teams)),
            ("threads", requested(config.thread_limit)),
            ("failed", launched.is_err().to_string()),
        ];
        self.recorder.event(name.clone(), "kernel", start, args);
        self.recorder.stats(self.device, |s| {
            let entry = s.kernels.entry(name).or_default();
            entry.0 += 1;
            entry.1 += elapsed;
        });
        launched
    }
    fn set_indirect_table(&self, table: &layout::IndirectTable) -> Result<()> {
        self.inner.set_indirect_table(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_json_with_complete_events() {
        let events = vec![
            Event {
                name: "__omp_offloading_fd00_1_main_l12 \"x\"".into(),
                category: "kernel",
                start: Duration::from_micros(5),
                duration: Duration::from_nanos(1500),
                thread: 7,
                args: vec![("teams", "4".into())],
            },
            Event {
                name: "host to device".into(),
                category: "transfer",
                start: Duration::ZERO,
                duration: Duration::ZERO,
                thread: 7,
                args: vec![],
            },
        ];
        let text = chrome_trace(&events);
        assert!(
            text.starts_with("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"),
            "{text}"
        );
        assert!(text.contains("\"name\":\"__omp_offloading_fd00_1_main_l12 \\\"x\\\"\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":5.000,\"dur\":1.500"), "{text}");
        assert!(text.contains("\"args\":{\"teams\":\"4\"}},\n"), "{text}");
        assert!(text.ends_with("\"args\":{}}\n]}\n"), "{text}");
        assert_eq!(json_string("a\nb"), "\"a\\u000ab\"");
    }

    #[test]
    fn the_summary_has_a_table_per_device() {
        let mut devices = BTreeMap::new();
        let mut s = DeviceStats {
            description: "host plugin device".into(),
            ..Default::default()
        };
        s.kernels.insert("k".into(), (4, Duration::from_millis(2)));
        s.to_device = (3, 3 * 1024);
        s.peak_bytes = 1536;
        s.allocations = 2;
        s.table_peak = 5;
        devices.insert(0, s);
        let text = summary(&devices);
        assert!(text.contains("device 0: host plugin device\n"), "{text}");
        assert!(
            text.contains("  k       ") && text.contains("       4         2.000         500.0\n"),
            "{text}"
        );
        assert!(
            text.contains("  host to device    3.0 KiB in 3 copies\n"),
            "{text}"
        );
        assert!(
            text.contains("  allocations       2 in all, high-water mark 1.5 KiB\n"),
            "{text}"
        );
        assert!(
            text.contains("  mapping table     peak 5 entries\n"),
            "{text}"
        );
    }
}
