//! The virtual-GPU image of a program `cargo xtask cc`/`fc` links (see `vgpu`): which sources
//! a command line compiles into which program, their device-only compiles, and the image
//! embedded into the program.

use crate::cc::{self, Runtime};
use crate::util::{self, Result};
use crate::vgpu::{
    build_runtime_object_missing, compile_module, embed, instrument, link_amdgcn_module,
    link_image, Family,
};
use std::path::{Path, PathBuf};

/// `cargo xtask cc` / `c++`: clang, then the program's virtual-GPU image.
pub fn run_cc(cxx: bool, args: &[String]) -> Result<i32> {
    let code = cc::run(cxx, args)?;
    after_link(code, cxx, args);
    Ok(code)
}

/// `cargo xtask fc`: flang, then the program's virtual-GPU image.
pub fn run_fc(args: &[String]) -> Result<i32> {
    let code = crate::fc::run(args)?;
    after_link(code, false, args);
    Ok(code)
}

/// After a successful command that linked an nvptx or amdgcn program: its image. The real build stands
/// whatever happens here: only the virtual GPU lacks it.
fn after_link(code: i32, cxx: bool, args: &[String]) {
    if code != 0 || !enabled() {
        return;
    }
    let Ok((_, user)) = cc::split_runtime(args) else {
        return;
    };
    if let Some(build) = program_build(&user) {
        if let Err(why) = build_for_program(cxx, &build) {
            eprintln!(
                "rustomp: warning: {} has no virtual-GPU image: {why}",
                build.output.display()
            );
        }
    }
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

/// C and C++ sources (Fortran's are `fc::is_fortran`'s).
const SOURCE_EXTENSIONS: [&str; 10] = ["c", "cc", "cpp", "cxx", "C", "c++", "cp", "CPP", "i", "ii"];

/// What a `cc` command line says about the virtual-GPU image: the GPU family and arch, the
/// sources and the program it links; `None` when it links no program for one GPU family (a
/// build for both nvptx and amdgcn gets no image).
#[derive(Debug, PartialEq, Eq)]
pub struct ProgramBuild {
    pub family: Family,
    /// The first `--offload-arch` (the amdgcn link's processor).
    pub arch: String,
    pub output: PathBuf,
    pub sources: Vec<PathBuf>,
    /// The arguments without the sources and `-o`.
    pub rest: Vec<String>,
}

pub fn program_build(args: &[String]) -> Option<ProgramBuild> {
    let archs: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("--offload-arch="))
        .collect();
    let family = Family::of_archs(&archs.join(","));
    let arch = archs
        .first()
        .and_then(|list| list.split(',').next())
        .unwrap_or_default()
        .to_string();
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
    let family = family?;
    if stops_early {
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
            && (crate::fc::is_fortran(path)
                || path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e)));
        if is_source {
            sources.push(path.to_path_buf());
        } else {
            rest.push(a.clone());
        }
        i += 1;
    }
    (!sources.is_empty()).then_some(ProgramBuild {
        family,
        arch,
        output,
        sources,
        rest,
    })
}

/// Whether `cc` builds virtual-GPU images (`RUSTOMP_VGPU_BUILD=0` turns it off).
pub fn enabled() -> bool {
    std::env::var("RUSTOMP_VGPU_BUILD").map_or(true, |v| v != "0")
}

/// After `cc` or `fc` linked a program for an nvptx or amdgcn arch: its virtual-GPU image, embedded
/// (`cxx`: C++ sources of a `cc` command are compiled as C++). Objects or
/// archives given to the link are not recompiled: their device code is missing from the image,
/// which fails at run time naming the kernel, as a kernel missing from a cubin would.
pub fn build_for_program(cxx: bool, build: &ProgramBuild) -> Result<()> {
    if build.family == Family::Nvptx {
        if let Some(why) = build_runtime_object_missing() {
            crate::bail!("{why}");
        }
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
        let mut bitcode = Vec::new();
        for (n, source) in build.sources.iter().enumerate() {
            let bc = work.join(format!("{n}.bc"));
            // One device output: the image's arch alone (a list would make several).
            let mut args: Vec<String> = build
                .rest
                .iter()
                .map(|a| {
                    if a.starts_with("--offload-arch=") {
                        format!("--offload-arch={}", build.arch)
                    } else {
                        a.clone()
                    }
                })
                .collect();
            args.extend([
                "--offload-device-only".to_string(),
                "-emit-llvm".into(),
                "-c".into(),
                source.display().to_string(),
                "-o".into(),
                bc.display().to_string(),
            ]);
            let mut command = if crate::fc::is_fortran(source) {
                // flang writes module files to the working directory unless told otherwise.
                args.extend(["-module-dir".into(), work.display().to_string()]);
                crate::fc::command(Runtime::Ours, &args)
            } else {
                cc::command(cxx, Runtime::Ours, &args)
            };
            let out = command.output_raw()?;
            if !out.status.success() {
                crate::bail!(
                    "the device-only compile of {} failed:\n{}",
                    source.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            bitcode.push(bc);
        }
        let objects = match build.family {
            Family::Nvptx => {
                let mut objects = Vec::new();
                for (n, bc) in bitcode.iter().enumerate() {
                    let object = work.join(format!("{n}.o"));
                    compile_module(bc, &object, None)?;
                    objects.push(object);
                }
                objects
            }
            Family::Amdgcn => {
                // One module: the sources and the device runtime, linked and optimized as the
                // real image is; the team-memory layout once, here.
                let linked = work.join("linked.bc");
                link_amdgcn_module(&bitcode, &build.arch, &linked)?;
                let object = work.join("linked.o");
                compile_module(&linked, &object, Some(instrument::LAYOUT))?;
                vec![object]
            }
        };
        let image = work.join("image.so");
        link_image(&objects, &image, build.family)?;
        embed(&build.output, &image, build.family)
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
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
        assert_eq!((b.family, b.arch.as_str()), (Family::Nvptx, "sm_90"));
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
    fn a_linking_amdgcn_build_is_recognized() {
        let b = program_build(&s(&["--offload-arch=gfx90a,gfx942", "a.c", "-o", "p"])).unwrap();
        assert_eq!((b.family, b.arch.as_str()), (Family::Amdgcn, "gfx90a"));
        // Wave32 processors: the virtual GPU's wavefronts have 64 lanes.
        assert_eq!(program_build(&s(&["--offload-arch=gfx1100", "a.c"])), None);
    }

    #[test]
    fn other_builds_are_not() {
        assert_eq!(
            program_build(&s(&["--offload-arch=sm_90", "-c", "a.c"])),
            None
        );
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
