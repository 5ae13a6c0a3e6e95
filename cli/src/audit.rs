//! `pubapi audit`: one subcommand per report kind, with the kind's filters as flags, both
//! read from the spec the SDK embeds (each `POST /v1/audit/<kind>` and its request schema:
//! the property names, enums, descriptions and required fields), so a filter the spec adds
//! is a flag without a change here. The flags become the request's JSON body, which the
//! SDK types and validates ([`AuditRequest::from_json`], [`AuditRequest::validate`]) before
//! anything starts.
//!
//! A run creates the job, polls it no more often than the platform allows (a status line
//! says the job's state, the next poll and the time elapsed), then downloads the report to
//! a temporary file beside `--out` (a counter says bytes or events and the rate) and renames
//! it at the end: an interrupted run leaves no half-written report.

use crate::Session;
use crate::failure::{Exit, Failure};
use crate::progress;
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, Subcommand};
use futures_util::StreamExt;
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::audit::{
    AuditDate, AuditRequest, AuditWait, DailyExport, DayError, ExportDay, ExportError,
    ExportFormat, JobObserver, JobState, ReportLocation, ReportRead, Start,
};
use pubapi_sdk_ext::error::InputError;
use pubapi_sdk_ext::waiter::WaitError;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// The fields every kind has, which are the common flags `--from`, `--to` and `--format`.
const COMMON: [&str; 3] = ["format", "date_start", "date_end"];

/// One filter of a kind's request, from its schema.
#[derive(Debug, Clone)]
struct Filter {
    /// The property name (`access_points`).
    name: String,
    /// `array`, `boolean`, `integer` or `string`.
    shape: Shape,
    /// The enum's values, when the schema lists them.
    values: Vec<String>,
    /// The description's first sentence.
    help: String,
    /// In the schema's `required`.
    required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    List { integers: bool },
    Flag,
    Integer,
    Text,
}

/// One report kind: its path segment, summary and filters.
#[derive(Debug, Clone)]
struct Kind {
    name: String,
    summary: String,
    filters: Vec<Filter>,
}

fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| serde_yaml::from_str(pubapi_sdk::SPEC_YAML).unwrap_or(Value::Null))
}

fn resolve<'a>(spec: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap_or_default();
            &spec["components"]["schemas"][name]
        }
        None => schema,
    }
}

fn first_sentence(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.find(". ") {
        Some(end) => text[..=end].to_string(),
        None => text,
    }
}

/// The values a schema lists: its `enum`, or the reference's spellings of a value the spec
/// takes in any letter case (`x-pubapi-spellings`, which the SDK sends).
fn enum_values(spec: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(spec, schema);
    schema["enum"]
        .as_array()
        .or_else(|| schema["x-pubapi-spellings"].as_array())
        .map(|values| {
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The 14 kinds, in the spec's order.
fn kinds() -> &'static [Kind] {
    static KINDS: OnceLock<Vec<Kind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let spec = spec();
        let Some(paths) = spec["paths"].as_object() else {
            return Vec::new();
        };
        paths
            .iter()
            .filter_map(|(path, item)| {
                let name = path.strip_prefix("/v1/audit/")?;
                let post = item.get("post")?;
                if name.contains('/') || name.contains('{') {
                    return None;
                }
                let schema = resolve(
                    spec,
                    &post["requestBody"]["content"]["application/json"]["schema"],
                );
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let filters = schema["properties"]
                    .as_object()?
                    .iter()
                    .filter(|(property, _)| !COMMON.contains(&property.as_str()))
                    .map(|(property, field)| {
                        let field = resolve(spec, field);
                        let (shape, values) = match field["type"].as_str() {
                            Some("array") => (
                                Shape::List {
                                    integers: resolve(spec, &field["items"])["type"] == "integer",
                                },
                                enum_values(spec, &field["items"]),
                            ),
                            Some("boolean") => (Shape::Flag, Vec::new()),
                            Some("integer") => (Shape::Integer, Vec::new()),
                            _ => (Shape::Text, enum_values(spec, field)),
                        };
                        Filter {
                            name: property.clone(),
                            shape,
                            values,
                            help: first_sentence(field["description"].as_str().unwrap_or("")),
                            required: required.contains(&property.as_str()),
                        }
                    })
                    .collect();
                Some(Kind {
                    name: name.to_string(),
                    summary: post["summary"].as_str().unwrap_or(name).to_string(),
                    filters,
                })
            })
            .collect()
    })
}

fn flag_name(property: &str) -> String {
    property.replace('_', "-")
}

fn kind_command(kind: &Kind) -> Command {
    let example = format!(
        "Example:\n  pubapi --sandbox audit {} --from 2026-01-01 --to 2026-02-01 --format csv \
         --out {}.csv",
        kind.name, kind.name
    );
    let mut command = Command::new(kind.name.clone())
        .about(kind.summary.clone())
        .after_help(example)
        .arg(
            Arg::new("date_start")
                .long("from")
                .value_name("DATE")
                .required(true)
                .help("Start: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
        )
        .arg(
            Arg::new("date_end")
                .long("to")
                .value_name("DATE")
                .required(true)
                .help("End, after --from: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
        )
        .arg(format_arg())
        .arg(out_arg());
    for filter in &kind.filters {
        let mut arg = Arg::new(filter.name.clone())
            .long(flag_name(&filter.name))
            .help(filter.help.clone());
        // A required list of known values (the logins report's `events`) means all of them
        // unless narrowed; any other required filter must be given.
        arg = match filter.shape {
            Shape::List { .. } if filter.required && !filter.values.is_empty() => {
                arg.default_values(filter.values.clone())
            }
            _ => arg.required(filter.required),
        };
        arg = match filter.shape {
            Shape::List { .. } => arg
                .action(ArgAction::Append)
                .value_delimiter(',')
                .value_name("VALUE"),
            Shape::Flag => arg
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_parser(clap::value_parser!(bool))
                .value_name("BOOL"),
            Shape::Integer => arg.value_parser(clap::value_parser!(i64)).value_name("N"),
            Shape::Text => arg.value_name("VALUE"),
        };
        if !filter.values.is_empty() && filter.shape != Shape::Flag {
            arg = arg.value_parser(PossibleValuesParser::new(filter.values.clone()));
        }
        command = command.arg(arg);
    }
    command
}

fn format_arg() -> Arg {
    Arg::new("format")
        .long("format")
        .value_parser(["csv", "json"])
        .default_value("csv")
        .value_name("FORMAT")
        .help("The report's format: csv (the platform's CSV) or json (a JSON array of events)")
}

fn out_arg() -> Arg {
    Arg::new("out")
        .long("out")
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help("Write the report to FILE (written under a temporary name, renamed when whole); - or none: stdout")
}

/// `pubapi audit …`: a report kind, or a job or report command.
#[derive(Debug)]
pub enum AuditCommand {
    /// Run a report of one kind.
    Run {
        /// The kind.
        kind: AuditReportKind,
        /// The request, typed by the SDK.
        request: Box<AuditRequest>,
        /// `--out`.
        out: Option<PathBuf>,
        /// `--from` and `--to` as given, for messages that name them.
        dates: (String, String),
    },
    /// A job or report command.
    Job(JobCommand),
}

/// `pubapi audit status|get|delete`.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Where an audit job stands: running, or completed with the report's location.
    #[command(after_help = "Example:\n  pubapi audit status 6f1c2a")]
    Status {
        /// The job id a run printed.
        job: String,
    },
    /// Download a finished report (KIND/ID, as a run or `status` prints it).
    #[command(
        after_help = "Example:\n  pubapi audit get logins/6f1c2a --format csv --out logins.csv"
    )]
    Get(GetArgs),
    /// Delete a finished report.
    #[command(after_help = "Example:\n  pubapi audit delete logins/6f1c2a")]
    Delete {
        /// The report, KIND/ID.
        report: String,
    },
    /// Export one file per whole UTC day into a folder, run after run (made for cron).
    ///
    /// A day is whole once it has ended by the server's clock. The state file remembers the
    /// days done and the job of the day in hand, so a failed or timed-out day is done again
    /// from the same report; no day twice, none skipped; the
    /// run stops with exit code 6 before the daily budget would run out. Quiet on success
    /// unless -v; one run at a time per state file.
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
}

const EXPORT_HELP: &str = "\
Files: DIR/<kind>-YYYY-MM-DD.<csv|ndjson>, each written to a temporary name and renamed when
whole. The state file (FILE) says the first day not yet written, and the report job made for
it until it is written (the next run reads that report); FILE.lock keeps a second run from
starting while one runs. DIR holds the days of one set of filters per kind and format (the
first run claims it in DIR/.pubapi-export-<kind>-<ext>.json): other filters need another DIR.

--since DATE with an existing state file continues it when it started on DATE for the same
kind, format and filters, and is refused otherwise: a cron line can always carry --since.
--since-last needs the state file.

Examples:
  pubapi audit export logins --since 2026-01-01 --state logins.state --out-dir audit/
  pubapi audit export logins --since-last --state logins.state --out-dir audit/   # nightly
  pubapi audit export workflows --since-last --state wf.state --out-dir audit/ \\
      --filters '{\"workflow_types\": [\"APPROVAL\"]}' --format ndjson

Exit codes: as pubapi --help; 6 when the run stopped before the daily budget would run out
(the next run resumes at the day it names), 1 when another run holds the lock.";

/// `pubapi audit export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The report kind, any of the 14 (logins, files, workflows, …).
    pub kind: String,
    /// The first day to export, YYYY-MM-DD (UTC).
    #[arg(
        long,
        value_name = "DATE",
        required_unless_present = "since_last",
        conflicts_with = "since_last"
    )]
    pub since: Option<String>,
    /// Continue from the first day the state file does not have (the file must exist).
    #[arg(long)]
    pub since_last: bool,
    /// The state file: which days are complete.
    #[arg(long, value_name = "FILE")]
    pub state: PathBuf,
    /// The folder the day files go to (it must exist, except for --dry-run).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// The files' format: csv (the platform's CSV) or ndjson (one JSON event a line).
    #[arg(long, value_parser = ["csv", "ndjson"], default_value = "csv", value_name = "FORMAT")]
    pub format: String,
    /// The kind's filters as a JSON object of its request fields (as `pubapi audit <kind>
    /// --help` lists them); a required list left out means all its values.
    #[arg(long, value_name = "JSON")]
    pub filters: Option<String>,
    /// The calls one day is expected to take (create, polls, read, delete), compared with
    /// the budget left before each day.
    #[arg(long, value_name = "N", default_value_t = pubapi_sdk_ext::audit::DailyExport::DEFAULT_CALLS_PER_DAY)]
    pub calls_per_day: u32,
    /// Say which days were written (on stderr).
    #[arg(short, long)]
    pub verbose: bool,
}

/// `pubapi audit get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The report, KIND/ID.
    pub report: String,
    /// The format the report was created in.
    #[arg(long, value_parser = ["csv", "json"], default_value = "csv")]
    pub format: String,
    /// Write the report to FILE (renamed into place when whole); - or none: stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl FromArgMatches for AuditCommand {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        match kinds().iter().find(|k| k.name == name) {
            Some(kind) => request_of(kind, sub).map_err(|failure| {
                clap::Error::raw(clap::error::ErrorKind::ValueValidation, failure.message)
            }),
            None => JobCommand::from_arg_matches(matches).map(AuditCommand::Job),
        }
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = AuditCommand::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for AuditCommand {
    fn augment_subcommands(command: Command) -> Command {
        let command = command.subcommands(kinds().iter().map(kind_command));
        JobCommand::augment_subcommands(command)
            .subcommand_required(true)
            .after_help(
                "Examples:\n  pubapi --sandbox audit logins --from 2026-01-01 --to 2026-02-01 \
                 --events failed_attempts --format csv --out failed.csv\n  \
                 pubapi audit files --from 2026-03-01 --to 2026-03-31 --folders /Finance \
                 --format json",
            )
    }

    fn augment_subcommands_for_update(command: Command) -> Command {
        Self::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        kinds().iter().any(|k| k.name == name) || JobCommand::has_subcommand(name)
    }
}

/// The JSON body the flags describe, typed by the SDK.
fn request_of(kind: &Kind, matches: &ArgMatches) -> Result<AuditCommand, Failure> {
    let mut body = Map::new();
    for field in COMMON {
        if let Some(value) = matches.get_one::<String>(field) {
            body.insert(field.to_string(), json!(value));
        }
    }
    let mut dates = Vec::new();
    for (field, flag) in [("date_start", "--from"), ("date_end", "--to")] {
        let value = matches
            .get_one::<String>(field)
            .cloned()
            .unwrap_or_default();
        if AuditDate::parse(&value).is_none() {
            return Err(Failure::usage(format!(
                "{flag} `{value}` is not a date: give a day as YYYY-MM-DD (such as 2026-01-31) \
                 or a UTC time as YYYY-MM-DDTHH:MM:SSZ"
            )));
        }
        dates.push(value);
    }
    for filter in &kind.filters {
        let id = filter.name.as_str();
        let value = match filter.shape {
            Shape::List { integers } => match matches.get_many::<String>(id) {
                Some(values) => Some(Value::Array(
                    values
                        .map(|v| list_item(v, integers, &filter.name))
                        .collect::<Result<_, _>>()?,
                )),
                None => None,
            },
            Shape::Flag => matches.get_one::<bool>(id).map(|b| json!(b)),
            Shape::Integer => matches.get_one::<i64>(id).map(|n| json!(n)),
            Shape::Text => matches.get_one::<String>(id).map(|s| json!(s)),
        };
        if let Some(value) = value {
            body.insert(filter.name.clone(), value);
        }
    }
    let kind_id: AuditReportKind = kind
        .name
        .parse()
        .map_err(|_| Failure::usage(format!("unknown report kind {}", kind.name)))?;
    let request = AuditRequest::from_json(kind_id, Value::Object(body)).map_err(in_flags)?;
    let to = dates.pop().unwrap_or_default();
    let from = dates.pop().unwrap_or_default();
    Ok(AuditCommand::Run {
        kind: kind_id,
        request: Box::new(request),
        out: matches.get_one::<PathBuf>("out").cloned(),
        dates: (from, to),
    })
}

/// The flag a request field is given with.
fn flag_of(field: &str) -> String {
    match field {
        "date_start" => "--from".into(),
        "date_end" => "--to".into(),
        other => format!("--{}", flag_name(other)),
    }
}

/// The SDK's refusal of a request, in the words of the flags (`--to`, not `date_end`).
fn in_flags(error: Error) -> Failure {
    match error {
        Error::InvalidInput(InputError::Invalid { field, problem }) => {
            let problem = problem
                .replace("date_start", "--from")
                .replace("date_end", "--to");
            Failure::usage(format!("{}: {problem}", flag_of(field)))
        }
        other => Failure::from(other),
    }
}

/// `--to` must end after `--from` begins (by day, for the kinds whose dates have no time); a
/// day given as `--to` is the last day covered, so `--from D --to D` is the day `D`.
fn check_dates(request: &AuditRequest, (from, to): &(String, String)) -> Result<(), Failure> {
    let (Some(start), Some(end)) = (AuditDate::parse(from), AuditDate::parse(to)) else {
        return Ok(());
    };
    let (start, end, by_day) = if request.ignores_time() {
        (
            start.date_only(),
            end.date_only(),
            start.has_time() || end.has_time(),
        )
    } else {
        (start, end, false)
    };
    if end.ends_after(&start) {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "--to {to} is not after --from {from}{}: the report covers the time from --from up to \
         --to (a day as --to is the last day covered)",
        if by_day {
            " (this kind of report compares days only)"
        } else {
            ""
        }
    )))
}

fn list_item(value: &str, integers: bool, name: &str) -> Result<Value, Failure> {
    if !integers {
        return Ok(json!(value));
    }
    value.trim().parse::<i64>().map(|n| json!(n)).map_err(|_| {
        Failure::usage(format!(
            "--{} takes whole numbers, not `{value}`",
            flag_name(name)
        ))
    })
}

/// The file `--out` names: `None` for standard output (no `--out`, or `--out -`).
fn out_file(out: Option<&Path>) -> Option<&Path> {
    out.filter(|path| *path != Path::new("-"))
}

/// Checks what needs no network (dates, required filters, `--out`'s folder, a job id) before
/// a sandbox starts or a request leaves; a `dry_run` writes nothing, so the folders it would
/// write to need not exist yet.
pub fn check_before_start(command: &AuditCommand, dry_run: bool) -> Result<(), Failure> {
    match command {
        AuditCommand::Run {
            request,
            out,
            dates,
            ..
        } => {
            check_dates(request, dates)?;
            request.validate().map_err(in_flags)?;
            check_out(out.as_deref(), dry_run)
        }
        AuditCommand::Job(JobCommand::Get(get)) => {
            location(&get.report)?;
            check_out(get.out.as_deref(), dry_run)
        }
        AuditCommand::Job(JobCommand::Delete { report }) => location(report).map(drop),
        AuditCommand::Job(JobCommand::Status { job }) => job_id(job).map(drop),
        AuditCommand::Job(JobCommand::Export(args)) => {
            export_settings(args)?;
            if !dry_run && !args.out_dir.is_dir() {
                return Err(Failure::usage(format!(
                    "--out-dir {}: no such folder",
                    args.out_dir.display()
                )));
            }
            Ok(())
        }
    }
}

fn check_out(out: Option<&Path>, dry_run: bool) -> Result<(), Failure> {
    let Some(out) = out_file(out) else {
        return Ok(());
    };
    if dry_run {
        return Ok(());
    }
    let folder = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(Failure::usage(format!(
            "--out {}: the folder {} does not exist",
            out.display(),
            folder.display()
        )));
    }
    if out.is_dir() {
        return Err(Failure::usage(format!(
            "--out {}: is a folder; give a file name",
            out.display()
        )));
    }
    Ok(())
}

/// `text` as an audit job's id: one word, as a run prints it (`audit job 6f1c2a created`).
fn job_id(text: &str) -> Result<&str, Failure> {
    let why = if text.trim().is_empty() {
        Some("it is empty".to_string())
    } else if let Some((kind, id)) = text.split_once('/') {
        let report = kinds().iter().any(|k| k.name == kind) && !id.is_empty() && !id.contains('/');
        Some(if report {
            format!(
                "it has a `/`; {text} looks like a report (KIND/ID): `pubapi audit get {text}` \
                 downloads it, `pubapi audit delete {text}` deletes it"
            )
        } else {
            "a job id has no `/`".to_string()
        })
    } else if text.contains('\\') || text == "." || text == ".." {
        Some("a job id has no `\\` and is not `.` or `..`".to_string())
    } else {
        None
    };
    match why {
        None => Ok(text),
        Some(why) => Err(
            Failure::usage(format!("`{text}` is not an audit job id: {why}")).hint(
                "a job id is the one word a run prints when it creates the job \
             (`audit job 6f1c2a created`): pubapi audit status 6f1c2a",
            ),
        ),
    }
}

/// `KIND/ID` as a report location.
fn location(text: &str) -> Result<ReportLocation, Failure> {
    let (kind, id) = text
        .split_once('/')
        .filter(|(kind, id)| !kind.is_empty() && !id.is_empty() && !id.contains('/'))
        .ok_or_else(|| {
            Failure::usage(format!(
                "`{text}` is not KIND/ID (such as logins/6f1c2a, as a run prints it)"
            ))
        })?;
    let kind = kind.parse::<AuditReportKind>().map_err(|_| {
        let known: Vec<&str> = kinds().iter().map(|k| k.name.as_str()).collect();
        Failure::usage(format!(
            "`{kind}` is not a report kind; kinds: {}",
            known.join(", ")
        ))
    })?;
    Ok(ReportLocation {
        kind,
        id: id.to_string(),
    })
}

/// Runs `pubapi audit …`.
pub async fn run(session: &Session, command: AuditCommand) -> Result<(), Failure> {
    match command {
        AuditCommand::Run {
            kind, request, out, ..
        } => {
            let format = request.format();
            let job = session.client.audit().create(*request).await?;
            eprintln!("audit job {} created ({kind} report, {format})", job.id);
            let pending = PendingJob {
                id: Some(job.id.clone()),
                in_sandbox: session.sandbox.is_some(),
            };
            let at = wait(session, &job).await?;
            drop(pending.done());
            download(session, &at, format, out_file(out.as_deref())).await?;
            // A report in this run's own sandbox is gone with it: nothing to delete later.
            if session.sandbox.is_none() {
                eprintln!(
                    "report {kind}/{id} stays on the platform until deleted: \
                     pubapi audit delete {kind}/{id}",
                    id = at.id
                );
            }
            Ok(())
        }
        AuditCommand::Job(JobCommand::Status { job }) => {
            let state = session.client.audit().job_state(job_id(&job)?).await?;
            let (status, report) = match &state {
                JobState::Running { status } => (status.clone(), None),
                JobState::Completed(at) => (
                    "completed".to_string(),
                    Some(format!("{}/{}", at.kind, at.id)),
                ),
            };
            if session.out.json {
                return session
                    .out
                    .json_document(&json!({"job": job, "status": status, "report": report}));
            }
            session.out.pairs(&[
                ("job", job),
                ("status", status),
                ("report", report.unwrap_or_else(|| "-".into())),
            ])
        }
        AuditCommand::Job(JobCommand::Get(get)) => {
            let at = location(&get.report)?;
            let format = if get.format == "json" {
                AuditFormat::Json
            } else {
                AuditFormat::Csv
            };
            download(session, &at, format, out_file(get.out.as_deref())).await
        }
        AuditCommand::Job(JobCommand::Export(args)) => export(session, &args).await,
        AuditCommand::Job(JobCommand::Delete { report }) => {
            let at = location(&report)?;
            session.client.audit().remove(&at).await?;
            eprintln!("report {report} deleted");
            Ok(())
        }
    }
}

/// Says how to follow a job when the run stops before the job finishes (Ctrl-C, an error);
/// nothing when the job was in this run's own sandbox, which ends with the run.
struct PendingJob {
    id: Option<String>,
    in_sandbox: bool,
}

impl PendingJob {
    fn done(mut self) -> Self {
        self.id = None;
        self
    }
}

impl Drop for PendingJob {
    fn drop(&mut self) {
        if let (Some(id), false) = (self.id.take(), self.in_sandbox) {
            eprintln!("the job {id} goes on without this run: pubapi audit status {id}");
        }
    }
}

/// How long a run waits for its job, in the server's time.
const WAIT_DEADLINE: Duration = Duration::from_secs(3600);

/// Waits for the job with the SDK's [`AuditWait`] (polls no more often than the platform
/// allows, in the server's time), a status line saying the job's state, the next poll and
/// the time elapsed.
async fn wait(
    session: &Session,
    job: &pubapi_sdk_ext::audit::AuditJob,
) -> Result<ReportLocation, Failure> {
    let line = progress::status(format!("audit job {}: polling", job.id));
    let interval = session.real(AuditWait::MIN_INTERVAL);
    // The last state a poll answered, and when the next poll goes.
    let last: Arc<Mutex<Option<(String, Instant)>>> = Arc::default();
    let how = AuditWait {
        deadline: WAIT_DEADLINE,
        server_time_scale: session.time_scale().round() as u32,
        on_status: JobObserver::new({
            let last = last.clone();
            move |state| {
                if let JobState::Running { status } = state
                    && let Ok(mut last) = last.lock()
                {
                    *last = Some((status.clone(), Instant::now() + interval));
                }
            }
        }),
        ..AuditWait::default()
    };
    let show = async {
        loop {
            let shown = last.lock().ok().and_then(|last| last.clone());
            if let Some((status, next)) = shown {
                let left = next.saturating_duration_since(Instant::now());
                line.set_message(if left.is_zero() {
                    format!("audit job {}: {status} · polling", job.id)
                } else {
                    format!(
                        "audit job {}: {status} · next poll in {}",
                        job.id,
                        progress::clock(left)
                    )
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    let audit = session.client.audit();
    let waited = tokio::select! {
        waited = audit.wait(job, how) => waited,
        _ = show => unreachable!("the status line shows until the wait ends"),
    };
    line.finish_and_clear();
    waited.map_err(|error| match error {
        WaitError::TimedOut { polls, waited, .. } => {
            let status = last
                .lock()
                .ok()
                .and_then(|last| last.clone())
                .map_or_else(|| "running".to_string(), |(status, _)| status);
            let failure = Failure::new(
                Exit::Unreachable,
                format!(
                    "the job {} is still {status} after {} ({polls} polls)",
                    job.id,
                    crate::failure::human(waited)
                ),
            );
            if session.sandbox.is_some() {
                failure
            } else {
                failure.hint(format!(
                    "pubapi audit status {id}; then pubapi audit get KIND/ID",
                    id = job.id
                ))
            }
        }
        other => Failure::from(other),
    })
}

/// A report file being written: a temporary name beside the target, removed unless
/// [`PartFile::commit`] renames it into place.
struct PartFile {
    part: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl PartFile {
    async fn create(target: &Path) -> Result<(PartFile, tokio::fs::File), Failure> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".into());
        let part = target.with_file_name(format!(".{name}.part-{}", std::process::id()));
        let file = tokio::fs::File::create(&part)
            .await
            .map_err(|e| Failure::failed(format!("cannot write {}: {e}", part.display())))?;
        Ok((
            PartFile {
                part,
                target: target.to_path_buf(),
                committed: false,
            },
            file,
        ))
    }

    fn commit(mut self) -> Result<(), Failure> {
        std::fs::rename(&self.part, &self.target).map_err(|e| {
            Failure::failed(format!(
                "cannot rename {} to {}: {e}",
                self.part.display(),
                self.target.display()
            ))
        })?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.part);
        }
    }
}

/// Counts what passes through into a progress bar.
struct Counting<W> {
    inner: W,
    bar: indicatif::ProgressBar,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Counting<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            self.bar.inc(*n as u64);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn write_failed(what: &str, e: std::io::Error) -> Failure {
    if what == "stdout" {
        Failure::stdout(&e)
    } else {
        Failure::failed(format!("cannot write {what}: {e}"))
    }
}

/// Downloads the report at `at` to `out` (or stdout).
async fn download(
    session: &Session,
    at: &ReportLocation,
    format: AuditFormat,
    out: Option<&Path>,
) -> Result<(), Failure> {
    let label = format!("report {}/{}", at.kind, at.id);
    let (part, writer): (Option<PartFile>, Box<dyn AsyncWrite + Unpin + Send>) = match out {
        Some(path) => {
            let (part, file) = PartFile::create(path).await?;
            (Some(part), Box::new(file))
        }
        None => (None, Box::new(tokio::io::stdout())),
    };
    let what = out.map_or("stdout".to_string(), |p| p.display().to_string());
    match format {
        AuditFormat::Csv => {
            let report = session.client.audit().csv(at).await?;
            let mut writer = Counting {
                inner: writer,
                bar: progress::bytes(label),
            };
            let copied = report.copy_to(&mut writer).await;
            writer.bar.finish_and_clear();
            copied.map_err(|e| match e {
                pubapi_sdk_ext::audit::CsvError::Write(e) => write_failed(&what, e),
                e => Failure::new(Exit::Api, format!("the CSV download stopped: {e}")),
            })?;
            writer.flush().await.map_err(|e| write_failed(&what, e))?;
        }
        _ => {
            let bar = progress::items(label);
            let mut writer = tokio::io::BufWriter::new(writer);
            // As sent: every field the server sent, in its order and spelling.
            let mut events = session
                .client
                .audit()
                .events_as_sent(at.clone(), ReportRead::default());
            let mut first = true;
            writer
                .write_all(b"[")
                .await
                .map_err(|e| write_failed(&what, e))?;
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| {
                    bar.finish_and_clear();
                    let failure = Failure::from(e.error);
                    if session.sandbox.is_some() {
                        return failure;
                    }
                    failure.hint(format!(
                        "the report is whole on the platform: pubapi audit get {}/{} --format json",
                        at.kind, at.id
                    ))
                })?;
                // One event a line, whatever whitespace the server sent it with.
                let text = pubapi_sdk_ext::audit::one_line(&event);
                let separator: &[u8] = if first { b"\n" } else { b",\n" };
                first = false;
                writer
                    .write_all(separator)
                    .await
                    .map_err(|e| write_failed(&what, e))?;
                writer
                    .write_all(text.as_bytes())
                    .await
                    .map_err(|e| write_failed(&what, e))?;
                bar.inc(1);
            }
            bar.finish_and_clear();
            writer
                .write_all(b"\n]\n")
                .await
                .map_err(|e| write_failed(&what, e))?;
            writer.flush().await.map_err(|e| write_failed(&what, e))?;
        }
    }
    if let Some(part) = part {
        part.commit()?;
        eprintln!("{} written", what);
    }
    Ok(())
}

/// What `audit export`'s flags say: the kind, where to start, the format and the filters.
struct ExportSettings {
    kind: AuditReportKind,
    start: Start,
    format: ExportFormat,
    filters: Map<String, Value>,
}

fn export_settings(args: &ExportArgs) -> Result<ExportSettings, Failure> {
    let kind_spec = kinds()
        .iter()
        .find(|k| k.name == args.kind)
        .ok_or_else(|| {
            let known: Vec<&str> = kinds().iter().map(|k| k.name.as_str()).collect();
            Failure::usage(format!(
                "`{}` is not a report kind; kinds: {}",
                args.kind,
                known.join(", ")
            ))
        })?;
    let kind: AuditReportKind = kind_spec
        .name
        .parse()
        .map_err(|_| Failure::usage(format!("unknown report kind {}", kind_spec.name)))?;
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
            && matches!(filter.shape, Shape::List { .. })
            && !filter.values.is_empty()
            && !filters.contains_key(&filter.name)
        {
            filters.insert(filter.name.clone(), json!(filter.values));
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
async fn export(session: &Session, args: &ExportArgs) -> Result<(), Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn every_kind_of_the_spec_is_a_subcommand() {
        let names: Vec<&str> = kinds().iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names.len(), 14, "{names:?}");
        for name in names {
            assert!(name.parse::<AuditReportKind>().is_ok(), "{name}");
        }
    }

    #[test]
    fn filters_come_with_their_enums_and_required_marks() {
        let logins = kinds().iter().find(|k| k.name == "logins").unwrap();
        let events = logins.filters.iter().find(|f| f.name == "events").unwrap();
        assert!(events.required);
        assert!(
            events.values.iter().any(|v| v == "failed_attempts"),
            "{events:?}"
        );
        let suppress = logins
            .filters
            .iter()
            .find(|f| f.name == "suppress_emails")
            .unwrap();
        assert_eq!(suppress.shape, Shape::Flag);
    }

    fn audit_of(command: &crate::args::Command) -> &AuditCommand {
        match command {
            crate::args::Command::Audit(audit) => audit,
            _ => panic!("not an audit command"),
        }
    }

    fn parse(line: &str) -> Result<crate::args::Cli, clap::Error> {
        crate::args::Cli::try_parse_from(line.split_whitespace())
    }

    #[test]
    fn flags_become_the_typed_request() {
        let cli = parse(
            "pubapi audit logins --from 2026-01-01 --to 2026-02-01 --events logins,failed_attempts \
             --suppress-emails=false --format json",
        )
        .unwrap();
        let crate::args::Command::Audit(AuditCommand::Run { request, .. }) = cli.command else {
            panic!("{:?}", cli.command)
        };
        let AuditRequest::Logins(body) = *request else {
            panic!("{request:?}")
        };
        assert_eq!(body.events.len(), 2);
        assert!(!body.suppress_emails);
        assert_eq!(body.format, AuditFormat::Json);
    }

    #[test]
    fn bad_input_is_refused_before_anything_starts() {
        let refused: &[(&str, &str)] = &[
            ("pubapi audit logins --from 2026-01-01", "--to"),
            (
                "pubapi audit logins --from 2026-01-01 --to 2026-02-01 --events nope",
                "nope",
            ),
            (
                "pubapi audit nope --from 2026-01-01 --to 2026-02-01",
                "nope",
            ),
        ];
        for (line, named) in refused {
            let error = parse(line).unwrap_err().to_string();
            assert!(error.contains(named), "{line}: {error}");
        }
        let cli = parse("pubapi audit users --from 2026-02-01 --to 2026-01-01").unwrap();
        let failure = check_before_start(audit_of(&cli.command), false).unwrap_err();
        assert_eq!(failure.exit, Exit::Usage);
        assert!(
            failure
                .message
                .contains("--to 2026-01-01 is not after --from 2026-02-01"),
            "{failure}"
        );
        let cli = parse("pubapi audit get logins-abc").unwrap();
        assert!(
            check_before_start(audit_of(&cli.command), false)
                .unwrap_err()
                .message
                .contains("KIND/ID")
        );
    }
}
