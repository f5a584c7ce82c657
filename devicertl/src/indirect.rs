//! Indirect-call translation (`declare target indirect`, seed 000): a host function pointer
//! becomes the device address of the same function through a binary search over the sorted
//! `{host, device}` table the plugin uploads. Anything not in the table comes back unchanged.

use crate::env::{self, __omp_offloading_fptr_map_p, __omp_offloading_fptr_map_size};
use core::ffi::c_void;
use rustomp_abi::FptrMapEntry;

/// The device address for `host`, or `host` itself when the table does not hold it.
///
/// `table` must be sorted by `host` (the plugin sorts it). A lower-bound search with a fixed
/// number of halving steps and no data-dependent branch (GPU lanes stay converged, CPUs do not
/// mispredict); it terminates for any input.
#[inline]
pub fn translate(table: &[FptrMapEntry], host: u64) -> u64 {
    if table.is_empty() {
        return host;
    }
    let mut base = 0usize;
    let mut len = table.len();
    // Invariant: `base + len <= table.len()` and `len >= 1`, so every probe is in bounds.
    while len > 1 {
        let half = len / 2;
        // SAFETY: `base + half < base + len <= table.len()` by the invariant.
        let probe = unsafe { table.get_unchecked(base + half) }.host;
        // Stay at `base` while the probe is already past `host`, else move to the probe.
        base = core::hint::select_unpredictable(probe > host, base, base + half);
        len -= half;
    }
    // SAFETY: `base < table.len()` by the invariant (the table is not empty).
    let entry = unsafe { table.get_unchecked(base) };
    if entry.host == host {
        entry.device
    } else {
        host
    }
}

/// The table the plugin published. Ours publishes one pointer to an immutable block that holds
/// its own size, read with one load; LLVM 22's host library publishes the device environment's
/// two fields; seed 000's the two globals. The last two can tear while a kernel runs (an old
/// pointer with a new size), so they are only the fallbacks.
fn published_table() -> &'static [FptrMapEntry] {
    let block = env::__rustomp_indirect_call_table.get().0;
    let (ptr, len) = if !block.is_null() {
        // SAFETY: the plugin uploaded the header and its entries before publishing the pointer
        // and never changes or frees them while the image is loaded.
        let len = unsafe { core::ptr::addr_of!((*block).entries).read() };
        (
            block.wrapping_add(1).cast::<FptrMapEntry>().cast_const(),
            len,
        )
    } else {
        match env::device_environment_indirect_call_table() {
            (0, _) => (
                __omp_offloading_fptr_map_p.get().0.cast_const(),
                __omp_offloading_fptr_map_size.get(),
            ),
            (table, len) => (table as *const FptrMapEntry, len),
        }
    };
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the plugin uploaded `len` entries at `ptr` before any kernel of this image ran
    // and keeps them alive while the image is loaded.
    unsafe { core::slice::from_raw_parts(ptr, len as usize) }
}

fn translate_published(fn_ptr: *mut c_void) -> *mut c_void {
    if fn_ptr.is_null() {
        return fn_ptr;
    }
    translate(published_table(), fn_ptr as u64) as *mut c_void
}

/// What clang-22 emits for calls through `declare target indirect` function pointers.
#[unsafe(no_mangle)]
pub extern "C" fn __llvm_omp_indirect_call_lookup(fn_ptr: *mut c_void) -> *mut c_void {
    translate_published(fn_ptr)
}

/// The translation entry point of the original design (seed 000).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_target_translate_fptr(fn_ptr: *mut c_void) -> *mut c_void {
    translate_published(fn_ptr)
}
