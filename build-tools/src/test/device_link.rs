//! Device links that once failed or linked wrongly, checked without a GPU:
//!
//! - a program of two translation units with target regions links for sm_90 and gfx90a at -O0,
//!   -O2 and with offload LTO (nvlink refused a second `__omp_rtl_device_environment`);
//! - a generic-mode kernel (printf, then a parallel region, which openmp-opt turns into its own
//!   state machine) has exactly one copy of the runtime's team state: its shared segment is the
//!   state plus the hardware's reserve, not twice the state (the per-unit bitcode and
//!   libompdevice.a each used to bring their own, so workers and main thread disagreed).
use super::programs::{compile, parse_header};
use crate::cc::{self, Runtime};
use crate::util::{self, at, Cmd, Result};
use std::path::Path;

const TWO_UNITS: &str = "tests/programs/116_two_units.c";
const GENERIC: &str = "tests/programs/115_generic_printf_parallel.c";
const FALLBACK: &str = "tests/programs/73_offload_default.c";
const OPTS: [&[&str]; 3] = [&["-O0"], &["-O2"], &["-O2", "-foffload-lto"]];

pub fn run(team_shared_bytes: u64) -> Result<()> {
    let out = at("target/device-links");
    util::mkdirs(&out)?;
    let mut failures = Vec::new();
    let src = at(TWO_UNITS);
    let header = parse_header(&util::read(&src)?);
    for arch in ["sm_90", "gfx90a"] {
        for opt in OPTS {
            let tag = format!("two-units-{arch}{}", opt.join(""));
            let mut args: Vec<String> = opt.iter().map(|s| s.to_string()).collect();
            args.push(format!("--offload-arch={arch}"));
            args.extend(header.source_args(&src));
            args.extend(["-o".into(), out.join(&tag).display().to_string()]);
            let ok = compile(false, Runtime::Ours, &args, &out.join(format!("{tag}.log"))).is_ok();
            println!(
                "device link: two translation units, {arch} {}: {}",
                opt.join(" "),
                if ok { "ok" } else { "FAIL" }
            );
            if !ok {
                failures.push(tag);
            }
        }
    }
    match without_amd_gpu(&out) {
        Ok(seen) => println!("device link: gfx90a program without an AMD GPU: {seen}"),
        Err(e) => {
            println!("device link: gfx90a program without an AMD GPU: FAIL: {e}");
            failures.push("no-hsa".into());
        }
    }
    for opt in OPTS {
        let tag = format!("one-state-sm_90{}", opt.join(""));
        match team_state_copies(opt, &out.join(&tag), team_shared_bytes) {
            Ok(sizes) => println!("device link: generic kernel, sm_90 {}: shared segments {sizes:?} bytes, one team state", opt.join(" ")),
            Err(e) => {
                println!("device link: generic kernel, sm_90 {}: FAIL: {e}", opt.join(" "));
                failures.push(tag);
            }
        }
    }
    if !failures.is_empty() {
        crate::bail!(
            "device link checks failing: {} (logs in {})",
            failures.join(", "),
            util::show(&out)
        );
    }
    Ok(())
}

/// Without a usable HSA runtime (none installed, or no `/dev/kfd`) a gfx90a program has no
/// device: under `mandatory` it stops with a message naming HSA and the library, under the
/// default policy it runs on the host. Checked with the runtime made unloadable and with
/// whatever this machine has installed.
fn without_amd_gpu(out: &Path) -> std::result::Result<String, String> {
    // A program that passes on the host and on a device alike.
    let src = at(FALLBACK);
    let exe = out.join("offload-default-gfx90a");
    let mut args: Vec<String> = vec!["-O2".into(), "--offload-arch=gfx90a".into()];
    args.extend(parse_header(&util::read(&src).map_err(|e| e.to_string())?).source_args(&src));
    args.extend(["-o".into(), exe.display().to_string()]);
    let log = out.join("offload-default-gfx90a.log");
    compile(false, Runtime::Ours, &args, &log).map_err(|e| {
        format!(
            "{FALLBACK} does not build for gfx90a: {e} (log {})",
            util::show(&log)
        )
    })?;
    let mut seen = Vec::new();
    for (case, runtime) in [
        ("no runtime", Some("/nonexistent/libhsa-runtime64.so.1")),
        ("installed runtime", None),
    ] {
        for policy in ["mandatory", "default"] {
            let log = out.join(format!("no-hsa-{}-{policy}.log", case.replace(' ', "-")));
            let mut env = vec![("OMP_TARGET_OFFLOAD".to_string(), policy.to_string())];
            if let Some(path) = runtime {
                env.push(("RUSTOMP_HSA_RUNTIME".into(), path.into()));
            }
            let outcome = super::programs::run_program(&exe, &env, &log);
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let ok = match (policy, &outcome) {
                // A fatal offload error ends the process with SIGABRT, as LLVM's.
                ("mandatory", super::programs::Outcome::Signal(6)) => {
                    text.contains("HSA") && text.contains("libhsa-runtime64.so.1")
                }
                ("default", super::programs::Outcome::Exit(0)) => true,
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "{case}, OMP_TARGET_OFFLOAD={policy}: {} (log {})",
                    super::programs::verdict(&outcome, policy == "mandatory").1,
                    util::show(&log)
                ));
            }
            if policy == "mandatory" {
                let line = text.lines().find(|l| l.contains("HSA")).unwrap_or_default();
                seen.push(format!("{case}: \"{}\"", line.trim()));
            }
        }
    }
    Ok(format!(
        "mandatory stops naming HSA, default runs on the host; {}",
        seen.join("; ")
    ))
}

/// Builds the generic-mode program for sm_90 with -save-temps in `dir` and returns the shared
/// segment size of each kernel of the linked image; an error when one holds more than one team
/// state (or none).
fn team_state_copies(
    opt: &[&str],
    dir: &Path,
    team_shared_bytes: u64,
) -> std::result::Result<Vec<u64>, String> {
    let _ = std::fs::remove_dir_all(dir);
    util::mkdirs(dir).map_err(|e| e.to_string())?;
    let mut args: Vec<String> = opt.iter().map(|s| s.to_string()).collect();
    args.extend([
        "--offload-arch=sm_90".into(),
        "-save-temps".into(),
        at(GENERIC).display().to_string(),
    ]);
    args.extend(["-o".into(), "prog".into()]);
    let mut cmd = cc::command(false, Runtime::Ours, &args);
    cmd.current_dir(dir);
    let build = cmd.output_raw().map_err(|e| e.to_string())?;
    if !build.status.success() {
        return Err(format!(
            "compile failed: {}",
            String::from_utf8_lossy(&build.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let image = util::files_matching(dir, "", ".nvptx64.sm_90.img")
        .into_iter()
        .next()
        .ok_or("no linked sm_90 image among the -save-temps files")?;
    let sections = Cmd::new("llvm-readelf-22")
        .args(["-S", "-W"])
        .arg(&image)
        .output()
        .map_err(|e| e.to_string())?;
    let sizes = shared_segment_sizes(&sections);
    if sizes.is_empty() {
        return Err("the image has no .nv.shared.<kernel> section".into());
    }
    // sm_90 reserves 1 KiB of every block's shared memory for the system.
    let limit = 2 * team_shared_bytes;
    if let Some(bad) = sizes
        .iter()
        .find(|s| **s < team_shared_bytes || **s >= limit)
    {
        return Err(format!(
            "a kernel's shared segment is {bad} bytes: one team state is {team_shared_bytes} (plus 1024 reserved); two copies of the runtime state are linked"
        ));
    }
    Ok(sizes)
}

/// Sizes of the `.nv.shared.<kernel>` sections in `llvm-readelf -S -W` output.
fn shared_segment_sizes(readelf: &str) -> Vec<u64> {
    readelf
        .lines()
        .filter(|l| l.contains(" .nv.shared."))
        .filter_map(|l| {
            let after = &l[l.find(" .nv.shared.")? + 1..];
            let fields: Vec<&str> = after.split_whitespace().collect();
            // name type address offset size ...
            u64::from_str_radix(fields.get(4)?, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn shared_segments_are_read() {
        let out = "  [31] .nv.shared.__omp_offloading_fe00_98c1a1_main_l5 NOBITS          0000000000000000 0075f0 004400 00 WAI  0  29 16\n  [3] .text.x PROGBITS 0 0 10 00 AX 0 0 1\n";
        assert_eq!(super::shared_segment_sizes(out), vec![0x4400]);
    }
}
