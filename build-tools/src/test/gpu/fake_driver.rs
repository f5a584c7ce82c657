//! The GPU-only faults a machine without a GPU can still see: the suite against
//! `tests/fake-cuda`, a stand-in `libcuda.so.1`.

use crate::test::programs::{run_program, runnable_programs, Outcome, SuiteProgram, JOBS, TIMEOUT};
use crate::util::{self, at, Result};
use std::path::Path;
use std::process::Command;

/// What the runtime says when a GPU-only fault shows against the stand-in driver: a symbol it
/// could not find, arguments a kernel does not declare, a driver call that refused.
const DRIVER_FAULTS: [&str; 5] = [
    "mismatch in kernel arguments",
    "of the registered program is not in its device image",
    "looking up",
    "cuLaunchKernel failed",
    "cuModuleLoadDataEx failed",
];

/// The GPU-only faults a machine without a GPU can still see: every program of the suite
/// (compiled for sm_90) runs against `tests/fake-cuda`, a stand-in `libcuda.so.1` that loads
/// the real cubins and answers symbol lookups, parameter queries and launches as the real
/// driver does, but runs no kernel. A program's own checks of its results then fail; what must
/// not happen is a lookup that fails, a launch the runtime refuses or the driver would
/// overrun, a crash or a hang. Returns whether none happened.
pub fn against_fake_driver(dir: &Path, arch: &str) -> Result<bool> {
    if arch.starts_with("gfx") {
        println!("gpu suite: no stand-in driver for {arch} (the fake is CUDA's); skipped");
        return Ok(true);
    }
    let status = Command::new("cargo")
        .args(["build", "--quiet", "-p", "rustomp-fake-cuda"])
        .current_dir(at("."))
        .status()?;
    if !status.success() {
        crate::bail!("building tests/fake-cuda failed");
    }
    let fake = at("target/debug/librustomp_fake_cuda.so");
    let programs = runnable_programs(dir);
    let logs = dir.join("fake-driver-logs");
    util::mkdirs(&logs)?;
    let outcomes = util::parallel(&programs, JOBS, |program| {
        let name = &program.name;
        let mut env = program.header.env.clone();
        env.push(("RUSTOMP_CUDA_DRIVER".into(), fake.display().to_string()));
        env.push((
            "LD_LIBRARY_PATH".into(),
            dir.join("lib").display().to_string(),
        ));
        // Each launch's line, to count them.
        env.push(("LIBOMPTARGET_INFO".into(), "0x10".into()));
        let log = logs.join(format!("{name}.log"));
        let outcome = run_program(&dir.join("bin").join(name), &env, &log);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let launches = text.matches("Launching kernel").count();
        let fault = DRIVER_FAULTS
            .iter()
            .find_map(|marker| text.lines().find(|l| l.contains(marker)))
            .map(|l| l.chars().take(240).collect::<String>());
        (outcome, launches, fault)
    });
    let mut bad = Vec::new();
    let mut launches = 0;
    for (SuiteProgram { name, .. }, (outcome, launched, fault)) in programs.iter().zip(&outcomes) {
        launches += launched;
        let problem = match (outcome, fault) {
            (_, Some(line)) => Some(line.clone()),
            (Outcome::Signal(6), None) | (Outcome::Exit(_), None) => None,
            (Outcome::Signal(s), None) => Some(format!("killed by signal {s}")),
            (Outcome::Timeout, None) => Some(format!("timed out after {}s", TIMEOUT.as_secs())),
            (other, None) => Some(format!("{other:?}")),
        };
        if let Some(problem) = problem {
            bad.push(format!("{name}: {problem}"));
        }
    }
    println!(
        "gpu suite against the stand-in CUDA driver: {} programs run (host-only ones skipped), {launches} kernel launches; {} with a GPU-only fault (logs in {})",
        programs.len(),
        bad.len(),
        util::show(&logs)
    );
    for line in &bad {
        println!("    {line}");
    }
    Ok(bad.is_empty())
}

/// Without a driver, what the compiled programs must do: under `mandatory` fail with a message
/// naming the missing driver; under the default policy run on the host.
pub(super) fn check_without_driver(dir: &Path, arch: &str) -> bool {
    // What the plugin's reason says when its driver is missing.
    let missing = if arch.starts_with("gfx") {
        "HSA"
    } else {
        "no CUDA driver"
    };
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
