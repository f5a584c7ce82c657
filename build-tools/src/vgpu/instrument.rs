//! The virtual GPU's checks, in the retargeted IR: racecheck and the bounds of team memory,
//! and calls through pointers that are not device code.
//!
//! - Every plain load and store through a generic or `addrspace(3)` pointer, and each
//!   `llvm.memcpy`/`memmove`/`memset` through one, is preceded by a call of
//!   `__vgpu_shared_access(address, bytes, kind, site)` (`_as3` for an `addrspace(3)` pointer),
//!   which `librustomp_vgpu.so` answers: nothing for an address outside team memory, else the
//!   bounds and race checks. Volatile accesses are checked (clang's inter-warp reduction copy
//!   moves values through team memory with them); atomic ones are not: they are how threads
//!   wait for each other, and compute-sanitizer's racecheck does not report them either.
//! - Every atomic read-modify-write (`atomicrmw`, `cmpxchg`) through a generic or global
//!   pointer is preceded by `__vgpu_host_atomic(address, site)` (`_as1`): one that lands in host
//!   memory the device reaches over the bus stops the program, as PCIe has no host atomics.
//! - Every call through a pointer is preceded by `__vgpu_indirect_call(callee, site)`: on a
//!   GPU, a call to a host address (a host function pointer the program did not translate)
//!   faults; here the host code would run, silently, so the hardware stops it and names it.
//! - The device runtime marks where a thread enters and leaves an OpenMP barrier (a PTX comment
//!   `retarget` turns into `__vgpu_ptx_note_omp_barrier(entering)`); the mark gets the site of
//!   the barrier (`__vgpu_omp_barrier(entering, site)`), so synccheck can name a barrier some
//!   threads reach from an OpenMP barrier and others from elsewhere (a barrier in divergent
//!   code). Where the link left a call of `__kmpc_barrier` (amdgcn's does not inline it), the
//!   mark inside has no source line: the call gets `__vgpu_omp_barrier_call(site)` before it,
//!   whose site the mark takes. Its lock marks (`__vgpu_ptx_note_lock_*`) go to the hardware
//!   as they are.
//! - `site` is a constant naming the place: its function, and its file, line and column when
//!   the image has debug lines (`!dbg`).
//! - Every `addrspace(3)` global the module defines goes into the section `vgpu_shared`,
//!   followed there by a 32-byte redzone, and gets an entry in the section
//!   `vgpu_shared_objects` (its address, size and name), so the hardware knows where each
//!   team-memory object ends. [`LAYOUT`] (linked once per image, with the device runtime)
//!   exports both sections' bounds.

use std::collections::HashMap;
use std::fmt::Write as _;

/// The access kinds, as `librustomp_vgpu.so` reads them.
const READ: u32 = 0;
const WRITE: u32 = 1;

/// Bytes of redzone after each team-memory object.
const REDZONE_BYTES: u32 = 32;

/// Exported by the image (from the device runtime's object): where team memory and its object
/// table lie, read by the virtual-GPU plugin (`rustomp_abi::VgpuSharedLayout`); all null when
/// the image has no team memory (an amdgcn module whose kernels use none: the optimizer dropped
/// the runtime's team state with the runtime calls).
pub const LAYOUT: &str = "\
@__start_vgpu_shared = extern_weak hidden addrspace(3) global i8
@__stop_vgpu_shared = extern_weak hidden addrspace(3) global i8
@__start_vgpu_shared_objects = extern_weak hidden global i8
@__stop_vgpu_shared_objects = extern_weak hidden global i8
@__vgpu_shared_layout = constant { ptr, ptr, ptr, ptr } { ptr addrspacecast (ptr addrspace(3) @__start_vgpu_shared to ptr), ptr addrspacecast (ptr addrspace(3) @__stop_vgpu_shared to ptr), ptr @__start_vgpu_shared_objects, ptr @__stop_vgpu_shared_objects }, align 8
";

const DECLARATIONS: &str = "\
declare void @__vgpu_shared_access(ptr, i64, i32, ptr)
declare void @__vgpu_shared_access_as3(ptr addrspace(3), i64, i32, ptr)
declare void @__vgpu_indirect_call(ptr, ptr)
declare void @__vgpu_omp_barrier(i32, ptr)
declare void @__vgpu_omp_barrier_call(ptr)
declare void @__vgpu_host_atomic(ptr, ptr)
declare void @__vgpu_host_atomic_as1(ptr addrspace(1), ptr)
";

/// The module with its team-memory accesses and indirect calls checked (see the module's
/// documentation).
pub fn instrument(ll: &str) -> String {
    let metadata = Metadata::read(ll);
    let mut state = State::default();
    let mut out = String::with_capacity(ll.len() * 2);
    let mut function = String::new();
    // The function's values of a pointer type with an address space (amdgcn calls through
    // `ptr addrspace(1)` values): the check takes a generic pointer.
    let mut spaced_pointers: HashMap<String, String> = HashMap::new();
    let mut casts = 0usize;
    for line in ll.lines() {
        if line.starts_with("define ") {
            function = defined_name(line).unwrap_or_default().to_string();
            spaced_pointers.clear();
        }
        if line.starts_with("define ") {
            for (value, ty) in spaced_pointer_parameters(line) {
                spaced_pointers.insert(value.to_string(), ty.to_string());
            }
        } else if let Some((value, ty)) = spaced_pointer_value(line) {
            spaced_pointers.insert(value.to_string(), ty.to_string());
        }
        if line.starts_with('@') {
            if let Some(done) = state.shared_global(line) {
                out.push_str(&done);
                continue;
            }
        } else if line.starts_with("  ") {
            if let Some(callee) = indirect_callee(line) {
                let site = state.site(&function, dbg_of(line).and_then(|d| metadata.location(d)));
                let generic = match spaced_pointers.get(callee) {
                    Some(ty) => {
                        casts += 1;
                        let cast = format!("%__vgpu_callee.{casts}");
                        let _ = writeln!(out, "  {cast} = addrspacecast {ty} {callee} to ptr");
                        cast
                    }
                    None => callee.to_string(),
                };
                let _ = writeln!(
                    out,
                    "  call void @__vgpu_indirect_call(ptr {generic}, ptr @__vgpu_site.{site})"
                );
            }
            if let Some(at) = line.find("@__vgpu_ptx_note_omp_barrier(") {
                let site = state.site(&function, dbg_of(line).and_then(|d| metadata.location(d)));
                let args_at = at + "@__vgpu_ptx_note_omp_barrier(".len();
                let close = matching_close(&line[args_at..]).unwrap_or(0);
                let _ = writeln!(
                    out,
                    "{}@__vgpu_omp_barrier({}, ptr @__vgpu_site.{site}){}",
                    &line[..at],
                    &line[args_at..args_at + close],
                    &line[args_at + close + 1..]
                );
                continue;
            }
            if let Some(location) = barrier_call(line).and_then(|d| metadata.location(d)) {
                // A call the link left (amdgcn's does not inline `__kmpc_barrier`): its mark
                // inside the runtime has no source line, the call has.
                let site = state.site(&function, Some(location));
                let _ = writeln!(
                    out,
                    "  call void @__vgpu_omp_barrier_call(ptr @__vgpu_site.{site})"
                );
            }
            if let Some(pointer) = atomic_target(line) {
                let site = state.site(&function, dbg_of(line).and_then(|d| metadata.location(d)));
                let callee = if pointer.starts_with("ptr addrspace(1) ") {
                    "__vgpu_host_atomic_as1"
                } else {
                    "__vgpu_host_atomic"
                };
                let _ = writeln!(
                    out,
                    "  call void @{callee}({pointer}, ptr @__vgpu_site.{site})"
                );
            }
            if let Some(checks) = access_of(line) {
                for (pointer, bytes, kind) in checks {
                    let site =
                        state.site(&function, dbg_of(line).and_then(|d| metadata.location(d)));
                    let (callee, pointer) = match pointer.strip_prefix("ptr addrspace(3) ") {
                        Some(p) => ("__vgpu_shared_access_as3", format!("ptr addrspace(3) {p}")),
                        None => ("__vgpu_shared_access", pointer),
                    };
                    let _ = writeln!(
                        out,
                        "  call void @{callee}({pointer}, i64 {bytes}, i32 {kind}, ptr @__vgpu_site.{site})"
                    );
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(DECLARATIONS);
    out.push_str(&state.constants);
    out
}

/// The `!dbg` of a call of `__kmpc_barrier` (an OpenMP barrier the link did not inline).
/// (`call void @__kmpc_barrier(ptr @1, i32 %0)`; amdgcn's link makes it internal:
/// `tail call fastcc void @__kmpc_barrier()`.)
fn barrier_call(line: &str) -> Option<u32> {
    let before = &line[..line.find("@__kmpc_barrier(")?];
    let mut words = before.split_whitespace();
    let is_call = words.any(|w| w == "call") && before.trim_end().ends_with(" void");
    is_call.then(|| dbg_of(line)).flatten()
}

/// `@name` of a `define` line.
fn defined_name(line: &str) -> Option<&str> {
    let at = line.find(" @")? + 2;
    let rest = &line[at..];
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.find('"').map(|end| &quoted[..end]);
    }
    let end = rest.find('(')?;
    Some(&rest[..end])
}

#[derive(Default)]
struct State {
    /// Private constants: strings, sites, the object table's entries and redzones.
    constants: String,
    strings: HashMap<String, usize>,
    sites: HashMap<(String, Option<Location>), usize>,
    objects: usize,
}

impl State {
    fn string(&mut self, text: &str) -> usize {
        if let Some(&n) = self.strings.get(text) {
            return n;
        }
        let n = self.strings.len();
        let _ = writeln!(
            self.constants,
            "@__vgpu_str.{n} = private unnamed_addr constant [{} x i8] c\"{}\\00\", align 1",
            text.len() + 1,
            escape(text)
        );
        self.strings.insert(text.to_string(), n);
        n
    }

    /// The site constant for an access in `function` at `location`.
    fn site(&mut self, function: &str, location: Option<Location>) -> usize {
        let key = (function.to_string(), location.clone());
        if let Some(&n) = self.sites.get(&key) {
            return n;
        }
        let n = self.sites.len();
        let (name, file, line, column) = match &location {
            Some(l) => (l.function.as_str(), Some(l.file.as_str()), l.line, l.column),
            None => (function, None, 0, 0),
        };
        let name = self.string(name);
        let file = match file {
            Some(f) => format!("ptr @__vgpu_str.{}", self.string(f)),
            None => "ptr null".into(),
        };
        let _ = writeln!(
            self.constants,
            "@__vgpu_site.{n} = private unnamed_addr constant {{ ptr, ptr, i32, i32 }} {{ ptr @__vgpu_str.{name}, {file}, i32 {line}, i32 {column} }}, align 8"
        );
        self.sites.insert(key, n);
        n
    }

    /// A definition of an `addrspace(3)` global, put into `vgpu_shared` with its redzone and
    /// table entry; `None` for any other line.
    fn shared_global(&mut self, line: &str) -> Option<String> {
        let (name, rest) = line.split_once(" = ")?;
        if rest.contains(" external ")
            || rest.starts_with("external ")
            || rest.contains("section \"")
        {
            return None;
        }
        let global_at = rest.find("addrspace(3) global ")?;
        let after = &rest[global_at + "addrspace(3) global ".len()..];
        let ty_len = type_length(after)?;
        let ty = &after[..ty_len];
        let init_start = ty_len + 1;
        let init_len = operand_length(&after[init_start..]);
        let split = global_at + "addrspace(3) global ".len() + init_start + init_len;
        let head = format!("{name} = {}", &rest[..split]);
        let tail = &rest[split..];
        let n = self.objects;
        self.objects += 1;
        let label = self.string(name.trim_start_matches('@').trim_matches('"'));
        let mut out = format!("{head}, section \"vgpu_shared\"{tail}\n");
        let _ = writeln!(
            out,
            "@__vgpu_redzone.{n} = private addrspace(3) global [{REDZONE_BYTES} x i8] zeroinitializer, section \"vgpu_shared\", align 1"
        );
        let _ = writeln!(
            self.constants,
            "@__vgpu_shared_object.{n} = private constant {{ ptr, i64, ptr }} {{ ptr addrspacecast (ptr addrspace(3) {name} to ptr), i64 {}, ptr @__vgpu_str.{label} }}, section \"vgpu_shared_objects\", align 8",
            size_of_type(ty)
        );
        Some(out)
    }
}

/// `i64 ptrtoint (...)`: the allocation size of `ty`, as a constant expression.
fn size_of_type(ty: &str) -> String {
    format!("ptrtoint (ptr getelementptr ({ty}, ptr null, i32 1) to i64)")
}

/// Bytes of an LLVM string literal: printable ASCII other than `"` and `\` as is.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:02X}");
        }
    }
    out
}

/// The checks an instruction line needs: (pointer type and operand, size expression, kind).
fn access_of(line: &str) -> Option<Vec<(String, String, u32)>> {
    let body = line.trim_start();
    let body = match body.find(" = ") {
        Some(eq) if body.starts_with('%') => &body[eq + 3..],
        _ => body,
    };
    if let Some(rest) = body.strip_prefix("load ") {
        if rest.starts_with("atomic ") {
            return None;
        }
        let rest = rest.strip_prefix("volatile ").unwrap_or(rest);
        let fields = split_top_level(rest);
        let ty = fields.first()?.trim();
        let pointer = checked_pointer(fields.get(1)?)?;
        return Some(vec![(pointer, size_of_type(ty), READ)]);
    }
    if let Some(rest) = body.strip_prefix("store ") {
        if rest.starts_with("atomic ") {
            return None;
        }
        let rest = rest.strip_prefix("volatile ").unwrap_or(rest);
        let fields = split_top_level(rest);
        let value = fields.first()?.trim();
        let ty = &value[..type_length(value)?];
        let pointer = checked_pointer(fields.get(1)?)?;
        return Some(vec![(pointer, size_of_type(ty), WRITE)]);
    }
    let call = body
        .strip_prefix("tail call ")
        .or_else(|| body.strip_prefix("call "))
        .or_else(|| body.strip_prefix("notail call "))?;
    let call = call.strip_prefix("void @llvm.")?;
    let (which, args) = call.split_once('(')?;
    let kinds: &[u32] = if which.starts_with("memcpy.") || which.starts_with("memmove.") {
        if which.contains("inline") || which.contains("element") {
            return None;
        }
        &[WRITE, READ]
    } else if which.starts_with("memset.") {
        if which.contains("inline") || which.contains("element") {
            return None;
        }
        &[WRITE]
    } else {
        return None;
    };
    let close = matching_close(args)?;
    let fields = split_top_level(&args[..close]);
    // The `.i64` forms (nvptx64's); a 32-bit length would need an instruction to widen it.
    let length = fields.get(2)?.trim().strip_prefix("i64 ")?.to_string();
    let mut checks = Vec::new();
    for (field, &kind) in fields.iter().zip(kinds) {
        if let Some(pointer) = checked_pointer(&strip_attributes(field)) {
            checks.push((pointer, length.clone(), kind));
        }
    }
    (!checks.is_empty()).then_some(checks)
}

/// The pointer operand of an atomic read-modify-write (`atomicrmw`, `cmpxchg`) through a
/// generic or global pointer, as written (`ptr %p`, `ptr addrspace(1) %p`): the ones that may
/// reach host memory (team and local memory never are).
fn atomic_target(line: &str) -> Option<String> {
    let body = line.trim_start();
    let body = match body.find(" = ") {
        Some(eq) if body.starts_with('%') => &body[eq + 3..],
        _ => body,
    };
    let rest = if let Some(rest) = body.strip_prefix("atomicrmw ") {
        let rest = rest.strip_prefix("volatile ").unwrap_or(rest);
        // The operation (`add`, `xchg`, `fadd`, ...).
        rest.split_once(' ')?.1
    } else {
        let rest = body.strip_prefix("cmpxchg ")?;
        let rest = rest.strip_prefix("weak ").unwrap_or(rest);
        rest.strip_prefix("volatile ").unwrap_or(rest)
    };
    let pointer = split_top_level(rest).first()?.trim().to_string();
    let generic = pointer.starts_with("ptr ") && !pointer.starts_with("ptr addrspace(");
    (generic || pointer.starts_with("ptr addrspace(1) ")).then_some(pointer)
}

/// The called value of a call through a pointer (`%fp` of `call i32 %fp(i32 1)`).
fn indirect_callee(line: &str) -> Option<&str> {
    let body = line.trim_start();
    let body = match body.find(" = ") {
        Some(eq) if body.starts_with('%') => &body[eq + 3..],
        _ => body,
    };
    let call_at = ["call ", "tail call ", "musttail call ", "notail call "]
        .iter()
        .find_map(|p| body.starts_with(p).then_some(p.len()))?;
    let text = &body[call_at..];
    let mut from = 0;
    while let Some(found) = text[from..].find('%') {
        let at = from + found;
        let name_len = text[at + 1..]
            .find(|c: char| !is_value_name_char(c))
            .unwrap_or(text.len() - at - 1);
        let end = at + 1 + name_len;
        if name_len > 0 && text[end..].starts_with('(') {
            return Some(&text[at..end]);
        }
        from = end;
    }
    None
}

/// `%v = load ptr addrspace(1), ...` (or a `phi` or `select` whose result is such a pointer)
/// -> (`%v`, `ptr addrspace(1)`).
fn spaced_pointer_value(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start();
    let (value, rest) = body.split_once(" = ")?;
    if !value.starts_with('%') {
        return None;
    }
    let rest = rest.trim_start_matches("volatile ");
    let after_op = ["load atomic ", "load ", "phi "]
        .iter()
        .find_map(|op| rest.strip_prefix(op))
        .or_else(|| {
            // select i1 %c, <ty> %a, <ty> %b: the type after the condition.
            rest.strip_prefix("select ")
                .and_then(|r| r.split_once(", ").map(|(_, t)| t))
        })?;
    let after_op = after_op.trim_start_matches("volatile ");
    let ty_end = after_op.find(')')? + 1;
    let ty = &after_op[..ty_end];
    (ty.starts_with("ptr addrspace(") && !after_op[ty_end..].starts_with(" ("))
        .then_some((value, ty))
}

/// A definition's parameters of a pointer type with an address space: (`%p`, `ptr
/// addrspace(1)`) for `ptr addrspace(1) noundef %p`.
fn spaced_pointer_parameters(define: &str) -> Vec<(&str, &str)> {
    let Some(open) = define.find('(') else {
        return Vec::new();
    };
    define[open + 1..]
        .split(", ")
        .filter_map(|param| {
            let prefix = "ptr addrspace(";
            let ty_end = prefix.len() + param.strip_prefix(prefix)?.find(')')? + 1;
            let name = param[ty_end..]
                .split_whitespace()
                .find(|w| w.starts_with('%'))?
                .trim_end_matches(')');
            Some((name, &param[..ty_end]))
        })
        .collect()
}

fn is_value_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '$')
}

/// `ptr noundef align 4 %x` -> `ptr %x` (an argument's attributes dropped).
fn strip_attributes(field: &str) -> String {
    let field = field.trim();
    let (ty, rest) = if let Some(r) = field.strip_prefix("ptr addrspace(3) ") {
        ("ptr addrspace(3)", r)
    } else if field.starts_with("ptr addrspace(") {
        // Global, constant or local memory: never team memory, left as it is (unchecked).
        return field.to_string();
    } else if let Some(r) = field.strip_prefix("ptr ") {
        ("ptr", r)
    } else {
        return field.to_string();
    };
    let operand_at = operand_start(rest).unwrap_or(0);
    format!("{ty} {}", &rest[operand_at..])
}

/// Where the operand begins after an argument's attributes.
fn operand_start(text: &str) -> Option<usize> {
    const CONSTANTS: [&str; 8] = [
        "getelementptr",
        "addrspacecast",
        "inttoptr",
        "bitcast",
        "null",
        "poison",
        "undef",
        "ptrtoint",
    ];
    let mut at = 0;
    let bytes = text.as_bytes();
    while at < text.len() {
        let word = &text[at..];
        if word.starts_with('%')
            || word.starts_with('@')
            || CONSTANTS.iter().any(|c| word.starts_with(c))
        {
            return Some(at);
        }
        // Skip this attribute word (with its parenthesized argument) and the spaces after it.
        let mut depth = 0;
        while at < text.len() {
            match bytes[at] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b' ' if depth == 0 => break,
                _ => {}
            }
            at += 1;
        }
        while at < text.len() && bytes[at] == b' ' {
            at += 1;
        }
    }
    None
}

/// `ptr %p` or `ptr addrspace(3) %p` (generic or team memory) as written; `None` for the
/// other address spaces (global, constant, local), which are never team memory.
fn checked_pointer(field: &str) -> Option<String> {
    let field = field.trim();
    if field.starts_with("ptr addrspace(3) ") {
        return Some(field.to_string());
    }
    if field.starts_with("ptr ") && !field.starts_with("ptr addrspace(") {
        return Some(field.to_string());
    }
    None
}

/// The length of the type at the start of `text`.
fn type_length(text: &str) -> Option<usize> {
    let first = text.chars().next()?;
    if matches!(first, '{' | '<' | '[') {
        return Some(matching_close(&text[1..])? + 2);
    }
    let word = text.find(' ').unwrap_or(text.len());
    if text[..word] == *"ptr" && text[word..].starts_with(" addrspace(") {
        let close = text[word..].find(')')? + word;
        return Some(close + 1);
    }
    Some(word.min(text.find(',').unwrap_or(text.len())))
}

/// The length of an operand or initializer: up to the first top-level `,` (or the end).
fn operand_length(text: &str) -> usize {
    let mut depth = 0i32;
    let mut in_string = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => in_string = !in_string,
            _ if in_string => {}
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

/// The index of the bracket closing the one just before `text` began.
fn matching_close(text: &str) -> Option<usize> {
    let mut depth = 1i32;
    let mut in_string = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => in_string = !in_string,
            _ if in_string => {}
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits at top-level commas.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut fields = Vec::new();
    let mut rest = text;
    loop {
        let len = operand_length(rest);
        fields.push(&rest[..len]);
        if len >= rest.len() {
            return fields;
        }
        rest = &rest[len + 1..];
    }
}

/// The `!dbg !N` of an instruction line.
fn dbg_of(line: &str) -> Option<u32> {
    let at = line.rfind("!dbg !")? + 6;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Where an access is in the source.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Location {
    function: String,
    file: String,
    line: u32,
    column: u32,
}

/// The module's numbered metadata, for debug locations.
struct Metadata<'a> {
    nodes: HashMap<u32, &'a str>,
}

impl<'a> Metadata<'a> {
    fn read(ll: &'a str) -> Self {
        let nodes = ll
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix('!')?;
                let (id, node) = rest.split_once(" = ")?;
                Some((id.parse().ok()?, node))
            })
            .collect();
        Metadata { nodes }
    }

    fn location(&self, id: u32) -> Option<Location> {
        let node = *self.nodes.get(&id)?;
        if !node.contains("DILocation(") {
            return None;
        }
        let line = number_field(node, "line")?;
        let column = number_field(node, "column").unwrap_or(0);
        let mut scope = reference_field(node, "scope")?;
        let mut file = None;
        for _ in 0..64 {
            let n = *self.nodes.get(&scope)?;
            if file.is_none() {
                file = reference_field(n, "file").and_then(|f| self.file_name(f));
            }
            if n.contains("DISubprogram(") {
                let function = string_field(n, "name").unwrap_or("?").to_string();
                return Some(Location {
                    function,
                    file: file.unwrap_or_else(|| "?".into()),
                    line,
                    column,
                });
            }
            scope = reference_field(n, "scope")?;
        }
        None
    }

    fn file_name(&self, id: u32) -> Option<String> {
        let node = self.nodes.get(&id)?;
        string_field(node, "filename").map(str::to_string)
    }
}

/// `key: 12` in a metadata node.
fn number_field(node: &str, key: &str) -> Option<u32> {
    let at = field_start(node, key)?;
    let digits: String = node[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `key: !12` in a metadata node.
fn reference_field(node: &str, key: &str) -> Option<u32> {
    let at = field_start(node, key)?;
    let rest = node[at..].strip_prefix('!')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `key: "text"` in a metadata node.
fn string_field<'n>(node: &'n str, key: &str) -> Option<&'n str> {
    let at = field_start(node, key)?;
    let rest = node[at..].strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

/// Where the value of `key:` begins (the key at a word boundary: `line:` is not `baseline:`).
fn field_start(node: &str, key: &str) -> Option<usize> {
    let pattern = format!("{key}: ");
    let mut from = 0;
    while let Some(found) = node[from..].find(&pattern) {
        let at = from + found;
        let before = node[..at].chars().last();
        if matches!(before, Some('(') | Some(' ')) {
            return Some(at + pattern.len());
        }
        from = at + pattern.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "\
@_shared = internal addrspace(3) global [4 x i8] poison, align 16
@ext = external addrspace(3) global [0 x i8]
@g = global i32 0, align 4
define internal void @worker(ptr %p, ptr addrspace(3) %q, ptr addrspace(5) %l, ptr addrspace(1) %h) {
  %a = load i32, ptr %p, align 4, !dbg !10
  %b = load atomic i32, ptr %p monotonic, align 4
  store i32 42, ptr addrspace(3) @_shared, align 16
  store { i32, i64 } { i32 1, i64 2 }, ptr %p, align 8
  store volatile i32 1, ptr %p, align 4
  %c = load i64, ptr addrspace(5) %l, align 8
  %d = load float, ptr addrspace(1) %h, align 4
  call void @llvm.memcpy.p0.p3.i64(ptr noundef nonnull align 4 %p, ptr addrspace(3) align 4 %q, i64 16, i1 false)
  ret void
}
!3 = !DIFile(filename: \"race.c\", directory: \"/tmp\")
!5 = distinct !DISubprogram(name: \"kernel_body\", scope: !3, file: !3, line: 4, type: !6)
!7 = distinct !DILexicalBlock(scope: !5, file: !3, line: 9, column: 5)
!10 = !DILocation(line: 11, column: 31, scope: !7)
";

    #[test]
    fn plain_accesses_of_generic_and_team_memory_are_checked() {
        let out = instrument(MODULE);
        let calls: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("call void @__vgpu_shared_access"))
            .collect();
        assert_eq!(calls.len(), 6, "{out}");
        assert!(calls[0].starts_with("  call void @__vgpu_shared_access(ptr %p, i64 ptrtoint (ptr getelementptr (i32, ptr null, i32 1) to i64), i32 0"), "{}", calls[0]);
        assert!(
            calls[1].contains("@__vgpu_shared_access_as3(ptr addrspace(3) @_shared"),
            "{}",
            calls[1]
        );
        assert!(calls[1].contains("i32 1, ptr"), "{}", calls[1]);
        assert!(
            calls[2].contains("getelementptr ({ i32, i64 }, ptr null"),
            "{}",
            calls[2]
        );
        assert!(
            calls[3].contains(
                "(ptr %p, i64 ptrtoint (ptr getelementptr (i32, ptr null, i32 1) to i64), i32 1"
            ),
            "volatile: {}",
            calls[3]
        );
        assert!(calls[4].contains("(ptr %p, i64 16, i32 1"), "{}", calls[4]);
        assert!(
            calls[5].contains("_as3(ptr addrspace(3) %q, i64 16, i32 0"),
            "{}",
            calls[5]
        );
    }

    #[test]
    fn sites_name_the_source_line_when_there_is_one() {
        let out = instrument(MODULE);
        assert!(out.contains("c\"kernel_body\\00\""), "{out}");
        assert!(out.contains("c\"race.c\\00\""), "{out}");
        assert!(out.contains("i32 11, i32 31 }"), "{out}");
        assert!(
            out.contains("c\"worker\\00\""),
            "the function names sites without a line: {out}"
        );
    }

    #[test]
    fn team_memory_objects_get_a_section_a_redzone_and_a_table_entry() {
        let out = instrument(MODULE);
        assert!(
            out.contains("@_shared = internal addrspace(3) global [4 x i8] poison, section \"vgpu_shared\", align 16\n@__vgpu_redzone.0 = private addrspace(3) global [32 x i8] zeroinitializer, section \"vgpu_shared\", align 1"),
            "{out}"
        );
        assert!(
            out.contains("@ext = external addrspace(3) global [0 x i8]\n"),
            "{out}"
        );
        assert!(out.contains("@g = global i32 0, align 4\n"), "{out}");
        assert!(out.contains("{ ptr addrspacecast (ptr addrspace(3) @_shared to ptr), i64 ptrtoint (ptr getelementptr ([4 x i8], ptr null, i32 1) to i64), ptr @__vgpu_str."), "{out}");
    }

    #[test]
    fn atomic_read_modify_writes_that_may_reach_host_memory_are_found() {
        let cases = [
            ("  %a = atomicrmw add ptr %p, i32 1 seq_cst, align 4", Some("ptr %p")),
            ("  %b = atomicrmw volatile xchg ptr addrspace(1) %q, i64 0 monotonic, align 8", Some("ptr addrspace(1) %q")),
            ("  %c = cmpxchg weak volatile ptr %p, i32 0, i32 1 acquire monotonic, align 4", Some("ptr %p")),
            ("  %d = cmpxchg ptr getelementptr (i8, ptr @g, i64 8), i32 0, i32 1 seq_cst seq_cst, align 4", Some("ptr getelementptr (i8, ptr @g, i64 8)")),
            ("  %e = atomicrmw add ptr addrspace(3) @_shared, i32 1 seq_cst, align 4", None),
            ("  %f = load atomic i32, ptr %p monotonic, align 4", None),
        ];
        for (line, expected) in cases {
            assert_eq!(atomic_target(line).as_deref(), expected, "{line}");
        }
        let out = instrument(
            "define void @k(ptr %p) {\n  %a = atomicrmw add ptr %p, i32 1 seq_cst, align 4\n}\n",
        );
        assert!(
            out.contains(
                "  call void @__vgpu_host_atomic(ptr %p, ptr @__vgpu_site.0)\n  %a = atomicrmw"
            ),
            "{out}"
        );
    }

    #[test]
    fn calls_through_pointers_are_found() {
        assert_eq!(
            indirect_callee("  %r = tail call i32 %fp(i32 1)"),
            Some("%fp")
        );
        assert_eq!(
            indirect_callee("  call void %12(ptr %5, i32 %x)"),
            Some("%12")
        );
        assert_eq!(
            indirect_callee("  %s = call %struct.S %7(ptr %p)"),
            Some("%7")
        );
        assert_eq!(indirect_callee("  %r = call i32 @f(ptr %fp)"), None);
        assert_eq!(
            spaced_pointer_value("  %93 = load ptr addrspace(1), ptr addrspace(1) %92, align 8"),
            Some(("%93", "ptr addrspace(1)"))
        );
        assert_eq!(
            spaced_pointer_value("  %9 = select i1 %c, ptr addrspace(1) %a, ptr addrspace(1) %b"),
            Some(("%9", "ptr addrspace(1)"))
        );
        assert_eq!(
            spaced_pointer_value("  %3 = load ptr, ptr %2, align 8"),
            None
        );
        assert_eq!(
            spaced_pointer_value("  %4 = load atomic ptr addrspace(1), ptr %2 acquire, align 8"),
            Some(("%4", "ptr addrspace(1)"))
        );
        assert_eq!(
            spaced_pointer_parameters("define void @f(i32 %n, ptr addrspace(1) noundef %fp) #0 {"),
            vec![("%fp", "ptr addrspace(1)")]
        );
        let out = instrument(
            "define void @f(ptr addrspace(1) %p) {\n  %1 = load ptr addrspace(1), ptr addrspace(1) %p, align 8\n  call void %1()\n  ret void\n}\n",
        );
        assert!(
            out.contains("addrspacecast ptr addrspace(1) %1 to ptr")
                && out.contains("@__vgpu_indirect_call(ptr %__vgpu_callee."),
            "{out}"
        );
        assert_eq!(indirect_callee("  %r = call i32 asm \"x\", \"=r\"()"), None);
        let out = instrument("define void @k(ptr %fp) {\n  call void %fp()\n  ret void\n}\n");
        assert!(
            out.contains(
                "  call void @__vgpu_indirect_call(ptr %fp, ptr @__vgpu_site.0)\n  call void %fp()"
            ),
            "{out}"
        );
    }

    #[test]
    fn the_runtime_s_barrier_marks_get_their_site() {
        let out = instrument(
            "define void @k() {\n  call void @__vgpu_ptx_note_omp_barrier(i32 1), !dbg !10\n  ret void\n}\n\
             !3 = !DIFile(filename: \"b.c\", directory: \"/\")\n\
             !5 = distinct !DISubprogram(name: \"f\", scope: !3, file: !3)\n\
             !10 = !DILocation(line: 7, column: 1, scope: !5)\n",
        );
        assert!(
            out.contains("  call void @__vgpu_omp_barrier(i32 1, ptr @__vgpu_site.0), !dbg !10\n"),
            "{out}"
        );
        assert!(out.contains("i32 7, i32 1 }"), "{out}");
    }

    #[test]
    fn a_barrier_call_left_by_the_link_names_its_source_line() {
        let out = instrument(
            "define void @k() {\n  tail call void @__kmpc_barrier(ptr @1, i32 0), !dbg !10\n  call void @__kmpc_barrier(ptr @1, i32 0)\n  call fastcc void @__kmpc_barrier(), !dbg !10\n  ret void\n}\n\
             !3 = !DIFile(filename: \"b.c\", directory: \"/\")\n\
             !5 = distinct !DISubprogram(name: \"f\", scope: !3, file: !3)\n\
             !10 = !DILocation(line: 9, column: 3, scope: !5)\n",
        );
        assert!(
            out.contains("  call void @__vgpu_omp_barrier_call(ptr @__vgpu_site.0)\n  tail call void @__kmpc_barrier(ptr @1, i32 0), !dbg !10\n"),
            "{out}"
        );
        // Without a source line there is nothing to add to the mark's own site.
        assert_eq!(
            out.matches("@__vgpu_omp_barrier_call(ptr @").count(),
            2,
            "{out}"
        );
        assert!(
            out.contains("  call void @__vgpu_omp_barrier_call(ptr @__vgpu_site.0)\n  call fastcc void @__kmpc_barrier(), !dbg !10\n"),
            "{out}"
        );
        assert!(out.contains("i32 9, i32 3 }"), "{out}");
    }

    #[test]
    fn types_and_operands_are_read_whole() {
        assert_eq!(type_length("<{ i32, i8 }> zeroinitializer"), Some(13));
        assert_eq!(type_length("[4 x i8] poison, align 4"), Some(8));
        assert_eq!(type_length("ptr addrspace(3) %x"), Some(16));
        assert_eq!(type_length("i32 5"), Some(3));
        assert_eq!(
            split_top_level("i32 1, ptr getelementptr (i8, ptr @g, i64 4), align 4"),
            vec![
                "i32 1",
                " ptr getelementptr (i8, ptr @g, i64 4)",
                " align 4"
            ]
        );
        assert_eq!(
            strip_attributes(" ptr noundef nonnull align 4 dereferenceable(8) %x"),
            "ptr %x"
        );
        assert_eq!(
            checked_pointer(&strip_attributes("ptr addrspace(5) align 16 %21")),
            None
        );
        assert_eq!(
            strip_attributes("ptr addrspace(3) align 16 %21"),
            "ptr addrspace(3) %21"
        );
    }
}
