//! Wire conformance of the polling Events API (reference 2.11, 4.9, 6.3): the cursor and the v1
//! and v2 event lists, including the `204 No Content` that ends a poll.

mod wire;

use httpmock::MockServer;
use pubapi_sdk::types;
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::events::{EventQuery, EventsVersion, Suppress};
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{Expect, Reply, assert_decoded};

fn cursor_body() -> Value {
    json!({"timestamp": "2026-03-01T10:15:30Z", "latest_event_id": 120_346, "oldest_event_id": 100})
}

fn file_system_event() -> Value {
    json!({
        "id": 120_344,
        "timestamp": "2026-03-01T10:10:00Z",
        "action_source": "WebUI",
        "actor": 1001,
        "type": "file_system",
        "action": "move",
        "object_detail": "https://acme.example.com/files/f-1",
        "data": {
            "target_path": "/Shared/Contracts/b.pdf",
            "target_id": "v-2",
            "target_group_id": "f-1",
            "source_path": "/Shared/Drafts/a.pdf",
            "source_id": "v-1",
            "source_group_id": "f-1",
            "is_folder": false
        }
    })
}

fn note_event() -> Value {
    json!({
        "id": 120_345,
        "timestamp": "2026-03-01T10:12:00Z",
        "action_source": "PublicAPI",
        "actor": 1002,
        "type": "note",
        "action": "create",
        "data": {"target_path": "/Shared/Contracts/b.pdf", "note": "Please review"}
    })
}

fn permission_change_event() -> Value {
    json!({
        "id": 120_346,
        "timestamp": "2026-03-01T10:14:00Z",
        "action_source": "System",
        "actor": 1001,
        "type": "permission_change",
        "action": "permission_change",
        "data": {"target_path": "/Shared/Contracts", "is_folder": false},
        "eventTypeSpecificAttributes": {
            "changeGroupEvents": [{"group": "Legal", "members": ["carol"]}],
            "changePermissionEvent": {
                "changedPermissions": [
                    {"action": "ADD", "entry": {"subject": "user:1003", "priv": "viewer"}},
                    {"action": "DELETE", "entry": {"subject": "group:7", "priv": "editor"}}
                ]
            },
            "changeContext": "snapshot-restore-17",
            "targetFolderId": "fld-1",
            "groupChange": true
        }
    })
}

fn page(events: Vec<Value>) -> Value {
    let count = events.len();
    json!({"latest_id": 120_346, "oldest_id": 100, "count": count, "events": events})
}

fn v1_body() -> Value {
    page(vec![file_system_event(), note_event()])
}

fn v2_body() -> Value {
    page(vec![
        file_system_event(),
        note_event(),
        permission_change_event(),
    ])
}

/// The typed `data` of a file-system or permission-change event, serialized again.
fn typed_data(event: &types::PollingEvent) -> Value {
    let data = Value::Object(event.data.clone());
    match Some(event.type_.as_str()) {
        Some("file_system") => {
            json!(serde_json::from_value::<types::FileSystemEventData>(data).unwrap())
        }
        Some("permission_change") => {
            json!(serde_json::from_value::<types::PermissionChangeEventData>(data).unwrap())
        }
        _ => data,
    }
}

/// The page of events `body` decodes to through the generated client's list of `version`
/// (`listEventsV1` or `listEventsV2`), after event 120000.
async fn decoded_page(version: EventsVersion, body: &Value) -> types::EventPage {
    let reply = Reply::json(200, body);
    match version {
        EventsVersion::V1 => wire::decoded!(reply, |sdk| sdk.list_events_v1().id(120_000_i64)),
        EventsVersion::V2 => wire::decoded!(reply, |sdk| sdk.list_events_v2().id(120_000_i64)),
    }
    .expect("a page, not the 204")
}

/// Through the generated client's list of `version`: a 204 after the cursor is a success,
/// `None`, with its status kept, from one request (no retry).
async fn assert_none_through_the_generated_client(version: EventsVersion) {
    let reply = Reply::status(204);
    let (page, calls) = match version {
        EventsVersion::V1 => wire::answered!(single_attempt_client, reply, |sdk| sdk
            .list_events_v1()
            .id(120_346_i64)),
        EventsVersion::V2 => wire::answered!(single_attempt_client, reply, |sdk| sdk
            .list_events_v2()
            .id(120_346_i64)),
    };
    assert_eq!(page.status(), 204);
    assert_eq!(page.into_inner(), None);
    assert_eq!(calls, 1, "one request, no retry");
}

/// The type-specific attributes of event `index` of `page`.
fn attributes(page: &types::EventPage, index: usize) -> &types::EventTypeSpecificAttributes {
    page.events[index]
        .event_type_specific_attributes
        .as_ref()
        .expect("type-specific attributes")
}

/// The permission changes of an event's attributes.
fn changed_permissions(
    attributes: &types::EventTypeSpecificAttributes,
) -> &[types::ChangedPermission] {
    &attributes
        .change_permission_event
        .as_ref()
        .expect("a permission change")
        .changed_permissions
}

/// Through `Client::events().page` of `version`: a 204 after the cursor is `None`, from one
/// request of the default count to the list's path.
async fn assert_nothing_after_the_cursor(version: EventsVersion) {
    let path = match version {
        EventsVersion::V1 => "/v1/events",
        EventsVersion::V2 => "/v2/events",
    };
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::status(204)).await;
    let page = wire::client(&server)
        .events()
        .page(version, &EventQuery::after(120_346))
        .await
        .unwrap();
    assert_eq!(page, None);
    seen.assert_only(Expect::get(path).query("count=100&id=120346"))
        .await;
}

/// Through `Client::events().page` of `version`: the documented errors of its list.
async fn assert_page_errors(version: EventsVersion) {
    let operation_id = match version {
        EventsVersion::V1 => "listEventsV1",
        EventsVersion::V2 => "listEventsV2",
    };
    wire::assert_errors(operation_id, &[400, 401, 403], |client| async move {
        client
            .events()
            .page(version, &EventQuery::after(120_000))
            .await
            .map(drop)
    })
    .await;
}

const FOLDER: &str = "/Shared/Q1 reports & plans";
/// Each element percent-encoded, the separating slashes kept (reference section 8).
const FOLDER_QUERY: &str = "/Shared/Q1%20reports%20%26%20plans";

// ------------------------------------------------------------------ getEventsCursor

#[tokio::test]
async fn get_events_cursor_success_decodes_time_and_event_ids() {
    let cursor = wire::success!(cursor_body(), |sdk| sdk.get_events_cursor());
    assert_eq!(cursor.latest_event_id, 120_346);
    assert_eq!(cursor.oldest_event_id, 100);
}

#[tokio::test]
async fn get_events_cursor_forward_compat_ignores_unknown_fields() {
    wire::forward_compat!(&cursor_body(), &[""], |sdk| sdk.get_events_cursor());
}

// ------------------------------------------------------------------ listEventsV1

#[tokio::test]
async fn list_events_v1_request_full_sends_the_other_suppress_values() {
    for (suppress, wire_value) in [
        (types::EventSuppress::User, "user"),
        (types::EventSuppress::None, "none"),
    ] {
        let server = MockServer::start_async().await;
        let seen = wire::serve(&server, Reply::json(200, &v1_body())).await;
        wire::client(&server)
            .sdk()
            .list_events_v1()
            .id(0_i64)
            .suppress(suppress)
            .reverse(0_i64)
            .count(1_u64)
            .send()
            .await
            .unwrap();
        seen.assert_only(
            Expect::get("/v1/events")
                .query(&format!("count=1&id=0&reverse=0&suppress={wire_value}")),
        )
        .await;
    }
}

#[tokio::test]
async fn list_events_v1_request_minimal_refuses_a_count_of_zero_and_a_reverse_of_two_before_sending()
 {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &v1_body())).await;
    let client = wire::client(&server);
    let list = || client.sdk().list_events_v1().id(1_i64);
    for (what, call) in [
        ("a count of 0", list().count(0_u64)),
        ("a reverse of 2", list().reverse(2_i64)),
    ] {
        let refused = call.send().await.map_err(Error::from);
        assert!(
            matches!(refused, Err(Error::InvalidInput(_))),
            "{what}: {refused:?}"
        );
    }
    assert_eq!(seen.calls().await, 0, "nothing is sent");
}

#[tokio::test]
async fn list_events_v1_success_decodes_the_page_and_file_system_data() {
    let body = v1_body();
    let page = decoded_page(EventsVersion::V1, &body).await;
    assert_eq!(page.events.len(), 2);
    let moved = &page.events[0];
    assert_eq!(moved.type_, types::PollingEventType::from("file_system"));
    assert_eq!(moved.action, Some(types::PollingEventAction::from("move")));
    assert_eq!(
        moved.action_source,
        Some(types::ActionSource::from("WebUI"))
    );
    assert_eq!(typed_data(moved), body["events"][0]["data"]);
    wire::assert_round_trip(&page, &body);
    assert_decoded!(page);
}

#[tokio::test]
async fn list_events_v1_forward_compat_accepts_unknown_fields_type_action_and_source() {
    let mut known = v1_body();
    known["events"][0]["action_source"] = json!("Scanner");
    known["events"][1]["type"] = json!("task");
    known["events"][1]["action"] = json!("archive");
    let sent = wire::with_unknown_fields(&known, &["", "/events/0", "/events/1"]);
    let page = decoded_page(EventsVersion::V1, &sent).await;
    assert_eq!(
        page.events[0].action_source,
        Some(types::ActionSource::from("Scanner"))
    );
    assert_eq!(page.events[1].type_, types::PollingEventType::from("task"));
    assert_eq!(
        page.events[1].action,
        Some(types::PollingEventAction::from("archive"))
    );
    wire::assert_round_trip(&page, &known);
}

// ------------------------------------------------------------------ listEventsV2

#[tokio::test]
async fn list_events_v2_success_decodes_permission_change_events_and_their_attributes() {
    let body = v2_body();
    let page = decoded_page(EventsVersion::V2, &body).await;
    assert_eq!(typed_data(&page.events[2]), body["events"][2]["data"]);
    let attributes = attributes(&page, 2);
    assert_eq!(attributes.group_change, Some(true));
    assert_eq!(
        attributes.change_context.as_deref(),
        Some("snapshot-restore-17")
    );
    let changed = changed_permissions(attributes);
    assert_eq!(
        changed[0].action,
        Some(types::PermissionChangeAction::from("ADD"))
    );
    assert_eq!(
        changed[1].entry.as_ref().unwrap().priv_.as_deref(),
        Some("editor")
    );
    wire::assert_round_trip(&page, &body);
    assert_decoded!(page);
}

/// `changeContext` is null unless the change came from a snapshot restore.
#[tokio::test]
async fn list_events_v2_success_decodes_a_null_change_context() {
    let mut event = permission_change_event();
    event["eventTypeSpecificAttributes"]["changeContext"] = Value::Null;
    let page = decoded_page(EventsVersion::V2, &page(vec![event])).await;
    let attributes = attributes(&page, 0);
    assert_eq!(attributes.change_context, None);
}

#[tokio::test]
async fn list_events_v2_forward_compat_accepts_unknown_fields_and_open_values() {
    let mut known = v2_body();
    known["events"][2]["action_source"] = json!("Scanner");
    known["events"][2]["eventTypeSpecificAttributes"]["changePermissionEvent"]["changedPermissions"]
        [0]["action"] = json!("MODIFY");
    known["events"][1]["type"] = json!("task");
    let sent = wire::with_unknown_fields(
        &known,
        &[
            "",
            "/events/2",
            "/events/2/eventTypeSpecificAttributes",
            "/events/2/eventTypeSpecificAttributes/changePermissionEvent",
            "/events/2/eventTypeSpecificAttributes/changePermissionEvent/changedPermissions/0",
            "/events/2/eventTypeSpecificAttributes/changePermissionEvent/changedPermissions/0/entry",
        ],
    );
    let page = decoded_page(EventsVersion::V2, &sent).await;
    let attributes = attributes(&page, 2);
    let changed = changed_permissions(attributes);
    assert_eq!(
        changed[0].action,
        Some(types::PermissionChangeAction::from("MODIFY"))
    );
    wire::assert_round_trip(&page, &known);
}

// ------------------------------------------------------------------ through Client::events_page

#[tokio::test]
async fn list_events_v1_request_full_through_events_page_sends_every_query_parameter() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &v1_body())).await;
    let query = EventQuery {
        folder: Some(FOLDER.to_owned()),
        suppress: Some(Suppress::App),
        types: vec![
            types::PollingEventType::FileSystem,
            types::PollingEventType::Note,
        ],
        count: Some(20),
        reverse: true,
        ..EventQuery::after(120_000)
    };
    let page = wire::bob(&server)
        .events()
        .page(EventsVersion::V1, &query)
        .await
        .unwrap()
        .expect("a page");
    wire::assert_round_trip(&page, &v1_body());
    seen.assert_only(
        Expect::get("/v1/events")
            .query(&format!(
                "count=20&folder={FOLDER_QUERY}&id=120000&reverse=1&suppress=app\
                 &type=file_system%7Cnote"
            ))
            .act_as(wire::BOB),
    )
    .await;
}

#[tokio::test]
async fn list_events_v1_request_minimal_through_events_page_refuses_a_count_over_100_before_sending()
 {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &v1_body())).await;
    let query = EventQuery {
        count: Some(101),
        ..EventQuery::after(1)
    };
    let result = wire::client(&server)
        .events()
        .page(EventsVersion::V1, &query)
        .await;
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert_eq!(seen.calls().await, 0, "nothing is sent");
}

#[tokio::test]
async fn list_events_v2_success_through_events_page_decodes_the_page() {
    let server = MockServer::start_async().await;
    let body = v2_body();
    let _seen = wire::serve(&server, Reply::json(200, &body)).await;
    let page = wire::client(&server)
        .events()
        .page(EventsVersion::V2, &EventQuery::after(120_000))
        .await
        .unwrap()
        .expect("a page");
    wire::assert_round_trip(&page, &body);
}

// ------------------------------------------------------------------ both lists alike

/// One test for each events list of a behaviour the two share: the v1 test's name, the v2
/// test's name, and the check both run, given their list's [`EventsVersion`].
macro_rules! for_both_lists {
    ($(
        $(#[$doc:meta])*
        $v1:ident, $v2:ident => $check:ident;
    )*) => {$(
        $(#[$doc])*
        #[tokio::test]
        async fn $v1() {
            $check(EventsVersion::V1).await;
        }

        $(#[$doc])*
        #[tokio::test]
        async fn $v2() {
            $check(EventsVersion::V2).await;
        }
    )*};
}

for_both_lists! {
    /// Reference 2.11: 204 with no body when nothing follows the cursor. The generated client
    /// answers it as a success, `None`, with its status kept (the spec's 204 is given back by
    /// codegen's `no_content_as_none`); one request, no retry.
    list_events_v1_204_nothing_after_the_cursor_is_none_through_the_generated_client,
    list_events_v2_204_nothing_after_the_cursor_is_none_through_the_generated_client
        => assert_none_through_the_generated_client;

    list_events_v1_204_nothing_after_the_cursor_is_none_through_events_page,
    list_events_v2_204_nothing_after_the_cursor_is_none_through_events_page
        => assert_nothing_after_the_cursor;

    list_events_v1_errors_through_events_page_decode_400_with_every_problem_401_and_general_throttle_403,
    list_events_v2_errors_through_events_page_decode_400_with_every_problem_401_and_general_throttle_403
        => assert_page_errors;
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::parameterless_get_tests! {
    get_events_cursor_request_full_through_a_view_sends_the_impersonation_header: bob,
    get_events_cursor_request_minimal_sends_no_query,
    Reply::json(200, &cursor_body()), |sdk| sdk.get_events_cursor() => "/v1/events/cursor"
}

wire::request_tests! {
    list_events_v1_request_full_sends_every_query_parameter_encoded:
        bob, Reply::json(200, &v1_body()),
        |sdk| sdk
            .list_events_v1()
            .id(120_000_i64)
            .folder(FOLDER)
            .suppress(types::EventSuppress::App)
            .type_("file_system|note|permission_change")
            .count(100_u64)
            .reverse(1_i64)
        => Expect::get("/v1/events")
            .query(&format!(
                "count=100&folder={FOLDER_QUERY}&id=120000&reverse=1&suppress=app\
                 &type=file_system%7Cnote%7Cpermission_change"
            ))
            .act_as(wire::BOB);

    list_events_v1_request_minimal_sends_only_the_cursor_id:
        client, Reply::json(200, &v1_body()),
        |sdk| sdk.list_events_v1().id(120_000_i64)
        => Expect::get("/v1/events").query("id=120000");

    list_events_v2_request_full_sends_every_query_parameter_encoded:
        bob_by_email, Reply::json(200, &v2_body()),
        |sdk| sdk
            .list_events_v2()
            .id(120_000_i64)
            .folder(FOLDER)
            .suppress(types::EventSuppress::User)
            .type_("permission_change")
            .count(50_u64)
            .reverse(1_i64)
        => Expect::get("/v2/events")
            .query(&format!(
                "count=50&folder={FOLDER_QUERY}&id=120000&reverse=1&suppress=user\
                 &type=permission_change"
            ))
            .act_as_email(wire::BOB_EMAIL);

    list_events_v2_request_minimal_sends_only_the_cursor_id:
        client, Reply::json(200, &v2_body()),
        |sdk| sdk.list_events_v2().id(-1_i64)
        => Expect::get("/v2/events").query("id=-1");
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    get_events_cursor_errors_decode_401_and_general_throttle_403:
        "getEventsCursor", [401, 403],
        |sdk| sdk.get_events_cursor();

    list_events_v1_errors_decode_400_with_every_problem_401_and_general_throttle_403:
        "listEventsV1", [400, 401, 403],
        |sdk| sdk.list_events_v1().id(120_000_i64);

    list_events_v2_errors_decode_400_with_every_problem_401_and_general_throttle_403:
        "listEventsV2", [400, 401, 403],
        |sdk| sdk.list_events_v2().id(120_000_i64);
}
