//! One thin function per driver call: arguments in, `Result` out, the `CUresult` turned into a
//! [`DriverError`] carrying the driver's name and text for it.
//!
//! Calls that take only values (ordinals, attribute numbers) are safe functions: the driver
//! checks them and answers with an error. Calls that take handles or addresses are `unsafe`,
//! each with its `# Safety` contract; [`super::safe`] upholds them.

use super::error::{code_name, DriverError};
use super::sys::*;
use core::ffi::{c_char, c_int, c_uint, c_void};
use std::ffi::{CStr, CString};

/// Turns a `CUresult` into `Ok(())` or the error named by the driver.
pub fn check(api: &Api, call: &'static str, code: CUresult) -> Result<(), DriverError> {
    if code == CUDA_SUCCESS {
        return Ok(());
    }
    let ask = |f: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult| {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static NUL-terminated string or fails.
        let status = unsafe { f(code, &mut text) };
        if status != CUDA_SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: non-null static string from the driver, see above.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    let name = ask(api.get_error_name)
        .or_else(|| code_name(code).map(str::to_string))
        .unwrap_or_else(|| format!("CUresult {code}"));
    let description = ask(api.get_error_string).unwrap_or_default();
    Err(DriverError {
        call,
        code,
        name,
        description,
    })
}

pub fn init(api: &Api) -> Result<(), DriverError> {
    // SAFETY: cuInit takes a flags value (must be 0) and nothing else.
    check(api, "cuInit", unsafe { (api.init)(0) })
}

pub fn driver_version(api: &Api) -> Result<i32, DriverError> {
    let mut version = 0;
    // SAFETY: writes one int to a live local.
    check(api, "cuDriverGetVersion", unsafe {
        (api.driver_get_version)(&mut version)
    })?;
    Ok(version)
}

pub fn device_count(api: &Api) -> Result<usize, DriverError> {
    let mut count: c_int = 0;
    // SAFETY: writes one int to a live local.
    check(api, "cuDeviceGetCount", unsafe {
        (api.device_get_count)(&mut count)
    })?;
    Ok(count.max(0) as usize)
}

pub fn device_get(api: &Api, ordinal: usize) -> Result<CUdevice, DriverError> {
    let mut device: CUdevice = 0;
    // SAFETY: writes one int to a live local; the driver validates the ordinal.
    check(api, "cuDeviceGet", unsafe {
        (api.device_get)(&mut device, ordinal as c_int)
    })?;
    Ok(device)
}

pub fn device_attribute(api: &Api, device: CUdevice, attribute: c_int) -> Result<i32, DriverError> {
    let mut value: c_int = 0;
    // SAFETY: writes one int to a live local; the driver validates device and attribute.
    check(api, "cuDeviceGetAttribute", unsafe {
        (api.device_get_attribute)(&mut value, attribute, device)
    })?;
    Ok(value)
}

pub fn device_name(api: &Api, device: CUdevice) -> Result<String, DriverError> {
    let mut buffer = [0 as c_char; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL-terminated, into the buffer.
    check(api, "cuDeviceGetName", unsafe {
        (api.device_get_name)(buffer.as_mut_ptr(), buffer.len() as c_int, device)
    })?;
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn device_total_memory(api: &Api, device: CUdevice) -> Result<usize, DriverError> {
    let mut bytes = 0usize;
    // SAFETY: writes one size_t to a live local.
    check(api, "cuDeviceTotalMem_v2", unsafe {
        (api.device_total_mem)(&mut bytes, device)
    })?;
    Ok(bytes)
}

/// (flags, active) of the device's primary context.
pub fn primary_context_state(api: &Api, device: CUdevice) -> Result<(c_uint, bool), DriverError> {
    let (mut flags, mut active): (c_uint, c_int) = (0, 0);
    // SAFETY: writes to two live locals.
    check(api, "cuDevicePrimaryCtxGetState", unsafe {
        (api.primary_ctx_get_state)(device, &mut flags, &mut active)
    })?;
    Ok((flags, active != 0))
}

pub fn primary_context_set_flags(
    api: &Api,
    device: CUdevice,
    flags: c_uint,
) -> Result<(), DriverError> {
    // SAFETY: value arguments only; the driver validates them.
    check(api, "cuDevicePrimaryCtxSetFlags_v2", unsafe {
        (api.primary_ctx_set_flags)(device, flags)
    })
}

pub fn primary_context_retain(api: &Api, device: CUdevice) -> Result<CUcontext, DriverError> {
    let mut context: CUcontext = std::ptr::null_mut();
    // SAFETY: writes one handle to a live local.
    check(api, "cuDevicePrimaryCtxRetain", unsafe {
        (api.primary_ctx_retain)(&mut context, device)
    })?;
    Ok(context)
}

/// # Safety
/// Called once per successful [`primary_context_retain`] of `device`, after the last use of the
/// context handle it returned.
pub unsafe fn primary_context_release(api: &Api, device: CUdevice) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuDevicePrimaryCtxRelease_v2", unsafe {
        (api.primary_ctx_release)(device)
    })
}

/// # Safety
/// `context` is a live context handle (a retained primary context).
pub unsafe fn context_set_current(api: &Api, context: CUcontext) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuCtxSetCurrent", unsafe {
        (api.ctx_set_current)(context)
    })
}

/// Sets a limit of the calling thread's current context.
pub fn context_set_limit(api: &Api, limit: c_int, value: usize) -> Result<(), DriverError> {
    // SAFETY: value arguments; without a current context the driver returns an error.
    check(api, "cuCtxSetLimit", unsafe {
        (api.ctx_set_limit)(limit, value)
    })
}

/// Creates a stream in the calling thread's current context.
pub fn stream_create(api: &Api, flags: c_uint) -> Result<CUstream, DriverError> {
    let mut stream: CUstream = std::ptr::null_mut();
    // SAFETY: writes one handle to a live local.
    check(api, "cuStreamCreate", unsafe {
        (api.stream_create)(&mut stream, flags)
    })?;
    Ok(stream)
}

/// # Safety
/// `stream` is a live stream, not used after this call.
pub unsafe fn stream_destroy(api: &Api, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuStreamDestroy_v2", unsafe {
        (api.stream_destroy)(stream)
    })
}

/// # Safety
/// `stream` is a live stream.
pub unsafe fn stream_synchronize(api: &Api, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuStreamSynchronize", unsafe {
        (api.stream_synchronize)(stream)
    })
}

/// Whether everything on `stream` finished (`false`: still running).
///
/// # Safety
/// `stream` is a live stream.
pub unsafe fn stream_query(api: &Api, stream: CUstream) -> Result<bool, DriverError> {
    // SAFETY: guaranteed by the caller.
    let code = unsafe { (api.stream_query)(stream) };
    if code == CUDA_ERROR_NOT_READY {
        return Ok(false);
    }
    check(api, "cuStreamQuery", code).map(|()| true)
}

/// Device memory in the current context.
pub fn mem_alloc(api: &Api, bytes: usize) -> Result<CUdeviceptr, DriverError> {
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: writes one address to a live local.
    check(api, "cuMemAlloc_v2", unsafe {
        (api.mem_alloc)(&mut ptr, bytes)
    })?;
    Ok(ptr)
}

/// # Safety
/// `ptr` came from [`mem_alloc`] or [`mem_alloc_managed`] and is not used afterwards.
pub unsafe fn mem_free(api: &Api, ptr: CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemFree_v2", unsafe { (api.mem_free)(ptr) })
}

/// Page-locked host memory, accessible to the device.
pub fn mem_alloc_host(api: &Api, bytes: usize) -> Result<*mut c_void, DriverError> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: writes one pointer to a live local.
    check(api, "cuMemAllocHost_v2", unsafe {
        (api.mem_alloc_host)(&mut ptr, bytes)
    })?;
    Ok(ptr)
}

/// # Safety
/// `ptr` came from [`mem_alloc_host`] and is not used afterwards.
pub unsafe fn mem_free_host(api: &Api, ptr: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemFreeHost", unsafe { (api.mem_free_host)(ptr) })
}

/// What the driver knows of the memory at `address`: its `CUmemorytype` (0: none, pageable
/// memory) and its allocation's unique id (0: none). `Ok(None)` on a driver without the call.
pub fn pointer_kind(api: &Api, address: u64) -> Result<Option<(c_uint, u64)>, DriverError> {
    let Some(get) = api.pointer_get_attributes else {
        return Ok(None);
    };
    let (mut memory_type, mut buffer_id): (c_uint, u64) = (0, 0);
    let mut attributes = [pointer_attribute::MEMORY_TYPE, pointer_attribute::BUFFER_ID];
    let mut data = [
        &mut memory_type as *mut c_uint as *mut c_void,
        &mut buffer_id as *mut u64 as *mut c_void,
    ];
    // SAFETY: two attributes, each with a live out-value of the type cuda.h gives it (an
    // unsigned int for the memory type, an unsigned long long for the buffer id); the driver
    // only reads its records for the address, which need not be valid memory.
    check(api, "cuPointerGetAttributes", unsafe {
        get(
            attributes.len() as c_uint,
            attributes.as_mut_ptr(),
            data.as_mut_ptr(),
            address,
        )
    })?;
    Ok(Some((memory_type, buffer_id)))
}

/// Page-locks `bytes` at `host` for every context. `Ok(false)` on a driver without the call.
///
/// # Safety
/// `host` is the caller's live memory of `bytes`, unregistered before it is freed.
pub unsafe fn mem_host_register(
    api: &Api,
    host: *mut c_void,
    bytes: usize,
) -> Result<bool, DriverError> {
    let Some(register) = api.mem_host_register else {
        return Ok(false);
    };
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemHostRegister_v2", unsafe {
        register(host, bytes, CU_MEMHOSTREGISTER_PORTABLE)
    })?;
    Ok(true)
}

/// # Safety
/// `host` was registered by [`mem_host_register`] and no copy or kernel uses it.
pub unsafe fn mem_host_unregister(api: &Api, host: *mut c_void) -> Result<(), DriverError> {
    let Some(unregister) = api.mem_host_unregister else {
        return Ok(());
    };
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemHostUnregister", unsafe { unregister(host) })
}

/// A timing event (default flags); `Ok(None)` on a driver without events.
pub fn event_create(api: &Api) -> Result<Option<CUevent>, DriverError> {
    let Some(create) = api.event_create else {
        return Ok(None);
    };
    let mut event: CUevent = std::ptr::null_mut();
    // SAFETY: writes one handle to a live local; flags 0 keep timing on.
    check(api, "cuEventCreate", unsafe { create(&mut event, 0) })?;
    Ok(Some(event))
}

/// # Safety
/// `event` came from [`event_create`] and is not used afterwards.
pub unsafe fn event_destroy(api: &Api, event: CUevent) -> Result<(), DriverError> {
    match api.event_destroy {
        // SAFETY: guaranteed by the caller.
        Some(destroy) => check(api, "cuEventDestroy_v2", unsafe { destroy(event) }),
        None => Ok(()),
    }
}

/// Queues `event` on `stream`: the device stamps it when the stream reaches it.
///
/// # Safety
/// `event` and `stream` are live and of the current context.
pub unsafe fn event_record(api: &Api, event: CUevent, stream: CUstream) -> Result<(), DriverError> {
    match api.event_record {
        // SAFETY: guaranteed by the caller.
        Some(record) => check(api, "cuEventRecord", unsafe { record(event, stream) }),
        None => Ok(()),
    }
}

/// # Safety
/// `event` is live.
pub unsafe fn event_synchronize(api: &Api, event: CUevent) -> Result<(), DriverError> {
    match api.event_synchronize {
        // SAFETY: guaranteed by the caller.
        Some(wait) => check(api, "cuEventSynchronize", unsafe { wait(event) }),
        None => Ok(()),
    }
}

/// Milliseconds from `start` to `end`, both completed (the driver documents about half a
/// microsecond of resolution).
///
/// # Safety
/// Both events are live, recorded and completed.
pub unsafe fn event_elapsed_ms(
    api: &Api,
    start: CUevent,
    end: CUevent,
) -> Result<f32, DriverError> {
    let Some(elapsed) = api.event_elapsed_time else {
        return Ok(0.0);
    };
    let mut ms = 0f32;
    // SAFETY: guaranteed by the caller; writes one float to a live local.
    check(api, "cuEventElapsedTime", unsafe {
        elapsed(&mut ms, start, end)
    })?;
    Ok(ms)
}

/// Unified (managed) memory, accessible from host and device.
pub fn mem_alloc_managed(api: &Api, bytes: usize) -> Result<CUdeviceptr, DriverError> {
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: writes one address to a live local.
    check(api, "cuMemAllocManaged", unsafe {
        (api.mem_alloc_managed)(&mut ptr, bytes, CU_MEM_ATTACH_GLOBAL)
    })?;
    Ok(ptr)
}

/// # Safety
/// `host` is readable for `bytes` until `stream` is synchronized; `device` holds `bytes`;
/// `stream` is live.
pub unsafe fn memcpy_htod_async(
    api: &Api,
    device: CUdeviceptr,
    host: *const c_void,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemcpyHtoDAsync_v2", unsafe {
        (api.memcpy_htod_async)(device, host, bytes, stream)
    })
}

/// # Safety
/// `host` is writable for `bytes` until `stream` is synchronized; `device` holds `bytes`;
/// `stream` is live.
pub unsafe fn memcpy_dtoh_async(
    api: &Api,
    host: *mut c_void,
    device: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemcpyDtoHAsync_v2", unsafe {
        (api.memcpy_dtoh_async)(host, device, bytes, stream)
    })
}

/// # Safety
/// Both ranges are device memory holding `bytes`; `stream` is live.
pub unsafe fn memcpy_dtod_async(
    api: &Api,
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuMemcpyDtoDAsync_v2", unsafe {
        (api.memcpy_dtod_async)(dst, src, bytes, stream)
    })
}

/// Loads a cubin, fatbinary or NUL-terminated PTX into the current context. On failure the
/// JIT's error log (PTX) is appended to the description.
///
/// # Safety
/// `image` points at a complete image of one of those kinds (PTX NUL-terminated).
pub unsafe fn module_load_data(api: &Api, image: *const c_void) -> Result<CUmodule, DriverError> {
    let mut module: CUmodule = std::ptr::null_mut();
    let mut log = vec![0u8; 8192];
    let mut options = [
        jit_option::ERROR_LOG_BUFFER,
        jit_option::ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    // SAFETY: the image is valid (caller); the option arrays have two entries each, the log
    // buffer lives across the call and its size is passed by value as the JIT expects.
    let code = unsafe {
        (api.module_load_data_ex)(
            &mut module,
            image,
            2,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    check(api, "cuModuleLoadDataEx", code).map_err(|mut e| {
        let text: Vec<u8> = log.iter().copied().take_while(|&b| b != 0).collect();
        let text = String::from_utf8_lossy(&text);
        if !text.trim().is_empty() {
            e.description = format!("{}; JIT log: {}", e.description, text.trim());
        }
        e
    })?;
    Ok(module)
}

/// # Safety
/// `module` is a live module, not used afterwards.
pub unsafe fn module_unload(api: &Api, module: CUmodule) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuModuleUnload", unsafe {
        (api.module_unload)(module)
    })
}

/// # Safety
/// `module` is a live module.
pub unsafe fn module_get_function(
    api: &Api,
    module: CUmodule,
    name: &CString,
) -> Result<CUfunction, DriverError> {
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: live module (caller), NUL-terminated name, writes to a live local.
    check(api, "cuModuleGetFunction", unsafe {
        (api.module_get_function)(&mut function, module, name.as_ptr())
    })?;
    Ok(function)
}

/// (address, size) of a device global.
///
/// # Safety
/// `module` is a live module.
pub unsafe fn module_get_global(
    api: &Api,
    module: CUmodule,
    name: &CString,
) -> Result<(CUdeviceptr, usize), DriverError> {
    let (mut address, mut bytes): (CUdeviceptr, usize) = (0, 0);
    // SAFETY: live module (caller), NUL-terminated name, writes to live locals.
    check(api, "cuModuleGetGlobal_v2", unsafe {
        (api.module_get_global)(&mut address, &mut bytes, module, name.as_ptr())
    })?;
    Ok((address, bytes))
}

/// # Safety
/// `function` is a live function handle.
pub unsafe fn function_attribute(
    api: &Api,
    function: CUfunction,
    attribute: c_int,
) -> Result<i32, DriverError> {
    let mut value: c_int = 0;
    // SAFETY: live function (caller); writes one int to a live local.
    check(api, "cuFuncGetAttribute", unsafe {
        (api.func_get_attribute)(&mut value, attribute, function)
    })?;
    Ok(value)
}

/// # Safety
/// `function` is a live function handle.
pub unsafe fn function_set_attribute(
    api: &Api,
    function: CUfunction,
    attribute: c_int,
    value: i32,
) -> Result<(), DriverError> {
    // SAFETY: guaranteed by the caller.
    check(api, "cuFuncSetAttribute", unsafe {
        (api.func_set_attribute)(function, attribute, value)
    })
}

/// Grid and block of one launch (x only: OpenMP kernels are one-dimensional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// x, y, z.
    pub blocks: [u32; 3],
    pub threads: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

/// `CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE` and `CU_LAUNCH_PARAM_END`:
/// the `extra` array of a launch that passes its parameters as one buffer.
const LAUNCH_PARAM_BUFFER_POINTER: usize = 0x01;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 0x02;
const LAUNCH_PARAM_END: usize = 0x00;

/// Launches `function` with its parameters laid out in one buffer, as LLVM's plugin does: the
/// driver copies exactly `parameters.len()` bytes and refuses a size that is not the kernel's,
/// so a launch can never read past what the host passed.
///
/// # Safety
/// `function` and `stream` are live and belong to the current context; `parameters` is the
/// kernel's parameter layout (each parameter at its offset), alive until the call returns (the
/// driver copies it).
pub unsafe fn launch_kernel(
    api: &Api,
    function: CUfunction,
    dims: LaunchDims,
    stream: CUstream,
    parameters: &mut [u8],
) -> Result<(), DriverError> {
    if parameters.is_empty() {
        // SAFETY: guaranteed by the caller; a kernel without parameters needs neither array.
        return check(api, "cuLaunchKernel", unsafe {
            (api.launch_kernel)(
                function,
                dims.blocks[0],
                dims.blocks[1],
                dims.blocks[2],
                dims.threads[0],
                dims.threads[1],
                dims.threads[2],
                dims.dynamic_shared_bytes,
                stream,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        });
    }
    let mut size = parameters.len();
    let mut extra: [*mut c_void; 5] = [
        LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
        parameters.as_mut_ptr() as *mut c_void,
        LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
        (&raw mut size) as *mut c_void,
        LAUNCH_PARAM_END as *mut c_void,
    ];
    // SAFETY: guaranteed by the caller; `kernelParams` is null and `extra` names the buffer and
    // its size, both alive across the call.
    check(api, "cuLaunchKernel", unsafe {
        (api.launch_kernel)(
            function,
            dims.blocks[0],
            dims.blocks[1],
            dims.blocks[2],
            dims.threads[0],
            dims.threads[1],
            dims.threads[2],
            dims.dynamic_shared_bytes,
            stream,
            std::ptr::null_mut(),
            extra.as_mut_ptr(),
        )
    })
}

/// The parameters a function takes: their number and the bytes of its parameter layout (the
/// end of the last one), from `cuFuncGetParamCount` and `cuFuncGetParamInfo`; `Ok(None)` on a
/// driver that has neither (before CUDA 12.4).
///
/// # Safety
/// `function` is live (its module is loaded).
pub unsafe fn function_parameters(
    api: &Api,
    function: CUfunction,
) -> Result<Option<(usize, usize)>, DriverError> {
    let Some(info) = api.func_get_param_info else {
        return Ok(None);
    };
    // The end of parameter `index`, or `None` past the last one.
    let end_of = |index: usize| -> Result<Option<usize>, DriverError> {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a live function (caller); two live out-pointers.
        let code = unsafe { info(function, index, &mut offset, &mut size) };
        if code == CUDA_ERROR_INVALID_VALUE {
            return Ok(None);
        }
        check(api, "cuFuncGetParamInfo", code)?;
        Ok(Some(offset + size))
    };
    let count = match api.func_get_param_count {
        Some(count_of) => {
            let mut count = 0usize;
            // SAFETY: a live function (caller); a live out-pointer.
            check(api, "cuFuncGetParamCount", unsafe {
                count_of(function, &mut count)
            })?;
            count
        }
        // Without the count: ask for parameters until the driver says there is no such one.
        // OpenMP kernels take few; the bound keeps a misbehaving driver from looping.
        None => (0..=MAX_PARAMETERS)
            .find_map(|i| match end_of(i) {
                Ok(Some(_)) => None,
                Ok(None) => Some(Ok(i)),
                Err(e) => Some(Err(e)),
            })
            .unwrap_or(Ok(MAX_PARAMETERS))?,
    };
    let bytes = match count.checked_sub(1) {
        Some(last) => end_of(last)?.unwrap_or(0),
        None => 0,
    };
    Ok(Some((count, bytes)))
}

/// The most parameters asked one by one (CUDA's parameter space is 32 KiB on sm_70 and later).
const MAX_PARAMETERS: usize = 4096;
