//! What `audit export` does with each day file the SDK's export wrote: counts its rows,
//! takes its SHA-256, turns a staged NDJSON day into the kind's schema (CSV, JSON lines or
//! Parquet: `--columns schema`, the default of ndjson and parquet), and at the
//! end of a run writes the run's manifest beside the files and merges the run's days into
//! one file (`--merge`). Every file is written under a temporary name and renamed when whole.

use super::SchemaForm;
use super::columns::{SchemaRows, TextForm, schema};
use crate::failure::Failure;
use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{ExportDay, PartFile};
use serde_json::{Map, Value, json};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// What a run writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DayFormat {
    /// The platform's CSV; `title` keeps its title row.
    Csv { title: bool },
    /// One JSON event a line, as sent.
    Ndjson,
    /// The kind's schema, made from the SDK's NDJSON day.
    Schema(SchemaForm),
}

impl DayFormat {
    /// The files' extension.
    pub(super) fn extension(self) -> &'static str {
        match self {
            DayFormat::Csv { .. } | DayFormat::Schema(SchemaForm::Csv) => "csv",
            DayFormat::Ndjson | DayFormat::Schema(SchemaForm::JsonLines) => "ndjson",
            DayFormat::Schema(SchemaForm::Parquet) => "parquet",
        }
    }

    /// Which columns its files have: `platform` or `schema` (the manifest says it).
    pub(super) fn columns(self) -> &'static str {
        match self {
            DayFormat::Schema(_) => "schema",
            _ => "platform",
        }
    }
}

/// A day's file as written.
#[derive(Debug, Clone)]
pub(super) struct DayFile {
    /// The day (`None` for a merged file).
    pub(super) day: Option<ExportDay>,
    pub(super) path: PathBuf,
    pub(super) rows: u64,
    pub(super) bytes: u64,
    pub(super) sha256: String,
}

fn io_failure(path: &Path, error: impl std::fmt::Display) -> Failure {
    Failure::failed(format!("cannot use {}: {error}", path.display()))
}

/// The SHA-256 (lowercase hex) and size of a file, read in blocks.
fn sha256_of(path: &Path) -> Result<(String, u64), Failure> {
    use aws_lc_rs::digest::{Context, SHA256};
    let mut file = File::open(path).map_err(|e| io_failure(path, e))?;
    let mut context = Context::new(&SHA256);
    let mut block = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let read = file.read(&mut block).map_err(|e| io_failure(path, e))?;
        if read == 0 {
            break;
        }
        bytes += read as u64;
        context.update(&block[..read]);
    }
    let hex = context
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((hex, bytes))
}

/// The rows of a day file: its events (NDJSON lines, Parquet rows) or its CSV records (the
/// title and the header apart).
fn rows_of(path: &Path, format: DayFormat) -> Result<u64, Failure> {
    match format {
        DayFormat::Ndjson | DayFormat::Schema(SchemaForm::JsonLines) => {
            let file = File::open(path).map_err(|e| io_failure(path, e))?;
            let mut rows = 0;
            for line in BufReader::new(file).lines() {
                if !line.map_err(|e| io_failure(path, e))?.trim().is_empty() {
                    rows += 1;
                }
            }
            Ok(rows)
        }
        DayFormat::Csv { .. } | DayFormat::Schema(SchemaForm::Csv) => csv_records(path),
        DayFormat::Schema(SchemaForm::Parquet) => parquet_rows(path),
    }
}

/// The records of a CSV file after its title row (when it has one) and its header: its line
/// ends outside quotes (RFC 4180: a quoted field may hold line ends), read in blocks.
fn csv_records(path: &Path) -> Result<u64, Failure> {
    let mut file = BufReader::new(File::open(path).map_err(|e| io_failure(path, e))?);
    let mut first = Vec::new();
    file.read_until(b'\n', &mut first)
        .map_err(|e| io_failure(path, e))?;
    let titled = first.starts_with(b"This report");
    let (mut records, mut quoted, mut in_record) = (u64::from(!first.is_empty()), false, false);
    let mut block = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut block).map_err(|e| io_failure(path, e))?;
        if read == 0 {
            break;
        }
        for byte in &block[..read] {
            match byte {
                b'"' => quoted = !quoted,
                b'\n' if !quoted => {
                    records += u64::from(in_record);
                    in_record = false;
                    continue;
                }
                b'\r' if !quoted => continue,
                _ => {}
            }
            in_record = true;
        }
    }
    records += u64::from(in_record);
    Ok(records.saturating_sub(1 + u64::from(titled)))
}

#[cfg(feature = "parquet")]
fn parquet_rows(path: &Path) -> Result<u64, Failure> {
    let file = File::open(path).map_err(|e| io_failure(path, e))?;
    let reader =
        parquet::file::reader::SerializedFileReader::new(file).map_err(|e| io_failure(path, e))?;
    use parquet::file::reader::FileReader;
    Ok(u64::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0))
}

#[cfg(not(feature = "parquet"))]
fn parquet_rows(path: &Path) -> Result<u64, Failure> {
    Err(io_failure(
        path,
        "this pubapi was built without the parquet feature",
    ))
}

/// A written day file, counted and digested.
pub(super) fn day_file(
    day: Option<ExportDay>,
    path: &Path,
    format: DayFormat,
) -> Result<DayFile, Failure> {
    let rows = rows_of(path, format)?;
    let (sha256, bytes) = sha256_of(path)?;
    Ok(DayFile {
        day,
        path: path.to_path_buf(),
        rows,
        bytes,
        sha256,
    })
}

/// Turns a staged NDJSON day into `target` in the kind's schema (`form`), then removes the
/// staged file: a run that stops between the two finds the staged day again and converts it
/// then.
pub(super) fn staged_to(
    kind: AuditReportKind,
    form: SchemaForm,
    staged: &Path,
    target: &Path,
) -> Result<(), Failure> {
    let part = PartFile::beside(target, &std::process::id().to_string());
    let text = match form {
        SchemaForm::Parquet => {
            staged_to_parquet(kind, staged, &part, target)?;
            None
        }
        SchemaForm::Csv => Some(TextForm::Csv),
        SchemaForm::JsonLines => Some(TextForm::JsonLines),
    };
    if let Some(text) = text {
        let input = File::open(staged).map_err(|e| io_failure(staged, e))?;
        let file = File::create(part.path()).map_err(|e| io_failure(part.path(), e))?;
        let mut out = SchemaRows::new(std::io::BufWriter::new(file), schema(kind), text)
            .map_err(|e| io_failure(part.path(), e))?;
        for line in BufReader::new(input).lines() {
            let line = line.map_err(|e| io_failure(staged, e))?;
            if !line.trim().is_empty() {
                out.push_line(&line).map_err(|e| io_failure(staged, e))?;
            }
        }
        let (_, writer) = out.finish().map_err(|e| io_failure(part.path(), e))?;
        let file = writer
            .into_inner()
            .map_err(|e| io_failure(part.path(), e.error()))?;
        file.sync_all().map_err(|e| io_failure(part.path(), e))?;
    }
    part.commit(target).map_err(|e| io_failure(target, e))?;
    std::fs::remove_file(staged).map_err(|e| io_failure(staged, e))
}

#[cfg(feature = "parquet")]
fn staged_to_parquet(
    kind: AuditReportKind,
    staged: &Path,
    part: &PartFile,
    target: &Path,
) -> Result<(), Failure> {
    use super::parquet::EventsParquet;
    let input = File::open(staged).map_err(|e| io_failure(staged, e))?;
    let file = File::create(part.path()).map_err(|e| io_failure(part.path(), e))?;
    let mut out = EventsParquet::new(std::io::BufWriter::new(file), schema(kind))
        .map_err(|e| io_failure(target, e))?;
    for line in BufReader::new(input).lines() {
        let line = line.map_err(|e| io_failure(staged, e))?;
        if !line.trim().is_empty() {
            out.push_line(&line).map_err(|e| io_failure(staged, e))?;
        }
    }
    let (_, writer) = out.finish().map_err(|e| io_failure(target, e))?;
    let file = writer
        .into_inner()
        .map_err(|e| io_failure(part.path(), e.error()))?;
    file.sync_all().map_err(|e| io_failure(part.path(), e))
}

#[cfg(not(feature = "parquet"))]
fn staged_to_parquet(
    _: AuditReportKind,
    _: &Path,
    _: &PartFile,
    target: &Path,
) -> Result<(), Failure> {
    Err(io_failure(
        target,
        "this pubapi was built without the parquet feature",
    ))
}

/// The run's manifest, `DIR/<kind>-<ext>-run-<UTC time>.manifest.json`: every day the run
/// wrote or found in place, with its rows, bytes and SHA-256, and the merged file if any.
pub(super) fn write_manifest(
    dir: &Path,
    kind: AuditReportKind,
    format: DayFormat,
    filters: &Map<String, Value>,
    days: &[DayFile],
    merged: Option<&DayFile>,
) -> Result<PathBuf, Failure> {
    let started = pubapi_sdk_ext::jiff::Timestamp::try_from(crate::wall_clock())
        .map_err(|e| Failure::failed(format!("the clock: {e}")))?;
    let stamp = started.strftime("%Y%m%dT%H%M%SZ").to_string();
    let entry = |file: &DayFile| {
        json!({
            "day": file.day.map(|d| d.to_string()),
            "file": file.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "rows": file.rows,
            "bytes": file.bytes,
            "sha256": file.sha256,
        })
    };
    let manifest = json!({
        "pubapi_audit_export_manifest": 1,
        "kind": kind.to_string(),
        "format": format.extension(),
        "columns": format.columns(),
        "title_row": matches!(format, DayFormat::Csv { title: true }),
        "filters": filters,
        "written_at": started.to_string(),
        "days": days.iter().map(entry).collect::<Vec<_>>(),
        "rows": days.iter().map(|d| d.rows).sum::<u64>(),
        "merged": merged.map(entry),
    });
    let path = dir.join(format!(
        "{kind}-{}-run-{stamp}.manifest.json",
        format.extension()
    ));
    let part = PartFile::beside(&path, &std::process::id().to_string());
    let mut text = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    text.push(b'\n');
    std::fs::write(part.path(), text).map_err(|e| io_failure(part.path(), e))?;
    part.commit(&path).map_err(|e| io_failure(&path, e))?;
    Ok(path)
}

/// Writes `days` (in order) into one file `into`: CSV with the header once and no title
/// rows, NDJSON one after the other, Parquet as one file of the same schema.
pub(super) fn merge(
    days: &[DayFile],
    format: DayFormat,
    kind: AuditReportKind,
    into: &Path,
) -> Result<DayFile, Failure> {
    let part = PartFile::beside(into, &std::process::id().to_string());
    match format {
        DayFormat::Ndjson
        | DayFormat::Csv { .. }
        | DayFormat::Schema(SchemaForm::Csv | SchemaForm::JsonLines) => {
            let file = File::create(part.path()).map_err(|e| io_failure(part.path(), e))?;
            let mut out = std::io::BufWriter::new(file);
            let mut header_written = false;
            for day in days {
                let input = File::open(&day.path).map_err(|e| io_failure(&day.path, e))?;
                if format.extension() == "ndjson" {
                    std::io::copy(&mut BufReader::new(input), &mut out)
                        .map_err(|e| io_failure(into, e))?;
                    continue;
                }
                let mut reader = BufReader::new(input);
                let mut line = Vec::new();
                // The title (when kept) and the header come before the first row.
                let mut skipped_header = false;
                while !skipped_header {
                    line.clear();
                    if reader
                        .read_until(b'\n', &mut line)
                        .map_err(|e| io_failure(&day.path, e))?
                        == 0
                    {
                        break;
                    }
                    if String::from_utf8_lossy(&line).starts_with("This report") {
                        continue;
                    }
                    skipped_header = true;
                    if !header_written {
                        out.write_all(&line).map_err(|e| io_failure(into, e))?;
                        header_written = true;
                    }
                }
                std::io::copy(&mut reader, &mut out).map_err(|e| io_failure(into, e))?;
            }
            let file = out.into_inner().map_err(|e| io_failure(into, e.error()))?;
            file.sync_all().map_err(|e| io_failure(into, e))?;
        }
        DayFormat::Schema(SchemaForm::Parquet) => merge_parquet(days, kind, part.path())?,
    }
    part.commit(into).map_err(|e| io_failure(into, e))?;
    let format = match format {
        DayFormat::Csv { .. } => DayFormat::Csv { title: false },
        other => other,
    };
    day_file(None, into, format)
}

#[cfg(feature = "parquet")]
fn merge_parquet(days: &[DayFile], kind: AuditReportKind, into: &Path) -> Result<(), Failure> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let schema = std::sync::Arc::new(super::parquet::arrow_schema(&schema(kind)));
    let file = File::create(into).map_err(|e| io_failure(into, e))?;
    let mut writer = super::parquet::writer(file, schema).map_err(|e| io_failure(into, e))?;
    for day in days {
        let input = File::open(&day.path).map_err(|e| io_failure(&day.path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(input)
            .and_then(|b| b.build())
            .map_err(|e| io_failure(&day.path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| io_failure(&day.path, e))?;
            writer.write(&batch).map_err(|e| io_failure(into, e))?;
        }
    }
    let file = writer.into_inner().map_err(|e| io_failure(into, e))?;
    file.sync_all().map_err(|e| io_failure(into, e))
}

#[cfg(not(feature = "parquet"))]
fn merge_parquet(_: &[DayFile], _: AuditReportKind, into: &Path) -> Result<(), Failure> {
    Err(io_failure(
        into,
        "this pubapi was built without the parquet feature",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_records_are_counted_after_the_title_and_header_with_line_ends_in_quotes() {
        let dir = std::env::temp_dir().join(format!("pubapi-days-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases: [(&str, u64); 5] = [
            (
                "This report reflects activity up to 1/1/26\r\nA,B\r\n1,2\r\n3,4\r\n",
                2,
            ),
            ("A,B\r\n1,\"two\r\nlines\"\r\n3,4", 2),
            ("A,B\n", 0),
            ("This report reflects activity up to 1/1/26\n", 0),
            ("", 0),
        ];
        for (at, (text, rows)) in cases.iter().enumerate() {
            let path = dir.join(format!("{at}.csv"));
            std::fs::write(&path, text).unwrap();
            assert_eq!(csv_records(&path).unwrap(), *rows, "{text:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
