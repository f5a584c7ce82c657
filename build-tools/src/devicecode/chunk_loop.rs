//! The chunk loop of `target teams distribute parallel for reduction(+: sum)` as clang-22
//! builds it with this runtime for sm_90: compiled from a probe, its PTX split into basic
//! blocks, and the cheapest way around the loop read for barriers, shuffles, atomics and
//! fences (see the parent module's list).

use super::{callees, ptx_functions};
use crate::bail;
use crate::util::{self, Cmd, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// The combined construct whose chunk loop [`check_reduction_probe`] reads.
const REDUCTION_PROBE: &str = r#"
double probe_sum(const double *x, unsigned long n) {
  double sum = 0.0;
#pragma omp target teams distribute parallel for reduction(+: sum) is_device_ptr(x) map(tofrom: sum)
  for (unsigned long i = 0; i < n; i++) sum += x[i];
  return sum;
}
"#;

/// What the deferral function is called in the PTX (`reduction::deferred::defer`, mangled).
const DEFER_FN: &str = "8deferred5defer";
const PARALLEL_REDUCE_FN: &str = "__kmpc_nvptx_parallel_reduce_nowait_v2";

/// Compiles [`REDUCTION_PROBE`] for sm_90 with the per-unit runtime bitcode `bc` (as `cargo
/// xtask cc` would: the CUDA tools of `cargo xtask setup` for the PTX version) and checks its
/// chunk loop ([`check_chunk_loop`]). Without the CUDA tools it says so and checks nothing.
pub fn check_reduction_probe(bc: &Path, work: &Path) -> Result<()> {
    // Where `cargo xtask setup` puts them (`setup::cuda_dir`; not called, to keep this module
    // off `setup`'s dependencies).
    let cuda = util::at("target/tools/cuda");
    if !cuda.join("bin").is_dir() {
        println!("nvptx64-nvidia-cuda: reduction probe not compiled (no CUDA tools: `cargo xtask setup`)");
        return Ok(());
    }
    // A whole compile (the device unit gets the runtime linked in only then); `-save-temps`
    // keeps the device unit's PTX, which is what ptxas gets.
    let dir = work.join("reduction-probe");
    std::fs::create_dir_all(&dir).map_err(|e| util::Error(format!("{}: {e}", util::show(&dir))))?;
    let src = dir.join("probe.c");
    util::write(&src, REDUCTION_PROBE)?;
    Cmd::new("clang-22")
        .args([
            "-fopenmp",
            "--offload-arch=sm_90",
            "-O2",
            "-c",
            "-save-temps",
        ])
        .arg(format!("--cuda-path={}", cuda.display()))
        .arg(format!("--libomptarget-nvptx-bc-path={}", bc.display()))
        .arg(&src)
        .arg("-o")
        .arg(dir.join("probe.o"))
        .current_dir(&dir)
        .hint("clang-22 is needed: `cargo xtask setup`")
        .run()?;
    let ptx = dir.join("probe-openmp-nvptx64-nvidia-cuda-sm_90.s");
    let problems = check_chunk_loop(&util::read(&ptx)?);
    if problems.is_empty() {
        println!(
            "nvptx64-nvidia-cuda: reduction probe checked: one bar.sync and no shuffle, atomic or fence per chunk, the chunk's reduction deferred to the stash"
        );
        return Ok(());
    }
    bail!(
        "nvptx64-nvidia-cuda: the chunk loop of `teams distribute parallel for reduction` ({}) lost its cost:\n    {}",
        util::show(&ptx),
        problems.join("\n    ")
    )
}

/// A basic block of a PTX function: its name (`BB<f>_<n>`), instructions, successors.
#[derive(Debug)]
struct Block {
    name: String,
    insts: Vec<String>,
    succ: Vec<usize>,
}

/// The `BB<f>_<n>` a block-start line names: a label `$L__BB0_7:` or LLVM's `// %bb.7:`
/// (`f` taken from the function's labels).
fn block_start(line: &str, f: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix("$L__") {
        let name: String = rest.chars().take_while(|c| *c != ':').collect();
        return rest.contains(':').then_some(name);
    }
    let n = line.strip_prefix("// %bb.")?;
    let n: String = n.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!n.is_empty()).then(|| format!("BB{f}_{n}"))
}

fn branch_target(inst: &str) -> Option<String> {
    let at = inst.find("$L__")?;
    Some(
        inst[at + 4..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// The basic blocks of a function body (trimmed lines, as [`ptx_functions`] gives them).
fn ptx_blocks(body: &[String]) -> Vec<Block> {
    let f = body
        .iter()
        .find_map(|l| l.strip_prefix("$L__BB"))
        .map(|r| r.split('_').next().unwrap_or("0").to_string())
        .unwrap_or_else(|| "0".into());
    let mut blocks = vec![Block {
        name: "entry".into(),
        insts: Vec::new(),
        succ: Vec::new(),
    }];
    for line in body {
        if let Some(name) = block_start(line, &f) {
            // A `// %bb.N:` right after a label names the same block.
            let last = blocks.last_mut().expect("entry");
            if last.insts.is_empty() && last.name != "entry" && line.starts_with("//") {
                continue;
            }
            if last.insts.is_empty() && last.name == "entry" {
                last.name = name;
            } else {
                blocks.push(Block {
                    name,
                    insts: Vec::new(),
                    succ: Vec::new(),
                });
            }
            continue;
        }
        if line.is_empty()
            || line.starts_with("//")
            || line.starts_with('.')
            || line.starts_with('{')
            || line.starts_with('}')
        {
            continue;
        }
        blocks.last_mut().expect("entry").insts.push(line.clone());
    }
    let index: BTreeMap<String, usize> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.clone(), i))
        .collect();
    for i in 0..blocks.len() {
        let mut succ = Vec::new();
        let mut falls = true;
        for inst in &blocks[i].insts {
            let op = inst.split_whitespace().next().unwrap_or("");
            let guarded = op.starts_with('@');
            let op = if guarded {
                inst.split_whitespace().nth(1).unwrap_or("")
            } else {
                op
            };
            if op.starts_with("bra") {
                if let Some(t) = branch_target(inst).and_then(|t| index.get(&t)) {
                    succ.push(*t);
                }
                if !guarded {
                    falls = false;
                }
            } else if !guarded
                && (op.starts_with("ret") || op.starts_with("trap") || op.starts_with("exit"))
            {
                falls = false;
            }
        }
        if falls && i + 1 < blocks.len() {
            succ.push(i + 1);
        }
        blocks[i].succ = succ;
    }
    blocks
}

/// The opcode of an instruction (past a `@%p` / `@!%p` guard).
fn opcode(inst: &str) -> &str {
    inst.split_whitespace()
        .find(|t| !t.starts_with('@'))
        .unwrap_or("")
}

/// Instructions that must not run per chunk: shuffles, atomics, fences, mbarriers.
fn forbidden_per_chunk(inst: &str) -> bool {
    let op = opcode(inst);
    ["shfl", "atom", "red.", "fence", "membar", "mbarrier"]
        .iter()
        .any(|f| op.starts_with(f))
}

fn is_barrier(inst: &str) -> bool {
    let op = opcode(inst);
    op.starts_with("barrier.sync")
        || op.starts_with("bar.sync")
        || op.starts_with("barrier.cta.sync")
}

fn returns(block: &Block) -> bool {
    block.insts.iter().any(|i| opcode(i).starts_with("ret"))
}

/// Fewest barriers on a way from block `from` (its own cost not counted) to a block `to`
/// accepts (its cost counted), through blocks whose cost `cost` allows (None: not allowed).
fn cheapest(
    blocks: &[Block],
    from: usize,
    to: &dyn Fn(usize) -> bool,
    cost: &dyn Fn(usize) -> Option<u32>,
) -> Option<u32> {
    let mut best: Vec<Option<u32>> = vec![None; blocks.len()];
    let mut todo = std::collections::BinaryHeap::new();
    let mut found: Option<u32> = None;
    todo.push(std::cmp::Reverse((0u32, from)));
    let mut first = true;
    while let Some(std::cmp::Reverse((c, b))) = todo.pop() {
        if !first && best[b] != Some(c) {
            continue;
        }
        first = false;
        for &n in &blocks[b].succ {
            let Some(k) = cost(n) else { continue };
            if to(n) {
                found = Some(found.map_or(c + k, |f| f.min(c + k)));
                continue;
            }
            if best[n].is_none_or(|old| c + k < old) {
                best[n] = Some(c + k);
                todo.push(std::cmp::Reverse((c + k, n)));
            }
        }
    }
    found
}

/// The callee of a `call` instruction, if defined in `functions`.
fn call_target<'a>(inst: &str, functions: &'a BTreeMap<String, Vec<String>>) -> Option<&'a str> {
    callees(inst)
        .into_iter()
        .find_map(|c| functions.get_key_value(c).map(|(k, _)| k.as_str()))
}

/// Barriers on the cheapest allowed way through `function` from its entry to a `ret`; None
/// when no way avoids shuffles, atomics, fences, mbarriers (or calls of functions without one).
/// `through`: the way must pass a block calling a function whose name contains it.
fn function_cost(
    functions: &BTreeMap<String, Vec<String>>,
    function: &str,
    through: Option<&str>,
    depth: u32,
) -> Option<u32> {
    let body = functions.get(function)?;
    let blocks = ptx_blocks(body);
    let cost = |b: usize| block_cost(functions, &blocks[b], depth);
    let ret = |b: usize| returns(&blocks[b]);
    // From the entry (counted) to `v` (counted once), then to a return.
    let via = |v: usize| -> Option<u32> {
        let there = if v == 0 {
            cost(0)?
        } else {
            cost(0)? + cheapest(&blocks, 0, &|b| b == v, &cost)?
        };
        let back = if ret(v) {
            0
        } else {
            cheapest(&blocks, v, &ret, &cost)?
        };
        Some(there + back)
    };
    match through {
        None => (0..blocks.len()).filter(|&b| ret(b)).filter_map(via).min(),
        Some(name) => (0..blocks.len())
            .filter(|&b| {
                blocks[b]
                    .insts
                    .iter()
                    .any(|i| opcode(i).starts_with("call") && i.contains(name))
            })
            .filter_map(via)
            .min(),
    }
}

/// A block's barriers, and those of the cheapest way through what it calls; None when it runs
/// something not allowed per chunk.
fn block_cost(functions: &BTreeMap<String, Vec<String>>, block: &Block, depth: u32) -> Option<u32> {
    let mut cost = 0;
    for inst in &block.insts {
        if forbidden_per_chunk(inst) {
            return None;
        }
        if is_barrier(inst) {
            cost += 1;
        }
        if opcode(inst).starts_with("call") {
            let callee = call_target(inst, functions)?;
            if depth > 4 {
                return None;
            }
            cost += function_cost(functions, callee, None, depth + 1)?;
        }
    }
    Some(cost)
}

/// The chunk loop of the probe kernel: the largest cycle through its loads of `x` (the
/// element loop of each chunk region and the loop over chunks around it).
fn check_chunk_loop(ptx: &str) -> Vec<String> {
    let functions = ptx_functions(ptx);
    let mut problems = Vec::new();
    let Some(kernel) = functions
        .keys()
        .find(|k| k.starts_with("__omp_offloading_"))
    else {
        return vec!["no kernel in the probe's PTX".into()];
    };
    let blocks = ptx_blocks(&functions[kernel]);
    let reach = |from: usize, forward: bool| {
        let mut seen = vec![false; blocks.len()];
        let mut todo = vec![from];
        while let Some(b) = todo.pop() {
            if std::mem::replace(&mut seen[b], true) {
                continue;
            }
            if forward {
                todo.extend(&blocks[b].succ);
            } else {
                todo.extend((0..blocks.len()).filter(|&p| blocks[p].succ.contains(&b)));
            }
        }
        seen
    };
    let loop_of = |b: usize| {
        let (f, r) = (reach(b, true), reach(b, false));
        (0..blocks.len())
            .filter(|&i| f[i] && r[i])
            .collect::<Vec<_>>()
    };
    let chunk_loop = (0..blocks.len())
        .filter(|&b| blocks[b].insts.iter().any(|i| i.starts_with("ld.global")))
        .map(loop_of)
        .max_by_key(|l| l.len())
        .unwrap_or_default();
    if chunk_loop.len() < 2 {
        return vec![format!("{kernel}: no loop around the loads of the array")];
    }
    for &b in &chunk_loop {
        for i in &blocks[b].insts {
            if i.starts_with("atom") || i.starts_with("red.") || i.contains(" atom.") {
                problems.push(format!(
                    "{kernel}: `{i}` in the chunk loop (block {}): an atomic per chunk",
                    blocks[b].name
                ));
            }
        }
    }
    // The block that calls the reduction: the way around the loop must pass it (threads
    // outside the region skip it).
    let calls = |b: usize, name: &str| {
        blocks[b]
            .insts
            .iter()
            .any(|i| i.starts_with("call") && i.contains(name))
    };
    let Some(&reduce) = chunk_loop
        .iter()
        .find(|&&b| calls(b, PARALLEL_REDUCE_FN) || calls(b, DEFER_FN))
    else {
        problems.push(format!(
            "{kernel}: the chunk loop calls neither {PARALLEL_REDUCE_FN} nor the deferral"
        ));
        return problems;
    };
    let in_loop = |b: usize| chunk_loop.contains(&b);
    let plain = |b: usize| {
        if in_loop(b) {
            block_cost(&functions, &blocks[b], 0)
        } else {
            None
        }
    };
    // The reduction's own cost: the deferral's way (through `defer`, which must be free of
    // barriers, shuffles, atomics, fences).
    let reduce_cost = if calls(reduce, DEFER_FN) {
        block_cost(&functions, &blocks[reduce], 0)
    } else {
        let mut rest = blocks[reduce].insts.clone();
        rest.retain(|i| !(i.starts_with("call") && i.contains(PARALLEL_REDUCE_FN)));
        let others = block_cost(
            &functions,
            &Block {
                name: String::new(),
                insts: rest,
                succ: Vec::new(),
            },
            0,
        );
        let through = function_cost(&functions, PARALLEL_REDUCE_FN, Some(DEFER_FN), 0);
        if through.is_none() {
            problems.push(format!(
                "{PARALLEL_REDUCE_FN}: no way from its entry to its return through the deferral ({DEFER_FN}) without barriers, shuffles, atomics or fences: the chunk regions reduce across the team every chunk"
            ));
        }
        // Without an allowed way through the reduction (reported above), the loop's own
        // barriers are still counted below.
        others.map(|a| a + through.unwrap_or(0))
    };
    match functions.keys().find(|k| k.contains(DEFER_FN)) {
        None => problems.push(format!(
            "no deferral function ({DEFER_FN}) in the probe's PTX"
        )),
        Some(defer) => {
            for i in &functions[defer] {
                if forbidden_per_chunk(i) || is_barrier(i) || i.starts_with("call") {
                    problems.push(format!(
                        "{defer}: `{i}`: the deferral must not synchronize or call"
                    ));
                }
            }
        }
    }
    // The team's way around the loop passes the region's barriers (a thread alone in a
    // serialized region passes none): the fewest on a way through the reduction and a barrier.
    let cost = |b: usize| if b == reduce { reduce_cost } else { plain(b) };
    let around = chunk_loop
        .iter()
        .filter(|&&b| blocks[b].insts.iter().any(|i| is_barrier(i)))
        .filter_map(|&b| {
            if b == reduce {
                return cheapest(&blocks, reduce, &|n| n == reduce, &cost);
            }
            Some(
                cheapest(&blocks, reduce, &|n| n == b, &cost)?
                    + cheapest(&blocks, b, &|n| n == reduce, &cost)?,
            )
        })
        .min();
    match around {
        Some(barriers) if barriers <= 1 => {}
        Some(barriers) => problems.push(format!(
            "{kernel}: every way of the team around the chunk loop meets {barriers} bar.sync (at most the region's closing one expected)"
        )),
        None => problems.push(format!(
            "{kernel}: no way of the team around the chunk loop through the reduction avoids shuffles, atomics, fences or mbarriers"
        )),
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk loop as the probe kernel has it: the region's barriers (opening pair on the
    /// slow way only: `OPEN`), the element loop, the reduction call, the closing barrier.
    const CHUNK_LOOP: &str = ".weak .entry __omp_offloading_k(\n)\n{\n\tmov.u32 \t%r1, %tid.x;\n$L__BB0_1:\n\t@%p1 bra \t$L__BB0_3;\n// %bb.2:\n\tOPEN\n$L__BB0_3:\n\tld.global.b64 \t%rd1, [%rd2];\n\t@%p2 bra \t$L__BB0_3;\n// %bb.4:\n\tcall.uni (retval0), __kmpc_nvptx_parallel_reduce_nowait_v2, (param0);\n\tbarrier.sync \t0;\n\t@%p3 bra \t$L__BB0_1;\n// %bb.5:\n\tatom.add.u32 \t%r2, [%rd3], 1;\n\tret;\n}\n\
        .func  (.param .b32 func_retval0) __kmpc_nvptx_parallel_reduce_nowait_v2(\n)\n{\n\t@%p1 bra \t$L__BB1_2;\n// %bb.1:\n\tDEFER\n\tret;\n$L__BB1_2:\n\tshfl.sync.down.b32 \t%r1, %r2, 16, 31, -1;\n\tbarrier.sync \t0;\n\tret;\n}\n\
        .func  (.param .b32 func_retval0) _RNvNtNtCs1_9devicertl9reduction8deferred5defer(\n)\n{\n\tld.shared.b32 \t%r1, [%rd1+8];\n\tst.shared.b32 \t[%rd1+8], %r1;\n\tret;\n}\n";

    fn chunk_loop(open: &str, defer: &str) -> String {
        CHUNK_LOOP.replace("OPEN", open).replace("DEFER", defer)
    }
    const DEFER_CALL: &str =
        "call.uni (retval0), _RNvNtNtCs1_9devicertl9reduction8deferred5defer, (param0);";

    #[test]
    fn chunk_loop_with_one_barrier_and_the_deferral_passes() {
        let ptx = chunk_loop("barrier.sync \t0;\n\tbarrier.sync \t0;", DEFER_CALL);
        assert_eq!(check_chunk_loop(&ptx), Vec::<String>::new());
    }

    /// What the H200 run's runtime had: the region opened with a barrier every chunk, and a
    /// reduction across the team (shuffles, barriers) in every chunk region.
    #[test]
    fn chunk_loop_as_before_fails() {
        let every_chunk = CHUNK_LOOP
            .replace("\t@%p1 bra \t$L__BB0_3;\n", "")
            .replace("OPEN", "barrier.sync \t0;");
        let problems = check_chunk_loop(&every_chunk.replace("DEFER", "mov.u32 \t%r1, 0;"));
        assert!(
            problems.iter().any(|p| p.contains("meets 2 bar.sync")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("through the deferral")),
            "{problems:?}"
        );
        let synchronizing = chunk_loop("", DEFER_CALL).replace(
            "ld.shared.b32 \t%r1, [%rd1+8];",
            "bar.warp.sync \t-1;\n\tfence.acq_rel.cta;",
        );
        assert!(check_chunk_loop(&synchronizing)
            .iter()
            .any(|p| p.contains("must not synchronize")));
        let atomic = chunk_loop("", DEFER_CALL).replace(
            "\tbarrier.sync \t0;\n\t@%p3",
            "\tatom.shared.add.u32 \t%r4, [%rd5], 1;\n\tbarrier.sync \t0;\n\t@%p3",
        );
        assert!(check_chunk_loop(&atomic)
            .iter()
            .any(|p| p.contains("an atomic per chunk")));
    }
}
