//! `cargo xtask clippy`: clippy with `-D warnings` on everything the project compiles:
//!
//! 1. the host workspace, every target (`cargo clippy --workspace --all-targets`): the plugins,
//!    the host library, the build tool, and `devicertl` against its host emulation backend;
//! 2. `devicertl` for nvptx64 and amdgcn, with the invocation `cargo xtask devicertl` builds them
//!    with (`devicertl::device_cargo`: the `device` profile, `-Zbuild-std=core`, the target's
//!    RUSTFLAGS), so the code behind `cfg(target_arch = ...)` is linted too. Their check output
//!    stays in `target/device-clippy` (apart from the bitcode builds in `target/device`), so a
//!    rerun only checks what changed.
//!
//! 3. formatting: `cargo fmt --all --check` (rustfmt's defaults; the fuzz workspace too), so
//!    unformatted code fails like a lint.
//!
//! Every run happens even when an earlier one fails; the command fails when any reports a
//! warning, and prints how long each took.

use crate::bail;
use crate::devicertl;
use crate::util::{self, at, Cmd, Result};
use std::time::{Duration, Instant};

/// The lints as errors, for every run.
const DENY_WARNINGS: [&str; 3] = ["--", "-D", "warnings"];

pub fn run() -> Result<()> {
    let mut runs: Vec<(String, Duration, bool)> = Vec::new();
    let mut timed = |name: String, cmd: &mut Cmd| -> Result<()> {
        util::step(&format!("clippy: {name}"));
        let start = Instant::now();
        let ok = cmd.status()?.success();
        runs.push((name, start.elapsed(), ok));
        Ok(())
    };

    timed(
        "host workspace (--workspace --all-targets)".into(),
        Cmd::new(util::cargo())
            .in_root()
            .args(["clippy", "--workspace", "--all-targets"])
            .args(DENY_WARNINGS),
    )?;
    let target_dir = at("target/device-clippy");
    for t in &devicertl::TARGETS {
        timed(
            format!("devicertl for {}", t.triple),
            devicertl::device_cargo(t, "clippy", &target_dir).args(DENY_WARNINGS),
        )?;
    }

    timed(
        "formatting (cargo fmt --all --check)".into(),
        Cmd::new(util::cargo())
            .in_root()
            .args(["fmt", "--all", "--check"]),
    )?;
    timed(
        "formatting of fuzz/ (its own workspace)".into(),
        Cmd::new(util::cargo()).in_root().args([
            "fmt",
            "--all",
            "--check",
            "--manifest-path",
            "fuzz/Cargo.toml",
        ]),
    )?;

    for (name, took, ok) in &runs {
        let verdict = if *ok { "clean" } else { "FAILED" };
        println!("clippy: {name}: {verdict} in {:.1} s", took.as_secs_f64());
    }
    let failed: Vec<&str> = runs
        .iter()
        .filter(|(_, _, ok)| !ok)
        .map(|(name, _, _)| name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "clippy reported warnings (denied) or could not run for: {}; see its output above",
            failed.join("; ")
        );
    }
    Ok(())
}
