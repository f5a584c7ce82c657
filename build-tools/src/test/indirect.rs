//! The indirect-call pass (`compiler/`, issue 25), checked on the device code clang-22 emits,
//! without a GPU:
//!
//! - `tests/indirect/calls.c` and `virtual.cpp` for sm_90 and gfx90a at -O0 and -O2 (the
//!   unit's IR, `--offload-device-only -emit-llvm`) and for x86_64 host offload at -O2: every
//!   call through a value in the program's functions calls what `__kmpc_target_translate_fptr`
//!   returned (or reads a vtable slot through a translated vtable pointer), at least one does,
//!   and no translation is of a known function;
//! - with `-foffload-lto`, `calls.c` plus `calls_unit.c` (a unit without indirect entries) for
//!   sm_90 and gfx90a: the same of the linked device image (the LTO link's pre-codegen IR,
//!   `-save-temps`), so the other unit's calls are translated where all units meet;
//! - a negative control: `calls.c` compiled with `RUSTOMP_INDIRECT_CALLS=off` must fail the
//!   check (the check can fail);
//! - no cost when unused: `tests/indirect/no_indirect.c` (calls through pointers, no indirect
//!   entries) gives the same device IR with and without the plugin, for sm_90, gfx90a and
//!   x86_64 at -O0 and -O2 and for the sm_90 LTO link, and no translation.
//!
//! The check reads IR text; it knows the pass's rules only where the pass leaves calls alone on
//! purpose: the device runtime's functions (by name) and its state machine's call of the
//! region wrapper (an integer loaded atomically, turned into a pointer).

use crate::cc::{self, Runtime};
use crate::util::{self, at, Cmd, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const DIR: &str = "tests/indirect";
const TRANSLATIONS: [&str; 2] = [
    "@__kmpc_target_translate_fptr(",
    "@__rustomp_translate_fptr(",
];

/// What one checked module holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Calls through a translated pointer (vtable slots included).
    pub translated: usize,
    /// Calls of the translation.
    pub translations: usize,
    /// Indirect calls left alone on purpose (the runtime's own).
    pub runtime: usize,
    /// Indirect calls of the program without a translation, and translations of known functions.
    pub problems: Vec<String>,
}

/// A function of a textual module: its name, whether our runtime's build marked it, its body.
struct Function<'a> {
    name: &'a str,
    marked: bool,
    body: Vec<&'a str>,
}

fn functions(ir: &str) -> Vec<Function<'_>> {
    // Attribute groups holding the runtime's mark (`cargo xtask devicertl` adds it).
    let marked: Vec<&str> = ir
        .lines()
        .filter(|l| l.starts_with("attributes #") && l.contains("\"rustomp-runtime\""))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let mut out = Vec::new();
    let mut current: Option<Function<'_>> = None;
    for line in ir.lines() {
        if line.starts_with("define ") {
            let name = line
                .split_once(" @")
                .map(|(_, rest)| rest.trim_start_matches('"'))
                .and_then(|rest| rest.split(['(', '"']).next())
                .unwrap_or("");
            let marked = line.split_whitespace().any(|t| marked.contains(&t));
            current = Some(Function {
                name,
                marked,
                body: Vec::new(),
            });
        } else if line == "}" {
            out.extend(current.take());
        } else if let Some(f) = current.as_mut() {
            f.body.push(line.trim());
        }
    }
    out
}

/// The device runtime's functions, as the pass leaves them: marked, or by name (Rust v0
/// symbols, entry points).
fn is_runtime(name: &str) -> bool {
    let rust = name
        .strip_prefix("_R")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()));
    rust || ["__kmpc_", "__llvm_omp_", "__rustomp", "omp_", "ompx_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The callee of a call or invoke line when it is a value (`%x`), not a function (`@f`).
fn indirect_callee(line: &str) -> Option<&str> {
    let at = line.find("call ").or_else(|| line.find("invoke "))?;
    let rest = &line[at..];
    // The callee is the first `%name(` or `@name(` after the return type (a varargs type
    // `(ptr, ...)` has neither).
    let bytes = rest.as_bytes();
    for (i, c) in rest.char_indices() {
        if c != '%' && c != '@' {
            continue;
        }
        let end = rest[i + 1..]
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || "._$-".contains(ch)))
            .map(|e| i + 1 + e)?;
        if bytes.get(end) == Some(&b'(') {
            return (c == '%').then(|| &rest[i..end]);
        }
    }
    None
}

/// `%x = <rhs>` lines of a function.
fn definitions<'a>(body: &[&'a str]) -> HashMap<&'a str, &'a str> {
    body.iter()
        .filter_map(|l| l.split_once(" = ").filter(|(lhs, _)| lhs.starts_with('%')))
        .collect()
}

/// The first `%operand` of an instruction's right-hand side.
fn first_operand(rhs: &str) -> Option<&str> {
    let i = rhs.find(" %")?;
    let name = &rhs[i + 1..];
    let end = name
        .find(|c: char| !(c.is_ascii_alphanumeric() || "%._$-".contains(c)))
        .unwrap_or(name.len());
    Some(&name[..end])
}

/// A call of the translation (ours, or the host-offload helper).
fn is_translation(rhs: &str) -> bool {
    rhs.contains("call ") && TRANSLATIONS.iter().any(|t| rhs.contains(t))
}

/// Follows casts and constant-index GEPs back from `value`.
fn strip<'a>(defs: &HashMap<&'a str, &'a str>, mut value: &'a str) -> &'a str {
    for _ in 0..16 {
        let Some(rhs) = defs.get(value) else {
            return value;
        };
        let is_cast = rhs.starts_with("bitcast ") || rhs.starts_with("addrspacecast ");
        let constant_gep = rhs.starts_with("getelementptr") && rhs.matches(" %").count() == 1;
        if !(is_cast || constant_gep) {
            return value;
        }
        match first_operand(rhs) {
            Some(inner) => value = inner,
            None => return value,
        }
    }
    value
}

/// Checks a module's IR text.
pub fn check(ir: &str) -> Summary {
    let mut s = Summary::default();
    for f in functions(ir) {
        let defs = definitions(&f.body);
        for line in &f.body {
            if TRANSLATIONS.iter().any(|t| line.contains(t)) && line.contains("call ") {
                s.translations += 1;
                if TRANSLATIONS
                    .iter()
                    .any(|t| line.contains(&format!("{t}ptr @")))
                {
                    s.problems.push(format!(
                        "{}: translation of a known function: {line}",
                        f.name
                    ));
                }
            }
            let Some(callee) = indirect_callee(line) else {
                continue;
            };
            if f.marked || is_runtime(f.name) {
                s.runtime += 1;
                continue;
            }
            let source = strip(&defs, callee);
            let rhs = defs.get(source).copied().unwrap_or("");
            let translated = |v: &str| defs.get(strip(&defs, v)).is_some_and(|r| is_translation(r));
            if is_translation(rhs) {
                s.translated += 1;
            } else if rhs.starts_with("load ptr") && first_operand(rhs).is_some_and(translated) {
                s.translated += 1; // a slot of a translated vtable
            } else if rhs.starts_with("inttoptr ")
                && first_operand(rhs)
                    .and_then(|v| defs.get(v))
                    .is_some_and(|r| r.starts_with("load atomic "))
            {
                s.runtime += 1; // the state machine's region wrapper
            } else {
                s.problems.push(format!(
                    "{}: indirect call without translation: {line}",
                    f.name
                ));
            }
        }
    }
    s
}

/// One compile of the check.
struct Job {
    tag: String,
    cxx: bool,
    args: Vec<String>,
    /// The pass plugin loaded (else plain clang-22).
    pass: bool,
    env: Option<(&'static str, &'static str)>,
    /// Run in this directory (`-save-temps` writes there); the linked image's IR is checked.
    lto_dir: Option<PathBuf>,
    /// The output (`.ll`) for unit compiles.
    output: PathBuf,
}

/// Runs a job; returns the IR text it checks.
fn compile(job: &Job, out: &Path) -> std::result::Result<String, String> {
    let mut cmd: Cmd = if job.pass {
        cc::command(job.cxx, Runtime::Ours, &job.args)
    } else {
        cc::command_without_pass(job.cxx, &job.args)
    };
    // The outer environment must not decide what the check sees.
    cmd.env_remove("RUSTOMP_INDIRECT_CALLS");
    if let Some((k, v)) = job.env {
        cmd.env(k, v);
    }
    if let Some(dir) = &job.lto_dir {
        let _ = std::fs::remove_dir_all(dir);
        util::mkdirs(dir).map_err(|e| e.to_string())?;
        cmd.current_dir(dir);
    }
    let log = out.join(format!("{}.log", job.tag));
    let line = cmd.display();
    let result = cmd.output_raw().map_err(|e| e.to_string())?;
    let text = format!(
        "$ {line}\n{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    let _ = util::write(&log, &text);
    if !result.status.success() {
        return Err(format!("compile failed, see {}", util::show(&log)));
    }
    let ll = match &job.lto_dir {
        None => job.output.clone(),
        Some(dir) => {
            let bc = util::files_matching(dir, "", ".img.0.5.precodegen.bc")
                .into_iter()
                .next()
                .ok_or_else(|| {
                    format!(
                        "no *.img.0.5.precodegen.bc in {} (-save-temps of the LTO link)",
                        util::show(dir)
                    )
                })?;
            let ll = bc.with_extension("ll");
            Cmd::new("llvm-dis-22")
                .arg(&bc)
                .arg("-o")
                .arg(&ll)
                .output_raw()
                .map_err(|e| e.to_string())?;
            ll
        }
    };
    util::read(&ll).map_err(|e| e.to_string())
}

fn unit_job(out: &Path, src: &str, target: &[&str], opt: &str, pass: bool) -> Job {
    let stem = Path::new(src)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let target_tag = target[0]
        .rsplit('=')
        .next()
        .unwrap_or("")
        .split('-')
        .next()
        .unwrap_or("");
    let tag = format!(
        "{stem}-{target_tag}{opt}{}",
        if pass { "" } else { "-without-pass" }
    );
    let output = out.join(format!("{tag}.ll"));
    let mut args: Vec<String> = vec![opt.into()];
    args.extend(target.iter().map(|s| s.to_string()));
    args.extend([
        "--offload-device-only".into(),
        "-emit-llvm".into(),
        "-S".into(),
    ]);
    args.extend([
        at(&format!("{DIR}/{src}")).display().to_string(),
        "-o".into(),
        output.display().to_string(),
    ]);
    Job {
        tag,
        cxx: src.ends_with(".cpp"),
        args,
        pass,
        env: None,
        lto_dir: None,
        output,
    }
}

fn lto_job(out: &Path, sources: &[&str], arch: &str, pass: bool) -> Job {
    let stem = Path::new(sources[0])
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let tag = format!(
        "{stem}-{arch}-lto{}",
        if pass { "" } else { "-without-pass" }
    );
    let dir = out.join(&tag);
    let mut args: Vec<String> = vec![
        "-O2".into(),
        "-foffload-lto".into(),
        format!("--offload-arch={arch}"),
        "-save-temps".into(),
    ];
    args.extend(
        sources
            .iter()
            .map(|s| at(&format!("{DIR}/{s}")).display().to_string()),
    );
    args.extend(["-o".into(), dir.join("prog").display().to_string()]);
    Job {
        tag,
        cxx: false,
        args,
        pass,
        env: None,
        lto_dir: Some(dir.clone()),
        output: dir,
    }
}

const SM90: &[&str] = &["--offload-arch=sm_90"];
const GFX90A: &[&str] = &["--offload-arch=gfx90a"];
const X86: &[&str] = &["-fopenmp-targets=x86_64-pc-linux-gnu"];

pub fn run() -> Result<()> {
    let out = at("target/indirect");
    util::mkdirs(&out)?;
    // Translated: unit IR, LTO images.
    let mut translated = Vec::new();
    for src in ["calls.c", "virtual.cpp"] {
        for target in [SM90, GFX90A] {
            for opt in ["-O0", "-O2"] {
                translated.push(unit_job(&out, src, target, opt, true));
            }
        }
        translated.push(unit_job(&out, src, X86, "-O2", true));
    }
    for arch in ["sm_90", "gfx90a"] {
        translated.push(lto_job(&out, &["calls.c", "calls_unit.c"], arch, true));
    }
    // The negative control.
    let mut control = unit_job(&out, "calls.c", SM90, "-O2", true);
    control.tag.push_str("-off");
    control.output = out.join(format!("{}.ll", control.tag));
    if let Some(o) = control.args.iter_mut().rev().find(|a| a.ends_with(".ll")) {
        *o = control.output.display().to_string();
    }
    control.env = Some(("RUSTOMP_INDIRECT_CALLS", "off"));
    // No cost when unused: pairs with and without the plugin.
    let mut unused = Vec::new();
    for target in [SM90, GFX90A, X86] {
        for opt in ["-O0", "-O2"] {
            unused.push((
                unit_job(&out, "no_indirect.c", target, opt, true),
                unit_job(&out, "no_indirect.c", target, opt, false),
            ));
        }
    }
    unused.push((
        lto_job(&out, &["no_indirect.c"], "sm_90", true),
        lto_job(&out, &["no_indirect.c"], "sm_90", false),
    ));

    let mut jobs: Vec<&Job> = translated.iter().collect();
    jobs.push(&control);
    for (a, b) in &unused {
        jobs.push(a);
        jobs.push(b);
    }
    let results: Vec<std::result::Result<String, String>> =
        util::parallel(&jobs, super::programs::JOBS, |job| compile(job, &out));
    let ir: HashMap<&str, &std::result::Result<String, String>> =
        jobs.iter().map(|j| j.tag.as_str()).zip(&results).collect();

    let mut failures = Vec::new();
    for job in &translated {
        match ir[job.tag.as_str()] {
            Err(e) => failures.push(format!("{}: {e}", job.tag)),
            Ok(text) => {
                let s = check(text);
                let ok = s.problems.is_empty() && s.translated > 0;
                println!(
                    "indirect calls: {:28} {:4} calls through translated pointers, {} translations, {} of the runtime's left alone{}",
                    job.tag,
                    s.translated,
                    s.translations,
                    s.runtime,
                    if ok { "" } else { ": FAIL" }
                );
                for p in s.problems.iter().take(5) {
                    println!("    {p}");
                }
                if !ok {
                    failures.push(job.tag.clone());
                }
            }
        }
    }
    match ir[control.tag.as_str()] {
        Ok(text) => {
            let s = check(text);
            let fails = !s.problems.is_empty() && s.translations == 0;
            println!(
                "indirect calls: {:28} without the translation (RUSTOMP_INDIRECT_CALLS=off) the check fails as it must: {}",
                control.tag,
                if fails { format!("ok ({} untranslated calls found)", s.problems.len()) } else { "FAIL (it passed)".into() }
            );
            if !fails {
                failures.push(control.tag.clone());
            }
        }
        Err(e) => failures.push(format!("{}: {e}", control.tag)),
    }
    for (with, without) in &unused {
        match (ir[with.tag.as_str()], ir[without.tag.as_str()]) {
            (Ok(a), Ok(b)) => {
                // The module's name is the file it was read from (the LTO links' temporaries).
                let body = |ir: &str| {
                    ir.lines()
                        .filter(|l| !l.starts_with("; ModuleID"))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let same = body(a) == body(b);
                let translations = check(a).translations;
                let ok = same && translations == 0;
                println!(
                    "indirect calls: {:28} same device IR with and without the plugin: {}",
                    with.tag,
                    if ok {
                        "ok".to_string()
                    } else {
                        format!("FAIL (identical: {same}, translations: {translations})")
                    }
                );
                if !ok {
                    failures.push(with.tag.clone());
                }
            }
            (Err(e), _) | (_, Err(e)) => failures.push(format!("{}: {e}", with.tag)),
        }
    }
    if !failures.is_empty() {
        crate::bail!(
            "{} indirect-call check(s) failed: {} (IR and logs in {})",
            failures.len(),
            failures.join(", "),
            util::show(&out)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"
define void @user(ptr %fp, ptr %obj) {
  %1 = call ptr @__kmpc_target_translate_fptr(ptr %fp)
  %r = call i32 %1(i32 1)
  call void @direct()
  %vt = load ptr, ptr %obj, align 8
  %2 = tail call ptr @__kmpc_target_translate_fptr(ptr %vt)
  %slot = getelementptr inbounds ptr, ptr %2, i64 1
  %fn = load ptr, ptr %slot, align 8
  %v = call i32 %fn(ptr %obj)
  %w = load atomic i64, ptr addrspace(3) @s acquire, align 8
  %wrapper = inttoptr i64 %w to ptr
  call void %wrapper(i16 0, i32 0)
  call void (ptr, ...) @printf(ptr %obj)
  ret void
}
define internal void @_RNvNtCs1_9devicertl8parallel16invoke_microtask(ptr %f) {
  call void %f()
  ret void
}
define i32 @printf(ptr %f) #7 {
  %r = call i32 %f()
  ret i32 %r
}
attributes #7 = { nounwind "rustomp-runtime" }
"#;

    #[test]
    fn translated_calls_pass_and_untranslated_ones_fail() {
        let s = check(IR);
        assert_eq!(
            (s.translated, s.translations, s.runtime),
            (2, 2, 3),
            "{s:?}"
        );
        assert!(s.problems.is_empty(), "{s:?}");
        let bad = IR.replace("%r = call i32 %1(i32 1)", "%r = call i32 %fp(i32 1)");
        assert_eq!(check(&bad).problems.len(), 1);
        let known = IR.replace("translate_fptr(ptr %fp)", "translate_fptr(ptr @direct)");
        assert!(check(&known)
            .problems
            .iter()
            .any(|p| p.contains("known function")));
    }

    #[test]
    fn callees_are_read_from_call_lines() {
        assert_eq!(
            indirect_callee("  %r = tail call noundef i32 %16(i32 noundef 9) #6"),
            Some("%16")
        );
        assert_eq!(
            indirect_callee("  invoke void %fp() to label %ok unwind label %bad"),
            Some("%fp")
        );
        assert_eq!(
            indirect_callee("  call void (ptr, i32, ...) @__kmpc_fork_call(ptr @1, i32 2, ptr %x)"),
            None
        );
        assert_eq!(indirect_callee("  %x = load ptr, ptr %y"), None);
    }
}
