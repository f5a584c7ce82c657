//! rustomp's OpenMP device runtime: every `__kmpc_*` / `omp_*` symbol clang-22 emits for GPU
//! offload, for nvptx64 and amdgcn, and the globals the compiler and plugins expect.
//!
//! Built by `cargo xtask devicertl` into self-contained LLVM bitcode (staticlib, fat LTO) that
//! clang links with `-mlink-builtin-bitcode` or pulls from `libompdevice.a`. On the host the
//! same code compiles against the `arch::host` emulation backend so `cargo test` runs it.
//!
//! Contract: the entry points trust the compiler's arguments (environment pointers, loop bounds,
//! argument arrays) as LLVM's DeviceRTL does; they validate what the *plugin* provides (the
//! indirect-call table) and never loop forever on bad input. State lives in three places:
//! device globals written by the plugin (`env`), per-team state in team-shared memory
//! (`state`), and nothing per thread beyond what fits in the team block.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), no_std)]
#![cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    feature(link_llvm_intrinsics, linkage),
    allow(
        internal_features,
        reason = "LLVM intrinsics and linkage are what a GPU runtime is made of"
    )
)]
#![cfg_attr(
    any(target_arch = "nvptx64", target_arch = "amdgpu"),
    feature(c_variadic)
)]

pub mod arch;
pub mod env;
// GPU builds only (and its tests): the virtual GPU's hardware library links the host build of
// this crate and exports its symbols, where flang's own `_FortranAio*` would be found instead of
// the program's.
#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu", test))]
pub mod fortran_io;
pub mod heap;
pub mod host_call;
pub mod ids;
pub mod indirect;
pub mod kernel;
pub mod libc;
pub mod locks;
pub mod memory;
pub mod misc;
pub mod ompx;
pub mod parallel;
pub mod printf;
pub mod reduction;
pub mod schedule;
pub mod state;
pub mod sync;
pub mod tasks;
pub mod workshare;

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // No unwinding on a GPU: stop the kernel so the host sees a launch failure.
    arch::trap()
}
