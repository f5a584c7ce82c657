//! `cargo xtask test [--quick] [--gpu] [--sanitize]`:
//!
//! 1. `cargo xtask clippy` (clippy `-D warnings`, host workspace and both device targets);
//! 2. `cargo test --workspace` (unit tests and host emulation tests);
//! 3. the runtime builds (`devicertl`, `host`), then the external target RTL check
//!    (`tests/plugins`, see `test/external.rs`);
//! 4. the device-symbol check: every function and external global that clang-22's device code for
//!    the ABI probes (`shared/abi-probes`) needs must be defined by our nvptx bitcode; then each
//!    probe is linked in full for sm_90 and gfx90a; then the device link checks
//!    (`test/device_link.rs`: several translation units, one runtime state per image),
//!    Fortran's runtime calls in target regions (`test/fortran.rs`), and the indirect-call pass
//!    on the device IR it emits (`test/indirect.rs`);
//! 5. the program corpus (`tests/programs`), offloaded to the host plugin, against our library and
//!    LLVM's. The last line is `N passed, N failed` for ours.
//!
//! Before 5 (unless `--quick`): a smoke run of each fuzz target (`cargo xtask fuzz`,
//! `fuzz::SMOKE_SECONDS` each), the corrupted-image experiment (`cargo xtask corrupt`, 200
//! variants: no crash, no hang) and the sanitizers (`cargo xtask test --sanitize`:
//! ThreadSanitizer and Miri).
//!
//! `--quick` stops after 4; `RUSTOMP_CORPUS_FILTER=text` limits 5 to the programs whose file
//! name contains `text`. `--gpu` compiles the corpus for a GPU (`RUSTOMP_GPU_ARCH`, default sm_90) into a directory
//! that runs anywhere a driver is (`target/gpu-suite/run.sh`), and runs it here when this machine
//! has a driver (see `test/gpu.rs`); without one it prints a skip line and succeeds.

use crate::cc::{self, Runtime};
use crate::devicertl;
use crate::host;
use crate::util::{self, at, Cmd, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub struct Options {
    pub gpu: bool,
    pub quick: bool,
    /// Only the runtime builds and the program corpus on the CPU plugin.
    pub corpus_only: bool,
}

/// Parallel compile jobs (the machines have 2 cores).
const JOBS: usize = 2;
/// Per-program run time limit.
const TIMEOUT: Duration = Duration::from_secs(20);

mod device_api;
mod device_link;
mod external;
mod fortran;
mod gpu;
mod indirect;

pub fn run(o: Options) -> Result<i32> {
    if o.gpu {
        return gpu::run();
    }
    if o.corpus_only {
        util::step("test --corpus: runtime builds (devicertl, host), then the program corpus");
        devicertl::run(false)?;
        host::run()?;
        let summary = corpus(&Suite::host())?;
        println!("{} passed, {} failed, {} skipped", summary.passed, summary.failed, summary.skipped);
        return Ok(i32::from(summary.failed > 0));
    }
    let mut failed_steps = Vec::new();

    util::step("test 1/5: clippy -D warnings (host workspace; devicertl for nvptx64, amdgcn)");
    if let Err(e) = crate::clippy::run() {
        println!("clippy: {e}");
        failed_steps.push("clippy".to_string());
    }

    util::step("test 2/5: cargo test --workspace");
    let status = Cmd::new(util::cargo())
        .in_root()
        .args(["test", "--workspace"])
        .status()?;
    if !status.success() {
        failed_steps.push("cargo test --workspace".to_string());
    }

    util::step("test 3/5: runtime builds (devicertl, host)");
    devicertl::run(false)?;
    host::run()?;
    // Target RTLs found by naming convention (tests/plugins), against the library just built.
    if let Err(e) = external::run() {
        println!("external RTLs: {e}");
        failed_steps.push("external RTL discovery".to_string());
    }

    util::step("test 4/5: device symbols of the ABI probes");
    // Every device symbol clang-22 references for the probes must come from our bitcode, and
    // every probe must link for sm_90 (ptxas + nvlink) and gfx90a.
    if let Err(e) = probes() {
        println!("probes: {e}");
        failed_steps.push("ABI probe check".to_string());
    }
    // Every function of LLVM's device runtime, in both bitcodes.
    if let Err(e) = device_api::run() {
        println!("device API: {e}");
        failed_steps.push("device API check".to_string());
    }
    // Multi-unit programs and one runtime state per image (GPU-only faults, seen in the links).
    if let Err(e) = devicertl::team_shared_bytes().and_then(device_link::run) {
        println!("device links: {e}");
        failed_steps.push("device link checks".to_string());
    }
    // Fortran: flang's runtime calls in a target region run on the CPU plugin, are refused
    // by name for GPUs.
    if let Err(e) = fortran::run() {
        println!("fortran: {e}");
        failed_steps.push("Fortran device-runtime checks".to_string());
    }
    // Calls through host function pointers in device code (the pass plugin, issue 25).
    if let Err(e) = indirect::run() {
        println!("indirect calls: {e}");
        failed_steps.push("indirect-call checks".to_string());
    }

    let mut code = 0;
    if !o.quick {
        util::step("test: fuzz smoke run (fuzz/, each target for a few seconds)");
        if let Err(e) = crate::fuzz::smoke() {
            println!("fuzz: {e}");
            failed_steps.push("fuzz smoke run".to_string());
        }
        util::step("test: corrupted device images (cargo xtask corrupt, 200 variants)");
        match crate::corrupt::run(&crate::corrupt::Options { variants: 200, seed: 0x5eed, llvm: false }) {
            Ok(tally) if tally.bad() == 0 => {}
            Ok(tally) => failed_steps.push(format!("corrupted images: {} crashed or hung", tally.bad())),
            Err(e) => {
                println!("corrupt: {e}");
                failed_steps.push("corrupted images".to_string());
            }
        }
        util::step("test: sanitizers (cargo xtask test --sanitize: ThreadSanitizer, Miri)");
        match crate::sanitize::run() {
            Ok(0) => {}
            Ok(_) => failed_steps.push("sanitizers".to_string()),
            Err(e) => {
                println!("sanitizers: {e}");
                failed_steps.push("sanitizers".to_string());
            }
        }
        util::step("test: GPU suite without a GPU (sm_90 binaries against the stand-in CUDA driver, tests/fake-cuda)");
        match gpu::without_gpu() {
            Ok(true) => {}
            Ok(false) => failed_steps.push("GPU suite against the stand-in CUDA driver".to_string()),
            Err(e) => {
                println!("gpu suite: {e}");
                failed_steps.push("GPU suite against the stand-in CUDA driver".to_string());
            }
        }
        util::step("test 5/5: program corpus (host offload, x86_64-pc-linux-gnu)");
        let summary = corpus(&Suite::host())?;
        report_failed_steps(&failed_steps);
        println!(
            "{} passed, {} failed, {} skipped",
            summary.passed, summary.failed, summary.skipped
        );
        if summary.failed > 0 {
            code = 1;
        }
    } else {
        report_failed_steps(&failed_steps);
    }
    if !failed_steps.is_empty() {
        code = 1;
    }
    Ok(code)
}

fn report_failed_steps(steps: &[String]) {
    if !steps.is_empty() {
        println!("FAILED steps: {} (see above)", steps.join(", "));
    }
}

// ---------------------------------------------------------------------------------------------
// 4. ABI probes

fn probe_dir() -> Option<PathBuf> {
    let root = util::root();
    [
        root.join("tests/abi-probes"),
        root.join("../shared/abi-probes"),
    ]
    .into_iter()
    .find(|d| d.is_dir())
}

/// `*.c`, `*.cpp` and `*.f90` in `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = util::files_matching(dir, "", ".c");
    v.extend(util::files_matching(dir, "", ".cpp"));
    v.extend(util::files_matching(dir, "", ".f90"));
    v.sort();
    v
}

fn is_cxx(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e == "cpp" || e == "cc" || e == "cxx")
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Runs a compile, writing its output to `log`. Ok(()) or Err(one-line reason).
fn compile(
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
fn compile_source(src: &Path, runtime: Runtime, args: &[String], log: &Path) -> std::result::Result<(), String> {
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

fn run_compile(mut cmd: Cmd, fortran: bool, log: &Path) -> std::result::Result<(), String> {
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

/// Functions declared (not defined) and external globals in a textual LLVM module, without `llvm.*`.
fn needed_symbols(ll: &str) -> BTreeSet<String> {
    fn symbol(after_at: &str) -> String {
        if let Some(quoted) = after_at.strip_prefix('"') {
            quoted.split('"').next().unwrap_or_default().to_string()
        } else {
            after_at
                .split(|c: char| !(c.is_ascii_alphanumeric() || "._$-".contains(c)))
                .next()
                .unwrap_or_default()
                .to_string()
        }
    }
    let mut out = BTreeSet::new();
    for line in ll.lines() {
        if line.starts_with("declare ") {
            if let Some(i) = line.find('@') {
                out.insert(symbol(&line[i + 1..]));
            }
        } else if let Some(rest) = line.strip_prefix('@') {
            if let Some((_, rhs)) = rest.split_once(" = ") {
                let first = rhs.split(' ').next().unwrap_or_default();
                if first == "external" || first == "extern_weak" {
                    out.insert(symbol(rest));
                }
            }
        }
    }
    out.retain(|s| !s.is_empty() && !s.starts_with("llvm."));
    out
}

/// Names the program itself declares `extern` (defined nowhere in the probe, on purpose): they are
/// not the runtime's to provide.
fn own_externs(src: &str, symbols: &BTreeSet<String>) -> BTreeSet<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    symbols
        .iter()
        .filter(|sym| {
            src.lines().any(|l| {
                l.trim_start().starts_with("extern ")
                    && l.match_indices(sym.as_str()).any(|(i, _)| {
                        !l[..i].ends_with(is_ident) && !l[i + sym.len()..].starts_with(is_ident)
                    })
            })
        })
        .cloned()
        .collect()
}

/// Undefined symbols a failed device link reports (nvlink and ld.lld wording).
fn link_undefined(log: &str) -> BTreeSet<String> {
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

/// A full link of a probe for one GPU.
struct Link {
    arch: &'static str,
    ok: bool,
    /// Undefined device symbols the link reported (the program's own externs left out).
    undefined: BTreeSet<String>,
    log: PathBuf,
}

struct ProbeResult {
    name: String,
    /// symbol -> opt levels whose device code needs it
    missing: BTreeMap<String, Vec<&'static str>>,
    compile_errors: Vec<String>,
    links: Vec<Link>,
}

impl ProbeResult {
    fn good(&self) -> bool {
        self.compile_errors.is_empty() && self.missing.is_empty() && self.links.iter().all(|l| l.ok)
    }
}

const PROBE_ARCHS: [&str; 2] = ["sm_90", "gfx90a"];
/// Probes written with OpenMP 5.2's `declare target enter` need `-fopenmp-version=52`; the
/// others use 5.1's `declare target to`, which 5.2 rejects (clang-22 defaults to 5.1).
fn probe_openmp_version(text: &str) -> &'static str {
    if text.contains("declare target enter") {
        "-fopenmp-version=52"
    } else {
        "-fopenmp-version=51"
    }
}

fn probe(
    src: &Path,
    out_dir: &Path,
    defined: &BTreeSet<String>,
    allowed: &BTreeSet<&str>,
) -> ProbeResult {
    let name = stem(src);
    let cxx = is_cxx(src);
    let src_s = src.display().to_string();
    let text = std::fs::read_to_string(src).unwrap_or_default();
    let mut r = ProbeResult {
        name: name.clone(),
        missing: BTreeMap::new(),
        compile_errors: Vec::new(),
        links: Vec::new(),
    };
    for opt in ["-O2", "-O0"] {
        let ll = out_dir.join(format!("{name}{opt}.sm_90.ll"));
        let log = out_dir.join(format!("{name}{opt}.sm_90.log"));
        let mut args: Vec<String> = [
            opt,
            "--offload-arch=sm_90",
            "--offload-device-only",
            "-emit-llvm",
            "-S",
            "-nogpulib",
            probe_openmp_version(&text),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend([src_s.clone(), "-o".into(), ll.display().to_string()]);
        if let Err(e) = compile(cxx, Runtime::Ours, &args, &log) {
            r.compile_errors.push(format!("{opt}: {e}"));
            continue;
        }
        let needed = needed_symbols(&std::fs::read_to_string(&ll).unwrap_or_default());
        let own = own_externs(&text, &needed);
        for s in needed {
            if !defined.contains(&s) && !allowed.contains(s.as_str()) && !own.contains(&s) {
                r.missing.entry(s).or_default().push(opt);
            }
        }
    }
    for arch in PROBE_ARCHS {
        let exe = out_dir.join(format!("{name}-{arch}"));
        let log = out_dir.join(format!("{name}-{arch}.log"));
        let args: Vec<String> = vec![
            "-O2".into(),
            probe_openmp_version(&text).into(),
            format!("--offload-arch={arch}"),
            src_s.clone(),
            "-o".into(),
            exe.display().to_string(),
        ];
        let linked = compile(cxx, Runtime::Ours, &args, &log).is_ok();
        let mut undefined = link_undefined(&std::fs::read_to_string(&log).unwrap_or_default());
        let own = own_externs(&text, &undefined);
        undefined.retain(|s| !own.contains(s));
        // A link that failed only on the program's own externs says nothing about the runtime.
        let ok = linked || (!own.is_empty() && undefined.is_empty());
        r.links.push(Link {
            arch,
            ok,
            undefined,
            log,
        });
    }
    r
}

fn probes() -> Result<()> {
    let Some(dir) = probe_dir() else {
        println!("probes: no shared/abi-probes next to the repository; skipped");
        return Ok(());
    };
    let bc = devicertl::nvptx_bc();
    let (defined, _) = devicertl::nm(&bc)?;
    let nvptx = devicertl::TARGETS
        .iter()
        .find(|t| t.triple.starts_with("nvptx"))
        .expect("nvptx target");
    let allowed: BTreeSet<&str> = nvptx.allowed_undefined.iter().copied().collect();
    let out_dir = at("target/probes");
    util::mkdirs(&out_dir)?;
    let probes = sources(&dir);
    if probes.is_empty() {
        println!("probes: {} has no .c/.cpp files; skipped", dir.display());
        return Ok(());
    }
    println!("probes: {} programs from {}", probes.len(), dir.display());
    let results = util::parallel(&probes, JOBS, |src| {
        probe(src, &out_dir, &defined, &allowed)
    });

    let width = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:width$} | {:16} | {:10} | gfx90a link",
        "probe", "device symbols", "sm_90 link"
    );
    // symbol -> where it is missing
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &results {
        let sym = if !r.compile_errors.is_empty() {
            "COMPILE FAIL".to_string()
        } else if r.missing.is_empty() {
            "OK".to_string()
        } else {
            format!("FAIL ({} missing)", r.missing.len())
        };
        let link = |l: &Link| if l.ok { "OK" } else { "FAIL" };
        println!(
            "{:width$} | {sym:16} | {:10} | {}",
            r.name,
            link(&r.links[0]),
            link(&r.links[1])
        );
        for (s, opts) in &r.missing {
            missing.entry(s.clone()).or_default().insert(format!(
                "{} (nvptx {})",
                r.name,
                opts.join(",")
            ));
        }
        for e in &r.compile_errors {
            println!("    {}: device compile {e}", r.name);
        }
        for l in r.links.iter().filter(|l| !l.ok) {
            if l.undefined.is_empty() {
                println!(
                    "    {}: {} link failed, see {}",
                    r.name,
                    l.arch,
                    util::show(&l.log)
                );
            }
            for s in &l.undefined {
                missing
                    .entry(s.clone())
                    .or_default()
                    .insert(format!("{} ({} link)", r.name, l.arch));
            }
        }
    }
    if !missing.is_empty() {
        println!("device symbols the runtime does not provide:");
        for (s, users) in &missing {
            println!(
                "    {s}: {}",
                users.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let bad = results.iter().filter(|r| !r.good()).count();
    println!(
        "probes: {} of {} good (logs in {})",
        results.len() - bad,
        results.len(),
        util::show(&out_dir)
    );
    if bad > 0 {
        crate::bail!(
            "{bad} probe(s) failing{}",
            if missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; missing device symbols: {}",
                    missing.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            }
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 5. Program corpus

/// How one corpus is compiled.
struct Suite {
    /// Offload flags, e.g. `-fopenmp-targets=x86_64-pc-linux-gnu`.
    target_args: Vec<String>,
    /// Under target/.
    out_dir: &'static str,
}

impl Suite {
    fn host() -> Suite {
        Suite {
            target_args: vec!["-fopenmp-targets=x86_64-pc-linux-gnu".into()],
            out_dir: "target/programs",
        }
    }
}

/// What a program's header asks for.
#[derive(Debug, Default, PartialEq)]
struct Header {
    /// `// EXPECT: fail`: must exit non-zero (no timeout, no signal).
    expect_fail: bool,
    /// `// EXPECT: abort`: an expected failure that may end with SIGABRT (a failed `assert` in
    /// a host-offload image is glibc's: it aborts the process).
    expect_abort: bool,
    /// `// ENV: NAME=value`
    env: Vec<(String, String)>,
    /// `// CFLAGS: flags`: extra compiler flags.
    cflags: Vec<String>,
    /// `// LLVM-REF: fails (reason)`: LLVM's library is known to fail this one.
    llvm_ref_fails: Option<String>,
    /// `// EXPECT-STDERR: text`: our runtime's output must contain `text` (one per line; for our
    /// own messages, which LLVM does not print).
    expect_stderr: Vec<String>,
    /// `// EXPECT-STDERR-BOTH: text`: both runtimes' output must contain `text` (LLVM's
    /// wording, which ours repeats exactly).
    expect_stderr_both: Vec<String>,
    /// `// SOURCES: units/x.c ...`: more translation units, relative to the program's directory.
    sources: Vec<String>,
    /// `// HOST-ONLY: why`: meaningful on the CPU plugin only (its fault injection, its leak
    /// check); the GPU suite lists it as skipped instead of running it.
    host_only: Option<String>,
}

impl Header {
    /// The program's own file followed by its extra translation units.
    fn source_args(&self, src: &Path) -> Vec<String> {
        let dir = src.parent().unwrap_or(Path::new("."));
        std::iter::once(src.display().to_string())
            .chain(
                self.sources
                    .iter()
                    .map(|s| dir.join(s).display().to_string()),
            )
            .collect()
    }
}

fn parse_header(text: &str) -> Header {
    let mut h = Header::default();
    for line in text.lines() {
        // `// ...` in C and C++, `! ...` in Fortran.
        let Some(comment) = line.trim().strip_prefix("//").or_else(|| line.trim().strip_prefix('!')) else {
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
        } else if let Some(v) = comment.strip_prefix("EXPECT-STDERR:") {
            h.expect_stderr.push(v.trim().to_string());
        } else if let Some(v) = comment.strip_prefix("SOURCES:") {
            h.sources.extend(v.split_whitespace().map(str::to_string));
        } else if let Some(v) = comment.strip_prefix("HOST-ONLY:") {
            h.host_only = Some(v.trim().to_string());
        }
    }
    h
}

#[derive(Clone, Debug)]
enum Outcome {
    Exit(i32),
    Signal(i32),
    Timeout,
    CompileFailed,
    NotRun(String),
}

/// (passed, what to show)
type Verdict = (bool, String);

fn verdict(o: &Outcome, expect_fail: bool) -> Verdict {
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
fn ours_verdict(o: &Outcome, h: &Header) -> Verdict {
    match (o, h.expect_fail || h.expect_abort) {
        (Outcome::Signal(6), true) => (true, "ok (SIGABRT, expected)".into()),
        _ => verdict(o, h.expect_fail),
    }
}

/// The LLVM column: as ours, and a failure the program documents with `// LLVM-REF:` says so.
fn llvm_verdict(o: &Outcome, h: &Header) -> Verdict {
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
fn with_expected_output(v: Verdict, expected: &[String], log: &Path) -> Verdict {
    if !v.0 || expected.is_empty() {
        return v;
    }
    let output = std::fs::read_to_string(log).unwrap_or_default();
    match expected.iter().find(|text| !output.contains(text.as_str())) {
        Some(missing) => (false, format!("FAIL (output lacks {missing:?})")),
        None => v,
    }
}

/// Runs `exe` with a time limit, its output to `log`. Kills its whole process group on timeout.
fn run_program(exe: &Path, env: &[(String, String)], log: &Path) -> Outcome {
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

struct Program {
    src: PathBuf,
    name: String,
    header: Header,
}

pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

fn corpus(suite: &Suite) -> Result<Summary> {
    let dir = at("tests/programs");
    let readme = dir.join("README.md");
    if readme.is_file() {
        println!("corpus conventions: {}", util::show(&readme));
    }
    // RUSTOMP_CORPUS_FILTER=text runs only the programs whose file name contains `text`.
    let filter = std::env::var("RUSTOMP_CORPUS_FILTER").unwrap_or_default();
    let programs: Vec<Program> = sources(&dir)
        .into_iter()
        .filter(|src| src.file_name().is_some_and(|n| n.to_string_lossy().contains(filter.as_str())))
        .map(|src| {
            let text = std::fs::read_to_string(&src).unwrap_or_default();
            Program {
                name: src
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                header: parse_header(&text),
                src,
            }
        })
        .collect();
    if programs.is_empty() {
        println!("corpus: no programs in {}", util::show(&dir));
        return Ok(Summary {
            passed: 0,
            failed: 0,
            skipped: 0,
        });
    }
    let out_dir = at(suite.out_dir);
    let llvm_dir = out_dir.join("llvm");
    util::mkdirs(&llvm_dir)?;
    let with_llvm = host::llvm_ref_dir().join("libomptarget.so").exists();
    if !with_llvm {
        println!("corpus: no target/llvm-ref/libomptarget.so: LLVM column skipped");
    }

    // Compile everything, two at a time.
    let mut jobs: Vec<(usize, Runtime)> = (0..programs.len()).map(|i| (i, Runtime::Ours)).collect();
    if with_llvm {
        jobs.extend((0..programs.len()).map(|i| (i, Runtime::Llvm)));
    }
    println!(
        "corpus: compiling {} programs ({} builds)",
        programs.len(),
        jobs.len()
    );
    let exe_of = |i: usize, rt: Runtime| {
        let stem = stem(&programs[i].src);
        match rt {
            Runtime::Ours => out_dir.join(&stem),
            Runtime::Llvm => llvm_dir.join(&stem),
        }
    };
    let compiled = util::parallel(&jobs, JOBS, |&(i, rt)| {
        let p = &programs[i];
        let exe = exe_of(i, rt);
        let _ = std::fs::remove_file(&exe);
        let mut args = vec!["-O2".to_string()];
        args.extend(suite.target_args.iter().cloned());
        args.extend(p.header.cflags.iter().cloned());
        args.extend(p.header.source_args(&p.src));
        args.extend([
            "-o".to_string(),
            exe.display().to_string(),
            "-lm".to_string(),
        ]);
        compile_source(&p.src, rt, &args, &exe.with_extension("compile.log"))
    });

    // Run them one at a time.
    println!("{:36} | {:30} | llvm", "program", "ours");
    let mut rows: Vec<(String, Verdict, Option<Verdict>)> = Vec::new();
    for (p_idx, p) in programs.iter().enumerate() {
        let cell = |rt: Runtime| {
            let job = jobs.iter().position(|&(i, r)| i == p_idx && r == rt)?;
            let exe = exe_of(p_idx, rt);
            let outcome = match &compiled[job] {
                Err(_) => Outcome::CompileFailed,
                Ok(()) => run_program(&exe, &p.header.env, &exe.with_extension("log")),
            };
            let log = exe.with_extension("log");
            Some(match rt {
                Runtime::Ours => {
                    let expected: Vec<String> = p.header.expect_stderr.iter().chain(&p.header.expect_stderr_both).cloned().collect();
                    with_expected_output(ours_verdict(&outcome, &p.header), &expected, &log)
                }
                Runtime::Llvm => {
                    let v = with_expected_output(llvm_verdict(&outcome, &p.header), &p.header.expect_stderr_both, &log);
                    match (&p.header.llvm_ref_fails, v.0) {
                        (Some(_), false) if !v.1.contains("LLVM-REF") => (false, format!("{}, documented (LLVM-REF)", v.1)),
                        _ => v,
                    }
                }
            })
        };
        let ours = cell(Runtime::Ours).expect("ours is always compiled");
        let llvm = cell(Runtime::Llvm);
        print_row(&p.name, &ours, llvm.as_ref());
        rows.push((p.name.clone(), ours, llvm));
    }

    // Programs documented in tests/programs/KNOWN_FAILURES (name, then the reason) fail with our
    // runtime today: they are listed every run and counted as skipped, never as passed.
    let known = known_failures(&at("tests/programs/KNOWN_FAILURES"), Scope::Host);
    let passed = rows.iter().filter(|r| r.1 .0).count();
    let skipped = rows
        .iter()
        .filter(|r| !r.1 .0 && known.iter().any(|(k, _)| *k == r.0))
        .count();
    let failed = rows.len() - passed - skipped;
    for (name, why) in &known {
        if let Some(row) = rows.iter().find(|r| &r.0 == name) {
            let now = if row.1 .0 {
                "now passes: remove it from the list"
            } else {
                "still fails"
            };
            println!("known failure {name}: {why} ({now})");
        }
    }
    if with_llvm {
        let diff: Vec<String> = rows
            .iter()
            .filter_map(|(name, ours, llvm)| {
                let llvm = llvm.as_ref()?;
                (ours.0 != llvm.0).then(|| format!("    {name}: ours {}, llvm {}", ours.1, llvm.1))
            })
            .collect();
        if diff.is_empty() {
            println!("ours and llvm agree on every program");
        } else {
            println!("programs where ours and llvm differ:");
            for d in diff {
                println!("{d}");
            }
        }
    }
    let ours_failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.1 .0 && !known.iter().any(|(k, _)| *k == r.0))
        .map(|r| r.0.as_str())
        .collect();
    if !ours_failed.is_empty() {
        println!(
            "failing with ours (logs in {}/<name>.log, <name>.compile.log): {}",
            util::show(&out_dir),
            ours_failed.join(" ")
        );
    }
    Ok(Summary {
        passed,
        failed,
        skipped,
    })
}

/// `name reason…` per line; `#` starts a comment.
/// Where a line of `tests/programs/KNOWN_FAILURES` applies: `gpu: NAME why` to the GPU suite
/// only, `host: NAME why` to the CPU corpus only, a plain `NAME why` to both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Host,
    Gpu,
}

/// The programs documented as failing where `scope` runs them: (name, why).
fn known_failures(path: &std::path::Path, scope: Scope) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (applies, l) = if let Some(rest) = l.strip_prefix("gpu:") {
                (scope == Scope::Gpu, rest.trim())
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

fn print_row(name: &str, ours: &Verdict, llvm: Option<&Verdict>) {
    let llvm = llvm.map(|l| l.1.as_str()).unwrap_or("-");
    println!("{name:36} | {:30} | {llvm}", ours.1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_conventions() {
        let h = parse_header(
            "// EXPECT: fail\n// EXPECT-STDERR: device 99\n// EXPECT-STDERR-BOTH: omptarget message: x\n// ENV: OMP_TARGET_OFFLOAD=disabled\n// ENV: A = b=c\n// CFLAGS: -fopenmp-version=52 -DX\n// LLVM-REF: fails (why)\n// SOURCES: units/b.c\nint main(){}\n",
        );
        assert_eq!(
            h.source_args(Path::new("/p/116_x.c")),
            vec!["/p/116_x.c".to_string(), "/p/units/b.c".to_string()]
        );
        assert_eq!(
            h.cflags,
            vec!["-fopenmp-version=52".to_string(), "-DX".to_string()]
        );
        assert_eq!(h.llvm_ref_fails.as_deref(), Some("fails (why)"));
        assert_eq!(h.expect_stderr, vec!["device 99".to_string()]);
        assert_eq!(h.expect_stderr_both, vec!["omptarget message: x".to_string()]);
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
        assert!(sources(&at("tests/programs")).iter().any(|p| crate::fc::is_fortran(p)), "the corpus lists .f90 programs");
    }

    #[test]
    fn verdicts() {
        assert!(verdict(&Outcome::Exit(0), false).0);
        assert!(!verdict(&Outcome::Exit(0), true).0);
        assert!(verdict(&Outcome::Exit(1), true).0);
        assert!(!verdict(&Outcome::Signal(6), true).0);
        let fails = Header { expect_fail: true, ..Header::default() };
        assert!(ours_verdict(&Outcome::Signal(6), &fails).0, "a fatal offload error aborts");
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
    fn needed_symbols_from_ir() {
        let ll = "declare i32 @__kmpc_target_init(ptr, ptr)\n\
                  declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n\
                  declare hidden noundef ptr @\"quoted name\"(i64)\n\
                  @ext = external addrspace(1) global i32\n\
                  @weak = extern_weak global i32\n\
                  @defined = global i32 0\n\
                  define void @f() {\n  ret void\n}\n";
        let got: Vec<String> = needed_symbols(ll).into_iter().collect();
        assert_eq!(
            got,
            vec!["__kmpc_target_init", "ext", "quoted name", "weak"]
        );
    }

    #[test]
    fn own_externs_and_link_logs() {
        let src = "extern void opaque(int *);\nint main(void) { omp_get_thread_num(); }\n";
        let syms: BTreeSet<String> = ["opaque", "omp_get_thread_num", "opa"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            own_externs(src, &syms).into_iter().collect::<Vec<_>>(),
            vec!["opaque".to_string()]
        );
        let log = "nvlink error   : Undefined reference to '__kmpc_kernel_parallel' in 'x.cubin'\n\
                   ld.lld: error: undefined symbol: printf\n>>> referenced by x.o\n";
        assert_eq!(
            link_undefined(log).into_iter().collect::<Vec<_>>(),
            vec!["__kmpc_kernel_parallel".to_string(), "printf".to_string()]
        );
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
