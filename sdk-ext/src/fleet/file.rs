//! Checkpoints in a file, replaced atomically: the embedded default.

use super::{CheckpointStore, FleetError};
use pubapi_sdk::hooks::BoxFuture;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::sync::Mutex;

/// Checkpoints in one JSON file (`{"name": id, ...}`). A save writes a temporary file next to
/// it and renames it over the old one, so a crash leaves the old or the new file, never half
/// of one.
#[derive(Debug)]
pub struct FileCheckpoints {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileCheckpoints {
    /// Checkpoints kept in `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileCheckpoints {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    async fn read(&self) -> Result<BTreeMap<String, i64>, FleetError> {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                FleetError::new(format!(
                    "{} is not a checkpoint file: {e}",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(FleetError::new(format!("{}: {e}", self.path.display()))),
        }
    }
}

impl CheckpointStore for FileCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            Ok(self.read().await?.get(name).copied())
        })
    }

    fn save<'a>(&'a self, name: &'a str, id: i64) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut all = self.read().await?;
            all.insert(name.to_string(), id);
            let bytes =
                serde_json::to_vec_pretty(&all).map_err(|e| FleetError::new(e.to_string()))?;
            let mut temporary = self.path.clone().into_os_string();
            temporary.push(".tmp");
            let fail = |e: std::io::Error| FleetError::new(format!("{}: {e}", self.path.display()));
            tokio::fs::write(&temporary, bytes).await.map_err(fail)?;
            tokio::fs::rename(&temporary, &self.path)
                .await
                .map_err(fail)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checkpoints_survive_a_new_store_on_the_same_file() {
        let dir = std::env::temp_dir().join(format!("pubapi-cp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("checkpoints.json");
        let _ = std::fs::remove_file(&path);
        let store = FileCheckpoints::new(&path);
        assert_eq!(store.load("v2").await.unwrap(), None);
        store.save("v2", 41).await.unwrap();
        store.save("v1", 7).await.unwrap();
        store.save("v2", 42).await.unwrap();
        let reopened = FileCheckpoints::new(&path);
        assert_eq!(reopened.load("v2").await.unwrap(), Some(42));
        assert_eq!(reopened.load("v1").await.unwrap(), Some(7));
        assert!(!dir.join("checkpoints.json.tmp").exists());
        std::fs::write(&path, b"{not json").unwrap();
        assert!(
            reopened.load("v2").await.is_err(),
            "a damaged file is an error, not a restart"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
