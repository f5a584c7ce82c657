//! Kernels for the host-emulation tests: teams × threads of CPU threads entering the runtime the
//! way clang-22's kernels do (`__kmpc_target_init`, body, `__kmpc_target_deinit`).
#![allow(dead_code, reason = "each test binary uses a part of these helpers")]

use core::ffi::c_void;
use devicertl::arch::host::launch;
use devicertl::kernel::{__kmpc_target_deinit, __kmpc_target_init};
use devicertl::parallel::{__kmpc_get_shared_variables, __kmpc_parallel_60};
use rustomp_abi::{
    exec_mode, ConfigurationEnvironment, KernelEnvironment, KernelLaunchEnvironment,
};

/// A raw pointer that emulated device threads may share (the runtime orders the accesses).
#[derive(Clone, Copy)]
pub struct Shared<T>(pub *mut T);
// SAFETY: test-only handle; the tests synchronize through the runtime or atomics.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}
impl<T> Shared<T> {
    /// Through a method, so closures capture the whole (shareable) handle.
    pub fn get(&self) -> *mut T {
        self.0
    }
}

pub fn kernel_environment(mode: u8, runtime_state_machine: bool) -> KernelEnvironment {
    KernelEnvironment {
        configuration: ConfigurationEnvironment {
            use_generic_state_machine: runtime_state_machine as u8,
            exec_mode: mode,
            ..Default::default()
        },
        ident: 0,
        dynamic_env: 0,
    }
}

/// An SPMD kernel: every thread runs `body`.
pub fn spmd_kernel(
    teams: u32,
    threads: u32,
    warp: u32,
    launch_env: Shared<KernelLaunchEnvironment>,
    body: impl Fn() + Sync,
) {
    launch(teams, threads, warp, || {
        let env = kernel_environment(exec_mode::SPMD, false);
        // SAFETY: a valid kernel environment and launch environment (or null).
        let role = unsafe { __kmpc_target_init(&env, launch_env.get()) };
        assert_eq!(role, -1, "every SPMD thread runs the body");
        body();
        __kmpc_target_deinit();
    });
}

/// A generic kernel: the main thread runs `main_body`, the workers wait in the runtime's state
/// machine (or, with `compiler_state_machine`, in a loop like the one openmp-opt emits).
pub fn generic_kernel(
    teams: u32,
    threads: u32,
    warp: u32,
    launch_env: Shared<KernelLaunchEnvironment>,
    compiler_state_machine: bool,
    main_body: impl Fn() + Sync,
) {
    launch(teams, threads, warp, || {
        let env = kernel_environment(exec_mode::GENERIC, !compiler_state_machine);
        // SAFETY: as in `spmd_kernel`.
        let role = unsafe { __kmpc_target_init(&env, launch_env.get()) };
        if role == -1 {
            main_body();
            __kmpc_target_deinit();
        } else if compiler_state_machine && (role as u32) < threads.saturating_sub(warp) {
            // openmp-opt's check: only threads below the last warp's worth are workers.
            worker_loop(role);
        }
    });
}

/// The worker loop openmp-opt writes into a generic kernel when it knows all its regions.
fn worker_loop(tid: i32) {
    use devicertl::kernel::{__kmpc_kernel_end_parallel, __kmpc_kernel_parallel};
    use devicertl::sync::__kmpc_barrier_simple_generic;
    loop {
        __kmpc_barrier_simple_generic(core::ptr::null(), tid);
        let mut work = 0usize;
        // SAFETY: `work` is writable.
        let active = unsafe { __kmpc_kernel_parallel(&mut work) };
        if work == 0 {
            return;
        }
        if active {
            // SAFETY: the main thread published one of our region wrappers.
            let wrapper: extern "C" fn(u16, u32) =
                unsafe { core::mem::transmute(core::ptr::with_exposed_provenance::<()>(work)) };
            wrapper(0, tid as u32);
            __kmpc_kernel_end_parallel();
        }
        __kmpc_barrier_simple_generic(core::ptr::null(), tid);
    }
}

type RegionBody<'a> = &'a (dyn Fn() + Sync);

extern "C" fn outlined(_gtid: *mut i32, _btid: *mut i32, body: *mut c_void) {
    // SAFETY: `parallel` passes a pointer to a live `RegionBody`.
    let body = unsafe { *(body as *const RegionBody<'_>) };
    body();
}

/// The generic-mode wrapper clang emits: fetch the shared arguments, call the outlined region.
extern "C" fn wrapper(_zero: u16, tid: u32) {
    let mut args: *mut *mut c_void = core::ptr::null_mut();
    // SAFETY: `args` is writable.
    unsafe { __kmpc_get_shared_variables(&mut args) };
    let mut gtid = tid as i32;
    let mut btid = 0;
    // SAFETY: the main thread shared exactly one argument, the body pointer.
    outlined(&mut gtid, &mut btid, unsafe { *args });
}

/// `#pragma omp parallel if(if_expr) num_threads(num_threads)` running `body`
/// (`num_threads` 0: no clause).
pub fn parallel(if_expr: bool, num_threads: i32, body: &(dyn Fn() + Sync)) {
    let body: RegionBody<'_> = body;
    let mut args = [&body as *const RegionBody<'_> as *mut c_void];
    // SAFETY: `outlined`/`wrapper` take the one argument passed, as clang's functions would.
    unsafe {
        __kmpc_parallel_60(
            core::ptr::null(),
            0,
            if_expr as i32,
            if num_threads > 0 { num_threads } else { -1 },
            -1,
            outlined as *mut c_void,
            wrapper as *mut c_void,
            args.as_mut_ptr(),
            1,
            0,
        )
    };
}

/// Deterministic pseudo-random numbers (xorshift64*), the same sequence on every thread.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `low..=high`.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next() % ((high - low) as u64 + 1)) as i64
    }
}
