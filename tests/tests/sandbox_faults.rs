//! Fault injection by script: delays, 500s, dropped connections, malformed JSON, throttles,
//! and the counters tests assert on.

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::assert_gateway_refused;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{Fault, Sandbox, SandboxConfig};
use std::time::{Duration, Instant};

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

#[tokio::test]
async fn server_errors_take_the_documented_500_form() {
    let sb = sandbox().await;
    sb.inject(Fault::on_tag("agents").times(1).server_error());
    sb.inject(Fault::on("listWebhooks").times(1).server_error());
    sb.inject(Fault::on("whoami").times(1).server_error());
    let raw = sb.raw();
    let token = sb.admin_token();
    let ai = raw.get("/v1/ai/agents/list", &token).await;
    assert_eq!(
        (ai.status, ai.json()["errorCode"].as_str()),
        (500, Some("INTERNAL_SERVER_ERROR"))
    );
    let hooks = raw.get("/v1/webhooks", &token).await;
    assert_eq!((hooks.status, hooks.body.len()), (500, 0));
    // whoami documents no 500: the reply is marked injected and left out of the check.
    let whoami = raw.get("/v1/whoami", &token).await;
    assert_eq!(whoami.status, 500);
    assert!(sb.traffic().last().unwrap().injected);
    assert_eq!(sb.faults_left(), 0);
    assert_eq!(raw.get("/v1/whoami", &token).await.status, 200);
    assert_eq!(sb.counters().faults_injected, 3);
    let report = sb.check_conformance();
    assert_eq!((report.checked, report.skipped), (3, 1));
    sb.assert_conformant();
}

#[tokio::test]
async fn delays_hold_the_request() {
    let sb = sandbox().await;
    sb.inject(
        Fault::on("getEventsCursor")
            .times(1)
            .delay(Duration::from_millis(300)),
    );
    let started = Instant::now();
    let reply = sb.raw().get("/v1/events/cursor", &sb.admin_token()).await;
    assert_eq!(reply.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
    sb.assert_conformant();
}

#[tokio::test]
async fn dropped_connections_get_no_reply() {
    let sb = sandbox().await;
    sb.inject(Fault::on("whoami").times(1).drop_connection());
    let dropped = reqwest::Client::new()
        .get(format!("{}/v1/whoami", sb.base_url()))
        .bearer_auth(sb.admin_token())
        .send()
        .await;
    // No status line at all: the request itself fails.
    assert!(dropped.is_err(), "{dropped:?}");
    assert_eq!(
        sb.raw().get("/v1/whoami", &sb.admin_token()).await.status,
        200
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn malformed_json_is_a_decode_error_for_the_client() {
    let sb = sandbox().await;
    sb.inject(Fault::on("getEventsCursor").times(1).malformed_json());
    let error = error_of(sb.client_for("admin").sdk().get_events_cursor().send()).await;
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    sb.assert_conformant();
}

#[tokio::test]
async fn throttles_are_retried_by_the_client_after_retry_after() {
    let sb = sandbox().await;
    sb.inject(Fault::on("listWebhooks").times(1).throttle(1));
    let raw = sb.raw().get("/v1/webhooks", &sb.admin_token()).await;
    assert_gateway_refused(&raw, 403, "ERR_403_DEVELOPER_OVER_QPS");
    sb.inject(Fault::on("listWebhooks").times(1).throttle(1));
    let hooks = sb
        .client_for("admin")
        .sdk()
        .list_webhooks()
        .send()
        .await
        .unwrap();
    assert!(hooks.into_inner().0.is_empty());
    assert_eq!(sb.counters().requests_to("listWebhooks"), 3);
    sb.assert_conformant();
}

#[tokio::test]
async fn scripts_let_requests_through_and_apply_in_order() {
    let sb = sandbox().await;
    sb.inject(Fault::on("whoami").after(1).times(2).server_error());
    sb.inject(Fault::on("whoami").times(1).throttle(5));
    let token = sb.admin_token();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(sb.raw().get("/v1/whoami", &token).await.status);
    }
    assert_eq!(statuses, [200, 500, 500, 403, 200]);
    sb.inject(Fault::on_any().server_error());
    assert_eq!(sb.raw().get("/v1/events/cursor", &token).await.status, 500);
    sb.clear_faults();
    assert_eq!(sb.raw().get("/v1/events/cursor", &token).await.status, 200);
    let counters = sb.counters();
    assert_eq!((counters.requests, counters.faults_injected), (7, 4));
    assert_eq!(counters.replies_with(500), 3);
    sb.assert_conformant();
}
