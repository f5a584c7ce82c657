//! `librustomp-ompt-trace.so`: an OMPT tool that writes a program's offload work as a
//! Chrome/Perfetto trace (open it in `ui.perfetto.dev` or `chrome://tracing`, both work offline
//! once loaded).
//!
//! Loaded the standard way, `OMP_TOOL_LIBRARIES=<dist/lib>/librustomp-ompt-trace.so` (or by
//! `RUSTOMP_OMPT_TRACE` alone: the runtime then names this library to libomp); the file is
//! `RUSTOMP_OMPT_TRACE` (default `rustomp-trace.json`), a timeline picture instead when its
//! name ends in `.svg`. It shows, on the host, each target
//! construct (`target`, `enter data`, `exit data`, `update`) from its begin to its end callback
//! on the thread that ran it, and per device what the runtime's device tracing recorded: every
//! kernel and every allocation, transfer and deletion, at the device's times translated to the
//! host's (`ompt_translate_time`), so a kernel sits inside its construct.
//!
//! Everything here runs inside the tool's callbacks: no panic may leave them (each body is
//! wrapped), and a failure to write the file is reported on stderr.

use rustomp_abi::ompt::{kind, Record, RECORD_OMPT, SCOPE_BEGIN};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

type Lookup = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type SetCallback = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type BufferRequest = unsafe extern "C" fn(c_int, *mut *mut c_void, *mut usize);
type BufferComplete = unsafe extern "C" fn(c_int, *mut c_void, usize, u64, c_int);
type SetTrace = unsafe extern "C" fn(*mut c_void, u32, u32) -> c_int;
type StartTrace =
    unsafe extern "C" fn(*mut c_void, Option<BufferRequest>, Option<BufferComplete>) -> c_int;
type FlushTrace = unsafe extern "C" fn(*mut c_void) -> c_int;
type Advance = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, u64, *mut u64) -> c_int;
type GetRecordType = unsafe extern "C" fn(*mut c_void, u64) -> c_int;
type GetRecord = unsafe extern "C" fn(*mut c_void, u64) -> *mut Record;
type Translate = unsafe extern "C" fn(*mut c_void, u64) -> f64;

/// `ompt_data_t`.
#[repr(C)]
pub union OmptData {
    value: u64,
    ptr: *mut c_void,
}

/// `ompt_start_tool_result_t`.
#[repr(C)]
pub struct StartToolResult {
    initialize: unsafe extern "C" fn(Lookup, c_int, *mut OmptData) -> c_int,
    finalize: unsafe extern "C" fn(*mut OmptData),
    tool_data: OmptData,
}

/// Callback codes (`ompt_callbacks_t`) the tool registers.
const CALLBACK_TARGET: c_int = 8;
const CALLBACK_DEVICE_INITIALIZE: c_int = 12;
/// Bytes of each buffer handed to the runtime.
const BUFFER_BYTES: usize = 1 << 20;

/// A traced device: its handle and the entry points its lookup gave.
#[derive(Clone, Copy)]
struct Traced {
    number: c_int,
    handle: *mut c_void,
    flush: FlushTrace,
    advance: Advance,
    record_type: GetRecordType,
    record: GetRecord,
    translate: Translate,
}

/// One span of the trace: seconds of the host's clock (`omp_get_wtime`'s base).
struct Span {
    name: String,
    /// Chrome's process and thread: 0 is the host, `n + 1` device `n`.
    process: i64,
    thread: u64,
    begin: f64,
    end: f64,
    args: String,
}

struct State {
    devices: Vec<Traced>,
    spans: Vec<Span>,
    /// Constructs begun and not ended: (target_id, kind, device, thread, begin).
    open: Vec<(u64, c_int, c_int, u64, f64)>,
}

// SAFETY: the device handles are the runtime's opaque addresses, passed back to it only.
unsafe impl Send for State {}

static STATE: Mutex<State> = Mutex::new(State {
    devices: Vec::new(),
    spans: Vec::new(),
    open: Vec::new(),
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs a callback's body; a panic is reported, never unwound into the runtime.
fn guarded(what: &str, body: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
        eprintln!("rustomp-ompt-trace: {what} failed");
    }
}

fn wall_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A small number per host thread, in order of first use.
fn thread_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// The tool's entry point, found by libomp in `OMP_TOOL_LIBRARIES`.
///
/// # Safety
/// Called by libomp once, with its version numbers.
#[no_mangle]
pub unsafe extern "C" fn ompt_start_tool(
    _omp_version: u32,
    _runtime_version: *const c_char,
) -> *mut StartToolResult {
    struct Shared(std::cell::UnsafeCell<StartToolResult>);
    // SAFETY: libomp alone reads the result, and writes its tool data from one thread.
    unsafe impl Sync for Shared {}
    static RESULT: Shared = Shared(std::cell::UnsafeCell::new(StartToolResult {
        initialize,
        finalize,
        tool_data: OmptData { value: 0 },
    }));
    RESULT.0.get()
}

unsafe extern "C" fn initialize(lookup: Lookup, _initial: c_int, _data: *mut OmptData) -> c_int {
    // SAFETY: libomp's lookup takes a NUL-terminated name.
    let set = unsafe { lookup(c"ompt_set_callback".as_ptr()) };
    if set.is_null() {
        return 0;
    }
    // SAFETY: `ompt_set_result_t ompt_set_callback(ompt_callbacks_t, ompt_callback_t)`.
    let set: SetCallback = unsafe { std::mem::transmute(set) };
    // SAFETY: the callbacks have the signatures of their codes.
    unsafe {
        set(CALLBACK_DEVICE_INITIALIZE, device_initialize as *mut c_void);
        set(CALLBACK_TARGET, target as *mut c_void);
    }
    1
}

unsafe extern "C" fn device_initialize(
    number: c_int,
    _kind: *const c_char,
    handle: *mut c_void,
    lookup: Lookup,
    _documentation: *const c_char,
) {
    guarded("device_initialize", || {
        let find = |name: &CStr| {
            // SAFETY: the device's lookup takes a NUL-terminated name.
            let f = unsafe { lookup(name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        let entries = (
            find(c"ompt_set_trace_ompt"),
            find(c"ompt_start_trace"),
            find(c"ompt_flush_trace"),
            find(c"ompt_advance_buffer_cursor"),
            find(c"ompt_get_record_type"),
            find(c"ompt_get_record_ompt"),
            find(c"ompt_translate_time"),
        );
        let (
            Some(set),
            Some(start),
            Some(flush),
            Some(advance),
            Some(kind),
            Some(record),
            Some(translate),
        ) = entries
        else {
            eprintln!("rustomp-ompt-trace: device {number} offers no device tracing; only its constructs are traced");
            return;
        };
        // SAFETY: each entry point has the signature `omp-tools.h` gives its name.
        let traced = unsafe {
            Traced {
                number,
                handle,
                flush: std::mem::transmute::<*mut c_void, FlushTrace>(flush),
                advance: std::mem::transmute::<*mut c_void, Advance>(advance),
                record_type: std::mem::transmute::<*mut c_void, GetRecordType>(kind),
                record: std::mem::transmute::<*mut c_void, GetRecord>(record),
                translate: std::mem::transmute::<*mut c_void, Translate>(translate),
            }
        };
        state().devices.push(traced);
        // SAFETY: as above; the handle is the device's.
        unsafe {
            let set: SetTrace = std::mem::transmute(set);
            let start: StartTrace = std::mem::transmute(start);
            set(handle, 1, 0);
            start(handle, Some(request), Some(complete));
        }
    });
}

unsafe extern "C" fn request(_device: c_int, buffer: *mut *mut c_void, bytes: *mut usize) {
    let memory = Box::into_raw(vec![0u8; BUFFER_BYTES].into_boxed_slice()) as *mut u8;
    // SAFETY: the runtime's two out-values.
    unsafe {
        *buffer = memory as *mut c_void;
        *bytes = BUFFER_BYTES;
    }
}

unsafe extern "C" fn complete(
    device: c_int,
    buffer: *mut c_void,
    bytes: usize,
    begin: u64,
    owned: c_int,
) {
    guarded("a trace buffer", || {
        let traced = state().devices.iter().copied().find(|d| d.number == device);
        if let Some(d) = traced.filter(|_| bytes > 0) {
            let mut spans = Vec::new();
            let mut at = begin;
            loop {
                // SAFETY: a cursor of this buffer, as the runtime's entry points define them.
                let record = unsafe {
                    ((d.record_type)(buffer, at) == RECORD_OMPT)
                        .then(|| (d.record)(buffer, at))
                        .filter(|r| !r.is_null())
                        .map(|r| std::ptr::read_unaligned(r))
                };
                if let Some(r) = record {
                    spans.extend(span_of(&d, &r));
                }
                // SAFETY: as above.
                if unsafe { (d.advance)(d.handle, buffer, bytes, at, &mut at) } == 0 {
                    break;
                }
            }
            state().spans.extend(spans);
        }
        if owned != 0 && !buffer.is_null() {
            // SAFETY: `request` made the buffer, `BUFFER_BYTES` long; the runtime gave it back.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    buffer as *mut u8,
                    BUFFER_BYTES,
                ))
            });
        }
    });
}

/// A record as a span on its device's track.
fn span_of(d: &Traced, r: &Record) -> Option<Span> {
    // SAFETY: the translate entry point of this device, with its handle.
    let host = |t: u64| unsafe { (d.translate)(d.handle, t) };
    let process = i64::from(d.number) + 1;
    // SAFETY: the record's type says which member of the union it holds.
    unsafe {
        match r.kind {
            kind::SUBMIT => {
                let k = r.record.kernel;
                Some(Span {
                    name: format!("kernel (construct {})", r.target_id),
                    process,
                    thread: 1,
                    begin: host(r.time),
                    end: host(k.end_time),
                    args: format!(
                        "\"host_op_id\":{},\"requested_num_teams\":{}",
                        k.host_op_id, k.requested_num_teams
                    ),
                })
            }
            kind::DATA_OP => {
                let op = r.record.data_op;
                let name = match op.optype {
                    1 => "alloc",
                    2 => "to device",
                    3 => "from device",
                    4 => "delete",
                    5 => "associate",
                    6 => "disassociate",
                    _ => "data operation",
                };
                Some(Span {
                    name: format!("{name} {} B", op.bytes),
                    process,
                    thread: 2,
                    begin: host(r.time),
                    end: host(op.end_time),
                    args: format!(
                        "\"host_op_id\":{},\"bytes\":{},\"construct\":{}",
                        op.host_op_id, op.bytes, r.target_id
                    ),
                })
            }
            _ => None,
        }
    }
}

/// `ompt_callback_target`: the host's span of each construct.
unsafe extern "C" fn target(
    kind: c_int,
    endpoint: c_int,
    device: c_int,
    _task: *mut OmptData,
    target_id: u64,
    _codeptr: *const c_void,
) {
    guarded("a target callback", || {
        let now = wall_seconds();
        let mut s = state();
        if endpoint == SCOPE_BEGIN {
            s.open.push((target_id, kind, device, thread_number(), now));
            return;
        }
        let Some(at) = s.open.iter().position(|o| o.0 == target_id) else {
            return;
        };
        let (id, kind, device, thread, begin) = s.open.swap_remove(at);
        let name = match kind {
            1 => "target",
            2 => "target enter data",
            3 => "target exit data",
            4 => "target update",
            _ => "target construct",
        };
        s.spans.push(Span {
            name: format!("{name} (device {device})"),
            process: 0,
            thread,
            begin,
            end: now,
            args: format!("\"construct\":{id},\"device\":{device}"),
        });
    });
}

unsafe extern "C" fn finalize(_data: *mut OmptData) {
    guarded("writing the trace", || {
        let devices = state().devices.clone();
        for d in devices {
            // SAFETY: the device's flush entry point with its handle; it calls `complete`.
            unsafe { (d.flush)(d.handle) };
        }
        let path = std::env::var("RUSTOMP_OMPT_TRACE")
            .ok()
            .filter(|p| !p.is_empty() && p != "1")
            .unwrap_or_else(|| "rustomp-trace.json".into());
        let text = if path.ends_with(".svg") {
            svg_timeline(&state())
        } else {
            chrome_trace(&state())
        };
        match std::fs::write(&path, text) {
            Ok(()) => eprintln!("rustomp-ompt-trace: wrote {path}"),
            Err(e) => eprintln!("rustomp-ompt-trace: cannot write {path}: {e}"),
        }
    });
}

/// The trace in Chrome's JSON trace format: complete events (`ph: X`) in microseconds from the
/// first one, with the processes and threads named.
fn chrome_trace(s: &State) -> String {
    let origin = s
        .spans
        .iter()
        .map(|x| x.begin)
        .fold(f64::INFINITY, f64::min);
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut names = vec![(0i64, None, "host".to_string())];
    for d in &s.devices {
        let p = i64::from(d.number) + 1;
        names.push((p, None, format!("device {}", d.number)));
        names.push((p, Some(1), "kernels".into()));
        names.push((p, Some(2), "data operations".into()));
    }
    let mut first = true;
    for (process, thread, name) in names {
        let (what, tid) = match thread {
            Some(t) => ("thread_name", t),
            None => ("process_name", 0),
        };
        if !first {
            out.push_str(",\n");
        }
        first = false;
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{process},\"tid\":{tid},\"args\":{{\"name\":\"{name}\"}}}}"
        );
    }
    let mut spans: Vec<&Span> = s.spans.iter().collect();
    spans.sort_by(|a, b| a.begin.total_cmp(&b.begin));
    for span in spans {
        let _ = write!(
            out,
            ",\n{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{{}}}}}",
            span.name,
            if span.process == 0 { "construct" } else { "device" },
            span.process,
            span.thread,
            (span.begin - origin) * 1e6,
            ((span.end - span.begin) * 1e6).max(0.0),
            span.args
        );
    }
    out.push_str("\n]}\n");
    out
}

/// The tracks of a timeline, top to bottom: host threads, then each device's kernels and data
/// operations.
fn tracks(s: &State) -> Vec<(i64, u64, String)> {
    let mut tracks: Vec<(i64, u64, String)> = Vec::new();
    for span in &s.spans {
        if !tracks
            .iter()
            .any(|t| t.0 == span.process && t.1 == span.thread)
        {
            let name = match (span.process, span.thread) {
                (0, t) => format!("host thread {t}"),
                (p, 1) => format!("device {} kernels", p - 1),
                (p, _) => format!("device {} data", p - 1),
            };
            tracks.push((span.process, span.thread, name));
        }
    }
    tracks.sort();
    tracks
}

/// The trace as an SVG timeline: one row per track, each span a box with its name where it
/// fits (the full name as its tooltip), a time axis in milliseconds.
fn svg_timeline(s: &State) -> String {
    const LEFT: f64 = 150.0;
    const WIDTH: f64 = 900.0;
    const ROW: f64 = 34.0;
    const TOP: f64 = 30.0;
    let origin = s
        .spans
        .iter()
        .map(|x| x.begin)
        .fold(f64::INFINITY, f64::min);
    let last = s
        .spans
        .iter()
        .map(|x| x.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let length = (last - origin).max(1e-6);
    let x = |t: f64| LEFT + (t - origin) / length * WIDTH;
    let tracks = tracks(s);
    let height = TOP + ROW * tracks.len() as f64 + 30.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        LEFT + WIDTH + 20.0
    );
    for (row, (process, thread, name)) in tracks.iter().enumerate() {
        let y = TOP + ROW * row as f64;
        let _ = writeln!(
            out,
            "<text x=\"6\" y=\"{:.1}\">{name}</text><line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>",
            y + ROW / 2.0 + 4.0,
            LEFT + WIDTH,
            y + ROW - 2.0,
            y + ROW - 2.0
        );
        for span in s
            .spans
            .iter()
            .filter(|x| x.process == *process && x.thread == *thread)
        {
            let (x0, x1) = (x(span.begin), x(span.end).max(x(span.begin) + 1.0));
            let fill = match (span.process, span.thread) {
                (0, _) => "#9ecae1",
                (_, 1) => "#fd8d3c",
                _ => "#a1d99b",
            };
            let _ = write!(
                out,
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#555\" stroke-width=\"0.5\"><title>{} ({:.3} ms)</title></rect>",
                y + 4.0,
                x1 - x0,
                ROW - 10.0,
                span.name,
                (span.end - span.begin) * 1e3
            );
            // A label where the box has room for it.
            if x1 - x0 > 6.5 * span.name.len() as f64 {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x0 + 3.0,
                    y + ROW / 2.0 + 3.0,
                    span.name
                );
            }
            out.push('\n');
        }
    }
    let axis = TOP + ROW * tracks.len() as f64 + 14.0;
    for tick in 0..=5 {
        let t = length * f64::from(tick) / 5.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{axis:.1}\" text-anchor=\"middle\">{:.2} ms</text>",
            x(origin + t),
            t * 1e3
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_chrome_json_with_named_tracks() {
        let s = State {
            devices: Vec::new(),
            spans: vec![
                Span {
                    name: "target (device 0)".into(),
                    process: 0,
                    thread: 1,
                    begin: 10.0,
                    end: 10.5,
                    args: "\"construct\":3".into(),
                },
                Span {
                    name: "kernel (construct 3)".into(),
                    process: 1,
                    thread: 1,
                    begin: 10.1,
                    end: 10.2,
                    args: String::new(),
                },
            ],
            open: Vec::new(),
        };
        let json = chrome_trace(&s);
        assert!(json.starts_with("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
        assert!(json.contains(
            "\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"host\"}"
        ));
        assert!(json.contains("\"name\":\"target (device 0)\",\"cat\":\"construct\",\"pid\":0,\"tid\":1,\"ts\":0.000,\"dur\":500000.000"));
        assert!(json.contains("\"name\":\"kernel (construct 3)\",\"cat\":\"device\",\"pid\":1,\"tid\":1,\"ts\":100000.000"));
        assert!(json.trim_end().ends_with("]}"));
        let svg = svg_timeline(&s);
        assert!(svg.contains(">host thread 1</text>") && svg.contains(">device 0 kernels</text>"));
        assert!(svg.contains("<title>kernel (construct 3) (100.000 ms)</title>"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
