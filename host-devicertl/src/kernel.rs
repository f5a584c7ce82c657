//! The kernel entry protocol and the device's answer to `omp_is_initial_device`.
//!
//! flang-22's kernel for x86_64 is the GPU one:
//!
//! ```llvm
//! %r = call i32 @__kmpc_target_init(ptr @<kernel>_kernel_environment, ptr %dyn_ptr)
//! %exec_user_code = icmp eq i32 %r, -1
//! br i1 %exec_user_code, label %user_code.entry, label %common.ret
//! user_code.entry:  ... the region ...  call void @__kmpc_target_deinit()
//! ```
//!
//! On a GPU, -1 goes to the threads that run the body (every thread in SPMD mode, the main
//! thread in generic mode) and the workers of a generic kernel wait in the state machine. The
//! CPU plugin calls the kernel once, on the launching host thread, which is the team's only
//! initial thread: it runs the body, and parallel regions start their own threads (see
//! `parallel`). So no thread ever takes the worker path, whatever the kernel environment says
//! (exec mode, generic state machine, thread and team bounds): with a single thread, generic
//! and SPMD mode mean the same.

use core::ffi::c_void;

/// `__kmpc_target_init(KernelEnvironmentTy *, KernelLaunchEnvironmentTy *)`: -1, "run the
/// region", for the launching thread. The plugin passes a valid launch environment as
/// `dyn_ptr`; neither environment is needed here.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_target_init(
    _kernel_environment: *const c_void,
    _dyn_ptr: *mut c_void,
) -> i32 {
    -1
}

/// `__kmpc_target_deinit()`: the region is over. No state machine to stop, nothing to free.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_target_deinit() {}

/// `omp_is_initial_device()` in a target region: false, the region runs on a device (one of the
/// CPU plugin's). libomp's definition answers for the host, which is why the image gets this
/// one (clang-22 folds the call to 0 in its own device code, so clang's images never call it).
#[unsafe(no_mangle)]
pub extern "C" fn omp_is_initial_device() -> i32 {
    0
}
