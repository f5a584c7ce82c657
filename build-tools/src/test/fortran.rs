//! Fortran's runtime calls in device code, end to end through `cargo xtask fc`:
//!
//! - `tests/fortran/runtime_calls.f90` (a formatted `print`, `trim` and an allocatable
//!   assignment of a derived type inside a target region): on x86_64 the image links flang's
//!   runtime and `host-devicertl`, and the program runs on the CPU plugin under `mandatory` and
//!   prints `device says 42` from the region; for sm_90 and gfx90a the device link fails, and
//!   the compile's output names `_FortranATrim` as a call rustomp's device runtime does not
//!   provide (the `print` links: see below);
//! - `tests/fortran/device_output.f90` (`print` and `write` of every kind of item from a target
//!   region) and `list_output.f90` (list-directed `print` alone, whose static program links
//!   only part of flang's I/O runtime): for sm_90 each runs on the virtual GPU, and its output
//!   must equal, byte for byte, the same binary's with `OMP_TARGET_OFFLOAD=disabled` (the
//!   region's statements run by the host's flang runtime); for gfx90a each must link.
use super::programs::run_compile;
use crate::cc::Runtime;
use crate::util::{self, at, Result};
use std::path::Path;
use std::process::Command;

const PROGRAM: &str = "tests/fortran/runtime_calls.f90";
/// What the region prints.
const PRINTED: &str = "device says 42";
/// The refusal the GPU links must print.
const REFUSED: &str =
    "flang's device code calls _FortranATrim, which rustomp's device runtime does not provide";
/// Output statements from a target region: every kind of item; list-directed output alone.
const DEVICE_OUTPUT: [&str; 2] = [
    "tests/fortran/device_output.f90",
    "tests/fortran/list_output.f90",
];

pub fn run() -> Result<()> {
    if util::which(crate::paths::FLANG).is_none() {
        crate::bail!(
            "{} is not installed: `cargo xtask setup`",
            crate::paths::FLANG
        );
    }
    let out = at("target/fortran");
    util::mkdirs(&out)?;
    let src = at(PROGRAM).display().to_string();
    let mut failures = Vec::new();
    let exe = out.join("runtime_calls-x86_64");
    let log = out.join("runtime_calls-x86_64.log");
    let args = [
        "-O2".to_string(),
        "-fopenmp-targets=x86_64-pc-linux-gnu".into(),
        src.clone(),
        "-o".into(),
        exe.display().to_string(),
    ];
    let ran = match run_compile(crate::fc::command(Runtime::Ours, &args), true, &log) {
        Err(e) => Err(e),
        Ok(()) => match Command::new(&exe)
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .output()
        {
            Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).contains(PRINTED) => {
                Ok(())
            }
            Ok(o) => Err(format!(
                "{}, output {:?}",
                util::describe(o.status),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            )),
            Err(e) => Err(e.to_string()),
        },
    };
    match ran {
        Ok(()) => println!("fortran: runtime calls in a target region, x86_64 (CPU plugin): ok, printed \"{PRINTED}\""),
        Err(e) => {
            println!("fortran: runtime calls in a target region, x86_64 (CPU plugin): FAIL: {e}");
            failures.push("x86_64".to_string());
        }
    }
    for arch in ["sm_90", "gfx90a"] {
        let log = out.join(format!("runtime_calls-{arch}.log"));
        let args = gpu_build(arch, &src, &out.join(format!("runtime_calls-{arch}")));
        let linked = run_compile(crate::fc::command(Runtime::Ours, &args), true, &log).is_ok();
        let refused = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(REFUSED);
        if !linked && refused {
            println!("fortran: runtime calls in a target region, {arch}: refused at link time, naming the Fortran runtime calls");
        } else {
            let what = if linked {
                "linked (the device runtime grew the Fortran runtime? then run it instead)"
            } else {
                "failed without naming the missing calls"
            };
            println!(
                "fortran: runtime calls in a target region, {arch}: FAIL: {what}, see {}",
                util::show(&log)
            );
            failures.push(arch.to_string());
        }
    }
    for program in DEVICE_OUTPUT {
        failures.extend(device_output(&out, program));
    }
    if !failures.is_empty() {
        crate::bail!(
            "Fortran device-runtime checks failing: {} (logs in {})",
            failures.join(", "),
            util::show(&out)
        );
    }
    Ok(())
}

/// Builds `program` (one of [`DEVICE_OUTPUT`]) for sm_90 and gfx90a; runs the sm_90 build on
/// the virtual GPU and on the host, and compares. Returns what failed.
fn device_output(out: &Path, program: &str) -> Vec<String> {
    let src = at(program).display().to_string();
    let name = Path::new(program)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("device_output");
    let mut failures = Vec::new();
    for arch in ["sm_90", "gfx90a"] {
        let exe = out.join(format!("{name}-{arch}"));
        let log = out.join(format!("{name}-{arch}.log"));
        let args = gpu_build(arch, &src, &exe);
        if run_compile(crate::fc::command(Runtime::Ours, &args), true, &log).is_err() {
            println!(
                "fortran: {name}, {arch}: FAIL: does not link, see {}",
                util::show(&log)
            );
            failures.push(format!("{name} {arch}"));
            continue;
        }
        if arch != "sm_90" {
            println!("fortran: {name}, {arch}: links");
            continue;
        }
        // Its virtual-GPU image, as `cargo xtask fc` adds it.
        let image = crate::vgpu_build::program_build(&args)
            .ok_or_else(|| "not a build that links an nvptx program".to_string())
            .and_then(|build| crate::vgpu_build::build_for_program(false, &build).map_err(|e| e.0));
        if let Err(why) = image {
            println!("fortran: {name}, sm_90: FAIL: no virtual-GPU image: {why}");
            failures.push(format!("{name} sm_90"));
            continue;
        }
        let run = |offload: &str, vgpu: &str| {
            Command::new(&exe)
                .current_dir(out)
                .env("OMP_TARGET_OFFLOAD", offload)
                .env("RUSTOMP_VGPU", vgpu)
                .output()
        };
        match (run("mandatory", "1"), run("disabled", "0")) {
            (Ok(device), Ok(host))
                if device.status.success()
                    && host.status.success()
                    && device.stdout == host.stdout
                    && device.stderr.is_empty() =>
            {
                println!(
                    "fortran: {name}, sm_90 on the virtual GPU: ok, {} lines as the host prints them",
                    device.stdout.split(|&b| b == b'\n').count() - 1
                );
            }
            (Ok(device), Ok(host)) => {
                let device_file = out.join(format!("{name}-sm_90.device.txt"));
                let host_file = out.join(format!("{name}-sm_90.host.txt"));
                let _ = std::fs::write(
                    &device_file,
                    [&device.stdout[..], &device.stderr[..]].concat(),
                );
                let _ = std::fs::write(&host_file, &host.stdout);
                println!(
                    "fortran: {name}, sm_90 on the virtual GPU: FAIL: {} on the device, {} on the host; the outputs differ: {} vs {}",
                    util::describe(device.status),
                    util::describe(host.status),
                    util::show(&device_file),
                    util::show(&host_file)
                );
                failures.push(format!("{name} sm_90"));
            }
            (Err(e), _) | (_, Err(e)) => {
                println!("fortran: {name}, sm_90: FAIL: {e}");
                failures.push(format!("{name} sm_90"));
            }
        }
    }
    failures
}

/// `fc`'s arguments building `src` for the GPU `arch` into `exe`.
fn gpu_build(arch: &str, src: &str, exe: &Path) -> [String; 5] {
    [
        "-O2".to_string(),
        format!("--offload-arch={arch}"),
        src.to_string(),
        "-o".into(),
        exe.display().to_string(),
    ]
}
