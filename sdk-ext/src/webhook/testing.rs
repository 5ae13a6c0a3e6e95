//! Helpers for testing code that receives webhooks: signed delivery bodies and sample `data`
//! for every event type, written from the reference (section 6.2).
//!
//! Behind the feature `test-util` (enable it in your `[dev-dependencies]`), so an application
//! can test its [`DeliveryHandler`] and its HTTP wiring without the platform.
//!
//! ```
//! use pubapi_sdk_ext::webhook::{Delivery, EventData, EventType, testing};
//!
//! let (headers, body) = testing::DeliveryBuilder::new("s3cr3t")
//!     .event(EventType::CommentSetComment, testing::sample_data(&EventType::CommentSetComment))
//!     .build();
//! assert_eq!(headers["authorization"], "s3cr3t");
//! let delivery = Delivery::parse(&body).unwrap();
//! let event = delivery.events().next().unwrap();
//! assert!(matches!(event.data, EventData::CommentSetComment(_)));
//! ```
//!
//! [`DeliveryHandler`]: super::DeliveryHandler

use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::EventType;

/// Timestamp of the first event a [`DeliveryBuilder`] makes (2023-11-14T22:13:20Z), in
/// milliseconds; each further event is one millisecond later.
pub const SAMPLE_TIMESTAMP_MS: i64 = 1_700_000_000_000;

/// Builds a delivery body and the headers the platform would send with it.
///
/// Events get deterministic envelopes: ids `evt-1`, `evt-2`... in the order added, domain
/// `example`, webhook `wh-test`, the [`sample_user`]. Use [`DeliveryBuilder::item`] for any
/// other element, and [`authorized_headers`] to send a body of your own.
#[derive(Clone)]
pub struct DeliveryBuilder {
    secret: String,
    items: Vec<Value>,
}

impl DeliveryBuilder {
    /// A delivery authenticated with `secret` (sent as the `authorization` header).
    #[must_use]
    pub fn new(secret: impl Into<String>) -> Self {
        DeliveryBuilder {
            secret: secret.into(),
            items: Vec::new(),
        }
    }

    /// Adds an event of `event_type` with `data`, under the next `evt-N` id.
    #[must_use]
    pub fn event(self, event_type: EventType, data: Value) -> Self {
        let event_id = format!("evt-{}", self.items.len() + 1);
        self.event_with_id(event_type, &event_id, data)
    }

    /// Adds an event of `event_type` with `data` and this `eventId`.
    #[must_use]
    pub fn event_with_id(mut self, event_type: EventType, event_id: &str, data: Value) -> Self {
        let mut element = sample_event(&event_type, event_id);
        element["data"] = data;
        element["timestamp"] = json!(SAMPLE_TIMESTAMP_MS + self.items.len() as i64);
        self.items.push(element);
        self
    }

    /// Adds any element to `data`, as given.
    #[must_use]
    pub fn item(mut self, element: Value) -> Self {
        self.items.push(element);
        self
    }

    /// The headers (`authorization`, `content-type`) and the body.
    ///
    /// A secret that cannot be a header value yields no `authorization` header, as no client
    /// could send it.
    #[must_use]
    pub fn build(self) -> (HeaderMap, Vec<u8>) {
        let body = serde_json::to_vec(&json!({ "data": self.items })).unwrap_or_default();
        (authorized_headers(&self.secret), body)
    }
}

impl std::fmt::Debug for DeliveryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryBuilder")
            .field("secret", &"** redacted **")
            .field("items", &self.items.len())
            .finish()
    }
}

/// A delivery of one `fs:add_file` event with the id `event_id`, authenticated with
/// `secret`: the smallest delivery a receiver hands over (or drops as a duplicate).
///
/// ```
/// use pubapi_sdk_ext::webhook::testing;
///
/// let (headers, body) = testing::one_event("a-long-random-secret", "e-1");
/// assert!(headers.contains_key("authorization"));
/// assert!(String::from_utf8(body).unwrap().contains("\"e-1\""));
/// ```
#[must_use]
pub fn one_event(secret: &str, event_id: &str) -> (HeaderMap, Vec<u8>) {
    DeliveryBuilder::new(secret)
        .event_with_id(
            EventType::FsAddFile,
            event_id,
            sample_data(&EventType::FsAddFile),
        )
        .build()
}

/// The headers of a delivery authenticated with `secret`: `authorization` (marked sensitive)
/// and `content-type: application/json`.
#[must_use]
pub fn authorized_headers(secret: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(mut value) = HeaderValue::from_str(secret) {
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    headers
}

/// Every event type the spec lists, in its order: one [`sample_event`] each covers the
/// reference.
#[must_use]
pub fn all_event_types() -> Vec<EventType> {
    EventType::KNOWN
        .iter()
        .map(|name| EventType::from(*name))
        .collect()
}

/// The `user` object of the sample envelopes.
#[must_use]
pub fn sample_user() -> Value {
    json!({
        "id": 1001,
        "displayName": "Ada Lovelace",
        "username": "ada",
        "email": "ada@example.com"
    })
}

/// A complete delivery element (envelope and [`sample_data`]) for `event_type`.
#[must_use]
pub fn sample_event(event_type: &EventType, event_id: &str) -> Value {
    json!({
        "eventId": event_id,
        "domain": "example",
        "timestamp": SAMPLE_TIMESTAMP_MS,
        "user": sample_user(),
        "actionSource": "PublicAPI",
        "eventType": event_type.as_str(),
        "webhookId": "wh-test",
        "data": sample_data(event_type)
    })
}

/// A sample `data` for `event_type`, with every field the reference lists for it; `{}` for
/// a type this SDK does not know.
#[must_use]
pub fn sample_data(event_type: &EventType) -> Value {
    file_system_data(event_type)
        .or_else(|| link_comment_permission_or_metadata_data(event_type))
        .or_else(|| group_or_workflow_data(event_type))
        .unwrap_or_else(|| json!({}))
}

/// A sample `data` of a file system event (`fs.*`); `None` for another type.
fn file_system_data(event_type: &EventType) -> Option<Value> {
    let data = match event_type {
        EventType::FsAddFile => json!({
            "targetEntryId": "ent-2001",
            "targetGroupId": "grp-3001",
            "targetFileChecksum": "9e107d9d372bb6826bd81d3542a419d6",
            "targetPath": "/Shared/Reports/q3.pdf",
            "itemType": "file"
        }),
        EventType::FsAddFolder
        | EventType::FsDeleteFolder
        | EventType::FsDeleteFromTrash
        | EventType::FsFolderProjectActivity => json!({"targetPath": "/Shared/Reports"}),
        EventType::FsCopyFile => json!({
            "sourcePath": "/Shared/Reports/q3.pdf",
            "targetPath": "/Archive/q3.pdf",
            "targetEntryId": "ent-2002",
            "targetGroupId": "grp-3002",
            "targetFileChecksum": "9e107d9d372bb6826bd81d3542a419d6"
        }),
        EventType::FsCopyFolder | EventType::FsMoveFolder => json!({
            "sourcePath": "/Shared/Reports",
            "targetPath": "/Archive/Reports"
        }),
        EventType::FsMoveFile => json!({
            "sourcePath": "/Shared/Reports/q3.pdf",
            "targetPath": "/Shared/Reports/q3-final.pdf",
            "targetGroupId": "grp-3001",
            "targetEntryId": "ent-2001"
        }),
        EventType::FsDeleteFile => json!({
            "targetGroupId": "grp-3001",
            "targetEntryId": "ent-2001",
            "targetPath": "/Shared/Reports/q3.pdf",
            "targetFileChecksum": "9e107d9d372bb6826bd81d3542a419d6",
            "itemType": "version"
        }),
        EventType::FsRestoreFromTrash => json!({
            "targetPath": "/Shared/Reports/q3.pdf",
            "isFolder": false,
            "targetEntryId": "ent-2001",
            "targetGroupId": "grp-3001",
            "targetFileChecksum": "9e107d9d372bb6826bd81d3542a419d6",
            "itemType": "file"
        }),
        EventType::FsLockFile | EventType::FsUnlockFile => json!({
            "targetEntryId": "ent-2001",
            "targetGroupId": "grp-3001",
            "targetFileChecksum": "9e107d9d372bb6826bd81d3542a419d6",
            "targetPath": "/Shared/Reports/q3.pdf"
        }),
        EventType::FsUploadLink => json!({
            "uploadLinkUrl": "https://example.test/u/AbC123",
            "filePath": "/Shared/Inbox/scan.pdf",
            "fileChecksum": "e4d909c290d0fb1ca068ffaddf22cbd0",
            "fileGroupId": "grp-3003",
            "fileEntryId": "ent-2003"
        }),
        _ => return None,
    };
    Some(data)
}

/// A sample `data` of a link, comment, permission or metadata event; `None` for another type.
fn link_comment_permission_or_metadata_data(event_type: &EventType) -> Option<Value> {
    let data = match event_type {
        EventType::LinkCreate | EventType::LinkDelete => json!({}),
        EventType::LinkCreateDownloadLink | EventType::LinkDeleteDownloadLink => json!({
            "sourcePath": "/Shared/Reports/q3.pdf",
            "linkId": "lnk-4001",
            "linkType": "file",
            "linkURL": "https://example.test/dl/XyZ789"
        }),
        EventType::LinkCreateUploadLink | EventType::LinkDeleteUploadLink => json!({
            "sourcePath": "/Shared/Inbox",
            "linkId": "lnk-4002",
            "linkType": "upload",
            "linkURL": "https://example.test/u/AbC123"
        }),
        EventType::CommentSetComment | EventType::CommentRemoveComment => json!({
            "targetPath": "/Shared/Reports/q3.pdf",
            "comment": "Please review section 2."
        }),
        EventType::PermissionPermissionChange => json!({
            "folderPath": "/Shared/Reports",
            "newPrivilege": "editor",
            "oldPrivilege": "viewer",
            "assignerId": "1001",
            "assignee": "grace",
            "assigneeId": "1002",
            "assigner": "ada",
            "groupName": null
        }),
        EventType::MetaAddMetadataKey | EventType::MetaDeleteMetadataKey => json!({
            "targetPath": "/Shared/Reports/q3.pdf",
            "targetGroupId": "grp-3001",
            "namespace": "finance",
            "key": "quarter"
        }),
        _ => return None,
    };
    Some(data)
}

/// A sample `data` of a group or workflow event; `None` for another type.
fn group_or_workflow_data(event_type: &EventType) -> Option<Value> {
    let data = match event_type {
        EventType::GroupCreate => group_data(json!({
            "members": ["grace", "linus"],
            "owner": "ada"
        })),
        EventType::GroupDelete | EventType::GroupRename => group_data(json!({})),
        EventType::GroupAddMembers | EventType::GroupRemoveMembers => {
            group_data(json!({"members": ["grace"]}))
        }
        EventType::GroupAddOwner | EventType::GroupRemoveOwner => {
            group_data(json!({"owner": "grace"}))
        }
        EventType::WorkflowCreated => workflow_data(json!({
            "definitionJson": {"steps": [{"name": "Approve", "type": "approval"}]}
        })),
        EventType::WorkflowCompleted => workflow_data(json!({
            "completionStatusCode": "COMPLETED",
            "totalNumberOfSteps": 2,
            "completionDate": "2023-11-14T22:13:20Z"
        })),
        EventType::WorkflowApprovaltaskApproved | EventType::WorkflowApprovaltaskRejected => {
            workflow_data(json!({
                "step": {"id": "step-1", "name": "Approve", "type": "approval"},
                "assignee": {
                    "id": "1002",
                    "displayName": "Grace Hopper",
                    "username": "grace",
                    "email": "grace@example.com"
                },
                "totalNumberOfSteps": 2,
                "completionDate": "2023-11-14T22:13:20Z",
                "creationDate": "2023-11-13T09:00:00Z"
            }))
        }
        _ => return None,
    };
    Some(data)
}

/// The fields every group event carries, plus `specific`.
fn group_data(specific: Value) -> Value {
    merge(
        json!({
            "user": {
                "id": "1001",
                "fullName": "Ada Lovelace",
                "userName": "ada",
                "email": "ada@example.com"
            },
            "groupName": "Finance",
            "groupId": "g-5001"
        }),
        specific,
    )
}

/// The fields every workflow event carries, plus `specific`.
fn workflow_data(specific: Value) -> Value {
    merge(
        json!({
            "workflow": {
                "id": "wf-6001",
                "name": "Quarterly report approval",
                "displayId": "WF-42",
                "type": "approval",
                "actionStatus": "ACTIVE",
                "templateId": "tpl-7001"
            },
            "firstEntity": {
                "type": "file",
                "filePath": "/Shared/Reports/q3.pdf",
                "entryID": "ent-2001",
                "groupID": "grp-3001"
            }
        }),
        specific,
    )
}

fn merge(mut base: Value, specific: Value) -> Value {
    if let (Value::Object(base_fields), Value::Object(specific_fields)) = (&mut base, specific) {
        base_fields.extend(specific_fields);
    }
    base
}
