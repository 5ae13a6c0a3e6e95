//! `data` of the metadata events (`meta:*`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `data` of `meta:add_metadata_key` and `meta:delete_metadata_key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MetadataKey {
    /// Path of the item (`targetPath`).
    pub target_path: String,
    /// File id (`targetGroupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub target_group_id: String,
    /// Metadata namespace (`namespace`).
    pub namespace: String,
    /// Metadata key (`key`).
    pub key: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
