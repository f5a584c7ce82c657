//! `cargo xtask bench [--quick] [filter]`: performance of our libomptarget against LLVM's.
//!
//! The benchmark programs (`bench/*.c`, see BENCHMARKS.md) are compiled once with
//! `cargo xtask cc -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu` into `target/bench/`.
//! The same executable then runs against our `dist/lib/libomptarget.so.22.1` and against LLVM's
//! `/usr/lib/llvm-22/lib/libomptarget.so.22.1`, chosen with `LD_LIBRARY_PATH` (the programs'
//! rpath is a RUNPATH, which `LD_LIBRARY_PATH` overrides; checked before the runs). Runs
//! alternate between the two libraries (A B, B A, A B, ...) so slow drift of the machine's load
//! hits both alike. Each program times its own sections after a warm-up and prints
//! `RESULT <name> <value> <unit>` lines; a table per group shows the median over the runs,
//! the min-max spread, and ours/LLVM.
//!
//! Group 5 (the device runtime's indirect-call lookup, host emulation build) has no LLVM
//! counterpart: it compares `devicertl::indirect::translate` with the standard library's binary
//! search over the same table, and measures calls through translated host pointers beside
//! direct and untranslated pointer calls (what the pass plugin's rewrite costs per call); the
//! GPU group has the same comparison in a kernel (`bench/gpu_indirect.c`). The GPU group runs only where an NVIDIA driver is installed;
//! elsewhere its programs are compiled (to keep them building) and one line says it was skipped.
//!
//! `remote` (`bench/remote.c`, see `remote.rs`) is measured only when named: remote launch
//! latency and copy bandwidth against plain MPI between the same two ranks, as ratios.
//!
//! `filter`: a group name (overhead, mapping, threads, nowait, indirect, gpu, remote) runs that group;
//! any other text runs the measurements whose name contains it (`BENCH_FILTER` for the programs).
//! Nothing here asserts on timings: this is a report, not a test.

mod build;
mod gpu;
mod measure;
mod plan;
mod remote;
mod report;
pub(crate) mod resources;

use crate::host;
use crate::paths::{dist_lib, LLVM_LIBOMPTARGET};
use crate::util::{self, at, Result};
use build::{build_example, compile_c};
use gpu::{gpu_group, nvidia_driver};
use measure::{check_libraries, measure, with_env};
use plan::{library_variants, select, Kind, Variant};
use report::{machine_line, print_group};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub struct Options {
    pub quick: bool,
    pub filter: Option<String>,
}

/// Process runs per library (each run measures every row of its program).
const RUNS_FULL: usize = 7;
const RUNS_QUICK: usize = 3;

pub fn run(o: Options) -> Result<i32> {
    // Remote offload over MPI against plain MPI (its own runner: mpirun, two ranks).
    if o.filter.as_deref() == Some("remote") {
        return remote::run(o.quick);
    }
    let started = Instant::now();
    let (groups, row_filter) = select(o.filter.as_deref());
    if groups.is_empty() {
        crate::bail!("no benchmark group selected");
    }
    let runs = if o.quick { RUNS_QUICK } else { RUNS_FULL };
    let mode = if o.quick { "quick" } else { "full" };

    util::step("bench: build the host library");
    host::run()?;
    let llvm = Path::new(LLVM_LIBOMPTARGET).is_file();
    if !llvm {
        println!(
            "bench: {LLVM_LIBOMPTARGET} not found (package liboffload-22): LLVM column left empty"
        );
    }

    let out_dir = at("target/bench");
    util::mkdirs(&out_dir.join("logs"))?;
    // Another build in the same tree may install a new library while we measure.
    let ours = dist_lib().join("libomptarget.so.22.1");
    let installed = util::mtime(&ours);

    // Build everything first, one compile at a time, then measure.
    util::step("bench: compile the benchmark programs");
    let mut built: Vec<(usize, std::result::Result<Vec<PathBuf>, String>)> = Vec::new();
    let gpu_present = nvidia_driver();
    for (g, group) in groups.iter().enumerate() {
        let result = match group.kind {
            Kind::Host => group
                .programs
                .iter()
                .map(|p| compile_c(p, &out_dir, &["-fopenmp-targets=x86_64-pc-linux-gnu"], None))
                .collect(),
            Kind::Example => build_example(group.programs[0]).map(|exe| vec![exe]),
            Kind::Gpu => Ok(Vec::new()), // below: its compile failures are not errors
        };
        built.push((g, result));
    }

    println!(
        "bench: {runs} runs per column, alternating, {mode} mode{}",
        row_filter
            .as_ref()
            .map(|f| format!(", measurements matching `{f}`"))
            .unwrap_or_default()
    );
    println!("{}", machine_line());
    let mut checked_libraries = false;
    let mut any_failed = false;
    for (g, result) in built {
        let group = groups[g];
        if group.kind == Kind::Gpu {
            gpu_group(
                group,
                &out_dir,
                gpu_present.clone(),
                llvm,
                runs,
                mode,
                row_filter.as_deref(),
            )?;
            continue;
        }
        let exes = match result {
            Ok(exes) => exes,
            Err(why) => {
                println!("\n{}\n  not built: {why}", group.title);
                any_failed = true;
                continue;
            }
        };
        let variants = match group.kind {
            Kind::Example => vec![
                Variant {
                    label: "translate",
                    args: vec!["translate".into()],
                    env: vec![],
                },
                Variant {
                    label: "std",
                    args: vec!["std".into()],
                    env: vec![],
                },
            ],
            _ => library_variants(llvm),
        };
        if group.kind == Kind::Host && !checked_libraries {
            check_libraries(&exes[0], &variants)?;
            checked_libraries = true;
        }
        let (rows, failures) = measure(
            &with_env(&exes, group),
            &variants,
            runs,
            mode,
            row_filter.as_deref(),
            &out_dir,
        );
        any_failed |= !failures.is_empty();
        print_group(group.title, &variants, &rows, &failures, runs);
    }
    if util::mtime(&ours) != installed {
        println!(
            "\nbench: WARNING: {} was replaced while the benchmarks ran (another build in this tree?): the ours column mixes two builds",
            util::show(&ours)
        );
    }
    println!("\nbench: done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(if any_failed { 1 } else { 0 })
}
