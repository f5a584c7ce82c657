//! What this runtime calls: libomp (the host program's OpenMP runtime, which the device link
//! names with `-lomp`) and the C library.

use core::ffi::c_void;

// The unit tests link libomp themselves (build.rs); the images name it in their device link.
#[cfg_attr(test, link(name = "omp"))]
unsafe extern "C" {
    /// Forks a libomp team running `microtask(&gtid, &btid, args...)` with `argc` pointer-sized
    /// arguments; returns when the region is over.
    pub fn __kmpc_fork_call(loc: *const c_void, argc: i32, microtask: *const c_void, ...);
    /// The next fork of thread `gtid` uses `num_threads` threads.
    pub fn __kmpc_push_num_threads(loc: *const c_void, gtid: i32, num_threads: i32);
    /// The next fork of thread `gtid` uses this `proc_bind` policy (libomp's `kmp_proc_bind_t`).
    pub fn __kmpc_push_proc_bind(loc: *const c_void, gtid: i32, proc_bind: i32);
    pub fn omp_get_thread_num() -> i32;
    pub fn omp_get_num_threads() -> i32;
}

unsafe extern "C" {
    fn write(fd: i32, buf: *const c_void, count: usize) -> isize;
    fn abort() -> !;
}

/// Writes `message` to stderr and aborts the process (as a fatal offload error does).
pub fn fatal(message: &[u8]) -> ! {
    // SAFETY: the buffer is valid for its length; a short or failed write only loses text.
    unsafe { write(2, message.as_ptr().cast(), message.len()) };
    // SAFETY: abort has no preconditions.
    unsafe { abort() }
}
