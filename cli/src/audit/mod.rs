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
//!
//! How the parts fit: this module holds the commands (clap's view of them) and runs them;
//! `kinds` makes one subcommand per report kind and turns its flags into the typed request;
//! `report` waits for a job and downloads a report (`run`, `get`); `export` is
//! `audit export`, the SDK's daily export with its flags and its errors in the CLI's words;
//! `columns` is the typed schema of each kind's rows, `parquet` writes them (feature
//! `parquet`), `days` counts, digests, converts and merges an export's day files and writes
//! its manifest. Uses go one way: `columns` ← `parquet` ← `kinds` ← `report` ← `days` ←
//! `export` ← here.

pub(crate) mod columns;
mod days;
mod export;
mod kinds;
#[cfg(feature = "parquet")]
pub(crate) mod parquet;
mod report;

use crate::Session;
use crate::failure::Failure;
use clap::{ArgMatches, Args, Command, FromArgMatches, Subcommand};
use export::{export, export_settings};
use kinds::{check_dates, in_flags, kind_command, kinds, request_of};
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use pubapi_sdk_ext::audit::{AuditRequest, JobState};
use report::{FollowUp, check_out, download, job_id, location, out_file, wait, write_as};

/// `KIND/ID` as a report location, refused in words that name the form.
pub(crate) use report::location as report_location;
use serde_json::json;
use std::path::{Path, PathBuf};

/// How a report's events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// In the format the report was made in (the platform's CSV, or a JSON array of its
    /// events), byte for byte.
    AsSent,
    /// One JSON event a line, as the platform sent it (`--format jsonl --columns platform`).
    JsonLines,
    /// In the kind's schema (`columns`), from the JSON report's events.
    Schema(SchemaForm),
}

/// A format of rows in the kind's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaForm {
    /// CSV whose header is the schema's column names (`--columns schema`).
    Csv,
    /// One JSON object a line, keyed by the schema's column names.
    JsonLines,
    /// Typed Parquet columns (feature `parquet`).
    Parquet,
}

/// The values `--columns` takes.
pub(crate) const COLUMNS: [&str; 2] = ["platform", "schema"];

/// The help of `--columns`.
pub(crate) const COLUMNS_HELP: &str = "The columns: platform (as the platform sent them: its \
     CSV byte for byte, its JSON events) or schema (the kind's one schema, typed, the same in \
     csv, jsonl/ndjson and parquet; see `pubapi audit export --help`). Default: platform for \
     csv, schema for jsonl/ndjson and parquet";

/// `pubapi audit …`: a report kind, or a job or report command.
#[derive(Debug)]
pub enum AuditCommand {
    /// Run a report of one kind.
    Run {
        /// How its events are written.
        written: Written,
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
Files: DIR/<kind>-YYYY-MM-DD.<csv|ndjson|parquet>, each written to a temporary name and renamed
when whole. The state file (FILE) says the first day not yet written, and the report job made
for it until it is written (the next run reads that report); FILE.lock keeps a second run from
starting while one runs. DIR holds the days of one set of filters per kind, format and columns
(the first run claims it in DIR/.pubapi-export-<kind>-<ext>.json, or for the kind's schema in
DIR/.pubapi-<ext>-staging/): other filters or other columns need another DIR.

--since DATE with an existing state file continues it when it started on DATE for the same
kind, format and filters, and is refused otherwise: a cron line can always carry --since.
--since-last needs the state file.

Examples:
  pubapi audit export logins --since 2026-01-01 --state logins.state --out-dir audit/
  pubapi audit export logins --since-last --state logins.state --out-dir audit/   # nightly
  pubapi audit export workflows --since-last --state wf.state --out-dir audit/ \\
      --filters '{\"workflow_types\": [\"APPROVAL\"]}' --format ndjson
  pubapi audit export files --since 2026-03-02 --until 2026-03-08 --state week.state \\
      --out-dir week/ --format parquet --filters '{\"folders\": [\"/Shared\"]}' --merge week.parquet

Columns: one schema per kind, the same in --format parquet, --format ndjson and --format csv
--columns schema: a column per field of the kind's event (cli/docs/audit-columns.md lists
each kind's), named in snake case after its JSON field (ip_address from ipAddress), in the
order of the platform's CSV; the event's time as a UTC timestamp (RFC 3339 text in CSV and
JSON lines), numbers as numbers; last `extra`, the JSON text of any other field. Parquet
keeps each column's platform CSV header and JSON field in its metadata. With --columns platform (the
default for csv) a file is what the platform sent: csv its CSV byte for byte (--no-title
leaves out its title row), ndjson its JSON events as sent.

Each run writes DIR/<kind>-<format>-run-<time>.manifest.json: every day with its file, rows
and SHA-256. On a terminal or with -v, each day's rows as it is done, and a summary at the
end.

Exit codes: as pubapi --help; 6 when the run stopped before the daily budget would run out
(the next run resumes at the day it names), 1 when another run holds the lock.";

/// The formats `audit export` writes.
#[cfg(feature = "parquet")]
const EXPORT_FORMATS: [&str; 3] = ["csv", "ndjson", "parquet"];
#[cfg(not(feature = "parquet"))]
const EXPORT_FORMATS: [&str; 2] = ["csv", "ndjson"];

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
    /// The files' format: csv (the platform's CSV), ndjson (one JSON event a line) or parquet
    /// (typed columns for data tools); see `pubapi audit export --help`.
    #[arg(long, value_parser = EXPORT_FORMATS, default_value = "csv", value_name = "FORMAT")]
    pub format: String,
    /// The columns: platform (as the platform sent them) or schema (the kind's one schema;
    /// default for ndjson and parquet).
    #[arg(long, value_parser = COLUMNS, value_name = "COLUMNS")]
    pub columns: Option<String>,
    /// CSV without the platform's title row (`This report reflects activity up to …`), so
    /// the header is the first line; the rest byte for byte as sent.
    #[arg(long)]
    pub no_title: bool,
    /// The last day to export, YYYY-MM-DD (UTC; default: the last day that has ended).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Also write the run's days into FILE, one file for the whole range (CSV with one
    /// header and no title rows).
    #[arg(long, value_name = "FILE")]
    pub merge: Option<PathBuf>,
    /// Also write each day's events to standard output as JSON lines, as the day is done
    /// (for a log shipper; --format ndjson).
    #[arg(long)]
    pub stdout: bool,
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
        match kinds().iter().find(|k| k.name() == name) {
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
        kinds().iter().any(|k| k.name() == name) || JobCommand::has_subcommand(name)
    }
}

/// Checks what needs no network (dates, required filters, `--out`'s folder, a job id) before
/// a sandbox starts or a request leaves; a `dry_run` writes nothing, so the folders it would
/// write to need not exist yet.
pub fn check_before_start(command: &AuditCommand, dry_run: bool) -> Result<(), Failure> {
    match command {
        AuditCommand::Run {
            written,
            request,
            out,
            dates,
            ..
        } => {
            check_dates(request, dates)?;
            request.validate().map_err(in_flags)?;
            if *written == Written::Schema(SchemaForm::Parquet)
                && out.as_deref().is_none_or(|p| p == Path::new("-"))
            {
                return Err(Failure::usage(
                    "--format parquet writes a file: give it with --out FILE",
                ));
            }
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

/// Runs `pubapi audit …`.
pub async fn run(session: &Session, command: AuditCommand) -> Result<(), Failure> {
    match command {
        AuditCommand::Run {
            written,
            kind,
            request,
            out,
            ..
        } => {
            let format = request.format();
            let job = session.client.audit().create(*request).await?;
            eprintln!("audit job {} created ({kind} report, {format})", job.id);
            let pending = FollowUp {
                id: Some(job.id.clone()),
                in_sandbox: session.sandbox.is_some(),
            };
            let at = wait(session, &job).await?;
            drop(pending.done());
            match written {
                Written::AsSent => download(session, &at, format, out_file(out.as_deref())).await?,
                other => write_as(session, &at, other, out_file(out.as_deref())).await?,
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Exit;
    use clap::Parser;
    use pubapi_sdk::audit_kinds::FilterShape;

    #[test]
    fn every_kind_of_the_spec_is_a_subcommand() {
        let names: Vec<&str> = kinds().iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), 14, "{names:?}");
        for name in names {
            assert!(name.parse::<AuditReportKind>().is_ok(), "{name}");
        }
    }

    #[test]
    fn filters_come_with_their_enums_and_required_marks() {
        let logins = kinds().iter().find(|k| k.name() == "logins").unwrap();
        let events = logins.filters.iter().find(|f| f.name == "events").unwrap();
        assert!(events.required);
        assert!(events.values.contains(&"failed_attempts"), "{events:?}");
        let suppress = logins
            .filters
            .iter()
            .find(|f| f.name == "suppress_emails")
            .unwrap();
        assert_eq!(suppress.shape, FilterShape::Flag);
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
