//! The external target RTL check (`tests/plugins`): discovery by naming convention,
//! `libomptarget.rtl.<name>.so`, against the installed `dist/lib/libomptarget.so.22.1`.
//!
//! Builds `rtl_fake.c` twice into `target/external-rtl/`: `libomptarget.rtl.fake.so` (the
//! whole interface) and `libomptarget.rtl.broken.so` (without `__tgt_rtl_data_delete`), then
//! runs `use_fake.c` with that directory first in `LD_LIBRARY_PATH` and `LIBOMPTARGET_INFO=16`.
//! It passes when the program prints `use_fake: OK` (its own checks: one device, data round
//! trip, one launch, the RTL's call counts, a refused launch returning an error), the runtime
//! named the broken library and the symbol it lacks, and its error for the refused launch names
//! the RTL file, the call and the RTL's code. Skipped, with a line saying so, when clang-22 is not installed.

use crate::bail;
use crate::cc::{self, Runtime};
use crate::paths::dist_lib;
use crate::util::{self, at, Cmd, Result};

/// Seconds the test program may run.
const TIMEOUT_S: &str = "20";

pub fn run() -> Result<()> {
    if util::which("clang-22").is_none() {
        println!("external RTLs: skipped (clang-22 not found: `cargo xtask setup`)");
        return Ok(());
    }
    let src = at("tests/plugins");
    let dir = at("target/external-rtl");
    util::mkdirs(&dir)?;
    let rtl = src.join("rtl_fake.c");
    for (name, defines) in [("fake", &[][..]), ("broken", &["-DRTL_FAKE_BROKEN"][..])] {
        Cmd::new("clang-22")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
            .args(defines)
            .arg(&rtl)
            .arg("-o")
            .arg(dir.join(format!("libomptarget.rtl.{name}.so")))
            .run()?;
    }
    let exe = dir.join("use_fake");
    let user: Vec<String> = vec![
        "-Wall".into(),
        "-Werror".into(),
        src.join("use_fake.c").display().to_string(),
        "-o".into(),
        exe.display().to_string(),
        "-lomptarget".into(),
        "-ldl".into(),
    ];
    cc::command(false, Runtime::Ours, &user).run()?;
    let library_path = format!("{}:{}", dir.display(), dist_lib().display());
    let out = Cmd::new("timeout")
        .arg(TIMEOUT_S)
        .arg(&exe)
        .env("LD_LIBRARY_PATH", library_path)
        .env("LIBOMPTARGET_INFO", "16")
        .env_remove("OMP_TARGET_OFFLOAD")
        .output_raw()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    let broken_named = stderr
        .lines()
        .any(|l| l.contains("libomptarget.rtl.broken.so") && l.contains("__tgt_rtl_data_delete"));
    let failure_named = stderr.lines().any(|l| {
        l.contains("libomptarget.rtl.fake.so")
            && l.contains("__tgt_rtl_run_target_team_region")
            && l.contains("returned 5")
    });
    if !out.status.success() || !stdout.contains("use_fake: OK") || !broken_named || !failure_named
    {
        eprint!("{stderr}");
        bail!(
            "external RTL test failed ({}; broken library reported: {broken_named}; failed launch reported: {failure_named})",
            util::describe(out.status)
        );
    }
    println!("external RTLs: fake RTL discovered and used, its failed launch reported, broken RTL skipped with its missing symbol named");
    Ok(())
}
