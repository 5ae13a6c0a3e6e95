//! `audit_kinds` (code → code): appends `pub mod audit_kinds`, one table of the audit report
//! kinds read from the spec, so the SDK, the CLI and the sandbox read the kinds, their
//! operations, their filters and their date precision from one place instead of writing them
//! again.
//!
//! | fact | where the spec says it |
//! |---|---|
//! | the kinds | the `AuditReportKind` enum; each has exactly one `POST /v1/audit/<kind>` |
//! | a kind's operation and summary | that operation |
//! | its filters (name, shape, values, help, required) | the properties of its request body schema besides `format`, `date_start` and `date_end`: the type, the `enum` (or `x-pubapi-spellings`) of the value or of the items, the first sentence of the description, `required` |
//! | its date precision | `x-pubapi-date-precision: date \| date-time` on the operation (reference 4.7 says which kinds ignore the time portion of a date; a JSON schema cannot say it) |
//! | its columns (the one schema of its rows in the CLI's data formats) | `x-pubapi-columns` on its event schema `<Kind>AuditEvent`: a list in the platform's CSV order of `{field, csv, type}`, one per property: the JSON field, the platform's CSV header it is shown under (none when the CSV leaves it out), the type when the property's JSON type does not say it (`timestamp` for a time text, the type of a field whose JSON type is not shown); for the kinds without an event schema, `x-pubapi-other-kinds-columns` on `AuditReport`, each with its type |
//!
//! A kind without its operation, an operation under `/v1/audit/<kind>` whose kind is not in
//! the enum, an operation without a valid precision, or an event schema whose columns miss a
//! property, name one it does not have, or leave a column's type unsaid is refused with
//! [`CodegenError::Unsupported`], so a new kind or field cannot fall into a default.
//!
//! [`item`] reads the kinds (`collect`, each `kind` with its `filter`s) and writes the module:
//! the fixed `filter_types` and `kind_type`, one `row` of `ALL` per kind, and the lookups.

use crate::CodegenError;
use crate::walk::schema_ref_name;
use openapiv3::{OpenAPI, ReferenceOr, Schema, SchemaKind, Type};
use quote::quote;

/// The extension on each kind's creating operation saying how precisely it reads its dates.
pub const DATE_PRECISION: &str = "x-pubapi-date-precision";
/// The values [`DATE_PRECISION`] takes: whole days, or instants.
pub const PRECISIONS: [&str; 2] = ["date", "date-time"];
/// The schema listing the kinds.
pub const KIND_SCHEMA: &str = "AuditReportKind";
/// The path below which each kind's report is created.
const PREFIX: &str = "/v1/audit/";
/// The request fields every kind has: not filters.
const COMMON: [&str; 3] = ["format", "date_start", "date_end"];
/// The extension on an event schema listing its columns.
pub const COLUMNS: &str = "x-pubapi-columns";
/// The extension on the finished report's schema (`AuditReport`) listing the columns of the kinds without an event schema.
pub const OTHER_COLUMNS: &str = "x-pubapi-other-kinds-columns";
/// The schema of a finished JSON report.
const REPORT_SCHEMA: &str = "AuditReport";
/// The column types a column's `type` takes.
pub const COLUMN_TYPES: [&str; 5] = ["text", "integer", "number", "boolean", "timestamp"];

/// One kind, as the spec says it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kind {
    name: String,
    operation_id: String,
    summary: String,
    request_schema: String,
    whole_days: bool,
    filters: Vec<Filter>,
    columns: Vec<Column>,
}

/// One column of a kind's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    /// The column's name: the field's in snake case.
    name: String,
    /// The JSON field, as the platform sends it.
    field: String,
    /// The platform's CSV header it is shown under.
    csv: Option<String>,
    /// One of [`COLUMN_TYPES`].
    column_type: &'static str,
}

/// One filter of a kind's request body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Filter {
    name: String,
    shape: Shape,
    values: Vec<String>,
    help: String,
    required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    List { integers: bool },
    Flag,
    Integer,
    Text,
}

fn refused(subject: &str, problem: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported {
        operation: subject.to_string(),
        problem: problem.into(),
    }
}

/// Builds the `audit_kinds` module.
///
/// # Errors
/// [`CodegenError::Unsupported`] when the kinds of the enum and the operations disagree, or an
/// operation's [`DATE_PRECISION`] or request body is missing or not understood.
pub fn item(spec: &OpenAPI) -> Result<syn::Item, CodegenError> {
    let kinds = collect(spec)?;
    let rows = kinds.iter().map(row);
    let arms = kinds.iter().enumerate().map(|(at, kind)| {
        let variant = variant(&kind.name);
        let at = proc_macro2::Literal::usize_unsuffixed(at);
        quote! { AuditReportKind::#variant => &ALL[#at], }
    });
    let filter_types = filter_types();
    let kind_type = kind_type();
    let tokens = quote! {
        /// The audit report kinds of `spec/openapi.yaml` (the `AuditReportKind` enum, each
        /// created by one `POST /v1/audit/<kind>`): their operations, their filters and how
        /// precisely each reads its dates (`x-pubapi-date-precision`), so code that needs
        /// them reads this table instead of keeping a list of its own.
        #[cfg(feature = "audit")]
        pub mod audit_kinds {
            use crate::types::AuditReportKind;

            #filter_types

            #kind_type

            /// Every kind, in the spec's order.
            pub const ALL: &[AuditKind] = &[#(#rows)*];

            /// The row of `kind`.
            pub fn of(kind: AuditReportKind) -> &'static AuditKind {
                match kind {
                    #(#arms)*
                }
            }

            /// The kind named `name` (as in the paths), if there is one.
            pub fn by_name(name: &str) -> Option<&'static AuditKind> {
                ALL.iter().find(|k| k.name == name)
            }

            /// The kind whose reports `operation_id` creates, if it creates any.
            pub fn by_operation(operation_id: &str) -> Option<&'static AuditKind> {
                ALL.iter().find(|k| k.operation_id == operation_id)
            }
        }
    };
    syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))
}

/// The fixed types a kind's dates and filters are described in: `DatePrecision`,
/// `FilterShape` and `Filter`.
fn filter_types() -> proc_macro2::TokenStream {
    quote! {
        /// How precisely a report kind reads the dates of its period (reference 4.7).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum DatePrecision {
            /// Whole days: the time portion of a date is ignored.
            Date,
            /// Instants: a timestamp is that instant, a plain date its midnight (UTC).
            DateTime,
        }

        /// The shape of a filter's value in the request body.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FilterShape {
            /// An array of strings, or of integers.
            List {
                /// Whether the items are integers.
                integers: bool,
            },
            /// A boolean.
            Flag,
            /// An integer.
            Integer,
            /// A string.
            Text,
        }

        /// The type of a column in the CLI's data formats (Parquet, JSON lines, CSV in the
        /// kind's schema).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ColumnType {
            /// UTF-8 text.
            Text,
            /// A 64-bit signed integer.
            Integer,
            /// A 64-bit float.
            Number,
            /// A boolean.
            Boolean,
            /// An instant, in UTC (the event's time text, ISO 8601).
            Timestamp,
        }

        /// One column of a kind's rows (`x-pubapi-columns` on its event schema).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Column {
            /// The column's name: the field's in snake case (`ip_address`).
            pub name: &'static str,
            /// The JSON field it is read from, as the platform sends it (`ipAddress`).
            pub field: &'static str,
            /// The header of the platform's CSV it is shown under (`IP Address`); `None`
            /// when the platform's CSV leaves the field out.
            pub csv: Option<&'static str>,
            /// Its type.
            pub column_type: ColumnType,
        }

        /// One filter of a kind: a field of its request body besides `format`,
        /// `date_start` and `date_end`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Filter {
            /// The field's name, e.g. `access_points`.
            pub name: &'static str,
            /// The shape of its value.
            pub shape: FilterShape,
            /// The values the spec lists for it (for a list, for its items): its
            /// `enum`, or the reference's spellings of a value matched in any letter
            /// case; empty when any value goes.
            pub values: &'static [&'static str],
            /// The first sentence of its description.
            pub help: &'static str,
            /// Whether the request must have it.
            pub required: bool,
        }
    }
}

/// The fixed `AuditKind` row type.
fn kind_type() -> proc_macro2::TokenStream {
    quote! {
        /// One audit report kind.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct AuditKind {
            /// The kind.
            pub kind: AuditReportKind,
            /// Its name, as in the paths: `workgroup-settings`.
            pub name: &'static str,
            /// The operationId that creates its reports: `createWorkgroupSettingsAudit`.
            pub operation_id: &'static str,
            /// The operation's summary.
            pub summary: &'static str,
            /// The component schema of its request body.
            pub request_schema: &'static str,
            /// How precisely it reads its dates (`x-pubapi-date-precision`).
            pub date_precision: DatePrecision,
            /// Its filters, in the spec's order.
            pub filters: &'static [Filter],
            /// The columns of its rows, in the platform's CSV order, then the fields its
            /// CSV leaves out.
            pub columns: &'static [Column],
        }

        impl AuditKind {
            /// Whether the API ignores the time portion of this kind's dates.
            pub fn ignores_time(&self) -> bool {
                self.date_precision == DatePrecision::Date
            }
        }
    }
}

/// The `AuditReportKind` variant of a kind's name (`workgroup-settings` → `WorkgroupSettings`).
fn variant(name: &str) -> syn::Ident {
    let name = heck::ToUpperCamelCase::to_upper_camel_case(name);
    syn::Ident::new(&name, proc_macro2::Span::call_site())
}

/// A kind's `AuditKind { .. }` literal in `ALL`, its filters written out.
fn row(kind: &Kind) -> proc_macro2::TokenStream {
    let Kind {
        name,
        operation_id,
        summary,
        request_schema,
        ..
    } = kind;
    let variant = variant(name);
    let precision = if kind.whole_days {
        quote! { DatePrecision::Date }
    } else {
        quote! { DatePrecision::DateTime }
    };
    let filters = kind.filters.iter().map(|f| {
        let Filter {
            name,
            values,
            help,
            required,
            ..
        } = f;
        let shape = match f.shape {
            Shape::List { integers } => quote! { FilterShape::List { integers: #integers } },
            Shape::Flag => quote! { FilterShape::Flag },
            Shape::Integer => quote! { FilterShape::Integer },
            Shape::Text => quote! { FilterShape::Text },
        };
        quote! {
            Filter {
                name: #name,
                shape: #shape,
                values: &[#(#values),*],
                help: #help,
                required: #required,
            },
        }
    });
    let columns = kind.columns.iter().map(|c| {
        let Column {
            name, field, csv, ..
        } = c;
        let csv = match csv {
            Some(header) => quote! { Some(#header) },
            None => quote! { None },
        };
        let column_type = syn::Ident::new(
            &heck::ToUpperCamelCase::to_upper_camel_case(c.column_type),
            proc_macro2::Span::call_site(),
        );
        quote! {
            Column {
                name: #name,
                field: #field,
                csv: #csv,
                column_type: ColumnType::#column_type,
            },
        }
    });
    quote! {
        AuditKind {
            kind: AuditReportKind::#variant,
            name: #name,
            operation_id: #operation_id,
            summary: #summary,
            request_schema: #request_schema,
            date_precision: #precision,
            filters: &[#(#filters)*],
            columns: &[#(#columns)*],
        },
    }
}

/// Every kind, in the order of their operations in the spec.
fn collect(spec: &OpenAPI) -> Result<Vec<Kind>, CodegenError> {
    let names = component(spec, KIND_SCHEMA)
        .map(values)
        .filter(|names| !names.is_empty())
        .ok_or_else(|| refused(KIND_SCHEMA, "no such string enum in components.schemas"))?;
    let mut kinds = Vec::new();
    for op in crate::walk::operations(spec) {
        let Some(name) = op.path.strip_prefix(PREFIX) else {
            continue;
        };
        if op.method != "post" || name.contains(['/', '{']) {
            continue;
        }
        let id = op.operation.operation_id.clone().unwrap_or_default();
        if !names.iter().any(|n| n == name) {
            return Err(refused(
                &id,
                format!("creates `{name}` reports, which {KIND_SCHEMA} does not list"),
            ));
        }
        kinds.push(kind(spec, name, &id, op.operation)?);
    }
    for name in &names {
        let count = kinds.iter().filter(|k| &k.name == name).count();
        if count != 1 {
            return Err(refused(
                KIND_SCHEMA,
                format!("`{name}` has {count} operations `POST {PREFIX}{name}`, not one"),
            ));
        }
    }
    Ok(kinds)
}

fn kind(
    spec: &OpenAPI,
    name: &str,
    id: &str,
    operation: &openapiv3::Operation,
) -> Result<Kind, CodegenError> {
    let precision = operation.extensions.get(DATE_PRECISION);
    let whole_days = match precision.and_then(|p| p.as_str()) {
        Some("date") => true,
        Some("date-time") => false,
        _ => {
            return Err(refused(
                id,
                format!("{DATE_PRECISION} is {precision:?}, not one of {PRECISIONS:?}"),
            ));
        }
    };
    let reference = match &operation.request_body {
        Some(ReferenceOr::Item(body)) => body
            .content
            .get("application/json")
            .and_then(|media| media.schema.as_ref()),
        _ => None,
    };
    let request_schema = match reference {
        Some(ReferenceOr::Reference { reference }) => schema_ref_name(reference),
        _ => None,
    }
    .ok_or_else(|| refused(id, "its JSON request body is not a component schema"))?;
    let body = component(spec, request_schema)
        .ok_or_else(|| refused(id, format!("{request_schema} is not in components.schemas")))?;
    // An object, or (with an `anyOf` of `required` lists, as files) a schema of any kind
    // with the object's properties.
    let (properties, required) = match &body.schema_kind {
        SchemaKind::Type(Type::Object(object)) => (&object.properties, &object.required),
        SchemaKind::Any(any) if !any.properties.is_empty() => (&any.properties, &any.required),
        _ => return Err(refused(id, format!("{request_schema} is not an object"))),
    };
    let filters = properties
        .iter()
        .filter(|(property, _)| !COMMON.contains(&property.as_str()))
        .map(|(property, field)| {
            let field = resolve_boxed(spec, field);
            filter(spec, property, field, required.contains(property))
        })
        .collect();
    Ok(Kind {
        name: name.to_string(),
        operation_id: id.to_string(),
        summary: operation
            .summary
            .clone()
            .unwrap_or_else(|| name.to_string()),
        request_schema: request_schema.to_string(),
        whole_days,
        filters,
        columns: columns(spec, name)?,
    })
}

/// The columns of kind `name`: its event schema's `x-pubapi-columns`, or (without one)
/// `AuditReport`'s `x-pubapi-other-kinds-columns`.
fn columns(spec: &OpenAPI, name: &str) -> Result<Vec<Column>, CodegenError> {
    let event = format!("{}AuditEvent", variant(name));
    let Some(schema) = component(spec, &event) else {
        let report = component(spec, REPORT_SCHEMA)
            .ok_or_else(|| refused(REPORT_SCHEMA, "no such schema in components.schemas"))?;
        let subject = format!("{REPORT_SCHEMA} {OTHER_COLUMNS}");
        return listed(&subject, report.schema_data.extensions.get(OTHER_COLUMNS))?
            .into_iter()
            .map(|(field, csv, column_type)| {
                let column_type = column_type
                    .ok_or_else(|| refused(&subject, format!("`{field}` has no type")))?;
                Ok(column(field, csv, column_type))
            })
            .collect();
    };
    let subject = format!("{event} {COLUMNS}");
    let SchemaKind::Type(Type::Object(object)) = &schema.schema_kind else {
        return Err(refused(&event, "an event schema is an object"));
    };
    let entries = listed(&subject, schema.schema_data.extensions.get(COLUMNS))?;
    let mut columns = Vec::new();
    for (field, csv, said) in entries {
        let property = object
            .properties
            .get(&field)
            .ok_or_else(|| refused(&subject, format!("`{field}` is not a property")))?;
        let shown = match resolve_boxed(spec, property).map(|p| &p.schema_kind) {
            Some(SchemaKind::Type(Type::String(_))) => Some("text"),
            Some(SchemaKind::Type(Type::Integer(_))) => Some("integer"),
            Some(SchemaKind::Type(Type::Number(_))) => Some("number"),
            Some(SchemaKind::Type(Type::Boolean(_))) => Some("boolean"),
            _ => None,
        };
        let column_type = match (shown, said) {
            (None, None) => {
                return Err(refused(
                    &subject,
                    format!("`{field}` has no JSON type and no column type"),
                ));
            }
            (Some(shown), None) => shown,
            (None, Some(said)) => said,
            (Some("text"), Some(said @ ("text" | "timestamp"))) => said,
            (Some(shown), Some(said)) if shown == said => said,
            (Some(shown), Some(said)) => {
                return Err(refused(
                    &subject,
                    format!("`{field}` is JSON {shown}, not a {said} column"),
                ));
            }
        };
        columns.push(column(field, csv, column_type));
    }
    for property in object.properties.keys() {
        if !columns.iter().any(|c| &c.field == property) {
            return Err(refused(
                &subject,
                format!("the property `{property}` has no column"),
            ));
        }
    }
    Ok(columns)
}

fn column(field: String, csv: Option<String>, column_type: &'static str) -> Column {
    Column {
        name: heck::ToSnakeCase::to_snake_case(field.as_str()),
        field,
        csv,
        column_type,
    }
}

/// The `{field, csv, type}` entries of a columns extension; each field and name once.
#[allow(clippy::type_complexity)]
fn listed(
    subject: &str,
    extension: Option<&serde_json::Value>,
) -> Result<Vec<(String, Option<String>, Option<&'static str>)>, CodegenError> {
    let entries = extension
        .and_then(|v| v.as_array())
        .filter(|entries| !entries.is_empty())
        .ok_or_else(|| refused(subject, "missing, or not a list of columns"))?;
    let mut out: Vec<(String, Option<String>, Option<&'static str>)> = Vec::new();
    for entry in entries {
        let text = |key: &str| entry.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let field =
            text("field").ok_or_else(|| refused(subject, format!("{entry} has no `field`")))?;
        let column_type =
            match text("type") {
                None => None,
                Some(said) => Some(COLUMN_TYPES.into_iter().find(|t| *t == said).ok_or_else(
                    || {
                        refused(
                            subject,
                            format!("`{field}`: type `{said}` is not one of {COLUMN_TYPES:?}"),
                        )
                    },
                )?),
            };
        let name = heck::ToSnakeCase::to_snake_case(field.as_str());
        if out
            .iter()
            .any(|(f, ..)| heck::ToSnakeCase::to_snake_case(f.as_str()) == name)
        {
            return Err(refused(subject, format!("`{field}` is listed twice")));
        }
        out.push((field, text("csv"), column_type));
    }
    Ok(out)
}

fn filter(spec: &OpenAPI, name: &str, field: Option<&Schema>, required: bool) -> Filter {
    let (shape, values) = match field.map(|f| &f.schema_kind) {
        Some(SchemaKind::Type(Type::Array(array))) => {
            let items = array.items.as_ref().and_then(|i| resolve_boxed(spec, i));
            let integers = matches!(
                items.map(|i| &i.schema_kind),
                Some(SchemaKind::Type(Type::Integer(_)))
            );
            let values = items.map(values).unwrap_or_default();
            (Shape::List { integers }, values)
        }
        Some(SchemaKind::Type(Type::Boolean(_))) => (Shape::Flag, Vec::new()),
        Some(SchemaKind::Type(Type::Integer(_))) => (Shape::Integer, Vec::new()),
        _ => (Shape::Text, field.map(values).unwrap_or_default()),
    };
    let description = field.and_then(|f| f.schema_data.description.as_deref());
    Filter {
        name: name.to_string(),
        shape,
        values,
        help: first_sentence(description.unwrap_or("")),
        required,
    }
}

fn component<'a>(spec: &'a OpenAPI, name: &str) -> Option<&'a Schema> {
    spec.components
        .as_ref()?
        .schemas
        .get(name)
        .and_then(ReferenceOr::as_item)
}

fn resolve_boxed<'a>(
    spec: &'a OpenAPI,
    schema: &'a ReferenceOr<Box<Schema>>,
) -> Option<&'a Schema> {
    match schema {
        ReferenceOr::Item(schema) => Some(schema),
        ReferenceOr::Reference { reference } => component(spec, schema_ref_name(reference)?),
    }
}

/// The values a string schema lists: its `enum`, or `x-pubapi-spellings` for a value matched
/// in any letter case.
fn values(schema: &Schema) -> Vec<String> {
    if let SchemaKind::Type(Type::String(string)) = &schema.schema_kind
        && !string.enumeration.is_empty()
    {
        return string.enumeration.iter().flatten().cloned().collect();
    }
    schema
        .schema_data
        .extensions
        .get(super::spelled_enums::SPELLINGS)
        .and_then(|v| v.as_array())
        .map(|values| {
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The first sentence of `text`, its whitespace made single spaces.
fn first_sentence(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.find(". ") {
        Some(end) => text[..=end].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{self, assert_holds};

    const KINDS: &str = "components:
  schemas:
    AuditReportKind: {type: string, enum: [logins, files]}
    AccessPoint: {type: string, description: Access point. Any case., x-pubapi-spellings: [Web, FTP]}
    LoginsAuditRequest:
      type: object
      required: [format, date_start, date_end, events]
      properties:
        format: {type: string}
        date_start: {type: string}
        date_end: {type: string}
        events: {type: array, description: Kinds to report., items: {type: string, enum: [logins, logouts]}}
        access_points: {type: array, items: {$ref: '#/components/schemas/AccessPoint'}}
        suppress_emails: {type: boolean}
        ids: {type: array, items: {type: integer}}
    FilesAuditRequest:
      type: object
      anyOf: [{required: [file]}]
      properties:
        file: {type: string, description: 'A path.  Exact.'}
    AuditReport:
      type: object
      x-pubapi-other-kinds-columns:
        - {field: time, csv: Time, type: timestamp}
        - {field: user_id, type: integer}
    LoginsAuditEvent:
      type: object
      x-pubapi-columns:
        - {field: ipAddress, csv: IP Address}
        - {field: time, csv: Time, type: timestamp}
        - {field: user_id}
        - {field: info, csv: Info, type: text}
      properties:
        user_id: {type: integer}
        ipAddress: {type: string}
        time: {type: string}
        info: {description: not shown}
";

    fn op(id: &str, schema: &str, precision: &str) -> String {
        format!(
            "    post:
      operationId: {id}
      summary: Create {id}
      {precision}
      requestBody:
        content:
          application/json:
            schema: {{$ref: '#/components/schemas/{schema}'}}
      responses: {{'202': {{description: ok}}}}
"
        )
    }

    fn spec_with(logins: &str, files: &str) -> OpenAPI {
        fixture::spec(&format!(
            "paths:\n  /v1/audit/logins:\n{logins}  /v1/audit/files:\n{files}{KINDS}"
        ))
    }

    #[test]
    fn each_kind_gets_its_operation_precision_and_filters() {
        let spec = spec_with(
            &op(
                "createLoginsAudit",
                "LoginsAuditRequest",
                "x-pubapi-date-precision: date-time",
            ),
            &op(
                "createFilesAudit",
                "FilesAuditRequest",
                "x-pubapi-date-precision: date",
            ),
        );
        let kinds = collect(&spec).unwrap();
        assert_eq!(kinds.len(), 2);
        let (logins, files) = (&kinds[0], &kinds[1]);
        assert_eq!(logins.operation_id, "createLoginsAudit");
        assert_eq!(logins.summary, "Create createLoginsAudit");
        assert!(!logins.whole_days);
        assert!(files.whole_days);
        let names: Vec<&str> = logins.filters.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["events", "access_points", "suppress_emails", "ids"]);
        let events = &logins.filters[0];
        assert!(events.required);
        assert_eq!(events.values, ["logins", "logouts"]);
        assert_eq!(events.help, "Kinds to report.");
        assert_eq!(events.shape, Shape::List { integers: false });
        let access = &logins.filters[1];
        assert_eq!(access.values, ["Web", "FTP"]);
        assert!(!access.required);
        assert_eq!(logins.filters[2].shape, Shape::Flag);
        assert_eq!(logins.filters[3].shape, Shape::List { integers: true });
        assert_eq!(files.filters[0].shape, Shape::Text);
        assert_eq!(files.filters[0].help, "A path.");
        let code = prettyplease::unparse(&syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: vec![item(&spec).unwrap()],
        });
        assert_holds(
            &code,
            &[
                "AuditReportKind::Files => &ALL[1]",
                "date_precision: DatePrecision::Date,",
            ],
        );
    }

    #[test]
    fn a_kinds_columns_are_its_event_schemas_in_csv_order_or_the_other_kinds() {
        let kinds = collect(&two_kinds()).unwrap();
        let columns = |kind: &Kind| -> Vec<(String, String, Option<String>, &'static str)> {
            kind.columns
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        c.field.clone(),
                        c.csv.clone(),
                        c.column_type,
                    )
                })
                .collect()
        };
        let text = |s: &str| s.to_string();
        assert_eq!(
            columns(&kinds[0]),
            [
                (
                    text("ip_address"),
                    text("ipAddress"),
                    Some(text("IP Address")),
                    "text"
                ),
                (text("time"), text("time"), Some(text("Time")), "timestamp"),
                (text("user_id"), text("user_id"), None, "integer"),
                (text("info"), text("info"), Some(text("Info")), "text"),
            ]
        );
        assert_eq!(
            columns(&kinds[1]),
            [
                (text("time"), text("time"), Some(text("Time")), "timestamp"),
                (text("user_id"), text("user_id"), None, "integer"),
            ],
            "files has no event schema in the fixture: the other kinds' columns"
        );
        let code = prettyplease::unparse(&syn::File {
            shebang: None,
            attrs: Vec::new(),
            items: vec![item(&two_kinds()).unwrap()],
        });
        assert_holds(
            &code,
            &[
                "csv: Some(\"IP Address\")",
                "column_type: ColumnType::Timestamp",
            ],
        );
    }

    #[test]
    fn event_columns_that_miss_or_invent_a_property_or_leave_a_type_unsaid_are_refused() {
        let logins_columns = "      x-pubapi-columns:
        - {field: ipAddress, csv: IP Address}
        - {field: time, csv: Time, type: timestamp}
        - {field: user_id}
        - {field: info, csv: Info, type: text}
";
        let cases = [
            (
                "        - {field: user_id}\n",
                "",
                "the property `user_id` has no column",
            ),
            (
                "        - {field: user_id}\n",
                "        - {field: user_id}\n        - {field: nope}\n",
                "`nope` is not a property",
            ),
            (
                "        - {field: info, csv: Info, type: text}\n",
                "        - {field: info, csv: Info}\n",
                "`info` has no JSON type",
            ),
            (
                "        - {field: user_id}\n",
                "        - {field: user_id, type: timestamp}\n",
                "`user_id` is JSON integer, not a timestamp column",
            ),
            (
                "        - {field: user_id}\n",
                "        - {field: user_id}\n        - {field: userId}\n",
                "`userId` is listed twice",
            ),
        ];
        for (from, to, says) in cases {
            assert!(logins_columns.contains(from));
            let spec = spec_text().replace(logins_columns, &logins_columns.replace(from, to));
            match collect(&fixture::spec(&spec)) {
                Err(CodegenError::Unsupported { problem, .. }) => {
                    assert!(problem.contains(says), "{problem} / {says}")
                }
                other => panic!("{says}: {other:?}"),
            }
        }
    }

    fn spec_text() -> String {
        format!(
            "paths:\n  /v1/audit/logins:\n{}  /v1/audit/files:\n{}{KINDS}",
            op(
                "createLoginsAudit",
                "LoginsAuditRequest",
                "x-pubapi-date-precision: date-time"
            ),
            op(
                "createFilesAudit",
                "FilesAuditRequest",
                "x-pubapi-date-precision: date"
            ),
        )
    }

    fn two_kinds() -> OpenAPI {
        fixture::spec(&spec_text())
    }

    #[test]
    fn a_kind_without_precision_without_operation_or_outside_the_enum_is_refused() {
        let logins = op(
            "createLoginsAudit",
            "LoginsAuditRequest",
            "x-pubapi-date-precision: date-time",
        );
        let refusals = [
            spec_with(&logins, &op("createFilesAudit", "FilesAuditRequest", "")),
            spec_with(
                &logins,
                &op(
                    "createFilesAudit",
                    "FilesAuditRequest",
                    "x-pubapi-date-precision: day",
                ),
            ),
            fixture::spec(&format!("paths:\n  /v1/audit/logins:\n{logins}{KINDS}")),
            fixture::spec(&format!(
                "paths:\n  /v1/audit/logins:\n{logins}  /v1/audit/files:\n{files}  /v1/audit/other:\n{other}{KINDS}",
                files = op(
                    "createFilesAudit",
                    "FilesAuditRequest",
                    "x-pubapi-date-precision: date"
                ),
                other = op(
                    "createOtherAudit",
                    "FilesAuditRequest",
                    "x-pubapi-date-precision: date"
                ),
            )),
        ];
        for (at, spec) in refusals.iter().enumerate() {
            assert!(
                matches!(collect(spec), Err(CodegenError::Unsupported { .. })),
                "case {at}"
            );
        }
    }

    #[test]
    fn the_jobs_and_reports_paths_are_not_kinds() {
        let mut text = format!(
            "paths:\n  /v1/audit/logins:\n{}  /v1/audit/files:\n{}",
            op(
                "createLoginsAudit",
                "LoginsAuditRequest",
                "x-pubapi-date-precision: date-time"
            ),
            op(
                "createFilesAudit",
                "FilesAuditRequest",
                "x-pubapi-date-precision: date"
            ),
        );
        text.push_str("  /v1/audit/{type}/{id}:\n    delete:\n      operationId: deleteAuditReport\n      responses: {'204': {description: gone}}\n");
        text.push_str(KINDS);
        assert_eq!(collect(&fixture::spec(&text)).unwrap().len(), 2);
    }
}
