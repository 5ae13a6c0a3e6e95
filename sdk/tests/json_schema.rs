//! With the `schemars` feature, a generated type's JSON schema says what the spec's schema for
//! it says: the same property names and the same required ones.

use pubapi_sdk::types::{AgentAskRequest, AuditJobCreated, WebhookSummary};
use schemars::JsonSchema;
use std::collections::BTreeSet;

/// The property names and the required ones of the spec's schema `name`.
fn spec_schema(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let spec: serde_yaml::Value = serde_yaml::from_str(pubapi_sdk::SPEC_YAML).unwrap();
    let schema = &spec["components"]["schemas"][name];
    let names = |v: &serde_yaml::Value| -> BTreeSet<String> {
        match v {
            serde_yaml::Value::Mapping(m) => m
                .keys()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect(),
            serde_yaml::Value::Sequence(s) => s
                .iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    (names(&schema["properties"]), names(&schema["required"]))
}

/// The same of the schema schemars derives for `T`.
fn derived_schema<T: JsonSchema>() -> (BTreeSet<String>, BTreeSet<String>) {
    let schema = schemars::schema_for!(T);
    let object = schema.schema.object.expect("an object schema");
    (
        object.properties.keys().cloned().collect(),
        object.required.iter().cloned().collect(),
    )
}

#[test]
fn a_generated_types_schema_has_the_specs_properties_and_required_fields() {
    for (name, derived) in [
        ("WebhookSummary", derived_schema::<WebhookSummary>()),
        ("AgentAskRequest", derived_schema::<AgentAskRequest>()),
        ("AuditJobCreated", derived_schema::<AuditJobCreated>()),
    ] {
        let (properties, required) = spec_schema(name);
        assert!(!required.is_empty(), "{name}: the spec requires something");
        assert_eq!(derived.0, properties, "{name}: properties");
        assert_eq!(derived.1, required, "{name}: required");
    }
}

#[test]
fn an_open_enum_is_a_string_on_the_wire() {
    let schema = schemars::schema_for!(pubapi_sdk::types::WebhookState);
    assert_eq!(
        serde_json::to_value(&schema.schema).unwrap()["type"],
        "string"
    );
}
