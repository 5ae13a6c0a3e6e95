//! Audit events as Parquet (feature `parquet`): the kind's typed schema ([`super::columns`])
//! as Arrow fields, each with the platform's names in its metadata: the header of the
//! platform's CSV it is shown under ([`CSV_HEADER`], left out for a field the CSV does not
//! show) and the JSON field it is read from ([`JSON_FIELD`]). The file's metadata has the
//! kind (`pubapi.kind`) and every column with its type and platform names as one JSON list
//! (`pubapi.columns`), for readers that show a file's key-value metadata but not Arrow's
//! field metadata (DuckDB's `parquet_kv_metadata`). Rows are written in batches of [`BATCH_ROWS`] and
//! row groups of [`ROW_GROUP_ROWS`], plain-encoded and snappy-compressed, so memory stays flat
//! whatever the report's size.

use super::columns::{Cell, ColumnType, EXTRA, RowSchema};
use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

/// The field metadata key of the platform's CSV header of a column (`IP Address`).
pub const CSV_HEADER: &str = "pubapi.platform_csv_header";

/// The field metadata key of the JSON field a column is read from (`ipAddress`).
pub const JSON_FIELD: &str = "pubapi.platform_json_field";

/// Rows buffered before they go to the writer as one batch.
pub const BATCH_ROWS: usize = 8192;

/// Rows in one row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// How every Parquet file of the CLI is written: snappy, row groups of [`ROW_GROUP_ROWS`].
pub fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Statistics per row group (what readers prune by), not per page; plain encoding: an
        // audit report's paths, checksums and addresses are nearly all distinct, and a
        // dictionary built for them only to be dropped cost a fifth of the write (snappy
        // still packs the columns that repeat). BENCHMARKS.md has the figures.
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(false)
        .build()
}

/// The Arrow schema of a kind's rows.
pub fn arrow_schema(rows: &RowSchema) -> Schema {
    let mut fields: Vec<Field> = rows
        .columns
        .iter()
        .map(|column| {
            let data_type = match column.column_type {
                ColumnType::Text => DataType::Utf8,
                ColumnType::Integer => DataType::Int64,
                ColumnType::Number => DataType::Float64,
                ColumnType::Boolean => DataType::Boolean,
                ColumnType::Timestamp => {
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
                }
            };
            let mut metadata = HashMap::from([(JSON_FIELD.to_string(), column.field.to_string())]);
            if let Some(header) = column.csv {
                metadata.insert(CSV_HEADER.to_string(), header.to_string());
            }
            Field::new(column.name, data_type, true).with_metadata(metadata)
        })
        .collect();
    fields.push(
        Field::new(EXTRA, DataType::Utf8, true).with_metadata(HashMap::from([(
            "pubapi.description".to_string(),
            "the event's other fields, as a JSON object".to_string(),
        )])),
    );
    let columns: Vec<serde_json::Value> = rows
        .columns
        .iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name,
                "type": super::columns::type_name(c.column_type),
                "platform_csv_header": c.csv,
                "platform_json_field": c.field,
            })
        })
        .collect();
    Schema::new(fields).with_metadata(HashMap::from([
        ("pubapi.kind".to_string(), rows.kind.to_string()),
        (
            "pubapi.columns".to_string(),
            serde_json::Value::from(columns).to_string(),
        ),
    ]))
}

/// A writer of a kind's rows into `out`, the file's key-value metadata ([`arrow_schema`]'s:
/// the kind and `pubapi.columns`) set, which the Arrow schema alone keeps only in Arrow's own
/// encoding of it.
///
/// # Errors
/// When the Parquet writer cannot start.
pub fn writer<W: Write + Send>(
    out: W,
    schema: Arc<Schema>,
) -> parquet::errors::Result<ArrowWriter<W>> {
    let mut writer = ArrowWriter::try_new(out, schema.clone(), Some(properties()))?;
    let mut metadata: Vec<(&String, &String)> = schema.metadata().iter().collect();
    metadata.sort();
    for (key, value) in metadata {
        writer.append_key_value_metadata(KeyValue::new(key.clone(), value.clone()));
    }
    Ok(writer)
}

/// One column being filled.
enum Builder {
    Text(StringBuilder),
    Integer(Int64Builder),
    Number(Float64Builder),
    Boolean(BooleanBuilder),
    Timestamp(TimestampMicrosecondBuilder),
}

impl Builder {
    fn of(kind: ColumnType) -> Builder {
        match kind {
            ColumnType::Text => Builder::Text(StringBuilder::new()),
            ColumnType::Integer => Builder::Integer(Int64Builder::new()),
            ColumnType::Number => Builder::Number(Float64Builder::new()),
            ColumnType::Boolean => Builder::Boolean(BooleanBuilder::new()),
            ColumnType::Timestamp => {
                Builder::Timestamp(TimestampMicrosecondBuilder::new().with_timezone("UTC"))
            }
        }
    }

    fn push(&mut self, cell: Cell) {
        match (self, cell) {
            (Builder::Text(b), Cell::Text(text)) => b.append_value(text),
            (Builder::Integer(b), Cell::Integer(n)) => b.append_value(n),
            (Builder::Number(b), Cell::Number(n)) => b.append_value(n),
            (Builder::Boolean(b), Cell::Boolean(v)) => b.append_value(v),
            (Builder::Timestamp(b), Cell::Timestamp(t)) => b.append_value(t),
            (Builder::Text(b), _) => b.append_null(),
            (Builder::Integer(b), _) => b.append_null(),
            (Builder::Number(b), _) => b.append_null(),
            (Builder::Boolean(b), _) => b.append_null(),
            (Builder::Timestamp(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Integer(b) => Arc::new(b.finish()),
            Builder::Number(b) => Arc::new(b.finish()),
            Builder::Boolean(b) => Arc::new(b.finish()),
            Builder::Timestamp(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::Text(b) => b.len(),
            Builder::Integer(b) => b.len(),
            Builder::Number(b) => b.len(),
            Builder::Boolean(b) => b.len(),
            Builder::Timestamp(b) => b.len(),
        }
    }
}

/// Writes a kind's events as Parquet into `W`.
pub struct EventsParquet<W: Write + Send> {
    rows: RowSchema,
    schema: Arc<Schema>,
    writer: ArrowWriter<W>,
    builders: Vec<Builder>,
    written: u64,
}

impl<W: Write + Send> std::fmt::Debug for EventsParquet<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventsParquet")
            .field("kind", &self.rows.kind)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> EventsParquet<W> {
    /// A writer of `rows`' events into `out`.
    ///
    /// # Errors
    /// When the Parquet writer cannot start (it writes the file's magic bytes).
    pub fn new(out: W, rows: RowSchema) -> parquet::errors::Result<Self> {
        let schema = Arc::new(arrow_schema(&rows));
        let writer = writer(out, schema.clone())?;
        let builders = rows
            .columns
            .iter()
            .map(|c| Builder::of(c.column_type))
            .chain([Builder::of(ColumnType::Text)])
            .collect();
        Ok(EventsParquet {
            rows,
            schema,
            writer,
            builders,
            written: 0,
        })
    }

    /// Adds one event (a JSON object; anything else goes whole into `extra`).
    ///
    /// # Errors
    /// When a full batch cannot be written.
    pub fn push(&mut self, event: Value) -> parquet::errors::Result<()> {
        let object = match event {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_string(), other)]),
        };
        let cells = self.rows.cells(object);
        self.push_cells(cells)
    }

    fn push_cells(&mut self, cells: Vec<Cell>) -> parquet::errors::Result<()> {
        for (builder, cell) in self.builders.iter_mut().zip(cells) {
            builder.push(cell);
        }
        if self.builders[0].len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Adds one event from its JSON text (a line of an NDJSON file).
    ///
    /// # Errors
    /// When the line is not JSON, or a full batch cannot be written.
    pub fn push_line(&mut self, line: &str) -> parquet::errors::Result<()> {
        let cells = self.rows.cells_of_line(line).map_err(|e| {
            parquet::errors::ParquetError::General(format!("not a JSON event: {e}"))
        })?;
        self.push_cells(cells)
    }

    fn flush(&mut self) -> parquet::errors::Result<()> {
        let rows = self.builders[0].len();
        if rows == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| parquet::errors::ParquetError::General(e.to_string()))?;
        self.writer.write(&batch)?;
        self.written += rows as u64;
        Ok(())
    }

    /// Writes what is buffered and the file's footer; returns the rows written and the
    /// writer.
    ///
    /// # Errors
    /// When the last batch or the footer cannot be written.
    pub fn finish(mut self) -> parquet::errors::Result<(u64, W)> {
        self.flush()?;
        let out = self.writer.into_inner()?;
        Ok((self.written, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::columns::schema;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use pubapi_sdk::types::AuditReportKind;
    use pubapi_sdk_ext::Bytes;
    use serde_json::json;

    #[test]
    fn events_read_back_with_their_types_and_the_platform_csv_headers_in_the_metadata() {
        let mut out = EventsParquet::new(Vec::new(), schema(AuditReportKind::Files)).unwrap();
        for n in 0..20_000 {
            out.push(
                json!({"ipAddress": "10.0.0.1", "time": "2026-12-04T01:26:23Z",
                "user_id": n, "transaction": "download", "surprise": true}),
            )
            .unwrap();
        }
        let (rows, bytes) = out.finish().unwrap();
        assert_eq!(rows, 20_000);
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes)).unwrap();
        let schema = reader.schema().clone();
        let ip = schema.field_with_name("ip_address").unwrap();
        assert_eq!(ip.metadata()[CSV_HEADER], "IP Address");
        assert_eq!(ip.metadata()[JSON_FIELD], "ipAddress");
        let user = schema.field_with_name("username").unwrap();
        assert_eq!(user.metadata()[CSV_HEADER], "User/Location");
        let checksum = schema.field_with_name("file_checksum").unwrap();
        assert!(
            !checksum.metadata().contains_key(CSV_HEADER),
            "not in the CSV"
        );
        let columns: Vec<Value> =
            serde_json::from_str(&schema.metadata()["pubapi.columns"]).unwrap();
        assert_eq!(columns[0]["platform_csv_header"], "File/Folder");
        assert_eq!(columns[0]["name"], "file");
        assert_eq!(
            schema.field_with_name("time").unwrap().data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        assert_eq!(
            schema.field_with_name("user_id").unwrap().data_type(),
            &DataType::Int64
        );
        let read: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(read, 20_000);
    }
}
