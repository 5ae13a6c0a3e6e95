//! Wire conformance of the knowledge bases area (reference 2.6, 4.5): list (a page) and ask.

mod wire;

use httpmock::MockServer;
use pubapi_sdk::types;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Reply};

fn knowledge_base() -> Value {
    json!({
        "id": "kb-1",
        "name": "Contracts",
        "description": "All signed contracts",
        "paths": [
            {"id": "p-1", "folderId": "fld-1", "path": "/Shared/Contracts", "permission": "viewer", "status": "PROCESSED"}
        ],
        "status": "ACTIVE",
        "type": "FOLDER",
        "createdBy": "alice",
        "createdByUser": {
            "firstName": "Alice",
            "lastName": "Admin",
            "userName": "alice",
            "userId": 1001,
            "avatarEosObjectId": "avatar-1001"
        },
        "createdOn": 1_767_225_600_000_i64,
        "noResponseMessage": "No answer in the contracts.",
        "iconName": "folder",
        "subType": "STANDARD",
        "progress": 100,
        "lastProcessedAt": 1_767_229_200_000_i64,
        "pathCount": 1,
        "prompts": ["What is the notice period?", {"title": "Renewals"}],
        "subStatus": "READY"
    })
}

fn page_body() -> Value {
    json!({
        "content": [knowledge_base()],
        "number": 0,
        "size": 20,
        "first": true,
        "last": true,
        "empty": false,
        "numberOfElements": 1,
        "totalElements": 1,
        "totalPages": 1,
        "fileLimit": 5000
    })
}

/// The fields of the ask-KB answer are not shown; this is what a document answer looks like.
fn answer_body() -> Value {
    json!({
        "response": {"text": "The notice period is 90 days."},
        "citations": [{"filename": "contract.pdf", "entryId": "ent-1001"}]
    })
}

fn ask(question: &str) -> types::builder::KnowledgeBaseAskRequest {
    types::KnowledgeBaseAskRequest::builder().question(question)
}

// ------------------------------------------------------------------ listKnowledgeBases

/// The full list request: every filter and every value of each filter's enum.
fn full_list() -> types::builder::KnowledgeBaseListRequest {
    use types::{KnowledgeBaseSortField as Sort, KnowledgeBaseStatus as Status};
    types::KnowledgeBaseListRequest::builder()
        .sort_by(vec![Sort::Name, Sort::CreatedOn])
        .sort_direction(vec!["ASC".to_string()])
        .status(vec![Status::Active, Status::Deleted, Status::Created])
        .created_by("alice".to_string())
        .created_after("2026-01-01".to_string())
        .created_before("2026-03-01".to_string())
        .include_placeholder_data(true)
        .include_processing_statistics(false)
        .include_prompts(true)
}

wire::request_tests! {
    list_knowledge_bases_request_full_sends_every_filter_and_enum_value:
        bob, Reply::json(200, &page_body()),
        |sdk| sdk.list_knowledge_bases().body(full_list())
        => Expect::post("/v1/ai/kb/list").act_as(wire::BOB).json(json!({
            "sortBy": ["name", "createdOn"],
            "sortDirection": ["ASC"],
            "status": ["ACTIVE", "DELETED", "CREATED"],
            "createdBy": "alice",
            "createdAfter": "2026-01-01",
            "createdBefore": "2026-03-01",
            "includePlaceholderData": true,
            "includeProcessingStatistics": false,
            "includePrompts": true
        }));
}

/// Reference 2.6 types the filters `string` (format not shown); the platform's clients send
/// a user id and epoch milliseconds: the SDK's typed setters send those as decimal strings,
/// on the request and on its builder alike.
#[tokio::test]
async fn list_knowledge_bases_request_full_typed_filters_send_user_id_and_epoch_milliseconds_as_strings()
 {
    use pubapi_sdk_ext::ai::KnowledgeBaseListFilters;
    use pubapi_sdk_ext::jiff::Timestamp;
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &page_body())).await;
    let after: Timestamp = "2024-10-01T00:00:00Z".parse().unwrap();
    let before: Timestamp = "2025-01-01T00:00:00.5Z".parse().unwrap();
    let client = wire::client(&server);
    let request = types::KnowledgeBaseListRequest::default()
        .with_created_by(1001)
        .with_created_after(after)
        .with_created_before(before);
    client.knowledge_bases().page(request).await.unwrap();
    let built = types::KnowledgeBaseListRequest::builder()
        .with_created_by(1001)
        .with_created_after(after)
        .with_created_before(before);
    client
        .sdk()
        .list_knowledge_bases()
        .body(built)
        .send()
        .await
        .unwrap();
    let sent = json!({
        "createdBy": "1001",
        "createdAfter": "1727740800000",
        "createdBefore": "1735689600500"
    });
    let requests = seen.requests().await;
    assert_eq!(requests.len(), 2);
    for request in requests {
        assert_eq!(request.body, wire::Body::Json(sent.clone()));
    }
}

#[tokio::test]
async fn list_knowledge_bases_success_decodes_the_page_and_every_knowledge_base_field() {
    let page = wire::success!(page_body(), |sdk| sdk
        .list_knowledge_bases()
        .body(types::KnowledgeBaseListRequest::builder()));
    assert_eq!(page.file_limit, Some(5000));
    let kb = &page.content[0];
    assert_eq!(kb.created_by_user.as_ref().unwrap().user_id, Some(1001));
    assert_eq!(kb.last_processed_at, Some(1_767_229_200_000));
}

#[tokio::test]
async fn list_knowledge_bases_forward_compat_accepts_unknown_fields_status_and_sub_status() {
    let mut known = page_body();
    known["content"][0]["status"] = json!("ARCHIVED");
    known["content"][0]["subStatus"] = json!("REINDEXING");
    known["content"][0]["paths"][0]["status"] = json!("QUEUED");
    let sent = wire::with_unknown_fields(
        &known,
        &[
            "",
            "/content/0",
            "/content/0/paths/0",
            "/content/0/createdByUser",
        ],
    );
    let page = wire::decoded!(Reply::json(200, &sent), |sdk| sdk
        .list_knowledge_bases()
        .body(types::KnowledgeBaseListRequest::builder()));
    assert_eq!(page.content[0].status.as_deref(), Some("ARCHIVED"));
    wire::assert_round_trip(&page, &known);
}

// ------------------------------------------------------------------ askKnowledgeBase

/// The reference does not show the fields of the answer: it is kept whole as a JSON object.
#[tokio::test]
async fn ask_knowledge_base_success_keeps_the_unspecified_answer_object_whole() {
    wire::success!(answer_body(), |sdk| sdk
        .ask_knowledge_base()
        .kb_id("kb-1")
        .body(ask("What is the notice period?")));
}

#[tokio::test]
async fn ask_knowledge_base_forward_compat_keeps_unknown_fields_of_the_open_answer() {
    let sent = wire::with_unknown_fields(&answer_body(), &["", "/response"]);
    let answer = wire::decoded!(Reply::json(200, &sent), |sdk| sdk
        .ask_knowledge_base()
        .kb_id("kb-1")
        .body(ask("What is the notice period?")));
    // An open object: the new fields are kept, not dropped.
    wire::assert_round_trip(&answer, &sent);
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::request_tests! {
    list_knowledge_bases_request_minimal_sends_the_required_empty_object:
        client, Reply::json(200, &page_body()),
        |sdk| sdk.list_knowledge_bases().body(types::KnowledgeBaseListRequest::builder())
        => Expect::post("/v1/ai/kb/list").json(json!({}));

    ask_knowledge_base_request_full_encodes_the_kb_id_and_sends_every_field:
        bob, Reply::json(200, &answer_body()),
        |sdk| sdk
            .ask_knowledge_base()
            .kb_id(AWKWARD_ID)
            .body(
                ask("What is the notice period?")
                    .include_citations(true)
                    .chat_history(types::ChatHistory {
                        messages: vec![types::ChatMessage {
                            role: Some("user".into()),
                            content: Some("Hello".into()),
                            ..Default::default()
                        }],
                    }),
            )
        => Expect::post(&format!("/v1/ai/kb/{AWKWARD_ID_ENCODED}/ask"))
            .act_as(wire::BOB)
            .json(json!({
                "question": "What is the notice period?",
                "includeCitations": true,
                "chatHistory": {"messages": [{"role": "user", "content": "Hello"}]}
            }));

    ask_knowledge_base_request_minimal_sends_only_the_question:
        client, Reply::json(200, &answer_body()),
        |sdk| sdk.ask_knowledge_base().kb_id("kb-1").body(ask("What is the notice period?"))
        => Expect::post("/v1/ai/kb/kb-1/ask")
            .json(json!({"question": "What is the notice period?"}));
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    list_knowledge_bases_errors_decode_ai_format:
        "listKnowledgeBases", [400, 401, 429, 500],
        |sdk| sdk.list_knowledge_bases().body(types::KnowledgeBaseListRequest::builder());

    ask_knowledge_base_errors_decode_ai_format_including_unknown_kb_404:
        "askKnowledgeBase", [400, 401, 404, 429, 500],
        |sdk| sdk.ask_knowledge_base().kb_id("kb-1").body(ask("What is the notice period?"));
}
