//! Folders of the unit tests' own, under the temporary folder: one per test, made empty when
//! the test starts and removed when it ends.

use std::path::{Path, PathBuf};

/// The folder `pubapi-<name>-<process id>` under the temporary folder, made empty; removed
/// when dropped, which must succeed unless the test already failed.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// Makes the folder of `name`, empty.
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pubapi-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// `name` in the folder.
    pub(crate) fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let removed = std::fs::remove_dir_all(&self.0);
        if !std::thread::panicking() {
            removed.unwrap();
        }
    }
}
