//! Agents (`/v1/ai/agents/...`): the list of the built-in agents, questions and their
//! status polls.
//!
//! Statuses follow the platform's clients: the first status poll answers `PENDING`, the next
//! ones `RUNNING`, [`AiConfig::agent_polls`] polls in all; the poll after them answers
//! `COMPLETED` with `responseText` and `citations`, or `FAILED` when the question contains
//! [`FAIL_MARKER`] (`[fail]`, any letter case). A failed request carries its failure text in
//! `responseText` (the only text field the reference gives the agent status; no error field
//! is invented) and empty `citations`. Final statuses stay as they are on later polls.
//!
//! A question is at most as long as the spec's `maxLength` of `AgentAskRequest.question`
//! (reference 8: 35,000 characters), read from the spec.
//!
//! [`AiConfig::agent_polls`]: crate::AiConfig::agent_polls
//! [`FAIL_MARKER`]: super::FAIL_MARKER

use super::answers::{compose, documents_in, rank};
use super::body::{markers, question};
use super::date_ms;
use crate::Shared;
use crate::auth::Caller;
use crate::dates::iso_seconds;
use crate::facts;
use crate::http::{ApiRequest, Reply, error};
use serde_json::{Value, json};

const AGENT_FAILURE: &str = "The agent could not complete the request.";

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
    let (question, _) = match question(req, facts::max_length("AgentAskRequest", "question")) {
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
