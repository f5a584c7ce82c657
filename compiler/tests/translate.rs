//! The rewrite on small modules written the way clang-22 emits device code: what is translated,
//! what is left alone, and that the result passes LLVM's verifier.

use rustomp_indirect_calls::ir::OwnedModule;
use rustomp_indirect_calls::translate::{self, Action, Mode, Outcome, Phase};

const NVPTX: &str = "target triple = \"nvptx64-nvidia-cuda\"\n";
const X86: &str = "target triple = \"x86_64-pc-linux-gnu\"\n";
/// What makes a module an OpenMP device module with one `declare target indirect` function.
const DEVICE_WITH_ENTRY: &str = r#"
@__omp_offloading_fe00_1_add3_l2 = protected constant ptr @add3
define internal i32 @add3(i32 %x) {
  %r = add i32 %x, 3
  ret i32 %r
}
!omp_offload.info = !{!0}
!llvm.module.flags = !{!1}
!0 = !{i32 1, !"__omp_offloading_fe00_1_add3_l2", i32 8, i32 0}
!1 = !{i32 7, !"openmp-device", i32 51}
"#;
const DEVICE_WITHOUT_ENTRY: &str = r#"
!llvm.module.flags = !{!1}
!1 = !{i32 7, !"openmp-device", i32 51}
"#;

fn run(text: &str, phase: Phase, mode: Mode) -> (Outcome, String) {
    let mut m = OwnedModule::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let before = m.print();
    let outcome = translate::run(&m.module(), phase, mode);
    m.verify()
        .unwrap_or_else(|e| panic!("invalid after the pass: {e}\n{}", m.print()));
    let after = m.print();
    assert_eq!(outcome.changed(), before != after, "{outcome:?}\n{after}");
    (outcome, after)
}

fn compile(text: &str) -> (Outcome, String) {
    run(text, Phase::Compile, Mode::Auto)
}

/// The lines of `ir` that call through a value (`call ... %x(`), trimmed.
fn indirect_calls(ir: &str) -> Vec<String> {
    ir.lines()
        .map(str::trim)
        .filter(|l| {
            (l.contains("call ") || l.contains("invoke "))
                && l.split(" call ")
                    .chain(l.split("invoke "))
                    .any(|c| c.split('(').next().is_some_and(|h| h.contains(" %")))
        })
        .map(str::to_string)
        .collect()
}

const CALLS: &str = r#"
declare void @direct()
declare void @llvm.nvvm.barrier0()
define void @user(ptr %fp, i32 %x) {
  call void @direct()
  call void @llvm.nvvm.barrier0()
  call void asm sideeffect "exit;", ""()
  %r = call i32 %fp(i32 %x)
  ret void
}
"#;

#[test]
fn indirect_calls_are_translated_and_nothing_else() {
    let (o, ir) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{CALLS}"));
    assert_eq!(
        (o.action, o.entries, o.calls, o.vtable_pointers),
        (Action::Translated, 1, 1, 0)
    );
    assert!(
        ir.contains("%1 = call ptr @__kmpc_target_translate_fptr(ptr %fp)"),
        "{ir}"
    );
    assert!(
        ir.contains("%r = call i32 %1(i32 %x), !rustomp.fptr.translated"),
        "{ir}"
    );
    assert!(
        ir.contains("declare ptr @__kmpc_target_translate_fptr(ptr) #"),
        "{ir}"
    );
    assert_eq!(
        ir.matches("@__kmpc_target_translate_fptr(ptr %").count(),
        1,
        "direct calls, intrinsics and asm stay: {ir}"
    );
}

#[test]
fn a_module_without_indirect_entries_is_left_as_it_is() {
    let text = format!("{NVPTX}{DEVICE_WITHOUT_ENTRY}{CALLS}");
    let (o, ir) = compile(&text);
    assert_eq!((o.action, o.calls), (Action::NoEntries, 0));
    assert!(!ir.contains("translate"));
    // Unless asked to translate everywhere; `off` never translates.
    assert_eq!(run(&text, Phase::Compile, Mode::All).0.calls, 1);
    assert_eq!(
        run(
            &format!("{NVPTX}{DEVICE_WITH_ENTRY}{CALLS}"),
            Phase::Compile,
            Mode::Off
        )
        .0
        .action,
        Action::Disabled
    );
}

#[test]
fn host_modules_are_not_touched() {
    let host = format!("{X86}{CALLS}\n@g = constant ptr @direct\n");
    let (o, _) = compile(&host);
    assert_eq!(o.action, Action::NotDevice);
}

#[test]
fn entries_are_found_by_metadata_or_by_global() {
    // Only the global (the metadata of another unit, lost in a link), and only the metadata.
    let global_only = DEVICE_WITH_ENTRY
        .replace("!omp_offload.info = !{!0}\n", "")
        .replace(
            "!0 = !{i32 1, !\"__omp_offloading_fe00_1_add3_l2\", i32 8, i32 0}\n",
            "",
        );
    assert_eq!(
        compile(&format!("{NVPTX}{global_only}{CALLS}")).0.entries,
        1
    );
    let vtable = r#"
@vt = linkonce_odr constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr null, ptr @direct] }
@__omp_offloading_fe00_1__ZTV1S_l3addr = protected constant ptr @vt
"#;
    assert_eq!(
        compile(&format!("{NVPTX}{DEVICE_WITHOUT_ENTRY}{vtable}{CALLS}"))
            .0
            .entries,
        1
    );
    // Kernel environments and other offloading globals are not entries.
    let kernel =
        "@__omp_offloading_fe00_1_main_l9_dynamic_environment = weak_odr protected global i16 0\n";
    assert_eq!(
        compile(&format!("{NVPTX}{DEVICE_WITHOUT_ENTRY}{kernel}{CALLS}"))
            .0
            .action,
        Action::NoEntries
    );
}

#[test]
fn running_twice_changes_nothing_more() {
    let mut m = OwnedModule::parse(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{CALLS}")).unwrap();
    assert!(translate::run(&m.module(), Phase::Compile, Mode::Auto).changed());
    let once = m.print();
    let again = translate::run(&m.module(), Phase::Link, Mode::Auto);
    assert!(!again.changed(), "{again:?}");
    assert_eq!(m.print(), once);
}

#[test]
fn a_marked_call_stays_marked_after_the_translation_was_inlined() {
    // The LTO link after a unit's compile: the lookup's body replaced the call to it.
    let inlined = r#"
define void @user(ptr %fp, i32 %x) {
  %dev = select i1 true, ptr %fp, ptr null
  %r = call i32 %dev(i32 %x), !rustomp.fptr.translated !9
  ret void
}
!9 = !{}
"#;
    let (o, _) = run(
        &format!("{NVPTX}{DEVICE_WITH_ENTRY}{inlined}"),
        Phase::Link,
        Mode::Auto,
    );
    assert_eq!(o.calls, 0);
}

#[test]
fn invokes_are_translated() {
    let invoke = r#"
declare i32 @__gxx_personality_v0(...)
define void @user(ptr %fp) personality ptr @__gxx_personality_v0 {
  invoke void %fp() to label %ok unwind label %bad
ok:
  ret void
bad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}
"#;
    let (o, ir) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{invoke}"));
    assert_eq!(o.calls, 1);
    assert!(ir.contains("invoke void %1()"), "{ir}");
}

/// A virtual call as clang-22 emits it at -O2 (TBAA on the vtable-pointer load).
const VIRTUAL_O2: &str = r#"
define i32 @user(ptr %obj) {
  %vtable = load ptr, ptr %obj, align 8, !tbaa !10
  %slot = getelementptr inbounds ptr, ptr %vtable, i64 1
  %fn = load ptr, ptr %slot, align 8
  %r = call i32 %fn(ptr %obj, i32 20)
  ret i32 %r
}
!10 = !{!11, !11, i64 0}
!11 = !{!"vtable pointer", !12, i64 0}
!12 = !{!"Simple C++ TBAA"}
"#;

#[test]
fn a_virtual_call_translates_the_vtable_pointer_only() {
    let (o, ir) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{VIRTUAL_O2}"));
    assert_eq!((o.calls, o.vtable_pointers), (0, 1), "{ir}");
    assert!(
        ir.contains("%1 = call ptr @__kmpc_target_translate_fptr(ptr %vtable)"),
        "{ir}"
    );
    assert!(
        ir.contains("%slot = getelementptr inbounds ptr, ptr %1, i64 1"),
        "{ir}"
    );
    // Marked, the call and the load stay alone in a later run even with the lookup inlined.
    assert!(
        ir.contains("%r = call i32 %fn(ptr %obj, i32 20), !rustomp.fptr.translated"),
        "{ir}"
    );
    let inlined = ir.replace(
        "%1 = call ptr @__kmpc_target_translate_fptr(ptr %vtable)",
        "%1 = select i1 true, ptr %vtable, ptr null",
    );
    let (o, _) = run(&inlined, Phase::Link, Mode::Auto);
    assert!(!o.changed(), "{o:?}");
}

#[test]
fn at_o0_a_loaded_base_is_translated_and_the_callee_too() {
    // No TBAA: the base may be a vtable pointer or a struct pointer.
    let o0 = r#"
define i32 @user(ptr %obj.addr) {
  %obj = load ptr, ptr %obj.addr, align 8
  %vtable = load ptr, ptr %obj, align 8
  %fn = load ptr, ptr %vtable, align 8
  %r = call i32 %fn(ptr %obj, i32 20)
  ret i32 %r
}
"#;
    let (o, ir) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{o0}"));
    assert_eq!((o.calls, o.vtable_pointers), (1, 1), "{ir}");
    // A data pointer with TBAA of its own is no vtable pointer.
    let data = VIRTUAL_O2.replace("!\"vtable pointer\"", "!\"any pointer\"");
    let (o, _) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{data}"));
    assert_eq!((o.calls, o.vtable_pointers), (1, 0));
}

#[test]
fn the_runtime_is_left_alone() {
    let runtime = r#"
@__rustomp_team_shared = external addrspace(3) global [128 x i8]
define void @_RNvNtCs1_9devicertl8parallel16invoke_microtask(ptr %f) {
  call void %f()
  ret void
}
define void @__kmpc_parallel_60(ptr %f) {
  call void %f()
  ret void
}
define i32 @printf(ptr %vtable) "rustomp-runtime" {
  %write = load ptr, ptr %vtable, align 8
  %r = call i32 %write(ptr %vtable)
  ret i32 %r
}
define void @kernel() {
  %w = load atomic i64, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @__rustomp_team_shared, i64 8) acquire, align 8
  %wrapper = inttoptr i64 %w to ptr
  call void %wrapper(i16 0, i32 0)
  ret void
}
"#;
    let (o, ir) = compile(&format!("{NVPTX}{DEVICE_WITH_ENTRY}{runtime}"));
    assert_eq!((o.action, o.calls), (Action::Translated, 0), "{ir}");
    // amdgcn's LTO link lowers team-shared memory first: the runtime's state is a field of an
    // LDS block, its work function an atomic integer; a program's pointer in it is translated.
    let lds = r#"
@llvm.amdgcn.module.lds = internal addrspace(3) global { [16 x i8], ptr } poison
define void @kernel() {
  %w = load atomic i64, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @llvm.amdgcn.module.lds, i64 8) acquire, align 8
  %wrapper = inttoptr i64 %w to ptr
  call void %wrapper(i16 0, i32 0)
  %shared = load ptr, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @llvm.amdgcn.module.lds, i64 16), align 8
  call void %shared()
  ret void
}
"#;
    let amdgcn = "target triple = \"amdgcn-amd-amdhsa\"\n";
    let (o, ir) = compile(&format!("{amdgcn}{DEVICE_WITH_ENTRY}{lds}"));
    assert_eq!(o.calls, 1, "{ir}");
    assert!(
        ir.contains("call ptr @__kmpc_target_translate_fptr(ptr %shared)"),
        "{ir}"
    );
}

#[test]
fn lto_pre_link_is_left_to_the_link_on_gpus_only() {
    let gpu = format!("{NVPTX}{DEVICE_WITH_ENTRY}{CALLS}");
    assert_eq!(
        run(&gpu, Phase::PreLink, Mode::Auto).0.action,
        Action::LeftToLink
    );
    assert_eq!(run(&gpu, Phase::Link, Mode::Auto).0.calls, 1);
    // GNU ld's LTO plugin loads no pass plugins: host-offload units translate before it.
    let host = format!("{X86}{DEVICE_WITH_ENTRY}{CALLS}");
    assert_eq!(run(&host, Phase::PreLink, Mode::Auto).0.calls, 1);
}

#[test]
fn host_offload_modules_call_a_weak_translation_through_a_helper() {
    let (o, ir) = compile(&format!("{X86}{DEVICE_WITH_ENTRY}{CALLS}"));
    assert_eq!(o.calls, 1);
    assert!(
        ir.contains("declare extern_weak ptr @__kmpc_target_translate_fptr(ptr)"),
        "{ir}"
    );
    assert!(
        ir.contains("define internal ptr @__rustomp_translate_fptr(ptr %0)"),
        "{ir}"
    );
    assert!(
        ir.contains("icmp ne ptr @__kmpc_target_translate_fptr, null"),
        "{ir}"
    );
    assert!(
        ir.contains("call ptr @__rustomp_translate_fptr(ptr %fp)"),
        "{ir}"
    );
    assert_eq!(indirect_calls(&ir).len(), 1, "{ir}");
}

#[test]
fn calls_keep_their_source_location() {
    let debug = r#"
define void @user(ptr %fp) !dbg !20 {
  call void %fp(), !dbg !23
  ret void
}
declare ptr @__kmpc_target_translate_fptr(ptr)
!llvm.dbg.cu = !{!21}
!20 = distinct !DISubprogram(name: "user", scope: !22, file: !22, line: 1, unit: !21, spFlags: DISPFlagDefinition)
!21 = distinct !DICompileUnit(language: DW_LANG_C11, file: !22, emissionKind: FullDebug)
!22 = !DIFile(filename: "a.c", directory: "/")
!23 = !DILocation(line: 3, column: 5, scope: !20)
!24 = !{i32 2, !"Debug Info Version", i32 3}
"#;
    let text = format!("{NVPTX}{DEVICE_WITH_ENTRY}{debug}").replace(
        "!llvm.module.flags = !{!1}",
        "!llvm.module.flags = !{!1, !24}",
    );
    let (o, ir) = compile(&text);
    assert_eq!(o.calls, 1);
    assert!(
        ir.contains("call ptr @__kmpc_target_translate_fptr(ptr %fp), !dbg !"),
        "{ir}"
    );
}
