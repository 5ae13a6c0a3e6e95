//! The sandbox keeps no copy of a value list the spec holds: enum values, report kinds,
//! event names and wildcards come from the spec `pubapi-sdk` embeds (the sandbox's `facts`
//! module), limits from `pubapi-sdk-ext`'s `Limits` and the spec's `maxLength` (the agent
//! question's 35,000 characters).
//!
//! A hand-kept copy shows as a bracketed list of string literals (`["ACTIVE", "DELETED",
//! "CREATED"]`) holding every value of a spec list of three or more; the test scans the
//! source of the sandbox (its unit tests excepted) for one. (Sample data drawing on a few
//! values, such as the actions of generated report rows, is not a copy of the list.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The value lists of three or more values of the spec's string schemas (`enum` or
/// `x-pubapi-spellings`), by name, as the sandbox reads them from the embedded spec.
fn spec_lists() -> BTreeMap<String, Vec<String>> {
    pubapi_sandbox::spec_value_lists()
        .iter()
        .filter(|(_, values)| values.len() >= 3)
        .map(|(name, values)| {
            let values = values.iter().map(|v| v.to_string()).collect();
            (name.clone(), values)
        })
        .collect()
}

/// The string literals of each bracketed list in `source` (`[` up to the next `]`).
fn bracketed_literals(source: &str) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    let mut rest = source;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let close = after.find(']').unwrap_or(after.len());
        let inside = &after[..close];
        let literals: Vec<String> = inside
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        if literals.len() >= 3 {
            groups.push(literals);
        }
        rest = after;
    }
    groups
}

/// Every copy of a spec list in `source`: `(list name, values found)`.
fn copies_in(source: &str, lists: &BTreeMap<String, Vec<String>>) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for group in bracketed_literals(source) {
        for (name, values) in lists {
            let mut shared: Vec<String> = group
                .iter()
                .filter(|l| values.contains(l))
                .cloned()
                .collect();
            shared.sort();
            shared.dedup();
            if shared.len() == values.len() {
                found.push((name.clone(), shared));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the sandbox sources are readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_hand_kept_copies_of_spec_values() {
    let lists = spec_lists();
    assert!(lists.contains_key("EtmfAction") && lists.contains_key("AuditReportKind"));
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 20, "the sandbox sources were found");
    let mut problems = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file).expect("a source file is readable");
        // A unit test may spell values out: it checks them.
        let source = source.split("#[cfg(test)]").next().unwrap_or_default();
        for (name, values) in copies_in(source, &lists) {
            problems.push(format!(
                "{}: a copy of the spec's {name} ({values:?}); read it with facts::values(\"{name}\")",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_copied_list_is_found() {
    let lists = spec_lists();
    let copied = r#"const SUPPRESS: [&str; 3] = ["app", "user", "none"];"#;
    let found = copies_in(copied, &lists);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "EventSuppress");
    let statuses = r#"if !["ACTIVE", "DELETED", "CREATED"].contains(&s) {}"#;
    assert_eq!(copies_in(statuses, &lists)[0].0, "KnowledgeBaseStatus");
    assert!(copies_in(r#"let x = ["ACTIVE", "CREATED", "other"];"#, &lists).is_empty());
}

#[test]
fn the_reference_limits_are_the_sdks_defaults() {
    let sdk = pubapi_sdk_ext::limits::Limits::default();
    let sandbox = pubapi_sandbox::LimitsConfig::reference();
    use pubapi_sdk_ext::limits::LimitClass;
    assert_eq!(sandbox.budget(LimitClass::General), sdk.general);
    assert_eq!(sandbox.budget(LimitClass::Ai), sdk.ai);
}
