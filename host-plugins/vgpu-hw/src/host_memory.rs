//! Host memory that device code reaches over the bus, and the check that it does no atomic
//! read-modify-write there.
//!
//! On the H200's machine a GPU reaches pinned host memory (allocations of kind host: the
//! host-call port, `llvm_omp_target_alloc_host`; memory locked by `llvm_omp_target_lock_mem`)
//! over PCIe, which carries loads and stores but no atomic operations the host's memory honours
//! (`CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED` is 0). An atomic compare-exchange there is what made the device runtime's first host call hang
//! on the H200 (corpus 131). Here host memory is the host's own, where the same atomic just
//! works, so the virtual-GPU plugin registers each host allocation and locked range
//! ([`rustomp_vgpu_host_memory`]), every `atomicrmw` and `cmpxchg` of the image first calls
//! [`__vgpu_host_atomic`] (the instrumentation in `build-tools/src/vgpu/instrument.rs`), and one
//! that lands in host memory stops the program, named, as a GPU would hang or fault.
//! `RUSTOMP_VGPU_HOST_ATOMICS=1` allows them (a GPU with a coherent host link, NVLink-C2C).

use crate::team;
use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};
use rustomp_abi::VgpuAccessSite;
use std::sync::{OnceLock, RwLock};

/// The registered host ranges, `[start, end)`.
static RANGES: RwLock<Vec<(usize, usize)>> = RwLock::new(Vec::new());
/// How many there are: nothing to look up while 0.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// The virtual-GPU plugin's report of a host allocation (`present`) or its release.
#[unsafe(no_mangle)]
pub extern "C" fn rustomp_vgpu_host_memory(start: *const c_void, bytes: usize, present: bool) {
    let start = start as usize;
    let mut ranges = RANGES.write().unwrap_or_else(|e| e.into_inner());
    ranges.retain(|&(s, _)| s != start);
    if present {
        ranges.push((start, start + bytes.max(1)));
    }
    COUNT.store(ranges.len(), Ordering::Release);
}

/// The host range `address` lies in, if any.
pub fn host_range_of(address: usize) -> Option<(usize, usize)> {
    if COUNT.load(Ordering::Acquire) == 0 {
        return None;
    }
    let ranges = RANGES.read().unwrap_or_else(|e| e.into_inner());
    ranges
        .iter()
        .copied()
        .find(|&(start, end)| (start..end).contains(&address))
}

fn allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var("RUSTOMP_VGPU_HOST_ATOMICS").is_ok_and(|v| v == "1"))
}

/// Before each atomic read-modify-write of the image through a generic or global pointer.
///
/// # Safety
/// `site` is the instrumentation's site constant.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_host_atomic(address: *const c_void, site: *const VgpuAccessSite) {
    let Some((start, end)) = host_range_of(address as usize) else {
        return;
    };
    if allowed() {
        return;
    }
    eprintln!(
        "rustomp virtual GPU: kernel {}: team {} thread {} does an atomic read-modify-write at {:#x}, in host memory [{start:#x}, {end:#x}) that the device reaches over the bus ({}): PCIe carries no atomic operations to host memory (CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is 0 on such a machine), so a GPU hangs or loses the update here; use device memory for the atomic, or RUSTOMP_VGPU_HOST_ATOMICS=1 to model a coherent link",
        crate::current_kernel(),
        crate::CURRENT_TEAM.load(Ordering::Relaxed),
        team::thread(),
        address as usize,
        crate::racecheck::describe_site(site),
    );
    std::process::abort()
}

/// The same check for an `addrspace(1)` pointer (the same bits on x86_64).
///
/// # Safety
/// As [`__vgpu_host_atomic`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_host_atomic_as1(
    address: *const c_void,
    site: *const VgpuAccessSite,
) {
    // SAFETY: forwarded.
    unsafe { __vgpu_host_atomic(address, site) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_ranges_are_found_until_released() {
        let block = [0u8; 64];
        let start = block.as_ptr() as *const c_void;
        assert_eq!(host_range_of(block.as_ptr() as usize + 8), None);
        rustomp_vgpu_host_memory(start, 64, true);
        let range = (block.as_ptr() as usize, block.as_ptr() as usize + 64);
        assert_eq!(host_range_of(block.as_ptr() as usize + 8), Some(range));
        assert_eq!(host_range_of(block.as_ptr() as usize + 64), None);
        rustomp_vgpu_host_memory(start, 64, false);
        assert_eq!(host_range_of(block.as_ptr() as usize + 8), None);
    }
}
