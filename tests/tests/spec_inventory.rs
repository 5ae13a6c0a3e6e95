//! The operation inventory of `spec/openapi.yaml`, pinned so that every spec change shows up
//! in review as a snapshot diff.

use pubapi_sdk::operations;
use std::fmt::Write;

fn spec_text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/openapi.yaml"))
        .expect("spec/openapi.yaml is readable")
}

#[test]
fn spec_parses_as_openapi_3_0_version_1_3_4() {
    let spec = pubapi_codegen::spec::load(&spec_text()).expect("spec parses");
    assert_eq!(spec.openapi, "3.0.3");
    assert_eq!(spec.info.version, "1.3.4");
    let server = &spec.servers[0];
    assert_eq!(server.url, "https://{domain}/pubapi");
    assert!(server.variables.as_ref().unwrap().contains_key("domain"));
}

#[test]
fn spec_has_the_39_operations_of_the_reference() {
    assert_eq!(operations::ALL.len(), 39);
    let per_tag = |tag: &str| operations::ALL.iter().filter(|o| o.tag == tag).count();
    let expected = [
        ("agents", 3),
        ("document-ai", 2),
        ("assistant", 2),
        ("copilot", 1),
        ("knowledge-bases", 2),
        ("hybrid-search", 1),
        ("audit", 17),
        ("webhooks", 7),
        ("identity", 1),
        ("events", 3),
    ];
    for (tag, count) in expected {
        assert_eq!(per_tag(tag), count, "operations tagged {tag}");
    }
}

#[test]
fn operation_inventory() {
    let mut out = String::new();
    for op in operations::ALL {
        let deprecated = if op.deprecated { " (deprecated)" } else { "" };
        writeln!(
            out,
            "{} {} {} [{}]{deprecated}",
            op.method, op.path, op.id, op.tag
        )
        .unwrap();
        for r in op.responses {
            let via = if r.generated { "" } else { "  -> sdk-ext" };
            let content = if r.content_types.is_empty() {
                "no body".to_string()
            } else {
                r.content_types.join(", ")
            };
            writeln!(out, "    {} {content}{via}", r.status).unwrap();
        }
    }
    insta::assert_snapshot!(out);
}
