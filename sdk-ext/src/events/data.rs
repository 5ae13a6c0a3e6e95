//! Typed views of polling events: `data` for `file_system` and `permission_change`, open JSON
//! for `note` and for anything the API adds later.

use pubapi_sdk::types::{self, ActionSource, PollingEventAction, PollingEventType};
use serde_json::{Map, Value};

/// The `data` of a file-system event. Source fields apply to copy and move.
pub type FileSystemData = types::FileSystemEventData;

/// A permission-change event: `data` plus the extra `eventTypeSpecificAttributes`, lent by
/// the event.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionChangeEvent<'a> {
    /// `target_path` (the folder whose permission changed) and `is_folder` (always false: it
    /// says whether the event is a folder event, not whether the path is a folder).
    pub data: types::PermissionChangeEventData,
    /// Group changes, the changed permissions (`ADD` / `DELETE` with subject and level), the
    /// snapshot-restore id when a restore caused the change, the target folder id.
    pub attributes: Option<&'a types::EventTypeSpecificAttributes>,
}

/// The typed `data` of an event, decoded from the event's own `data` (the small typed
/// structs) or lent by it (open JSON, the permission change's attributes): nothing of the
/// event is copied but the fields of a typed struct.
#[derive(Debug, Clone, PartialEq)]
pub enum PollingEventData<'a> {
    /// A file-system event.
    FileSystem(FileSystemData),
    /// A permission change.
    PermissionChange(PermissionChangeEvent<'a>),
    /// A note event: its shape is not shown in the reference.
    Note(&'a Map<String, Value>),
    /// An unknown type, or a `data` that did not match its type's shape: the raw JSON.
    Other(&'a Map<String, Value>),
}

/// An event of a page that does not have the shape the reference gives every event (an `id`
/// or `timestamp` missing, a field of another type): handed over as sent, in its place among
/// the page's events, so one such event neither stops a stream nor is lost.
#[derive(Debug, Clone, PartialEq)]
pub struct UndecodableEvent {
    /// Its `id`, when it has an integer one: the stream's checkpoint after it. One without
    /// (or with an `id` that is not an integer) comes right after the event before it in
    /// the page and moves no checkpoint, so a consumer that stops on it is handed it again;
    /// the stream cannot tell two of them apart, and hands each over.
    pub id: Option<i64>,
    /// The event as sent.
    pub raw: Value,
    /// Why it could not be read: the path of the value that was wrong (`.` for the event
    /// itself, as when a field is missing), then what was wrong with it.
    pub error: String,
}

/// One polling event: the generated event as sent, with typed views.
#[derive(Debug, Clone, PartialEq)]
pub struct PollingEvent {
    /// The event as decoded from the page (unknown fields ignored, open values kept).
    pub raw: types::PollingEvent,
}

impl PollingEvent {
    /// The event id (the cursor value to resume after).
    pub fn id(&self) -> i64 {
        self.raw.id
    }

    /// When the event happened (ISO 8601, as sent).
    pub fn timestamp(&self) -> &str {
        &self.raw.timestamp
    }

    /// The event type (`file_system`, `note`, `permission_change`, or a value added later,
    /// kept in [`PollingEventType::Unknown`]).
    pub fn kind(&self) -> &PollingEventType {
        &self.raw.type_
    }

    /// The action (`create`, `delete`, `restore`, `move`, `copy`, `permission_change`, or a
    /// value added later).
    pub fn action(&self) -> Option<&PollingEventAction> {
        self.raw.action.as_ref()
    }

    /// What performed the action (`WebUI`, `SyncEngine`, `Mobile`, `PublicAPI`, `WebEdit`,
    /// `System`, `VPC`, `Other`, or a value added later).
    pub fn action_source(&self) -> Option<&ActionSource> {
        self.raw.action_source.as_ref()
    }

    /// The typed `data`; never fails: what does not fit is [`PollingEventData::Other`].
    pub fn data(&self) -> PollingEventData<'_> {
        let raw = &self.raw.data;
        match self.kind() {
            PollingEventType::FileSystem => parse(raw).map(PollingEventData::FileSystem),
            PollingEventType::PermissionChange => parse(raw).map(|data| {
                PollingEventData::PermissionChange(PermissionChangeEvent {
                    data,
                    attributes: self.raw.event_type_specific_attributes.as_ref(),
                })
            }),
            PollingEventType::Note => Some(PollingEventData::Note(raw)),
            _ => None,
        }
        .unwrap_or(PollingEventData::Other(raw))
    }

    /// When the event happened, typed: its ISO 8601 `timestamp` as an instant
    /// ([`timestamp`](Self::timestamp) keeps the text as sent).
    ///
    /// # Errors
    /// [`TimeError`](crate::time::TimeError) naming `timestamp` and its text when the text is
    /// not an ISO 8601 instant.
    pub fn occurred_at(&self) -> Result<crate::jiff::Timestamp, crate::time::TimeError> {
        crate::time::instant("timestamp", &self.raw.timestamp)
    }
}

/// `raw` as a `T`, read in place (no copy of the map), if it fits.
fn parse<T: serde::de::DeserializeOwned>(raw: &Map<String, Value>) -> Option<T> {
    T::deserialize(raw).ok()
}

impl From<types::PollingEvent> for PollingEvent {
    fn from(raw: types::PollingEvent) -> Self {
        PollingEvent { raw }
    }
}

/// The strategies every property test of untrusted input shares (`arb_json`, ...).
#[cfg(test)]
#[path = "../../tests/support/untrusted_strategies.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod untrusted_strategies;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use serde_json::json;

    fn event(value: Value) -> PollingEvent {
        PollingEvent::from(serde_json::from_value::<types::PollingEvent>(value).unwrap())
    }

    #[test]
    fn every_event_has_the_id_and_timestamp_the_reference_lists() {
        // Reference 2.11: `id` (integer) and `timestamp` (ISO 8601) on every event; only
        // `object_detail` is optional. So both are plain values, and an event without a
        // timestamp is a decode error naming the field.
        let e = event(json!({"id": 7, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}));
        let (id, timestamp): (i64, &str) = (e.id(), e.timestamp());
        assert_eq!((id, timestamp), (7, "2026-01-05T10:00:00Z"));
        let missing =
            serde_json::from_value::<types::PollingEvent>(json!({"id": 7, "type": "note"}));
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `timestamp`")
        );
    }

    #[test]
    fn file_system_move_carries_source_and_target() {
        let e = event(json!({
            "id": 7, "timestamp": "2026-01-05T10:00:00Z", "action_source": "WebUI", "actor": 42,
            "type": "file_system", "action": "move",
            "data": {"target_path": "/b/x.txt", "target_id": "v2", "target_group_id": "g1",
                     "source_path": "/a/x.txt", "source_id": "v1", "source_group_id": "g1",
                     "is_folder": false}
        }));
        assert_eq!(e.kind(), &PollingEventType::FileSystem);
        assert_eq!(e.action(), Some(&PollingEventAction::Move));
        match e.data() {
            PollingEventData::FileSystem(d) => {
                assert_eq!(d.source_path.as_deref(), Some("/a/x.txt"));
                assert_eq!(d.target_path.as_deref(), Some("/b/x.txt"));
                assert_eq!(d.is_folder, Some(false));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn permission_change_keeps_its_specific_attributes() {
        let e = event(json!({
            "id": 8, "timestamp": "2026-01-05T10:00:00Z", "type": "permission_change", "action": "permission_change",
            "data": {"target_path": "/Shared/Team", "is_folder": false},
            "eventTypeSpecificAttributes": {
                "changeGroupEvents": [], "groupChange": false, "changeContext": null,
                "targetFolderId": "f9",
                "changePermissionEvent": {"changedPermissions": [
                    {"action": "ADD", "entry": {"subject": "user:alice", "priv": "view"}}
                ]}
            }
        }));
        match e.data() {
            PollingEventData::PermissionChange(p) => {
                assert_eq!(p.data.target_path.as_deref(), Some("/Shared/Team"));
                let attributes = p.attributes.unwrap();
                assert_eq!(attributes.target_folder_id.as_deref(), Some("f9"));
                let changed = &attributes
                    .change_permission_event
                    .as_ref()
                    .unwrap()
                    .changed_permissions;
                assert_eq!(changed.len(), 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_type_and_action_source_are_carried() {
        let e = event(
            json!({"id": 9, "timestamp": "2026-01-05T10:00:00Z", "type": "sticker", "action_source": "Hologram", "data": {"x": 1}}),
        );
        assert_eq!(e.kind(), &PollingEventType::Unknown("sticker".into()));
        assert_eq!(e.action_source(), Some(&ActionSource::from("Hologram")));
        assert_eq!(
            e.data(),
            PollingEventData::Other(json!({"x": 1}).as_object().unwrap())
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn data_is_typed_as_its_json_is_and_what_does_not_fit_stays_other_as_sent(
            kind in proptest::sample::select(&["file_system", "permission_change", "note", "sticker"][..]),
            data in proptest::collection::btree_map(
                proptest::prop_oneof![
                    proptest::strategy::Just("target_path".to_owned()),
                    proptest::strategy::Just("is_folder".to_owned()),
                    proptest::strategy::Just("source_id".to_owned()),
                    ".{0,5}",
                ],
                proptest::prop_oneof![
                    ".{0,8}".prop_map(Value::String),
                    proptest::prelude::any::<bool>().prop_map(Value::Bool),
                    super::untrusted_strategies::arb_json(),
                ],
                0..5,
            ),
        ) {
            let data: Map<String, Value> = data.into_iter().collect();
            let e = event(json!({"id": 1, "timestamp": "2026-01-05T10:00:00Z", "type": kind,
                                 "data": data}));
            let as_value = |data: &Map<String, Value>| Value::Object(data.clone());
            let expected = match kind {
                "file_system" => serde_json::from_value(as_value(&data))
                    .map(PollingEventData::FileSystem)
                    .ok(),
                "permission_change" => serde_json::from_value(as_value(&data))
                    .map(|data| PollingEventData::PermissionChange(PermissionChangeEvent {
                        data,
                        attributes: None,
                    }))
                    .ok(),
                "note" => Some(PollingEventData::Note(&data)),
                _ => None,
            }
            .unwrap_or(PollingEventData::Other(&data));
            proptest::prop_assert_eq!(e.data(), expected);
        }
    }

    #[test]
    fn data_that_does_not_fit_its_type_is_other_with_every_field_as_sent() {
        let sent = json!({"target_path": 7, "is_folder": "no", "extra": {"deep": [1, null]}});
        for kind in ["file_system", "permission_change"] {
            let e = event(
                json!({"id": 1, "timestamp": "2026-01-05T10:00:00Z", "type": kind,
                                 "data": sent}),
            );
            assert_eq!(
                e.data(),
                PollingEventData::Other(sent.as_object().unwrap()),
                "{kind}"
            );
        }
    }

    #[test]
    fn note_data_stays_open_json() {
        let e = event(
            json!({"id": 10, "timestamp": "2026-01-05T10:00:00Z", "type": "note", "data": {"text": "hi"}}),
        );
        assert!(matches!(e.data(), PollingEventData::Note(m) if m["text"] == "hi"));
    }
}
