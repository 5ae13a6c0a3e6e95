//! Per-token limits of the sandbox (reference 8): 2/s and 1,000/day for the general API,
//! 100/day for AI, on the sandbox clock, every violation counted.

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Error, LimitClass, SecretToken};
use pubapi_testkit::admin_get;
use pubapi_testkit::assert_gateway_refused;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{LimitsConfig, Sandbox, SandboxConfig, Violation};
use serde_json::json;
use std::time::Duration;

async fn sandbox(limits: LimitsConfig) -> Sandbox {
    Sandbox::start(SandboxConfig::testing().with_limits(limits)).await
}

/// A sandbox with the limits `text` says, in the form of the sandbox's `--limits`
/// (`general=2/s,1000/d,ai=10/m,100/d`; a window not named is unlimited).
async fn limited(text: &str) -> Sandbox {
    sandbox(text.parse().expect("limits")).await
}

#[tokio::test]
async fn general_api_allows_2_per_second_then_403_over_qps() {
    let sb = sandbox(LimitsConfig::reference()).await;
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    assert_eq!(admin_get(&sb, "/v1/events/cursor").await.status, 200);
    let third = admin_get(&sb, "/v1/whoami").await;
    assert_gateway_refused(&third, 403, "ERR_403_DEVELOPER_OVER_QPS");
    assert_eq!(third.header("retry-after"), Some("1"));
    assert!(third.body.is_empty());
    // Webhooks keep their error body on a throttle.
    let hooks = admin_get(&sb, "/v1/webhooks").await;
    assert_eq!(hooks.status, 403);
    assert_eq!(hooks.json()["code"], "ERR_403_DEVELOPER_OVER_QPS");
    assert_eq!(sb.counters().violations_of(Violation::OverQps), 2);
    sb.advance(Duration::from_secs(1));
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    sb.assert_conformant();
}

#[tokio::test]
async fn daily_quota_gives_403_over_rate_until_midnight() {
    let sb = limited("general=1000/s,5/d,ai=10/m,100/d").await;
    for _ in 0..5 {
        assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    }
    let over = admin_get(&sb, "/v1/whoami").await;
    assert_gateway_refused(&over, 403, "ERR_403_DEVELOPER_OVER_RATE");
    // The manual clock starts at 09:00 UTC: 15 hours to the next day.
    assert_eq!(over.header("retry-after"), Some("54000"));
    let audit = admin_get(&sb, "/v1/audit/jobs/x").await;
    assert_eq!(audit.status, 403);
    assert_eq!(
        audit.json()["Errors"][0]["code"],
        "ERR_403_DEVELOPER_OVER_RATE"
    );
    assert_eq!(sb.counters().violations_of(Violation::OverRate), 2);
    sb.advance(Duration::from_secs(15 * 3600));
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    sb.assert_conformant();
}

#[tokio::test]
async fn limits_apply_per_token() {
    let sb = sandbox(LimitsConfig::reference()).await;
    let raw = sb.raw();
    let admin = sb.admin_token();
    for _ in 0..2 {
        raw.get("/v1/whoami", &admin).await;
    }
    assert_eq!(raw.get("/v1/whoami", &admin).await.status, 403);
    assert_eq!(
        raw.get("/v1/whoami", &sb.token("sam").unwrap())
            .await
            .status,
        200
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn ai_allows_100_calls_a_day_then_429() {
    let sb = limited("general=1000/s,1000/d,ai=10/m,100/d").await;
    let token = sb.admin_token();
    let raw = sb.raw();
    for i in 0..100 {
        // 10 a minute, as the platform's clients keep to.
        if i > 0 && i % 10 == 0 {
            sb.advance(Duration::from_secs(60));
        }
        let ok = raw
            .post("/v1/hybrid-search", &token, &json!({"query": "travel"}))
            .await;
        assert_eq!(ok.status, 200, "call {i}");
    }
    let over = admin_get(&sb, "/v1/ai/agents/list").await;
    assert_gateway_refused(&over, 429, "ERR_403_DEVELOPER_OVER_RATE");
    assert!(over.body.is_empty());
    // 9 minutes into the day's last 15 hours.
    assert_eq!(over.header("retry-after"), Some("53460"));
    // The general budget is separate.
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    let counters = sb.counters();
    assert_eq!(counters.violations_of(Violation::AiOverRate), 1);
    assert_eq!(counters.total_violations(), 1);
    assert_eq!(counters.requests_to("hybridSearch"), 100);
    sb.assert_conformant();
}

#[tokio::test]
async fn ai_per_second_limit_is_configurable() {
    let sb = limited("ai=1/s").await;
    assert_eq!(admin_get(&sb, "/v1/ai/agents/list").await.status, 200);
    let over = admin_get(&sb, "/v1/ai/agents/list").await;
    assert_gateway_refused(&over, 429, "ERR_403_DEVELOPER_OVER_QPS");
    assert_eq!(sb.counters().violations_of(Violation::AiOverQps), 1);
    sb.assert_conformant();
}

#[tokio::test]
async fn limits_scale() {
    let sb = sandbox(LimitsConfig::reference().scaled(10.0)).await;
    for _ in 0..20 {
        assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    }
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 403);
    sb.assert_conformant();
}

#[tokio::test]
async fn the_client_reports_a_server_side_daily_quota_as_quota_exhausted() {
    let sb = limited("general=1000/s,2/d,ai=10/m,100/d").await;
    // A client with the reference's own pacing, unaware of the smaller plan.
    let client = pubapi_sdk_ext::Client::builder()
        .base_url(sb.base_url())
        .token(SecretToken::try_from(sb.admin_token()).unwrap())
        .build()
        .unwrap();
    for _ in 0..2 {
        client.sdk().whoami().send().await.unwrap();
    }
    let error = error_of(client.sdk().whoami().send()).await;
    match &error {
        Error::QuotaExhausted {
            class, resets_in, ..
        } => {
            assert_eq!(*class, Some(LimitClass::General));
            assert_eq!(*resets_in, Some(Duration::from_secs(54_000)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sb.counters().violations_of(Violation::OverRate), 1);
    sb.assert_conformant();
}
