//! Wire conformance of the AI agents area (reference 2.1, 2.2, 4.1): list, ask (asynchronous),
//! poll the execution result.

mod wire;

use httpmock::MockServer;
use pubapi_sdk::types::{self, AgentSortBy, AgentSortOrder};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::error::InputError;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Reply};

fn agents_body() -> Value {
    json!([
        {
            "agentId": "agt-1",
            "name": "Contract reviewer",
            "description": "Reviews contracts against the playbook",
            "status": "ACTIVE",
            "subType": "USER_DEFINED",
            "category": "GENERIC",
            "instruction": "Flag clauses that deviate from the playbook.",
            "createdBy": "Alice Admin"
        },
        {
            "agentId": "agt-2",
            "name": "Onboarding helper",
            "description": "Answers onboarding questions",
            "status": "ACTIVE",
            "subType": "USER_DEFINED",
            "category": "GENERIC",
            "instruction": "Answer from the onboarding folder only.",
            "createdBy": "Bob Builder"
        }
    ])
}

fn ask_body() -> Value {
    json!({"requestId": "req-42", "conversationId": "conv-7"})
}

fn status_body() -> Value {
    json!({
        "status": "COMPLETED",
        "responseText": "Clause 7 deviates from the playbook.",
        "citations": [
            {"previewUrl": "https://example.com/playbook", "type": "WEB_SEARCH"}
        ],
        "lastUpdated": "2026-03-01T10:15:30Z"
    })
}

fn question(text: &str) -> types::builder::AgentAskRequest {
    types::AgentAskRequest::builder().question(text)
}

// ------------------------------------------------------------------ listAgents

#[tokio::test]
async fn list_agents_success_decodes_every_agent_field() {
    let agents = wire::success!(agents_body(), |sdk| sdk.list_agents());
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].created_by.as_deref(), Some("Alice Admin"));
}

#[tokio::test]
async fn list_agents_forward_compat_accepts_unknown_fields_status_sub_type_and_category() {
    let mut known = agents_body();
    known[0]["status"] = json!("SUSPENDED");
    known[0]["subType"] = json!("SYSTEM_PROVIDED");
    known[0]["category"] = json!("LEGAL");
    let agents = wire::forward_compat!(&known, &["/0", "/1"], |sdk| sdk.list_agents());
    assert_eq!(agents[0].status.as_deref(), Some("SUSPENDED"));
}

// ------------------------------------------------------------------ askAgent

#[tokio::test]
async fn ask_agent_request_full_encodes_the_agent_id_and_sends_the_question() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &ask_body())).await;
    let long_question = "é".repeat(35_000);
    wire::bob(&server)
        .sdk()
        .ask_agent()
        .agent_id(AWKWARD_ID)
        .body(question(&long_question))
        .send()
        .await
        .unwrap();
    seen.assert_only(
        Expect::post(&format!("/v1/ai/agents/{AWKWARD_ID_ENCODED}/ask"))
            .act_as(wire::BOB)
            .json(json!({ "question": long_question })),
    )
    .await;
}

/// The reference shows only `question` ("other optional fields exist"); the platform's clients
/// also send `instructions`, `conversationId`, `entryIds` and `selectedItems.files[]` with
/// `filePath`: the handle sends them as typed.
/// Asks agent `agt-1` through the handle and checks the one request sent had `body`.
async fn asking_sends(request: types::AgentAskRequest, body: Value) {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &ask_body())).await;
    wire::client(&server)
        .agents()
        .ask("agt-1", request)
        .await
        .unwrap();
    seen.assert_only(Expect::post("/v1/ai/agents/agt-1/ask").json(body))
        .await;
}

#[tokio::test]
async fn ask_agent_request_full_sends_the_client_fields_with_selected_file_paths() {
    let mut request = types::AgentAskRequest::new("Summarise the contract").unwrap();
    request.instructions = Some("Be brief.".into());
    request.conversation_id = Some("conv-1".into());
    request.entry_ids = vec!["ent-1".into()];
    request.selected_items = Some(types::SelectedItems {
        files: vec![types::SelectedFile {
            entry_id: "ent-1".into(),
            file_path: Some("/Legal/contract.pdf".into()),
            extra: Default::default(),
        }],
        folders: vec![],
    });
    let body = json!({
        "question": "Summarise the contract",
        "instructions": "Be brief.",
        "conversationId": "conv-1",
        "entryIds": ["ent-1"],
        "selectedItems": {"files": [{"entryId": "ent-1", "filePath": "/Legal/contract.pdf"}]}
    });
    asking_sends(request, body).await;
}

/// "Other optional fields exist" (reference, agent ask): a field the reference does not name
/// goes in `extra`, and the open objects' builders need no `extra` of their own.
#[tokio::test]
async fn ask_agent_request_full_sends_a_field_the_reference_does_not_name_through_extra() {
    let mut request = types::AgentAskRequest::new("Summarise the contract").unwrap();
    request.extra.insert("responseLanguage".into(), json!("de"));
    let message: types::ChatMessage = types::ChatMessage::builder()
        .role(Some("user".to_string()))
        .content(Some("Hello".to_string()))
        .try_into()
        .unwrap();
    request.chat_history = Some(json!({"messages": [message]}));
    let body = json!({
        "question": "Summarise the contract",
        "responseLanguage": "de",
        "chatHistory": {"messages": [{"role": "user", "content": "Hello"}]}
    });
    asking_sends(request, body).await;
}

#[tokio::test]
async fn ask_agent_request_minimal_refuses_a_question_over_35000_characters_before_sending() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &ask_body())).await;
    let result = wire::client(&server)
        .sdk()
        .ask_agent()
        .agent_id("agt-1")
        .body(question(&"q".repeat(35_001)))
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert_eq!(seen.calls().await, 0, "nothing is sent");
}

#[tokio::test]
async fn ask_agent_request_full_refuses_a_key_of_extra_that_is_a_field_of_its_own_before_sending() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &ask_body())).await;
    let mut request = types::AgentAskRequest::new("Summarise the contract").unwrap();
    request
        .extra
        .insert("question".into(), json!("Something else"));
    let result = wire::client(&server).agents().ask("agt-1", request).await;
    match result {
        Err(Error::InvalidInput(InputError::Invalid { field, problem })) => {
            assert_eq!(field, "extra");
            assert!(problem.contains("\"question\" twice"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(seen.calls().await, 0, "nothing is sent");
}

#[tokio::test]
async fn ask_agent_success_decodes_request_id_and_conversation_id() {
    let submitted = wire::success!(ask_body(), |sdk| sdk
        .ask_agent()
        .agent_id("agt-1")
        .body(question("Does clause 7 follow the playbook?")));
    assert_eq!(submitted.request_id, "req-42");
}

#[tokio::test]
async fn ask_agent_forward_compat_ignores_unknown_fields() {
    wire::forward_compat!(&ask_body(), &[""], |sdk| sdk
        .ask_agent()
        .agent_id("agt-1")
        .body(question("Does clause 7 follow the playbook?")));
}

// ------------------------------------------------------------------ getAgentRequestStatus

#[tokio::test]
async fn get_agent_request_status_success_decodes_status_answer_citations_and_time() {
    let result = wire::success!(status_body(), |sdk| sdk
        .get_agent_request_status()
        .agent_id("agt-1")
        .request_id("req-42"));
    assert_eq!(result.status, "COMPLETED");
    assert_eq!(result.citations[0].type_.as_deref(), Some("WEB_SEARCH"));
}

/// The statuses the platform's clients know besides `COMPLETED` (facts note): `PENDING`,
/// `RUNNING` and `FAILED`, whose failure text is in `responseText`.
#[tokio::test]
async fn get_agent_request_status_success_decodes_pending_running_and_failed() {
    for body in [
        json!({"status": "PENDING", "lastUpdated": "2026-03-01T10:15:00Z"}),
        json!({"status": "RUNNING", "lastUpdated": "2026-03-01T10:15:02Z"}),
        json!({
            "status": "FAILED",
            "responseText": "The agent could not complete the request.",
            "citations": [],
            "lastUpdated": "2026-03-01T10:15:04Z"
        }),
    ] {
        let result = wire::decoded!(Reply::json(200, &body), |sdk| sdk
            .get_agent_request_status()
            .agent_id("agt-1")
            .request_id("req-42"));
        assert_eq!(Some(result.status.as_str()), body["status"].as_str());
        assert_eq!(
            result.response_text.as_deref(),
            body["responseText"].as_str()
        );
        assert_eq!(result.last_updated.as_deref(), body["lastUpdated"].as_str());
        assert!(result.citations.is_empty());
    }
}

#[tokio::test]
async fn get_agent_request_status_forward_compat_accepts_unknown_fields_status_and_citation_type() {
    let mut known = status_body();
    known["status"] = json!("WAITING_FOR_TOOL");
    known["citations"][0]["type"] = json!("KNOWLEDGE_BASE");
    let result = wire::forward_compat!(&known, &["", "/citations/0"], |sdk| sdk
        .get_agent_request_status()
        .agent_id("agt-1")
        .request_id("req-42"));
    assert_eq!(result.status, "WAITING_FOR_TOOL");
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::request_tests! {
    list_agents_request_full_sends_sort_by_and_sort_order_as_query:
        bob, Reply::json(200, &agents_body()),
        |sdk| sdk.list_agents().sort_by(AgentSortBy::CreatedOn).sort_order(AgentSortOrder::Desc)
        => Expect::get("/v1/ai/agents/list")
            .query("sortBy=createdOn&sortOrder=desc")
            .act_as(wire::BOB);

    list_agents_request_full_sends_the_default_sort_values_when_given:
        client, Reply::json(200, &agents_body()),
        |sdk| sdk.list_agents().sort_by(AgentSortBy::Name).sort_order(AgentSortOrder::Asc)
        => Expect::get("/v1/ai/agents/list").query("sortBy=name&sortOrder=asc");

    list_agents_request_minimal_sends_no_query:
        client, Reply::json(200, &agents_body()),
        |sdk| sdk.list_agents()
        => Expect::get("/v1/ai/agents/list");

    ask_agent_request_minimal_sends_only_the_question:
        client, Reply::json(200, &ask_body()),
        |sdk| sdk.ask_agent().agent_id("agt-1").body(question("Does clause 7 follow the playbook?"))
        => Expect::post("/v1/ai/agents/agt-1/ask")
            .json(json!({"question": "Does clause 7 follow the playbook?"}));

    get_agent_request_status_request_full_encodes_both_path_ids:
        bob, Reply::json(200, &status_body()),
        |sdk| sdk.get_agent_request_status().agent_id(AWKWARD_ID).request_id("req 42+b")
        => Expect::get(&format!(
            "/v1/ai/agents/{AWKWARD_ID_ENCODED}/ask/req%2042%2Bb/status"
        ))
        .act_as(wire::BOB);

    get_agent_request_status_request_minimal_sends_plain_ids:
        client, Reply::json(200, &status_body()),
        |sdk| sdk.get_agent_request_status().agent_id("agt-1").request_id("req-42")
        => Expect::get("/v1/ai/agents/agt-1/ask/req-42/status");
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    list_agents_errors_decode_ai_format_and_feature_not_enabled_403:
        "listAgents", [400, 401, 403, 429, 500],
        |sdk| sdk.list_agents();

    ask_agent_errors_decode_ai_format_including_unknown_agent_404:
        "askAgent", [400, 401, 403, 404, 429, 500],
        |sdk| sdk
            .ask_agent()
            .agent_id("agt-1")
            .body(question("Does clause 7 follow the playbook?"));

    get_agent_request_status_errors_decode_ai_format_including_unknown_request_404:
        "getAgentRequestStatus", [400, 401, 403, 404, 429, 500],
        |sdk| sdk.get_agent_request_status().agent_id("agt-1").request_id("req-42");
}
