//! The driver entry points: every function `libcuda.so.1` exports that the plugin resolves.
//!
//! # Safety
//! Each is called as `cuda.h` declares it: out-pointers valid for writes, handles this driver
//! made, memory ranges inside its allocations.
#![allow(non_snake_case, reason = "the driver's own entry point names")]
#![allow(
    clippy::missing_safety_doc,
    reason = "every entry point's contract is cuda.h's, stated once above"
)]

use super::*;

#[unsafe(no_mangle)]
pub extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { put(version, 13000) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    // SAFETY: as above.
    unsafe { put(count, 1) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    if ordinal != 0 {
        return INVALID_DEVICE;
    }
    // SAFETY: as above.
    unsafe { put(device, 0) }
}

/// An H200's answers (132 SMs, compute capability 9.0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    _device: c_int,
) -> CUresult {
    let answer = match attribute {
        1 | 2 => 1024,   // MAX_THREADS_PER_BLOCK, MAX_BLOCK_DIM_X
        5 => i32::MAX,   // MAX_GRID_DIM_X
        8 => 48 << 10,   // MAX_SHARED_MEMORY_PER_BLOCK
        10 => 32,        // WARP_SIZE
        13 => 1_980_000, // CLOCK_RATE (kHz)
        16 => 132,       // MULTIPROCESSOR_COUNT
        39 => 2048,      // MAX_THREADS_PER_MULTIPROCESSOR
        75 => 9,         // COMPUTE_CAPABILITY_MAJOR
        76 => 0,         // COMPUTE_CAPABILITY_MINOR
        83 => 1,         // MANAGED_MEMORY
        97 => 227 << 10, // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        _ => 0,
    };
    // SAFETY: as above.
    unsafe { put(value, answer) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(
    name: *mut c_char,
    length: c_int,
    _device: c_int,
) -> CUresult {
    let text = c"rustomp fake CUDA driver (sm_90, no kernels run)".to_bytes_with_nul();
    if name.is_null() || (length as usize) < text.len() {
        return INVALID_VALUE;
    }
    // SAFETY: the caller's buffer holds `length` bytes.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr() as *const c_char, name, text.len()) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, _device: c_int) -> CUresult {
    // SAFETY: as above.
    unsafe { put(bytes, 141 << 30) }
}

fn error_name(code: CUresult) -> Option<&'static CStr> {
    Some(match code {
        SUCCESS => c"CUDA_SUCCESS",
        INVALID_VALUE => c"CUDA_ERROR_INVALID_VALUE",
        OUT_OF_MEMORY => c"CUDA_ERROR_OUT_OF_MEMORY",
        INVALID_DEVICE => c"CUDA_ERROR_INVALID_DEVICE",
        INVALID_IMAGE => c"CUDA_ERROR_INVALID_IMAGE",
        INVALID_HANDLE => c"CUDA_ERROR_INVALID_HANDLE",
        NOT_FOUND => c"CUDA_ERROR_NOT_FOUND",
        _ => return None,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(code: CUresult, out: *mut *const c_char) -> CUresult {
    match error_name(code) {
        // SAFETY: as above.
        Some(name) => unsafe { put(out, name.as_ptr()) },
        None => INVALID_VALUE,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(code: CUresult, out: *mut *const c_char) -> CUresult {
    let text: &'static CStr = match code {
        SUCCESS => c"no error",
        INVALID_VALUE => c"invalid argument",
        OUT_OF_MEMORY => c"out of memory",
        INVALID_DEVICE => c"invalid device ordinal",
        INVALID_IMAGE => c"device kernel image is invalid",
        INVALID_HANDLE => c"invalid resource handle",
        NOT_FOUND => c"named symbol not found",
        _ => return INVALID_VALUE,
    };
    // SAFETY: as above.
    unsafe { put(out, text.as_ptr()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(
    context: *mut *mut c_void,
    _device: c_int,
) -> CUresult {
    // SAFETY: as above.
    unsafe { put(context, CONTEXT as *mut c_void) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(_device: c_int) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    _device: c_int,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    // SAFETY: as above.
    unsafe {
        put(flags, 0);
        put(active, 0)
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(_device: c_int, _flags: c_uint) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCurrent(_context: *mut c_void) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetLimit(_limit: c_int, _value: usize) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, _flags: c_uint) -> CUresult {
    let handle = with(|s| {
        s.next_handle += 1;
        CONTEXT + s.next_handle
    });
    // SAFETY: as above.
    unsafe { put(stream, handle as *mut c_void) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamDestroy_v2(_stream: *mut c_void) -> CUresult {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamSynchronize(_stream: *mut c_void) -> CUresult {
    SUCCESS
}

/// Every launch has finished (no kernel runs).
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamQuery(_stream: *mut c_void) -> CUresult {
    SUCCESS
}

fn allocate(bytes: usize) -> Option<u64> {
    // SAFETY: calloc takes any size; null is failure.
    let p = unsafe { libc::calloc(bytes.max(1), 1) };
    (!p.is_null()).then_some(p as u64)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(address: *mut u64, bytes: usize) -> CUresult {
    match allocate(bytes) {
        // SAFETY: as above.
        Some(a) => unsafe { put(address, a) },
        None => OUT_OF_MEMORY,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFree_v2(address: u64) -> CUresult {
    // SAFETY: the plugin frees what cuMemAlloc gave, once.
    unsafe { libc::free(address as *mut c_void) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(address: *mut *mut c_void, bytes: usize) -> CUresult {
    match allocate(bytes) {
        // SAFETY: as above.
        Some(a) => unsafe { put(address, a as *mut c_void) },
        None => OUT_OF_MEMORY,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemFreeHost(address: *mut c_void) -> CUresult {
    // SAFETY: as in cuMemFree_v2.
    unsafe { libc::free(address) };
    SUCCESS
}

/// CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED for a range overlapping a registered one.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemHostRegister_v2(
    host: *mut c_void,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    let (start, end) = (host as u64, host as u64 + bytes as u64);
    with(|s| {
        let before = s.registered.range(..end).next_back();
        if before.is_some_and(|(&at, &n)| at + n as u64 > start) {
            return 712;
        }
        s.registered.insert(start, bytes);
        SUCCESS
    })
}

/// CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED for anything but a registered range's start.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemHostUnregister(host: *mut c_void) -> CUresult {
    with(|s| match s.registered.remove(&(host as u64)) {
        Some(_) => SUCCESS,
        None => 713,
    })
}

/// As cuda.h documents: no error for an address the driver does not know, whose attributes
/// read 0 (only registered ranges are known here; the buffer id is the range's start).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttributes(
    count: c_uint,
    attributes: *mut c_int,
    data: *mut *mut c_void,
    address: u64,
) -> CUresult {
    let start = with(|s| {
        let (&at, &n) = s.registered.range(..=address).next_back()?;
        (address < at + n as u64).then_some(at)
    });
    for i in 0..count as usize {
        // SAFETY: the caller passes `count` attributes and as many out-pointers of the types
        // cuda.h gives them.
        unsafe {
            match *attributes.add(i) {
                2 => *(*data.add(i) as *mut c_uint) = c_uint::from(start.is_some()),
                7 => *(*data.add(i) as *mut u64) = start.unwrap_or(0),
                _ => return INVALID_VALUE,
            }
        }
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    address: *mut u64,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    // SAFETY: as in cuMemAlloc_v2.
    unsafe { cuMemAlloc_v2(address, bytes) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    bytes: usize,
    _s: *mut c_void,
) -> CUresult {
    // SAFETY: "device" memory is host memory; the plugin passes valid ranges.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    _s: *mut c_void,
) -> CUresult {
    // SAFETY: as above.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: u64,
    src: u64,
    bytes: usize,
    _s: *mut c_void,
) -> CUresult {
    // SAFETY: as above.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut *mut c_void,
    image: *const c_void,
    _options: c_uint,
    _keys: *mut c_int,
    _values: *mut *mut c_void,
) -> CUresult {
    if image.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: the plugin passes a complete image (cubins only: this fake compiles no PTX).
    let Some(bytes) = (unsafe { elf_bytes(image as *const u8) }) else {
        return INVALID_IMAGE;
    };
    let handle = with(|s| {
        let loaded = load(bytes, s)?;
        s.next_handle += 1;
        let handle = 0x4000_0000 + s.next_handle;
        s.modules.insert(handle, loaded);
        Some(handle)
    });
    match handle {
        // SAFETY: as above.
        Some(h) => unsafe { put(module, h as *mut c_void) },
        None => INVALID_IMAGE,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuModuleUnload(module: *mut c_void) -> CUresult {
    match with(|s| s.modules.remove(&(module as usize))) {
        Some(_) => SUCCESS,
        None => INVALID_HANDLE,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    function: *mut *mut c_void,
    module: *mut c_void,
    name: *const c_char,
) -> CUresult {
    let Some(name) = name_of(name) else {
        return INVALID_VALUE;
    };
    let found = with(|s| {
        let m = s.modules.get(&(module as usize)).ok_or(INVALID_HANDLE)?;
        m.kernels.get(&name).copied().ok_or(NOT_FOUND)
    });
    match found {
        // SAFETY: as above.
        Ok(handle) => unsafe { put(function, handle as *mut c_void) },
        Err(code) => code,
    }
}

/// A variable's address and size; the name of a function is an invalid value (as an H200
/// with driver 580 answered), a name the module lacks is not found.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    address: *mut u64,
    bytes: *mut usize,
    module: *mut c_void,
    name: *const c_char,
) -> CUresult {
    let Some(name) = name_of(name) else {
        return INVALID_VALUE;
    };
    let found = with(|s| {
        let m = s.modules.get(&(module as usize)).ok_or(INVALID_HANDLE)?;
        if m.kernels.contains_key(&name) {
            return Err(INVALID_VALUE);
        }
        m.variables.get(&name).copied().ok_or(NOT_FOUND)
    });
    match found {
        Ok((a, size)) => {
            // SAFETY: as above; either out-pointer may be null (cuda.h).
            unsafe {
                if !address.is_null() {
                    address.write(a);
                }
                if !bytes.is_null() {
                    bytes.write(size);
                }
            }
            SUCCESS
        }
        Err(code) => code,
    }
}

fn parameters_of(function: *mut c_void) -> Result<Option<KernelParameters>, CUresult> {
    with(|s| {
        s.functions
            .get(&(function as usize))
            .map(|f| f.parameters)
            .ok_or(INVALID_HANDLE)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    function: *mut c_void,
) -> CUresult {
    if let Err(code) = parameters_of(function) {
        return code;
    }
    let answer = match attribute {
        0 => 1024,     // MAX_THREADS_PER_BLOCK
        8 => 48 << 10, // MAX_DYNAMIC_SHARED_SIZE_BYTES
        _ => 0,
    };
    // SAFETY: as above.
    unsafe { put(value, answer) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetAttribute(
    function: *mut c_void,
    _attribute: c_int,
    _value: c_int,
) -> CUresult {
    parameters_of(function).map_or_else(|code| code, |_| SUCCESS)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamCount(function: *mut c_void, count: *mut usize) -> CUresult {
    match parameters_of(function) {
        // SAFETY: as above.
        Ok(p) => unsafe { put(count, p.map_or(0, |p| p.count)) },
        Err(code) => code,
    }
}

/// Parameter `index`: 8 bytes each, back to back (clang-22's OpenMP kernels).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    function: *mut c_void,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    let count = match parameters_of(function) {
        Ok(p) => p.map_or(0, |p| p.count),
        Err(code) => return code,
    };
    if index >= count {
        return INVALID_VALUE;
    }
    // SAFETY: as above; `size` may be null (cuda.h).
    unsafe {
        if !size.is_null() {
            size.write(8);
        }
        put(offset, 8 * index)
    }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments, reason = "cuLaunchKernel's own signature")]
pub unsafe extern "C" fn cuLaunchKernel(
    function: *mut c_void,
    _gx: c_uint,
    _gy: c_uint,
    _gz: c_uint,
    _bx: c_uint,
    _by: c_uint,
    _bz: c_uint,
    _shared: c_uint,
    _stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let declared = match parameters_of(function) {
        Ok(p) => p.unwrap_or(KernelParameters { count: 0, bytes: 0 }),
        Err(code) => return code,
    };
    if !extra.is_null() {
        // CU_LAUNCH_PARAM_BUFFER_POINTER (1), CU_LAUNCH_PARAM_BUFFER_SIZE (2), ..., END (0).
        let mut size = None;
        let mut at = 0;
        loop {
            // SAFETY: the caller's array ends with CU_LAUNCH_PARAM_END.
            let key = unsafe { *extra.add(at) } as usize;
            if key == 0 {
                break;
            }
            // SAFETY: every key but the end has a value after it.
            let value = unsafe { *extra.add(at + 1) };
            match key {
                1 => {}
                // SAFETY: the value of CU_LAUNCH_PARAM_BUFFER_SIZE points at a size_t.
                2 => size = Some(unsafe { *(value as *const usize) }),
                _ => return INVALID_VALUE,
            }
            at += 2;
        }
        if size != Some(declared.bytes) {
            return INVALID_VALUE;
        }
    } else if declared.count > 0 {
        if params.is_null() {
            return INVALID_VALUE;
        }
        // As the real driver: one pointer per declared parameter, whatever the caller passed.
        for i in 0..declared.count {
            // SAFETY: only as long as the caller passed enough pointers: what this exposes.
            let value = unsafe { *(*params.add(i) as *const u64) };
            std::hint::black_box(value);
        }
    }
    SUCCESS
}
