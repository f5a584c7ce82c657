//! `cargo xtask host`: builds the host library (`rustomp-front`, a cdylib named libomptarget.so)
//! and installs it where programs built with `cargo xtask cc` find it; then the x86_64 device
//! runtime of flang's host-offload images (`host_devicertl`) and the LLVM pass plugin those
//! programs' device code is compiled with (`pass.rs`).

use crate::bail;
use crate::paths::dist_lib;
use crate::paths::{llvm_ref_dir, LLVM_LIBOMPTARGET, SONAME};
use crate::util::{self, at, Cmd, Result};
use std::path::Path;

const PACKAGE: &str = "rustomp-front";

fn package_exists() -> Result<bool> {
    let meta = Cmd::new(util::cargo())
        .in_root()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .hint("cargo could not read the workspace; fix Cargo.toml")
        .output()?;
    Ok(meta.contains(&format!("\"name\":\"{PACKAGE}\"")))
}

pub fn run() -> Result<()> {
    util::step("host: libomptarget.so");
    if !package_exists()? {
        bail!(
            "the workspace has no package `{PACKAGE}` yet (host-plugins/front, the cdylib libomptarget.so): add it to the workspace members, then run `cargo xtask host` again"
        );
    }
    Cmd::new(util::cargo())
        .in_root()
        .args(["build", "--release", "-p", PACKAGE])
        .hint("the host library did not build; fix the error above")
        .run()?;
    let built = at("target/release/libomptarget.so");
    if !built.is_file() {
        bail!(
            "`cargo build -p {PACKAGE}` succeeded but wrote no {}: its [lib] must be `name = \"omptarget\"`, `crate-type = [\"cdylib\"]`",
            util::show(&built)
        );
    }
    let lib = dist_lib();
    util::install(&built, &lib.join(SONAME))?;
    util::symlink(Path::new(SONAME), &lib.join("libomptarget.so"))?;
    println!("host: installed {}", util::show(&lib.join(SONAME)));
    link_llvm_reference();
    crate::host_devicertl::build()?;
    crate::pass::run()
}

/// `target/llvm-ref/libomptarget.so` -> LLVM's library; a note (not an error) when it is absent.
pub fn link_llvm_reference() {
    let llvm = Path::new(LLVM_LIBOMPTARGET);
    if !llvm.is_file() {
        println!(
            "host: {LLVM_LIBOMPTARGET} not found (package liboffload-22); no LLVM reference runs"
        );
        return;
    }
    if let Err(e) = util::symlink(llvm, &llvm_ref_dir().join("libomptarget.so")) {
        println!("host: cannot link the LLVM reference: {e}");
    }
}
