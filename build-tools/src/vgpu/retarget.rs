//! nvptx64 or amdgcn LLVM IR (text) to x86_64 LLVM IR that calls the virtual GPU's hardware
//! (`librustomp_vgpu.so`) where the GPU's own instructions were:
//! - the module's triple and data layout become x86_64's (they lay out the ABI types the same
//!   way: 64-bit generic and global pointers, natural alignment);
//! - `ptx_kernel` and `amdgpu_kernel` functions become ordinary functions of the same name,
//!   exported as before;
//! - each NVVM intrinsic `llvm.nvvm.<a.b.c>` becomes a call of `__vgpu_nvvm_<a_b_c>`, each
//!   AMDGPU one `llvm.amdgcn.<a.b>` a call of `__vgpu_amdgcn_<a_b>`, and `llvm.trap`
//!   `__vgpu_trap` (which names the kernel, team and thread);
//! - each inline PTX block it knows (by a fingerprint of its instructions) becomes a call of
//!   `__vgpu_ptx_<what it computes>`; any other one is an error naming it;
//! - the nvptx target attributes (`target-cpu`, `target-features`) go.
//!
//! Address spaces stay: x86_64 treats 1, 3, 4 and 5 as the default one (with 64-bit pointers,
//! where amdgcn's LDS and private pointers have 32), so the team-shared globals
//! (`addrspace(3)`) are ordinary globals, one instance, which is right while one team runs at a
//! time (see `rustomp_vgpu`), and amdgcn's `addrspace(5)` allocas are the host stack's.

/// x86_64's data layout (clang-22's for `x86_64-pc-linux-gnu`).
const X86_64_LAYOUT: &str =
    "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128";

/// The inline PTX blocks the virtual GPU implements (libdevice's): the fingerprint of each
/// block's text (`fingerprint`), the function that replaces it, and that function's declaration.
/// A block returning two 32-bit values is not among them: LLVM returns `{ i32, i32 }` in two
/// registers where a C function's pair comes back in one.
const KNOWN_ASM: [(u64, &str, &str); 26] = [
    // The device runtime's marks for the virtual GPU (`devicertl/ir/nvptx.ll`: PTX comments;
    // `devicertl/ir/amdgcn.ll`: the same in amdgcn's comment syntax, after them).
    (
        0x37b3_b88f_f57a_c6c7,
        "__vgpu_ptx_note_lock_acquired",
        "declare void @__vgpu_ptx_note_lock_acquired(ptr)",
    ),
    (
        0x871c_44e8_6545_b790,
        "__vgpu_ptx_note_lock_released",
        "declare void @__vgpu_ptx_note_lock_released(ptr)",
    ),
    (
        0xa3e3_2290_0a8a_a065,
        "__vgpu_ptx_note_omp_barrier",
        "declare void @__vgpu_ptx_note_omp_barrier(i32)",
    ),
    (
        0xb51f_558b_8b9b_bec2,
        "__vgpu_ptx_note_lock_acquired",
        "declare void @__vgpu_ptx_note_lock_acquired(ptr)",
    ),
    (
        0x2792_b069_32f1_c885,
        "__vgpu_ptx_note_lock_released",
        "declare void @__vgpu_ptx_note_lock_released(ptr)",
    ),
    (
        0x15c6_4d19_e325_6a78,
        "__vgpu_ptx_note_omp_barrier",
        "declare void @__vgpu_ptx_note_omp_barrier(i32)",
    ),
    (
        0x3cf6_9846_719c_900a,
        "__vgpu_ptx_add_u128",
        "declare { i64, i64 } @__vgpu_ptx_add_u128(i64, i64, i64, i64)",
    ),
    (
        0x14bd_6d32_9a6b_e224,
        "__vgpu_ptx_sub_u128",
        "declare { i64, i64 } @__vgpu_ptx_sub_u128(i64, i64, i64, i64)",
    ),
    (
        0x2a8e_66d9_b4ea_2857,
        "__vgpu_ptx_mad_wide_u64",
        "declare { i64, i64 } @__vgpu_ptx_mad_wide_u64(i64, i64, i64)",
    ),
    (
        0x64d5_8511_181b_eb9e,
        "__vgpu_ptx_mul_wide_u64",
        "declare { i64, i64 } @__vgpu_ptx_mul_wide_u64(i64, i64)",
    ),
    (
        0xab51_2e73_0ca2_5eb6,
        "__vgpu_ptx_sub_rn_f32",
        "declare float @__vgpu_ptx_sub_rn_f32(float, float)",
    ),
    (
        0x33eb_249c_bc0d_8daa,
        "__vgpu_ptx_sub_rz_f32",
        "declare float @__vgpu_ptx_sub_rz_f32(float, float)",
    ),
    (
        0x1673_c399_0e2c_9201,
        "__vgpu_ptx_sub_rm_f32",
        "declare float @__vgpu_ptx_sub_rm_f32(float, float)",
    ),
    (
        0xe5b3_6099_d92b_5240,
        "__vgpu_ptx_sub_rp_f32",
        "declare float @__vgpu_ptx_sub_rp_f32(float, float)",
    ),
    (
        0x4331_940d_b314_eb90,
        "__vgpu_ptx_sub_rn_ftz_f32",
        "declare float @__vgpu_ptx_sub_rn_ftz_f32(float, float)",
    ),
    (
        0x0518_96b9_8393_d12c,
        "__vgpu_ptx_sub_rz_ftz_f32",
        "declare float @__vgpu_ptx_sub_rz_ftz_f32(float, float)",
    ),
    (
        0x74da_50f1_d837_8083,
        "__vgpu_ptx_sub_rm_ftz_f32",
        "declare float @__vgpu_ptx_sub_rm_ftz_f32(float, float)",
    ),
    (
        0xee41_6eae_3368_a126,
        "__vgpu_ptx_sub_rp_ftz_f32",
        "declare float @__vgpu_ptx_sub_rp_ftz_f32(float, float)",
    ),
    (
        0xfbae_324d_5b24_5c43,
        "__vgpu_ptx_sub_rn_f64",
        "declare double @__vgpu_ptx_sub_rn_f64(double, double)",
    ),
    (
        0x102c_0470_f894_0f57,
        "__vgpu_ptx_sub_rz_f64",
        "declare double @__vgpu_ptx_sub_rz_f64(double, double)",
    ),
    (
        0xbc40_2c08_f514_d784,
        "__vgpu_ptx_sub_rm_f64",
        "declare double @__vgpu_ptx_sub_rm_f64(double, double)",
    ),
    (
        0xc038_d7b7_7140_4ae9,
        "__vgpu_ptx_sub_rp_f64",
        "declare double @__vgpu_ptx_sub_rp_f64(double, double)",
    ),
    (
        0x6c8a_ab07_d56d_34db,
        "__vgpu_ptx_rcp_approx_ftz_f32",
        "declare float @__vgpu_ptx_rcp_approx_ftz_f32(float)",
    ),
    (
        0x1858_a47e_2ac2_ad05,
        "__vgpu_ptx_rsqrt_approx_ftz_f64",
        "declare double @__vgpu_ptx_rsqrt_approx_ftz_f64(double)",
    ),
    (
        0x8025_9534_c587_66aa,
        "__vgpu_ptx_bfind_shiftamt_u32",
        "declare i32 @__vgpu_ptx_bfind_shiftamt_u32(i32)",
    ),
    (
        0x928b_6d4b_0945_7bc5,
        "__vgpu_ptx_select_equal_or_unordered_f64",
        "declare double @__vgpu_ptx_select_equal_or_unordered_f64(double, double, double, double)",
    ),
];

/// The retargeted module, or why it cannot run on the virtual GPU.
pub fn retarget(ll: &str) -> Result<String, String> {
    let mut out = String::with_capacity(ll.len() + 1024);
    let mut declarations: Vec<&str> = Vec::new();
    for line in ll.lines() {
        let line = if line.starts_with("target datalayout = ") {
            format!("target datalayout = \"{X86_64_LAYOUT}\"")
        } else if line.starts_with("target triple = ") {
            "target triple = \"x86_64-pc-linux-gnu\"".to_string()
        } else if line.starts_with("attributes #") {
            remove_string_attribute(
                &remove_string_attribute(line, "target-cpu"),
                "target-features",
            )
        } else {
            let mut l = rename_intrinsics(line);
            if l.starts_with("define ") {
                l = l
                    .replacen(" ptx_kernel ", " ", 1)
                    .replacen(" amdgpu_kernel ", " ", 1);
            }
            if l.starts_with("declare ") && l.contains("@__vgpu_") {
                // `immarg` is for intrinsics only; the calls keep their constant arguments.
                l = l.replace(" immarg", "");
            }
            if let Some(why) = narrow_pointer_integer(&l) {
                return Err(why);
            }
            if l.contains(" asm ") {
                let (replaced, declaration) = replace_asm(&l)?;
                if let Some(d) = declaration {
                    if !declarations.contains(&d) {
                        declarations.push(d);
                    }
                }
                l = replaced;
            }
            l
        };
        out.push_str(&line);
        out.push('\n');
    }
    for d in declarations {
        out.push_str(d);
        out.push('\n');
    }
    Ok(out)
}

/// amdgcn's LDS and private pointers have 32 bits, the host's 64: IR that makes one from a
/// 32-bit integer would lose the host address, so such a module is refused by name. (One
/// turned into a 32-bit integer keeps its low bits, which is what an alignment test reads:
/// 65's printf does that.)
fn narrow_pointer_integer(line: &str) -> Option<String> {
    let narrows = ["addrspace(3)", "addrspace(5)"]
        .iter()
        .any(|space| line.contains("inttoptr i32 ") && line.contains(&format!("to ptr {space}")));
    narrows.then(|| {
        format!(
            "a 32-bit integer of an amdgcn LDS or private pointer, which the host's 64-bit addresses do not fit (`{}`)",
            line.trim()
        )
    })
}

/// `"key"="value"` removed from an attribute group line.
fn remove_string_attribute(line: &str, key: &str) -> String {
    let pattern = format!("\"{key}\"=\"");
    let Some(start) = line.find(&pattern) else {
        return line.to_string();
    };
    let value_start = start + pattern.len();
    let Some(value_len) = line[value_start..].find('"') else {
        return line.to_string();
    };
    let mut out = line[..start].trim_end().to_string();
    out.push_str(&line[value_start + value_len + 1..]);
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.' || c == '_'
}

/// `@llvm.nvvm.a.b` -> `@__vgpu_nvvm_a_b`; `@llvm.amdgcn.a.b` -> `@__vgpu_amdgcn_a_b`; `@llvm.trap` -> `@__vgpu_trap`; `@vprintf` (the
/// CUDA driver's, whose second argument is a packed buffer) -> `@__vgpu_vprintf`, never the C
/// library's `vprintf`, whose second argument is a `va_list`.
fn rename_intrinsics(line: &str) -> String {
    let renamed = line.replace("@vprintf(", "@__vgpu_vprintf(");
    let line = renamed.as_str();
    if !line.contains("@llvm.nvvm.")
        && !line.contains("@llvm.amdgcn.")
        && !line.contains("@llvm.trap")
    {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(at) = rest.find("@llvm.") {
        out.push_str(&rest[..at]);
        let name_len = rest[at + 1..]
            .find(|c: char| !is_name_char(c))
            .unwrap_or(rest.len() - at - 1);
        let name = &rest[at + 1..at + 1 + name_len];
        if let Some(nvvm) = name.strip_prefix("llvm.nvvm.") {
            out.push_str("@__vgpu_nvvm_");
            out.push_str(&nvvm.replace('.', "_"));
        } else if let Some(amdgcn) = name.strip_prefix("llvm.amdgcn.") {
            out.push_str("@__vgpu_amdgcn_");
            out.push_str(&amdgcn.replace('.', "_"));
        } else if name == "llvm.trap" {
            out.push_str("@__vgpu_trap");
        } else {
            out.push('@');
            out.push_str(name);
        }
        rest = &rest[at + 1 + name_len..];
    }
    out.push_str(rest);
    out
}

/// An LLVM string literal's bytes (`\0A` escapes decoded).
fn unescape(literal: &str) -> Vec<u8> {
    let bytes = literal.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if let Some(hex) = literal.get(i + 1..i + 3) {
                if let Ok(b) = u8::from_str_radix(hex, 16) {
                    out.push(b);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// FNV-1a over the block's words (whitespace runs count as one separator), so a block is known
/// by its instructions and operands, not by its layout.
pub fn fingerprint(ptx: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(ptx);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for word in text.split_whitespace() {
        for b in word.bytes().chain([b' ']) {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The first line of a PTX block, for messages.
fn first_instruction(ptx: &[u8]) -> String {
    String::from_utf8_lossy(ptx)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "{" && !l.starts_with(".reg"))
        .unwrap_or("")
        .to_string()
}

/// A call of inline asm replaced by a call of its `__vgpu_ptx_*` function (and that function's
/// declaration); an empty block (a compiler barrier) stays, an amdgcn register class in its
/// constraints (`v`: a VGPR, `s`: an SGPR) becomes x86_64's general one.
fn replace_asm(line: &str) -> Result<(String, Option<&'static str>), String> {
    let Some(at) = line.find(" asm ") else {
        return Ok((line.to_string(), None));
    };
    let after = &line[at + 5..];
    let Some(open) = after.find('"') else {
        return Ok((line.to_string(), None));
    };
    let text_start = open + 1;
    let text_len = after[text_start..]
        .find('"')
        .ok_or_else(|| format!("unterminated inline asm in `{line}`"))?;
    let text = unescape(&after[text_start..text_start + text_len]);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok((host_register_classes(line), None));
    }
    // `, "constraints"`
    let rest = &after[text_start + text_len + 1..];
    let constraints_open = rest
        .find('"')
        .ok_or_else(|| format!("inline asm without constraints in `{line}`"))?;
    let constraints_len = rest[constraints_open + 1..]
        .find('"')
        .ok_or_else(|| format!("unterminated asm constraints in `{line}`"))?;
    let tail = &rest[constraints_open + 1 + constraints_len + 1..];
    let print = fingerprint(&text);
    let Some((_, function, declaration)) = KNOWN_ASM.iter().find(|(f, _, _)| *f == print) else {
        return Err(format!(
            "inline PTX the virtual GPU does not emulate (`{}`, fingerprint {print:#018x})",
            first_instruction(&text)
        ));
    };
    Ok((
        format!("{} @{function}{tail}", &line[..at]),
        Some(declaration),
    ))
}

/// An empty asm block's amdgcn constraints (`"=v,0"`, the runtime's opaque code pointer) with
/// x86_64's general registers; other constraints as they are.
fn host_register_classes(line: &str) -> String {
    let mut out = line.to_string();
    for (gpu, host) in [
        ("\"=v,0\"", "\"=r,0\""),
        ("\"=s,0\"", "\"=r,0\""),
        ("\"v\"", "\"r\""),
        ("\"s\"", "\"r\""),
    ] {
        out = out.replace(gpu, host);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_intrinsics_and_target_become_the_hosts() {
        let ll = "target datalayout = \"e-p6:32:32-i64:64\"\n\
                  target triple = \"nvptx64-nvidia-cuda\"\n\
                  define weak_odr protected ptx_kernel void @k(ptr %0) #0 {\n\
                  \x20 %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n\
                  \x20 %s = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %t, i32 1, i32 31)\n\
                  \x20 call void @llvm.trap()\n\
                  \x20 %p = call i32 @vprintf(ptr %0, ptr null)\n\
                  \x20 call void @llvm.memset.p0.i64(ptr %0, i8 0, i64 4, i1 false)\n\
                  \x20 ret void\n}\n\
                  declare i64 @llvm.ctlz.i64(i64, i1 immarg)\n\
                  declare void @llvm.nvvm.barrier.cta.sync.count(i32 immarg, i32)\n\
                  attributes #0 = { convergent \"kernel\" \"target-cpu\"=\"sm_90\" \"target-features\"=\"+ptx88,+sm_90\" }\n";
        let out = retarget(ll).unwrap();
        assert!(out.contains("target triple = \"x86_64-pc-linux-gnu\""));
        assert!(out.contains(X86_64_LAYOUT));
        assert!(out.contains("define weak_odr protected void @k(ptr %0)"));
        assert!(out.contains("call i32 @__vgpu_nvvm_read_ptx_sreg_tid_x()"));
        assert!(out.contains("@__vgpu_nvvm_shfl_sync_down_i32(i32 -1"));
        assert!(out.contains("call void @__vgpu_trap()"));
        assert!(out.contains("call i32 @__vgpu_vprintf(ptr %0, ptr null)"));
        assert!(out.contains("@llvm.memset.p0.i64"), "other intrinsics stay");
        assert!(out.contains("declare i64 @llvm.ctlz.i64(i64, i1 immarg)"));
        assert!(out.contains("declare void @__vgpu_nvvm_barrier_cta_sync_count(i32, i32)"));
        assert!(
            out.contains("attributes #0 = { convergent \"kernel\" }"),
            "{out}"
        );
        assert!(!out.contains("sm_90"));
    }

    #[test]
    fn amdgcn_kernels_intrinsics_and_register_classes_become_the_hosts() {
        let ll = "target triple = \"amdgcn-amd-amdhsa\"\n\
                  define weak_odr protected amdgpu_kernel void @k(ptr %0) #0 {\n\
                  \x20 %t = call i32 @llvm.amdgcn.workitem.id.x()\n\
                  \x20 %b = call i64 @llvm.amdgcn.ballot.i64(i1 true)\n\
                  \x20 %a = alloca i32, align 4, addrspace(5)\n\
                  \x20 %q = call ptr asm \"\", \"=v,0\"(ptr %0)\n\
                  \x20 ret void\n}\n\
                  declare void @llvm.amdgcn.s.sleep(i32 immarg)\n";
        let out = retarget(ll).unwrap();
        assert!(
            out.contains("define weak_odr protected void @k(ptr %0)"),
            "{out}"
        );
        assert!(out.contains("call i32 @__vgpu_amdgcn_workitem_id_x()"));
        assert!(out.contains("call i64 @__vgpu_amdgcn_ballot_i64(i1 true)"));
        assert!(out.contains("alloca i32, align 4, addrspace(5)"));
        assert!(out.contains("call ptr asm \"\", \"=r,0\"(ptr %0)"), "{out}");
        assert!(out.contains("declare void @__vgpu_amdgcn_s_sleep(i32)"));
    }

    #[test]
    fn a_32_bit_lds_pointer_integer_is_refused() {
        let ll = "  %p = inttoptr i32 %i to ptr addrspace(5)\n";
        assert!(retarget(ll).unwrap_err().contains("32-bit integer"));
        assert!(retarget("  %i = ptrtoint ptr addrspace(5) %p to i32\n").is_ok());
    }

    #[test]
    fn unknown_inline_ptx_is_named_and_compiler_barriers_stay() {
        let unknown = "  %r = tail call i32 asm \"{\\0A\\09.reg .u32 t;\\0A\\09brev.b32 $0, $1;\\0A\\09}\", \"=r,r\"(i32 %x)";
        let err = retarget(unknown).unwrap_err();
        assert!(err.contains("brev.b32 $0, $1;"), "{err}");
        let barrier = "  call void asm sideeffect \"\", \"~{memory}\"()";
        assert_eq!(retarget(barrier).unwrap().trim_end(), barrier);
    }

    #[test]
    fn a_known_block_becomes_its_function_whatever_its_layout() {
        // A 128-bit add written the way libdevice lays it out, and again with other spacing.
        let words = [
            "{", ".reg", ".u32", "r0,", "r1,", "r2,", "r3,", "a0,", "a1,", "a2,", "a3,", "b0,",
            "b1,", "b2,", "b3;",
        ];
        let spaced = words.join(" ");
        let tight = words.join("\\0A\\09");
        assert_eq!(
            fingerprint(&unescape(&spaced)),
            fingerprint(&unescape(&tight))
        );
        let print = fingerprint(&unescape(&spaced));
        assert!(KNOWN_ASM.iter().all(|(f, _, _)| *f != print));
    }

    #[test]
    fn the_device_runtimes_marks_become_the_hardwares_calls_on_both_families() {
        for (family, ir) in [
            ("nvptx", include_str!("../../../devicertl/ir/nvptx.ll")),
            ("amdgcn", include_str!("../../../devicertl/ir/amdgcn.ll")),
        ] {
            let marks: Vec<&str> = ir
                .lines()
                .filter(|l| l.contains(" asm ") && l.contains("rustomp-vgpu:"))
                .collect();
            assert_eq!(marks.len(), 3, "{family}: {marks:?}");
            let mut called = Vec::new();
            for mark in marks {
                let (line, declaration) = replace_asm(mark)
                    .unwrap_or_else(|e| panic!("{family}: `{mark}` is not known: {e}"));
                assert!(!line.contains(" asm "), "{family}: {line}");
                called.push(declaration.expect("a call").to_string());
            }
            called.sort();
            assert_eq!(
                called,
                [
                    "declare void @__vgpu_ptx_note_lock_acquired(ptr)",
                    "declare void @__vgpu_ptx_note_lock_released(ptr)",
                    "declare void @__vgpu_ptx_note_omp_barrier(i32)",
                ],
                "{family}"
            );
        }
    }

    #[test]
    fn string_attributes_are_removed_whole() {
        assert_eq!(
            remove_string_attribute(
                "attributes #1 = { a \"target-cpu\"=\"sm_90\" b }",
                "target-cpu"
            ),
            "attributes #1 = { a b }"
        );
    }
}
