//! A run's job and report: waited for with a status line, downloaded (CSV as sent, JSON as
//! an array of events) to a temporary file renamed into place, or to standard output.

use super::columns::{SchemaRows, TextForm};
use super::kinds::kinds;
use crate::Session;
use crate::failure::{Exit, Failure};
use crate::progress;
use futures_util::StreamExt;
use pubapi_sdk::types::{AuditFormat, AuditReportKind};
use pubapi_sdk_ext::audit::{
    AuditWait, JobObserver, JobState, PartFile, ReportLocation, ReportRead,
};
use pubapi_sdk_ext::waiter::WaitError;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// The file `--out` names: `None` for standard output (no `--out`, or `--out -`).
pub(super) fn out_file(out: Option<&Path>) -> Option<&Path> {
    out.filter(|path| *path != Path::new("-"))
}

pub(super) fn check_out(out: Option<&Path>, dry_run: bool) -> Result<(), Failure> {
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
pub(super) fn job_id(text: &str) -> Result<&str, Failure> {
    let why = if text.trim().is_empty() {
        Some("it is empty".to_string())
    } else if let Some((kind, id)) = text.split_once('/') {
        let report =
            kinds().iter().any(|k| k.name() == kind) && !id.is_empty() && !id.contains('/');
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
pub(crate) fn location(text: &str) -> Result<ReportLocation, Failure> {
    let (kind, id) = text
        .split_once('/')
        .filter(|(kind, id)| !kind.is_empty() && !id.is_empty() && !id.contains('/'))
        .ok_or_else(|| {
            Failure::usage(format!(
                "`{text}` is not KIND/ID (such as logins/6f1c2a, as a run prints it)"
            ))
        })?;
    let kind = kind.parse::<AuditReportKind>().map_err(|_| {
        let known: Vec<&str> = kinds().iter().map(|k| k.name()).collect();
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

/// Says how to follow a job when the run stops before the job finishes (Ctrl-C, an error);
/// nothing when the job was in this run's own sandbox, which ends with the run. (A guard that
/// prints, not a record: the daily export's pending job is the job it records in its state
/// file, which the next run reads.)
pub(super) struct FollowUp {
    pub(super) id: Option<String>,
    pub(super) in_sandbox: bool,
}

impl FollowUp {
    pub(super) fn done(mut self) -> Self {
        self.id = None;
        self
    }
}

impl Drop for FollowUp {
    fn drop(&mut self) {
        if let (Some(id), false) = (self.id.take(), self.in_sandbox) {
            eprintln!("the job {id} goes on without this run: pubapi audit status {id}");
        }
    }
}

/// How long a run waits for its job, in the server's time.
pub(super) const WAIT_DEADLINE: Duration = Duration::from_secs(3600);

/// Waits for the job with the SDK's [`AuditWait`] (polls no more often than the platform
/// allows, in the server's time), a status line saying the job's state, the next poll and
/// the time elapsed.
pub(super) async fn wait(
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

/// The SDK's [`PartFile`] for `target` (named by this process), created: removed unless it
/// is renamed into place.
async fn create_part(target: &Path) -> Result<(PartFile, tokio::fs::File), Failure> {
    let part = PartFile::beside(target, &std::process::id().to_string());
    let file = tokio::fs::File::create(part.path())
        .await
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", part.path().display())))?;
    Ok((part, file))
}

/// Renames the part file into place as `target`.
fn commit(part: PartFile, target: &Path) -> Result<(), Failure> {
    let from = part.path().display().to_string();
    part.commit(target)
        .map_err(|e| Failure::failed(format!("cannot rename {from} to {}: {e}", target.display())))
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

/// Where a report goes: a part file beside `out` (renamed into place when whole), or stdout.
async fn destination(
    out: Option<&Path>,
) -> Result<
    (
        Option<(PartFile, &Path)>,
        Box<dyn AsyncWrite + Unpin + Send>,
    ),
    Failure,
> {
    Ok(match out {
        Some(path) => {
            let (part, file) = create_part(path).await?;
            (Some((part, path)), Box::new(file))
        }
        None => (None, Box::new(tokio::io::stdout())),
    })
}

/// Downloads the report at `at` to `out` (or stdout).
pub(super) async fn download(
    session: &Session,
    at: &ReportLocation,
    format: AuditFormat,
    out: Option<&Path>,
) -> Result<(), Failure> {
    let label = format!("report {}/{}", at.kind, at.id);
    let (part, writer) = destination(out).await?;
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
        _ => write_events(session, at, writer, &what, label, true).await?,
    }
    if let Some((part, target)) = part {
        commit(part, target)?;
        eprintln!("{} written", what);
    }
    Ok(())
}

/// Writes the JSON report at `at` to `out` (or stdout) as JSON lines as sent, or in the
/// kind's schema (CSV, JSON lines, Parquet).
pub(super) async fn write_as(
    session: &Session,
    at: &ReportLocation,
    written: super::Written,
    out: Option<&Path>,
) -> Result<(), Failure> {
    use super::{SchemaForm, Written};
    let label = format!("report {}/{}", at.kind, at.id);
    let what = out.map_or("stdout".to_string(), |p| p.display().to_string());
    let form = match written {
        Written::Schema(SchemaForm::Parquet) => {
            let Some(target) = out else {
                return Err(Failure::usage(
                    "--format parquet writes a file: give it with --out FILE",
                ));
            };
            return write_parquet(session, at, target, label).await;
        }
        Written::Schema(SchemaForm::Csv) => Some(TextForm::Csv),
        Written::Schema(SchemaForm::JsonLines) => Some(TextForm::JsonLines),
        Written::JsonLines | Written::AsSent => None,
    };
    let (part, writer) = destination(out).await?;
    match form {
        Some(form) => write_schema_rows(session, at, writer, &what, label, form).await?,
        None => write_events(session, at, writer, &what, label, false).await?,
    }
    if let Some((part, target)) = part {
        commit(part, target)?;
        eprintln!("{what} written");
    }
    Ok(())
}

/// Writes the JSON report at `at` to `writer` in the kind's schema, as CSV or JSON lines.
async fn write_schema_rows(
    session: &Session,
    at: &ReportLocation,
    writer: Box<dyn AsyncWrite + Unpin + Send>,
    what: &str,
    label: String,
    form: TextForm,
) -> Result<(), Failure> {
    let bar = progress::items(label);
    let mut writer = tokio::io::BufWriter::new(writer);
    let failed = |e| write_failed(what, e);
    let mut rows =
        SchemaRows::new(Vec::new(), super::columns::schema(at.kind), form).map_err(failed)?;
    let mut events = session
        .client
        .audit()
        .events_as_sent(at.clone(), ReportRead::default());
    loop {
        // Each event's text goes out as it is made: memory stays one event's.
        writer.write_all(rows.get_mut()).await.map_err(failed)?;
        rows.get_mut().clear();
        let Some(event) = events.next().await else {
            break;
        };
        let event = event.map_err(|e| {
            bar.finish_and_clear();
            Failure::from(e.error)
        })?;
        rows.push_line(event.get()).map_err(failed)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    writer.flush().await.map_err(failed)?;
    Ok(())
}

#[cfg(feature = "parquet")]
async fn write_parquet(
    session: &Session,
    at: &ReportLocation,
    target: &Path,
    label: String,
) -> Result<(), Failure> {
    let what = target.display().to_string();
    let part = PartFile::beside(target, &std::process::id().to_string());
    let file = std::fs::File::create(part.path()).map_err(|e| write_failed(&what, e))?;
    let parquet_failed =
        |e: parquet::errors::ParquetError| Failure::failed(format!("cannot write {what}: {e}"));
    let mut out = super::parquet::EventsParquet::new(
        std::io::BufWriter::new(file),
        super::columns::schema(at.kind),
    )
    .map_err(parquet_failed)?;
    let bar = progress::items(label);
    let mut events = session
        .client
        .audit()
        .events_as_sent(at.clone(), ReportRead::default());
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Failure::from(e.error))?;
        out.push_line(event.get()).map_err(parquet_failed)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (rows, writer) = out.finish().map_err(parquet_failed)?;
    let file = writer
        .into_inner()
        .map_err(|e| write_failed(&what, e.into_error()))?;
    file.sync_all().map_err(|e| write_failed(&what, e))?;
    commit(part, target)?;
    eprintln!("{what} written ({rows} rows)");
    Ok(())
}

#[cfg(not(feature = "parquet"))]
async fn write_parquet(
    _: &Session,
    _: &ReportLocation,
    _: &Path,
    _: String,
) -> Result<(), Failure> {
    Err(Failure::usage(
        "this pubapi was built without the parquet feature",
    ))
}

/// Writes the JSON report at `at` to `writer`, one event a line: as a JSON array, or as JSON
/// lines.
async fn write_events(
    session: &Session,
    at: &ReportLocation,
    writer: Box<dyn AsyncWrite + Unpin + Send>,
    what: &str,
    label: String,
    array: bool,
) -> Result<(), Failure> {
    let bar = progress::items(label);
    let mut writer = tokio::io::BufWriter::new(writer);
    // As sent: every field the server sent, in its order and spelling.
    let mut events = session
        .client
        .audit()
        .events_as_sent(at.clone(), ReportRead::default());
    let mut first = true;
    if array {
        writer
            .write_all(b"[")
            .await
            .map_err(|e| write_failed(what, e))?;
    }
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
        let separator: &[u8] = match (array, first) {
            (false, true) => b"",
            (false, false) => b"\n",
            (true, true) => b"\n",
            (true, false) => b",\n",
        };
        first = false;
        writer
            .write_all(separator)
            .await
            .map_err(|e| write_failed(what, e))?;
        writer
            .write_all(text.as_bytes())
            .await
            .map_err(|e| write_failed(what, e))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let end: &[u8] = match (array, first) {
        (true, _) => b"\n]\n",
        (false, true) => b"",
        (false, false) => b"\n",
    };
    writer
        .write_all(end)
        .await
        .map_err(|e| write_failed(what, e))?;
    writer.flush().await.map_err(|e| write_failed(what, e))?;
    Ok(())
}
