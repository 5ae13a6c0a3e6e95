//! One subcommand per report kind, with the kind's filters as flags, and the typed request
//! its flags describe.

use super::{AuditCommand, COLUMNS, COLUMNS_HELP, SchemaForm, Written};
use crate::failure::Failure;
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Command};
use pubapi_sdk::audit_kinds::{self, AuditKind, Filter, FilterShape};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::audit::{AuditDate, AuditRequest};
use pubapi_sdk_ext::error::InputError;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The fields every kind has, which are the common flags `--from`, `--to` and `--format`.
pub(super) const COMMON: [&str; 3] = ["format", "date_start", "date_end"];

/// The 14 kinds, from the SDK's table of them (`pubapi_sdk::audit_kinds`, generated from the
/// spec), sorted by name, each with its filters sorted by name: the order of the help.
pub(super) fn kinds() -> &'static [Kind] {
    static KINDS: OnceLock<Vec<Kind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut kinds: Vec<Kind> = audit_kinds::ALL
            .iter()
            .map(|kind| {
                let mut filters = kind.filters.to_vec();
                filters.sort_by_key(|f| f.name);
                Kind { kind, filters }
            })
            .collect();
        kinds.sort_by_key(|k| k.kind.name);
        kinds
    })
}

/// One report kind and its filters in the order of its flags.
#[derive(Debug)]
pub(super) struct Kind {
    /// The kind: its name, operation, summary and precision.
    pub(super) kind: &'static AuditKind,
    /// Its filters, sorted by name.
    pub(super) filters: Vec<Filter>,
}

impl Kind {
    /// The kind's name, as in the paths (the subcommand).
    pub(super) fn name(&self) -> &'static str {
        self.kind.name
    }
}

pub(super) fn flag_name(property: &str) -> String {
    property.replace('_', "-")
}

pub(super) fn kind_command(kind: &Kind) -> Command {
    let example = format!(
        "Example:\n  pubapi --sandbox audit {} --from 2026-01-01 --to 2026-02-01 --format csv \
         --out {}.csv",
        kind.name(),
        kind.name()
    );
    let mut command = Command::new(kind.name())
        .about(kind.kind.summary)
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
        .arg(
            Arg::new("columns")
                .long("columns")
                .value_parser(COLUMNS)
                .value_name("COLUMNS")
                .help(COLUMNS_HELP),
        )
        .arg(out_arg());
    for filter in &kind.filters {
        let mut arg = Arg::new(filter.name)
            .long(flag_name(filter.name))
            .help(filter.help);
        // A required list of known values (the logins report's `events`) means all of them
        // unless narrowed; any other required filter must be given.
        arg = match filter.shape {
            FilterShape::List { .. } if filter.required && !filter.values.is_empty() => {
                arg.default_values(filter.values)
            }
            _ => arg.required(filter.required),
        };
        arg = match filter.shape {
            FilterShape::List { .. } => arg
                .action(ArgAction::Append)
                .value_delimiter(',')
                .value_name("VALUE"),
            FilterShape::Flag => arg
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_parser(clap::value_parser!(bool))
                .value_name("BOOL"),
            FilterShape::Integer => arg.value_parser(clap::value_parser!(i64)).value_name("N"),
            FilterShape::Text => arg.value_name("VALUE"),
        };
        if !filter.values.is_empty() && filter.shape != FilterShape::Flag {
            arg = arg.value_parser(PossibleValuesParser::new(filter.values));
        }
        command = command.arg(arg);
    }
    command
}

/// The formats one report is written in: the API's two, and two of the JSON report's events.
#[cfg(feature = "parquet")]
const FORMATS: [&str; 4] = ["csv", "json", "jsonl", "parquet"];
#[cfg(not(feature = "parquet"))]
const FORMATS: [&str; 3] = ["csv", "json", "jsonl"];

fn format_arg() -> Arg {
    Arg::new("format")
        .long("format")
        .value_parser(FORMATS)
        .default_value("csv")
        .value_name("FORMAT")
        .help(
            "The report's format: csv (the platform's CSV), json (the platform's JSON array of \
             events), jsonl (one event a line, for log shippers) or parquet (typed columns, \
             with --out)",
        )
}

fn out_arg() -> Arg {
    Arg::new("out")
        .long("out")
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help("Write the report to FILE (written under a temporary name, renamed when whole); - or none: stdout")
}

/// The JSON body the flags describe, typed by the SDK.
pub(super) fn request_of(kind: &Kind, matches: &ArgMatches) -> Result<AuditCommand, Failure> {
    let format = matches
        .get_one::<String>("format")
        .map_or("csv", String::as_str);
    let schema = matches
        .get_one::<String>("columns")
        .map(|columns| columns == "schema");
    let written = match (format, schema) {
        ("csv", None | Some(false)) | ("json", None | Some(false)) => Written::AsSent,
        ("csv", Some(true)) => Written::Schema(SchemaForm::Csv),
        ("jsonl", Some(false)) => Written::JsonLines,
        ("jsonl", _) => Written::Schema(SchemaForm::JsonLines),
        ("parquet", None | Some(true)) => Written::Schema(SchemaForm::Parquet),
        ("json", Some(true)) => {
            return Err(Failure::usage(
                "--columns schema: --format json is the platform's JSON report as sent; the \
                 kind's schema is --format jsonl, csv or parquet",
            ));
        }
        (_, _) => {
            return Err(Failure::usage(
                "--columns platform: parquet has only the kind's schema (--columns schema)",
            ));
        }
    };
    let mut body = Map::new();
    for field in COMMON {
        if let Some(value) = matches.get_one::<String>(field) {
            // Anything but the platform's own bytes is written from the JSON report's events.
            let value = match (field, written) {
                ("format", Written::JsonLines | Written::Schema(_)) => "json",
                (_, _) => value.as_str(),
            };
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
        let id = filter.name;
        let value = match filter.shape {
            FilterShape::List { integers } => match matches.get_many::<String>(id) {
                Some(values) => Some(Value::Array(
                    values
                        .map(|v| list_item(v, integers, filter.name))
                        .collect::<Result<_, _>>()?,
                )),
                None => None,
            },
            FilterShape::Flag => matches.get_one::<bool>(id).map(|b| json!(b)),
            FilterShape::Integer => matches.get_one::<i64>(id).map(|n| json!(n)),
            FilterShape::Text => matches.get_one::<String>(id).map(|s| json!(s)),
        };
        if let Some(value) = value {
            body.insert(filter.name.to_string(), value);
        }
    }
    let kind_id = kind.kind.kind;
    let request = AuditRequest::from_json(kind_id, Value::Object(body)).map_err(in_flags)?;
    let to = dates.pop().unwrap_or_default();
    let from = dates.pop().unwrap_or_default();
    Ok(AuditCommand::Run {
        written,
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
pub(super) fn in_flags(error: Error) -> Failure {
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
pub(super) fn check_dates(
    request: &AuditRequest,
    (from, to): &(String, String),
) -> Result<(), Failure> {
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
