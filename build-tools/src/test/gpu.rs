//! `cargo xtask test --gpu`: the program corpus on a GPU, in two phases so that the second runs
//! on a machine that has only a driver (no clang, no Rust, no network). The target is
//! `RUSTOMP_GPU_ARCH` (default `sm_90`; a `gfx*` value builds for AMD GPUs instead).
//!
//! 1. compile (here, no GPU needed): every program of `tests/programs` for
//!    `--offload-arch=<arch>` into `target/gpu-suite/`:
//!    `bin/<program>` (rpath `$ORIGIN/../lib`), `lib/` (our `libomptarget.so.22.1`, stripped,
//!    and LLVM 22's `libomp.so.5`), `tests.tsv` (each program's expectation and environment,
//!    from its header), `compile-failures.txt`, and `run.sh`. A failed compile is listed with
//!    the device symbols the device link could not resolve.
//! 2. run (`target/gpu-suite/run.sh`, wherever the directory was copied): each program under
//!    `OMP_TARGET_OFFLOAD=mandatory` with a time limit, a pass/fail table, `N passed, N failed`.
//!    Without the GPU's driver (NVIDIA: `libcuda.so.1`; AMD: `libhsa-runtime64.so.1` and
//!    `/dev/kfd`) it prints one skip line and exits 0.

use super::{compile_source, link_undefined, parse_header, sources, stem, JOBS};
use crate::cc::{Runtime, LLVM_LIB};
use crate::devicertl::{self, dist_lib};
use crate::host;
use crate::util::{self, at, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the suite is written (small enough to carry: a few MiB).
const SUITE_DIR: &str = "target/gpu-suite";
/// The default target of the suite.
const DEFAULT_ARCH: &str = "sm_90";

/// The suite's `--offload-arch`: `RUSTOMP_GPU_ARCH`, else sm_90.
fn arch() -> String {
    std::env::var("RUSTOMP_GPU_ARCH").ok().filter(|a| !a.trim().is_empty()).unwrap_or_else(|| DEFAULT_ARCH.into())
}

/// Whether `arch` is an AMD GPU (`gfx*`), else NVIDIA.
fn is_amd(arch: &str) -> bool {
    arch.starts_with("gfx")
}

/// The run script's driver check for NVIDIA GPUs: `libcuda.so.1` somewhere the loader looks.
const NVIDIA_CHECK: &str = r#"driver=""
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    driver=yes
else
    IFS=: read -r -a dirs <<< "${LD_LIBRARY_PATH}:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/local/nvidia/lib64:/usr/lib/wsl/lib"
    for d in "${dirs[@]}"; do
        if [ -n "$d" ] && [ -e "$d/libcuda.so.1" ]; then driver=yes; fi
    done
fi
if [ -z "$driver" ]; then
    echo "GPU suite: skipped (no NVIDIA driver: libcuda.so.1 not found)"
    exit 0
fi"#;

/// The run script's driver check for AMD GPUs: the HSA runtime and the kernel driver's device.
const AMD_CHECK: &str = r#"if [ ! -e /dev/kfd ]; then
    echo "GPU suite: skipped (no AMD GPU driver: /dev/kfd not found)"
    exit 0
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libhsa-runtime64\.so\.1' && [ ! -e /opt/rocm/lib/libhsa-runtime64.so.1 ]; then
    echo "GPU suite: skipped (no HSA runtime: libhsa-runtime64.so.1 not found)"
    exit 0
fi
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/opt/rocm/lib""#;

/// The run phase, as a script: needs bash, coreutils' `timeout`, and the GPU's driver.
/// `@ARCH@` and `@DRIVER_CHECK@` are filled in for the suite's target.
const RUN_SH: &str = r#"#!/usr/bin/env bash
# Runs the OpenMP corpus compiled for @ARCH@ against rustomp's libomptarget (lib/), one program
# at a time, each under OMP_TARGET_OFFLOAD=mandatory unless its header sets another policy.
# Needs the GPU's driver, bash, coreutils and glibc >= 2.34 only (no clang, no Rust).
# Usage: ./run.sh [NAME-SUBSTRING...]
# Environment: RUSTOMP_GPU_TIMEOUT (seconds per program, default 60).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
limit="${RUSTOMP_GPU_TIMEOUT:-60}"

@DRIVER_CHECK@

mkdir -p "$here/logs"
passed=0
failed=0
failing=()
printf '%-36s | %s\n' "program ($(basename "$here"), @ARCH@)" "result"
while IFS=$'\t' read -r name expect envs; do
    [ -z "$name" ] && continue
    if [ $# -gt 0 ]; then
        wanted=""
        for pattern in "$@"; do
            case "$name" in *"$pattern"*) wanted=yes ;; esac
        done
        [ -z "$wanted" ] && continue
    fi
    exe="$here/bin/${name%.*}"
    log="$here/logs/${name%.*}.log"
    if [ ! -x "$exe" ]; then
        result="FAIL (not compiled, see compile-failures.txt)"
        ok=""
    else
        read -r -a extra <<< "$envs"
        (cd "$here/bin" && env OMP_TARGET_OFFLOAD=mandatory "${extra[@]}" timeout -k 5 "$limit" "$exe") \
            </dev/null >"$log" 2>&1
        rc=$?
        ok=""
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            result="FAIL (timeout ${limit}s)"
        elif [ "$rc" -eq 134 ] && { [ "$expect" = abort ] || [ "$expect" = fail ]; }; then
            result="ok (SIGABRT, expected)"; ok=yes
        elif [ "$rc" -gt 128 ]; then
            result="FAIL (signal $((rc - 128)))"
        elif [ "$expect" = fail ] || [ "$expect" = abort ]; then
            if [ "$rc" -eq 0 ]; then result="FAIL (exit 0, expected failure)"; else result="ok (exit $rc, expected)"; ok=yes; fi
        elif [ "$rc" -eq 0 ]; then
            result="ok"; ok=yes
        else
            result="FAIL (exit $rc)"
        fi
    fi
    if [ -n "$ok" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failing+=("${name%.*}"); fi
    printf '%-36s | %s\n' "$name" "$result"
done < "$here/tests.tsv"
if [ ${#failing[@]} -gt 0 ]; then
    echo "failing (logs in $here/logs/<name>.log): ${failing[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
"#;

/// One program's compile for the suite.
struct Compiled {
    name: String,
    /// Why it did not compile.
    failure: Option<String>,
}

/// Whether the driver for `arch` is installed here: for AMD the kernel driver's `/dev/kfd`
/// (the HSA runtime is useless without it), for NVIDIA the library the CUDA plugin loads.
pub fn driver_present_for(arch: &str) -> bool {
    if is_amd(arch) {
        return Path::new("/dev/kfd").exists();
    }
    driver_present()
}

/// Whether an NVIDIA driver is installed here (the library the CUDA plugin loads).
pub fn driver_present() -> bool {
    let ldconfig = Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output())
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
        .unwrap_or(false);
    let in_dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/local/nvidia/lib64",
    ]
    .iter()
    .any(|d| Path::new(d).join("libcuda.so.1").exists());
    ldconfig || in_dirs
}

pub fn run() -> Result<i32> {
    util::step("test --gpu 1/3: runtime builds (devicertl, host)");
    devicertl::run(false)?;
    host::run()?;
    util::step(&format!(
        "test --gpu 2/3: compile the corpus for {} into {SUITE_DIR}",
        arch()
    ));
    let dir = at(SUITE_DIR);
    let (compiled, total) = compile_suite(&dir)?;
    util::step("test --gpu 3/3: run the corpus on the GPU");
    if !driver_present_for(&arch()) {
        let fallback_ok = check_without_driver(&dir);
        println!(
            "GPU suite: run skipped (no {} driver on this machine); {compiled} of {total} programs compiled into {} — on a GPU machine run {}/run.sh",
            if is_amd(&arch()) { "AMD GPU" } else { "NVIDIA" },
            util::show(&dir),
            util::show(&dir)
        );
        return Ok(if fallback_ok { 0 } else { 1 });
    }
    let status = Command::new(dir.join("run.sh")).status()?;
    Ok(util::exit_code(status))
}

/// Without a driver, what the compiled programs must do: under `mandatory` fail with a message
/// naming the missing driver; under the default policy run on the host.
fn check_without_driver(dir: &Path) -> bool {
    // What the plugin's reason says when its driver is missing.
    let missing = if is_amd(&arch()) { "HSA" } else { "no CUDA driver" };
    let run = |program: &str, policy: &str| {
        Command::new(dir.join("bin").join(program))
            .env("OMP_TARGET_OFFLOAD", policy)
            .env("LD_LIBRARY_PATH", dir.join("lib"))
            .current_dir(dir.join("bin"))
            .output()
    };
    let (mandatory, fallback) = ("01_basic_target", "73_offload_default");
    if !dir.join("bin").join(mandatory).exists() || !dir.join("bin").join(fallback).exists() {
        println!("gpu suite: no-driver check skipped ({mandatory} or {fallback} did not compile)");
        return true;
    }
    let refused = match run(mandatory, "mandatory") {
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let ok = !out.status.success() && stderr.contains(missing);
            if !ok {
                println!("gpu suite: {mandatory} under mandatory offload without a driver: {}, stderr:\n{stderr}", util::describe(out.status));
            }
            ok
        }
        Err(e) => {
            println!("gpu suite: cannot run {mandatory}: {e}");
            false
        }
    };
    let fell_back = match run(fallback, "default") {
        Ok(out) => {
            if !out.status.success() {
                println!(
                    "gpu suite: {fallback} under the default policy without a driver: {}, stderr:\n{}",
                    util::describe(out.status),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            out.status.success()
        }
        Err(e) => {
            println!("gpu suite: cannot run {fallback}: {e}");
            false
        }
    };
    let verdict = |ok: bool| if ok { "ok" } else { "FAILED" };
    println!(
        "gpu suite: without a driver, mandatory offload stops with \"{missing}\": {}; the default policy runs on the host: {}",
        verdict(refused),
        verdict(fell_back)
    );
    refused && fell_back
}

/// Phase 1: writes the suite directory; returns (programs compiled, programs).
fn compile_suite(dir: &Path) -> Result<(usize, usize)> {
    let bin = dir.join("bin");
    let logs = dir.join("compile-logs");
    for old in [&bin, &logs, &dir.join("logs")] {
        if old.exists() {
            std::fs::remove_dir_all(old)?;
        }
    }
    util::mkdirs(&bin)?;
    util::mkdirs(&logs)?;
    install_libraries(&dir.join("lib"))?;

    let programs = sources(&at("tests/programs"));
    println!(
        "gpu suite: compiling {} programs for {} ({JOBS} at a time)",
        programs.len(),
        arch()
    );
    let results = util::parallel(&programs, JOBS, |src| compile_one(src, &bin, &logs));

    let mut manifest = String::new();
    for src in &programs {
        let header = parse_header(&std::fs::read_to_string(src).unwrap_or_default());
        let env: Vec<String> = header.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let name = src.file_name().unwrap_or_default().to_string_lossy();
        let expect = if header.expect_abort {
            "abort"
        } else if header.expect_fail {
            "fail"
        } else {
            "pass"
        };
        manifest.push_str(&format!("{name}\t{expect}\t{}\n", env.join(" ")));
    }
    util::write(&dir.join("tests.tsv"), manifest)?;
    let run_sh = dir.join("run.sh");
    util::write(&run_sh, run_script(&arch()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&run_sh, std::fs::Permissions::from_mode(0o755))?;
    }

    let failures: Vec<&Compiled> = results.iter().filter(|c| c.failure.is_some()).collect();
    let mut report = String::new();
    for c in &failures {
        report.push_str(&format!(
            "{}: {}\n",
            c.name,
            c.failure.as_deref().unwrap_or_default()
        ));
    }
    util::write(&dir.join("compile-failures.txt"), &report)?;
    let compiled = results.len() - failures.len();
    println!(
        "gpu suite: {compiled} of {} programs compiled for {}",
        results.len(),
        arch()
    );
    if !failures.is_empty() {
        println!("gpu suite: not compiled (logs in {}):", util::show(&logs));
        print!(
            "{}",
            report
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        );
    }
    println!(
        "gpu suite: {} ({} KiB)",
        util::show(dir),
        size_of_dir(dir) / 1024
    );
    Ok((compiled, results.len()))
}

/// The run script for `arch`.
fn run_script(arch: &str) -> String {
    let check = if is_amd(arch) { AMD_CHECK } else { NVIDIA_CHECK };
    RUN_SH.replace("@ARCH@", arch).replace("@DRIVER_CHECK@", check)
}

fn compile_one(src: &Path, bin: &Path, logs: &Path) -> Compiled {
    let name = src
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let header = parse_header(&std::fs::read_to_string(src).unwrap_or_default());
    let exe = bin.join(stem(src));
    let log = logs.join(format!("{}.log", stem(src)));
    let mut args = vec!["-O2".to_string(), format!("--offload-arch={}", arch())];
    args.extend(header.cflags.iter().cloned());
    args.extend(header.source_args(src));
    args.extend(["-o".into(), exe.display().to_string(), "-lm".into()]);
    // Found next to the binaries wherever the suite is copied (LD_LIBRARY_PATH in run.sh too).
    args.push("-Wl,-rpath,$ORIGIN/../lib".into());
    let failure = compile_source(src, Runtime::Ours, &args, &log)
        .err()
        .map(|_| {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            failure_reason(&text)
        });
    Compiled { name, failure }
}

/// The one-line reason of a failed compile: undefined device symbols, else the first error.
fn failure_reason(log: &str) -> String {
    let undefined = link_undefined(log);
    if !undefined.is_empty() {
        return format!(
            "undefined device symbols: {}",
            undefined.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    log.lines()
        .find(|l| l.contains("error") && !l.starts_with('$'))
        .map(|l| l.trim().chars().take(300).collect())
        .unwrap_or_else(|| "compile failed (no error line in the log)".into())
}

/// `lib/`: our library (debug info stripped) and LLVM 22's libomp, which a GPU machine may lack.
fn install_libraries(lib: &Path) -> Result<()> {
    util::mkdirs(lib)?;
    let ours = dist_lib().join("libomptarget.so.22.1");
    let target = lib.join("libomptarget.so.22.1");
    util::install(&ours, &target)?;
    let strip = ["llvm-strip-22", "strip"]
        .into_iter()
        .find(|s| util::which(s).is_some());
    match strip {
        Some(tool) => {
            let status = Command::new(tool)
                .arg("--strip-debug")
                .arg(&target)
                .status()?;
            if !status.success() {
                println!(
                    "gpu suite: {tool} --strip-debug failed; the library is carried unstripped"
                );
            }
        }
        None => println!("gpu suite: no strip tool; the library is carried unstripped"),
    }
    let libomp = PathBuf::from(LLVM_LIB).join("libomp.so.5");
    if libomp.exists() {
        // `install` copies the file a symlink points at.
        util::install(&libomp, &lib.join("libomp.so.5"))?;
    } else {
        println!(
            "gpu suite: {} not found; the GPU machine must provide LLVM 22's libomp.so.5",
            libomp.display()
        );
    }
    Ok(())
}

fn size_of_dir(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                size_of_dir(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reasons_name_missing_device_symbols() {
        let log = "$ clang-22 ...\nnvlink error   : Undefined reference to '__kmpc_foo' in 'a.cubin'\nnvlink error   : Undefined reference to '__kmpc_bar' in 'a.cubin'\nclang: error: nvlink command failed\n";
        assert_eq!(
            failure_reason(log),
            "undefined device symbols: __kmpc_bar, __kmpc_foo"
        );
        let log = "$ clang-22 -O2 x.c\nx.c:3:1: error: unknown type name 'foo'\n";
        assert_eq!(
            failure_reason(log),
            "x.c:3:1: error: unknown type name 'foo'"
        );
        assert_eq!(
            failure_reason("$ clang\n"),
            "compile failed (no error line in the log)"
        );
    }

    #[test]
    fn run_script_reports_and_skips_without_a_driver() {
        for arch in ["sm_90", "gfx90a"] {
            let script = run_script(arch);
            assert!(script.starts_with("#!/usr/bin/env bash\n"));
            assert!(script.contains("echo \"$passed passed, $failed failed\""));
            assert!(script.contains("OMP_TARGET_OFFLOAD=mandatory"));
            assert!(!script.contains("@ARCH@") && !script.contains("@DRIVER_CHECK@"), "every placeholder filled for {arch}");
            assert!(script.contains(&format!("compiled for {arch}")));
        }
        assert!(run_script("sm_90").contains("GPU suite: skipped (no NVIDIA driver: libcuda.so.1 not found)"));
        assert!(run_script("sm_90").contains("grep -q 'libcuda\\.so\\.1'"));
        assert!(run_script("gfx90a").contains("GPU suite: skipped (no AMD GPU driver: /dev/kfd not found)"));
    }
}
