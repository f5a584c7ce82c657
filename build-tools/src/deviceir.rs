//! Checks of the device runtime's linked LLVM IR (textual, as `llvm-dis-22` prints it), which
//! `cargo xtask devicertl` runs on every build: runtime state has one definition per image
//! (no internal mutable globals), no `atomicrmw` carries an ordering clang-22's NVPTX backend
//! would drop, and the globals the plugins look up are protected and kept. The machine-code
//! checks are `devicecode`'s.

use crate::bail;
use crate::util::Result;
use std::collections::BTreeSet;

/// Mutable global definitions of a textual module (its runtime state), by name. An error when
/// one is internal or private: it could not be shared between the copies of the code.
pub fn state_globals(ll: &str) -> std::result::Result<Vec<String>, String> {
    let mut state = Vec::new();
    let mut private = Vec::new();
    for global in ll.lines().filter_map(global_line) {
        if global.name.starts_with("llvm.")
            || global.is_constant()
            || global.has("external")
            || global.has("extern_weak")
        {
            continue;
        }
        if global.has("internal") || global.has("private") {
            private.push(global.name.to_string());
        } else {
            state.push(global.name.to_string());
        }
    }
    if !private.is_empty() {
        return Err(format!(
            "mutable globals with internal linkage {private:?}: runtime state needs a #[no_mangle] name \
             (clang links the runtime into every translation unit; an internal global would exist once per unit)"
        ));
    }
    Ok(state)
}

/// clang-22's NVPTX backend lowers an `atomicrmw` with acquire, release, acq_rel or seq_cst
/// ordering to a relaxed `atom` without a fence. The runtime uses relaxed RMWs with explicit
/// fences, or compare-exchange (lowered correctly); this keeps it that way.
pub fn check_atomic_orderings(triple: &str, ll: &str) -> Result<()> {
    let mut function = "";
    let mut bad = BTreeSet::new();
    for line in ll.lines() {
        if line.starts_with("define ") {
            function = line
                .split('@')
                .nth(1)
                .and_then(|r| r.split('(').next())
                .unwrap_or("?");
        }
        let trimmed = line.trim_start();
        let is_rmw = trimmed.starts_with("atomicrmw ") || trimmed.contains(" = atomicrmw ");
        if is_rmw
            && line
                .split([' ', ','])
                .any(|tok| matches!(tok, "acquire" | "release" | "acq_rel" | "seq_cst"))
        {
            bad.insert(function.to_string());
        }
    }
    if !bad.is_empty() {
        bail!(
            "{}: atomicrmw with an ordering in {} (clang-22's NVPTX backend drops the ordering: use a relaxed RMW with arch::team_fence_release/acquire or core::sync::atomic::fence, or compare_exchange)",
            triple,
            bad.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// A global variable's line of textual IR, `@name = <prefix> global|constant <rest>`.
struct GlobalLine<'a> {
    name: &'a str,
    /// Linkage, visibility, address space and the like.
    prefix: Vec<&'a str>,
    /// From `global` or `constant` on.
    rest: Vec<&'a str>,
}

impl GlobalLine<'_> {
    fn is_constant(&self) -> bool {
        self.rest[0] == "constant"
    }
    fn has(&self, attribute: &str) -> bool {
        self.prefix.contains(&attribute)
    }
}

/// `None` for anything but a global variable (functions, aliases, metadata).
fn global_line(line: &str) -> Option<GlobalLine<'_>> {
    let (name, rhs) = line.strip_prefix('@')?.split_once(" = ")?;
    let toks: Vec<&str> = rhs.split(' ').collect();
    let end = toks
        .iter()
        .position(|t| *t == "global" || *t == "constant")?;
    Some(GlobalLine {
        name: name.trim_matches('"'),
        prefix: toks[..end].to_vec(),
        rest: toks[end..].to_vec(),
    })
}

/// Each named global must be a protected definition listed in `@llvm.used`: the plugins look
/// it up by name, and the device link's LTO of `libompdevice.a` would otherwise drop it (and
/// its name) when no code of the program refers to it.
pub fn check_plugin_globals(ll: &str, names: &[&str]) -> std::result::Result<(), String> {
    let used: Vec<&str> = ll
        .lines()
        .filter(|l| l.starts_with("@llvm.used = "))
        .collect();
    let mut bad = Vec::new();
    for n in names {
        let prefix = format!("@{n} = ");
        let definition = ll
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .find_map(global_line)
            .filter(|g| !g.has("external") && !g.has("extern_weak"));
        let protected = definition.as_ref().is_some_and(|g| g.has("protected"));
        let kept = used.iter().any(|l| mentions(l, n));
        match (definition, protected, kept) {
            (None, _, _) => bad.push(format!("@{n} is not defined (check devicertl/src/env.rs)")),
            (Some(_), false, _) => bad.push(format!("@{n} is not protected")),
            (Some(_), true, false) => bad.push(format!("@{n} is not in @llvm.used")),
            _ => {}
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the globals the plugins look up by name must be protected definitions in @llvm.used: {}",
            bad.join("; ")
        ))
    }
}

/// amdgcn: every indirect call in `__kmpc_parallel_60` goes through the result of
/// `__rustomp_opaque_code_ptr`. Otherwise amdgcn's closed-world link-time optimization turns
/// each of its call sites (one per argument count) into direct calls of every outlined region
/// of that arity and inlines them all: probe 03_reductions' device link at -O2 then spent more
/// than 15 minutes in one 112k-line function.
pub fn check_region_calls_opaque(ll: &str) -> std::result::Result<(), String> {
    const FUNCTION: &str = "__kmpc_parallel_60";
    const OPAQUE: &str = "@__rustomp_opaque_code_ptr(";
    let header = format!("@{FUNCTION}(");
    let body: Vec<&str> = ll
        .lines()
        .skip_while(|l| !(l.starts_with("define ") && l.contains(&header)))
        .take_while(|l| *l != "}")
        .collect();
    if body.is_empty() {
        return Err(format!("{FUNCTION} is not defined"));
    }
    let opaque: BTreeSet<&str> = body
        .iter()
        .filter(|l| l.contains(OPAQUE))
        .filter_map(|l| l.trim_start().split(" = ").next())
        .collect();
    let mut calls = 0;
    let mut bad = BTreeSet::new();
    for line in &body {
        // `call <type> %callee(`: an indirect call (a direct one names `@callee`); the callee
        // is the first token after `call` that opens the argument list.
        let mut tokens = line.split_whitespace().skip_while(|tok| *tok != "call");
        if tokens.next().is_none() {
            continue;
        }
        let Some(callee) = tokens
            .find(|tok| tok.contains('('))
            .and_then(|tok| tok.split('(').next())
            .filter(|callee| callee.starts_with('%'))
        else {
            continue;
        };
        calls += 1;
        if !opaque.contains(callee) {
            bad.insert(callee.to_string());
        }
    }
    if calls == 0 {
        return Err(format!(
            "{FUNCTION} calls no region through a pointer (has the call moved?)"
        ));
    }
    if !bad.is_empty() {
        return Err(format!(
            "{FUNCTION} calls the region through {} without __rustomp_opaque_code_ptr \
             (arch::opaque_code_ptr): amdgcn's link-time optimization would inline every outlined region into it",
            bad.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(())
}

/// Whether `text` refers to the global `@name` (not merely to one whose name starts with it).
fn mentions(text: &str, name: &str) -> bool {
    let needle = format!("@{name}");
    text.match_indices(&needle).any(|(i, _)| {
        !text[i + needle.len()..]
            .starts_with(|c: char| c.is_ascii_alphanumeric() || "._$".contains(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARALLEL_60: &str = "define void @__kmpc_parallel_60(ptr %fn_ptr) {\n\
        start:\n  %f = tail call noundef ptr @__rustomp_opaque_code_ptr(ptr noundef %fn_ptr) #52\n\
          call void @llvm.assume(i1 true)\n\
          call void %f(ptr noundef %g, ptr noundef %b) #52\n\
          tail call void %f(ptr noundef %g, ptr noundef %b, ptr %a) #52\n  ret void\n}\n";

    #[test]
    fn region_calls_go_through_the_opaque_pointer() {
        assert_eq!(check_region_calls_opaque(PARALLEL_60), Ok(()));
        // As before the fix: the call through the argument itself.
        let direct = PARALLEL_60.replace(
            "call void %f(ptr noundef %g, ptr noundef %b)",
            "call void %fn_ptr(ptr noundef %g, ptr noundef %b)",
        );
        let err = check_region_calls_opaque(&direct).unwrap_err();
        assert!(err.contains("%fn_ptr"), "{err}");
        let none = PARALLEL_60
            .replace("call void %f(", "call void @g(")
            .replace("tail call void %f(", "tail call void @g(");
        assert!(check_region_calls_opaque(&none).is_err());
        assert!(check_region_calls_opaque("define void @other() {\n}\n").is_err());
    }

    #[test]
    fn plugin_globals_are_protected_definitions_in_llvm_used() {
        let ok = "@llvm.used = appending addrspace(1) global [3 x ptr] [ptr addrspacecast (ptr addrspace(1) @port to ptr), ptr addrspacecast (ptr addrspace(1) @env to ptr), ptr @map_p], section \"llvm.metadata\"\n\
                  @env = weak protected addrspace(1) global [48 x i8] zeroinitializer, align 8\n\
                  @map_p = weak protected global [8 x i8] zeroinitializer, align 8\n\
                  @map_pp = weak global [8 x i8] zeroinitializer, align 8\n";
        assert_eq!(check_plugin_globals(ok, &["env", "map_p"]), Ok(()));
        let err = check_plugin_globals(ok, &["map_pp"]).unwrap_err();
        assert!(err.contains("@map_pp is not protected"), "{err}");
        let unused = "@env = weak protected global [48 x i8] zeroinitializer, align 8\n\
                      @llvm.used = appending global [1 x ptr] [ptr @env_2], section \"llvm.metadata\"\n";
        let err = check_plugin_globals(unused, &["env"]).unwrap_err();
        assert!(err.contains("@env is not in @llvm.used"), "{err}");
        let declared = "@env = external protected global [48 x i8], align 8\n";
        let err = check_plugin_globals(declared, &["env"]).unwrap_err();
        assert!(err.contains("@env is not defined"), "{err}");
    }

    #[test]
    fn state_is_the_mutable_definitions() {
        let ll = "@llvm.used = appending global [1 x ptr] [ptr @a], section \"llvm.metadata\"\n\
                  @a = weak protected global [8 x i8] zeroinitializer, align 8\n\
                  @b = addrspace(3) global [16 x i8] undef, align 16\n\
                  @c = private unnamed_addr constant [1 x i8] c\"-\", align 1\n\
                  @d = external addrspace(3) global [0 x i8], align 16\n\
                  @e = weak local_unnamed_addr constant [4 x i8] zeroinitializer\n\
                  @f = unnamed_addr alias i32 (), ptr @g\n";
        assert_eq!(
            state_globals(ll).unwrap(),
            vec!["a".to_string(), "b".to_string()]
        );
        let internal = "@_RNvHEAP = internal addrspace(1) global [8 x i8] zeroinitializer\n";
        assert!(state_globals(internal).unwrap_err().contains("_RNvHEAP"));
    }

    #[test]
    fn ordered_atomicrmw_is_refused() {
        let triple = "nvptx64-nvidia-cuda";
        let ok = "define void @f() {\n  %1 = atomicrmw add ptr %p, i32 1 monotonic, align 4\n  %2 = cmpxchg ptr %p, i32 0, i32 1 acq_rel acquire\n}\n";
        assert!(check_atomic_orderings(triple, ok).is_ok());
        let bad = "define hidden void @g(ptr %p) {\n  %1 = atomicrmw add ptr %p, i32 1 syncscope(\"block\") acq_rel, align 4\n}\n";
        let err = check_atomic_orderings(triple, bad).unwrap_err().to_string();
        assert!(err.contains(" g"), "{err}");
    }
}
