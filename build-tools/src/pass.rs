//! The LLVM pass plugin `dist/lib/rustomp-indirect-calls.so` (`compiler/`, issue 25): calls
//! through function pointers in OpenMP device code go through `__kmpc_target_translate_fptr`.
//!
//! Built by `cargo xtask host` (and so by `test`, `install`, `bench`): the Rust part
//! (`compiler/src`, over LLVM's C API with llvm-sys) as a static library, linked with the C++
//! registration (`compiler/plugin/plugin.cpp`) by clang++-22 against Debian's libLLVM-22
//! (package llvm-22-dev, installed by `cargo xtask setup`). Only `llvmGetPassPluginInfo` is
//! exported; the Rust standard library inside stays hidden.
//!
//! How clang-22 loads it ([`clang_flags`]; `cargo xtask cc` and the installed `clang.cfg` pass
//! them): `-Xarch_device -fpass-plugin=P` reaches every device compile job (nvptx64, amdgcn,
//! x86_64 host offload) and no host job; the device LTO links need their linker's own spelling,
//! through the linker wrapper's `--device-linker=<triple>=`: clang-nvlink-wrapper takes
//! `--plugin-opt=-load-pass-plugin=P` (its `-load-pass-plugin` LLVM option, which feeds the LTO
//! configuration), ld.lld `--load-pass-plugin=P`. The x86_64 device link is GNU ld with
//! LLVMgold.so, which loads no pass plugins: host-offload units are translated at compile time.

use crate::bail;
use crate::paths::dist_lib;
use crate::util::{self, at, Cmd, Result};
use std::path::{Path, PathBuf};

const PACKAGE: &str = "rustomp-indirect-calls";
/// The plugin's file name in `dist/lib` (and `P/lib` once installed).
pub const PLUGIN: &str = "rustomp-indirect-calls.so";
const LLVM_CONFIG: &str = "llvm-config-22";

pub fn plugin_path() -> PathBuf {
    dist_lib().join(PLUGIN)
}

/// The clang-22 options that load `plugin` for the device code of an OpenMP compile: every
/// device compile job, and the LTO link of nvptx64 and amdgcn images. `-Xoffload-linker-<t>`
/// takes the next argument (kept on one line in clang.cfg).
pub fn clang_flags(plugin: &Path) -> Vec<String> {
    let p = plugin.display();
    vec![
        "-Xarch_device".into(),
        format!("-fpass-plugin={p}"),
        "-Xoffload-linker-nvptx64-nvidia-cuda".into(),
        format!("--plugin-opt=-load-pass-plugin={p}"),
        "-Xoffload-linker-amdgcn-amd-amdhsa".into(),
        format!("--load-pass-plugin={p}"),
    ]
}

/// Builds the plugin into `dist/lib` unless it is newer than its inputs.
pub fn run() -> Result<()> {
    util::step("host: LLVM pass plugin (compiler/, rustomp-indirect-calls.so)");
    Cmd::new(util::cargo())
        .in_root()
        .args(["build", "--release", "-p", PACKAGE])
        .hint(
            "the pass plugin's Rust part did not build; it needs llvm-22-dev (`cargo xtask setup`)",
        )
        .run()?;
    let archive = at("target/release/librustomp_indirect_calls.a");
    let source = at("compiler/plugin/plugin.cpp");
    if !archive.is_file() {
        bail!(
            "`cargo build -p {PACKAGE}` wrote no {}: its [lib] must list crate-type \"staticlib\"",
            util::show(&archive)
        );
    }
    let out = plugin_path();
    let newest_input = [util::mtime(&archive), util::mtime(&source)]
        .into_iter()
        .flatten()
        .max();
    if util::mtime(&out).is_some_and(|built| Some(built) > newest_input) {
        println!("host: {} is up to date", util::show(&out));
        return Ok(());
    }
    let cxxflags = Cmd::new(LLVM_CONFIG)
        .arg("--cxxflags")
        .hint("llvm-config-22 is in llvm-22-dev: `cargo xtask setup`")
        .output()?;
    let libdir = Cmd::new(LLVM_CONFIG).arg("--libdir").output()?;
    util::mkdirs(&dist_lib())?;
    let script = at("target/rustomp-indirect-calls.exports");
    util::write(&script, "{ global: llvmGetPassPluginInfo; local: *; };\n")?;
    // Written next to the target, then renamed: a clang of another build may load it meanwhile.
    let tmp = out.with_extension("so.tmp-build");
    Cmd::new("clang++-22")
        .args(["-shared", "-fPIC", "-O2"])
        .args(cxxflags.split_whitespace())
        .arg(&source)
        .arg(&archive)
        .arg(format!("-Wl,--version-script={}", script.display()))
        .args(["-Wl,-z,defs", "-Wl,--strip-debug"])
        .arg(format!("-L{}", libdir.trim()))
        // libLLVM (clang-22 and the device linkers have it loaded already), then what the Rust
        // standard library needs.
        .args(["-lLLVM-22", "-lpthread", "-ldl", "-lm", "-lgcc_s", "-o"])
        .arg(&tmp)
        .hint("clang++-22 could not build the pass plugin; see the error above")
        .run()?;
    std::fs::rename(&tmp, &out).map_err(|e| {
        util::Error(format!(
            "cannot rename {} to {}: {e}",
            tmp.display(),
            out.display()
        ))
    })?;
    println!("host: built {}", util::show(&out));
    Ok(())
}
