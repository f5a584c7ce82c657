//! Device memory: `omp_target_alloc`/`free` and LLVM's allocation kinds.

use super::{initial_device, moving_device};
use crate::diag;
use crate::export::exports;
use rustomp_plugin::AllocKind;
use std::ffi::c_void;

pub(super) fn alloc(size: usize, device_num: i32, kind: AllocKind) -> *mut c_void {
    if size == 0 {
        return std::ptr::null_mut(); // as the OpenMP spec and LLVM do for zero bytes
    }
    if device_num == initial_device() {
        // SAFETY: malloc accepts any size.
        return unsafe { libc::malloc(size) };
    }
    match moving_device(device_num, "omp_target_alloc") {
        Some(d) => crate::ompt::alloc(d.id, 0, size, || d.backend.alloc(size, kind))
            .unwrap_or(std::ptr::null_mut()),
        None => std::ptr::null_mut(),
    }
}
/// # Safety
/// `ptr` is null or memory of `kind` that `alloc` returned for `device_num`, freed once.
pub(super) unsafe fn free(ptr: *mut c_void, device_num: i32, kind: AllocKind) {
    if ptr.is_null() {
        return;
    }
    if device_num == initial_device() {
        // SAFETY: host allocations of omp_target_alloc come from malloc.
        unsafe { libc::free(ptr) };
        return;
    }
    if let Some(d) = moving_device(device_num, "omp_target_free") {
        let free = || {
            // SAFETY: guaranteed by the caller.
            unsafe { d.backend.free(ptr, kind) }
        };
        if let Err(e) = crate::ompt::delete(d.id, ptr as usize, free) {
            diag::error(&format!(
                "omp_target_free of {ptr:p} on device {device_num}: {e}"
            ));
        }
    }
}

exports! {
    pub extern "C" fn omp_target_alloc(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Device)
    }
    pub extern "C" fn llvm_omp_target_alloc_device(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Device)
    }
    pub extern "C" fn llvm_omp_target_alloc_host(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Host)
    }
    pub extern "C" fn llvm_omp_target_alloc_shared(size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        alloc(size, device_num, AllocKind::Shared)
    }
}

/// Exports that free memory of one kind.
macro_rules! free_exports {
    ($($name:ident => $kind:expr;)*) => {$(
        exports! {
            /// # Safety
            /// `ptr` is null or what the matching allocation returned for `device_num`, freed once.
            pub unsafe extern "C" fn $name(ptr: *mut c_void, device_num: i32) {
                on_panic: ();
                // SAFETY: guaranteed by the caller.
                unsafe { free(ptr, device_num, $kind) }
            }
        }
    )*};
}
free_exports! {
    omp_target_free => AllocKind::Device;
    llvm_omp_target_free_device => AllocKind::Device;
    llvm_omp_target_free_host => AllocKind::Host;
    llvm_omp_target_free_shared => AllocKind::Shared;
}

exports! {
    /// Host memory is already accessible to every device this runtime drives (page-locking is a
    /// GPU-plugin optimization): the pointer itself is the locked address.
    pub extern "C" fn llvm_omp_target_lock_mem(ptr: *mut c_void, _size: usize, _device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        ptr
    }
    pub extern "C" fn llvm_omp_target_unlock_mem(_ptr: *mut c_void, _device_num: i32) {
        on_panic: ();
    }
    /// Only meaningful in device code; on the host there is no dynamic shared memory.
    pub extern "C" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
        on_panic: std::ptr::null_mut();
        std::ptr::null_mut()
    }
}
