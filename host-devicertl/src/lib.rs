//! The device runtime of flang-22's host-offload images (`-fopenmp-targets=x86_64-pc-linux-gnu`).
//!
//! clang-22 compiles a target region for x86_64 as host code (`__kmpc_fork_teams`,
//! `__kmpc_fork_call`, libomp's worksharing), which libomp serves. flang-22 compiles it the way
//! it compiles for a GPU (OpenMPIRBuilder's device code): the kernel starts with
//! `__kmpc_target_init`, parallel regions go through `__kmpc_parallel_60`, loops through
//! OpenMPIRBuilder's `__kmpc_*_static_loop_*`, and `omp_is_initial_device()` is an ordinary call.
//! No library provides those for an x86_64 image (LLVM 22's device runtime is GPU-only), so
//! such a program cannot even link. This crate is that library: `cargo xtask host` builds it as
//! a staticlib, installed as `dist/lib/x86_64-pc-linux-gnu/libompdevice.a`, and `cargo xtask fc`
//! (and the installed flang configuration) pass it to the x86_64 device link with
//! `-Xoffload-linker-x86_64-pc-linux-gnu -lompdevice`.
//!
//! The execution model, on the CPU plugin: a kernel runs on the host thread that launches it,
//! as one team; that thread is the team's initial thread in either execution mode (generic or
//! SPMD: with one thread they coincide). A parallel region is a libomp parallel region
//! (`__kmpc_fork_call`), so inside it every `omp_*` query, barrier, reduction (flang emits
//! libomp's `__kmpc_reduce` for x86_64), critical section and dynamic loop is libomp's, as in
//! clang's images. The static loops share their iterations among the threads of the current
//! libomp team.
//!
//! Which symbols: exactly those flang-22 emits for x86_64 that libomp does not define (found
//! from the device IR of the Fortran corpus, `tests/programs/2*.f90`), plus
//! `omp_is_initial_device`, which libomp defines with the host's answer. The device link uses
//! `-Bsymbolic`, so the image's calls bind to these definitions, and they must come from the
//! archive member that `__kmpc_target_init` pulls in (a symbol libomp already defined pulls in
//! no member of its own): `cargo xtask host` builds the crate as one codegen unit and checks it.
//!
//! Contract: the entry points trust the compiler's arguments (outlined functions, argument
//! arrays, trip counts), as LLVM's DeviceRTL does. None of them panics; the one limit (captured
//! values of a parallel region) is reported on stderr before the process aborts.
#![cfg_attr(not(test), no_std)]

pub mod kernel;
mod libomp;
pub mod parallel;
pub mod workshare;

/// The staticlib is built with `-C panic=abort` and its code has no panicking path (no
/// indexing, no unchecked arithmetic); should one appear, the process stops as after any other
/// fatal error in an offload image.
#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    libomp::fatal(b"rustomp (x86_64 device runtime): internal error\n")
}
