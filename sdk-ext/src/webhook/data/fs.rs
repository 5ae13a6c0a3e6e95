//! `data` of the file-system events (`fs:*`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::webhook::open_enum::open_enum;

open_enum! {
    /// What was added or deleted: a whole file or one version of it (`itemType`).
    pub enum ItemType {
        /// A whole file.
        File = "file",
        /// One version of a file.
        Version = "version",
    }
}

/// `data` of `fs:add_file`: a file or a new version was added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsAddFile {
    /// Id of the added version (`targetEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_entry_id: String,
    /// Id of the file (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Checksum of the added content (`targetFileChecksum`).
    pub target_file_checksum: String,
    /// Path of the file (`targetPath`).
    pub target_path: String,
    /// Whether a file or a version was added (`itemType`).
    pub item_type: ItemType,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of the folder events that carry only a path: `fs:add_folder`, `fs:delete_folder`,
/// `fs:delete_from_trash` and `fs:folder_project_activity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsTargetPath {
    /// Path of the item (`targetPath`).
    pub target_path: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:copy_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsCopyFile {
    /// Path copied from (`sourcePath`).
    pub source_path: String,
    /// Path of the copy (`targetPath`).
    pub target_path: String,
    /// Version id of the copy (`targetEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_entry_id: String,
    /// File id of the copy (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Checksum of the copy (`targetFileChecksum`).
    pub target_file_checksum: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:copy_folder` and `fs:move_folder`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsSourceTarget {
    /// Path before the operation (`sourcePath`).
    pub source_path: String,
    /// Path after the operation (`targetPath`).
    pub target_path: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:move_file` (a rename is a move).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsMoveFile {
    /// Path before the move (`sourcePath`).
    pub source_path: String,
    /// Path after the move (`targetPath`).
    pub target_path: String,
    /// File id (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Version id (`targetEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_entry_id: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:delete_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsDeleteFile {
    /// File id (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Version id (`targetEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_entry_id: String,
    /// Path of the deleted file (`targetPath`).
    pub target_path: String,
    /// Checksum of the deleted content (`targetFileChecksum`).
    pub target_file_checksum: String,
    /// Whether a file or a version was deleted (`itemType`, optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_type: Option<ItemType>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:restore_from_trash`. The file fields are present only for files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsRestoreFromTrash {
    /// Path of the restored item (`targetPath`).
    pub target_path: String,
    /// Whether the restored item is a folder (`isFolder`).
    pub is_folder: bool,
    /// Version id, for files (`targetEntryId`).
    #[serde(
        default,
        deserialize_with = "super::lenient_id::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_entry_id: Option<String>,
    /// File id, for files (`targetGroupId`).
    #[serde(
        default,
        deserialize_with = "super::lenient_id::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_group_id: Option<String>,
    /// Checksum, for files (`targetFileChecksum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_file_checksum: Option<String>,
    /// File or version, for files (`itemType`, optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_type: Option<ItemType>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:lock_file` and `fs:unlock_file`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsFileLock {
    /// Version id (`targetEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_entry_id: String,
    /// File id (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Checksum (`targetFileChecksum`).
    pub target_file_checksum: String,
    /// Path of the file (`targetPath`).
    pub target_path: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `fs:upload_link`: a file arrived through an upload link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FsUploadLink {
    /// The upload link used (`uploadLinkUrl`).
    pub upload_link_url: String,
    /// Path of the uploaded file (`filePath`).
    pub file_path: String,
    /// Checksum of the uploaded file (`fileChecksum`).
    pub file_checksum: String,
    /// File id (`fileGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub file_group_id: String,
    /// Version id (`fileEntryId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub file_entry_id: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
