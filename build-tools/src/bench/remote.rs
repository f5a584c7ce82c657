//! `cargo xtask bench remote`: remote offload over MPI (issue 26) against plain MPI between
//! the same two ranks, in one run: `bench/remote.c` under
//! `mpirun -np 1 rustomp-proxy : -np 1 target/bench/remote` on localhost, the application's own
//! CPU devices hidden so that device 0 is the proxy's.
//!
//! Rows: the latency of an empty target region against an MPI round trip of 8 bytes (ratio:
//! ours / MPI's, 1 is MPI's own speed), and `omp_target_memcpy` to and from the remote device
//! for 1 to 64 MiB against `MPI_Send`/`MPI_Recv` of the same size (ratio: our bandwidth / MPI's,
//! the goal is ≥ 0.90). Each value is the median over the runs of each run's median
//! (bench.h). A report, not a test: nothing asserts on the figures.

use super::build::compile_c;
use super::report::machine_line;
use crate::bail;
use crate::paths::{dist_bin, PROXY};
use crate::util::{self, at, Result};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

const RUNS_FULL: usize = 5;
const RUNS_QUICK: usize = 3;

pub(super) fn run(quick: bool) -> Result<i32> {
    util::step("bench remote: build the host library, the proxy and the MPI shim");
    crate::host::run()?;
    let Some(mpirun) = util::which("mpirun") else {
        bail!("no mpirun on PATH: `cargo xtask setup` installs Open MPI (openmpi-bin, libopenmpi-dev)");
    };
    let proxy = dist_bin().join(PROXY);
    let out_dir = at("target/bench");
    util::mkdirs(&out_dir.join("logs"))?;
    let exe = match compile_c(
        "remote.c",
        &out_dir,
        &["-fopenmp-targets=x86_64-pc-linux-gnu"],
        None,
    ) {
        Ok(exe) => exe,
        Err(why) => bail!("bench/remote.c did not build: {why}"),
    };
    let runs = if quick { RUNS_QUICK } else { RUNS_FULL };
    println!(
        "bench remote: {runs} runs of {} under mpirun (2 ranks, localhost), {} mode",
        util::show(&exe),
        if quick { "quick" } else { "full" }
    );
    println!("{}", machine_line());
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in 0..runs {
        let log = out_dir.join("logs").join(format!("remote.{run}.log"));
        let mut cmd = Command::new(&mpirun);
        cmd.args([
            "--oversubscribe",
            "-np",
            "1",
            "env",
            "RUSTOMP_HOST_DEVICES=1",
        ])
        .arg(&proxy)
        .args([":", "-np", "1", "env", "RUSTOMP_HOST_DEVICES=0"])
        .arg("OMP_TARGET_OFFLOAD=mandatory")
        .arg(&exe)
        .arg(if quick { "quick" } else { "full" })
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null());
        let out = cmd.output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let _ = util::write(
            &log,
            format!("{text}{}", String::from_utf8_lossy(&out.stderr)),
        );
        if !out.status.success() {
            bail!(
                "run {} failed ({}), see {}",
                run + 1,
                out.status,
                util::show(&log)
            );
        }
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if let (Some("RESULT"), Some(name), Some(value)) =
                (words.next(), words.next(), words.next())
            {
                if let Ok(v) = value.parse::<f64>() {
                    values.entry(name.to_string()).or_default().push(v);
                }
            }
        }
    }
    let median = |name: &str| -> Option<f64> {
        let mut v = values.get(name)?.clone();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    };
    println!(
        "\nremote offload against plain MPI (medians of {runs} runs)\n{:28} | {:>12} | {:>12} | ratio",
        "measurement", "rustomp", "plain MPI"
    );
    if let (Some(ours), Some(mpi)) = (median("launch_us"), median("mpi_roundtrip_us")) {
        println!(
            "{:28} | {:>9.2} us | {:>9.2} us | {:.2} (latency, ours / MPI round trip)",
            "launch (empty region)",
            ours,
            mpi,
            ours / mpi
        );
    }
    for way in ["to", "from"] {
        for mib in [1, 4, 16, 64] {
            let name = format!("{way}_{mib}MiB_GBs");
            let (Some(ours), Some(mpi)) = (median(&name), median(&format!("mpi_{name}"))) else {
                continue;
            };
            let label = if way == "to" {
                format!("copy to device, {mib} MiB")
            } else {
                format!("copy from device, {mib} MiB")
            };
            println!(
                "{label:28} | {ours:>7.2} GB/s | {mpi:>7.2} GB/s | {:.2} (bandwidth, ours / MPI)",
                ours / mpi
            );
        }
    }
    Ok(0)
}
