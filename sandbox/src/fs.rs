//! The sandbox's file system: folders and files (with text content, which makes them part of
//! the AI corpus), and a trash. Only the activity API changes it.

use super::corpus::{DOCUMENTS, chunks_of};
use super::ids::{IdGen, checksum};
use std::collections::BTreeMap;
use std::fmt;

/// A file or folder.
#[derive(Debug, Clone, PartialEq)]
pub struct FsEntry {
    /// Absolute path.
    pub path: String,
    /// Whether it is a folder.
    pub is_folder: bool,
    /// File id (group id) or folder id.
    pub group_id: String,
    /// Version id (entry id) of the current version; the folder id for folders.
    pub entry_id: String,
    /// Object id (AI citations).
    pub object_id: String,
    /// Checksum of the content.
    pub checksum: String,
    /// Text content (empty for folders).
    pub content: String,
    /// Content chunks (paragraphs).
    pub chunks: Vec<String>,
    /// Last modification (the upload of the current version), epoch milliseconds.
    pub modified_ms: i64,
    /// Creation of the file or folder, epoch milliseconds (kept by new versions and moves).
    pub created_ms: i64,
    /// The id of the user who created it; `None` for the built-in corpus, which the domain's
    /// first admin is taken to have uploaded (the file system is built before the users).
    pub created_by: Option<i64>,
}

impl FsEntry {
    /// The file or folder name.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The folder that holds it.
    pub fn parent(&self) -> &str {
        parent_of(&self.path)
    }

    /// The lower-case file extension without the dot ("" for none).
    pub fn extension(&self) -> String {
        match self.name().rsplit_once('.') {
            Some((_, ext)) if !self.is_folder => ext.to_lowercase(),
            _ => String::new(),
        }
    }
}

/// Why an activity could not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActivityError {
    /// The path is not absolute, has empty or dot segments, a name longer than 255 bytes, a
    /// control character (NUL included), or is longer than 4096 bytes.
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Nothing exists at this path.
    NotFound(String),
    /// Something already exists at this path.
    AlreadyExists(String),
    /// The path is a folder where a file is needed, or the other way round.
    WrongKind(String),
    /// No user has this username.
    UnknownUser(String),
    /// The event type is not one of reference 6.2.
    UnknownEventType(String),
}

impl fmt::Display for ActivityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActivityError::InvalidPath { path, why } => {
                write!(f, "invalid path {}: {why}", shown(path))
            }
            ActivityError::NotFound(p) => write!(f, "nothing at {}", shown(p)),
            ActivityError::AlreadyExists(p) => write!(f, "{} already exists", shown(p)),
            ActivityError::WrongKind(p) => {
                write!(f, "{} is not of the expected kind", shown(p))
            }
            ActivityError::UnknownUser(u) => write!(f, "no user {}", shown(u)),
            ActivityError::UnknownEventType(t) => write!(f, "unknown event type {}", shown(t)),
        }
    }
}

impl std::error::Error for ActivityError {}

/// The longest name of a file or folder, bytes of UTF-8 (as most file systems allow).
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// The longest path, bytes of UTF-8 (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// `text` in quotes for a message, as a person reads it (never Rust's `Debug` escapes such as
/// `\u{0}` or `\"`): a character that would not show, or would show as something else (a
/// control character, a line or paragraph separator, a space other than the plain one, a
/// zero-width or direction mark) written as its code point, `<U+0000>`; and cut after 64
/// characters (with the length) so a huge name does not fill the message.
pub(crate) fn shown(text: &str) -> String {
    const SHOWN: usize = 64;
    let mut out = String::from("\"");
    for c in text.chars().take(SHOWN) {
        if unseen(c) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    let chars = text.chars().count();
    if chars > SHOWN {
        out.push_str(&format!("… ({} bytes)", text.len()));
    }
    out
}

/// Whether `c` would not show in a message as itself.
fn unseen(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A list for a message: its items in quotes ([`shown`]), comma-separated.
pub(crate) fn shown_list<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|item| shown(item.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Normalises an absolute path: leading `/`, no trailing `/`, no empty or dot segments, names
/// of at most [`MAX_NAME_BYTES`], no control characters, at most [`MAX_PATH_BYTES`] in all.
pub fn normalize(path: &str) -> Result<String, ActivityError> {
    let invalid = |why| ActivityError::InvalidPath {
        path: path.to_string(),
        why,
    };
    if path.chars().any(char::is_control) {
        return Err(invalid(
            "a path has no control characters (NUL, line breaks, tabs)",
        ));
    }
    let trimmed = path.trim();
    if !trimmed.starts_with('/') {
        return Err(invalid("a path starts with /"));
    }
    let segments: Vec<&str> = trimmed[1..].trim_end_matches('/').split('/').collect();
    if segments
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return Err(invalid("a path has no empty, `.` or `..` names"));
    }
    if segments.iter().any(|s| s.len() > MAX_NAME_BYTES) {
        return Err(invalid("a name is at most 255 bytes long"));
    }
    if trimmed.len() > MAX_PATH_BYTES {
        return Err(invalid("a path is at most 4096 bytes long"));
    }
    Ok(format!("/{}", segments.join("/")))
}

/// The parent folder of a normalised path (`/` for top-level entries).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Whether `path` is `folder` or inside it.
pub fn is_within(path: &str, folder: &str) -> bool {
    let folder = folder.trim_end_matches('/');
    folder.is_empty()
        || path == folder
        || (path.starts_with(folder) && path.as_bytes().get(folder.len()) == Some(&b'/'))
}

/// Folders and files by path, plus the trash.
#[derive(Debug, Default)]
pub struct FileSystem {
    entries: BTreeMap<String, FsEntry>,
    trash: Vec<FsEntry>,
}

impl FileSystem {
    /// A file system holding the built-in corpus (entry ids `4100001`, `4100002`, ... in
    /// the order of [`DOCUMENTS`]).
    pub fn with_corpus(ids: &mut IdGen) -> Self {
        let mut fs = FileSystem::default();
        for (i, doc) in DOCUMENTS.iter().enumerate() {
            let mut folder = String::new();
            for segment in doc.folder.trim_start_matches('/').split('/') {
                folder = format!("{folder}/{segment}");
                if !fs.entries.contains_key(&folder) {
                    let entry = fs.new_entry(&folder, true, "", (doc.modified_ms(), None), ids);
                    fs.entries.insert(folder.clone(), entry);
                }
            }
            let mut entry = fs.new_entry(
                &doc.path(),
                false,
                &doc.text(),
                (doc.modified_ms(), None),
                ids,
            );
            entry.entry_id = format!("{}", 4_100_001 + i);
            entry.group_id = format!("{}", 5_100_001 + i);
            entry.object_id = format!("{}", 6_100_001 + i);
            fs.entries.insert(doc.path(), entry);
        }
        fs
    }

    fn new_entry(
        &self,
        path: &str,
        is_folder: bool,
        content: &str,
        (now_ms, created_by): (i64, Option<i64>),
        ids: &mut IdGen,
    ) -> FsEntry {
        let group_id = ids.numeric();
        FsEntry {
            path: path.to_string(),
            is_folder,
            entry_id: if is_folder {
                group_id.clone()
            } else {
                ids.numeric()
            },
            group_id,
            object_id: ids.numeric(),
            checksum: if is_folder {
                String::new()
            } else {
                checksum(content)
            },
            content: content.to_string(),
            chunks: chunks_of(content),
            modified_ms: now_ms,
            created_ms: now_ms,
            created_by,
        }
    }

    /// The entry at `path`.
    pub fn get(&self, path: &str) -> Option<&FsEntry> {
        self.entries.get(path)
    }

    /// Every entry, by path.
    pub fn entries(&self) -> impl Iterator<Item = &FsEntry> {
        self.entries.values()
    }

    /// Files with content (the AI corpus), by path.
    pub fn documents(&self) -> impl Iterator<Item = &FsEntry> {
        self.entries
            .values()
            .filter(|e| !e.is_folder && !e.chunks.is_empty())
    }

    /// The file whose current version is `entry_id`.
    pub fn by_entry_id(&self, entry_id: &str) -> Option<&FsEntry> {
        self.entries
            .values()
            .find(|e| !e.is_folder && e.entry_id == entry_id)
    }

    fn need_parent(&self, path: &str) -> Result<(), ActivityError> {
        let parent = parent_of(path);
        match self.entries.get(parent) {
            _ if parent == "/" => Ok(()),
            Some(e) if e.is_folder => Ok(()),
            Some(_) => Err(ActivityError::WrongKind(parent.to_string())),
            None => Err(ActivityError::NotFound(parent.to_string())),
        }
    }

    /// Creates a folder as user `by`.
    pub fn create_folder(
        &mut self,
        path: &str,
        (now_ms, by): (i64, i64),
        ids: &mut IdGen,
    ) -> Result<FsEntry, ActivityError> {
        let path = normalize(path)?;
        if self.entries.contains_key(&path) {
            return Err(ActivityError::AlreadyExists(path));
        }
        self.need_parent(&path)?;
        let entry = self.new_entry(&path, true, "", (now_ms, Some(by)), ids);
        self.entries.insert(path, entry.clone());
        Ok(entry)
    }

    /// Creates a file as user `by`, or adds a version when one exists (`Ok((entry, true))`;
    /// the file keeps its creator and creation time).
    pub fn write_file(
        &mut self,
        path: &str,
        content: &str,
        (now_ms, by): (i64, i64),
        ids: &mut IdGen,
    ) -> Result<(FsEntry, bool), ActivityError> {
        let path = normalize(path)?;
        self.need_parent(&path)?;
        if let Some(existing) = self.entries.get_mut(&path) {
            if existing.is_folder {
                return Err(ActivityError::WrongKind(path));
            }
            existing.entry_id = ids.numeric();
            existing.checksum = checksum(content);
            existing.content = content.to_string();
            existing.chunks = chunks_of(content);
            existing.modified_ms = now_ms;
            return Ok((existing.clone(), true));
        }
        let entry = self.new_entry(&path, false, content, (now_ms, Some(by)), ids);
        self.entries.insert(path, entry.clone());
        Ok((entry, false))
    }

    fn subtree(&self, path: &str) -> Vec<String> {
        self.entries
            .keys()
            .filter(|k| is_within(k, path))
            .cloned()
            .collect()
    }

    /// The normalized paths of a move or copy of `from` to `to`, once `from` exists, `to`
    /// does not and is not within it, and `to`'s parent folder exists.
    fn relocation(&self, from: &str, to: &str) -> Result<(String, String), ActivityError> {
        let (from, to) = (normalize(from)?, normalize(to)?);
        if !self.entries.contains_key(&from) {
            return Err(ActivityError::NotFound(from));
        }
        if self.entries.contains_key(&to) || is_within(&to, &from) {
            return Err(ActivityError::AlreadyExists(to));
        }
        self.need_parent(&to)?;
        Ok((from, to))
    }

    /// Moves (or renames) an entry and everything below it; returns the moved entry.
    pub fn move_entry(
        &mut self,
        from: &str,
        to: &str,
        now_ms: i64,
    ) -> Result<FsEntry, ActivityError> {
        let (from, to) = self.relocation(from, to)?;
        for old in self.subtree(&from) {
            if let Some(mut entry) = self.entries.remove(&old) {
                entry.path = format!("{to}{}", &old[from.len()..]);
                entry.modified_ms = now_ms;
                self.entries.insert(entry.path.clone(), entry);
            }
        }
        Ok(self.entries[&to].clone())
    }

    /// Copies an entry and everything below it (new ids, created by `by` now); returns the
    /// copy.
    pub fn copy_entry(
        &mut self,
        from: &str,
        to: &str,
        (now_ms, by): (i64, i64),
        ids: &mut IdGen,
    ) -> Result<FsEntry, ActivityError> {
        let (from, to) = self.relocation(from, to)?;
        for old in self.subtree(&from) {
            let source = self.entries[&old].clone();
            let path = format!("{to}{}", &old[from.len()..]);
            let copy = self.new_entry(
                &path,
                source.is_folder,
                &source.content,
                (now_ms, Some(by)),
                ids,
            );
            self.entries.insert(path, copy);
        }
        Ok(self.entries[&to].clone())
    }

    /// Moves an entry and everything below it to the trash; returns the entry.
    pub fn delete(&mut self, path: &str) -> Result<FsEntry, ActivityError> {
        let path = normalize(path)?;
        let entry = self
            .entries
            .get(&path)
            .cloned()
            .ok_or_else(|| ActivityError::NotFound(path.clone()))?;
        for old in self.subtree(&path) {
            if let Some(e) = self.entries.remove(&old) {
                self.trash.push(e);
            }
        }
        Ok(entry)
    }

    /// Restores an entry (and what was deleted with it) from the trash.
    pub fn restore(&mut self, path: &str) -> Result<FsEntry, ActivityError> {
        let path = normalize(path)?;
        if !self.trash.iter().any(|e| e.path == path) {
            return Err(ActivityError::NotFound(path));
        }
        if self.entries.contains_key(&path) {
            return Err(ActivityError::AlreadyExists(path));
        }
        self.need_parent(&path)?;
        let (back, keep): (Vec<FsEntry>, Vec<FsEntry>) = std::mem::take(&mut self.trash)
            .into_iter()
            .partition(|e| is_within(&e.path, &path));
        self.trash = keep;
        for e in back {
            self.entries.insert(e.path.clone(), e);
        }
        Ok(self.entries[&path].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalize("/a/b/").unwrap(), "/a/b");
        assert!(normalize("a/b").is_err());
        assert!(normalize("/a//b").is_err());
        assert!(normalize("/a/../b").is_err());
        assert_eq!(parent_of("/a/b"), "/a");
        assert_eq!(parent_of("/a"), "/");
        assert!(is_within("/a/b", "/a"));
        assert!(is_within("/a", "/a/"));
        assert!(!is_within("/ab", "/a"));
    }

    #[test]
    fn corpus_is_in_the_file_system() {
        let fs = FileSystem::with_corpus(&mut IdGen::new(1));
        assert_eq!(fs.documents().count(), DOCUMENTS.len());
        assert!(fs.get("/Company/Policies").unwrap().is_folder);
        assert_eq!(
            fs.by_entry_id("4100001").unwrap().path,
            "/Company/Policies/information-security-policy.pdf"
        );
    }

    #[test]
    fn move_copy_delete_restore_carry_the_subtree() {
        let mut ids = IdGen::new(1);
        let mut fs = FileSystem::default();
        fs.create_folder("/P", (0, 7), &mut ids).unwrap();
        fs.write_file("/P/a.txt", "hello", (0, 7), &mut ids)
            .unwrap();
        assert!(matches!(
            fs.write_file("/Q/a.txt", "x", (0, 7), &mut ids),
            Err(ActivityError::NotFound(_))
        ));
        fs.move_entry("/P", "/R", 1).unwrap();
        assert!(fs.get("/R/a.txt").is_some() && fs.get("/P/a.txt").is_none());
        let copy = fs
            .copy_entry("/R/a.txt", "/R/b.txt", (2, 8), &mut ids)
            .unwrap();
        assert_ne!(copy.group_id, fs.get("/R/a.txt").unwrap().group_id);
        assert_eq!((copy.created_ms, copy.created_by), (2, Some(8)));
        fs.delete("/R").unwrap();
        assert!(fs.get("/R/b.txt").is_none());
        fs.restore("/R").unwrap();
        assert!(fs.get("/R/b.txt").is_some());
        let (v2, was_version) = fs.write_file("/R/a.txt", "bye", (3, 8), &mut ids).unwrap();
        assert!(was_version);
        assert_eq!(v2.content, "bye");
        // A version is an upload, not a creation: the file keeps its creator and time.
        assert_eq!(
            (v2.modified_ms, v2.created_ms, v2.created_by),
            (3, 0, Some(7))
        );
    }
}
