//! The whole plugin driven through a fake CUDA driver: "device" memory is host memory, a module
//! is a table of named globals and kernels given by the test, a launch is recorded with its
//! grid, block and parameter values. This checks what the pure unit tests cannot: what is
//! written at image load, the indirect table, the launch environment, the geometry handed to
//! `cuLaunchKernel`, memory kinds, and how driver failures are reported.
//!
//! The fake answers as the real driver does wherever a GPU run showed how it answers (the
//! first run on an H200 with driver 580 / CUDA 13.0 found that every test had trusted a fake
//! that answered one call differently, and no kernel could launch). Each such behaviour is
//! written down in [`REAL_DRIVER`] and checked by a test named after it; a GPU run that shows
//! a new behaviour adds a line there and a test.

/// What real drivers were seen to do, and the test that keeps the fake (and so the plugin)
/// honest about it.
pub const REAL_DRIVER: &[(&str, &str)] = &[
    (
        "cuModuleGetGlobal on the name of a kernel answers CUDA_ERROR_INVALID_VALUE, not \
         CUDA_ERROR_NOT_FOUND (H200, driver 580)",
        "a_kernels_name_is_not_a_global_to_the_driver",
    ),
    (
        "cuModuleGetGlobal and cuModuleGetFunction on a name the module does not define answer \
         CUDA_ERROR_NOT_FOUND (500) (H200, driver 580)",
        "kernels_and_globals_are_looked_up_by_kind",
    ),
    (
        "cuLaunchKernel reads kernelParams as far as the kernel declares parameters: fewer \
         pointers than that read past the array and the host process dies of SIGSEGV inside \
         the driver (H200, driver 580: programs 115, 117, 119, 121, 122, 130); LLVM passes one \
         buffer (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), whose size the driver checks",
        "a_launch_that_disagrees_with_the_kernels_parameters_is_refused",
    ),
    (
        "cuFuncGetParamInfo answers CUDA_ERROR_INVALID_VALUE for an index past the last \
         parameter (CUDA 12.4+, documented in cuda.h)",
        "parameters_come_from_the_driver_or_the_image",
    ),
    (
        "a copy queued on a stream (cuMemcpyHtoDAsync, cuMemcpyDtoHAsync) may run at any time \
         until the stream is synchronized: its buffers must stay untouched until then (the \
         CUDA programming guide); the fake runs queued copies only when their stream is \
         synchronized, queried or launched on",
        "staged_copies_keep_two_pieces_in_flight",
    ),
    (
        "cuPointerGetAttributes answers CUDA_SUCCESS with memory type 0 and buffer id 0 for \
         memory the driver does not know (pageable memory), and CU_MEMORYTYPE_HOST with one \
         nonzero buffer id at every byte of a cuMemAllocHost or cuMemHostRegister range \
         (documented in cuda.h; checked on hardware by `cargo xtask bench gpu`, row \
         driver_pointer_claims)",
        "memory_the_driver_has_pinned_is_copied_directly",
    ),
    (
        "cuEventElapsedTime answers CUDA_ERROR_NOT_READY while either event has not completed, \
         else the milliseconds between the two as a float (about half a microsecond of \
         resolution); an event completes when its stream reaches it (cuda.h)",
        "a_traced_launch_and_copy_carry_the_devices_event_times",
    ),
    (
        "cuFuncGetParamInfo may answer other errors (CUDA_ERROR_NOT_SUPPORTED, 801, on a \
         driver or device that does not offer it; drivers before 12.4 lack the entry point): \
         the launch must not fail on that, the image's records say the parameters",
        "a_driver_that_refuses_parameter_queries_falls_back_to_the_image",
    ),
];

use crate::driver::sys::{
    Api, CUcontext, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUresult, CUstream,
};
use crate::{CudaDriver, CudaPlugin};
use core::ffi::{c_char, c_int, c_uint, c_void};
use rustomp_abi::{exec_mode, FptrMapEntry};
use rustomp_plugin::layout::IndirectTable;
use rustomp_plugin::{AllocKind, ErrorKind, ImageInfo, LaunchConfig, Plugin};
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard};

const OK: CUresult = 0;
const INVALID_VALUE: CUresult = 1;
const OUT_OF_MEMORY: CUresult = 2;
const NO_DEVICE: CUresult = 100;
const NOT_FOUND: CUresult = 500;
const ILLEGAL_ADDRESS: CUresult = 700;

/// A kernel of a fake module: its name and how many 64-bit parameters it takes.
#[derive(Clone)]
struct FakeKernel {
    name: String,
    params: usize,
}

#[derive(Clone, Default)]
struct ModuleSpec {
    /// name -> initial contents
    globals: Vec<(String, Vec<u8>)>,
    kernels: Vec<FakeKernel>,
}

struct FakeModule {
    globals: HashMap<String, (CUdeviceptr, usize)>,
    kernels: HashMap<String, usize>,
}

#[derive(Debug, Clone)]
struct Launch {
    kernel: String,
    grid: u32,
    block: u32,
    /// y and z of the grid and the block.
    grid_yz: (u32, u32),
    block_yz: (u32, u32),
    shared: u32,
    params: Vec<u64>,
    /// The launch environment's 16 bytes as the kernel would read them.
    launch_env: Vec<u8>,
    /// For a kernel without parameters: the pointers between `__init_array_start` and `_end`.
    init_array: Vec<u64>,
    /// Whether the parameters came as one buffer (`extra`) rather than `kernelParams`.
    as_buffer: bool,
}

#[derive(Default)]
struct Fake {
    init_result: CUresult,
    capability: (c_int, c_int),
    next_module: ModuleSpec,
    modules: HashMap<usize, FakeModule>,
    /// function handle -> (name, params)
    functions: HashMap<usize, FakeKernel>,
    next_handle: usize,
    /// address -> size of live allocations, per kind
    device_allocs: HashMap<u64, usize>,
    host_allocs: HashMap<u64, usize>,
    managed_allocs: HashMap<u64, usize>,
    launches: Vec<Launch>,
    /// Fail the next call of this entry point with this code (after `fail_skip` calls).
    fail: Option<(&'static str, CUresult)>,
    fail_skip: usize,
    /// Every copy: (entry point, source, destination, bytes).
    copies: Vec<(&'static str, u64, u64, usize)>,
    current_context: usize,
    limits: Vec<(c_int, usize)>,
    /// The port a running fake kernel posted a host call to, until the plugin served it.
    host_call_pending: Option<u64>,
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS` (HMM or ATS); the H200 VM had none.
    pageable_memory_access: bool,
    /// Copies queued on a stream and not yet run: (stream, source, destination, bytes); an
    /// event recorded on a stream is a "copy" of `usize::MAX` bytes from the event's handle.
    queued: Vec<(usize, u64, u64, usize)>,
    /// The most copies queued at once.
    most_queued: usize,
    /// Events: handle -> the host's monotonic time when its stream reached it (None: not yet).
    events: HashMap<usize, Option<u64>>,
    /// Ranges the user or the plugin registered (`cuMemHostRegister`): start -> bytes.
    registered: HashMap<u64, usize>,
    /// Every name asked of `cuModuleGetGlobal` and `cuModuleGetFunction`, in order.
    global_lookups: Vec<String>,
    function_lookups: Vec<String>,
}

static FAKE: Mutex<Option<Fake>> = Mutex::new(None);
/// Tests share the fake driver: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn fake() -> MutexGuard<'static, Option<Fake>> {
    FAKE.lock().unwrap_or_else(|e| e.into_inner())
}

fn with<T>(f: impl FnOnce(&mut Fake) -> T) -> T {
    f(fake().as_mut().expect("fake driver installed"))
}

/// `Some(code)` when the test asked `call` to fail now.
fn failing(call: &'static str) -> Option<CUresult> {
    with(|f| match f.fail {
        Some((c, _)) if c == call && f.fail_skip > 0 => {
            f.fail_skip -= 1;
            None
        }
        Some((c, code)) if c == call => {
            f.fail = None;
            Some(code)
        }
        _ => None,
    })
}

fn leak(bytes: usize) -> u64 {
    Box::leak(vec![0u8; bytes.max(1)].into_boxed_slice()).as_mut_ptr() as u64
}

/// # Safety
/// `address` came from `leak(bytes)` and is not used afterwards.
unsafe fn unleak(address: u64, bytes: usize) {
    // SAFETY: guaranteed by the caller: the same pointer and length `leak` produced.
    drop(unsafe {
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            address as *mut u8,
            bytes.max(1),
        ))
    });
}

unsafe extern "C" fn init(_flags: c_uint) -> CUresult {
    with(|f| f.init_result)
}
unsafe extern "C" fn driver_get_version(v: *mut c_int) -> CUresult {
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { *v = 13000 };
    OK
}
unsafe extern "C" fn device_get_count(n: *mut c_int) -> CUresult {
    // SAFETY: as above.
    unsafe { *n = 1 };
    OK
}
unsafe extern "C" fn device_get(d: *mut CUdevice, ordinal: c_int) -> CUresult {
    if ordinal != 0 {
        return 101;
    }
    // SAFETY: as above.
    unsafe { *d = 0 };
    OK
}
unsafe extern "C" fn device_get_attribute(
    v: *mut c_int,
    attribute: c_int,
    _d: CUdevice,
) -> CUresult {
    use crate::driver::sys::device_attribute as a;
    let (major, minor) = with(|f| f.capability);
    let pageable = with(|f| f.pageable_memory_access);
    let value = match attribute {
        a::PAGEABLE_MEMORY_ACCESS => i32::from(pageable),
        a::COMPUTE_CAPABILITY_MAJOR => major,
        a::COMPUTE_CAPABILITY_MINOR => minor,
        a::MULTIPROCESSOR_COUNT => 132,
        a::MAX_THREADS_PER_MULTIPROCESSOR => 2048,
        a::WARP_SIZE => 32,
        a::MAX_BLOCK_DIM_X => 1024,
        a::MAX_GRID_DIM_X => i32::MAX,
        _ => 0,
    };
    // SAFETY: as above.
    unsafe { *v = value };
    OK
}
unsafe extern "C" fn device_get_name(name: *mut c_char, len: c_int, _d: CUdevice) -> CUresult {
    let text = b"Fake H100\0";
    assert!(len as usize >= text.len());
    // SAFETY: the plugin's buffer holds `len` bytes.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr() as *const c_char, name, text.len()) };
    OK
}
unsafe extern "C" fn device_total_mem(bytes: *mut usize, _d: CUdevice) -> CUresult {
    // SAFETY: as above.
    unsafe { *bytes = 80 << 30 };
    OK
}
unsafe extern "C" fn get_error_name(code: CUresult, out: *mut *const c_char) -> CUresult {
    let name: &'static CStr = match code {
        INVALID_VALUE => c"CUDA_ERROR_INVALID_VALUE",
        OUT_OF_MEMORY => c"CUDA_ERROR_OUT_OF_MEMORY",
        NO_DEVICE => c"CUDA_ERROR_NO_DEVICE",
        NOT_FOUND => c"CUDA_ERROR_NOT_FOUND",
        ILLEGAL_ADDRESS => c"CUDA_ERROR_ILLEGAL_ADDRESS",
        _ => return INVALID_VALUE,
    };
    // SAFETY: as above.
    unsafe { *out = name.as_ptr() };
    OK
}
unsafe extern "C" fn get_error_string(code: CUresult, out: *mut *const c_char) -> CUresult {
    let text: &'static CStr = match code {
        INVALID_VALUE => c"invalid argument",
        OUT_OF_MEMORY => c"out of memory",
        ILLEGAL_ADDRESS => c"an illegal memory access was encountered",
        _ => return INVALID_VALUE,
    };
    // SAFETY: as above.
    unsafe { *out = text.as_ptr() };
    OK
}
unsafe extern "C" fn primary_ctx_retain(c: *mut CUcontext, _d: CUdevice) -> CUresult {
    // SAFETY: as above.
    unsafe { *c = 0x1000 as CUcontext };
    OK
}
unsafe extern "C" fn primary_ctx_release(_d: CUdevice) -> CUresult {
    OK
}
unsafe extern "C" fn primary_ctx_get_state(
    _d: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    // SAFETY: as above.
    unsafe {
        *flags = 0;
        *active = 0;
    }
    OK
}
unsafe extern "C" fn primary_ctx_set_flags(_d: CUdevice, _flags: c_uint) -> CUresult {
    OK
}
unsafe extern "C" fn ctx_set_current(c: CUcontext) -> CUresult {
    with(|f| f.current_context = c as usize);
    OK
}
unsafe extern "C" fn ctx_set_limit(which: c_int, value: usize) -> CUresult {
    with(|f| f.limits.push((which, value)));
    OK
}
unsafe extern "C" fn stream_create(s: *mut CUstream, _flags: c_uint) -> CUresult {
    let handle = with(|f| {
        f.next_handle += 1;
        f.next_handle
    });
    // SAFETY: as above.
    unsafe { *s = (0x5000 + handle) as CUstream };
    OK
}
unsafe extern "C" fn stream_destroy(_s: CUstream) -> CUresult {
    OK
}
/// Runs the copies queued on `stream`, in order (what finishing its work means).
fn run_queued(stream: CUstream) {
    let copies: Vec<_> = with(|f| {
        let (mine, others) = std::mem::take(&mut f.queued)
            .into_iter()
            .partition(|c| c.0 == stream as usize);
        f.queued = others;
        mine
    });
    for (_, src, dst, bytes) in copies {
        if bytes == usize::MAX {
            let now = rustomp_plugin::monotonic_ns();
            with(|f| f.events.insert(src as usize, Some(now)));
            continue;
        }
        // SAFETY: fake device memory is host memory; the plugin keeps both ranges valid until
        // it synchronizes the stream, which is now.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    }
}
unsafe extern "C" fn event_create(event: *mut *mut c_void, _flags: c_uint) -> CUresult {
    let handle = with(|f| {
        f.next_handle += 1;
        let handle = 0x9000 + f.next_handle;
        f.events.insert(handle, None);
        handle
    });
    // SAFETY: the plugin's out-value.
    unsafe { *event = handle as *mut c_void };
    OK
}
unsafe extern "C" fn event_destroy(event: *mut c_void) -> CUresult {
    match with(|f| f.events.remove(&(event as usize))) {
        Some(_) => OK,
        None => 400, // CUDA_ERROR_INVALID_HANDLE
    }
}
/// Stamped when its stream reaches it, in order with the stream's copies.
unsafe extern "C" fn event_record(event: *mut c_void, stream: CUstream) -> CUresult {
    with(|f| {
        f.events.insert(event as usize, None);
        f.queued
            .push((stream as usize, event as u64, 0, usize::MAX));
    });
    OK
}
unsafe extern "C" fn event_synchronize(event: *mut c_void) -> CUresult {
    let stream = with(|f| {
        f.queued
            .iter()
            .find(|q| q.3 == usize::MAX && q.1 == event as u64)
            .map(|q| q.0)
    });
    if let Some(stream) = stream {
        run_queued(stream as CUstream);
    }
    OK
}
/// As cuda.h documents: CUDA_ERROR_NOT_READY while either event has not completed, else the
/// milliseconds between them as a float.
unsafe extern "C" fn event_elapsed_time(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> CUresult {
    let times = with(|f| {
        (
            f.events.get(&(start as usize)).copied().flatten(),
            f.events.get(&(end as usize)).copied().flatten(),
        )
    });
    let (Some(a), Some(b)) = times else {
        return 600; // CUDA_ERROR_NOT_READY
    };
    // SAFETY: the plugin's out-value.
    unsafe { *ms = ((b as f64 - a as f64) / 1e6) as f32 };
    OK
}
/// Queues a copy on `stream` (run by `run_queued`).
fn queue_copy(call: &'static str, stream: CUstream, src: u64, dst: u64, bytes: usize) {
    with(|f| {
        f.copies.push((call, src, dst, bytes));
        f.queued.push((stream as usize, src, dst, bytes));
        let copies = f.queued.iter().filter(|q| q.3 != usize::MAX).count();
        f.most_queued = f.most_queued.max(copies);
    });
}
unsafe extern "C" fn stream_query(s: CUstream) -> CUresult {
    if let Some(code) = failing("cuStreamQuery") {
        return code;
    }
    run_queued(s);
    // A kernel that calls the host is "running" until its request was served.
    let pending = with(|f| f.host_call_pending.take());
    match pending {
        Some(port) if !port_done(port) => {
            with(|f| f.host_call_pending = Some(port));
            600
        }
        _ => OK,
    }
}
fn port_done(port: u64) -> bool {
    // SAFETY: the fake kernel's port pointer: the plugin's pinned (here: host) memory.
    unsafe {
        (*(port as *const rustomp_abi::HostCallPort)).state == rustomp_abi::host_call_state::DONE
    }
}
unsafe extern "C" fn stream_synchronize(s: CUstream) -> CUresult {
    run_queued(s);
    failing("cuStreamSynchronize").unwrap_or(OK)
}
unsafe extern "C" fn mem_alloc(p: *mut CUdeviceptr, bytes: usize) -> CUresult {
    if let Some(code) = failing("cuMemAlloc_v2") {
        return code;
    }
    let address = leak(bytes);
    with(|f| f.device_allocs.insert(address, bytes));
    // SAFETY: as above.
    unsafe { *p = address };
    OK
}
unsafe extern "C" fn mem_free(p: CUdeviceptr) -> CUresult {
    let known = with(|f| {
        f.device_allocs
            .remove(&p)
            .or_else(|| f.managed_allocs.remove(&p))
    });
    match known {
        // SAFETY: allocated by `leak` with this size, removed from the table above.
        Some(bytes) => unsafe {
            unleak(p, bytes);
            OK
        },
        None => INVALID_VALUE,
    }
}
unsafe extern "C" fn mem_alloc_host(p: *mut *mut c_void, bytes: usize) -> CUresult {
    let address = leak(bytes);
    with(|f| f.host_allocs.insert(address, bytes));
    // SAFETY: as above.
    unsafe { *p = address as *mut c_void };
    OK
}
unsafe extern "C" fn mem_free_host(p: *mut c_void) -> CUresult {
    match with(|f| f.host_allocs.remove(&(p as u64))) {
        // SAFETY: as in `mem_free`.
        Some(bytes) => unsafe {
            unleak(p as u64, bytes);
            OK
        },
        None => INVALID_VALUE,
    }
}
unsafe extern "C" fn mem_alloc_managed(
    p: *mut CUdeviceptr,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    let address = leak(bytes);
    with(|f| f.managed_allocs.insert(address, bytes));
    // SAFETY: as above.
    unsafe { *p = address };
    OK
}
unsafe extern "C" fn memcpy_htod(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    s: CUstream,
) -> CUresult {
    if let Some(code) = failing("cuMemcpyHtoDAsync_v2") {
        return code;
    }
    queue_copy("cuMemcpyHtoDAsync_v2", s, src as u64, dst, bytes);
    OK
}
unsafe extern "C" fn memcpy_dtoh(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    s: CUstream,
) -> CUresult {
    if let Some(code) = failing("cuMemcpyDtoHAsync_v2") {
        return code;
    }
    queue_copy("cuMemcpyDtoHAsync_v2", s, src, dst as u64, bytes);
    OK
}
unsafe extern "C" fn memcpy_dtod(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: fake device memory is host memory; the plugin passes valid ranges.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    OK
}
unsafe extern "C" fn module_load(
    m: *mut CUmodule,
    image: *const c_void,
    _n: c_uint,
    _o: *mut c_int,
    _v: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the plugin passes a complete image; the first four bytes exist.
    let magic = unsafe { std::slice::from_raw_parts(image as *const u8, 4) };
    if magic != b"\x7fELF" {
        return 200;
    }
    let handle = with(|f| {
        f.next_handle += 1;
        let handle = 0x9000 + f.next_handle;
        let spec = f.next_module.clone();
        let mut globals = HashMap::new();
        for (name, contents) in spec.globals {
            let address = leak(contents.len());
            // SAFETY: `leak` returned contents.len() bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(contents.as_ptr(), address as *mut u8, contents.len())
            };
            globals.insert(name, (address, contents.len()));
        }
        let mut kernels = HashMap::new();
        for k in spec.kernels {
            f.next_handle += 1;
            let function = 0x20000 + f.next_handle;
            f.functions.insert(function, k.clone());
            kernels.insert(k.name, function);
        }
        f.modules.insert(handle, FakeModule { globals, kernels });
        handle
    });
    // SAFETY: as above.
    unsafe { *m = handle as CUmodule };
    OK
}
unsafe extern "C" fn module_unload(m: CUmodule) -> CUresult {
    if with(|f| f.modules.remove(&(m as usize))).is_some() {
        OK
    } else {
        400
    }
}
unsafe extern "C" fn module_get_function(
    out: *mut CUfunction,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    // SAFETY: the plugin passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    if let Some(code) = failing("cuModuleGetFunction") {
        return code;
    }
    match with(|f| {
        f.function_lookups.push(name.clone());
        f.modules
            .get(&(m as usize))
            .and_then(|module| module.kernels.get(&name).copied())
    }) {
        Some(function) => {
            // SAFETY: as above.
            unsafe { *out = function as CUfunction };
            OK
        }
        None => NOT_FOUND,
    }
}
unsafe extern "C" fn module_get_global(
    p: *mut CUdeviceptr,
    bytes: *mut usize,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    // SAFETY: as above.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    if let Some(code) = failing("cuModuleGetGlobal_v2") {
        return code;
    }
    let found = with(|f| {
        f.global_lookups.push(name.clone());
        let module = f.modules.get(&(m as usize))?;
        // The real driver's answer for the name of a function (see REAL_DRIVER).
        if module.kernels.contains_key(&name) {
            return Some(Err(INVALID_VALUE));
        }
        Some(module.globals.get(&name).copied().ok_or(NOT_FOUND))
    });
    match found {
        Some(Ok((address, size))) => {
            // SAFETY: as above.
            unsafe {
                *p = address;
                *bytes = size;
            }
            OK
        }
        Some(Err(code)) => code,
        None => 400,
    }
}
/// The fake kernel behind a function handle.
fn kernel_of(function: CUfunction) -> Option<FakeKernel> {
    with(|f| f.functions.get(&(function as usize)).cloned())
}
unsafe extern "C" fn func_get_param_count(function: CUfunction, count: *mut usize) -> CUresult {
    let Some(kernel) = kernel_of(function) else {
        return 400;
    };
    // SAFETY: the plugin passes a live out-pointer.
    unsafe { *count = kernel.params };
    OK
}
unsafe extern "C" fn func_get_param_info(
    function: CUfunction,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    let Some(kernel) = kernel_of(function) else {
        return 400;
    };
    if index >= kernel.params {
        return INVALID_VALUE;
    }
    // SAFETY: as above; `size` may be null (cuda.h).
    unsafe {
        *offset = 8 * index;
        if !size.is_null() {
            *size = 8;
        }
    }
    OK
}
unsafe extern "C" fn func_get_attribute(
    v: *mut c_int,
    _attribute: c_int,
    _f: CUfunction,
) -> CUresult {
    // SAFETY: as above.
    unsafe { *v = 1024 };
    OK
}
unsafe extern "C" fn func_set_attribute(
    _f: CUfunction,
    _attribute: c_int,
    _value: c_int,
) -> CUresult {
    OK
}
#[allow(clippy::too_many_arguments, reason = "cuLaunchKernel's own signature")]
unsafe extern "C" fn launch_kernel(
    function: CUfunction,
    gx: c_uint,
    gy: c_uint,
    gz: c_uint,
    bx: c_uint,
    by: c_uint,
    bz: c_uint,
    shared: c_uint,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    if let Some(code) = failing("cuLaunchKernel") {
        return code;
    }
    // A stream runs its work in order: copies queued before the launch come first.
    run_queued(stream);
    let Some(kernel) = kernel_of(function) else {
        return 400;
    };
    let as_buffer = !extra.is_null();
    let values: Vec<u64> = if as_buffer {
        // `extra`: key/value pairs up to CU_LAUNCH_PARAM_END (0); the buffer's size must be
        // the kernel's parameter size, else CUDA_ERROR_INVALID_VALUE.
        let (mut buffer, mut size) = (std::ptr::null::<u8>(), None);
        let mut at = 0;
        loop {
            // SAFETY: the plugin's array ends with CU_LAUNCH_PARAM_END.
            let key = unsafe { *extra.add(at) } as usize;
            if key == 0 {
                break;
            }
            // SAFETY: every key but the end has a value after it.
            let value = unsafe { *extra.add(at + 1) };
            match key {
                1 => buffer = value as *const u8,
                // SAFETY: the value of CU_LAUNCH_PARAM_BUFFER_SIZE points at a size_t.
                2 => size = Some(unsafe { *(value as *const usize) }),
                _ => return INVALID_VALUE,
            }
            at += 2;
        }
        if size != Some(8 * kernel.params) || (kernel.params > 0 && buffer.is_null()) {
            return INVALID_VALUE;
        }
        (0..kernel.params)
            // SAFETY: the buffer holds `size` bytes, checked above.
            .map(|i| unsafe { (buffer.add(8 * i) as *const u64).read_unaligned() })
            .collect()
    } else {
        // As the real driver: one pointer per parameter the kernel declares, however many the
        // caller's array holds (see REAL_DRIVER); a short array is read past its end.
        (0..kernel.params)
            // SAFETY: only if the caller passed enough: what this fake exists to expose.
            .map(|i| unsafe { *(*params.add(i) as *const u64) })
            .collect()
    };
    let mut launch_env = vec![0u8; 16];
    let mut init_array = Vec::new();
    if let Some(&env) = values.first() {
        // SAFETY: the first parameter is the launch environment, 16 bytes of fake device memory.
        unsafe { std::ptr::copy_nonoverlapping(env as *const u8, launch_env.as_mut_ptr(), 16) };
    } else {
        let bounds = with(|f| {
            let m = f
                .modules
                .values()
                .find(|m| m.globals.contains_key("__init_array_start"))?;
            Some((
                m.globals["__init_array_start"].0,
                m.globals["__init_array_end"].0,
            ))
        });
        if let Some((start, end)) = bounds {
            // SAFETY: the globals are 8-byte fake device memory holding addresses of an array
            // of u64 the plugin allocated.
            let (first, last) = unsafe { (*(start as *const u64), *(end as *const u64)) };
            init_array = (first..last)
                .step_by(8)
                // SAFETY: as above: each address lies in that array.
                .map(|p| unsafe { *(p as *const u64) })
                .collect();
        }
    }
    if kernel.name == "host_caller" {
        // The device side of `__llvm_omp_host_call`: post `add_pair(20, 22)` to the port the
        // plugin published, and keep "running" until it is served.
        let port =
            u64_at(&global_bytes("__rustomp_host_call_port"), 0) as *mut rustomp_abi::HostCallPort;
        // SAFETY: the plugin's pinned port (host memory in the fake).
        unsafe {
            (*port).function = add_pair as unsafe extern "C" fn(*mut c_void) -> u64 as usize as u64;
            (*port).size = 16;
            let data = &mut (*port).data;
            data[..8].copy_from_slice(&20u64.to_ne_bytes());
            data[8..16].copy_from_slice(&22u64.to_ne_bytes());
            (*port).state = rustomp_abi::host_call_state::REQUEST;
        }
        with(|f| f.host_call_pending = Some(port as u64));
    }
    with(|f| {
        f.launches.push(Launch {
            kernel: kernel.name,
            grid: gx,
            block: bx,
            grid_yz: (gy, gz),
            block_yz: (by, bz),
            shared,
            params: values,
            launch_env,
            init_array,
            as_buffer,
        })
    });
    OK
}

/// The fake driver's table; `$param_queries` says whether it is new enough (CUDA 12.4+) to
/// answer `cuFuncGetParamInfo` and `cuFuncGetParamCount`.
/// `cuPointerGetAttributes` as cuda.h documents it: no error for an address the driver does
/// not know, whose attributes read 0. The fake's buffer id is its allocation's start.
unsafe extern "C" fn pointer_get_attributes(
    count: c_uint,
    attributes: *mut c_int,
    data: *mut *mut c_void,
    address: CUdeviceptr,
) -> CUresult {
    let holding = |ranges: &HashMap<u64, usize>| {
        ranges
            .iter()
            .find(|(&start, &bytes)| address >= start && address < start + bytes as u64)
            .map(|(&start, _)| start)
    };
    let (memory_type, id) = with(|f| {
        if let Some(start) = holding(&f.host_allocs).or_else(|| holding(&f.registered)) {
            (1u32, start) // CU_MEMORYTYPE_HOST
        } else if let Some(start) = holding(&f.device_allocs).or_else(|| holding(&f.managed_allocs))
        {
            (2, start) // CU_MEMORYTYPE_DEVICE
        } else {
            (0, 0)
        }
    });
    for i in 0..count as usize {
        // SAFETY: the caller passes `count` attributes and as many out-pointers of the types
        // cuda.h gives them.
        unsafe {
            match *attributes.add(i) {
                2 => *(*data.add(i) as *mut c_uint) = memory_type,
                7 => *(*data.add(i) as *mut u64) = id,
                _ => return INVALID_VALUE,
            }
        }
    }
    OK
}
/// `cuMemHostRegister`: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (712) for a range that
/// overlaps a registered one or pinned memory the driver allocated.
unsafe extern "C" fn mem_host_register(
    host: *mut c_void,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    if let Some(code) = failing("cuMemHostRegister_v2") {
        return code;
    }
    let (start, end) = (host as u64, host as u64 + bytes as u64);
    with(|f| {
        let overlaps = f
            .registered
            .iter()
            .chain(f.host_allocs.iter())
            .any(|(&s, &n)| s < end && start < s + n as u64);
        if overlaps {
            return 712;
        }
        f.registered.insert(start, bytes);
        OK
    })
}
/// `cuMemHostUnregister`: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED (713) for anything but the
/// start of a registered range.
unsafe extern "C" fn mem_host_unregister(host: *mut c_void) -> CUresult {
    with(|f| match f.registered.remove(&(host as u64)) {
        Some(_) => OK,
        None => 713,
    })
}

macro_rules! fake_api {
    ($param_queries:expr) => {
        Api {
            init,
            driver_get_version,
            device_get_count,
            device_get,
            device_get_attribute,
            device_get_name,
            device_total_mem,
            get_error_name,
            get_error_string,
            primary_ctx_retain,
            primary_ctx_release,
            primary_ctx_get_state,
            primary_ctx_set_flags,
            ctx_set_current,
            ctx_set_limit,
            stream_create,
            stream_destroy,
            stream_synchronize,
            stream_query,
            mem_alloc,
            mem_free,
            mem_alloc_host,
            mem_free_host,
            mem_alloc_managed,
            memcpy_htod_async: memcpy_htod,
            memcpy_dtoh_async: memcpy_dtoh,
            memcpy_dtod_async: memcpy_dtod,
            module_load_data_ex: module_load,
            module_unload,
            module_get_function,
            module_get_global,
            func_get_attribute,
            func_set_attribute,
            launch_kernel,
            func_get_param_info: if $param_queries {
                Some(func_get_param_info)
            } else {
                None
            },
            func_get_param_count: if $param_queries {
                Some(func_get_param_count)
            } else {
                None
            },
            pointer_get_attributes: Some(pointer_get_attributes),
            mem_host_register: Some(mem_host_register),
            mem_host_unregister: Some(mem_host_unregister),
            event_create: Some(event_create),
            event_destroy: Some(event_destroy),
            event_record: Some(event_record),
            event_synchronize: Some(event_synchronize),
            event_elapsed_time: Some(event_elapsed_time),
        }
    };
}

fn api() -> &'static Api {
    static API: Api = fake_api!(true);
    &API
}

/// A driver before CUDA 12.4: no parameter queries.
fn api_without_parameter_queries() -> &'static Api {
    static API: Api = fake_api!(false);
    &API
}

/// `cuFuncGetParamInfo` of a driver that has the entry point but does not offer the query.
unsafe extern "C" fn func_get_param_info_not_supported(
    _function: CUfunction,
    _index: usize,
    _offset: *mut usize,
    _size: *mut usize,
) -> CUresult {
    801 // CUDA_ERROR_NOT_SUPPORTED
}

/// A driver with the parameter queries that refuses them.
fn api_refusing_parameter_queries() -> &'static Api {
    static API: Api = Api {
        func_get_param_info: Some(func_get_param_info_not_supported),
        ..fake_api!(true)
    };
    &API
}

/// Installs a fresh fake driver (a GPU of capability `capability`) for one test.
fn install(capability: (c_int, c_int)) -> MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    *fake() = Some(Fake {
        capability,
        ..Fake::default()
    });
    serial
}

/// A minimal complete cubin for `sm`: an ELF header with no sections.
fn cubin(sm: u32) -> Vec<u8> {
    rustomp_plugin::image::testing::elf(190, 8, sm << 8 | 4)
}

fn image(bytes: &[u8]) -> ImageInfo<'_> {
    ImageInfo {
        bytes,
        triple: "nvptx64-nvidia-cuda".into(),
        arch: String::new(),
    }
}

/// A kernel environment global for `mode`, with a teams reduction of `reduction` bytes x 1024.
fn kernel_environment(mode: u8, reduction: i32) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[2] = mode;
    b[20..24].copy_from_slice(&reduction.to_le_bytes());
    b[24..28].copy_from_slice(&(if reduction > 0 { 1024i32 } else { 0 }).to_le_bytes());
    b
}

fn global_bytes(name: &str) -> Vec<u8> {
    with(|f| {
        let module = f
            .modules
            .values()
            .find(|m| m.globals.contains_key(name))
            .expect("module with the global");
        let (address, size) = module.globals[name];
        // SAFETY: fake globals are host memory of `size` bytes.
        unsafe { std::slice::from_raw_parts(address as *const u8, size) }.to_vec()
    })
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap())
}

fn standard_module() -> ModuleSpec {
    ModuleSpec {
        globals: vec![
            ("__omp_rtl_device_environment".into(), vec![0; 48]),
            ("__omp_offloading_fptr_map_p".into(), vec![0; 8]),
            ("__omp_offloading_fptr_map_size".into(), vec![0; 8]),
            ("__rustomp_indirect_call_table".into(), vec![0; 8]),
            (
                "spmd_kernel_environment".into(),
                kernel_environment(exec_mode::SPMD, 0),
            ),
            (
                "generic_kernel_environment".into(),
                kernel_environment(exec_mode::GENERIC, 0),
            ),
            (
                "reduce_kernel_environment".into(),
                kernel_environment(exec_mode::SPMD, 8),
            ),
            ("counter".into(), 7u32.to_le_bytes().to_vec()),
        ],
        kernels: vec![
            FakeKernel {
                name: "spmd".into(),
                params: 3,
            },
            FakeKernel {
                name: "generic".into(),
                params: 1,
            },
            FakeKernel {
                name: "reduce".into(),
                params: 1,
            },
            FakeKernel {
                name: "plain".into(),
                params: 1,
            },
        ],
    }
}

#[test]
fn devices_and_compatibility_come_from_the_driver() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    assert!(plugin.is_compatible(&image(&cubin(90))));
    assert!(!plugin.is_compatible(&ImageInfo {
        bytes: b"\x7fELF",
        triple: "x86_64-pc-linux-gnu".into(),
        arch: String::new()
    }));
    assert_eq!(plugin.number_of_devices(), 1);
    assert_eq!(plugin.unavailable_reason(), None);
    assert!(plugin.device_compatibility(0, &image(&cubin(90))).is_ok());
    let why = plugin
        .device_compatibility(0, &image(&cubin(80)))
        .unwrap_err();
    assert!(why.contains("sm_80") && why.contains("sm_90"), "{why}");
    assert!(plugin.device_compatibility(0, &image(&cubin(100))).is_err());
    assert!(plugin.device_compatibility(1, &image(&cubin(90))).is_err());
}

#[test]
fn no_gpu_and_no_driver_mean_zero_devices_with_a_reason() {
    let _serial = install((9, 0));
    with(|f| f.init_result = NO_DEVICE);
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    assert_eq!(plugin.number_of_devices(), 0);
    let why = plugin.unavailable_reason().unwrap();
    assert!(
        why.contains("CUDA_ERROR_NO_DEVICE") && why.contains("cuInit"),
        "{why}"
    );
    assert!(plugin.open_device(0, 0, 1).is_err());

    let absent = CudaPlugin::new(CudaDriver::with_library("/nonexistent/libcuda.so.1"));
    assert_eq!(absent.number_of_devices(), 0);
    let why = absent.unavailable_reason().unwrap();
    assert!(
        why.starts_with("no CUDA driver") && why.contains("/nonexistent/libcuda.so.1"),
        "{why}"
    );
}

#[test]
fn loading_an_image_publishes_the_device_environment_and_indirect_table() {
    let _serial = install((9, 0));
    with(|f| f.next_module = standard_module());
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 5, 7).unwrap();
    let bytes = cubin(90);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let env = global_bytes("__omp_rtl_device_environment");
    assert_eq!(
        u32::from_le_bytes(env[4..8].try_into().unwrap()),
        7,
        "num_devices"
    );
    assert_eq!(
        u32::from_le_bytes(env[8..12].try_into().unwrap()),
        5,
        "device_num"
    );
    assert_eq!(u64_at(&env, 16), 1_000_000_000, "clock frequency");
    assert_eq!(u64_at(&env, 40), 132 * (2048 / 32), "hardware parallelism");
    assert_eq!(u64_at(&env, 24), 0, "no table yet");

    let table = [
        FptrMapEntry {
            host: 0x300,
            device: 0xc,
        },
        FptrMapEntry {
            host: 0x100,
            device: 0xa,
        },
        FptrMapEntry {
            host: 0x200,
            device: 0xb,
        },
    ];
    loaded
        .set_indirect_table(&IndirectTable::new(table.to_vec()))
        .unwrap();
    let env = global_bytes("__omp_rtl_device_environment");
    let (address, size) = (u64_at(&env, 24), u64_at(&env, 32));
    assert_eq!(size, 3);
    assert_ne!(address, 0);
    assert_eq!(
        u64_at(&global_bytes("__omp_offloading_fptr_map_p"), 0),
        address
    );
    assert_eq!(
        u64_at(&global_bytes("__omp_offloading_fptr_map_size"), 0),
        3
    );
    // Ours: one pointer to the block whose header holds the count, the entries right after.
    let block = u64_at(&global_bytes("__rustomp_indirect_call_table"), 0);
    assert_eq!(block + 16, address, "the entries follow the header");
    // SAFETY: the fake device block is host memory: the 16-byte header, then the entries.
    let header = unsafe { std::slice::from_raw_parts(block as *const u8, 16) };
    assert_eq!(u64_at(header, 0), 3);
    // SAFETY: the fake device table is host memory of 3 entries.
    let uploaded = unsafe { std::slice::from_raw_parts(address as *const u8, 48) };
    let hosts: Vec<u64> = (0..3).map(|i| u64_at(uploaded, i * 16)).collect();
    let devices: Vec<u64> = (0..3).map(|i| u64_at(uploaded, i * 16 + 8)).collect();
    assert_eq!(hosts, vec![0x100, 0x200, 0x300], "sorted by host address");
    assert_eq!(devices, vec![0xa, 0xb, 0xc]);

    // Globals and kernels by name.
    let counter = loaded.global("counter").unwrap().unwrap();
    assert_eq!(counter.size, 4);
    let mut value = 0u32;
    // SAFETY: `counter` is a 4-byte device global of this device.
    unsafe { device.copy_from_device(&mut value as *mut u32 as *mut c_void, counter.address, 4) }
        .unwrap();
    assert_eq!(value, 7);
    assert!(loaded.kernel("spmd").unwrap().is_some());
    assert!(loaded.kernel("missing").unwrap().is_none());
    assert!(loaded.global("missing").unwrap().is_none());
    drop(loaded);
    assert!(
        with(|f| f.modules.is_empty()),
        "the module is unloaded with the image"
    );
}

#[test]
fn launches_get_llvm_geometry_and_a_launch_environment() {
    let _serial = install((9, 0));
    with(|f| f.next_module = standard_module());
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = cubin(90);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let spmd = loaded.kernel("spmd").unwrap().unwrap();
    let generic = loaded.kernel("generic").unwrap().unwrap();
    let reduce = loaded.kernel("reduce").unwrap().unwrap();
    let plain = loaded.kernel("plain").unwrap().unwrap();

    let args = [0x1111 as *mut c_void, 42 as *mut c_void];
    let loop_of_128 = LaunchConfig {
        tripcount: 128,
        ..Default::default()
    };
    // SAFETY: the fake kernel takes these parameters.
    unsafe { loaded.launch(spmd, &args, &loop_of_128) }.unwrap();
    let teams = LaunchConfig {
        num_teams: 2,
        thread_limit: 64,
        dyn_shared_bytes: 256,
        ..Default::default()
    };
    // SAFETY: as above.
    unsafe { loaded.launch(generic, &[], &teams) }.unwrap();
    // SAFETY: as above.
    unsafe { loaded.launch(reduce, &[], &Default::default()) }.unwrap();
    let bare = LaunchConfig {
        num_teams: 3,
        thread_limit: 5,
        teams_yz: [2, 0],
        threads_yz: [4, 2],
        ..Default::default()
    };
    // SAFETY: as above.
    unsafe { loaded.launch(plain, &[], &bare) }.unwrap();

    let launches = with(|f| f.launches.clone());
    assert_eq!(launches.len(), 4);
    let l = &launches[0];
    assert_eq!((l.kernel.as_str(), l.grid, l.block), ("spmd", 4, 32));
    assert_eq!(&l.params[1..], &[0x1111, 42]);
    assert_eq!(
        l.launch_env,
        vec![0u8; 16],
        "no reduction: the shared zeroed environment"
    );
    let l = &launches[1];
    assert_eq!(
        (l.grid, l.block, l.shared),
        (2, 96, 256),
        "generic: thread limit plus a warp"
    );
    let l = &launches[2];
    assert_eq!((l.grid, l.block), (3200, 128));
    assert_eq!(&l.launch_env[..8], &[0u8; 8], "zeroed counters");
    let buffer = u64_at(&l.launch_env, 8);
    assert_ne!(buffer, 0, "teams-reduction buffer");
    assert_ne!(
        l.params[0], launches[0].params[0],
        "a launch environment of its own"
    );
    let l = &launches[3];
    assert_eq!(
        (l.kernel.as_str(), l.grid, l.block),
        ("plain", 3, 5),
        "no kernel environment: bare"
    );
    assert_eq!(
        (l.grid_yz, l.block_yz),
        ((2, 1), (4, 2)),
        "bare: all three dimensions of the clauses"
    );
    assert_eq!(
        (launches[1].grid_yz, launches[1].block_yz),
        ((1, 1), (1, 1)),
        "other kernels: one dimension"
    );
    // The reduction buffer and its launch environment were freed after the launch; the shared
    // zeroed environment stays.
    let live: Vec<(u64, usize)> = with(|f| f.device_allocs.iter().map(|(a, s)| (*a, *s)).collect());
    assert!(
        !live.iter().any(|&(a, _)| a == buffer),
        "reduction buffer freed"
    );
    assert_eq!(
        live.iter().filter(|&&(_, s)| s == 16).count(),
        1,
        "only the shared launch environment stays"
    );
}

#[test]
fn memory_kinds_copies_and_driver_errors() {
    let _serial = install((9, 0));
    with(|f| f.next_module = standard_module());
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 2, 3).unwrap();

    let d = device.alloc(64, AllocKind::Device).unwrap();
    let h = device.alloc(64, AllocKind::Host).unwrap();
    let s = device.alloc(64, AllocKind::Shared).unwrap();
    with(|f| {
        assert!(f.device_allocs.contains_key(&(d as u64)));
        assert!(f.host_allocs.contains_key(&(h as u64)));
        assert!(f.managed_allocs.contains_key(&(s as u64)));
    });
    let input: Vec<u8> = (0..64).collect();
    let mut output = vec![0u8; 64];
    // SAFETY: 64-byte host buffers and 64-byte device allocations of this device.
    unsafe {
        device
            .copy_to_device(d, input.as_ptr() as *const c_void, 64)
            .unwrap();
        device.copy_within_device(s, d, 64).unwrap();
        device
            .copy_from_device(output.as_mut_ptr() as *mut c_void, s, 64)
            .unwrap();
    }
    assert_eq!(input, output);
    // SAFETY: each allocation of this device freed once, with its kind; null is allowed.
    unsafe {
        device.free(d, AllocKind::Device).unwrap();
        device.free(h, AllocKind::Host).unwrap();
        device.free(s, AllocKind::Shared).unwrap();
        device
            .free(std::ptr::null_mut(), AllocKind::Device)
            .unwrap();
    }
    // SAFETY: not an allocation, but the fake driver only looks the address up in its table.
    let stray = unsafe { device.free(0x1234 as *mut c_void, AllocKind::Host) };
    assert!(stray.is_err(), "not an allocation");

    with(|f| f.fail = Some(("cuMemAlloc_v2", OUT_OF_MEMORY)));
    let e = device.alloc(1 << 40, AllocKind::Device).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OutOfMemory);
    assert!(
        e.message.contains("device 2")
            && e.message
                .contains("CUDA_ERROR_OUT_OF_MEMORY (out of memory)"),
        "{}",
        e.message
    );

    let bytes = cubin(90);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let spmd = loaded.kernel("spmd").unwrap().unwrap();
    let args = [std::ptr::null_mut(), std::ptr::null_mut()];
    // SAFETY: the fake kernel takes these parameters.
    unsafe { loaded.launch(spmd, &args, &Default::default()) }.unwrap();
    with(|f| f.fail = Some(("cuStreamSynchronize", ILLEGAL_ADDRESS)));
    // SAFETY: the fake kernel takes these parameters.
    let e = unsafe { loaded.launch(spmd, &args, &Default::default()) }.unwrap_err();
    assert_eq!(e.kind, ErrorKind::LaunchFailed);
    assert!(
        e.message.starts_with(
            "device 2 (cuda plugin): kernel spmd (3200 blocks of 128 threads, SPMD mode"
        ) && e.message.contains(
            "failure while running: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"
        ),
        "{}",
        e.message
    );
    with(|f| f.fail = Some(("cuLaunchKernel", INVALID_VALUE)));
    // SAFETY: as above.
    let e = unsafe { loaded.launch(spmd, &args, &Default::default()) }.unwrap_err();
    assert!(
        e.message.contains("kernel spmd")
            && e.message.contains("cannot launch: cuLaunchKernel failed"),
        "{}",
        e.message
    );
    // A kernel handle of another image is not a kernel of this one.
    let other = device.load_image(&image(&bytes)).unwrap();
    let foreign = other.kernel("spmd").unwrap().unwrap();
    // SAFETY: as above.
    let e = unsafe { loaded.launch(foreign, &args, &Default::default()) };
    assert_eq!(e.unwrap_err().kind, ErrorKind::InvalidArgument);
    drop(other);

    let truncated = &bytes[..40];
    assert_eq!(
        device.load_image(&image(truncated)).err().map(|e| e.kind),
        Some(ErrorKind::InvalidImage)
    );
    assert!(device.describe().contains("Fake H100"));
}

#[test]
fn global_constructors_run_in_priority_order_at_load() {
    let _serial = install((9, 0));
    let names = [
        "__init_array_object_late_200",
        "__init_array_object_early_100",
        "__fini_array_object_gone_100",
    ];
    with(|f| {
        f.next_module = ModuleSpec {
            globals: vec![
                (
                    "__init_array_object_late_200".into(),
                    0xbbu64.to_le_bytes().to_vec(),
                ),
                (
                    "__init_array_object_early_100".into(),
                    0xaau64.to_le_bytes().to_vec(),
                ),
                (
                    "__fini_array_object_gone_100".into(),
                    0xccu64.to_le_bytes().to_vec(),
                ),
                ("__init_array_start".into(), vec![0; 8]),
                ("__init_array_end".into(), vec![0; 8]),
            ],
            kernels: vec![FakeKernel {
                name: "nvptx$device$init".into(),
                params: 0,
            }],
        }
    });
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = rustomp_plugin::image::testing::elf_with_symbols(190, 90 << 8 | 4, &names);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let launches = with(|f| f.launches.clone());
    assert_eq!(launches.len(), 1);
    let l = &launches[0];
    assert_eq!(
        (l.kernel.as_str(), l.grid, l.block),
        ("nvptx$device$init", 1, 1)
    );
    assert_eq!(l.init_array, vec![0xaa, 0xbb], "priority 100 before 200");
    // The image has no fini kernel: unloading runs nothing and still unloads.
    drop(loaded);
    assert_eq!(with(|f| f.launches.len()), 1);
    assert!(with(|f| f.modules.is_empty()));
}

unsafe extern "C" fn add_pair(data: *mut c_void) -> u64 {
    // SAFETY: the fake kernel passes two u64.
    let pair = unsafe { *(data as *const [u64; 2]) };
    pair[0] + pair[1]
}

#[test]
fn kernels_call_host_functions_through_the_port() {
    let _serial = install((9, 0));
    let mut module = standard_module();
    module
        .globals
        .push(("__rustomp_host_call_port".into(), vec![0; 8]));
    module.globals.push((
        "host_caller_kernel_environment".into(),
        kernel_environment(exec_mode::SPMD, 0),
    ));
    module.kernels.push(FakeKernel {
        name: "host_caller".into(),
        params: 1,
    });
    with(|f| f.next_module = module);
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = cubin(90);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let port = u64_at(&global_bytes("__rustomp_host_call_port"), 0);
    assert!(
        with(|f| f.host_allocs.contains_key(&port)),
        "the port is pinned host memory"
    );
    let caller = loaded.kernel("host_caller").unwrap().unwrap();
    // SAFETY: the fake kernel takes no arguments beyond the launch environment.
    unsafe { loaded.launch(caller, &[], &Default::default()) }.unwrap();
    // SAFETY: the port lives while the image is loaded.
    let served = unsafe { &*(port as *const rustomp_abi::HostCallPort) };
    assert_eq!(
        (served.state, served.result),
        (rustomp_abi::host_call_state::DONE, 42),
        "served before the launch returned"
    );
    drop(loaded);
    assert!(
        !with(|f| f.host_allocs.contains_key(&port)),
        "the port is freed with the image"
    );
}

#[test]
fn every_real_driver_behaviour_has_its_test() {
    let source = include_str!("tests.rs");
    for (behaviour, test) in REAL_DRIVER {
        assert!(
            source.contains(&format!("fn {test}()")),
            "{behaviour}: no test `{test}`"
        );
    }
}

/// A plugin, device and loaded image over the fake driver with `module`.
fn load_with(
    api: &'static Api,
    module: ModuleSpec,
    bytes: &[u8],
) -> (
    Box<dyn rustomp_plugin::Device>,
    Box<dyn rustomp_plugin::LoadedImage>,
) {
    with(|f| f.next_module = module);
    let plugin = CudaPlugin::new(CudaDriver::with_api(api));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let loaded = device.load_image(&image(bytes)).unwrap();
    (device, loaded)
}

#[test]
fn a_kernels_name_is_not_a_global_to_the_driver() {
    let _serial = install((9, 0));
    let (_device, loaded) = load_with(api(), standard_module(), &cubin(90));
    let spmd = loaded
        .kernel("spmd")
        .unwrap()
        .expect("a kernel is found with cuModuleGetFunction alone");
    let args = [std::ptr::null_mut(), std::ptr::null_mut()];
    // SAFETY: the fake kernel takes the launch environment and two values.
    unsafe { loaded.launch(spmd, &args, &Default::default()) }.unwrap();
    assert_eq!(with(|f| f.launches.len()), 1);
    assert!(
        !with(|f| f.global_lookups.iter().any(|n| n == "spmd")),
        "a kernel's name is never asked of cuModuleGetGlobal"
    );
    // Asked for one anyway, the answer is the driver's own, not "not in the image".
    let e = loaded.global("spmd").unwrap_err();
    assert!(
        e.message
            .contains("cuModuleGetGlobal_v2 failed: CUDA_ERROR_INVALID_VALUE (invalid argument)")
            && e.message.contains("looking up global spmd"),
        "{}",
        e.message
    );
}

#[test]
fn kernels_and_globals_are_looked_up_by_kind() {
    let _serial = install((9, 0));
    let (_device, loaded) = load_with(api(), standard_module(), &cubin(90));
    assert!(
        loaded.kernel("nothing").unwrap().is_none(),
        "CUDA_ERROR_NOT_FOUND: no such kernel"
    );
    assert!(
        loaded.global("nothing").unwrap().is_none(),
        "CUDA_ERROR_NOT_FOUND: no such global"
    );
    assert_eq!(loaded.global("counter").unwrap().unwrap().size, 4);
    let globals = [
        "counter",
        "__omp_rtl_device_environment",
        "spmd_kernel_environment",
    ];
    assert!(
        !with(|f| f
            .function_lookups
            .iter()
            .any(|n| globals.contains(&n.as_str()))),
        "globals are never asked of cuModuleGetFunction"
    );
    // Any other failure of a lookup is an error with the driver's words, never "missing".
    with(|f| f.fail = Some(("cuModuleGetGlobal_v2", 201)));
    let e = loaded.global("counter").unwrap_err();
    assert!(
        e.message
            .contains("cuModuleGetGlobal_v2 failed: CUDA_ERROR_INVALID_CONTEXT"),
        "{}",
        e.message
    );
    with(|f| f.fail = Some(("cuModuleGetFunction", 201)));
    let e = loaded.kernel("spmd").unwrap_err();
    assert!(
        e.message.contains("looking up kernel spmd")
            && e.message.contains("cuModuleGetFunction failed"),
        "{}",
        e.message
    );
}

#[test]
fn a_launch_that_disagrees_with_the_kernels_parameters_is_refused() {
    let _serial = install((9, 0));
    let mut module = standard_module();
    module.kernels.push(FakeKernel {
        name: "wide".into(),
        params: 8,
    });
    let (_device, loaded) = load_with(api(), module, &cubin(90));
    let wide = loaded.kernel("wide").unwrap().unwrap();
    // Program 115's shape: the kernel declares 8 parameters, the host passes 6 values.
    let short = [std::ptr::null_mut(); 5];
    // SAFETY: refused before the driver sees it (what the test checks).
    let e = unsafe { loaded.launch(wide, &short, &Default::default()) }.unwrap_err();
    assert_eq!(e.kind, ErrorKind::LaunchFailed);
    assert!(
        e.message.starts_with("device 0 (cuda plugin): mismatch in kernel arguments: kernel wide declares 8 parameter(s) (64 bytes) but the program passed 6 (48 bytes: the launch environment and 5 argument(s)); not launched"),
        "{}",
        e.message
    );
    assert!(
        with(|f| f.launches.is_empty()),
        "never handed to the driver"
    );
    // Too many is refused too (the kernel would ignore some of what the region captured).
    let long = [std::ptr::null_mut(); 8];
    // SAFETY: as above.
    assert!(unsafe { loaded.launch(wide, &long, &Default::default()) }.is_err());
    // The right number launches, as one buffer of the kernel's parameter size.
    let right: Vec<*mut c_void> = (1..=7).map(|v| v as *mut c_void).collect();
    // SAFETY: the fake kernel takes the launch environment and these 7 values.
    unsafe { loaded.launch(wide, &right, &Default::default()) }.unwrap();
    let launches = with(|f| f.launches.clone());
    assert_eq!(launches.len(), 1);
    assert!(
        launches[0].as_buffer,
        "parameters in one CU_LAUNCH_PARAM_BUFFER_POINTER buffer"
    );
    assert_eq!(&launches[0].params[1..], &[1, 2, 3, 4, 5, 6, 7]);
}

/// Loads the real image (plugin/tests/fixtures, whose main_l7 takes 4 parameters) in `module`
/// with a driver that cannot say what `l7` takes: a launch with the wrong count is refused
/// naming the image's 4 parameters, the right count launches.
fn image_records_decide(api: &'static Api, module: ModuleSpec, l7: &str) {
    let real = include_bytes!("../../plugin/tests/fixtures/kernels.sm_90.cubin");
    let (_device, loaded) = load_with(api, module, real);
    let kernel = loaded.kernel(l7).unwrap().unwrap();
    let two = [std::ptr::null_mut(); 2];
    // SAFETY: refused before the driver sees it.
    let e = unsafe { loaded.launch(kernel, &two, &Default::default()) }.unwrap_err();
    assert!(
        e.message
            .contains(&format!("kernel {l7} declares 4 parameter(s) (32 bytes)")),
        "{}",
        e.message
    );
    let three = [std::ptr::null_mut(); 3];
    // SAFETY: the fake kernel takes the launch environment and three values.
    unsafe { loaded.launch(kernel, &three, &Default::default()) }.unwrap();
}

#[test]
fn a_driver_that_refuses_parameter_queries_falls_back_to_the_image() {
    // The driver answers CUDA_ERROR_NOT_SUPPORTED: the image's records decide, as with a
    // driver before 12.4.
    let _serial = install((9, 0));
    let l7 = "__omp_offloading_fe00_51c003_main_l7";
    let module = ModuleSpec {
        globals: vec![("__omp_rtl_device_environment".into(), vec![0; 48])],
        kernels: vec![FakeKernel {
            name: l7.into(),
            params: 4,
        }],
    };
    image_records_decide(api_refusing_parameter_queries(), module, l7);
}

#[test]
fn parameters_come_from_the_driver_or_the_image() {
    // A driver before CUDA 12.4 cannot say: the cubin's `.nv.info` records do. The image is a
    // real one (plugin/tests/fixtures): main_l7 takes 4 parameters, main_l9 takes 2.
    let _serial = install((9, 0));
    let (l7, l9) = (
        "__omp_offloading_fe00_51c003_main_l7",
        "__omp_offloading_fe00_51c003_main_l9",
    );
    let module = ModuleSpec {
        globals: vec![("__omp_rtl_device_environment".into(), vec![0; 48])],
        kernels: vec![
            FakeKernel {
                name: l7.into(),
                params: 4,
            },
            FakeKernel {
                name: l9.into(),
                params: 2,
            },
        ],
    };
    image_records_decide(api_without_parameter_queries(), module.clone(), l7);
    let three = [std::ptr::null_mut(); 3];

    // A new driver answers itself, also for an image that states nothing (a bare cubin).
    let _ = with(|f| std::mem::take(&mut f.launches));
    let (_device, loaded) = load_with(api(), module.clone(), &cubin(90));
    let kernel = loaded.kernel(l9).unwrap().unwrap();
    // SAFETY: refused before the driver sees it.
    let e = unsafe { loaded.launch(kernel, &three, &Default::default()) }.unwrap_err();
    assert!(
        e.message
            .contains(&format!("kernel {l9} declares 2 parameter(s) (16 bytes)")),
        "{}",
        e.message
    );
    drop(loaded);

    // Neither says (an old driver, a bare image): launched as given; the driver checks the
    // buffer's size itself.
    let (_device, loaded) = load_with(api_without_parameter_queries(), module, &cubin(90));
    let kernel = loaded.kernel(l9).unwrap().unwrap();
    // SAFETY: refused by the fake driver (the buffer is not the kernel's size).
    let e = unsafe { loaded.launch(kernel, &three, &Default::default()) }.unwrap_err();
    assert!(
        e.message
            .contains("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"),
        "{}",
        e.message
    );
}

#[test]
fn unified_shared_memory_needs_a_gpu_that_reads_pageable_memory() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let why = plugin
        .open_device(0, 0, 1)
        .unwrap()
        .unified_memory()
        .unwrap_err();
    assert!(
        why.contains("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0"),
        "{why}"
    );
    drop(plugin);
    with(|f| f.pageable_memory_access = true);
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    assert!(plugin
        .open_device(0, 0, 1)
        .unwrap()
        .unified_memory()
        .is_ok());
}

#[test]
fn large_pageable_copies_go_through_pinned_buffers() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    // Not a multiple of anything: the last chunk is short.
    let bytes = (20 << 20) + 13;
    let input: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 4096) as u8).collect();
    let mut output = vec![0u8; bytes];
    let d = device.alloc(bytes, AllocKind::Device).unwrap();
    // SAFETY: host buffers and a device allocation of `bytes`.
    unsafe {
        device
            .copy_to_device(d, input.as_ptr() as *const c_void, bytes)
            .unwrap();
        device
            .copy_from_device(output.as_mut_ptr() as *mut c_void, d, bytes)
            .unwrap();
    }
    assert!(input == output, "the data survives the round trip");
    let (copies, pinned) = with(|f| (std::mem::take(&mut f.copies), f.host_allocs.clone()));
    let in_pinned = |address: u64| {
        pinned
            .iter()
            .any(|(&a, &n)| address >= a && address < a + n as u64)
    };
    for (call, src, dst, n) in &copies {
        let host = if *call == "cuMemcpyHtoDAsync_v2" {
            *src
        } else {
            *dst
        };
        assert!(
            in_pinned(host),
            "{call} of {n} bytes from/to pageable memory"
        );
        assert!(*n <= 8 << 20, "chunks of at most a buffer");
    }
    let total = |call: &str| {
        copies
            .iter()
            .filter(|c| c.0 == call)
            .map(|c| c.3)
            .sum::<usize>()
    };
    assert_eq!(
        (total("cuMemcpyHtoDAsync_v2"), total("cuMemcpyDtoHAsync_v2")),
        (bytes, bytes)
    );
    assert!(
        copies.len() >= 6,
        "pipelined in chunks: {} copies",
        copies.len()
    );

    // Small copies, and copies of memory the device allocated pinned, go straight.
    let small = vec![1u8; (1 << 20) - 1];
    let pinned_host = device.alloc(4 << 20, AllocKind::Host).unwrap();
    // SAFETY: as above; the pinned allocation holds 4 MiB.
    unsafe {
        device
            .copy_to_device(d, small.as_ptr() as *const c_void, small.len())
            .unwrap();
        device.copy_to_device(d, pinned_host, 4 << 20).unwrap();
    }
    let copies = with(|f| std::mem::take(&mut f.copies));
    assert_eq!(
        copies.iter().map(|c| (c.1, c.3)).collect::<Vec<_>>(),
        [
            (small.as_ptr() as u64, small.len()),
            (pinned_host as u64, 4 << 20)
        ]
    );

    // A failure midway is reported, does not hang, and leaves the ring usable.
    with(|f| {
        f.fail = Some(("cuMemcpyHtoDAsync_v2", ILLEGAL_ADDRESS));
        f.fail_skip = 2;
    });
    // SAFETY: as above.
    let e =
        unsafe { device.copy_to_device(d, input.as_ptr() as *const c_void, bytes) }.unwrap_err();
    assert!(
        e.message.contains("CUDA_ERROR_ILLEGAL_ADDRESS")
            && e.message.contains(&format!("copy of {bytes} bytes")),
        "{}",
        e.message
    );
    with(|f| {
        f.fail = Some(("cuMemcpyDtoHAsync_v2", ILLEGAL_ADDRESS));
        f.fail_skip = 1;
    });
    assert!(
        // SAFETY: as above.
        unsafe { device.copy_from_device(output.as_mut_ptr() as *mut c_void, d, bytes) }.is_err()
    );
    output.fill(0);
    // SAFETY: as above.
    unsafe {
        device
            .copy_to_device(d, input.as_ptr() as *const c_void, bytes)
            .unwrap();
        device
            .copy_from_device(output.as_mut_ptr() as *mut c_void, d, bytes)
            .unwrap();
        device.free(d, AllocKind::Device).unwrap();
        device.free(pinned_host, AllocKind::Host).unwrap();
    }
    assert!(input == output);
}

#[test]
fn staged_copies_keep_two_pieces_in_flight() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = (40 << 20) + 4099;
    let input: Vec<u8> = (0..bytes).map(|i| (i * 13 + i / 65536) as u8).collect();
    let mut output = vec![0u8; bytes];
    let d = device.alloc(bytes, AllocKind::Device).unwrap();
    for direction in ["to the device", "from the device"] {
        with(|f| f.most_queued = 0);
        // SAFETY: host buffers and a device allocation of `bytes`.
        unsafe {
            if direction == "to the device" {
                device.copy_to_device(d, input.as_ptr() as *const c_void, bytes)
            } else {
                device.copy_from_device(output.as_mut_ptr() as *mut c_void, d, bytes)
            }
        }
        .unwrap();
        let (most, left) = with(|f| (f.most_queued, f.queued.len()));
        // Copies run only when their stream is synchronized (as a real one may): a buffer
        // refilled before its copy finished would corrupt the data checked below.
        assert_eq!(
            (most, left),
            (2, 0),
            "staged copy {direction}: the most pieces queued at once, and what stayed queued"
        );
    }
    assert!(input == output, "the data survives the round trip");
    // SAFETY: allocated above.
    unsafe { device.free(d, AllocKind::Device).unwrap() };
}

/// Copies of `bytes` at `host` to device memory `d`, as the fake saw them: (source, bytes).
fn copies_to_device(
    device: &dyn rustomp_plugin::Device,
    d: *mut c_void,
    host: *const u8,
    bytes: usize,
) -> Vec<(u64, usize)> {
    with(|f| f.copies.clear());
    // SAFETY: the callers pass live memory of `bytes` and a device allocation holding them.
    unsafe { device.copy_to_device(d, host as *const c_void, bytes) }.unwrap();
    with(|f| f.copies.iter().map(|c| (c.1, c.3)).collect())
}

#[test]
fn memory_the_driver_has_pinned_is_copied_directly() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = 4 << 20;
    let d = device.alloc(bytes, AllocKind::Device).unwrap();
    // The user pinned it behind the runtime's back (cuMemHostRegister, or cudaHostRegister
    // in a mixed program): one direct copy.
    let user = vec![7u8; bytes + 4096];
    // SAFETY: the fake's entry point; the range is `user`'s, unregistered below.
    let registered = unsafe { mem_host_register(user.as_ptr() as *mut c_void, bytes, 0) };
    assert_eq!(registered, OK);
    assert_eq!(
        copies_to_device(&*device, d, user.as_ptr(), bytes),
        [(user.as_ptr() as u64, bytes)]
    );
    // A range running past the registered part is staged.
    let past = copies_to_device(&*device, d, user.as_ptr().wrapping_add(4096), bytes);
    assert!(past.len() > 1, "staged in pieces: {past:?}");
    // Memory the driver allocated pinned for someone else (cudaMallocHost): direct too.
    let mut other: *mut c_void = std::ptr::null_mut();
    // SAFETY: the fake's entry point writes one pointer.
    assert_eq!(unsafe { mem_alloc_host(&mut other, bytes) }, OK);
    assert_eq!(
        copies_to_device(&*device, d, other as *const u8, bytes),
        [(other as u64, bytes)]
    );
    // Pageable memory: the driver does not know it, staged.
    let pageable = vec![1u8; bytes];
    assert!(copies_to_device(&*device, d, pageable.as_ptr(), bytes).len() > 1);
    // SAFETY: registered and allocated above.
    unsafe {
        assert_eq!(mem_host_unregister(user.as_ptr() as *mut c_void), OK);
        assert_eq!(mem_free_host(other), OK);
        device.free(d, AllocKind::Device).unwrap();
    }
}

#[test]
fn memory_locked_through_the_runtime_is_registered_once_and_copied_directly() {
    let _serial = install((9, 0));
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = 3 << 20;
    let d = device.alloc(bytes, AllocKind::Device).unwrap();
    let user = vec![3u8; bytes];
    let host = user.as_ptr() as *mut c_void;
    let registered = || with(|f| f.registered.get(&(host as u64)).copied());
    // SAFETY: `user` lives until the end and is unlocked before.
    unsafe {
        assert_eq!(device.lock_host(host, bytes).unwrap(), host);
        assert_eq!(registered(), Some(bytes));
        // A second lock of a part of it: counted, not registered again.
        assert_eq!(
            device.lock_host(host.byte_add(4096), 4096).unwrap(),
            host.byte_add(4096)
        );
        assert_eq!(
            copies_to_device(&*device, d, user.as_ptr(), bytes),
            [(host as u64, bytes)]
        );
        // A range reaching out of the locked one is refused, with both ranges named.
        let e = device
            .lock_host(host.byte_add(bytes - 16), 4096)
            .unwrap_err();
        assert!(
            e.message
                .contains("they overlap the 3145728 bytes pinned at"),
            "{}",
            e.message
        );
        device.unlock_host(host.byte_add(4096)).unwrap();
        assert_eq!(registered(), Some(bytes), "one lock is left");
        device.unlock_host(host).unwrap();
        assert_eq!(registered(), None, "the last unlock unregisters");
        let e = device.unlock_host(host).unwrap_err();
        assert!(
            e.message.contains("no locked memory holds it"),
            "{}",
            e.message
        );
        // The driver's refusal is reported with its words.
        with(|f| f.fail = Some(("cuMemHostRegister_v2", INVALID_VALUE)));
        let e = device.lock_host(host, bytes).unwrap_err();
        assert!(
            e.message
                .contains("cuMemHostRegister_v2 failed: CUDA_ERROR_INVALID_VALUE")
                && e.message
                    .contains("cannot lock 3145728 bytes of host memory"),
            "{}",
            e.message
        );
        device.free(d, AllocKind::Device).unwrap();
    }
}

#[test]
fn a_traced_launch_and_copy_carry_the_devices_event_times() {
    let _serial = install((9, 0));
    with(|f| f.next_module = standard_module());
    let plugin = CudaPlugin::new(CudaDriver::with_api(api()));
    let device = plugin.open_device(0, 0, 1).unwrap();
    let bytes = cubin(90);
    let loaded = device.load_image(&image(&bytes)).unwrap();
    let plain = loaded.kernel("plain").unwrap().unwrap();
    let d = device.alloc(64, AllocKind::Device).unwrap();
    let input = [5u8; 64];
    use rustomp_plugin::op_times;

    // Untraced: no events, nothing recorded.
    // SAFETY: a 64-byte device allocation and host buffer.
    unsafe { device.copy_to_device(d, input.as_ptr() as *const c_void, 64) }.unwrap();
    assert_eq!(op_times::take(), None);
    assert!(with(|f| f.events.is_empty()), "no events without a tool");

    op_times::set_wanted(true);
    let before = rustomp_plugin::monotonic_ns();
    // SAFETY: as above.
    unsafe { device.copy_to_device(d, input.as_ptr() as *const c_void, 64) }.unwrap();
    let copy = op_times::take();
    // SAFETY: the fake kernel takes no parameters.
    unsafe { loaded.launch(plain, &[], &Default::default()) }.unwrap();
    let launch = op_times::take();
    let after = rustomp_plugin::monotonic_ns();
    op_times::set_wanted(false);
    for (what, times) in [("copy", copy), ("launch", launch)] {
        let (start, end) = times.unwrap_or_else(|| panic!("the {what} recorded no device times"));
        // The anchor pairs an event with the host's clock to within its synchronization: the
        // fake stamps events with the host's clock, so the times land inside the host's.
        let slack = 2_000_000;
        assert!(
            before - slack <= start && start <= end && end <= after + slack,
            "{what}: device times {start}..{end}, host {before}..{after}"
        );
    }
    assert!(
        with(|f| f.events.len()) <= 1,
        "the operations' events are destroyed (the clock's anchor stays)"
    );
    // SAFETY: allocated above.
    unsafe { device.free(d, AllocKind::Device) }.unwrap();
}
