//! No import cycle between the crate's top-level modules: each module's `crate::…` uses
//! (outside doc comments and test code) form a graph without cycles, so every module can be
//! read knowing only the ones it depends on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a source file belongs to (`request` for `src/request/policy.rs`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib").then(|| name.to_string())
}

/// The code of a file without comments and without the items marked `#[cfg(test)]`.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut test_item_next = false;
    let mut depth: Option<i64> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = depth.as_mut() {
            *open += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *open <= 0 {
                depth = None;
            }
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            test_item_next = true;
            continue;
        }
        if test_item_next && !trimmed.starts_with("#[") {
            test_item_next = false;
            let open = line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if open > 0 {
                depth = Some(open);
            }
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The root's re-exports (`pub use client::{Client, ..}` in `lib.rs`): item → its module.
fn root_items(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let code = code_of(lib).replace('\n', " ");
    for statement in code.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = path
            .split("::")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let names = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => path[open + 1..close].to_string(),
            _ => path.rsplit("::").next().unwrap_or_default().to_string(),
        };
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            items.insert(name.to_string(), module.clone());
        }
    }
    items
}

/// The top-level modules `code` names as `crate::<module>`, or through a root re-export
/// (`crate::Client` is the `client` module's).
fn uses(code: &str, root: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            found.insert(name);
        } else if let Some(module) = root.get(&name) {
            found.insert(module.clone());
        }
    }
    // `use crate::{Client, error::Error}` names several at once.
    for group in code.split("crate::{").skip(1) {
        let inner = group.split('}').next().unwrap_or_default();
        for part in inner.split(',').map(str::trim) {
            let head: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(module) = root.get(&head) {
                found.insert(module.clone());
            } else if head.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                found.insert(head);
            }
        }
    }
    found
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let root = root_items(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in all {
        let Some(module) = module_of(&src, &file) else {
            continue;
        };
        // Unit-test files of a module are test code as a whole.
        if file.components().any(|c| c.as_os_str() == "tests")
            || file
                .file_name()
                .is_some_and(|n| n == "proptest_untrusted.rs")
        {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(uses(&code, &root).into_iter().filter(|m| *m != module));
    }
    graph
}

/// A cycle through `start`, if there is one.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    let node = path.last().cloned().unwrap_or_else(|| start.to_string());
    for next in graph.get(&node).into_iter().flatten() {
        if next == start {
            let mut cycle = path.clone();
            cycle.push(start.to_string());
            return Some(cycle);
        }
        if !path.contains(next) && graph.contains_key(next) {
            path.push(next.clone());
            if let Some(cycle) = cycle_from(graph, start, path) {
                return Some(cycle);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let graph = graph();
    assert!(
        graph.len() > 10,
        "the crate's modules were not found: {graph:?}"
    );
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|start| {
            let mut path = vec![start.clone()];
            cycle_from(&graph, start, &mut path).map(|c| c.join(" → "))
        })
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_sees_uses_not_comments() {
    let text = "//! see crate::audit\nuse crate::error::Error;\n#[cfg(test)]\nuse crate::client;\n\
                #[cfg(test)]\nmod tests {\n    use crate::fleet;\n}\nuse crate::path;\n";
    let root = root_items("pub use client::{BuildError, Client};\npub use error::Error;\n");
    assert_eq!(root["Client"], "client");
    assert_eq!(
        uses(&code_of(text), &root),
        BTreeSet::from(["error".to_string(), "path".to_string()])
    );
    let grouped = "use crate::{Client, events::EventQuery};\nlet e: crate::Error;";
    assert_eq!(
        uses(grouped, &root),
        BTreeSet::from(["client".into(), "error".into(), "events".into()])
    );
}
