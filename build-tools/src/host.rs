//! `cargo xtask host`: builds the host library (`rustomp-front`, a cdylib named libomptarget.so)
//! and installs it where programs built with `cargo xtask cc` find it, with the remote
//! plugin's proxy program (`dist/bin/rustomp-proxy`) and MPI shim (`dist/lib/librustomp-mpi.so`,
//! compiled with Open MPI's `mpicc` when it is installed), the OMPT trace tool
//! (`dist/lib/librustomp-ompt-trace.so`); then the x86_64 device runtime of
//! flang's host-offload images (`host_devicertl`) and the LLVM pass plugin those programs'
//! device code is compiled with (`pass.rs`).

use crate::bail;
use crate::paths::{dist_bin, dist_lib, INFO, MPI_SHIM, PROXY};
use crate::paths::{llvm_ref_dir, LLVM_LIBOMPTARGET, SONAME};
use crate::util::{self, at, Cmd, Result};
use std::path::Path;

const PACKAGE: &str = "rustomp-front";
const VGPU: &str = "rustomp-vgpu";
/// The OMPT trace tool (`OMP_TOOL_LIBRARIES`), installed as `dist/lib/librustomp-ompt-trace.so`.
const TRACE_TOOL: &str = "rustomp-ompt-trace";
pub const TRACE_TOOL_LIBRARY: &str = "librustomp-ompt-trace.so";

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
    // The library with its own profile (fat LTO), the programs beside it with the release one.
    Cmd::new(util::cargo())
        .in_root()
        .args(["build", "--profile", "dist", "-p", PACKAGE])
        .hint("the host library did not build; fix the error above")
        .run()?;
    Cmd::new(util::cargo())
        .in_root()
        .args([
            "build", "--release", "-p", PROXY, "-p", INFO, "-p", VGPU, "-p", TRACE_TOOL,
        ])
        .hint("the proxy, rustomp-info, the virtual GPU or the trace tool did not build; fix the error above")
        .run()?;
    let built = at("target/dist/libomptarget.so");
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
    let proxy = dist_bin().join(PROXY);
    util::install(&at("target/release").join(PROXY), &proxy)?;
    println!("host: installed {}", util::show(&proxy));
    // rustomp-info beside it: `mpirun -np N rustomp-proxy : -np 1 dist/bin/rustomp-info`
    // finds the MPI shim in ../lib, as the proxy does.
    let info = dist_bin().join(INFO);
    util::install(&at("target/release").join(INFO), &info)?;
    // The virtual GPU's hardware, which the virtual-GPU plugin loads and retargeted images
    // link against (see build-tools/src/vgpu).
    util::install(
        &at("target/release").join(crate::vgpu::HARDWARE_LIBRARY),
        &lib.join(crate::vgpu::HARDWARE_LIBRARY),
    )?;
    util::install(
        &at("target/release/librustomp_ompt_trace.so"),
        &lib.join(TRACE_TOOL_LIBRARY),
    )?;
    mpi_shim()?;
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

/// `dist/lib/librustomp-mpi.so`: the remote plugin's MPI shim, compiled with the MPI's own
/// compiler wrapper (its run path names the MPI library's directories, so it loads wherever
/// that MPI lives). Without `mpicc` it is not built, and says so: remote offload then has no
/// devices, nothing else changes.
pub fn mpi_shim() -> Result<()> {
    let source = at("host-plugins/remote/shim/rustomp_mpi.c");
    let out = dist_lib().join(MPI_SHIM);
    let Some(mpicc) = util::which("mpicc") else {
        println!(
            "host: no mpicc (Open MPI): {MPI_SHIM} not built, remote offload unavailable (`cargo xtask setup` installs Open MPI)"
        );
        return Ok(());
    };
    if util::mtime(&out) >= util::mtime(&source) && util::mtime(&out).is_some() {
        return Ok(());
    }
    let libdirs = Cmd::new(&mpicc)
        .arg("--showme:libdirs")
        .output()
        .unwrap_or_default();
    let mut cmd = Cmd::new(&mpicc);
    cmd.args(["-O2", "-Wall", "-Wextra", "-shared", "-fPIC"])
        .arg(&source)
        .arg("-o")
        .arg(&out);
    for dir in libdirs.split_whitespace() {
        cmd.arg(format!("-Wl,-rpath,{dir}"));
    }
    cmd.hint("the MPI shim did not compile: is Open MPI's libopenmpi-dev installed (`cargo xtask setup`)?")
        .run()?;
    println!("host: built {}", util::show(&out));
    Ok(())
}
