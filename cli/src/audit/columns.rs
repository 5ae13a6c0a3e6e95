//! One typed schema per report kind, for the formats data tools load (Parquet): a column per
//! field of the kind's event in the spec (`pubapi_sdk::types::<Kind>AuditEvent`, read through
//! its JSON Schema), named in snake case, with the name the platform sends kept beside it
//! (`ipAddress`); then `extra`, the JSON object of whatever else an event holds, so nothing
//! the platform sent is lost.
//!
//! Types: the spec's strings are text, its integers and numbers are 64-bit integers and
//! floats, its booleans booleans. The time of an event (`time`, `date_and_time`) is a UTC
//! timestamp (microseconds). A field whose JSON type the reference does not show is text (the
//! value's JSON), except an id (`user_id`, `actor_id`, …), which is an integer. A value that
//! does not fit its column (text in an integer column, a time that does not parse) is null
//! there and kept in `extra`. The kinds whose events the reference does not show (workflows,
//! quality documents, eTMF, …) have the time column and `extra`.

use pubapi_sdk::types::{self, AuditReportKind};
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// UTF-8 text.
    Text,
    /// A 64-bit signed integer.
    Integer,
    /// A 64-bit float.
    Number,
    /// A boolean.
    Boolean,
    /// Microseconds since the epoch, UTC.
    Timestamp,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name: the field's name in snake case (`ip_address`).
    pub name: String,
    /// The field's name as the platform sends it (`ipAddress`).
    pub wire: String,
    /// Its type.
    pub kind: ColumnType,
}

/// The columns of one report kind; `extra` follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSchema {
    /// The report kind.
    pub kind: AuditReportKind,
    /// The columns, in the spec's order of the event's fields (alphabetical).
    pub columns: Vec<Column>,
}

/// The name of the last column: the JSON object of an event's other fields.
pub const EXTRA: &str = "extra";

/// A cell of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// No value.
    Null,
    /// Text.
    Text(String),
    /// An integer.
    Integer(i64),
    /// A float.
    Number(f64),
    /// A boolean.
    Boolean(bool),
    /// Microseconds since the epoch, UTC.
    Timestamp(i64),
}

/// `ipAddress` → `ip_address`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (at, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if at > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a field holds the event's time.
fn is_time(name: &str) -> bool {
    matches!(name, "time" | "date_and_time" | "dateAndTime")
        || name.ends_with("_time")
        || name.ends_with("_at")
}

/// Whether a field is an id (an integer wherever the platform's clients show one).
fn is_id(name: &str) -> bool {
    name.ends_with("_id") || name.ends_with("Id")
}

/// The columns of an event type, from its JSON Schema.
fn columns_of<T: JsonSchema>() -> Vec<Column> {
    let schema = schemars::schema_for!(T);
    let Ok(Value::Object(root)) = serde_json::to_value(&schema) else {
        return Vec::new();
    };
    let Some(Value::Object(properties)) = root.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(wire, property)| {
            let json_type = match property.get("type") {
                Some(Value::String(t)) => Some(t.as_str()),
                Some(Value::Array(types)) => types
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|t| *t != "null"),
                _ => None,
            };
            let kind = match json_type {
                _ if is_time(wire) => ColumnType::Timestamp,
                Some("integer") => ColumnType::Integer,
                Some("number") => ColumnType::Number,
                Some("boolean") => ColumnType::Boolean,
                None if is_id(wire) => ColumnType::Integer,
                _ => ColumnType::Text,
            };
            Column {
                name: snake_case(wire),
                wire: wire.clone(),
                kind,
            }
        })
        .collect()
}

/// The schema of `kind`'s rows.
pub fn schema(kind: AuditReportKind) -> RowSchema {
    let columns = match kind {
        AuditReportKind::Logins => columns_of::<types::LoginsAuditEvent>(),
        AuditReportKind::Files => columns_of::<types::FilesAuditEvent>(),
        AuditReportKind::Permissions => columns_of::<types::PermissionsAuditEvent>(),
        AuditReportKind::Users => columns_of::<types::UsersAuditEvent>(),
        AuditReportKind::Groups => columns_of::<types::GroupsAuditEvent>(),
        AuditReportKind::WorkgroupSettings => columns_of::<types::WorkgroupSettingsAuditEvent>(),
        // The reference shows no event of these kinds: their time, and the rest as sent.
        AuditReportKind::Workflows
        | AuditReportKind::WorkflowTemplates
        | AuditReportKind::QualityDocs
        | AuditReportKind::QualityDocsCategories
        | AuditReportKind::QualityDocsCourses
        | AuditReportKind::Etmf
        | AuditReportKind::SnapshotRestore
        | AuditReportKind::UploadRequests => vec![Column {
            name: "time".into(),
            wire: "time".into(),
            kind: ColumnType::Timestamp,
        }],
    };
    RowSchema { kind, columns }
}

/// Microseconds since the epoch of an RFC 3339 time (`2026-12-04T01:26:23Z`).
fn micros(text: &str) -> Option<i64> {
    let at: pubapi_sdk_ext::jiff::Timestamp = text.parse().ok()?;
    Some(at.as_microsecond())
}

impl RowSchema {
    /// An event's cells, one per column and then `extra` (text, or null when nothing is left).
    pub fn cells(&self, mut event: Map<String, Value>) -> Vec<Cell> {
        let mut cells = Vec::with_capacity(self.columns.len() + 1);
        for column in &self.columns {
            let Some(value) = event.remove(&column.wire) else {
                cells.push(Cell::Null);
                continue;
            };
            // Text is moved out of the event, not copied.
            let cell = match (column.kind, value) {
                (_, Value::Null) => Ok(Cell::Null),
                (ColumnType::Text, Value::String(text)) => Ok(Cell::Text(text)),
                (ColumnType::Text, other) => Ok(Cell::Text(other.to_string())),
                (ColumnType::Integer, Value::Number(n)) => {
                    n.as_i64().map(Cell::Integer).ok_or(Value::Number(n))
                }
                (ColumnType::Number, Value::Number(n)) => {
                    n.as_f64().map(Cell::Number).ok_or(Value::Number(n))
                }
                (ColumnType::Boolean, Value::Bool(b)) => Ok(Cell::Boolean(b)),
                (ColumnType::Timestamp, Value::String(text)) => micros(&text)
                    .map(Cell::Timestamp)
                    .ok_or(Value::String(text)),
                (_, other) => Err(other),
            };
            match cell {
                Ok(cell) => cells.push(cell),
                Err(value) => {
                    // Kept as sent, where a reader finds it.
                    event.insert(column.wire.clone(), value);
                    cells.push(Cell::Null);
                }
            }
        }
        cells.push(if event.is_empty() {
            Cell::Null
        } else {
            Cell::Text(Value::Object(event).to_string())
        });
        cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_logins_schema_is_the_spec_event_with_the_time_a_timestamp() {
        let logins = schema(AuditReportKind::Logins);
        let columns: Vec<(&str, ColumnType)> = logins
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.kind))
            .collect();
        assert_eq!(
            columns,
            [
                ("access", ColumnType::Text),
                ("event", ColumnType::Text),
                ("ip_address", ColumnType::Text),
                ("time", ColumnType::Timestamp),
                ("user_id", ColumnType::Integer),
                ("username", ColumnType::Text),
            ]
        );
        let files = schema(AuditReportKind::Files);
        let ip = files
            .columns
            .iter()
            .find(|c| c.name == "ip_address")
            .unwrap();
        assert_eq!(ip.wire, "ipAddress");
        let user = files.columns.iter().find(|c| c.name == "user_id").unwrap();
        assert_eq!(user.kind, ColumnType::Integer, "an id of no shown type");
    }

    #[test]
    fn a_value_that_does_not_fit_its_column_is_null_there_and_kept_in_extra() {
        let logins = schema(AuditReportKind::Logins);
        let cells = logins.cells(
            json!({"username": "sam", "user_id": "x7", "time": "2026-12-04T01:26:23Z", "new": 1})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(cells[3], Cell::Timestamp(1_796_347_583_000_000));
        assert_eq!(cells[4], Cell::Null);
        assert_eq!(cells[5], Cell::Text("sam".into()));
        let Cell::Text(extra) = &cells[6] else {
            panic!("{cells:?}")
        };
        let extra: Value = serde_json::from_str(extra).unwrap();
        assert_eq!(extra, json!({"user_id": "x7", "new": 1}));
    }

    #[test]
    fn every_kind_has_a_time_column() {
        for kind in pubapi_sdk::audit_kinds::ALL {
            let rows = schema(kind.kind);
            assert!(
                rows.columns.iter().any(|c| c.kind == ColumnType::Timestamp),
                "{}",
                kind.name
            );
        }
    }
}
