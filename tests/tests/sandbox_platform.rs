//! What the platform shows beyond the reference, as the sandbox answers it
//! (`notes/real-platform-facts.md`): the AI window of 10 calls a minute, the gateway's
//! `x-accesstoken-*` counters, a deactivated token, the gateway's `fault` envelope, the token
//! endpoint and its hourly limits, `customProperties` on deliveries, the files report's CSV
//! header, no report row after the sandbox's now, and the control plane's counters by kind,
//! traffic and conformance check over HTTP.

use pubapi_sdk_ext::limits::ServerCounters;
use pubapi_sdk_ext::{Error, LimitClass};
use pubapi_testkit::admin_get;
use pubapi_testkit::assert_gateway_refused;
use pubapi_testkit::sandbox::{
    INACTIVE_CODE, LimitsConfig, Sandbox, SandboxConfig, TOKEN_PATH, TestReceiver, Violation,
};
use pubapi_testkit::{SAMPLE_AGENT, SAMPLE_QUESTION, admin_post};
use serde_json::{Value, json};
use std::time::Duration;

async fn sandbox(limits: LimitsConfig) -> Sandbox {
    Sandbox::start(SandboxConfig::testing().with_limits(limits)).await
}

/// The entry of the JSON array `list` whose `key` is `value`.
fn entry<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    let entries = list.as_array().expect("an array");
    entries.iter().find(|e| e[key] == value).expect("an entry")
}

/// A control-plane call over HTTP, as a client in another language makes it.
async fn control(sb: &Sandbox, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let root = sb.base_url().replace("/pubapi", "/_sandbox");
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new().request(method, format!("{root}{path}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Activates or deactivates `username`'s token through the control plane.
async fn set_token_active(sb: &Sandbox, username: &str, active: bool) -> (u16, Value) {
    let body = json!({"username": username, "active": active});
    control(sb, "POST", "/tokens", Some(body)).await
}

/// Adds a fault through the control plane.
async fn add_fault(sb: &Sandbox, fault: Value) -> (u16, Value) {
    control(sb, "POST", "/faults", Some(fault)).await
}

/// A form POST to the token endpoint: status, `Retry-After`, body.
async fn token_request(sb: &Sandbox, form: &[(&str, &str)]) -> (u16, Option<String>, Value) {
    let url = sb.base_url().replace("/pubapi", TOKEN_PATH);
    // The values here need no escaping.
    let body: Vec<String> = form.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.join("&"))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry_after, response.json().await.unwrap())
}

#[tokio::test]
async fn ai_calls_are_10_a_minute_then_429_over_qps_until_the_minute_ends() {
    let sb = sandbox(LimitsConfig::reference()).await;
    for i in 0..10 {
        let ok = admin_get(&sb, "/v1/ai/agents/list").await;
        assert_eq!(ok.status, 200, "call {i}");
    }
    sb.advance(Duration::from_secs(15));
    let over = admin_get(&sb, "/v1/ai/agents/list").await;
    assert_gateway_refused(&over, 429, "ERR_403_DEVELOPER_OVER_QPS");
    assert!(over.body.is_empty());
    assert_eq!(over.header("retry-after"), Some("45"));
    // The general API has no minute window.
    sb.advance(Duration::from_secs(1));
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    sb.advance(Duration::from_secs(44));
    assert_eq!(admin_get(&sb, "/v1/ai/agents/list").await.status, 200);
    let counters = sb.counters();
    assert_eq!(counters.violations_of(Violation::AiOverMinute), 1);
    assert_eq!(counters.total_violations(), 1);
    // The window is a limit like the others: off, or configured in the text form.
    assert_eq!(LimitsConfig::off().ai_per_minute, None);
    assert_eq!(
        "ai=3/m".parse::<LimitsConfig>().unwrap().ai_per_minute,
        Some(3)
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn answers_carry_the_gateway_counters_the_sdk_reads() {
    let sb = sandbox(LimitsConfig::reference()).await;
    let raw = sb.raw();
    let counters = |reply: &pubapi_testkit::sandbox::RawResponse| {
        [
            "x-accesstoken-qps-allotted",
            "x-accesstoken-qps-current",
            "x-accesstoken-quota-allotted",
            "x-accesstoken-quota-current",
        ]
        .map(|name| reply.header(name).map(str::to_string))
    };
    let some = |values: [&str; 4]| values.map(|v| Some(v.to_string()));
    let first = admin_get(&sb, "/v1/whoami").await;
    assert_eq!(counters(&first), some(["2", "1", "1000", "1"]));
    let second = admin_get(&sb, "/v1/events/cursor").await;
    assert_eq!(counters(&second), some(["2", "2", "1000", "2"]));
    // A throttled answer counts nothing more.
    let third = admin_get(&sb, "/v1/whoami").await;
    assert_eq!(third.status, 403);
    assert_eq!(counters(&third), some(["2", "2", "1000", "2"]));
    // AI has its own budget and no per-second limit to report.
    let ai = admin_get(&sb, "/v1/ai/agents/list").await;
    assert_eq!(
        counters(&ai),
        [None, None, Some("100".into()), Some("1".into())]
    );
    // A token the gateway does not know gets no counters.
    assert_eq!(
        counters(&raw.get("/v1/whoami", "nope").await),
        [None, None, None, None]
    );
    // The SDK reads them into its quota.
    sb.advance(Duration::from_secs(1));
    let client = sb.client_for("sam");
    client.identity().whoami().await.unwrap();
    assert_eq!(
        client.quota(LimitClass::General).server,
        Some(ServerCounters {
            qps_allotted: Some(2),
            qps_current: Some(1),
            quota_allotted: Some(1000),
            quota_current: Some(1),
        })
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn a_deactivated_token_gets_403_developer_inactive_until_activated() {
    let sb = sandbox(LimitsConfig::generous()).await;
    let token = sb.token("sam").unwrap();
    let raw = sb.raw();
    let (status, answer) = set_token_active(&sb, "sam", false).await;
    assert_eq!(
        (status, answer),
        (200, json!({"username": "sam", "active": false}))
    );
    let (_, state) = control(&sb, "GET", "", None).await;
    let sam = entry(&state["users"], "username", "sam");
    assert_eq!(sam["active"], false);
    for path in ["/v1/whoami", "/v1/webhooks", "/v1/ai/agents/list"] {
        let refused = raw.get(path, &token).await;
        assert_eq!(refused.status, 403, "{path}");
        assert_eq!(refused.header("x-gateway-error-code"), Some(INACTIVE_CODE));
        assert_eq!(refused.header("retry-after"), None, "{path}");
    }
    assert_eq!(
        raw.get("/v1/webhooks", &token).await.json()["code"],
        INACTIVE_CODE
    );
    // Other tokens work; the SDK treats it like a 401 and does not retry.
    assert_eq!(raw.get("/v1/whoami", &sb.admin_token()).await.status, 200);
    let error = sb.client_for("sam").identity().whoami().await.unwrap_err();
    assert!(matches!(error, Error::Unauthorized(_)), "{error:?}");
    // Three paths, the webhooks body and the SDK's call.
    assert_eq!(sb.counters().violations_of(Violation::InactiveToken), 5);
    // Outside the spec's gateway codes, so left out of the conformance check.
    sb.assert_conformant();
    let (status, _) = set_token_active(&sb, "sam", true).await;
    assert_eq!(status, 200);
    assert_eq!(raw.get("/v1/whoami", &token).await.status, 200);
    // The test API does the same; a reset activates every token again.
    sb.deactivate_token("sam");
    assert_eq!(raw.get("/v1/whoami", &token).await.status, 403);
    sb.reset();
    assert_eq!(raw.get("/v1/whoami", &token).await.status, 200);
    let (status, refused) = set_token_active(&sb, "ghost", false).await;
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("ghost"));
}

#[tokio::test]
async fn the_gateway_fault_envelope_is_an_injectable_fault() {
    let sb = sandbox(LimitsConfig::generous()).await;
    let (status, _) = control(
        &sb,
        "POST",
        "/faults",
        Some(json!({
            "action": "gatewayFault",
            "status": 429,
            "errorcode": "policies.ratelimit.QuotaViolation",
            "faultstring": "Rate limit quota violation",
            "operation": "listWebhooks",
            "times": 1,
        })),
    )
    .await;
    assert_eq!(status, 200);
    let fault = admin_get(&sb, "/v1/webhooks").await;
    assert_eq!(fault.status, 429);
    assert_eq!(
        fault.json(),
        json!({"fault": {
            "faultstring": "Rate limit quota violation",
            "detail": {"errorcode": "policies.ratelimit.QuotaViolation"},
        }})
    );
    assert_eq!(admin_get(&sb, "/v1/webhooks").await.status, 200);
    // The default is the gateway's answer to a token it does not accept, and the SDK reads
    // the envelope's code and message.
    add_fault(
        &sb,
        json!({"action": "gatewayFault", "operation": "whoami", "times": 1}),
    )
    .await;
    let error = sb
        .client_for("admin")
        .identity()
        .whoami()
        .await
        .unwrap_err();
    let api = error.api_error().unwrap();
    assert_eq!(api.status(), 401);
    assert_eq!(
        api.code(),
        Some("keymanagement.service.invalid_access_token")
    );
    assert_eq!(api.message(), Some("Invalid access token"));
    let (status, refused) = add_fault(&sb, json!({"action": "gatewayFault", "status": 200})).await;
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("status 200"));
    sb.assert_conformant();
}

#[tokio::test]
async fn the_token_endpoint_hands_out_the_token_and_answers_409_past_10_an_hour_per_user() {
    let sb = sandbox(LimitsConfig::generous()).await;
    let sam = [
        ("grant_type", "password"),
        ("client_id", "sandbox-app"),
        ("username", "sam"),
        ("password", "sam-password"),
    ];
    let (status, _, body) = token_request(&sb, &sam).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"access_token": sb.token("sam").unwrap(), "token_type": "bearer"})
    );
    let mut wrong = sam;
    wrong[3] = ("password", "guess");
    let (status, _, body) = token_request(&sb, &wrong).await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_grant")));
    let mut other_client = sam;
    other_client[1] = ("client_id", "nobody");
    let (status, _, body) = token_request(&sb, &other_client).await;
    assert_eq!((status, &body["error"]), (401, &json!("invalid_client")));
    let (status, _, body) = token_request(&sb, &[("grant_type", "client_credentials")]).await;
    assert_eq!(status, 400, "{body}");
    // Every request of sam's counts: 3 so far (the other client's has its own window).
    for _ in 0..8 {
        assert_eq!(token_request(&sb, &sam).await.0, 200);
    }
    sb.advance(Duration::from_secs(30 * 60));
    let (status, retry_after, _) = token_request(&sb, &sam).await;
    assert_eq!(status, 409);
    assert_eq!(retry_after.as_deref(), Some("1800"));
    // Another user of the same application has a window of their own.
    let power = [
        ("grant_type", "password"),
        ("client_id", "sandbox-app"),
        ("username", "power"),
        ("password", "power-password"),
    ];
    assert_eq!(token_request(&sb, &power).await.0, 200);
    sb.advance(Duration::from_secs(30 * 60));
    assert_eq!(token_request(&sb, &sam).await.0, 200);
    // The public flow: 100 an hour for the application.
    let public = [
        ("grant_type", "authorization_code"),
        ("client_id", "sandbox-app"),
        ("code", "admin"),
    ];
    for i in 0..100 {
        assert_eq!(token_request(&sb, &public).await.0, 200, "request {i}");
    }
    let (status, retry_after, _) = token_request(&sb, &public).await;
    assert_eq!((status, retry_after.as_deref()), (409, Some("3600")));
    assert_eq!(
        sb.counters()
            .violations_of(Violation::TokenEndpointOverRate),
        2
    );
    // Recorded in the traffic without an operation, so the conformance check skips them.
    let traffic = sb.traffic();
    assert!(
        traffic
            .iter()
            .all(|e| e.path == TOKEN_PATH && e.operation.is_none())
    );
    sb.assert_conformant();
}

/// The SDK's `PasswordGrant` against the sandbox's token endpoint: the user's token for the
/// client's calls, a refused grant typed with its status and message, and the 409 of the
/// hourly window typed with its `Retry-After`.
#[tokio::test]
async fn password_grant_obtains_the_token_and_types_refusals_and_the_hourly_409() {
    use pubapi_sdk_ext::token::TokenSource;
    use pubapi_sdk_ext::{GrantError, PasswordGrant, RetryConfig};
    let sb = sandbox(LimitsConfig::generous()).await;
    let url = sb.base_url().replace("/pubapi", TOKEN_PATH);
    let grant = |password: &str| {
        PasswordGrant::new(&url, "sandbox-app", "sam", password)
            .unwrap()
            .retry(RetryConfig::default().with_max_attempts(1))
    };
    let source = std::sync::Arc::new(grant("sam-password"));
    let client = sb
        .client_builder_with_token("unused")
        .token_source(source.clone())
        .build()
        .unwrap();
    assert_eq!(client.identity().whoami().await.unwrap().username, "sam");
    assert_eq!(source.ready().unwrap().expose(), sb.token("sam").unwrap());

    let refused = grant("guess").fetch().await.unwrap_err();
    assert_eq!(refused.status(), Some(400));
    assert_eq!(refused.oauth_error(), Some("invalid_grant"));
    assert!(
        refused
            .to_string()
            .ends_with("the credentials do not match a user of this client"),
        "{refused}"
    );
    // sam has used 2 of the 10 grants of the hour; the 11th is throttled.
    for _ in 0..8 {
        grant("sam-password").fetch().await.unwrap();
    }
    sb.advance(Duration::from_secs(30 * 60));
    let throttled = grant("sam-password").fetch().await.unwrap_err();
    assert!(
        matches!(throttled, GrantError::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(1800)),
        "{throttled:?}"
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn deliveries_carry_custom_properties_for_a_new_version_and_project_activity() {
    let sb = sandbox(LimitsConfig::generous()).await;
    let receiver = TestReceiver::start(&[]).await;
    let reply = admin_post(&sb, "/v1/webhooks", &json!({"url": receiver.url()})).await;
    assert_eq!(reply.status, 201);
    let a = sb.activity();
    let folder = a.create_folder("/Project").unwrap();
    a.create_file("/Project/plan.txt", "one").unwrap();
    a.create_file("/Project/plan.txt", "two").unwrap();
    let (status, _) = control(
        &sb,
        "POST",
        "/activity",
        Some(json!({
            "action": "folderProjectActivity",
            "path": "/Project",
            "projectId": "prj-1",
            "actionInfo": "status changed to active",
        })),
    )
    .await;
    assert_eq!(status, 201);
    sb.settle().await;
    let events: Vec<Value> = receiver
        .received()
        .iter()
        .map(|r| r.body["data"][0].clone())
        .collect();
    assert_eq!(events.len(), 4);
    // Only the events that carry them have them.
    assert!(events[0].get("customProperties").is_none());
    assert!(events[1].get("customProperties").is_none());
    assert_eq!(events[2]["data"]["itemType"], "version");
    assert_eq!(events[2]["customProperties"], json!({"fileUpdated": true}));
    assert_eq!(events[3]["eventType"], "fs:folder_project_activity");
    assert_eq!(events[3]["data"], json!({"targetPath": "/Project"}));
    assert_eq!(
        events[3]["customProperties"],
        json!({
            "PROJECT_ID": "prj-1",
            "PROJECT_ROOT_FOLDER_ID": folder.group_id,
            "FOLDER_PROJECT_ACTIVITY_ACTION_INFO": "status changed to active",
        })
    );
    sb.assert_conformant();
}

/// The CSV logins report (logins only) of the days from `start` to `end`.
async fn logins_csv(sb: &Sandbox, start: &str, end: &str) -> String {
    let filters =
        json!({"format": "csv", "date_start": start, "date_end": end, "events": ["logins"]});
    csv_report(sb, "logins", filters).await
}

/// A finished CSV report of `kind` for `body`, as text.
async fn csv_report(sb: &Sandbox, kind: &str, body: Value) -> String {
    let token = sb.admin_token();
    let created = sb
        .raw()
        .post(&format!("/v1/audit/{kind}"), &token, &body)
        .await;
    assert_eq!(created.status, 202, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    sb.advance(sb.config().audit.job_duration);
    sb.raw()
        .get(&format!("/v1/audit/{kind}/{id}"), &token)
        .await
        .text()
}

#[tokio::test]
async fn the_files_csv_has_the_header_the_platforms_clients_show() {
    let sb = sandbox(LimitsConfig::generous()).await;
    sb.activity_as("sam").create_folder("/Audit").unwrap();
    sb.activity_as("sam")
        .create_file("/Audit/q1.pdf", "numbers")
        .unwrap();
    let csv = csv_report(
        &sb,
        "files",
        json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-03", "folders": ["/Audit"]}),
    )
    .await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[1],
        "File/Folder,Target Path/Link,User/Location,Transaction Type,Action Info,Access,Time,\
         IP Address"
    );
    assert!(lines.contains(&"q1.pdf,/Audit/q1.pdf,sam,upload,,Web,2025-03-03T09:00:00Z,127.0.0.1"));
    assert!(lines.contains(&"Audit,/Audit,sam,create_folder,,Web,2025-03-03T09:00:00Z,127.0.0.1"));
    // Logins keep the reference's columns (the reference decides where it shows them).
    let logins = logins_csv(&sb, "2025-03-01", "2025-03-02").await;
    assert_eq!(
        logins.lines().nth(1),
        Some("Username,Event,IP Address,Access,Time")
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn a_report_has_no_row_after_the_sandboxs_now_and_its_title_says_so() {
    let sb = sandbox(LimitsConfig::generous()).await;
    // The manual clock is at 2025-03-03T09:00:00Z; the range ends two days later.
    let token = sb.admin_token();
    let body = json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-05", "events": ["logins"]});
    let created = sb.raw().post("/v1/audit/logins", &token, &body).await;
    let id = created.json()["id"].as_str().unwrap().to_string();
    let now = sb.now_ms();
    sb.advance(sb.config().audit.job_duration);
    let report = sb
        .raw()
        .get(&format!("/v1/audit/logins/{id}"), &token)
        .await
        .json();
    let events = report["events"].as_array().unwrap();
    assert_eq!(events.len(), 25);
    let now_text = pubapi_testkit::sandbox::iso_seconds(now);
    assert!(
        events
            .iter()
            .all(|e| e["time"].as_str().unwrap() <= now_text.as_str()),
        "{events:?}"
    );
    let csv = logins_csv(&sb, "2025-03-01", "2025-03-05").await;
    // Created at 09:05 (after the first job), the report reflects activity up to then.
    assert_eq!(
        csv.lines().next(),
        Some("This report reflects activity up to 3/3/25 09:05:00")
    );
    // A range wholly in the future has no rows.
    let future = logins_csv(&sb, "2025-03-04", "2025-03-05").await;
    assert_eq!(future.lines().count(), 2, "{future}");
    sb.assert_conformant();
}

#[tokio::test]
async fn violations_by_kind_traffic_and_conformance_are_readable_over_http() {
    let sb = sandbox(LimitsConfig {
        general_per_second: Some(1),
        ..LimitsConfig::generous()
    })
    .await;
    let token = sb.admin_token();
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 200);
    assert_eq!(admin_get(&sb, "/v1/whoami").await.status, 403);
    let (status, counters) = control(&sb, "GET", "/counters", None).await;
    assert_eq!(status, 200);
    assert_eq!(counters["requests"], 2);
    assert_eq!(counters["byOperation"]["whoami"], 2);
    assert_eq!(counters["byStatus"], json!({"200": 1, "403": 1}));
    assert_eq!(counters["violations"], 1);
    assert_eq!(counters["violationsByKind"]["overQps"], 1);
    // Every kind is listed, with the rule it breaks.
    assert_eq!(
        counters["violationsByKind"].as_object().unwrap().len(),
        Violation::ALL.len()
    );
    let over_qps = entry(&counters["violationRules"], "kind", "overQps");
    assert_eq!(over_qps["count"], 1);
    assert!(over_qps["rule"].as_str().unwrap().contains("per-second"));
    let (_, state) = control(&sb, "GET", "", None).await;
    assert_eq!(state["counters"]["violationsByKind"]["overQps"], 1);

    let (status, traffic) = control(&sb, "GET", "/traffic", None).await;
    assert_eq!(status, 200);
    let exchanges = traffic["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 2);
    assert_eq!(exchanges[1]["operation"], "whoami");
    assert_eq!(exchanges[1]["status"], 403);
    assert!(
        exchanges[1]["responseHeaders"]
            .as_array()
            .unwrap()
            .contains(&json!([
                "X-Gateway-Error-Code",
                "ERR_403_DEVELOPER_OVER_QPS"
            ]))
    );
    let (_, later) = control(&sb, "GET", "/traffic?after=1", None).await;
    assert_eq!(later["exchanges"].as_array().unwrap().len(), 1);
    assert_eq!(later["lastSeq"], 2);
    let (status, refused) = control(&sb, "GET", "/traffic?after=x", None).await;
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().unwrap().contains("after"));

    let (status, report) = control(&sb, "GET", "/conformance", None).await;
    assert_eq!(status, 200);
    assert_eq!(report["conformant"], true);
    assert_eq!(report["checked"], 2);
    assert_eq!(report["problems"], json!([]));
    // A delivery body outside the spec is named.
    let receiver = TestReceiver::start(&[]).await;
    sb.advance(Duration::from_secs(1));
    sb.raw()
        .post("/v1/webhooks", &token, &json!({"url": receiver.url()}))
        .await;
    sb.activity()
        .emit("fs:add_file", json!({"unexpected": true}), &[])
        .unwrap();
    sb.settle().await;
    let (_, report) = control(&sb, "GET", "/conformance", None).await;
    assert_eq!(report["conformant"], false);
    let problems = report["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().starts_with("delivery ")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_new_process_of_a_token_with_24_ai_calls_today_gets_its_answer_without_waiting_a_minute()
{
    use pubapi_sdk_ext::ai::AiWait;
    let mut config = SandboxConfig::testing().with_limits(LimitsConfig::reference());
    config.ai.agent_polls = 1;
    let sb = Sandbox::start(config).await;
    // 24 AI calls today, in three minutes of the sandbox's clock (10 a minute).
    for i in 0..24 {
        if i > 0 && i % 10 == 0 {
            sb.advance(Duration::from_secs(61));
        }
        assert_eq!(admin_get(&sb, "/v1/ai/agents/list").await.status, 200);
    }
    sb.advance(Duration::from_secs(61));
    // A new process: its pacer has seen none of them, the gateway's count says 24.
    let client = sb.client_for("admin");
    let started = std::time::Instant::now();
    let how = AiWait {
        min_interval: AiWait::FLOOR,
        ..AiWait::default()
    };
    let answer = client
        .agents()
        .ask_and_wait(SAMPLE_AGENT, SAMPLE_QUESTION, how)
        .await
        .unwrap();
    assert_eq!(answer.result.status.to_string(), "COMPLETED");
    let quota = client.quota(LimitClass::Ai);
    // The ask and its polls after the 24, all counted in the day.
    let counted = quota.server.and_then(|s| s.quota_current).unwrap();
    assert!(counted >= 26, "{quota:?}");
    assert_eq!(quota.used_today, Some(counted));
    // The day's count is in the day, not in the minute: the next AI call may start soon.
    assert!(quota.next_slot_in < Duration::from_secs(10), "{quota:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(sb.counters().total_violations(), 0);
}
