//! A day's files: the report downloaded into a `.part` file beside the day's file (named by
//! its job), synced and renamed into place; an NDJSON `.part` file read on from where an
//! earlier run stopped.

use super::{DailyExport, DayError, ExportFormat};
use crate::audit::{
    CsvError, PartFile, ReportLocation, ReportRead, audit_report_csv, audit_report_events_as_sent,
};
use futures_util::StreamExt;
use std::fs::File;
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// What an NDJSON day's `.part` file holds: the report's first `events` events, in its
/// first `bytes` bytes (synced before this was recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct ReadSoFar {
    pub(super) events: u64,
    pub(super) bytes: u64,
}

impl DailyExport {
    /// Downloads the report into a temporary file, synced and renamed to `target`.
    ///
    /// An NDJSON report is read from `read_so_far` on when the temporary file still holds
    /// it; a read that stops part way keeps the file, synced, and tells `keep` how far it
    /// got.
    pub(super) async fn download(
        &self,
        at: &ReportLocation,
        target: &Path,
        read_so_far: Option<ReadSoFar>,
        keep: impl FnOnce(ReadSoFar) -> Result<(), DayError>,
    ) -> Result<u64, DayError> {
        // Named by the job too: a part file is read on only by a run of its own job (another
        // export of the same filters may share the folder).
        let part = PartFile::beside(target, &at.id);
        let bytes = match self.settings.format {
            format @ (ExportFormat::Csv | ExportFormat::CsvWithoutTitle) => {
                let mut file = tokio::fs::File::create(part.path())
                    .await
                    .map_err(DayError::Write)?;
                let report = audit_report_csv(&self.client, at)
                    .await
                    .map_err(DayError::Api)?;
                let copied = if format == ExportFormat::Csv {
                    report.copy_to(&mut file).await
                } else {
                    report.copy_without_title_to(&mut file).await
                };
                let bytes = copied.map_err(|e| match e {
                    CsvError::Write(e) => DayError::Write(e),
                    other => DayError::Download(other),
                })?;
                file.sync_all().await.map_err(DayError::Write)?;
                bytes
            }
            ExportFormat::Ndjson => {
                let (mut file, mut so_far) = open_part(part.path(), read_so_far).await?;
                let read = ReportRead {
                    page_size: self.settings.page_size,
                    offset: so_far.events,
                };
                // As sent: every field the server sent, in its order and spelling.
                let mut events = audit_report_events_as_sent(&self.client, at.clone(), read);
                let mut writer = tokio::io::BufWriter::new(&mut file);
                let stopped = loop {
                    let event = match events.next().await {
                        Some(Ok(event)) => event,
                        Some(Err(error)) => break Some(error),
                        None => break None,
                    };
                    let mut line = crate::audit::one_line(&event).into_bytes();
                    line.push(b'\n');
                    writer.write_all(&line).await.map_err(DayError::Write)?;
                    so_far.bytes += line.len() as u64;
                };
                writer.flush().await.map_err(DayError::Write)?;
                file.sync_all().await.map_err(DayError::Write)?;
                if let Some(error) = stopped {
                    // Every event before `resume_at` is in the file: the next run reads on.
                    so_far.events = error.resume_at;
                    keep(so_far)?;
                    part.keep();
                    return Err(DayError::Read(error));
                }
                so_far.bytes
            }
        };
        part.commit(target).map_err(DayError::Write)?;
        sync_dir(target.parent());
        remove_parts_of(target);
        Ok(bytes)
    }
}

/// Removes the part files of `target`'s day left by jobs whose reads will not go on (the day
/// is in place): best effort.
pub(super) fn remove_parts_of(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&prefix) && file.ends_with(".part") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Opens an NDJSON day's `.part` file to write on after `read_so_far`, or anew (from the
/// report's first event) when there is nothing to read on from or the file no longer holds
/// it.
async fn open_part(
    path: &Path,
    read_so_far: Option<ReadSoFar>,
) -> Result<(tokio::fs::File, ReadSoFar), DayError> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    if let Some(so_far) = read_so_far {
        match tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .await
        {
            Ok(mut file) => {
                let len = file.metadata().await.map_err(DayError::Write)?.len();
                // The recorded bytes end with a whole line.
                let mut last = [b'\n'];
                if so_far.bytes > 0 && len >= so_far.bytes {
                    file.seek(std::io::SeekFrom::Start(so_far.bytes - 1))
                        .await
                        .map_err(DayError::Write)?;
                    file.read_exact(&mut last).await.map_err(DayError::Write)?;
                }
                if len >= so_far.bytes && last == [b'\n'] {
                    // Bytes past the record were written by a run that stopped before it
                    // recorded them.
                    file.set_len(so_far.bytes).await.map_err(DayError::Write)?;
                    file.seek(std::io::SeekFrom::End(0))
                        .await
                        .map_err(DayError::Write)?;
                    return Ok((file, so_far));
                }
                tracing::warn!(
                    path = %path.display(),
                    recorded = so_far.bytes,
                    len,
                    "the day's part file does not hold what was recorded: the day is read from its start"
                );
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    path = %path.display(),
                    "the day's part file is gone: the day is read from its start"
                );
            }
            Err(error) => return Err(DayError::Write(error)),
        }
    }
    let file = tokio::fs::File::create(path)
        .await
        .map_err(DayError::Write)?;
    Ok((file, ReadSoFar::default()))
}

/// Makes a rename in `dir` durable (best effort: not every platform syncs a folder).
pub(super) fn sync_dir(dir: Option<&Path>) {
    let dir = match dir {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    #[test]
    fn a_day_in_place_takes_its_days_part_files_of_every_job_and_no_other_file() {
        let dir = Scratch::new("parts");
        let target = dir.join("quality-docs-2026-03-09.csv");
        std::fs::write(&target, "the day").unwrap();
        let gone = [
            ".quality-docs-2026-03-09.csv.j1.part",
            ".quality-docs-2026-03-09.csv.part",
        ];
        let kept = [
            ".quality-docs-categories-2026-03-09.csv.j1.part",
            ".quality-docs-2026-03-10.csv.j1.part",
            ".quality-docs-2026-03-09.ndjson.j1.part",
            ".quality-docs-2026-03-09.csv.j1.tmp",
            "quality-docs-2026-03-09.csv",
        ];
        for name in gone.iter().chain(&kept[..4]) {
            std::fs::write(dir.join(name), "part").unwrap();
        }
        remove_parts_of(&target);
        for name in gone {
            assert!(!dir.join(name).exists(), "{name}");
        }
        for name in kept {
            assert!(dir.join(name).exists(), "{name}");
        }
    }
}
