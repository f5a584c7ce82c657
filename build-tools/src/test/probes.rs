//! Step 4 of `cargo xtask test`: every device symbol clang-22's code for the ABI probes
//! (`tests/abi-probes`) needs is defined by our bitcode, and each probe links in full for sm_90
//! and gfx90a.

use super::programs::{compile, is_cxx, link_undefined, sources, stem, JOBS};
use crate::cc::Runtime;
use crate::devicertl;
use crate::util::{self, at, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(super) fn probe_dir() -> Option<PathBuf> {
    let root = util::root();
    [
        root.join("tests/abi-probes"),
        root.join("../shared/abi-probes"),
    ]
    .into_iter()
    .find(|d| d.is_dir())
}

/// Functions declared (not defined) and external globals in a textual LLVM module, without `llvm.*`.
pub(super) fn needed_symbols(ll: &str) -> BTreeSet<String> {
    pub(super) fn symbol(after_at: &str) -> String {
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
pub(super) fn own_externs(src: &str, symbols: &BTreeSet<String>) -> BTreeSet<String> {
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

/// A full link of a probe for one GPU.
pub(super) struct Link {
    pub(super) arch: &'static str,
    pub(super) ok: bool,
    /// Undefined device symbols the link reported (the program's own externs left out).
    pub(super) undefined: BTreeSet<String>,
    pub(super) log: PathBuf,
}

pub(super) struct ProbeResult {
    pub(super) name: String,
    /// symbol -> opt levels whose device code needs it
    pub(super) missing: BTreeMap<String, Vec<&'static str>>,
    pub(super) compile_errors: Vec<String>,
    pub(super) links: Vec<Link>,
}

impl ProbeResult {
    pub(super) fn good(&self) -> bool {
        self.compile_errors.is_empty() && self.missing.is_empty() && self.links.iter().all(|l| l.ok)
    }
}

pub(super) const PROBE_ARCHS: [&str; 2] = ["sm_90", "gfx90a"];

/// Probes written with OpenMP 5.2's `declare target enter` need `-fopenmp-version=52`; the
/// others use 5.1's `declare target to`, which 5.2 rejects (clang-22 defaults to 5.1).
pub(super) fn probe_openmp_version(text: &str) -> &'static str {
    if text.contains("declare target enter") {
        "-fopenmp-version=52"
    } else {
        "-fopenmp-version=51"
    }
}

pub(super) fn probe(
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

pub(super) fn run() -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test::programs::link_undefined;

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
}
