//! `data` of the comment events (`comment:*`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `data` of `comment:set_comment`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommentSet {
    /// Path of the commented item (`targetPath`).
    pub target_path: String,
    /// The comment (`comment`).
    pub comment: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `comment:remove_comment`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommentRemove {
    /// Path of the item (`targetPath`).
    pub target_path: String,
    /// The removed comment (`comment`, optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
