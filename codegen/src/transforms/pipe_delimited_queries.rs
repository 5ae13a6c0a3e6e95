//! `pipe_delimited_queries`: a `pipeDelimited` array query parameter becomes the string the
//! SDK joins.
//!
//! The spec says what the events `type` filter is: an array of `PollingEventType` names sent
//! joined by `|` (`style: pipeDelimited, explode: false`), so fuzzers and other generators
//! know the names. progenitor 0.15 ignores `style` and would send each item as its own
//! `type=` pair; this transform gives it a `string` parameter instead, which
//! `pubapi-sdk-ext` fills with the names joined by `|`.

use openapiv3::{
    OpenAPI, Parameter, ParameterSchemaOrContent, QueryStyle, ReferenceOr, Schema, SchemaData,
    SchemaKind, StringType, Type,
};

fn to_string_parameter(parameter: &mut Parameter) -> bool {
    let Parameter::Query {
        parameter_data,
        style,
        ..
    } = parameter
    else {
        return false;
    };
    if *style != QueryStyle::PipeDelimited {
        return false;
    }
    *style = QueryStyle::Form;
    parameter_data.explode = None;
    parameter_data.format = ParameterSchemaOrContent::Schema(ReferenceOr::Item(Schema {
        schema_data: SchemaData::default(),
        schema_kind: SchemaKind::Type(Type::String(StringType::default())),
    }));
    true
}

/// Turns every `pipeDelimited` query parameter (components and inline) into a plain string
/// parameter; returns how many it changed.
pub fn apply(spec: &mut OpenAPI) -> usize {
    let mut changed = 0;
    if let Some(components) = spec.components.as_mut() {
        for parameter in components.parameters.values_mut() {
            if let ReferenceOr::Item(parameter) = parameter {
                changed += usize::from(to_string_parameter(parameter));
            }
        }
    }
    crate::walk::operations_mut(spec, |_, _, operation| {
        for parameter in &mut operation.parameters {
            if let ReferenceOr::Item(parameter) = parameter {
                changed += usize::from(to_string_parameter(parameter));
            }
        }
    });
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;

    #[test]
    fn a_pipe_delimited_array_becomes_a_string_and_other_queries_stay() {
        let mut s = spec(
            "paths: {}\ncomponents:\n  parameters:\n    Types:\n      name: type\n      in: query\n      description: joined by a pipe\n      style: pipeDelimited\n      explode: false\n      schema:\n        type: array\n        items: {type: string, enum: [a, b]}\n    Count:\n      name: count\n      in: query\n      schema: {type: integer}\n",
        );
        assert_eq!(apply(&mut s), 1);
        let parameters = &s.components.as_ref().unwrap().parameters;
        let Parameter::Query {
            parameter_data,
            style,
            ..
        } = parameters["Types"].as_item().unwrap()
        else {
            panic!("Types stays a query parameter");
        };
        assert_eq!(*style, QueryStyle::Form);
        assert_eq!(
            parameter_data.description.as_deref(),
            Some("joined by a pipe")
        );
        let ParameterSchemaOrContent::Schema(ReferenceOr::Item(schema)) = &parameter_data.format
        else {
            panic!("Types keeps an inline schema");
        };
        assert!(matches!(
            schema.schema_kind,
            SchemaKind::Type(Type::String(_))
        ));
        let Parameter::Query { parameter_data, .. } = parameters["Count"].as_item().unwrap() else {
            panic!("Count stays a query parameter");
        };
        assert!(matches!(
            &parameter_data.format,
            ParameterSchemaOrContent::Schema(ReferenceOr::Item(Schema {
                schema_kind: SchemaKind::Type(Type::Integer(_)),
                ..
            }))
        ));
    }
}
