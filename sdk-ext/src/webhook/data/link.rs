//! `data` of the link events (`link:*`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::webhook::open_enum::open_enum;

open_enum! {
    /// The kind of a shared link (`linkType`).
    pub enum LinkType {
        /// A download link to a file.
        File = "file",
        /// A download link to a folder.
        Folder = "folder",
        /// An upload link.
        Upload = "upload",
    }
}

/// `data` of `link:create` and `link:delete`, which list no fields; whatever arrives is kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LinkChange {
    /// Every field received (the reference lists none).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of the download and upload link events (`link:create_download_link`,
/// `link:delete_download_link`, `link:create_upload_link`, `link:delete_upload_link`).
///
/// `link_type` is `file` or `folder` for download links and `upload` for upload links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LinkDetails {
    /// Path the link points at (`sourcePath`).
    pub source_path: String,
    /// Id of the link (`linkId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub link_id: String,
    /// Kind of link (`linkType`).
    pub link_type: LinkType,
    /// The link itself (`linkURL`).
    #[serde(rename = "linkURL")]
    pub link_url: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
