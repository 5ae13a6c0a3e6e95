//! Enums the server sends are open: known values decode to their variant, unknown ones are
//! kept verbatim and serialise back exactly.

use pubapi_sdk::types::{ActionSource, GatewayErrorCode, WebhookState, WebhookSummary};
use std::str::FromStr;

#[test]
fn open_enum_keeps_unknown_values() {
    let state: WebhookState = serde_json::from_str(r#""paused""#).unwrap();
    assert_eq!(state, WebhookState::Unknown("paused".into()));
    assert!(!state.is_known());
    assert_eq!(state.as_str(), "paused");
    assert_eq!(state.to_string(), "paused");

    let summary: WebhookSummary =
        serde_json::from_str(r#"{"webhookId":"w1","status":"Suspended-By-Admin"}"#).unwrap();
    assert_eq!(summary.status.as_str(), "Suspended-By-Admin");
}

#[test]
fn open_enum_known_values_decode_to_their_variant() {
    let state: WebhookState = serde_json::from_str(r#""enabled""#).unwrap();
    assert_eq!(state, WebhookState::Enabled);
    assert!(state.is_known());
    assert_eq!(
        serde_json::from_str::<ActionSource>(r#""WebUI""#).unwrap(),
        ActionSource::WebUi
    );
    assert_eq!(
        GatewayErrorCode::from("ERR_403_DEVELOPER_OVER_QPS"),
        GatewayErrorCode::Err403DeveloperOverQps
    );
}

#[test]
fn open_enum_round_trips_exactly() {
    for text in [
        r#""enabled""#,
        r#""disabled""#,
        r#""Enabled""#,
        r#""""#,
        r#""ünïcode ✓""#,
    ] {
        let state: WebhookState = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&state).unwrap(), text);
        assert_eq!(WebhookState::from(String::from(state.clone())), state);
    }
}

#[test]
fn open_enum_equality_is_by_text() {
    assert_eq!(
        WebhookState::Unknown("enabled".into()),
        WebhookState::Enabled
    );
    assert_eq!(WebhookState::Enabled, "enabled");
    assert_eq!(
        WebhookState::from_str("disabled"),
        Ok(WebhookState::Disabled)
    );
}
