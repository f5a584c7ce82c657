//! Fortran's device-side runtime calls, end to end through `cargo xtask fc`
//! (`tests/fortran/runtime_calls.f90`: a formatted `print`, `trim` and an allocatable
//! assignment of a derived type inside a target region):
//!
//! - x86_64: the image links flang's runtime and `host-devicertl`; the program runs on the CPU
//!   plugin under `mandatory` and prints `device says 42` from the region;
//! - sm_90 and gfx90a: the device link fails, and the compile's output names
//!   `_FortranAioBeginExternalFormattedOutput` as a call rustomp's device runtime does not provide.
use super::programs::run_compile;
use crate::cc::Runtime;
use crate::util::{self, at, Result};
use std::process::Command;

const PROGRAM: &str = "tests/fortran/runtime_calls.f90";
/// What the region prints.
const PRINTED: &str = "device says 42";
/// The refusal the GPU links must print.
const REFUSED: &str = "flang's device code calls _FortranAioBeginExternalFormattedOutput, which rustomp's device runtime does not provide";

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
        let args = [
            "-O2".to_string(),
            format!("--offload-arch={arch}"),
            src.clone(),
            "-o".into(),
            out.join(format!("runtime_calls-{arch}"))
                .display()
                .to_string(),
        ];
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
    if !failures.is_empty() {
        crate::bail!(
            "Fortran device-runtime checks failing: {} (logs in {})",
            failures.join(", "),
            util::show(&out)
        );
    }
    Ok(())
}
