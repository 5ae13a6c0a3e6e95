//! The control plane under `/_sandbox`, driven over HTTP as a client in any language would
//! (sandbox/src/control.rs has the table of paths).

use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{LimitsConfig, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The control plane of `sandbox`.
struct Control {
    root: String,
    http: reqwest::Client,
}

impl Control {
    fn of(sandbox: &Sandbox) -> Control {
        Control {
            root: sandbox.base_url().replace("/pubapi", "/_sandbox"),
            http: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.root));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

/// A testing sandbox (its clock frozen) and its control plane.
async fn started() -> (Sandbox, Control) {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let control = Control::of(&sandbox);
    (sandbox, control)
}

/// `GET /v1/whoami` with the admin token, as plain HTTP.
async fn whoami(sandbox: &Sandbox) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}/v1/whoami", sandbox.base_url()))
        .bearer_auth(sandbox.admin_token())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn faults_added_over_http_answer_their_status_then_let_requests_through() {
    let (sandbox, control) = started().await;
    let cases = [
        (
            json!({"action": "status", "status": 503, "operation": "whoami", "times": 1}),
            503,
            None,
        ),
        (
            json!({"action": "serverError", "tag": "identity", "times": 1}),
            500,
            None,
        ),
        (
            json!({"action": "throttle", "retryAfter": 3, "times": 1}),
            403,
            Some("ERR_403_DEVELOPER_OVER_QPS"),
        ),
        (
            json!({"action": "quotaExhausted", "retryAfter": 3600, "times": 1}),
            403,
            Some("ERR_403_DEVELOPER_OVER_RATE"),
        ),
    ];
    for (fault, status, gateway_code) in cases {
        let (added, left) = control.call("POST", "/faults", Some(fault.clone())).await;
        assert_eq!(
            (added, left["faultsLeft"].as_u64()),
            (200, Some(1)),
            "{fault}"
        );
        let faulted = whoami(&sandbox).await;
        assert_eq!(faulted.status(), status, "{fault}");
        let code = faulted
            .headers()
            .get("x-gateway-error-code")
            .map(|v| v.to_str().unwrap().to_string());
        assert_eq!(code.as_deref(), gateway_code, "{fault}");
        assert_eq!(whoami(&sandbox).await.status(), 200, "{fault}");
    }
    let (_, left) = control.call("GET", "/faults", None).await;
    assert_eq!(left["faultsLeft"], 0);
}

#[tokio::test]
async fn a_slow_body_arrives_whole_but_late() {
    let (sandbox, control) = started().await;
    let expected = whoami(&sandbox).await.bytes().await.unwrap();
    let rate = 100;
    control
        .call(
            "POST",
            "/faults",
            Some(json!({"action": "slowBody", "bytesPerSecond": rate, "times": 1})),
        )
        .await;
    let started = Instant::now();
    let response = whoami(&sandbox).await;
    assert_eq!(response.status(), 200);
    let body = response.bytes().await.unwrap();
    assert_eq!(body, expected, "the slow body is the same body");
    // A tenth of a second's worth every 100 ms: the body takes about len / rate seconds.
    let floor = Duration::from_millis(100 * (expected.len() as u64).div_ceil(rate / 10) - 100);
    assert!(
        started.elapsed() >= floor,
        "{} bytes at {rate}/s came in {:?}",
        expected.len(),
        started.elapsed()
    );
}

#[tokio::test]
async fn a_cut_body_breaks_the_connection_after_the_bytes_asked_for() {
    let (sandbox, control) = started().await;
    let whole = whoami(&sandbox).await.bytes().await.unwrap();
    control
        .call(
            "POST",
            "/faults",
            Some(json!({"action": "cutBody", "afterBytes": 10, "operation": "whoami", "times": 2})),
        )
        .await;
    let response = whoami(&sandbox).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.content_length(),
        Some(whole.len() as u64),
        "the whole length is announced"
    );
    assert!(response.bytes().await.is_err(), "the body breaks off");

    // The SDK sees a broken transfer, not a decode error of ten bytes.
    let client = sandbox
        .client_builder_for("admin")
        .isolated_budget()
        .build()
        .unwrap();
    let error = error_of(client.sdk().whoami().send()).await;
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
}

#[tokio::test]
async fn the_clock_moves_forward_only() {
    let (sandbox, control) = started().await;
    let start = sandbox.now_ms();
    let (status, clock) = control
        .call("POST", "/clock", Some(json!({"advanceSeconds": 90})))
        .await;
    assert_eq!(status, 200);
    assert_eq!(clock["nowMs"].as_i64(), Some(start + 90_000));
    let (status, clock) = control
        .call("POST", "/clock", Some(json!({"to": "2026-10-01"})))
        .await;
    assert_eq!(status, 200);
    assert_eq!(clock["now"], "2026-10-01T00:00:00.000Z");
    for (body, says) in [
        (json!({"to": "2025-01-01"}), "only moves forward"),
        (json!({"to": "tomorrow"}), "is not a date"),
        (json!({"advanceSeconds": 1, "scale": 2}), "exactly one of"),
        (json!({"advanceSeconds": -1}), "not a duration"),
    ] {
        let (status, refused) = control.call("POST", "/clock", Some(body.clone())).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            refused["error"].as_str().unwrap().contains(says),
            "{body}: {refused}"
        );
    }
    // Past the copilot's removal date, the copilot is gone.
    let copilot = reqwest::Client::new()
        .post(format!("{}/v1/ai/copilot/ask", sandbox.base_url()))
        .bearer_auth(sandbox.admin_token())
        .json(&json!({"question": "hello?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(copilot.status(), 410);
}

#[tokio::test]
async fn limits_switch_between_reference_off_and_custom_numbers_while_running() {
    let (sandbox, control) = started().await; // a frozen clock
    // One frozen second: how many whoami calls get through before a 403.
    async fn admitted(sandbox: &Sandbox, calls: usize) -> usize {
        let mut ok = 0;
        for _ in 0..calls {
            if whoami(sandbox).await.status() == 200 {
                ok += 1;
            }
        }
        ok
    }
    for (limits, calls, admitted_calls) in [
        (json!("reference"), 5, 2),
        (json!("off"), 20, 20),
        (json!({"generalPerSecond": 3}), 5, 3),
        (json!("general=1/s"), 5, 1),
    ] {
        let (status, _) = control.call("PUT", "/limits", Some(limits.clone())).await;
        assert_eq!(status, 200, "{limits}");
        sandbox.advance(Duration::from_secs(1)); // a fresh second window
        assert_eq!(admitted(&sandbox, calls).await, admitted_calls, "{limits}");
    }
    assert_eq!(
        sandbox.limits(),
        LimitsConfig {
            general_per_second: Some(1),
            ..LimitsConfig::off()
        }
    );
    let (status, refused) = control.call("PUT", "/limits", Some(json!("fast"))).await;
    assert_eq!(status, 400);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("needs a class first")
    );
}

#[tokio::test]
async fn reset_forgets_activity_webhooks_and_faults_but_keeps_users_and_tokens() {
    let (sandbox, control) = started().await;
    let token = sandbox.admin_token();
    let (status, _) = control
        .call(
            "POST",
            "/activity",
            Some(json!({"action": "createFolder", "path": "/Projects", "as": "sam"})),
        )
        .await;
    assert_eq!(status, 201);
    let created = reqwest::Client::new()
        .post(format!("{}/v1/webhooks", sandbox.base_url()))
        .bearer_auth(&token)
        .json(&json!({"url": "https://hooks.example.com/in"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    control
        .call(
            "POST",
            "/faults",
            Some(json!({"action": "serverError", "operation": "listAgents"})),
        )
        .await;
    assert_eq!(sandbox.stored_events(), 1);

    let (status, state) = control.call("POST", "/reset", None).await;
    assert_eq!(status, 200);
    assert_eq!(state["events"], 0);
    assert_eq!(state["webhooks"], 0);
    assert_eq!(state["faultsLeft"], 0);
    assert!(sandbox.entry("/Projects").is_none());
    assert_eq!(sandbox.admin_token(), token);
    assert_eq!(whoami(&sandbox).await.status(), 200);
}

#[tokio::test]
async fn control_paths_name_what_is_wrong() {
    let (sandbox, control) = started().await;
    let cases = [
        (
            "GET",
            "/nothing",
            None,
            404,
            "no control path /_sandbox/nothing",
        ),
        ("DELETE", "/clock", None, 405, "takes GET, POST"),
        (
            "POST",
            "/activity",
            Some(json!({"action": "fly"})),
            400,
            "unknown variant `fly`",
        ),
        (
            "POST",
            "/activity",
            Some(json!({"action": "createFolder", "path": "/P", "as": "nobody"})),
            400,
            "no user \"nobody\"",
        ),
        (
            "POST",
            "/activity",
            Some(json!({"action": "delete", "path": "/not-there"})),
            400,
            "nothing at \"/not-there\"",
        ),
        (
            "POST",
            "/faults",
            Some(json!({"action": "status", "status": 200})),
            400,
            "not an error status",
        ),
        (
            "POST",
            "/faults",
            Some(json!({"action": "serverError", "operation": "noSuchOp"})),
            400,
            "no operation `noSuchOp`",
        ),
    ];
    for (method, path, body, status, says) in cases {
        let (answered, refused) = control.call(method, path, body).await;
        assert_eq!(answered, status, "{method} {path}");
        assert!(
            refused["error"].as_str().unwrap().contains(says),
            "{method} {path}: {refused}"
        );
    }
    // The control plane is not API traffic.
    assert!(sandbox.traffic().is_empty());
    let (_, state) = control.call("GET", "", None).await;
    assert_eq!(state["users"][0]["token"], sandbox.admin_token());
}

#[tokio::test]
async fn an_injected_throttle_is_marked_injected_and_not_counted_as_the_limits_refusal() {
    let (sandbox, control) = started().await;
    sandbox.inject(
        pubapi_testkit::sandbox::Fault::on("whoami")
            .times(1)
            .throttle(1),
    );
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let answer = sandbox
        .raw()
        .request("GET", "/v1/whoami", Some(&sandbox.admin_token()))
        .header("x-request-id", "req-injected-1")
        .header("traceparent", traceparent)
        .send()
        .await;
    assert_eq!(answer.status, 403);
    // The traffic view: the request's id, its traceparent, the token's user, and injected.
    let (_, traffic) = control.call("GET", "/traffic", None).await;
    let exchange = traffic["exchanges"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(exchange["fault"], true, "{exchange}");
    assert_eq!(exchange["requestId"], "req-injected-1", "{exchange}");
    assert_eq!(exchange["traceparent"], traceparent, "{exchange}");
    assert_eq!(exchange["tokenUser"], "admin", "{exchange}");
    // The dashboard's charts: an arrival answered by a fault, not one the limits refused.
    let (_, arrivals) = control.call("GET", "/arrivals", None).await;
    let general: Vec<&Value> = arrivals["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["class"] == "general")
        .collect();
    assert!(!general.is_empty(), "{arrivals}");
    for window in general {
        let sum = |field: &str| -> u64 {
            window["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b[field].as_u64().unwrap())
                .sum()
        };
        assert_eq!(sum("throttled"), 0, "{window}");
        assert_eq!(sum("injected"), 1, "{window}");
    }
    assert_eq!(sandbox.counters().total_violations(), 0);
}
