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
//! `filter`: a group name (overhead, mapping, threads, nowait, indirect, gpu) runs that group;
//! any other text runs the measurements whose name contains it (`BENCH_FILTER` for the programs).
//! Nothing here asserts on timings: this is a report, not a test.

use crate::cc::{self, Runtime};
use crate::paths::LLVM_LIB;
use crate::devicertl;
use crate::paths::dist_lib;
use crate::host;
use crate::paths::LLVM_LIBOMPTARGET;
use crate::paths::cuda_dir;
use crate::util::{self, at, Cmd, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Options {
    pub quick: bool,
    pub filter: Option<String>,
}

/// Process runs per library (each run measures every row of its program).
const RUNS_FULL: usize = 7;
const RUNS_QUICK: usize = 3;
/// One run's time limit.
const TIMEOUT: Duration = Duration::from_secs(300);
/// A ratio this far from 1 (10 %) in the worse direction is flagged `slower`.
const FLAG_MARGIN: f64 = 1.10;

/// How one of a group's two columns runs the program.
struct Variant {
    label: &'static str,
    /// Arguments before the mode (`quick` / `full`).
    args: Vec<String>,
    env: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A C program offloaded to the CPU plugin, run against ours and LLVM's library.
    Host,
    /// The Rust example `devicertl/examples/<name>.rs`, `translate` against `std`.
    Example,
    /// C programs for sm_90 linked with `bench/cuda_raw.c`, ours against LLVM's.
    Gpu,
}

struct Group {
    id: &'static str,
    title: &'static str,
    kind: Kind,
    /// Sources under bench/ (C) or the example's name.
    programs: &'static [&'static str],
    /// Each program also runs once more per entry with this variable set (its rows say so).
    also_with: &'static [(&'static str, &'static str)],
}

const GROUPS: [Group; 6] = [
    Group {
        id: "overhead",
        title: "1. host overhead per target region (CPU plugin)",
        kind: Kind::Host,
        programs: &["overhead.c"],
        also_with: &[],
    },
    Group {
        id: "mapping",
        title: "2. mapping at scale (CPU plugin)",
        kind: Kind::Host,
        programs: &["mapping.c"],
        also_with: &[],
    },
    Group {
        id: "threads",
        title: "3. host threads issuing target regions concurrently (CPU plugin)",
        kind: Kind::Host,
        programs: &["threads.c"],
        also_with: &[],
    },
    Group {
        id: "nowait",
        title: "4. nowait throughput (CPU plugin)",
        kind: Kind::Host,
        programs: &["nowait.c"],
        // Without libomp's hidden helper threads the target tasks run on the team's threads.
        also_with: &[("LIBOMP_USE_HIDDEN_HELPER_TASK", "0")],
    },
    Group {
        id: "indirect",
        title: "5. device-side indirect-call lookup (devicertl host emulation; reference: std binary_search_by_key, not LLVM)",
        kind: Kind::Example,
        programs: &["indirect_bench"],
        also_with: &[],
    },
    Group {
        id: "gpu",
        title: "6. GPU (NVIDIA sm_90; raw CUDA driver rows are the ceiling)",
        kind: Kind::Gpu,
        programs: &["gpu.c", "gpu_reduce.c", "gpu_indirect.c"],
        also_with: &[],
    },
];

/// One measurement's values over the runs, per column.
#[derive(Debug, Default, Clone)]
struct Row {
    name: String,
    unit: String,
    values: [Vec<f64>; 2],
}

/// A failed run: which column, and why.
struct Failure {
    column: usize,
    program: String,
    why: String,
}

pub fn run(o: Options) -> Result<i32> {
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

/// The groups to run and the measurement filter for the programs (when the filter names no group).
fn select(filter: Option<&str>) -> (Vec<&'static Group>, Option<String>) {
    match filter {
        None => (GROUPS.iter().collect(), None),
        Some(f) => {
            let named: Vec<&Group> = GROUPS.iter().filter(|g| g.id == f).collect();
            if named.is_empty() {
                (GROUPS.iter().collect(), Some(f.to_string()))
            } else {
                (named, None)
            }
        }
    }
}

/// ours (dist/lib) and, when installed, LLVM's library.
fn library_variants(llvm: bool) -> Vec<Variant> {
    let mut v = vec![Variant {
        label: "ours",
        args: vec![],
        env: vec![("LD_LIBRARY_PATH".into(), dist_lib().display().to_string())],
    }];
    if llvm {
        v.push(Variant {
            label: "LLVM",
            args: vec![],
            env: vec![("LD_LIBRARY_PATH".into(), LLVM_LIB.into())],
        });
    }
    v
}

/// Makes sure each variant really loads the library it names (ld.so's trace mode).
fn check_libraries(exe: &Path, variants: &[Variant]) -> Result<()> {
    for v in variants {
        let mut cmd = Command::new(exe);
        cmd.env("LD_TRACE_LOADED_OBJECTS", "1")
            .envs(v.env.iter().map(|(k, val)| (k, val)));
        let out = cmd
            .output()
            .map_err(|e| util::Error(format!("cannot run {}: {e}", util::show(exe))))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("libomptarget.so"))
            .unwrap_or("(not loaded)")
            .trim();
        let want = v
            .env
            .iter()
            .find(|(k, _)| k == "LD_LIBRARY_PATH")
            .map_or("", |(_, d)| d.as_str());
        if !line.contains(want) {
            crate::bail!(
                "{} with {} resolves `{line}`, not a library in {want}: the comparison would be meaningless",
                util::show(exe),
                v.label
            );
        }
        let path = line
            .split("=>")
            .nth(1)
            .unwrap_or(line)
            .split(" (")
            .next()
            .unwrap_or(line);
        println!("bench: {:4} -> {}", v.label, path.trim());
    }
    Ok(())
}

/// Compiles `bench/<src>` (plus `extra` objects) unless the executable is newer than every
/// file under bench/. Returns the executable or why it did not build.
fn compile_c(
    src: &str,
    out_dir: &Path,
    offload: &[&str],
    extra: Option<&Path>,
) -> std::result::Result<PathBuf, String> {
    let dir = at("bench");
    let exe = out_dir.join(src.trim_end_matches(".c"));
    let log = out_dir.join("logs").join(format!("{src}.compile.log"));
    if let (Some(built), Some(newest)) = (util::mtime(&exe), util::newest_under(&dir)) {
        if built > newest {
            return Ok(exe);
        }
    }
    let _ = std::fs::remove_file(&exe);
    let mut args: Vec<String> = vec!["-O2".into(), "-fopenmp".into()];
    args.extend(offload.iter().map(|s| s.to_string()));
    args.push(dir.join(src).display().to_string());
    if let Some(obj) = extra {
        args.push(obj.display().to_string());
        args.push("-ldl".into());
    }
    args.extend(["-o".into(), exe.display().to_string()]);
    let mut cmd = cc::command(false, Runtime::Ours, &args);
    run_logged(&mut cmd, &log)?;
    println!("bench: compiled {}", util::show(&exe));
    Ok(exe)
}

/// Runs a build command, its output to `log`; Err(one line) on failure.
fn run_logged(cmd: &mut Cmd, log: &Path) -> std::result::Result<(), String> {
    let line = cmd.display();
    let out = cmd.output_raw().map_err(|e| e.to_string())?;
    let text = format!(
        "$ {line}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = util::write(log, &text);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "compile failed ({}), see {}",
            first_error(&text),
            util::show(log)
        ))
    }
}

/// The first line of a build log that says `error`, shortened.
fn first_error(log: &str) -> String {
    let line = log
        .lines()
        .skip(1)
        .find(|l| l.contains("error"))
        .unwrap_or("no error line")
        .trim();
    let mut s: String = line.chars().take(140).collect();
    if s.len() < line.len() {
        s.push_str("...");
    }
    s
}

fn build_example(name: &str) -> std::result::Result<PathBuf, String> {
    let log = at("target/bench/logs").join(format!("{name}.build.log"));
    let mut cmd = Cmd::new(util::cargo());
    cmd.in_root()
        .args(["build", "--release", "-p", "devicertl", "--example", name]);
    run_logged(&mut cmd, &log)?;
    Ok(at("target/release/examples").join(name))
}

/// An executable and the extra environment of one of its runs.
type Job = (PathBuf, Option<(&'static str, &'static str)>);

/// Every executable as is, then once per `also_with` setting of its group.
fn with_env(exes: &[PathBuf], group: &Group) -> Vec<Job> {
    let mut jobs: Vec<Job> = exes.iter().map(|e| (e.clone(), None)).collect();
    for &setting in group.also_with {
        jobs.extend(exes.iter().map(|e| (e.clone(), Some(setting))));
    }
    jobs
}

/// Runs every job `runs` times per variant, alternating the order, and collects the rows.
fn measure(
    jobs: &[Job],
    variants: &[Variant],
    runs: usize,
    mode: &str,
    filter: Option<&str>,
    out_dir: &Path,
) -> (Vec<Row>, Vec<Failure>) {
    let mut rows: Vec<Row> = Vec::new();
    let mut failures = Vec::new();
    for (exe, extra) in jobs {
        let mut name = exe
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if let Some((k, v)) = extra {
            name = format!("{name}.{k}={v}");
        }
        for r in 0..runs {
            let mut order: Vec<usize> = (0..variants.len()).collect();
            if r % 2 == 1 {
                order.reverse();
            }
            for column in order {
                let v = &variants[column];
                let log = out_dir
                    .join("logs")
                    .join(format!("{name}.{}.{r}.log", v.label));
                match run_once(exe, v, *extra, mode, filter, &log) {
                    Ok(stdout) => {
                        for (row, value, unit) in parse_results(&stdout) {
                            let at = match rows.iter().position(|x| x.name == row) {
                                Some(i) => i,
                                None => {
                                    rows.push(Row {
                                        name: row,
                                        unit,
                                        ..Row::default()
                                    });
                                    rows.len() - 1
                                }
                            };
                            rows[at].values[column].push(value);
                        }
                    }
                    Err(why) => failures.push(Failure {
                        column,
                        program: name.clone(),
                        why,
                    }),
                }
            }
        }
    }
    (rows, failures)
}

/// Runs one program to completion; its stdout, or why it failed.
fn run_once(
    exe: &Path,
    v: &Variant,
    extra: Option<(&str, &str)>,
    mode: &str,
    filter: Option<&str>,
    log: &Path,
) -> std::result::Result<String, String> {
    use std::os::unix::process::CommandExt;
    let stdout_path = log.with_extension("out");
    let out = File::create(&stdout_path).map_err(|e| e.to_string())?;
    let err = File::create(log).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(&v.args)
        .arg(mode)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env_remove("LIBOMPTARGET_INFO")
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("BENCH_FILTER")
        .envs(v.env.iter().map(|(k, val)| (k, val)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(f) = filter {
        cmd.env("BENCH_FILTER", f);
    }
    if let Some((k, val)) = extra {
        cmd.env(k, val);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let status = match util::wait_or_kill_group(&mut child, TIMEOUT) {
        Ok(Some(status)) => status,
        Ok(None) => return Err(format!("timed out after {} s", TIMEOUT.as_secs())),
        Err(e) => return Err(e.to_string()),
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        let stderr = std::fs::read_to_string(log).unwrap_or_default();
        let first = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        Err(format!(
            "{}: {first} (see {})",
            util::describe(status),
            util::show(log)
        ))
    }
}

/// `RESULT <name> <value> <unit>` lines; anything else is ignored.
fn parse_results(stdout: &str) -> Vec<(String, f64, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            if it.next()? != "RESULT" {
                return None;
            }
            let name = it.next()?.to_string();
            let value: f64 = it.next()?.parse().ok()?;
            let unit = it.next().unwrap_or("").to_string();
            value.is_finite().then_some((name, value, unit))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// GPU group

/// `nvidia-smi` on PATH and `libcuda.so.1` in the loader cache.
fn nvidia_driver() -> std::result::Result<(), String> {
    if util::which("nvidia-smi").is_none() {
        return Err("no nvidia-smi".into());
    }
    let cache = Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output())
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
        .unwrap_or(false);
    if !cache {
        return Err("libcuda.so.1 is not in the loader cache".into());
    }
    Ok(())
}

/// Compiles the GPU programs; runs them when a driver is present, else prints one skip line.
fn gpu_group(
    group: &Group,
    out_dir: &Path,
    driver: std::result::Result<(), String>,
    llvm: bool,
    runs: usize,
    mode: &str,
    filter: Option<&str>,
) -> Result<()> {
    if driver.is_ok() {
        // The programs link our device runtime bitcode.
        devicertl::run(false)?;
    }
    let include = cuda_dir().join("include");
    let helper = out_dir.join("cuda_raw.o");
    let helper_built = if include.join("cuda.h").is_file() {
        let mut cmd = Cmd::new("clang-22");
        cmd.args(["-O2", "-c"])
            .arg(at("bench/cuda_raw.c"))
            .arg(format!("-I{}", include.display()))
            .arg("-o")
            .arg(&helper);
        run_logged(&mut cmd, &out_dir.join("logs/cuda_raw.c.compile.log"))
    } else {
        Err(format!(
            "no {} (`cargo xtask setup` installs it)",
            util::show(&include.join("cuda.h"))
        ))
    };
    let mut exes = Vec::new();
    let mut compile_notes = Vec::new();
    match &helper_built {
        Ok(()) => {
            for p in group.programs {
                match compile_c(p, out_dir, &["--offload-arch=sm_90"], Some(&helper)) {
                    Ok(exe) => {
                        compile_notes.push(format!("{p} builds"));
                        exes.push(exe);
                    }
                    Err(why) => compile_notes.push(format!("{p} does not build: {why}")),
                }
            }
        }
        Err(why) => compile_notes.push(format!("cuda_raw.c does not build: {why}")),
    }
    if let Err(why) = driver {
        println!(
            "\n{}: skipped ({why}; {})",
            group.title,
            compile_notes.join("; ")
        );
        return Ok(());
    }
    for note in compile_notes
        .iter()
        .filter(|n| n.contains("does not build"))
    {
        println!("gpu: {note}");
    }
    let variants = library_variants(llvm);
    let (rows, failures) = measure(
        &with_env(&exes, group),
        &variants,
        runs,
        mode,
        filter,
        out_dir,
    );
    print_group(group.title, &variants, &rows, &failures, runs);
    if filter.is_none() && !rows.is_empty() {
        record_gpu_table(&variants, &rows)?;
    }
    Ok(())
}

/// Where `cargo xtask bench gpu` keeps its latest table in BENCHMARKS.md (replaced each run
/// on a GPU; the rest of the file is written by hand).
const GPU_TABLE_BEGIN: &str = "<!-- cargo xtask bench gpu: table begins -->";
const GPU_TABLE_END: &str = "<!-- cargo xtask bench gpu: table ends -->";

/// Writes the GPU group's table into BENCHMARKS.md (between the markers, or at the end).
fn record_gpu_table(variants: &[Variant], rows: &[Row]) -> Result<()> {
    let gpu = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_default();
    let a = variants.first().map_or("ours", |v| v.label);
    let b = variants.get(1).map_or("LLVM", |v| v.label);
    let mut table = format!(
        "{GPU_TABLE_BEGIN}\n\nGPU group, written by `cargo xtask bench gpu`: {gpu}; {}.\nMedian (min-max) of each program's own medians.\n\n| benchmark | unit | {a} | {b} | {a}/{b} |\n|---|---|---|---|---|\n",
        machine_line()
    );
    for row in rows {
        let (r, verdict) = ratio(row);
        table.push_str(&format!(
            "| `{}` | {} | {} | {} | {r} {verdict} |\n",
            row.name,
            row.unit,
            cell(&row.values[0]),
            cell(&row.values[1])
        ));
    }
    table.push_str(&format!("\n{GPU_TABLE_END}"));
    let path = at("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path)?;
    let updated = match (text.find(GPU_TABLE_BEGIN), text.find(GPU_TABLE_END)) {
        (Some(begin), Some(end)) if begin < end => {
            format!("{}{table}{}", &text[..begin], &text[end + GPU_TABLE_END.len()..])
        }
        _ => format!("{}\n\n## GPU (latest run on a GPU)\n\n{table}\n", text.trim_end()),
    };
    util::write(&path, updated)?;
    println!("gpu: the table is in BENCHMARKS.md");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Statistics and the table

/// (median, min, max) of a non-empty slice.
fn stats(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    Some((median, v[0], v[n - 1]))
}

/// Whether smaller is better: a time per operation (`ns/region`, `us/launch`, ...).
fn lower_is_better(unit: &str) -> bool {
    matches!(unit.split('/').next(), Some("ns" | "us" | "ms" | "s"))
}

/// Three significant digits, with k / M / G for large values.
fn num(v: f64) -> String {
    // Thresholds sit just below the powers of ten so that rounding never prints `1000k`.
    let (scaled, suffix) = match v.abs() {
        a if a >= 999.5e6 => (v / 1e9, "G"),
        a if a >= 999.5e3 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = match scaled.abs() {
        a if a >= 99.95 => 0,
        a if a >= 9.995 => 1,
        a if a >= 0.9995 => 2,
        _ => 3,
    };
    format!("{scaled:.digits$}{suffix}")
}

/// `median (min-max)`, or `-` without values.
fn cell(values: &[f64]) -> String {
    match stats(values) {
        Some((median, min, max)) => format!("{} ({}-{})", num(median), num(min), num(max)),
        None => "-".into(),
    }
}

/// ours/reference and whether ours is clearly worse or better.
fn ratio(row: &Row) -> (String, &'static str) {
    let (Some((a, _, _)), Some((b, _, _))) = (stats(&row.values[0]), stats(&row.values[1])) else {
        return ("-".into(), "");
    };
    if b == 0.0 {
        return ("-".into(), "");
    }
    let r = a / b;
    let worse = if lower_is_better(&row.unit) {
        r
    } else {
        1.0 / r
    };
    let verdict = if worse > FLAG_MARGIN {
        "slower"
    } else if worse < 1.0 / FLAG_MARGIN {
        "faster"
    } else {
        ""
    };
    (format!("{r:.2}"), verdict)
}

fn print_group(title: &str, variants: &[Variant], rows: &[Row], failures: &[Failure], runs: usize) {
    if rows.is_empty() && failures.is_empty() {
        return; // a filter left nothing of this group
    }
    println!("\n{title}");
    let a = variants.first().map_or("ours", |v| v.label);
    let b = variants.get(1).map_or("LLVM", |v| v.label);
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(9).max(9);
    let unit_w = rows.iter().map(|r| r.unit.len()).max().unwrap_or(4).max(4);
    let ha = format!("{a} median (min-max)");
    let hb = format!("{b} median (min-max)");
    let ratio_h = format!("{a}/{b}");
    let ratio_w = ratio_h.len().max(6);
    println!(
        "  {:name_w$}  {:unit_w$}  {ha:26}  {hb:26}  {ratio_h:>ratio_w$}",
        "benchmark", "unit"
    );
    for row in rows {
        let (r, verdict) = ratio(row);
        println!(
            "  {:name_w$}  {:unit_w$}  {:26}  {:26}  {r:>ratio_w$}  {verdict}",
            row.name,
            row.unit,
            cell(&row.values[0]),
            cell(&row.values[1])
        );
    }
    for (column, v) in variants.iter().enumerate() {
        let mine: Vec<&Failure> = failures.iter().filter(|f| f.column == column).collect();
        if let Some(first) = mine.first() {
            println!(
                "  {}: {} of {} runs failed ({}: {})",
                v.label,
                mine.len(),
                runs * mine
                    .iter()
                    .map(|f| &f.program)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                first.program,
                first.why
            );
        }
    }
}

/// `machine: 2 CPUs (AMD EPYC), load average 0.50, 2025-01-01 12:00 UTC`: for the report's header.
fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // The 1-minute load average: how busy the (shared) machine was when the runs started.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    format!("bench: machine: {cpus} CPUs ({model}), load average {load}, {date}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let out = "noise\nRESULT empty_region 423.5 ns/region\nRESULT bad x y\nRESULT rate 1.5e+06 regions/s\n";
        let got = parse_results(out);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            ("empty_region".to_string(), 423.5, "ns/region".to_string())
        );
        assert_eq!(got[1].1, 1.5e6);
    }

    #[test]
    fn medians_and_spread() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(stats(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(stats(&[]), None);
    }

    #[test]
    fn numbers_keep_three_digits() {
        assert_eq!(num(423.4), "423");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(0.8766), "0.877");
        assert_eq!(num(270186.0), "270k");
        assert_eq!(num(1.4864e6), "1.49M");
        assert_eq!(num(2.1e8), "210M");
        assert_eq!(num(999_700.0), "1.00M");
        assert_eq!(num(99.97), "100");
        assert_eq!(num(9.999), "10.0");
    }

    #[test]
    fn direction_of_the_ratio() {
        let row = |unit: &str, a: f64, b: f64| Row {
            name: "x".into(),
            unit: unit.into(),
            values: [vec![a], vec![b]],
        };
        assert_eq!(ratio(&row("ns/region", 200.0, 100.0)).1, "slower");
        assert_eq!(ratio(&row("regions/s", 200.0, 100.0)).1, "faster");
        assert_eq!(ratio(&row("GB/s", 100.0, 105.0)).1, "");
        assert_eq!(ratio(&row("ns/region", 1.0, 2.0)).0, "0.50");
        assert_eq!(
            ratio(&Row {
                values: [vec![1.0], vec![]],
                ..row("ns", 0.0, 0.0)
            })
            .0,
            "-"
        );
    }

    #[test]
    fn filter_names_a_group_or_measurements() {
        let (g, f) = select(Some("mapping"));
        assert_eq!(g.len(), 1);
        assert!(f.is_none());
        let (g, f) = select(Some("scalars"));
        assert_eq!(g.len(), GROUPS.len());
        assert_eq!(f.as_deref(), Some("scalars"));
    }
}
