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
    /// The most VGPRs a gfx90a kernel of the probe takes (`None`: not read), and the kernels
    /// over [`GFX90A_VGPR_LIMIT`].
    pub(super) gfx90a_vgprs: Option<u64>,
    pub(super) over_vgpr_limit: Vec<String>,
}

impl ProbeResult {
    pub(super) fn good(&self) -> bool {
        self.compile_errors.is_empty()
            && self.missing.is_empty()
            && self.links.iter().all(|l| l.ok)
            && self.over_vgpr_limit.is_empty()
    }
}

/// The most VGPRs a probe's gfx90a kernel may take. A kernel that calls runtime functions the
/// backend cannot see is given the register budget of an unknown callee (164 VGPRs on gfx90a,
/// what every generic kernel took while the runtime's amdgcn functions were exported, before
/// issue 32's item 13 hid them); above 128 a SIMD holds fewer waves.
pub(super) const GFX90A_VGPR_LIMIT: u64 = 128;

/// Kernels known to take more, with their own limit and why. `12_malloc_printf` formats a
/// `double` on the device (printf.rs, core::fmt's exact float formatting): 186 VGPRs. Moving
/// float formatting to the host, as LLVM's RPC printf does, would bring it under the limit but
/// needs printf's return value from the host; not done.
const GFX90A_VGPR_KNOWN: &[(&str, u64, &str)] = &[(
    "12_malloc_printf",
    192,
    "device-side float formatting in printf",
)];

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

/// Reads the VGPRs of each gfx90a kernel of `exe` from its code object's notes.
fn gfx90a_registers(r: &mut ProbeResult, exe: &Path) {
    use crate::bench::resources::{amdgpu_notes, parse_amdgpu_notes};
    let Ok(notes) = amdgpu_notes(exe) else {
        return;
    };
    let known = GFX90A_VGPR_KNOWN.iter().find(|k| k.0 == r.name);
    let limit = known.map_or(GFX90A_VGPR_LIMIT, |k| k.1);
    for kernel in parse_amdgpu_notes(&r.name, &notes) {
        let vgprs = kernel.fields.get("vgpr_count").copied().unwrap_or(0);
        r.gfx90a_vgprs = Some(r.gfx90a_vgprs.unwrap_or(0).max(vgprs));
        if vgprs > limit {
            r.over_vgpr_limit.push(format!(
                "{} takes {vgprs} VGPRs, more than {limit}",
                kernel.name
            ));
        }
    }
    if let (Some((_, _, why)), Some(v)) = (known, r.gfx90a_vgprs) {
        if v > GFX90A_VGPR_LIMIT {
            println!("    {}: known: {v} VGPRs ({why})", r.name);
        }
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
        gfx90a_vgprs: None,
        over_vgpr_limit: Vec::new(),
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
        if linked && arch == "gfx90a" {
            gfx90a_registers(&mut r, &exe);
        }
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
        "{:width$} | {:16} | {:10} | {:11} | gfx90a VGPRs (at most {GFX90A_VGPR_LIMIT})",
        "probe", "device symbols", "sm_90 link", "gfx90a link"
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
        let vgprs = r.gfx90a_vgprs.map_or("-".to_string(), |v| v.to_string());
        println!(
            "{:width$} | {sym:16} | {:10} | {:11} | {vgprs}",
            r.name,
            link(&r.links[0]),
            link(&r.links[1])
        );
        for over in &r.over_vgpr_limit {
            println!("    {}: gfx90a kernel {over}", r.name);
        }
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
