//! Devices: how many, which is the host, which one runs the caller, and their uids.

use super::{initial_device, OMP_INVALID_DEVICE};
use crate::export::exports;
use crate::runtime::runtime;
use std::ffi::c_char;

// Without a runtime there are no devices, and the host is device 0 (as in LLVM without plugins).
exports! {
    pub extern "C" fn omp_get_num_devices() -> i32 {
        on_panic: 0;
        initial_device()
    }
    pub extern "C" fn omp_get_initial_device() -> i32 {
        on_panic: 0;
        initial_device()
    }
    /// On the host, the executing device is the initial device.
    pub extern "C" fn omp_get_device_num() -> i32 {
        on_panic: 0;
        initial_device()
    }
}

pub(super) const HOST_UID: &std::ffi::CStr = c"rustomp-host";

exports! {
    pub extern "C" fn omp_get_uid_from_device(device_num: i32) -> *const c_char {
        on_panic: std::ptr::null();
        static UIDS: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
        let uids = UIDS.get_or_init(|| {
            (0..runtime().num_devices())
                .map(|i| std::ffi::CString::new(format!("rustomp-device-{i}")).unwrap())
                .collect()
        });
        if device_num == initial_device() {
            return HOST_UID.as_ptr();
        }
        uids.get(device_num.max(0) as usize)
            .filter(|_| device_num >= 0)
            .map_or(std::ptr::null(), |u| u.as_ptr())
    }
    /// # Safety
    /// `uid` is null or a NUL-terminated string.
    pub unsafe extern "C" fn omp_get_device_from_uid(uid: *const c_char) -> i32 {
        on_panic: OMP_INVALID_DEVICE;
        if uid.is_null() {
            return OMP_INVALID_DEVICE;
        }
        // SAFETY: guaranteed by the caller.
        let uid = unsafe { std::ffi::CStr::from_ptr(uid) }.to_string_lossy();
        if uid == HOST_UID.to_string_lossy() {
            return initial_device();
        }
        uid.strip_prefix("rustomp-device-")
            .and_then(|n| n.parse().ok())
            .filter(|&n: &i32| (0..initial_device()).contains(&n))
            .unwrap_or(OMP_INVALID_DEVICE)
    }
}
