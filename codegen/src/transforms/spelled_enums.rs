//! `spelled_enums`: turns a string matched in any letter case back into the enum of the
//! spellings the SDK sends.
//!
//! The spec says what the server accepts: a value the reference leaves open in letter case
//! (the audit `AccessPoint`) is a `pattern` accepting every case, so fuzzers and other
//! generators send lower case too. typify would make that a free string; the SDK sends the
//! reference's spelling, so the schema lists it in `x-pubapi-spellings`, and this transform
//! gives progenitor `enum: <spellings>` instead of the pattern.

use crate::walk::visit_component_schemas_mut;
use openapiv3::{OpenAPI, SchemaKind, Type};

/// The extension listing the spellings the SDK sends.
pub const SPELLINGS: &str = "x-pubapi-spellings";

/// Replaces the `pattern` of every string schema with `x-pubapi-spellings` by an `enum` of
/// them; returns how many schemas it changed.
pub fn apply(spec: &mut OpenAPI) -> usize {
    let mut changed = 0;
    visit_component_schemas_mut(spec, &mut |s| {
        let Some(spellings) = s.schema_data.extensions.get(SPELLINGS) else {
            return;
        };
        let values: Vec<Option<String>> = spellings
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(|v| Some(v.to_string())))
            .collect();
        if let SchemaKind::Type(Type::String(t)) = &mut s.schema_kind
            && !values.is_empty()
        {
            t.pattern = None;
            t.enumeration = values;
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
    fn any_case_pattern_becomes_the_enum_of_the_reference_spellings() {
        let mut s = spec(
            "paths: {}\ncomponents:\n  schemas:\n    AccessPoint:\n      type: string\n      pattern: '^([Ww][Ee][Bb]|[Ff][Tt][Pp])$'\n      x-pubapi-spellings: [Web, FTP]\n    Other:\n      type: string\n      pattern: '^a$'\n",
        );
        assert_eq!(apply(&mut s), 1);
        let schemas = &s.components.as_ref().unwrap().schemas;
        let SchemaKind::Type(Type::String(t)) =
            &schemas["AccessPoint"].as_item().unwrap().schema_kind
        else {
            panic!("AccessPoint stays a string schema");
        };
        assert_eq!(t.pattern, None);
        assert_eq!(
            t.enumeration,
            vec![Some("Web".to_string()), Some("FTP".to_string())]
        );
        let SchemaKind::Type(Type::String(other)) =
            &schemas["Other"].as_item().unwrap().schema_kind
        else {
            panic!("Other stays a string schema");
        };
        assert_eq!(other.pattern.as_deref(), Some("^a$"));
    }
}
