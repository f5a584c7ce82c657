//! Raw driver declarations: the handle types, the few enum values the plugin passes, and the
//! table of entry points resolved from `libcuda.so.1` when the plugin first needs the driver.
//!
//! Values and signatures are those of CUDA 13's `cuda.h`; the versioned `_v2` entry points are
//! preferred wherever `cuda.h` maps the plain name onto one.

use core::ffi::{c_char, c_int, c_uint, c_void};

/// `CUresult`: 0 is success, anything else an error code (see [`super::error`]).
pub type CUresult = c_int;
/// `CUdevice`: a device ordinal as the driver numbers them.
pub type CUdevice = c_int;
/// `CUdeviceptr`: a device address (64-bit on every supported platform).
pub type CUdeviceptr = u64;
/// Opaque driver handles.
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;

pub const CUDA_SUCCESS: CUresult = 0;
/// An argument the driver refuses; also its answer to `cuModuleGetGlobal` for the name of a
/// function (seen on an H200, driver 580), and to `cuFuncGetParamInfo` past the last parameter.
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
/// A name the module does not define at all (`cuModuleGetGlobal`, `cuModuleGetFunction`).
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
/// `cuStreamQuery`: work is still running on the stream (not an error).
pub const CUDA_ERROR_NOT_READY: CUresult = 600;

/// `CUdevice_attribute` values the plugin queries.
pub mod device_attribute {
    use core::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 1;
    pub const MAX_BLOCK_DIM_X: c_int = 2;
    pub const MAX_GRID_DIM_X: c_int = 5;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
    pub const WARP_SIZE: c_int = 10;
    pub const CLOCK_RATE: c_int = 13;
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    pub const MANAGED_MEMORY: c_int = 83;
    pub const PAGEABLE_MEMORY_ACCESS: c_int = 88;
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
}

/// `CUfunction_attribute` values.
pub mod function_attribute {
    use core::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 0;
    pub const SHARED_SIZE_BYTES: c_int = 1;
    pub const MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
}

/// `CUlimit` values.
pub mod limit {
    use core::ffi::c_int;
    pub const STACK_SIZE: c_int = 0x00;
    pub const MALLOC_HEAP_SIZE: c_int = 0x02;
}

/// `CUjit_option` values used when JIT-compiling PTX.
pub mod jit_option {
    use core::ffi::c_int;
    pub const ERROR_LOG_BUFFER: c_int = 5;
    pub const ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
}

/// `CU_CTX_SCHED_BLOCKING_SYNC` and the scheduling-flag mask of a context.
pub const CU_CTX_SCHED_BLOCKING_SYNC: c_uint = 0x04;
pub const CU_CTX_SCHED_MASK: c_uint = 0x07;
/// `CU_STREAM_NON_BLOCKING`: no implicit synchronization with the legacy default stream.
pub const CU_STREAM_NON_BLOCKING: c_uint = 0x1;
/// `CUpointer_attribute` values: what kind of memory an address is (a `CUmemorytype`, 0 for
/// memory the driver does not know) and the allocation's process-wide unique id.
pub mod pointer_attribute {
    use core::ffi::c_int;
    pub const MEMORY_TYPE: c_int = 2;
    pub const BUFFER_ID: c_int = 7;
}
/// `CU_MEMORYTYPE_HOST`: page-locked host memory (`cuMemAllocHost`, `cuMemHostRegister`).
pub const CU_MEMORYTYPE_HOST: c_uint = 0x01;
/// `CU_MEMHOSTREGISTER_PORTABLE`: the range is pinned for every context, not only the current.
pub const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 0x01;
/// `CU_MEM_ATTACH_GLOBAL`: managed memory accessible from any stream on any device.
pub const CU_MEM_ATTACH_GLOBAL: c_uint = 0x1;

/// The shared object the driver ships as.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

macro_rules! driver_api {
    (
        required {
            $($field:ident = $symbol:literal: fn($($ty:ty),* $(,)?);)*
        }
        optional {
            $($(#[$opt_meta:meta])* $opt_field:ident = $opt_symbol:literal: fn($($opt_ty:ty),* $(,)?);)*
        }
    ) => {
        /// The driver entry points the plugin calls, resolved once from the loaded library.
        /// Entry points newer drivers added are `Option`s: `None` on a driver without them.
        ///
        /// Plain function pointers: the table is `Copy`-free but `Send + Sync`, and tests build
        /// one from fake functions to run the plugin without a GPU.
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($ty),*) -> CUresult,)*
            $($(#[$opt_meta])* pub $opt_field: Option<unsafe extern "C" fn($($opt_ty),*) -> CUresult>,)*
        }

        impl Api {
            /// Looks every entry point up in `library`; the first missing one that is not
            /// optional is the error.
            ///
            /// # Safety
            /// `library` is a live `dlopen` handle of the CUDA driver (never closed afterwards:
            /// the pointers in the table point into it).
            pub unsafe fn resolve(library: *mut c_void) -> Result<Self, String> {
                Ok(Self {
                    $($field: {
                        let name = concat!($symbol, "\0");
                        // SAFETY: a live handle (caller) and a NUL-terminated name.
                        let address = unsafe { libc::dlsym(library, name.as_ptr() as *const c_char) };
                        if address.is_null() {
                            return Err(format!(
                                "{} has no entry point {} (driver too old?)",
                                DRIVER_LIBRARY, $symbol
                            ));
                        }
                        // SAFETY: the driver exports this symbol with the signature `cuda.h`
                        // declares, which the field type repeats.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> CUresult>(address)
                        }
                    },)*
                    $($opt_field: {
                        let name = concat!($opt_symbol, "\0");
                        // SAFETY: a live handle (caller) and a NUL-terminated name.
                        let address = unsafe { libc::dlsym(library, name.as_ptr() as *const c_char) };
                        (!address.is_null()).then(|| {
                            // SAFETY: as above, for a driver new enough to export it.
                            unsafe {
                                std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($opt_ty),*) -> CUresult>(address)
                            }
                        })
                    },)*
                })
            }
        }
    };
}

driver_api! {
    required {
    init = "cuInit": fn(c_uint);
    driver_get_version = "cuDriverGetVersion": fn(*mut c_int);
    device_get_count = "cuDeviceGetCount": fn(*mut c_int);
    device_get = "cuDeviceGet": fn(*mut CUdevice, c_int);
    device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, CUdevice);
    device_get_name = "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
    device_total_mem = "cuDeviceTotalMem_v2": fn(*mut usize, CUdevice);
    get_error_name = "cuGetErrorName": fn(CUresult, *mut *const c_char);
    get_error_string = "cuGetErrorString": fn(CUresult, *mut *const c_char);
    primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut CUcontext, CUdevice);
    primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": fn(CUdevice);
    primary_ctx_get_state = "cuDevicePrimaryCtxGetState": fn(CUdevice, *mut c_uint, *mut c_int);
    primary_ctx_set_flags = "cuDevicePrimaryCtxSetFlags_v2": fn(CUdevice, c_uint);
    ctx_set_current = "cuCtxSetCurrent": fn(CUcontext);
    ctx_set_limit = "cuCtxSetLimit": fn(c_int, usize);
    stream_create = "cuStreamCreate": fn(*mut CUstream, c_uint);
    stream_destroy = "cuStreamDestroy_v2": fn(CUstream);
    stream_synchronize = "cuStreamSynchronize": fn(CUstream);
    stream_query = "cuStreamQuery": fn(CUstream);
    mem_alloc = "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
    mem_free = "cuMemFree_v2": fn(CUdeviceptr);
    mem_alloc_host = "cuMemAllocHost_v2": fn(*mut *mut c_void, usize);
    mem_free_host = "cuMemFreeHost": fn(*mut c_void);
    mem_alloc_managed = "cuMemAllocManaged": fn(*mut CUdeviceptr, usize, c_uint);
    memcpy_htod_async = "cuMemcpyHtoDAsync_v2": fn(CUdeviceptr, *const c_void, usize, CUstream);
    memcpy_dtoh_async = "cuMemcpyDtoHAsync_v2": fn(*mut c_void, CUdeviceptr, usize, CUstream);
    memcpy_dtod_async = "cuMemcpyDtoDAsync_v2": fn(CUdeviceptr, CUdeviceptr, usize, CUstream);
    module_load_data_ex = "cuModuleLoadDataEx": fn(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    module_unload = "cuModuleUnload": fn(CUmodule);
    module_get_function = "cuModuleGetFunction": fn(*mut CUfunction, CUmodule, *const c_char);
    module_get_global = "cuModuleGetGlobal_v2": fn(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
    func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, CUfunction);
    func_set_attribute = "cuFuncSetAttribute": fn(CUfunction, c_int, c_int);
    launch_kernel = "cuLaunchKernel": fn(
        CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream,
        *mut *mut c_void, *mut *mut c_void,
    );
    }
    optional {
        /// CUDA 12.4: offset and size of parameter `index` (CUDA_ERROR_INVALID_VALUE past the
        /// last one).
        func_get_param_info = "cuFuncGetParamInfo": fn(CUfunction, usize, *mut usize, *mut usize);
        /// CUDA 12.9 / 13.0: how many parameters the function takes.
        func_get_param_count = "cuFuncGetParamCount": fn(CUfunction, *mut usize);
        /// Attributes of any address; unlike `cuPointerGetAttribute`, an address the driver
        /// does not know is no error: its attributes read 0.
        pointer_get_attributes = "cuPointerGetAttributes": fn(c_uint, *mut c_int, *mut *mut c_void, CUdeviceptr);
        /// Page-locks (and maps) a range of the user's memory, and undoes that.
        mem_host_register = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
        mem_host_unregister = "cuMemHostUnregister": fn(*mut c_void);
        /// Events: timestamps taken on the device as a stream reaches them (OMPT tracing).
        event_create = "cuEventCreate": fn(*mut CUevent, c_uint);
        event_destroy = "cuEventDestroy_v2": fn(CUevent);
        event_record = "cuEventRecord": fn(CUevent, CUstream);
        event_synchronize = "cuEventSynchronize": fn(CUevent);
        event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, CUevent, CUevent);
    }
}

/// Opens the driver library and resolves [`Api`]. The handle is never closed.
pub fn load(path: &str) -> Result<&'static Api, String> {
    let c_path = std::ffi::CString::new(path)
        .map_err(|_| format!("driver path {path:?} contains a NUL byte"))?;
    // SAFETY: a valid C string; dlopen reports failure with null.
    let library = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if library.is_null() {
        // dlerror names the library: "libcuda.so.1: cannot open shared object file: ...".
        return Err(rustomp_plugin::last_dl_error());
    }
    // SAFETY: a live handle that stays open for the life of the process.
    let api = unsafe { Api::resolve(library) }?;
    Ok(Box::leak(Box::new(api)))
}
