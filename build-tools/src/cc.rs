//! `cargo xtask cc` / `cargo xtask c++`: clang-22 with our runtime wired in.
//!
//! Device side: the nvptx runtime bitcode (`--libomptarget-nvptx-bc-path`), for the device
//! link each triple's own `libompdevice.a` directory, and the pass plugin that translates calls
//! through host function pointers in device code (`pass::clang_flags`). Host side: `-L`/rpath to `dist/lib` so the
//! program loads our `libomptarget.so.22.1`, and LLVM 22's directory for `libomp.so.5`.
//! `--runtime=llvm` builds against LLVM's reference libomptarget instead.

use crate::bail;
use crate::devicertl;
use crate::paths::cuda_dir;
use crate::paths::dist_lib;
use crate::paths::llvm_ref_dir;
use crate::paths::LLVM_LIB;
use crate::util::{self, Cmd, Result};
use std::path::Path;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Runtime {
    /// rustomp (dist/lib)
    Ours,
    /// LLVM's libomptarget.so.22.1 (target/llvm-ref), for comparisons
    Llvm,
}

/// Splits off `--runtime=ours|rustomp|llvm` (handled here, not by clang).
pub fn split_runtime(args: &[String]) -> Result<(Runtime, Vec<String>)> {
    let mut runtime = Runtime::Ours;
    let mut rest = Vec::with_capacity(args.len());
    for a in args {
        match a.strip_prefix("--runtime=") {
            Some("llvm") => runtime = Runtime::Llvm,
            Some("ours") | Some("rustomp") => runtime = Runtime::Ours,
            Some(other) => bail!("unknown --runtime={other}: use --runtime=llvm (LLVM's libomptarget) or --runtime=rustomp (the default)"),
            None => rest.push(a.clone()),
        }
    }
    Ok((runtime, rest))
}

/// Whether any offload target of this compile is an AMD GPU.
fn targets_amdgpu(args: &[String]) -> bool {
    args.iter().any(|a| {
        a.strip_prefix("--offload-arch=")
            .or_else(|| a.strip_prefix("--cuda-gpu-arch="))
            .is_some_and(|v| v.contains("gfx"))
            || a.strip_prefix("-fopenmp-targets=")
                .is_some_and(|v| v.contains("amdgcn"))
    })
}

/// Device-side flags for a runtime laid out in `lib` (as `dist/lib`): the CUDA tools (when
/// `cuda` is given), the nvptx bitcode linked into every unit, and each triple's directory
/// holding the `libompdevice.a` the device link takes. `cargo xtask install` writes the same
/// flags into its clang configuration file.
pub fn device_flags(lib: &Path, cuda: Option<&Path>) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(cuda) = cuda {
        flags.push(format!("--cuda-path={}", cuda.display()));
    }
    flags.push(format!(
        "--libomptarget-nvptx-bc-path={}",
        lib.join(devicertl::NVPTX_BC).display()
    ));
    for t in &devicertl::TARGETS {
        flags.push(format!("-Xoffload-linker-{}", t.triple));
        flags.push(format!("-L{}", lib.join(t.triple).display()));
    }
    flags
}

/// No ROCm device libraries here; the runtime comes from libompdevice.a. Scoped to the amdgcn
/// toolchain: a plain -nogpulib would also drop the nvptx runtime bitcode (and -lompdevice) from
/// a compile for both, e.g. --offload-arch=sm_90,gfx90a.
pub const AMDGCN_NOGPULIB: [&str; 2] = ["-Xopenmp-target=amdgcn-amd-amdhsa", "-nogpulib"];

/// Host-side flags for our `libomptarget.so.22.1` in `lib`: found at link time and, through an
/// rpath, at run time; LLVM 22's directory for `libomp.so.5` likewise.
pub fn host_flags(lib: &Path) -> Vec<String> {
    vec![
        format!("-L{}", lib.display()),
        format!("-Wl,-rpath,{}", lib.display()),
        format!("-Wl,-rpath,{LLVM_LIB}"),
        format!("-L{LLVM_LIB}"),
    ]
}

/// The clang-22 (or clang++-22) command for `user` arguments.
pub fn command(cxx: bool, runtime: Runtime, user: &[String]) -> Cmd {
    build(cxx, runtime, user, true)
}

/// As [`command`] with our runtime, but without the indirect-call pass plugin: what plain
/// clang-22 makes of the device code (the tests compare the two).
pub fn command_without_pass(cxx: bool, user: &[String]) -> Cmd {
    build(cxx, Runtime::Ours, user, false)
}

fn build(cxx: bool, runtime: Runtime, user: &[String], pass: bool) -> Cmd {
    let mut cmd = Cmd::new(if cxx { "clang++-22" } else { "clang-22" });
    cmd.hint("clang-22 is needed: `cargo xtask setup`");
    // In a shell that sourced an installed env.sh, clang-22 would load that install's
    // configuration for -fopenmp (CCC_OVERRIDE_OPTIONS): this command wires dist/lib itself.
    if std::env::var("CCC_OVERRIDE_OPTIONS").is_ok_and(|v| v.contains(crate::paths::CONFIG)) {
        cmd.env_remove("CCC_OVERRIDE_OPTIONS");
    }
    if !user
        .iter()
        .any(|a| a == "-fopenmp" || a.starts_with("-fopenmp="))
    {
        cmd.arg("-fopenmp");
    }
    let cuda = cuda_dir();
    let cuda = cuda.join("bin").is_dir().then_some(cuda.as_path());
    if targets_amdgpu(user) {
        cmd.args(AMDGCN_NOGPULIB);
    }
    let lib = dist_lib();
    // The device runtime is always ours (Debian ships no LLVM device runtime); only the host
    // library changes with --runtime.
    cmd.args(device_flags(&lib, cuda));
    if pass {
        // Calls through host function pointers in device code (issue 25): the pass plugin for
        // every device compile and the nvptx64 / amdgcn device LTO links.
        cmd.args(crate::pass::clang_flags(&lib.join(crate::pass::PLUGIN)));
    }
    match runtime {
        Runtime::Ours => {
            cmd.args(host_flags(&lib));
        }
        Runtime::Llvm => {
            cmd.arg(format!("-L{}", llvm_ref_dir().display()));
            cmd.arg(format!("-Wl,-rpath,{LLVM_LIB}"));
            cmd.arg(format!("-L{LLVM_LIB}"));
        }
    }
    cmd.arg("-Qunused-arguments");
    cmd.args(user);
    cmd
}

/// `cargo xtask cc ARGS`: runs clang and returns its exit code.
pub fn run(cxx: bool, args: &[String]) -> Result<i32> {
    let (runtime, user) = split_runtime(args)?;
    let plugin = crate::pass::plugin_path();
    if !plugin.is_file() {
        bail!(
            "{} is missing: `cargo xtask host` builds it",
            crate::util::show(&plugin)
        );
    }
    if runtime == Runtime::Llvm && !llvm_ref_dir().join("libomptarget.so").exists() {
        crate::host::link_llvm_reference();
    }
    // With RUSTOMP_VERBOSE=1, `status` prints the full command first.
    let status = command(cxx, runtime, &user).status()?;
    Ok(util::exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn runtime_flag_is_ours() {
        let (rt, rest) = split_runtime(&s(&["--runtime=llvm", "a.c", "-o", "a"])).unwrap();
        assert_eq!(rt, Runtime::Llvm);
        assert_eq!(rest, s(&["a.c", "-o", "a"]));
        assert!(split_runtime(&s(&["--runtime=gcc"])).is_err());
    }

    #[test]
    fn fopenmp_added_once_and_nogpulib_for_gfx() {
        let cmd = command(false, Runtime::Ours, &s(&["--offload-arch=gfx90a", "a.c"]));
        let line = cmd.display();
        assert_eq!(line.matches("-fopenmp").count(), 1);
        assert!(line.contains("-nogpulib"));
        let cmd = command(
            false,
            Runtime::Ours,
            &s(&["-fopenmp", "--offload-arch=sm_90", "a.c"]),
        );
        let line = cmd.display();
        assert_eq!(line.matches(" -fopenmp ").count(), 1);
        assert!(!line.contains("-nogpulib"));
        assert!(line.contains("-Xoffload-linker-nvptx64-nvidia-cuda"));
        assert!(line.contains("-Xarch_device -fpass-plugin="), "{line}");
        assert!(!command_without_pass(false, &s(&["a.c"]))
            .display()
            .contains("pass-plugin"));
    }
}
