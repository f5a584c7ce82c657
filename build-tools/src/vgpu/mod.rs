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

pub mod retarget;

use crate::cc::{self, Runtime};
use crate::paths::dist_lib;
use crate::util::{self, Cmd, Result};
use crate::{bail, devicertl};
use std::path::{Path, PathBuf};

/// The section of a program (or shared library) that holds its virtual-GPU image.
pub const SECTION: &str = ".rustomp.vgpu";
/// The virtual GPU's hardware, in `dist/lib`.
pub const HARDWARE_LIBRARY: &str = "librustomp_vgpu.so";

/// The device runtime retargeted for the virtual GPU, linked into every image.
pub fn runtime_object() -> PathBuf {
    dist_lib().join("vgpu").join("libompdevice.o")
}

/// Retargets the nvptx64 device runtime's archive member (`devicertl.bc`) into
/// [`runtime_object`].
pub fn build_runtime_object(devicertl_bc: &Path) -> Result<()> {
    let out = runtime_object();
    util::mkdirs(out.parent().unwrap_or(Path::new(".")))?;
    let tmp = out.with_extension("o.tmp");
    compile_module(devicertl_bc, &tmp)?;
    std::fs::rename(&tmp, &out)
        .map_err(|e| util::Error(format!("cannot rename {}: {e}", tmp.display())))?;
    Ok(())
}

/// One nvptx64 bitcode module to an x86_64 object for the virtual GPU.
pub fn compile_module(bc: &Path, object: &Path) -> Result<()> {
    let ll = object.with_extension("nvptx.ll");
    Cmd::new("llvm-dis-22")
        .arg(bc)
        .arg("-o")
        .arg(&ll)
        .hint("LLVM 22 tools are needed: `cargo xtask setup`")
        .run()?;
    let text = util::read(&ll)?;
    let host = match retarget::retarget(&text) {
        Ok(host) => host,
        Err(why) => bail!("{}: {why}", bc.display()),
    };
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
        .args(["-shared", "-fuse-ld=lld", "-Wl,--no-undefined", "-Wl,-Bsymbolic"])
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

/// Options of clang that take the next argument as their value.
const OPTIONS_WITH_VALUE: [&str; 22] = [
    "-o",
    "-I",
    "-L",
    "-l",
    "-include",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-x",
    "-D",
    "-U",
    "-MF",
    "-MT",
    "-MQ",
    "-Xlinker",
    "-Xclang",
    "-Xopenmp-target",
    "-Xoffload-linker",
    "-Xarch_device",
    "-Xarch_host",
    "-mllvm",
    "-Xpreprocessor",
];

const SOURCE_EXTENSIONS: [&str; 12] = [
    "c", "cc", "cpp", "cxx", "C", "c++", "cp", "CPP", "i", "ii", "f90", "F90",
];

/// What a `cc` command line says about the virtual-GPU image: the nvptx arch, the sources and
/// the program it links; `None` when it links no nvptx program.
#[derive(Debug, PartialEq, Eq)]
pub struct ProgramBuild {
    pub output: PathBuf,
    pub sources: Vec<PathBuf>,
    /// The arguments without the sources and `-o`.
    pub rest: Vec<String>,
}

pub fn program_build(args: &[String]) -> Option<ProgramBuild> {
    let nvptx = args.iter().any(|a| {
        a.strip_prefix("--offload-arch=")
            .is_some_and(|v| v.split(',').all(|arch| arch.starts_with("sm_")))
    });
    let stops_early = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-c" | "-S"
                | "-E"
                | "-emit-llvm"
                | "--offload-device-only"
                | "--offload-host-only"
                | "-fsyntax-only"
                | "-M"
                | "-MM"
        )
    });
    if !nvptx || stops_early {
        return None;
    }
    let mut output = PathBuf::from("a.out");
    let mut sources = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-o" {
            output = PathBuf::from(args.get(i + 1)?);
            i += 2;
            continue;
        }
        if let Some(o) = a
            .strip_prefix("-o")
            .filter(|o| !o.is_empty() && !a.starts_with("-offload"))
        {
            output = PathBuf::from(o);
            i += 1;
            continue;
        }
        if OPTIONS_WITH_VALUE.contains(&a.as_str()) {
            rest.push(a.clone());
            if let Some(v) = args.get(i + 1) {
                rest.push(v.clone());
            }
            i += 2;
            continue;
        }
        let path = Path::new(a);
        let is_source = !a.starts_with('-')
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e));
        if is_source {
            sources.push(path.to_path_buf());
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    (!sources.is_empty()).then_some(ProgramBuild {
        output,
        sources,
        rest,
    })
}

/// Whether `cc` builds virtual-GPU images (`RUSTOMP_VGPU_BUILD=0` turns it off).
pub fn enabled() -> bool {
    std::env::var("RUSTOMP_VGPU_BUILD").map_or(true, |v| v != "0")
}

/// After `cc` linked a program for an nvptx arch: its virtual-GPU image, embedded. Objects or
/// archives given to the link are not recompiled: their device code is missing from the image,
/// which fails at run time naming the kernel, as a kernel missing from a cubin would.
pub fn build_for_program(cxx: bool, build: &ProgramBuild) -> Result<()> {
    if !runtime_object().is_file() {
        bail!(
            "{} is missing: `cargo xtask devicertl` builds it",
            util::show(&runtime_object())
        );
    }
    let work = std::env::temp_dir().join(format!(
        "rustomp-vgpu-{}-{}",
        std::process::id(),
        build
            .output
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let _ = std::fs::remove_dir_all(&work);
    util::mkdirs(&work)?;
    let result = (|| {
        let mut objects = Vec::new();
        for (n, source) in build.sources.iter().enumerate() {
            let bc = work.join(format!("{n}.bc"));
            let mut args = build.rest.clone();
            args.extend([
                "--offload-device-only".to_string(),
                "-emit-llvm".into(),
                "-c".into(),
                source.display().to_string(),
                "-o".into(),
                bc.display().to_string(),
            ]);
            let out = cc::command(cxx, Runtime::Ours, &args).output_raw()?;
            if !out.status.success() {
                bail!(
                    "the device-only compile of {} failed:\n{}",
                    source.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let object = work.join(format!("{n}.o"));
            compile_module(&bc, &object)?;
            objects.push(object);
        }
        let image = work.join("image.so");
        link_image(&objects, &image)?;
        embed(&build.output, &image)
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// The `devicertl.bc` member of the nvptx `libompdevice.a` is what the image links; the
/// per-unit bitcode is already inside each unit's device IR.
pub fn nvptx_target() -> &'static devicertl::Target {
    devicertl::TARGETS
        .iter()
        .find(|t| t.triple.starts_with("nvptx64"))
        .expect("devicertl builds an nvptx64 target")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_linking_nvptx_build_is_recognized() {
        let b = program_build(&s(&[
            "-O2",
            "--offload-arch=sm_90",
            "a.c",
            "b.cpp",
            "-o",
            "prog",
            "-lm",
            "-I",
            "inc.c",
        ]))
        .unwrap();
        assert_eq!(b.output, PathBuf::from("prog"));
        assert_eq!(
            b.sources,
            vec![PathBuf::from("a.c"), PathBuf::from("b.cpp")]
        );
        assert_eq!(
            b.rest,
            s(&["-O2", "--offload-arch=sm_90", "-lm", "-I", "inc.c"])
        );
        assert_eq!(
            program_build(&s(&["--offload-arch=sm_90", "a.c"]))
                .unwrap()
                .output,
            PathBuf::from("a.out")
        );
    }

    #[test]
    fn other_builds_are_not() {
        assert_eq!(
            program_build(&s(&["--offload-arch=sm_90", "-c", "a.c"])),
            None
        );
        assert_eq!(program_build(&s(&["--offload-arch=gfx90a", "a.c"])), None);
        assert_eq!(
            program_build(&s(&["--offload-arch=sm_90,gfx90a", "a.c"])),
            None
        );
        assert_eq!(
            program_build(&s(&["-fopenmp-targets=x86_64-pc-linux-gnu", "a.c"])),
            None
        );
        assert_eq!(
            program_build(&s(&["--offload-arch=sm_90", "a.o", "-o", "p"])),
            None
        );
    }
}
