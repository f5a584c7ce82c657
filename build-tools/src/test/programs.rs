//! The corpus's conventions and how one program is built and run, shared by every suite (the
//! CPU corpus, the GPU suite, the Fortran and indirect-call checks): the header lines of
//! `tests/programs/README.md`, `KNOWN_FAILURES`, compiling with our runtime or LLVM's, running
//! with a time limit, and the verdicts.

use crate::cc::{self, Runtime};
use crate::util::{self, Cmd};
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Parallel compile jobs (the machines have 2 cores).
pub(super) const JOBS: usize = 2;

/// Per-program run time limit.
pub(super) const TIMEOUT: Duration = Duration::from_secs(20);

/// `*.c`, `*.cpp` and `*.f90` in `dir`, sorted.
pub(super) fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = util::files_matching(dir, "", ".c");
    v.extend(util::files_matching(dir, "", ".cpp"));
    v.extend(util::files_matching(dir, "", ".f90"));
    v.sort();
    v
}

pub(super) fn is_cxx(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e == "cpp" || e == "cc" || e == "cxx")
}

pub(super) fn stem(p: &Path) -> String {
    p.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Runs a compile, writing its output to `log`. Ok(()) or Err(one-line reason).
pub(super) fn compile(
    cxx: bool,
    runtime: Runtime,
    args: &[String],
    log: &Path,
) -> std::result::Result<(), String> {
    run_compile(cc::command(cxx, runtime, args), false, log)
}

/// `compile` for a program of the corpus: Fortran with `cargo xtask fc`'s flang-22 command,
/// whose log ends with what a failed device link could not resolve; C and C++ as above.
/// flang writes the `.mod` files of a program's modules to the working directory unless told
/// otherwise: each compile gets its own directory beside its log (the same program is built
/// for both runtimes at once).
pub(super) fn compile_source(
    src: &Path,
    runtime: Runtime,
    args: &[String],
    log: &Path,
) -> std::result::Result<(), String> {
    if crate::fc::is_fortran(src) {
        let modules = log.with_extension("modules");
        util::mkdirs(&modules).map_err(|e| e.to_string())?;
        let mut args = args.to_vec();
        args.extend(["-module-dir".to_string(), modules.display().to_string()]);
        run_compile(crate::fc::command(runtime, &args), true, log)
    } else {
        compile(is_cxx(src), runtime, args, log)
    }
}

pub(super) fn run_compile(
    mut cmd: Cmd,
    fortran: bool,
    log: &Path,
) -> std::result::Result<(), String> {
    let line = cmd.display();
    match cmd.output_raw() {
        Ok(out) => {
            let mut text = format!("$ {line}\n");
            text.push_str(&String::from_utf8_lossy(&out.stdout));
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            if !out.status.success() && fortran {
                for refusal in crate::fc::refusal(&crate::fc::undefined_device_symbols(&text)) {
                    text.push_str(&format!("rustomp: {refusal}\n"));
                }
            }
            let _ = util::write(log, &text);
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("compile failed, see {}", util::show(log)))
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Undefined symbols a failed device link reports (nvlink and ld.lld wording).
pub(super) fn link_undefined(log: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Undefined reference to '").nth(1) {
            if let Some(sym) = rest.split('\'').next() {
                out.insert(sym.to_string());
            }
        } else if let Some(rest) = line.split("undefined symbol: ").nth(1) {
            out.insert(rest.trim().to_string());
        }
    }
    out
}

/// What a program's header asks for.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Header {
    /// `// EXPECT: fail`: must exit non-zero (no timeout, no signal).
    pub(super) expect_fail: bool,
    /// `// EXPECT: abort`: an expected failure that may end with SIGABRT (a failed `assert` in
    /// a host-offload image is glibc's: it aborts the process).
    pub(super) expect_abort: bool,
    /// `// ENV: NAME=value`
    pub(super) env: Vec<(String, String)>,
    /// `// CFLAGS: flags`: extra compiler flags.
    pub(super) cflags: Vec<String>,
    /// `// LLVM-REF: fails (reason)`: LLVM's library is known to fail this one.
    pub(super) llvm_ref_fails: Option<String>,
    /// `// EXPECT-STDERR: text`: our runtime's output must contain `text` (one per line; for our
    /// own messages, which LLVM does not print).
    pub(super) expect_stderr: Vec<String>,
    /// `// EXPECT-STDERR-BOTH: text`: both runtimes' output must contain `text` (LLVM's
    /// wording, which ours repeats exactly).
    pub(super) expect_stderr_both: Vec<String>,
    /// `// EXPECT-STDERR-HOST: text`: our CPU plugin's output must contain `text` (its own
    /// reports, as its leak check's, which no GPU plugin prints): checked by the CPU corpus only.
    pub(super) expect_stderr_host: Vec<String>,
    /// `// EXPECT-ORDER: text`: our runtime's output (stdout and stderr, into one file, so not
    /// a terminal) must contain these lines' texts in this order (one per line).
    pub(super) expect_order: Vec<String>,
    /// `// SOURCES: units/x.c ...`: more translation units, relative to the program's directory.
    pub(super) sources: Vec<String>,
    /// `// SHARED: units/x.c ...`: shared libraries the program links, one per file (relative
    /// to the program's directory), each compiled with its own offload image.
    pub(super) shared: Vec<String>,
    /// `// HOST-ONLY: why`: meaningful on the CPU plugin only (its fault injection, its leak
    /// check); the GPU suite lists it as skipped instead of running it.
    pub(super) host_only: Option<String>,
    /// `// VGPU-RACE: text`: the virtual GPU's racecheck reports a hazard in code the compiler
    /// generates (the comment above the line says which and why): on the virtual GPU the
    /// program runs with `RUSTOMP_VGPU_RACECHECK=warn`, and its output must contain `text`.
    pub(super) vgpu_race: Vec<String>,
}

impl Header {
    /// The program's own file followed by its extra translation units.
    pub(super) fn source_args(&self, src: &Path) -> Vec<String> {
        let dir = src.parent().unwrap_or(Path::new("."));
        std::iter::once(src.display().to_string())
            .chain(
                self.sources
                    .iter()
                    .map(|s| dir.join(s).display().to_string()),
            )
            .collect()
    }

    /// The sources of the program's shared libraries (`// SHARED:`).
    pub(super) fn shared_sources(&self, src: &Path) -> Vec<PathBuf> {
        let dir = src.parent().unwrap_or(Path::new("."));
        self.shared.iter().map(|s| dir.join(s)).collect()
    }

    /// Where the shared library built from `lib` goes for the executable `exe`: beside it, named
    /// after both (`188_x.188_lib.so`), so each build of the program (ours, LLVM's, the GPU
    /// suite's) has its own.
    pub(super) fn shared_library_path(exe: &Path, lib: &Path) -> PathBuf {
        let name = format!("{}.{}.so", stem(exe), stem(lib));
        exe.with_file_name(name)
    }
}

/// Builds the program's shared libraries (`// SHARED:`) beside `exe` with the program's own
/// offload flags (`offload_args`: the target and `CFLAGS`), each with its own offload image,
/// and returns the link arguments that make the program use them: each library, and an rpath
/// to the executable's directory, where the loader finds them at run time. Logs beside `log`.
/// `built(source, args, library)` runs after each library's compile (the GPU suite adds its
/// virtual-GPU image there).
pub(super) fn build_shared_libraries(
    header: &Header,
    src: &Path,
    exe: &Path,
    runtime: Runtime,
    offload_args: &[String],
    log: &Path,
    built: impl Fn(&Path, &[String], &Path),
) -> std::result::Result<Vec<String>, String> {
    let mut link = Vec::new();
    for lib in header.shared_sources(src) {
        let out = Header::shared_library_path(exe, &lib);
        let _ = std::fs::remove_file(&out);
        let soname = out.file_name().unwrap_or_default().to_string_lossy();
        let mut args = vec!["-O2".to_string()];
        args.extend(offload_args.iter().cloned());
        args.extend([
            "-fPIC".to_string(),
            "-shared".to_string(),
            format!("-Wl,-soname,{soname}"),
            lib.display().to_string(),
            "-o".to_string(),
            out.display().to_string(),
        ]);
        let lib_log = log.with_extension(format!("{}.log", stem(&lib)));
        compile(is_cxx(&lib), runtime, &args, &lib_log)
            .map_err(|e| format!("shared library {}: {e}", lib.display()))?;
        built(&lib, &args, &out);
        link.push(out.display().to_string());
    }
    if !link.is_empty() {
        link.push("-Wl,-rpath,$ORIGIN".to_string());
    }
    Ok(link)
}

pub(super) fn parse_header(text: &str) -> Header {
    let mut h = Header::default();
    for line in text.lines() {
        // `// ...` in C and C++, `! ...` in Fortran.
        let Some(comment) = line
            .trim()
            .strip_prefix("//")
            .or_else(|| line.trim().strip_prefix('!'))
        else {
            continue;
        };
        let comment = comment.trim();
        if let Some(v) = comment.strip_prefix("EXPECT:") {
            let v = v.trim();
            h.expect_fail |= v.eq_ignore_ascii_case("fail") || v.eq_ignore_ascii_case("abort");
            h.expect_abort |= v.eq_ignore_ascii_case("abort");
        } else if let Some(v) = comment.strip_prefix("ENV:") {
            if let Some((k, val)) = v.trim().split_once('=') {
                h.env.push((k.trim().to_string(), val.trim().to_string()));
            }
        } else if let Some(v) = comment.strip_prefix("CFLAGS:") {
            h.cflags.extend(v.split_whitespace().map(str::to_string));
        } else if let Some(v) = comment.strip_prefix("LLVM-REF:") {
            h.llvm_ref_fails = Some(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("EXPECT-STDERR-BOTH:") {
            h.expect_stderr_both.push(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("EXPECT-STDERR-HOST:") {
            h.expect_stderr_host.push(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("EXPECT-ORDER:") {
            h.expect_order.push(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("EXPECT-STDERR:") {
            h.expect_stderr.push(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("SOURCES:") {
            h.sources.extend(v.split_whitespace().map(str::to_string));
        } else if let Some(v) = comment.strip_prefix("SHARED:") {
            h.shared.extend(v.split_whitespace().map(str::to_string));
        } else if let Some(v) = comment.strip_prefix("HOST-ONLY:") {
            h.host_only = Some(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("VGPU-RACE:") {
            h.vgpu_race.push(v.trim().to_string());
        }
    }
    h
}

/// `name reason…` per line; `#` starts a comment.
/// Where a line of `tests/programs/KNOWN_FAILURES` applies: `gpu: NAME why` to the GPU suite
/// only, `host: NAME why` to the CPU corpus only, a plain `NAME why` to both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    Host,
    Gpu,
    /// The virtual GPU: its own `vgpu:` lines (not the `gpu:` ones, which name what a real
    /// GPU lacks, as pageable memory access).
    VirtualGpu,
    /// The virtual GPU running amdgcn device code: its `vgpu-amdgcn:` lines.
    VirtualAmdgcn,
}

/// The programs documented as failing where `scope` runs them: (name, why).
pub(super) fn known_failures(path: &std::path::Path, scope: Scope) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (applies, l) = if let Some(rest) = l.strip_prefix("gpu:") {
                (scope == Scope::Gpu, rest.trim())
            } else if let Some(rest) = l.strip_prefix("vgpu-amdgcn:") {
                (scope == Scope::VirtualAmdgcn, rest.trim())
            } else if let Some(rest) = l.strip_prefix("vgpu:") {
                (scope == Scope::VirtualGpu, rest.trim())
            } else if let Some(rest) = l.strip_prefix("host:") {
                (scope == Scope::Host, rest.trim())
            } else {
                (true, l)
            };
            let (name, why) = l
                .split_once(char::is_whitespace)
                .unwrap_or((l, "no reason given"));
            applies.then(|| (name.to_string(), why.trim().to_string()))
        })
        .collect()
}

#[derive(Clone, Debug)]
pub(super) enum Outcome {
    Exit(i32),
    Signal(i32),
    Timeout,
    CompileFailed,
    NotRun(String),
}

/// (passed, what to show)
pub(super) type Verdict = (bool, String);

pub(super) fn verdict(o: &Outcome, expect_fail: bool) -> Verdict {
    match (o, expect_fail) {
        (Outcome::Exit(0), false) => (true, "ok".into()),
        (Outcome::Exit(0), true) => (false, "FAIL (exit 0, expected failure)".into()),
        (Outcome::Exit(c), true) => (true, format!("ok (exit {c}, expected)")),
        (Outcome::Exit(c), false) => (false, format!("FAIL (exit {c})")),
        (Outcome::Signal(s), _) => (false, format!("FAIL (signal {s})")),
        (Outcome::Timeout, _) => (false, format!("FAIL (timeout {}s)", TIMEOUT.as_secs())),
        (Outcome::CompileFailed, _) => (false, "FAIL (compile)".into()),
        (Outcome::NotRun(e), _) => (false, format!("FAIL ({e})")),
    }
}

/// Our column: an expected failure may end in SIGABRT (how both runtimes stop on a fatal
/// offload error, and glibc on a failed `assert`).
pub(super) fn ours_verdict(o: &Outcome, h: &Header) -> Verdict {
    match (o, h.expect_fail || h.expect_abort) {
        (Outcome::Signal(6), true) => (true, "ok (SIGABRT, expected)".into()),
        _ => verdict(o, h.expect_fail),
    }
}

/// The LLVM column: as ours, and a failure the program documents with `// LLVM-REF:` says so.
pub(super) fn llvm_verdict(o: &Outcome, h: &Header) -> Verdict {
    if let (Outcome::Signal(6), true) = (o, h.expect_fail || h.expect_abort) {
        return (true, "ok (abort, expected)".into());
    }
    let (ok, text) = verdict(o, h.expect_fail);
    match (&h.llvm_ref_fails, ok) {
        (Some(_), false) => (false, format!("{text}, documented (LLVM-REF)")),
        _ => (ok, text),
    }
}

/// A passing run whose output lacks an `EXPECT-STDERR` text fails: the message is part of the test.
pub(super) fn with_expected_output(v: Verdict, expected: &[String], log: &Path) -> Verdict {
    if !v.0 || expected.is_empty() {
        return v;
    }
    let output = std::fs::read_to_string(log).unwrap_or_default();
    match expected.iter().find(|text| !output.contains(text.as_str())) {
        Some(missing) => (false, format!("FAIL (output lacks {missing:?})")),
        None => v,
    }
}

/// `v`, unless the output in `log` lacks one of `in_order` after the one before it.
pub(super) fn with_output_in_order(v: Verdict, in_order: &[String], log: &Path) -> Verdict {
    if !v.0 || in_order.is_empty() {
        return v;
    }
    let output = std::fs::read_to_string(log).unwrap_or_default();
    match first_out_of_order(&output, in_order) {
        Some(text) => (
            false,
            format!("FAIL (output lacks {text:?} after the lines before it)"),
        ),
        None => v,
    }
}

fn first_out_of_order<'a>(output: &str, in_order: &'a [String]) -> Option<&'a String> {
    let mut rest = output;
    for text in in_order {
        let Some(at) = rest.find(text.as_str()) else {
            return Some(text);
        };
        rest = &rest[at + text.len()..];
    }
    None
}

/// Runs `exe` with a time limit, its output to `log`. Kills its whole process group on timeout.
pub(super) fn run_program(exe: &Path, env: &[(String, String)], log: &Path) -> Outcome {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let out = match File::create(log) {
        Ok(f) => f,
        Err(e) => return Outcome::NotRun(format!("cannot create {}: {e}", log.display())),
    };
    let err = match out.try_clone() {
        Ok(f) => f,
        Err(e) => return Outcome::NotRun(e.to_string()),
    };
    let mut cmd = Command::new(exe);
    if !env.iter().any(|(k, _)| k == "OMP_TARGET_OFFLOAD") {
        cmd.env("OMP_TARGET_OFFLOAD", "mandatory");
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .current_dir(exe.parent().unwrap_or(Path::new(".")))
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::NotRun(format!("cannot start: {e}")),
    };
    match util::wait_or_kill_group(&mut child, TIMEOUT) {
        Ok(Some(status)) => match (status.code(), status.signal()) {
            (Some(c), _) => Outcome::Exit(c),
            (None, Some(s)) => Outcome::Signal(s),
            _ => Outcome::NotRun("unknown exit status".into()),
        },
        Ok(None) => Outcome::Timeout,
        Err(e) => Outcome::NotRun(e.to_string()),
    }
}

/// A program of the suite that runs where a GPU (real, stand-in or virtual) does: not host-only,
/// and compiled into `dir`.
pub(crate) struct SuiteProgram {
    /// The binary's name (the source's stem).
    pub name: String,
    /// The source's file name, as `KNOWN_FAILURES` names it.
    pub file_name: String,
    pub header: Header,
}

/// The programs of `tests/programs` that are not host-only and have a binary in `dir/bin`.
pub(crate) fn runnable_programs(dir: &Path) -> Vec<SuiteProgram> {
    sources(&crate::util::at("tests/programs"))
        .iter()
        .map(|src| SuiteProgram {
            name: stem(src),
            file_name: src
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            header: parse_header(&std::fs::read_to_string(src).unwrap_or_default()),
        })
        .filter(|p| p.header.host_only.is_none() && dir.join("bin").join(&p.name).exists())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_in_order() {
        let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let out = " before\n in region 5\n PASS\n";
        assert_eq!(
            first_out_of_order(out, &lines(&["before", "in region", "PASS"])),
            None
        );
        let late = " before\n PASS\n in region 5\n";
        assert_eq!(
            first_out_of_order(late, &lines(&["before", "in region", "PASS"])).map(String::as_str),
            Some("PASS")
        );
    }

    #[test]
    fn header_conventions() {
        let h = parse_header(
            "// EXPECT: fail\n// EXPECT-STDERR: device 99\n// EXPECT-STDERR-BOTH: omptarget message: x\n// ENV: OMP_TARGET_OFFLOAD=disabled\n// ENV: A = b=c\n// CFLAGS: -fopenmp-version=52 -DX\n// LLVM-REF: fails (why)\n// SOURCES: units/b.c\n// SHARED: units/l.c units/m.c\nint main(){}\n",
        );
        assert_eq!(
            h.source_args(Path::new("/p/116_x.c")),
            vec!["/p/116_x.c".to_string(), "/p/units/b.c".to_string()]
        );
        assert_eq!(
            h.cflags,
            vec!["-fopenmp-version=52".to_string(), "-DX".to_string()]
        );
        assert_eq!(
            h.shared_sources(Path::new("/p/188_x.c")),
            vec![PathBuf::from("/p/units/l.c"), PathBuf::from("/p/units/m.c")]
        );
        assert_eq!(
            Header::shared_library_path(Path::new("/t/llvm/188_x"), Path::new("/p/units/l.c")),
            PathBuf::from("/t/llvm/188_x.l.so")
        );
        assert_eq!(h.llvm_ref_fails.as_deref(), Some("fails (why)"));
        assert_eq!(h.expect_stderr, vec!["device 99".to_string()]);
        assert_eq!(
            h.expect_stderr_both,
            vec!["omptarget message: x".to_string()]
        );
        assert!(h.expect_fail);
        assert_eq!(
            h.env,
            vec![
                ("OMP_TARGET_OFFLOAD".to_string(), "disabled".to_string()),
                ("A".to_string(), "b=c".to_string())
            ]
        );
        assert_eq!(parse_header("int x; // nothing\n"), Header::default());
    }

    #[test]
    fn fortran_header_lines_are_comments_too() {
        let h = parse_header("! EXPECT: fail\n! CFLAGS: -fopenmp-version=52\n! LLVM-REF: fails (why)\nprogram p\n  !$omp target\n  !$omp end target\nend program\n");
        assert!(h.expect_fail);
        assert_eq!(h.cflags, vec!["-fopenmp-version=52".to_string()]);
        assert_eq!(h.llvm_ref_fails.as_deref(), Some("fails (why)"));
        assert!(
            sources(&crate::util::at("tests/programs"))
                .iter()
                .any(|p| crate::fc::is_fortran(p)),
            "the corpus lists .f90 programs"
        );
    }

    #[test]
    fn verdicts() {
        assert!(verdict(&Outcome::Exit(0), false).0);
        assert!(!verdict(&Outcome::Exit(0), true).0);
        assert!(verdict(&Outcome::Exit(1), true).0);
        assert!(!verdict(&Outcome::Signal(6), true).0);
        let fails = Header {
            expect_fail: true,
            ..Header::default()
        };
        assert!(
            ours_verdict(&Outcome::Signal(6), &fails).0,
            "a fatal offload error aborts"
        );
        assert!(!ours_verdict(&Outcome::Signal(6), &Header::default()).0);
        assert!(!verdict(&Outcome::Timeout, true).0);
        let h = Header {
            expect_fail: true,
            ..Header::default()
        };
        assert!(llvm_verdict(&Outcome::Signal(6), &h).0);
        assert!(!llvm_verdict(&Outcome::Signal(11), &h).0);
    }

    #[test]
    fn program_exit_status() {
        let dir = std::env::temp_dir().join(format!("xtask-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        let sh = Path::new("/bin/sh");
        // /bin/sh with no script reads stdin (null): exits 0 at once.
        assert!(matches!(run_program(sh, &[], &log), Outcome::Exit(0)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
