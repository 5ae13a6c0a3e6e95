//! `free_form_any_of`: keeps the free-form object of an `anyOf` that names the known shapes
//! of a value and ends with a free-form object.
//!
//! The spec says which shapes a payload can have (`WebhookEvent.data`: the `*Data` schema of
//! its event type; `PollingEvent.data`; the audit report `events`) and keeps a free-form
//! object last for shapes the reference does not show. typify would turn that `anyOf` into a
//! struct of every alternative's fields; the SDK decodes the payload by its event type
//! instead (`pubapi-sdk-ext`), so progenitor gets the last alternative, the free-form object.
//! The shapes stay components and are generated as types.

use crate::walk::visit_component_schemas_mut;
use openapiv3::{OpenAPI, ReferenceOr, Schema, SchemaKind, Type};

/// Whether `schema` is a free-form object (`type: object` without properties).
fn free_form(schema: &ReferenceOr<Schema>) -> bool {
    matches!(
        schema,
        ReferenceOr::Item(Schema { schema_kind: SchemaKind::Type(Type::Object(o)), .. })
            if o.properties.is_empty()
    )
}

/// Replaces every `anyOf` whose last alternative is a free-form object by that object (the
/// description kept); returns how many it replaced.
pub fn apply(spec: &mut OpenAPI) -> usize {
    let mut changed = 0;
    visit_component_schemas_mut(spec, &mut |s| {
        let SchemaKind::AnyOf { any_of } = &mut s.schema_kind else {
            return;
        };
        if !any_of.last().is_some_and(free_form) {
            return;
        }
        if let Some(ReferenceOr::Item(last)) = any_of.pop() {
            s.schema_kind = last.schema_kind;
            changed += 1;
        }
    });
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;

    #[test]
    fn known_shapes_then_a_free_form_object_become_the_free_form_object() {
        let mut s = spec(
            "paths: {}\ncomponents:\n  schemas:\n    A:\n      type: object\n      properties: {x: {type: string}}\n    Event:\n      type: object\n      properties:\n        data:\n          description: payload\n          anyOf:\n            - $ref: '#/components/schemas/A'\n            - type: object\n              additionalProperties: true\n        other:\n          anyOf:\n            - $ref: '#/components/schemas/A'\n            - type: string\n",
        );
        assert_eq!(apply(&mut s), 1);
        let event = s.components.as_ref().unwrap().schemas["Event"]
            .as_item()
            .unwrap();
        let SchemaKind::Type(Type::Object(o)) = &event.schema_kind else {
            panic!("Event stays an object");
        };
        let data = o.properties["data"].as_item().unwrap();
        assert!(
            matches!(&data.schema_kind, SchemaKind::Type(Type::Object(d)) if d.properties.is_empty())
        );
        assert_eq!(data.schema_data.description.as_deref(), Some("payload"));
        let other = o.properties["other"].as_item().unwrap();
        assert!(matches!(other.schema_kind, SchemaKind::AnyOf { .. }));
    }
}
