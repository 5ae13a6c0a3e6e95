//! The house rules, checked on the source as rust-analyzer's `tidy` checks its own: what a
//! reviewer would otherwise have to remember.
//!
//! - **No import circle at any level** of `pubapi-sdk-ext`, `pubapi-sandbox` and `pubapi-cli`:
//!   among the modules of every folder, the uses (outside comments and test code) form a graph
//!   without cycles, so each module can be read knowing only the ones it depends on. A use
//!   reaches the module that holds the item, through the re-exports of the modules on the
//!   way (`crate::audit::CsvReport` is `audit::report`'s when `audit` re-exports it).
//! - **No operationId written as a string** outside the codegen and tests: code that names an
//!   operation uses `pubapi_sdk::operations::id::…`, so a spec that renames one breaks the
//!   build instead of leaving a string that matches nothing.
//! - **One door per area** in `pubapi-sdk-ext`: `impl Client` of the async client is written in
//!   one file (`src/lib.rs`, beside the `Client`), and the blocking client's in one
//!   (`src/blocking/mod.rs`), so every area accessor is found in one block; a handle (a struct
//!   that borrows the client, `client: &'a Client`) lives in `src/api/` (the blocking ones in
//!   `src/blocking/`), one file per area.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`["audit", "report"]`); the root is empty.
type ModPath = Vec<String>;

/// One crate's modules: each one's code (comments and test items left out), and the items
/// each re-exports from a child (`pub use report::CsvReport` in `audit`).
struct Crate {
    name: &'static str,
    code: BTreeMap<ModPath, String>,
    reexports: BTreeMap<(ModPath, String), ModPath>,
}

/// The code of a file without comments and without the items marked `#[cfg(test)]`; the
/// names of the modules it declares under `#[cfg(test)]` go into `test_mods`.
fn code_of(text: &str, test_mods: &mut BTreeSet<String>) -> String {
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
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            test_item_next = true;
            continue;
        }
        if test_item_next && !trimmed.starts_with("#[") {
            test_item_next = false;
            if let Some(name) = declared_mod(trimmed) {
                test_mods.insert(name);
            }
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

/// `name` of a `mod name;` line (any visibility).
fn declared_mod(line: &str) -> Option<String> {
    let rest = line.split("mod ").nth(1)?;
    let name = rest.strip_suffix(';')?.trim();
    let before = line.split("mod ").next()?.trim();
    (before.is_empty() || before.starts_with("pub")).then(|| name.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file holds: `src/audit/mod.rs` and `src/audit.rs` are `audit`,
/// `src/lib.rs` and `src/main.rs` the root.
fn mod_path(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

fn load(name: &'static str, folder: &str) -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(folder)
        .join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut code = BTreeMap::new();
    let mut test_only: BTreeSet<ModPath> = BTreeSet::new();
    for file in &files {
        let module = mod_path(&src, file);
        let mut test_mods = BTreeSet::new();
        let text = code_of(&std::fs::read_to_string(file).unwrap(), &mut test_mods);
        for child in test_mods {
            let mut path = module.clone();
            path.push(child);
            test_only.insert(path);
        }
        code.insert(module, text);
    }
    // A module declared under `#[cfg(test)]` is test code, with everything inside it.
    code.retain(|module: &ModPath, _| !test_only.iter().any(|t| module.starts_with(t)));
    let mut reexports = BTreeMap::new();
    for (module, text) in &code {
        for (item, child) in reexports_of(text) {
            let mut target = module.clone();
            target.push(child);
            if code.contains_key(&target) {
                reexports.insert((module.clone(), item), target);
            }
        }
    }
    Crate {
        name,
        code,
        reexports,
    }
}

/// The items a module re-exports from a child: `pub use child::x::{A, B};` and
/// `pub(crate) use self::child::A;` give `(A, child)`, `(B, child)`.
fn reexports_of(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for statement in code.replace('\n', " ").split(';') {
        let statement = statement.trim();
        let Some(at) = statement.find("use ") else {
            continue;
        };
        if !statement[..at].trim_start().starts_with("pub") {
            continue;
        }
        let path = statement[at + 4..].trim();
        let path = path.strip_prefix("self::").unwrap_or(path);
        let child = ident(path);
        if child.is_empty() || matches!(child.as_str(), "crate" | "super") {
            continue;
        }
        let names = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => path[open + 1..close].to_string(),
            _ => path.rsplit("::").next().unwrap_or_default().to_string(),
        };
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or_default().trim();
            let name = name.rsplit("::").next().unwrap_or_default();
            if !name.is_empty() && name != "*" {
                found.push((name.to_string(), child.clone()));
            }
        }
    }
    found
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The `::`-separated names that follow `at` in `code`, each group `{a, b::c}` opened into
/// its members: `crate::{a, b::C}` gives `[a]` and `[b, C]`.
fn paths_after(code: &str, at: usize) -> Vec<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = &code[at..];
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let close = matching_brace(group);
            let mut out = Vec::new();
            for member in split_top(&group[..close]) {
                for mut tail in paths_after(member.trim(), 0) {
                    let mut path = names.clone();
                    path.append(&mut tail);
                    out.push(path);
                }
            }
            return out;
        }
        let name = ident(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        names.push(name);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![names]
}

fn matching_brace(text: &str) -> usize {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

impl Crate {
    /// The module that holds what `path` names, from the root: the deepest module on the
    /// path, or the child a module re-exports the next name from.
    fn resolve(&self, path: &[String]) -> ModPath {
        let mut module: ModPath = Vec::new();
        for name in path {
            let mut child = module.clone();
            child.push(name.clone());
            if self.code.contains_key(&child) {
                module = child;
            } else if let Some(target) = self.reexports.get(&(module.clone(), name.clone())) {
                module = target.clone();
            } else {
                break;
            }
        }
        module
    }

    /// Every module each module uses (`crate::…`, `super::…`, `self::…`).
    fn uses(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut uses: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (module, code) in &self.code {
            let entry = uses.entry(module.clone()).or_default();
            for (prefix, base) in [
                ("crate::", Vec::new()),
                ("super::", module[..module.len().saturating_sub(1)].to_vec()),
                ("self::", module.clone()),
            ] {
                for (at, _) in code.match_indices(prefix) {
                    let boundary = code[..at]
                        .chars()
                        .next_back()
                        .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
                    if !boundary {
                        continue;
                    }
                    for tail in paths_after(code, at + prefix.len()) {
                        let mut full = base.clone();
                        full.extend(tail);
                        entry.insert(self.resolve(&full));
                    }
                }
            }
        }
        uses
    }

    /// For every folder, the graph among its modules: `a → b` when code inside `a` uses
    /// something inside its sibling `b`.
    fn sibling_graphs(&self) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
        let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (from, targets) in self.uses() {
            for to in targets {
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                if common < from.len() && common < to.len() {
                    graphs
                        .entry(from[..common].to_vec())
                        .or_default()
                        .entry(from[common].clone())
                        .or_default()
                        .insert(to[common].clone());
                }
            }
        }
        graphs
    }

    /// Every import circle, once, as `folder: a → b → a`.
    fn cycles(&self) -> Vec<String> {
        let mut cycles = Vec::new();
        for (folder, graph) in self.sibling_graphs() {
            let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
            for start in graph.keys() {
                let mut path = vec![start.clone()];
                if let Some(cycle) = cycle_from(&graph, start, &mut path)
                    && seen.insert(cycle.iter().cloned().collect())
                {
                    let folder = if folder.is_empty() {
                        format!("{} (root)", self.name)
                    } else {
                        format!("{}::{}", self.name, folder.join("::"))
                    };
                    cycles.push(format!("{folder}: {}", cycle.join(" → ")));
                }
            }
        }
        cycles
    }
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

/// `"a::b"` as a module path; `""` is the root.
fn module(path: &str) -> ModPath {
    path.split("::")
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

fn crates() -> [Crate; 3] {
    [
        load("pubapi_sdk_ext", "sdk-ext"),
        load("pubapi_sandbox", "sandbox"),
        load("pubapi_cli", "cli"),
    ]
}

#[test]
fn no_import_circle_at_any_level_of_any_crate() {
    let mut cycles = Vec::new();
    for krate in crates() {
        assert!(
            krate.code.len() > 8,
            "the modules of {} were not found: {:?}",
            krate.name,
            krate.code.keys()
        );
        cycles.extend(krate.cycles());
    }
    assert!(cycles.is_empty(), "import circles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_follows_uses_through_groups_parents_and_reexports() {
    let mut test_mods = BTreeSet::new();
    let lib = code_of(
        "//! see crate::b\npub mod a;\npub mod b;\npub mod c;\n#[cfg(test)]\nmod tests;\n",
        &mut test_mods,
    );
    assert_eq!(test_mods, BTreeSet::from(["tests".to_string()]));
    let krate = Crate {
        name: "example",
        code: BTreeMap::from([
            (module(""), lib),
            (
                module("a"),
                "pub use report::Report;\npub mod csv;\npub mod report;\n".into(),
            ),
            // A circle inside `a`, hidden behind `a`'s re-export.
            (module("a::csv"), "use super::Report;\n".into()),
            (module("a::report"), "use crate::a::csv::Reader;\n".into()),
            (module("b"), "use crate::{c, a::Report};\n".into()),
            (module("c"), "fn f() { let _ = self::x; }\n".into()),
        ]),
        reexports: BTreeMap::from([((module("a"), "Report".into()), module("a::report"))]),
    };
    let graphs = krate.sibling_graphs();
    assert_eq!(
        graphs[&module("")]["b"],
        BTreeSet::from(["a".to_string(), "c".to_string()])
    );
    assert_eq!(
        krate.cycles(),
        vec!["example::a: csv → report → csv".to_string()]
    );
}

#[test]
fn no_operation_id_is_written_as_a_string_outside_codegen_and_tests() {
    let mut found = Vec::new();
    for krate in crates() {
        for (module, code) in &krate.code {
            for operation in pubapi_sdk::operations::ALL {
                if code.contains(&format!("\"{}\"", operation.id)) {
                    found.push(format!(
                        "{}::{}: \"{}\" (use pubapi_sdk::operations::id::…)",
                        krate.name,
                        module.join("::"),
                        operation.id
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "operationIds as strings:\n{}",
        found.join("\n")
    );
}

/// Where `impl Client` is written, and where the handles live, in `pubapi-sdk-ext`: each
/// problem as `module: what` (the async client is the root's, the blocking one `blocking`'s).
fn door_problems(krate: &Crate) -> Vec<String> {
    let mut problems = Vec::new();
    for (module, code) in &krate.code {
        let name = if module.is_empty() {
            "lib".to_string()
        } else {
            module.join("::")
        };
        let blocking = module.first().is_some_and(|m| m == "blocking");
        let home: &[&str] = if blocking { &["blocking"] } else { &[] };
        // `impl crate::Client` and `&'a super::Client` count too.
        let code = code.replace("crate::", "").replace("super::", "");
        let impls = code
            .lines()
            .filter(|line| line.starts_with("impl Client {") || line.starts_with("impl Client<"))
            .count();
        if impls > 0 && module.as_slice() != home {
            problems.push(format!(
                "{name}: `impl Client` belongs in {} only (every accessor in one block)",
                if blocking {
                    "blocking/mod.rs"
                } else {
                    "lib.rs"
                }
            ));
        }
        let handles = code.matches("client: &'a Client").count();
        let folder = if blocking { "blocking" } else { "api" };
        if handles > 0 && module.first().map(String::as_str) != Some(folder) {
            problems.push(format!(
                "{name}: a handle (`client: &'a Client`) belongs in src/{folder}/"
            ));
        }
    }
    problems
}

#[test]
fn every_area_accessor_is_in_one_impl_block_file_and_every_handle_in_the_handles_folder() {
    let krate = load("pubapi_sdk_ext", "sdk-ext");
    assert!(
        krate.code.contains_key(&vec!["api".to_string()]),
        "src/api/ was not found: {:?}",
        krate.code.keys()
    );
    let problems = door_problems(&krate);
    assert!(
        problems.is_empty(),
        "accessors or handles out of place:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_door_rule_sees_an_impl_or_a_handle_out_of_place() {
    let handle = "pub struct Agents<'a> {\n    pub(crate) client: &'a Client,\n}\n";
    let krate = Crate {
        name: "example",
        code: BTreeMap::from([
            (module(""), "impl Client {\n}\n".into()),
            (module("api::agents"), handle.into()),
            (module("blocking"), "impl Client {\n}\n".into()),
            (module("blocking::ai"), handle.into()),
            (module("ai"), format!("{handle}impl Client {{\n}}\n")),
            (
                module("blocking::audit"),
                "impl super::Client {\n}\n".into(),
            ),
        ]),
        reexports: BTreeMap::new(),
    };
    assert_eq!(
        door_problems(&krate),
        [
            "ai: `impl Client` belongs in lib.rs only (every accessor in one block)",
            "ai: a handle (`client: &'a Client`) belongs in src/api/",
            "blocking::audit: `impl Client` belongs in blocking/mod.rs only (every accessor in one block)",
        ]
    );
}
