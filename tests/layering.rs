//! The house's layering, checked from the source: the top-level modules of `src/` import each
//! other without a circle, and nothing below the front doors (`ffi`, the C ABI; `daemon`, the
//! gRPC service) imports them. Read from every `crate::…` path outside comments and test
//! modules (a root re-export such as `crate::Prover` counts as an import of the module it
//! comes from), so a change that breaks the layering fails here, not in the next review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The front doors: only they (and `lib.rs`, `bin/`) may import them, and not each other.
const FRONT_DOORS: [&str; 2] = ["ffi", "daemon"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file that ships: line comments dropped (doc links import nothing), and
/// everything from a `#[cfg(test)]` module on (tests may reach anywhere).
fn shipped_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") && lines.peek().is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first path segments after each `crate::` in `code`, groups (`crate::{a, b::c}`) opened.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| is_ident(c) || c == '$') {
            continue; // e.g. `$crate::` or `other_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let first: String = part.trim().chars().take_while(|&c| is_ident(c)).collect();
                if !first.is_empty() && first != "self" {
                    out.push(first);
                }
            }
        } else {
            let first: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if !first.is_empty() {
                out.push(first);
            }
        }
    }
    out
}

/// The top-level module a file of `src/` belongs to (`None`: `lib.rs`, `bin/`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "bin").then_some(name)
}

/// `lib.rs`'s re-exports: item name → the module it comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim();
            if !item.is_empty() {
                out.insert(item.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// Module → the modules its shipped code imports.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = shipped_code(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let reexports = root_reexports(&lib);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else { continue };
        let code = shipped_code(&std::fs::read_to_string(file).unwrap());
        let deps = graph.entry(module.clone()).or_default();
        for first in crate_paths(&code) {
            let target = if modules.contains(&first) {
                Some(first)
            } else {
                reexports.get(&first).cloned()
            };
            if let Some(target) = target.filter(|t| *t != module) {
                deps.insert(target);
            }
        }
    }
    graph
}

/// A circle through `start` in `graph`, as the path that closes it.
fn circle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn the_top_level_modules_import_each_other_without_a_circle() {
    let graph = import_graph();
    assert!(graph.len() >= 10, "too few modules found: {graph:?}");
    assert!(
        graph["engine"].contains("prover") && graph["prover"].contains("params"),
        "the reader finds no imports: {graph:?}"
    );
    let circles: Vec<String> = graph
        .keys()
        .filter_map(|m| circle_from(&graph, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between modules of src/: {circles:#?}"
    );
}

#[test]
fn nothing_below_the_front_doors_imports_them() {
    let graph = import_graph();
    let upward: Vec<String> = graph
        .iter()
        .flat_map(|(module, deps)| deps.iter().map(move |d| (module, d)))
        .filter(|(module, dep)| FRONT_DOORS.contains(&dep.as_str()) && !FRONT_DOORS.contains(&module.as_str()))
        .map(|(module, dep)| format!("{module} imports {dep}"))
        .collect();
    assert!(upward.is_empty(), "imports of a front door from below it: {upward:?}");
    for door in FRONT_DOORS {
        for other in FRONT_DOORS.iter().filter(|&&o| o != door) {
            assert!(
                !graph.get(door).is_some_and(|d| d.contains(*other)),
                "{door} imports {other}: the front doors stand side by side"
            );
        }
    }
}

#[test]
fn the_reader_sees_groups_reexports_and_skips_comments_and_tests() {
    let code = shipped_code(
        "use crate::{pool::PinnedPool, error::Error};\n// crate::ffi in a comment\nlet p = crate::Prover::new(); $crate::x; other_crate::y;\n#[cfg(test)]\nmod tests {\n use crate::daemon;\n}\n",
    );
    assert_eq!(crate_paths(&code), ["pool", "error", "Prover"]);
    let reexports = root_reexports("pub use prover::{prove, Prover};\npub use error::Error;");
    assert_eq!(reexports.get("Prover").map(String::as_str), Some("prover"));
    assert_eq!(reexports.get("Error").map(String::as_str), Some("error"));
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(circle_from(&graph, "a"), Some(vec!["a".into(), "b".into(), "a".into()]));
}
