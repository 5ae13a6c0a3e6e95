//! Every operation of `spec/openapi.yaml` is served, and every reply the sandbox sends —
//! successes, errors, throttles — validates against the spec (status, content type, JSON
//! schema, headers), as do the webhook deliveries it sends. (Every other sandbox test ends
//! with the same check on its own traffic.)

use pubapi_testkit::AUDIT_KINDS;
use pubapi_testkit::admin_post;
use pubapi_testkit::conformance::Validator;
use pubapi_testkit::sandbox::{LimitsConfig, Sandbox, SandboxConfig, TestReceiver};
use serde_json::{Value, json};
use std::time::Duration;

fn audit_body(kind: &str, format: &str) -> Value {
    let mut body =
        json!({"format": format, "date_start": "2025-03-01", "date_end": "2025-03-04T00:00:00Z"});
    match kind {
        "logins" => body["events"] = json!(["logins", "logouts"]),
        "files" => body["folders"] = json!(["/Company"]),
        _ => {}
    }
    body
}

/// Drives every operation with successes and the errors it documents.
async fn drive(sb: &Sandbox) {
    let raw = sb.raw();
    let admin = sb.admin_token();
    let sam = sb.token("sam").unwrap();
    let nora = sb.token("nora").unwrap();
    let receiver = TestReceiver::start(&[500]).await;

    // Identity.
    raw.get("/v1/whoami", &admin).await;
    raw.get("/v1/whoami", "bad").await;

    // Webhooks.
    let created = admin_post(sb, "/v1/webhooks", &json!({"url": receiver.url(), "eventType": ["fs:*", "comment:*", "permission:*", "group:create"], "authHeader": "h"})).await;
    let hook = created.json()["webhookId"].as_str().unwrap().to_string();
    raw.post("/v1/webhooks", &admin, &json!({"url": "ftp://x"}))
        .await;
    raw.post(
        "/v1/webhooks",
        &nora,
        &json!({"url": "https://x.example.com"}),
    )
    .await;
    raw.post("/v1/webhooks", "bad", &json!({})).await;
    raw.get("/v1/webhooks", &admin).await;
    raw.get("/v1/webhooks", &sam).await;
    raw.get(&format!("/v1/webhooks/{hook}/details"), &admin)
        .await;
    raw.get("/v1/webhooks/none/details", &admin).await;
    raw.get(&format!("/v1/webhooks/{hook}/status"), &admin)
        .await;
    for status in ["disabled", "x"] {
        let path = format!("/v1/webhooks/{hook}/status");
        raw.post(&path, &admin, &json!({"status": status})).await;
    }
    raw.request("PUT", &format!("/v1/webhooks/{hook}"), Some(&admin))
        .json(&json!({"url": receiver.url(), "status": "enabled"}))
        .send()
        .await;
    raw.request("PUT", "/v1/webhooks/none", Some(&admin))
        .json(&json!({"url": receiver.url()}))
        .send()
        .await;

    // Activity feeding events, audit and deliveries.
    let a = sb.activity_as("sam");
    a.create_folder("/C").unwrap();
    a.create_file("/C/doc.txt", "Conformance checks every reply.")
        .unwrap();
    a.add_note("/C/doc.txt", "ok").unwrap();
    a.change_permission("/C", "power", Some("Viewer"), Some("Editor"))
        .unwrap();
    a.move_entry("/C/doc.txt", "/C/moved.txt").unwrap();
    a.delete("/C/moved.txt").unwrap();
    a.restore("/C/moved.txt").unwrap();
    a.login("failed_attempts", "192.0.2.1", "Web").unwrap();
    a.emit(
        "group:create",
        // Every group event carries the acting `user` (reference 6.2).
        json!({"user": {"id": 1001, "fullName": "Sam", "userName": "sam", "email": "sam@example.com"},
               "groupName": "G", "groupId": "1", "members": ["sam"], "owner": "admin"}),
        &[],
    )
    .unwrap();
    sb.settle().await;
    sb.advance(Duration::from_secs(60));
    sb.settle().await;

    // Events.
    raw.get("/v1/events/cursor", &admin).await;
    raw.get("/v1/events/cursor", "bad").await;
    raw.get("/v1/events?id=0", &admin).await;
    raw.get("/v1/events?id=0&type=permission_change", &admin)
        .await;
    raw.get("/v2/events?id=0&count=3", &admin).await;
    raw.get("/v2/events?id=2&reverse=1", &admin).await;
    raw.get("/v2/events?id=999", &admin).await;
    raw.get("/v1/events?id=999", &admin).await;
    raw.get("/v2/events?id=0", "bad").await;

    // Audit: every kind, json and csv, with the errors.
    let mut jobs = Vec::new();
    for kind in AUDIT_KINDS {
        let format = if jobs.len() % 2 == 0 { "json" } else { "csv" };
        let path = format!("/v1/audit/{kind}");
        let reply = raw.post(&path, &admin, &audit_body(kind, format)).await;
        jobs.push((kind, reply.json()["id"].as_str().unwrap().to_string()));
        raw.post(&path, &admin, &json!({"format": "xml"})).await;
        raw.post(&path, &sam, &audit_body(kind, "json")).await;
    }
    raw.post("/v1/audit/logins", "bad", &json!({})).await;
    for (_, id) in &jobs {
        raw.get(&format!("/v1/audit/jobs/{id}"), &admin).await;
    }
    raw.get("/v1/audit/jobs/none", &admin).await;
    sb.advance(Duration::from_secs(300));
    for (kind, id) in &jobs {
        raw.get(&format!("/v1/audit/jobs/{id}"), &admin).await;
        raw.get(&format!("/v1/audit/{kind}/{id}"), &admin).await;
        raw.get(&format!("/v1/audit/{kind}/{id}?offset=2&count=3"), &admin)
            .await;
        raw.request("GET", &format!("/v1/audit/{kind}/{id}"), Some(&admin))
            .header("Accept", "text/csv")
            .send()
            .await;
    }
    raw.get(&format!("/v1/audit/logins/{}?count=x", jobs[0].1), &admin)
        .await;
    raw.get("/v1/audit/unknown-kind/x", &admin).await;
    for (kind, id) in &jobs {
        raw.request("DELETE", &format!("/v1/audit/{kind}/{id}"), Some(&admin))
            .send()
            .await;
    }
    raw.request(
        "DELETE",
        &format!("/v1/audit/logins/{}", jobs[0].1),
        Some(&admin),
    )
    .send()
    .await;

    // AI.
    raw.get("/v1/ai/agents/list", &admin).await;
    raw.get("/v1/ai/agents/list?sortBy=bogus", &admin).await;
    raw.get("/v1/ai/agents/list", "bad").await;
    let asked = admin_post(
        sb,
        "/v1/ai/agents/agt-engineering/ask",
        &json!({"question": "webhook retries"}),
    )
    .await;
    let request = asked.json()["requestId"].as_str().unwrap().to_string();
    raw.post("/v1/ai/agents/agt-engineering/ask", &admin, &json!({}))
        .await;
    raw.post("/v1/ai/agents/none/ask", &admin, &json!({"question": "x"}))
        .await;
    for _ in 0..3 {
        raw.get(
            &format!("/v1/ai/agents/agt-engineering/ask/{request}/status"),
            &admin,
        )
        .await;
    }
    raw.get("/v1/ai/agents/agt-engineering/ask/none/status", &admin)
        .await;
    let execution = admin_post(
        sb,
        "/v1/ai/assistant/ask",
        &json!({"question": "expense reports deadline", "includeCitations": true}),
    )
    .await;
    let execution = execution.json()["executionId"]
        .as_str()
        .unwrap()
        .to_string();
    raw.post("/v1/ai/assistant/ask", &admin, &json!({"question": 5}))
        .await;
    for _ in 0..3 {
        raw.get(&format!("/v1/ai/assistant/{execution}/status"), &admin)
            .await;
    }
    raw.get("/v1/ai/assistant/none/status", &admin).await;
    // Document AI, copilot, knowledge bases and hybrid search: calls that answer, then the
    // refusals (a missing or wrong field, an unknown id).
    let posts = [
        (
            "/v1/ai/document/4100005/ask",
            json!({"question": "severity 1", "includeCitations": true}),
        ),
        ("/v1/ai/document/4100005/ask", json!({"nothing": 1})),
        ("/v1/ai/document/0/ask", json!({"question": "x"})),
        (
            "/v1/ai/document/4100005/summary",
            json!({"chatHistory": {"messages": []}}),
        ),
        ("/v1/ai/document/0/summary", json!({})),
        (
            "/v1/ai/copilot/ask",
            json!({"question": "retention of audit logs", "includeCitations": true}),
        ),
        ("/v1/ai/copilot/ask", json!({})),
        (
            "/v1/ai/kb/list",
            json!({"includePrompts": true, "includeProcessingStatistics": true}),
        ),
        ("/v1/ai/kb/list", json!({"sortBy": ["size"]})),
        (
            "/v1/ai/kb/kb-finance/ask",
            json!({"question": "operating margin", "includeCitations": true}),
        ),
        ("/v1/ai/kb/none/ask", json!({"question": "x"})),
        (
            "/v1/hybrid-search",
            json!({"query": "security incident", "size": 2, "page": 0}),
        ),
        ("/v1/hybrid-search", json!({"query": ""})),
    ];
    for (path, body) in &posts {
        raw.post(path, &admin, body).await;
    }

    // Impersonation and its refusals.
    raw.request("GET", "/v1/webhooks", Some(&admin))
        .header("X-Service-Act-As", "sam")
        .send()
        .await;
    raw.request("GET", "/v1/events/cursor", Some(&sam))
        .header("X-Service-Act-As", "admin")
        .send()
        .await;
    raw.request("POST", "/v1/hybrid-search", Some(&sam))
        .header("X-Service-Act-As", "admin")
        .json(&json!({"query": "x"}))
        .send()
        .await;

    // Webhook deletion.
    raw.request("DELETE", &format!("/v1/webhooks/{hook}"), Some(&admin))
        .send()
        .await;
    raw.request("DELETE", &format!("/v1/webhooks/{hook}"), Some(&admin))
        .send()
        .await;
}

#[tokio::test]
async fn every_operation_is_served_and_every_reply_conforms() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    drive(&sb).await;
    let report = sb.check_conformance();
    assert!(report.problems.is_empty(), "{}", report.problems.join("\n"));
    assert_eq!(report.operations, Validator::embedded().operation_ids());
    assert_eq!(report.operations.len(), 39);
    assert!(report.checked > 150, "{}", report.checked);
    let statuses: std::collections::BTreeSet<u16> = sb.traffic().iter().map(|e| e.status).collect();
    assert_eq!(
        statuses.into_iter().collect::<Vec<_>>(),
        [200, 201, 202, 204, 303, 400, 401, 403, 404]
    );
    assert!(!sb.deliveries().is_empty());
}

#[tokio::test]
async fn throttled_replies_conform_in_every_area() {
    let sb = Sandbox::start(SandboxConfig::testing().with_limits(LimitsConfig {
        general_per_second: Some(1),
        general_per_day: Some(1000),
        ai_per_second: None,
        ai_per_minute: None,
        ai_per_day: Some(1),
    }))
    .await;
    let raw = sb.raw();
    let admin = sb.admin_token();
    for _ in 0..2 {
        raw.get("/v1/whoami", &admin).await;
        raw.get("/v1/webhooks", &admin).await;
        raw.get("/v1/audit/jobs/x", &admin).await;
        raw.get("/v2/events?id=0", &admin).await;
        raw.post("/v1/hybrid-search", &admin, &json!({"query": "x"}))
            .await;
        raw.get("/v1/ai/assistant/x/status", &admin).await;
    }
    let statuses: Vec<u16> = sb.traffic().iter().map(|e| e.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 403).count(), 7);
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 3);
    sb.assert_conformant();
}

#[tokio::test]
async fn the_validator_flags_what_the_spec_does_not_allow() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    sb.raw().get("/v1/whoami", &sb.admin_token()).await;
    let mut exchange = sb.traffic().pop().unwrap();
    let validator = Validator::embedded();
    assert!(validator.check(&exchange).is_empty());
    exchange.status = 418;
    assert!(validator.check(&exchange)[0].contains("not documented"));
    exchange.status = 200;
    exchange.response_body = br#"{"username": 7}"#.to_vec();
    assert!(validator.check(&exchange)[0].contains("expected a string"));
    exchange.content_type = Some("text/plain".into());
    assert!(validator.check(&exchange)[0].contains("Content-Type"));
}

#[tokio::test]
async fn hostile_inputs_get_documented_answers_on_every_operation() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    let raw = sb.raw();
    let admin = sb.admin_token();
    let bodies = [
        "",
        "null",
        "[]",
        "{\"question\": {\"x\": []}, \"query\": 7}",
        "{\"page\": 18446744073709551615, \"size\": 18446744073709551615, \"query\": \"x\", \"question\": \"\u{2713}\", \"limit\": -1}",
        "{\"format\": \"json\", \"date_start\": \"9999-12-31\", \"date_end\": \"0000-01-01T00:00:00Z\", \"events\": [null]}",
        "{\"url\": \"https://\u{2713}.example.com/\", \"eventType\": [\"fs:*\", 5], \"path\": \",,,\"}",
        "\u{0}\u{1}not json",
    ];
    let queries = [
        "",
        "?id=-9223372036854775808&count=-5&reverse=1",
        "?id=9223372036854775807&count=99999999999999999999&type=%7C%7C&folder=%FF",
        "?offset=18446744073709551615&count=18446744073709551615&sortBy=&includeCitations=maybe",
    ];
    for op in pubapi_sdk::operations::ALL {
        let path = op
            .path
            .split('/')
            .map(|segment| match segment {
                "{type}" => "logins",
                s if s.starts_with('{') => "%E2%9C%93%20..%2Fx",
                s => s,
            })
            .collect::<Vec<_>>()
            .join("/");
        for body in bodies {
            for query in queries {
                let reply = raw
                    .request(op.method, &format!("{path}{query}"), Some(&admin))
                    .header("X-Service-Act-As", "admin")
                    .body(body)
                    .send()
                    .await;
                assert_ne!(
                    reply.status,
                    0,
                    "{} {path}{query} {body:?}: {}",
                    op.method,
                    reply.text()
                );
            }
        }
    }
    sb.assert_conformant();
}
