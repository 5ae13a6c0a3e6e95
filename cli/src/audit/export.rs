//! `pubapi audit export`: the SDK's daily export, its flags as settings and its errors as
//! exit codes, messages and hints. The SDK writes a day at a time (CSV with or without its
//! title, or NDJSON; for the kind's schema, NDJSON into a staging folder inside `--out-dir`,
//! turned into schema CSV, JSON lines or Parquet as each day is done); each day is then
//! counted and digested (`days`), and the run
//! ends with its manifest and, with `--merge`, one file of its days.

use super::days::{self, DayFile, DayFormat};
use super::kinds::{COMMON, Kind, kinds};
use super::report::WAIT_DEADLINE;
use super::{ExportArgs, SchemaForm};
use crate::Session;
use crate::failure::{Exit, Failure};
use pubapi_sdk::audit_kinds::FilterShape;
use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{
    AuditRequest, AuditWait, DailyExport, DayError, DayObserver, ExportDay, ExportError,
    ExportFormat, Start, WrittenDay,
};
use serde_json::{Map, Value, json};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What `audit export`'s flags say: the kind, where to start and stop, the format and the
/// filters.
pub(super) struct ExportSettings {
    kind: AuditReportKind,
    start: Start,
    until: Option<ExportDay>,
    format: DayFormat,
    filters: Map<String, Value>,
}

/// The staging folder of an export in the kind's schema, inside its `--out-dir`: the SDK's
/// NDJSON days (and their folder claim) until each is turned into the schema's `ext` files
/// (`.pubapi-parquet-staging`).
fn staging(out_dir: &Path, ext: &str) -> PathBuf {
    out_dir.join(format!(".pubapi-{ext}-staging"))
}

/// A `--filters` value the kind takes, to show in a refusal: its required filters, else its
/// first one, each with a value of its shape.
pub(super) fn filters_example(kind: &Kind) -> String {
    use pubapi_sdk::audit_kinds::Filter;
    let example_of = |filter: &Filter| match filter.shape {
        FilterShape::List { integers: true } => json!([1]),
        FilterShape::List { .. } if !filter.values.is_empty() => json!([filter.values[0]]),
        FilterShape::List { .. }
            if filter.name.contains("folder") || filter.name.contains("path") =>
        {
            json!(["/Shared"])
        }
        FilterShape::List { .. } => json!(["sam"]),
        FilterShape::Flag => json!(true),
        FilterShape::Integer => json!(1),
        FilterShape::Text => json!(filter.values.first().copied().unwrap_or("sam")),
    };
    let mut chosen: Vec<&Filter> = kind.filters.iter().filter(|f| f.required).collect();
    if kind.kind.kind == AuditReportKind::Files {
        // The reference asks the files report for a folder or a file pattern.
        chosen.extend(kind.filters.iter().filter(|f| f.name == "folders"));
    }
    if chosen.is_empty() {
        chosen.extend(kind.filters.iter().find(|f| f.shape != FilterShape::Flag));
    }
    let example: Map<String, Value> = chosen
        .into_iter()
        .map(|f| (f.name.to_string(), example_of(f)))
        .collect();
    let names: Vec<&str> = kind.filters.iter().map(|f| f.name).collect();
    format!(
        "for example --filters '{}' (the {} report's filters: {})",
        Value::Object(example),
        kind.name(),
        names.join(", ")
    )
}

pub(super) fn export_settings(args: &ExportArgs) -> Result<ExportSettings, Failure> {
    let kind_spec = kinds()
        .iter()
        .find(|k| k.name() == args.kind)
        .ok_or_else(|| {
            let known: Vec<&str> = kinds().iter().map(|k| k.name()).collect();
            Failure::usage(format!(
                "`{}` is not a report kind; kinds: {}",
                args.kind,
                known.join(", ")
            ))
        })?;
    let kind = kind_spec.kind.kind;
    let start = match (&args.since, args.since_last) {
        (Some(since), false) => Start::Since(ExportDay::parse(since).ok_or_else(|| {
            Failure::usage(format!(
                "--since `{since}` is not a day: give it as YYYY-MM-DD (such as 2026-01-31)"
            ))
        })?),
        (None, true) => Start::SinceLast,
        _ => return Err(Failure::usage("give --since DATE or --since-last")),
    };
    let schema = args.columns.as_deref().map(|c| c == "schema");
    let format = match (args.format.as_str(), schema) {
        ("ndjson", Some(false)) => DayFormat::Ndjson,
        ("ndjson", _) => DayFormat::Schema(SchemaForm::JsonLines),
        ("parquet", None | Some(true)) => DayFormat::Schema(SchemaForm::Parquet),
        ("parquet", Some(false)) => {
            return Err(Failure::usage(
                "--columns platform: parquet has only the kind's schema (--columns schema)",
            ));
        }
        (_, Some(true)) => DayFormat::Schema(SchemaForm::Csv),
        (_, _) => DayFormat::Csv {
            title: !args.no_title,
        },
    };
    if args.no_title && !matches!(format, DayFormat::Csv { .. }) {
        return Err(Failure::usage(
            "--no-title: only the platform's CSV has a title row (--format csv; a CSV in the \
             kind's schema has none)",
        ));
    }
    if args.stdout && format.extension() != "ndjson" {
        return Err(Failure::usage(
            "--stdout writes JSON lines: it goes with --format ndjson",
        ));
    }
    let until = match &args.until {
        None => None,
        Some(text) => Some(ExportDay::parse(text).ok_or_else(|| {
            Failure::usage(format!(
                "--until `{text}` is not a day: give it as YYYY-MM-DD (such as 2026-01-31)"
            ))
        })?),
    };
    if let (Start::Since(since), Some(until)) = (start, until)
        && until < since
    {
        return Err(Failure::usage(format!(
            "--until {until} is before --since {since}: the export covers --since to --until, both days included"
        )));
    }
    let example = || filters_example(kind_spec);
    let mut filters = match &args.filters {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => {
                return Err(
                    Failure::usage(format!("--filters `{text}` is not a JSON object"))
                        .hint(example()),
                );
            }
        },
    };
    for common in COMMON {
        if filters.contains_key(common) {
            return Err(Failure::usage(format!(
                "--filters: {common} is not a filter (the export sets it for each day; the format is --format)"
            )));
        }
    }
    // A required list of known values left out means all of them, as in `audit <kind>`.
    for filter in &kind_spec.filters {
        if filter.required
            && matches!(filter.shape, FilterShape::List { .. })
            && !filter.values.is_empty()
            && !filters.contains_key(filter.name)
        {
            filters.insert(filter.name.to_string(), json!(filter.values));
        }
    }
    let probe = json!({"format": "csv", "date_start": "2026-01-01T00:00:00Z", "date_end": "2026-01-02T00:00:00Z"});
    let mut body = filters.clone();
    if let Value::Object(common) = probe {
        body.extend(common);
    }
    let request = AuditRequest::from_json(kind, Value::Object(body))
        .map_err(|e| Failure::usage(format!("--filters: {e}")).hint(example()))?;
    request
        .validate()
        .map_err(|e| Failure::usage(format!("--filters: {e}")).hint(example()))?;
    Ok(ExportSettings {
        kind,
        start,
        until,
        format,
        filters,
    })
}

/// `pubapi audit export`: the SDK's [`DailyExport`], a day at a time; each day's rows on a
/// terminal or with `-v`, the run's manifest beside the files, its days merged on request.
pub(super) async fn export(session: &Session, args: &ExportArgs) -> Result<(), Failure> {
    let settings = export_settings(args)?;
    if session.dry_run {
        // The export's first request asks the server's time; a dry run stops there, so it
        // takes no lock, claims no folder and writes no state.
        session.client.identity().whoami().await?;
        return Ok(());
    }
    let wait = AuditWait {
        deadline: WAIT_DEADLINE,
        server_time_scale: session.time_scale().round() as u32,
        ..AuditWait::default()
    };
    // Before anything is made in the folder: it may be another export's.
    refuse_other_columns(session, args, &settings)?;
    let (sdk_format, sdk_dir) = match settings.format {
        DayFormat::Csv { title: true } => (ExportFormat::Csv, args.out_dir.clone()),
        DayFormat::Csv { title: false } => (ExportFormat::CsvWithoutTitle, args.out_dir.clone()),
        DayFormat::Ndjson => (ExportFormat::Ndjson, args.out_dir.clone()),
        DayFormat::Schema(_) => {
            let staging = staging(&args.out_dir, settings.format.extension());
            std::fs::create_dir_all(&staging)
                .map_err(|e| Failure::failed(format!("cannot make {}: {e}", staging.display())))?;
            (ExportFormat::Ndjson, staging)
        }
    };
    let show = args.verbose || std::io::stderr().is_terminal();
    // Each day as the SDK writes it: made Parquet, counted, digested, said, shipped.
    let done: Arc<Mutex<Vec<Result<DayFile, Failure>>>> = Arc::default();
    let finish = DayFinisher {
        kind: settings.kind,
        format: settings.format,
        out_dir: args.out_dir.clone(),
        show,
        stdout: args.stdout,
    };
    let on_day = DayObserver::new({
        let done = done.clone();
        let finish = finish.clone();
        move |written: &WrittenDay| {
            let file = finish.day(written.day, true);
            if let Ok(mut done) = done.lock() {
                done.push(file);
            }
        }
    });
    // Days a run left staged (it stopped between the SDK's file and the schema's).
    let mut leftovers = Vec::new();
    if let DayFormat::Schema(_) = settings.format {
        for day in staged_days(&sdk_dir, settings.kind) {
            leftovers.push(finish.day(day, false)?);
        }
    }
    let mut builder = DailyExport::builder(&session.client, settings.kind)
        .start(settings.start)
        .state_file(&args.state)
        .out_dir(&sdk_dir)
        .format(sdk_format)
        .filters(settings.filters.clone())
        .wait(wait)
        .calls_per_day(args.calls_per_day)
        .on_day(on_day);
    if let Some(until) = settings.until {
        builder = builder.until(until);
    }
    let export = builder.build().map_err(|e| export_failure(e, args))?;
    let summary = export.run().await.map_err(|e| export_failure(e, args));
    let written: Vec<Result<DayFile, Failure>> = done
        .lock()
        .map(|mut done| done.drain(..).collect())
        .unwrap_or_default();
    let summary = match summary {
        Ok(summary) => summary,
        Err(failure) => {
            // The days written before the failure are whole: the manifest says so.
            let done: Vec<DayFile> = written.into_iter().filter_map(Result::ok).collect();
            if !done.is_empty() {
                days::write_manifest(
                    &args.out_dir,
                    settings.kind,
                    settings.format,
                    &settings.filters,
                    &done,
                    None,
                )?;
            }
            return Err(failure);
        }
    };
    for at in &summary.reports_left {
        eprintln!(
            "pubapi: report {kind}/{id} could not be deleted: pubapi audit delete {kind}/{id}",
            kind = at.kind,
            id = at.id
        );
    }
    let mut done = leftovers;
    for day in &summary.already_there {
        done.push(finish.day(*day, false)?);
    }
    for file in written {
        done.push(file?);
    }
    done.sort_by_key(|file| file.day);
    let stopped = summary.stopped.clone();
    let merged = match &args.merge {
        Some(into) if !done.is_empty() => {
            Some(days::merge(&done, settings.format, settings.kind, into)?)
        }
        _ => None,
    };
    if !done.is_empty() {
        let manifest = days::write_manifest(
            &args.out_dir,
            settings.kind,
            settings.format,
            &settings.filters,
            &done,
            merged.as_ref(),
        )?;
        if show {
            let rows: u64 = done.iter().map(|d| d.rows).sum();
            eprintln!(
                "{} day(s), {rows} rows; manifest {}{}",
                done.len(),
                manifest.display(),
                merged.as_ref().map_or(String::new(), |m| format!(
                    "; merged into {} ({} rows)",
                    m.path.display(),
                    m.rows
                ))
            );
        }
    }
    if let Some(stop) = &stopped {
        let hint = match stop.resets_in {
            Some(after) => format!(
                "the budget frees up in {}; the next run starts at {}",
                crate::failure::human(after),
                stop.day
            ),
            None => format!(
                "the next run starts at {}; `pubapi quota` shows what is left (--calls-per-day sets what a day needs)",
                stop.day
            ),
        };
        return Err(Failure::new(Exit::Budget, stop.to_string()).hint(hint));
    }
    if show {
        eprintln!("up to date: the next day to export is {}", summary.next_day);
    }
    Ok(())
}

/// What the run does with each day once the SDK has it in place.
#[derive(Clone)]
struct DayFinisher {
    kind: AuditReportKind,
    format: DayFormat,
    out_dir: PathBuf,
    show: bool,
    stdout: bool,
}

impl DayFinisher {
    /// A day the SDK wrote (`new`) or found in place, as the run leaves it: a staged NDJSON
    /// day made Parquet (unless that was done already), counted and digested; its rows said
    /// on a terminal or with `-v`, its lines on stdout with `--stdout`.
    fn day(&self, day: ExportDay, new: bool) -> Result<DayFile, Failure> {
        let target = self
            .out_dir
            .join(format!("{}-{day}.{}", self.kind, self.format.extension()));
        if let DayFormat::Schema(form) = self.format {
            let staged = staging(&self.out_dir, self.format.extension())
                .join(format!("{}-{day}.ndjson", self.kind));
            if staged.exists() {
                days::staged_to(self.kind, form, &staged, &target)?;
            }
        }
        let file = days::day_file(Some(day), &target, self.format)?;
        if self.show {
            eprintln!(
                "{} {} ({day}: {} rows)",
                file.path.display(),
                if new { "written" } else { "was already there" },
                file.rows
            );
        }
        if self.stdout {
            let bytes = std::fs::read(&file.path).map_err(|e| {
                Failure::failed(format!("cannot read {}: {e}", file.path.display()))
            })?;
            crate::output::Output::new(false).bytes(&bytes)?;
        }
        Ok(file)
    }
}

/// The days a Parquet export's staging folder still holds.
fn staged_days(staging: &Path, kind: AuditReportKind) -> Vec<ExportDay> {
    let prefix = format!("{kind}-");
    let mut days: Vec<ExportDay> = std::fs::read_dir(staging)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            ExportDay::parse(name.strip_prefix(&prefix)?.strip_suffix(".ndjson")?)
        })
        .collect();
    days.sort();
    days
}

/// Refuses to write days of one kind and format with other columns than the folder's: the
/// other columns' export (platform into `--out-dir`, the kind's schema through its staging
/// folder) has claimed it.
fn refuse_other_columns(
    session: &Session,
    args: &ExportArgs,
    settings: &ExportSettings,
) -> Result<(), Failure> {
    let ext = settings.format.extension();
    let (other_format, other_dir, other_columns) = match settings.format {
        DayFormat::Schema(SchemaForm::Parquet) => return Ok(()),
        DayFormat::Schema(SchemaForm::Csv) => (ExportFormat::Csv, args.out_dir.clone(), "platform"),
        DayFormat::Schema(SchemaForm::JsonLines) => {
            (ExportFormat::Ndjson, args.out_dir.clone(), "platform")
        }
        DayFormat::Csv { .. } | DayFormat::Ndjson => {
            (ExportFormat::Ndjson, staging(&args.out_dir, ext), "schema")
        }
    };
    let other = DailyExport::builder(&session.client, settings.kind)
        .start(Start::SinceLast)
        .state_file(&args.state)
        .out_dir(&other_dir)
        .format(other_format)
        .filters(settings.filters.clone())
        .build()
        .map_err(|e| export_failure(e, args))?;
    let claim = other.claim_path();
    if claim.exists() {
        return Err(Failure::usage(format!(
            "--out-dir {} holds {} {ext} days with the {other_columns} columns (claimed in {}): \
             days with other columns need another --out-dir",
            args.out_dir.display(),
            settings.kind,
            claim.display()
        ))
        .hint(format!(
            "--columns {other_columns} continues that folder as it was made"
        )));
    }
    Ok(())
}

/// An export's error as an exit code, a message and what to do.
fn export_failure(error: ExportError, args: &ExportArgs) -> Failure {
    let state = args.state.display();
    match error {
        ExportError::Locked { .. } => Failure::failed(error.to_string()).hint(
            "another `pubapi audit export` with this state file is still running; this run did nothing",
        ),
        ExportError::NoState { .. } => Failure::usage(format!(
            "--since-last: there is no state file {state}"
        ))
        .hint("the first run names its first day: --since YYYY-MM-DD"),
        ExportError::StateEmpty { .. } | ExportError::StateCorrupt { .. } => {
            Failure::usage(error.to_string()).hint(format!(
                "restore {state}, or move it away and run again with --since (a day whose file \
                 is in --out-dir is not fetched again)"
            ))
        }
        ExportError::StateMismatch { .. } => Failure::usage(error.to_string())
            .hint("another export needs its own --state file"),
        ExportError::OutDirClaimed { .. } => Failure::usage(error.to_string())
            .hint(
                "an export with other --filters needs its own --out-dir (a claim left by a \
                 first run that wrote no day may be removed)",
            ),
        ExportError::ClaimCorrupt { ref claim, .. } => {
            let claim = claim.display().to_string();
            Failure::usage(error.to_string()).hint(format!(
                "restore {claim}, or remove it if every day in --out-dir was made with these --filters"
            ))
        }
        ExportError::Missing(_) => Failure::usage(error.to_string()),
        ExportError::InvalidRequest(e) => Failure::usage(format!("--filters: {e}")),
        ExportError::Io { path, error } => {
            Failure::failed(format!("cannot use {}: {error}", path.display()))
        }
        ExportError::ServerTime(e) => Failure::from(e),
        ExportError::Day { day, error, .. } => {
            let then = format!("nothing of {day} was kept; the next run does it again");
            let failure = match error {
                DayError::Api(e) => Failure::from(e),
                DayError::Read(e) => Failure::from(e.error),
                DayError::TimedOut { polls, waited } => Failure::new(
                    Exit::Unreachable,
                    format!(
                        "the job is still running after {} ({polls} polls)",
                        crate::failure::human(waited)
                    ),
                ),
                DayError::Download(e) => Failure::new(Exit::Api, format!("the CSV download stopped: {e}")),
                DayError::Write(e) => Failure::failed(format!("cannot write the day's file: {e}")),
                other => Failure::new(Exit::Api, other.to_string()),
            };
            Failure {
                message: format!("the export of {day} failed: {}", failure.message),
                hint: Some(match failure.hint {
                    Some(hint) => format!("{then}; {hint}"),
                    None => then,
                }),
                ..failure
            }
        }
        other => Failure::new(Exit::Api, other.to_string()),
    }
}
