//! Wire conformance of the AI assistant area (reference 2.4, 4.3): ask (asynchronous) and poll
//! the execution status.

mod wire;

use pubapi_sdk::types;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Reply};

fn ask_body() -> Value {
    json!({
        "conversationId": "conv-7",
        "executionId": "exe-99",
        "executionStatus": "IN_PROGRESS",
        "truncated": false,
        "actions": [{"type": "SEARCH", "query": "notice period"}]
    })
}

fn status_body() -> Value {
    json!({
        "status": "COMPLETED",
        "responseText": "The notice period is 90 days.",
        "thoughts": ["Searching the contracts folder", {"step": 2}],
        "citations": [
            {
                "filename": "contract.pdf",
                "entryId": "ent-1001",
                "objectId": "obj-5",
                "previewUrl": "/preview/ent-1001",
                "chunks": [{"chunkId": "chk-1", "sourceText": "Either party may terminate with 90 days notice."}]
            }
        ],
        "intent": "QUESTION_ANSWERING",
        "lastUpdated": 1_772_360_130_000_i64,
        "numToolCalls": 1,
        "pendingActions": [{"kind": "CONFIRM"}],
        "toolCalls": {
            "call-1": {
                "name": "search_files",
                "sourceDisplayName": "Files",
                "toolDisplayName": "File search",
                "thought": "Look for the notice clause",
                "input": {"query": "notice period", "limit": 5},
                "output": "1 match in contract.pdf",
                "status": "SUCCESS",
                "timestamp": "2026-03-01T10:15:29Z"
            }
        }
    })
}

fn ask(question: &str) -> types::builder::AssistantAskRequest {
    types::AssistantAskRequest::builder().question(question)
}

// ------------------------------------------------------------------ askAssistant

/// The question of the full request: every field of the reference, as the client shapes it.
fn full_ask() -> types::builder::AssistantAskRequest {
    ask("What is the notice period?")
        .selected_items(types::SelectedItems {
            folders: vec![types::SelectedFolder { id: "fld-1".into() }],
            files: vec![types::SelectedFile {
                entry_id: "ent-1001".into(),
                file_path: Some("/Legal/contract.pdf".into()),
                extra: Default::default(),
            }],
        })
        .chat_history(types::ChatHistory {
            messages: vec![
                types::ChatMessage {
                    role: Some("user".into()),
                    content: Some("Hello".into()),
                    ..Default::default()
                },
                types::ChatMessage {
                    role: Some("assistant".into()),
                    content: Some("Hi, how can I help?".into()),
                    ..Default::default()
                },
            ],
        })
        .include_citations(true)
        .conversation_id("conv-7".to_string())
        .mcp_selection_id("mcp-3".to_string())
        .model_details(types::ModelDetails {
            name: Some("large".into()),
            version: Some("2026-01".into()),
            ..Default::default()
        })
}

wire::request_tests! {
    ask_assistant_request_full_sends_every_field_of_the_reference_and_the_client_shapes:
        bob, Reply::json(200, &ask_body()),
        |sdk| sdk.ask_assistant().body(full_ask())
        => Expect::post("/v1/ai/assistant/ask").act_as(wire::BOB).json(json!({
            "question": "What is the notice period?",
            "selectedItems": {
                "folders": [{"id": "fld-1"}],
                "files": [{"entryId": "ent-1001", "filePath": "/Legal/contract.pdf"}]
            },
            "chatHistory": {"messages": [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi, how can I help?"}
            ]},
            "includeCitations": true,
            "conversationId": "conv-7",
            "mcpSelectionId": "mcp-3",
            "modelDetails": {"name": "large", "version": "2026-01"}
        }));
}

#[tokio::test]
async fn ask_assistant_success_decodes_the_execution_handle() {
    let started = wire::success!(ask_body(), |sdk| sdk
        .ask_assistant()
        .body(ask("What is the notice period?")));
    assert_eq!(started.execution_id, "exe-99");
    assert_eq!(started.truncated, Some(false));
}

#[tokio::test]
async fn ask_assistant_forward_compat_accepts_unknown_fields_and_execution_status() {
    let mut known = ask_body();
    known["executionStatus"] = json!("QUEUED");
    let started = wire::forward_compat!(&known, &[""], |sdk| sdk
        .ask_assistant()
        .body(ask("What is the notice period?")));
    assert_eq!(started.execution_status.as_deref(), Some("QUEUED"));
}

// ------------------------------------------------------------------ getAssistantStatus

#[tokio::test]
async fn get_assistant_status_success_decodes_answer_citations_and_tool_calls() {
    let status = wire::success!(status_body(), |sdk| sdk
        .get_assistant_status()
        .execution_id("exe-99"));
    assert_eq!(status.status, "COMPLETED");
    assert_eq!(status.last_updated, Some(1_772_360_130_000));
    assert_eq!(status.tool_calls["call-1"].input["limit"], json!(5));
}

#[tokio::test]
async fn get_assistant_status_success_while_in_progress_decodes_a_bare_status() {
    let body = json!({"status": "IN_PROGRESS", "numToolCalls": 0});
    let status = wire::decoded!(Reply::json(200, &body), |sdk| sdk
        .get_assistant_status()
        .execution_id("exe-99"));
    assert_eq!(status.status, "IN_PROGRESS");
    assert!(status.tool_calls.is_empty() && status.citations.is_empty());
    wire::assert_round_trip(&status, &body);
}

/// The final statuses besides `COMPLETED` that the platform's clients stop on (facts note):
/// `FAILED`, and `AWAITING_USER_CONFIRMATION` with pending actions (free-form objects; these
/// have the sandbox's shape).
#[tokio::test]
async fn get_assistant_status_success_decodes_failed_and_awaiting_confirmation_with_pending_actions()
 {
    let failed = json!({
        "status": "FAILED",
        "responseText": "The assistant could not complete the request.",
        "thoughts": ["Searching the documents"],
        "lastUpdated": 1_772_360_130_000_i64,
        "numToolCalls": 0,
        "pendingActions": [],
        "toolCalls": {}
    });
    let awaiting = json!({
        "status": "AWAITING_USER_CONFIRMATION",
        "thoughts": ["Searching the documents"],
        "lastUpdated": 1_772_360_130_000_i64,
        "numToolCalls": 0,
        "pendingActions": [{
            "actionId": "act-1",
            "type": "TOOL_CALL_CONFIRMATION",
            "description": "Search every document of the domain"
        }],
        "toolCalls": {}
    });
    for body in [failed, awaiting] {
        let status = wire::decoded!(Reply::json(200, &body), |sdk| sdk
            .get_assistant_status()
            .execution_id("exe-99"));
        assert_eq!(Some(status.status.as_str()), body["status"].as_str());
        assert_eq!(
            status.response_text.as_deref(),
            body["responseText"].as_str()
        );
        assert_eq!(
            json!(status.pending_actions),
            body["pendingActions"],
            "pending actions are kept whole"
        );
        assert!(status.tool_calls.is_empty() && status.citations.is_empty());
    }
}

#[tokio::test]
async fn get_assistant_status_forward_compat_accepts_unknown_fields_statuses_and_intent() {
    let mut known = status_body();
    known["status"] = json!("CANCELLED");
    known["intent"] = json!("SUMMARIZATION");
    known["toolCalls"]["call-1"]["status"] = json!("TIMED_OUT");
    let sent = wire::with_unknown_fields(
        &known,
        &[
            "",
            "/citations/0",
            "/citations/0/chunks/0",
            "/toolCalls/call-1",
        ],
    );
    let status = wire::decoded!(Reply::json(200, &sent), |sdk| sdk
        .get_assistant_status()
        .execution_id("exe-99"));
    assert_eq!(status.status, "CANCELLED");
    assert_eq!(
        status.tool_calls["call-1"].status.as_deref(),
        Some("TIMED_OUT")
    );
    wire::assert_round_trip(&status, &known);
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::request_tests! {
    ask_assistant_request_minimal_sends_only_the_question:
        client, Reply::json(200, &ask_body()),
        |sdk| sdk.ask_assistant().body(ask("What is the notice period?"))
        => Expect::post("/v1/ai/assistant/ask")
            .json(json!({"question": "What is the notice period?"}));

    get_assistant_status_request_full_encodes_the_execution_id_and_sends_include_citations:
        bob, Reply::json(200, &status_body()),
        |sdk| sdk.get_assistant_status().execution_id(AWKWARD_ID).include_citations(false)
        => Expect::get(&format!("/v1/ai/assistant/{AWKWARD_ID_ENCODED}/status"))
            .query("includeCitations=false")
            .act_as(wire::BOB);

    get_assistant_status_request_minimal_sends_no_query:
        client, Reply::json(200, &status_body()),
        |sdk| sdk.get_assistant_status().execution_id("exe-99")
        => Expect::get("/v1/ai/assistant/exe-99/status");
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    ask_assistant_errors_decode_ai_format:
        "askAssistant", [400, 401, 429, 500],
        |sdk| sdk.ask_assistant().body(ask("What is the notice period?"));

    get_assistant_status_errors_decode_ai_format_including_unknown_execution_404:
        "getAssistantStatus", [400, 401, 404, 429, 500],
        |sdk| sdk.get_assistant_status().execution_id("exe-99");
}
