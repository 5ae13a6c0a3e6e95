//! The out folder's claim file: the first run in a folder claims it for its filters, and an
//! export of the same kind and format with other filters is refused there.

use super::files::sync_dir;
use super::{DailyExport, ExportError, ExportFormat};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the out folder's claim file's format.
const CLAIM_VERSION: u32 = 1;

/// The out folder's claim file: which filters its days of one kind and format are made with.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Claim {
    /// Marks the file as a claim, and its format's version.
    pubapi_audit_export_folder: u32,
    kind: String,
    format: String,
    filters: Map<String, Value>,
}

impl DailyExport {
    /// The out folder's claim file (see [`ExportError::OutDirClaimed`]).
    pub fn claim_path(&self) -> PathBuf {
        self.out_dir.join(format!(
            ".pubapi-export-{}-{}.json",
            self.kind,
            self.settings.format.extension()
        ))
    }

    /// Claims the out folder for this export's filters, or checks that it was claimed for
    /// them.
    pub(super) async fn claim_out_dir(&self) -> Result<(), ExportError> {
        let claim = self.claim_path();
        let io = |error| ExportError::Io {
            path: claim.clone(),
            error,
        };
        let mut text = match std::fs::read(&claim) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mine = Claim {
                    pubapi_audit_export_folder: CLAIM_VERSION,
                    kind: self.kind.to_string(),
                    format: self.settings.format.to_string(),
                    filters: self.settings.filters.clone(),
                };
                let mut bytes = serde_json::to_vec_pretty(&mine).map_err(|e| io(e.into()))?;
                bytes.push(b'\n');
                if put_claim(&claim, &bytes).map_err(io)? {
                    sync_dir(Some(&self.out_dir));
                    self.warn_of_days_before_the_claim();
                    return Ok(());
                }
                // Another run claimed the folder meanwhile.
                std::fs::read(&claim).map_err(io)?
            }
            Err(error) => return Err(io(error)),
        };
        if serde_json::from_slice::<Claim>(&text).is_err() {
            // A claim made in place (see `put_claim`) may be read before it is whole.
            tokio::time::sleep(Duration::from_millis(200)).await;
            text = std::fs::read(&claim).map_err(io)?;
        }
        let corrupt = |problem: String| ExportError::ClaimCorrupt {
            claim: claim.clone(),
            problem,
        };
        let theirs: Claim = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
        if theirs.pubapi_audit_export_folder != CLAIM_VERSION {
            return Err(corrupt(format!(
                "version {} is not {CLAIM_VERSION}",
                theirs.pubapi_audit_export_folder
            )));
        }
        if theirs.kind != self.kind.to_string()
            || ExportFormat::from_name(&theirs.format) != Some(self.settings.format)
        {
            return Err(corrupt(format!(
                "it is the claim of {} {} exports",
                theirs.kind, theirs.format
            )));
        }
        if theirs.filters != self.settings.filters {
            return Err(ExportError::OutDirClaimed {
                claim,
                claimed: Value::Object(theirs.filters).to_string(),
                asked: Value::Object(self.settings.filters.clone()).to_string(),
            });
        }
        Ok(())
    }

    /// Says so when a folder just claimed already holds days of this kind and format
    /// (written before claims existed): they are taken as this export's.
    fn warn_of_days_before_the_claim(&self) {
        let (prefix, suffix) = (
            format!("{}-", self.kind),
            format!(".{}", self.settings.format.extension()),
        );
        let Ok(entries) = std::fs::read_dir(&self.out_dir) else {
            return;
        };
        let days = entries
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.starts_with(&prefix) && name.ends_with(&suffix)
            })
            .count();
        if days > 0 {
            tracing::warn!(
                folder = %self.out_dir.display(),
                days,
                "claimed an out folder that already holds days of this kind and format: they are taken as this export's"
            );
        }
    }
}

/// Puts `bytes` at `claim` unless a claim is there: `Ok(true)` when this run's claim is now
/// there, `Ok(false)` when another run's was first.
///
/// The claim is written whole under a name of this run's own and linked into place, so that
/// of two runs claiming at once one wins and the other reads a whole claim. On a filesystem
/// without hard links (FAT, some network mounts) it is created in place instead, where a run
/// reading at that moment may find it short (it reads once more).
fn put_claim(claim: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    use std::io::ErrorKind::AlreadyExists;
    let (temporary, mut file) = loop {
        let mut name = claim.as_os_str().to_owned();
        let tag = crate::rng::SplitMix64::from_entropy().next_u64();
        name.push(format!(".{tag:016x}.tmp"));
        match File::options().write(true).create_new(true).open(&name) {
            Ok(file) => break (PathBuf::from(name), file),
            Err(e) if e.kind() == AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    let linked = written.and_then(|()| std::fs::hard_link(&temporary, claim));
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == AlreadyExists => Ok(false),
        Err(_) => {
            let mut file = match File::options().write(true).create_new(true).open(claim) {
                Ok(file) => file,
                Err(e) if e.kind() == AlreadyExists => return Ok(false),
                Err(e) => return Err(e),
            };
            let written = file.write_all(bytes).and_then(|()| file.sync_all());
            if written.is_err() {
                let _ = std::fs::remove_file(claim);
            }
            written.map(|()| true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    #[test]
    fn of_runs_claiming_a_folder_at_once_one_wins_and_no_temporary_file_is_left() {
        let dir = Scratch::new("claim");
        let claim = dir.join(".pubapi-export-logins-csv.json");
        let won: Vec<bool> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..8u8)
                .map(|run| {
                    let claim = &claim;
                    scope.spawn(move || put_claim(claim, &[b'0' + run; 4096]).unwrap())
                })
                .collect();
            runs.into_iter().map(|run| run.join().unwrap()).collect()
        });
        assert_eq!(won.iter().filter(|won| **won).count(), 1, "{won:?}");
        let winner = b'0' + won.iter().position(|won| *won).unwrap() as u8;
        assert_eq!(std::fs::read(&claim).unwrap(), [winner; 4096]);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [claim.file_name().unwrap()]);
    }
}
