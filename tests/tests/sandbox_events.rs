//! The Events API of the sandbox (reference 4.9, 6.3): a stream fed by activity, with the
//! cursor, v1/v2 types, filters, paging, 204, below-oldest behaviour, retention, the poll
//! interval, and the 400 (general format, one entry per problem) for a query the reference
//! does not allow.

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::events::{EventsVersion, PollingEventType, StreamStart};
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::four_events;
use pubapi_testkit::sandbox::{EventsConfig, Sandbox, SandboxConfig, Violation};
use serde_json::{Value, json};
use std::time::Duration;

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

/// A sandbox with the events of [`four_events`] (ids 1 to 4).
async fn sandbox_with_events() -> Sandbox {
    let sb = sandbox().await;
    four_events(&sb);
    sb
}

/// The page of the events list `version` (`v1`, `v2`) for `query`, read by the admin.
async fn list(sb: &Sandbox, version: &str, query: &str) -> (u16, Value) {
    list_as(sb, version, query, &sb.admin_token()).await
}

/// [`list`], read with `token`.
async fn list_as(sb: &Sandbox, version: &str, query: &str, token: &str) -> (u16, Value) {
    let reply = sb
        .raw()
        .get(&format!("/{version}/events?{query}"), token)
        .await;
    (reply.status, reply.json())
}

fn ids(page: &Value) -> Vec<i64> {
    page["events"]
        .as_array()
        .map(|events| events.iter().map(|e| e["id"].as_i64().unwrap()).collect())
        .unwrap_or_default()
}

/// The ids of the v2 page of `query`, read by the admin.
async fn v2_ids(sb: &Sandbox, query: &str) -> Vec<i64> {
    v2_ids_as(sb, query, &sb.admin_token()).await
}

/// [`v2_ids`], read with `token`.
async fn v2_ids_as(sb: &Sandbox, query: &str, token: &str) -> Vec<i64> {
    ids(&list_as(sb, "v2", query, token).await.1)
}

/// `count` folders `{prefix}0`, `{prefix}1`, … made by the sandbox's own activity, one event each.
fn create_folders(sb: &Sandbox, prefix: &str, count: usize) {
    for i in 0..count {
        sb.activity()
            .create_folder(&format!("{prefix}{i}"))
            .unwrap();
    }
}

/// A sandbox with the events of [`create_folders`]: `count` folders `{prefix}0`, ….
async fn sandbox_with_folders(prefix: &str, count: usize) -> Sandbox {
    let sb = sandbox().await;
    create_folders(&sb, prefix, count);
    sb
}

/// The values of `keys` in `object`, in order, as a JSON array.
fn fields<const N: usize>(object: &Value, keys: [&str; N]) -> Value {
    Value::Array(keys.iter().map(|key| object[*key].clone()).collect())
}

/// The events cursor, read by the admin.
async fn cursor(sb: &Sandbox) -> Value {
    let token = sb.admin_token();
    sb.raw().get("/v1/events/cursor", &token).await.json()
}

/// The latest and the oldest event id of a `cursor`.
fn latest_and_oldest(cursor: &Value) -> Value {
    fields(cursor, ["latest_event_id", "oldest_event_id"])
}

#[tokio::test]
async fn cursor_reports_the_latest_and_oldest_ids() {
    let sb = sandbox().await;
    let empty = cursor(&sb).await;
    assert_eq!(latest_and_oldest(&empty), json!([0, 0]));
    assert_eq!(empty["timestamp"], "2025-03-03T09:00:00.000Z");
    four_events(&sb);
    assert_eq!(latest_and_oldest(&cursor(&sb).await), json!([4, 1]));
    sb.assert_conformant();
}

#[tokio::test]
async fn events_follow_the_cursor_and_204_means_nothing_follows() {
    let sb = sandbox_with_events().await;
    let (status, page) = list(&sb, "v2", "id=0").await;
    assert_eq!(status, 200);
    assert_eq!(ids(&page), vec![1, 2, 3, 4]);
    assert_eq!(
        fields(&page, ["latest_id", "oldest_id", "count"]),
        json!([4, 1, 4])
    );
    let (status, page) = list(&sb, "v2", "id=2").await;
    assert_eq!((status, ids(&page)), (200, vec![3, 4]));
    let (status, page) = list(&sb, "v2", "id=4").await;
    assert_eq!((status, page), (204, Value::Null));
    sb.assert_conformant();
}

#[tokio::test]
async fn event_shapes_follow_the_reference() {
    let sb = sandbox_with_events().await;
    sb.activity_as("sam")
        .move_entry("/P/a.txt", "/P/b.txt")
        .unwrap();
    let (_, page) = list(&sb, "v2", "id=0").await;
    let events = page["events"].as_array().unwrap();
    let folder = &events[0];
    assert_eq!(
        (folder["type"].as_str(), folder["action"].as_str()),
        (Some("file_system"), Some("create"))
    );
    assert_eq!(folder["data"]["is_folder"], true);
    assert_eq!(folder["actor"], 1003);
    assert_eq!(folder["action_source"], "WebUI");
    let file = &events[1];
    assert_eq!(file["data"]["target_path"], "/P/a.txt");
    // The reference: "optional link to the object"; the platform's clients: its API URL.
    assert_eq!(
        file["object_detail"],
        format!("https://{}/pubapi/v1/fs/P/a.txt", sb.domain())
    );
    assert!(file["data"]["target_id"].is_string() && file["data"]["target_group_id"].is_string());
    assert_eq!(events[2]["type"], "note");
    let permission = &events[3];
    assert_eq!(permission["action"], "permission_change");
    assert_eq!(
        permission["data"],
        json!({"target_path": "/P", "is_folder": false})
    );
    let attributes = &permission["eventTypeSpecificAttributes"];
    assert_eq!(
        attributes["changePermissionEvent"]["changedPermissions"],
        json!([{"action": "ADD", "entry": {"subject": "user:sam", "priv": "Editor"}}])
    );
    assert_eq!(attributes["groupChange"], false);
    assert!(attributes["changeContext"].is_null());
    let moved = &events[4];
    assert_eq!(moved["action"], "move");
    assert_eq!(moved["data"]["source_path"], "/P/a.txt");
    assert_eq!(moved["data"]["target_path"], "/P/b.txt");
    assert_eq!(
        moved["data"]["target_group_id"],
        file["data"]["target_group_id"]
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn v1_returns_permission_changes_only_on_request_and_v2_by_default() {
    let sb = sandbox_with_events().await;
    let (_, v1) = list(&sb, "v1", "id=0").await;
    assert_eq!(ids(&v1), vec![1, 2, 3]);
    let (_, v1_asked) = list(&sb, "v1", "id=0&type=permission_change").await;
    assert_eq!(ids(&v1_asked), vec![4]);
    let (_, v2) = list(&sb, "v2", "id=0").await;
    assert_eq!(ids(&v2), vec![1, 2, 3, 4]);
    assert_eq!(
        v2_ids(&sb, "id=0&type=note%7Cpermission_change").await,
        vec![3, 4]
    );
    let (_, v1_all) = list(
        &sb,
        "v1",
        "id=0&type=file_system%7Cnote%7Cpermission_change",
    )
    .await;
    assert_eq!(ids(&v1_all), vec![1, 2, 3, 4]);
    sb.assert_conformant();
}

#[tokio::test]
async fn folder_filter_includes_subfolders_and_does_not_follow_moves() {
    let sb = sandbox().await;
    let sam = sb.activity_as("sam");
    sam.create_folder("/A").unwrap(); // 1
    sam.create_folder("/A/sub").unwrap(); // 2
    sam.create_file("/A/sub/x.txt", "x").unwrap(); // 3
    sam.create_folder("/AB").unwrap(); // 4, not inside /A
    sam.move_entry("/A", "/B").unwrap(); // 5
    sam.create_file("/B/sub/y.txt", "y").unwrap(); // 6
    assert_eq!(v2_ids(&sb, "id=0&folder=/A").await, vec![1, 2, 3, 5]);
    assert_eq!(v2_ids(&sb, "id=0&folder=%2FB%2F").await, vec![5, 6]);
    sb.assert_conformant();
}

#[tokio::test]
async fn suppress_drops_the_users_or_the_applications_own_events() {
    let sb = sandbox().await;
    sb.activity_as("sam").create_folder("/S").unwrap(); // sam, sandbox-app
    sb.activity_as("nora").create_folder("/N").unwrap(); // nora, other-app
    sb.activity_as("sam")
        .impersonated_by("admin")
        .create_folder("/I")
        .unwrap(); // sam through the admin's client (sandbox-app)
    let sam = sb.token("sam").unwrap();
    assert_eq!(
        v2_ids_as(&sb, "id=0&suppress=none", &sam).await,
        vec![1, 2, 3]
    );
    assert_eq!(v2_ids_as(&sb, "id=0&suppress=user", &sam).await, vec![2]);
    let (_, app) = list_as(&sb, "v2", "id=0&suppress=app", &sam).await;
    assert_eq!(ids(&app), vec![2]);
    assert_eq!(
        v2_ids_as(&sb, "id=0&suppress=app", &sb.token("nora").unwrap()).await,
        vec![1, 3]
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn count_pages_are_windows_of_ids_from_1_to_100() {
    let sb = sandbox_with_folders("/F", 120).await;
    let (_, first) = list(&sb, "v2", "id=0&count=2").await;
    assert_eq!(
        (ids(&first), first["latest_id"].clone()),
        (vec![1, 2], json!(2))
    );
    assert_eq!(v2_ids(&sb, "id=0").await.len(), 50);
    assert_eq!(
        v2_ids(&sb, "id=0&count=100").await,
        (1..=100).collect::<Vec<_>>()
    );
    assert_eq!(v2_ids(&sb, "id=0&count=1").await, vec![1]);
    // Filters drop events inside the window; latest_id still moves on.
    let (_, notes) = list(&sb, "v2", "id=0&count=10&type=note").await;
    assert_eq!(fields(&notes, ["count", "latest_id"]), json!([0, 10]));
    sb.assert_conformant();
}

#[tokio::test]
async fn reverse_walks_backwards() {
    let sb = sandbox_with_folders("/R", 5).await;
    let (_, back) = list(&sb, "v2", "id=5&count=2&reverse=1").await;
    assert_eq!(ids(&back), vec![4, 5]);
    assert_eq!(fields(&back, ["oldest_id", "latest_id"]), json!([4, 5]));
    assert_eq!(v2_ids(&sb, "id=1&count=3&reverse=1").await, vec![1]);
    assert_eq!(v2_ids(&sb, "id=3&count=2&reverse=0").await, vec![4, 5]);
    sb.assert_conformant();
}

#[tokio::test]
async fn a_cursor_below_the_oldest_starts_at_the_oldest_and_retention_keeps_the_latest() {
    let mut config = SandboxConfig::testing();
    config.events = EventsConfig {
        max_events: 3,
        ..EventsConfig::default()
    };
    let sb = Sandbox::start(config).await;
    create_folders(&sb, "/K", 5);
    assert_eq!(sb.stored_events(), 3);
    assert_eq!(v2_ids(&sb, "id=0").await, vec![3, 4, 5]);
    sb.assert_conformant();
}

#[tokio::test]
async fn events_older_than_30_days_are_dropped() {
    let sb = sandbox().await;
    sb.activity().create_folder("/Old").unwrap();
    sb.advance(Duration::from_secs(29 * 86_400));
    sb.activity().create_folder("/Newer").unwrap();
    assert_eq!(sb.stored_events(), 2);
    sb.advance(Duration::from_secs(2 * 86_400));
    assert_eq!(sb.stored_events(), 1);
    assert_eq!(latest_and_oldest(&cursor(&sb).await), json!([2, 2]));
    sb.assert_conformant();
}

#[tokio::test]
async fn polls_closer_than_5_minutes_after_catching_up_are_counted() {
    let sb = sandbox_with_folders("/W", 3).await;
    // Paging through full pages right away is fine.
    list(&sb, "v2", "id=0&count=1").await;
    list(&sb, "v2", "id=1&count=1").await;
    list(&sb, "v2", "id=2&count=1").await; // caught up
    assert_eq!(sb.counters().violations_of(Violation::EventsPollTooSoon), 0);
    sb.advance(Duration::from_secs(60));
    assert_eq!(list(&sb, "v2", "id=3").await.0, 204);
    assert_eq!(sb.counters().violations_of(Violation::EventsPollTooSoon), 1);
    sb.advance(Duration::from_secs(300));
    list(&sb, "v2", "id=3").await;
    assert_eq!(sb.counters().violations_of(Violation::EventsPollTooSoon), 1);
    sb.assert_conformant();
}

/// The page of events after `start`, through the generated client's list of `version`.
async fn page_after(
    client: &pubapi_sdk_ext::Client,
    version: EventsVersion,
    start: i64,
) -> pubapi_sdk::types::EventPage {
    let sdk = client.sdk();
    match version {
        EventsVersion::V1 => sdk.list_events_v1().id(start).send().await,
        EventsVersion::V2 => sdk.list_events_v2().id(start).send().await,
    }
    .unwrap()
    .into_inner()
    .expect("a page, not the 204")
}

#[tokio::test]
async fn events_end_to_end_through_the_client() {
    let sb = sandbox().await;
    let client = sb.client_for("admin");
    let cursor = client
        .sdk()
        .get_events_cursor()
        .send()
        .await
        .unwrap()
        .into_inner();
    let start = cursor.latest_event_id;
    four_events(&sb);
    let page = page_after(&client, EventsVersion::V2, start).await;
    assert_eq!(page.count, Some(4));
    let kinds: Vec<String> = page.events.iter().map(|e| e.type_.to_string()).collect();
    assert_eq!(
        kinds,
        vec!["file_system", "file_system", "note", "permission_change"]
    );
    let v1 = page_after(&client, EventsVersion::V1, start).await;
    assert_eq!(v1.count, Some(3));
    sb.advance(Duration::from_secs(300));
    let caught_up = client
        .sdk()
        .list_events_v2()
        .id(page.latest_id)
        .send()
        .await
        .unwrap();
    assert_eq!(caught_up.status().as_u16(), 204);
    assert_eq!(caught_up.into_inner(), None);
    sb.assert_conformant();
}

// ------------------------------------------------------------------ refusals (reference 4.9)

/// Asks both lists for `query` and checks the 400: the general format, one entry per
/// `(code, description)` in `problems`, in order.
async fn assert_refused(sb: &Sandbox, query: &str, problems: &[(&str, &str)]) {
    let token = sb.admin_token();
    let errors: Vec<Value> = problems
        .iter()
        .map(|(code, description)| json!({"description": description, "code": code}))
        .collect();
    for version in ["v1", "v2"] {
        let reply = sb
            .raw()
            .get(&format!("/{version}/events?{query}"), &token)
            .await;
        assert_eq!(reply.status, 400, "{version} {query}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{version} {query}"
        );
        assert_eq!(
            reply.json(),
            json!({ "Errors": errors }),
            "{version} {query}"
        );
    }
}

#[tokio::test]
async fn a_missing_id_is_refused() {
    let sb = sandbox_with_events().await;
    for query in ["", "count=10", "folder=/P&type=note"] {
        assert_refused(&sb, query, &[("MISSING_FIELD", "`id` is required")]).await;
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn an_id_that_is_not_an_integer_is_refused() {
    let sb = sandbox_with_events().await;
    for (query, value) in [
        ("id", ""),
        ("id=", ""),
        ("id=abc", "abc"),
        ("id=1.5", "1.5"),
        ("id=1e3", "1e3"),
        ("id=%201", " 1"),
        ("id=9223372036854775808", "9223372036854775808"),
    ] {
        let description = format!("`id` must be an integer, not {value:?}");
        assert_refused(&sb, query, &[("INVALID_VALUE", &description)]).await;
    }
    sb.assert_conformant();
}

/// Each `(value, description)` of `cases`: `id=0&{param}={value}` is refused with one
/// `INVALID_VALUE` of that description, by both lists.
async fn assert_invalid(param: &str, cases: impl IntoIterator<Item = (&'static str, String)>) {
    let sb = sandbox_with_events().await;
    for (value, description) in cases {
        let query = format!("id=0&{param}={value}");
        assert_refused(&sb, &query, &[("INVALID_VALUE", &description)]).await;
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn a_count_outside_1_to_100_is_refused() {
    let values = ["0", "101", "500", "-1", "ten", "50.0", ""];
    let description = |v| format!("`count` must be an integer from 1 to 100, not {v:?}");
    assert_invalid("count", values.map(|v| (v, description(v)))).await;
}

#[tokio::test]
async fn an_unknown_type_is_refused() {
    let cases = [
        ("bogus", "bogus"),
        ("file_system%7Cbogus", "bogus"),
        ("FILE_SYSTEM", "FILE_SYSTEM"),
        ("note%7C", ""),
        ("", ""),
    ];
    let description =
        |u| format!("`type` holds {u:?}, not one of file_system, note, permission_change");
    assert_invalid("type", cases.map(|(v, unknown)| (v, description(unknown)))).await;
}

#[tokio::test]
async fn an_unknown_suppress_value_is_refused() {
    let values = ["bot", "APP", "all", ""];
    let description = |v| format!("`suppress` must be app, user or none, not {v:?}");
    assert_invalid("suppress", values.map(|v| (v, description(v)))).await;
}

#[tokio::test]
async fn a_reverse_other_than_0_or_1_is_refused() {
    let values = ["2", "-1", "true", "yes", ""];
    let description = |v| format!("`reverse` must be 0 or 1, not {v:?}");
    assert_invalid("reverse", values.map(|v| (v, description(v)))).await;
}

#[tokio::test]
async fn every_problem_of_a_query_is_reported_once_in_the_order_of_the_reference() {
    let sb = sandbox_with_events().await;
    assert_refused(
        &sb,
        "reverse=2&count=0&type=bogus%7Cnote%7Cnope&suppress=bot",
        &[
            ("MISSING_FIELD", "`id` is required"),
            (
                "INVALID_VALUE",
                "`suppress` must be app, user or none, not \"bot\"",
            ),
            (
                "INVALID_VALUE",
                "`type` holds \"bogus\", not one of file_system, note, permission_change",
            ),
            (
                "INVALID_VALUE",
                "`type` holds \"nope\", not one of file_system, note, permission_change",
            ),
            (
                "INVALID_VALUE",
                "`count` must be an integer from 1 to 100, not \"0\"",
            ),
            ("INVALID_VALUE", "`reverse` must be 0 or 1, not \"2\""),
        ],
    )
    .await;
    sb.assert_conformant();
}

#[tokio::test]
async fn a_refused_query_is_not_a_poll() {
    let sb = sandbox_with_events().await;
    assert_eq!(list(&sb, "v2", "id=4").await.0, 204); // caught up
    sb.advance(Duration::from_secs(300));
    assert_eq!(list(&sb, "v2", "id=4&count=0").await.0, 400);
    assert_eq!(list(&sb, "v2", "id=4").await.0, 204);
    assert_eq!(sb.counters().violations_of(Violation::EventsPollTooSoon), 0);
    sb.assert_conformant();
}

#[tokio::test]
async fn every_value_the_reference_lists_is_accepted() {
    let sb = sandbox_with_events().await;
    for version in ["v1", "v2"] {
        for query in [
            "id=0&count=1",
            "id=0&count=100",
            "id=-5",
            "id=0&suppress=app",
            "id=0&suppress=user",
            "id=0&suppress=none",
            "id=0&type=file_system",
            "id=0&type=note",
            "id=0&type=permission_change",
            "id=0&type=file_system%7Cnote%7Cpermission_change",
            "id=0&reverse=0",
            "id=4&reverse=1",
            "id=0&folder=/P",
        ] {
            let (status, _) = list(&sb, version, query).await;
            assert_eq!(status, 200, "{version} {query}");
        }
    }
    sb.assert_conformant();
}

/// A stream asks for the same query at every poll (only the cursor moves): the server's 400
/// reaches the caller as a typed error with the server's code and description, and ends the
/// stream instead of being repeated every 5 minutes.
#[tokio::test]
async fn an_event_stream_with_an_unknown_type_ends_with_the_servers_400() {
    let sb = sandbox_with_events().await;
    let mut stream = sb
        .client_for("admin")
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::After(0))
        .types([PollingEventType::Unknown("task".into())])
        .build();
    let first = stream.next().await;
    let Some(Err(Error::InvalidRequest(error))) = first else {
        panic!("{first:?}")
    };
    assert_eq!(error.status(), 400);
    assert_eq!(error.code(), Some("INVALID_VALUE"));
    assert_eq!(
        error.message(),
        Some("`type` holds \"task\", not one of file_system, note, permission_change")
    );
    assert_eq!(error.messages().len(), 1);
    let after = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
    assert!(matches!(after, Ok(None)), "the stream ended: {after:?}");
    let traffic = sb.traffic();
    assert_eq!(
        traffic.iter().map(|e| e.status).collect::<Vec<_>>(),
        [400],
        "one request"
    );
    sb.assert_conformant();
}
