//! Checks of the device runtime's machine code: PTX for nvptx64, GCN assembly for amdgcn. They
//! pin the properties the host emulation cannot see and that a later change could lose silently:
//!
//! - the barriers of a region on part of a team are a named `barrier.sync id, count`, or count
//!   arrivals with a fence before every relaxed RMW (clang-22's NVPTX backend drops the ordering
//!   of an acq_rel/release `atomicrmw`, so the fences must be explicit);
//! - the team barrier is the non-aligned `barrier.sync 0` (threads of a warp may arrive from
//!   different places in generic mode);
//! - the reduction's warp shuffles name the region's lanes, never `activemask()` (a subset after
//!   divergence): a shuffle's mask is the constant full mask or computed, not read from
//!   `activemask`.
use crate::bail;
use crate::devicertl::Target;
use crate::util::{self, Cmd, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Entry points whose synchronization is checked.
const SYNC_ROOTS: [&str; 3] = [
    "__kmpc_barrier",
    "__kmpc_copyprivate",
    "__kmpc_dispatch_init_4",
];
const SHUFFLE_ROOTS: [&str; 2] = ["__kmpc_shuffle_int32", "__kmpc_shuffle_int64"];

pub fn check(t: &Target, bc: &Path, work: &Path) -> Result<()> {
    let hint = "LLVM 22 tools are needed: `cargo xtask setup`";
    if t.triple.starts_with("nvptx") {
        let ptx = work.join("devicertl.ptx");
        Cmd::new("llc-22")
            .args(["-mcpu=sm_90", "-mattr=+ptx88"])
            .arg(bc)
            .arg("-o")
            .arg(&ptx)
            .hint(hint)
            .run()?;
        let text = util::read(&ptx)?;
        report(t, check_ptx(&text))
    } else {
        // LDS is laid out per kernel, so the runtime is compiled with a kernel that calls it.
        let kernel = work.join("check-kernel.ll");
        util::write(&kernel, AMDGCN_KERNEL)?;
        let linked = work.join("check.bc");
        Cmd::new("llvm-link-22")
            .arg(&kernel)
            .arg(bc)
            .arg("-o")
            .arg(&linked)
            .hint(hint)
            .run()?;
        let asm = work.join("devicertl.s");
        Cmd::new("llc-22")
            .args(["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx90a"])
            .arg(&linked)
            .arg("-o")
            .arg(&asm)
            .hint(hint)
            .output()?;
        let text = util::read(&asm)?;
        report(t, check_gcn(&text))
    }
}

const AMDGCN_KERNEL: &str = r#"target triple = "amdgcn-amd-amdhsa"
declare void @__kmpc_barrier(ptr, i32)
declare void @__kmpc_copyprivate(ptr, i32, i64, ptr, ptr, i32)
declare void @__kmpc_dispatch_init_4(ptr, i32, i32, i32, i32, i32, i32)
define amdgpu_kernel void @__rustomp_check_kernel() {
  call void @__kmpc_barrier(ptr null, i32 0)
  call void @__kmpc_copyprivate(ptr null, i32 0, i64 0, ptr null, ptr null, i32 0)
  call void @__kmpc_dispatch_init_4(ptr null, i32 0, i32 35, i32 0, i32 9, i32 1, i32 1)
  ret void
}
"#;

fn report(t: &Target, problems: Vec<String>) -> Result<()> {
    if problems.is_empty() {
        let what = if t.triple.starts_with("nvptx") {
            "named and fenced region barriers, non-aligned team barrier, shuffle masks not from activemask"
        } else {
            "s_barrier, memory waits before barrier arrivals"
        };
        println!("{}: machine code checked: {what}", t.triple);
        return Ok(());
    }
    bail!(
        "{}: the runtime's machine code lost a GPU property:\n    {}",
        t.triple,
        problems.join("\n    ")
    )
}

/// Function name -> its instructions (trimmed lines), for PTX.
fn ptx_functions(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut name: Option<String> = None;
    let mut body: Option<Vec<String>> = None;
    for line in ptx.lines() {
        if let Some(b) = body.as_mut() {
            if line == "}" {
                if let Some(n) = name.take() {
                    out.insert(n, body.take().unwrap_or_default());
                }
                body = None;
            } else {
                b.push(line.trim().to_string());
            }
            continue;
        }
        if let Some(n) = ptx_function_name(line) {
            name = Some(n);
        } else if line == "{" && name.is_some() {
            body = Some(Vec::new());
        } else if line.trim_end().ends_with(';') && !line.starts_with('\t') {
            name = None; // a declaration
        }
    }
    out
}

/// The name in a `.func`/`.entry` header line.
fn ptx_function_name(line: &str) -> Option<String> {
    let start = [".func", ".entry"]
        .iter()
        .filter_map(|k| line.find(k).map(|i| i + k.len()))
        .min()?;
    let mut rest = line[start..].trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "_$.".contains(*c))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Functions reachable from `root` through calls (itself included).
fn closure<'a>(functions: &'a BTreeMap<String, Vec<String>>, root: &str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(f) = todo.pop() {
        let Some((name, body)) = functions.get_key_value(&f) else {
            continue;
        };
        if !seen.insert(name.as_str()) {
            continue;
        }
        for line in body {
            for callee in callees(line) {
                if functions.contains_key(callee) {
                    todo.push(callee.to_string());
                }
            }
        }
    }
    seen
}

/// Symbol-like tokens of a call instruction (PTX `call ... name, (...)`, GCN `name@rel32@lo`).
fn callees(line: &str) -> Vec<&str> {
    if !(line.starts_with("call") || line.contains("@rel32@lo") || line.contains("@gotpcrel32@lo"))
    {
        return Vec::new();
    }
    line.split(|c: char| !(c.is_ascii_alphanumeric() || "_$.".contains(c)))
        .filter(|t| !t.is_empty())
        .collect()
}

fn any_line(
    functions: &BTreeMap<String, Vec<String>>,
    set: &BTreeSet<&str>,
    pred: impl Fn(&str) -> bool,
) -> bool {
    set.iter().any(|f| functions[*f].iter().any(|l| pred(l)))
}

fn check_ptx(ptx: &str) -> Vec<String> {
    let functions = ptx_functions(ptx);
    let mut problems = Vec::new();
    let has_fence = |f: &str| {
        closure(&functions, f)
            .iter()
            .any(|g| functions[*g].iter().any(|l| l.starts_with("fence.")))
    };
    for root in SYNC_ROOTS {
        if !functions.contains_key(root) {
            problems.push(format!("{root} is not in the PTX"));
            continue;
        }
        let set = closure(&functions, root);
        if !any_line(&functions, &set, |l| {
            l.starts_with("barrier.sync") && l.contains(',')
        }) {
            problems.push(format!(
                "{root}: no named barrier (`barrier.sync id, count`) for regions of whole warps"
            ));
        }
        let cta = |sem: &[&str]| {
            any_line(&functions, &set, |l| {
                sem.iter().any(|s| l.starts_with(&format!("fence.{s}.cta")))
            })
        };
        if !cta(&["release", "acq_rel", "sc"]) || !cta(&["acquire", "acq_rel", "sc"]) {
            problems.push(format!(
                "{root}: the counting barrier lacks its CTA-scope release or acquire fence"
            ));
        }
        // Every relaxed RMW must come after a fence in its own function.
        for f in &set {
            let mut fenced = false;
            for l in &functions[*f] {
                if l.starts_with("fence.")
                    || callees(l)
                        .iter()
                        .any(|c| functions.contains_key(*c) && has_fence(c))
                {
                    fenced = true;
                }
                let rmw = l.starts_with("atom.") && !l.contains(".cas") && !l.contains(".exch");
                let ordered = [".acq_rel", ".release", ".acquire"]
                    .iter()
                    .any(|q| l.contains(q));
                if rmw && !ordered && !fenced {
                    problems.push(format!(
                        "{root}: `{l}` in {f} is a relaxed RMW with no fence before it"
                    ));
                }
            }
        }
    }
    let team = closure(&functions, "__rustomp_team_barrier");
    if !any_line(&functions, &team, |l| {
        l.replace(['\t', ' '], "") == "barrier.sync0;"
    }) {
        problems.push("__rustomp_team_barrier: not `barrier.sync 0`".into());
    }
    if any_line(&functions, &team, |l| l.contains(".aligned")) {
        problems.push("__rustomp_team_barrier: uses the .aligned form (undefined when a warp's threads arrive from different places)".into());
    }
    for root in SHUFFLE_ROOTS {
        let set = closure(&functions, root);
        if !any_line(&functions, &set, |l| l.starts_with("shfl.sync")) {
            problems.push(format!("{root}: no shfl.sync"));
        }
        if any_line(&functions, &set, |l| l.starts_with("activemask")) {
            problems.push(format!("{root}: the shuffle mask comes from activemask (a subset of the lanes after divergence)"));
        }
    }
    problems
}

/// Function name -> instructions, for GCN assembly (`name:` ... `.Lfunc_endN:`).
fn gcn_functions(asm: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in asm.lines() {
        if line.starts_with(".Lfunc_end") {
            if let Some((n, b)) = current.take() {
                out.insert(n, b);
            }
            continue;
        }
        if let Some(label) = line
            .split(':')
            .next()
            .filter(|_| !line.starts_with(['\t', ' ', '.', ';']) && line.contains(':'))
        {
            if current.is_none() && !label.is_empty() {
                current = Some((label.to_string(), Vec::new()));
                continue;
            }
        }
        if let Some((_, b)) = current.as_mut() {
            let l = line.trim();
            if !l.is_empty() && !l.starts_with(';') {
                b.push(l.to_string());
            }
        }
    }
    out
}

fn check_gcn(asm: &str) -> Vec<String> {
    let functions = gcn_functions(asm);
    let mut problems = Vec::new();
    for root in SYNC_ROOTS {
        if !functions.contains_key(root) {
            problems.push(format!("{root} is not in the amdgcn assembly"));
            continue;
        }
        let set = closure(&functions, root);
        if !any_line(&functions, &set, |l| l == "s_barrier") {
            problems.push(format!("{root}: no s_barrier"));
        }
        // A workgroup-scope release before the arrival on team memory (flat or LDS; the heap's
        // and printf's counters are global and need no ordering): memory operations waited for.
        for f in &set {
            let mut waited = false;
            for l in &functions[*f] {
                if l.starts_with("s_waitcnt") {
                    waited = l.contains("vmcnt(0)");
                } else if l.starts_with("flat_atomic_add") || l.starts_with("ds_add") {
                    if !waited {
                        problems.push(format!(
                            "{root}: `{l}` in {f} without a memory wait (release) before it"
                        ));
                    }
                } else if l.starts_with("flat_store")
                    || l.starts_with("global_store")
                    || l.starts_with("ds_write")
                {
                    waited = false;
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = ".func _R4fence\n{\n\tfence.release.cta;\n\tfence.acquire.cta;\n\tret;\n}\n\
        .visible .func __kmpc_barrier(\n\t.param .b64 p\n)\n{\n\tcall.uni _R4fence, ();\n\tatom.add.u32 \t%r1, [%rd1], 1;\n\tbarrier.sync \t1, %r1;\n}\n\
        .visible .func __kmpc_copyprivate()\n{\n\tcall.uni __kmpc_barrier, (param0);\n}\n\
        .visible .func __kmpc_dispatch_init_4()\n{\n\tcall.uni __kmpc_barrier, (param0);\n}\n\
        .visible .func __rustomp_team_barrier()\n{\n\tbarrier.sync \t0;\n}\n\
        .visible .func  (.param .b32 func_retval0) __kmpc_shuffle_int32(\n)\n{\n\tshfl.sync.down.b32 \t%r5, %r1, %r2, %r4, -1;\n}\n\
        .visible .func  (.param .b64 func_retval0) __kmpc_shuffle_int64(\n)\n{\n\tcall.uni (retval0), __kmpc_shuffle_int32, (p);\n}\n";

    #[test]
    fn ptx_with_the_properties_passes() {
        assert_eq!(check_ptx(GOOD), Vec::<String>::new());
    }

    #[test]
    fn ptx_without_them_fails() {
        let unfenced = GOOD.replace("\tcall.uni _R4fence, ();\n", "");
        assert!(check_ptx(&unfenced)
            .iter()
            .any(|p| p.contains("relaxed RMW with no fence")));
        let no_named = GOOD.replace("barrier.sync \t1, %r1;", "");
        assert!(check_ptx(&no_named)
            .iter()
            .any(|p| p.contains("named barrier")));
        let active = GOOD.replace("\tshfl.sync", "\tactivemask.b32 \t%r9;\n\tshfl.sync");
        assert!(check_ptx(&active).iter().any(|p| p.contains("activemask")));
        let aligned = GOOD.replace("barrier.sync \t0;", "barrier.sync.aligned \t0;");
        assert!(!check_ptx(&aligned).is_empty());
    }
}
