//! The typed `data` of each webhook event (reference section 6.2).
//!
//! [`EventData`] has one variant per event name, holding a struct with the fields the
//! reference lists (camelCase on the wire). Events whose tables are identical share a struct
//! (`fs:lock_file` and `fs:unlock_file` both hold [`FsFileLock`]). Every struct keeps fields
//! it does not know in `extra`, and a `data` that does not match its event's struct (a
//! required field missing, a different type) becomes [`EventData::Unknown`] with the raw
//! JSON: a delivery is never rejected over its `data`.

mod comment;
mod fs;
mod group;
mod lenient_id;
mod link;
mod meta;
mod permission;
mod workflow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use comment::{CommentRemove, CommentSet};
pub use fs::{
    FsAddFile, FsCopyFile, FsDeleteFile, FsFileLock, FsMoveFile, FsRestoreFromTrash,
    FsSourceTarget, FsTargetPath, FsUploadLink, ItemType,
};
pub use group::{GroupChange, GroupCreate, GroupMembers, GroupOwner, GroupUser};
pub use link::{LinkChange, LinkDetails, LinkType};
pub use meta::MetadataKey;
pub use permission::PermissionChange;
pub use workflow::{
    FirstEntity, WorkflowApprovalTask, WorkflowAssignee, WorkflowCompleted, WorkflowCreated,
    WorkflowInfo, WorkflowStep,
};

use super::EventType;

macro_rules! event_data {
    ($( $variant:ident($data:ident) ),+ $(,)?) => {
        /// The `data` of one webhook event, typed by its `eventType`.
        ///
        /// Variants are named like the [`EventType`] they belong to. Build one from a raw
        /// `data` with [`EventData::from_value`]; it serializes back to the `data` object.
        ///
        /// ```
        /// use pubapi_sdk_ext::webhook::{EventData, EventType};
        /// use serde_json::json;
        ///
        /// let data = EventData::from_value(
        ///     &EventType::FsAddFolder,
        ///     json!({"targetPath": "/Shared/Reports"}),
        /// );
        /// match &data {
        ///     EventData::FsAddFolder(folder) => assert_eq!(folder.target_path, "/Shared/Reports"),
        ///     other => panic!("unexpected {other:?}"),
        /// }
        ///
        /// // A `data` that does not match its event type is kept, not rejected.
        /// let odd = EventData::from_value(&EventType::FsAddFolder, json!({"path": 1}));
        /// assert!(odd.is_unknown());
        /// assert_eq!(odd.event_type(), EventType::FsAddFolder);
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum EventData {
            $(
                #[doc = concat!("`data` of [`EventType::", stringify!($variant), "`].")]
                $variant($data),
            )+
            /// An event type this SDK does not know, or a `data` that does not match the
            /// fields the reference lists for its type.
            Unknown {
                /// The event's `eventType`.
                event_type: EventType,
                /// The `data` as received (`null` when it was absent).
                raw: Value,
            },
        }

        impl EventData {
            /// Types `raw` according to `event_type`; never fails.
            ///
            /// An absent or `null` `data` counts as `{}` for the events that list no fields.
            #[must_use]
            pub fn from_value(event_type: &EventType, raw: Value) -> Self {
                let empty = Value::Object(Map::new());
                let source = if raw.is_null() { &empty } else { &raw };
                match event_type {
                    $(
                        EventType::$variant => {
                            if let Ok(data) = $data::deserialize(source) {
                                return EventData::$variant(data);
                            }
                        }
                    )+
                    _ => {}
                }
                EventData::Unknown { event_type: event_type.clone(), raw }
            }

            /// Types the JSON text of a `data` (`None` when absent) according to
            /// `event_type`, as [`EventData::from_value`] does, without building a
            /// [`Value`] first unless the type does not match. Never fails.
            ///
            /// Unlike a [`Value`], the text keeps repeated keys: a `data` that repeats a
            /// field is [`EventData::Unknown`] rather than read with its last value.
            pub(crate) fn from_json(event_type: &EventType, raw: Option<&[u8]>) -> Self {
                let raw = raw.filter(|raw| *raw != b"null");
                let source: &[u8] = raw.unwrap_or(b"{}");
                match event_type {
                    $(
                        EventType::$variant => {
                            if let Ok(data) = serde_json::from_slice::<$data>(source) {
                                return EventData::$variant(data);
                            }
                        }
                    )+
                    _ => {}
                }
                let raw = raw
                    .and_then(|raw| serde_json::from_slice(raw).ok())
                    .unwrap_or(Value::Null);
                EventData::Unknown { event_type: event_type.clone(), raw }
            }

            /// The event type this `data` belongs to.
            #[must_use]
            pub fn event_type(&self) -> EventType {
                match self {
                    $(EventData::$variant(_) => EventType::$variant,)+
                    EventData::Unknown { event_type, .. } => event_type.clone(),
                }
            }

            /// Whether this is [`EventData::Unknown`].
            #[must_use]
            pub fn is_unknown(&self) -> bool {
                matches!(self, EventData::Unknown { .. })
            }
        }

        impl Serialize for EventData {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(EventData::$variant(data) => data.serialize(serializer),)+
                    EventData::Unknown { raw, .. } => raw.serialize(serializer),
                }
            }
        }
    };
}

event_data! {
    FsAddFile(FsAddFile),
    FsAddFolder(FsTargetPath),
    FsCopyFile(FsCopyFile),
    FsCopyFolder(FsSourceTarget),
    FsMoveFile(FsMoveFile),
    FsMoveFolder(FsSourceTarget),
    FsDeleteFile(FsDeleteFile),
    FsDeleteFolder(FsTargetPath),
    FsRestoreFromTrash(FsRestoreFromTrash),
    FsDeleteFromTrash(FsTargetPath),
    FsLockFile(FsFileLock),
    FsUnlockFile(FsFileLock),
    FsUploadLink(FsUploadLink),
    FsFolderProjectActivity(FsTargetPath),
    LinkCreate(LinkChange),
    LinkDelete(LinkChange),
    LinkCreateDownloadLink(LinkDetails),
    LinkDeleteDownloadLink(LinkDetails),
    LinkCreateUploadLink(LinkDetails),
    LinkDeleteUploadLink(LinkDetails),
    CommentSetComment(CommentSet),
    CommentRemoveComment(CommentRemove),
    PermissionPermissionChange(PermissionChange),
    MetaAddMetadataKey(MetadataKey),
    MetaDeleteMetadataKey(MetadataKey),
    GroupCreate(GroupCreate),
    GroupDelete(GroupChange),
    GroupRename(GroupChange),
    GroupAddMembers(GroupMembers),
    GroupRemoveMembers(GroupMembers),
    GroupAddOwner(GroupOwner),
    GroupRemoveOwner(GroupOwner),
    WorkflowCreated(WorkflowCreated),
    WorkflowCompleted(WorkflowCompleted),
    WorkflowApprovaltaskApproved(WorkflowApprovalTask),
    WorkflowApprovaltaskRejected(WorkflowApprovalTask),
}
