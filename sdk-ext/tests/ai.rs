//! Agents, assistant, copilot, knowledge bases and hybrid search against a scripted AI API,
//! with paused time.

use futures_util::StreamExt;
use pubapi_sdk::types::{
    AgentAskRequest, AssistantAskRequest, CopilotAskRequest, HybridSearchRequest,
    KnowledgeBaseAskRequest,
};
use pubapi_sdk_ext::ai::{
    AiWait, AskError, AssistantAnswer, AssistantStatus, MAX_QUESTION_CHARS, StatusObserver,
};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::waiter::{Started, WaitError};
use pubapi_sdk_ext::{Client, Error};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn client(script: &Arc<Script>) -> Client {
    script.builder().build().unwrap()
}

fn secs_f(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

#[tokio::test(start_paused = true)]
async fn agent_answer_is_polled_until_completed() {
    let script = Script::new(
        vec![
            Answer::json(200, r#"{"requestId":"r1","conversationId":"c1"}"#),
            Answer::json(200, r#"{"status":"PENDING"}"#),
            Answer::json(200, r#"{"status":"RUNNING"}"#),
        ],
        Answer::json(
            200,
            json!({"status": "COMPLETED", "responseText": "42",
                   "citations": [{"previewUrl": "https://x/p", "type": "web_search"}],
                   "lastUpdated": "2026-01-01T10:00:00Z"})
            .to_string(),
        ),
    );
    let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let told = statuses.clone();
    let how = AiWait {
        on_status: StatusObserver::new(move |s| told.lock().unwrap().push(s.to_string())),
        ..AiWait::default()
    };
    let answer = client(&script)
        .agents()
        .ask_and_wait("a 1", "What is the answer?", how)
        .await
        .unwrap();
    assert_eq!(
        *statuses.lock().unwrap(),
        ["PENDING", "RUNNING", "COMPLETED"],
        "the observer is told every poll's status"
    );
    assert_eq!(answer.request.request_id, "r1");
    assert_eq!(answer.result.response_text.as_deref(), Some("42"));
    assert_eq!(answer.result.citations.len(), 1);
    let seen = script.seen();
    assert_eq!(seen[0].path, "/pubapi/v1/ai/agents/a%201/ask");
    assert_eq!(seen[1].path, "/pubapi/v1/ai/agents/a%201/ask/r1/status");
    let times = script.times();
    assert_eq!(
        times,
        vec![secs_f(0.0), secs_f(0.0), secs_f(5.0), secs_f(12.5)]
    );
}

/// An agent question asked (request `r1`), then waited for on a status that answers
/// `status` at every poll.
async fn agent_wait_on(
    status: &str,
) -> (
    Result<pubapi_sdk_ext::ai::AgentAnswer, WaitError<AskError>>,
    Arc<Script>,
) {
    let script = Script::new(
        vec![Answer::json(
            200,
            r#"{"requestId":"r1","conversationId":"c1"}"#,
        )],
        Answer::json(200, status.to_string()),
    );
    let result = client(&script)
        .agents()
        .ask_and_wait("a1", "q", AiWait::default())
        .await;
    (result, script)
}

#[tokio::test(start_paused = true)]
async fn agent_failure_is_a_typed_error_with_the_response_text() {
    let (result, _) =
        agent_wait_on(r#"{"status":"FAILED","responseText":"model unavailable"}"#).await;
    match result {
        Err(WaitError::Failed {
            error:
                AskError::Failed {
                    status,
                    response_text,
                },
            polls,
            ..
        }) => {
            assert_eq!(status, "FAILED");
            assert_eq!(response_text.as_deref(), Some("model unavailable"));
            assert_eq!(polls, 1);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn agent_question_over_35000_characters_is_refused_before_sending() {
    let script = Script::new(vec![], Answer::empty(500));
    let question = "x".repeat(MAX_QUESTION_CHARS + 1);
    let result = client(&script).agents().ask("a1", &question).await;
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert!(script.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn assistant_is_polled_until_no_longer_in_progress() {
    let script = Script::new(
        vec![
            Answer::json(
                200,
                r#"{"conversationId":"c1","executionId":"e1","executionStatus":"IN_PROGRESS","truncated":false,"actions":[]}"#,
            ),
            Answer::json(200, r#"{"status":"IN_PROGRESS"}"#),
        ],
        Answer::json(
            200,
            json!({"status": "COMPLETED", "responseText": "Two contracts.", "thoughts": [],
                   "citations": [{"filename": "a.pdf", "entryId": "e9", "objectId": "o9",
                                  "previewUrl": "/preview/o9",
                                  "chunks": [{"chunkId": "k1", "sourceText": "renews in May"}]}],
                   "intent": "question_answering", "lastUpdated": 1767261600000_i64,
                   "numToolCalls": 1, "pendingActions": [],
                   "toolCalls": {"t1": {"name": "search", "sourceDisplayName": "Files",
                                        "toolDisplayName": "Search", "thought": "look",
                                        "input": {"q": "May"}, "output": "2 hits",
                                        "status": "SUCCESS", "timestamp": "2026-01-01T10:00:00Z"}}})
            .to_string(),
        ),
    );
    let request = AssistantAskRequest::builder()
        .question("Which contracts renew in May?")
        .try_into()
        .unwrap();
    let answer = client(&script)
        .assistant()
        .ask_and_wait(request, AiWait::default())
        .await
        .unwrap();
    assert_eq!(answer.status(), AssistantStatus::Completed);
    assert_eq!(answer.text(), Some("Two contracts."));
    assert_eq!(
        answer.result.citations[0].chunks[0].source_text.as_deref(),
        Some("renews in May")
    );
    assert_eq!(answer.result.tool_calls["t1"].output, Some(json!("2 hits")));
    let status_poll = &script.seen()[1];
    assert_eq!(status_poll.path, "/pubapi/v1/ai/assistant/e1/status");
    assert_eq!(status_poll.query, "includeCitations=true");
}

fn assistant_ending_with(status: serde_json::Value) -> Arc<Script> {
    Script::new(
        vec![
            Answer::json(200, r#"{"executionId":"e1"}"#),
            Answer::json(200, r#"{"status":"IN_PROGRESS"}"#),
        ],
        Answer::json(200, status.to_string()),
    )
}

async fn ask_assistant(script: &Arc<Script>) -> Result<(), WaitError<AskError>> {
    answer_assistant(script).await.map(|_| ())
}

async fn answer_assistant(script: &Arc<Script>) -> Result<AssistantAnswer, WaitError<AskError>> {
    let request = AssistantAskRequest::builder()
        .question("q")
        .try_into()
        .unwrap();
    client(script)
        .assistant()
        .ask_and_wait(request, AiWait::default())
        .await
}

#[tokio::test(start_paused = true)]
async fn assistant_failed_ends_the_wait_with_the_failure_text() {
    let script = assistant_ending_with(
        json!({"status": "FAILED", "responseText": "the model is unavailable"}),
    );
    match ask_assistant(&script).await {
        Err(WaitError::Failed {
            error:
                AskError::Failed {
                    status,
                    response_text,
                },
            polls: 2,
            ..
        }) => {
            assert_eq!(status, "FAILED");
            assert_eq!(response_text.as_deref(), Some("the model is unavailable"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn assistant_awaiting_user_confirmation_ends_the_wait_with_the_pending_actions() {
    let action = json!({"actionId": "act-1", "type": "MOVE_FILE", "description": "Move a.pdf"});
    let script = assistant_ending_with(json!({
        "status": "AWAITING_USER_CONFIRMATION", "pendingActions": [action.clone()],
        "toolCalls": {"t1": {"name": "plan", "output": ["step 1", "step 2"], "timestamp": "1767261600"}}
    }));
    match ask_assistant(&script).await {
        Err(WaitError::Failed { error, .. }) => {
            assert_eq!(error.pending_actions(), &[action]);
            let AskError::AwaitingConfirmation { result, execution } = &error else {
                panic!("{error:?}")
            };
            assert_eq!(execution.execution_id, "e1", "to act on it");
            assert_eq!(
                result.tool_calls["t1"].output,
                Some(json!(["step 1", "step 2"]))
            );
            assert!(error.to_string().contains("1 pending action"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        script.seen().len(),
        3,
        "ask, one IN_PROGRESS poll, the final poll"
    );
}

#[tokio::test(start_paused = true)]
async fn assistant_status_other_than_in_progress_is_final_and_hands_back_the_answer() {
    let script = assistant_ending_with(
        json!({"status": "CANCELLED_BY_ADMIN", "responseText": "partial answer"}),
    );
    let answer = answer_assistant(&script).await.unwrap();
    assert_eq!(
        answer.status(),
        AssistantStatus::Other("CANCELLED_BY_ADMIN".into()),
        "the unknown status is kept"
    );
    assert_eq!(answer.text(), Some("partial answer"), "with its body");
    assert!(answer.status().is_final());
    assert_eq!(
        script.seen().len(),
        3,
        "ask, one IN_PROGRESS poll, the final poll: no AI call spent after it"
    );
}

#[tokio::test(start_paused = true)]
async fn agent_polling_ends_only_on_completed_or_failed() {
    // Unknown in-between statuses (and the empty one: the spec makes `status` required) keep
    // polling, like PENDING and RUNNING, until COMPLETED.
    let script = Script::new(
        vec![
            Answer::json(200, r#"{"requestId":"r1"}"#),
            Answer::json(200, r#"{"status":"PENDING"}"#),
            Answer::json(200, r#"{"status":"QUEUED"}"#),
            Answer::json(200, r#"{"status":"QUEUED"}"#),
            Answer::json(200, r#"{"status":"QUEUED"}"#),
            Answer::json(200, r#"{"status":""}"#),
            Answer::json(200, r#"{"status":"RUNNING"}"#),
        ],
        Answer::json(200, r#"{"status":"COMPLETED","responseText":"42"}"#),
    );
    let answer = client(&script)
        .agents()
        .ask_and_wait("a1", "q", AiWait::default())
        .await
        .unwrap();
    assert_eq!(answer.result.response_text.as_deref(), Some("42"));
    assert_eq!(script.seen().len(), 8, "ask and seven polls");

    // A status that never ends is bounded by the wait's deadline, as PENDING is.
    let script = Script::new(
        vec![Answer::json(200, r#"{"requestId":"r1"}"#)],
        Answer::json(200, r#"{"status":"QUEUED"}"#),
    );
    let result = client(&script)
        .agents()
        .ask_and_wait("a1", "q", AiWait::default())
        .await;
    assert!(
        matches!(result, Err(WaitError::TimedOut { .. })),
        "{result:?}"
    );
    assert_eq!(
        pubapi_sdk_ext::ai::AgentStatus::from("QUEUED").as_str(),
        "QUEUED"
    );
}

#[tokio::test(start_paused = true)]
async fn agent_wait_stops_on_awaiting_user_confirmation_after_one_poll() {
    // The platform's CLI stops agent polling on AWAITING_USER_CONFIRMATION: a pending action
    // needs the user, and polling on would spend AI calls until the deadline.
    let (result, script) =
        agent_wait_on(r#"{"status":"AWAITING_USER_CONFIRMATION","responseText":"may I?"}"#).await;
    match result {
        Err(WaitError::Failed {
            error: AskError::AgentAwaitingConfirmation { request, result },
            polls: 1,
            ..
        }) => {
            assert_eq!(request.request_id, "r1");
            assert_eq!(result.response_text.as_deref(), Some("may I?"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(script.seen().len(), 2, "the ask and one poll");
    assert!(pubapi_sdk_ext::ai::AgentStatus::from("AWAITING_USER_CONFIRMATION").is_final());
}

/// The ask's answer, eight polls still running, then `done` at every poll.
fn still_running_then(ask: &str, running: &str, done: &str) -> Arc<Script> {
    let mut answers = vec![Answer::json(200, ask.to_string())];
    answers.extend((0..8).map(|_| Answer::json(200, running.to_string())));
    Script::new(answers, Answer::json(200, done.to_string()))
}

/// Agent request `r1` of `a1`: eight polls running, then `42`.
fn agent_answering_42_after_eight_polls() -> Arc<Script> {
    still_running_then(
        r#"{"requestId":"r1","conversationId":"c1"}"#,
        r#"{"status":"RUNNING"}"#,
        r#"{"status":"COMPLETED","responseText":"42"}"#,
    )
}

/// The assistant question "q".
fn question_q() -> AssistantAskRequest {
    AssistantAskRequest::builder()
        .question("q")
        .try_into()
        .unwrap()
}

/// Assistant execution `e1`: eight polls in progress, then `42`.
fn assistant_answering_42_after_eight_polls() -> Arc<Script> {
    still_running_then(
        r#"{"executionId":"e1","conversationId":"c1"}"#,
        r#"{"status":"IN_PROGRESS"}"#,
        r#"{"status":"COMPLETED","responseText":"42"}"#,
    )
}

/// A wait of 12 s, polling every 5 s: it times out while the answer is still running.
fn short_wait() -> AiWait {
    AiWait {
        min_interval: Duration::from_secs(5),
        max_interval: Duration::from_secs(5),
        deadline: Duration::from_secs(12),
        ..AiWait::default()
    }
}

fn assert_timed_out<T: std::fmt::Debug>(result: Result<T, WaitError<AskError>>) {
    assert!(
        matches!(result, Err(WaitError::TimedOut { .. })),
        "{result:?}"
    );
}

fn asks(script: &Script) -> usize {
    script.seen().iter().filter(|s| s.method == "POST").count()
}

#[tokio::test(start_paused = true)]
async fn an_answer_already_paid_for_is_waited_for_again_after_a_timeout_without_asking_again() {
    // Agents: every poll is an AI call of the day's budget; so is asking again.
    let script = agent_answering_42_after_eight_polls();
    let agent_client = client(&script);
    let agents = agent_client.agents();
    let request = agents.ask("a1", "q").await.unwrap();
    assert_timed_out(agents.wait("a1", &request, short_wait()).await);
    let answer = agents
        .wait("a1", &request, AiWait::default())
        .await
        .unwrap();
    assert_eq!(answer.request.request_id, "r1");
    assert_eq!(answer.result.response_text.as_deref(), Some("42"));
    assert_eq!(asks(&script), 1, "one question, asked once");
    assert!(
        script
            .seen()
            .iter()
            .skip(1)
            .all(|s| s.path.ends_with("/v1/ai/agents/a1/ask/r1/status")),
        "every poll is of request r1"
    );

    // The assistant, the same way.
    let script = assistant_answering_42_after_eight_polls();
    let assistant_client = client(&script);
    let assistant = assistant_client.assistant();
    let execution = assistant.ask(question_q()).await.unwrap();
    assert_timed_out(assistant.wait(&execution, short_wait()).await);
    let answer = assistant.wait(&execution, AiWait::default()).await.unwrap();
    assert_eq!(answer.execution.execution_id, "e1");
    assert_eq!(answer.text(), Some("42"));
    assert_eq!(asks(&script), 1, "one question, asked once");
}

#[tokio::test(start_paused = true)]
async fn an_ask_and_wait_that_times_out_hands_back_the_question_to_wait_for_without_asking_again() {
    // Agents: the error keeps the agent and the ids the ask answered.
    let script = agent_answering_42_after_eight_polls();
    let agent_client = client(&script);
    let agents = agent_client.agents();
    let error = agents
        .ask_and_wait("a1", "q", short_wait())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("request r1 of agent a1"),
        "{error}"
    );
    let Err(WaitError::TimedOut {
        started: Some(started),
        ..
    }) = Err::<(), _>(error)
    else {
        panic!("not a timeout that kept the question")
    };
    let Started::AgentQuestion {
        agent_id, request, ..
    } = *started
    else {
        panic!("{started:?}")
    };
    assert_eq!(
        (agent_id.as_str(), request.request_id.as_str()),
        ("a1", "r1")
    );
    let answer = agents
        .wait(&agent_id, &request, AiWait::default())
        .await
        .unwrap();
    assert_eq!(answer.result.response_text.as_deref(), Some("42"));
    assert_eq!(asks(&script), 1, "one question, asked once");

    // The assistant: the error keeps the execution.
    let script = assistant_answering_42_after_eight_polls();
    let assistant_client = client(&script);
    let assistant = assistant_client.assistant();
    let error = assistant
        .ask_and_wait(question_q(), short_wait())
        .await
        .unwrap_err();
    let Some(Started::AssistantQuestion(execution)) = error.started() else {
        panic!("{error:?}")
    };
    assert_eq!(execution.execution_id, "e1");
    let answer = assistant.wait(execution, AiWait::default()).await.unwrap();
    assert_eq!(answer.text(), Some("42"));
    assert_eq!(asks(&script), 1, "one question, asked once");

    // A wait on a question the caller asked itself has nothing of its own to hand back.
    let script = still_running_then(
        r#"{"requestId":"r2","conversationId":"c2"}"#,
        r#"{"status":"RUNNING"}"#,
        r#"{"status":"COMPLETED"}"#,
    );
    let agent_client = client(&script);
    let request = agent_client.agents().ask("a1", "q").await.unwrap();
    let error = agent_client
        .agents()
        .wait("a1", &request, short_wait())
        .await
        .unwrap_err();
    assert!(error.started().is_none(), "{error:?}");

    // A poll that fails after the ask keeps the question too; an ask that fails started
    // nothing.
    let not_found = r#"{"Errors":[{"code":"REQUEST_NOT_FOUND","description":"no request r1"}]}"#;
    let script = Script::new(
        vec![Answer::json(200, r#"{"requestId":"r1"}"#)],
        Answer::json(404, not_found),
    );
    let error = client(&script)
        .agents()
        .ask_and_wait("a1", "q", short_wait())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            WaitError::Failed {
                error: AskError::Api(Error::NotFound(_)),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        matches!(error.started(), Some(Started::AgentQuestion { request, .. }) if request.request_id == "r1"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .ends_with("(after starting request r1 of agent a1)"),
        "{error}"
    );
    let script = Script::new(vec![], Answer::json(404, not_found));
    let error = client(&script)
        .agents()
        .ask_and_wait("a1", "q", short_wait())
        .await
        .unwrap_err();
    assert!(error.started().is_none(), "{error:?}");
}

#[tokio::test(start_paused = true)]
#[allow(deprecated)]
async fn copilot_surfaces_its_deprecation_headers_and_notice() {
    let script = Script::new(
        vec![],
        Answer::json(
            200,
            json!({"response": {"text": "hi"}, "citations": [], "conversationId": "c1",
                   "deprecationNotice": "Use the assistant."})
            .to_string(),
        )
        .header("deprecation", "true")
        .header("sunset", "Wed, 30 Sep 2026 00:00:00 GMT")
        .header("link", "</v1/ai/assistant/ask>; rel=\"successor-version\""),
    );
    let request = CopilotAskRequest::builder()
        .question("hi?")
        .try_into()
        .unwrap();
    // The reference removed the copilot on 30 September 2026: only a client that opts in
    // still sends it.
    let opted_in = script.builder().call_removed_operations().build().unwrap();
    let answer = opted_in.copilot().ask(request).await.unwrap();
    assert_eq!(answer.deprecation.deprecation.as_deref(), Some("true"));
    assert_eq!(
        answer.deprecation.sunset.as_deref(),
        Some("Wed, 30 Sep 2026 00:00:00 GMT")
    );
    assert!(
        answer
            .deprecation
            .link
            .as_deref()
            .unwrap()
            .contains("successor-version")
    );
    assert_eq!(
        answer.deprecation.notice.as_deref(),
        Some("Use the assistant.")
    );
    assert_eq!(answer.body.response.unwrap().text.as_deref(), Some("hi"));
}

#[tokio::test(start_paused = true)]
#[allow(deprecated)]
async fn copilot_after_its_sunset_is_refused_locally_naming_the_assistant() {
    let script = Script::new(vec![], Answer::json(200, r#"{"response":{"text":"hi"}}"#));
    let request = CopilotAskRequest::builder()
        .question("hi?")
        .try_into()
        .unwrap();
    let result = client(&script).copilot().ask(request).await;
    match &result {
        Err(
            error @ Error::Removed {
                operation: "askCopilot",
                successor: Some("askAssistant"),
                ..
            },
        ) => {
            let text = error.to_string();
            assert!(text.contains("Wed, 30 Sep 2026"), "{text}");
            assert!(text.contains("client.assistant().ask_and_wait"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    // Also through the generated builder.
    let request: CopilotAskRequest = CopilotAskRequest::builder()
        .question("hi?")
        .try_into()
        .unwrap();
    let result = client(&script)
        .sdk()
        .ask_copilot()
        .body(request)
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::Removed { .. })), "{result:?}");
    assert!(script.seen().is_empty());
}

fn search_page(number: i64, last: bool, ids: &[&str]) -> Answer {
    let results: Vec<_> = ids
        .iter()
        .map(|id| {
            json!({"filename": format!("{id}.pdf"), "entryId": id, "objectId": id,
                         "chunks": [{"chunkId": "c", "score": 0.5, "text": "t"}]})
        })
        .collect();
    Answer::json(
        200,
        json!({"results": results, "totalElements": 5, "totalPages": 3, "number": number,
               "size": 2, "first": number == 0, "last": last})
        .to_string(),
    )
}

#[tokio::test(start_paused = true)]
async fn hybrid_search_results_stream_page_by_page_until_the_last() {
    let script = Script::new(
        vec![
            search_page(0, false, &["a", "b"]),
            search_page(1, false, &["c", "d"]),
            search_page(2, true, &["e"]),
        ],
        Answer::empty(500),
    );
    let request = HybridSearchRequest {
        size: Some(std::num::NonZeroU64::new(2).unwrap()),
        ..HybridSearchRequest::new("contract renewal").unwrap()
    };
    let ids: Vec<String> = client(&script)
        .search()
        .results(request)
        .map(|r| r.unwrap().entry_id.unwrap())
        .collect()
        .await;
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    assert_eq!(script.seen().len(), 3);
}

/// A knowledge-base list that behaves like the platform's: `total` knowledge bases, served
/// in windows of the request's `page` and `size` (default 0 and 200). `say_last` decides
/// whether the page says `last`.
fn knowledge_base_server(total: usize, say_last: bool) -> Arc<Script> {
    Script::handler(move |seen| {
        let body: serde_json::Value = serde_json::from_slice(&seen.body).unwrap_or_default();
        let page = body["page"].as_u64().unwrap_or(0) as usize;
        let size = body["size"].as_u64().unwrap_or(200) as usize;
        let start = (page * size).min(total);
        let end = (start + size).min(total);
        let content: Vec<_> = (start..end)
            .map(|i| json!({"id": format!("kb{i}"), "status": "ACTIVE"}))
            .collect();
        let mut answer = json!({"content": content, "number": page, "size": size,
                                "numberOfElements": end - start, "totalElements": total,
                                "empty": start == end});
        if say_last {
            answer["last"] = json!(end == total);
        }
        Answer::json(200, answer.to_string())
    })
}

async fn list_ids(script: &Arc<Script>, page: Option<i64>, size: Option<i64>) -> Vec<String> {
    let request = pubapi_sdk::types::KnowledgeBaseListRequest {
        page,
        size: size.and_then(|size| std::num::NonZeroU64::new(size as u64)),
        ..Default::default()
    };
    client(script)
        .knowledge_bases()
        .list(request)
        .map(|kb| kb.unwrap().id.unwrap())
        .collect()
        .await
}

#[tokio::test(start_paused = true)]
async fn knowledge_base_list_streams_every_page_until_a_short_or_empty_one() {
    // Five knowledge bases in pages of two: 2, 2, then a short page of 1 ends it.
    let script = knowledge_base_server(5, false);
    let ids = list_ids(&script, None, Some(2)).await;
    assert_eq!(ids, ["kb0", "kb1", "kb2", "kb3", "kb4"]);
    let pages: Vec<serde_json::Value> = script
        .seen()
        .iter()
        .map(|s| serde_json::from_slice(&s.body).unwrap())
        .collect();
    assert_eq!(
        pages.iter().map(|p| p["page"].clone()).collect::<Vec<_>>(),
        [json!(0), json!(1), json!(2)],
        "no page after the short one"
    );
    assert!(pages.iter().all(|p| p["size"] == json!(2)));

    // Four in pages of two, without `last`: the empty third page ends it.
    let script = knowledge_base_server(4, false);
    assert_eq!(list_ids(&script, None, Some(2)).await.len(), 4);
    assert_eq!(script.seen().len(), 3);

    // A page that says `last` ends it at once; a starting page is honoured.
    let script = knowledge_base_server(4, true);
    assert_eq!(list_ids(&script, Some(1), Some(2)).await, ["kb2", "kb3"]);
    assert_eq!(script.seen().len(), 1);

    // The platform's default size (no size sent): one short page.
    let script = knowledge_base_server(3, false);
    assert_eq!(list_ids(&script, None, None).await.len(), 3);
    assert_eq!(script.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn knowledge_base_status_is_typed_and_keeps_unknown_states() {
    use pubapi_sdk::types::KnowledgeBaseStatus;
    use pubapi_sdk_ext::ai::{KnowledgeBaseExt, KnowledgeBaseState};
    let script = Script::new(
        vec![],
        Answer::json(
            200,
            json!({"content": [{"id": "kb1", "status": "ACTIVE"}, {"id": "kb2", "status": "DELETED"},
                               {"id": "kb3", "status": "CREATED"}, {"id": "kb4", "status": "ARCHIVING"},
                               {"id": "kb5"}],
                   "last": true})
            .to_string(),
        ),
    );
    let page = client(&script)
        .knowledge_bases()
        .page(Default::default())
        .await
        .unwrap();
    let states: Vec<_> = page.content.iter().map(|kb| kb.state()).collect();
    assert_eq!(
        states,
        [
            Some(KnowledgeBaseState::Known(KnowledgeBaseStatus::Active)),
            Some(KnowledgeBaseState::Known(KnowledgeBaseStatus::Deleted)),
            Some(KnowledgeBaseState::Known(KnowledgeBaseStatus::Created)),
            Some(KnowledgeBaseState::Other("ARCHIVING".into())),
            None,
        ]
    );
    assert_eq!(states[3].as_ref().unwrap().as_str(), "ARCHIVING");
    assert_eq!(states[0].as_ref().unwrap().to_string(), "ACTIVE");
}

#[tokio::test(start_paused = true)]
async fn a_chunk_text_is_read_under_either_name_and_a_body_with_both_is_accepted() {
    // The reference names it `text`; the platform's clients read `chunkText`.
    let script = Script::new(
        vec![],
        Answer::json(
            200,
            json!({"results": [{"entryId": "e1", "groupId": "g1", "uploadedTimestamp": 1_730_116_800_000_i64,
                                "chunks": [{"chunkId": "c1", "chunkText": "platform name", "type": "TEXT"},
                                           {"chunkId": "c2", "text": "reference name"},
                                           {"chunkId": "c3", "text": "both", "chunkText": "both"}]}],
                   "last": true})
            .to_string(),
        ),
    );
    let found = client(&script)
        .search()
        .page(HybridSearchRequest::new("policy").unwrap())
        .await
        .unwrap();
    let hit = &found.results[0];
    let texts: Vec<Option<&str>> = hit.chunks.iter().map(|c| c.text()).collect();
    assert_eq!(
        texts,
        [Some("platform name"), Some("reference name"), Some("both")]
    );
    assert_eq!(hit.group_id.as_deref(), Some("g1"));
    assert_eq!(hit.uploaded_timestamp, Some(1_730_116_800_000));
    assert_eq!(hit.chunks[0].type_.as_deref(), Some("TEXT"));
}

#[tokio::test(start_paused = true)]
async fn a_knowledge_base_answer_is_typed_and_keeps_the_fields_nobody_named() {
    let script = Script::new(
        vec![],
        Answer::json(
            200,
            json!({"response": {"text": "Seven years."}, "conversationId": "conv-1",
                   "knowledgeBaseId": "kb-1",
                   "citations": [{"filename": "retention.pdf", "entryId": "e1", "objectId": "o1",
                                  "previewUrl": "https://x/p",
                                  "chunks": [{"chunkId": "c1", "sourceText": "kept seven years"},
                                             {"chunkId": "c2", "text": "older name"}]}]})
            .to_string(),
        ),
    );
    let answer = client(&script)
        .knowledge_bases()
        .ask(
            "kb-1",
            KnowledgeBaseAskRequest::new("How long are invoices kept?").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.response.and_then(|r| r.text).as_deref(),
        Some("Seven years.")
    );
    assert_eq!(answer.conversation_id.as_deref(), Some("conv-1"));
    assert_eq!(answer.extra["knowledgeBaseId"], "kb-1");
    let citation = &answer.citations[0];
    assert_eq!(citation.preview_url.as_deref(), Some("https://x/p"));
    let texts: Vec<Option<&str>> = citation.chunks.iter().map(|c| c.source_text()).collect();
    assert_eq!(texts, [Some("kept seven years"), Some("older name")]);
}

#[tokio::test(start_paused = true)]
async fn an_agent_question_carries_the_optional_fields_the_platforms_clients_send() {
    let script = Script::new(
        vec![],
        Answer::json(200, r#"{"requestId":"r2","conversationId":"c1"}"#),
    );
    let request = AgentAskRequest {
        conversation_id: Some("c1".into()),
        instructions: Some("Answer in one sentence.".into()),
        entry_ids: vec!["4100002".into()],
        ..AgentAskRequest::new("And in Q4?").unwrap()
    };
    let client = client(&script);
    client.agents().ask("a1", request).await.unwrap();
    client
        .agents()
        .ask("a1", "Plain text works too")
        .await
        .unwrap();
    let seen = script.seen();
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body,
        json!({"question": "And in Q4?", "conversationId": "c1",
               "instructions": "Answer in one sentence.", "entryIds": ["4100002"]})
    );
    let body: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(body, json!({"question": "Plain text works too"}));
    // A whole request is checked like a text: a blank question cannot even be built (the
    // spec's pattern), and a blank text is refused unsent.
    assert!(AgentAskRequest::new(" ").is_err());
    assert!(matches!(
        client.agents().ask("a1", " ").await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(script.seen().len(), 2);
}

/// A hybrid search outside the spec's bounds (`semanticWeight` 0 to 1, `query` 3 to 250
/// characters, `limit` 1 to 1,000) is refused before sending, on the handle and on the
/// generated request builder alike, with a typed error naming the field and the bound: no
/// AI call of the day is spent on a 400.
#[tokio::test(start_paused = true)]
async fn hybrid_search_out_of_bounds_is_refused_before_sending_naming_the_field() {
    let script = Script::new(Vec::new(), Answer::json(200, r#"{"results": []}"#));
    let client = client(&script);
    let weight = |w: f64| HybridSearchRequest {
        semantic_weight: Some(w),
        ..HybridSearchRequest::new("policy").unwrap()
    };
    let cases = [
        (weight(1.5), "semanticWeight", "1.5 is outside 0 to 1"),
        (weight(-0.25), "semanticWeight", "-0.25 is outside 0 to 1"),
        (
            HybridSearchRequest::new("ab").unwrap(),
            "query",
            "2 characters, outside 3 to 250",
        ),
        (
            HybridSearchRequest {
                limit: std::num::NonZeroU64::new(1001),
                ..HybridSearchRequest::new("policy").unwrap()
            },
            "limit",
            "1001 is outside 1 to 1000",
        ),
    ];
    for (request, field, problem) in cases {
        for via_builder in [false, true] {
            let error = if via_builder {
                client
                    .sdk()
                    .hybrid_search()
                    .body(request.clone())
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(pubapi_sdk_ext::Error::from)
                    .unwrap_err()
            } else {
                client.search().page(request.clone()).await.unwrap_err()
            };
            match &error {
                pubapi_sdk_ext::Error::InvalidInput(
                    pubapi_sdk_ext::error::InputError::Invalid {
                        field: refused,
                        problem: why,
                    },
                ) => {
                    assert_eq!((*refused, why.as_str()), (field, problem), "{error}");
                }
                other => panic!("{field}: {other:?}"),
            }
            assert!(error.to_string().ends_with("nothing was sent"), "{error}");
        }
    }
    assert_eq!(script.seen().len(), 0, "nothing reached the server");
    // The bounds themselves pass.
    client.search().page(weight(1.0)).await.unwrap();
    client.search().page(weight(0.0)).await.unwrap();
    assert_eq!(script.seen().len(), 2);
}
