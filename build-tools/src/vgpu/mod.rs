//! The virtual GPU's images: an nvptx64 or amdgcn program's real device code, retargeted to
//! x86_64.
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
//! `--offload-arch=gfx90a` (any gfx9 processor: wavefronts of 64; wave32 ones get no image):
//! each source's device-only bitcode is linked with the
//! amdgcn device runtime (`libompdevice.a`) by the same LTO link clang-linker-wrapper runs for
//! the real image (openmp-opt and the indirect-call pass at link time, as there), stopped before
//! code generation (`--lto-emit-llvm`) and without the AMDGPU backend's LDS packing (an IR
//! layout step: the team-shared globals stay globals, as nvptx's); that module is retargeted the
//! same way and goes into the section `.rustomp.vgpu.amdgcn`, run with wavefronts of 64.
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
pub const IMAGE_VERSION: u32 = 8;

/// The GPU family whose device code an image retargets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Nvptx,
    Amdgcn,
}

impl Family {
    /// The family of every arch of an `--offload-arch` list, when they agree.
    pub fn of_archs(list: &str) -> Option<Family> {
        let family = |arch: &str| {
            if arch.starts_with("sm_") {
                Some(Family::Nvptx)
            } else if arch.starts_with("gfx9") {
                // Wave64 processors only: the hardware library's wavefronts have 64 lanes.
                Some(Family::Amdgcn)
            } else {
                None
            }
        };
        let mut archs = list.split(',');
        let first = family(archs.next()?)?;
        archs.all(|a| family(a) == Some(first)).then_some(first)
    }

    /// The section of a program (or shared library) that holds its image of this family.
    pub fn section(self) -> &'static str {
        match self {
            Family::Nvptx => SECTION,
            Family::Amdgcn => SECTION_AMDGCN,
        }
    }
}

/// The section of a program (or shared library) that holds its nvptx virtual-GPU image.
pub const SECTION: &str = ".rustomp.vgpu";
/// The section that holds its amdgcn virtual-GPU image.
pub const SECTION_AMDGCN: &str = ".rustomp.vgpu.amdgcn";
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

/// The amdgcn device link of `bitcode` (device-only compiles) for `arch`, as
/// clang-linker-wrapper runs it for the real image (the device runtime, the indirect-call pass
/// at link time), written as optimized bitcode to `linked` instead of compiled.
pub fn link_amdgcn_module(bitcode: &[PathBuf], arch: &str, linked: &Path) -> Result<()> {
    let lib = dist_lib();
    Cmd::new("clang-22")
        .args(["--target=amdgcn-amd-amdhsa", "-flto", "-nogpulib"])
        .arg(format!("-mcpu={arch}"))
        .arg("-Wl,--no-undefined")
        .args(bitcode)
        .args(["-Xlinker", "-lompdevice", "-Xlinker"])
        .arg(format!("-L{}", lib.join("amdgcn-amd-amdhsa").display()))
        .arg("-Xlinker")
        .arg(format!(
            "--load-pass-plugin={}",
            lib.join(crate::pass::PLUGIN).display()
        ))
        .arg("-Wl,--lto-emit-llvm")
        // The backend's LDS packing (one struct per kernel, found through a kernel id) is a
        // layout step of code generation that LTO runs early for AMDGPU: the globals stay.
        .arg("-Wl,-mllvm,-amdgpu-enable-lower-module-lds=false")
        .arg("-o")
        .arg(linked)
        .hint("clang-22 and lld-22 are needed: `cargo xtask setup`")
        .run()
}

/// Links the objects (with the retargeted nvptx device runtime; an amdgcn module has its own
/// linked in) into the image; a symbol neither they nor the virtual GPU's hardware define (an
/// NVVM or AMDGPU intrinsic it does not emulate) is an error naming it.
pub fn link_image(objects: &[PathBuf], image: &Path, family: Family) -> Result<()> {
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
        .args((family == Family::Nvptx).then(runtime_object))
        .arg(format!("-L{}", lib.display()))
        .args(["-lrustomp_vgpu", "-lm"])
        .output_raw()?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let missing: Vec<String> = text
            .lines()
            .filter_map(|l| l.split("undefined symbol: ").nth(1))
            .map(|s| {
                let s = s.trim();
                if let Some(nvvm) = s.strip_prefix("__vgpu_nvvm_") {
                    format!("llvm.nvvm.{nvvm} (as {s})")
                } else if let Some(amdgcn) = s.strip_prefix("__vgpu_amdgcn_") {
                    format!("llvm.amdgcn.{amdgcn} (as {s})")
                } else {
                    s.to_string()
                }
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

/// Puts `image` into `binary` as its family's section (replacing an older one).
pub fn embed(binary: &Path, image: &Path, family: Family) -> Result<()> {
    let section = family.section();
    Cmd::new("llvm-objcopy-22")
        .arg("--remove-section")
        .arg(section)
        .arg("--add-section")
        .arg(format!("{section}={}", image.display()))
        .arg(binary)
        .hint("LLVM 22's llvm-objcopy is needed: `cargo xtask setup`")
        .run()
}
