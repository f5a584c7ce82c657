//! `__llvm_omp_host_call(fn, data, size)`: device code calls a host function `fn(data)` and
//! gets its 64-bit result, as LLVM's device runtime offers over its RPC channel.
//!
//! The channel is one port in memory both sides can reach while a kernel runs (CUDA: pinned
//! host memory, which the device addresses directly), whose address the plugin writes into
//! `__rustomp_host_call_port` when it loads the image. While a kernel of such an image runs,
//! the plugin polls the port: it copies `data` out, calls `fn`, and posts the result.
//!
//! The port lives in host memory, which the GPU reaches over the bus (PCIe on the H200's
//! machine). Only loads and stores cross it: a read-modify-write on host memory needs the link's
//! atomic operations, which a PCIe topology need not have (CUDA's
//! `CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED`; LLVM's RPC mailboxes avoid them for the
//! same reason). So device threads take turns through a lock in *device* memory
//! (`__rustomp_host_call_lock`), and the port's state word is only stored with release and
//! loaded with acquire semantics at system scope (`st.release.sys` / `ld.acquire.sys`: each wait
//! iteration reads memory again, nothing is cached or hoisted); `cargo xtask devicertl` checks
//! the PTX for exactly that.
//!
//! The lanes of a warp take turns (one lane at a time makes its whole call while the others
//! wait outside), so no lane ever spins on a lock that a lane of its own warp holds: that
//! would hang a GPU whose warps run in lock step.

use crate::arch;
use crate::env::{DeviceGlobal, DevicePtr};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};
pub use rustomp_abi::{HostCallPort, HOST_CALL_DATA_BYTES};

/// The port, or null when the plugin offers none (a plugin without host calls).
#[unsafe(no_mangle)]
#[used]
#[allow(non_upper_case_globals, reason = "the symbol name the plugins look up")]
pub static __rustomp_host_call_port: DeviceGlobal<DevicePtr<HostCallPort>> =
    DeviceGlobal::new(DevicePtr::null());

/// Which device thread owns the port: 0 free, 1 taken. In device memory, so taking it is an
/// atomic on memory the GPU owns (one definition per image, like all runtime state).
#[unsafe(no_mangle)]
#[allow(
    non_upper_case_globals,
    reason = "runtime state has a C name, one per image"
)]
pub static __rustomp_host_call_lock: AtomicU32 = AtomicU32::new(0);

/// # Safety
/// `port` is the plugin's live port; `data` is readable for `size` bytes (at most
/// `HOST_CALL_DATA_BYTES`).
unsafe fn call_through(
    port: *mut HostCallPort,
    function: *mut c_void,
    data: *const u8,
    size: usize,
) -> u64 {
    use rustomp_abi::host_call_state::*;
    // A compare-exchange keeps its acquire ordering on NVPTX (an ordered RMW would not).
    while __rustomp_host_call_lock
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        arch::pause();
    }
    // SAFETY: the port lives as long as the image; its state word is only loaded and stored
    // atomically (never read-modified-written) by the device.
    let state = unsafe { AtomicU32::from_ptr(&raw mut (*port).state) };
    // SAFETY: this thread owns the port until it releases the lock (the previous owner saw
    // DONE and freed it, so the host no longer reads it); `data` has `size` bytes; the port's
    // data is 8-byte aligned and has room for `size` bytes.
    unsafe {
        (&raw mut (*port).function).write_volatile(function as u64);
        (&raw mut (*port).size).write_volatile(size as u64);
        let buffer = (&raw mut (*port).data) as *mut u8;
        // Whole words where there are any: fewer, larger transactions over the bus.
        let words = size / 8;
        for i in 0..words {
            let word = (data.add(i * 8) as *const u64).read_unaligned();
            (buffer.add(i * 8) as *mut u64).write_volatile(word);
        }
        for i in words * 8..size {
            buffer.add(i).write_volatile(*data.add(i));
        }
    }
    // The request, then the state, in order for the host (a system-scope release store).
    state.store(REQUEST, Ordering::Release);
    while state.load(Ordering::Acquire) != DONE {
        arch::pause();
    }
    // SAFETY: the host posted the result before DONE.
    let result = unsafe { (&raw const (*port).result).read_volatile() };
    state.store(FREE, Ordering::Release);
    __rustomp_host_call_lock.store(0, Ordering::Release);
    result
}

/// # Safety
/// `function` is a host function `u64 f(void *)` (its host address); `data` is readable for
/// `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __llvm_omp_host_call(
    function: *mut c_void,
    data: *mut c_void,
    size: usize,
) -> u64 {
    let port = __rustomp_host_call_port.get().0;
    if port.is_null() {
        arch::print_message(c"rustomp device runtime: __llvm_omp_host_call: this device's plugin offers no host calls\n");
        arch::trap();
    }
    if size > HOST_CALL_DATA_BYTES {
        arch::print_message(
            c"rustomp device runtime: __llvm_omp_host_call: more than 4096 bytes of data\n",
        );
        arch::trap();
    }
    // One lane of the warp at a time, in uniform control flow.
    let mut pending = arch::active_mask();
    let me = arch::lane_id();
    let mut result = 0;
    while pending != 0 {
        let turn = pending.trailing_zeros();
        if turn == me {
            // SAFETY: forwarded from the caller; the port is the plugin's.
            result = unsafe { call_through(port, function, data as *const u8, size) };
        }
        pending &= pending - 1;
    }
    result
}
