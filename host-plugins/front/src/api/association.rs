//! Presence, accessibility, mapped pointers, and associating host and device memory.

use super::{device, initial_device};
use crate::diag;
use crate::export::exports;
use crate::mapping::table::MapEntry;
use crate::target::OFFLOAD_FAIL;
use std::ffi::c_void;

exports! {
    pub extern "C" fn omp_target_is_present(ptr: *const c_void, device_num: i32) -> i32 {
        on_panic: 0;
        if device_num == initial_device() {
            return 1;
        }
        device(device_num, "omp_target_is_present")
            .is_some_and(|d| d.table().find(ptr as usize, 1).is_some()) as i32
    }

    pub extern "C" fn omp_target_is_accessible(
        _ptr: *const c_void,
        _size: usize,
        device_num: i32,
    ) -> i32 {
        on_panic: 0;
        if device_num == initial_device() {
            return 1;
        }
        device(device_num, "omp_target_is_accessible").is_some_and(|d| d.backend.shares_host_memory())
            as i32
    }

    pub extern "C" fn omp_get_mapped_ptr(ptr: *const c_void, device_num: i32) -> *mut c_void {
        on_panic: std::ptr::null_mut();
        if device_num == initial_device() {
            return ptr as *mut c_void;
        }
        device(device_num, "omp_get_mapped_ptr")
            .and_then(|d| {
                d.table()
                    .find(ptr as usize, 1)
                    .map(|e| e.device_address(ptr as usize) as *mut c_void)
            })
            .unwrap_or(std::ptr::null_mut())
    }

    pub extern "C" fn omp_target_associate_ptr(
        host: *const c_void,
        device_ptr: *const c_void,
        size: usize,
        device_offset: usize,
        device_num: i32,
    ) -> i32 {
        on_panic: OFFLOAD_FAIL;
        // LLVM's checks and messages, in its order.
        if host.is_null() || device_ptr.is_null() || size == 0 {
            diag::error("Call to omp_target_associate_ptr with invalid arguments");
            return OFFLOAD_FAIL;
        }
        if device_num == initial_device() {
            diag::error("omp_target_associate_ptr: no association possible on the host");
            return OFFLOAD_FAIL;
        }
        let Some(d) = device(device_num, "omp_target_associate_ptr") else {
            return OFFLOAD_FAIL;
        };
        let host = host as usize;
        let target = device_ptr as usize + device_offset;
        crate::ompt::association(d.id, host, target, size, true, || {
            let mut table = d.table();
            if let Some(existing) = table.find(host, size) {
                if existing.device_address(host) == target && existing.host_end - existing.host_begin == size {
                    return 0;
                }
                diag::error("Not allowed to re-associate a different device ptr+offset with the same host ptr");
                return OFFLOAD_FAIL;
            }
            table.insert(MapEntry::infinite(host, size, target, 0));
            0
        })
    }

    pub extern "C" fn omp_target_disassociate_ptr(host: *const c_void, device_num: i32) -> i32 {
        on_panic: OFFLOAD_FAIL;
        if host.is_null() {
            diag::error("Call to omp_target_disassociate_ptr with invalid host_ptr");
            return OFFLOAD_FAIL;
        }
        if device_num == initial_device() {
            diag::error("omp_target_disassociate_ptr: no association possible on the host");
            return OFFLOAD_FAIL;
        }
        let Some(d) = device(device_num, "omp_target_disassociate_ptr") else {
            return OFFLOAD_FAIL;
        };
        crate::ompt::association(d.id, host as usize, 0, 0, false, || {
            let mut table = d.table();
            // Only an entry that begins at `host` (LLVM looks the exact address up).
            let Some(entry) = table.find(host as usize, 0).filter(|e| e.host_begin == host as usize) else {
                diag::error("Association not found");
                return OFFLOAD_FAIL;
            };
            if entry.hold_refs != 0 {
                diag::error("Trying to disassociate a pointer with a non-zero hold reference count");
                return OFFLOAD_FAIL;
            }
            if !entry.infinite {
                diag::error("Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr");
                return OFFLOAD_FAIL;
            }
            table.remove(host as usize);
            0
        })
    }
}
