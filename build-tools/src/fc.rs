//! `cargo xtask fc`: flang-22 with our runtime wired in, the Fortran twin of `cargo xtask cc`.
//!
//! flang-22's driver is clang's with fewer options: it rejects `--cuda-path` and
//! `--libomptarget-nvptx-bc-path` (and `-Xopenmp-target`), and it links no runtime bitcode into
//! each unit; the device runtime comes from the device link only (`-lompdevice`, which flang adds
//! for nvptx64 and amdgcn itself unless `-nogpulib`). So, for every target:
//!
//! - CUDA's tools are found on `PATH` (the driver takes the directory of the `ptxas` it finds
//!   as the CUDA installation, for ptxas and, in the device link, nvlink);
//! - `-nogpulib` (flang would otherwise require ROCm's device libraries for amdgcn; for nvptx64
//!   flang links no libdevice either way), and each GPU triple's `-L<lib>/<triple> -lompdevice`
//!   given to its device link explicitly;
//! - for `x86_64-pc-linux-gnu` (host offload) the same pair: `-lompdevice` there is
//!   `host-devicertl`, the DeviceRTL entry points flang's x86_64 images call
//!   (`__kmpc_target_init`, ...), which nothing else provides;
//! - the host side as `cc`: our `libomptarget.so.22.1` by `-L`/rpath, LLVM 22's `libomp.so.5`.
//!
//! A device link that fails on symbols nobody defines is explained: flang's device code calls
//! its Fortran runtime (`_FortranA*`: I/O, array intrinsics, allocation) as host code does, and
//! rustomp's GPU device runtime provides only its output statements (`print`, `write`:
//! `devicertl/src/fortran_io.rs`); the rest is named (see [`refusal`]).

use crate::cc::{self, Runtime};
use crate::devicertl;
use crate::host_devicertl;
use crate::paths::cuda_dir;
use crate::paths::dist_lib;
use crate::paths::llvm_ref_dir;
use crate::paths::LLVM_LIB;
use crate::util::{self, Cmd, Result};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;

/// The Fortran compiler.
use crate::paths::FLANG;
/// The environment variable flang-22's driver takes command-line edits from (clang-22's is
/// `CCC_OVERRIDE_OPTIONS`, which flang ignores).
pub const OVERRIDE_VARIABLE: &str = "FCC_OVERRIDE_OPTIONS";

/// Whether `path` is a Fortran source flang compiles (free or fixed form, preprocessed or not).
pub fn is_fortran(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "f" | "for" | "f90" | "f95" | "f03" | "f08" | "f18"
        )
    })
}

/// Device-side flags for a runtime laid out in `lib` (as `dist/lib`): `-nogpulib`, and each
/// offload triple's `libompdevice.a` for its device link. `cargo xtask install` writes the same
/// flags into its flang configuration file.
pub fn device_flags(lib: &Path) -> Vec<String> {
    let mut flags = vec!["-nogpulib".to_string()];
    let triples = devicertl::TARGETS
        .iter()
        .map(|t| t.triple)
        .chain([host_devicertl::TRIPLE]);
    for triple in triples {
        for arg in [
            format!("-L{}", lib.join(triple).display()),
            "-lompdevice".to_string(),
        ] {
            flags.push(format!("-Xoffload-linker-{triple}"));
            flags.push(arg);
        }
    }
    flags
}

/// `PATH` with `dir` first (where flang's driver finds `ptxas`, and the device link `nvlink`).
pub fn path_with(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// The flang-22 command for `user` arguments.
pub fn command(runtime: Runtime, user: &[String]) -> Cmd {
    let mut cmd = Cmd::new(FLANG);
    cmd.hint("flang-22 is needed: `cargo xtask setup`");
    // In a shell that sourced an installed env.sh, flang-22 would load that install's
    // configuration for -fopenmp: this command wires dist/lib itself.
    if std::env::var(OVERRIDE_VARIABLE).is_ok_and(|v| v.contains(crate::paths::FLANG_CONFIG)) {
        cmd.env_remove(OVERRIDE_VARIABLE);
    }
    let cuda_bin = cuda_dir().join("bin");
    if cuda_bin.join("ptxas").is_file() {
        cmd.env("PATH", path_with(&cuda_bin));
    }
    if !user
        .iter()
        .any(|a| a == "-fopenmp" || a.starts_with("-fopenmp="))
    {
        cmd.arg("-fopenmp");
    }
    let lib = dist_lib();
    // The device runtime is always ours (Debian ships none); only the host library changes.
    cmd.args(device_flags(&lib));
    match runtime {
        Runtime::Ours => {
            cmd.args(cc::host_flags(&lib));
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

/// The device symbols a failed device link reports undefined: nvlink's and ld.lld's wording
/// (GPU images), and GNU ld's under a `... in function` line of an x86_64 device object
/// (`<unit>-x86_64-pc-linux-gnu-generic-<id>.o`; the host link's own errors are not these).
pub fn undefined_device_symbols(log: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_x86_64_device_object = false;
    for line in log.lines() {
        if line.contains(": in function `") {
            in_x86_64_device_object = line.contains(&format!("-{}-", host_devicertl::TRIPLE));
        }
        if let Some(rest) = line.split("Undefined reference to '").nth(1) {
            if let Some(sym) = rest.split('\'').next() {
                out.insert(sym.to_string());
            }
        } else if let Some(rest) = line.split("undefined symbol: ").nth(1) {
            out.insert(rest.trim().to_string());
        } else if let Some(rest) = line
            .split("undefined reference to `")
            .nth(1)
            .filter(|_| in_x86_64_device_object)
        {
            if let Some(sym) = rest.split('\'').next() {
                out.insert(sym.to_string());
            }
        }
    }
    out
}

/// One line per symbol the device link could not resolve, saying whose it is.
pub fn refusal(undefined: &BTreeSet<String>) -> Vec<String> {
    undefined
        .iter()
        .map(|s| {
            let why = if s.starts_with("_FortranAio") {
                "of flang's I/O runtime, the device has output statements to external units only: print and write, list-directed or formatted; no input, internal files, OPEN, non-advancing or namelist I/O"
            } else if s.starts_with("_Fortran") {
                "flang's Fortran runtime (array intrinsics, allocation, character operations) has no GPU build here; of it the device has print and write only"
            } else if s.starts_with("__ocml_") || s.starts_with("__ockl_") {
                "ROCm's device math library, which -nogpulib leaves out"
            } else if s.starts_with("__kmpc_") || s.starts_with("omp_") || s.starts_with("ompx_") {
                "an OpenMP entry point: please report it"
            } else {
                "a C library or math function"
            };
            format!("flang's device code calls {s}, which rustomp's device runtime does not provide ({why})")
        })
        .collect()
}

/// `cargo xtask fc ARGS`: runs flang and returns its exit code; a failed device link is
/// followed by what it could not resolve.
pub fn run(args: &[String]) -> Result<i32> {
    let (runtime, user) = cc::split_runtime(args)?;
    if runtime == Runtime::Llvm && !llvm_ref_dir().join("libomptarget.so").exists() {
        crate::host::link_llvm_reference();
    }
    let out = command(runtime, &user).output_raw()?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    if !out.status.success() {
        for line in refusal(&undefined_device_symbols(&stderr)) {
            eprintln!("rustomp: {line}");
        }
    }
    Ok(util::exit_code(out.status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn every_triple_gets_its_device_runtime() {
        let flags = device_flags(Path::new("/p/lib")).join(" ");
        assert!(flags.starts_with("-nogpulib "));
        for t in [
            "nvptx64-nvidia-cuda",
            "amdgcn-amd-amdhsa",
            "x86_64-pc-linux-gnu",
        ] {
            assert!(
                flags.contains(&format!(
                    "-Xoffload-linker-{t} -L/p/lib/{t} -Xoffload-linker-{t} -lompdevice"
                )),
                "{t}: {flags}"
            );
        }
        let line = command(Runtime::Ours, &s(&["--offload-arch=sm_90", "a.f90"])).display();
        assert_eq!(line.matches(" -fopenmp ").count(), 1);
        assert!(
            !line.contains("--cuda-path"),
            "flang-22 rejects --cuda-path: {line}"
        );
    }

    #[test]
    fn fortran_sources() {
        assert!(is_fortran(Path::new("200_saxpy.f90")) && is_fortran(Path::new("x.F")));
        assert!(!is_fortran(Path::new("x.c")) && !is_fortran(Path::new("f90")));
    }

    #[test]
    fn unresolved_fortran_runtime_calls_are_named() {
        let log = "nvlink error   : Undefined reference to '_FortranAioBeginExternalListInput' in '/tmp/a.cubin'\n\
                   ld.lld: error: undefined symbol: _FortranASumReal8\n\
                   /usr/bin/ld: /tmp/a-0323e5-x86_64-pc-linux-gnu-generic-fe56a3.o: in function `k':\n\
                   FIRModule:(.text+0x1f): undefined reference to `__kmpc_target_init'\n\
                   /usr/bin/ld: /tmp/a-5bbc28.o: in function `main':\n\
                   a.f90:(.text+0x1f): undefined reference to `host_only'\n";
        let undefined = undefined_device_symbols(log);
        assert_eq!(
            undefined.iter().map(String::as_str).collect::<Vec<_>>(),
            [
                "_FortranASumReal8",
                "_FortranAioBeginExternalListInput",
                "__kmpc_target_init"
            ]
        );
        let lines = refusal(&undefined);
        assert_eq!(
            lines[1],
            "flang's device code calls _FortranAioBeginExternalListInput, which rustomp's device runtime does not provide (of flang's I/O runtime, the device has output statements to external units only: print and write, list-directed or formatted; no input, internal files, OPEN, non-advancing or namelist I/O)"
        );
    }
}
