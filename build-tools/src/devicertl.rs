//! `cargo xtask devicertl`: builds the device runtime bitcode for nvptx64 and amdgcn and lays out
//! `dist/lib` the way clang-22 looks for it:
//!
//! - `dist/lib/libomptarget-nvptx.bc` (`--libomptarget-nvptx-bc-path`, linked per compile),
//! - `dist/lib/libomptarget-amdgpu.bc`,
//! - `dist/lib/<triple>/libompdevice.a` (the device link's `-lompdevice`).
//!
//! One runtime, two ways in: clang links the `.bc` into every nvptx translation unit with
//! `-mlink-builtin-bitcode` (only what the unit calls, internalized), and the device link pulls
//! `libompdevice.a` for what openmp-opt calls later (its own state machine) and for the globals.
//! Code may exist in several copies; *state* may not. So every mutable global of the runtime has
//! a name and external linkage, the archive member defines it, and the per-unit `.bc` only
//! declares it (`llvm-extract --delete`): every copy of the code reads and writes the archive's
//! one definition, and any number of units link. The build refuses a mutable global that is
//! internal (it would be duplicated per unit) and an `atomicrmw` with an ordering (clang-22's
//! NVPTX backend drops it), and checks the machine code of the synchronization entry points.
//!
//! The globals the plugins look up by name are protected and in `@llvm.used` because
//! `devicertl/ir/<arch>.ll` declares them so: `llvm-link` gives a definition the more
//! restrictive visibility of the two and appends the `@llvm.used` lists. The build checks the
//! result; it edits no IR but the CPU attributes, and marks every function definition with the
//! string attribute `"rustomp-runtime"` (which the indirect-call pass, `compiler/`, skips).

use crate::bail;
use crate::paths::dist_lib;
use crate::util::{self, at, Cmd, Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub struct Target {
    pub triple: &'static str,
    /// `devicertl/ir/<ir>.ll`
    ir: &'static str,
    /// `dist/lib/<bc_name>`
    bc_name: &'static str,
    /// RUSTFLAGS the build needs (rustc requires a CPU for amdgcn; we strip it afterwards).
    rustflags: Option<&'static str>,
    /// Undefined symbols the device link resolves elsewhere.
    pub allowed_undefined: &'static [&'static str],
}

pub const TARGETS: [Target; 2] = [
    Target {
        triple: "nvptx64-nvidia-cuda",
        ir: "nvptx",
        bc_name: NVPTX_BC,
        rustflags: None,
        // Resolved by the CUDA driver when it loads the image; the dynamic shared memory array
        // is `.extern .shared` by definition (sized at launch).
        // `__nvvm_reflect` is folded by the NVPTX backend when the program is compiled for its
        // --offload-arch (NVVMReflect), never linked.
        allowed_undefined: &[
            "malloc",
            "free",
            "vprintf",
            "__rustomp_dynamic_shared",
            "__nvvm_reflect",
        ],
    },
    Target {
        triple: "amdgcn-amd-amdhsa",
        ir: "amdgcn",
        bc_name: "libomptarget-amdgpu.bc",
        rustflags: Some("-Ctarget-cpu=gfx90a"),
        // Dynamic LDS: an external zero-sized LDS array, placed after the static LDS at launch.
        allowed_undefined: &["__rustomp_dynamic_shared"],
    },
];

/// Symbols every runtime bitcode must define.
const REQUIRED: [&str; 3] = [
    "__kmpc_target_init",
    "__kmpc_target_translate_fptr",
    "__llvm_omp_indirect_call_lookup",
];

/// Globals the host plugins look up by name in the loaded image: protected definitions in
/// `@llvm.used` (as `devicertl/ir/<arch>.ll` declares them), so they stay visible and survive LTO.
const PROTECTED_GLOBALS: [&str; 3] = [
    "__omp_rtl_device_environment",
    "__omp_offloading_fptr_map_p",
    "__omp_offloading_fptr_map_size",
];

/// The name of the nvptx runtime bitcode clang links into every device compile.
pub const NVPTX_BC: &str = "libomptarget-nvptx.bc";

/// The nvptx runtime bitcode clang links into every device compile.
pub fn nvptx_bc() -> PathBuf {
    dist_lib().join(NVPTX_BC)
}

/// Everything `run` writes into `dist/lib`: each target's bitcode and `<triple>/libompdevice.a`.
pub fn outputs() -> Vec<PathBuf> {
    let lib = dist_lib();
    let mut v = Vec::new();
    for t in &TARGETS {
        v.push(lib.join(t.bc_name));
        v.push(lib.join(t.triple).join("libompdevice.a"));
    }
    v.push(crate::vgpu::runtime_object());
    v
}

/// True when every output exists and is newer than every file under devicertl/ and host-plugins/abi/.
fn up_to_date() -> bool {
    let oldest_output = outputs().iter().map(|p| util::mtime(p)).min().flatten();
    let Some(oldest_output) = oldest_output else {
        return false;
    };
    let newest_input = [at("devicertl"), at("host-plugins/abi")]
        .iter()
        .filter_map(|d| util::newest_under(d))
        .max();
    newest_input.is_some_and(|t| t < oldest_output)
}

pub fn run(force: bool) -> Result<()> {
    if !force && up_to_date() {
        println!("devicertl: dist/lib is up to date (use --force to rebuild)");
        return Ok(());
    }
    let shared_bytes = team_shared_bytes()?;
    for t in &TARGETS {
        util::step(&format!("devicertl: {}", t.triple));
        let built = build_one(t, shared_bytes)?;
        lay_out(t, &built)?;
    }
    println!("devicertl: wrote {}", util::show(&dist_lib()));
    Ok(())
}

/// `pub const TEAM_SHARED_BYTES: usize = N;` in devicertl/src/arch/mod.rs.
pub fn team_shared_bytes() -> Result<u64> {
    let path = at("devicertl/src/arch/mod.rs");
    let text = util::read(&path)?;
    parse_team_shared_bytes(&text).context(|| {
        format!(
            "{} has no `pub const TEAM_SHARED_BYTES: usize = N;` (the .ll files need its value)",
            util::show(&path)
        )
    })
}

fn parse_team_shared_bytes(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l
            .trim()
            .strip_prefix("pub const TEAM_SHARED_BYTES: usize =")?;
        rest.trim()
            .strip_suffix(';')?
            .trim()
            .replace('_', "")
            .parse()
            .ok()
    })
}

/// `cargo SUBCOMMAND -p devicertl` as the device build compiles it for `t`: the `device` profile,
/// `-Zbuild-std=core` (with `RUSTC_BOOTSTRAP=1`), the target's RUSTFLAGS only, `target_dir`.
/// `cargo xtask clippy` lints with the same invocation.
pub fn device_cargo(t: &Target, subcommand: &str, target_dir: &Path) -> Cmd {
    let mut cargo = Cmd::new(util::cargo());
    cargo
        .in_root()
        .args([
            subcommand,
            "-p",
            "devicertl",
            "--profile",
            "device",
            "--target",
            t.triple,
        ])
        .args(["-Zbuild-std=core", "--target-dir"])
        .arg(target_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    match t.rustflags {
        Some(flags) => cargo.env("RUSTFLAGS", flags),
        None => cargo.env_remove("RUSTFLAGS"),
    };
    cargo
}

/// Runs the Rust build, links the target's .ll, strips CPU attributes, checks symbols,
/// atomics and machine code, and makes the per-unit variant.
fn build_one(t: &Target, shared_bytes: u64) -> Result<Built> {
    let target_dir = at("target/device");
    let work = target_dir.join(t.triple);
    util::mkdirs(&work)?;

    // 1. Rust -> bitcode (a self-contained staticlib with fat LTO).
    device_cargo(t, "rustc", &target_dir)
        .args(["--crate-type", "staticlib", "--", "--emit=llvm-bc", "-Zdefault-visibility=hidden"])
        .hint("the device runtime did not compile; fix the error above (needs the rust-src component: `cargo xtask setup`)")
        .run()?;
    let deps = target_dir.join(t.triple).join("device/deps");
    let rust_bc = util::files_matching(&deps, "devicertl-", ".bc")
        .into_iter()
        .max_by_key(|p| util::mtime(p))
        .context(|| format!("the build wrote no devicertl-*.bc in {}", util::show(&deps)))?;

    // 2. The target's hand-written IR, with the shared-memory size filled in.
    let ir_src = at(&format!("devicertl/ir/{}.ll", t.ir));
    let ir = util::read(&ir_src)?;
    if !ir.contains("TEAM_SHARED_BYTES") {
        bail!(
            "{} lacks the TEAM_SHARED_BYTES placeholder",
            util::show(&ir_src)
        );
    }
    let arch_ll = work.join("arch.ll");
    util::write(
        &arch_ll,
        ir.replace("TEAM_SHARED_BYTES", &shared_bytes.to_string()),
    )?;

    // 3. Link them (the .ll makes the plugin-visible globals protected and used), drop the CPU
    //    attributes in the text form, back to bitcode.
    let linked_bc = work.join("linked.bc");
    let linked_ll = work.join("linked.ll");
    let final_ll = work.join("final.ll");
    let final_bc = work.join("devicertl.bc");
    let hint = "LLVM 22 tools are needed: `cargo xtask setup`";
    Cmd::new("llvm-link-22")
        .arg(&rust_bc)
        .arg(&arch_ll)
        .arg("-o")
        .arg(&linked_bc)
        .hint(format!(
            "could not link the Rust bitcode with {}; {hint}",
            util::show(&ir_src)
        ))
        .run()?;
    Cmd::new("llvm-dis-22")
        .arg(&linked_bc)
        .arg("-o")
        .arg(&linked_ll)
        .hint(hint)
        .run()?;
    let text = util::read(&linked_ll)?;
    let text = remove_string_attr(&text, "target-cpu");
    let text = remove_string_attr(&text, "target-features");
    let text = mark_runtime_functions(&text);
    let text = if t.triple.starts_with("amdgcn") {
        hide_functions(&text)
    } else {
        text
    };
    util::write(&final_ll, &text)?;
    Cmd::new("llvm-as-22")
        .arg(&final_ll)
        .arg("-o")
        .arg(&final_bc)
        .hint(format!(
            "the rewritten IR {} does not assemble: a bug in build-tools/src/devicertl.rs",
            util::show(&final_ll)
        ))
        .run()?;

    // 4. Check the symbols, the atomics and the machine code of the synchronization.
    check_symbols(t, &final_bc)?;
    crate::deviceir::check_plugin_globals(&text, &PROTECTED_GLOBALS).map_err(|e| {
        util::Error(format!(
            "{}: {e} (declared in {})",
            t.triple,
            util::show(&ir_src)
        ))
    })?;
    crate::deviceir::check_atomic_orderings(t.triple, &text)?;
    if t.triple.starts_with("amdgcn") {
        crate::deviceir::check_region_calls_opaque(&text)
            .map_err(|e| util::Error(format!("{}: {e}", t.triple)))?;
        println!(
            "{}: __kmpc_parallel_60 calls the region through an opaque pointer (no link-time inlining of every region)",
            t.triple
        );
    }
    unless_unchecked(crate::devicecode::check(t.triple, &final_bc, &work))?;

    // 5. The per-unit bitcode: the same code, the state only declared.
    let state = crate::deviceir::state_globals(&text)
        .map_err(|e| util::Error(format!("{}: {e}", t.triple)))?;
    let builtin_bc = work.join("builtin.bc");
    let mut extract = Cmd::new("llvm-extract-22");
    extract.arg("--delete").arg("--glob=llvm.used");
    for g in &state {
        extract.arg(format!("--glob={g}"));
    }
    extract
        .arg(&final_bc)
        .arg("-o")
        .arg(&builtin_bc)
        .hint(hint)
        .run()?;
    let builtin_ll = work.join("builtin.ll");
    Cmd::new("llvm-dis-22")
        .arg(&builtin_bc)
        .arg("-o")
        .arg(&builtin_ll)
        .hint(hint)
        .run()?;
    let left = crate::deviceir::state_globals(&util::read(&builtin_ll)?).unwrap_or_default();
    if !left.is_empty() {
        bail!(
            "{}: the per-unit runtime bitcode still defines state {:?}: every translation unit would get its own copy",
            t.triple,
            left
        );
    }
    println!(
        "{}: state defined once, in libompdevice.a: {}",
        t.triple,
        state.join(" ")
    );
    // 6. What the runtime makes of a reduction kernel: its chunk loop, as a program gets it.
    if t.triple.starts_with("nvptx") {
        unless_unchecked(crate::devicecode::check_reduction_probe(&builtin_bc, &work))?;
    }
    Ok(Built {
        archive_member: final_bc,
        per_unit: builtin_bc,
    })
}

/// The two bitcode files of one target.
struct Built {
    /// `libompdevice.a`'s member: code and state.
    archive_member: PathBuf,
    /// `libomptarget-<arch>.bc`: code, state declared only.
    per_unit: PathBuf,
}

/// Removes every `"key"="value"` string attribute (and the space before it).
fn remove_string_attr(text: &str, key: &str) -> String {
    let needle = format!("\"{key}\"=\"");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        let Some(close) = after.find('"') else { break };
        out.push_str(rest[..i].strip_suffix(' ').unwrap_or(&rest[..i]));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The string attribute every function of the runtime carries: the indirect-call pass
/// (`compiler/`) leaves the runtime's own calls through pointers alone (they go to what the
/// compiler passed, device addresses), at any optimization level and after any link.
const RUNTIME_MARK: &str = "rustomp-runtime";

/// Adds [`RUNTIME_MARK`] to the attribute groups of the module's function definitions.
fn mark_runtime_functions(text: &str) -> String {
    let groups: BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("define "))
        .flat_map(|l| {
            l.split_whitespace().filter(|t| {
                t.len() > 1 && t.starts_with('#') && t[1..].bytes().all(|b| b.is_ascii_digit())
            })
        })
        .collect();
    let mut out = String::with_capacity(text.len() + groups.len() * 20);
    for line in text.lines() {
        let group = line
            .strip_prefix("attributes ")
            .and_then(|r| r.split_whitespace().next());
        match (group, line.strip_suffix(" }")) {
            (Some(g), Some(body)) if groups.contains(g) => {
                out.push_str(body);
                out.push_str(&format!(" \"{RUNTIME_MARK}\" }}"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Every function (and function alias: LLVM merges identical ones) the runtime defines without
/// a visibility gets `hidden` (amdgcn). An amdgcn
/// image is a shared object linked with LTO: a function of default visibility is exported from
/// it, so LTO keeps, optimizes and compiles every one of the runtime's (all 188 of them for the
/// saxpy probe, printf's float formatting included) whether the program calls it or not. The
/// plugins look up kernels and the protected globals of `ir/amdgcn.ll`, never a runtime
/// function. (nvptx's device link internalizes the runtime anyway.) Except the functions the
/// indirect-call pass (`compiler/src/translate.rs`) adds calls to inside the LTO link, after
/// LTO has dropped what nothing called: they stay exported, so they are there to call.
fn hide_functions(text: &str) -> String {
    const CALLED_BY_THE_PASS: [&str; 2] = [
        "@__kmpc_target_translate_fptr",
        "@__llvm_omp_indirect_call_lookup",
    ];
    // `define ... @f(` or `@f = ... alias`.
    let called_by_the_pass = |line: &str| {
        CALLED_BY_THE_PASS
            .iter()
            .any(|f| line.contains(&format!("{f}(")) || line.starts_with(&format!("{f} = ")))
    };
    let mut out = String::with_capacity(text.len() + 4096);
    for line in text.lines() {
        let hidden = if called_by_the_pass(line) {
            None
        } else if let Some(rest) = line.strip_prefix("define ") {
            hidden_after_linkage(rest).map(|rest| format!("define {rest}"))
        } else if let Some((name, rest)) = line
            .split_once(" = ")
            .filter(|(n, r)| n.starts_with('@') && r.contains(" alias "))
        {
            hidden_after_linkage(rest).map(|rest| format!("{name} = {rest}"))
        } else {
            None
        };
        out.push_str(hidden.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `[linkage] rest` of a definition or alias as `[linkage] hidden rest`, or `None` when it is
/// local (internal, private) or already has a visibility.
fn hidden_after_linkage(text: &str) -> Option<String> {
    const LINKAGES: [&str; 7] = [
        "external",
        "weak",
        "weak_odr",
        "linkonce",
        "linkonce_odr",
        "available_externally",
        "extern_weak",
    ];
    let first = text.split_whitespace().next().unwrap_or("");
    if matches!(first, "internal" | "private") {
        return None;
    }
    let (linkage, after) = if LINKAGES.contains(&first) {
        (&text[..first.len() + 1], &text[first.len() + 1..])
    } else {
        ("", text)
    };
    let next = after.split_whitespace().next().unwrap_or("");
    (!matches!(next, "hidden" | "protected" | "default"))
        .then(|| format!("{linkage}hidden {after}"))
}

/// `llvm-nm-22` of a bitcode file: (defined global symbols, undefined symbols).
pub fn nm(file: &Path) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let out = Cmd::new("llvm-nm-22")
        .arg(file)
        .hint("LLVM 22 tools are needed: `cargo xtask setup`")
        .output()?;
    Ok(parse_nm(&out))
}

fn parse_nm(out: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut defined = BTreeSet::new();
    let mut undefined = BTreeSet::new();
    for line in out.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let (kind, name) = match toks.as_slice() {
            [kind, name] => (*kind, *name),
            [_, kind, name] => (*kind, *name),
            _ => continue,
        };
        match kind {
            "U" | "w" | "v" => {
                undefined.insert(name.to_string());
            }
            k if k.chars().all(|c| c.is_ascii_uppercase()) => {
                defined.insert(name.to_string());
            }
            _ => {} // local symbols
        }
    }
    (defined, undefined)
}

fn check_symbols(t: &Target, bc: &Path) -> Result<()> {
    let (defined, undefined) = nm(bc)?;
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|s| !defined.contains(*s))
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} runtime does not define {}: check the #[no_mangle] exports in devicertl/src",
            t.triple,
            missing.join(", ")
        );
    }
    let stray: Vec<&str> = undefined
        .iter()
        .map(String::as_str)
        .filter(|s| !s.starts_with("llvm.") && !t.allowed_undefined.contains(s))
        .collect();
    if !stray.is_empty() {
        bail!(
            "{} runtime bitcode leaves undefined: {} (allowed: {}); the device link would fail",
            t.triple,
            stray.join(", "),
            if t.allowed_undefined.is_empty() {
                "none".to_string()
            } else {
                t.allowed_undefined.join(" ")
            }
        );
    }
    println!(
        "{}: {} symbols defined, undefined: {}",
        t.triple,
        defined.len(),
        if undefined.is_empty() {
            "none".to_string()
        } else {
            undefined.iter().cloned().collect::<Vec<_>>().join(" ")
        }
    );
    Ok(())
}

fn lay_out(t: &Target, built: &Built) -> Result<()> {
    let lib = dist_lib();
    util::install(&built.per_unit, &lib.join(t.bc_name))?;
    // The archive member must be called devicertl.bc: stage it under that name.
    let stage = at("target/device").join(t.triple).join("ar");
    util::mkdirs(&stage)?;
    util::install(&built.archive_member, &stage.join("devicertl.bc"))?;
    let archive = lib.join(t.triple).join("libompdevice.a");
    util::mkdirs(archive.parent().unwrap_or(&lib))?;
    let tmp = archive.with_extension("a.tmp");
    let _ = std::fs::remove_file(&tmp);
    Cmd::new("llvm-ar-22")
        .arg("rcs")
        .arg(&tmp)
        .arg("devicertl.bc")
        .current_dir(&stage)
        .hint("LLVM 22 tools are needed: `cargo xtask setup`")
        .run()?;
    std::fs::rename(&tmp, &archive)
        .context(|| format!("cannot rename {} to {}", tmp.display(), archive.display()))?;
    if t.triple.starts_with("nvptx64") {
        crate::vgpu::build_runtime_object(&built.archive_member)?;
    }
    Ok(())
}

/// `RUSTOMP_DEVICERTL_UNCHECKED=1`: a machine-code check that fails is printed and the build
/// goes on. Only for experiments that take a fix out to see what else finds the fault (the
/// virtual GPU, say); never for a runtime that ships.
fn unless_unchecked(checked: Result<()>) -> Result<()> {
    match checked {
        Err(e) if std::env::var_os("RUSTOMP_DEVICERTL_UNCHECKED").is_some() => {
            println!("{} (RUSTOMP_DEVICERTL_UNCHECKED: built anyway)", e.0);
            Ok(())
        }
        checked => checked,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn runtime_functions_are_hidden_and_the_rest_left_alone() {
        let text = "define noundef i32 @__kmpc_a(i32 %x) #0 {\ndefine internal void @f() {\ndefine weak void @g() {\ndefine hidden ptr @h() {\ndefine protected void @p() {\n@x = global i32 0\n@s = unnamed_addr alias i32 (ptr, i32), ptr @m\n@t = internal alias void (), ptr @f\ndefine ptr @__kmpc_target_translate_fptr(i64 %0) {\n@__llvm_omp_indirect_call_lookup = unnamed_addr alias ptr (ptr), ptr @__kmpc_target_translate_fptr\n";
        assert_eq!(
            hide_functions(text),
            "define hidden noundef i32 @__kmpc_a(i32 %x) #0 {\ndefine internal void @f() {\ndefine weak hidden void @g() {\ndefine hidden ptr @h() {\ndefine protected void @p() {\n@x = global i32 0\n@s = hidden unnamed_addr alias i32 (ptr, i32), ptr @m\n@t = internal alias void (), ptr @f\ndefine ptr @__kmpc_target_translate_fptr(i64 %0) {\n@__llvm_omp_indirect_call_lookup = unnamed_addr alias ptr (ptr), ptr @__kmpc_target_translate_fptr\n",
            "the functions the indirect-call pass calls stay exported"
        );
    }

    use super::*;

    #[test]
    fn definitions_are_marked_as_the_runtime() {
        let ll = "define void @f() #0 {\n  ret void\n}\ndeclare void @llvm.trap() #1\nattributes #0 = { nounwind }\nattributes #1 = { cold noreturn }\n";
        let out = mark_runtime_functions(ll);
        assert!(
            out.contains("attributes #0 = { nounwind \"rustomp-runtime\" }"),
            "{out}"
        );
        assert!(out.contains("attributes #1 = { cold noreturn }"), "{out}");
    }

    #[test]
    fn team_shared_bytes_is_parsed() {
        let src = "//! doc\npub const TEAM_SHARED_BYTES: usize = 8_192;\n";
        assert_eq!(parse_team_shared_bytes(src), Some(8192));
        assert_eq!(parse_team_shared_bytes("const X: usize = 1;"), None);
    }

    #[test]
    fn cpu_attributes_are_removed() {
        let ll = "attributes #0 = { nounwind \"target-cpu\"=\"sm_30\" \"target-features\"=\"+ptx60,+sm_30\" }\n";
        let out = remove_string_attr(&remove_string_attr(ll, "target-cpu"), "target-features");
        assert_eq!(out, "attributes #0 = { nounwind }\n");
    }

    #[test]
    fn nm_output_is_parsed() {
        let out = "---------------- T __kmpc_target_init\n                 U malloc\n---------------- t local\n---------------- W omp_free\n";
        let (def, undef) = parse_nm(out);
        assert!(def.contains("__kmpc_target_init") && def.contains("omp_free"));
        assert!(!def.contains("local"));
        assert_eq!(
            undef.into_iter().collect::<Vec<_>>(),
            vec!["malloc".to_string()]
        );
    }
}
