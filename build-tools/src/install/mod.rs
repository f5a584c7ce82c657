//! `cargo xtask install [--prefix P] [--deb]` and `cargo xtask uninstall [--prefix P]`: rustomp
//! for plain `clang-22 -fopenmp`, without the `cargo xtask cc` wrapper.
//!
//! The prefix (default `~/.local/rustomp`; no root needed):
//!
//! ```text
//! P/env.sh                                   source it: PATH and clang-22's hook (below)
//! P/bin/rustomp-info                         plugins and devices (host-plugins/info)
//! P/bin/rustomp-proxy                        remote ranks' server (host-plugins/proxy, issue 26)
//! P/lib/librustomp-mpi.so                    its MPI shim, when Open MPI's mpicc is installed
//! P/lib/libomptarget.so.22.1, libomptarget.so -> libomptarget.so.22.1
//! P/lib/libomptarget-{nvptx,amdgpu}.bc       the device runtime, per translation unit
//! P/lib/<triple>/libompdevice.a              the device runtime, per device link (nvptx64, amdgcn;
//!                                            x86_64: flang's host-offload images, host-devicertl)
//! P/lib/rustomp-indirect-calls.so            the LLVM pass plugin for device code (issue 25)
//! P/cuda/{bin/ptxas,bin/nvlink,include/cuda.h,nvvm/libdevice/libdevice.10.bc}
//!                                            what clang needs of CUDA (from `cargo xtask setup`)
//! P/etc/rustomp/clang.cfg                    the clang-22 options `cargo xtask cc` passes
//! P/etc/rustomp/flang.cfg                    the flang-22 options `cargo xtask fc` passes
//! P/share/rustomp/manifest                   what the install wrote, for `uninstall`
//! ```
//!
//! How clang-22 finds it: Debian's clang-22 reads default configuration files only from its own
//! directory (`/usr/lib/llvm-22/bin`, root's; it was built without user or system config
//! directories), `--config=` is a flag, and the one environment variable its driver takes
//! options from is `CCC_OVERRIDE_OPTIONS`. `env.sh` sets it to the edit
//! `s/^-fopenmp(=libomp)?$/--config=P/etc/rustomp/clang.cfg/`, so a command with `-fopenmp`
//! loads `clang.cfg`, which starts with `-fopenmp` and holds what `cargo xtask cc` adds
//! (`cc::device_flags`, `cc::host_flags`, the amdgcn-only `-nogpulib`). Commands without
//! `-fopenmp` are untouched, and so are the device links clang-linker-wrapper runs (an rpath
//! there would reach nvlink, which refuses it). Environment variables alone cannot do it:
//! `LIBRARY_PATH` reaches the host link and the nvptx device link but not the amdgcn one (ld.lld
//! directly), and one list cannot hold both triples' `libompdevice.a`.
//!
//! flang-22 likewise reads default configuration files only from `/usr/lib/llvm-22/bin`
//! (`flang.cfg`, `x86_64-pc-linux-gnu-flang.cfg`), and ignores `CCC_OVERRIDE_OPTIONS`: its
//! variable is `FCC_OVERRIDE_OPTIONS`, which `env.sh` sets to the same edit naming `flang.cfg`
//! (`fc::device_flags`, `cc::host_flags`). flang rejects `--cuda-path`: it takes the CUDA
//! installation from the `ptxas` on `PATH`, so `env.sh` also puts `P/cuda/bin` on `PATH` when the
//! install has CUDA's tools.
//!
//! `uninstall` removes the files the manifest lists, then the directories the install created
//! if they are empty, and nothing else; a reinstall over an install replaces its files and
//! drops those the new one no longer has. The install refuses to overwrite a file it did not
//! write. Nothing is written outside P (the shell's variables are the user's `source`).

use crate::bail;
use crate::cc;
use crate::paths::LLVM_LIB;
use crate::paths::{CONFIG, FLANG_CONFIG};
use crate::util::{self, at, Cmd, Context, Result};
use crate::{devicertl, host};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

const MANIFEST: &str = "share/rustomp/manifest";
const ENV_SH: &str = "env.sh";
const MANIFEST_HEADER: &str = "# rustomp install manifest: what `cargo xtask install` wrote under this prefix (`dir` lines: directories it created). `cargo xtask uninstall` removes exactly these.";
/// The Debian package's prefix when `--prefix` is not given.
const DEB_PREFIX: &str = "/opt/rustomp";

pub struct Options {
    pub prefix: Option<PathBuf>,
    pub deb: bool,
}

/// Where a file's bytes come from.
#[derive(Debug)]
enum Content {
    Copy(PathBuf),
    /// A symbolic link with this (relative) target.
    Link(PathBuf),
    Text(String),
}

/// One file of the layout: its path relative to the prefix and its content.
#[derive(Debug)]
struct Entry {
    rel: PathBuf,
    content: Content,
}

/// `~/.local/rustomp`.
pub fn default_prefix() -> Result<PathBuf> {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(".local/rustomp")),
        _ => bail!("HOME is not set; give the prefix: `--prefix DIR`"),
    }
}

/// The prefix as an absolute path without `.`/`..`, refusing characters the hook cannot carry
/// (CCC_OVERRIDE_OPTIONS splits at spaces; the configuration file and env.sh quote nothing).
fn checked_prefix(prefix: &Path) -> Result<PathBuf> {
    let text = prefix
        .to_str()
        .context(|| format!("the prefix {} is not UTF-8", prefix.display()))?;
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_alphanumeric() || "/._+-@%,=".contains(*c)))
    {
        bail!(
            "the prefix `{text}` contains {c:?}; choose a path of letters, digits and `/._+-@%,=`"
        );
    }
    let absolute = if prefix.is_absolute() {
        prefix.to_path_buf()
    } else {
        std::env::current_dir()?.join(prefix)
    };
    let mut clean = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::RootDir | Component::Normal(_) => clean.push(c),
            Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                bail!("the prefix `{text}` contains `..`; give it without")
            }
        }
    }
    if clean.parent().is_none() {
        bail!("the prefix cannot be `/`");
    }
    Ok(clean)
}

/// `clang.cfg` for a runtime under `prefix`.
fn config_text(prefix: &Path, cuda: bool) -> String {
    let lib = prefix.join("lib");
    let cuda_dir = prefix.join("cuda");
    let mut text = format!(
        "# rustomp: the options clang-22 needs for OpenMP offloading with rustomp's runtime in\n\
         # {prefix}. Written by `cargo xtask install`; loaded by clang-22 for a command with\n\
         # -fopenmp once {prefix}/{ENV_SH} is sourced (its CCC_OVERRIDE_OPTIONS turns -fopenmp into\n\
         # --config=<this file>, so the first line gives -fopenmp back).\n\
         -fopenmp\n\
         # Device runtime: the nvptx bitcode for every unit, each triple's libompdevice.a for the\n\
         # device link{cuda_note}.\n",
        prefix = prefix.display(),
        cuda_note = if cuda { ", CUDA's ptxas/nvlink/libdevice" } else { "" },
    );
    for flag in cc::device_flags(&lib, cuda.then_some(cuda_dir.as_path())) {
        // `-Xoffload-linker-<triple>` takes the next argument: keep the pair on one line.
        if flag.starts_with("-Xoffload-linker-") {
            text.push_str(&flag);
            text.push(' ');
        } else {
            text.push_str(&flag);
            text.push('\n');
        }
    }
    text.push_str(
        "# Calls through host function pointers in device code: the pass plugin, for every device\n\
         # compile job (-Xarch_device) and the nvptx64 / amdgcn device LTO links (their linkers'\n\
         # own options, through the linker wrapper).\n",
    );
    let plugin = crate::pass::clang_flags(&lib.join(crate::pass::PLUGIN));
    for pair in plugin.chunks(2) {
        text.push_str(&pair.join(" "));
        text.push('\n');
    }
    text.push_str("# AMD GPUs: no ROCm device libraries (the runtime is libompdevice.a); amdgcn only, so an\n# nvptx build keeps its bitcode.\n");
    text.push_str(&cc::AMDGCN_NOGPULIB.join(" "));
    text.push('\n');
    text.push_str(&format!(
        "# Host: link against {lib}/libomptarget.so and load it from there at run time, with\n# LLVM 22's libomp.so.5 from {LLVM_LIB}.\n",
        lib = lib.display()
    ));
    for flag in cc::host_flags(&lib) {
        text.push_str(&flag);
        text.push('\n');
    }
    text
}

/// `flang.cfg` for a runtime under `prefix`.
fn flang_config_text(prefix: &Path) -> String {
    let lib = prefix.join("lib");
    let mut text = format!(
        "# rustomp: the options flang-22 needs for OpenMP offloading with rustomp's runtime in\n\
         # {prefix}. Written by `cargo xtask install`; loaded by flang-22 for a command with\n\
         # -fopenmp once {prefix}/{ENV_SH} is sourced (its FCC_OVERRIDE_OPTIONS turns -fopenmp into\n\
         # --config=<this file>, so the first line gives -fopenmp back).\n\
         -fopenmp\n\
         # Device runtime: each triple's libompdevice.a for its device link (x86_64: the entry\n\
         # points flang's host-offload images call); -nogpulib: no ROCm device libraries. CUDA's\n\
         # ptxas/nvlink come from PATH (flang-22 has no --cuda-path).\n",
        prefix = prefix.display(),
    );
    for flag in crate::fc::device_flags(&lib) {
        // `-Xoffload-linker-<triple>` takes the next argument: keep the pair on one line.
        text.push_str(&flag);
        text.push(if flag.starts_with("-Xoffload-linker-") {
            ' '
        } else {
            '\n'
        });
    }
    text.push_str(&format!(
        "# Host: link against {lib}/libomptarget.so and load it from there at run time, with\n# LLVM 22's libomp.so.5 from {LLVM_LIB}.\n",
        lib = lib.display()
    ));
    for flag in cc::host_flags(&lib) {
        text.push_str(&flag);
        text.push('\n');
    }
    text
}

/// The CCC_OVERRIDE_OPTIONS (FCC_OVERRIDE_OPTIONS) edit that makes `-fopenmp` load the
/// configuration `config` of `prefix`.
fn override_edit(prefix: &Path, config: &str) -> String {
    format!(
        "s/^-fopenmp(=libomp)?$/--config={}/{config}/",
        prefix.display()
    )
}

/// The lines of `env.sh` that put `edit` first in the edit list `variable`, once.
fn override_block(variable: &str, edit: &str) -> String {
    format!(
        r##"_rustomp_edit='{edit}'
case "${{{variable}-}}" in
    *"$_rustomp_edit"*) ;;
    "") {variable}="# $_rustomp_edit" ;;
    "#"*) _rustomp_rest="${{{variable}#\#}}"
        {variable}="# $_rustomp_edit ${{_rustomp_rest# }}"
        unset _rustomp_rest ;;
    *) {variable}="$_rustomp_edit ${variable}" ;;
esac
export {variable}
unset _rustomp_edit
"##
    )
}

/// `env.sh` for `prefix` (POSIX sh; bash, zsh, dash); `cuda`: the install has CUDA's tools.
fn env_text(prefix: &Path, cuda: bool) -> String {
    let clang = override_block("CCC_OVERRIDE_OPTIONS", &override_edit(prefix, CONFIG));
    let flang = override_block(
        crate::fc::OVERRIDE_VARIABLE,
        &override_edit(prefix, FLANG_CONFIG),
    );
    let cuda_path = if cuda {
        r##"# flang-22 has no --cuda-path: it uses the CUDA installation of the ptxas on PATH.
case ":${PATH-}:" in
    *":$RUSTOMP_PREFIX/cuda/bin:"*) ;;
    *) PATH="$RUSTOMP_PREFIX/cuda/bin:$PATH"; export PATH ;;
esac
"##
    } else {
        ""
    };
    let prefix = prefix.display();
    format!(
        r##"# rustomp: source this file (`. {prefix}/{ENV_SH}`) to build OpenMP offload programs with plain
# clang-22 / clang++-22 / flang-22 against rustomp's runtime in {prefix}, and to have
# rustomp-info on PATH. Written by `cargo xtask install`; `cargo xtask uninstall --prefix
# {prefix}` removes it.
#
# clang-22 and flang-22 read no per-user configuration file, so the hooks are
# CCC_OVERRIDE_OPTIONS (clang) and FCC_OVERRIDE_OPTIONS (flang), lists of edits each driver
# applies to its command line: ours replace -fopenmp by --config={prefix}/{CONFIG}
# (flang: {prefix}/{FLANG_CONFIG}), which begins with -fopenmp. Commands without -fopenmp are
# unchanged. They apply to every clang / flang in this shell (meant for the LLVM 22 ones); see
# the options with `clang-22 -fopenmp -### x.c`, `flang-22 -fopenmp -### x.f90`. To undo: a
# new shell.
RUSTOMP_PREFIX='{prefix}'
export RUSTOMP_PREFIX
case ":${{PATH-}}:" in
    *":$RUSTOMP_PREFIX/bin:"*) ;;
    *) PATH="$RUSTOMP_PREFIX/bin${{PATH:+:$PATH}}"; export PATH ;;
esac
{cuda_path}{clang}{flang}"##
    )
}

/// The CUDA files clang-22 uses (`cargo xtask setup` put the pip package in target/tools/cuda):
/// ptxas and nvlink, cuda.h (clang reads the version from it), libdevice.
const CUDA_FILES: [&str; 4] = [
    "bin/ptxas",
    "bin/nvlink",
    "include/cuda.h",
    "nvvm/libdevice/libdevice.10.bc",
];

/// What the install lays out for `prefix`, from the built tree. `with_cuda`: copy CUDA's tools
/// when `cargo xtask setup` installed them.
fn entries(prefix: &Path, with_cuda: bool) -> Result<Vec<Entry>> {
    let dist = crate::paths::dist_lib();
    let copy = |rel: &str, from: PathBuf| -> Result<Entry> {
        if !from.is_file() {
            bail!(
                "{} is missing; build it first (`cargo xtask host`, `cargo xtask devicertl`)",
                util::show(&from)
            );
        }
        Ok(Entry {
            rel: PathBuf::from(rel),
            content: Content::Copy(from),
        })
    };
    let mut v = vec![
        copy(
            &format!("lib/{}", crate::paths::SONAME),
            dist.join(crate::paths::SONAME),
        )?,
        copy(
            &format!("lib/{}", crate::pass::PLUGIN),
            dist.join(crate::pass::PLUGIN),
        )?,
        Entry {
            rel: PathBuf::from("lib/libomptarget.so"),
            content: Content::Link(PathBuf::from(crate::paths::SONAME)),
        },
        copy("bin/rustomp-info", at("target/release/rustomp-info"))?,
        // Remote offload (issue 26): the proxy remote ranks run.
        copy(
            &format!("bin/{}", crate::paths::PROXY),
            crate::paths::dist_bin().join(crate::paths::PROXY),
        )?,
    ];
    // Its MPI shim, when Open MPI's mpicc built it.
    let shim = dist.join(crate::paths::MPI_SHIM);
    if shim.is_file() {
        v.push(copy(&format!("lib/{}", crate::paths::MPI_SHIM), shim)?);
    }
    for built in devicertl::outputs()
        .into_iter()
        .chain([crate::host_devicertl::archive()])
    {
        let rel = built.strip_prefix(&dist).unwrap_or(&built).to_path_buf();
        v.push(copy(&format!("lib/{}", rel.display()), built)?);
    }
    let cuda_src = crate::paths::cuda_dir();
    let cuda = with_cuda && cuda_src.join("bin/ptxas").is_file();
    if cuda {
        for f in CUDA_FILES {
            v.push(copy(&format!("cuda/{f}"), cuda_src.join(f))?);
        }
    }
    v.push(Entry {
        rel: PathBuf::from(CONFIG),
        content: Content::Text(config_text(prefix, cuda)),
    });
    v.push(Entry {
        rel: PathBuf::from(FLANG_CONFIG),
        content: Content::Text(flang_config_text(prefix)),
    });
    v.push(Entry {
        rel: PathBuf::from(ENV_SH),
        content: Content::Text(env_text(prefix, cuda)),
    });
    Ok(v)
}

/// The manifest: directories the install created (`.` is the prefix itself) and files it wrote.
#[derive(Debug, Default, PartialEq, Eq)]
struct Manifest {
    dirs: BTreeSet<PathBuf>,
    files: BTreeSet<PathBuf>,
}

impl Manifest {
    fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let mut m = Manifest::default();
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, rel) = line.split_once(' ').unwrap_or((line, ""));
            let rel = PathBuf::from(rel);
            let inside = rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if rel.as_os_str().is_empty() || !inside {
                bail!("{}:{}: `{line}` is not a path inside the prefix; not an install manifest of ours", path.display(), n + 1);
            }
            match kind {
                "dir" => m.dirs.insert(rel),
                "file" => m.files.insert(rel),
                _ => bail!("{}:{}: unknown entry `{line}`", path.display(), n + 1),
            };
        }
        Ok(m)
    }

    fn render(&self) -> String {
        let mut text = format!("{MANIFEST_HEADER}\n");
        for d in &self.dirs {
            text.push_str(&format!("dir {}\n", d.display()));
        }
        for f in &self.files {
            text.push_str(&format!("file {}\n", f.display()));
        }
        text
    }

    fn read(prefix: &Path) -> Result<Option<Manifest>> {
        let path = prefix.join(MANIFEST);
        if fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        Manifest::parse(&util::read(&path)?, &path).map(Some)
    }

    fn write(&self, prefix: &Path) -> Result<()> {
        let path = prefix.join(MANIFEST);
        let tmp = path.with_extension("tmp-install");
        util::write(&tmp, self.render())?;
        fs::rename(&tmp, &path)
            .context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
    }
}

/// The directories from `prefix` down to `rel`'s parent (`.` first) that do not exist yet.
fn missing_dirs(prefix: &Path, rel: &Path, out: &mut BTreeSet<PathBuf>) {
    let mut dir = PathBuf::from(".");
    let mut check = |d: &Path| {
        if fs::symlink_metadata(prefix.join(d)).is_err() {
            out.insert(d.to_path_buf());
        }
    };
    check(&dir);
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            dir = if dir == Path::new(".") {
                PathBuf::from(c.as_os_str())
            } else {
                dir.join(c)
            };
            check(&dir);
        }
    }
}

fn write_entry(path: &Path, content: &Content) -> Result<()> {
    match content {
        Content::Copy(from) => util::install(from, path),
        Content::Link(target) => util::symlink(target, path),
        Content::Text(text) => {
            let tmp = path.with_extension("tmp-install");
            util::write(&tmp, text)?;
            fs::rename(&tmp, path)
                .context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
        }
    }
}

/// Removes a file or symlink the manifest lists; `Ok(false)` when it is already gone.
fn remove_file(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Err(_) => Ok(false),
        Ok(m) if m.is_dir() => bail!(
            "{} is a directory now, not the file the install wrote; remove it yourself",
            path.display()
        ),
        Ok(_) => fs::remove_file(path)
            .context(|| format!("cannot remove {}", path.display()))
            .map(|()| true),
    }
}

/// Writes `entries` under `prefix` with a manifest: refuses files it did not write before,
/// records the directories it creates before writing anything (an interrupted install can be
/// uninstalled), and drops what an earlier install wrote that this one does not.
fn lay_out(prefix: &Path, entries: &[Entry]) -> Result<Manifest> {
    let old = Manifest::read(prefix)?.unwrap_or_default();
    let new_files: BTreeSet<PathBuf> = entries.iter().map(|e| e.rel.clone()).collect();
    let foreign: Vec<String> = new_files
        .iter()
        .filter(|rel| !old.files.contains(*rel) && fs::symlink_metadata(prefix.join(rel)).is_ok())
        .map(|rel| prefix.join(rel).display().to_string())
        .collect();
    if !foreign.is_empty() {
        bail!(
            "{} existing file(s) under {} were not written by a rustomp install (no manifest lists them): {}; choose another --prefix or remove them",
            foreign.len(),
            prefix.display(),
            foreign.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let mut created = BTreeSet::new();
    for rel in new_files.iter().chain([PathBuf::from(MANIFEST)].iter()) {
        missing_dirs(prefix, rel, &mut created);
    }
    let dirs: BTreeSet<PathBuf> = old.dirs.union(&created).cloned().collect();
    // First a manifest naming everything this run may leave behind.
    util::mkdirs(prefix.join(MANIFEST).parent().unwrap_or(prefix))?;
    Manifest {
        dirs: dirs.clone(),
        files: old.files.union(&new_files).cloned().collect(),
    }
    .write(prefix)?;
    for e in entries {
        write_entry(&prefix.join(&e.rel), &e.content)?;
    }
    for stale in old.files.difference(&new_files) {
        remove_file(&prefix.join(stale))?;
    }
    let manifest = Manifest {
        dirs,
        files: new_files,
    };
    manifest.write(prefix)?;
    Ok(manifest)
}

/// Removes what the manifest under `prefix` lists; returns (files removed, directories kept).
fn remove_listed(prefix: &Path) -> Result<(usize, Vec<PathBuf>)> {
    let Some(m) = Manifest::read(prefix)? else {
        bail!(
            "{} has no rustomp install manifest ({MANIFEST}); nothing removed (is it the prefix given to `cargo xtask install`?)",
            prefix.display()
        );
    };
    let mut removed = 0;
    for rel in &m.files {
        removed += usize::from(remove_file(&prefix.join(rel))?);
    }
    remove_file(&prefix.join(MANIFEST))?;
    // Deepest first; `.` (the prefix) last.
    let mut dirs: Vec<&PathBuf> = m.dirs.iter().collect();
    dirs.sort_by_key(|d| {
        std::cmp::Reverse(if *d == Path::new(".") {
            0
        } else {
            d.components().count()
        })
    });
    let mut kept = Vec::new();
    for rel in dirs {
        let dir = if rel == Path::new(".") {
            prefix.to_path_buf()
        } else {
            prefix.join(rel)
        };
        let Ok(mut entries) = fs::read_dir(&dir) else {
            continue;
        };
        if entries.next().is_none() {
            fs::remove_dir(&dir).context(|| format!("cannot remove {}", dir.display()))?;
        } else {
            kept.push(dir);
        }
    }
    Ok((removed, kept))
}

/// Builds what the layout copies: the device runtime, the host library, rustomp-info.
fn build() -> Result<()> {
    devicertl::run(false)?;
    host::run()?;
    util::step("install: rustomp-info");
    Cmd::new(util::cargo())
        .in_root()
        .args(["build", "--release", "-p", "rustomp-info"])
        .hint("rustomp-info did not build; fix the error above")
        .run()
}

pub fn install(o: &Options) -> Result<()> {
    if o.deb {
        return deb(o);
    }
    let prefix = checked_prefix(&match &o.prefix {
        Some(p) => p.clone(),
        None => default_prefix()?,
    })?;
    build()?;
    util::step(&format!("install: {}", prefix.display()));
    let entries = entries(&prefix, true)?;
    if !entries.iter().any(|e| e.rel.starts_with("cuda")) {
        println!("install: no CUDA tools in {} (`cargo xtask setup` puts them there): --offload-arch=sm_XX builds need a CUDA toolkit clang finds itself (ptxas on PATH, /usr/local/cuda)", util::show(&crate::paths::cuda_dir()));
    }
    let manifest = lay_out(&prefix, &entries)?;
    println!(
        "install: {} files in {} (listed in {})",
        manifest.files.len(),
        prefix.display(),
        prefix.join(MANIFEST).display()
    );
    println!(
        "To use it, in each shell:\n  . {p}/{ENV_SH}\n  clang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu prog.c   # or --offload-arch=sm_90 / gfx90a\n  flang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu prog.f90 # likewise\n  rustomp-info\nTo remove it: cargo xtask uninstall --prefix {p}",
        p = prefix.display()
    );
    Ok(())
}

pub fn uninstall(prefix: Option<&Path>) -> Result<()> {
    let prefix = checked_prefix(&match prefix {
        Some(p) => p.to_path_buf(),
        None => default_prefix()?,
    })?;
    let (removed, kept) = remove_listed(&prefix)?;
    println!(
        "uninstall: removed {removed} files and the manifest from {}",
        prefix.display()
    );
    for dir in kept {
        println!(
            "uninstall: kept {}: it holds files the install did not write",
            dir.display()
        );
    }
    Ok(())
}

/// `install --deb`: the same layout under `/opt/rustomp` (or `--prefix`) as a Debian package in
/// `target/deb/`, without CUDA's tools (NVIDIA's, not ours to redistribute): sm_XX builds use a
/// CUDA toolkit clang finds itself. dpkg keeps the file list, so there is no manifest.
fn deb(o: &Options) -> Result<()> {
    let prefix = checked_prefix(o.prefix.as_deref().unwrap_or(Path::new(DEB_PREFIX)))?;
    if util::which("dpkg-deb").is_none() {
        bail!("dpkg-deb is not on PATH (Debian package dpkg)");
    }
    build()?;
    util::step("install: Debian package");
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("rustomp_{version}_amd64");
    let out = at("target/deb");
    let stage = out.join(&name);
    if stage.exists() {
        fs::remove_dir_all(&stage).context(|| format!("cannot clear {}", stage.display()))?;
    }
    let root = stage.join(prefix.strip_prefix("/").unwrap_or(&prefix));
    for e in entries(&prefix, false)? {
        write_entry(&root.join(&e.rel), &e.content)?;
    }
    let control = format!(
        "Package: rustomp\n\
         Version: {version}\n\
         Architecture: amd64\n\
         Maintainer: rustomp developers <rustomp@localhost>\n\
         Depends: clang-22, lld-22, libomp-22-dev\n\
         Recommends: libhsa-runtime64-1\n\
         Suggests: flang-22\n\
         Section: devel\n\
         Priority: optional\n\
         Description: OpenMP offload runtime in Rust for clang-22\n \
         libomptarget.so.22.1, its device runtime for nvptx64 and amdgcn, a clang-22\n \
         and flang-22 configuration and rustomp-info, in {prefix}. Source {prefix}/{ENV_SH}\n \
         to build with plain clang-22 -fopenmp or flang-22 -fopenmp. NVIDIA targets need a\n \
         CUDA toolkit (ptxas, nvlink).\n",
        prefix = prefix.display()
    );
    util::write(&stage.join("DEBIAN/control"), control)?;
    let deb = out.join(format!("{name}.deb"));
    Cmd::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&stage)
        .arg(&deb)
        .hint("dpkg-deb could not build the package; see its message above")
        .run()?;
    println!(
        "install: wrote {} (prefix {p}); install it with `sudo dpkg -i {}`, then `. {p}/{ENV_SH}`",
        util::show(&deb),
        util::show(&deb),
        p = prefix.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
