//! Traversal helpers shared by the spec transforms.

use openapiv3::{
    AdditionalProperties, Components, Header, OpenAPI, Operation, Parameter, ReferenceOr, Response,
    Schema, SchemaKind, StatusCode, Type,
};

/// The HTTP methods progenitor generates, in the order we visit them.
pub(crate) const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// One operation of the spec, with where it lives.
pub(crate) struct OperationRef<'a> {
    pub path: &'a str,
    pub method: &'static str,
    pub operation: &'a Operation,
}

/// Every operation of the spec, in document order.
pub(crate) fn operations(spec: &OpenAPI) -> Vec<OperationRef<'_>> {
    let mut out = Vec::new();
    for (path, item) in &spec.paths.paths {
        let ReferenceOr::Item(item) = item else {
            continue;
        };
        let slots = [&item.get, &item.put, &item.post, &item.delete, &item.patch];
        for (method, slot) in METHODS.into_iter().zip(slots) {
            if let Some(operation) = slot {
                out.push(OperationRef {
                    path,
                    method,
                    operation,
                });
            }
        }
    }
    out
}

/// Calls `f(path, method, operation)` for every operation, mutably.
pub(crate) fn operations_mut(
    spec: &mut OpenAPI,
    mut f: impl FnMut(&str, &'static str, &mut Operation),
) {
    for (path, item) in spec.paths.paths.iter_mut() {
        let ReferenceOr::Item(item) = item else {
            continue;
        };
        let slots = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for (method, slot) in METHODS.into_iter().zip(slots) {
            if let Some(operation) = slot.as_mut() {
                f(path, method, operation);
            }
        }
    }
}

/// The name an operation is reported under: its operationId, or `METHOD path`.
pub(crate) fn operation_name(path: &str, method: &str, operation: &Operation) -> String {
    operation
        .operation_id
        .clone()
        .unwrap_or_else(|| format!("{} {path}", method.to_uppercase()))
}

/// A kind of component a `$ref` can name: where such references point, and where the spec
/// keeps the components of the kind.
pub(crate) trait Component: Sized {
    /// The prefix of a reference to one, e.g. `#/components/responses/`.
    const PREFIX: &'static str;
    /// The component of this kind named `name`.
    fn get<'a>(components: &'a Components, name: &str) -> Option<&'a ReferenceOr<Self>>;
}

/// Implements [`Component`] for each type, kept in the `Components` field of the same name.
macro_rules! components {
    ($($kind:ty => $field:ident),* $(,)?) => {$(
        impl Component for $kind {
            const PREFIX: &'static str = concat!("#/components/", stringify!($field), "/");
            fn get<'a>(components: &'a Components, name: &str) -> Option<&'a ReferenceOr<Self>> {
                components.$field.get(name)
            }
        }
    )*};
}

components!(Response => responses, Parameter => parameters, Header => headers);

/// Resolves an item that may be a `$ref` into the spec's components (one level: a reference to
/// a reference resolves to nothing).
pub(crate) fn resolve<'a, T: Component>(
    spec: &'a OpenAPI,
    item: &'a ReferenceOr<T>,
) -> Option<&'a T> {
    match item {
        ReferenceOr::Item(t) => Some(t),
        ReferenceOr::Reference { reference } => {
            let name = reference.strip_prefix(T::PREFIX)?;
            T::get(spec.components.as_ref()?, name)?.as_item()
        }
    }
}

/// Resolves a response that may be a `$ref` into `#/components/responses`.
pub(crate) fn resolve_response<'a>(
    spec: &'a OpenAPI,
    response: &'a ReferenceOr<Response>,
) -> Option<&'a Response> {
    resolve(spec, response)
}

/// The status code as written in the spec (`200`, `4XX`).
pub(crate) fn status_label(code: &StatusCode) -> String {
    code.to_string()
}

/// The class of a status code: 2 for `200` and `2XX`, and so on.
pub(crate) fn status_class(code: &StatusCode) -> u16 {
    match code {
        StatusCode::Code(c) => c / 100,
        StatusCode::Range(r) => *r,
    }
}

/// Visits `schema` and every schema nested in it (properties, items, map values, compositions),
/// calling `f` on each inline schema and `on_ref` on each `$ref` target name found.
pub(crate) fn visit_schema_mut(
    schema: &mut Schema,
    f: &mut dyn FnMut(&mut Schema),
    on_ref: &mut dyn FnMut(&str),
) {
    f(schema);
    let mut children: Vec<&mut ReferenceOr<Schema>> = Vec::new();
    let mut boxed: Vec<&mut ReferenceOr<Box<Schema>>> = Vec::new();
    match &mut schema.schema_kind {
        SchemaKind::Type(Type::Object(o)) => {
            boxed.extend(o.properties.values_mut());
            if let Some(AdditionalProperties::Schema(s)) = &mut o.additional_properties {
                children.push(s);
            }
        }
        SchemaKind::Type(Type::Array(a)) => boxed.extend(a.items.as_mut()),
        SchemaKind::Type(_) => {}
        SchemaKind::OneOf { one_of: v }
        | SchemaKind::AllOf { all_of: v }
        | SchemaKind::AnyOf { any_of: v } => children.extend(v.iter_mut()),
        SchemaKind::Not { not } => children.push(not),
        SchemaKind::Any(any) => {
            boxed.extend(any.properties.values_mut());
            boxed.extend(any.items.as_mut());
            if let Some(AdditionalProperties::Schema(s)) = &mut any.additional_properties {
                children.push(s);
            }
            children.extend(any.one_of.iter_mut());
            children.extend(any.all_of.iter_mut());
            children.extend(any.any_of.iter_mut());
            children.extend(any.not.as_deref_mut());
        }
    }
    for child in children {
        match child {
            ReferenceOr::Item(s) => visit_schema_mut(s, f, on_ref),
            ReferenceOr::Reference { reference } => on_ref(reference),
        }
    }
    for child in boxed {
        match child {
            ReferenceOr::Item(s) => visit_schema_mut(s, f, on_ref),
            ReferenceOr::Reference { reference } => on_ref(reference),
        }
    }
}

/// Calls `f` on every component schema and every schema nested in it (its `$ref`s not
/// followed).
pub(crate) fn visit_component_schemas_mut(spec: &mut OpenAPI, f: &mut dyn FnMut(&mut Schema)) {
    let Some(components) = spec.components.as_mut() else {
        return;
    };
    for schema in components.schemas.values_mut() {
        if let ReferenceOr::Item(schema) = schema {
            visit_schema_mut(schema, f, &mut |_| {});
        }
    }
}

/// The component name of a `#/components/schemas/Name` reference.
pub(crate) fn schema_ref_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/components/schemas/")
}

/// Calls `f` on every schema of the spec: components and the inline schemas of request
/// bodies and responses, nested ones included.
pub(crate) fn visit_spec_schemas(spec: &OpenAPI, f: &mut dyn FnMut(&Schema)) {
    let mut roots: Vec<Schema> = Vec::new();
    if let Some(components) = &spec.components {
        roots.extend(
            components
                .schemas
                .values()
                .filter_map(|s| s.as_item().cloned()),
        );
    }
    for op in operations(spec) {
        if let Some(ReferenceOr::Item(body)) = &op.operation.request_body {
            roots.extend(
                body.content
                    .values()
                    .filter_map(|m| m.schema.as_ref()?.as_item().cloned()),
            );
        }
        let responses = op.operation.responses.responses.values();
        for response in responses.chain(op.operation.responses.default.as_ref()) {
            if let Some(response) = resolve_response(spec, response) {
                roots.extend(
                    response
                        .content
                        .values()
                        .filter_map(|m| m.schema.as_ref()?.as_item().cloned()),
                );
            }
        }
    }
    for mut root in roots {
        visit_schema_mut(&mut root, &mut |s| f(s), &mut |_| {});
    }
}
