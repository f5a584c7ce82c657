//! `cargo xtask modules`: the module dependency graph of every crate of the project, and its
//! cycles. A cycle is two modules of one crate that each use the other (directly or through
//! others): the layering (arch -> heap -> state -> algorithms in the device runtime, leaf
//! helpers like `paths` in this tool) then holds only on paper.
//!
//! A module uses another when its code names a path into it: `crate::a::b`, `super::x`,
//! `self::c::d`, or (in a crate root or `mod.rs`) `child::item`. A name a module re-exports
//! (`pub use child::Item`) counts as the module that defines it, and `pub use` lines themselves
//! are the module's interface, not its dependencies. References inside `#[cfg(test)]` modules
//! count like any other: tests live in the module they test.

use crate::util::{at, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose graphs are checked: each one's `src` directory.
const CRATES: &[&str] = &[
    "devicertl/src",
    "host-plugins/abi/src",
    "host-plugins/plugin/src",
    "host-plugins/host/src",
    "host-plugins/cuda/src",
    "host-plugins/amdgpu/src",
    "host-plugins/front/src",
    "host-plugins/info/src",
    "host-plugins/remote/src",
    "host-plugins/proxy/src",
    "build-tools/src",
    "tests/fake-cuda/src",
    "host-devicertl/src",
    "compiler/src",
];

pub fn run(args: &[String]) -> Result<i32> {
    let verbose = args.iter().any(|a| a == "--graph");
    let mut cycles_found = 0;
    for dir in CRATES {
        let root = at(dir);
        if !root.is_dir() {
            continue;
        }
        let graph = Graph::of_crate(&root)?;
        let cycles = graph.cycles();
        if verbose {
            println!("{dir}:");
            for (module, uses) in &graph.edges {
                let uses: Vec<String> = uses
                    .iter()
                    .map(|u| {
                        format!(
                            "{u} ({})",
                            graph
                                .because
                                .get(&(module.clone(), u.clone()))
                                .map_or("", String::as_str)
                        )
                    })
                    .collect();
                println!("  {module} -> {}", uses.join(", "));
            }
        }
        if cycles.is_empty() {
            println!("modules: {dir}: {} modules, no cycle", graph.modules.len());
        } else {
            for cycle in &cycles {
                println!("modules: {dir}: cycle: {}", cycle.join(" <-> "));
            }
            cycles_found += cycles.len();
        }
    }
    if cycles_found > 0 {
        println!("modules: {cycles_found} cycle(s): a module uses one that uses it back");
        return Ok(1);
    }
    Ok(0)
}

/// The modules of one crate and which use which.
pub struct Graph {
    /// Module path (`a::b`, `crate` for the root) -> its source file.
    modules: BTreeMap<String, PathBuf>,
    /// Module -> the modules it uses.
    edges: BTreeMap<String, BTreeSet<String>>,
    /// (module, used module) -> the first path that makes the edge, for `--graph`.
    because: BTreeMap<(String, String), String>,
}

fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|p| p != "mod")
        .collect();
    match parts.as_slice() {
        [] => "crate".into(),
        [only] if only == "lib" || only == "main" => "crate".into(),
        _ => parts.join("::"),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The identifier-path tokens of `text` that start with one of `roots`: `crate::a::b::C`.
fn paths(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if is_ident(bytes[i]) && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            let mut segments = Vec::new();
            let mut grouped = false;
            let mut j = i;
            loop {
                let start = j;
                while j < bytes.len() && is_ident(bytes[j]) {
                    j += 1;
                }
                segments.push(text[start..j].to_string());
                if text[j..].starts_with("::")
                    && bytes.get(j + 2).is_some_and(|&b| is_ident(b) || b == b'{')
                {
                    j += 2;
                    if bytes[j] == b'{' {
                        // A group: each member continues the path.
                        let close = text[j..].find('}').map_or(text.len(), |c| j + c);
                        for member in text[j + 1..close].split(',') {
                            let member = member.trim().split([' ', ':']).next().unwrap_or("");
                            if !member.is_empty() {
                                let mut path = segments.clone();
                                path.push(member.to_string());
                                found.push(path);
                            }
                        }
                        j = close;
                        grouped = true;
                        break;
                    }
                    continue;
                }
                break;
            }
            if segments.len() > 1 && !grouped {
                found.push(segments);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    found
}

/// Code without comments and string literals (which name paths in prose, not in code). Inside
/// an inline module (`mod tests { ... }`), `super::` names the file's own module: it becomes
/// `self::` here, so that every path is relative to the file's module.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Brace depth of the file, and the depths at which inline modules opened.
    let (mut depth, mut inline_modules): (usize, Vec<usize>) = (0, Vec::new());
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut kept = String::with_capacity(code.len());
        let mut in_string = false;
        let mut previous = ' ';
        for c in code.chars() {
            if c == '"' && previous != '\\' {
                in_string = !in_string;
                kept.push(' ');
            } else if !in_string {
                kept.push(c);
            }
            previous = c;
        }
        let trimmed = kept.trim_start();
        let opens_module = (trimmed.starts_with("mod ") || trimmed.starts_with("pub mod "))
            && trimmed.trim_end().ends_with('{');
        let kept = if inline_modules.is_empty() {
            kept
        } else {
            kept.replace("super::", "self::")
        };
        for c in kept.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if inline_modules.last() == Some(&depth) {
                        inline_modules.pop();
                    }
                }
                _ => {}
            }
        }
        if opens_module {
            inline_modules.push(depth - 1);
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

impl Graph {
    pub fn of_crate(src: &Path) -> Result<Self> {
        let mut files = Vec::new();
        rust_files(src, &mut files)?;
        let modules: BTreeMap<String, PathBuf> = files
            .iter()
            .map(|f| (module_of(src, f), f.clone()))
            .collect();
        let texts: BTreeMap<&String, String> = modules
            .iter()
            .map(|(m, f)| Ok((m, code_only(&std::fs::read_to_string(f)?))))
            .collect::<Result<_>>()?;
        // Names each module re-exports, and from which module; `#[macro_export]` macros are
        // the crate root's names but the defining module's code.
        let mut reexports: BTreeMap<(String, String), String> = BTreeMap::new();
        for (module, text) in &texts {
            let mut exported = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with("#[macro_export]") {
                    exported = true;
                } else if let Some(name) = line.strip_prefix("macro_rules!").filter(|_| exported) {
                    let name = name.trim().trim_end_matches('{').trim().to_string();
                    reexports.insert(("crate".into(), name), (*module).clone());
                    exported = false;
                }
            }
            for line in text
                .lines()
                .filter(|l| l.trim_start().starts_with("pub use "))
            {
                for path in paths(line.trim_start().trim_start_matches("pub use ")) {
                    if let Some(target) = resolve(module, &path[..path.len() - 1], &modules) {
                        reexports.insert(((*module).clone(), path[path.len() - 1].clone()), target);
                    }
                }
            }
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut because = BTreeMap::new();
        for (module, text) in &texts {
            let mut used = BTreeSet::new();
            let lines = text.lines().filter(|l| {
                !l.trim_start().starts_with("pub use ")
                    && !l.trim_start().starts_with("pub(crate) use ")
            });
            for path in lines.flat_map(paths) {
                let Some(target) = resolve(module, &path, &modules) else {
                    continue;
                };
                // A name the target re-exports is the defining module's.
                let last = path.last().cloned().unwrap_or_default();
                let target = reexports
                    .get(&(target.clone(), last))
                    .cloned()
                    .unwrap_or(target);
                if target != **module {
                    because
                        .entry(((*module).clone(), target.clone()))
                        .or_insert_with(|| path.join("::"));
                    used.insert(target);
                }
            }
            edges.insert((*module).clone(), used);
        }
        Ok(Graph {
            modules,
            edges,
            because,
        })
    }

    /// The strongly connected components of more than one module, each sorted.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        // Tarjan's algorithm.
        struct State<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            on_stack: BTreeSet<&'g str>,
            next: usize,
            found: Vec<Vec<String>>,
        }
        fn visit<'g>(s: &mut State<'g>, v: &'g str) {
            s.index.insert(v, s.next);
            s.low.insert(v, s.next);
            s.next += 1;
            s.stack.push(v);
            s.on_stack.insert(v);
            let graph = s.graph;
            for w in graph.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.found.push(component);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            found: Vec::new(),
        };
        for module in self.modules.keys() {
            if !state.index.contains_key(module.as_str()) {
                visit(&mut state, module);
            }
        }
        state.found
    }
}

/// The module a path used in `from` names (its longest prefix that is a module), if any.
fn resolve(from: &str, path: &[String], modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let here: Vec<&str> = if from == "crate" {
        vec![]
    } else {
        from.split("::").collect()
    };
    let (mut base, rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
        "crate" => (vec![], &path[1..]),
        "self" => (here.iter().map(|s| s.to_string()).collect(), &path[1..]),
        "super" => {
            let mut base: Vec<String> = here.iter().map(|s| s.to_string()).collect();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            (base, rest)
        }
        // A child module named without a prefix (crate roots and `mod.rs` files).
        _ => (here.iter().map(|s| s.to_string()).collect(), path),
    };
    // The module the prefix names (the crate root for an empty one), then the longest run of
    // the path's segments that are modules inside it.
    let start = if base.is_empty() {
        "crate".to_string()
    } else {
        base.join("::")
    };
    let mut best = modules.contains_key(&start).then_some(start);
    for segment in rest {
        base.push(segment.clone());
        let name = base.join("::");
        if modules.contains_key(&name) {
            best = Some(name);
        } else {
            break;
        }
    }
    // A bare name (`child::item`) counts only when it starts with a module: other paths
    // (`std::...`, `core::...`, an enum's variants) are not this crate's modules.
    let prefixed = path
        .first()
        .is_some_and(|p| matches!(p.as_str(), "crate" | "super" | "self"));
    if prefixed {
        best
    } else {
        let first = if here.is_empty() {
            path[0].clone()
        } else {
            format!("{}::{}", here.join("::"), path[0])
        };
        modules.contains_key(&first).then_some(best).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_with(files: &[(&str, &str)]) -> Graph {
        // Tests run at once: each its own directory.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rustomp-modules-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let graph = Graph::of_crate(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        graph
    }

    #[test]
    fn super_inside_an_inline_module_is_the_files_own_module() {
        let text = code_only("use super::x;\nmod tests {\n    use super::y;\n}\nuse super::z;\n");
        assert_eq!(text.matches("self::y").count(), 1, "{text}");
        assert!(
            text.contains("super::x") && text.contains("super::z"),
            "{text}"
        );
    }

    #[test]
    fn paths_are_read_with_groups() {
        assert_eq!(
            paths("use crate::a::{b, c::D};"),
            vec![vec!["crate", "a", "b"], vec!["crate", "a", "c"]]
        );
        assert_eq!(paths("x = super::y::f(1);"), vec![vec!["super", "y", "f"]]);
    }

    #[test]
    fn a_cycle_between_siblings_is_found_and_a_layering_is_not() {
        let layered = crate_with(&[
            ("lib.rs", "mod arch; mod heap; mod state;\n"),
            ("arch.rs", "pub fn f() {}\n"),
            ("heap.rs", "use crate::arch;\npub fn g() { arch::f() }\n"),
            (
                "state.rs",
                "use crate::heap::g;\n// crate::state::nothing in a comment\n",
            ),
        ]);
        assert!(layered.cycles().is_empty(), "{:?}", layered.edges);
        let cyclic = crate_with(&[
            ("lib.rs", "mod a; mod b;\n"),
            ("a.rs", "use crate::b::g;\npub fn f() {}\n"),
            ("b.rs", "pub fn g() { crate::a::f() }\n"),
        ]);
        assert_eq!(
            cyclic.cycles(),
            vec![vec!["a".to_string(), "b".to_string()]]
        );
    }

    #[test]
    fn re_exports_count_as_their_defining_module() {
        // `generic` re-exports `backend::Backend`; `device` uses it through `super`: an edge to
        // `backend`, not to `generic`, and no cycle with the parent that declares it.
        let graph = crate_with(&[
            ("lib.rs", "pub mod generic;\n"),
            (
                "generic/mod.rs",
                "mod backend; mod device;\npub use backend::Backend;\npub use device::Device;\n",
            ),
            ("generic/backend.rs", "pub trait Backend {}\n"),
            (
                "generic/device.rs",
                "use super::Backend;\npub struct Device;\n",
            ),
        ]);
        assert!(
            graph.edges["generic::device"].contains("generic::backend"),
            "{:?}",
            graph.edges
        );
        assert!(graph.cycles().is_empty());
    }
}
