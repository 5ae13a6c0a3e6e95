//! Answers in sequence: a service's retry tests at the typed level. Each operation's mock
//! scripts its answers in order (`503, 503, then 200`) and counts them, through the client's
//! own default retries (3 attempts, backoff from 1 s: these tests take a few real seconds,
//! as the retries' waits are real against a real server).

mod support;

use pubapi_httpmock::httpmock::MockServer;
use pubapi_httpmock::operations::{GetWebhookStatusThen, GetWebhookStatusWhen};
use pubapi_httpmock::{MockServerExt, Sequence};
use pubapi_sdk::types::{WebhookError, WebhookSummary};
use pubapi_sdk_ext::{Client, Error, serde_json};

/// The client under test, with the default retries.
fn client(server: &MockServer) -> Client {
    support::client_builder(server)
        .build()
        .expect("the client builds")
}

/// The answers, in order, of `getWebhookStatus` for the hook `id`.
fn status_of<'a>(
    server: &'a MockServer,
    id: &'a str,
) -> Sequence<'a, GetWebhookStatusWhen, GetWebhookStatusThen> {
    server.get_webhook_status_sequence(|when| {
        when.webhook_id(id);
    })
}

/// [`status_of`] starting with `times` answers 503 (the platform's transient server error).
fn unavailable_first<'a>(
    server: &'a MockServer,
    id: &'a str,
    times: usize,
) -> Sequence<'a, GetWebhookStatusWhen, GetWebhookStatusThen> {
    status_of(server, id).status(503).times(times)
}

fn summary(id: &str) -> WebhookSummary {
    serde_json::from_value(
        serde_json::json!({"webhookId": id, "expires": 1_900_000_000, "status": "enabled"}),
    )
    .expect("a summary")
}

/// 503, 503, then 200: the default retries see all three, and the call succeeds with the
/// third.
#[tokio::test]
async fn a_typed_sequence_503_503_200_passes_through_the_default_retries() {
    let server = MockServer::start_async().await;
    let status = unavailable_first(&server, "wh 1", 2)
        .then(|then| {
            then.ok(&summary("wh 1"));
        })
        .build();
    let found = client(&server).webhooks().status("wh 1").await.unwrap();
    assert_eq!(found.webhook_id, "wh 1");
    status.assert_calls(3);
    assert_eq!(status.step_calls(), [2, 1]);
    status.assert_exhausted();
    let calls: Vec<usize> = status.steps().map(|mock| mock.calls()).collect();
    assert_eq!(calls, [2, 1], "httpmock's own counts agree");
}

/// Three 503s use up the default retries: the call fails with the server error, and the
/// next step is the next call's.
#[tokio::test]
async fn a_step_past_the_retries_is_the_next_calls_answer() {
    let server = MockServer::start_async().await;
    let status = unavailable_first(&server, "wh-1", 3)
        .then(|then| {
            then.not_found(&WebhookError {
                code: Some("hook_not_found_error".into()),
                ..Default::default()
            });
        })
        .build();
    let client = client(&server);
    let error = client.webhooks().status("wh-1").await.unwrap_err();
    assert!(matches!(error, Error::Server(_)), "{error}");
    assert_eq!(error.status(), Some(503));
    assert_eq!(status.step_calls(), [3, 0]);
    let error = client.webhooks().status("wh-1").await.unwrap_err();
    assert_eq!(error.code(), Some("hook_not_found_error"), "{error}");
    assert_eq!(status.step_calls(), [3, 1]);
    status.assert_exhausted();
}

/// A step counts only requests its `When` matches; after the last step the sequence answers
/// no more (httpmock's own 404), unless the last step answers `repeatedly`.
#[tokio::test]
async fn a_sequence_counts_only_its_own_requests_and_ends_unless_repeated() {
    let server = MockServer::start_async().await;
    let one = status_of(&server, "one")
        .then(|then| {
            then.ok(&summary("one"));
        })
        .build();
    let two = status_of(&server, "two")
        .then(|then| {
            then.ok(&summary("two"));
        })
        .repeatedly()
        .build();
    let client = client(&server);
    for _ in 0..3 {
        assert_eq!(
            client.webhooks().status("two").await.unwrap().webhook_id,
            "two"
        );
    }
    assert_eq!(
        client.webhooks().status("one").await.unwrap().webhook_id,
        "one"
    );
    assert_eq!((one.calls(), two.calls()), (1, 3));
    // `one` has answered its one request: the next is nobody's (a 404 without the
    // platform's body).
    let error = client.webhooks().status("one").await.unwrap_err();
    assert!(matches!(error, Error::NotFound(_)), "{error}");
    assert_eq!(error.code(), None);
    assert_eq!(one.calls(), 1);
    two.assert_exhausted();
}
