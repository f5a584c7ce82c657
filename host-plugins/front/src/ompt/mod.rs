//! The OpenMP tools interface (OMPT) for offload: what a tool that libomp started learns of the
//! target constructs, their data operations and kernel submissions, and the devices.
//!
//! ## How the tool reaches us
//!
//! A tool is started by libomp (`ompt_start_tool` in the program or `OMP_TOOL_LIBRARIES`), and
//! registers all its callbacks with libomp's `ompt_set_callback`, target ones included. The
//! offload library connects itself as LLVM 22's does: at start it calls libomp's exported
//! `ompt_libomp_connect` with an `ompt_start_tool_result_t` of its own; when a tool is active,
//! libomp calls that result's `initialize` with its lookup function, and the offload library
//! reads the registered callbacks through `ompt_get_callback`, and `ompt_get_task_data` /
//! `ompt_get_target_task_data` for the task arguments. libomp calls `finalize` when the tool
//! is finalized: the devices are finalized for the tool then.
//!
//! ## What is reported, as LLVM 22 does it
//!
//! - `device_initialize` when a device is opened (ours opens a device at its first use; LLVM
//!   opens every device of a plugin at once), `device_load` per image loaded on it (no file: the
//!   image is in memory), `device_finalize` at the tool's finalization;
//! - `target` / `target_emi` around each construct: `target` (nowait ones too, as LLVM), `enter
//!   data` (also a `target data` region's start), `exit data` (its end) and `update`, with the
//!   construct's return address in the program as `codeptr_ra`;
//! - inside them, `target_data_op` / `_emi` for every allocation (its host address as the
//!   source), transfer each way, and deletion (the device address as the source), and
//!   `target_submit` / `_emi` around the kernel launch, with the league size asked for (1 for a
//!   construct without `teams`, 0 for the default);
//! - EMI callbacks at both endpoints, sharing the `target_data` the tool set at the construct's
//!   begin and the `host_op_id` it set at the operation's; the older forms once per operation
//!   (at its begin) and at both ends of a construct, with ids from one counter.
//!
//! Without a tool nothing of this runs: every entry point reads one flag first.
//!
//! Device tracing, which LLVM 22 lacks, is in [`trace`]: records of the same constructs,
//! operations and kernels with the device's times, in buffers the tool hands over.

mod trace;

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `ompt_data_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union OmptData {
    pub value: u64,
    pub ptr: *mut c_void,
}
static_assertions::const_assert_eq!(size_of::<OmptData>(), 8);

type Lookup = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type Initialize = unsafe extern "C" fn(Lookup, c_int, *mut OmptData) -> c_int;
type Finalize = unsafe extern "C" fn(*mut OmptData);

/// `ompt_start_tool_result_t`.
#[repr(C)]
struct StartToolResult {
    initialize: Initialize,
    finalize: Finalize,
    tool_data: OmptData,
}
static_assertions::const_assert_eq!(size_of::<StartToolResult>(), 24);

/// libomp keeps the pointer to our result for the whole run.
struct Connection(std::cell::UnsafeCell<StartToolResult>);
// SAFETY: libomp reads and writes the result (its tool data) only from the threads that
// initialize and finalize the tool, one at a time.
unsafe impl Sync for Connection {}
static CONNECTION: Connection = Connection(std::cell::UnsafeCell::new(StartToolResult {
    initialize,
    finalize,
    tool_data: OmptData { value: 0 },
}));

/// Callback codes (`ompt_callbacks_t`).
mod code {
    pub const TARGET: usize = 8;
    pub const TARGET_DATA_OP: usize = 9;
    pub const TARGET_SUBMIT: usize = 10;
    pub const DEVICE_INITIALIZE: usize = 12;
    pub const DEVICE_FINALIZE: usize = 13;
    pub const DEVICE_LOAD: usize = 14;
    pub const TARGET_EMI: usize = 33;
    pub const TARGET_DATA_OP_EMI: usize = 34;
    pub const TARGET_SUBMIT_EMI: usize = 35;
    pub const ALL: [usize; 10] = [
        TARGET,
        TARGET_DATA_OP,
        TARGET_SUBMIT,
        DEVICE_INITIALIZE,
        DEVICE_FINALIZE,
        DEVICE_LOAD,
        TARGET_EMI,
        TARGET_DATA_OP_EMI,
        TARGET_SUBMIT_EMI,
        15, // device_unload: read, never called (images stay loaded until exit, as LLVM's)
    ];
}

/// `ompt_target_t` kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Construct {
    Target = 1,
    EnterData = 2,
    ExitData = 3,
    Update = 4,
}

/// `ompt_target_data_op_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
enum DataOp {
    Alloc = 1,
    ToDevice = 2,
    FromDevice = 3,
    Delete = 4,
    Associate = 5,
    Disassociate = 6,
}

const BEGIN: c_int = 1;
const END: c_int = 2;

/// The registered callbacks by code (0: none), and whether any target callback is.
static CALLBACKS: [AtomicUsize; 40] = [const { AtomicUsize::new(0) }; 40];
static ACTIVE: AtomicBool = AtomicBool::new(false);
static GET_TASK_DATA: AtomicUsize = AtomicUsize::new(0);
static GET_TARGET_TASK_DATA: AtomicUsize = AtomicUsize::new(0);
/// One counter for target ids and host operation ids, as LLVM's.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// The devices initialized for the tool, to finalize.
static INITIALIZED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn callback(code: usize) -> Option<*mut c_void> {
    let f = CALLBACKS[code].load(Ordering::Acquire);
    (f != 0).then_some(f as *mut c_void)
}

/// Whether a tool listens to anything of ours. One relaxed load: the no-tool path.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Connects to libomp, which initializes us when a tool is active (see the module): once, when
/// the program registers its first images (the runtime is set up by then, so a tool may call
/// back into it from its initializer).
pub fn connect_once() {
    static CONNECTED: std::sync::Once = std::sync::Once::new();
    CONNECTED.call_once(connect);
}

fn connect() {
    load_trace_tool_if_asked();
    // SAFETY: dlsym with a NUL-terminated name in the default scope.
    let connect = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ompt_libomp_connect".as_ptr()) };
    if connect.is_null() {
        return;
    }
    // SAFETY: libomp's `void ompt_libomp_connect(ompt_start_tool_result_t *)`; the result lives
    // for the whole run.
    unsafe {
        let connect: unsafe extern "C" fn(*mut StartToolResult) = std::mem::transmute(connect);
        connect(CONNECTION.0.get());
    }
}

/// `RUSTOMP_OMPT_TRACE=<file>` without `OMP_TOOL_LIBRARIES`: names the trace tool installed
/// beside this library there, which libomp then starts as it starts any tool (it reads the
/// variable when it initializes, after the program's images are registered).
fn load_trace_tool_if_asked() {
    const TOOL: &str = "librustomp-ompt-trace.so";
    if std::env::var_os("RUSTOMP_OMPT_TRACE").is_none()
        || std::env::var_os("OMP_TOOL_LIBRARIES").is_some()
    {
        return;
    }
    match crate::external::own_directory().map(|d| d.join(TOOL)) {
        Some(tool) if tool.is_file() => {
            // The program's constructors run on its one thread: nothing reads the environment
            // concurrently yet.
            std::env::set_var("OMP_TOOL_LIBRARIES", &tool);
        }
        _ => crate::diag::message(format_args!(
            "RUSTOMP_OMPT_TRACE is set but {TOOL} is not installed beside libomptarget.so.22.1: no trace is written"
        )),
    }
}

unsafe extern "C" fn initialize(
    lookup: Lookup,
    _initial_device: c_int,
    _tool: *mut OmptData,
) -> c_int {
    let find = |name: &CStr| {
        // SAFETY: libomp's lookup takes a NUL-terminated name.
        let f = unsafe { lookup(name.as_ptr()) };
        (!f.is_null()).then_some(f)
    };
    let Some(get_callback) = find(c"ompt_get_callback") else {
        return 0;
    };
    // SAFETY: `int ompt_get_callback(ompt_callbacks_t which, ompt_callback_t *callback)`.
    let get_callback: unsafe extern "C" fn(c_int, *mut *mut c_void) -> c_int =
        unsafe { std::mem::transmute(get_callback) };
    let mut any = false;
    for which in code::ALL {
        let mut f: *mut c_void = std::ptr::null_mut();
        // SAFETY: as above; `f` receives the callback or stays null.
        let present = unsafe { get_callback(which as c_int, &mut f) } != 0;
        if present && !f.is_null() {
            CALLBACKS[which].store(f as usize, Ordering::Release);
            any = true;
        }
    }
    for (name, slot) in [
        (c"ompt_get_task_data", &GET_TASK_DATA),
        (c"ompt_get_target_task_data", &GET_TARGET_TASK_DATA),
    ] {
        if let Some(f) = find(name) {
            slot.store(f as usize, Ordering::Release);
        }
    }
    ACTIVE.store(any, Ordering::Release);
    1
}

unsafe extern "C" fn finalize(_tool: *mut OmptData) {
    devices_finalized();
    ACTIVE.store(false, Ordering::Release);
}

/// `device_finalize` for every device initialized for the tool, once.
pub fn devices_finalized() {
    if !active() {
        return;
    }
    trace::flush_all();
    let devices = std::mem::take(&mut *INITIALIZED.lock().unwrap_or_else(|e| e.into_inner()));
    if let Some(f) = callback(code::DEVICE_FINALIZE) {
        // SAFETY: `void (*)(int device_num)`.
        let f: unsafe extern "C" fn(c_int) = unsafe { std::mem::transmute(f) };
        for device in devices {
            // SAFETY: the tool's callback.
            unsafe { f(device) };
        }
    }
}

fn task_data(getter: &AtomicUsize) -> *mut OmptData {
    match getter.load(Ordering::Acquire) {
        0 => std::ptr::null_mut(),
        // SAFETY: libomp's `ompt_data_t *ompt_get_task_data(void)` (and the target task's).
        f => unsafe {
            let f: unsafe extern "C" fn() -> *mut OmptData = std::mem::transmute(f);
            f()
        },
    }
}

/// `device_initialize` for a device just opened: `kind` names it (`generic-64bit` for the CPU,
/// as LLVM's host plugin says); the tool's handle for it is the device's address, and the
/// lookup it gets finds the tracing entry points ([`trace::lookup`]).
pub fn device_initialized(device: usize, kind: &str, backend: &'static dyn rustomp_plugin::Device) {
    if !active() {
        return;
    }
    let handle = trace::device_initialized(device, backend);
    INITIALIZED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(device as c_int);
    let Some(f) = callback(code::DEVICE_INITIALIZE) else {
        return;
    };
    let kind = std::ffi::CString::new(kind).unwrap_or_default();
    // SAFETY: `void (*)(int device_num, const char *type, ompt_device_t *device,
    // ompt_function_lookup_t lookup, const char *documentation)`.
    unsafe {
        let f: unsafe extern "C" fn(c_int, *const c_char, *const c_void, Lookup, *const c_char) =
            std::mem::transmute(f);
        f(
            device as c_int,
            kind.as_ptr(),
            handle,
            trace::lookup,
            std::ptr::null(),
        );
    }
}

/// `device_load` for an image loaded on `device`: it is in memory (no file), `bytes` long at
/// `host`.
pub fn image_loaded(device: usize, host: *const c_void, bytes: usize, module_id: u64) {
    if !active() {
        return;
    }
    let Some(f) = callback(code::DEVICE_LOAD) else {
        return;
    };
    // SAFETY: `void (*)(int device_num, const char *filename, int64_t offset_in_file,
    // void *vma_in_file, size_t bytes, void *host_addr, void *device_addr, uint64_t module_id)`.
    unsafe {
        let f: unsafe extern "C" fn(
            c_int,
            *const c_char,
            i64,
            *const c_void,
            usize,
            *const c_void,
            *const c_void,
            u64,
        ) = std::mem::transmute(f);
        f(
            device as c_int,
            std::ptr::null(),
            -1,
            std::ptr::null(),
            bytes,
            host,
            std::ptr::null(),
            module_id,
        );
    }
}

/// The construct a thread is in, for its data operations and submissions.
#[derive(Clone, Copy)]
struct Current {
    target_data: *mut OmptData,
    target_id: u64,
    codeptr: *const c_void,
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// One construct, reported at its begin ([`Region::begin`]) and its end (when dropped).
pub struct Region {
    kind: Construct,
    device: c_int,
    target_data: Box<OmptData>,
    target_id: u64,
    codeptr: *const c_void,
    outer: Option<Current>,
}

impl Region {
    /// The begin of a `kind` construct on `device`; `None` (nothing to report) without a tool.
    #[inline]
    pub fn begin(kind: Construct, device: usize) -> Option<Region> {
        if !active() {
            return None;
        }
        Self::begin_reported(kind, device)
    }

    #[cold]
    #[inline(never)]
    fn begin_reported(kind: Construct, device: usize) -> Option<Region> {
        let mut region = Region {
            kind,
            device: device as c_int,
            target_data: Box::new(OmptData { value: 0 }),
            target_id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            codeptr: return_address_in_program(),
            outer: None,
        };
        region.report(BEGIN);
        region.outer = CURRENT.with(|c| {
            c.replace(Some(Current {
                target_data: &mut *region.target_data,
                target_id: region.target_id,
                codeptr: region.codeptr,
            }))
        });
        Some(region)
    }

    fn report(&mut self, endpoint: c_int) {
        if let Some(timing) = trace::start(self.device as usize, trace::kind::TARGET) {
            timing.record(self.target_id, |_| trace::RecordBody {
                target: trace::TargetRecord {
                    kind: self.kind as c_int,
                    endpoint,
                    device_num: self.device,
                    task_id: 0,
                    target_id: self.target_id,
                    codeptr_ra: self.codeptr,
                },
            });
        }
        let task = task_data(&GET_TASK_DATA);
        if let Some(f) = callback(code::TARGET_EMI) {
            // SAFETY: `void (*)(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int
            // device_num, ompt_data_t *task_data, ompt_data_t *target_task_data, ompt_data_t
            // *target_data, const void *codeptr_ra)`.
            unsafe {
                let f: unsafe extern "C" fn(
                    c_int,
                    c_int,
                    c_int,
                    *mut OmptData,
                    *mut OmptData,
                    *mut OmptData,
                    *const c_void,
                ) = std::mem::transmute(f);
                f(
                    self.kind as c_int,
                    endpoint,
                    self.device,
                    task,
                    task_data(&GET_TARGET_TASK_DATA),
                    &mut *self.target_data,
                    self.codeptr,
                );
            }
        } else if let Some(f) = callback(code::TARGET) {
            // SAFETY: `void (*)(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int
            // device_num, ompt_data_t *task_data, ompt_id_t target_id, const void *codeptr_ra)`.
            unsafe {
                let f: unsafe extern "C" fn(
                    c_int,
                    c_int,
                    c_int,
                    *mut OmptData,
                    u64,
                    *const c_void,
                ) = std::mem::transmute(f);
                f(
                    self.kind as c_int,
                    endpoint,
                    self.device,
                    task,
                    self.target_id,
                    self.codeptr,
                );
            }
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.outer));
        self.report(END);
    }
}

/// The return address of the runtime's entry point in the program: the first frame, from the
/// innermost, outside this library (so inlining inside it changes nothing). The unwinder stops
/// at that frame, and the test is a range compare: a few frames' work per construct.
fn return_address_in_program() -> *const c_void {
    struct Search {
        ours: (usize, usize),
        found: usize,
    }
    unsafe extern "C" fn frame(context: *mut c_void, search: *mut c_void) -> c_int {
        // SAFETY: `search` is the `Search` passed below; `context` the unwinder's.
        let (search, ip) = unsafe { (&mut *(search as *mut Search), _Unwind_GetIP(context)) };
        if ip != 0 && !(search.ours.0..search.ours.1).contains(&ip) {
            search.found = ip;
            return URC_END_OF_STACK;
        }
        URC_NO_REASON
    }
    let mut search = Search {
        ours: library_range(),
        found: 0,
    };
    // SAFETY: the callback only reads the context it is given and writes `search`, which
    // outlives the walk.
    unsafe { _Unwind_Backtrace(frame, &mut search as *mut Search as *mut c_void) };
    search.found as *const c_void
}

const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;

unsafe extern "C" {
    fn _Unwind_Backtrace(
        trace: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
        argument: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(context: *mut c_void) -> usize;
}

/// Where this library's loaded segments lie: from its load address to the end of its last
/// loadable segment.
fn library_range() -> (usize, usize) {
    static RANGE: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *RANGE.get_or_init(|| {
        // SAFETY: Dl_info is plain data; all zeros is a valid value.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only reads the loader's tables.
        unsafe { libc::dladdr(library_range as *const c_void, &mut info) };
        let base = info.dli_fbase as usize;
        let mut found = (base, base);
        unsafe extern "C" fn each(
            object: *mut libc::dl_phdr_info,
            _size: usize,
            found: *mut c_void,
        ) -> c_int {
            // SAFETY: dl_iterate_phdr passes a valid object description and our `found`.
            let (object, found) = unsafe { (&*object, &mut *(found as *mut (usize, usize))) };
            let base = object.dlpi_addr as usize;
            // The object whose first loadable segment starts at our base.
            let headers = (0..object.dlpi_phnum as usize)
                // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
                .map(|i| unsafe { &*object.dlpi_phdr.add(i) })
                .filter(|h| h.p_type == libc::PT_LOAD);
            let (mut low, mut high) = (usize::MAX, 0usize);
            for h in headers {
                low = low.min(base + h.p_vaddr as usize);
                high = high.max(base + (h.p_vaddr + h.p_memsz) as usize);
            }
            if low <= found.0 && found.0 < high {
                *found = (low, high);
                return 1;
            }
            0
        }
        // SAFETY: the callback reads the loader's descriptions and writes `found`.
        unsafe {
            libc::dl_iterate_phdr(Some(each), &mut found as *mut (usize, usize) as *mut c_void)
        };
        found
    })
}

/// One data operation of the current construct: reported at its begin (the destination still
/// unknown for an allocation) and, for EMI, at its end (with the allocation's address).
fn data_op<T>(
    device: usize,
    op: DataOp,
    (src, src_device): (usize, c_int),
    (dest, dest_device): (usize, c_int),
    bytes: usize,
    perform: impl FnOnce() -> rustomp_plugin::Result<T>,
    dest_after: impl Fn(&T) -> usize,
) -> rustomp_plugin::Result<T> {
    let current = CURRENT.with(Cell::get);
    // Outside a construct (the `omp_target_*` routines) no target data, and the routine's
    // return address in the program.
    let (target_data, target_id, codeptr) = match current {
        Some(c) => (c.target_data, c.target_id, c.codeptr),
        None => (std::ptr::null_mut(), 0, return_address_in_program()),
    };
    let mut host_op_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let emi = callback(code::TARGET_DATA_OP_EMI);
    let call_emi = |endpoint: c_int, dest: usize, host_op_id: &mut u64| {
        let Some(f) = emi else { return };
        // SAFETY: `void (*)(ompt_scope_endpoint_t, ompt_data_t *target_task_data, ompt_data_t
        // *target_data, ompt_id_t *host_op_id, ompt_target_data_op_t, void *src_addr, int
        // src_device_num, void *dest_addr, int dest_device_num, size_t bytes, const void
        // *codeptr_ra)`.
        unsafe {
            let f: unsafe extern "C" fn(
                c_int,
                *mut OmptData,
                *mut OmptData,
                *mut u64,
                c_int,
                *mut c_void,
                c_int,
                *mut c_void,
                c_int,
                usize,
                *const c_void,
            ) = std::mem::transmute(f);
            f(
                endpoint,
                task_data(&GET_TARGET_TASK_DATA),
                target_data,
                host_op_id,
                op as c_int,
                src as *mut c_void,
                src_device,
                dest as *mut c_void,
                dest_device,
                bytes,
                codeptr,
            );
        }
    };
    if emi.is_some() {
        call_emi(BEGIN, dest, &mut host_op_id);
    } else if let Some(f) = callback(code::TARGET_DATA_OP) {
        // SAFETY: `void (*)(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t,
        // void *src_addr, int src_device_num, void *dest_addr, int dest_device_num, size_t
        // bytes, const void *codeptr_ra)`.
        unsafe {
            let f: unsafe extern "C" fn(
                u64,
                u64,
                c_int,
                *mut c_void,
                c_int,
                *mut c_void,
                c_int,
                usize,
                *const c_void,
            ) = std::mem::transmute(f);
            f(
                target_id,
                host_op_id,
                op as c_int,
                src as *mut c_void,
                src_device,
                dest as *mut c_void,
                dest_device,
                bytes,
                codeptr,
            );
        }
    }
    let timing = trace::start(device, trace::kind::DATA_OP);
    let result = perform();
    if let Ok(value) = &result {
        if let Some(timing) = timing {
            timing.record(target_id, |end| trace::RecordBody {
                data_op: trace::DataOpRecord {
                    host_op_id,
                    optype: op as c_int,
                    src_addr: src as *mut c_void,
                    src_device_num: src_device,
                    dest_addr: dest_after(value) as *mut c_void,
                    dest_device_num: dest_device,
                    bytes,
                    end_time: end,
                    codeptr_ra: codeptr,
                },
            });
        }
        if emi.is_some() {
            call_emi(END, dest_after(value), &mut host_op_id);
        }
    }
    result
}

/// The host's device number (`omp_get_initial_device()`: the number of devices), which the
/// front sets as devices are counted (see `set_host_device`).
static HOST_DEVICE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

fn host_device() -> c_int {
    HOST_DEVICE.load(Ordering::Relaxed)
}

/// The number of devices, which is the host's device number.
pub fn set_host_device(devices: usize) {
    HOST_DEVICE.store(devices as c_int, Ordering::Relaxed);
}

/// An allocation of `bytes` on `device` for the host object at `host` (0: none, a buffer of
/// the runtime's).
#[inline]
pub fn alloc(
    device: usize,
    host: usize,
    bytes: usize,
    perform: impl FnOnce() -> rustomp_plugin::Result<*mut c_void>,
) -> rustomp_plugin::Result<*mut c_void> {
    if !active() {
        return perform();
    }
    data_op(
        device,
        DataOp::Alloc,
        (host, host_device()),
        (0, device as c_int),
        bytes,
        perform,
        |p| *p as usize,
    )
}

/// A copy of `bytes` from the host's `host` to `device_address` on `device`.
#[inline]
pub fn to_device(
    device: usize,
    host: usize,
    device_address: usize,
    bytes: usize,
    perform: impl FnOnce() -> rustomp_plugin::Result<()>,
) -> rustomp_plugin::Result<()> {
    if !active() {
        return perform();
    }
    data_op(
        device,
        DataOp::ToDevice,
        (host, host_device()),
        (device_address, device as c_int),
        bytes,
        perform,
        |_| device_address,
    )
}

/// A copy of `bytes` from `device_address` on `device` to the host's `host`.
#[inline]
pub fn from_device(
    device: usize,
    device_address: usize,
    host: usize,
    bytes: usize,
    perform: impl FnOnce() -> rustomp_plugin::Result<()>,
) -> rustomp_plugin::Result<()> {
    if !active() {
        return perform();
    }
    data_op(
        device,
        DataOp::FromDevice,
        (device_address, device as c_int),
        (host, host_device()),
        bytes,
        perform,
        |_| host,
    )
}

/// The release of `device_address` on `device`.
#[inline]
pub fn delete(
    device: usize,
    device_address: usize,
    perform: impl FnOnce() -> rustomp_plugin::Result<()>,
) -> rustomp_plugin::Result<()> {
    if !active() {
        return perform();
    }
    data_op(
        device,
        DataOp::Delete,
        (device_address, device as c_int),
        (0, -1),
        0,
        perform,
        |_| 0,
    )
}

/// `omp_target_associate_ptr` (`associate`) of `bytes` at the host's `host` with
/// `device_address` on `device`, or `omp_target_disassociate_ptr` of `host`.
pub fn association(
    device: usize,
    host: usize,
    device_address: usize,
    bytes: usize,
    associate: bool,
    perform: impl FnOnce() -> i32,
) -> i32 {
    if !active() {
        return perform();
    }
    let op = if associate {
        DataOp::Associate
    } else {
        DataOp::Disassociate
    };
    let mut status = 0;
    let _ = data_op(
        device,
        op,
        (host, host_device()),
        (device_address, device as c_int),
        bytes,
        || {
            status = perform();
            Ok(())
        },
        |_| device_address,
    );
    status
}

/// A kernel launch of the current construct on `device`, asking for `teams` (0: the default).
#[inline]
pub fn submit<T>(device: usize, teams: u32, launch: impl FnOnce() -> T) -> T {
    if !active() {
        return launch();
    }
    let current = CURRENT.with(Cell::get);
    let (target_data, target_id) = match current {
        Some(c) => (c.target_data, c.target_id),
        None => (std::ptr::null_mut(), 0),
    };
    let mut host_op_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let emi = callback(code::TARGET_SUBMIT_EMI);
    let call_emi = |endpoint: c_int, host_op_id: &mut u64| {
        let Some(f) = emi else { return };
        // SAFETY: `void (*)(ompt_scope_endpoint_t, ompt_data_t *target_data, ompt_id_t
        // *host_op_id, unsigned int requested_num_teams)`.
        unsafe {
            let f: unsafe extern "C" fn(c_int, *mut OmptData, *mut u64, u32) =
                std::mem::transmute(f);
            f(endpoint, target_data, host_op_id, teams);
        }
    };
    if emi.is_some() {
        call_emi(BEGIN, &mut host_op_id);
    } else if let Some(f) = callback(code::TARGET_SUBMIT) {
        // SAFETY: `void (*)(ompt_id_t target_id, ompt_id_t host_op_id, unsigned int
        // requested_num_teams)`.
        unsafe {
            let f: unsafe extern "C" fn(u64, u64, u32) = std::mem::transmute(f);
            f(target_id, host_op_id, teams);
        }
    }
    let timing = trace::start(device, trace::kind::SUBMIT);
    let result = launch();
    if let Some(timing) = timing {
        timing.record(target_id, |end| trace::RecordBody {
            kernel: trace::KernelRecord {
                host_op_id,
                requested_num_teams: teams,
                granted_num_teams: teams,
                end_time: end,
            },
        });
    }
    if emi.is_some() {
        call_emi(END, &mut host_op_id);
    }
    result
}
