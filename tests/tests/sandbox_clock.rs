//! The sandbox clock drives every state machine: manual (advanced by tests) or real time
//! sped up by a scale.

use pubapi_testkit::admin_post;
use pubapi_testkit::sandbox::{ClockConfig, MANUAL_START_MS, Sandbox, SandboxConfig};
use serde_json::json;
use std::time::Duration;

fn logins() -> serde_json::Value {
    json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-02", "events": ["logins"]})
}

#[tokio::test]
async fn a_manual_clock_stands_still_until_advanced() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    assert_eq!(sb.now_ms(), MANUAL_START_MS);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(sb.now_ms(), MANUAL_START_MS);
    sb.advance(Duration::from_secs(90));
    assert_eq!(sb.now_ms(), MANUAL_START_MS + 90_000);
    let cursor = sb
        .raw()
        .get("/v1/events/cursor", &sb.admin_token())
        .await
        .json();
    assert_eq!(cursor["timestamp"], "2025-03-03T09:01:30.000Z");
    sb.assert_conformant();
}

#[tokio::test]
async fn answers_carry_the_sandbox_clock_as_their_http_date() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    let date = |reply: &pubapi_testkit::sandbox::RawResponse| {
        reply
            .headers
            .iter()
            .filter(|(name, _)| name == "date")
            .map(|(_, value)| value.clone())
            .collect::<Vec<_>>()
    };
    let reply = sb.raw().get("/v1/whoami", &sb.admin_token()).await;
    assert_eq!(date(&reply), ["Mon, 03 Mar 2025 09:00:00 GMT"]);
    sb.advance(Duration::from_secs(86_400 + 90));
    let reply = sb.raw().get("/v1/whoami", &sb.admin_token()).await;
    assert_eq!(date(&reply), ["Tue, 04 Mar 2025 09:01:30 GMT"]);
    // Paths outside the spec too.
    let reply = sb.raw().get("/v1/nowhere", &sb.admin_token()).await;
    assert_eq!(reply.status, 404);
    assert_eq!(date(&reply), ["Tue, 04 Mar 2025 09:01:30 GMT"]);
}

#[tokio::test]
async fn a_scaled_clock_finishes_audit_jobs_in_real_time_fractions() {
    // 600x: the 5-minute job takes half a real second; 2-minute poll spacing is 0.2 s.
    let sb = Sandbox::start(SandboxConfig::testing().with_clock(ClockConfig::scaled(600.0))).await;
    let created = admin_post(&sb, "/v1/audit/logins", &logins()).await;
    let id = created.json()["id"].as_str().unwrap().to_string();
    let path = format!("/v1/audit/jobs/{id}");
    let mut polls = Vec::new();
    for _ in 0..20 {
        let reply = sb.raw().get(&path, &sb.admin_token()).await;
        polls.push(reply.status);
        if reply.status == 303 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(210)).await;
    }
    assert_eq!(polls.last(), Some(&303), "{polls:?}");
    assert!(polls.len() >= 2, "{polls:?}");
    assert_eq!(sb.counters().total_violations(), 0);
    sb.assert_conformant();
}

#[tokio::test]
async fn the_scale_can_change_while_running() {
    let sb = Sandbox::start(SandboxConfig::testing()).await;
    sb.clock().set_scale(1000.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    sb.clock().set_scale(0.0);
    let moved = sb.now_ms() - MANUAL_START_MS;
    assert!(moved >= 100_000, "{moved}");
    let frozen = sb.now_ms();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(sb.now_ms(), frozen);
}
