//! `cargo xtask setup`: installs what the build needs, and only what is missing.
//!
//! - Debian packages for clang-22 / flang-22 / LLVM 22 / libomp 22 / liboffload 22, the HSA
//!   runtime (a run-time test dependency of the AMDGPU plugin), and Open MPI (the remote
//!   plugin's shim is compiled with its `mpicc`; the remote tests run under its `mpirun`);
//! - CUDA's `ptxas` and `nvlink` (pip package `nvidia-cuda-nvcc`, CUDA 13) in `target/tools/`;
//! - rustup components for building the device runtime with `-Zbuild-std=core`, and clippy
//!   (`cargo xtask clippy`, the first step of `cargo xtask test`);
//! - the nightly toolchain `cargo xtask fuzz` builds the fuzz targets with.

use crate::bail;
use crate::paths::cuda_dir;
use crate::util::{self, at, Cmd, Context, Result};
use std::path::{Path, PathBuf};

pub const DEB_PACKAGES: [&str; 10] = [
    "clang-22",
    // The Fortran corpus (tests/programs/*.f90) and `cargo xtask fc`.
    "flang-22",
    "lld-22",
    "llvm-22",
    // llvm-config-22, LLVM's headers and libLLVM-22.so: the pass plugin (compiler/, built by
    // `cargo xtask host`) is linked against them; clang++-22 (in clang-22) compiles its C++.
    "llvm-22-dev",
    "libomp-22-dev",
    "liboffload-22",
    // The HSA runtime the AMDGPU plugin loads at run time (never linked): the tests check that
    // it loads and reports no GPU cleanly on a machine without /dev/kfd.
    "libhsa-runtime64-1",
    // Remote offload over MPI (host-plugins/remote, host-plugins/proxy): `mpicc` builds
    // librustomp-mpi.so, `mpirun` runs the remote tests and `cargo xtask bench remote`.
    "openmpi-bin",
    "libopenmpi-dev",
];

/// The components of rust-toolchain.toml the tasks need (rustfmt: `cargo xtask clippy` checks
/// the formatting). The device link needs none of rustup's LLVM tools: rustc emits bitcode and
/// Debian's `llvm-link-22` (the same LLVM 22 as clang-22) links it.
pub const RUST_COMPONENTS: [&str; 3] = ["rust-src", "clippy", "rustfmt"];

/// Where `--cuda-path` points: a symlink to the pip package's `nvidia/cu13`.
#[derive(Default)]
struct Report {
    installed: Vec<String>,
    present: Vec<String>,
}

pub fn run() -> Result<()> {
    let mut report = Report::default();
    util::step("setup: Debian packages");
    debian(&mut report)?;
    util::step("setup: CUDA tools (ptxas, nvlink)");
    cuda(&mut report)?;
    util::step("setup: rustup components");
    rustup(&mut report)?;
    util::step("setup: nightly toolchain (cargo xtask fuzz)");
    let toolchain = format!("rustup toolchain {}", crate::paths::nightly_toolchain());
    if crate::fuzz::install_toolchain()? {
        report.installed.push(toolchain);
    } else {
        report.present.push(toolchain);
    }
    util::step("setup: nightly components (cargo xtask test --sanitize: -Zbuild-std, Miri)");
    nightly_components(&mut report)?;
    let list = |v: &[String]| {
        if v.is_empty() {
            "nothing".to_string()
        } else {
            v.join(", ")
        }
    };
    println!("installed:       {}", list(&report.installed));
    println!("already present: {}", list(&report.present));
    Ok(())
}

fn dpkg_installed(pkg: &str) -> Result<bool> {
    let out = Cmd::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output_raw()?;
    // "install ok installed" / "hold ok installed"; anything else ("not-installed",
    // "config-files", "half-installed", or an error for an unknown package) means missing.
    let status = String::from_utf8_lossy(&out.stdout);
    Ok(out.status.success() && status.split_whitespace().last() == Some("installed"))
}

/// `apt-get ARGS` as root: directly, or through sudo.
fn apt(args: &[&str]) -> Result<()> {
    let mut cmd = if util::is_root() {
        let mut c = Cmd::new("apt-get");
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    } else if util::which("sudo").is_some() {
        let mut c = Cmd::new("sudo");
        c.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
        c
    } else {
        bail!(
            "installing Debian packages needs root and there is no sudo: run `cargo xtask setup` as root, or `apt-get install {}` yourself",
            DEB_PACKAGES.join(" ")
        );
    };
    cmd.args(args)
        .hint("check the apt output above (network, package names, disk space); LLVM 22 packages come from Debian's or apt.llvm.org's repositories")
        .run()
}

fn debian(report: &mut Report) -> Result<()> {
    if util::which("dpkg-query").is_none() {
        // Not Debian: accept the tools if they are already on PATH.
        let tools = [
            "clang-22",
            "clang++-22",
            "flang-22",
            "llvm-link-22",
            "llvm-nm-22",
            "ld.lld-22",
            "mpicc",
            "mpirun",
        ];
        let missing: Vec<_> = tools.iter().filter(|t| util::which(t).is_none()).collect();
        if missing.is_empty() {
            println!("no dpkg-query (not Debian); LLVM 22 tools found on PATH");
            report.present.push("LLVM 22 tools (PATH)".into());
            return Ok(());
        }
        bail!(
            "no dpkg-query (not a Debian system) and {:?} are not on PATH: install LLVM 22 (clang, flang, lld, llvm, libomp, liboffload) and Open MPI yourself",
            missing
        );
    }
    let mut missing = Vec::new();
    for pkg in DEB_PACKAGES {
        if dpkg_installed(pkg)? {
            report.present.push(pkg.to_string());
        } else {
            missing.push(pkg);
        }
    }
    if missing.is_empty() {
        println!("all {} packages present", DEB_PACKAGES.len());
        return Ok(());
    }
    println!("installing: {}", missing.join(" "));
    apt(&["update"])?;
    let mut args = vec!["install", "-y"];
    args.extend(&missing);
    apt(&args)?;
    for pkg in missing {
        if !dpkg_installed(pkg)? {
            bail!("`apt-get install {pkg}` finished but dpkg does not list {pkg} as installed; install it by hand");
        }
        report.installed.push(pkg.to_string());
    }
    Ok(())
}

/// `target/tools/venv/lib/python3*/site-packages/nvidia/cu13`.
fn find_cu13(venv: &Path) -> Option<PathBuf> {
    util::files_matching(&venv.join("lib"), "python3", "")
        .into_iter()
        .map(|lib| lib.join("site-packages/nvidia/cu13"))
        .find(|p| p.is_dir())
}

fn cuda(report: &mut Report) -> Result<()> {
    let cuda = cuda_dir();
    let tools = at("target/tools");
    let venv = tools.join("venv");
    if cuda.join("bin/ptxas").is_file() {
        println!("{} present", util::show(&cuda));
        report.present.push("CUDA tools".into());
    } else {
        util::mkdirs(&tools)?;
        let pip = venv.join("bin/pip");
        if !pip.is_file() {
            Cmd::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .hint(
                    "install python3 with the venv module (Debian: `apt-get install python3-venv`)",
                )
                .run()?;
        }
        Cmd::new(&pip)
            .args(["install", "nvidia-cuda-nvcc"])
            .hint("pip could not install nvidia-cuda-nvcc (the CUDA 13 ptxas/nvlink); check the network/PyPI access and the output above")
            .run()?;
        let cu13 = find_cu13(&venv).context(|| {
            format!(
                "pip installed nvidia-cuda-nvcc but {}/lib/python3*/site-packages/nvidia/cu13 does not exist; is it a CUDA 13 release? try `{} install --force-reinstall nvidia-cuda-nvcc`",
                util::show(&venv),
                util::show(&pip)
            )
        })?;
        // Relative, so the tree can move.
        let rel = cu13.strip_prefix(&tools).unwrap_or(&cu13).to_path_buf();
        util::symlink(&rel, &cuda)?;
        report
            .installed
            .push("CUDA tools (nvidia-cuda-nvcc)".into());
    }
    for tool in ["ptxas", "nvlink"] {
        let p = cuda.join("bin").join(tool);
        if !p.is_file() {
            bail!(
                "{} is missing after installing nvidia-cuda-nvcc; remove target/tools and run `cargo xtask setup` again",
                util::show(&p)
            );
        }
    }
    Ok(())
}

fn rustup(report: &mut Report) -> Result<()> {
    if util::which("rustup").is_none() {
        bail!(
            "rustup is not on PATH: install rustup (https://rustup.rs), or add the components {} to your toolchain yourself",
            RUST_COMPONENTS.join(", ")
        );
    }
    let installed = Cmd::new("rustup").in_root()
        .args(["component", "list", "--installed"])
        .hint("rustup could not list the toolchain's components; is the toolchain in rust-toolchain.toml installed? try `rustup show`")
        .output()?;
    let has = |c: &str| {
        installed.lines().any(|l| {
            let l = l.trim();
            // "rust-src", or "clippy-x86_64-unknown-linux-gnu" (name + target triple).
            l == c
                || l.strip_prefix(c)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|triple| triple.matches('-').count() >= 2)
        })
    };
    let missing: Vec<&str> = RUST_COMPONENTS
        .iter()
        .copied()
        .filter(|c| !has(c))
        .collect();
    for c in RUST_COMPONENTS {
        if !missing.contains(&c) {
            report.present.push(format!("rustup {c}"));
        }
    }
    if missing.is_empty() {
        println!("components present: {}", RUST_COMPONENTS.join(", "));
        return Ok(());
    }
    Cmd::new("rustup")
        .in_root()
        .args(["component", "add"])
        .args(&missing)
        .hint("rustup could not add the components; check the network and `rustup show`")
        .run()?;
    report
        .installed
        .extend(missing.iter().map(|c| format!("rustup {c}")));
    Ok(())
}

/// The nightly toolchain's `rust-src` (ThreadSanitizer builds the standard library) and `miri`.
fn nightly_components(report: &mut Report) -> Result<()> {
    let toolchain = crate::paths::nightly_toolchain();
    let installed = Cmd::new("rustup")
        .args([
            "component",
            "list",
            "--installed",
            "--toolchain",
            &toolchain,
        ])
        .output()?;
    for component in ["rust-src", "miri"] {
        let name = format!("rustup {toolchain} {component}");
        // Listed as "rust-src" or "miri-x86_64-unknown-linux-gnu".
        if installed
            .lines()
            .any(|l| l == component || l.starts_with(&format!("{component}-")))
        {
            report.present.push(name);
            continue;
        }
        Cmd::new("rustup")
            .args(["component", "add", component, "--toolchain", &toolchain])
            .hint("rustup could not add the component; check the network and `rustup show`")
            .run()?;
        report.installed.push(name);
    }
    Ok(())
}
