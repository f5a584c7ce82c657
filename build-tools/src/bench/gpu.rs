//! The GPU group: compiled everywhere (to keep the programs building), run where an NVIDIA
//! driver is installed; its table is also written into BENCHMARKS.md.

use super::build::{compile_c, run_logged};
use super::measure::{measure, with_env};
use super::plan::{library_variants, Group, Row, Variant};
use super::report::{cell, machine_line, print_group, ratio};
use crate::devicertl;
use crate::paths::cuda_dir;
use crate::util::{self, at, Cmd, Result};
use std::path::Path;
use std::process::Command;

/// `nvidia-smi` on PATH and `libcuda.so.1` in the loader cache.
pub(super) fn nvidia_driver() -> std::result::Result<(), String> {
    if util::which("nvidia-smi").is_none() {
        return Err("no nvidia-smi".into());
    }
    let cache = Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output())
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"))
        .unwrap_or(false);
    if !cache {
        return Err("libcuda.so.1 is not in the loader cache".into());
    }
    Ok(())
}

/// Compiles the GPU programs; runs them when a driver is present, else prints one skip line.
pub(super) fn gpu_group(
    group: &Group,
    out_dir: &Path,
    driver: std::result::Result<(), String>,
    llvm: bool,
    runs: usize,
    mode: &str,
    filter: Option<&str>,
) -> Result<()> {
    if driver.is_ok() {
        // The programs link our device runtime bitcode.
        devicertl::run(false)?;
    }
    let include = cuda_dir().join("include");
    let helper = out_dir.join("cuda_raw.o");
    let helper_built = if include.join("cuda.h").is_file() {
        let mut cmd = Cmd::new("clang-22");
        cmd.args(["-O2", "-c"])
            .arg(at("bench/cuda_raw.c"))
            .arg(format!("-I{}", include.display()))
            .arg("-o")
            .arg(&helper);
        run_logged(&mut cmd, &out_dir.join("logs/cuda_raw.c.compile.log"))
    } else {
        Err(format!(
            "no {} (`cargo xtask setup` installs it)",
            util::show(&include.join("cuda.h"))
        ))
    };
    let mut exes = Vec::new();
    let mut compile_notes = Vec::new();
    match &helper_built {
        Ok(()) => {
            for p in group.programs {
                match compile_c(p, out_dir, &["--offload-arch=sm_90"], Some(&helper)) {
                    Ok(exe) => {
                        compile_notes.push(format!("{p} builds"));
                        exes.push(exe);
                    }
                    Err(why) => compile_notes.push(format!("{p} does not build: {why}")),
                }
            }
        }
        Err(why) => compile_notes.push(format!("cuda_raw.c does not build: {why}")),
    }
    // What the compiler reports of each kernel's resources: printed with or without a GPU.
    if helper_built.is_ok() {
        super::resources::report(group.programs, out_dir, Some(&helper))?;
    }
    if let Err(why) = driver {
        println!(
            "\n{}: skipped ({why}; {})",
            group.title,
            compile_notes.join("; ")
        );
        return Ok(());
    }
    for note in compile_notes
        .iter()
        .filter(|n| n.contains("does not build"))
    {
        println!("gpu: {note}");
    }
    let variants = library_variants(llvm);
    let (rows, failures) = measure(
        &with_env(&exes, group),
        &variants,
        runs,
        mode,
        filter,
        out_dir,
    );
    print_group(group.title, &variants, &rows, &failures, runs);
    if filter.is_none() && !rows.is_empty() {
        record_gpu_table(&variants, &rows)?;
    }
    Ok(())
}

/// Where `cargo xtask bench gpu` keeps its latest table in BENCHMARKS.md (replaced each run
/// on a GPU; the rest of the file is written by hand).
pub(super) const GPU_TABLE_BEGIN: &str = "<!-- cargo xtask bench gpu: table begins -->";
pub(super) const GPU_TABLE_END: &str = "<!-- cargo xtask bench gpu: table ends -->";

/// Writes the GPU group's table into BENCHMARKS.md (between the markers, or at the end).
pub(super) fn record_gpu_table(variants: &[Variant], rows: &[Row]) -> Result<()> {
    let gpu = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let a = variants.first().map_or("ours", |v| v.label);
    let b = variants.get(1).map_or("LLVM", |v| v.label);
    let mut table = format!(
        "{GPU_TABLE_BEGIN}\n\nGPU group, written by `cargo xtask bench gpu`: {gpu}; {}.\nMedian (min-max) of each program's own medians.\n\n| benchmark | unit | {a} | {b} | {a}/{b} |\n|---|---|---|---|---|\n",
        machine_line()
    );
    for row in rows {
        let (r, verdict) = ratio(row);
        table.push_str(&format!(
            "| `{}` | {} | {} | {} | {r} {verdict} |\n",
            row.name,
            row.unit,
            cell(&row.values[0]),
            cell(&row.values[1])
        ));
    }
    table.push_str(&format!("\n{GPU_TABLE_END}"));
    let path = at("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path)?;
    let updated = match (text.find(GPU_TABLE_BEGIN), text.find(GPU_TABLE_END)) {
        (Some(begin), Some(end)) if begin < end => {
            format!(
                "{}{table}{}",
                &text[..begin],
                &text[end + GPU_TABLE_END.len()..]
            )
        }
        _ => format!(
            "{}\n\n## GPU (latest run on a GPU)\n\n{table}\n",
            text.trim_end()
        ),
    };
    util::write(&path, updated)?;
    println!("gpu: the table is in BENCHMARKS.md");
    Ok(())
}
