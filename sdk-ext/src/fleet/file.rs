//! Checkpoints in a file, replaced atomically, and a lock file beside it: the embedded
//! default.

use super::{Acquired, CheckpointStore, FleetError, FleetFuture, Lease};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::Mutex;

/// Checkpoints in one JSON file (`{"name": id, ...}`). A save writes a temporary file next to
/// it and renames it over the old one, so a crash leaves the old or the new file, never half
/// of one.
///
/// The streams' leases are an OS advisory lock (`flock`) on `<file>.lock`, taken by the first
/// stream that consumes through this store and kept until its last stream ends: while one
/// process holds it, another process's streams on the same file stand by (trying again every
/// second), and the OS frees the lock when its process ends, however it ends. While held, the
/// lock file keeps the fencing token; a holder that releases removes it (on Unix: a process
/// that takes the lock checks that the path still names the file it locked, so a file
/// removed under it is never held by two), so nothing is left beside the checkpoint file. A
/// lock file left by a holder that died says so to the next one (`taken_over`). Tokens are
/// the machine's time in microseconds, or the last token and one when that is larger: they
/// grow with every acquisition although the file is gone between two.
#[derive(Debug)]
pub struct FileCheckpoints {
    path: PathBuf,
    lock: Mutex<()>,
    held: std::sync::Mutex<Held>,
}

/// The lock this store holds, and the streams it holds it for.
#[derive(Debug, Default)]
struct Held {
    file: Option<File>,
    token: u64,
    taken_over: bool,
    names: BTreeSet<String>,
}

impl FileCheckpoints {
    /// How often a stream standing by tries the lock again.
    pub const RETRY_LOCK: Duration = Duration::from_secs(1);

    /// Checkpoints kept in `path` (created on the first save), locked through
    /// `<path>.lock`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileCheckpoints {
            path: path.into(),
            lock: Mutex::new(()),
            held: std::sync::Mutex::new(Held::default()),
        }
    }

    /// The checkpoint file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file beside it.
    pub fn lock_path(&self) -> PathBuf {
        let mut path = self.path.clone().into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }

    fn unavailable(&self, e: impl std::fmt::Display) -> FleetError {
        FleetError::unavailable(format!("{}: {e}", self.path.display()))
    }

    /// The largest checkpoint file read (a million streams' checkpoints fit in it): a larger
    /// one is refused as [`FleetErrorKind::Corrupt`](super::FleetErrorKind::Corrupt) before
    /// it is read.
    pub const MAX_FILE_LEN: u64 = 64 * 1024 * 1024;

    async fn read(&self) -> Result<BTreeMap<String, i64>, FleetError> {
        match tokio::fs::metadata(&self.path).await {
            Ok(meta) if meta.len() > Self::MAX_FILE_LEN => {
                return Err(FleetError::corrupt(
                    self.path.display(),
                    format!(
                        "the file holds {} bytes, more than a checkpoint file ({} at most)",
                        meta.len(),
                        Self::MAX_FILE_LEN
                    ),
                ));
            }
            _ => {}
        }
        match tokio::fs::read(&self.path).await {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Err(FleetError::corrupt(
                self.path.display(),
                "the file is empty",
            )),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                FleetError::corrupt(
                    self.path.display(),
                    format!("it is not a checkpoint file ({e})"),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(self.unavailable(e)),
        }
    }

    fn holds(&self, lease: &Lease) -> bool {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.file.is_some() && held.token == lease.token && held.names.contains(&lease.name)
    }

    /// Takes the OS lock: `None` while another process holds it.
    fn lock_file(&self, held: &mut Held) -> Result<Option<()>, FleetError> {
        let lock_path = self.lock_path();
        let fail =
            |e: std::io::Error| FleetError::unavailable(format!("{}: {e}", lock_path.display()));
        let Some(mut file) = lock_at(&lock_path).map_err(fail)? else {
            return Ok(None);
        };
        // `<token> held` while a process holds it, `<token> released` after a release.
        let mut bytes = Vec::new();
        (&mut file)
            .take(MAX_LOCK_FILE_LEN + 1)
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        let state = read_lock_state(&bytes)
            .map_err(|what| FleetError::corrupt(lock_path.display(), what))?;
        // A token at the end of its range cannot grow: a damaged lock file, for a person to
        // look at (a wrapped token would go back to a value an earlier holder had).
        let next = state.token.checked_add(1).ok_or_else(|| {
            FleetError::corrupt(
                lock_path.display(),
                "its lease token is at the end of its range (delete the lock file while no consumer runs)",
            )
        })?;
        held.token = next.max(u64::try_from(super::unix_us()).unwrap_or(0));
        held.taken_over = state.taken_over;
        write_state(&mut file, held.token, "held").map_err(fail)?;
        held.file = Some(file);
        Ok(Some(()))
    }
}

/// Opens (creating it) and locks the lock file at `path`: `None` while another process holds
/// it. A holder that releases removes the file while it still holds it, so the file locked
/// here must still be the one `path` names: when it is not, the new one is opened (twice at
/// most; a third time, it counts as held and the caller tries again later).
pub(crate) fn lock_at(path: &Path) -> std::io::Result<Option<File>> {
    for _ in 0..3 {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        if names_file(path, &file)? {
            return Ok(Some(file));
        }
    }
    Ok(None)
}

/// Whether `path` still names `file` (on Unix: the same device and inode). A holder that
/// released removed it, so a file locked after that removal is no longer the lock.
fn names_file(path: &Path, file: &File) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let open = file.metadata()?;
        match std::fs::metadata(path) {
            Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        Ok(true)
    }
}

/// The longest lock file read: `<token> released` and a line end take 30 bytes.
const MAX_LOCK_FILE_LEN: u64 = 256;

/// What a lock file says.
#[derive(Debug, PartialEq, Eq)]
struct LockState {
    /// The last token handed out (0 for a new, empty file).
    token: u64,
    /// Its holder's lease ended without a release.
    taken_over: bool,
}

/// Reads a lock file: empty (new), or `<token> held` / `<token> released` with a line end.
/// Anything else was not written by this store (or was damaged): `Err` says what is wrong,
/// and the caller reports it as corrupt rather than starting the tokens again.
fn read_lock_state(bytes: &[u8]) -> Result<LockState, String> {
    if bytes.is_empty() {
        return Ok(LockState {
            token: 0,
            taken_over: false,
        });
    }
    if bytes.len() as u64 > MAX_LOCK_FILE_LEN {
        return Err(format!(
            "it holds more than {MAX_LOCK_FILE_LEN} bytes, not a lease token and state"
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    let mut words = text.split_whitespace();
    let (Some(token), Some(state), None) = (words.next(), words.next(), words.next()) else {
        return Err("it does not hold `<token> held` or `<token> released`".to_string());
    };
    let token = token.parse::<u64>().map_err(|_| {
        let shown: String = token.chars().take(30).collect();
        format!(
            "its lease token {shown} is not a number from 0 to {}",
            u64::MAX
        )
    })?;
    let taken_over = match state {
        "held" => true,
        "released" => false,
        _ => return Err("its state is neither `held` nor `released`".to_string()),
    };
    Ok(LockState { token, taken_over })
}

fn write_state(file: &mut File, token: u64, state: &str) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(format!("{token} {state}\n").as_bytes())?;
    file.sync_data()
}

impl CheckpointStore for FileCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Option<i64>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            Ok(self.read().await?.get(name).copied())
        })
    }

    fn save<'a>(&'a self, lease: &'a Lease, id: i64) -> FleetFuture<'a, Option<i64>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            if !self.holds(lease) {
                return Err(FleetError::lease_lost(&lease.name));
            }
            let mut all = self.read().await?;
            let before = all.get(&lease.name).copied();
            let saved = all.entry(lease.name.clone()).or_insert(id);
            *saved = (*saved).max(id);
            let bytes = serde_json::to_vec_pretty(&all).map_err(|e| self.unavailable(e))?;
            let mut temporary = self.path.clone().into_os_string();
            temporary.push(".tmp");
            let fail = |e: std::io::Error| self.unavailable(e);
            tokio::fs::write(&temporary, bytes).await.map_err(fail)?;
            tokio::fs::rename(&temporary, &self.path)
                .await
                .map_err(fail)?;
            Ok(before)
        })
    }

    fn acquire<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Acquired> {
        Box::pin(async move {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            let busy = Acquired::Busy {
                retry_in: Self::RETRY_LOCK,
            };
            if held.names.contains(name) {
                return Ok(busy);
            }
            if held.file.is_none() && self.lock_file(&mut held)?.is_none() {
                return Ok(busy);
            }
            held.names.insert(name.to_string());
            Ok(Acquired::Lease(Lease {
                name: name.to_string(),
                token: held.token,
                taken_over: held.taken_over,
                expires_in: None,
            }))
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if held.token != lease.token || !held.names.remove(&lease.name) {
                return Ok(());
            }
            if held.names.is_empty()
                && let Some(mut file) = held.file.take()
            {
                held.taken_over = false;
                // Removed while still locked, so that nothing is left behind; where it cannot
                // be, it says it was released. Dropping the file frees the lock.
                if !(cfg!(unix) && std::fs::remove_file(self.lock_path()).is_ok()) {
                    write_state(&mut file, held.token, "released")
                        .map_err(|e| self.unavailable(e))?;
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FleetErrorKind;
    use crate::scratch::Scratch;

    /// The folder of `test` and the checkpoint file `cp` in it (not made).
    fn scratch(test: &str) -> (Scratch, PathBuf) {
        let dir = Scratch::new(&format!("cp-{test}"));
        let path = dir.join("cp");
        (dir, path)
    }

    async fn lease(store: &FileCheckpoints, name: &str) -> Lease {
        match store.acquire(name).await.unwrap() {
            Acquired::Lease(lease) => lease,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn checkpoints_survive_a_new_store_on_the_same_file() {
        let (_dir, path) = scratch("survive");
        let store = FileCheckpoints::new(&path);
        assert_eq!(store.load("v2").await.unwrap(), None);
        let (v2, v1) = (lease(&store, "v2").await, lease(&store, "v1").await);
        store.save(&v2, 41).await.unwrap();
        store.save(&v1, 7).await.unwrap();
        store.save(&v2, 42).await.unwrap();
        store.release(&v2).await.unwrap();
        store.release(&v1).await.unwrap();
        let reopened = FileCheckpoints::new(&path);
        assert_eq!(reopened.load("v2").await.unwrap(), Some(42));
        assert_eq!(reopened.load("v1").await.unwrap(), Some(7));
        assert!(!path.with_file_name("cp.tmp").exists());
    }

    #[tokio::test]
    async fn an_empty_or_garbled_file_is_corrupt_and_named_not_unavailable() {
        let (_dir, path) = scratch("corrupt");
        let store = FileCheckpoints::new(&path);
        let held = lease(&store, "v2").await;
        for garbage in [&b""[..], b"\n", b"{not json", b"{\"v2\": \"x\"}", b"[1, 2]"] {
            std::fs::write(&path, garbage).unwrap();
            for error in [
                store.load("v2").await.unwrap_err(),
                store.save(&held, 5).await.unwrap_err(),
            ] {
                assert_eq!(error.kind, FleetErrorKind::Corrupt, "{garbage:?}: {error}");
                assert!(error.message.contains(&*path.to_string_lossy()), "{error}");
            }
            assert_eq!(std::fs::read(&path).unwrap(), garbage, "left as it was");
        }
    }

    #[tokio::test]
    async fn a_lock_file_at_u64_max_is_corrupt_not_a_panic_or_a_token_gone_back() {
        let (_dir, path) = scratch("lock-max");
        let store = FileCheckpoints::new(&path);
        std::fs::write(store.lock_path(), format!("{} held\n", u64::MAX)).unwrap();
        let error = store.acquire("v2").await.unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Corrupt, "{error}");
        assert!(error.message.contains(".lock"), "{error}");
    }

    #[tokio::test]
    async fn a_lock_file_that_is_not_what_was_written_is_corrupt_never_unavailable_or_token_1() {
        let past_max = format!("{}0 held\n", u64::MAX);
        let cases: [(&str, &[u8]); 6] = [
            ("not UTF-8", b"\xff\xfe 7 held\n"),
            ("a token past u64::MAX", past_max.as_bytes()),
            ("a negative token", b"-3 held\n"),
            ("no state", b"12\n"),
            ("another state", b"12 lost\n"),
            ("too long", &[b'7'; 300]),
        ];
        for (case, bytes) in cases {
            let (_dir, path) = scratch("lock-garbled");
            let store = FileCheckpoints::new(path);
            std::fs::write(store.lock_path(), bytes).unwrap();
            let error = store.acquire("v2").await.unwrap_err();
            assert_eq!(error.kind, FleetErrorKind::Corrupt, "{case}: {error}");
            assert!(error.message.contains(".lock"), "{case}: {error}");
        }
    }

    #[tokio::test]
    async fn a_checkpoint_file_past_the_cap_is_refused_before_it_is_read() {
        let (_dir, path) = scratch("cp-huge");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(FileCheckpoints::MAX_FILE_LEN + 1).unwrap();
        let error = FileCheckpoints::new(&path).load("v2").await.unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Corrupt, "{error}");
        assert!(
            error.message.contains("more than a checkpoint file"),
            "{error}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_file_removed_or_replaced_after_it_was_opened_is_not_the_lock() {
        let (_dir, path) = scratch("lock-removed");
        let opened = std::fs::File::create(&path).unwrap();
        assert!(super::names_file(&path, &opened).unwrap());
        // The holder released: removed while our handle was open.
        std::fs::remove_file(&path).unwrap();
        assert!(!super::names_file(&path, &opened).unwrap());
        // And a third process made a new one there.
        std::fs::File::create(&path).unwrap();
        assert!(!super::names_file(&path, &opened).unwrap());
    }

    proptest::proptest! {
        #[test]
        fn any_lock_file_reads_as_written_or_as_corrupt(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
        ) {
            match super::read_lock_state(&bytes) {
                Ok(state) => {
                    // Only what this store writes (or an empty new file) reads as a state.
                    let written = |word: &str| format!("{} {word}\n", state.token);
                    let text = String::from_utf8(bytes.clone()).unwrap();
                    let canonical = bytes.is_empty()
                        || text.split_whitespace().collect::<Vec<_>>()
                            == written(if state.taken_over { "held" } else { "released" })
                                .split_whitespace()
                                .collect::<Vec<_>>();
                    proptest::prop_assert!(canonical, "{text:?}");
                }
                Err(what) => proptest::prop_assert!(!what.is_empty()),
            }
        }

        #[test]
        fn every_written_lock_state_reads_back(token in proptest::num::u64::ANY, held in proptest::bool::ANY) {
            let word = if held { "held" } else { "released" };
            let state = super::read_lock_state(format!("{token} {word}\n").as_bytes()).unwrap();
            proptest::prop_assert_eq!(state, super::LockState { token, taken_over: held });
        }
    }

    #[tokio::test]
    async fn a_second_store_on_the_same_file_stands_by_until_the_first_releases() {
        let (_dir, path) = scratch("lock");
        let first = FileCheckpoints::new(&path);
        let held = lease(&first, "v2").await;
        assert!(!held.taken_over);
        // Another store on the file (another process: flock locks belong to the open file).
        let second = FileCheckpoints::new(&path);
        assert!(matches!(
            second.acquire("v2").await.unwrap(),
            Acquired::Busy { .. }
        ));
        assert!(matches!(
            second.acquire("other").await.unwrap(),
            Acquired::Busy { .. }
        ));
        let stale = Lease::new("v2", held.token);
        assert_eq!(
            second.save(&stale, 9).await.unwrap_err().kind,
            FleetErrorKind::LeaseLost
        );
        first.save(&held, 10).await.unwrap();
        first.release(&held).await.unwrap();
        // Released: the lock file is gone, and the next token is larger all the same.
        assert!(!first.lock_path().exists());
        let next = lease(&second, "v2").await;
        assert!(next.token > held.token && !next.taken_over, "{next:?}");
        // The first holder's saves are refused now, and a checkpoint never goes back.
        assert_eq!(
            first.save(&held, 11).await.unwrap_err().kind,
            FleetErrorKind::LeaseLost
        );
        second.save(&next, 3).await.unwrap();
        assert_eq!(second.load("v2").await.unwrap(), Some(10));
        // A holder that never released (its process died): the next one is told.
        drop(second);
        let third = FileCheckpoints::new(&path);
        let after_death = lease(&third, "v2").await;
        assert!(after_death.token > next.token && after_death.taken_over);
    }
}
