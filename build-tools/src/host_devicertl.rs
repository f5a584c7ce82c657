//! The x86_64 device runtime of flang's host-offload images (`host-devicertl/`), built by
//! `cargo xtask host` into `dist/lib/x86_64-pc-linux-gnu/libompdevice.a`.
//!
//! The crate is built as a staticlib (`-C panic=abort`, one codegen unit); the archive installed
//! holds only the crate's own object, not the copy of Rust's `core` and `compiler_builtins` a
//! staticlib carries: the image's link has its own C runtime and libgcc, and one object means
//! every entry point comes with `__kmpc_target_init` (the one every image needs), including
//! `omp_is_initial_device`, which libomp (earlier on the link line) defines too. The object
//! must define [`ENTRY_POINTS`] and may leave undefined only [`LINKED_BY_THE_IMAGE`]; anything
//! else (a panic path into `core`, a new libc call) is refused here, not at a user's link.

use crate::bail;
use crate::paths::dist_lib;
use crate::util::{self, at, Cmd, Context, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

const PACKAGE: &str = "rustomp-host-devicertl";
/// The device triple of host-offload images.
pub const TRIPLE: &str = "x86_64-pc-linux-gnu";
/// The archive's name, as for the GPU triples (`-lompdevice`).
const ARCHIVE: &str = "libompdevice.a";

/// What flang-22's x86_64 device code calls that libomp does not provide (from the corpus'
/// device IR), and `omp_is_initial_device`, whose libomp answer is the host's.
pub const ENTRY_POINTS: [&str; 16] = [
    "__kmpc_target_init",
    "__kmpc_target_deinit",
    "__kmpc_parallel_60",
    "omp_is_initial_device",
    "__kmpc_for_static_loop_4",
    "__kmpc_for_static_loop_4u",
    "__kmpc_for_static_loop_8",
    "__kmpc_for_static_loop_8u",
    "__kmpc_distribute_static_loop_4",
    "__kmpc_distribute_static_loop_4u",
    "__kmpc_distribute_static_loop_8",
    "__kmpc_distribute_static_loop_8u",
    "__kmpc_distribute_for_static_loop_4",
    "__kmpc_distribute_for_static_loop_4u",
    "__kmpc_distribute_for_static_loop_8",
    "__kmpc_distribute_for_static_loop_8u",
];

/// The undefined symbols the image's link resolves: libomp's (`-lomp`) and the C library's.
const LINKED_BY_THE_IMAGE: [&str; 9] = [
    "__kmpc_fork_call",
    "__kmpc_push_num_threads",
    "__kmpc_push_proc_bind",
    "omp_get_thread_num",
    "omp_get_num_threads",
    "write",
    "abort",
    "memcpy",
    "memset",
];

/// `dist/lib/x86_64-pc-linux-gnu/libompdevice.a`.
pub fn archive() -> PathBuf {
    dist_lib().join(TRIPLE).join(ARCHIVE)
}

/// Builds the crate and installs its object as [`archive`].
pub fn build() -> Result<()> {
    util::step("host: x86_64 device runtime for flang's host-offload images (host-devicertl)");
    Cmd::new(util::cargo())
        .in_root()
        .args([
            "rustc",
            "--release",
            "-p",
            PACKAGE,
            "--crate-type",
            "staticlib",
            "--",
        ])
        .args(["-C", "panic=abort", "-C", "codegen-units=1"])
        .hint("the x86_64 device runtime did not build; fix the error above")
        .run()?;
    let staticlib = at("target/release/librustomp_host_devicertl.a");
    let members = Cmd::new("llvm-ar-22")
        .arg("t")
        .arg(&staticlib)
        .hint("LLVM 22 tools are needed: `cargo xtask setup`")
        .output()?;
    let ours: Vec<&str> = members
        .lines()
        .filter(|m| m.starts_with("rustomp_host_devicertl-"))
        .collect();
    let [member] = ours.as_slice() else {
        bail!(
            "{} holds {} objects of the crate, expected one (codegen-units=1): {}",
            util::show(&staticlib),
            ours.len(),
            ours.join(", ")
        );
    };
    let stage = at("target/host-devicertl");
    if stage.exists() {
        std::fs::remove_dir_all(&stage).context(|| format!("cannot clear {}", stage.display()))?;
    }
    util::mkdirs(&stage)?;
    Cmd::new("llvm-ar-22")
        .arg("x")
        .arg(&staticlib)
        .arg(member)
        .current_dir(&stage)
        .run()?;
    let object = stage.join("ompdevice.o");
    std::fs::rename(stage.join(member), &object)
        .context(|| format!("cannot rename the member {member}"))?;
    check(&Cmd::new("llvm-nm-22").arg(&object).output()?)?;
    let archive = archive();
    util::mkdirs(archive.parent().unwrap_or(&stage))?;
    let tmp = archive.with_extension("a.tmp");
    let _ = std::fs::remove_file(&tmp);
    Cmd::new("llvm-ar-22")
        .arg("rcs")
        .arg(&tmp)
        .arg("ompdevice.o")
        .current_dir(&stage)
        .run()?;
    std::fs::rename(&tmp, &archive)
        .context(|| format!("cannot rename {} to {}", tmp.display(), archive.display()))?;
    println!("host: installed {}", util::show(&archive));
    Ok(())
}

/// Checks `llvm-nm` output of the object: every entry point defined, nothing else undefined.
fn check(nm: &str) -> Result<()> {
    let mut defined = BTreeSet::new();
    let mut undefined = BTreeSet::new();
    for line in nm.lines() {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["U", name] => {
                undefined.insert(*name);
            }
            [_, "T", name] => {
                defined.insert(*name);
            }
            _ => {}
        }
    }
    let missing: Vec<&str> = ENTRY_POINTS
        .iter()
        .copied()
        .filter(|s| !defined.contains(s))
        .collect();
    if !missing.is_empty() {
        bail!("the x86_64 device runtime does not define {}: check the #[no_mangle] exports in host-devicertl/src", missing.join(", "));
    }
    let stray: Vec<&str> = undefined
        .into_iter()
        .filter(|s| !LINKED_BY_THE_IMAGE.contains(s))
        .collect();
    if !stray.is_empty() {
        bail!(
            "the x86_64 device runtime calls {}, which an image's link does not provide (a panic path into Rust's core library, or a new libc/libomp call to add to LINKED_BY_THE_IMAGE in build-tools/src/host_devicertl.rs)",
            stray.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_check() {
        let mut nm: String = ENTRY_POINTS
            .iter()
            .map(|s| format!("0000000000000000 T {s}\n"))
            .collect();
        nm.push_str("                 U __kmpc_fork_call\n0000000000000010 t local_helper\n");
        assert!(check(&nm).is_ok());
        let err = check(&format!(
            "{nm}                 U _RNvNtCs1_4core9panicking5panic\n"
        ))
        .unwrap_err();
        assert!(err.to_string().contains("core9panicking"), "{err}");
        let err = check("0000000000000000 T __kmpc_target_init\n").unwrap_err();
        assert!(err.to_string().contains("__kmpc_parallel_60"), "{err}");
    }
}
