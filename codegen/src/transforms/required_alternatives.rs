//! `required_alternatives`: gives progenitor an object schema without the `anyOf` of
//! `required` lists that says which of its optional fields must be present.
//!
//! The spec says "at least one of these fields" where the reference states it (the files
//! audit: "`folders` ... required unless `file` is given", reference 4.7) as
//! `anyOf: [{required: [folders]}, {required: [file]}]` beside the object's `properties`.
//! typify turns that into an untagged enum with one struct per alternative, each losing the
//! other alternative's fields. The rule is between fields, which a struct of optional fields
//! cannot hold anyway; `pubapi-sdk-ext` checks it before sending (`AuditRequest::validate`)
//! and the sandbox refuses a body that breaks it. So progenitor gets the plain object: the
//! same struct as without the rule.

use openapiv3::{AnySchema, ObjectType, OpenAPI, ReferenceOr, Schema, SchemaKind, Type};

/// Whether `alternative` only lists required fields (`{required: [a, ..]}`).
fn only_required(alternative: &ReferenceOr<Schema>) -> bool {
    let ReferenceOr::Item(Schema {
        schema_kind: SchemaKind::Any(any),
        ..
    }) = alternative
    else {
        return false;
    };
    !any.required.is_empty()
        && *any
            == AnySchema {
                required: any.required.clone(),
                ..AnySchema::default()
            }
}

/// The object `any` describes once its `anyOf` of `required` lists is left out, or `None`
/// when `any` is not an object with such an `anyOf` and nothing else.
fn object_without_alternatives(any: &AnySchema) -> Option<ObjectType> {
    if any.typ.as_deref() != Some("object")
        || any.any_of.is_empty()
        || !any.any_of.iter().all(only_required)
    {
        return None;
    }
    let rest = AnySchema {
        typ: any.typ.clone(),
        properties: any.properties.clone(),
        required: any.required.clone(),
        additional_properties: any.additional_properties.clone(),
        min_properties: any.min_properties,
        max_properties: any.max_properties,
        any_of: any.any_of.clone(),
        ..AnySchema::default()
    };
    (rest == *any).then(|| ObjectType {
        properties: any.properties.clone(),
        required: any.required.clone(),
        additional_properties: any.additional_properties.clone(),
        min_properties: any.min_properties,
        max_properties: any.max_properties,
    })
}

/// Replaces every component object schema carrying an `anyOf` of `required` lists by the
/// plain object; returns the names of the schemas it changed.
pub fn apply(spec: &mut OpenAPI) -> Vec<String> {
    let mut changed = Vec::new();
    let Some(components) = spec.components.as_mut() else {
        return changed;
    };
    for (name, schema) in components.schemas.iter_mut() {
        let ReferenceOr::Item(schema) = schema else {
            continue;
        };
        let SchemaKind::Any(any) = &schema.schema_kind else {
            continue;
        };
        if let Some(object) = object_without_alternatives(any) {
            schema.schema_kind = SchemaKind::Type(Type::Object(object));
            changed.push(name.clone());
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;

    #[test]
    fn an_any_of_of_required_lists_leaves_the_plain_object() {
        let mut s = spec(
            "paths: {}\ncomponents:\n  schemas:\n    Files:\n      type: object\n      description: d\n      required: [format]\n      anyOf:\n        - required: [folders]\n        - required: [file]\n      properties:\n        format: {type: string}\n        folders: {type: array, items: {type: string}}\n        file: {type: string}\n    Shapes:\n      type: object\n      properties: {x: {type: string}}\n      anyOf:\n        - required: [x]\n        - type: object\n          properties: {y: {type: string}}\n",
        );
        assert_eq!(apply(&mut s), vec!["Files".to_string()]);
        let schemas = &s.components.as_ref().unwrap().schemas;
        let files = schemas["Files"].as_item().unwrap();
        let SchemaKind::Type(Type::Object(o)) = &files.schema_kind else {
            panic!("Files becomes a plain object: {:?}", files.schema_kind);
        };
        assert_eq!(o.required, vec!["format".to_string()]);
        assert_eq!(
            o.properties.keys().collect::<Vec<_>>(),
            ["format", "folders", "file"]
        );
        assert_eq!(files.schema_data.description.as_deref(), Some("d"));
        // An alternative that is more than a `required` list is a real shape: left alone.
        let shapes = schemas["Shapes"].as_item().unwrap();
        assert!(matches!(shapes.schema_kind, SchemaKind::Any(_)));
    }
}
