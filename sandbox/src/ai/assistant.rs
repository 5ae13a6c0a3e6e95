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

use super::answers::{Hit, best_hits, citations, compose, question_and_selection};
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
    let hits = best_hits(&asked.docs, &marked.question);
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
                &format!(
                    "includeCitations must be true or false, not {}",
                    crate::fs::shown(other)
                ),
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
    let in_progress = execution.polls <= shared.config.ai.assistant_polls;
    Reply::json(200, &execution.status(now, in_progress, citations_wanted))
}

impl Execution {
    /// The answer to a status poll at `now`.
    fn status(&self, now: i64, in_progress: bool, citations_wanted: bool) -> Value {
        let thought = format!("Searching the documents for \"{}\".", self.question);
        if in_progress {
            return status_body("IN_PROGRESS", &thought, now, json!({}));
        }
        let (status, fields) = match &self.outcome {
            Outcome::Completed => ("COMPLETED", self.completed(now, citations_wanted)),
            Outcome::Failed => (
                "FAILED",
                json!({
                    "responseText": ASSISTANT_FAILURE,
                    "intent": "QUESTION_ANSWERING",
                }),
            ),
            Outcome::AwaitingConfirmation(action_id) => (
                "AWAITING_USER_CONFIRMATION",
                json!({
                    "intent": "QUESTION_ANSWERING",
                    "pendingActions": [{
                        "actionId": action_id,
                        "type": "TOOL_CALL_CONFIRMATION",
                        "description": format!(
                            "Search every document of the domain for \"{}\" (needs the user's confirmation).",
                            self.question.trim()
                        ),
                    }],
                }),
            ),
        };
        status_body(status, &thought, now, fields)
    }

    /// The fields of a completed execution's status: its answer, its one tool call and,
    /// when wanted, its citations.
    fn completed(&self, now: i64, citations_wanted: bool) -> Value {
        let names: Vec<&str> = self.hits.iter().map(|h| h.doc.name()).collect();
        let output = format!(
            "{} matching passages in {}",
            self.hits.len(),
            names.join(", ")
        );
        let mut fields = json!({
            "responseText": self.answer,
            "intent": "QUESTION_ANSWERING",
            "numToolCalls": 1,
            "toolCalls": {
                "call-1": {
                    "name": "hybrid_search",
                    "sourceDisplayName": "Content Platform",
                    "toolDisplayName": "Search documents",
                    "thought": "Find the passages that answer the question.",
                    "input": { "query": self.question },
                    "output": output,
                    "status": "SUCCESS",
                    "timestamp": iso_millis(now),
                }
            },
        });
        if citations_wanted {
            fields["citations"] = citations(&self.hits, "sourceText");
        }
        fields
    }
}

/// A status poll's answer: `status`, the fields every answer has (no tool calls or pending
/// actions), and `fields` over them.
fn status_body(status: &str, thought: &str, now: i64, fields: Value) -> Value {
    let mut body = json!({
        "status": status,
        "thoughts": [thought],
        "lastUpdated": now,
        "numToolCalls": 0,
        "pendingActions": [],
        "toolCalls": {},
    });
    if let (Some(body), Value::Object(fields)) = (body.as_object_mut(), fields) {
        body.extend(fields);
    }
    body
}
