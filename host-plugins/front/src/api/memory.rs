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

/// `llvm_omp_target_lock_mem`: page-locks the user's memory for a GPU (libomp asks for the
/// default device's when `omp_alloc` uses the pinned trait), so its copies skip the staging
/// ring. As LLVM: null when the device cannot lock it (the reason goes to the debug output);
/// on the host, or a device without pinning, the memory itself.
fn lock(ptr: *mut c_void, size: usize, device_num: i32) -> *mut c_void {
    if ptr.is_null() || device_num == initial_device() {
        return ptr;
    }
    let Some(d) = moving_device(device_num, "llvm_omp_target_lock_mem") else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller gives live memory of `size`, unlocked before it is freed (libomp's
    // allocator does both around the allocation's life).
    match unsafe { d.backend.lock_host(ptr, size) } {
        Ok(address) => address,
        Err(e) => {
            diag::debug!("llvm_omp_target_lock_mem: {e}");
            std::ptr::null_mut()
        }
    }
}

fn unlock(ptr: *mut c_void, device_num: i32) {
    if ptr.is_null() || device_num == initial_device() {
        return;
    }
    if let Some(d) = moving_device(device_num, "llvm_omp_target_unlock_mem") {
        // SAFETY: the caller unlocks memory it no longer copies or uses on the device.
        if let Err(e) = unsafe { d.backend.unlock_host(ptr) } {
            diag::debug!("llvm_omp_target_unlock_mem: {e}");
        }
    }
}

exports! {
    pub extern "C" fn llvm_omp_target_lock_mem(ptr: *mut c_void, size: usize, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        lock(ptr, size, device_num)
    }
    pub extern "C" fn llvm_omp_target_unlock_mem(ptr: *mut c_void, device_num: i32) {
        on_panic: ();
        unlock(ptr, device_num)
    }
    /// Only meaningful in device code; on the host there is no dynamic shared memory.
    pub extern "C" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
        on_panic: std::ptr::null_mut();
        std::ptr::null_mut()
    }
}
