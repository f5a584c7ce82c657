//! `__llvm_omp_host_call` for code that already runs on the host.

use crate::diag;
use crate::export::exports;
use std::ffi::c_void;

exports! {
    /// `__llvm_omp_host_call` for code that already runs on the host: host-offload (CPU plugin)
    /// images and host fallback resolve it here and call the function directly. GPU images have
    /// the device runtime's version, which reaches the host through the plugin's port.
    ///
    /// # Safety
    /// `function` is null or a host function `u64 f(void *)`; `data` is what it expects.
    pub unsafe extern "C" fn __llvm_omp_host_call(
        function: *mut c_void,
        data: *mut c_void,
        _size: usize,
    ) -> u64 {
        on_panic: 0;
        if function.is_null() {
            diag::error("__llvm_omp_host_call: a null host function");
            return 0;
        }
        // SAFETY: guaranteed by the caller.
        let f: rustomp_plugin::host_call::HostFunction = unsafe { core::mem::transmute(function) };
        // SAFETY: as above.
        unsafe { f(data) }
    }
}
