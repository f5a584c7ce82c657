//! Step 5 of `cargo xtask test`: the program corpus (`tests/programs`) offloaded to the CPU
//! plugin, against our library and LLVM's, with the table of both.

use super::programs::{
    build_shared_libraries, compile_source, known_failures, llvm_verdict, ours_verdict,
    parse_header, run_program, sources, stem, with_expected_output, with_output_in_order, Header,
    Outcome, Scope, Verdict, JOBS,
};
use crate::cc::Runtime;
use crate::util::{self, at, Result};
use std::path::PathBuf;

/// How one corpus is compiled.
pub(super) struct Suite {
    /// Offload flags, e.g. `-fopenmp-targets=x86_64-pc-linux-gnu`.
    pub(super) target_args: Vec<String>,
    /// Under target/.
    pub(super) out_dir: &'static str,
}

impl Suite {
    pub(super) fn host() -> Suite {
        Suite {
            target_args: vec!["-fopenmp-targets=x86_64-pc-linux-gnu".into()],
            out_dir: "target/programs",
        }
    }
}

pub(super) struct Program {
    pub(super) src: PathBuf,
    pub(super) name: String,
    pub(super) header: Header,
}

pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

pub(super) fn run(suite: &Suite) -> Result<Summary> {
    let dir = at("tests/programs");
    let readme = dir.join("README.md");
    if readme.is_file() {
        println!("corpus conventions: {}", util::show(&readme));
    }
    // RUSTOMP_CORPUS_FILTER=text runs only the programs whose file name contains `text`.
    let filter = std::env::var("RUSTOMP_CORPUS_FILTER").unwrap_or_default();
    let programs: Vec<Program> = sources(&dir)
        .into_iter()
        .filter(|src| {
            src.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(filter.as_str()))
        })
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
    let with_llvm = crate::paths::llvm_ref_dir()
        .join("libomptarget.so")
        .exists();
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
        let log = exe.with_extension("compile.log");
        let mut offload = suite.target_args.clone();
        offload.extend(p.header.cflags.iter().cloned());
        let shared =
            build_shared_libraries(&p.header, &p.src, &exe, rt, &offload, &log, |_, _, _| {})?;
        let mut args = vec!["-O2".to_string()];
        args.extend(offload);
        args.extend(p.header.source_args(&p.src));
        args.extend(shared);
        args.extend([
            "-o".to_string(),
            exe.display().to_string(),
            "-lm".to_string(),
        ]);
        compile_source(&p.src, rt, &args, &log)
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
                    let expected: Vec<String> = p
                        .header
                        .expect_stderr
                        .iter()
                        .chain(&p.header.expect_stderr_both)
                        .chain(&p.header.expect_stderr_host)
                        .cloned()
                        .collect();
                    with_output_in_order(
                        with_expected_output(ours_verdict(&outcome, &p.header), &expected, &log),
                        &p.header.expect_order,
                        &log,
                    )
                }
                Runtime::Llvm => {
                    let v = with_expected_output(
                        llvm_verdict(&outcome, &p.header),
                        &p.header.expect_stderr_both,
                        &log,
                    );
                    match (&p.header.llvm_ref_fails, v.0) {
                        (Some(_), false) if !v.1.contains("LLVM-REF") => {
                            (false, format!("{}, documented (LLVM-REF)", v.1))
                        }
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

pub(super) fn print_row(name: &str, ours: &Verdict, llvm: Option<&Verdict>) {
    let llvm = llvm.map(|l| l.1.as_str()).unwrap_or("-");
    println!("{name:36} | {:30} | {llvm}", ours.1);
}
