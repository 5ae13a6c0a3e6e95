//! `data` of `permission:permission_change`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `data` of `permission:permission_change`: a folder permission was granted, changed or
/// revoked.
///
/// `assignee`, `assignee_id`, `assigner` and `group_name` are nullable in the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PermissionChange {
    /// Folder whose permission changed (`folderPath`).
    pub folder_path: String,
    /// Permission level after the change (`newPrivilege`).
    pub new_privilege: String,
    /// Permission level before the change (`oldPrivilege`).
    pub old_privilege: String,
    /// Id of the user who made the change (`assignerId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub assigner_id: String,
    /// The user given the permission (`assignee`, nullable).
    #[serde(default)]
    pub assignee: Option<String>,
    /// Id of that user (`assigneeId`, nullable).
    #[serde(default, deserialize_with = "super::lenient_id::optional")]
    pub assignee_id: Option<String>,
    /// The user who made the change (`assigner`, nullable).
    #[serde(default)]
    pub assigner: Option<String>,
    /// The group given the permission (`groupName`, nullable).
    #[serde(default)]
    pub group_name: Option<String>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
