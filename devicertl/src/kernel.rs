//! Kernel entry and exit: `__kmpc_target_init` / `__kmpc_target_deinit`, and the generic-mode
//! state machine the workers run inside `__kmpc_target_init`.
//!
//! SPMD: every thread runs the region body. Generic: only the main thread (first lane of the
//! last warp, alone there) runs the body; the workers (every thread below the last warp's
//! worth) wait in the state machine and run each parallel region the main thread opens, until
//! `__kmpc_target_deinit` releases them.

use crate::{arch, parallel, state};
use core::sync::atomic::Ordering;
use rustomp_abi::{exec_mode, KernelEnvironment, KernelLaunchEnvironment};

/// Returns -1 to the threads that must run the region body, their thread id to the others
/// (which then leave the kernel).
///
/// # Safety
/// `kernel_env` points at the kernel's `KernelEnvironment` (clang passes its own global);
/// `launch_env` is the kernel's first argument as the plugin provided it (may be null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_target_init(
    kernel_env: *const KernelEnvironment,
    launch_env: *mut KernelLaunchEnvironment,
) -> i32 {
    // SAFETY: guaranteed by the caller.
    let config = unsafe { (*kernel_env).configuration };
    let tid = arch::thread_id_in_block();
    state::init_thread(tid);
    if exec_mode::is_spmd(config.exec_mode) {
        // Every thread runs the team's code at once: thread 0 sets the team up first.
        if tid == 0 {
            state::init_team(config.exec_mode, config.max_threads, launch_env);
        }
        arch::team_barrier();
        return -1;
    }
    // Generic: the main thread alone uses the team state until it opens a region, and the
    // workers first read it after the team barrier that starts one (or ends the kernel): the
    // main thread sets it up and goes on without a barrier here.
    if tid == state::main_thread_id() {
        state::init_team(config.exec_mode, config.max_threads, launch_env);
        return -1;
    }
    // Only workers wait for regions; the main thread's warp-mates and any thread past the last
    // worker leave now, so no warp ever holds both the main thread and a waiting worker.
    if config.use_generic_state_machine != 0 && tid < state::max_workers() {
        run_worker_state_machine(tid);
    }
    tid as i32
}

/// Generic mode: wait for work from the main thread, run it if this thread is part of the
/// region, report completion; return when the main thread ends the kernel.
fn run_worker_state_machine(tid: u32) {
    let team = state::team();
    loop {
        arch::team_barrier(); // the main thread has published a region, or the end
                              // The barrier orders the main thread's writes before it (CTA scope, every state
                              // space): no acquire, which on nvptx is a system-scope `ld.acquire.sys`.
        let work = team.work_fn.load(Ordering::Relaxed);
        if work == 0 {
            return;
        }
        if tid < team.parallel_team_size.load(Ordering::Relaxed) {
            parallel::run_generic_region_worker(work, tid);
        }
        arch::team_barrier(); // region done
    }
}

/// The compiler's own generic-mode state machine (emitted by openmp-opt when it knows every
/// parallel region of the kernel; `UseGenericStateMachine` is then 0): a worker asks for the
/// next region after the team barrier. Returns whether this thread takes part; `*work_fn` = 0
/// means the kernel is ending.
///
/// # Safety
/// `work_fn` points at writable storage for one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_kernel_parallel(work_fn: *mut usize) -> bool {
    let team = state::team();
    // After the compiler's team barrier, which orders the main thread's writes.
    let work = team.work_fn.load(Ordering::Relaxed);
    // SAFETY: guaranteed by the caller.
    unsafe { work_fn.write(work) };
    if work == 0 {
        return false;
    }
    let tid = arch::thread_id_in_block();
    let active = tid < team.parallel_team_size.load(Ordering::Relaxed);
    if active {
        state::set_thread_flags(tid, state::IN_TEAM_REGION | 1);
    }
    active
}

/// A worker of the compiler's state machine finished its region.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_kernel_end_parallel() {
    state::end_implicit_task();
    state::set_thread_flags(arch::thread_id_in_block(), 0);
}

/// Ends the kernel: in generic mode the main thread releases the workers. Then, once no thread
/// of the team runs any more code that could use it, per-thread loop state goes back to the heap.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_target_deinit() {
    let tid = arch::thread_id_in_block();
    if state::is_spmd() {
        // Every thread of an SPMD kernel ends here.
        arch::team_barrier();
        if tid == 0 {
            state::release_thread_slots();
        }
        return;
    }
    if tid == state::main_thread_id() {
        // The barrier below publishes it (no system-scope release).
        state::team().work_fn.store(0, Ordering::Relaxed);
        arch::team_barrier();
        state::release_thread_slots();
    }
}
