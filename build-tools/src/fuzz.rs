//! `cargo xtask fuzz [TARGET...] [--time S] [--runs N]`: the libFuzzer targets of `fuzz/`
//! (fuzz/README.md says what each covers).
//!
//! The targets are built here with the flags cargo-fuzz passes (so no cargo-fuzz is needed):
//! the nightly toolchain, SanitizerCoverage (8-bit counters, PC table, comparisons, stack
//! depth), AddressSanitizer, `--cfg fuzzing`, debug assertions and overflow checks in an
//! optimized build, for `x86_64-unknown-linux-gnu` so that build scripts and proc macros stay
//! uninstrumented. Everything goes under `target/fuzz/`: the build, the corpus each run grows
//! (`corpus/<target>`, a scratch directory; the seeds in `fuzz/corpus/<target>` are only read),
//! crash inputs (`artifacts/<target>/`) and each run's libFuzzer log (`logs/<target>.log`).
//!
//! Each target runs alone, one process at a time, for `--time` seconds (or `--runs`
//! executions). A crash, a panic, a sanitizer report, a timeout or running out of memory all
//! count as a crash; the command exits 1 when any target had one. `cargo xtask test` runs
//! [`smoke`]: every target for [`SMOKE_SECONDS`].
//! `--remake-corpus` rebuilds the seed corpus from compiled programs (`seeds.rs`).

mod seeds;

use crate::bail;
use crate::util::{self, at, Cmd, Context, Result};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Seconds per target of `cargo xtask fuzz` without `--time`.
pub const DEFAULT_SECONDS: u64 = 60;
/// Seconds per target in `cargo xtask test`.
pub const SMOKE_SECONDS: u64 = 20;
/// One input running longer than this is a hang (libFuzzer's `-timeout`).
const INPUT_TIMEOUT_S: u64 = 25;
/// What a run may take beyond its time budget (start-up over the corpus, final statistics)
/// before it is ended as hung.
const GRACE: Duration = Duration::from_secs(300);
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

pub struct Options {
    /// Empty: every target.
    pub targets: Vec<String>,
    pub seconds: Option<u64>,
    pub runs: Option<u64>,
    pub remake_corpus: bool,
}

/// The toolchain the targets build with: `RUSTOMP_FUZZ_TOOLCHAIN`, else `nightly`.
pub fn toolchain() -> String {
    crate::paths::nightly_toolchain()
}

fn fuzz_dir() -> PathBuf {
    at("fuzz")
}

fn work_dir() -> PathBuf {
    at("target/fuzz")
}

fn bin_dir() -> PathBuf {
    work_dir().join(TRIPLE).join("release")
}

/// The targets: `fuzz/fuzz_targets/*.rs`, by name.
pub fn targets() -> Vec<String> {
    util::files_matching(&fuzz_dir().join("fuzz_targets"), "", ".rs")
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect()
}

/// Whether rustup has `toolchain` installed (`nightly` is `nightly-<host>`, not a dated one).
fn has_toolchain(toolchain: &str) -> Result<bool> {
    let list = Cmd::new("rustup")
        .args(["toolchain", "list"])
        .hint("rustup could not list its toolchains; try `rustup show`")
        .output()?;
    Ok(lists_toolchain(&list, toolchain))
}

/// Whether `rustup toolchain list` output names `toolchain` (`nightly` matches
/// `nightly-x86_64-unknown-linux-gnu`, not `nightly-2026-05-19-x86_64-unknown-linux-gnu`).
fn lists_toolchain(list: &str, toolchain: &str) -> bool {
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .any(|name| {
            name == toolchain
                || name
                    .strip_prefix(toolchain)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|host| !host.starts_with(|c: char| c.is_ascii_digit()))
        })
}

/// `cargo xtask setup`'s step: installs the fuzzing toolchain when missing. Returns whether it
/// installed it.
pub fn install_toolchain() -> Result<bool> {
    if util::which("rustup").is_none() {
        bail!("rustup is not on PATH: install rustup (https://rustup.rs), then `rustup toolchain install nightly --profile minimal` (`cargo xtask fuzz` builds with it)");
    }
    let toolchain = toolchain();
    if has_toolchain(&toolchain)? {
        println!("toolchain {toolchain} present");
        return Ok(false);
    }
    Cmd::new("rustup")
        .args(["toolchain", "install", &toolchain, "--profile", "minimal"])
        .hint("rustup could not install the toolchain `cargo xtask fuzz` builds with; check the network and `rustup show`")
        .run()?;
    Ok(true)
}

/// cargo-fuzz's flags (its defaults: release with debug assertions, ASan, trace-compares).
fn rustflags() -> String {
    let mut flags = [
        "-Cpasses=sancov-module",
        "-Cllvm-args=-sanitizer-coverage-level=4",
        "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
        "-Cllvm-args=-sanitizer-coverage-pc-table",
        "-Cllvm-args=-sanitizer-coverage-trace-compares",
        "-Cllvm-args=-sanitizer-coverage-stack-depth",
        "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
        "--cfg",
        "fuzzing",
        "-Clink-dead-code",
        "-Zsanitizer=address",
        "-Cdebug-assertions",
        "-Coverflow-checks",
        "-Ccodegen-units=1",
        // The front's cdylib is built too (a dependency's crate types all are) and lld notes
        // each symbol its version script names again; the targets link its rlib.
        "-Alinker-messages",
    ]
    .join(" ");
    if let Ok(more) = std::env::var("RUSTFLAGS") {
        flags.push(' ');
        flags.push_str(&more);
    }
    flags
}

/// Builds `targets` (all when empty) and returns the directory of their binaries.
pub fn build(targets: &[String]) -> Result<PathBuf> {
    if util::which("rustup").is_none() {
        bail!(
            "rustup is not on PATH; `cargo xtask fuzz` builds with `rustup run {} cargo`",
            toolchain()
        );
    }
    let toolchain = toolchain();
    let mut cmd = Cmd::new("rustup");
    cmd.in_root()
        .args(["run", &toolchain, "cargo", "build", "--manifest-path"])
        .arg(fuzz_dir().join("Cargo.toml"))
        .args([
            "--target",
            TRIPLE,
            "--release",
            "--config",
            "profile.release.debug=\"line-tables-only\"",
            "--target-dir",
        ])
        .arg(work_dir());
    if targets.is_empty() {
        cmd.arg("--bins");
    }
    for t in targets {
        cmd.args(["--bin", t]);
    }
    // libfuzzer-sys compiles libFuzzer (C++) with `c++`; a machine with only LLVM 22 has clang++-22.
    if std::env::var_os("CXX").is_none()
        && util::which("c++").is_none()
        && util::which("clang++-22").is_some()
    {
        cmd.env("CXX", "clang++-22");
    }
    // Ours, not what the `cargo xtask` that started us was given.
    cmd.env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO")
        .env("RUSTFLAGS", rustflags())
        .env("CARGO_FUZZ", "1")
        .hint(format!(
            "the fuzz targets did not build with toolchain `{toolchain}` (`cargo xtask setup` installs it; RUSTOMP_FUZZ_TOOLCHAIN picks another)"
        ))
        .run()?;
    Ok(bin_dir())
}

/// How one target's run ended.
pub struct Outcome {
    pub target: String,
    pub executions: u64,
    pub exec_per_sec: u64,
    pub new_units: u64,
    pub wall: Duration,
    /// Why it failed, and the input that did it (when libFuzzer wrote one).
    pub crash: Option<(String, Option<PathBuf>)>,
    pub log: PathBuf,
}

/// The value after `key` on a line of libFuzzer's final statistics.
fn stat(log: &str, key: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

/// The execution count of libFuzzer's last progress line (`#1234\tNEW ...`), for a run that
/// ended before its final statistics.
fn last_progress(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        let rest = l.strip_prefix('#')?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    })
}

/// Whether the log holds a report of libFuzzer, a sanitizer or a panic.
fn reported(log: &str) -> bool {
    log.lines().any(|l| {
        l.contains("ERROR: libFuzzer:")
            || l.contains("ERROR: AddressSanitizer")
            || l.contains("ERROR: LeakSanitizer")
            || l.contains("panicked at")
    })
}

/// What went wrong, in one line: the panic message, the sanitizer's or libFuzzer's report.
fn crash_reason(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    if let Some(i) = lines.iter().position(|l| l.contains("panicked at")) {
        let place = lines[i].trim();
        let message = lines.get(i + 1).map(|l| l.trim()).unwrap_or_default();
        return format!("{place} {message}");
    }
    for marker in [
        "ERROR: AddressSanitizer",
        "ERROR: LeakSanitizer",
        "ERROR: libFuzzer",
        "SUMMARY:",
    ] {
        if let Some(at) = lines.iter().find_map(|l| l.find(marker).map(|i| &l[i..])) {
            return at.trim().to_string();
        }
    }
    "see the log".into()
}

/// Runs one built target for `seconds` (and/or `runs` executions).
pub fn run_target(
    bins: &Path,
    target: &str,
    seconds: Option<u64>,
    runs: Option<u64>,
) -> Result<Outcome> {
    let bin = bins.join(target);
    if !bin.is_file() {
        bail!("{} was not built", util::show(&bin));
    }
    let work = work_dir();
    let corpus = work.join("corpus").join(target);
    let artifacts = work.join("artifacts").join(target);
    let log_path = work.join("logs").join(format!("{target}.log"));
    for d in [&corpus, &artifacts, &work.join("logs")] {
        util::mkdirs(d)?;
    }
    let log =
        File::create(&log_path).context(|| format!("cannot create {}", log_path.display()))?;
    let mut cmd = Command::new(&bin);
    cmd.arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-timeout={INPUT_TIMEOUT_S}"))
        .arg("-print_final_stats=1");
    if let Some(s) = seconds {
        cmd.arg(format!("-max_total_time={s}"));
    }
    if let Some(n) = runs {
        cmd.arg(format!("-runs={n}"));
    }
    // New inputs go to the first directory; the seeds are only read.
    cmd.arg(&corpus);
    let seeds = seeds::seed_dir(target);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    let mut asan = std::env::var("ASAN_OPTIONS").unwrap_or_default();
    if !asan.is_empty() {
        asan.push(':');
    }
    asan.push_str("detect_odr_violation=0");
    let suppressions = fuzz_dir().join("lsan.supp");
    if suppressions.is_file() {
        let mut lsan = std::env::var("LSAN_OPTIONS").unwrap_or_default();
        if !lsan.is_empty() {
            lsan.push(':');
        }
        lsan.push_str(&format!(
            "suppressions={}:print_suppressions=0",
            suppressions.display()
        ));
        cmd.env("LSAN_OPTIONS", lsan);
    }
    cmd.env("ASAN_OPTIONS", asan)
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    if util::verbose() {
        eprintln!("+ {cmd:?}");
    }
    let limit = seconds.map_or(Duration::MAX, |s| Duration::from_secs(s) + GRACE);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .context(|| format!("cannot start {}", bin.display()))?;
    let status = util::wait_or_kill_group(&mut child, limit)?;
    let wall = start.elapsed();
    let text = String::from_utf8_lossy(&std::fs::read(&log_path).unwrap_or_default()).into_owned();
    let executions = stat(&text, "stat::number_of_executed_units:")
        .or_else(|| last_progress(&text))
        .unwrap_or(0);
    let exec_per_sec = stat(&text, "stat::average_exec_per_sec:")
        .unwrap_or_else(|| executions / wall.as_secs().max(1));
    let new_units = stat(&text, "stat::new_units_added:").unwrap_or(0);
    let written = text.lines().rev().find_map(|l| {
        let path = l.split("Test unit written to ").nth(1)?.trim();
        Some(work.join(path))
    });
    let crash = match status {
        None => Some((
            format!("still running {} s past its time; ended", GRACE.as_secs()),
            written,
        )),
        // libFuzzer's memory watchdog may report while the process exits 0 at its time limit.
        Some(s) if !s.success() || written.is_some() || reported(&text) => Some((
            format!("{} ({})", crash_reason(&text), util::describe(s)),
            written,
        )),
        Some(_) => None,
    };
    Ok(Outcome {
        target: target.into(),
        executions,
        exec_per_sec,
        new_units,
        wall,
        crash,
        log: log_path,
    })
}

fn report(o: &Outcome) {
    let verdict = match &o.crash {
        None => "no crash".to_string(),
        Some((why, file)) => {
            let file = file
                .as_ref()
                .map_or("no input written".into(), |f| util::show(f));
            format!(
                "CRASH: {why}\n    input: {file}\n    log:   {}",
                util::show(&o.log)
            )
        }
    };
    println!(
        "{}: {} executions in {:.0} s ({}/s), {} new corpus inputs, {verdict}",
        o.target,
        o.executions,
        o.wall.as_secs_f64(),
        o.exec_per_sec,
        o.new_units
    );
    if let Some((_, Some(file))) = &o.crash {
        println!(
            "    reproduce: {} {}",
            util::show(&bin_dir().join(&o.target)),
            util::show(file)
        );
    }
}

/// The chosen targets, each checked against `fuzz/fuzz_targets`.
fn select(names: &[String]) -> Result<Vec<String>> {
    let all = targets();
    if all.is_empty() {
        bail!(
            "no fuzz targets in {}",
            util::show(&fuzz_dir().join("fuzz_targets"))
        );
    }
    for n in names {
        if !all.contains(n) {
            bail!("no fuzz target `{n}` (there are: {})", all.join(", "));
        }
    }
    Ok(if names.is_empty() {
        all
    } else {
        names.to_vec()
    })
}

/// Builds and runs targets one after another; returns their outcomes.
fn fuzz(targets: &[String], seconds: Option<u64>, runs: Option<u64>) -> Result<Vec<Outcome>> {
    let start = Instant::now();
    let bins = build(if targets.len() == self::targets().len() {
        &[]
    } else {
        targets
    })?;
    println!(
        "fuzz: targets built in {:.0} s",
        start.elapsed().as_secs_f64()
    );
    let mut outcomes = Vec::new();
    for t in targets {
        let o = run_target(&bins, t, seconds, runs)?;
        report(&o);
        outcomes.push(o);
    }
    Ok(outcomes)
}

pub fn run(o: &Options) -> Result<i32> {
    if o.remake_corpus {
        return seeds::remake().map(|()| 0);
    }
    let targets = select(&o.targets)?;
    let seconds = match (o.seconds, o.runs) {
        (Some(0), _) => bail!("--time takes at least 1 second"),
        (None, None) => Some(DEFAULT_SECONDS),
        (s, _) => s,
    };
    let outcomes = fuzz(&targets, seconds, o.runs)?;
    let crashed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crash.is_some())
        .map(|o| o.target.as_str())
        .collect();
    let total: u64 = outcomes.iter().map(|o| o.executions).sum();
    if crashed.is_empty() {
        println!("fuzz: {total} executions, no crash");
        Ok(0)
    } else {
        println!("fuzz: {total} executions; CRASHED: {}", crashed.join(", "));
        Ok(1)
    }
}

/// `cargo xtask test`'s step: every target for [`SMOKE_SECONDS`]; `Err` names the ones that
/// crashed.
pub fn smoke() -> Result<()> {
    let targets = select(&[])?;
    let outcomes = fuzz(&targets, Some(SMOKE_SECONDS), None)?;
    let crashed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crash.is_some())
        .map(|o| o.target.as_str())
        .collect();
    if !crashed.is_empty() {
        bail!(
            "fuzz targets crashed: {} (inputs under target/fuzz/artifacts)",
            crashed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_output() {
        let log = "#2\tINITED cov: 5 ft: 5 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #1024\tNEW    cov: 9 ft: 9 corp: 2/3b lim: 4 exec/s: 512 rss: 31Mb\n\
                   thread '<unnamed>' panicked at fuzz_targets/x.rs:3:5:\n\
                   boom\n\
                   ==1== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='/t/'; Test unit written to /t/crash-abc\n";
        assert_eq!(last_progress(log), Some(1024));
        assert_eq!(stat(log, "stat::number_of_executed_units:"), None);
        assert_eq!(
            crash_reason(log),
            "thread '<unnamed>' panicked at fuzz_targets/x.rs:3:5: boom"
        );
        let stats = "stat::number_of_executed_units: 2048\nstat::average_exec_per_sec:     99\n";
        assert_eq!(stat(stats, "stat::number_of_executed_units:"), Some(2048));
        assert_eq!(stat(stats, "stat::average_exec_per_sec:"), Some(99));
        assert_eq!(
            crash_reason("==7==ERROR: AddressSanitizer: heap-buffer-overflow on x"),
            "ERROR: AddressSanitizer: heap-buffer-overflow on x"
        );
        let late = "Done 4049111 runs in 721 second(s)\n==1== ERROR: libFuzzer: out-of-memory (used: 2053Mb; limit: 2048Mb)\n";
        assert!(reported(late) && reported(log) && !reported(stats));
        assert_eq!(
            crash_reason(late),
            "ERROR: libFuzzer: out-of-memory (used: 2053Mb; limit: 2048Mb)"
        );
    }

    #[test]
    fn finds_the_toolchain_by_name() {
        let list = "stable-x86_64-unknown-linux-gnu (default)\nnightly-2026-05-19-x86_64-unknown-linux-gnu\n1.95.0-x86_64-unknown-linux-gnu (active)\n";
        assert!(!lists_toolchain(list, "nightly"));
        assert!(lists_toolchain(list, "nightly-2026-05-19"));
        assert!(lists_toolchain(list, "1.95.0"));
        assert!(lists_toolchain(
            "nightly-x86_64-unknown-linux-gnu\n",
            "nightly"
        ));
    }

    #[test]
    fn every_target_has_seeds() {
        for t in targets() {
            let seeds = util::files_matching(&seeds::seed_dir(&t), "", "");
            assert!(!seeds.is_empty(), "fuzz/corpus/{t} has no seeds");
        }
    }
}
