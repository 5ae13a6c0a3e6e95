//! The house rules, checked on the source as rust-analyzer's `tidy` checks its own: what a
//! reviewer would otherwise have to remember. They read every crate of the workspace (the
//! codegen, xtask, the handwritten files of `pubapi-sdk` and `pubapi-httpmock`, `pubapi-sdk-ext`,
//! the sandbox, the CLI and the test kit) as plain text; the generated files (first line
//! `// @generated`) are left out. Each failure names the file and what to do.
//!
//! - **No import circle at any level of any crate**: among the modules of every folder, the
//!   uses (outside comments and test code) form a graph without cycles, so each module can be
//!   read knowing only the ones it depends on. A use reaches the module that holds the item,
//!   through the re-exports of the modules on the way (`crate::audit::CsvReport` is
//!   `audit::report`'s when `audit` re-exports it).
//! - **Nothing `api/` builds on climbs back into it** in `pubapi-sdk-ext` (the rule
//!   `api/mod.rs` states): a module in an area `api/` uses (`audit`, `events`, …, and what
//!   they use in turn) neither uses `crate::api::…` nor calls an area accessor of the `Client`
//!   (`client.audit()`, `.events()`, …, the methods of the root's `impl Client` that hand out an
//!   `api` handle). A call reaches the handle as surely as a `use` does.
//! - **Every module file starts with its module doc** (`//!`, or `#![doc = …]` for a crate
//!   root that takes its README), so a reader learns what a file is for, and how its parts fit,
//!   before its code.
//! - **No handwritten file under a `src/` holds more than 1,000 lines**: a bigger one is split
//!   along its seams into a folder of modules.
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

/// One crate's modules: each one's code (comments and test items left out), the file that
/// holds it (from the workspace root), and the items each re-exports from a child
/// (`pub use report::CsvReport` in `audit`).
struct Crate {
    name: &'static str,
    code: BTreeMap<ModPath, String>,
    files: BTreeMap<ModPath, String>,
    reexports: BTreeMap<(ModPath, String), ModPath>,
}

/// Every crate of the workspace that has a `src/`: its name and folder.
const HOUSE: [(&str, &str); 9] = [
    ("pubapi_codegen", "codegen"),
    ("xtask", "xtask"),
    ("pubapi_sdk", "sdk"),
    ("pubapi_httpmock", "httpmock"),
    ("pubapi_sdk_ext", "sdk-ext"),
    ("pubapi_sandbox", "sandbox"),
    ("pubapi_cli", "cli"),
    ("pubapi_testkit", "tests"),
    ("readme", "tests/readme"),
];

/// The crates that are neither the codegen nor tests.
const NOT_CODEGEN_OR_TESTS: [&str; 6] = [
    "xtask",
    "pubapi_sdk",
    "pubapi_httpmock",
    "pubapi_sdk_ext",
    "pubapi_sandbox",
    "pubapi_cli",
];

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether `text` is a file `cargo xtask regenerate` writes.
fn generated(text: &str) -> bool {
    text.starts_with("// @generated")
}

/// Every handwritten `.rs` file under a `src/` of the workspace: its path from the workspace
/// root, and its text.
fn handwritten_files() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (_, folder) in HOUSE {
        let mut files = Vec::new();
        rust_files(&root().join(folder).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            if !generated(&text) {
                found.push((shown(&file), text));
            }
        }
    }
    found.sort();
    found
}

/// `file` from the workspace root, with `/` between folders.
fn shown(file: &Path) -> String {
    let relative = file.strip_prefix(root()).unwrap();
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
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
    let src = root().join(folder).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut code = BTreeMap::new();
    let mut shown_files = BTreeMap::new();
    let mut test_only: BTreeSet<ModPath> = BTreeSet::new();
    for file in &files {
        let module = mod_path(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        if generated(&text) {
            continue;
        }
        let mut test_mods = BTreeSet::new();
        let text = code_of(&text, &mut test_mods);
        shown_files.insert(module.clone(), shown(file));
        for child in test_mods {
            let mut path = module.clone();
            path.push(child);
            test_only.insert(path);
        }
        code.insert(module, text);
    }
    // A module declared under `#[cfg(test)]` is test code, with everything inside it.
    code.retain(|module: &ModPath, _| !test_only.iter().any(|t| module.starts_with(t)));
    shown_files.retain(|module, _| code.contains_key(module));
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
        files: shown_files,
        reexports,
    }
}

/// The items a module re-exports from a child: `pub use child::x::{A, B};` and
/// `pub(crate) use self::child::A;` give `(A, child)`, `(B, child)`.
fn reexports_of(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for statement in code.replace('\n', " ").split(';') {
        let statement = without_attributes(statement.trim());
        let Some(at) = statement.find("use ") else {
            continue;
        };
        if !statement[..at].trim_start().starts_with("pub") {
            continue;
        }
        let path = statement[at + 4..].trim();
        // `pub use {a::A, b::B}`: each path of the group on its own.
        let paths: Vec<&str> = match path.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(group) => top_level_items(group),
            None => vec![path],
        };
        for path in paths {
            found.extend(reexports_of_path(path));
        }
    }
    found
}

/// The comma-separated items of a group, a nested group kept whole (`a::A, b::{B, C}`).
fn top_level_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(group[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(group[start..].trim());
    items.retain(|item| !item.is_empty());
    items
}

/// What one `pub use` path re-exports from a child: `child::x::{A, B}` gives `(A, child)`,
/// `(B, child)`.
fn reexports_of_path(path: &str) -> Vec<(String, String)> {
    let path = path.strip_prefix("self::").unwrap_or(path);
    let child = ident(path);
    if child.is_empty() || matches!(child.as_str(), "crate" | "super") {
        return Vec::new();
    }
    let names = match (path.find('{'), path.rfind('}')) {
        (Some(open), Some(close)) => path[open + 1..close].to_string(),
        _ => path.rsplit("::").next().unwrap_or_default().to_string(),
    };
    names
        .split(',')
        .map(|name| name.split(" as ").last().unwrap_or_default().trim())
        .map(|name| name.rsplit("::").next().unwrap_or_default())
        .filter(|name| !name.is_empty() && *name != "*")
        .map(|name| (name.to_string(), child.clone()))
        .collect()
}

/// A statement without the attributes before it (`#[cfg(feature = "ai")] pub use …`).
fn without_attributes(mut statement: &str) -> &str {
    while let Some(rest) = statement.strip_prefix("#[") {
        let mut depth = 1;
        let end = rest.char_indices().find_map(|(i, c)| {
            depth += match c {
                '[' => 1,
                ']' => -1,
                _ => 0,
            };
            (depth == 0).then_some(i)
        });
        let Some(end) = end else { return statement };
        statement = rest[end + 1..].trim_start();
    }
    statement
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

    /// The file that holds `module` (its path in the crate when the crate was not read from
    /// files).
    fn file(&self, module: &ModPath) -> String {
        self.files
            .get(module)
            .cloned()
            .unwrap_or_else(|| format!("{}::{}", self.name, module.join("::")))
    }

    /// Every import circle, once, as `folder: a → b → a (files): what to do`.
    fn cycles(&self) -> Vec<String> {
        let mut cycles = Vec::new();
        for (folder, graph) in self.sibling_graphs() {
            let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
            for start in graph.keys() {
                let mut path = vec![start.clone()];
                if let Some(cycle) = cycle_from(&graph, start, &mut path)
                    && seen.insert(cycle.iter().cloned().collect())
                {
                    let label = if folder.is_empty() {
                        format!("{} (root)", self.name)
                    } else {
                        format!("{}::{}", self.name, folder.join("::"))
                    };
                    let files: Vec<String> = cycle[1..]
                        .iter()
                        .map(|name| {
                            let mut module = folder.clone();
                            module.push(name.clone());
                            self.file(&module)
                        })
                        .collect();
                    cycles.push(format!(
                        "{label}: {} ({}): move what one takes from the other into a module \
                         below both, so the uses go one way",
                        cycle.join(" → "),
                        files.join(", ")
                    ));
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

/// The code of a test crate's modules, from (module path, code) pairs.
fn modules(files: &[(&str, &str)]) -> BTreeMap<ModPath, String> {
    files
        .iter()
        .map(|(path, code)| (module(path), code.to_string()))
        .collect()
}

/// `"a::b"` as a module path; `""` is the root.
fn module(path: &str) -> ModPath {
    path.split("::")
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Fails with `heading` and one problem a line when there are any.
fn assert_none(problems: &[String], heading: &str) {
    assert!(problems.is_empty(), "{heading}:\n{}", problems.join("\n"));
}

/// Every crate of the workspace, read.
fn house() -> Vec<Crate> {
    HOUSE
        .iter()
        .map(|(name, folder)| load(name, folder))
        .collect()
}

#[test]
fn no_import_circle_at_any_level_of_any_crate() {
    let mut cycles = Vec::new();
    for krate in house() {
        assert!(
            krate.code.contains_key(&module("")),
            "the root of {} (src/lib.rs or src/main.rs) was not found: {:?}",
            krate.name,
            krate.code.keys()
        );
        if krate.name == "pubapi_sdk_ext" {
            assert!(
                krate.code.len() > 8,
                "the modules of {} were not found: {:?}",
                krate.name,
                krate.code.keys()
            );
        }
        cycles.extend(krate.cycles());
    }
    assert_none(&cycles, "import circles");
}

/// A re-export behind a `cfg`, and a group of paths after `pub use`, are re-exports too.
#[test]
fn the_reexport_reader_sees_through_attributes_and_a_leading_group() {
    let code = "#[cfg(feature = \"audit\")]\npub use audit::Audit;\n\
                #[cfg(feature = \"ai\")]\npub use {\n    agents::Agents, search::{Search, Page as P},\n};\n\
                use private::Hidden;\n";
    let found = reexports_of(code);
    let expected: Vec<(String, String)> = [
        ("Audit", "audit"),
        ("Agents", "agents"),
        ("Search", "search"),
        ("P", "search"),
    ]
    .map(|(item, child)| (item.to_string(), child.to_string()))
    .into();
    assert_eq!(found, expected);
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
        code: modules(&[
            ("", &lib),
            (
                "a",
                "pub use report::Report;\npub mod csv;\npub mod report;\n",
            ),
            // A circle inside `a`, hidden behind `a`'s re-export.
            ("a::csv", "use super::Report;\n"),
            ("a::report", "use crate::a::csv::Reader;\n"),
            ("b", "use crate::{c, a::Report};\n"),
            ("c", "fn f() { let _ = self::x; }\n"),
        ]),
        files: BTreeMap::new(),
        reexports: BTreeMap::from([((module("a"), "Report".into()), module("a::report"))]),
    };
    let graphs = krate.sibling_graphs();
    assert_eq!(
        graphs[&module("")]["b"],
        BTreeSet::from(["a".to_string(), "c".to_string()])
    );
    assert_eq!(
        krate.cycles(),
        vec![
            "example::a: csv → report → csv (example::a::report, example::a::csv): move what one \
             takes from the other into a module below both, so the uses go one way"
                .to_string()
        ]
    );
}

#[test]
fn no_operation_id_is_written_as_a_string_outside_codegen_and_tests() {
    let mut found = Vec::new();
    let house = house();
    let crates = house
        .iter()
        .filter(|krate| NOT_CODEGEN_OR_TESTS.contains(&krate.name));
    assert_eq!(crates.clone().count(), NOT_CODEGEN_OR_TESTS.len());
    for krate in crates {
        for (module, code) in &krate.code {
            for operation in pubapi_sdk::operations::ALL {
                if code.contains(&format!("\"{}\"", operation.id)) {
                    found.push(format!(
                        "{}: \"{}\" (use pubapi_sdk::operations::id::…)",
                        krate.file(module),
                        operation.id
                    ));
                }
            }
        }
    }
    assert_none(&found, "operationIds as strings");
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
    assert_none(&problems, "accessors or handles out of place");
}

#[test]
fn the_door_rule_sees_an_impl_or_a_handle_out_of_place() {
    let handle = "pub struct Agents<'a> {\n    pub(crate) client: &'a Client,\n}\n";
    let krate = Crate {
        name: "example",
        code: modules(&[
            ("", "impl Client {\n}\n"),
            ("api::agents", handle),
            ("blocking", "impl Client {\n}\n"),
            ("blocking::ai", handle),
            ("ai", &format!("{handle}impl Client {{\n}}\n")),
            ("blocking::audit", "impl super::Client {\n}\n"),
        ]),
        files: BTreeMap::new(),
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

/// `code` with the insides of its string and character literals blanked, so a call written in
/// a message (`"use client.assistant().ask_and_wait(..)"`) is not read as a call.
fn without_literals(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A raw string: `r"…"` or `r#"…"#`.
            'r' if matches!(chars.peek(), Some('"' | '#'))
                && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_') =>
            {
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.next_if_eq(&'"').is_none() {
                    out.push('r');
                    out.extend(std::iter::repeat_n('#', hashes));
                    continue;
                }
                out.push_str("r\"");
                let close = format!("\"{}", "#".repeat(hashes));
                let mut inside = String::new();
                for c in chars.by_ref() {
                    inside.push(c);
                    if inside.ends_with(&close) {
                        break;
                    }
                }
                out.push('"');
            }
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push('"');
            }
            // `'"'` and `'\''`; a lifetime (`'a`) has no closing quote and stays.
            '\'' if matches!(chars.peek(), Some('"' | '\\')) => {
                out.push('\'');
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
                out.push('\'');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The area accessors of the async client: the methods of the root's `impl Client` that hand
/// out a handle `api` re-exports (`pub fn audit(&self) -> Audit<'_>`).
fn area_accessors(krate: &Crate) -> BTreeSet<String> {
    let api = module("api");
    let handles: BTreeSet<&String> = krate
        .reexports
        .keys()
        .filter(|(from, _)| *from == api)
        .map(|(_, item)| item)
        .collect();
    // The accessors are written in the root's `impl Client`, or once for both clients in a
    // macro of `api/mod.rs` that the root expands.
    [module(""), api.clone()]
        .iter()
        .filter_map(|at| krate.code.get(at))
        .flat_map(|code| code.lines())
        .filter_map(|line| {
            let signature = line.trim_start().strip_prefix("pub fn ")?;
            let name = ident(signature);
            let returned = ident(signature.split("-> ").nth(1)?.trim_start());
            handles.contains(&returned).then_some(name)
        })
        .collect()
}

/// Where a module that `api/` builds on reaches back into `api/`, each as
/// `file: what (what to do)`: the top-level modules `api` uses, and the ones they use in
/// turn, and everything inside them, neither use `api` nor call an area accessor.
fn climbs_into_api(krate: &Crate) -> Vec<String> {
    let top = krate
        .sibling_graphs()
        .remove(&module(""))
        .unwrap_or_default();
    let mut below: BTreeSet<String> = BTreeSet::new();
    let mut todo = vec!["api".to_string()];
    while let Some(from) = todo.pop() {
        for to in top.get(&from).into_iter().flatten() {
            if to != "api" && below.insert(to.clone()) {
                todo.push(to.clone());
            }
        }
    }
    let accessors = area_accessors(krate);
    // A name that is also a method outside `api/` and the root (`Delivery::events`) counts
    // as the accessor only when called on something named like a client.
    let other_methods: BTreeSet<&String> = accessors
        .iter()
        .filter(|name| {
            krate.code.iter().any(|(module, code)| {
                module.first().is_some_and(|m| m != "api") && code.contains(&format!("fn {name}("))
            })
        })
        .collect();
    let uses = krate.uses();
    let mut problems = Vec::new();
    for (module, code) in &krate.code {
        if !module.first().is_some_and(|top| below.contains(top)) {
            continue;
        }
        let file = krate.file(module);
        let what_to_do = "api/ builds on this module: call the area's machinery the handle \
                          calls into, or take what it needs as an argument";
        if let Some(used) = uses[module]
            .iter()
            .find(|used| used.first().is_some_and(|m| m == "api"))
        {
            problems.push(format!(
                "{file}: uses crate::{} ({what_to_do})",
                used.join("::")
            ));
        }
        let code = without_literals(code);
        for name in &accessors {
            let call = format!(".{name}()");
            let climbs = code.match_indices(&call).any(|(at, _)| {
                let before = &code[..at];
                let receiver = &before[before
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1)..];
                !other_methods.contains(name) || receiver.to_lowercase().contains("client")
            });
            if climbs {
                problems.push(format!(
                    "{file}: calls `.{name}()`, the Client's accessor of an `api` handle \
                     ({what_to_do})"
                ));
            }
        }
    }
    problems
}

#[test]
fn nothing_api_builds_on_climbs_back_into_it_by_use_or_by_accessor() {
    let krate = load("pubapi_sdk_ext", "sdk-ext");
    let accessors = area_accessors(&krate);
    for expected in ["agents", "audit", "events", "webhooks", "identity"] {
        assert!(
            accessors.contains(expected),
            "the accessor {expected} was not found in the root's impl Client nor in api/mod.rs: {accessors:?}"
        );
    }
    let problems = climbs_into_api(&krate);
    assert_none(
        &problems,
        "modules api/ builds on reach back into api/ (src/api/mod.rs: the handles sit on top)",
    );
}

#[test]
fn the_climb_rule_sees_a_use_and_an_accessor_call_and_nothing_in_a_string() {
    let krate = Crate {
        name: "example",
        code: modules(&[
            (
                "",
                "pub use api::{Audit, Events};\nimpl Client {\n    pub fn audit(&self) -> Audit<'_> {}\n    pub fn events(&self) -> Events<'_> {}\n}\n",
            ),
            ("api", "pub use audit::Audit;\npub use events::Events;\n"),
            (
                "api::audit",
                "use crate::audit::Job;\nuse crate::events::Stream;\n",
            ),
            ("api::events", "use crate::waiter::Wait;\n"),
            ("audit", "pub mod job;\npub mod export;\n"),
            ("audit::job", "fn f() { let _ = \"client.audit()\"; }\n"),
            (
                "audit::export",
                "fn f(&self) { self.client.audit().remove(); }\n",
            ),
            // `events()` of its own type, called on a delivery: not the accessor.
            (
                "events",
                "fn events(&self) {}\nfn g(d: D) { d.events(); }\n",
            ),
            ("waiter", "use crate::api::Events;\n"),
            // Above api/: it may use the handles.
            (
                "blocking",
                "use crate::api::Audit;\nfn f() { client.audit(); }\n",
            ),
        ]),
        files: BTreeMap::from([(module("audit::export"), "src/audit/export.rs".to_string())]),
        reexports: BTreeMap::from([
            ((module(""), "Audit".into()), module("api")),
            ((module("api"), "Audit".into()), module("api::audit")),
            ((module("api"), "Events".into()), module("api::events")),
        ]),
    };
    assert_eq!(
        area_accessors(&krate),
        BTreeSet::from(["audit".to_string(), "events".to_string()])
    );
    let problems = climbs_into_api(&krate);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("src/audit/export.rs: calls `.audit()`"),
        "{problems:#?}"
    );
    assert!(
        problems[1].starts_with("example::waiter: uses crate::api::events"),
        "{problems:#?}"
    );
    assert_eq!(
        without_literals(r##"f("a.b()", r#"c"d"#, '"', 'x', &'a str)"##),
        r##"f("", r"", '', 'x', &'a str)"##
    );
}

/// The files that do not start with their module doc: the first line that is neither blank
/// nor an inner attribute must be `//!`, unless an inner attribute is the doc
/// (`#![doc = include_str!("../README.md")]`).
fn without_module_doc(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(_, text)| {
            let first = text.lines().map(str::trim).find(|line| {
                !line.is_empty() && (!line.starts_with("#![") || line.starts_with("#![doc"))
            });
            !first.is_some_and(|line| line.starts_with("//!") || line.starts_with("#![doc"))
        })
        .map(|(file, _)| {
            format!(
                "{file}: begin it with `//!` lines saying what the module is for and how its \
                 parts fit"
            )
        })
        .collect()
}

#[test]
fn every_module_file_starts_with_its_module_doc() {
    let files = handwritten_files();
    assert!(
        files.len() > 100,
        "the sources were not found: {}",
        files.len()
    );
    let missing = without_module_doc(&files);
    assert_none(&missing, "module files without a module doc");
}

/// The most lines a handwritten file under a `src/` holds.
const MAX_LINES: usize = 1_000;

/// The files over [`MAX_LINES`], each with its count and what to do.
fn too_big(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter_map(|(file, text)| {
            let lines = text.lines().count();
            (lines > MAX_LINES).then(|| {
                format!(
                    "{file}: {lines} lines (at most {MAX_LINES}): split it along its seams into \
                     a folder of modules whose mod.rs says how the parts fit"
                )
            })
        })
        .collect()
}

#[test]
fn no_handwritten_file_under_a_src_holds_more_than_1000_lines() {
    let too_big = too_big(&handwritten_files());
    assert_none(&too_big, "files too big to read as one room");
}

#[test]
fn the_doc_and_size_rules_see_a_missing_doc_and_a_big_file() {
    let files = [
        ("a.rs", "//! A.\nfn a() {}\n".to_string()),
        (
            "lib.rs",
            "#![doc = include_str!(\"../README.md\")]\n#![warn(missing_docs)]\n".into(),
        ),
        ("b.rs", "#![allow(dead_code)]\n\n//! B.\n".into()),
        ("c.rs", "use std::fmt;\n//! Too late.\n".into()),
        (
            "d.rs",
            "/// An item's doc, not the module's.\nfn d() {}\n".into(),
        ),
        (
            "big.rs",
            "//! Big.\n".to_string() + &"fn f() {}\n".repeat(MAX_LINES),
        ),
        (
            "edge.rs",
            "//! Edge.\n".to_string() + &"fn f() {}\n".repeat(MAX_LINES - 1),
        ),
    ]
    .map(|(file, text)| (file.to_string(), text));
    let missing = without_module_doc(&files);
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(missing[0].starts_with("c.rs: begin it with `//!`"));
    assert!(missing[1].starts_with("d.rs: "));
    assert_eq!(
        too_big(&files),
        [
            "big.rs: 1001 lines (at most 1000): split it along its seams into a folder of modules \
          whose mod.rs says how the parts fit"
        ]
    );
}
