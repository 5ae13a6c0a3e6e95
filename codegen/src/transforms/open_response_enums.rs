//! `open_response_enums`: turns every enum that the server may send into a plain string.
//!
//! typify 0.8 generates closed Rust enums that refuse unknown values, so a value the platform
//! adds later would break every client that decodes it. An enum stays closed only where the SDK
//! is the one sending it: in schemas reachable from request bodies and parameters and from no
//! response. Everything else (response bodies, and components no operation references, such as
//! the webhook delivery payloads) is opened. The known values move into the description, so
//! the generated docs still list them, and the code transform
//! [`open_enums`](super::open_enums) turns each opened component back into an enum of its
//! values plus an `Unknown(String)` case.

use super::Removal;
use crate::walk::{operations, schema_ref_name, visit_schema_mut};
use openapiv3::{OpenAPI, Parameter, ReferenceOr, Schema, SchemaKind, Type};
use std::collections::{BTreeMap, BTreeSet};

/// Opens the server-sent enums and reports each schema it opened.
pub fn apply(spec: &mut OpenAPI) -> Vec<Removal> {
    let graph = reference_graph(spec);
    let sent = closure(&graph, request_roots(spec));
    let received = closure(&graph, response_roots(spec));
    let mut removals = Vec::new();

    if let Some(components) = spec.components.as_mut() {
        for (name, schema) in components.schemas.iter_mut() {
            let request_only = sent.contains(name) && !received.contains(name);
            if let (ReferenceOr::Item(schema), false) = (schema, request_only) {
                open(schema, name, &mut removals);
            }
        }
    }
    crate::walk::operations_mut(spec, |path, method, operation| {
        let subject = crate::walk::operation_name(path, method, operation);
        let responses = operation.responses.responses.values_mut();
        for response in responses.chain(operation.responses.default.as_mut()) {
            let ReferenceOr::Item(response) = response else {
                continue;
            };
            for media in response.content.values_mut() {
                if let Some(ReferenceOr::Item(schema)) = media.schema.as_mut() {
                    open(schema, &subject, &mut removals);
                }
            }
        }
    });
    removals
}

fn open(schema: &mut Schema, subject: &str, removals: &mut Vec<Removal>) {
    visit_schema_mut(
        schema,
        &mut |s| {
            let values: Vec<String> = match &mut s.schema_kind {
                SchemaKind::Type(Type::String(t)) if !t.enumeration.is_empty() => {
                    std::mem::take(&mut t.enumeration)
                        .into_iter()
                        .flatten()
                        .collect()
                }
                SchemaKind::Any(any) if !any.enumeration.is_empty() => {
                    std::mem::take(&mut any.enumeration)
                        .into_iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect()
                }
                _ => return,
            };
            let known = format!("Known values: {}.", values.join(", "));
            let description = s.schema_data.description.get_or_insert_with(String::new);
            if !description.is_empty() {
                description.push_str("\n\n");
            }
            description.push_str(&known);
            removals.push(Removal {
                transform: "open_response_enums",
                subject: subject.to_string(),
                what: format!("enum [{}]", values.join(", ")),
            });
        },
        &mut |_| {},
    );
}

/// Component name -> the component names its schema references directly.
fn reference_graph(spec: &OpenAPI) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    let Some(components) = &spec.components else {
        return graph;
    };
    for (name, schema) in &components.schemas {
        graph.insert(name.clone(), refs_of(schema));
    }
    graph
}

fn refs_of(schema: &ReferenceOr<Schema>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match schema {
        ReferenceOr::Reference { reference } => {
            out.extend(schema_ref_name(reference).map(str::to_string));
        }
        ReferenceOr::Item(schema) => {
            let mut copy = schema.clone();
            visit_schema_mut(&mut copy, &mut |_| {}, &mut |r| {
                out.extend(schema_ref_name(r).map(str::to_string));
            });
        }
    }
    out
}

fn closure(
    graph: &BTreeMap<String, BTreeSet<String>>,
    roots: BTreeSet<String>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            todo.extend(graph.get(&name).into_iter().flatten().cloned());
        }
    }
    seen
}

fn request_roots(spec: &OpenAPI) -> BTreeSet<String> {
    let mut roots = BTreeSet::new();
    let components = spec.components.as_ref();
    for op in operations(spec) {
        if let Some(ReferenceOr::Item(body)) = &op.operation.request_body {
            for media in body.content.values() {
                roots.extend(media.schema.iter().flat_map(refs_of));
            }
        }
        for parameter in &op.operation.parameters {
            let parameter = match parameter {
                ReferenceOr::Item(p) => Some(p),
                ReferenceOr::Reference { reference } => reference
                    .strip_prefix("#/components/parameters/")
                    .and_then(|n| components?.parameters.get(n))
                    .and_then(|p| p.as_item()),
            };
            if let Some(openapiv3::ParameterSchemaOrContent::Schema(s)) =
                parameter.map(|p| &parameter_data(p).format)
            {
                roots.extend(refs_of(s));
            }
        }
    }
    roots
}

fn parameter_data(p: &Parameter) -> &openapiv3::ParameterData {
    match p {
        Parameter::Query { parameter_data, .. }
        | Parameter::Header { parameter_data, .. }
        | Parameter::Path { parameter_data, .. }
        | Parameter::Cookie { parameter_data, .. } => parameter_data,
    }
}

fn response_roots(spec: &OpenAPI) -> BTreeSet<String> {
    let mut roots = BTreeSet::new();
    for op in operations(spec) {
        let responses = op.operation.responses.responses.values();
        for response in responses.chain(op.operation.responses.default.as_ref()) {
            if let Some(response) = crate::walk::resolve_response(spec, response) {
                for media in response.content.values() {
                    roots.extend(media.schema.iter().flat_map(refs_of));
                }
            }
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;

    const SPEC: &str = "paths:
  /w:
    post:
      operationId: setStatus
      parameters:
        - {name: order, in: query, schema: {$ref: '#/components/schemas/Order'}}
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/Request'}}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  status: {$ref: '#/components/schemas/Status'}
                  kind: {type: string, enum: [a, b]}
components:
  schemas:
    Request: {type: object, properties: {status: {$ref: '#/components/schemas/Status'}, format: {type: string, enum: [csv, json]}}}
    Order: {type: string, enum: [asc, desc]}
    Status: {type: string, description: The state., enum: [enabled, disabled]}
    DeliveryType: {type: string, enum: [fs:add_file]}
";

    fn enum_of(s: &OpenAPI, name: &str) -> Vec<Option<String>> {
        match &s.components.as_ref().unwrap().schemas[name]
            .as_item()
            .unwrap()
            .schema_kind
        {
            SchemaKind::Type(Type::String(t)) => t.enumeration.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn enum_in_a_response_is_opened_and_documented() {
        let mut s = spec(SPEC);
        apply(&mut s);
        assert!(enum_of(&s, "Status").is_empty());
        let status = s.components.as_ref().unwrap().schemas["Status"]
            .as_item()
            .unwrap();
        assert_eq!(
            status.schema_data.description.as_deref(),
            Some("The state.\n\nKnown values: enabled, disabled.")
        );
    }

    #[test]
    fn inline_response_enum_is_opened() {
        let mut s = spec(SPEC);
        let removed = apply(&mut s);
        assert!(
            removed
                .iter()
                .any(|r| r.subject == "setStatus" && r.what == "enum [a, b]")
        );
    }

    #[test]
    fn request_only_enums_stay_closed() {
        let mut s = spec(SPEC);
        apply(&mut s);
        assert_eq!(enum_of(&s, "Order").len(), 2);
        let request = s.components.as_ref().unwrap().schemas["Request"]
            .as_item()
            .unwrap();
        let SchemaKind::Type(Type::Object(o)) = &request.schema_kind else {
            panic!()
        };
        let format = o.properties["format"].as_item().unwrap();
        assert!(
            matches!(&format.schema_kind, SchemaKind::Type(Type::String(t)) if t.enumeration.len() == 2)
        );
    }

    #[test]
    fn unreferenced_components_count_as_server_sent() {
        let mut s = spec(SPEC);
        apply(&mut s);
        assert!(enum_of(&s, "DeliveryType").is_empty());
    }
}
