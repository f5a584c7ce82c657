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

mod fake_driver;
mod virtual_gpu;

use super::programs::{
    build_shared_libraries, compile_source, known_failures, link_undefined, parse_header, sources,
    stem, Header, Scope, JOBS,
};
use crate::cc::Runtime;
use crate::devicertl;
use crate::host;
use crate::paths::dist_lib;
use crate::paths::LLVM_LIB;
use crate::util::{self, at, Result};
use fake_driver::against_fake_driver;
use fake_driver::check_without_driver;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the suite is written (small enough to carry: a few MiB).
const SUITE_DIR: &str = "target/gpu-suite";
/// The default target of the suite.
const DEFAULT_ARCH: &str = "sm_90";

/// Where the amdgcn programs for the virtual GPU are compiled (`amdgcn_on_virtual_gpu`).
const AMDGCN_SUITE_DIR: &str = "target/gpu-suite-gfx90a";
/// The AMD GPU the virtual GPU's amdgcn programs are built for.
const AMDGCN_ARCH: &str = "gfx90a";

/// The suite's `--offload-arch`: `RUSTOMP_GPU_ARCH`, else sm_90.
fn arch() -> String {
    std::env::var("RUSTOMP_GPU_ARCH")
        .ok()
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ARCH.into())
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

/// The run phase, as a script (`gpu/run.sh`): needs bash, coreutils' `timeout`, and the GPU's
/// driver. `@ARCH@` and `@DRIVER_CHECK@` are filled in for the suite's target.
const RUN_SH: &str = include_str!("run.sh");

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
    let (compiled, total, _) = compile_suite(&dir, &arch())?;
    util::step("test --gpu 3/3: run the corpus on the GPU");
    if !driver_present_for(&arch()) {
        let fallback_ok = check_without_driver(&dir, &arch());
        let fake_ok = against_fake_driver(&dir, &arch())? && virtual_gpu::run_suite(&dir, &arch())?;
        println!(
            "GPU suite: run skipped (no {} driver on this machine); {compiled} of {total} programs compiled into {} — on a GPU machine run {}/run.sh",
            if is_amd(&arch()) { "AMD GPU" } else { "NVIDIA" },
            util::show(&dir),
            util::show(&dir)
        );
        return Ok(if fallback_ok && fake_ok { 0 } else { 1 });
    }
    let status = Command::new(dir.join("run.sh")).status()?;
    Ok(util::exit_code(status))
}

/// The suite compiled (kept where unchanged) and run against the stand-in CUDA driver: the
/// step of `cargo xtask test` that catches GPU-only faults without a GPU.
pub fn without_gpu() -> Result<bool> {
    let dir = at(SUITE_DIR);
    let (compiled, total, _) = compile_suite(&dir, &arch())?;
    if compiled < total {
        println!(
            "gpu suite: {} program(s) did not compile for {} (see above)",
            total - compiled,
            arch()
        );
    }
    let fake_ok = against_fake_driver(&dir, &arch())?;
    let virtual_ok = virtual_gpu::run_suite(&dir, &arch())?;
    let checks_ok = virtual_gpu_checks(&dir, &arch())?;
    Ok(fake_ok && virtual_ok && checks_ok && compiled == total)
}

/// The suite compiled (kept where unchanged) and run on the virtual GPU alone.
pub fn on_virtual_gpu() -> Result<bool> {
    let dir = at(SUITE_DIR);
    let (compiled, total, _) = compile_suite(&dir, &arch())?;
    let suite_ok = virtual_gpu::run_suite(&dir, &arch())?;
    let checks_ok = virtual_gpu_checks(&dir, &arch())?;
    Ok(suite_ok && checks_ok && compiled == total)
}

/// The suite built for gfx90a (into its own directory, kept where unchanged) and run on the
/// virtual GPU with wavefronts of 64: the amdgcn device runtime and clang-22's amdgcn code,
/// run every day without an AMD GPU. A program that does not compile for gfx90a fails the step
/// unless `KNOWN_FAILURES` names it (a `vgpu-amdgcn:` line: the compiler's fault).
pub fn amdgcn_on_virtual_gpu() -> Result<bool> {
    let dir = at(AMDGCN_SUITE_DIR);
    let (_, _, failed) = compile_suite(&dir, AMDGCN_ARCH)?;
    let known = known_failures(&at("tests/programs/KNOWN_FAILURES"), Scope::VirtualAmdgcn);
    let unknown: Vec<&String> = failed
        .iter()
        .filter(|name| !known.iter().any(|(k, _)| k == *name))
        .collect();
    for name in &unknown {
        println!(
            "    {name}: does not compile for {AMDGCN_ARCH}, and KNOWN_FAILURES does not say why"
        );
    }
    let suite_ok = virtual_gpu::run_suite(&dir, AMDGCN_ARCH)?;
    let checks_ok = virtual_gpu_checks(&dir, AMDGCN_ARCH)?;
    Ok(suite_ok && checks_ok && unknown.is_empty())
}

/// The virtual GPU's own checks (`virtual_gpu::run_checks`), compiled for `arch` like the
/// suite's programs (kept where unchanged) and run; nothing for an arch the virtual GPU does
/// not run. Their generic kernels ask `thread_limit(128)`: the main thread takes a warp of it
/// on sm_90 and a wavefront on gfx90a, and the region's threads must be left either way.
fn virtual_gpu_checks(dir: &Path, arch: &str) -> Result<bool> {
    if crate::vgpu::Family::of_archs(arch).is_none() {
        return Ok(true);
    }
    let bin = dir.join(virtual_gpu::CHECKS_DIR);
    let logs = dir.join(virtual_gpu::CHECKS_LOGS);
    util::mkdirs(&bin)?;
    util::mkdirs(&logs)?;
    let runtime = runtime_fingerprint();
    let sources = sources(&at(virtual_gpu::CHECKS_SOURCES));
    let compiled = util::parallel(&sources, JOBS, |src| {
        (
            src.clone(),
            compile_one(src, arch, &bin, &logs, runtime).failure,
        )
    });
    virtual_gpu::run_checks(dir, arch, &compiled)
}

/// Phase 1: writes the suite directory for `arch`; returns (programs compiled, programs, the
/// file names of those that did not compile).
fn compile_suite(dir: &Path, arch: &str) -> Result<(usize, usize, Vec<String>)> {
    let bin = dir.join("bin");
    let logs = dir.join("compile-logs");
    for old in [&logs, &dir.join("logs")] {
        if old.exists() {
            std::fs::remove_dir_all(old)?;
        }
    }
    util::mkdirs(&bin)?;
    util::mkdirs(&logs)?;
    install_libraries(&dir.join("lib"))?;

    let programs = sources(&at("tests/programs"));
    // Binaries of programs that are gone (renamed, removed) go too.
    let current: Vec<String> = programs.iter().map(|p| stem(p)).collect();
    for entry in std::fs::read_dir(&bin)?.flatten() {
        let name = entry
            .file_name()
            .to_string_lossy()
            .trim_start_matches('.')
            .trim_end_matches(".key")
            // A program's shared libraries: `<program>.<library>.so`.
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        if !current.contains(&name) {
            std::fs::remove_file(entry.path())?;
        }
    }
    let runtime = runtime_fingerprint();
    // Host-only programs never run in the suite (some, e.g. Fortran I/O in a region, do not
    // even build for a GPU): not compiled either.
    let to_compile: Vec<PathBuf> = programs
        .iter()
        .filter(|src| {
            parse_header(&std::fs::read_to_string(src).unwrap_or_default())
                .host_only
                .is_none()
        })
        .cloned()
        .collect();
    println!(
        "gpu suite: compiling {} programs for {} ({JOBS} at a time; unchanged ones are kept; {} host-only ones are not)",
        to_compile.len(),
        arch,
        programs.len() - to_compile.len()
    );
    let results = util::parallel(&to_compile, JOBS, |src| {
        compile_one(src, arch, &bin, &logs, runtime)
    });

    let known = known_failures(&at("tests/programs/KNOWN_FAILURES"), Scope::Gpu);
    let mut manifest = String::new();
    for src in &programs {
        let header = parse_header(&std::fs::read_to_string(src).unwrap_or_default());
        let name = src.file_name().unwrap_or_default().to_string_lossy();
        let known = known
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, why)| why.as_str());
        manifest.push_str(&manifest_line(&name, &header, known));
    }
    util::write(&dir.join("tests.tsv"), manifest)?;
    let run_sh = dir.join("run.sh");
    util::write(&run_sh, run_script(arch))?;
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
        arch
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
    let failed = failures.iter().map(|c| c.name.clone()).collect();
    Ok((compiled, results.len(), failed))
}

/// One program's line of `tests.tsv`: name, expectation, why it is host-only, why it is a known
/// failure (`-` for neither), its environment. Tabs inside the reasons become spaces.
fn manifest_line(name: &str, header: &Header, known: Option<&str>) -> String {
    let expect = if header.expect_abort {
        "abort"
    } else if header.expect_fail {
        "fail"
    } else {
        "pass"
    };
    let field = |text: Option<&str>| {
        text.filter(|t| !t.trim().is_empty())
            .map_or_else(|| "-".to_string(), |t| t.replace(['\t', '\n'], " "))
    };
    let env: Vec<String> = header.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{name}\t{expect}\t{}\t{}\t{}\n",
        field(header.host_only.as_deref()),
        field(known),
        env.join(" ")
    )
}

/// The run script for `arch`.
fn run_script(arch: &str) -> String {
    let check = if is_amd(arch) {
        AMD_CHECK
    } else {
        NVIDIA_CHECK
    };
    RUN_SH
        .replace("@ARCH@", arch)
        .replace("@DRIVER_CHECK@", check)
}

/// FNV-1a over `bytes`, continuing from `hash`: a stable fingerprint (the same on every run and
/// toolchain, unlike std's hasher) for the suite's compile cache.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The device runtime the suite links (its bitcode and archives) and the compiler, as one
/// fingerprint: a binary compiled against another is compiled again.
fn runtime_fingerprint() -> u64 {
    let lib = dist_lib();
    let mut hash = FNV_OFFSET;
    for file in [
        lib.join("libomptarget-nvptx.bc"),
        lib.join("libomptarget-amdgpu.bc"),
        lib.join("nvptx64-nvidia-cuda/libompdevice.a"),
        lib.join("amdgcn-amd-amdhsa/libompdevice.a"),
        crate::vgpu::runtime_object(),
    ] {
        hash = fnv1a(hash, &std::fs::read(&file).unwrap_or_default());
    }
    hash = fnv1a(hash, &crate::vgpu::IMAGE_VERSION.to_le_bytes());
    let clang = Command::new("clang-22")
        .arg("--version")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    fnv1a(hash, &clang)
}

fn compile_one(src: &Path, arch: &str, bin: &Path, logs: &Path, runtime: u64) -> Compiled {
    let name = src
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let header = parse_header(&std::fs::read_to_string(src).unwrap_or_default());
    let exe = bin.join(stem(src));
    let log = logs.join(format!("{}.log", stem(src)));
    let mut offload = vec![format!("--offload-arch={arch}")];
    offload.extend(header.cflags.iter().cloned());
    let mut args = vec!["-O2".to_string()];
    args.extend(offload.iter().cloned());
    args.extend(header.source_args(src));
    // Shared libraries (`// SHARED:`) go beside the binary (`$ORIGIN`), their own offload
    // images inside.
    args.extend(
        header
            .shared_sources(src)
            .iter()
            .map(|lib| Header::shared_library_path(&exe, lib).display().to_string()),
    );
    if !header.shared.is_empty() {
        args.push("-Wl,-rpath,$ORIGIN".into());
    }
    args.extend(["-o".into(), exe.display().to_string(), "-lm".into()]);
    // Found next to the binaries wherever the suite is copied (LD_LIBRARY_PATH in run.sh too).
    args.push("-Wl,-rpath,$ORIGIN/../lib".into());
    // Unchanged sources, flags and runtime: the binary from before is this one.
    // Paths relative to the checkout: a clone elsewhere with the same `target/` reuses them.
    let root = at(".").display().to_string();
    let mut key = fnv1a(
        runtime,
        args.join("\n").replace(&root, "<checkout>").as_bytes(),
    );
    for file in header.source_args(src) {
        key = fnv1a(key, &std::fs::read(&file).unwrap_or_default());
    }
    for file in header.shared_sources(src) {
        key = fnv1a(key, &std::fs::read(&file).unwrap_or_default());
    }
    let key_file = bin.join(format!(".{}.key", stem(src)));
    let key = format!("{key:016x}");
    if exe.exists() && std::fs::read_to_string(&key_file).is_ok_and(|k| k == key) {
        return Compiled {
            name,
            failure: None,
        };
    }
    let _ = std::fs::remove_file(&key_file);
    // Each shared library gets its own virtual-GPU image, as it has its own nvptx image.
    let library_image = |lib: &Path, args: &[String], out: &Path| {
        virtual_gpu::build_image(lib, args, out);
    };
    let failure = build_shared_libraries(
        &header,
        src,
        &exe,
        Runtime::Ours,
        &offload,
        &log,
        library_image,
    )
    .and_then(|_| compile_source(src, Runtime::Ours, &args, &log))
    .err()
    .map(|_| {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        failure_reason(&text)
    });
    // A binary without its virtual-GPU image is built again next time (the image's build may
    // have been fixed since), not kept.
    let imaged = failure.is_none() && virtual_gpu::build_image(src, &args, &exe);
    if imaged {
        if let Err(e) = std::fs::write(&key_file, &key) {
            println!("gpu suite: cannot write {}: {e}", key_file.display());
        }
    }
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
    // The virtual GPU's hardware, beside the library that loads it.
    util::install(
        &dist_lib().join(crate::vgpu::HARDWARE_LIBRARY),
        &lib.join(crate::vgpu::HARDWARE_LIBRARY),
    )?;
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
            assert!(script.contains("OMP_TARGET_OFFLOAD=mandatory"));
            assert!(
                !script.contains("@ARCH@") && !script.contains("@DRIVER_CHECK@"),
                "every placeholder filled for {arch}"
            );
        }
        assert!(run_script("sm_90")
            .contains("GPU suite: skipped (no NVIDIA driver: libcuda.so.1 not found)"));
        assert!(run_script("sm_90").contains("grep -q 'libcuda\\.so\\.1'"));
        assert!(run_script("gfx90a")
            .contains("GPU suite: skipped (no AMD GPU driver: /dev/kfd not found)"));
    }

    #[test]
    fn manifest_lines_carry_expectation_host_only_and_known_failures() {
        let header =
            parse_header("// EXPECT: fail\n// ENV: A=1\n// HOST-ONLY: faults\tof the CPU plugin\n");
        assert_eq!(
            manifest_line("x.c", &header, None),
            "x.c\tfail\tfaults of the CPU plugin\t-\tA=1\n"
        );
        let header = parse_header("// plain\n");
        assert_eq!(
            manifest_line("y.c", &header, Some("clang's fault")),
            "y.c\tpass\t-\tclang's fault\t\n"
        );
    }

    /// The run script itself, on a suite of shell scripts standing in for programs: several at a
    /// time, each verdict and time, host-only and known failures apart, LLVM's column.
    #[test]
    fn run_script_runs_programs_in_parallel_and_tabulates_both_runtimes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rustomp-run-sh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["bin", "lib", "driver", "llvm"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        // The driver check looks for the library's file; LLVM's library is any file here (the
        // loader ignores a preload it cannot load, after saying so).
        std::fs::write(dir.join("driver/libcuda.so.1"), b"").unwrap();
        std::fs::write(dir.join("llvm/libomptarget.so.22.1"), b"").unwrap();
        let programs = [
            ("ok", "sleep 1; exit 0"),
            ("slow", "sleep 1; exit 0"),
            ("bad", "exit 3"),
            ("expected", "exit 1"),
            ("known", "exit 1"),
            (
                "llvm_differs",
                "case \"$LD_PRELOAD\" in *libomptarget*) exit 5 ;; esac; exit 0",
            ),
            ("fault", "exit 0"),
        ];
        for (name, body) in programs {
            let path = dir.join("bin").join(name);
            std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let manifest = "ok.c\tpass\t-\t-\t\nslow.c\tpass\t-\t-\tX=1\nbad.c\tpass\t-\t-\t\nexpected.c\tfail\t-\t-\t\nknown.c\tpass\t-\tthe compiler's fault\t\nllvm_differs.c\tpass\t-\t-\t\nfault.c\tpass\tfault injection\t-\t\n";
        std::fs::write(dir.join("tests.tsv"), manifest).unwrap();
        // What the virtual GPU said of the same programs (bad.c passed there; llvm_differs.c
        // did not run there).
        let vgpu = "ok\tok\t0.01\nslow\tok\t1.0\nbad\tok\t0.01\nexpected\tok (exit 1, expected)\t0.01\nknown\tknown: FAIL (exit 1)\t0.01\n";
        std::fs::write(dir.join("vgpu-results.tsv"), vgpu).unwrap();
        let script = dir.join("run.sh");
        std::fs::write(&script, run_script("sm_90")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let start = std::time::Instant::now();
        let out = Command::new(&script)
            .args(["-j", "4"])
            .env("LD_LIBRARY_PATH", dir.join("driver"))
            .env("RUSTOMP_LLVM_LIB", dir.join("llvm"))
            .output()
            .unwrap();
        let elapsed = start.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "one program failed: {stdout}");
        assert!(
            stdout.contains("4 passed, 1 failed, 1 known failures, 1 host-only skipped"),
            "{stdout}"
        );
        assert!(stdout.contains("failing (logs in"), "{stdout}");
        assert!(
            elapsed < std::time::Duration::from_millis(3500),
            "two 1 s programs x 2 runtimes ran 4 at a time: {elapsed:?}"
        );
        let results = std::fs::read_to_string(dir.join("results.tsv")).unwrap();
        let row = |name: &str| -> Vec<String> {
            results
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no row {name}: {results}"))
                .split('\t')
                .map(str::to_string)
                .collect()
        };
        assert_eq!(row("ok.c")[1], "ok");
        assert!(
            row("slow.c")[2].parse::<u64>().unwrap() >= 1000,
            "milliseconds: {:?}",
            row("slow.c")
        );
        assert_eq!(row("bad.c")[1], "FAIL (exit 3)");
        assert_eq!(row("expected.c")[1], "ok (exit 1, expected)");
        assert_eq!(row("known.c")[1], "known: FAIL (exit 1)");
        assert_eq!(
            (
                row("llvm_differs.c")[1].as_str(),
                row("llvm_differs.c")[3].as_str()
            ),
            ("ok", "FAIL (exit 5)")
        );
        assert_eq!(row("fault.c")[1], "skipped");
        // Beside the virtual GPU's verdicts, one line per program run.
        assert!(
            stdout.contains("GPU and virtual GPU differ on: bad llvm_differs")
                && stdout.contains("GPU and virtual GPU: 4 agree, 2 differ"),
            "{stdout}"
        );
        let compared = std::fs::read_to_string(dir.join("gpu-vs-vgpu.tsv")).unwrap();
        assert!(compared.contains("ok.c\tok\tok\tyes\n"), "{compared}");
        assert!(
            compared.contains("llvm_differs.c\tok\tnot run\tNO\n"),
            "{compared}"
        );
        // Without LLVM's library (or with --no-llvm) the column says so.
        let out = Command::new(&script)
            .args(["--no-llvm", "ok"])
            .env("LD_LIBRARY_PATH", dir.join("driver"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success()
                && stdout.contains("LLVM's library (not found)")
                && stdout.contains("1 passed, 0 failed"),
            "{stdout}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
