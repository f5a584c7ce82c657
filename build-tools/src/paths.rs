//! Where things are: the checkout's build outputs, the tools `cargo xtask setup` installs, LLVM
//! 22's own files, an install's layout, and the compilers' and toolchains' names. A leaf: every
//! command reads these here instead of reaching into another command's module.

use crate::util::at;
use std::path::PathBuf;

/// What `cargo xtask devicertl` and `cargo xtask host` install: the device runtime and our
/// `libomptarget.so.22.1` (git-ignored).
pub fn dist_lib() -> PathBuf {
    at("dist/lib")
}

/// Programs `cargo xtask host` builds beside the library: `rustomp-proxy` (git-ignored).
pub fn dist_bin() -> PathBuf {
    at("dist/bin")
}

/// The remote plugin's MPI shim, built with Open MPI's `mpicc` into `dist/lib`.
pub const MPI_SHIM: &str = "librustomp-mpi.so";
/// The proxy program remote ranks run.
pub const PROXY: &str = "rustomp-proxy";
/// The device listing, installed beside the proxy.
pub const INFO: &str = "rustomp-info";

/// The CUDA tools `cargo xtask setup` installs from PyPI (ptxas, nvlink, libdevice, cuda.h):
/// what `--cuda-path` names.
pub fn cuda_dir() -> PathBuf {
    at("target/tools/cuda")
}

/// `target/llvm-ref`: holds `libomptarget.so` -> LLVM's, for `cc --runtime=llvm`.
pub fn llvm_ref_dir() -> PathBuf {
    at("target/llvm-ref")
}

/// LLVM 22's libraries (libomp, LLVM's own libomptarget).
pub const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";
/// LLVM's own library, for comparisons (Debian ships no unversioned libomptarget.so).
pub const LLVM_LIBOMPTARGET: &str = "/usr/lib/llvm-22/lib/libomptarget.so.22.1";
/// The version clang-22's programs are linked against (DT_NEEDED libomptarget.so.22.1).
pub const SONAME: &str = "libomptarget.so.22.1";

/// The Fortran compiler (clang-22 is named where it is run).
pub const FLANG: &str = "flang-22";

/// The clang configuration file of an install, relative to its prefix.
pub const CONFIG: &str = "etc/rustomp/clang.cfg";
/// The flang configuration file of an install, relative to its prefix.
pub const FLANG_CONFIG: &str = "etc/rustomp/flang.cfg";

/// The toolchain of the development-only tools (fuzzing, sanitizers): `RUSTOMP_FUZZ_TOOLCHAIN`,
/// else `nightly`.
pub fn nightly_toolchain() -> String {
    std::env::var("RUSTOMP_FUZZ_TOOLCHAIN")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "nightly".into())
}
