//! The assistant (`/v1/ai/assistant/...`): executions asked and polled.
//!
//! The ask answers `executionStatus: IN_PROGRESS`; status polls answer `IN_PROGRESS` for
//! [`AiConfig::assistant_polls`] polls, then one of:
//!
//! - `COMPLETED`: `responseText`, citations (unless `includeCitations=false`) and one tool
//!   call;
//! - `FAILED`, when the question contains [`FAIL_MARKER`] (`[fail]`): the failure text in
//!   `responseText`, no citations, no tool calls;
//! - `AWAITING_USER_CONFIRMATION`, when the question contains [`CONFIRM_MARKER`]
//!   (`[confirm]`) and not `[fail]`: one pending action
//!   `{actionId, type: "TOOL_CALL_CONFIRMATION", description}` in `pendingActions` (the
//!   reference leaves the element shape open; this one is the sandbox's choice), no
//!   `responseText`. The API has no way to confirm, so the execution keeps answering
//!   `AWAITING_USER_CONFIRMATION`.
//!
//! Markers are matched without regard to letter case and left out of the question the
//! documents are searched with.
//!
//! [`AiConfig::assistant_polls`]: crate::AiConfig::assistant_polls
//! [`FAIL_MARKER`]: super::FAIL_MARKER
//! [`CONFIRM_MARKER`]: super::CONFIRM_MARKER

use super::answers::{Hit, compose, question_and_selection, rank};
use super::body::markers;
use crate::Shared;
use crate::auth::Caller;
use crate::dates::iso_millis;
use crate::http::{ApiRequest, Reply, error};
use serde_json::{Value, json};

const ASSISTANT_FAILURE: &str = "The assistant could not complete the request.";

/// How an assistant execution ends.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Completed,
    Failed,
    /// Awaiting the user's confirmation of the pending action with this id.
    AwaitingConfirmation(String),
}

/// An assistant execution.
#[derive(Debug, Clone)]
pub struct Execution {
    id: String,
    polls: u32,
    /// The question without its markers.
    question: String,
    answer: String,
    hits: Vec<Hit>,
    outcome: Outcome,
}

/// `POST /v1/ai/assistant/ask`.
pub fn ask_assistant(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let asked = match question_and_selection(shared, req) {
        Ok(asked) => asked,
        Err(reply) => return reply,
    };
    let marked = markers(&asked.question);
    let hits: Vec<Hit> = rank(&asked.docs, &marked.question, 0.5)
        .into_iter()
        .take(3)
        .collect();
    let mut world = shared.world();
    let id = world.ids.id("exec-");
    let conversation_id = match asked.body.get("conversationId").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => c.to_string(),
        _ => world.ids.id("conv-"),
    };
    let outcome = if marked.fail {
        Outcome::Failed
    } else if marked.confirm {
        Outcome::AwaitingConfirmation(world.ids.id("act-"))
    } else {
        Outcome::Completed
    };
    world.ai.executions.push(Execution {
        id: id.clone(),
        polls: 0,
        answer: compose(&hits),
        question: marked.question,
        hits,
        outcome,
    });
    Reply::json(
        200,
        &json!({
            "conversationId": conversation_id,
            "executionId": id,
            "executionStatus": "IN_PROGRESS",
            "truncated": false,
            "actions": [],
        }),
    )
}

/// `GET /v1/ai/assistant/{executionId}/status`.
pub fn assistant_status(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let now = shared.now();
    // The spec's `includeCitations` is a boolean (default true).
    let citations_wanted = match req.query("includeCitations") {
        None | Some("true") => true,
        Some("false") => false,
        Some(other) => {
            return error(
                req.op,
                400,
                "INVALID_REQUEST",
                &format!("includeCitations must be true or false, not {other:?}"),
            );
        }
    };
    let mut world = shared.world();
    let Some(execution) = world
        .ai
        .executions
        .iter_mut()
        .find(|e| e.id == req.param("executionId"))
    else {
        return error(req.op, 404, "EXECUTION_NOT_FOUND", "no such execution");
    };
    execution.polls = execution.polls.saturating_add(1);
    let thought = format!("Searching the documents for \"{}\".", execution.question);
    if execution.polls <= shared.config.ai.assistant_polls {
        return Reply::json(
            200,
            &json!({
                "status": "IN_PROGRESS",
                "thoughts": [thought],
                "lastUpdated": now,
                "numToolCalls": 0,
                "pendingActions": [],
                "toolCalls": {},
            }),
        );
    }
    match &execution.outcome {
        Outcome::Completed => {}
        Outcome::Failed => {
            return Reply::json(
                200,
                &json!({
                    "status": "FAILED",
                    "responseText": ASSISTANT_FAILURE,
                    "thoughts": [thought],
                    "intent": "QUESTION_ANSWERING",
                    "lastUpdated": now,
                    "numToolCalls": 0,
                    "pendingActions": [],
                    "toolCalls": {},
                }),
            );
        }
        Outcome::AwaitingConfirmation(action_id) => {
            let description = format!(
                "Search every document of the domain for \"{}\" (needs the user's confirmation).",
                execution.question.trim()
            );
            return Reply::json(
                200,
                &json!({
                    "status": "AWAITING_USER_CONFIRMATION",
                    "thoughts": [thought],
                    "intent": "QUESTION_ANSWERING",
                    "lastUpdated": now,
                    "numToolCalls": 0,
                    "pendingActions": [{
                        "actionId": action_id,
                        "type": "TOOL_CALL_CONFIRMATION",
                        "description": description,
                    }],
                    "toolCalls": {},
                }),
            );
        }
    }
    let citations: Vec<Value> = execution
        .hits
        .iter()
        .map(|h| {
            json!({
                "filename": h.doc.name(),
                "entryId": h.doc.entry_id,
                "objectId": h.doc.object_id,
                "previewUrl": h.preview_url(),
                "chunks": [{ "chunkId": h.chunk_id(), "sourceText": h.text() }],
            })
        })
        .collect();
    let output = format!(
        "{} matching passages in {}",
        execution.hits.len(),
        execution
            .hits
            .iter()
            .map(|h| h.doc.name().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut status = json!({
        "status": "COMPLETED",
        "responseText": execution.answer,
        "thoughts": [thought],
        "intent": "QUESTION_ANSWERING",
        "lastUpdated": now,
        "numToolCalls": 1,
        "pendingActions": [],
        "toolCalls": {
            "call-1": {
                "name": "hybrid_search",
                "sourceDisplayName": "Content Platform",
                "toolDisplayName": "Search documents",
                "thought": "Find the passages that answer the question.",
                "input": { "query": execution.question },
                "output": output,
                "status": "SUCCESS",
                "timestamp": iso_millis(now),
            }
        },
    });
    if citations_wanted {
        status["citations"] = json!(citations);
    }
    Reply::json(200, &status)
}
