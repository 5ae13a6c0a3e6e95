//! Every status the sandbox answers an operation with is one the spec documents for it.
//!
//! The test walks every operation of the spec the SDK embeds (`pubapi_sdk::operations::ALL`)
//! and drives each with the inputs that reach its answers: no token, a token the operation
//! refuses (a user without the webhooks scope, without the reports role), a body or query
//! the spec refuses, unknown ids, a minimal valid request, and, for the copilot, a call
//! after its removal date. The conformance check then names every reply whose status the
//! spec does not document for its operation.
//!
//! Exceptions, answered by the server layer before any operation is matched and the same
//! for every path (covered by the server tests, not by the spec): 413 for a body over the
//! limit, 408 for a head or body that does not arrive in time, 431 for a head too large,
//! 503 past the connection cap. Throttles (403/429 with `Retry-After`) are documented on
//! every operation and checked by the limits tests; limits are off here so that every
//! other answer is reached.

use pubapi_sandbox::{LimitsConfig, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A value for each path parameter: unknown ids, and a report kind that exists.
fn fill(path: &str, id: &str) -> String {
    path.split('/')
        .map(|segment| match segment {
            "{type}" => "logins".to_string(),
            s if s.starts_with('{') => id.to_string(),
            s => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A minimal body the spec accepts for `operation_id` (`None` for operations without one).
fn valid_body(operation_id: &str, path: &str) -> Option<Value> {
    let question = json!({"question": "What is the travel policy?"});
    Some(match operation_id {
        "askAgent" | "askDocument" | "askAssistant" | "askCopilot" | "askKnowledgeBase" => question,
        "summarizeDocument" | "listKnowledgeBases" => json!({}),
        "hybridSearch" => json!({"query": "policy"}),
        "createWebhook" | "updateWebhook" => json!({"url": "https://hooks.example.com/in"}),
        "setWebhookStatus" => json!({"status": "disabled"}),
        id if id.ends_with("Audit") => {
            let mut body =
                json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02"});
            match path {
                "/v1/audit/logins" => body["events"] = json!(["logins"]),
                "/v1/audit/files" => body["folders"] = json!(["/Company"]),
                _ => {}
            }
            body
        }
        _ => return None,
    })
}

/// A query the spec refuses, for the operations that take one.
fn invalid_query(operation_id: &str) -> Option<&'static str> {
    match operation_id {
        "listEventsV1" | "listEventsV2" => Some("?id=x&count=0&type=sticker"),
        "getAssistantStatus" => Some("?includeCitations=maybe"),
        "getAuditReport" => Some("?offset=-1&count=x"),
        "listAgents" => Some("?sortBy=size&sortOrder=sideways"),
        _ => None,
    }
}

async fn drive_every_operation(sb: &Sandbox) {
    let raw = sb.raw();
    let admin = sb.admin_token();
    let nora = sb.token("nora").expect("the sandbox has nora");
    for op in pubapi_sdk::operations::ALL {
        let unknown = fill(op.path, "unknown-id");
        let body = valid_body(op.id, op.path);
        let with_body = |request: pubapi_sandbox::RawRequest, body: &Option<Value>| match body {
            Some(body) => request.json(body),
            None => request,
        };
        // No token, and a token the operation may refuse.
        with_body(raw.request(op.method, &unknown, None), &body)
            .send()
            .await;
        with_body(raw.request(op.method, &unknown, Some(&nora)), &body)
            .send()
            .await;
        // Unknown ids with a valid body, and the same with a body the spec refuses.
        with_body(raw.request(op.method, &unknown, Some(&admin)), &body)
            .send()
            .await;
        if body.is_some() {
            for wrong in [
                json!([]),
                json!({"question": 5, "url": 5, "status": 5, "format": 5}),
            ] {
                raw.request(op.method, &unknown, Some(&admin))
                    .json(&wrong)
                    .send()
                    .await;
            }
            raw.request(op.method, &unknown, Some(&admin))
                .header("content-type", "application/json")
                .body("{not json")
                .send()
                .await;
        }
        if let Some(query) = invalid_query(op.id) {
            raw.request(op.method, &format!("{unknown}{query}"), Some(&admin))
                .send()
                .await;
        }
    }
}

#[tokio::test]
async fn every_status_the_sandbox_answers_is_documented_for_its_operation() {
    let sb = Sandbox::start(SandboxConfig::testing().with_limits(LimitsConfig::off())).await;
    drive_every_operation(&sb).await;
    // The copilot after its removal date (30 September 2026): 410.
    sb.advance(Duration::from_secs(600 * 86_400));
    let answered = sb
        .raw()
        .post(
            "/v1/ai/copilot/ask",
            &sb.admin_token(),
            &json!({"question": "Still there?"}),
        )
        .await;
    assert_eq!(answered.status, 410);

    let traffic = sb.traffic();
    let mut statuses: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for exchange in &traffic {
        if let Some(op) = &exchange.operation {
            statuses
                .entry(op.to_string())
                .or_default()
                .insert(exchange.status);
        }
    }
    for op in pubapi_sdk::operations::ALL {
        assert!(statuses.contains_key(op.id), "{} was not driven", op.id);
    }
    let report = sb.check_conformance();
    let undocumented: Vec<&String> = report
        .problems
        .iter()
        .filter(|p| p.contains("is not documented"))
        .collect();
    assert!(
        undocumented.is_empty(),
        "statuses the spec does not document:\n{undocumented:#?}\nstatuses seen: {statuses:#?}"
    );
    // The walk reached more than the happy path: an error on every operation.
    for (op, seen) in &statuses {
        assert!(seen.iter().any(|s| *s >= 400), "{op}: only {seen:?}");
    }
}
