//! Device tracing (OpenMP 5.2 §19.2.6, the "tracing activity on target devices" interface),
//! which LLVM 22 does not offer yet.
//!
//! A tool finds the entry points through the `lookup` it gets at `device_initialize`:
//! `ompt_set_trace_ompt` picks the record types (the target, data-op and submit callbacks'
//! codes, EMI or not; 0 for all), `ompt_start_trace` gives the tool's buffer-request and
//! buffer-complete callbacks, `ompt_flush_trace` / `ompt_stop_trace` hand the filled part of
//! the current buffer back, `ompt_pause_trace` stops and resumes recording. A buffer holds
//! `ompt_record_ompt_t` records one after another; a cursor is a record's byte offset
//! (`ompt_advance_buffer_cursor`, `ompt_get_record_ompt`, `ompt_get_record_type`).
//!
//! Records: a `target` record at each end of a construct, a `target_data_op` record per
//! allocation, transfer and deletion, a `target_submit` record (`ompt_record_target_kernel_t`)
//! per kernel, each with the `host_op_id` / `target_id` its callbacks carry. Times are the
//! device's (`Device::clock_ns` base) at the operation's start (`time`) and end (`end_time`):
//! measured on the device where its backend can (CUDA events, through
//! `rustomp_plugin::op_times`), else the device's clock read around the operation (the CPU
//! plugin's clock is the host's monotonic one). `ompt_translate_time` turns them into
//! `omp_get_wtime`'s time base, and `ompt_get_device_time` reads the clock now.
//!
//! Buffers still holding records are handed back when the tool is finalized, before
//! `device_finalize`. The tool's callbacks run with the device's trace locked: from them it may
//! read records and times, but not start, flush or stop tracing.

use rustomp_plugin::Device;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

pub use rustomp_abi::ompt::{kind, DataOpRecord, KernelRecord, Record, RecordBody, TargetRecord};
use rustomp_abi::ompt::{
    EMI_OFFSET, RECORD_BYTES, RECORD_INVALID, RECORD_OMPT, SET_ALWAYS, SET_ERROR, SET_NEVER,
};

type BufferRequest = unsafe extern "C" fn(c_int, *mut *mut c_void, *mut usize);
type BufferComplete = unsafe extern "C" fn(c_int, *mut c_void, usize, u64, c_int);

/// The buffer a device's records go into.
struct Buffer {
    start: *mut u8,
    bytes: usize,
    used: usize,
}

/// One device's trace.
struct DeviceTrace {
    /// The device's number.
    number: usize,
    /// Record kinds the tool asked for (bit per callback code), by `ompt_set_trace_ompt`.
    wanted: u64,
    callbacks: Option<(BufferRequest, BufferComplete)>,
    paused: bool,
    buffer: Option<Buffer>,
}

// SAFETY: the buffer is memory the tool handed over for the runtime to fill; it is only touched
// under the trace's lock.
unsafe impl Send for DeviceTrace {}

/// A device initialized for the tool: its handle (the `ompt_device_t *` the tool got), the
/// device, and its trace.
struct Traced {
    handle: usize,
    number: usize,
    device: &'static dyn Device,
    trace: Arc<Mutex<DeviceTrace>>,
}

/// Every device initialized for the tool. Locked only to find one: a trace's own lock is held
/// while the tool's buffer callbacks run, and the time functions they call find their device
/// here.
static TRACES: Mutex<Vec<Traced>> = Mutex::new(Vec::new());
/// Whether any device's trace is started: the one load the paths without tracing pay.
static TRACING: AtomicBool = AtomicBool::new(false);

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes device `number` traceable; returns its handle, what the tool passes to the entry
/// points (the device's address: it stays the device's for the run).
pub fn device_initialized(number: usize, device: &'static dyn Device) -> *const c_void {
    let handle = device as *const dyn Device as *const () as usize;
    let trace = DeviceTrace {
        number,
        wanted: 0,
        callbacks: None,
        paused: false,
        buffer: None,
    };
    locked(&TRACES).push(Traced {
        handle,
        number,
        device,
        trace: Arc::new(Mutex::new(trace)),
    });
    handle as *const c_void
}

fn find(which: Which) -> Option<(&'static dyn Device, Arc<Mutex<DeviceTrace>>)> {
    let traces = locked(&TRACES);
    let found = traces.iter().find(|t| match which {
        Which::Handle(h) => t.handle == h,
        Which::Number(n) => t.number == n,
    })?;
    Some((found.device, found.trace.clone()))
}

/// Runs `f` on the trace of the device with this handle (a tool's argument) or number.
fn with_trace<T>(which: Which, f: impl FnOnce(&mut DeviceTrace) -> T) -> Option<T> {
    let (_, trace) = find(which)?;
    let mut trace = locked(&trace);
    Some(f(&mut trace))
}

#[derive(Clone, Copy)]
enum Which {
    Handle(usize),
    Number(usize),
}

/// The host's `omp_get_wtime` (seconds of the real-time clock) at a device time of the CPU's
/// monotonic clock: one pair of readings, taken once.
fn wall_seconds(monotonic_ns: u64) -> f64 {
    static ORIGIN: OnceLock<(u64, f64)> = OnceLock::new();
    let &(mono, wall) = ORIGIN.get_or_init(|| {
        // Two monotonic reads around the real-time one bound the pairing error.
        let before = rustomp_plugin::monotonic_ns();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let after = rustomp_plugin::monotonic_ns();
        (before + (after - before) / 2, wall)
    });
    wall + (monotonic_ns as f64 - mono as f64) * 1e-9
}

/// Whether records of `kind` are wanted for `device`: tracing is started there, not paused,
/// and the tool asked for the kind.
fn wanted(device: usize, kind: i32) -> bool {
    TRACING.load(Ordering::Relaxed)
        && with_trace(Which::Number(device), |t| {
            t.callbacks.is_some() && !t.paused && t.wanted & (1 << kind) != 0
        })
        .unwrap_or(false)
}

/// An operation being timed for a device's trace.
pub struct Timing {
    device: usize,
    kind: i32,
    start: u64,
}

/// Starts timing an operation of `kind` on `device`: `None` unless the device's trace wants
/// records of that kind. Clears what the last operation of this thread left in
/// [`rustomp_plugin::op_times`].
pub fn start(device: usize, kind: i32) -> Option<Timing> {
    if !wanted(device, kind) {
        return None;
    }
    let _ = rustomp_plugin::op_times::take();
    Some(Timing {
        device,
        kind,
        start: now(device),
    })
}

impl Timing {
    /// The operation ended: its record, for the construct `target_id`, with the body `body`
    /// makes from the end time. The times are what its backend measured on the device if it
    /// did, else the start and the device's clock now.
    pub fn record(self, target_id: u64, body: impl FnOnce(u64) -> RecordBody) {
        let (time, end) =
            rustomp_plugin::op_times::take().unwrap_or_else(|| (self.start, now(self.device)));
        record(
            self.device,
            Record {
                kind: self.kind,
                time,
                thread_id: thread_id(),
                target_id,
                record: body(end),
            },
        );
    }
}

/// The device's clock now (0 for a device not initialized for the tool).
fn now(device: usize) -> u64 {
    find(Which::Number(device)).map_or(0, |(d, _)| d.clock_ns())
}

/// Adds a record to `device`'s trace, asking the tool for a buffer when the current one is
/// full (after handing that one back).
fn record(device: usize, record: Record) {
    with_trace(Which::Number(device), |t| {
        let Some((request, complete)) = t.callbacks else {
            return;
        };
        if t.buffer
            .as_ref()
            .is_none_or(|b| b.used + RECORD_BYTES > b.bytes)
        {
            hand_back(device, t, complete);
            let (mut start, mut bytes) = (std::ptr::null_mut(), 0usize);
            // SAFETY: the tool's `void (*)(int device_num, ompt_buffer_t **buffer, size_t
            // *bytes)`, with two live out-values.
            unsafe { request(device as c_int, &mut start, &mut bytes) };
            if start.is_null() || bytes < RECORD_BYTES {
                crate::diag::debug!(
                    "ompt: the tool gave no room for a trace record of device {device} ({bytes} bytes)"
                );
                return;
            }
            t.buffer = Some(Buffer {
                start: start as *mut u8,
                bytes,
                used: 0,
            });
        }
        let buffer = t.buffer.as_mut().expect("a buffer with room");
        // SAFETY: the tool's buffer holds `bytes`, `used + RECORD_BYTES` of them included; it
        // is ours until handed back; records are written unaligned as the tool's buffer may
        // be any address.
        unsafe {
            std::ptr::write_unaligned(buffer.start.add(buffer.used) as *mut Record, record);
        }
        buffer.used += RECORD_BYTES;
    });
}

/// Hands the filled part of the current buffer back to the tool (it owns it again).
fn hand_back(device: usize, t: &mut DeviceTrace, complete: BufferComplete) {
    if let Some(buffer) = t.buffer.take() {
        if buffer.used > 0 {
            // SAFETY: the tool's `void (*)(int device_num, ompt_buffer_t *buffer, size_t
            // bytes, ompt_buffer_cursor_t begin, int buffer_owned)`: its own buffer, filled
            // with `used` bytes of records from cursor 0.
            unsafe {
                complete(
                    device as c_int,
                    buffer.start as *mut c_void,
                    buffer.used,
                    0,
                    1,
                )
            };
        }
    }
}

/// Hands every device's records back (the tool is being finalized).
pub fn flush_all() {
    if !TRACING.load(Ordering::Relaxed) {
        return;
    }
    let traces: Vec<_> = locked(&TRACES).iter().map(|t| t.trace.clone()).collect();
    for trace in traces {
        let mut t = locked(&trace);
        let device = t.number;
        if let Some((_, complete)) = t.callbacks {
            hand_back(device, &mut t, complete);
        }
    }
}

/// The lookup a tool gets at `device_initialize`.
pub unsafe extern "C" fn lookup(name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the tool passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) };
    let entry: *const () = match name.to_bytes() {
        b"ompt_set_trace_ompt" => set_trace_ompt as *const (),
        b"ompt_start_trace" => start_trace as *const (),
        b"ompt_pause_trace" => pause_trace as *const (),
        b"ompt_flush_trace" => flush_trace as *const (),
        b"ompt_stop_trace" => stop_trace as *const (),
        b"ompt_advance_buffer_cursor" => advance_buffer_cursor as *const (),
        b"ompt_get_record_type" => get_record_type as *const (),
        b"ompt_get_record_ompt" => get_record_ompt as *const (),
        b"ompt_get_device_time" => get_device_time as *const (),
        b"ompt_translate_time" => translate_time as *const (),
        _ => std::ptr::null(),
    };
    entry as *mut c_void
}

/// `ompt_set_trace_ompt`: records of the target, data-op and submit kinds can be traced.
unsafe extern "C" fn set_trace_ompt(device: *mut c_void, enable: u32, etype: u32) -> c_int {
    let kinds: u64 = match etype as i32 {
        0 => 1 << kind::TARGET | 1 << kind::DATA_OP | 1 << kind::SUBMIT,
        k @ (kind::TARGET | kind::DATA_OP | kind::SUBMIT) => 1 << k,
        k if (kind::TARGET + EMI_OFFSET..=kind::SUBMIT + EMI_OFFSET).contains(&k) => {
            1 << (k - EMI_OFFSET)
        }
        _ => return SET_NEVER,
    };
    with_trace(Which::Handle(device as usize), |t| {
        if enable != 0 {
            t.wanted |= kinds;
        } else {
            t.wanted &= !kinds;
        }
        SET_ALWAYS
    })
    .unwrap_or(SET_ERROR)
}

/// `ompt_start_trace`: 1 when started, 0 for an unknown device or missing callbacks.
unsafe extern "C" fn start_trace(
    device: *mut c_void,
    request: Option<BufferRequest>,
    complete: Option<BufferComplete>,
) -> c_int {
    let (Some(request), Some(complete)) = (request, complete) else {
        return 0;
    };
    let started = with_trace(Which::Handle(device as usize), |t| {
        t.callbacks = Some((request, complete));
        t.paused = false;
    });
    if started.is_some() {
        TRACING.store(true, Ordering::Release);
        rustomp_plugin::op_times::set_wanted(true);
    }
    c_int::from(started.is_some())
}

unsafe extern "C" fn pause_trace(device: *mut c_void, begin_pause: c_int) -> c_int {
    c_int::from(
        with_trace(Which::Handle(device as usize), |t| {
            t.paused = begin_pause != 0;
        })
        .is_some(),
    )
}

unsafe extern "C" fn flush_trace(device: *mut c_void) -> c_int {
    c_int::from(
        with_trace(Which::Handle(device as usize), |t| {
            if let Some((_, complete)) = t.callbacks {
                hand_back(t.number, t, complete);
            }
        })
        .is_some(),
    )
}

unsafe extern "C" fn stop_trace(device: *mut c_void) -> c_int {
    c_int::from(
        with_trace(Which::Handle(device as usize), |t| {
            if let Some((_, complete)) = t.callbacks.take() {
                hand_back(t.number, t, complete);
            }
        })
        .is_some(),
    )
}

/// A cursor is a record's offset in the buffer: the next one is a record further, if the
/// buffer's `size` bytes hold it.
unsafe extern "C" fn advance_buffer_cursor(
    _device: *mut c_void,
    _buffer: *mut c_void,
    size: usize,
    current: u64,
    next: *mut u64,
) -> c_int {
    let following = current + RECORD_BYTES as u64;
    if next.is_null() || following + RECORD_BYTES as u64 > size as u64 {
        return 0;
    }
    // SAFETY: the tool's out-value.
    unsafe { *next = following };
    1
}

unsafe extern "C" fn get_record_type(buffer: *mut c_void, _current: u64) -> c_int {
    if buffer.is_null() {
        RECORD_INVALID
    } else {
        RECORD_OMPT
    }
}

unsafe extern "C" fn get_record_ompt(buffer: *mut c_void, current: u64) -> *mut Record {
    if buffer.is_null() {
        return std::ptr::null_mut();
    }
    (buffer as *mut u8).wrapping_add(current as usize) as *mut Record
}

unsafe extern "C" fn get_device_time(device: *mut c_void) -> u64 {
    find(Which::Handle(device as usize)).map_or(0, |(d, _)| d.clock_ns())
}

/// A device time in `omp_get_wtime`'s time base.
unsafe extern "C" fn translate_time(device: *mut c_void, time: u64) -> f64 {
    find(Which::Handle(device as usize))
        .map_or(0.0, |(d, _)| wall_seconds(d.clock_to_host_ns(time)))
}

/// The host thread's id in records (its kernel thread id, read once per thread).
fn thread_id() -> u64 {
    thread_local! {
        // SAFETY: gettid takes nothing and cannot fail.
        static ID: u64 = (unsafe { libc::gettid() }) as u64;
    }
    ID.with(|id| *id)
}
