//! One typed schema per report kind, the same in every format of its rows that is not the
//! platform's own (Parquet, JSON lines, CSV with `--columns schema`): the kind's columns as
//! the spec lists them (`x-pubapi-columns`, generated into `pubapi_sdk::audit_kinds`), each
//! named in snake case after the JSON field it is read from (`ip_address` from `ipAddress`),
//! with the platform's CSV header it is shown under (`IP Address`), in the platform's CSV
//! order and then the fields its CSV leaves out; last, `extra`, the JSON object of whatever
//! else an event holds, so nothing the platform sent is lost.
//!
//! Types: text, 64-bit integers and floats, booleans, and the event's time as a UTC
//! timestamp (microseconds). An integer or number sent as the text of one (`"42"`) is read
//! as that number; any other value that does not fit its column (text in an integer column,
//! a time that does not parse) is null there and kept in `extra`.
//!
//! [`SchemaRows`] writes the rows as JSON lines or CSV; `parquet` writes them as Parquet.

use pubapi_sdk::audit_kinds;
pub use pubapi_sdk::audit_kinds::{Column, ColumnType};
use pubapi_sdk::types::AuditReportKind;
use serde_json::{Map, Value};
use std::io::Write;

/// The columns of one report kind; `extra` follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSchema {
    /// The report kind.
    pub kind: AuditReportKind,
    /// The columns, in the platform's CSV order, then the fields its CSV leaves out.
    pub columns: &'static [Column],
}

/// The name of the last column: the JSON object of an event's other fields, as text.
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

/// The schema of `kind`'s rows.
pub fn schema(kind: AuditReportKind) -> RowSchema {
    RowSchema {
        kind,
        columns: audit_kinds::of(kind).columns,
    }
}

/// The name of a column type, as the docs' tables and `pubapi.columns` say it.
pub fn type_name(column_type: ColumnType) -> &'static str {
    match column_type {
        ColumnType::Text => "text",
        ColumnType::Integer => "integer",
        ColumnType::Number => "number",
        ColumnType::Boolean => "boolean",
        ColumnType::Timestamp => "timestamp (UTC)",
    }
}

/// Microseconds since the epoch of an RFC 3339 time (`2026-12-04T01:26:23Z`).
fn micros(text: &str) -> Option<i64> {
    let at: pubapi_sdk_ext::jiff::Timestamp = text.parse().ok()?;
    Some(at.as_microsecond())
}

/// A cell's value that does not fit its column, given back.
type Misfit = Value;

fn cell_of(column_type: ColumnType, value: Value) -> Result<Cell, Misfit> {
    match (column_type, value) {
        (_, Value::Null) => Ok(Cell::Null),
        (ColumnType::Text, Value::String(text)) => Ok(Cell::Text(text)),
        (ColumnType::Text, other) => Ok(Cell::Text(other.to_string())),
        (ColumnType::Integer, Value::Number(n)) => {
            n.as_i64().map(Cell::Integer).ok_or(Value::Number(n))
        }
        (ColumnType::Integer, Value::String(text)) => match text.trim().parse() {
            Ok(n) => Ok(Cell::Integer(n)),
            Err(_) => Err(Value::String(text)),
        },
        (ColumnType::Number, Value::Number(n)) => {
            n.as_f64().map(Cell::Number).ok_or(Value::Number(n))
        }
        (ColumnType::Number, Value::String(text)) => match text.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Cell::Number(n)),
            _ => Err(Value::String(text)),
        },
        (ColumnType::Boolean, Value::Bool(b)) => Ok(Cell::Boolean(b)),
        (ColumnType::Timestamp, Value::String(text)) => micros(&text)
            .map(Cell::Timestamp)
            .ok_or(Value::String(text)),
        (_, other) => Err(other),
    }
}

impl RowSchema {
    /// An event's cells, one per column and then `extra` (text, or null when nothing is left).
    pub fn cells(&self, mut event: Map<String, Value>) -> Vec<Cell> {
        let mut cells = Vec::with_capacity(self.columns.len() + 1);
        for column in self.columns {
            // Text is moved out of the event, not copied.
            let cell = match event.remove(column.field) {
                None => Ok(Cell::Null),
                Some(value) => cell_of(column.column_type, value),
            };
            match cell {
                Ok(cell) => cells.push(cell),
                Err(value) => {
                    // Kept as sent, where a reader finds it.
                    event.insert(column.field.to_string(), value);
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

    /// The cells of one event given as JSON (a line of an NDJSON file, an event as sent);
    /// anything but an object goes whole into `extra`.
    ///
    /// # Errors
    /// When `line` is not JSON.
    pub fn cells_of_line(&self, line: &str) -> Result<Vec<Cell>, serde_json::Error> {
        let object = match serde_json::from_str(line)? {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_string(), other)]),
        };
        Ok(self.cells(object))
    }

    /// The names of the columns, `extra` last: the header of a schema CSV, the keys of a
    /// JSON line, the fields of a Parquet file.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.columns.iter().map(|c| c.name).chain([EXTRA])
    }
}

/// How rows in the kind's schema are written as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextForm {
    /// One JSON object a line, every column a key in the schema's order (`null` when
    /// empty), the time as RFC 3339 UTC text, numbers as JSON numbers, `extra` as the text of
    /// a JSON object.
    JsonLines,
    /// RFC 4180 CSV with CRLF line ends: a header of the column names, then one record an
    /// event; the time as RFC 3339 UTC text, an empty field for no value.
    Csv,
}

/// Writes a kind's events as text in its schema (`--columns schema`).
#[derive(Debug)]
pub struct SchemaRows<W: Write> {
    rows: RowSchema,
    form: TextForm,
    out: W,
    written: u64,
}

impl<W: Write> SchemaRows<W> {
    /// A writer of `rows`' events into `out`; a CSV's header is written at once.
    ///
    /// # Errors
    /// When the header cannot be written.
    pub fn new(mut out: W, rows: RowSchema, form: TextForm) -> std::io::Result<Self> {
        if form == TextForm::Csv {
            let header: Vec<&str> = rows.names().collect();
            out.write_all(header.join(",").as_bytes())?;
            out.write_all(b"\r\n")?;
        }
        Ok(SchemaRows {
            rows,
            form,
            out,
            written: 0,
        })
    }

    /// Adds one event from its JSON text.
    ///
    /// # Errors
    /// When the line is not JSON ([`std::io::ErrorKind::InvalidData`]), or cannot be written.
    pub fn push_line(&mut self, line: &str) -> std::io::Result<()> {
        let cells = self
            .rows
            .cells_of_line(line)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        match self.form {
            TextForm::Csv => write_csv_record(&mut self.out, cells)?,
            TextForm::JsonLines => {
                // Written key by key: the schema's order, whatever order a map keeps.
                for (at, (name, cell)) in self.rows.names().zip(cells).enumerate() {
                    self.out.write_all(if at == 0 { b"{" } else { b"," })?;
                    serde_json::to_writer(&mut self.out, name)?;
                    self.out.write_all(b":")?;
                    serde_json::to_writer(&mut self.out, &json_of(cell))?;
                }
                self.out.write_all(b"}\n")?;
            }
        }
        self.written += 1;
        Ok(())
    }

    /// The writer, to take what was written so far (a buffer emptied between events).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the rows written and the writer.
    ///
    /// # Errors
    /// When the writer cannot be flushed.
    pub fn finish(mut self) -> std::io::Result<(u64, W)> {
        self.out.flush()?;
        Ok((self.written, self.out))
    }
}

/// A timestamp cell as RFC 3339 UTC text (`2026-12-04T01:26:23Z`).
fn timestamp_text(micros: i64) -> String {
    pubapi_sdk_ext::jiff::Timestamp::from_microsecond(micros)
        .map_or_else(|_| micros.to_string(), |at| at.to_string())
}

fn json_of(cell: Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Text(text) => Value::String(text),
        Cell::Integer(n) => Value::from(n),
        Cell::Number(n) => Value::from(n),
        Cell::Boolean(b) => Value::Bool(b),
        Cell::Timestamp(micros) => Value::String(timestamp_text(micros)),
    }
}

/// A CSV field, quoted when it must be (RFC 4180).
fn csv_field(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    if text.contains([',', '"', '\n', '\r']) {
        write!(out, "\"{}\"", text.replace('"', "\"\""))
    } else {
        out.write_all(text.as_bytes())
    }
}

/// One CSV record of `cells`, with its CRLF.
pub fn write_csv_record(out: &mut impl Write, cells: Vec<Cell>) -> std::io::Result<()> {
    for (at, cell) in cells.into_iter().enumerate() {
        if at > 0 {
            out.write_all(b",")?;
        }
        match cell {
            Cell::Null => {}
            Cell::Text(text) => csv_field(out, &text)?,
            Cell::Integer(n) => write!(out, "{n}")?,
            Cell::Number(n) => write!(out, "{n}")?,
            Cell::Boolean(b) => write!(out, "{b}")?,
            Cell::Timestamp(micros) => out.write_all(timestamp_text(micros).as_bytes())?,
        }
    }
    out.write_all(b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(
        kind: AuditReportKind,
    ) -> Vec<(&'static str, &'static str, Option<&'static str>, ColumnType)> {
        schema(kind)
            .columns
            .iter()
            .map(|c| (c.name, c.field, c.csv, c.column_type))
            .collect()
    }

    #[test]
    fn the_logins_schema_is_the_reference_csv_columns_then_the_user_id() {
        use ColumnType::*;
        assert_eq!(
            of(AuditReportKind::Logins),
            [
                ("username", "username", Some("Username"), Text),
                ("event", "event", Some("Event"), Text),
                ("ip_address", "ip_address", Some("IP Address"), Text),
                ("access", "access", Some("Access"), Text),
                ("time", "time", Some("Time"), Timestamp),
                ("user_id", "user_id", None, Integer),
            ]
        );
        let files = of(AuditReportKind::Files);
        assert!(files.contains(&("ip_address", "ipAddress", Some("IP Address"), Text)));
        assert!(files.contains(&("action_info", "actionInfo", Some("Action Info"), Text)));
        assert!(
            files.contains(&("user_id", "user_id", None, Integer)),
            "an id of no shown type"
        );
    }

    #[test]
    fn every_kind_has_one_time_column_and_columns_the_platforms_csv_shows() {
        for kind in audit_kinds::ALL {
            let rows = schema(kind.kind);
            let times = rows
                .columns
                .iter()
                .filter(|c| c.column_type == ColumnType::Timestamp)
                .count();
            assert_eq!(times, 1, "{}", kind.name);
            assert!(rows.columns.len() >= 5, "{}: {:?}", kind.name, rows.columns);
            assert!(
                rows.columns
                    .iter()
                    .any(|c| c.csv.is_some() && c.column_type == ColumnType::Text),
                "{}",
                kind.name
            );
        }
    }

    /// The per-kind tables of `cli/docs/audit-columns.md`, as the schemas make them.
    fn columns_doc() -> String {
        let mut kinds: Vec<_> = audit_kinds::ALL.iter().collect();
        kinds.sort_by_key(|k| k.name);
        // Kinds of the same columns share a table.
        let mut tables: Vec<(Vec<&str>, &[Column])> = Vec::new();
        for kind in kinds {
            match tables
                .iter_mut()
                .find(|(_, columns)| *columns == kind.columns)
            {
                Some((names, _)) => names.push(kind.name),
                None => tables.push((vec![kind.name], kind.columns)),
            }
        }
        let mut out = String::new();
        for (names, columns) in tables {
            out.push_str(&format!(
                "\n### {}\n\n| column | type | platform CSV header | JSON field |\n|---|---|---|---|\n",
                names.join(", ")
            ));
            for column in columns {
                out.push_str(&format!(
                    "| `{}` | {} | {} | `{}` |\n",
                    column.name,
                    type_name(column.column_type),
                    column.csv.unwrap_or("(not in the CSV)"),
                    column.field
                ));
            }
            out.push_str(&format!(
                "| `{EXTRA}` | text (a JSON object) | (not in the CSV) | the event's other fields |\n"
            ));
        }
        out
    }

    #[test]
    fn the_docs_list_each_kinds_columns_as_its_schema_has_them() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit-columns.md");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let (begin, end) = ("<!-- columns: begin -->\n", "<!-- columns: end -->");
        let listed = text
            .split_once(begin)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(tables, _)| tables);
        let expected = columns_doc();
        assert!(
            listed == Some(expected.as_str()),
            "{path} does not list the kinds' columns as the schemas have them (spec \
             x-pubapi-columns); put this between {begin:?} and {end:?}:\n{expected}"
        );
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
        assert_eq!(cells[0], Cell::Text("sam".into()));
        assert_eq!(cells[4], Cell::Timestamp(1_796_347_583_000_000));
        assert_eq!(cells[5], Cell::Null);
        let Cell::Text(extra) = &cells[6] else {
            panic!("{cells:?}")
        };
        let extra: Value = serde_json::from_str(extra).unwrap();
        assert_eq!(extra, json!({"user_id": "x7", "new": 1}));
    }

    #[test]
    fn an_id_sent_as_the_text_of_a_number_is_that_number() {
        let logins = schema(AuditReportKind::Logins);
        let cells = logins.cells(json!({"user_id": " 42"}).as_object().unwrap().clone());
        assert_eq!(cells[5], Cell::Integer(42));
        assert_eq!(cells[6], Cell::Null, "nothing left for extra");
    }

    #[test]
    fn schema_csv_and_json_lines_hold_the_same_columns_and_values() {
        let line = r#"{"username":"sam, jr","user_id":7,"time":"2026-12-04T01:26:23Z","event":"logins","more":true}"#;
        let write = |form| {
            let mut out =
                SchemaRows::new(Vec::new(), schema(AuditReportKind::Logins), form).unwrap();
            out.push_line(line).unwrap();
            let (rows, bytes) = out.finish().unwrap();
            assert_eq!(rows, 1);
            String::from_utf8(bytes).unwrap()
        };
        assert_eq!(
            write(TextForm::Csv),
            "username,event,ip_address,access,time,user_id,extra\r\n\
             \"sam, jr\",logins,,,2026-12-04T01:26:23Z,7,\"{\"\"more\"\":true}\"\r\n"
        );
        let json: Value = serde_json::from_str(&write(TextForm::JsonLines)).unwrap();
        assert_eq!(
            json,
            json!({"username": "sam, jr", "event": "logins", "ip_address": null, "access": null,
                   "time": "2026-12-04T01:26:23Z", "user_id": 7, "extra": "{\"more\":true}"})
        );
        let text = write(TextForm::JsonLines);
        let names: Vec<&str> = schema(AuditReportKind::Logins).names().collect();
        let at: Vec<usize> = names
            .iter()
            .map(|name| text.find(&format!("\"{name}\":")).unwrap())
            .collect();
        assert!(at.is_sorted(), "keys in the schema's order: {text}");
    }
}
