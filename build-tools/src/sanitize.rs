//! `cargo xtask test --sanitize`: the concurrency checks that need the nightly toolchain.
//!
//! 1. ThreadSanitizer (`-Zsanitizer=thread`, with `-Zbuild-std` so the standard library is
//!    instrumented too) over the tests of the crates whose code runs on several threads at
//!    once: the device runtime's host emulation (`devicertl`: teams and threads as CPU threads,
//!    its barriers, atomics and fences), the mapping table and generic plugin layer
//!    (`rustomp-plugin`), the CPU plugin and the host library (`rustomp-front`). Under it,
//!    `devicertl/build.rs` sets `cfg(rustomp_tsan)`, which makes the emulation's fences visible
//!    to the sanitizer (`arch::host::fence`). Any report fails the run (`halt_on_error`).
//! 2. Miri over the pure-Rust tests that fit it: the image parsers and validation, the mapping
//!    table, the byte layouts, geometry and settings (`rustomp-plugin`, `rustomp-abi`). Tests
//!    that call into C libraries or the dynamic loader are not Miri's: those crates stay out.
//!    `RUSTOMP_MIRI_DEVICERTL=1` adds the device runtime's emulation tests (slow: minutes per
//!    test file).
//!
//! Builds go to `target/sanitize/` so later runs are incremental. The nightly toolchain and its
//! `rust-src` and `miri` components come from `cargo xtask setup`.

use crate::util::{self, Cmd, Result};
use std::time::Instant;

const TSAN_CRATES: &[&str] = &[
    "devicertl",
    "rustomp-plugin",
    "rustomp-host-plugin",
    "rustomp-front",
];
const MIRI_CRATES: &[&str] = &["rustomp-abi", "rustomp-plugin"];
const HOST_TARGET: &str = "x86_64-unknown-linux-gnu";

pub fn run() -> Result<i32> {
    let mut failed = Vec::new();

    util::step("sanitize 1/2: ThreadSanitizer (nightly, -Zsanitizer=thread, -Zbuild-std)");
    let started = Instant::now();
    let mut tsan = Cmd::new("cargo");
    tsan.in_root()
        .args([
            "+nightly",
            "test",
            "-Zbuild-std",
            "--target",
            HOST_TARGET,
            "--lib",
            "--tests",
        ])
        .args(["--target-dir", "target/sanitize/thread"])
        .args(TSAN_CRATES.iter().flat_map(|c| ["-p", c]))
        // Test harness threads plus the emulation's: keep the run deterministic enough to read.
        .args(["--", "--test-threads=2"])
        .env("RUSTFLAGS", "-Zsanitizer=thread")
        .env("RUSTDOCFLAGS", "-Zsanitizer=thread")
        // A report is a failure; reports of both threads' stacks help reading it.
        .env(
            "TSAN_OPTIONS",
            "halt_on_error=1:abort_on_error=1:second_deadlock_stack=1",
        )
        .hint("`cargo xtask setup` installs the nightly toolchain and its rust-src component");
    let tsan_ok = tsan.status()?.success();
    println!(
        "ThreadSanitizer: {} in {:.0} s",
        if tsan_ok { "no report" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if !tsan_ok {
        failed.push("ThreadSanitizer");
    }

    util::step("sanitize 2/2: Miri (nightly) over the pure-Rust tests");
    let started = Instant::now();
    // The device runtime's emulation tests fit Miri too (its data-race detector and weak
    // memory emulation), but take 10 minutes and more on 2 cores: on request only.
    let with_devicertl = std::env::var("RUSTOMP_MIRI_DEVICERTL").is_ok_and(|v| v == "1");
    let mut miri = Cmd::new("cargo");
    miri.in_root()
        .args([
            "+nightly",
            "miri",
            "test",
            "--target-dir",
            "target/sanitize/miri",
        ])
        .args(MIRI_CRATES.iter().flat_map(|c| ["-p", c]))
        .args(if with_devicertl {
            &["-p", "devicertl"][..]
        } else {
            &[]
        })
        .hint("`cargo xtask setup` installs the nightly toolchain and its miri component");
    let mut miri_ok = miri.status()?.success();
    // The mapping table lives in the host library's crate, whose other tests call C: its own
    // tests only.
    let mut table = Cmd::new("cargo");
    table
        .in_root()
        .args([
            "+nightly",
            "miri",
            "test",
            "--target-dir",
            "target/sanitize/miri",
            "-p",
            "rustomp-front",
            "--lib",
            "mapping::",
        ])
        .hint("`cargo xtask setup` installs the nightly toolchain and its miri component");
    miri_ok &= table.status()?.success();
    println!(
        "Miri: {} in {:.0} s",
        if miri_ok {
            "no undefined behaviour found"
        } else {
            "FAILED"
        },
        started.elapsed().as_secs_f64()
    );
    if !miri_ok {
        failed.push("Miri");
    }

    if failed.is_empty() {
        println!("sanitizers: 2 passed, 0 failed");
        Ok(0)
    } else {
        println!(
            "sanitizers: {} passed, {} failed ({})",
            2 - failed.len(),
            failed.len(),
            failed.join(", ")
        );
        Ok(1)
    }
}
