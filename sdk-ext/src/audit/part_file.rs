//! [`PartFile`]: a report being written into a temporary file beside its target, renamed into
//! place when whole, so that a run that stops leaves no half-written report under the
//! target's name. The daily export names its part files by job (an NDJSON day is read on
//! from its part file by the next run); the CLI names them by process.

use std::path::{Path, PathBuf};

/// A report file being written: `.<name>.<tag>.part` beside its target, removed when dropped
/// unless [`commit`](Self::commit) renamed it into place or [`keep`](Self::keep) left it.
///
/// ```no_run
/// use pubapi_sdk_ext::audit::PartFile;
/// # fn write() -> std::io::Result<()> {
/// let target = std::path::Path::new("logins.csv");
/// let part = PartFile::beside(target, "6f1c2a");
/// std::fs::write(part.path(), "the report")?;
/// part.commit(target)?; // `logins.csv` now holds the whole report
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PartFile {
    path: PathBuf,
    done: bool,
}

impl PartFile {
    /// The part file of `target` named by `tag` (a job id, a process id): `tag` goes into the
    /// name with every byte but ASCII letters, digits, `-` and `_` as `%XX` (an id from a
    /// server never names another folder), or as its SHA-256 when that would be long. Nothing
    /// is created: write to [`path`](Self::path).
    pub fn beside(target: &Path, tag: &str) -> PartFile {
        let name = target
            .file_name()
            .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
        PartFile {
            path: target.with_file_name(format!(".{name}.{}.part", file_safe(tag))),
            done: false,
        }
    }

    /// Where the part file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file to `target`. A part file removed meanwhile by another run that put
    /// the same report in place itself (the daily export's runs of the same filters) is that
    /// report written.
    ///
    /// # Errors
    /// The rename failed; the part file is removed.
    pub fn commit(mut self, target: &Path) -> std::io::Result<()> {
        match std::fs::rename(&self.path, target) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && target.exists() => {}
            other => other?,
        }
        self.done = true;
        Ok(())
    }

    /// Leaves the file where it is (the daily export's state records what it holds).
    pub fn keep(mut self) {
        self.done = true;
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `id` as part of a file name: ASCII letters, digits, `-` and `_` as they are, every other
/// byte as `%XX` (a server's id never names another folder); an id that would take more than
/// [`MAX_ID_IN_NAME`] bytes so is named by its SHA-256 instead (file names end at 255 bytes).
fn file_safe(id: &str) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    const ESCAPED: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_');
    let mut safe = utf8_percent_encode(id, ESCAPED).to_string();
    if safe.len() > MAX_ID_IN_NAME {
        let digest = crate::digest::sha256(id.as_bytes());
        safe = format!("sha256-{}", crate::digest::hex(&digest));
    }
    safe
}

/// The most bytes of a job id in a part file's name: with the day file's name (at most 50
/// bytes) and the dots, a name stays well within the 255 bytes a file name may have.
const MAX_ID_IN_NAME: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    #[test]
    fn a_job_id_in_a_part_files_name_names_no_other_folder() {
        for (id, name) in [
            ("j-17_a", "j-17_a"),
            ("../x", "%2E%2E%2Fx"),
            ("a/b\\c", "a%2Fb%5Cc"),
            ("é", "%C3%A9"),
        ] {
            assert_eq!(file_safe(id), name);
        }
        // A long id is named by its digest: one name for one id, within the bound.
        let long = "j".repeat(300);
        let name = file_safe(&long);
        assert_eq!(
            name,
            "sha256-ea72244c15e7df9c7ca9b296f256fac0adb595da85df7b792e666917ce5e90fa"
        );
        assert!(name.len() <= MAX_ID_IN_NAME, "{name}");
        assert_eq!(name, file_safe(&long));
        assert_ne!(name, file_safe(&"j".repeat(301)));
        assert_eq!(file_safe(&"j".repeat(80)).len(), 80);
    }

    #[test]
    fn a_part_file_is_removed_unless_committed_or_kept() {
        let dir = Scratch::new("part");
        let target = dir.join("logins.csv");
        let dropped = PartFile::beside(&target, "j/1");
        assert_eq!(dropped.path(), dir.join(".logins.csv.j%2F1.part"));
        std::fs::write(dropped.path(), "half").unwrap();
        let path = dropped.path().to_path_buf();
        drop(dropped);
        assert!(!path.exists());
        let kept = PartFile::beside(&target, "j1");
        std::fs::write(kept.path(), "half").unwrap();
        let path = kept.path().to_path_buf();
        kept.keep();
        assert!(path.exists());
        let whole = PartFile::beside(&target, "j1");
        std::fs::write(whole.path(), "whole").unwrap();
        whole.commit(&target).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "whole");
        assert!(!path.exists());
    }
}
