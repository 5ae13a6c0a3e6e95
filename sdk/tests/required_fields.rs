//! Fields the reference makes the point of a response are required: a body without one is a
//! decode error that names the field, not a value with a hole in it.

use pubapi_sdk::types::{
    AgentAskResponse, AuditJobCreated, EventsCursor, PollingEvent, WebhookEventTypeFilter,
    WebhookSummary,
};

fn missing<T: serde::de::DeserializeOwned + std::fmt::Debug>(body: &str) -> String {
    serde_json::from_str::<T>(body).unwrap_err().to_string()
}

#[test]
fn missing_required_field_is_an_error_naming_it() {
    assert!(missing::<AgentAskResponse>("{}").contains("missing field `requestId`"));
    assert!(missing::<AuditJobCreated>("{}").contains("missing field `id`"));
    assert!(missing::<WebhookSummary>(r#"{"webhookId":"w1"}"#).contains("missing field `status`"));
    assert!(
        missing::<EventsCursor>(r#"{"latest_event_id":3}"#)
            .contains("missing field `oldest_event_id`")
    );
    assert!(
        missing::<PollingEvent>(r#"{"id":1,"timestamp":"2026-01-31T10:00:00Z"}"#)
            .contains("missing field `type`")
    );
    assert!(
        missing::<PollingEvent>(r#"{"id":1,"type":"note"}"#).contains("missing field `timestamp`")
    );
}

#[test]
fn required_fields_decode_without_option() {
    let summary: WebhookSummary =
        serde_json::from_str(r#"{"webhookId":"w1","status":"enabled"}"#).unwrap();
    assert_eq!(summary.webhook_id, "w1");
    let event: PollingEvent =
        serde_json::from_str(r#"{"id":7,"type":"note","timestamp":"2026-01-31T10:00:00Z"}"#)
            .unwrap();
    assert_eq!(event.id, 7);
    assert_eq!(event.timestamp, "2026-01-31T10:00:00Z");
}

#[test]
fn webhook_filter_takes_event_names_and_the_five_wildcards_only() {
    for name in [
        "fs:add_file",
        "group:create",
        "fs:*",
        "link:*",
        "comment:*",
        "permission:*",
        "meta:*",
    ] {
        let filter: WebhookEventTypeFilter = name.parse().unwrap();
        assert_eq!(filter.to_string(), name);
    }
    for name in ["workflow:*", "group:*", "*", "user:create", ""] {
        assert!(name.parse::<WebhookEventTypeFilter>().is_err(), "{name}");
    }
}
