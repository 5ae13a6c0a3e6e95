//! The AI endpoints of the sandbox: agents and assistant state machines, document Q&A,
//! knowledge bases, hybrid search and the deprecated copilot, answering deterministically
//! from the built-in corpus and from files created through the activity API.

use pubapi_sdk::types::{
    AgentSortBy, AgentSortOrder, AssistantAskRequest, CopilotAskRequest, DocumentAskRequest,
    DocumentSummaryRequest, HybridSearchRequest, KnowledgeBaseAskRequest, KnowledgeBaseListRequest,
};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::admin_post;
use pubapi_testkit::poll_every_second;
use pubapi_testkit::sandbox::{
    AiConfig, ClockConfig, REMOVED_CODE, Sandbox, SandboxConfig, removal_ms,
};
use serde_json::{Value, json};
use std::time::Duration;

/// The travel policy of the corpus.
const TRAVEL: &str = "4100002";

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

/// When the copilot is removed (30 September 2026, from the spec).
fn copilot_sunset_ms() -> i64 {
    removal_ms("askCopilot").expect("the spec gives the copilot a removal date")
}

/// A sandbox whose manual clock stands one second before the copilot's sunset.
async fn before_the_copilot_sunset() -> Sandbox {
    let sb = Sandbox::start(SandboxConfig::testing().with_clock(ClockConfig::Manual {
        start_ms: copilot_sunset_ms() - 1_000,
    }))
    .await;
    assert!(sb.now_ms() < copilot_sunset_ms());
    sb
}

/// The `status` of every one of `polls` status polls at `path`.
async fn statuses(sb: &Sandbox, path: &str, polls: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..polls {
        let (code, body) = get(sb, path).await;
        assert_eq!(code, 200, "{body}");
        out.push(body["status"].as_str().unwrap_or_default().to_string());
    }
    out
}

async fn post(sb: &Sandbox, path: &str, body: Value) -> (u16, Value) {
    let reply = admin_post(sb, path, &body).await;
    (reply.status, reply.json())
}

/// Posts `body` to `path` as the admin, asserts the AI format's 400 `INVALID_REQUEST` and
/// returns the error body.
async fn invalid_request(sb: &Sandbox, path: &str, body: Value) -> Value {
    let (status, error) = post(sb, path, body.clone()).await;
    assert_eq!(
        (status, error["errorCode"].as_str()),
        (400, Some("INVALID_REQUEST")),
        "{path} {body}: {error}"
    );
    error
}

async fn get(sb: &Sandbox, path: &str) -> (u16, Value) {
    let reply = sb.raw().get(path, &sb.admin_token()).await;
    (reply.status, reply.json())
}

#[tokio::test]
async fn agents_are_listed_and_sorted() {
    let sb = sandbox().await;
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, list) = get(&sb, "/v1/ai/agents/list").await;
    assert_eq!(status, 200);
    assert_eq!(
        names(&list),
        ["Engineering Assistant", "Finance Analyst", "Policy Helper"]
    );
    assert_eq!(list[0]["status"], "ACTIVE");
    assert_eq!(list[0]["createdBy"], "Ada Admin");
    let (_, by_date) = get(&sb, "/v1/ai/agents/list?sortBy=createdOn&sortOrder=desc").await;
    assert_eq!(
        names(&by_date),
        ["Finance Analyst", "Engineering Assistant", "Policy Helper"]
    );
    let (status, error) = get(&sb, "/v1/ai/agents/list?sortBy=size").await;
    assert_eq!(
        (status, error["errorCode"].as_str()),
        (400, Some("INVALID_PARAMETER"))
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn an_agent_request_goes_pending_running_completed() {
    let sb = sandbox().await;
    let (status, asked) = post(
        &sb,
        "/v1/ai/agents/agt-policy-helper/ask",
        json!({"question": "How much are hotel costs per night?"}),
    )
    .await;
    assert_eq!(status, 200);
    let request = asked["requestId"].as_str().unwrap();
    assert!(asked["conversationId"].is_string());
    let path = format!("/v1/ai/agents/agt-policy-helper/ask/{request}/status");
    let (_, pending) = get(&sb, &path).await;
    assert_eq!(
        pending,
        json!({"status": "PENDING", "lastUpdated": "2025-03-03T09:00:00Z"})
    );
    let (_, running) = get(&sb, &path).await;
    assert_eq!(running["status"], "RUNNING");
    assert!(running.get("responseText").is_none());
    let (_, done) = get(&sb, &path).await;
    assert_eq!(done["status"], "COMPLETED");
    let text = done["responseText"].as_str().unwrap();
    assert!(
        text.starts_with("Policy Helper: Hotel costs are reimbursed up to 180 euros"),
        "{text}"
    );
    assert_eq!(
        done["citations"][0],
        json!({"previewUrl": "/preview/6100002", "type": "FILE"})
    );
    assert_eq!(done["lastUpdated"], "2025-03-03T09:00:00Z");
    sb.assert_conformant();
}

/// Asks the agent `agent` `question` and returns the status path of the request.
async fn ask_agent(sb: &Sandbox, agent: &str, question: &str) -> String {
    let path = format!("/v1/ai/agents/{agent}/ask");
    let (status, asked) = post(sb, &path, json!({"question": question})).await;
    assert_eq!(status, 200, "{asked}");
    format!("{path}/{}/status", asked["requestId"].as_str().unwrap())
}

#[tokio::test]
async fn an_agent_request_fails_for_a_question_with_the_fail_marker() {
    let sb = sandbox().await;
    let path = ask_agent(&sb, "agt-finance", "[FAIL] revenue?").await;
    assert_eq!(
        statuses(&sb, &path, 3).await,
        ["PENDING", "RUNNING", "FAILED"]
    );
    let (_, failed) = get(&sb, &path).await;
    assert_eq!(
        failed,
        json!({
            "status": "FAILED",
            "responseText": "The agent could not complete the request.",
            "citations": [],
            "lastUpdated": "2025-03-03T09:00:00Z",
        }),
        "the failure stays, with its text in responseText"
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn agent_polls_configure_how_long_a_request_runs() {
    let mut config = SandboxConfig::testing();
    config.ai = AiConfig {
        agent_polls: 4,
        ..AiConfig::default()
    };
    let sb = Sandbox::start(config).await;
    let path = ask_agent(&sb, "agt-finance", "revenue").await;
    assert_eq!(
        statuses(&sb, &path, 6).await,
        [
            "PENDING",
            "RUNNING",
            "RUNNING",
            "RUNNING",
            "COMPLETED",
            "COMPLETED"
        ]
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn agent_questions_take_the_platform_clients_optional_fields() {
    // The reference: "Other optional fields exist; their names are not shown"; the
    // platform's clients send these.
    let sb = sandbox().await;
    let (status, asked) = post(
        &sb,
        "/v1/ai/agents/agt-finance/ask",
        json!({
            "question": "What is the travel budget?",
            "instructions": "Answer in one line.",
            "conversationId": "conv-earlier",
            "chatHistory": [{"role": "user", "content": "Hello"}],
            "entryIds": [TRAVEL],
            "selectedItems": {"files": [{"entryId": TRAVEL, "filePath": "/Policies/travel.md"}]},
        }),
    )
    .await;
    assert_eq!(status, 200, "{asked}");
    assert!(asked["requestId"].is_string());
    sb.assert_conformant();
}

/// The shapes the reference leaves open and the platform's clients send (`modelDetails
/// {name, version}`, chat messages `{role, content}`, `selectedItems.files[].filePath`): the
/// spec declares them as optional strings of open objects, so the sandbox takes them with
/// other fields beside, and refuses them with another type, exactly as the spec does.
#[tokio::test]
async fn assistant_takes_model_details_chat_messages_and_file_paths_as_the_spec_declares_them() {
    let sb = sandbox().await;
    let (status, asked) = post(
        &sb,
        "/v1/ai/assistant/ask",
        json!({
            "question": "hotel costs per night",
            "modelDetails": {"name": "large", "version": "2026-01", "temperature": 0.2},
            "chatHistory": {"messages": [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi", "at": 1},
                {}
            ]},
            "selectedItems": {"files": [{"entryId": TRAVEL, "filePath": "/Policies/travel.md"}]},
        }),
    )
    .await;
    assert_eq!(status, 200, "{asked}");
    let refused = [
        ("/v1/ai/assistant/ask", json!({"modelDetails": {"name": 7}})),
        (
            "/v1/ai/assistant/ask",
            json!({"modelDetails": {"version": ["1"]}}),
        ),
        (
            "/v1/ai/assistant/ask",
            json!({"chatHistory": {"messages": [{"role": 1}]}}),
        ),
        (
            "/v1/ai/assistant/ask",
            json!({"chatHistory": {"messages": [{"content": null}]}}),
        ),
        (
            "/v1/ai/assistant/ask",
            json!({"selectedItems": {"files": [{"entryId": TRAVEL, "filePath": 5}]}}),
        ),
        (
            "/v1/ai/agents/agt-finance/ask",
            json!({"selectedItems": {"files": [{"entryId": TRAVEL, "filePath": false}]}}),
        ),
        (
            &format!("/v1/ai/document/{TRAVEL}/ask"),
            json!({"chatHistory": {"messages": [{"role": "user", "content": {"text": "hi"}}]}}),
        ),
    ];
    for (path, extra) in refused {
        let mut body = json!({"question": "hotel costs per night"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        invalid_request(&sb, path, body).await;
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn agent_errors() {
    let sb = sandbox().await;
    let (status, missing) = post(&sb, "/v1/ai/agents/agt-finance/ask", json!({})).await;
    assert_eq!(
        (status, missing["errorCode"].as_str()),
        (400, Some("QUESTION_MANDATORY"))
    );
    let long = "x".repeat(35_001);
    let (status, too_long) = post(
        &sb,
        "/v1/ai/agents/agt-finance/ask",
        json!({"question": long}),
    )
    .await;
    assert_eq!(
        (status, too_long["errorCode"].as_str()),
        (400, Some("QUESTION_TOO_LONG"))
    );
    let exactly = "x".repeat(35_000);
    assert_eq!(
        post(
            &sb,
            "/v1/ai/agents/agt-finance/ask",
            json!({"question": exactly})
        )
        .await
        .0,
        200
    );
    let (status, unknown) = post(&sb, "/v1/ai/agents/nope/ask", json!({"question": "hi"})).await;
    assert_eq!(
        (status, unknown["errorCode"].as_str()),
        (404, Some("AGENT_NOT_FOUND"))
    );
    let (status, _) = get(&sb, "/v1/ai/agents/agt-finance/ask/req-none/status").await;
    assert_eq!(status, 404);
    sb.assert_conformant();
}

/// A question or search query is blank exactly when the spec's `pattern: '\S'` (ECMA-262)
/// says so: U+0085 is a character there (Rust's `trim` would drop it), U+FEFF white space.
#[tokio::test]
async fn a_question_is_blank_as_the_specs_pattern_reads_it() {
    let sb = sandbox().await;
    for (path, field) in [
        ("/v1/ai/assistant/ask", "question"),
        ("/v1/hybrid-search", "query"),
    ] {
        let (status, _) = post(&sb, path, json!({ field: "\u{85}\u{85}\u{85}" })).await;
        assert_eq!(status, 200, "{path}");
        let (status, blank) = post(&sb, path, json!({ field: " \u{FEFF}\u{3000}" })).await;
        assert_eq!(status, 400, "{path}");
        assert!(
            blank["errorCode"]
                .as_str()
                .is_some_and(|c| c.ends_with("_MANDATORY")),
            "{blank}"
        );
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn an_assistant_execution_completes_with_citations_and_tool_calls() {
    let sb = sandbox().await;
    let (status, asked) = post(
        &sb,
        "/v1/ai/assistant/ask",
        json!({"question": "What is the incident response on-call acknowledgement time?", "conversationId": "c-1"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(asked["executionStatus"], "IN_PROGRESS");
    assert_eq!(asked["conversationId"], "c-1");
    assert_eq!(
        (asked["truncated"].clone(), asked["actions"].clone()),
        (json!(false), json!([]))
    );
    let path = format!(
        "/v1/ai/assistant/{}/status",
        asked["executionId"].as_str().unwrap()
    );
    for _ in 0..2 {
        assert_eq!(get(&sb, &path).await.1["status"], "IN_PROGRESS");
    }
    let (_, done) = get(&sb, &path).await;
    assert_eq!(done["status"], "COMPLETED");
    assert!(
        done["responseText"]
            .as_str()
            .unwrap()
            .contains("15 minutes")
    );
    assert_eq!(done["intent"], "QUESTION_ANSWERING");
    assert_eq!(done["numToolCalls"], 1);
    assert_eq!(done["toolCalls"]["call-1"]["status"], "SUCCESS");
    let citation = &done["citations"][0];
    assert_eq!(citation["filename"], "incident-response-runbook.md");
    assert!(
        citation["previewUrl"]
            .as_str()
            .unwrap()
            .starts_with("/preview/")
    );
    assert!(citation["chunks"][0]["sourceText"].is_string());
    let (_, without) = get(&sb, &format!("{path}?includeCitations=false")).await;
    assert!(without.get("citations").is_none());
    assert_eq!(get(&sb, "/v1/ai/assistant/exec-none/status").await.0, 404);
    sb.assert_conformant();
}

/// Asks the assistant `question` and returns the status path of the execution.
async fn ask_assistant(sb: &Sandbox, question: &str) -> String {
    let (status, asked) = post(sb, "/v1/ai/assistant/ask", json!({"question": question})).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["executionStatus"], "IN_PROGRESS");
    format!(
        "/v1/ai/assistant/{}/status",
        asked["executionId"].as_str().unwrap()
    )
}

#[tokio::test]
async fn an_assistant_execution_fails_for_a_question_with_the_fail_marker() {
    let sb = sandbox().await;
    let path = ask_assistant(&sb, "hotel costs per night [fail]").await;
    assert_eq!(
        statuses(&sb, &path, 4).await,
        ["IN_PROGRESS", "IN_PROGRESS", "FAILED", "FAILED"]
    );
    let (_, failed) = get(&sb, &path).await;
    assert_eq!(
        failed["responseText"],
        "The assistant could not complete the request."
    );
    assert_eq!(failed["pendingActions"], json!([]));
    assert_eq!(failed["numToolCalls"], 0);
    assert!(failed.get("citations").is_none(), "{failed}");
    // The marker is not part of what the assistant searched for.
    assert_eq!(
        failed["thoughts"][0],
        "Searching the documents for \"hotel costs per night \"."
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn an_assistant_execution_awaits_confirmation_for_a_question_with_the_confirm_marker() {
    let sb = sandbox().await;
    let path = ask_assistant(&sb, "[Confirm] What is the travel policy?").await;
    assert_eq!(
        statuses(&sb, &path, 3).await,
        ["IN_PROGRESS", "IN_PROGRESS", "AWAITING_USER_CONFIRMATION"]
    );
    let (_, awaiting) = get(&sb, &path).await;
    assert_eq!(awaiting["status"], "AWAITING_USER_CONFIRMATION");
    let actions = awaiting["pendingActions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{awaiting}");
    let action = &actions[0];
    assert!(
        action["actionId"]
            .as_str()
            .is_some_and(|id| id.starts_with("act-")),
        "{action}"
    );
    assert_eq!(action["type"], "TOOL_CALL_CONFIRMATION");
    assert_eq!(
        action["description"],
        "Search every document of the domain for \"What is the travel policy?\" (needs the user's confirmation)."
    );
    assert!(awaiting.get("responseText").is_none(), "{awaiting}");
    assert!(awaiting.get("citations").is_none(), "{awaiting}");
    sb.assert_conformant();
}

#[tokio::test]
async fn the_fail_marker_wins_over_the_confirm_marker() {
    let sb = sandbox().await;
    let path = ask_assistant(&sb, "[confirm][fail] travel").await;
    assert_eq!(statuses(&sb, &path, 3).await[2], "FAILED");
    sb.assert_conformant();
}

#[tokio::test]
async fn assistant_questions_can_be_restricted_to_selected_files() {
    let sb = sandbox().await;
    let (_, asked) = post(
        &sb,
        "/v1/ai/assistant/ask",
        json!({"question": "hotel costs per night", "selectedItems": {"files": [{"entryId": "4100006"}]}}),
    )
    .await;
    let path = format!(
        "/v1/ai/assistant/{}/status",
        asked["executionId"].as_str().unwrap()
    );
    let mut done = Value::Null;
    for _ in 0..3 {
        done = get(&sb, &path).await.1;
    }
    let files: Vec<&str> = done["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["entryId"].as_str().unwrap())
        .collect();
    assert!(files.iter().all(|f| *f == "4100006"), "{files:?}");
    let (status, _) = post(
        &sb,
        "/v1/ai/assistant/ask",
        json!({"question": "x", "selectedItems": {"files": [{}]}}),
    )
    .await;
    assert_eq!(status, 400);
    sb.assert_conformant();
}

#[tokio::test]
async fn documents_answer_questions_and_summarise() {
    let sb = sandbox().await;
    let (status, answer) = post(
        &sb,
        &format!("/v1/ai/document/{TRAVEL}/ask"),
        json!({"question": "What is the daily meal allowance?", "includeCitations": true, "chatHistory": {"messages": [{"role": "user", "text": "hi"}]}}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("45 euros")
    );
    assert_eq!(
        answer["citations"][0]["filename"],
        "travel-and-expenses.docx"
    );
    assert_eq!(answer["citations"][0]["entryId"], TRAVEL);
    let (_, plain) = post(
        &sb,
        &format!("/v1/ai/document/{TRAVEL}/ask"),
        json!({"question": "meals"}),
    )
    .await;
    assert!(plain.get("citations").is_none());
    let (status, summary) =
        post(&sb, &format!("/v1/ai/document/{TRAVEL}/summary"), json!({})).await;
    assert_eq!(status, 200);
    assert!(
        summary["response"]["text"]
            .as_str()
            .unwrap()
            .starts_with("travel-and-expenses.docx: Business travel")
    );
    let empty_body = sb
        .raw()
        .request(
            "POST",
            &format!("/v1/ai/document/{TRAVEL}/summary"),
            Some(&sb.admin_token()),
        )
        .send()
        .await;
    assert_eq!(empty_body.status, 200);
    invalid_request(
        &sb,
        &format!("/v1/ai/document/{TRAVEL}/ask"),
        json!({"question": "x", "chatHistory": []}),
    )
    .await;
    let missing = post(&sb, "/v1/ai/document/999/ask", json!({"question": "x"})).await;
    assert_eq!(
        (missing.0, missing.1["errorCode"].as_str()),
        (404, Some("DOCUMENT_NOT_FOUND"))
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn files_created_through_activity_join_the_corpus() {
    let sb = sandbox().await;
    sb.activity().create_folder("/Notes").unwrap();
    let file = sb
        .activity()
        .create_file(
            "/Notes/zebra.txt",
            "Zebras graze on the savanna in large herds.",
        )
        .unwrap();
    let (_, answer) = post(
        &sb,
        &format!("/v1/ai/document/{}/ask", file.entry_id),
        json!({"question": "Where do zebras graze?"}),
    )
    .await;
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("savanna")
    );
    let (_, hits) = post(&sb, "/v1/hybrid-search", json!({"query": "zebra herds"})).await;
    assert_eq!(hits["results"][0]["filename"], "zebra.txt");
    sb.activity().delete("/Notes/zebra.txt").unwrap();
    let (_, after) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "zebra herds", "semanticWeight": 0.0}),
    )
    .await;
    assert_eq!(after["totalElements"], 0);
    sb.assert_conformant();
}

#[tokio::test]
async fn knowledge_bases_are_listed_as_a_page() {
    let sb = sandbox().await;
    let (status, page) = post(&sb, "/v1/ai/kb/list", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            page["totalElements"].clone(),
            page["numberOfElements"].clone()
        ),
        (json!(4), json!(4))
    );
    assert_eq!(
        (
            page["number"].clone(),
            page["first"].clone(),
            page["last"].clone(),
            page["empty"].clone()
        ),
        (json!(0), json!(true), json!(true), json!(false))
    );
    assert_eq!(page["fileLimit"], 500);
    let kb = &page["content"][0];
    assert_eq!(kb["name"], "Company policies");
    assert_eq!(kb["paths"][0]["path"], "/Company/Policies");
    assert_eq!(kb["createdByUser"]["userName"], "admin");
    assert!(kb.get("prompts").is_none());
    let (_, active) = post(
        &sb,
        "/v1/ai/kb/list",
        json!({"status": ["ACTIVE"], "sortBy": ["createdOn"], "sortDirection": ["DESC"], "includePrompts": true, "includeProcessingStatistics": true}),
    )
    .await;
    let names: Vec<&str> = active["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Engineering handbook", "Company policies"]);
    assert!(active["content"][0]["prompts"].is_array());
    assert_eq!(active["content"][0]["progress"], 100);
    let (_, paged) = post(&sb, "/v1/ai/kb/list", json!({"size": 3, "page": 1})).await;
    assert_eq!(
        (
            paged["numberOfElements"].clone(),
            paged["totalPages"].clone(),
            paged["last"].clone()
        ),
        (json!(1), json!(2), json!(true))
    );
    let (status, _) = post(&sb, "/v1/ai/kb/list", json!({"status": ["GONE"]})).await;
    assert_eq!(status, 400);
    let no_body = sb
        .raw()
        .request("POST", "/v1/ai/kb/list", Some(&sb.admin_token()))
        .send()
        .await;
    assert_eq!(no_body.status, 400);
    sb.assert_conformant();
}

#[tokio::test]
async fn knowledge_bases_answer_from_their_folders() {
    let sb = sandbox().await;
    let (status, answer) = post(
        &sb,
        "/v1/ai/kb/kb-company-policies/ask",
        json!({"question": "How long are invoices kept?", "includeCitations": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        answer["response"]["text"]
            .as_str()
            .unwrap()
            .contains("seven years")
    );
    assert_eq!(
        answer["citations"][0]["filename"],
        "data-retention-policy.pdf"
    );
    let (_, elsewhere) = post(
        &sb,
        "/v1/ai/kb/kb-engineering/ask",
        json!({"question": "How long are invoices kept?"}),
    )
    .await;
    assert!(
        !elsewhere["response"]["text"]
            .as_str()
            .unwrap()
            .contains("seven years")
    );
    assert_eq!(
        post(
            &sb,
            "/v1/ai/kb/kb-old-archive/ask",
            json!({"question": "x"})
        )
        .await
        .0,
        404
    );
    assert_eq!(
        post(&sb, "/v1/ai/kb/kb-nope/ask", json!({"question": "x"}))
            .await
            .0,
        404
    );
    sb.assert_conformant();
}

fn filenames(result: &Value) -> Vec<String> {
    result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["filename"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn hybrid_search_blends_keyword_and_similarity_scores() {
    let sb = sandbox().await;
    let (status, keyword) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "postmortem action items", "semanticWeight": 0.0}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(filenames(&keyword)[0], "incident-response-runbook.md");
    let chunk = &keyword["results"][0]["chunks"][0];
    assert_eq!(
        chunk["score"], 1.0,
        "the best keyword match is normalised to 1"
    );
    // A misspelling shares no term, only trigrams: found by similarity, not by keywords.
    let (_, typo_keyword) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "postmortm", "semanticWeight": 0.0}),
    )
    .await;
    assert_eq!(typo_keyword["totalElements"], 0);
    let (_, typo_semantic) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "postmortm", "semanticWeight": 1.0}),
    )
    .await;
    assert_eq!(filenames(&typo_semantic)[0], "incident-response-runbook.md");
    // Scores are blended by the weight.
    let (_, half) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "postmortem action items", "semanticWeight": 0.5}),
    )
    .await;
    let best = half["results"][0]["chunks"][0]["score"].as_f64().unwrap();
    assert!(best > 0.5 && best < 1.0, "{best}");
    sb.assert_conformant();
}

#[tokio::test]
async fn hybrid_search_filters_and_pages() {
    let sb = sandbox().await;
    let (_, md) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "webhooks incidents alerts", "fileTypes": ["md"]}),
    )
    .await;
    assert!(filenames(&md).iter().all(|f| f.ends_with(".md")), "{md}");
    let (_, pdf) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "policy", "fileTypes": [".PDF"], "semanticWeight": 0.0}),
    )
    .await;
    assert!(!filenames(&pdf).is_empty() && filenames(&pdf).iter().all(|f| f.ends_with(".pdf")));
    let (_, finance) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "revenue quarter", "folderPath": "/Finance"}),
    )
    .await;
    assert_eq!(filenames(&finance), ["q3-2024-financial-report.xlsx"]);
    let (_, dated) = post(&sb, "/v1/hybrid-search", json!({"query": "policy days years", "dateFrom": "2025-01-10", "dateTo": "2025-01-31", "semanticWeight": 0.0})).await;
    assert_eq!(filenames(&dated), ["data-retention-policy.pdf"]);
    let (_, all) = post(&sb, "/v1/hybrid-search", json!({"query": "the policy of the company for travel and security", "semanticWeight": 0.0})).await;
    let total = all["totalElements"].as_u64().unwrap();
    assert!(total >= 3, "{all}");
    let (_, page) = post(&sb, "/v1/hybrid-search", json!({"query": "the policy of the company for travel and security", "semanticWeight": 0.0, "size": 1, "page": 1})).await;
    assert_eq!(filenames(&page), [filenames(&all)[1].clone()]);
    assert_eq!(
        (
            page["number"].clone(),
            page["size"].clone(),
            page["first"].clone(),
            page["totalPages"].clone()
        ),
        (json!(1), json!(1), json!(false), json!(total))
    );
    let (_, limited) = post(&sb, "/v1/hybrid-search", json!({"query": "the policy of the company for travel and security", "semanticWeight": 0.0, "limit": 2})).await;
    assert_eq!(limited["totalElements"], 2);
    for (body, code) in [
        (json!({}), "QUERY_MANDATORY"),
        (
            json!({"query": "x", "semanticWeight": 2}),
            "INVALID_REQUEST",
        ),
        (
            json!({"query": "x", "dateFrom": "2025-1-1"}),
            "INVALID_REQUEST",
        ),
        (json!({"query": "x", "size": 0}), "INVALID_REQUEST"),
        (json!({"query": "x", "fileTypes": "pdf"}), "INVALID_REQUEST"),
    ] {
        let (status, error) = post(&sb, "/v1/hybrid-search", body.clone()).await;
        assert_eq!(
            (status, error["errorCode"].as_str()),
            (400, Some(code)),
            "{body}"
        );
    }
    sb.assert_conformant();
}

/// Two files about otters in sibling folders: `/Lab/A/otter.txt` by `sam` at the start of the
/// manual clock, `/Lab/B/otter-notes.txt` by `admin` an hour later. Returns their entry ids
/// and the instant between the two creations.
async fn otters(sb: &Sandbox) -> (String, String, i64) {
    sb.activity().create_folder("/Lab").unwrap();
    sb.activity().create_folder("/Lab/A").unwrap();
    sb.activity().create_folder("/Lab/B").unwrap();
    let first = sb
        .activity_as("sam")
        .create_file("/Lab/A/otter.txt", "Otters hold hands while they sleep.")
        .unwrap();
    let between = sb.now_ms() + 1_800_000;
    sb.advance(Duration::from_secs(3_600));
    let second = sb
        .activity()
        .create_file(
            "/Lab/B/otter-notes.txt",
            "Notes on otter habitats: an otter lives near rivers.",
        )
        .unwrap();
    (first.entry_id, second.entry_id, between)
}

#[tokio::test]
async fn hybrid_search_applies_the_platform_clients_filters() {
    let sb = sandbox().await;
    let (sams, admins, between) = otters(&sb).await;
    let otter = |extra: Value| {
        let mut body = json!({"query": "otter", "semanticWeight": 0.0});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let both = ["otter-notes.txt", "otter.txt"];
    let (_, unfiltered) = post(&sb, "/v1/hybrid-search", otter(json!({}))).await;
    let default_order = filenames(&unfiltered);
    let mut found = default_order.clone();
    found.sort();
    assert_eq!(found, both);
    // The facts note: `entryIds`, `folderPaths`, `excludeFolderPaths`, `preferredFolderPath`,
    // `createdAfter`/`createdBefore` (epoch ms), `createdBy` (an integer user id, or a
    // username from the LangChain connector),
    // `collectionId`.
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (otter(json!({"entryIds": [sams]})), vec!["otter.txt"]),
        (
            otter(json!({"entryIds": [admins]})),
            vec!["otter-notes.txt"],
        ),
        (otter(json!({"entryIds": ["999999"]})), vec![]),
        (
            otter(json!({"folderPaths": ["/Lab/B", "/Finance"]})),
            vec!["otter-notes.txt"],
        ),
        (
            otter(json!({"excludeFolderPaths": ["/Lab/B"]})),
            vec!["otter.txt"],
        ),
        (otter(json!({"excludeFolderPaths": ["/Lab"]})), vec![]),
        (
            otter(json!({"createdAfter": between})),
            vec!["otter-notes.txt"],
        ),
        (otter(json!({"createdBefore": between})), vec!["otter.txt"]),
        (otter(json!({"createdBy": 1003})), vec!["otter.txt"]),
        (otter(json!({"createdBy": 1001})), vec!["otter-notes.txt"]),
        (otter(json!({"createdBy": 1004})), vec![]),
        // The LangChain connector sends the username (the other clients the user id).
        (otter(json!({"createdBy": "sam"})), vec!["otter.txt"]),
        (
            otter(json!({"createdBy": "admin"})),
            vec!["otter-notes.txt"],
        ),
        (otter(json!({"createdBy": "nobody"})), vec![]),
        // The built-in corpus counts as uploaded by the admin.
        (
            json!({"query": "revenue quarter", "folderPath": "/Finance", "createdBy": 1001}),
            vec!["q3-2024-financial-report.xlsx"],
        ),
        // The sandbox has no collections: a collection id matches no documents.
        (otter(json!({"collectionId": "col-1"})), vec![]),
        // Its JSON type is not shown: any value but null is a collection, which has nothing.
        (otter(json!({"collectionId": false})), vec![]),
        // Preferred folders come first and exclude nothing.
        (
            otter(json!({"preferredFolderPath": "/Lab/A"})),
            vec!["otter.txt", "otter-notes.txt"],
        ),
        (
            otter(json!({"preferredFolderPath": "/Lab/B"})),
            vec!["otter-notes.txt", "otter.txt"],
        ),
        (
            otter(json!({"preferredFolderPath": "/Finance"})),
            default_order.iter().map(String::as_str).collect(),
        ),
        // Empty lists and nulls are no filter.
        (
            otter(json!({"entryIds": [], "folderPaths": [], "createdBy": null})),
            default_order.iter().map(String::as_str).collect(),
        ),
    ];
    for (body, want) in cases {
        let (status, result) = post(&sb, "/v1/hybrid-search", body.clone()).await;
        assert_eq!(status, 200, "{body}: {result}");
        assert_eq!(filenames(&result), want, "{body}");
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn hybrid_search_refuses_a_filter_of_the_wrong_type() {
    let sb = sandbox().await;
    for (field, value) in [
        ("entryIds", json!("4100001")),
        ("entryIds", json!([4100001])),
        ("folderPaths", json!("/Finance")),
        ("excludeFolderPaths", json!({"path": "/Finance"})),
        ("preferredFolderPath", json!(["/Finance"])),
        ("createdAfter", json!(true)),
        ("createdAfter", json!("last week")),
        ("createdBefore", json!(1.5)),
        ("createdBy", json!([1001])),
        ("createdBy", json!("")),
        // The reference's own fields are not nullable in the spec.
        ("folderPath", json!(null)),
        ("fileTypes", json!(null)),
        ("limit", json!("100")),
        ("limit", json!(0)),
        ("limit", json!(1001)),
        ("page", json!(-1)),
        ("size", json!(0)),
    ] {
        let mut body = json!({"query": "policy"});
        body[field] = value.clone();
        let error = invalid_request(&sb, "/v1/hybrid-search", body).await;
        assert!(
            error["errorMessage"].as_str().unwrap().contains(field),
            "{field}: {error}"
        );
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn hybrid_search_limit_sets_the_page_when_size_is_absent() {
    let sb = sandbox().await;
    sb.activity().create_folder("/Walrus").unwrap();
    for i in 0..120 {
        sb.activity()
            .create_file(
                &format!("/Walrus/w{i:03}.txt"),
                &format!("Walrus sighting number {i}."),
            )
            .unwrap();
    }
    let walrus = |extra: Value| {
        let mut body = json!({"query": "walrus", "semanticWeight": 0.0});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    // (request, results on the page, size, totalElements, totalPages): `limit` is 1 to
    // 1,000 with a default of 100 (the facts note); without `size` the page is `limit` long.
    for (body, on_page, size, total, pages) in [
        (walrus(json!({"limit": 100})), 100, 100, 100, 1),
        (walrus(json!({})), 100, 100, 100, 1),
        (walrus(json!({"limit": 1000})), 120, 1000, 120, 1),
        (
            walrus(json!({"limit": 1000, "size": 120})),
            120,
            120,
            120,
            1,
        ),
        (
            walrus(json!({"limit": 1000, "size": 50, "page": 2})),
            20,
            50,
            120,
            3,
        ),
        (walrus(json!({"limit": 7})), 7, 7, 7, 1),
    ] {
        let (status, result) = post(&sb, "/v1/hybrid-search", body.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            (
                result["results"].as_array().unwrap().len(),
                result["size"].as_u64().unwrap(),
                result["totalElements"].as_u64().unwrap(),
                result["totalPages"].as_u64().unwrap(),
            ),
            (on_page, size, total, pages),
            "{body}"
        );
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn hybrid_search_chunks_carry_text_and_chunk_text() {
    let sb = sandbox().await;
    let (_, result) = post(
        &sb,
        "/v1/hybrid-search",
        json!({"query": "postmortem action items", "semanticWeight": 0.0}),
    )
    .await;
    let best = &result["results"][0];
    assert_eq!(best["filename"], "incident-response-runbook.md");
    // 2024-10-28 (the runbook's date in the corpus), noon UTC, epoch milliseconds.
    assert_eq!(best["uploadedTimestamp"], 1_730_116_800_000_i64);
    assert!(
        best["groupId"].as_str().is_some_and(|g| !g.is_empty()),
        "{best}"
    );
    for chunk in best["chunks"].as_array().unwrap() {
        assert!(
            chunk["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{chunk}"
        );
        assert_eq!(chunk["chunkText"], chunk["text"], "{chunk}");
        assert_eq!(chunk["type"], "TEXT");
        assert!(chunk["chunkId"].is_string() && chunk["score"].is_number());
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn ask_kb_citations_carry_source_text_while_ask_document_keeps_text() {
    let sb = sandbox().await;
    let (status, answer) = post(
        &sb,
        "/v1/ai/kb/kb-company-policies/ask",
        json!({"question": "How long are invoices kept?", "includeCitations": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(answer["conversationId"].is_string());
    // The facts note: citations [{filename, entryId, objectId, previewUrl, chunks: [{chunkId,
    // sourceText}]}].
    let citation = &answer["citations"][0];
    assert_eq!(citation["filename"], "data-retention-policy.pdf");
    for field in ["entryId", "objectId", "previewUrl"] {
        assert!(citation[field].is_string(), "{field}: {citation}");
    }
    let chunk = &citation["chunks"][0];
    assert!(chunk["chunkId"].is_string(), "{chunk}");
    assert!(
        chunk["sourceText"]
            .as_str()
            .is_some_and(|t| t.contains("seven years")),
        "{chunk}"
    );
    assert!(chunk.get("text").is_none(), "{chunk}");
    // Reference 2.3: ask-document citations are {filename, entryId, chunks: [{chunkId, text}]}.
    let (_, document) = post(
        &sb,
        &format!("/v1/ai/document/{TRAVEL}/ask"),
        json!({"question": "What is the daily meal allowance?", "includeCitations": true}),
    )
    .await;
    let chunk = &document["citations"][0]["chunks"][0];
    assert!(
        chunk["text"].is_string() && chunk.get("sourceText").is_none(),
        "{chunk}"
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn knowledge_base_list_pages_with_the_platform_defaults() {
    let sb = sandbox().await;
    // The facts note: `page` defaults to 0 and `size` to 200.
    let (_, page) = post(&sb, "/v1/ai/kb/list", json!({})).await;
    assert_eq!(
        (
            page["number"].clone(),
            page["size"].clone(),
            page["totalPages"].clone()
        ),
        (json!(0), json!(200), json!(1))
    );
    let (_, second) = post(&sb, "/v1/ai/kb/list", json!({"size": 2, "page": 1})).await;
    assert_eq!(
        (
            second["numberOfElements"].clone(),
            second["first"].clone(),
            second["last"].clone()
        ),
        (json!(2), json!(false), json!(true))
    );
    for body in [
        json!({"page": "1"}),
        json!({"page": -1}),
        json!({"size": 0}),
        json!({"size": 2.5}),
    ] {
        invalid_request(&sb, "/v1/ai/kb/list", body).await;
    }
    sb.assert_conformant();
}

/// The SDK's typed filters (a user id, creation-time bounds) go out as decimal strings, the
/// wire type the reference gives them, and the sandbox filters by them.
#[tokio::test]
async fn knowledge_base_list_typed_filters_from_the_sdk_filter_in_the_sandbox() {
    use pubapi_sdk_ext::ai::KnowledgeBaseListFilters;
    use pubapi_sdk_ext::jiff::Timestamp;
    let sb = sandbox().await;
    let client = sb.client_for("admin");
    let october: Timestamp = "2024-10-01T00:00:00Z".parse().unwrap();
    let names = |request: KnowledgeBaseListRequest| {
        let client = client.clone();
        async move {
            let page = client.knowledge_bases().page(request).await.unwrap();
            page.content
                .into_iter()
                .map(|kb| kb.name.unwrap())
                .collect::<Vec<_>>()
        }
    };
    let any = KnowledgeBaseListRequest::default;
    assert_eq!(
        names(any().with_created_after(october)).await,
        ["Engineering handbook", "Finance reports"]
    );
    assert_eq!(
        names(any().with_created_before(october)).await,
        ["Company policies", "Old archive"]
    );
    assert_eq!(names(any().with_created_by(1001)).await.len(), 4);
    assert!(names(any().with_created_by(1003)).await.is_empty());
    let bodies: Vec<Value> = sb
        .traffic()
        .iter()
        .map(|e| serde_json::from_slice(&e.request_body).unwrap())
        .collect();
    assert_eq!(
        bodies,
        [
            json!({"createdAfter": "1727740800000"}),
            json!({"createdBefore": "1727740800000"}),
            json!({"createdBy": "1001"}),
            json!({"createdBy": "1003"}),
        ]
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn knowledge_base_list_filters_by_epoch_milliseconds_and_user_ids() {
    let sb = sandbox().await;
    // 2024-10-01T00:00:00Z: after it come the engineering handbook (2024-10-05) and the
    // finance reports (2025-01-15).
    let october = 1_727_740_800_000_i64;
    let names = |page: &Value| -> Vec<String> {
        page["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].as_str().unwrap().to_string())
            .collect()
    };
    let later = vec!["Engineering handbook", "Finance reports"];
    let earlier = vec!["Company policies", "Old archive"];
    let all = vec![
        "Company policies",
        "Engineering handbook",
        "Finance reports",
        "Old archive",
    ];
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"createdAfter": october}), later.clone()),
        (json!({"createdAfter": october.to_string()}), later.clone()),
        (json!({"createdAfter": "2024-10-01"}), later.clone()),
        (json!({"createdBefore": october}), earlier.clone()),
        (
            json!({"createdBefore": october.to_string()}),
            earlier.clone(),
        ),
        (json!({"createdBefore": "2024-10-01T00:00:00Z"}), earlier),
        (json!({"createdBy": 1001}), all.clone()),
        (json!({"createdBy": "admin"}), all.clone()),
        (json!({"createdBy": "1001"}), all),
        (json!({"createdBy": 1003}), vec![]),
        (json!({"createdBy": "sam"}), vec![]),
    ];
    for (body, want) in cases {
        let (status, page) = post(&sb, "/v1/ai/kb/list", body.clone()).await;
        assert_eq!(status, 200, "{body}: {page}");
        assert_eq!(names(&page), want, "{body}");
    }
    // The spec types the dates `string` (format not shown): other text filters nothing.
    let (status, page) = post(&sb, "/v1/ai/kb/list", json!({"createdBefore": "last week"})).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        names(&page),
        names(&post(&sb, "/v1/ai/kb/list", json!({})).await.1)
    );
    for body in [
        json!({"createdAfter": true}),
        json!({"createdBy": [1001]}),
        // The reference's fields are not nullable in the spec.
        json!({"createdBy": null}),
    ] {
        invalid_request(&sb, "/v1/ai/kb/list", body).await;
    }
    // Integers where the reference types strings are the validator's documented tolerance.
    sb.assert_conformant();
}

#[tokio::test]
async fn copilot_answers_with_its_deprecation_headers_before_its_sunset() {
    let sb = before_the_copilot_sunset().await;
    let reply = admin_post(
        &sb,
        "/v1/ai/copilot/ask",
        &json!({"question": "What does the 2025 roadmap focus on?", "includeCitations": true}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("deprecation"), Some("true"));
    assert_eq!(
        reply.header("sunset"),
        Some("Wed, 30 Sep 2026 00:00:00 GMT")
    );
    assert_eq!(
        reply.header("link"),
        Some("</v1/ai/assistant/ask>; rel=\"successor-version\"")
    );
    let body = reply.json();
    assert!(
        body["deprecationNotice"]
            .as_str()
            .unwrap()
            .contains("30 September 2026")
    );
    assert!(
        body["response"]["text"]
            .as_str()
            .unwrap()
            .contains("AI assistants")
    );
    assert_eq!(body["citations"][0]["filename"], "roadmap-2025.pptx");
    assert!(body["citations"][0]["objectId"].is_string());
    let error = admin_post(&sb, "/v1/ai/copilot/ask", &json!({})).await;
    assert_eq!(error.status, 400);
    assert_eq!(error.header("deprecation"), None);
    sb.assert_conformant();
}

#[tokio::test]
async fn copilot_is_removed_after_its_sunset() {
    let sb = before_the_copilot_sunset().await;
    let ask = || async {
        admin_post(
            &sb,
            "/v1/ai/copilot/ask",
            &json!({"question": "What does the 2025 roadmap focus on?"}),
        )
        .await
    };
    assert_eq!(ask().await.status, 200);
    // At the sunset itself the endpoint is gone.
    sb.advance(Duration::from_secs(1));
    assert_eq!(sb.now_ms(), copilot_sunset_ms());
    let gone = ask().await;
    assert_eq!(gone.status, 410);
    assert_eq!(gone.header("content-type"), Some("application/json"));
    let body = gone.json();
    assert_eq!(body["errorCode"], REMOVED_CODE);
    assert_eq!(body["errorCode"], "ENDPOINT_REMOVED");
    assert!(
        body["errorMessage"]
            .as_str()
            .unwrap()
            .contains("POST /v1/ai/assistant/ask"),
        "{body}"
    );
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    assert_eq!(gone.header("deprecation"), Some("true"));
    assert_eq!(gone.header("sunset"), Some("Wed, 30 Sep 2026 00:00:00 GMT"));
    assert_eq!(
        gone.header("link"),
        Some("</v1/ai/assistant/ask>; rel=\"successor-version\"")
    );
    // Removed means removed: a body the copilot would refuse gets the same 410.
    let empty = admin_post(&sb, "/v1/ai/copilot/ask", &json!({})).await;
    assert_eq!(empty.status, 410);
    // An unknown token is still refused first.
    let anonymous = sb
        .raw()
        .post("/v1/ai/copilot/ask", "bad", &json!({"question": "x"}))
        .await;
    assert_eq!(anonymous.status, 401);
    // The spec documents the 410 of askCopilot after its removal: every reply conforms.
    sb.assert_conformant();
}

#[tokio::test]
async fn a_sandbox_on_the_real_clock_is_past_the_copilot_sunset() {
    // The real clock starts at the wall-clock time, which is after 30 September 2026.
    let sb = Sandbox::start(SandboxConfig::testing().with_clock(ClockConfig::real())).await;
    assert!(sb.now_ms() >= copilot_sunset_ms());
    let reply = admin_post(&sb, "/v1/ai/copilot/ask", &json!({"question": "roadmap"})).await;
    assert_eq!(reply.status, 410);
    assert_eq!(reply.json()["errorCode"], REMOVED_CODE);
}

#[tokio::test]
async fn answers_are_deterministic() {
    let mut texts = Vec::new();
    for _ in 0..2 {
        let sb = before_the_copilot_sunset().await;
        let (_, answer) = post(
            &sb,
            "/v1/ai/copilot/ask",
            json!({"question": "cash at the end of the quarter"}),
        )
        .await;
        texts.push(answer);
    }
    assert_eq!(texts[0], texts[1]);
}

#[tokio::test]
async fn ai_end_to_end_through_the_client() {
    // Before the copilot's sunset, so the copilot still answers.
    let sb = before_the_copilot_sunset().await;
    let client = sb.client_for("admin");
    let agents = client
        .sdk()
        .list_agents()
        .sort_by(AgentSortBy::Name)
        .sort_order(AgentSortOrder::Asc)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(agents.0.len(), 3);
    let agent_id = agents.0[0].agent_id.clone();
    let asked = client
        .sdk()
        .ask_agent()
        .agent_id(&agent_id)
        .body(
            serde_json::from_value::<pubapi_sdk::types::AgentAskRequest>(
                json!({"question": "How fast is an alert acknowledged?"}),
            )
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .into_inner();
    let request_id = asked.request_id;
    let mut status = String::new();
    for _ in 0..5 {
        let poll = client
            .sdk()
            .get_agent_request_status()
            .agent_id(&agent_id)
            .request_id(&request_id)
            .send()
            .await
            .unwrap()
            .into_inner();
        status = poll.status.clone();
        if status == "COMPLETED" {
            assert!(poll.response_text.unwrap().contains("15 minutes"));
            break;
        }
    }
    assert_eq!(status, "COMPLETED");

    let execution = client
        .sdk()
        .ask_assistant()
        .body(
            serde_json::from_value::<AssistantAskRequest>(json!({"question": "hotel per night"}))
                .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .into_inner();
    let execution_id = execution.execution_id;
    let mut done = None;
    for _ in 0..5 {
        let poll = client
            .sdk()
            .get_assistant_status()
            .execution_id(&execution_id)
            .send()
            .await
            .unwrap()
            .into_inner();
        if poll.status == "COMPLETED" {
            done = Some(poll);
            break;
        }
    }
    let done = done.expect("the execution completes");
    assert_eq!(done.tool_calls.len(), 1);
    assert!(!done.citations.is_empty());

    let answer = client
        .sdk()
        .ask_document()
        .entry_id(TRAVEL)
        .body(
            serde_json::from_value::<DocumentAskRequest>(
                json!({"question": "hotel", "includeCitations": true}),
            )
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .into_inner();
    assert!(answer.response.unwrap().text.unwrap().contains("180 euros"));
    let summary = client
        .sdk()
        .summarize_document()
        .entry_id(TRAVEL)
        .body(DocumentSummaryRequest::default())
        .send()
        .await
        .unwrap()
        .into_inner();
    assert!(summary.response.is_some());
    let kbs = client
        .sdk()
        .list_knowledge_bases()
        .body(KnowledgeBaseListRequest::default())
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(kbs.total_elements, Some(4));
    let kb_answer = client
        .sdk()
        .ask_knowledge_base()
        .kb_id("kb-engineering")
        .body(
            serde_json::from_value::<KnowledgeBaseAskRequest>(
                json!({"question": "postmortem deadline"}),
            )
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .into_inner();
    assert!(
        kb_answer
            .response
            .and_then(|r| r.text)
            .unwrap()
            .contains("five business days")
    );
    let hits = client
        .sdk()
        .hybrid_search()
        .body(
            serde_json::from_value::<HybridSearchRequest>(
                json!({"query": "multi-factor authentication", "semanticWeight": 0.3}),
            )
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        hits.results[0].filename.as_deref(),
        Some("information-security-policy.pdf")
    );
    let roadmap =
        || serde_json::from_value::<CopilotAskRequest>(json!({"question": "roadmap"})).unwrap();
    // The SDK refuses the copilot after its sunset by the wall clock, which has passed:
    // nothing reaches the sandbox.
    #[allow(deprecated)]
    let refused = client
        .sdk()
        .ask_copilot()
        .body(roadmap())
        .send()
        .await
        .map_err(Error::from);
    assert!(
        matches!(
            refused,
            Err(Error::Removed {
                operation: "askCopilot",
                successor: Some("askAssistant"),
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(sb.counters().requests_to("askCopilot"), 0);
    // This sandbox's clock is before the sunset: a caller who opts in still gets answers.
    let opted_in = sb
        .client_builder_for("admin")
        .call_removed_operations()
        .build()
        .unwrap();
    #[allow(deprecated)] // the sandbox serves the deprecated endpoint until its removal
    let copilot = opted_in
        .sdk()
        .ask_copilot()
        .body(roadmap())
        .send()
        .await
        .unwrap();
    assert_eq!(copilot.headers()["deprecation"], "true");
    sb.assert_conformant();
}

/// The SDK's waiters against the sandbox: every final status the platform uses ends the wait
/// with what the caller needs (the answer, the failure text, the pending actions).
#[tokio::test]
async fn waiters_end_on_every_final_status_against_the_sandbox() {
    use pubapi_sdk_ext::ai::AskError;
    use pubapi_sdk_ext::waiter::WaitError;
    let mut config = SandboxConfig::testing();
    config.ai = AiConfig {
        agent_polls: 2,
        assistant_polls: 1,
        ..AiConfig::default()
    };
    let sb = Sandbox::start(config).await;
    let client = sb.client_for("admin");
    let how = poll_every_second(Duration::from_secs(30));
    let assistant = |question: &str| {
        let request = AssistantAskRequest::new(question).unwrap();
        let (client, how) = (client.clone(), how.clone());
        async move { client.assistant().ask_and_wait(request, how).await }
    };
    let agents = client.agents();
    let (completed, failed, confirm, agent_failed) = tokio::join!(
        assistant("hotel per night"),
        assistant("hotel per night [fail]"),
        assistant("hotel per night [confirm]"),
        agents.ask_and_wait("agt-finance", "revenue [fail]", how),
    );
    assert_eq!(
        completed.unwrap().status(),
        pubapi_sdk_ext::ai::AssistantStatus::Completed
    );
    match failed {
        Err(WaitError::Failed {
            error:
                AskError::Failed {
                    status,
                    response_text,
                },
            ..
        }) => {
            assert_eq!(status, "FAILED");
            assert!(response_text.is_some_and(|t| !t.is_empty()));
        }
        other => panic!("{other:?}"),
    }
    match confirm {
        Err(WaitError::Failed { error, .. }) => {
            assert!(
                matches!(error, AskError::AwaitingConfirmation { .. }),
                "{error:?}"
            );
            assert!(!error.pending_actions().is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(
            agent_failed,
            Err(WaitError::Failed {
                error: AskError::Failed { .. },
                ..
            })
        ),
        "{agent_failed:?}"
    );
}
