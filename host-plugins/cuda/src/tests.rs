//! The whole plugin driven through a fake CUDA driver: "device" memory is host memory, a module
//! is a table of named globals and kernels given by the test, a launch is recorded with its
//! grid, block and parameter values. This checks what the pure unit tests cannot: what is
//! written at image load, the indirect table, the launch environment, the geometry handed to
//! `cuLaunchKernel`, memory kinds, and how driver failures are reported.

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
    /// Fail the next call of this entry point with this code.
    fail: Option<(&'static str, CUresult)>,
    current_context: usize,
    limits: Vec<(c_int, usize)>,
    /// The port a running fake kernel posted a host call to, until the plugin served it.
    host_call_pending: Option<u64>,
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
    let value = match attribute {
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
unsafe extern "C" fn stream_query(_s: CUstream) -> CUresult {
    if let Some(code) = failing("cuStreamQuery") {
        return code;
    }
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
unsafe extern "C" fn stream_synchronize(_s: CUstream) -> CUresult {
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
    _s: CUstream,
) -> CUresult {
    // SAFETY: fake device memory is host memory; the plugin passes valid ranges.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    OK
}
unsafe extern "C" fn memcpy_dtoh(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: as above.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    OK
}
unsafe extern "C" fn memcpy_dtod(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: as above.
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
    match with(|f| {
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
    match with(|f| {
        f.modules
            .get(&(m as usize))
            .and_then(|module| module.globals.get(&name).copied())
    }) {
        Some((address, size)) => {
            // SAFETY: as above.
            unsafe {
                *p = address;
                *bytes = size;
            }
            OK
        }
        None => NOT_FOUND,
    }
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
    _stream: CUstream,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) -> CUresult {
    if let Some(code) = failing("cuLaunchKernel") {
        return code;
    }
    let Some(kernel) = with(|f| f.functions.get(&(function as usize)).cloned()) else {
        return 400;
    };
    // SAFETY: the plugin passes one pointer to a u64 per parameter; the kernel takes `params`.
    let values: Vec<u64> = (0..kernel.params)
        .map(|i| unsafe { *(*params.add(i) as *const u64) })
        .collect();
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
        })
    });
    OK
}

fn api() -> &'static Api {
    static API: Api = Api {
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
    // SAFETY: the fake device table is host memory of 3 entries.
    let uploaded = unsafe { std::slice::from_raw_parts(address as *const u8, 48) };
    let hosts: Vec<u64> = (0..3).map(|i| u64_at(uploaded, i * 16)).collect();
    let devices: Vec<u64> = (0..3).map(|i| u64_at(uploaded, i * 16 + 8)).collect();
    assert_eq!(hosts, vec![0x100, 0x200, 0x300], "sorted by host address");
    assert_eq!(devices, vec![0xa, 0xb, 0xc]);

    // Globals and kernels by name.
    let counter = loaded.symbol("counter").unwrap();
    assert_eq!(counter.size, 4);
    let mut value = 0u32;
    // SAFETY: `counter` is a 4-byte device global of this device.
    unsafe { device.copy_from_device(&mut value as *mut u32 as *mut c_void, counter.address, 4) }
        .unwrap();
    assert_eq!(value, 7);
    assert_eq!(loaded.symbol("spmd").unwrap().size, 0);
    assert!(loaded.symbol("missing").is_none());
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
    let spmd = loaded.symbol("spmd").unwrap();
    let generic = loaded.symbol("generic").unwrap();
    let reduce = loaded.symbol("reduce").unwrap();
    let plain = loaded.symbol("plain").unwrap();

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
        device.free(std::ptr::null_mut(), AllocKind::Device).unwrap();
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
    let spmd = loaded.symbol("spmd").unwrap();
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
    // SAFETY: as above.
    let e = unsafe {
        loaded.launch(
            rustomp_plugin::Symbol {
                address: 0x42 as *mut c_void,
                size: 0,
            },
            &[],
            &Default::default(),
        )
    };
    assert_eq!(e.unwrap_err().kind, ErrorKind::InvalidArgument);

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
    let caller = loaded.symbol("host_caller").unwrap();
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
