//! A small validator of recorded traffic against `spec/openapi.yaml`.
//!
//! For every exchange matched to an operation it checks that
//!
//! - the status is documented for the operation;
//! - the reply has a body exactly when the documented response has content, and its
//!   `Content-Type` is one the response documents;
//! - a JSON body matches the response schema: types, `required`, `enum`, `nullable`, arrays,
//!   `additionalProperties`, `minLength`/`maxLength`/`pattern`/`minItems`, through `$ref`s;
//! - every API header sent (`Location`, `Retry-After`, `X-Gateway-Error-Code`,
//!   `Deprecation`, `Sunset`, `Link`) is documented on that response and matches its schema;
//! - a request the sandbox accepted (2xx) had a body matching the request schema (including
//!   enums and required fields), and had one where the body is required, apart from the
//!   few fields where the sandbox follows the platform's clients ([`CLIENT_TOLERANCES`]);
//! - the `data` of polling events matches `FileSystemEventData` or
//!   `PermissionChangeEventData` by type.
//!
//! [`Validator::check_delivery`] checks a webhook delivery body against `WebhookDelivery`
//! and the `data` of each event against the `*Data` schema of its event type.
//!
//! Replies of injected faults are deliberately outside the spec and are not checked.

use crate::Exchange;
use crate::fs::{shown, shown_list};
use openapiv3::{
    AdditionalProperties, AnySchema, IntegerType, ObjectType, OpenAPI, Operation,
    ParameterSchemaOrContent, ReferenceOr, Response, Schema, SchemaKind, StatusCode, StringType,
    Type,
};
use pubapi_sdk::operations::id;
use serde_json::Value;
use std::collections::HashMap;

/// The spec the workspace builds from, embedded at compile time.
pub use pubapi_sdk::SPEC_YAML;

/// The headers the API defines; any of them in a reply must be documented there.
const API_HEADERS: &[&str] = &[
    "location",
    "retry-after",
    "x-gateway-error-code",
    "deprecation",
    "sunset",
    "link",
];

/// Request fields where the sandbox accepts what the platform's clients send although the
/// reference types the field otherwise (the reference leaves these formats open, and the
/// spec keeps the reference's types): `(operation, top-level body field, tolerance)`.
pub const CLIENT_TOLERANCES: &[(&str, &str, Tolerance)] = &[
    // The reference types these filters `string` and leaves their format open; the
    // platform's clients send epoch milliseconds and a user id as JSON integers.
    (
        id::LIST_KNOWLEDGE_BASES,
        "createdAfter",
        Tolerance::IntegerForString,
    ),
    (
        id::LIST_KNOWLEDGE_BASES,
        "createdBefore",
        Tolerance::IntegerForString,
    ),
    (
        id::LIST_KNOWLEDGE_BASES,
        "createdBy",
        Tolerance::IntegerForString,
    ),
];

/// How a request field listed in [`CLIENT_TOLERANCES`] may differ from its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tolerance {
    /// A JSON integer where the schema says `string` (checked as its decimal text).
    IntegerForString,
    /// A string enum value (or an array of them) in any ASCII letter case (checked as the
    /// listed value it equals without regard to case).
    AnyCase,
}

/// The outcome of checking a set of exchanges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConformanceReport {
    /// Exchanges checked.
    pub checked: usize,
    /// Exchanges skipped (injected faults, requests matching no operation).
    pub skipped: usize,
    /// Operations seen, by id.
    pub operations: Vec<String>,
    /// Every problem found, prefixed with the exchange.
    pub problems: Vec<String>,
}

/// Validates exchanges against one OpenAPI document.
#[derive(Debug)]
pub struct Validator {
    spec: OpenAPI,
    operations: HashMap<String, Operation>,
}

impl Validator {
    /// A validator for an OpenAPI 3.0 document in YAML.
    ///
    /// # Errors
    /// When the text is not an OpenAPI 3.0 document.
    pub fn from_yaml(text: &str) -> Result<Self, String> {
        let spec: OpenAPI = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        let mut operations = HashMap::new();
        for (_, item) in spec.paths.iter() {
            if let ReferenceOr::Item(item) = item {
                for (_, op) in item.iter() {
                    if let Some(id) = &op.operation_id {
                        operations.insert(id.clone(), op.clone());
                    }
                }
            }
        }
        Ok(Validator { spec, operations })
    }

    /// A validator for the workspace's `spec/openapi.yaml`.
    ///
    /// # Panics
    /// When the embedded spec does not parse (a build of this crate guarantees it is the
    /// workspace's spec, which its own tests parse).
    pub fn embedded() -> Self {
        match Validator::from_yaml(SPEC_YAML) {
            Ok(validator) => validator,
            Err(e) => panic!("spec/openapi.yaml does not parse: {e}"),
        }
    }

    /// The operation ids of the document.
    pub fn operation_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.operations.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Checks every exchange.
    pub fn check_all(&self, exchanges: &[Exchange]) -> ConformanceReport {
        let mut report = ConformanceReport::default();
        for exchange in exchanges {
            let Some(op) = exchange.operation.filter(|_| !exchange.injected) else {
                report.skipped += 1;
                continue;
            };
            report.checked += 1;
            if !report.operations.iter().any(|o| o == op) {
                report.operations.push(op.to_string());
            }
            for problem in self.check(exchange) {
                report.problems.push(format!(
                    "#{} {} {} -> {}: {problem}",
                    exchange.seq, exchange.method, exchange.path, exchange.status
                ));
            }
        }
        report.operations.sort();
        report
    }

    /// The problems of one exchange (none when it conforms).
    pub fn check(&self, exchange: &Exchange) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(op_id) = exchange.operation else {
            return problems;
        };
        let Some(op) = self.operations.get(op_id) else {
            problems.push(format!("operation {op_id} is not in the spec"));
            return problems;
        };
        let documented = op
            .responses
            .responses
            .iter()
            .find(|(code, _)| match code {
                StatusCode::Code(c) => *c == exchange.status,
                StatusCode::Range(r) => *r == exchange.status / 100,
            })
            .and_then(|(_, r)| self.response(r));
        let Some(response) = documented else {
            problems.push(format!(
                "status {} is not documented for {op_id}",
                exchange.status
            ));
            return problems;
        };
        self.check_body(exchange, response, &mut problems);
        self.check_headers(exchange, response, &mut problems);
        if (200..300).contains(&exchange.status) {
            self.check_request(exchange, op, &mut problems);
        }
        if matches!(op_id, id::LIST_EVENTS_V1 | id::LIST_EVENTS_V2) && exchange.status == 200 {
            self.check_polling_data(exchange, &mut problems);
        }
        problems
    }

    fn check_polling_data(&self, exchange: &Exchange, problems: &mut Vec<String>) {
        let Ok(page) = serde_json::from_slice::<Value>(&exchange.response_body) else {
            return;
        };
        for (i, event) in page["events"].as_array().into_iter().flatten().enumerate() {
            let schema = match event["type"].as_str() {
                Some("file_system") => "FileSystemEventData",
                Some("permission_change") => "PermissionChangeEventData",
                _ => continue,
            };
            self.validate_named(
                schema,
                &event["data"],
                &format!("$.events[{i}].data"),
                problems,
            );
        }
    }

    fn validate_named(&self, name: &str, value: &Value, path: &str, problems: &mut Vec<String>) {
        let reference = ReferenceOr::Reference {
            reference: format!("#/components/schemas/{name}"),
        };
        self.validate(&reference, value, path, false, problems);
    }

    /// The problems of one webhook delivery body (none when it conforms).
    pub fn check_delivery(&self, body: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        self.validate_named("WebhookDelivery", body, "$", &mut problems);
        for (i, event) in body["data"].as_array().into_iter().flatten().enumerate() {
            let Some(event_type) = event["eventType"].as_str() else {
                continue;
            };
            match data_schema(event_type) {
                Some(schema) => self.validate_named(
                    schema,
                    &event["data"],
                    &format!("$.data[{i}].data"),
                    &mut problems,
                ),
                None => problems.push(format!("$.data[{i}]: unknown event type {event_type}")),
            }
        }
        problems
    }

    fn check_body(&self, exchange: &Exchange, response: &Response, problems: &mut Vec<String>) {
        let has_body = !exchange.response_body.is_empty();
        if response.content.is_empty() {
            if has_body {
                problems.push("a body was sent where the spec documents none".into());
            }
            return;
        }
        let Some(content_type) = exchange.content_type.as_deref() else {
            problems.push("no Content-Type for a documented body".into());
            return;
        };
        let media = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let Some(media_type) = response.content.get(&media) else {
            problems.push(format!(
                "Content-Type {media} is not one of {}",
                shown_list(&response.content.keys().collect::<Vec<_>>())
            ));
            return;
        };
        if exchange.body_truncated {
            // Only part of the body was recorded: its type was checked, its content cannot be.
            return;
        }
        if media != "application/json" {
            if std::str::from_utf8(&exchange.response_body).is_err() {
                problems.push(format!("the {media} body is not UTF-8 text"));
            }
            return;
        }
        match serde_json::from_slice::<Value>(&exchange.response_body) {
            Err(e) => problems.push(format!("the body is not JSON: {e}")),
            Ok(value) => {
                if let Some(schema) = &media_type.schema {
                    self.validate(schema, &value, "$", false, problems);
                }
            }
        }
    }

    fn check_headers(&self, exchange: &Exchange, response: &Response, problems: &mut Vec<String>) {
        for (name, value) in &exchange.response_headers {
            let lower = name.to_ascii_lowercase();
            if !API_HEADERS.contains(&lower.as_str()) {
                continue;
            }
            let documented = response
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, h)| self.header(h));
            let Some(header) = documented else {
                problems.push(format!("header {name} is not documented on this response"));
                continue;
            };
            if let ParameterSchemaOrContent::Schema(schema) = &header.format {
                let typed = match self.schema(schema).map(|s| &s.schema_kind) {
                    Some(SchemaKind::Type(Type::Integer(_))) => value
                        .trim()
                        .parse::<i64>()
                        .map(Value::from)
                        .unwrap_or(Value::String(value.clone())),
                    _ => Value::String(value.clone()),
                };
                self.validate(schema, &typed, name, true, problems);
            }
        }
        for (name, header) in &response.headers {
            let required = self.header(header).is_some_and(|h| h.required);
            let sent = exchange
                .response_headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name));
            if required && !sent {
                problems.push(format!("required header {name} is missing"));
            }
        }
    }

    fn check_request(&self, exchange: &Exchange, op: &Operation, problems: &mut Vec<String>) {
        let Some(body) = op.request_body.as_ref().and_then(|b| match b {
            ReferenceOr::Item(b) => Some(b),
            ReferenceOr::Reference { .. } => None,
        }) else {
            return;
        };
        if exchange.request_body_truncated {
            // Only a prefix was kept: the body cannot be checked.
            return;
        }
        if exchange.request_body.iter().all(u8::is_ascii_whitespace) {
            if body.required {
                problems.push("the request had no body where one is required".into());
            }
            return;
        }
        let Some(schema) = body
            .content
            .get("application/json")
            .and_then(|m| m.schema.as_ref())
        else {
            return;
        };
        match serde_json::from_slice::<Value>(&exchange.request_body) {
            Err(_) => problems.push("a request body that is not JSON was accepted".into()),
            Ok(mut value) => {
                if let Some(op_id) = exchange.operation {
                    self.tolerate(op_id, schema, &mut value);
                }
                let mut request_problems = Vec::new();
                self.validate(schema, &value, "request$", true, &mut request_problems);
                problems.extend(
                    request_problems
                        .into_iter()
                        .map(|p| format!("accepted an invalid request: {p}")),
                );
            }
        }
    }

    /// Rewrites the fields of an accepted request body that [`CLIENT_TOLERANCES`] lists for
    /// `op_id` into the form the schema documents, so the check that follows passes them
    /// (and still checks everything else).
    fn tolerate(&self, op_id: &str, schema: &ReferenceOr<Schema>, body: &mut Value) {
        for (_, field, tolerance) in CLIENT_TOLERANCES.iter().filter(|(op, _, _)| *op == op_id) {
            let Some(value) = body.get_mut(*field) else {
                continue;
            };
            match tolerance {
                Tolerance::IntegerForString => {
                    if value.is_i64() || value.is_u64() {
                        *value = Value::String(value.to_string());
                    }
                }
                Tolerance::AnyCase => {
                    let listed = self.enum_values(schema, field);
                    let canonical = |v: &mut Value| {
                        if let Some(text) = v.as_str()
                            && let Some(l) = listed.iter().find(|l| l.eq_ignore_ascii_case(text))
                        {
                            *v = Value::String(l.clone());
                        }
                    };
                    match value {
                        Value::Array(items) => items.iter_mut().for_each(canonical),
                        other => canonical(other),
                    }
                }
            }
        }
    }

    /// The string enum of property `field` of an object schema (or of its array items).
    fn enum_values(&self, schema: &ReferenceOr<Schema>, field: &str) -> Vec<String> {
        let Some(SchemaKind::Type(Type::Object(object))) =
            self.schema(schema).map(|s| &s.schema_kind)
        else {
            return Vec::new();
        };
        let Some(property) = object.properties.get(field).and_then(|p| self.boxed(p)) else {
            return Vec::new();
        };
        let element = match &property.schema_kind {
            SchemaKind::Type(Type::Array(a)) => a.items.as_ref().and_then(|i| self.boxed(i)),
            _ => Some(property),
        };
        match element.map(|e| &e.schema_kind) {
            Some(SchemaKind::Type(Type::String(s))) => {
                s.enumeration.iter().flatten().cloned().collect()
            }
            _ => Vec::new(),
        }
    }

    fn response<'a>(&'a self, r: &'a ReferenceOr<Response>) -> Option<&'a Response> {
        component(r, "#/components/responses/", |name| {
            self.spec.components.as_ref()?.responses.get(name)
        })
    }

    fn header<'a>(
        &'a self,
        h: &'a ReferenceOr<openapiv3::Header>,
    ) -> Option<&'a openapiv3::Header> {
        component(h, "#/components/headers/", |name| {
            self.spec.components.as_ref()?.headers.get(name)
        })
    }

    fn named_schema(&self, reference: &str) -> Option<&Schema> {
        let name = reference.strip_prefix("#/components/schemas/")?;
        match self.spec.components.as_ref()?.schemas.get(name)? {
            ReferenceOr::Item(s) => Some(s),
            ReferenceOr::Reference { reference } => self.named_schema(reference),
        }
    }

    fn schema<'a>(&'a self, r: &'a ReferenceOr<Schema>) -> Option<&'a Schema> {
        match r {
            ReferenceOr::Item(s) => Some(s),
            ReferenceOr::Reference { reference } => self.named_schema(reference),
        }
    }

    fn boxed<'a>(&'a self, r: &'a ReferenceOr<Box<Schema>>) -> Option<&'a Schema> {
        match r {
            ReferenceOr::Item(s) => Some(s),
            ReferenceOr::Reference { reference } => self.named_schema(reference),
        }
    }

    /// Validates `value` against `schema`; `request` selects request-side rules (`required`
    /// is enforced on both sides, as the spec leaves response fields optional).
    pub fn validate(
        &self,
        schema: &ReferenceOr<Schema>,
        value: &Value,
        path: &str,
        request: bool,
        problems: &mut Vec<String>,
    ) {
        match self.schema(schema) {
            Some(s) => self.validate_schema(s, value, path, request, problems),
            None => problems.push(format!("{path}: unresolvable schema reference")),
        }
    }

    fn validate_schema(
        &self,
        schema: &Schema,
        value: &Value,
        path: &str,
        request: bool,
        problems: &mut Vec<String>,
    ) {
        if value.is_null() {
            if !schema.schema_data.nullable && !matches!(schema.schema_kind, SchemaKind::Any(_)) {
                problems.push(format!("{path}: null where the schema is not nullable"));
            }
            return;
        }
        match &schema.schema_kind {
            SchemaKind::Type(Type::String(s)) => match value.as_str() {
                None => problems.push(format!("{path}: expected a string, got {value}")),
                Some(text) => check_string(s, text, path, problems),
            },
            SchemaKind::Type(Type::Number(_)) => {
                if !value.is_number() {
                    problems.push(format!("{path}: expected a number, got {value}"));
                }
            }
            SchemaKind::Type(Type::Integer(i)) => {
                // As i128, so an integer above i64::MAX is compared as it is, not wrapped.
                match value
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| value.as_u64().map(i128::from))
                {
                    None => problems.push(format!("{path}: expected an integer, got {value}")),
                    Some(n) => check_integer(i, n, path, problems),
                }
            }
            SchemaKind::Type(Type::Boolean(_)) => {
                if !value.is_boolean() {
                    problems.push(format!("{path}: expected a boolean, got {value}"));
                }
            }
            SchemaKind::Type(Type::Array(a)) => match value.as_array() {
                None => problems.push(format!("{path}: expected an array, got {value}")),
                Some(items) => {
                    if let Some(min) = a.min_items
                        && items.len() < min
                    {
                        problems.push(format!("{path}: fewer than {min} items"));
                    }
                    if let Some(item_schema) = a.items.as_ref().and_then(|s| self.boxed(s)) {
                        for (i, item) in items.iter().enumerate() {
                            self.validate_schema(
                                item_schema,
                                item,
                                &format!("{path}[{i}]"),
                                request,
                                problems,
                            );
                        }
                    }
                }
            },
            SchemaKind::Type(Type::Object(o)) => match value.as_object() {
                None => problems.push(format!("{path}: expected an object, got {value}")),
                Some(map) => self.validate_object(o, map, path, request, problems),
            },
            SchemaKind::Any(a) => self.validate_any(a, value, path, request, problems),
            SchemaKind::AllOf { all_of } => {
                for s in all_of {
                    self.validate(s, value, path, request, problems);
                }
            }
            SchemaKind::OneOf { one_of: options } | SchemaKind::AnyOf { any_of: options } => {
                self.validate_alternatives(options, value, path, request, problems);
            }
            SchemaKind::Not { .. } => {}
        }
    }

    /// An object that also says which of its optional fields it needs one of (the files
    /// audit: `anyOf` of `required` lists), or such a `required` list itself.
    fn validate_any(
        &self,
        a: &AnySchema,
        value: &Value,
        path: &str,
        request: bool,
        problems: &mut Vec<String>,
    ) {
        match value.as_object() {
            Some(map) => self.validate_object(
                &ObjectType {
                    properties: a.properties.clone(),
                    required: a.required.clone(),
                    additional_properties: a.additional_properties.clone(),
                    min_properties: a.min_properties,
                    max_properties: a.max_properties,
                },
                map,
                path,
                request,
                problems,
            ),
            None if a.typ.as_deref() == Some("object") => {
                problems.push(format!("{path}: expected an object, got {value}"));
            }
            None => {}
        }
        if !a.any_of.is_empty() {
            self.validate_alternatives(&a.any_of, value, path, request, problems);
        }
    }

    /// `value` fits at least one of `options`.
    fn validate_alternatives(
        &self,
        options: &[ReferenceOr<Schema>],
        value: &Value,
        path: &str,
        request: bool,
        problems: &mut Vec<String>,
    ) {
        let fits = options.iter().any(|s| {
            let mut scratch = Vec::new();
            self.validate(s, value, path, request, &mut scratch);
            scratch.is_empty()
        });
        if !fits {
            problems.push(format!("{path}: matches none of the alternatives"));
        }
    }

    /// The members of an object against its `properties`, `required` and
    /// `additionalProperties`.
    fn validate_object(
        &self,
        object: &ObjectType,
        map: &serde_json::Map<String, Value>,
        path: &str,
        request: bool,
        problems: &mut Vec<String>,
    ) {
        for name in &object.required {
            if !map.contains_key(name) {
                problems.push(format!("{path}: required property {name} is missing"));
            }
        }
        for (name, item) in map {
            let item_path = format!("{path}.{name}");
            match object.properties.get(name) {
                Some(prop) => match self.boxed(prop) {
                    Some(s) => {
                        self.validate_schema(s, item, &item_path, request, problems);
                    }
                    None => problems.push(format!("{item_path}: unresolvable schema")),
                },
                None => match &object.additional_properties {
                    Some(AdditionalProperties::Schema(s)) => {
                        self.validate(s, item, &item_path, request, problems);
                    }
                    Some(AdditionalProperties::Any(false)) => {
                        problems.push(format!("{item_path}: property not allowed"))
                    }
                    _ => {}
                },
            }
        }
    }
}

/// The `*Data` schema of a webhook event type (reference 6.2).
pub fn data_schema(event_type: &str) -> Option<&'static str> {
    Some(match event_type {
        "fs:add_file" => "FsAddFileData",
        "fs:add_folder" => "FsAddFolderData",
        "fs:copy_file" => "FsCopyFileData",
        "fs:copy_folder" => "FsCopyFolderData",
        "fs:move_file" => "FsMoveFileData",
        "fs:move_folder" => "FsMoveFolderData",
        "fs:delete_file" => "FsDeleteFileData",
        "fs:delete_folder" => "FsDeleteFolderData",
        "fs:restore_from_trash" => "FsRestoreFromTrashData",
        "fs:delete_from_trash" => "FsDeleteFromTrashData",
        "fs:lock_file" | "fs:unlock_file" => "FsLockFileData",
        "fs:upload_link" => "FsUploadLinkData",
        "fs:folder_project_activity" => "FsFolderProjectActivityData",
        "link:create" | "link:delete" => "LinkEventData",
        "link:create_download_link" | "link:delete_download_link" => "LinkDownloadLinkData",
        "link:create_upload_link" | "link:delete_upload_link" => "LinkUploadLinkData",
        "comment:set_comment" => "CommentSetCommentData",
        "comment:remove_comment" => "CommentRemoveCommentData",
        "permission:permission_change" => "PermissionChangeData",
        "meta:add_metadata_key" | "meta:delete_metadata_key" => "MetaKeyData",
        "group:create" => "GroupCreateData",
        "group:delete" | "group:rename" => "GroupEventData",
        "group:add_members" | "group:remove_members" => "GroupMembersData",
        "group:add_owner" | "group:remove_owner" => "GroupOwnerData",
        "workflow:created" => "WorkflowCreatedData",
        "workflow:completed" => "WorkflowCompletedData",
        "workflow:approvaltask_approved" | "workflow:approvaltask_rejected" => {
            "WorkflowApprovalTaskData"
        }
        _ => return None,
    })
}

/// The checks of a string schema `s` on `text`: its enumeration, lengths and pattern.
fn check_string(s: &StringType, text: &str, path: &str, problems: &mut Vec<String>) {
    let allowed: Vec<&str> = s.enumeration.iter().flatten().map(String::as_str).collect();
    if !allowed.is_empty() && !allowed.contains(&text) {
        problems.push(format!(
            "{path}: {} is not one of {}",
            shown(text),
            shown_list(&allowed)
        ));
    }
    if let Some(max) = s.max_length
        && text.chars().count() > max
    {
        problems.push(format!("{path}: longer than {max} characters"));
    }
    if let Some(min) = s.min_length
        && text.chars().count() < min
    {
        problems.push(format!("{path}: shorter than {min} characters"));
    }
    if let Some(pattern) = &s.pattern {
        match regress::Regex::new(pattern) {
            Ok(re) if re.find(text).is_none() => problems.push(format!(
                "{path}: {} does not match {}",
                shown(text),
                shown(pattern)
            )),
            Ok(_) => {}
            Err(e) => problems.push(format!("{path}: pattern {}: {e}", shown(pattern))),
        }
    }
}

/// The checks of an integer schema `i` on `n`: its enumeration and range.
fn check_integer(i: &IntegerType, n: i128, path: &str, problems: &mut Vec<String>) {
    let allowed: Vec<i128> = i
        .enumeration
        .iter()
        .flatten()
        .map(|v| i128::from(*v))
        .collect();
    if !allowed.is_empty() && !allowed.contains(&n) {
        problems.push(format!(
            "{path}: {n} is not one of {}",
            allowed
                .iter()
                .map(i128::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if i.minimum.is_some_and(|m| n < i128::from(m)) || i.maximum.is_some_and(|m| n > i128::from(m))
    {
        problems.push(format!("{path}: {n} is out of range"));
    }
}

/// `r` itself, or the component its reference names under `prefix`, found with `defined`
/// (one step: a reference to a reference is not followed), for the responses and headers of
/// the spec.
fn component<'a, T>(
    r: &'a ReferenceOr<T>,
    prefix: &str,
    defined: impl FnOnce(&str) -> Option<&'a ReferenceOr<T>>,
) -> Option<&'a T> {
    match r {
        ReferenceOr::Item(item) => Some(item),
        ReferenceOr::Reference { reference } => {
            let name = reference.strip_prefix(prefix)?;
            match defined(name)? {
                ReferenceOr::Item(item) => Some(item),
                ReferenceOr::Reference { .. } => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exchange(op: &'static str, status: u16, body: Value) -> Exchange {
        Exchange {
            seq: 1,
            at_ms: 0,
            operation: Some(op),
            method: "GET".into(),
            path: "/x".into(),
            query: Vec::new(),
            request_body: Vec::new(),
            request_body_len: 0,
            request_body_truncated: false,
            impersonated_by: None,
            token_user: None,
            request_id: None,
            traceparent: None,
            status,
            response_headers: Vec::new(),
            content_type: (!body.is_null()).then(|| "application/json".into()),
            response_body: if body.is_null() {
                Vec::new()
            } else {
                serde_json::to_vec(&body).unwrap()
            },
            body_truncated: false,
            injected: false,
            fault: false,
        }
    }

    #[test]
    fn the_embedded_spec_has_the_39_operations() {
        assert_eq!(Validator::embedded().operation_ids().len(), 39);
    }

    #[test]
    fn good_replies_pass() {
        let v = Validator::embedded();
        let ok = exchange(
            "whoami",
            200,
            json!({"clientId": "c", "username": "u", "domain": "d", "scopes": ["s"]}),
        );
        assert!(v.check(&ok).is_empty(), "{:?}", v.check(&ok));
        let page = exchange("listEventsV2", 204, Value::Null);
        assert!(v.check(&page).is_empty());
    }

    #[test]
    fn undocumented_status_body_type_enum_and_header_are_caught() {
        let v = Validator::embedded();
        assert!(!v.check(&exchange("whoami", 500, Value::Null)).is_empty());
        assert!(
            !v.check(&exchange("listEventsV2", 204, json!({})))
                .is_empty()
        );
        let wrong_type = exchange("whoami", 200, json!({"username": "u", "scopes": "s"}));
        assert!(v.check(&wrong_type)[0].contains("expected an array"));
        let wrong_enum = exchange(
            "getWebhookStatus",
            200,
            json!({"webhookId": "w1", "status": "paused"}),
        );
        assert!(
            v.check(&wrong_enum)[0].contains("not one of"),
            "{:?}",
            v.check(&wrong_enum)
        );
        let missing = exchange("getWebhookStatus", 200, json!({"status": "enabled"}));
        assert!(
            v.check(&missing)[0].contains("webhookId"),
            "{:?}",
            v.check(&missing)
        );
        let mut header = exchange("whoami", 200, json!({"username": "u"}));
        header
            .response_headers
            .push(("Retry-After".into(), "1".into()));
        assert!(v.check(&header)[0].contains("not documented"));
        let mut throttle = exchange("whoami", 403, Value::Null);
        throttle
            .response_headers
            .push(("Retry-After".into(), "soon".into()));
        assert!(v.check(&throttle)[0].contains("expected an integer"));
    }

    #[test]
    fn a_problem_shows_the_values_it_names_as_a_person_reads_them() {
        let v = Validator::embedded();
        let wrong_enum = exchange(
            "getWebhookStatus",
            200,
            json!({"webhookId": "w1", "status": "on\u{0}\n\""}),
        );
        assert_eq!(
            v.check(&wrong_enum),
            ["$.status: \"on<U+0000><U+000A>\"\" is not one of \"enabled\", \"disabled\""]
        );
        let mut csv = exchange("whoami", 200, Value::Null);
        csv.response_body = b"a,b".to_vec();
        csv.content_type = Some("text/csv".into());
        assert_eq!(
            v.check(&csv),
            ["Content-Type text/csv is not one of \"application/json\""]
        );
    }

    #[test]
    fn deliveries_are_checked_against_the_event_data_schemas() {
        let v = Validator::embedded();
        let user = json!({"id": 1, "displayName": "A", "username": "a", "email": "a@example.com"});
        let event = |timestamp: Value, target_path: Value| {
            json!({"eventId": "e", "domain": "d", "eventType": "fs:add_folder", "timestamp": timestamp,
                   "user": user, "actionSource": "WebUI", "webhookId": "w",
                   "data": {"targetPath": target_path}})
        };
        let good = json!({"data": [event(json!(1), json!("/a"))]});
        assert!(
            v.check_delivery(&good).is_empty(),
            "{:?}",
            v.check_delivery(&good)
        );
        let bad = json!({"data": [event(json!("now"), json!(5))]});
        let problems = v.check_delivery(&bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
        let unknown = json!({"data": [{"eventType": "user:create", "data": {}}]});
        assert!(!v.check_delivery(&unknown).is_empty());
    }

    #[test]
    fn client_tolerances_pass_only_their_fields() {
        let v = Validator::embedded();
        let accepted = |op: &'static str, body: Value| {
            let mut e = exchange(op, 200, json!({}));
            e.request_body = serde_json::to_vec(&body).unwrap();
            v.check(&e)
        };
        let kb = json!({"createdAfter": 1_735_689_600_000_i64, "createdBefore": 1_738_368_000_000_i64, "createdBy": 1001});
        assert!(accepted("listKnowledgeBases", kb).is_empty());
        // Only integers: another type is still reported, and so is another field.
        let problems = accepted(
            "listKnowledgeBases",
            json!({"createdBy": true, "includePrompts": 1}),
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        let mut logins = exchange("createLoginsAudit", 202, json!({"id": "j"}));
        logins.request_body = serde_json::to_vec(&json!({"format": "csv", "date_start": "2025-01-01", "date_end": "2025-01-01", "events": ["logins"], "access_points": ["web", "MOBILE", "ftp"]})).unwrap();
        let problems: Vec<String> = v
            .check(&logins)
            .into_iter()
            .filter(|p| p.contains("accepted an invalid request"))
            .collect();
        assert!(problems.is_empty(), "{problems:?}");
        logins.request_body = serde_json::to_vec(&json!({"format": "csv", "date_start": "2025-01-01", "date_end": "2025-01-01", "events": ["LOGINS"], "access_points": ["desktop"]})).unwrap();
        let problems: Vec<String> = v
            .check(&logins)
            .into_iter()
            .filter(|p| p.contains("accepted an invalid request"))
            .collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn accepted_requests_must_match_their_schema() {
        let v = Validator::embedded();
        let mut accepted = exchange(
            "createWebhook",
            201,
            json!({"webhookId": "w", "status": "enabled"}),
        );
        accepted.request_body = br#"{"eventType": []}"#.to_vec();
        let problems = v.check(&accepted);
        assert!(problems.iter().any(|p| p.contains("required property url")));
        assert!(problems.iter().any(|p| p.contains("fewer than 1 items")));
    }

    #[test]
    fn a_files_audit_request_needs_folders_or_file() {
        let v = Validator::embedded();
        let accepted = |body: Value| {
            let mut e = exchange("createFilesAudit", 202, json!({"id": "j"}));
            e.request_body = serde_json::to_vec(&body).unwrap();
            v.check(&e)
                .into_iter()
                .filter(|p| p.contains("accepted an invalid request"))
                .collect::<Vec<_>>()
        };
        let base = json!({"format": "csv", "date_start": "2025-01-01", "date_end": "2025-01-02"});
        let with = |name: &str, value: Value| {
            let mut body = base.clone();
            body[name] = value;
            body
        };
        assert!(accepted(with("folders", json!(["/Shared"]))).is_empty());
        assert!(accepted(with("file", json!("report*.pdf"))).is_empty());
        let neither = accepted(base.clone());
        assert_eq!(neither.len(), 1, "{neither:?}");
        assert!(neither[0].contains("matches none of the alternatives"));
        // The properties are still checked beside the alternatives.
        assert_eq!(accepted(with("folders", json!(["relative"]))).len(), 1);
    }
}
