//! GPU speed without a GPU: what the compiler reports of every bench kernel's and ABI probe's
//! resources, compared with `bench/gpu-resources.tsv`, a table kept in the repository and
//! updated on purpose (`RUSTOMP_RESOURCES_UPDATE=1 cargo xtask bench gpu`). A kernel that
//! grew (registers, spills, stack, team memory) is flagged before any GPU run.
//!
//! - NVIDIA (sm_90): `-Xcuda-ptxas -v` on the device link; per entry function its registers,
//!   spill stores and loads, stack frame and shared memory (what ptxas sees of the kernel's own
//!   object: the runtime's team state lives in `libompdevice.a`'s object and nvlink adds it).
//! - AMD (gfx90a): the code object's metadata notes (`llvm-readelf --notes`): VGPRs, SGPRs,
//!   scratch (`.private_segment_fixed_size`), LDS (`.group_segment_fixed_size`) and whether
//!   the stack is dynamic.

use super::build::compile_c;
use crate::util::{self, at, Cmd, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The table kept in the repository.
pub const TABLE: &str = "bench/gpu-resources.tsv";
/// Set to rewrite the table from this run.
pub const UPDATE_VAR: &str = "RUSTOMP_RESOURCES_UPDATE";

/// One kernel's resources, by field name (numbers only; the same fields for one target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub target: String,
    pub program: String,
    /// The kernel's name without the file-dependent id (`__omp_offloading_<dev>_<file>_`).
    pub name: String,
    pub fields: BTreeMap<String, u64>,
}

impl Kernel {
    fn key(&self) -> (String, String, String) {
        (self.target.clone(), self.program.clone(), self.name.clone())
    }
}

/// `__omp_offloading_fe00_a20002_main_l2` -> `main_l2`: the device and file ids change with
/// the machine and the path.
pub fn stable_name(name: &str) -> String {
    let Some(rest) = name.strip_prefix("__omp_offloading_") else {
        return name.to_string();
    };
    rest.splitn(3, '_').nth(2).unwrap_or(rest).to_string()
}

/// ptxas's `-v` report: per entry function, `Function properties for F` then
/// `N bytes stack frame, S bytes spill stores, L bytes spill loads`, and after `Compiling entry
/// function 'F'`, `Used R registers, used B barriers, X bytes smem, ...`.
pub fn parse_ptxas(program: &str, log: &str) -> Vec<Kernel> {
    let mut entries: Vec<Kernel> = Vec::new();
    let mut properties: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    let mut current_properties: Option<String> = None;
    let mut current_entry: Option<usize> = None;
    let number_before = |line: &str, what: &str| -> Option<u64> {
        let at = line.find(what)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info    : Compiling entry function '") {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            entries.push(Kernel {
                target: "sm_90".into(),
                program: program.into(),
                name,
                fields: BTreeMap::new(),
            });
            current_entry = Some(entries.len() - 1);
        } else if let Some(name) = line.strip_prefix("ptxas info    : Function properties for ") {
            current_properties = Some(name.trim().to_string());
        } else if line.contains("bytes stack frame") {
            if let Some(name) = current_properties.take() {
                properties.insert(
                    name,
                    (
                        number_before(line, "bytes stack frame").unwrap_or(0),
                        number_before(line, "bytes spill stores").unwrap_or(0),
                        number_before(line, "bytes spill loads").unwrap_or(0),
                    ),
                );
            }
        } else if line.starts_with("ptxas info    : Used ") {
            if let Some(i) = current_entry.take() {
                let fields = &mut entries[i].fields;
                fields.insert(
                    "registers".into(),
                    number_before(line, "registers").unwrap_or(0),
                );
                fields.insert(
                    "shared".into(),
                    number_before(line, "bytes smem").unwrap_or(0),
                );
            }
        }
    }
    for kernel in &mut entries {
        let (stack, stores, loads) = properties.get(&kernel.name).copied().unwrap_or_default();
        kernel.fields.insert("stack".into(), stack);
        kernel.fields.insert("spill_stores".into(), stores);
        kernel.fields.insert("spill_loads".into(), loads);
        kernel.name = stable_name(&kernel.name);
    }
    entries
}

/// `llvm-readelf --notes` of an AMDGPU code object: the kernels' metadata (YAML).
pub fn parse_amdgpu_notes(program: &str, notes: &str) -> Vec<Kernel> {
    let mut kernels = Vec::new();
    let mut current: Option<Kernel> = None;
    for line in notes.lines() {
        let line = line.trim().trim_start_matches("- ");
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            ".name" => {
                if let Some(k) = current.take() {
                    kernels.push(k);
                }
                current = Some(Kernel {
                    target: "gfx90a".into(),
                    program: program.into(),
                    name: stable_name(value),
                    fields: BTreeMap::new(),
                });
            }
            field @ (".vgpr_count"
            | ".sgpr_count"
            | ".private_segment_fixed_size"
            | ".group_segment_fixed_size"
            | ".vgpr_spill_count"
            | ".sgpr_spill_count"
            | ".uses_dynamic_stack") => {
                if let Some(k) = current.as_mut() {
                    let number = match value {
                        "true" => 1,
                        "false" => 0,
                        v => v.parse().unwrap_or(0),
                    };
                    let name = match field {
                        ".private_segment_fixed_size" => "scratch",
                        ".group_segment_fixed_size" => "lds",
                        other => other.trim_start_matches('.'),
                    };
                    k.fields.insert(name.to_string(), number);
                }
            }
            _ => {}
        }
    }
    kernels.extend(current);
    kernels.retain(|k| !k.fields.is_empty());
    kernels
}

/// Lines of the table: `target program kernel field=value ...`, sorted.
pub fn format_table(kernels: &[Kernel]) -> String {
    let mut lines: Vec<String> = kernels
        .iter()
        .map(|k| {
            let fields: Vec<String> = k.fields.iter().map(|(f, v)| format!("{f}={v}")).collect();
            format!(
                "{}\t{}\t{}\t{}",
                k.target,
                k.program,
                k.name,
                fields.join(" ")
            )
        })
        .collect();
    lines.sort();
    lines.dedup();
    let mut text = String::from(
        "# GPU kernels' resources as the compiler reports them (cargo xtask bench gpu).\n# Updated on purpose: RUSTOMP_RESOURCES_UPDATE=1 cargo xtask bench gpu\n",
    );
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

pub fn parse_table(text: &str) -> Vec<Kernel> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut parts = l.split('\t');
            let (target, program, name) = (parts.next()?, parts.next()?, parts.next()?);
            let fields = parts
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|f| {
                    let (k, v) = f.split_once('=')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect();
            Some(Kernel {
                target: target.into(),
                program: program.into(),
                name: name.into(),
                fields,
            })
        })
        .collect()
}

/// What grew against the kept table, one line per kernel: `field old -> new`.
pub fn growth(kept: &[Kernel], now: &[Kernel]) -> Vec<String> {
    let kept: BTreeMap<_, _> = kept.iter().map(|k| (k.key(), k)).collect();
    let mut grew = Vec::new();
    for kernel in now {
        let Some(before) = kept.get(&kernel.key()) else {
            grew.push(format!(
                "{} {} {}: new (not in {TABLE})",
                kernel.target, kernel.program, kernel.name
            ));
            continue;
        };
        let changes: Vec<String> = kernel
            .fields
            .iter()
            .filter_map(|(f, &v)| {
                let old = before.fields.get(f).copied().unwrap_or(0);
                (v > old).then(|| format!("{f} {old} -> {v}"))
            })
            .collect();
        if !changes.is_empty() {
            grew.push(format!(
                "{} {} {}: {}",
                kernel.target,
                kernel.program,
                kernel.name,
                changes.join(", ")
            ));
        }
    }
    grew
}

/// Compiles the bench programs and the ABI probes for sm_90 and gfx90a, prints
/// every kernel's resources and what grew against the kept table; rewrites the table when
/// `RUSTOMP_RESOURCES_UPDATE` is set.
pub fn report(programs: &[&str], out_dir: &Path, helper: Option<&Path>) -> Result<()> {
    let mut kernels = Vec::new();
    let mut notes = Vec::new();
    let nvidia_dir = out_dir.join("resources-sm_90");
    let amd_dir = out_dir.join("resources-gfx90a");
    util::mkdirs(&nvidia_dir.join("logs"))?;
    util::mkdirs(&amd_dir.join("logs"))?;
    for program in programs {
        match compile_c(
            program,
            &nvidia_dir,
            &["--offload-arch=sm_90", "-Xcuda-ptxas", "-v"],
            helper,
        ) {
            Ok(_) => {
                let log = nvidia_dir
                    .join("logs")
                    .join(format!("{program}.compile.log"));
                kernels.extend(parse_ptxas(program, &util::read(&log).unwrap_or_default()));
            }
            Err(why) => notes.push(format!("{program} for sm_90: {why}")),
        }
        match compile_c(program, &amd_dir, &["--offload-arch=gfx90a"], helper) {
            Ok(exe) => match amdgpu_notes(&exe) {
                Ok(text) => kernels.extend(parse_amdgpu_notes(program, &text)),
                Err(why) => notes.push(format!("{program} for gfx90a: {why}")),
            },
            Err(why) => notes.push(format!("{program} for gfx90a: {why}")),
        }
    }
    for probe in probe_sources() {
        let name = probe
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let stem = name.trim_end_matches(".c").trim_end_matches(".cpp");
        for (target, dir) in [("sm_90", &nvidia_dir), ("gfx90a", &amd_dir)] {
            let log = dir.join("logs").join(format!("{name}.ptxas.log"));
            let exe = dir.join(stem);
            let mut args: Vec<String> = vec![
                "-O2".into(),
                "-fopenmp".into(),
                format!("--offload-arch={target}"),
            ];
            if target == "sm_90" {
                args.extend(["-Xcuda-ptxas".into(), "-v".into()]);
            }
            // A probe that spells `declare target enter` needs OpenMP 5.2.
            if util::read(&probe).unwrap_or_default().contains("enter(") {
                args.push("-fopenmp-version=52".into());
            }
            args.extend([
                probe.display().to_string(),
                "-o".into(),
                exe.display().to_string(),
            ]);
            let mut cmd =
                crate::cc::command(name.ends_with(".cpp"), crate::cc::Runtime::Ours, &args);
            let measured = super::build::run_logged(&mut cmd, &log).and_then(|()| {
                if target == "sm_90" {
                    Ok(parse_ptxas(&name, &util::read(&log).unwrap_or_default()))
                } else {
                    amdgpu_notes(&exe).map(|text| parse_amdgpu_notes(&name, &text))
                }
            });
            match measured {
                Ok(found) => kernels.extend(found),
                Err(why) => notes.push(format!("probe {name} for {target}: {why}")),
            }
        }
    }
    println!("\nGPU kernels' resources (the compiler's report; {TABLE} keeps the expected ones)");
    for kernel in &kernels {
        let fields: Vec<String> = kernel
            .fields
            .iter()
            .map(|(f, v)| format!("{f} {v}"))
            .collect();
        println!(
            "  {:7} {:24} {:40} {}",
            kernel.target,
            kernel.program,
            kernel.name,
            fields.join(", ")
        );
    }
    for note in &notes {
        println!("  not measured: {note}");
    }
    let table = at(TABLE);
    if std::env::var_os(UPDATE_VAR).is_some() {
        util::write(&table, format_table(&kernels))?;
        println!(
            "resources: {} rewritten ({} kernels)",
            util::show(&table),
            kernels.len()
        );
        return Ok(());
    }
    let kept = parse_table(&util::read(&table).unwrap_or_default());
    let grew = growth(&kept, &kernels);
    if grew.is_empty() {
        println!("resources: no kernel grew against {}", util::show(&table));
    } else {
        println!(
            "resources: GREW against {} (set {UPDATE_VAR}=1 to accept):",
            util::show(&table)
        );
        for line in grew {
            println!("  {line}");
        }
    }
    Ok(())
}

fn probe_sources() -> Vec<PathBuf> {
    let mut probes: Vec<PathBuf> = std::fs::read_dir(at("tests/abi-probes"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "c" || e == "cpp"))
                .collect()
        })
        .unwrap_or_default();
    probes.sort();
    probes
}

/// The AMDGPU code object inside `exe`'s offload section, its notes as `llvm-readelf` prints
/// them.
pub fn amdgpu_notes(exe: &Path) -> std::result::Result<String, String> {
    let section = exe.with_extension("offloading.bin");
    Cmd::new("llvm-objcopy-22")
        .arg(format!(
            "--dump-section=.llvm.offloading={}",
            section.display()
        ))
        .arg(exe)
        .arg(exe.with_extension("stripped.tmp"))
        .run()
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(exe.with_extension("stripped.tmp"));
    let bytes = std::fs::read(&section).map_err(|e| e.to_string())?;
    // Each image of the section is an ELF inside an OffloadBinary; the AMDGPU one has
    // e_machine EM_AMDGPU (224).
    let code_object = (0..bytes.len().saturating_sub(20))
        .filter(|&i| bytes[i..].starts_with(b"\x7fELF"))
        .find(|&i| u16::from_le_bytes([bytes[i + 18], bytes[i + 19]]) == 224)
        .ok_or("no AMDGPU code object in the offload section")?;
    let object = exe.with_extension("hsaco");
    std::fs::write(&object, &bytes[code_object..]).map_err(|e| e.to_string())?;
    let out = Cmd::new("llvm-readelf-22")
        .arg("--notes")
        .arg(&object)
        .output_raw()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTXAS: &str = "ptxas info    : 266 bytes gmem
ptxas info    : Function properties for _RNvhelper13print_message
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '__omp_offloading_fe00_a20002_main_l2' for 'sm_90'
ptxas info    : Function properties for __omp_offloading_fe00_a20002_main_l2
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 36 registers, used 1 barriers, 7184 bytes smem, 368 bytes cmem[0]
";

    #[test]
    fn ptxas_report_per_entry_function() {
        let kernels = parse_ptxas("x.c", PTXAS);
        assert_eq!(kernels.len(), 1);
        let k = &kernels[0];
        assert_eq!(k.name, "main_l2");
        let f = |n: &str| k.fields[n];
        assert_eq!(
            [
                f("registers"),
                f("shared"),
                f("stack"),
                f("spill_stores"),
                f("spill_loads")
            ],
            [36, 7184, 16, 4, 8]
        );
    }

    const NOTES: &str = "    .name:           __omp_offloading_fe00_a20002_main_l2
    .private_segment_fixed_size: 0
    .group_segment_fixed_size: 7248
    .sgpr_count:     38
    .uses_dynamic_stack: true
    .vgpr_count:     164
";

    #[test]
    fn amdgpu_notes_per_kernel() {
        let kernels = parse_amdgpu_notes("x.c", NOTES);
        assert_eq!(kernels.len(), 1);
        let k = &kernels[0];
        assert_eq!(k.name, "main_l2");
        assert_eq!(k.fields["vgpr_count"], 164);
        assert_eq!(k.fields["uses_dynamic_stack"], 1);
        assert_eq!(k.fields["lds"], 7248);
    }

    #[test]
    fn growth_is_flagged_and_the_table_round_trips() {
        let kept = parse_ptxas("x.c", PTXAS);
        assert_eq!(parse_table(&format_table(&kept)), kept);
        let grown = parse_ptxas(
            "x.c",
            &PTXAS.replace("Used 36 registers", "Used 40 registers"),
        );
        let lines = growth(&kept, &grown);
        assert_eq!(
            lines,
            vec!["sm_90 x.c main_l2: registers 36 -> 40".to_string()]
        );
        assert!(
            growth(&grown, &kept).is_empty(),
            "a kernel that shrank is not flagged"
        );
        assert!(growth(&[], &kept)[0].contains("new"));
    }
}
