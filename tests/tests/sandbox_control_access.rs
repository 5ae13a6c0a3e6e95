//! The control plane only its user can drive (issue 22): a request to another `Host` (DNS
//! rebinding) or from another origin (a page's `text/plain` POST) is refused 403, a control
//! token opens it to any `Host`; abusive values are 400 naming the field, never a panic; a
//! delivery attempt says why it failed.

use pubapi_testkit::admin_post;
use pubapi_testkit::sandbox::{
    LimitsConfig, MAX_MS, Sandbox, SandboxConfig, TestReceiver, WebhooksConfig,
};
use serde_json::{Value, json};
use std::time::Duration;

/// A control request with extra headers: its status and JSON body.
async fn control(
    sandbox: &Sandbox,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let url = format!("http://{}/_sandbox{path}", sandbox.addr());
    let mut request = reqwest::Client::new()
        .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url)
        .timeout(Duration::from_secs(5));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let reply = request.send().await.expect("the control plane answers");
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

/// A `POST /clock` of `body`, without extra headers.
async fn set_clock(sandbox: &Sandbox, body: &str) -> (u16, Value) {
    control(sandbox, "POST", "/clock", Some(body), &[]).await
}

#[tokio::test]
async fn cross_site_and_rebound_requests_are_refused_and_change_nothing() {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    sandbox.activity().create_folder("/Kept").unwrap();
    let own = format!("http://{}", sandbox.addr());
    let localhost = format!("localhost:{}", sandbox.addr().port());
    for (name, headers) in [
        ("rebound Host", vec![("host", "evil.example")]),
        (
            "a page's text/plain POST",
            vec![
                ("origin", "http://evil.example"),
                ("content-type", "text/plain"),
            ],
        ),
        ("the null origin", vec![("origin", "null")]),
        ("another site", vec![("sec-fetch-site", "cross-site")]),
        ("another port", vec![("origin", "http://127.0.0.1:1")]),
    ] {
        let (status, body) = control(&sandbox, "POST", "/reset", Some(""), &headers).await;
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body["error"].is_string(), "{name}: {body}");
    }
    assert!(sandbox.entry("/Kept").is_some(), "no reset happened");
    // Its own origin and names are served.
    for headers in [
        vec![("origin", own.as_str())],
        vec![("host", localhost.as_str())],
        vec![("sec-fetch-site", "same-origin")],
    ] {
        let (status, _) = control(&sandbox, "GET", "", None, &headers).await;
        assert_eq!(status, 200, "{headers:?}");
    }
}

#[tokio::test]
async fn with_a_control_token_only_requests_carrying_it_drive_the_sandbox() {
    let sandbox = Sandbox::start(SandboxConfig::testing().with_control_token("s3cr3t")).await;
    for (headers, expected) in [
        (vec![], 403),
        (vec![("authorization", "Bearer wrong")], 403),
        (vec![("authorization", "Bearer s3cr3t")], 200),
        (vec![("x-sandbox-control-token", "s3cr3t")], 200),
        (
            vec![
                ("authorization", "Bearer s3cr3t"),
                ("host", "sandbox.internal:8080"),
            ],
            200,
        ),
    ] {
        let (status, body) = control(&sandbox, "GET", "/clock", None, &headers).await;
        assert_eq!(status, expected, "{headers:?}: {body}");
    }
}

#[tokio::test]
async fn abusive_control_values_are_400_naming_the_field() {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    // (body, the field the refusal names), for each control path
    let clock = [
        (r#"{"advanceMs": 18446744073709551615}"#, "advanceMs"),
        (r#"{"advanceMs": 18446744073709551616}"#, "advanceMs"),
        (r#"{"advanceSeconds": 1e300}"#, "advanceSeconds"),
        (r#"{"advanceSeconds": -1}"#, "advanceSeconds"),
        (r#"{"scale": 1e308}"#, "scale"),
        (r#"{"scale": -1}"#, "scale"),
        (r#"{"to": "1970-01-01"}"#, "to"),
    ];
    let faults = [
        (r#"{"action": "delay", "ms": 18446744073709551615}"#, "ms"),
        (
            r#"{"action": "throttle", "retryAfter": 99999999}"#,
            "retryAfter",
        ),
        (r#"{"action": "status", "status": 200}"#, "status"),
        (r#"{"action": "serverError", "times": -1}"#, "times"),
    ];
    let limits = [
        (r#"{"generalPerSecond": 0}"#, "generalPerSecond"),
        (r#"{"aiPerDay": 4294967296}"#, "aiPerDay"),
    ];
    for (path, method, cases) in [
        ("/clock", "POST", &clock[..]),
        ("/faults", "POST", &faults[..]),
        ("/limits", "PUT", &limits[..]),
    ] {
        for (body, field) in cases {
            let (status, answer) = control(&sandbox, method, path, Some(body), &[]).await;
            assert_eq!(status, 400, "{body}: {answer}");
            let error = answer["error"].as_str().unwrap_or_default();
            assert!(error.contains(field), "{body}: {error}");
        }
    }
    let (status, _) = control(&sandbox, "GET", "", None, &[]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn names_paths_and_the_limits_text_are_range_checked_and_refusals_say_what_fits() {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let folder = |path: String| json!({"action": "createFolder", "path": path}).to_string();
    let megabyte_name = format!("/{}", "a".repeat(1_000_000));
    // (path, method, body, what the refusal says)
    let names = [
        (folder(megabyte_name), "a name is at most 255 bytes long"),
        (
            folder(format!("/ok/{}", "b".repeat(256))),
            "at most 255 bytes",
        ),
        (folder("/a\u{0}b".into()), "no control characters"),
        (folder("/a\nb".into()), "no control characters"),
        (
            folder(format!("/{}", ["c"; 2100].join("/"))),
            "at most 4096 bytes",
        ),
    ];
    let limits = [
        ("general=0/s", "general limit `0/s`"),
        ("ai=5/w", "ai limit `5/w`"),
        ("ai=10/m,x/d", "ai limit `x/d`"),
        ("general=1/m", "general limit `1/m`"),
        ("general=2/s,100", "general limit `100`"),
    ];
    let cases = names
        .map(|(body, says)| ("/activity", "POST", body, says))
        .into_iter()
        .chain(limits.map(|(text, says)| ("/limits", "PUT", json!(text).to_string(), says)));
    for (path, method, body, says) in cases {
        let (status, answer) = control(&sandbox, method, path, Some(&body), &[]).await;
        let error = answer["error"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{says}: {error}");
        assert!(error.contains(says), "{says}: {error}");
        assert!(
            error.len() < 300,
            "the refusal echoes {} bytes",
            error.len()
        );
        assert!(!error.contains('\0'), "{error}");
    }
    assert!(sandbox.entries().iter().all(|e| e.path.len() <= 4096));
}

#[tokio::test]
async fn at_the_clocks_end_every_state_machine_answers_without_overflow() {
    let sandbox =
        Sandbox::start(SandboxConfig::testing().with_limits(LimitsConfig::reference())).await;
    let (status, clock) = set_clock(&sandbox, r#"{"to": "9999-12-31T23:59:59Z"}"#).await;
    assert_eq!(status, 200, "{clock}");
    let (status, clock) = set_clock(&sandbox, r#"{"advanceMs": 999}"#).await;
    assert_eq!((status, clock["nowMs"].as_i64()), (200, Some(MAX_MS)));
    let (status, clock) = set_clock(&sandbox, r#"{"advanceMs": 1}"#).await;
    assert_eq!(status, 400, "{clock}");
    let (status, _) = set_clock(&sandbox, r#"{"scale": 1000000}"#).await;
    assert_eq!(status, 200);
    sandbox.advance(Duration::MAX);
    assert_eq!(sandbox.now_ms(), MAX_MS);

    let receiver = TestReceiver::start(&[]).await;
    let hook = json!({"url": receiver.url(), "eventType": ["fs:*"]});
    let created = admin_post(&sandbox, "/v1/webhooks", &hook).await;
    assert_eq!(created.status, 201, "{}", created.text());
    // It expires with the clock, not a year past its end.
    assert_eq!(created.json()["expires"].as_i64(), Some(MAX_MS / 1000));
    let last_days = json!({"format": "json", "date_start": "9999-12-30", "date_end": "9999-12-31"});
    let job = admin_post(&sandbox, "/v1/audit/logins", &last_days).await;
    assert!(job.status < 500, "{} {}", job.status, job.text());
    // The windows at the end of time (the two calls above filled this second's): throttled
    // with a Retry-After, never a panic.
    let (raw, token) = (sandbox.raw(), sandbox.admin_token());
    let replies =
        futures_util::future::join_all((0..4).map(|_| raw.get("/v1/whoami", &token))).await;
    for reply in replies {
        assert_eq!(reply.status, 403, "{}", reply.text());
        assert!(reply.header("retry-after").is_some());
    }
    sandbox.activity().create_folder("/End").unwrap();
    sandbox.settle().await;
    assert!(sandbox.deliveries().iter().any(|d| d.delivered));
}

#[tokio::test]
async fn a_failed_delivery_attempt_says_its_cause() {
    let sandbox = Sandbox::start(SandboxConfig {
        webhooks: WebhooksConfig {
            delivery_timeout: Duration::from_millis(300),
            ..WebhooksConfig::default()
        },
        ..SandboxConfig::testing()
    })
    .await;
    // A port nobody listens on, and a receiver that accepts and never answers.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_url = format!("http://{}/hooks", closed.local_addr().unwrap());
    drop(closed);
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/hooks", silent.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let raw = sandbox.raw();
    let token = sandbox.admin_token();
    for url in [&refused_url, &silent_url] {
        let created = raw
            .request("POST", "/v1/webhooks", Some(&token))
            .json(&json!({"url": url, "eventType": ["fs:*"]}))
            .send()
            .await;
        assert_eq!(created.status, 201, "{}", created.text());
    }
    sandbox.activity().create_folder("/Hooked").unwrap();
    sandbox.settle().await;
    let errors: Vec<String> = sandbox
        .deliveries()
        .iter()
        .filter_map(|d| d.error.clone())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors.iter().any(|e| e.starts_with("refused:")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("timeout: no answer within 300 ms")),
        "{errors:?}"
    );
    holder.abort();
}
