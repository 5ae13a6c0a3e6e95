//! `pubapi audit export`: the SDK's daily export, its flags as settings and its errors as
//! exit codes, messages and hints.

use super::ExportArgs;
use super::kinds::{COMMON, kinds};
use super::report::WAIT_DEADLINE;
use crate::Session;
use crate::failure::{Exit, Failure};
use pubapi_sdk::audit_kinds::FilterShape;
use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{
    AuditRequest, AuditWait, DailyExport, DayError, ExportDay, ExportError, ExportFormat, Start,
};
use serde_json::{Map, Value, json};

/// What `audit export`'s flags say: the kind, where to start, the format and the filters.
pub(super) struct ExportSettings {
    kind: AuditReportKind,
    start: Start,
    format: ExportFormat,
    filters: Map<String, Value>,
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
    let format = if args.format == "ndjson" {
        ExportFormat::Ndjson
    } else {
        ExportFormat::Csv
    };
    let mut filters = match &args.filters {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => {
                return Err(Failure::usage(format!(
                    "--filters `{text}` is not a JSON object (such as '{{\"users\": [\"sam\"]}}')"
                )));
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
        .map_err(|e| Failure::usage(format!("--filters: {e}")))?;
    request
        .validate()
        .map_err(|e| Failure::usage(format!("--filters: {e}")))?;
    Ok(ExportSettings {
        kind,
        start,
        format,
        filters,
    })
}

/// `pubapi audit export`: the SDK's [`DailyExport`], quiet on success unless `-v`.
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
    let export = DailyExport::builder(&session.client, settings.kind)
        .start(settings.start)
        .state_file(&args.state)
        .out_dir(&args.out_dir)
        .format(settings.format)
        .filters(settings.filters)
        .wait(wait)
        .calls_per_day(args.calls_per_day)
        .build()
        .map_err(|e| export_failure(e, args))?;
    let summary = export.run().await.map_err(|e| export_failure(e, args))?;
    if args.verbose {
        for day in &summary.already_there {
            eprintln!("{} was already there", export.file_name(*day));
        }
        for day in &summary.written {
            eprintln!("{} written ({} bytes)", day.path.display(), day.bytes);
        }
    }
    for at in &summary.reports_left {
        eprintln!(
            "pubapi: report {kind}/{id} could not be deleted: pubapi audit delete {kind}/{id}",
            kind = at.kind,
            id = at.id
        );
    }
    if let Some(stop) = &summary.stopped {
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
    if args.verbose {
        eprintln!("up to date: the next day to export is {}", summary.next_day);
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
