//! Interoperability objects (`omp interop`).

use crate::diag;
use crate::export::exports;
use crate::target::OFFLOAD_FAIL;
use std::ffi::{c_char, c_void};

// Interoperability objects (`omp interop`): no plugin of this runtime offers a foreign runtime
// handle, so `init` yields no object and every query answers `omp_irc_no_value`/empty.
pub(super) const OMP_IRC_NO_VALUE: i32 = 1;

macro_rules! interop_query {
    ($name:ident, $ret:ty, $none:expr) => {
        exports! {
            /// # Safety
            /// `ret_code` is null or writable.
            pub unsafe extern "C" fn $name(
                _interop: *const c_void,
                _property: i32,
                ret_code: *mut i32,
            ) -> $ret {
                on_panic: $none;
                if !ret_code.is_null() {
                    // SAFETY: guaranteed by the caller.
                    unsafe { *ret_code = OMP_IRC_NO_VALUE };
                }
                $none
            }
        }
    };
}
interop_query!(omp_get_interop_int, isize, 0);
interop_query!(omp_get_interop_ptr, *mut c_void, std::ptr::null_mut());
interop_query!(omp_get_interop_str, *const c_char, std::ptr::null());

exports! {
    pub extern "C" fn omp_get_interop_name(_interop: *const c_void, _property: i32) -> *const c_char {
        on_panic: std::ptr::null();
        std::ptr::null()
    }
    pub extern "C" fn omp_get_interop_type_desc(
        _interop: *const c_void,
        _property: i32,
    ) -> *const c_char {
        on_panic: std::ptr::null();
        std::ptr::null()
    }
}

/// `init` and `destroy` of an interop variable: wait for the `depend` list, then the variable
/// is `omp_interop_none` (this runtime creates no interop objects).
///
/// # Safety
/// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
pub(super) unsafe fn wait_then_clear(
    ident: *mut c_void,
    gtid: i32,
    interop: *mut *mut c_void,
    ndeps: i32,
    deps: *mut c_void,
) {
    wait_for_dependences(ident, gtid, ndeps, deps);
    if !interop.is_null() {
        // SAFETY: guaranteed by the caller.
        unsafe { *interop = std::ptr::null_mut() };
    }
}

/// Waits for a construct's `depend` list, as libomp's `__kmpc_omp_wait_deps` does for a task
/// (the list is clang's `kmp_depend_info` array, passed through).
pub(super) fn wait_for_dependences(ident: *mut c_void, gtid: i32, ndeps: i32, deps: *mut c_void) {
    type WaitDeps = unsafe extern "C" fn(*mut c_void, i32, i32, *mut c_void, i32, *mut c_void);
    static WAIT_DEPS: std::sync::OnceLock<Option<WaitDeps>> = std::sync::OnceLock::new();
    if ndeps <= 0 || deps.is_null() {
        return;
    }
    let wait = WAIT_DEPS.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__kmpc_omp_wait_deps".as_ptr()) };
        // SAFETY: libomp's __kmpc_omp_wait_deps has this signature.
        (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, WaitDeps>(f) })
    });
    match wait {
        // SAFETY: clang's location, thread id and dependence list, forwarded unchanged.
        Some(wait) => unsafe { wait(ident, gtid, ndeps, deps, 0, std::ptr::null_mut()) },
        None => diag::error("interop: libomp's __kmpc_omp_wait_deps is not loaded; the depend clause is not honoured"),
    }
}

exports! {
    /// No plugin of this runtime offers a foreign runtime handle: every interop is
    /// `omp_interop_none`, without a message (as LLVM's host plugin).
    pub extern "C" fn __tgt_interop_get(
        _ident: *mut c_void,
        _interop_type: i32,
        _device: i64,
        _prefers: *mut c_void,
        _gtid: i32,
        _task: *mut c_void,
    ) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        std::ptr::null_mut()
    }

    /// `#pragma omp interop init(...)`, as clang-22 calls it; waits for the `depend` list first.
    ///
    /// # Safety
    /// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
    pub unsafe extern "C" fn __tgt_interop_init(
        ident: *mut c_void,
        gtid: i32,
        interop: *mut *mut c_void,
        _interop_type: i32,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        // SAFETY: guaranteed by the caller.
        unsafe { wait_then_clear(ident, gtid, interop, ndeps, deps) };
    }

    /// `#pragma omp interop use(...)`: waits for the `depend` list (also for `omp_interop_none`).
    pub extern "C" fn __tgt_interop_use(
        ident: *mut c_void,
        gtid: i32,
        _interop: *mut *mut c_void,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        wait_for_dependences(ident, gtid, ndeps, deps);
    }
    /// LLVM's internal entry points behind `use` / `destroy` (clang-22 does not call them): exported
    /// for ABI completeness, they have nothing to do without interop objects.
    pub extern "C" fn __tgt_interop_use60(
        _ident: *mut c_void,
        _interop: *mut c_void,
        _ctx: *mut c_void,
        _deps: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        0
    }

    /// `#pragma omp interop destroy(...)`: waits for the `depend` list, then the variable is
    /// `omp_interop_none`.
    ///
    /// # Safety
    /// `interop` is null or the interop variable's address; `deps` holds `ndeps` dependences.
    pub unsafe extern "C" fn __tgt_interop_destroy(
        ident: *mut c_void,
        gtid: i32,
        interop: *mut *mut c_void,
        _device: i32,
        ndeps: i32,
        deps: *mut c_void,
        _nowait: i32,
    ) {
        on_panic: ();
        // SAFETY: guaranteed by the caller.
        unsafe { wait_then_clear(ident, gtid, interop, ndeps, deps) };
    }
    pub extern "C" fn __tgt_interop_release(
        _ident: *mut c_void,
        _interop: *mut c_void,
        _ctx: *mut c_void,
        _deps: *mut c_void,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        0
    }
    pub extern "C" fn __tgt_target_sync(
        _ident: *mut c_void,
        _gtid: i32,
        _task: *mut c_void,
        _event: *mut c_void,
    ) {
        on_panic: ();
    }
    pub extern "C" fn ompx_interop_add_completion_callback(
        _interop: *mut c_void,
        _cb: *mut c_void,
        _data: *mut c_void,
    ) -> i32 {
        on_panic: -1;
        -1
    }

}
