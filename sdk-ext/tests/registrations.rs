//! Webhook registrations against a scripted webhooks API.

use pubapi_sdk::types::{WebhookState, WebhookSummary};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::webhook::registration::{Registration, WebhookErrorCode};
use pubapi_sdk_ext::{Client, Error, RetryConfig};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

fn client(script: &Arc<Script>) -> Client {
    script
        .builder()
        .retry(RetryConfig::default().with_max_attempts(1))
        .build()
        .unwrap()
}

/// A registration of a name of the documentation, with no endpoint to check (the check has
/// its tests against endpoints on loopback: `tests/tests/webhook_endpoints.rs`).
fn registration() -> Registration {
    Registration::new("https://hooks.example.com/in")
        .unwrap()
        .event_names(["fs:*"])
        .unwrap()
        .skip_endpoint_check()
}

#[tokio::test(start_paused = true)]
async fn each_webhook_error_code_is_typed() {
    let cases = [
        (400, "request_schema_error", WebhookErrorCode::RequestSchema),
        (400, "hook_invalid_url", WebhookErrorCode::InvalidUrl),
        (
            401,
            "gateway_error_forbidden_not_authorized",
            WebhookErrorCode::NotAuthorized,
        ),
        (403, "missing_scope_error", WebhookErrorCode::MissingScope),
        (404, "hook_not_found_error", WebhookErrorCode::NotFound),
        (409, "hook_quota_error", WebhookErrorCode::Quota),
    ];
    for (status, code, expected) in cases {
        let body = format!(r#"{{"code":"{code}","message":"m","details":"d"}}"#);
        let script = Script::new(vec![], Answer::json(status, body));
        let error = client(&script)
            .webhooks()
            .create(&registration())
            .await
            .unwrap_err();
        assert_eq!(error.webhook_code(), Some(expected), "{code}");
        let variant_ok = match status {
            400 => matches!(error, Error::InvalidRequest(_)),
            401 => matches!(error, Error::Unauthorized(_)),
            403 => matches!(error, Error::Forbidden { .. }),
            404 => matches!(error, Error::NotFound(_)),
            _ => matches!(error, Error::Conflict(_)),
        };
        assert!(variant_ok, "{code}: {error:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_disabled_registration_is_enabled_again() {
    let script = Script::new(
        vec![Answer::json(
            200,
            r#"{"webhookId":"w1","expires":1900000000,"status":"disabled"}"#,
        )],
        Answer::json(
            200,
            r#"{"webhookId":"w1","expires":1900000000,"status":"enabled"}"#,
        ),
    );
    let summary = client(&script)
        .webhooks()
        .ensure_enabled("w1")
        .await
        .unwrap();
    assert_eq!(summary.status, WebhookState::Enabled);
    let seen = script.seen();
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("POST", "/pubapi/v1/webhooks/w1/status")
    );
}

#[tokio::test(start_paused = true)]
async fn an_enabled_registration_is_left_alone() {
    let script = Script::new(
        vec![],
        Answer::json(
            200,
            r#"{"webhookId":"w1","expires":1900000000,"status":"enabled"}"#,
        ),
    );
    client(&script)
        .webhooks()
        .ensure_enabled("w1")
        .await
        .unwrap();
    assert_eq!(script.seen().len(), 1);
}

/// Renews `w1` at 1,000,000 s if it expires within the hour, against `answers` after a status
/// that says it expires 100 s later; then the fallback is a 500.
async fn renew_w1_expiring_soon(answers: Vec<Answer>) -> (Arc<Script>, RenewResult) {
    let status = Answer::json(
        200,
        r#"{"webhookId":"w1","expires":1000100,"status":"enabled"}"#,
    );
    let answers = std::iter::once(status).chain(answers).collect();
    let script = Script::new(answers, Answer::empty(500));
    let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
    let renewed = client(&script)
        .webhooks()
        .renew_if_expiring("w1", &registration(), Duration::from_secs(3600), now)
        .await;
    (script, renewed)
}

/// What [`renew_w1_expiring_soon`] hands back.
type RenewResult = Result<Option<WebhookSummary>, Error>;

#[tokio::test(start_paused = true)]
async fn renewal_creates_the_replacement_before_deleting_the_old_one() {
    let (script, renewed) = renew_w1_expiring_soon(vec![
        Answer::json(
            201,
            r#"{"webhookId":"w2","expires":2000000,"status":"enabled"}"#,
        ),
        Answer::empty(204),
    ])
    .await;
    assert_eq!(renewed.unwrap().unwrap().webhook_id, "w2");
    let order: Vec<_> = script
        .seen()
        .into_iter()
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert_eq!(
        order,
        [
            "GET /pubapi/v1/webhooks/w1/status",
            "POST /pubapi/v1/webhooks",
            "DELETE /pubapi/v1/webhooks/w1"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn renewal_at_the_quota_keeps_the_old_registration() {
    let (script, result) = renew_w1_expiring_soon(vec![Answer::json(
        409,
        r#"{"code":"hook_quota_error","message":"quota"}"#,
    )])
    .await;
    assert!(matches!(result, Err(Error::Conflict(_))), "{result:?}");
    assert!(script.seen().iter().all(|s| s.method != "DELETE"));
}

#[tokio::test(start_paused = true)]
async fn the_webhook_secret_never_appears_in_debug_output() {
    const CANARY: &str = "CANARY-auth-header-5d1e";
    let details = format!(
        r#"{{"webhookId":"w1","url":"https://hooks.example.com/in","eventType":["fs:*"],"path":"/A","authHeader":"{CANARY}","expires":1900000000,"status":"enabled"}}"#
    );
    let broken = format!(r#"{{"webhookId":"w1","authHeader":"{CANARY}","expires":"soon"}}"#);
    let script = Script::new(
        vec![Answer::json(200, details), Answer::json(200, broken)],
        Answer::empty(500),
    );
    let client = client(&script);
    let hook = client.webhooks().details("w1").await.unwrap();
    assert_eq!(
        hook.auth_header.as_deref(),
        Some(CANARY),
        "the value itself is kept"
    );
    let error = client.webhooks().details("w1").await.unwrap_err();
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    let registration = registration().auth_header(CANARY);
    let body = pubapi_sdk::types::WebhookCreateRequest {
        url: "https://hooks.example.com/in".into(),
        auth_header: Some(CANARY.into()),
        event_type: vec![],
        path: None,
    };
    for text in [
        format!("{hook:?}"),
        format!("{error:?}"),
        format!("{error}"),
        format!("{registration:?}"),
        format!("{body:?}"),
        format!("{:?}", client.sdk().create_webhook().body(body.clone())),
    ] {
        assert!(!text.contains(CANARY), "{text}");
    }
}
