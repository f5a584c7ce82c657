//! The virtual GPU's images: an nvptx64 program's real device code, retargeted to x86_64.
//!
//! `cargo xtask cc --offload-arch=sm_XX prog.c -o prog` builds `prog` as clang does, then
//! compiles each source once more for the device only (`--offload-device-only -emit-llvm`:
//! the same codegen, openmp-opt, device runtime bitcode and indirect-call pass as the real
//! image), retargets that IR (`retarget`), compiles it for x86_64 with `llc` (code generation
//! only: the IR is the GPU's, optimized as the GPU's), links it with the device runtime's own
//! archive member retargeted the same way (`dist/lib/vgpu/libompdevice.o`, from
//! `cargo xtask devicertl`) into a shared object, and adds that to `prog` as the section
//! `.rustomp.vgpu`. The virtual-GPU plugin (`host-plugins/vgpu`) finds it there when the
//! program registers its nvptx image, and runs its kernels on `librustomp_vgpu.so`.
//!
//! Set `RUSTOMP_VGPU_BUILD=0` to skip this step; a program without the section still runs on
//! real GPUs, and the virtual GPU refuses it by name.
//!
//! This module makes images (a leaf: `devicertl` and `host` use it); `vgpu_build` reads a
//! `cc`/`fc` command line and builds the image of the program it links.

pub mod instrument;
pub mod retarget;

use crate::bail;
use crate::paths::dist_lib;
use crate::util::{self, Cmd, Result};
use std::path::{Path, PathBuf};

/// Changes whenever retargeting or linking changes what an image holds (the GPU suite's
/// compile cache keys on it, so its binaries get new images).
pub const IMAGE_VERSION: u32 = 6;

/// The section of a program (or shared library) that holds its virtual-GPU image.
pub const SECTION: &str = ".rustomp.vgpu";
/// The virtual GPU's hardware, in `dist/lib`.
pub const HARDWARE_LIBRARY: &str = "librustomp_vgpu.so";

/// The device runtime retargeted for the virtual GPU, linked into every image.
pub fn runtime_object() -> PathBuf {
    dist_lib().join("vgpu").join("libompdevice.o")
}

/// Why the retargeted device runtime cannot be linked yet, if it cannot.
pub fn build_runtime_object_missing() -> Option<String> {
    (!runtime_object().is_file()).then(|| {
        format!(
            "{} is missing: `cargo xtask devicertl` builds it",
            util::show(&runtime_object())
        )
    })
}

/// Retargets the nvptx64 device runtime's archive member (`devicertl.bc`) into
/// [`runtime_object`].
pub fn build_runtime_object(devicertl_bc: &Path) -> Result<()> {
    let out = runtime_object();
    util::mkdirs(out.parent().unwrap_or(Path::new(".")))?;
    let tmp = out.with_extension("o.tmp");
    compile_module(devicertl_bc, &tmp, Some(instrument::LAYOUT))?;
    std::fs::rename(&tmp, &out)
        .map_err(|e| util::Error(format!("cannot rename {}: {e}", tmp.display())))?;
    Ok(())
}

/// One nvptx64 bitcode module to an x86_64 object for the virtual GPU, its team-memory
/// accesses and indirect calls checked (`instrument`); `extra` IR is added to it (the image's team-memory
/// layout, once per image).
pub fn compile_module(bc: &Path, object: &Path, extra: Option<&str>) -> Result<()> {
    let ll = object.with_extension("nvptx.ll");
    Cmd::new("llvm-dis-22")
        .arg(bc)
        .arg("-o")
        .arg(&ll)
        .hint("LLVM 22 tools are needed: `cargo xtask setup`")
        .run()?;
    let text = util::read(&ll)?;
    let mut host = match retarget::retarget(&text) {
        Ok(host) => instrument::instrument(&host),
        Err(why) => bail!("{}: {why}", bc.display()),
    };
    host.push_str(extra.unwrap_or(""));
    let host_ll = object.with_extension("x86_64.ll");
    util::write(&host_ll, host)?;
    Cmd::new("llc-22")
        .args(["-O2", "-relocation-model=pic", "-filetype=obj"])
        .arg(&host_ll)
        .arg("-o")
        .arg(object)
        .hint("LLVM 22's llc is needed: `cargo xtask setup`")
        .run()?;
    let _ = std::fs::remove_file(&ll);
    let _ = std::fs::remove_file(&host_ll);
    Ok(())
}

/// Links the objects with the retargeted device runtime into the image; a symbol neither they
/// nor the virtual GPU's hardware define (an NVVM intrinsic it does not emulate) is an error
/// naming it.
pub fn link_image(objects: &[PathBuf], image: &Path) -> Result<()> {
    let lib = dist_lib();
    // -Bsymbolic: the image's own definitions (the device runtime's __kmpc_* above all) bind
    // inside it, as on a GPU, never to the host's libomp or to the host build of the device
    // runtime that librustomp_vgpu.so carries.
    let out = Cmd::new("clang-22")
        .args([
            "-shared",
            "-fuse-ld=lld",
            "-Wl,--no-undefined",
            "-Wl,-Bsymbolic",
        ])
        .arg("-o")
        .arg(image)
        .args(objects)
        .arg(runtime_object())
        .arg(format!("-L{}", lib.display()))
        .args(["-lrustomp_vgpu", "-lm"])
        .output_raw()?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let missing: Vec<String> = text
            .lines()
            .filter_map(|l| l.split("undefined symbol: ").nth(1))
            .map(|s| match s.trim().strip_prefix("__vgpu_nvvm_") {
                Some(nvvm) => format!("llvm.nvvm.{nvvm} (as __vgpu_nvvm_{nvvm})"),
                None => s.trim().to_string(),
            })
            .collect();
        if !missing.is_empty() {
            bail!(
                "the device code uses what the virtual GPU does not provide: {}",
                missing.join(", ")
            );
        }
        bail!("linking the virtual-GPU image failed:\n{text}");
    }
    Ok(())
}

/// Puts `image` into `binary` as [`SECTION`] (replacing an older one).
pub fn embed(binary: &Path, image: &Path) -> Result<()> {
    Cmd::new("llvm-objcopy-22")
        .arg("--remove-section")
        .arg(SECTION)
        .arg("--add-section")
        .arg(format!("{SECTION}={}", image.display()))
        .arg(binary)
        .hint("LLVM 22's llvm-objcopy is needed: `cargo xtask setup`")
        .run()
}
