//! The typed `data` of each webhook event (reference section 6.2).
//!
//! The payload types are the generated ones (`FsAddFileData`, …, from the spec's `*Data`
//! schemas): each has the fields the reference lists, required where the reference lists them
//! for every event, and keeps fields it does not know in `extra`. This module only picks the
//! type by the event's name. A `data` that does not match its event's type (a listed field
//! missing, a different JSON type) becomes [`EventData::Unknown`] with the JSON as received:
//! a delivery is never rejected over its `data`.

use pubapi_sdk::types;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::EventType;

macro_rules! event_data {
    ($( $variant:ident($data:ident) ),+ $(,)?) => {
        /// The `data` of one webhook event, typed by its `eventType`.
        ///
        /// Variants are named like the [`EventType`] they belong to and hold the generated
        /// payload type. Build one from a raw `data` with [`EventData::from_value`]; it
        /// serializes back to the `data` object.
        ///
        /// ```
        /// use pubapi_sdk_ext::webhook::{EventData, EventType};
        /// use pubapi_sdk_ext::serde_json::json;
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
                $variant(types::$data),
            )+
            /// An event type this SDK does not know, or a `data` that does not match the
            /// fields the reference lists for its type.
            Unknown {
                /// The event's `eventType`.
                event_type: EventType,
                /// The `data` as received (`null` when it was absent).
                data: Value,
            },
        }

        impl EventData {
            /// Types `data` according to `event_type`; never fails.
            ///
            /// An absent or `null` `data` counts as `{}` for the events that list no fields.
            #[must_use]
            pub fn from_value(event_type: &EventType, data: Value) -> Self {
                let empty = Value::Object(Map::new());
                let source = if data.is_null() { &empty } else { &data };
                match event_type {
                    $(
                        EventType::$variant => {
                            if let Ok(typed) = types::$data::deserialize(source) {
                                return EventData::$variant(typed);
                            }
                        }
                    )+
                    _ => {}
                }
                EventData::Unknown { event_type: event_type.clone(), data }
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
                            if let Ok(typed) = serde_json::from_slice::<types::$data>(source) {
                                return EventData::$variant(typed);
                            }
                        }
                    )+
                    _ => {}
                }
                let data = raw
                    .and_then(|raw| serde_json::from_slice(raw).ok())
                    .unwrap_or(Value::Null);
                EventData::Unknown { event_type: event_type.clone(), data }
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
                    $(EventData::$variant(typed) => typed.serialize(serializer),)+
                    EventData::Unknown { data, .. } => data.serialize(serializer),
                }
            }
        }
    };
}

event_data! {
    FsAddFile(FsAddFileData),
    FsAddFolder(FsAddFolderData),
    FsCopyFile(FsCopyFileData),
    FsCopyFolder(FsCopyFolderData),
    FsMoveFile(FsMoveFileData),
    FsMoveFolder(FsMoveFolderData),
    FsDeleteFile(FsDeleteFileData),
    FsDeleteFolder(FsDeleteFolderData),
    FsRestoreFromTrash(FsRestoreFromTrashData),
    FsDeleteFromTrash(FsDeleteFromTrashData),
    FsLockFile(FsLockFileData),
    FsUnlockFile(FsLockFileData),
    FsUploadLink(FsUploadLinkData),
    FsFolderProjectActivity(FsFolderProjectActivityData),
    LinkCreate(LinkEventData),
    LinkDelete(LinkEventData),
    LinkCreateDownloadLink(LinkDownloadLinkData),
    LinkDeleteDownloadLink(LinkDownloadLinkData),
    LinkCreateUploadLink(LinkUploadLinkData),
    LinkDeleteUploadLink(LinkUploadLinkData),
    CommentSetComment(CommentSetCommentData),
    CommentRemoveComment(CommentRemoveCommentData),
    PermissionPermissionChange(PermissionChangeData),
    MetaAddMetadataKey(MetaKeyData),
    MetaDeleteMetadataKey(MetaKeyData),
    GroupCreate(GroupCreateData),
    GroupDelete(GroupEventData),
    GroupRename(GroupEventData),
    GroupAddMembers(GroupMembersData),
    GroupRemoveMembers(GroupMembersData),
    GroupAddOwner(GroupOwnerData),
    GroupRemoveOwner(GroupOwnerData),
    WorkflowCreated(WorkflowCreatedData),
    WorkflowCompleted(WorkflowCompletedData),
    WorkflowApprovaltaskApproved(WorkflowApprovalTaskData),
    WorkflowApprovaltaskRejected(WorkflowApprovalTaskData),
}
