//! Every operation of the spec has its wire tests, so a new operation cannot slip in untested.
//!
//! The wire tests (`tests/wire_*.rs`, as their test harness lists them) are named
//! `<operation>_<point>_<behaviour>`, or `<operation>::<point>_<behaviour>` when a macro makes
//! them, where `<operation>` is the generated method name of an operation of
//! `pubapi_sdk::operations::ALL` and `<point>` one of [`POINTS`]. A success response the
//! generated client does not decode (a 204 next to a 200, a 303, a CSV body) needs a test of its
//! own, named `<operation>_<status>_…` or `<operation>_<subtype>_…` (`csv`).

use pubapi_sdk::operations::{self, Operation};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The four points of issue 3, the request in its full and its minimal form.
const POINTS: &[&str] = &[
    "request_full",
    "request_minimal",
    "success",
    "errors",
    "forward_compat",
];

/// `(file, test name)` of every test in the wire test files, from the list each file's test
/// harness gives (`wire/lists/<file>.snap`, which `wire::list_of_tests_is_the_harness_list`
/// keeps equal to the harness's `--list` in that file). A test in a module reads as one name:
/// `create_logins_audit::success_…` is `create_logins_audit_success_…`.
fn wire_tests() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let stems = |dir: &Path, extension: &str| -> Vec<String> {
        let mut stems: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|error| panic!("{} is readable: {error}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == extension))
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        stems.sort();
        stems
    };
    let files: Vec<String> = stems(&dir, "rs")
        .into_iter()
        .filter(|file| file.starts_with("wire_") && file != "wire_coverage")
        .collect();
    assert!(
        files.len() >= 10,
        "the wire test files are found: {files:?}"
    );
    let lists_dir = dir.join("wire").join("lists");
    assert_eq!(
        stems(&lists_dir, "snap"),
        files,
        "each wire test file has its list of tests in wire/lists (run the file's tests, then \
         review and accept the new list)"
    );
    let mut tests = Vec::new();
    for file in files {
        let path = lists_dir.join(format!("{file}.snap"));
        let snapshot = std::fs::read_to_string(&path).expect("a readable list");
        // An insta snapshot: a `---` header, then the names, one a line.
        let names = snapshot
            .splitn(3, "---\n")
            .nth(2)
            .unwrap_or_else(|| panic!("{}: a snapshot with a header", path.display()));
        for name in names.lines().filter(|name| !name.is_empty()) {
            tests.push((file.clone(), name.replace("::", "_")));
        }
    }
    tests
}

/// The operation a test is about: the longest method name its name starts with.
fn operation_of(test: &str) -> Option<&'static Operation> {
    operations::ALL
        .iter()
        .filter(|op| {
            test.strip_prefix(op.method_name)
                .is_some_and(|rest| rest.starts_with('_'))
        })
        .max_by_key(|op| op.method_name.len())
}

/// The tests of `operation` whose name continues with `marker` after the operation.
fn tests_of<'a>(
    tests: &'a [(String, String)],
    operation: &Operation,
    marker: &str,
) -> Vec<&'a str> {
    let prefix = format!("{}_{marker}", operation.method_name);
    tests
        .iter()
        .map(|(_, name)| name.as_str())
        .filter(|name| {
            operation_of(name).map(|op| op.id) == Some(operation.id)
                && name
                    .strip_prefix(&prefix)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
        })
        .collect()
}

/// The success responses the generated client leaves undecoded, as the marker of their test:
/// the status (`204`, `303`) or the media subtype of a second body (`csv`).
fn undecoded_successes(operation: &Operation) -> Vec<String> {
    let mut markers = Vec::new();
    for response in operation.responses {
        let Ok(status) = response.status.parse::<u16>() else {
            continue;
        };
        if !(200..400).contains(&status) {
            continue;
        }
        if !response.generated {
            markers.push(status.to_string());
        }
        for content_type in response.content_types {
            if *content_type != "application/json" {
                let subtype = content_type.rsplit('/').next().unwrap();
                markers.push(subtype.to_owned());
            }
        }
    }
    markers
}

/// Asserts that nothing was `found`, else lists it under `what`.
#[track_caller]
fn assert_none(what: &str, found: Vec<String>) {
    assert!(found.is_empty(), "{what}:\n{}", found.join("\n"));
}

#[test]
fn every_operation_has_wire_tests_on_all_four_points() {
    let tests = wire_tests();
    let mut missing = Vec::new();
    for operation in operations::ALL {
        for point in POINTS {
            if tests_of(&tests, operation, point).is_empty() {
                missing.push(format!(
                    "{} ({}): {point}",
                    operation.id, operation.method_name
                ));
            }
        }
    }
    assert_none(
        "operations without wire tests (name them `<operation>_<point>_…`)",
        missing,
    );
}

#[test]
fn every_success_response_the_generated_client_does_not_decode_has_its_own_wire_test() {
    let tests = wire_tests();
    let mut missing = Vec::new();
    for operation in operations::ALL {
        for marker in undecoded_successes(operation) {
            if tests_of(&tests, operation, &marker).is_empty() {
                missing.push(format!(
                    "{}: {}_{marker}_…",
                    operation.id, operation.method_name
                ));
            }
        }
    }
    assert_none("untested responses", missing);
}

#[test]
fn undecoded_success_responses_are_the_303_and_csv_of_the_reference() {
    let found: Vec<String> = operations::ALL
        .iter()
        .flat_map(|op| {
            undecoded_successes(op)
                .into_iter()
                .map(|marker| format!("{} {marker}", op.id))
        })
        .collect();
    assert_eq!(found, ["getAuditJob 303", "getAuditReport csv"]);
}

#[test]
fn every_wire_test_is_named_after_an_operation() {
    let strays: Vec<String> = wire_tests()
        .into_iter()
        .filter(|(_, name)| operation_of(name).is_none())
        .map(|(file, name)| format!("{file}: {name}"))
        .collect();
    assert_none("tests named after no operation", strays);
}

/// The number of wire tests per operation and point, so that adding or removing one shows up
/// in review.
#[test]
fn wire_coverage_table() {
    let tests = wire_tests();
    let mut table = String::new();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for operation in operations::ALL {
        let all = tests
            .iter()
            .filter(|(_, name)| operation_of(name).map(|op| op.id) == Some(operation.id))
            .count();
        write!(table, "{:<34}", operation.id).unwrap();
        let mut on_points = 0;
        for point in POINTS {
            let n = tests_of(&tests, operation, point).len();
            on_points += n;
            *totals.entry(point).or_default() += n;
            write!(table, " {point}={n}").unwrap();
        }
        let other = all - on_points;
        *totals.entry("other").or_default() += other;
        writeln!(table, " other={other}").unwrap();
    }
    writeln!(table, "{:<34} {totals:?} tests={}", "total", tests.len()).unwrap();
    insta::assert_snapshot!(table);
}
