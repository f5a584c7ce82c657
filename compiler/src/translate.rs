//! The rewrite: every call through a function pointer in OpenMP device code calls
//! `__kmpc_target_translate_fptr` on the pointer first (seed 000's design), so a host function
//! pointer of a `declare target indirect` function reaches the device's copy.

use crate::ir::{Module, Type, Value};
use rustomp_abi::EntryFlags;
use std::collections::BTreeSet;

/// The translation entry point (seed 000), defined by our device runtime for nvptx64 and
/// amdgcn and, for host-offload images, bound per image by the CPU plugin.
pub const TRANSLATE: &str = "__kmpc_target_translate_fptr";
/// LLVM's name for the same lookup (programs may call it themselves).
pub const LLVM_LOOKUP: &str = "__llvm_omp_indirect_call_lookup";
/// Host-offload modules only: calls `TRANSLATE` when it is bound, else returns the pointer.
pub const HOST_HELPER: &str = "__rustomp_translate_fptr";
/// The metadata kind the pass marks what it translated with (calls, vtable-pointer loads), so
/// that a later run (the LTO link after a unit's compile) leaves them alone even where the
/// optimizer inlined the translation itself. A lost mark costs a second lookup, nothing else.
pub const MARK: &str = "rustomp.fptr.translated";

/// Where in the pipeline the pass runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// The end of a translation unit's optimization pipeline (`-O0` included): the module is
    /// what the device code of the unit will be.
    Compile,
    /// The end of an LTO pre-link compile (`-foffload-lto`): for GPUs the link sees the whole
    /// device program and translates there; host-offload images are linked by GNU ld with
    /// LLVMgold.so, which loads no pass plugins, so they are translated here, per unit.
    PreLink,
    /// The end of the (full) LTO link of a device image: every unit of the program.
    Link,
}

impl Phase {
    /// The number the plugin passes (`plugin/plugin.cpp`).
    pub fn from_code(code: u32) -> Option<Phase> {
        match code {
            0 => Some(Phase::Compile),
            1 => Some(Phase::PreLink),
            2 => Some(Phase::Link),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Phase::Compile => "compile",
            Phase::PreLink => "lto-pre-link",
            Phase::Link => "lto-link",
        }
    }
}

/// `RUSTOMP_INDIRECT_CALLS`: when the pass translates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// (unset or `auto`) In device modules with `declare target indirect` entries.
    Auto,
    /// (`all`) In every device module, entries or not (units that call pointers to another
    /// unit's indirect functions without `-foffload-lto`).
    All,
    /// (`off`) Never.
    Off,
}

impl Mode {
    pub fn parse(text: Option<&str>) -> Result<Mode, String> {
        match text.map(str::trim) {
            None | Some("") | Some("auto") => Ok(Mode::Auto),
            Some("all") => Ok(Mode::All),
            Some("off") | Some("0") => Ok(Mode::Off),
            Some(other) => Err(format!(
                "RUSTOMP_INDIRECT_CALLS={other}: expected auto, all or off"
            )),
        }
    }
}

/// What the pass did to a module.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    /// Not an OpenMP device module (no `openmp-device` module flag): the host's own code.
    NotDevice,
    /// An LTO pre-link compile: the link translates.
    LeftToLink,
    /// `RUSTOMP_INDIRECT_CALLS=off`.
    Disabled,
    /// No `declare target indirect` entry in the module (`auto`): left byte for byte as it was.
    NoEntries,
    /// Translated (possibly nothing, when no call needed it).
    Translated,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Outcome {
    pub action: Action,
    /// `declare target indirect` functions and vtables the module names.
    pub entries: usize,
    /// Calls and invokes whose callee now goes through the translation.
    pub calls: usize,
    /// C++ vtable pointers (of objects that may come from the host) translated before use.
    pub vtable_pointers: usize,
}

impl Outcome {
    pub fn changed(&self) -> bool {
        self.calls + self.vtable_pointers > 0
    }
}

/// Runs the pass over `module`.
pub fn run(module: &Module<'_>, phase: Phase, mode: Mode) -> Outcome {
    let mut outcome = Outcome {
        action: Action::NotDevice,
        entries: 0,
        calls: 0,
        vtable_pointers: 0,
    };
    if !module.has_flag("openmp-device") {
        return outcome;
    }
    outcome.entries = indirect_entries(module).len();
    outcome.action = match (phase, mode) {
        (_, Mode::Off) => Action::Disabled,
        (Phase::PreLink, _) if is_gpu(module) => Action::LeftToLink,
        (_, Mode::Auto) if outcome.entries == 0 => Action::NoEntries,
        _ => Action::Translated,
    };
    if outcome.action != Action::Translated {
        return outcome;
    }
    let sites = Sites::find(module);
    if sites.calls.is_empty() && sites.vtable_pointers.is_empty() {
        return outcome;
    }
    let translator = Translator::new(module);
    let mark = module.metadata_kind(MARK);
    for &load in &sites.vtable_pointers {
        translator.translate_loaded_pointer(load);
        load.set_mark(mark);
    }
    for &call in &sites.calls {
        let translated = translator.translate(call.callee(), call, call);
        call.set_callee(translated);
        call.set_mark(mark);
    }
    for &call in &sites.through_vtables {
        call.set_mark(mark);
    }
    outcome.calls = sites.calls.len();
    outcome.vtable_pointers = sites.vtable_pointers.len();
    outcome
}

/// The names of the module's `declare target indirect` entries: in `!omp_offload.info`
/// (`!{i32 1, !"name", i32 flags, i32 order}`, flags INDIRECT or INDIRECT_VTABLE), and the
/// `__omp_offloading_*` globals clang initializes with a function's (or vtable's) address, which
/// are what the runtime reads and so survive every optimization and link.
pub fn indirect_entries(module: &Module<'_>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let indirect = u64::from((EntryFlags::INDIRECT | EntryFlags::INDIRECT_VTABLE).bits());
    for node in module.named_metadata("omp_offload.info") {
        let ops = node.node_operands();
        if let [kind, name, flags, ..] = ops.as_slice() {
            let global_entry = kind.const_int() == Some(1);
            if global_entry && flags.const_int().is_some_and(|f| f & indirect != 0) {
                if let Some(name) = name.node_string() {
                    names.insert(name);
                }
            }
        }
    }
    for global in module.globals() {
        let name = global.name();
        if !name.starts_with("__omp_offloading_") || global.is_declaration() {
            continue;
        }
        let Some(mut init) = global.initializer() else {
            continue;
        };
        while init.is_constant_pointer_cast() {
            match init.operand(0) {
                Some(inner) => init = inner,
                None => break,
            }
        }
        if init.is_function() || init.is_global_variable() {
            names.insert(name);
        }
    }
    names
}

/// nvptx64 and amdgcn, whose device runtime defines the translation; the rest (x86_64
/// host-offload images) get it from the CPU plugin at load time.
fn is_gpu(module: &Module<'_>) -> bool {
    let triple = module.triple();
    triple.starts_with("nvptx") || triple.starts_with("amdgcn")
}

/// The string attribute our device runtime's build (`cargo xtask devicertl`) gives every
/// function it defines.
pub const RUNTIME_MARK: &str = "rustomp-runtime";

/// Functions of the device runtime: their indirect calls go to what the compiler passes them
/// (outlined parallel regions, reduction and copy callbacks, the runtime's own Rust trait
/// objects), device addresses by construction. Marked by the runtime's build
/// ([`RUNTIME_MARK`]), else known by name: Rust's v0 symbols (`_R` and a capital) and the
/// runtime's C entry points.
fn is_runtime(function: Value<'_>) -> bool {
    function.has_string_attribute(RUNTIME_MARK) || is_runtime_function(&function.name())
}

fn is_runtime_function(name: &str) -> bool {
    let rust = name
        .strip_prefix("_R")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase());
    rust || ["__kmpc_", "__llvm_omp_", "__rustomp", "omp_", "ompx_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Globals of the device runtime's own state (`__rustomp_team_shared`, ...).
fn is_runtime_global(name: &str) -> bool {
    name.starts_with("__rustomp") || name.starts_with("__omp_rtl")
}

/// A callee the runtime loaded from its own state: the parallel-region wrapper of the generic
/// state machine, once `__kmpc_target_init` is inlined into a kernel. Device addresses only.
/// On amdgcn the LTO link lowers team-shared memory before this pass runs, so the runtime's
/// state is a field of an `llvm.amdgcn.*.lds` block there; the wrapper is recognized by how the
/// runtime keeps it, an atomic integer (a program's own function pointers in team-shared
/// memory, such as locals shared with a parallel region, are loaded as pointers).
fn from_runtime_state(callee: Value<'_>) -> bool {
    let mut v = callee;
    let mut from_integer = false;
    while v.is_cast() {
        from_integer |= v.is_int_to_ptr();
        match v.operand(0) {
            Some(inner) => v = inner,
            None => return false,
        }
    }
    if !v.is_load() {
        return false;
    }
    let mut address = v.operand(0).expect("a load has an address");
    while address.is_gep() || address.is_cast() || address.is_constant_address_expr() {
        match address.operand(0) {
            Some(base) => address = base,
            None => return false,
        }
    }
    if !address.is_global_variable() {
        return false;
    }
    let name = address.name();
    let lds_block = name.starts_with("llvm.amdgcn.") && name.ends_with(".lds");
    is_runtime_global(&name) || (lds_block && from_integer && v.is_atomic_load())
}

fn strip_pointer_casts(mut v: Value<'_>) -> Value<'_> {
    while v.is_pointer_cast() || v.is_constant_pointer_cast() {
        match v.operand(0) {
            Some(inner) => v = inner,
            None => break,
        }
    }
    v
}

/// A call of one of the translation functions (ours, LLVM's, the host-offload helper).
fn is_translation(v: Value<'_>) -> bool {
    let v = strip_pointer_casts(v);
    if !v.is_call() {
        return false;
    }
    let callee = strip_pointer_casts(v.callee());
    if !callee.is_function() {
        return false;
    }
    let name = callee.name();
    name == TRANSLATE || name == LLVM_LOOKUP || name.starts_with(HOST_HELPER)
}

/// The pointer a value was loaded through, seen past casts and constant-index GEPs: for a
/// virtual call's callee (`load (gep vptr, slot)`), the vtable pointer.
fn loaded_from_base(load: Value<'_>) -> Value<'_> {
    let mut address = load.operand(0).expect("a load has an address");
    loop {
        let constant_gep = address.is_gep()
            && (1..address.operand_count())
                .all(|i| address.operand(i).is_some_and(|o| o.is_constant()));
        if !(constant_gep || address.is_pointer_cast()) {
            return address;
        }
        match address.operand(0) {
            Some(base) => address = base,
            None => return address,
        }
    }
}

/// What a vtable-pointer candidate load is.
#[derive(PartialEq, Eq)]
enum Vptr {
    /// TBAA says `vtable pointer` (C++, optimized): the slots it points to hold device
    /// addresses once the pointer is translated, so the call needs nothing more.
    Certain,
    /// No TBAA (-O0): the pointer may be a vtable's or a struct's; translate it (a pointer the
    /// table does not hold comes back unchanged) and the callee too.
    Possible,
    /// TBAA of another type: a data pointer.
    No,
}

/// The call sites and vtable-pointer loads of a module that need the translation.
struct Sites<'m> {
    calls: Vec<Value<'m>>,
    vtable_pointers: Vec<Value<'m>>,
    /// Virtual calls whose vtable pointer is translated: marked too, so that a later run (the
    /// LTO link, after the optimizer inlined the translation) recognizes them.
    through_vtables: Vec<Value<'m>>,
}

impl<'m> Sites<'m> {
    fn find(module: &Module<'m>) -> Self {
        let tbaa = module.metadata_kind("tbaa");
        let mark = module.metadata_kind(MARK);
        let vptr_kind = |load: Value<'m>| -> Vptr {
            let Some(tag) = load.metadata(tbaa) else {
                return Vptr::Possible;
            };
            // An access tag `!{base type, access type, offset}`; a type node starts with its name.
            let named_vptr = tag.node_operands().iter().take(2).any(|ty| {
                ty.node_operands()
                    .first()
                    .and_then(|n| n.node_string())
                    .is_some_and(|n| n == "vtable pointer")
            });
            if named_vptr {
                Vptr::Certain
            } else {
                Vptr::No
            }
        };
        let mut sites = Sites {
            calls: Vec::new(),
            vtable_pointers: Vec::new(),
            through_vtables: Vec::new(),
        };
        let mut seen_vptrs = std::collections::HashSet::new();
        for function in module.functions() {
            if function.is_declaration() || is_runtime(function) {
                continue;
            }
            for inst in function.instructions() {
                if !inst.is_call_or_invoke() {
                    continue;
                }
                let callee = inst.callee();
                // Direct calls (intrinsics and the translation itself included), constant
                // function pointers through casts, inline assembly: nothing to translate. Nor
                // what an earlier run translated, nor the runtime's own state machine.
                if callee.is_constant() || callee.is_inline_asm() || is_translation(callee) {
                    continue;
                }
                if inst.metadata(mark).is_some() || from_runtime_state(callee) {
                    continue;
                }
                let loaded = strip_pointer_casts(callee);
                if loaded.is_load() {
                    let base = loaded_from_base(loaded);
                    // A slot of a vtable this pass (or an earlier run) already translated.
                    if is_translation(base) {
                        continue;
                    }
                    if base.is_load() {
                        let kind = vptr_kind(base);
                        let translated = base.metadata(mark).is_some();
                        if kind != Vptr::No && !translated && seen_vptrs.insert(base) {
                            sites.vtable_pointers.push(base);
                        }
                        if kind == Vptr::Certain {
                            if !translated {
                                sites.through_vtables.push(inst);
                            }
                            continue;
                        }
                    }
                }
                sites.calls.push(inst);
            }
        }
        sites
    }
}

/// Inserts translations into one module.
struct Translator<'a, 'm> {
    module: &'a Module<'m>,
    /// What the rewritten code calls: `TRANSLATE` on GPUs, `HOST_HELPER` on the host.
    function: Value<'m>,
    ty: Type<'m>,
    ptr: Type<'m>,
}

impl<'a, 'm> Translator<'a, 'm> {
    fn new(module: &'a Module<'m>) -> Self {
        let ptr = module.pointer_type(0);
        let ty = module.function_type(ptr, &[ptr]);
        let declared = module.function(TRANSLATE);
        let translate = declared.unwrap_or_else(|| {
            let f = module.add_function(TRANSLATE, ty);
            module.add_function_attribute(f, "nounwind");
            f
        });
        let function = if is_gpu(module) {
            translate
        } else {
            // A host-offload image is loaded by whichever libomptarget the program uses: ours
            // binds TRANSLATE for each loaded copy of the image; another leaves it unbound
            // (weak), and calls then go where the pointer points, as without this pass.
            if declared.is_none() {
                translate.set_linkage_extern_weak();
            }
            module
                .function(HOST_HELPER)
                .unwrap_or_else(|| host_helper(module, translate, ty))
        };
        Self {
            module,
            function,
            ty,
            ptr,
        }
    }

    /// Inserts the translation of `value` before `at`, with the source location of `location`;
    /// returns the translated value (of `value`'s type).
    fn translate(&self, value: Value<'m>, at: Value<'m>, location: Value<'m>) -> Value<'m> {
        let builder = self.module.builder();
        builder.position_before(at);
        builder.set_location_of(Some(location));
        let original = value.type_of();
        let argument = if original == self.ptr {
            value
        } else {
            builder.pointer_cast(value, self.ptr)
        };
        let translated = builder.call(self.ty, self.function, &[argument]);
        if original == self.ptr {
            translated
        } else {
            builder.pointer_cast(translated, original)
        }
    }

    /// Translates the pointer `load` loads, for every use of it.
    fn translate_loaded_pointer(&self, load: Value<'m>) {
        let users = load.users();
        let next = load
            .next_instruction()
            .expect("a load is not the last instruction of its block");
        let translated = self.translate(load, next, load);
        for user in users {
            for i in 0..user.operand_count() {
                if user.operand(i) == Some(load) {
                    user.set_operand(i, translated);
                }
            }
        }
    }
}

/// `define internal ptr @__rustomp_translate_fptr(ptr %p)`: `TRANSLATE(%p)` when the loader bound
/// it, else `%p`.
fn host_helper<'m>(module: &Module<'m>, translate: Value<'m>, ty: Type<'m>) -> Value<'m> {
    let helper = module.add_function(HOST_HELPER, ty);
    helper.set_linkage_internal();
    module.add_function_attribute(helper, "nounwind");
    let builder = module.builder();
    builder.set_location_of(None);
    let pointer = helper.param(0);
    let entry = builder.append_block(helper, "entry");
    let bound = builder.is_not_null(translate);
    let call = builder.append_block(helper, "bound");
    let translated = builder.call(ty, translate, &[pointer]);
    builder.ret(translated);
    let unbound = builder.append_block(helper, "unbound");
    builder.ret(pointer);
    builder.position_at_end(entry);
    builder.cond_br(bound, call, unbound);
    helper
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_functions_by_name() {
        for runtime in [
            "_RNvNtCs1_9devicertl8parallel16invoke_microtask",
            "__kmpc_parallel_60",
            "omp_get_thread_num",
            "ompx_sync_block",
            "__llvm_omp_host_call",
        ] {
            assert!(is_runtime_function(runtime), "{runtime}");
        }
        for user in [
            "main",
            "_Z3fooi",
            "__omp_offloading_fe00_1_main_l3",
            "_Rx",
            "ops_apply",
        ] {
            assert!(!is_runtime_function(user), "{user}");
        }
    }

    #[test]
    fn modes() {
        assert_eq!(Mode::parse(None), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some("all")), Ok(Mode::All));
        assert_eq!(Mode::parse(Some("off")), Ok(Mode::Off));
        assert!(Mode::parse(Some("sometimes")).is_err());
    }
}
