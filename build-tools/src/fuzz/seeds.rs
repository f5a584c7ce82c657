//! `cargo xtask fuzz --remake-corpus`: rebuilds the seed corpus `fuzz/corpus/<target>/` from
//! what the toolchains write (fuzz/README.md lists the files).
//!
//! - `tests/programs/01_basic_target.c` compiled by `cargo xtask cc`: linked for
//!   x86_64-pc-linux-gnu (the `.llvm.offloading` section of the program: an `OffloadBinary`
//!   around the linked x86_64 shared object), and `-c` for sm_90 (around a relocatable cubin)
//!   and gfx90a (around LLVM bitcode);
//! - a one-line kernel built by LLVM 22 and CUDA's tools: a gfx90a and a
//!   gfx942:sramecc+:xnack- code object (clang-22, ld.lld-22), sm_90 PTX (clang-22), its cubin
//!   (ptxas) and a fatbinary of both (fatbinary);
//! - by hand: those images in `OffloadBinary` containers, a truncated container, target-id
//!   strings, pseudo-random operation sequences for the mapping table, and inputs that once
//!   crashed a reader (kept as regressions).
//!
//! Needs `cargo xtask setup` (clang-22, CUDA tools); builds the device runtime first.

use crate::cc::{self, Runtime};
use crate::devicertl;
use crate::paths::cuda_dir;
use crate::util::{self, at, Cmd, Context, Result};
use object::{Object, ObjectSection};
use std::path::{Path, PathBuf};

/// The seed corpus of `target`, kept in the repository (`fuzz/corpus/<target>`).
pub fn seed_dir(target: &str) -> PathBuf {
    crate::util::at("fuzz/corpus").join(target)
}

const PROGRAM: &str = "tests/programs/01_basic_target.c";
const KERNEL_AMDGPU: &str =
    "__attribute__((amdgpu_kernel)) void fuzz_kernel(int *p) { p[0] = 42; }\n";
const KERNEL_NVPTX: &str =
    "__attribute__((nvptx_kernel)) void fuzz_kernel(int *p) { p[0] = 42; }\n";

/// `OffloadBinary` image kinds (LLVM's `ImageKind`).
const IMG_OBJECT: u16 = 1;
const IMG_CUBIN: u16 = 3;
const IMG_FATBINARY: u16 = 4;
const IMG_PTX: u16 = 5;

/// An `OffloadBinary` (version 1, OpenMP) around `image`: header, one entry, the string table,
/// the strings, the image; as clang-linker-wrapper lays it out.
fn offload_binary(image: &[u8], kind: u16, triple: &str, arch: &str) -> Vec<u8> {
    let mut out = vec![0u8; 32 + 40 + 2 * 16];
    let mut strings = Vec::new();
    for s in ["triple", triple, "arch", arch] {
        strings.push(out.len() as u64);
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }
    out.resize(out.len().next_multiple_of(8), 0);
    let image_at = out.len() as u64;
    out.extend_from_slice(image);
    let put = |out: &mut Vec<u8>, at: usize, bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes)
    };
    let size = out.len() as u64;
    put(&mut out, 0, &[0x10, 0xff, 0x10, 0xad]);
    put(&mut out, 4, &1u32.to_le_bytes());
    put(&mut out, 8, &size.to_le_bytes());
    put(&mut out, 16, &32u64.to_le_bytes());
    put(&mut out, 24, &40u64.to_le_bytes());
    put(&mut out, 32, &kind.to_le_bytes());
    put(&mut out, 34, &1u16.to_le_bytes());
    put(&mut out, 40, &72u64.to_le_bytes());
    put(&mut out, 48, &2u64.to_le_bytes());
    put(&mut out, 56, &image_at.to_le_bytes());
    put(&mut out, 64, &(image.len() as u64).to_le_bytes());
    for (i, pair) in strings.chunks(2).enumerate() {
        put(&mut out, 72 + 16 * i, &pair[0].to_le_bytes());
        put(&mut out, 80 + 16 * i, &pair[1].to_le_bytes());
    }
    out
}

fn u64_at(bytes: &[u8], at: usize) -> Result<usize> {
    let field: [u8; 8] = bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .context(|| format!("offload binary truncated at {at}"))?;
    Ok(u64::from_le_bytes(field) as usize)
}

/// The first `OffloadBinary` of a file's `.llvm.offloading` section.
fn offloading_section(file: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(file).context(|| format!("cannot read {}", file.display()))?;
    let object =
        object::File::parse(&*bytes).context(|| format!("cannot parse {}", file.display()))?;
    let section = object
        .section_by_name(".llvm.offloading")
        .context(|| format!("{} has no .llvm.offloading section", file.display()))?;
    let data = section
        .data()
        .context(|| format!("{}: .llvm.offloading", file.display()))?;
    let size = u64_at(data, 8)?;
    Ok(data
        .get(..size)
        .context(|| {
            format!(
                "{}: offload binary of {size} bytes is cut short",
                file.display()
            )
        })?
        .to_vec())
}

/// The image inside an `OffloadBinary` (its only entry).
fn contained(binary: &[u8]) -> Result<Vec<u8>> {
    let entry = u64_at(binary, 16)?;
    let (offset, size) = (u64_at(binary, entry + 24)?, u64_at(binary, entry + 32)?);
    Ok(binary
        .get(offset..offset + size)
        .context(|| "image beyond its offload binary")?
        .to_vec())
}

fn read(p: &Path) -> Result<Vec<u8>> {
    std::fs::read(p).context(|| format!("cannot read {}", p.display()))
}

fn omp_compile(args: &[&str], out: &Path) -> Result<()> {
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend([
        at(PROGRAM).display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ]);
    cc::command(false, Runtime::Ours, &args).run()
}

/// Empties `fuzz/corpus/<target>` and writes `files` there.
fn write_corpus(target: &str, files: &[(&str, Vec<u8>)]) -> Result<usize> {
    let dir = seed_dir(target);
    for old in util::files_matching(&dir, "", "") {
        std::fs::remove_file(&old).context(|| format!("cannot remove {}", old.display()))?;
    }
    let mut total = 0;
    for (name, bytes) in files {
        util::write(&dir.join(name), bytes)?;
        total += bytes.len();
    }
    println!("{}: {} seeds, {total} bytes", util::show(&dir), files.len());
    Ok(total)
}

/// The x86_64 image with its `.got` turned into a thread-local `SHT_NOBITS` section of
/// 2^64 - 16 bytes inside `PT_GNU_RELRO`, and its `PT_GNU_STACK` into an empty `PT_TLS`: the
/// input on which `validate`'s RELRO check once overflowed `sh_addr + sh_size`.
fn tls_section_in_relro(so: &[u8]) -> Result<Vec<u8>> {
    let mut out = so.to_vec();
    let u16_at = |at: usize| -> Result<usize> { Ok(u64_at(so, at)? & 0xffff) };
    let (phoff, phnum) = (u64_at(so, 0x20)?, u16_at(0x38)?);
    let (shoff, shnum, names) = (u64_at(so, 0x28)?, u16_at(0x3c)?, u16_at(0x3e)?);
    let names_at = u64_at(so, shoff + names * 64 + 24)?;
    let got = (0..shnum)
        .find(|&i| {
            let name = u64_at(so, shoff + i * 64).map_or(usize::MAX, |v| v & 0xffff_ffff);
            so.get(names_at + name..)
                .is_some_and(|n| n.starts_with(b".got\0"))
        })
        .context(|| "the x86_64 image has no .got section")?;
    let stack = (0..phnum)
        .find(|&i| u64_at(so, phoff + i * 56).is_ok_and(|v| v & 0xffff_ffff == 0x6474_e551))
        .context(|| "the x86_64 image has no PT_GNU_STACK")?;
    let at = shoff + got * 64;
    let flags = u64_at(so, at + 8)? as u64 | 0x400; // SHF_TLS
    out[at + 4..at + 8].copy_from_slice(&8u32.to_le_bytes()); // SHT_NOBITS
    out[at + 8..at + 16].copy_from_slice(&flags.to_le_bytes());
    out[at + 32..at + 40].copy_from_slice(&(u64::MAX - 15).to_le_bytes());
    let at = phoff + stack * 56;
    out[at..at + 4].copy_from_slice(&7u32.to_le_bytes()); // PT_TLS
    Ok(out)
}

/// xorshift64*, for reproducible operation sequences.
fn pseudo_random(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

pub fn remake() -> Result<()> {
    // The sm_90 compile needs the nvptx runtime bitcode.
    devicertl::run(false)?;
    let work = at("target/fuzz/seeds-work");
    util::mkdirs(&work)?;
    let path = |name: &str| -> PathBuf { work.join(name) };

    util::step("fuzz seeds: tests/programs/01_basic_target.c for x86_64, sm_90 and gfx90a");
    omp_compile(
        &["-O2", "-fopenmp-targets=x86_64-pc-linux-gnu"],
        &path("basic-x86_64"),
    )?;
    omp_compile(
        &["-O2", "--offload-arch=sm_90", "-c"],
        &path("basic-sm_90.o"),
    )?;
    omp_compile(
        &["-O2", "--offload-arch=gfx90a", "-c"],
        &path("basic-gfx90a.o"),
    )?;
    let host_container = offloading_section(&path("basic-x86_64"))?;
    let sm90_object_container = offloading_section(&path("basic-sm_90.o"))?;
    let gfx90a_bitcode_container = offloading_section(&path("basic-gfx90a.o"))?;
    let host_so = contained(&host_container)?;
    let sm90_object = contained(&sm90_object_container)?;

    util::step("fuzz seeds: a one-line kernel for gfx90a, gfx942 and sm_90 (clang-22, ld.lld-22, ptxas, fatbinary)");
    util::write(&path("k-amdgpu.c"), KERNEL_AMDGPU)?;
    util::write(&path("k-nvptx.c"), KERNEL_NVPTX)?;
    for (name, mcpu) in [("gfx90a", "gfx90a"), ("gfx942", "gfx942:sramecc+:xnack-")] {
        let object = path(&format!("k-{name}.o"));
        Cmd::new("clang-22")
            .args([
                "--target=amdgcn-amd-amdhsa",
                &format!("-mcpu={mcpu}"),
                "-nogpulib",
                "-O2",
                "-c",
            ])
            .arg(path("k-amdgpu.c"))
            .arg("-o")
            .arg(&object)
            .run()?;
        Cmd::new("ld.lld-22")
            .arg("-shared")
            .arg(&object)
            .arg("-o")
            .arg(path(&format!("k-{name}.so")))
            .run()?;
    }
    let cuda_bin = cuda_dir().join("bin");
    Cmd::new("clang-22")
        .args(["--target=nvptx64-nvidia-cuda", "-march=sm_90", "-O2", "-S"])
        .arg(format!("--cuda-path={}", cuda_dir().display()))
        .arg(path("k-nvptx.c"))
        .arg("-o")
        .arg(path("k-sm_90.ptx"))
        .run()?;
    Cmd::new(cuda_bin.join("ptxas"))
        .args(["-arch=sm_90"])
        .arg(path("k-sm_90.ptx"))
        .arg("-o")
        .arg(path("k-sm_90.cubin"))
        .run()?;
    Cmd::new(cuda_bin.join("fatbinary"))
        .arg(format!("--create={}", path("k-sm_90.fatbin").display()))
        .arg("-64")
        .arg(format!(
            "--image3=kind=elf,sm=90,file={}",
            path("k-sm_90.cubin").display()
        ))
        .arg(format!(
            "--image3=kind=ptx,sm=90,file={}",
            path("k-sm_90.ptx").display()
        ))
        .run()?;
    let gfx90a = read(&path("k-gfx90a.so"))?;
    let gfx942 = read(&path("k-gfx942.so"))?;
    let ptx = read(&path("k-sm_90.ptx"))?;
    let cubin = read(&path("k-sm_90.cubin"))?;
    let fatbin = read(&path("k-sm_90.fatbin"))?;

    util::step("fuzz seeds: writing fuzz/corpus");
    const NVPTX: &str = "nvptx64-nvidia-cuda";
    const AMDGCN: &str = "amdgcn-amd-amdhsa";
    let mut total = 0;
    total += write_corpus(
        "container",
        &[
            ("x86_64-program", host_container.clone()),
            ("sm_90-object", sm90_object_container.clone()),
            ("gfx90a-bitcode", gfx90a_bitcode_container.clone()),
            (
                "gfx90a-code-object",
                offload_binary(&gfx90a, IMG_OBJECT, AMDGCN, "gfx90a"),
            ),
            (
                "sm_90-cubin",
                offload_binary(&cubin, IMG_CUBIN, NVPTX, "sm_90"),
            ),
            (
                "sm_90-fatbinary",
                offload_binary(&fatbin, IMG_FATBINARY, NVPTX, "sm_90"),
            ),
            ("sm_90-ptx", offload_binary(&ptx, IMG_PTX, NVPTX, "sm_90")),
            ("truncated", host_container[..100].to_vec()),
            ("bare-gfx942-code-object", gfx942.clone()),
        ],
    )?;
    total += write_corpus(
        "image",
        &[
            ("x86_64.so", host_so.clone()),
            (
                "x86_64-tls-section-in-relro.so",
                tls_section_in_relro(&host_so)?,
            ),
            ("sm_90-relocatable.cubin", sm90_object),
            ("sm_90.cubin", cubin.clone()),
            ("sm_90.ptx", ptx.clone()),
            ("sm_90.fatbin", fatbin.clone()),
            ("gfx90a.so", gfx90a.clone()),
            ("gfx942.so", gfx942),
            ("target-id", b"gfx90a:xnack+".to_vec()),
            (
                "isa-name",
                b"amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-".to_vec(),
            ),
            ("sm-arch", b"sm_90a".to_vec()),
        ],
    )?;
    // Registration: byte 0 says how the rest is presented (fuzz_targets/registration.rs).
    let with = |control: u8, image: &[u8]| [&[control][..], image].concat();
    total += write_corpus(
        "registration",
        &[
            ("x86_64-program-container", with(0, &host_container)),
            ("x86_64", with(1, &host_so)),
            ("x86_64-and-bare", with(1 | 4, &host_so)),
            ("x86_64-two-programs", with(1 | 8, &host_so)),
            ("gfx90a", with(2, &gfx90a)),
            (
                "gfx90a-bitcode-container",
                with(0, &gfx90a_bitcode_container),
            ),
            ("sm_90-cubin", with(3, &cubin)),
            ("sm_90-fatbinary", with(3, &fatbin)),
            ("sm_90-ptx", with(3, &ptx)),
            ("sm_90-object-container", with(0, &sm90_object_container)),
        ],
    )?;
    let mapping: Vec<(String, Vec<u8>)> = [64usize, 128, 256, 512, 1024, 2048]
        .iter()
        .enumerate()
        .map(|(i, &len)| (format!("ops-{len}"), pseudo_random(0x5eed + i as u64, len)))
        .collect();
    let mapping: Vec<(&str, Vec<u8>)> = mapping
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    total += write_corpus("mapping", &mapping)?;
    println!("fuzz seeds: {total} bytes in all");
    Ok(())
}
