//! The GPU suite on the virtual GPU: each program compiled for sm_90 also carries its device
//! code retargeted to the host (`crate::vgpu`), and runs here with `RUSTOMP_VGPU=1`, its
//! results checked as on a GPU. This is where clang's real device code and our device runtime
//! meet every day without a GPU.

use crate::test::programs::{
    known_failures, ours_verdict, parse_header, run_program, runnable_programs, stem,
    with_expected_output, with_output_in_order, Outcome, Scope, JOBS, TIMEOUT,
};

/// The virtual GPU's own check programs, their binaries and logs (in the suite directory).
pub(super) const CHECKS_SOURCES: &str = "tests/vgpu-checks";
pub(super) const CHECKS_DIR: &str = "vgpu-checks";
pub(super) const CHECKS_LOGS: &str = "vgpu-checks-logs";
use crate::util::{self, at, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a program's reason for having no virtual-GPU image is kept, beside its binary.
fn missing_note(exe: &Path) -> PathBuf {
    let name = exe
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    exe.with_file_name(format!(".{name}.vgpu-missing"))
}

/// After `exe` was compiled from `src` with `args` (a `cc` command line): its virtual-GPU
/// image, embedded; the reason when it cannot be, kept for the run. Returns whether it was.
pub(super) fn build_image(src: &Path, args: &[String], exe: &Path) -> bool {
    let note = missing_note(exe);
    let _ = std::fs::remove_file(&note);
    let why = match crate::vgpu_build::program_build(args) {
        None => Some("its build is not one that links an nvptx or amdgcn program".to_string()),
        Some(build) => {
            let cxx = crate::test::programs::is_cxx(src);
            crate::vgpu_build::build_for_program(cxx, &build)
                .err()
                .map(|e| e.0)
        }
    };
    match why {
        Some(why) => {
            let _ = std::fs::write(&note, why);
            false
        }
        None => true,
    }
}

/// Runs every program of the suite that is not host-only on the virtual GPU; returns whether
/// each passed or is a known failure. Writes `vgpu-results.tsv` (name, verdict, seconds).
pub fn run_suite(dir: &Path, arch: &str) -> Result<bool> {
    let scope = match crate::vgpu::Family::of_archs(arch) {
        Some(crate::vgpu::Family::Nvptx) => Scope::VirtualGpu,
        Some(crate::vgpu::Family::Amdgcn) => Scope::VirtualAmdgcn,
        None => {
            println!("virtual GPU: runs nvptx and wave64 amdgcn (gfx9) programs; {arch} skipped");
            return Ok(true);
        }
    };
    let started = Instant::now();
    let programs = runnable_programs(dir);
    let known = known_failures(&at("tests/programs/KNOWN_FAILURES"), scope);
    let logs = dir.join("vgpu-logs");
    util::mkdirs(&logs)?;
    let outcomes = util::parallel(&programs, JOBS, |program| {
        let (name, header) = (&program.name, &program.header);
        let exe = dir.join("bin").join(name);
        let log = logs.join(format!("{name}.log"));
        if let Ok(why) = std::fs::read_to_string(missing_note(&exe)) {
            return ((false, format!("FAIL (no virtual-GPU image: {why})")), 0.0);
        }
        let mut env = environment(dir, &header.env);
        if !header.vgpu_race.is_empty() {
            // The compiler's hazard is reported, and the program's own checks still run.
            env.push(("RUSTOMP_VGPU_RACECHECK".into(), "warn".into()));
        }
        let start = Instant::now();
        let outcome = run_program(&exe, &env, &log);
        let seconds = start.elapsed().as_secs_f64();
        let mut expected = header.expect_stderr.clone();
        expected.extend(header.expect_stderr_both.iter().cloned());
        expected.extend(header.vgpu_race.iter().map(|t| format!("racecheck: {t}")));
        let verdict = with_output_in_order(
            with_expected_output(ours_verdict(&outcome, header), &expected, &log),
            &header.expect_order,
            &log,
        );
        let verdict = match (&outcome, verdict) {
            (Outcome::Exit(_) | Outcome::Signal(_), (false, text)) => {
                let last = last_message(&log);
                (
                    false,
                    if last.is_empty() {
                        text
                    } else {
                        format!("{text}: {last}")
                    },
                )
            }
            (_, v) => v,
        };
        (verdict, seconds)
    });
    let mut table = String::new();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut report = Vec::new();
    for (program, ((ok, text), seconds)) in programs.iter().zip(&outcomes) {
        let name = &program.name;
        let known = known.iter().find(|(k, _)| *k == program.file_name);
        let shown = match (known, ok) {
            (Some((_, why)), false) => {
                skipped += 1;
                format!("known: {why}")
            }
            (Some(_), true) => {
                passed += 1;
                report.push(format!(
                    "{name}: passes now; remove its line from KNOWN_FAILURES"
                ));
                text.clone()
            }
            (None, true) => {
                passed += 1;
                text.clone()
            }
            (None, false) => {
                failed += 1;
                report.push(format!("{name}: {text}"));
                text.clone()
            }
        };
        table.push_str(&format!(
            "{name}\t{}\t{seconds:.2}\n",
            shown.replace(['\t', '\n'], " ")
        ));
    }
    util::write(&dir.join("vgpu-results.tsv"), &table)?;
    println!(
        "virtual GPU ({arch} device code on the host): {} programs in {:.0} s; results in {}",
        programs.len(),
        started.elapsed().as_secs_f64(),
        util::show(&dir.join("vgpu-results.tsv"))
    );
    for line in &report {
        println!("    {line}");
    }
    println!("virtual GPU: {passed} passed, {failed} failed, {skipped} skipped");
    Ok(failed == 0)
}

/// A program's environment (its header's `ENV:` lines) for a run on the virtual GPU of the
/// suite in `dir`.
fn environment(dir: &Path, header_env: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = header_env.to_vec();
    env.push(("RUSTOMP_VGPU".into(), "1".into()));
    env.push((
        "LD_LIBRARY_PATH".into(),
        dir.join("lib").display().to_string(),
    ));
    // A hang is reported by the virtual GPU itself, 2 s before the runner's limit (63 on
    // gfx90a, wavefronts of 64 meeting in each of its critical sections' loops, takes 10-11 s
    // on a busy 2-core machine).
    env.push((
        "RUSTOMP_VGPU_WATCHDOG".into(),
        TIMEOUT.as_secs().saturating_sub(2).max(1).to_string(),
    ));
    env
}

/// The virtual GPU's own checks, `tests/vgpu-checks`: programs with a planted fault that only
/// the virtual GPU can name (a race and an out-of-bounds access in team memory, a call through
/// a host pointer, a barrier in divergent code), each compiled for `arch` as the suite's are and
/// run here with its header's expectations (the report's words), and a negative control that
/// must run clean. They are not GPU-suite programs: on a GPU their faults are undefined.
/// `compiled`: each program's source and why it did not compile, if it did not (into
/// `dir/vgpu-checks`, by the suite's compile).
pub(super) fn run_checks(
    dir: &Path,
    arch: &str,
    compiled: &[(PathBuf, Option<String>)],
) -> Result<bool> {
    let bin = dir.join(CHECKS_DIR);
    let logs = dir.join(CHECKS_LOGS);
    let outcomes = util::parallel(compiled, JOBS, |(src, _)| {
        let name = stem(src);
        let header = parse_header(&std::fs::read_to_string(src).unwrap_or_default());
        let exe = bin.join(&name);
        let log = logs.join(format!("{name}.run.log"));
        if let Ok(why) = std::fs::read_to_string(missing_note(&exe)) {
            return (false, format!("no virtual-GPU image: {why}"));
        }
        let mut env = environment(dir, &header.env);
        env.push(("OMP_TARGET_OFFLOAD".into(), "mandatory".into()));
        let outcome = run_program(&exe, &env, &log);
        with_expected_output(ours_verdict(&outcome, &header), &header.expect_stderr, &log)
    });
    let mut ok = true;
    println!(
        "virtual GPU checks, {arch} ({} programs with planted faults and a control):",
        compiled.len()
    );
    for ((src, failure), (passed, text)) in compiled.iter().zip(&outcomes) {
        let name = stem(src);
        let (passed, text) = match failure {
            Some(why) => (false, format!("did not compile: {why}")),
            None => (*passed, text.clone()),
        };
        ok &= passed;
        println!("    {name}: {text}");
    }
    Ok(ok)
}

/// The last line of a failed run's output that says something (the runtime's or the virtual
/// GPU's message), for the summary.
fn last_message(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| l.contains("rustomp") || l.contains("omptarget") || l.contains("error"))
        .map(|l| l.trim().chars().take(200).collect())
        .unwrap_or_default()
}
