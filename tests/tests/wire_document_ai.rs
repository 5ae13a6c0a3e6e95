//! Wire conformance of the document AI area (reference 2.3, 4.2): ask a question about one
//! document version, summarize it.

mod wire;

use pubapi_sdk::types;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Reply};

fn ask_body() -> Value {
    json!({
        "response": {"text": "The termination notice period is 90 days."},
        "citations": [
            {
                "filename": "contract.pdf",
                "entryId": "ent-1001",
                "chunks": [
                    {"chunkId": "chk-1", "text": "Either party may terminate with 90 days notice."},
                    {"chunkId": "chk-2", "text": "Notice must be given in writing."}
                ]
            }
        ]
    })
}

fn summary_body() -> Value {
    json!({"response": {"text": "A two-year services contract with a 90-day notice period."}})
}

fn message(role: &str, text: &str) -> types::ChatMessage {
    types::ChatMessage {
        role: Some(role.into()),
        content: Some(text.into()),
        ..Default::default()
    }
}

fn history() -> types::ChatHistory {
    types::ChatHistory {
        messages: vec![
            message("user", "What is this contract about?"),
            message("assistant", "A services contract."),
        ],
    }
}

fn history_json() -> Value {
    json!({"messages": [
        {"role": "user", "content": "What is this contract about?"},
        {"role": "assistant", "content": "A services contract."}
    ]})
}

// ------------------------------------------------------------------ askDocument

#[tokio::test]
async fn ask_document_success_decodes_the_answer_and_its_citations() {
    let answer = wire::success!(ask_body(), |sdk| sdk
        .ask_document()
        .entry_id("ent-1001")
        .body(types::DocumentAskRequest::builder().question("What is the notice period?")));
    assert_eq!(answer.citations[0].chunks.len(), 2);
}

#[tokio::test]
async fn ask_document_success_without_citations_decodes_the_answer_alone() {
    let body = json!({"response": {"text": "90 days."}});
    let answer = wire::decoded!(Reply::json(200, &body), |sdk| sdk
        .ask_document()
        .entry_id("ent-1001")
        .body(types::DocumentAskRequest::builder().question("What is the notice period?")));
    assert!(answer.citations.is_empty());
    wire::assert_round_trip(&answer, &body);
}

#[tokio::test]
async fn ask_document_forward_compat_ignores_unknown_fields_at_every_level() {
    let known = ask_body();
    let sent = wire::with_unknown_fields(
        &known,
        &["", "/response", "/citations/0", "/citations/0/chunks/1"],
    );
    let answer = wire::decoded!(Reply::json(200, &sent), |sdk| sdk
        .ask_document()
        .entry_id("ent-1001")
        .body(types::DocumentAskRequest::builder().question("What is the notice period?")));
    wire::assert_round_trip(&answer, &known);
}

// ------------------------------------------------------------------ summarizeDocument

#[tokio::test]
async fn summarize_document_success_decodes_the_summary_text() {
    wire::success!(summary_body(), |sdk| sdk
        .summarize_document()
        .entry_id("ent-1001"));
}

#[tokio::test]
async fn summarize_document_forward_compat_ignores_unknown_fields() {
    wire::forward_compat!(&summary_body(), &["", "/response"], |sdk| sdk
        .summarize_document()
        .entry_id("ent-1001"));
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::request_tests! {
    ask_document_request_full_encodes_the_entry_id_and_sends_every_field:
        bob, Reply::json(200, &ask_body()),
        |sdk| sdk
            .ask_document()
            .entry_id(AWKWARD_ID)
            .body(
                types::DocumentAskRequest::builder()
                    .question("What is the notice period?")
                    .include_citations(true)
                    .chat_history(history()),
            )
        => Expect::post(&format!("/v1/ai/document/{AWKWARD_ID_ENCODED}/ask"))
            .act_as(wire::BOB)
            .json(json!({
                "question": "What is the notice period?",
                "includeCitations": true,
                "chatHistory": history_json()
            }));

    ask_document_request_minimal_sends_only_the_question:
        client, Reply::json(200, &ask_body()),
        |sdk| sdk
            .ask_document()
            .entry_id("ent-1001")
            .body(types::DocumentAskRequest::builder().question("What is the notice period?"))
        => Expect::post("/v1/ai/document/ent-1001/ask")
            .json(json!({"question": "What is the notice period?"}));

    summarize_document_request_full_encodes_the_entry_id_and_sends_the_chat_history:
        bob, Reply::json(200, &summary_body()),
        |sdk| sdk
            .summarize_document()
            .entry_id(AWKWARD_ID)
            .body(types::DocumentSummaryRequest::builder().chat_history(history()))
        => Expect::post(&format!("/v1/ai/document/{AWKWARD_ID_ENCODED}/summary"))
            .act_as(wire::BOB)
            .json(json!({"chatHistory": history_json()}));

    /// The reference makes the summary body optional; the generated client always sends one, an
    /// empty object when nothing is set.
    summarize_document_request_minimal_sends_an_empty_object:
        client, Reply::json(200, &summary_body()),
        |sdk| sdk.summarize_document().entry_id("ent-1001")
        => Expect::post("/v1/ai/document/ent-1001/summary").json(json!({}));
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    ask_document_errors_decode_ai_format_and_a_500_without_body:
        "askDocument", [400, 401, 404, 429, 500],
        |sdk| sdk
            .ask_document()
            .entry_id("ent-1001")
            .body(types::DocumentAskRequest::builder().question("What is the notice period?"));

    summarize_document_errors_decode_ai_format_and_a_500_without_body:
        "summarizeDocument", [400, 401, 404, 429, 500],
        |sdk| sdk.summarize_document().entry_id("ent-1001");
}
