//! The AI endpoints: agents, document Q&A and summaries, the assistant, the deprecated
//! copilot, knowledge bases and hybrid search, all answering deterministically from the
//! documents of the sandbox's file system (the built-in corpus plus files created with
//! content).
//!
//! # Agent requests
//!
//! Statuses follow the platform's clients: the first status poll answers `PENDING`, the next
//! ones `RUNNING`, [`AiConfig::agent_polls`] polls in all; the poll after them answers
//! `COMPLETED` with `responseText` and `citations`, or `FAILED` when the question contains
//! [`FAIL_MARKER`] (`[fail]`, any letter case). A failed request carries its failure text in
//! `responseText` (the only text field the reference gives the agent status; no error field
//! is invented) and empty `citations`. Final statuses stay as they are on later polls.
//!
//! # Assistant executions
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
//! # The copilot
//!
//! `POST /v1/ai/copilot/ask` answers synchronously with `Deprecation`, `Sunset` and `Link`
//! until its removal date in the spec (`x-pubapi-sunset`: 30 September 2026, 00:00 UTC) on
//! the sandbox clock. From then on the router answers it as removed before it gets here:
//! 410 Gone in the AI error format, `errorCode` `ENDPOINT_REMOVED`, a message naming the
//! successor (`x-pubapi-successor`: `POST /v1/ai/assistant/ask`), and the same three
//! headers. The spec documents no 410 for `askCopilot`, so the conformance check reports
//! these exchanges. A manual clock ([`ClockConfig::manual`]) starts before the sunset; a
//! real-time clock starts at the wall-clock time, which is past it.
//!
//! # Knowledge bases and hybrid search
//!
//! Where the reference leaves fields open, these follow the platform's clients: the
//! knowledge-base list pages by `page` (default 0) and `size` (default 200) and filters by
//! `createdAfter`/`createdBefore` in epoch milliseconds (or dates) and `createdBy` as a user
//! id (or username); ask-KB citations carry `objectId`, `previewUrl` and
//! `chunks[].sourceText`; hybrid search applies the clients' filters and `limit` (see
//! [`hybrid_search`]). Where the reference shows a shape it wins: ask-document and copilot
//! chunks carry `text`, and the reference's `text` stays beside `chunkText` in hybrid search.
//!
//! [`AiConfig::agent_polls`]: super::AiConfig::agent_polls
//! [`AiConfig::assistant_polls`]: super::AiConfig::assistant_polls
//! [`ClockConfig::manual`]: super::ClockConfig::manual

use super::Shared;
use super::auth::Caller;
use super::corpus::first_sentence;
use super::dates::{
    DAY_MS, days_from_civil, iso_millis, iso_seconds, parse_plain_date, parse_request_date,
};
use super::fs::{FsEntry, is_within};
use super::http::{ApiRequest, Reply, deprecation_headers, error};
use super::search;
use pubapi_sdk::operations::id;
use serde_json::{Map, Value, json};

/// Longest agent question (reference 8).
pub const MAX_QUESTION: usize = 35_000;

/// A question containing this (any letter case) makes an agent request or an assistant
/// execution end `FAILED`.
pub const FAIL_MARKER: &str = "[fail]";

/// A question containing this (any letter case, and not [`FAIL_MARKER`]) makes an
/// assistant execution end `AWAITING_USER_CONFIRMATION` with a pending action.
pub const CONFIRM_MARKER: &str = "[confirm]";

const AGENT_FAILURE: &str = "The agent could not complete the request.";

const ASSISTANT_FAILURE: &str = "The assistant could not complete the request.";

const NO_ANSWER: &str = "I could not find an answer to that in the documents available to me.";

/// The markers found in a question, and the question without them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Markers {
    fail: bool,
    confirm: bool,
    question: String,
}

fn markers(question: &str) -> Markers {
    let mut text = question.to_string();
    let mut strip = |marker: &str| -> bool {
        let mut found = false;
        // ASCII lower-casing keeps byte offsets, so positions in `lower` are valid in `text`.
        while let Some(at) = text.to_ascii_lowercase().find(marker) {
            text.replace_range(at..at + marker.len(), "");
            found = true;
        }
        found
    };
    let fail = strip(FAIL_MARKER);
    let confirm = strip(CONFIRM_MARKER);
    Markers {
        fail,
        confirm,
        question: text,
    }
}

struct AgentDef {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    instruction: &'static str,
    folder: &'static str,
    created: (i64, u32, u32),
}

const AGENTS: &[AgentDef] = &[
    AgentDef {
        id: "agt-policy-helper",
        name: "Policy Helper",
        description: "Answers questions about company policies.",
        instruction: "Answer from the documents in /Company and cite them.",
        folder: "/Company",
        created: (2024, 5, 2),
    },
    AgentDef {
        id: "agt-engineering",
        name: "Engineering Assistant",
        description: "Knows the runbooks and integration guides of engineering.",
        instruction: "Answer from the documents in /Engineering.",
        folder: "/Engineering",
        created: (2024, 8, 19),
    },
    AgentDef {
        id: "agt-finance",
        name: "Finance Analyst",
        description: "Summarises financial reports.",
        instruction: "Answer from the documents in /Finance with exact figures.",
        folder: "/Finance",
        created: (2024, 11, 30),
    },
];

struct KbDef {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    folders: &'static [&'static str],
    status: &'static str,
    sub_status: &'static str,
    created: (i64, u32, u32),
}

const KNOWLEDGE_BASES: &[KbDef] = &[
    KbDef {
        id: "kb-company-policies",
        name: "Company policies",
        description: "Security, travel and retention policies.",
        folders: &["/Company/Policies"],
        status: "ACTIVE",
        sub_status: "READY",
        created: (2024, 9, 1),
    },
    KbDef {
        id: "kb-engineering",
        name: "Engineering handbook",
        description: "Runbooks and integration guides.",
        folders: &["/Engineering"],
        status: "ACTIVE",
        sub_status: "READY",
        created: (2024, 10, 5),
    },
    KbDef {
        id: "kb-finance",
        name: "Finance reports",
        description: "Quarterly reports.",
        folders: &["/Finance"],
        status: "CREATED",
        sub_status: "PROCESSING",
        created: (2025, 1, 15),
    },
    KbDef {
        id: "kb-old-archive",
        name: "Old archive",
        description: "Retired content.",
        folders: &["/Archive"],
        status: "DELETED",
        sub_status: "DELETED",
        created: (2023, 3, 10),
    },
];

fn date_ms((y, m, d): (i64, u32, u32)) -> i64 {
    days_from_civil(y, m, d) * DAY_MS + 9 * 3_600_000
}

/// An agent question being answered.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    agent_id: String,
    request_id: String,
    polls: u32,
    fail: bool,
    answer: String,
    citations: Vec<Value>,
}

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

/// Agent requests and assistant executions.
#[derive(Debug, Default)]
pub struct AiState {
    requests: Vec<AgentRequest>,
    executions: Vec<Execution>,
}

/// A matching chunk of a document.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The document.
    pub doc: FsEntry,
    /// Index of the chunk.
    pub chunk: usize,
    /// Blended score.
    pub score: f64,
}

impl Hit {
    fn chunk_id(&self) -> String {
        format!("{}-{}", self.doc.entry_id, self.chunk)
    }

    fn text(&self) -> &str {
        &self.doc.chunks[self.chunk]
    }

    fn preview_url(&self) -> String {
        format!("/preview/{}", self.doc.object_id)
    }
}

/// Every matching chunk of `docs` for `query`, best first.
pub fn rank(docs: &[FsEntry], query: &str, semantic_weight: f64) -> Vec<Hit> {
    let passages: Vec<(usize, usize, &str)> = docs
        .iter()
        .enumerate()
        .flat_map(|(d, doc)| {
            doc.chunks
                .iter()
                .enumerate()
                .map(move |(c, text)| (d, c, text.as_str()))
        })
        .collect();
    let texts: Vec<&str> = passages.iter().map(|(_, _, t)| *t).collect();
    let mut hits: Vec<Hit> = search::score(query, &texts, semantic_weight)
        .into_iter()
        .filter(|s| s.matches)
        .map(|s| {
            let (d, c, _) = passages[s.index];
            Hit {
                doc: docs[d].clone(),
                chunk: c,
                score: s.score,
            }
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.doc.path.cmp(&b.doc.path))
            .then(a.chunk.cmp(&b.chunk))
    });
    hits
}

/// An answer composed from the best hit (and the hits it cites).
fn compose(hits: &[Hit]) -> String {
    match hits.first() {
        None => NO_ANSWER.to_string(),
        Some(best) => format!("{} (source: {})", best.text(), best.doc.name()),
    }
}

fn documents_in(shared: &Shared, folders: &[&str]) -> Vec<FsEntry> {
    shared
        .world()
        .fs
        .documents()
        .filter(|d| folders.is_empty() || folders.iter().any(|f| is_within(&d.path, f)))
        .cloned()
        .collect()
}

/// The `question` of an AI request body, or the documented 400.
fn question(req: &ApiRequest, max: Option<usize>) -> Result<(String, Map<String, Value>), Reply> {
    let body = object_body(req, "the body must be a JSON object")?;
    let question = match body.get("question") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
        Some(Value::String(_)) | None => {
            return Err(error(
                req.op,
                400,
                "QUESTION_MANDATORY",
                "question is mandatory",
            ));
        }
        Some(_) => {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                "question must be a string",
            ));
        }
    };
    if let Some(max) = max
        && question.chars().count() > max
    {
        return Err(error(
            req.op,
            400,
            "QUESTION_TOO_LONG",
            &format!("the question is longer than {max} characters"),
        ));
    }
    // The reference shows `chatHistory` and `includeCitations` for documents, the assistant
    // and knowledge bases; an agent question's other fields are "not shown": the sandbox
    // checks the ones the spec declares (those the platform's clients send) and takes any
    // other as it comes.
    if req.op.id == id::ASK_AGENT {
        check_agent_fields(req, &body)?;
    } else {
        check_common(req, &body)?;
    }
    check_declared_types(req, &body)?;
    Ok((question, body))
}

/// The request body as a JSON object, or the 400 saying why not (`not_an_object` when it is
/// absent or another JSON value, the parser's message when it is not JSON).
fn object_body(req: &ApiRequest, not_an_object: &str) -> Result<Map<String, Value>, Reply> {
    match req.json() {
        Ok(Some(Value::Object(map))) => Ok(map),
        Ok(_) => Err(error(req.op, 400, "INVALID_REQUEST", not_an_object)),
        Err(message) => Err(error(req.op, 400, "INVALID_REQUEST", &message)),
    }
}

/// The optional request fields the spec types, by operation: each must have its type when
/// present (`selectedItems` is checked where it is read, `chatHistory` by [`check_common`]).
fn check_declared_types(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    let (strings, objects): (&[&str], &[&str]) = match req.op.id {
        id::ASK_AGENT => (&["instructions", "conversationId"], &[]),
        id::ASK_ASSISTANT => (&["conversationId", "mcpSelectionId"], &["modelDetails"]),
        _ => (&[], &[]),
    };
    for name in strings {
        if body.get(*name).is_some_and(|v| !v.is_string()) {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                &format!("{name} must be a string"),
            ));
        }
    }
    for name in objects {
        if body.get(*name).is_some_and(|v| !v.is_object()) {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                &format!("{name} must be an object"),
            ));
        }
    }
    Ok(())
}

/// An agent question's `entryIds` (strings) and `selectedItems` (the shape of reference 2.4),
/// when present.
fn check_agent_fields(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    let entry_ids_ok = body
        .get("entryIds")
        .is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)));
    if !entry_ids_ok {
        return Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            "entryIds must be an array of strings",
        ));
    }
    selected_ids(body)
        .map(|_| ())
        .map_err(|message| error(req.op, 400, "INVALID_REQUEST", &message))
}

/// `chatHistory` and `includeCitations`, when present, must have their documented shapes.
/// The reference leaves the shape of a message open; the platform's clients send objects
/// (`{role, content}`), so a message that is not an object is refused, its fields are not
/// checked.
fn check_common(req: &ApiRequest, body: &Map<String, Value>) -> Result<(), Reply> {
    if let Some(history) = body.get("chatHistory") {
        let ok = history.as_object().is_some_and(|h| {
            h.get("messages")
                .is_none_or(|m| m.as_array().is_some_and(|a| a.iter().all(Value::is_object)))
        });
        if !ok {
            return Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                "chatHistory must be an object with a `messages` array of objects",
            ));
        }
    }
    if body
        .get("includeCitations")
        .is_some_and(|v| !v.is_boolean())
    {
        return Err(error(
            req.op,
            400,
            "INVALID_REQUEST",
            "includeCitations must be a boolean",
        ));
    }
    Ok(())
}

fn include_citations(body: &Map<String, Value>) -> bool {
    body.get("includeCitations")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn agents_enabled(shared: &Shared, req: &ApiRequest) -> Option<Reply> {
    (!shared.config.ai.agents_enabled).then(|| {
        error(
            req.op,
            403,
            "AGENTS_NOT_ENABLED",
            "the agents feature is not enabled for this domain",
        )
    })
}

/// `GET /v1/ai/agents/list`.
pub fn list_agents(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    if let Some(refused) = agents_enabled(shared, req) {
        return refused;
    }
    let sort_by = req.query("sortBy").unwrap_or("name");
    let order = req.query("sortOrder").unwrap_or("asc");
    if !["name", "createdOn"].contains(&sort_by) || !["asc", "desc"].contains(&order) {
        return error(
            req.op,
            400,
            "INVALID_PARAMETER",
            "sortBy is `name` or `createdOn`, sortOrder is `asc` or `desc`",
        );
    }
    let admin = shared
        .world()
        .users
        .admin()
        .map(|(u, _)| u.display_name.clone())
        .unwrap_or_default();
    let mut agents: Vec<&AgentDef> = AGENTS.iter().collect();
    if sort_by == "name" {
        agents.sort_by_key(|a| a.name);
    } else {
        agents.sort_by_key(|a| date_ms(a.created));
    }
    if order == "desc" {
        agents.reverse();
    }
    let list: Vec<Value> = agents
        .iter()
        .map(|a| {
            json!({
                "agentId": a.id,
                "name": a.name,
                "description": a.description,
                "status": "ACTIVE",
                "subType": "USER_DEFINED",
                "category": "GENERIC",
                "instruction": a.instruction,
                "createdBy": admin,
            })
        })
        .collect();
    Reply::json(200, &Value::Array(list))
}

fn agent<'a>(req: &ApiRequest) -> Result<&'a AgentDef, Reply> {
    let id = req.param("agentId");
    AGENTS
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| error(req.op, 404, "AGENT_NOT_FOUND", &format!("no agent {id}")))
}

/// `POST /v1/ai/agents/{agentId}/ask`.
pub fn ask_agent(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    if let Some(refused) = agents_enabled(shared, req) {
        return refused;
    }
    let agent = match agent(req) {
        Ok(agent) => agent,
        Err(reply) => return reply,
    };
    let (question, _) = match question(req, Some(MAX_QUESTION)) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let marked = markers(&question);
    let hits = rank(
        &documents_in(shared, &[agent.folder]),
        &marked.question,
        0.5,
    );
    let citations: Vec<Value> = hits
        .iter()
        .take(2)
        .map(|h| json!({ "previewUrl": h.preview_url(), "type": "FILE" }))
        .collect();
    let mut world = shared.world();
    let request_id = world.ids.id("req-");
    let conversation_id = world.ids.id("conv-");
    world.ai.requests.push(AgentRequest {
        agent_id: agent.id.to_string(),
        request_id: request_id.clone(),
        polls: 0,
        fail: marked.fail,
        answer: format!("{}: {}", agent.name, compose(&hits)),
        citations,
    });
    Reply::json(
        200,
        &json!({ "requestId": request_id, "conversationId": conversation_id }),
    )
}

/// `GET /v1/ai/agents/{agentId}/ask/{requestId}/status`.
pub fn agent_status(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    if let Some(refused) = agents_enabled(shared, req) {
        return refused;
    }
    if let Err(reply) = agent(req) {
        return reply;
    }
    let now = shared.now();
    let mut world = shared.world();
    let Some(request) = world
        .ai
        .requests
        .iter_mut()
        .find(|r| r.request_id == req.param("requestId") && r.agent_id == req.param("agentId"))
    else {
        return error(
            req.op,
            404,
            "REQUEST_NOT_FOUND",
            "no such request for this agent",
        );
    };
    request.polls = request.polls.saturating_add(1);
    let updated = iso_seconds(now);
    if request.polls <= shared.config.ai.agent_polls {
        let status = if request.polls == 1 {
            "PENDING"
        } else {
            "RUNNING"
        };
        return Reply::json(200, &json!({ "status": status, "lastUpdated": updated }));
    }
    if request.fail {
        return Reply::json(
            200,
            &json!({
                "status": "FAILED",
                "responseText": AGENT_FAILURE,
                "citations": [],
                "lastUpdated": updated,
            }),
        );
    }
    Reply::json(
        200,
        &json!({
            "status": "COMPLETED",
            "responseText": request.answer,
            "citations": request.citations,
            "lastUpdated": updated,
        }),
    )
}

fn document(shared: &Shared, req: &ApiRequest) -> Result<FsEntry, Reply> {
    let id = req.param("entry-id");
    shared
        .world()
        .fs
        .by_entry_id(id)
        .filter(|d| !d.chunks.is_empty())
        .cloned()
        .ok_or_else(|| {
            error(
                req.op,
                404,
                "DOCUMENT_NOT_FOUND",
                &format!("no document version {id}"),
            )
        })
}

/// The citations of the best three hits, one per document with its chunks.
///
/// Ask-document citations are the reference's `{filename, entryId, chunks: [{chunkId,
/// text}]}` (2.3). Ask-KB citations (the reference does not show that response) are the
/// platform clients' `{filename, entryId, objectId, previewUrl, chunks: [{chunkId,
/// sourceText}]}`, the shape the reference gives the assistant's citations (2.4).
fn grouped_citations(hits: &[Hit], style: CitationStyle) -> Vec<Value> {
    let mut citations: Vec<Value> = Vec::new();
    for hit in hits.iter().take(3) {
        let chunk = match style {
            CitationStyle::Document => json!({ "chunkId": hit.chunk_id(), "text": hit.text() }),
            CitationStyle::SourceText => {
                json!({ "chunkId": hit.chunk_id(), "sourceText": hit.text() })
            }
        };
        match citations
            .iter_mut()
            .find(|c| c["entryId"] == hit.doc.entry_id.as_str())
        {
            Some(c) => c["chunks"]
                .as_array_mut()
                .into_iter()
                .for_each(|a| a.push(chunk.clone())),
            None => citations.push(match style {
                CitationStyle::Document => json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "chunks": [chunk],
                }),
                CitationStyle::SourceText => json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "objectId": hit.doc.object_id,
                    "previewUrl": hit.preview_url(),
                    "chunks": [chunk],
                }),
            }),
        }
    }
    citations
}

/// Which citation shape an answer carries (see [`grouped_citations`]).
#[derive(Debug, Clone, Copy)]
enum CitationStyle {
    /// Ask-document (reference 2.3): chunks carry `text`.
    Document,
    /// Ask-KB (the platform's clients): `objectId`, `previewUrl`, chunks carry `sourceText`.
    SourceText,
}

/// `POST /v1/ai/document/{entry-id}/ask`.
pub fn ask_document(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let doc = match document(shared, req) {
        Ok(doc) => doc,
        Err(reply) => return reply,
    };
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let hits = rank(std::slice::from_ref(&doc), &question, 0.5);
    let mut answer = json!({ "response": { "text": compose(&hits) } });
    if include_citations(&body) {
        answer["citations"] = json!(grouped_citations(&hits, CitationStyle::Document));
    }
    Reply::json(200, &answer)
}

/// `POST /v1/ai/document/{entry-id}/summary`.
pub fn summarize_document(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let doc = match document(shared, req) {
        Ok(doc) => doc,
        Err(reply) => return reply,
    };
    match req.json() {
        Ok(None) => {}
        Ok(Some(Value::Object(body))) => {
            if let Err(reply) = check_common(req, &body) {
                return reply;
            }
        }
        Ok(Some(_)) => {
            return error(
                req.op,
                400,
                "INVALID_REQUEST",
                "the body must be a JSON object",
            );
        }
        Err(message) => return error(req.op, 400, "INVALID_REQUEST", &message),
    }
    let summary: Vec<&str> = doc
        .chunks
        .iter()
        .take(3)
        .map(|c| first_sentence(c))
        .collect();
    Reply::json(
        200,
        &json!({ "response": { "text": format!("{}: {}", doc.name(), summary.join(" ")) } }),
    )
}

/// File entry ids and folder ids.
type SelectedIds = (Vec<String>, Vec<String>);

/// The file entry ids and folder ids of `selectedItems` (reference 2.4: `folders` of
/// `{id string}`, `files` of `{entryId string}`), `None` when absent.
fn selected_ids(body: &Map<String, Value>) -> Result<Option<SelectedIds>, String> {
    let Some(selected) = body.get("selectedItems") else {
        return Ok(None);
    };
    let ids = |name: &str, key: &str| -> Result<Vec<String>, String> {
        match selected.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.get(key)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| format!("selectedItems.{name}[] needs a string `{key}`"))
                })
                .collect(),
            Some(_) => Err(format!("selectedItems.{name} must be an array")),
        }
    };
    if !selected.is_object() {
        return Err("selectedItems must be an object".into());
    }
    Ok(Some((ids("files", "entryId")?, ids("folders", "id")?)))
}

fn selected_documents(shared: &Shared, body: &Map<String, Value>) -> Result<Vec<FsEntry>, String> {
    let Some((files, folders)) = selected_ids(body)? else {
        return Ok(documents_in(shared, &[]));
    };
    let world = shared.world();
    let folder_paths: Vec<String> = world
        .fs
        .entries()
        .filter(|e| e.is_folder && folders.contains(&e.group_id))
        .map(|e| e.path.clone())
        .collect();
    Ok(world
        .fs
        .documents()
        .filter(|d| {
            files.contains(&d.entry_id) || folder_paths.iter().any(|f| is_within(&d.path, f))
        })
        .cloned()
        .collect())
}

/// `POST /v1/ai/assistant/ask`.
pub fn ask_assistant(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let docs = match selected_documents(shared, &body) {
        Ok(docs) => docs,
        Err(message) => return error(req.op, 400, "INVALID_REQUEST", &message),
    };
    let marked = markers(&question);
    let hits: Vec<Hit> = rank(&docs, &marked.question, 0.5)
        .into_iter()
        .take(3)
        .collect();
    let mut world = shared.world();
    let id = world.ids.id("exec-");
    let conversation_id = match body.get("conversationId").and_then(Value::as_str) {
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

/// `POST /v1/ai/copilot/ask` (deprecated; answers synchronously with its deprecation
/// headers; after its sunset the router answers 410 instead).
pub fn ask_copilot(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let docs = match selected_documents(shared, &body) {
        Ok(docs) => docs,
        Err(message) => return error(req.op, 400, "INVALID_REQUEST", &message),
    };
    let hits: Vec<Hit> = rank(&docs, &question, 0.5).into_iter().take(3).collect();
    let conversation_id = shared.world().ids.id("conv-");
    let mut answer = json!({
        "response": { "text": compose(&hits) },
        "conversationId": conversation_id,
        "deprecationNotice": "This endpoint is deprecated and is removed on 30 September 2026; use POST /v1/ai/assistant/ask.",
    });
    if include_citations(&body) {
        let citations: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "filename": h.doc.name(),
                    "entryId": h.doc.entry_id,
                    "objectId": h.doc.object_id,
                    "previewUrl": h.preview_url(),
                    "chunks": [{ "chunkId": h.chunk_id(), "text": h.text() }],
                })
            })
            .collect();
        answer["citations"] = json!(citations);
    }
    deprecation_headers(req.op, Reply::json(200, &answer))
}

/// The knowledge-base page size when the request names none (the platform's clients: 200).
const KB_PAGE_SIZE: usize = 200;

/// The hybrid-search `limit` when the request names none, and its bounds (the platform's
/// clients: 1 to 1,000, default 100; the reference shows no bounds).
const SEARCH_LIMIT: (usize, usize, usize) = (100, 1, 1_000);

/// A non-negative integer field of at least `min`, `default` when absent.
fn count_field(
    body: &Map<String, Value>,
    name: &str,
    default: usize,
    min: u64,
) -> Result<usize, String> {
    match body.get(name) {
        None => Ok(default),
        // The spec bounds the paging integers by 2^63-1 (64-bit).
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= min && i64::try_from(*n).is_ok())
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| format!("{name} must be an integer from {min} to 9223372036854775807")),
    }
}

/// A time filter (`createdAfter`, `createdBefore`) as epoch milliseconds.
///
/// - Knowledge-base list (`nullable == false`): the spec types the filter `string` and its
///   format is not shown, so any string is taken; a string of digits (epoch milliseconds)
///   or a request date (`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ`) filters, other text filters
///   nothing. The platform's clients send a JSON integer, which is read too (a client
///   tolerance of the conformance check).
/// - Hybrid search (`nullable == true`): the spec types the filter as an int64 integer;
///   `null` is no filter (the platform's clients send it for "no filter").
///
/// Any other JSON type is refused, never ignored.
fn epoch_filter(
    body: &Map<String, Value>,
    name: &str,
    nullable: bool,
) -> Result<Option<i64>, String> {
    let refused = || {
        if nullable {
            format!("{name} must be epoch milliseconds (an integer)")
        } else {
            format!("{name} must be a string (epoch milliseconds or a date YYYY-MM-DD)")
        }
    };
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) if nullable => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(refused),
        Some(Value::String(s)) if !nullable => Ok(if s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            parse_request_date(s).map(|d| d.ms)
        }),
        Some(_) => Err(refused()),
    }
}

/// A `createdBy` filter: an integer user id (what the platform's clients send), a username
/// or a user id as a string (`null` is no filter when `nullable`). `Ok(None)`: no filter; `Ok(Some(None))`:
/// a username no user has, which matches nothing.
fn creator_filter(
    shared: &Shared,
    body: &Map<String, Value>,
    nullable: bool,
) -> Result<Option<Option<i64>>, String> {
    match body.get("createdBy") {
        None => Ok(None),
        Some(Value::Null) if nullable => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(|id| Some(Some(id)))
            .ok_or_else(|| "createdBy must be an integer user id or a username".into()),
        // Hybrid search (`nullable`): the spec types it an int64 user id.
        Some(Value::String(_)) if nullable => Err("createdBy must be an integer user id".into()),
        Some(Value::String(name)) => Ok(Some(
            shared
                .world()
                .users
                .by_username(name)
                .map(|u| u.id)
                .or_else(|| name.parse().ok()),
        )),
        Some(_) => Err("createdBy must be an integer user id or a username".into()),
    }
}

fn kb_json(shared: &Shared, kb: &KbDef, body: &Map<String, Value>) -> Value {
    let world = shared.world();
    let (admin_name, admin_id, admin_display) = world
        .users
        .admin()
        .map(|(u, _)| (u.username.clone(), u.id, u.display_name.clone()))
        .unwrap_or_default();
    let (first, last) = admin_display
        .split_once(' ')
        .map(|(f, l)| (f.to_string(), l.to_string()))
        .unwrap_or((admin_display.clone(), String::new()));
    let paths: Vec<Value> = kb
        .folders
        .iter()
        .map(|f| {
            let folder_id = world
                .fs
                .get(f)
                .map(|e| e.group_id.clone())
                .unwrap_or_default();
            json!({
                "id": format!("{}-path-{}", kb.id, folder_id),
                "folderId": folder_id,
                "path": f,
                "permission": "VIEW",
                "status": kb.status,
            })
        })
        .collect();
    let mut value = json!({
        "id": kb.id,
        "name": kb.name,
        "description": kb.description,
        "paths": paths,
        "status": kb.status,
        "type": "STANDARD",
        "createdBy": admin_name,
        "createdByUser": {
            "firstName": first,
            "lastName": last,
            "userName": admin_name,
            "userId": admin_id,
            "avatarEosObjectId": "",
        },
        "createdOn": date_ms(kb.created),
        "noResponseMessage": NO_ANSWER,
        "iconName": "book",
        "subType": "DEFAULT",
        "pathCount": kb.folders.len(),
        "subStatus": kb.sub_status,
    });
    if body.get("includeProcessingStatistics") == Some(&Value::Bool(true)) {
        value["progress"] = json!(if kb.status == "CREATED" { 40 } else { 100 });
        value["lastProcessedAt"] = json!(date_ms(kb.created) + DAY_MS);
    }
    if body.get("includePrompts") == Some(&Value::Bool(true)) {
        value["prompts"] = json!([format!("What is in the {}?", kb.name.to_lowercase())]);
    }
    value
}

/// `POST /v1/ai/kb/list`.
pub fn list_knowledge_bases(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let body = match object_body(req, "the body is required and must be a JSON object") {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let strings = |name: &str| -> Result<Option<Vec<String>>, Reply> {
        match body.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| {
                    error(
                        req.op,
                        400,
                        "INVALID_REQUEST",
                        &format!("{name} must be an array of strings"),
                    )
                }),
            Some(_) => Err(error(
                req.op,
                400,
                "INVALID_REQUEST",
                &format!("{name} must be an array of strings"),
            )),
        }
    };
    let (statuses, sort_by, directions) = match (
        strings("status"),
        strings("sortBy"),
        strings("sortDirection"),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    if let Some(bad) = statuses
        .iter()
        .flatten()
        .find(|s| !super::facts::values("KnowledgeBaseStatus").contains(&s.as_str()))
    {
        return error(
            req.op,
            400,
            "INVALID_REQUEST",
            &format!("unknown status {bad:?}"),
        );
    }
    if let Some(bad) = sort_by
        .iter()
        .flatten()
        .find(|s| !["name", "createdOn"].contains(&s.as_str()))
    {
        return error(
            req.op,
            400,
            "INVALID_REQUEST",
            &format!("unknown sortBy {bad:?}"),
        );
    }
    if let Some(name) = [
        "includePlaceholderData",
        "includeProcessingStatistics",
        "includePrompts",
    ]
    .into_iter()
    .find(|name| body.get(*name).is_some_and(|v| !v.is_boolean()))
    {
        return error(
            req.op,
            400,
            "INVALID_REQUEST",
            &format!("{name} must be a boolean"),
        );
    }
    let (after, before) = match (
        epoch_filter(&body, "createdAfter", false),
        epoch_filter(&body, "createdBefore", false),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => return error(req.op, 400, "INVALID_REQUEST", &m),
    };
    let created_by = match creator_filter(shared, &body, false) {
        Ok(c) => c,
        Err(m) => return error(req.op, 400, "INVALID_REQUEST", &m),
    };
    let (page, size) = match (
        count_field(&body, "page", 0, 0),
        count_field(&body, "size", KB_PAGE_SIZE, 1),
    ) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(m), _) | (_, Err(m)) => return error(req.op, 400, "INVALID_REQUEST", &m),
    };
    let admin_id = shared.world().users.admin().map(|(u, _)| u.id);
    let mut kbs: Vec<&KbDef> = KNOWLEDGE_BASES
        .iter()
        .filter(|kb| {
            statuses
                .as_ref()
                .is_none_or(|s| s.iter().any(|x| x == kb.status))
        })
        .filter(|kb| after.is_none_or(|a| date_ms(kb.created) >= a))
        .filter(|kb| before.is_none_or(|b| date_ms(kb.created) < b))
        // Every knowledge base of the sandbox was created by the first admin.
        .filter(|_| created_by.is_none_or(|c| c.is_some() && c == admin_id))
        .collect();
    let field = sort_by
        .as_ref()
        .and_then(|s| s.first().cloned())
        .unwrap_or_else(|| "name".into());
    if field == "createdOn" {
        kbs.sort_by_key(|kb| date_ms(kb.created));
    } else {
        kbs.sort_by_key(|kb| kb.name);
    }
    if directions
        .as_ref()
        .and_then(|d| d.first())
        .is_some_and(|d| d.eq_ignore_ascii_case("desc"))
    {
        kbs.reverse();
    }
    let total = kbs.len();
    let content: Vec<Value> = kbs
        .iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .map(|kb| kb_json(shared, kb, &body))
        .collect();
    let total_pages = total.div_ceil(size);
    Reply::json(
        200,
        &json!({
            "content": content,
            "number": page,
            "size": size,
            "first": page == 0,
            "last": page.saturating_add(1) >= total_pages,
            "empty": content.is_empty(),
            "numberOfElements": content.len(),
            "totalElements": total,
            "totalPages": total_pages,
            "fileLimit": shared.config.ai.kb_file_limit,
        }),
    )
}

/// `POST /v1/ai/kb/{kb-id}/ask`.
pub fn ask_knowledge_base(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let id = req.param("kb-id");
    let Some(kb) = KNOWLEDGE_BASES
        .iter()
        .find(|kb| kb.id == id && kb.status != "DELETED")
    else {
        return error(
            req.op,
            404,
            "KNOWLEDGE_BASE_NOT_FOUND",
            &format!("no knowledge base {id}"),
        );
    };
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let hits: Vec<Hit> = rank(&documents_in(shared, kb.folders), &question, 0.5)
        .into_iter()
        .take(3)
        .collect();
    let conversation_id = shared.world().ids.id("conv-");
    let mut answer = json!({
        "response": { "text": compose(&hits) },
        "knowledgeBaseId": kb.id,
        "conversationId": conversation_id,
    });
    if include_citations(&body) {
        answer["citations"] = json!(grouped_citations(&hits, CitationStyle::SourceText));
    }
    Reply::json(200, &answer)
}

/// Whether `null` stands for "no filter" in the hybrid-search field `name`: in the fields
/// the platform's clients add, yes; in the reference's own (typed in the spec, not
/// nullable) it is a value of the wrong type.
fn null_is_no_filter(name: &str) -> bool {
    !["folderPath", "fileTypes", "dateFrom", "dateTo"].contains(&name)
}

/// A list of strings, for the list filters; another JSON type is refused.
fn string_list(body: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, String> {
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) if null_is_no_filter(name) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| format!("{name} must be an array of strings")),
        Some(_) => Err(format!("{name} must be an array of strings")),
    }
}

/// The filters of a hybrid search. The reference names `folderPath`, `fileTypes`,
/// `dateFrom` and `dateTo`; the platform's clients also send `entryIds`, `folderPaths`,
/// `excludeFolderPaths`, `preferredFolderPath`, `createdAfter`/`createdBefore` (epoch
/// milliseconds), `createdBy` (an integer user id) and `collectionId`, and all of them are
/// applied.
///
/// - A list filter given as an empty array restricts nothing (clients send empty arrays
///   for "no filter"), and `null` is no filter in the clients' fields; a filter of another
///   JSON type is a 400.
/// - `preferredFolderPath` orders the results in that folder first and excludes nothing.
/// - `collectionId` (any JSON value but null; its type is not shown): the sandbox has no collections, so a
///   collection id matches no documents.
#[derive(Debug, Default)]
struct SearchFilters {
    folder: Option<String>,
    file_types: Option<Vec<String>>,
    modified: (Option<i64>, Option<i64>),
    entry_ids: Option<Vec<String>>,
    folders: Option<Vec<String>>,
    excluded: Vec<String>,
    preferred: Option<String>,
    created: (Option<i64>, Option<i64>),
    creator: Option<Option<i64>>,
    collection: bool,
}

impl SearchFilters {
    fn read(shared: &Shared, body: &Map<String, Value>) -> Result<Self, String> {
        let file_types = string_list(body, "fileTypes")?.map(|types| {
            types
                .iter()
                .map(|t| t.trim_start_matches('.').to_lowercase())
                .collect()
        });
        let date = |name: &str| -> Result<Option<i64>, String> {
            match body.get(name) {
                None => Ok(None),
                Some(v) => v
                    .as_str()
                    .and_then(parse_plain_date)
                    .map(Some)
                    .ok_or_else(|| format!("{name} must be a date YYYY-MM-DD")),
            }
        };
        let text = |name: &str| -> Result<Option<String>, String> {
            match body.get(name) {
                None => Ok(None),
                Some(Value::String(f)) => Ok(Some(f.clone())),
                Some(Value::Null) if null_is_no_filter(name) => Ok(None),
                Some(_) => Err(format!("{name} must be a string")),
            }
        };
        // The spec leaves its JSON type open (the clients send a string or an integer).
        let collection = !matches!(body.get("collectionId"), None | Some(Value::Null));
        let non_empty = |list: Option<Vec<String>>| list.filter(|l| !l.is_empty());
        Ok(SearchFilters {
            folder: text("folderPath")?,
            file_types,
            // `dateTo` is the last day included.
            modified: (date("dateFrom")?, date("dateTo")?.map(|t| t + DAY_MS)),
            entry_ids: non_empty(string_list(body, "entryIds")?),
            folders: non_empty(string_list(body, "folderPaths")?),
            excluded: string_list(body, "excludeFolderPaths")?.unwrap_or_default(),
            preferred: text("preferredFolderPath")?,
            created: (
                epoch_filter(body, "createdAfter", true)?,
                epoch_filter(body, "createdBefore", true)?,
            ),
            creator: creator_filter(shared, body, true)?,
            collection,
        })
    }

    /// Whether `doc` passes every filter; `admin` is the creator of the built-in corpus.
    fn pass(&self, doc: &FsEntry, admin: Option<i64>) -> bool {
        let within_any = |folders: &[String]| folders.iter().any(|f| is_within(&doc.path, f));
        let (from, to) = self.modified;
        let (after, before) = self.created;
        !self.collection
            && self.folder.as_ref().is_none_or(|f| is_within(&doc.path, f))
            && self
                .file_types
                .as_ref()
                .is_none_or(|types| types.contains(&doc.extension()))
            && from.is_none_or(|f| doc.modified_ms >= f)
            && to.is_none_or(|t| doc.modified_ms < t)
            && self
                .entry_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&doc.entry_id))
            && self.folders.as_deref().is_none_or(within_any)
            && !within_any(&self.excluded)
            && after.is_none_or(|a| doc.created_ms >= a)
            && before.is_none_or(|b| doc.created_ms < b)
            && self
                .creator
                .is_none_or(|c| c.is_some() && c == doc.created_by.or(admin))
    }

    fn preferred(&self, doc: &FsEntry) -> bool {
        self.preferred
            .as_ref()
            .is_some_and(|p| is_within(&doc.path, p))
    }
}

/// `POST /v1/hybrid-search`.
///
/// Results are documents, best first (those in `preferredFolderPath` before the others),
/// each with up to three matching chunks. At most `limit` results are found (1 to 1,000,
/// default 100, as the platform's clients send it); `page` and `size` page through them,
/// and without `size` the page is `limit` long, so a request with only `limit` gets all
/// its results on one page. Chunks carry the reference's `text` and the `chunkText` the
/// platform's clients read (plus `type`); results carry `groupId` and `uploadedTimestamp`
/// (epoch milliseconds of the current version) besides the reference's fields.
pub fn hybrid_search(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let body = match object_body(req, "the body must be a JSON object") {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let bad = |message: &str| error(req.op, 400, "INVALID_REQUEST", message);
    // The reference does not say which fields are required; the platform's clients send a
    // query of 3 to 250 characters, so an empty one is refused (the bounds are not enforced).
    let query = match body.get("query") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
        None | Some(Value::Null | Value::String(_)) => {
            return error(req.op, 400, "QUERY_MANDATORY", "query is mandatory");
        }
        Some(_) => return bad("query must be a string"),
    };
    // The range is the platform clients' (the reference does not show it).
    let weight = match body.get("semanticWeight") {
        None => 0.5,
        Some(v) => match v.as_f64() {
            Some(w) if (0.0..=1.0).contains(&w) => w,
            _ => return bad("semanticWeight must be a number from 0 to 1"),
        },
    };
    let (default_limit, min_limit, max_limit) = SEARCH_LIMIT;
    let limit = match count_field(&body, "limit", default_limit, min_limit as u64) {
        Ok(l) if l <= max_limit => l,
        _ => {
            return bad(&format!(
                "limit must be an integer from {min_limit} to {max_limit}"
            ));
        }
    };
    let (page, size) = match (
        count_field(&body, "page", 0, 0),
        count_field(&body, "size", limit, 1),
    ) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(m), _) | (_, Err(m)) => return bad(&m),
    };
    let filters = match SearchFilters::read(shared, &body) {
        Ok(f) => f,
        Err(m) => return bad(&m),
    };
    let admin = shared.world().users.admin().map(|(u, _)| u.id);
    let docs: Vec<FsEntry> = documents_in(shared, &[])
        .into_iter()
        .filter(|d| filters.pass(d, admin))
        .collect();
    let hits = rank(&docs, &query, weight);
    let mut results: Vec<(&FsEntry, Value)> = Vec::new();
    for hit in &hits {
        let chunk = json!({
            "chunkId": hit.chunk_id(),
            "score": round(hit.score),
            "text": hit.text(),
            "chunkText": hit.text(),
            "type": "TEXT",
        });
        match results
            .iter_mut()
            .find(|(d, _)| d.entry_id == hit.doc.entry_id)
        {
            Some((_, r)) => {
                if let Some(chunks) = r["chunks"].as_array_mut()
                    && chunks.len() < 3
                {
                    chunks.push(chunk);
                }
            }
            None => results.push((
                &hit.doc,
                json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "objectId": hit.doc.object_id,
                    "groupId": hit.doc.group_id,
                    "uploadedTimestamp": hit.doc.modified_ms,
                    "chunks": [chunk],
                }),
            )),
        }
    }
    // A stable sort: the preferred folder first, best first within each part.
    results.sort_by_key(|(d, _)| !filters.preferred(d));
    results.truncate(limit);
    let total = results.len();
    let total_pages = total.div_ceil(size);
    let page_results: Vec<Value> = results
        .into_iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .map(|(_, r)| r)
        .collect();
    Reply::json(
        200,
        &json!({
            "results": page_results,
            "totalElements": total,
            "totalPages": total_pages,
            "number": page,
            "size": size,
            "first": page == 0,
            "last": page.saturating_add(1) >= total_pages,
        }),
    )
}

fn round(score: f64) -> f64 {
    (score * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_in_any_case_and_left_out_of_the_question() {
        assert_eq!(
            markers("[FAIL] hotel [Confirm]costs"),
            Markers {
                fail: true,
                confirm: true,
                question: " hotel costs".into()
            }
        );
        assert_eq!(
            markers("plain [fail [confirm"),
            Markers {
                fail: false,
                confirm: false,
                question: "plain [fail [confirm".into()
            }
        );
        assert_eq!(markers("é[fail]é[fail]").question, "éé");
    }
}
