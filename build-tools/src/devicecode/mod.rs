//! Checks of the device runtime's machine code: PTX for nvptx64, GCN assembly for amdgcn. They
//! pin the properties the host emulation cannot see and that a later change could lose silently:
//!
//! - the barriers of a region on part of a team are a named `barrier.sync id, count` (whole
//!   warps) and, for any other count, an mbarrier on sm_80+ (`mbarrier.arrive`, then on sm_90
//!   `mbarrier.try_wait`, which parks the thread in hardware, and no `test_wait` spin; on sm_80
//!   `mbarrier.test_wait` with a `nanosleep` between tests: a hardware barrier racecheck sees)
//!   or, below sm_80 (checked on an sm_70 compile, which must hold no mbarrier instruction),
//!   arrivals counted with a fence
//!   before every relaxed RMW (clang-22's NVPTX backend drops the ordering of an
//!   acq_rel/release `atomicrmw`, so the fences must be explicit);
//! - the team barrier is the non-aligned `barrier.sync 0` (threads of a warp may arrive from
//!   different places in generic mode);
//! - the reduction's warp shuffles name the region's lanes, never `activemask()` (a subset after
//!   divergence): a shuffle's mask is the constant full mask or computed, not read from
//!   `activemask`;
//! - `__llvm_omp_host_call` does no atomic read-modify-write on the port in host memory (PCIe
//!   need not carry atomics): its RMWs are on `.global` device memory, the port's state word is
//!   published with `st.release.sys` and waited for with `ld.acquire.sys` (a strong load, read
//!   again on every iteration);
//! - the chunk loop of `target teams distribute parallel for reduction(+: sum)` as clang-22
//!   builds it with this runtime for sm_90 ([`check_reduction_probe`], on the per-unit bitcode):
//!   a way around the loop through the parallel reduction with at most one `bar.sync` (the
//!   region's closing barrier), no shuffle, atomic, fence or mbarrier, that way passing the
//!   deferral (`reduction::deferred::defer`: the thread's value to its stash, none of those
//!   either); no atomic anywhere in the loop.
use crate::bail;
use crate::util::{self, Cmd, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod chunk_loop;
pub use chunk_loop::check_reduction_probe;

/// Entry points whose synchronization is checked.
const SYNC_ROOTS: [&str; 3] = [
    "__kmpc_barrier",
    "__kmpc_copyprivate",
    "__kmpc_dispatch_init_4",
];
const SHUFFLE_ROOTS: [&str; 2] = ["__kmpc_shuffle_int32", "__kmpc_shuffle_int64"];
const HOST_CALL_ROOT: &str = "__llvm_omp_host_call";

pub fn check(triple: &str, bc: &Path, work: &Path) -> Result<()> {
    let hint = "LLVM 22 tools are needed: `cargo xtask setup`";
    if triple.starts_with("nvptx") {
        // The runtime picks its barrier for a region that is not whole warps by the target
        // (`__nvvm_reflect("__CUDA_ARCH")`, folded by llc as by clang): both kinds are checked.
        let mut problems = Vec::new();
        for (cpu, file, barrier) in [
            ("sm_90", "devicertl.ptx", SubsetBarrier::TryWait),
            ("sm_80", "devicertl-sm_80.ptx", SubsetBarrier::TestWait),
            ("sm_70", "devicertl-sm_70.ptx", SubsetBarrier::Counting),
        ] {
            let ptx = work.join(file);
            Cmd::new("llc-22")
                .args([&format!("-mcpu={cpu}"), "-mattr=+ptx88"])
                .arg(bc)
                .arg("-o")
                .arg(&ptx)
                .hint(hint)
                .run()?;
            let text = util::read(&ptx)?;
            problems.extend(
                check_ptx(&text, barrier)
                    .into_iter()
                    .map(|p| format!("{cpu}: {p}")),
            );
        }
        report(triple, problems)
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
        // gfx90a and gfx942 write back and invalidate L2 for system-scope ordering: both are
        // checked for it in the runtime's spin loops.
        let mut problems = Vec::new();
        for (cpu, file) in [("gfx90a", "devicertl.s"), ("gfx942", "devicertl-gfx942.s")] {
            let asm = work.join(file);
            Cmd::new("llc-22")
                .args(["-mtriple=amdgcn-amd-amdhsa", &format!("-mcpu={cpu}")])
                .arg(&linked)
                .arg("-o")
                .arg(&asm)
                .hint(hint)
                .output()?;
            let text = util::read(&asm)?;
            problems.extend(check_gcn(&text).into_iter().map(|p| format!("{cpu}: {p}")));
        }
        report(triple, problems)
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

fn report(triple: &str, problems: Vec<String>) -> Result<()> {
    if problems.is_empty() {
        let what = if triple.starts_with("nvptx") {
            "named barriers, mbarrier (try_wait on sm_90, test_wait and nanosleep on sm_80) or fenced counting barrier (sm_70) for other counts, non-aligned team barrier, shuffle masks not from activemask, host calls without RMW on host memory"
        } else {
            "s_barrier, memory waits before barrier arrivals, no L2 write-back or invalidate in spin loops but the host call's (gfx90a, gfx942)"
        };
        println!("{}: machine code checked: {what}", triple);
        return Ok(());
    }
    bail!(
        "{}: the runtime's machine code lost a GPU property:\n    {}",
        triple,
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

/// How a region that is not whole warps meets, by target.
#[derive(Clone, Copy, PartialEq)]
enum SubsetBarrier {
    /// sm_90 and later: an mbarrier waited for with `try_wait`, which parks the thread.
    TryWait,
    /// sm_80 to sm_89: an mbarrier polled with `test_wait`, a `nanosleep` between polls.
    TestWait,
    /// Below sm_80: arrivals counted in memory, no mbarrier instruction.
    Counting,
}

fn check_ptx(ptx: &str, barrier: SubsetBarrier) -> Vec<String> {
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
        let has = |op: &str| any_line(&functions, &set, |l| l.starts_with(op));
        match barrier {
            SubsetBarrier::TryWait => {
                if !has("mbarrier.arrive") || !has("mbarrier.try_wait") {
                    problems.push(format!(
                        "{root}: no mbarrier (arrive and try_wait) for regions that are not whole warps"
                    ));
                }
                if has("mbarrier.test_wait") {
                    problems.push(format!(
                        "{root}: the mbarrier is polled with test_wait on sm_90, where try_wait parks"
                    ));
                }
            }
            SubsetBarrier::TestWait => {
                if !has("mbarrier.arrive") || !has("mbarrier.test_wait") {
                    problems.push(format!(
                        "{root}: no mbarrier (arrive and test_wait) for regions that are not whole warps"
                    ));
                }
                if !has("nanosleep") {
                    problems.push(format!("{root}: test_wait polled without a nanosleep"));
                }
            }
            SubsetBarrier::Counting => {
                if has("mbarrier") {
                    problems.push(format!("{root}: an mbarrier instruction below sm_80"));
                }
                if !cta(&["release", "acq_rel", "sc"]) || !cta(&["acquire", "acq_rel", "sc"]) {
                    problems.push(format!(
                        "{root}: the counting barrier lacks its CTA-scope release or acquire fence"
                    ));
                }
            }
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
    problems.extend(check_host_call(&functions));
    problems
}

/// `__llvm_omp_host_call` talks to the host through a port in host memory: loads and stores
/// only there (an `atom` on a generic address may be the port), a system-scope release store
/// of the state and a system-scope acquire load to wait for the answer.
fn check_host_call(functions: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let root = HOST_CALL_ROOT;
    if !functions.contains_key(root) {
        return vec![format!("{root} is not in the PTX")];
    }
    let set = closure(functions, root);
    let mut problems = Vec::new();
    for f in &set {
        for l in &functions[*f] {
            let rmw = l.starts_with("atom.") || l.starts_with("red.");
            if rmw && !l.contains(".global") {
                problems.push(format!(
                    "{root}: `{l}` in {f} is an atomic RMW that may reach the port in host memory \
                     (only loads and stores may cross PCIe; take turns through device memory)"
                ));
            }
        }
    }
    let generic_sys = |op: &str| {
        any_line(functions, &set, |l| {
            l.starts_with(op) && !l.contains(".shared") && !l.contains(".global")
        })
    };
    if !generic_sys("st.release.sys") {
        problems.push(format!(
            "{root}: no `st.release.sys` publishing the request to the host"
        ));
    }
    if !generic_sys("ld.acquire.sys") {
        problems.push(format!(
            "{root}: no `ld.acquire.sys` waiting for the host's answer (a weak or cached load may never see it)"
        ));
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

/// L2 cache maintenance on gfx90a (`buffer_wbl2`, `buffer_invl2`) and gfx942 (`buffer_wbl2 sc1`,
/// `buffer_inv sc1`, and the `global_wb`/`global_inv` forms): what system-scope ordering costs.
fn is_l2_maintenance(line: &str) -> bool {
    line.starts_with("buffer_wbl2")
        || line.starts_with("buffer_invl2")
        || (line.starts_with("buffer_inv") && line.contains("sc1"))
        || line.starts_with("global_wb")
        || line.starts_with("global_inv")
}

/// Spin loops (a loop whose body sleeps, `s_sleep`) of `names` that write back or invalidate
/// L2 on every iteration: each `function: label` with the instruction.
fn l2_maintenance_in_spins<'a>(
    functions: &BTreeMap<String, Vec<String>>,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut found = Vec::new();
    for name in names {
        let Some(lines) = functions.get(name) else {
            continue;
        };
        for (start, line) in lines.iter().enumerate() {
            let Some((label, _)) = line.split_once(':').filter(|(l, _)| l.starts_with(".LBB"))
            else {
                continue;
            };
            // The loop: from its label to the last branch back to it.
            let Some(end) = lines
                .iter()
                .rposition(|l| l.starts_with("s_cbranch") && l.ends_with(label))
                .filter(|&end| end > start)
            else {
                continue;
            };
            let body = &lines[start..=end];
            if !body.iter().any(|l| l.starts_with("s_sleep")) {
                continue;
            }
            if let Some(l) = body.iter().find(|l| is_l2_maintenance(l)) {
                found.push(format!(
                    "{name}: spin loop {label} does `{l}` on every iteration"
                ));
            }
        }
    }
    found
}

/// The functions whose spins may order at system scope: the host call waits on host memory, and
/// so does Fortran output from the device (amdgcn's LTO inlines the host call into it, whatever
/// the source says).
fn may_spin_at_system_scope(function: &str) -> bool {
    function == "__llvm_omp_host_call"
        || function.starts_with("_FortranAio")
        || function.contains("10fortran_io")
}

fn check_gcn(asm: &str) -> Vec<String> {
    let functions = gcn_functions(asm);
    // Every other spin (locks, critical sections, doacross waits, the teams reduction's turn)
    // reads relaxed and orders once after: no L2 maintenance on each turn.
    let mut problems = l2_maintenance_in_spins(
        &functions,
        functions
            .keys()
            .map(String::as_str)
            .filter(|f| !may_spin_at_system_scope(f)),
    );
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
        // and printf's counters are global and need no ordering): memory operations waited for
        // (LDS ones, `lgkmcnt(0)`, are what workgroup scope waits for outside tgsplit mode).
        for f in &set {
            let mut waited = false;
            for l in &functions[*f] {
                if l.starts_with("s_waitcnt") {
                    waited = l.contains("vmcnt(0)") || l.contains("lgkmcnt(0)");
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
        .visible .func __kmpc_barrier(\n\t.param .b64 p\n)\n{\n\tcall.uni _R4fence, ();\n\tatom.add.u32 \t%r1, [%rd1], 1;\n\tbarrier.sync \t1, %r1;\n\tMBARRIER\n}\n\
        .visible .func __kmpc_copyprivate()\n{\n\tcall.uni __kmpc_barrier, (param0);\n}\n\
        .visible .func __kmpc_dispatch_init_4()\n{\n\tcall.uni __kmpc_barrier, (param0);\n}\n\
        .visible .func __rustomp_team_barrier()\n{\n\tbarrier.sync \t0;\n}\n\
        .visible .func  (.param .b32 func_retval0) __kmpc_shuffle_int32(\n)\n{\n\tshfl.sync.down.b32 \t%r5, %r1, %r2, %r4, -1;\n}\n\
        .visible .func  (.param .b64 func_retval0) __kmpc_shuffle_int64(\n)\n{\n\tcall.uni (retval0), __kmpc_shuffle_int32, (p);\n}\n\
        .visible .func  (.param .b64 func_retval0) __llvm_omp_host_call(\n)\n{\n\tatom.acquire.sys.global.cas.b32 \t%r1, [__rustomp_host_call_lock], 0, 1;\n\tst.release.sys.b32 \t[%rd7], 2;\n\tld.acquire.sys.b32 \t%r2, [%rd7];\n}\n";

    const TRY_WAIT: &str = "mbarrier.arrive.shared.b64 \t%rd2, [%rd3];\n\tmbarrier.try_wait.shared.b64 %p1, [%rd3], %rd2;";
    const TEST_WAIT: &str = "mbarrier.arrive.shared.b64 \t%rd2, [%rd3];\n\tmbarrier.test_wait.shared.b64 \t%p1, [%rd3], %rd2;\n\tnanosleep.u32 32;";

    /// The PTX of each target: sm_90 (try_wait), sm_80 (test_wait and a sleep), sm_70
    /// (the counting barrier only).
    fn good_for(barrier: SubsetBarrier) -> String {
        let mbarrier = match barrier {
            SubsetBarrier::TryWait => TRY_WAIT,
            SubsetBarrier::TestWait => TEST_WAIT,
            SubsetBarrier::Counting => "",
        };
        GOOD.replace("MBARRIER", mbarrier)
    }

    /// sm_90's PTX, or with `false` sm_70's.
    fn good(mbarrier: bool) -> String {
        good_for(if mbarrier {
            SubsetBarrier::TryWait
        } else {
            SubsetBarrier::Counting
        })
    }

    fn check(ptx: &str) -> Vec<String> {
        check_ptx(ptx, SubsetBarrier::TryWait)
    }

    #[test]
    fn ptx_with_the_properties_passes() {
        for barrier in [
            SubsetBarrier::TryWait,
            SubsetBarrier::TestWait,
            SubsetBarrier::Counting,
        ] {
            assert_eq!(check_ptx(&good_for(barrier), barrier), Vec::<String>::new());
        }
    }

    #[test]
    fn ptx_without_them_fails() {
        let unfenced = good(true).replace("\tcall.uni _R4fence, ();\n", "");
        assert!(check(&unfenced)
            .iter()
            .any(|p| p.contains("relaxed RMW with no fence")));
        assert!(check_ptx(
            &good(false).replace("\tcall.uni _R4fence, ();\n", ""),
            SubsetBarrier::Counting
        )
        .iter()
        .any(|p| p.contains("lacks its CTA-scope")));
        let no_named = good(true).replace("barrier.sync \t1, %r1;", "");
        assert!(check(&no_named).iter().any(|p| p.contains("named barrier")));
        let active = good(true).replace("\tshfl.sync", "\tactivemask.b32 \t%r9;\n\tshfl.sync");
        assert!(check(&active).iter().any(|p| p.contains("activemask")));
        let aligned = good(true).replace("barrier.sync \t0;", "barrier.sync.aligned \t0;");
        assert!(!check(&aligned).is_empty());
    }

    /// What the H200 run's runtime had for a region of 40 threads: only the counting barrier,
    /// which racecheck cannot see (16 race reports in program 120).
    #[test]
    fn ptx_without_an_mbarrier_on_sm_90_fails() {
        assert!(check_ptx(&good(false), SubsetBarrier::TryWait)
            .iter()
            .any(|p| p.contains("no mbarrier")));
        assert!(check_ptx(&good(true), SubsetBarrier::Counting)
            .iter()
            .any(|p| p.contains("below sm_80")));
    }

    /// What the runtime had before try_wait (issue 32, item 4): sm_90 spinning on test_wait,
    /// and a test_wait loop with no sleep on sm_80.
    #[test]
    fn an_mbarrier_spin_fails() {
        let spinning = good_for(SubsetBarrier::TestWait).replace("\n\tnanosleep.u32 32;", "");
        assert!(check_ptx(&spinning, SubsetBarrier::TryWait)
            .iter()
            .any(|p| p.contains("polled with test_wait on sm_90")));
        assert!(check_ptx(&spinning, SubsetBarrier::TestWait)
            .iter()
            .any(|p| p.contains("without a nanosleep")));
    }

    /// What the H200 run's runtime had: the port claimed with a compare-exchange on the port
    /// itself, in host memory (`atom.acquire.sys.cas.b32 [%rd7], 0, 1` in its PTX).
    #[test]
    fn host_call_ptx_without_them_fails() {
        let on_port = good(true).replace(
            "atom.acquire.sys.global.cas.b32 \t%r1, [__rustomp_host_call_lock], 0, 1;",
            "atom.acquire.sys.cas.b32 \t%r1, [%rd7], 0, 1;",
        );
        assert!(check(&on_port)
            .iter()
            .any(|p| p.contains("may reach the port")));
        let weak_wait = good(true).replace("ld.acquire.sys.b32", "ld.b32");
        assert!(check(&weak_wait)
            .iter()
            .any(|p| p.contains("ld.acquire.sys")));
        let weak_post = good(true).replace("st.release.sys.b32", "st.b32");
        assert!(check(&weak_post)
            .iter()
            .any(|p| p.contains("st.release.sys")));
    }

    #[test]
    fn l2_maintenance_in_a_spin_loop_is_found() {
        let asm = "f:\n\ts_mov_b32 s0, 0\n.LBB0_14:                               ; %spin\n\ts_sleep 1\n\tflat_load_dword v2, v[0:1] glc\n\tbuffer_invl2\n\ts_cbranch_execnz .LBB0_14\n\tbuffer_wbl2\n.Lfunc_end0:\n";
        let found = l2_maintenance_in_spins(&gcn_functions(asm), ["f"]);
        assert_eq!(
            found,
            vec!["f: spin loop .LBB0_14 does `buffer_invl2` on every iteration".to_string()]
        );
        let fenced_once = asm.replace("\tbuffer_invl2\n\ts_cbranch", "\ts_cbranch");
        assert!(l2_maintenance_in_spins(&gcn_functions(&fenced_once), ["f"]).is_empty());
        assert!(is_l2_maintenance("buffer_inv sc1") && !is_l2_maintenance("buffer_inv sc0"));
    }
}
