//! Wire conformance of the deprecated copilot (reference 2.5, 4.4, 9.3): a synchronous answer
//! with `Deprecation`, `Sunset` and `Link` headers, and the 410 of the removed endpoint. It is
//! removed on 30 September 2026, a date now past: `pubapi-sdk-ext` refuses it locally unless
//! the client opts in, so the clients here are built with `call_removed_operations()`.

mod wire;

use httpmock::MockServer;
use pubapi_sdk::types;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{ActAs, Budget, Client, Error, Limits, RetryConfig, SecretToken};
use serde_json::{Value, json};
use wire::{Expect, Kind, Reply, assert_decoded};

const SUNSET: &str = "Wed, 30 Sep 2026 00:00:00 GMT";
const LINK: &str = r#"</v1/ai/assistant/ask>; rel="successor-version""#;

fn answer_body() -> Value {
    json!({
        "response": {"text": "The notice period is 90 days."},
        "citations": [
            {
                "filename": "contract.pdf",
                "entryId": "ent-1001",
                "objectId": "obj-5",
                "previewUrl": "/preview/ent-1001",
                "chunks": [{"chunkId": "chk-1", "text": "Either party may terminate with 90 days notice."}]
            }
        ],
        "conversationId": "conv-7",
        "deprecationNotice": "This endpoint is removed on 30 September 2026; use /v1/ai/assistant/ask."
    })
}

fn deprecated_answer(body: &Value) -> Reply {
    Reply::json(200, body)
        .header("deprecation", "true")
        .header("sunset", SUNSET)
        .header("link", LINK)
}

/// The copilot is past its sunset by the wall clock, so `pubapi-sdk-ext` refuses it locally
/// (nothing sent) unless the client is built with `call_removed_operations()`. These tests
/// are about what goes over the wire to a platform that still serves it, so their clients
/// opt in; otherwise they are built like `wire::client` (no pacing).
fn opted_in(base_url: &str, retry: RetryConfig) -> Client {
    Client::builder()
        .isolated_budget()
        .base_url(base_url)
        .token(SecretToken::try_from(wire::TOKEN).expect("valid token"))
        .limits(Limits {
            general: Budget::new(None, None),
            ai: Budget::new(None, None),
        })
        .retry(retry)
        .call_removed_operations()
        .build()
        .expect("client builds")
}

/// `wire::client`, opted in to the removed copilot.
fn client(server: &MockServer) -> Client {
    opted_in(&server.url("/pubapi"), RetryConfig::default())
}

/// `wire::bob`, opted in to the removed copilot.
fn bob(server: &MockServer) -> Client {
    client(server).act_as(ActAs::username(wire::BOB).expect("valid username"))
}

/// The single-attempt client `wire::assert_errors` hands over, opted in.
fn single_attempt(given: &Client) -> Client {
    opted_in(
        given.base_url(),
        RetryConfig::default().with_max_attempts(1),
    )
}

fn ask(question: &str) -> types::builder::CopilotAskRequest {
    types::CopilotAskRequest::builder().question(question)
}

/// The question of these tests, to `askCopilot`, sent by `client` (the SDK marks the
/// operation deprecated).
async fn ask_notice_period(
    client: &Client,
) -> Result<pubapi_sdk::ResponseValue<types::CopilotAskResponse>, Error> {
    #[allow(deprecated)]
    let call = client.sdk().ask_copilot();
    call.body(ask("What is the notice period?"))
        .send()
        .await
        .map_err(Error::from)
}

#[tokio::test]
async fn ask_copilot_request_full_sends_every_field_of_the_reference() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, deprecated_answer(&answer_body())).await;
    let client = bob(&server);
    #[allow(deprecated)]
    let call = client.sdk().ask_copilot();
    call.body(
        ask("What is the notice period?")
            .selected_items(types::SelectedItems {
                folders: vec![types::SelectedFolder { id: "fld-1".into() }],
                files: vec![types::SelectedFile {
                    entry_id: "ent-1001".into(),
                    file_path: None,
                    extra: Default::default(),
                }],
            })
            .chat_history(types::ChatHistory {
                messages: vec![types::ChatMessage {
                    role: Some("user".into()),
                    content: Some("Hello".into()),
                    ..Default::default()
                }],
            })
            .include_citations(true),
    )
    .send()
    .await
    .unwrap();
    seen.assert_only(
        Expect::post("/v1/ai/copilot/ask")
            .act_as(wire::BOB)
            .json(json!({
                "question": "What is the notice period?",
                "selectedItems": {"folders": [{"id": "fld-1"}], "files": [{"entryId": "ent-1001"}]},
                "chatHistory": {"messages": [{"role": "user", "content": "Hello"}]},
                "includeCitations": true
            })),
    )
    .await;
}

#[tokio::test]
async fn ask_copilot_request_minimal_sends_only_the_question() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, deprecated_answer(&answer_body())).await;
    ask_notice_period(&client(&server)).await.unwrap();
    seen.assert_only(
        Expect::post("/v1/ai/copilot/ask").json(json!({"question": "What is the notice period?"})),
    )
    .await;
}

#[tokio::test]
async fn ask_copilot_success_decodes_the_answer_and_keeps_the_deprecation_headers() {
    let server = MockServer::start_async().await;
    let body = answer_body();
    let _seen = wire::serve(&server, deprecated_answer(&body)).await;
    let response = ask_notice_period(&client(&server)).await.unwrap();
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("deprecation"), "true");
    assert_eq!(header("sunset"), SUNSET);
    assert_eq!(header("link"), LINK);
    let answer = response.into_inner();
    assert!(answer.deprecation_notice.is_some());
    wire::assert_round_trip(&answer, &body);
    assert_decoded!(answer);
}

#[tokio::test]
async fn ask_copilot_errors_decode_ai_format() {
    wire::assert_errors(
        "askCopilot",
        &[400, 401, 410, 429, 500],
        |given| async move { ask_notice_period(&single_attempt(&given)).await.map(drop) },
    )
    .await;
}

/// After its removal the platform answers the copilot 410 (as the sandbox does): in the AI
/// format, naming the successor, still with the deprecation headers. The spec documents no
/// 410, so it is an unexpected status whose body is still read in the AI format.
#[tokio::test]
async fn ask_copilot_errors_decode_the_410_of_the_removed_endpoint() {
    let server = MockServer::start_async().await;
    let body = json!({
        "errorMessage": "POST /v1/ai/copilot/ask was removed on Wed, 30 Sep 2026 00:00:00 GMT; use POST /v1/ai/assistant/ask.",
        "errorCode": "ENDPOINT_REMOVED"
    });
    let seen = wire::serve(
        &server,
        Reply::json(410, &body)
            .header("deprecation", "true")
            .header("sunset", SUNSET)
            .header("link", LINK),
    )
    .await;
    let error = ask_notice_period(&client(&server))
        .await
        .map(drop)
        .expect_err("410");
    assert_eq!(seen.calls().await, 1, "a 410 is not retried");
    assert_eq!(wire::kind(&error), Kind::UnexpectedStatus(410));
    assert_eq!(error.status(), Some(410));
    let api = error.api_error().expect("built from the response");
    assert_eq!(api.code(), Some("ENDPOINT_REMOVED"));
    assert!(
        api.message()
            .is_some_and(|m| m.contains("POST /v1/ai/assistant/ask")),
        "{error}"
    );
}

#[tokio::test]
async fn ask_copilot_forward_compat_ignores_unknown_fields_at_every_level() {
    let server = MockServer::start_async().await;
    let known = answer_body();
    let sent = wire::with_unknown_fields(
        &known,
        &["", "/response", "/citations/0", "/citations/0/chunks/0"],
    );
    let _seen = wire::serve(&server, deprecated_answer(&sent)).await;
    let answer = ask_notice_period(&client(&server))
        .await
        .unwrap()
        .into_inner();
    wire::assert_round_trip(&answer, &known);
}
