//! Audit reporting v1 in the sandbox (reference 4.7): validation, the job state machine on
//! the sandbox clock, JSON and CSV reports, deletion, poll intervals, lazy large reports.

use pubapi_sdk::types::{AuditReportKind, LoginsAuditRequest};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::AUDIT_KINDS;
use pubapi_testkit::admin_post;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{CSV_TITLE_PREFIX, Sandbox, SandboxConfig, Violation};
use pubapi_testkit::sandbox_with;
use serde_json::{Value, json};
use std::time::Duration;

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

fn logins(format: &str) -> Value {
    json!({"format": format, "date_start": "2025-03-01", "date_end": "2025-03-04", "events": ["logins", "failed_attempts"]})
}

/// Creates a job and returns its id.
async fn create(sb: &Sandbox, kind: &str, body: &Value) -> String {
    let reply = sb
        .raw()
        .post(&format!("/v1/audit/{kind}"), &sb.admin_token(), body)
        .await;
    assert_eq!(reply.status, 202, "{}", reply.text());
    reply.json()["id"].as_str().unwrap().to_string()
}

fn codes(reply: &pubapi_testkit::sandbox::RawResponse) -> Vec<String> {
    reply.json()["Errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn creation_validates_bodies_like_the_reference() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "logins",
            json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-02"}),
            vec!["MISSING_FIELD"],
        ),
        (
            "logins",
            json!({"format": "pdf", "date_start": "2025-03-01", "date_end": "2025-03-02", "events": ["logins"]}),
            vec!["INVALID_VALUE"],
        ),
        (
            "logins",
            json!({"format": "json", "date_start": "March 1", "date_end": "2025-03-02T10:00:00", "events": ["logins"]}),
            vec!["INVALID_DATE", "INVALID_DATE"],
        ),
        (
            "logins",
            json!({"format": "json", "date_start": "2025-03-02", "date_end": "2025-03-01", "events": ["logins"]}),
            vec!["INVALID_DATE_RANGE"],
        ),
        (
            "logins",
            json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-02", "events": ["logins"], "access_points": ["desktop"]}),
            vec!["INVALID_VALUE"],
        ),
        (
            "logins",
            json!({"format": "json", "date_start": "2025-03-02T10:00:00Z", "date_end": "2025-03-02T10:00:00Z", "events": ["logins"]}),
            vec!["INVALID_DATE_RANGE"],
        ),
        (
            "files",
            json!({"format": "json", "date_start": "2025-03-02", "date_end": "2025-03-01T23:00:00Z", "folders": ["/Company"]}),
            vec!["INVALID_DATE_RANGE"],
        ),
        (
            "files",
            json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02"}),
            vec!["MISSING_FIELD"],
        ),
        (
            "files",
            json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02", "file": "*.pdf"}),
            vec!["INVALID_VALUE"],
        ),
        (
            "workflows",
            json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02", "workflow_types": ["KANBAN"]}),
            vec!["INVALID_VALUE"],
        ),
        (
            "groups",
            json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02", "suppress_emails": true}),
            vec!["INVALID_FIELD"],
        ),
        (
            "users",
            json!({"format": "csv"}),
            vec!["MISSING_FIELD", "MISSING_FIELD"],
        ),
    ];
    for (kind, body, want) in cases {
        let reply = raw.post(&format!("/v1/audit/{kind}"), &token, &body).await;
        assert_eq!(reply.status, 400, "{kind} {body}");
        assert_eq!(codes(&reply), want, "{kind} {body}");
    }
    let malformed = raw
        .request("POST", "/v1/audit/logins", Some(&token))
        .body("{not json")
        .send()
        .await;
    assert_eq!(malformed.status, 400);
    assert_eq!(codes(&malformed), vec!["INVALID_BODY"]);
    sb.assert_conformant();
}

#[tokio::test]
async fn every_kind_accepts_a_minimal_body() {
    let sb = sandbox().await;
    for kind in AUDIT_KINDS {
        let mut body = json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-02T12:00:00Z"});
        match kind {
            "logins" => body["events"] = json!(["logins"]),
            "files" => body["folders"] = json!(["/Company"]),
            _ => {}
        }
        create(&sb, kind, &body).await;
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn creation_answers_202_with_the_job_location() {
    let sb = sandbox().await;
    let reply = admin_post(&sb, "/v1/audit/logins", &logins("json")).await;
    assert_eq!(reply.status, 202);
    let id = reply.json()["id"].as_str().unwrap().to_string();
    assert_eq!(
        reply.header("location").unwrap(),
        format!("{}/v1/audit/jobs/{id}", sb.base_url())
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn job_runs_for_the_configured_time_then_303_with_the_report_location() {
    let sb = sandbox().await;
    let id = create(&sb, "logins", &logins("json")).await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let first = raw.get(&format!("/v1/audit/jobs/{id}"), &token).await;
    assert_eq!(
        (first.status, first.json()),
        (200, json!({"status": "running"}))
    );
    sb.advance(Duration::from_secs(120));
    let second = raw.get(&format!("/v1/audit/jobs/{id}"), &token).await;
    assert_eq!(second.json()["status"], "running");
    sb.advance(Duration::from_secs(180));
    let done = raw.get(&format!("/v1/audit/jobs/{id}"), &token).await;
    assert_eq!(done.status, 303);
    assert_eq!(done.json(), json!({"status": "completed"}));
    assert_eq!(
        done.header("location").unwrap(),
        format!("{}/v1/audit/logins/{id}", sb.base_url())
    );
    assert_eq!(sb.counters().violations_of(Violation::AuditPollTooSoon), 0);
    sb.assert_conformant();
}

#[tokio::test]
async fn job_polls_closer_than_2_minutes_are_counted() {
    let sb = sandbox().await;
    let id = create(&sb, "logins", &logins("json")).await;
    let path = format!("/v1/audit/jobs/{id}");
    let token = sb.admin_token();
    sb.raw().get(&path, &token).await;
    sb.advance(Duration::from_secs(119));
    assert_eq!(sb.raw().get(&path, &token).await.status, 200);
    sb.advance(Duration::from_secs(120));
    sb.raw().get(&path, &token).await;
    assert_eq!(sb.counters().violations_of(Violation::AuditPollTooSoon), 1);
    sb.assert_conformant();
}

#[tokio::test]
async fn early_polls_are_refused_with_429_when_enforced() {
    let sb = sandbox_with(|config| config.audit.enforce_poll_interval = true).await;
    let id = create(&sb, "logins", &logins("json")).await;
    let path = format!("/v1/audit/jobs/{id}");
    let token = sb.admin_token();
    sb.raw().get(&path, &token).await;
    sb.advance(Duration::from_secs(30));
    let early = sb.raw().get(&path, &token).await;
    assert_eq!(early.status, 429);
    assert_eq!(early.header("retry-after"), Some("90"));
    sb.assert_conformant();
}

async fn finished(sb: &Sandbox, kind: &str, body: &Value) -> String {
    let id = create(sb, kind, body).await;
    sb.advance(sb.config().audit.job_duration);
    id
}

#[tokio::test]
async fn json_report_pages_with_offset_and_count() {
    let sb = sandbox().await;
    let id = finished(&sb, "logins", &logins("json")).await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let all = raw.get(&format!("/v1/audit/logins/{id}"), &token).await;
    assert_eq!(all.status, 200);
    assert_eq!(all.header("content-type"), Some("application/json"));
    let all = all.json();
    assert_eq!(all["total_count"], 25);
    assert_eq!(all["offset"], 0);
    assert_eq!(all["count"], 25);
    let events = all["events"].as_array().unwrap();
    for event in events {
        assert!(["logins", "failed_attempts"].contains(&event["event"].as_str().unwrap()));
        assert!(event["user_id"].is_i64());
    }
    let times: Vec<&str> = events.iter().map(|e| e["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "time order");
    let page = raw
        .get(&format!("/v1/audit/logins/{id}?offset=20&count=10"), &token)
        .await
        .json();
    assert_eq!(
        (page["offset"].clone(), page["count"].clone()),
        (json!(20), json!(5))
    );
    assert_eq!(page["events"].as_array().unwrap()[..], events[20..]);
    let bad = raw
        .get(&format!("/v1/audit/logins/{id}?offset=-1"), &token)
        .await;
    assert_eq!(bad.status, 400);
    sb.assert_conformant();
}

#[tokio::test]
async fn activity_appears_in_reports_and_filters_apply() {
    let sb = sandbox().await;
    sb.activity_as("sam")
        .login("logins", "192.0.2.7", "Mobile")
        .unwrap();
    sb.activity_as("sam").create_folder("/Audit").unwrap();
    sb.activity_as("sam")
        .create_file("/Audit/q1.pdf", "numbers")
        .unwrap();
    let mut config_body = logins("json");
    config_body["date_start"] = json!("2025-03-03");
    config_body["users"] = json!(["sam"]);
    config_body["access_points"] = json!(["Mobile"]);
    config_body["events"] = json!(["logins"]);
    let id = finished(&sb, "logins", &config_body).await;
    let report = sb
        .raw()
        .get(&format!("/v1/audit/logins/{id}"), &sb.admin_token())
        .await
        .json();
    let events = report["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .all(|e| e["username"] == "sam" && e["access"] == "Mobile")
    );
    assert!(events.iter().any(|e| e["ip_address"] == "192.0.2.7"));

    let files = json!({"format": "json", "date_start": "2025-03-03", "date_end": "2025-03-04", "folders": ["/Audit"], "transaction_type": ["upload"]});
    let id = finished(&sb, "files", &files).await;
    let report = sb
        .raw()
        .get(&format!("/v1/audit/files/{id}"), &sb.admin_token())
        .await
        .json();
    let recorded: Vec<&Value> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target_path"] == "/Audit/q1.pdf")
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["username"], "sam");
    assert_eq!(recorded[0]["transaction"], "upload");
    sb.assert_conformant();
}

#[tokio::test]
async fn csv_reports_start_with_the_title_row_then_the_logins_columns() {
    let sb = sandbox().await;
    // From 2025-03-03 to the 5th: the range is over (a range ending later ends at now).
    sb.advance(Duration::from_secs(2 * 86_400));
    let id = finished(&sb, "logins", &logins("csv")).await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let csv = raw.get(&format!("/v1/audit/logins/{id}"), &token).await;
    assert_eq!(csv.header("content-type"), Some("text/csv"));
    let text = csv.text();
    let mut lines = text.lines();
    // The logins range ends with the `date_end` day 2025-03-04 (a plain `date_end` is the
    // last day covered).
    let title = lines.next().unwrap_or_default();
    assert!(title.starts_with(CSV_TITLE_PREFIX), "{title}");
    assert_eq!(title, "This report reflects activity up to 3/4/25 23:59:59");
    assert_eq!(lines.next(), Some("Username,Event,IP Address,Access,Time"));
    assert_eq!(lines.count(), 25);
    assert!(text.ends_with("\r\n") && text.lines().all(|l| !l.ends_with('\r')));
    // A csv job asked for JSON only answers JSON.
    let json = raw
        .request("GET", &format!("/v1/audit/logins/{id}"), Some(&token))
        .header("Accept", "application/json")
        .send()
        .await;
    assert_eq!(json.json()["total_count"], 25);
    // A json job asked for CSV only answers CSV.
    let id = finished(&sb, "logins", &logins("json")).await;
    let csv = raw
        .request("GET", &format!("/v1/audit/logins/{id}"), Some(&token))
        .header("Accept", "text/csv")
        .send()
        .await;
    assert!(
        csv.text().starts_with(
            "This report reflects activity up to 3/4/25 23:59:59\r\nUsername,Event,IP Address,Access,Time\r\n"
        ),
        "{}",
        csv.text()
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn csv_title_row_names_the_end_of_the_last_day_where_the_time_is_ignored() {
    let sb = sandbox().await;
    let id = finished(
        &sb,
        "files",
        &json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02T08:30:00Z", "folders": ["/Company"]}),
    )
    .await;
    let csv = sb
        .raw()
        .get(&format!("/v1/audit/files/{id}"), &sb.admin_token())
        .await;
    let text = csv.text();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("This report reflects activity up to 3/2/25 23:59:59")
    );
    assert_eq!(
        lines.next(),
        Some(
            "File/Folder,Target Path/Link,User/Location,Transaction Type,Action Info,Access,Time,\
             IP Address"
        )
    );
    assert_eq!(lines.count(), 25);
    sb.assert_conformant();
}

/// The events of a finished JSON report of `kind` for `body`.
async fn events_of(sb: &Sandbox, kind: &str, body: &Value) -> Vec<Value> {
    let id = finished(sb, kind, body).await;
    let report = sb
        .raw()
        .get(&format!("/v1/audit/{kind}/{id}"), &sb.admin_token())
        .await;
    assert_eq!(report.status, 200, "{}", report.text());
    report.json()["events"].as_array().unwrap().clone()
}

#[tokio::test]
async fn access_points_are_accepted_in_any_letter_case() {
    let sb = sandbox().await;
    sb.activity_as("sam")
        .login("logins", "192.0.2.7", "Mobile")
        .unwrap();
    // The platform's clients send `web`, `mobile`, `ftp`; the reference lists `Web`, `FTP`,
    // `Mobile` and leaves the letter case open.
    for (sent, listed) in [
        ("web", "Web"),
        ("mobile", "Mobile"),
        ("ftp", "FTP"),
        ("MOBILE", "Mobile"),
        ("Web", "Web"),
    ] {
        let mut body = logins("json");
        body["date_start"] = json!("2025-03-03");
        body["access_points"] = json!([sent]);
        let events = events_of(&sb, "logins", &body).await;
        assert!(!events.is_empty(), "{sent}");
        assert!(events.iter().all(|e| e["access"] == listed), "{sent}");
        let recorded = events.iter().any(|e| e["ip_address"] == "192.0.2.7");
        assert_eq!(recorded, listed == "Mobile", "{sent}");
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn a_same_day_range_covers_that_whole_day() {
    let sb = sandbox().await;
    // The manual clock starts at 2025-03-03T09:00:00Z.
    sb.activity_as("sam")
        .login("logins", "192.0.2.9", "Web")
        .unwrap();
    sb.activity_as("sam").create_folder("/SameDay").unwrap();
    // The day is over when the reports are asked for (a day still running ends at now).
    sb.advance(Duration::from_secs(86_400));
    for (kind, mut body, recorded) in [
        (
            "logins",
            json!({"events": ["logins"], "users": ["sam"]}),
            ("ip_address", "192.0.2.9"),
        ),
        (
            "files",
            json!({"folders": ["/SameDay"]}),
            ("target_path", "/SameDay"),
        ),
    ] {
        body["format"] = json!("json");
        body["date_start"] = json!("2025-03-03");
        body["date_end"] = json!("2025-03-03");
        let events = events_of(&sb, kind, &body).await;
        assert!(
            events.iter().any(|e| e[recorded.0] == recorded.1),
            "{kind}: {events:?}"
        );
        assert!(
            events
                .iter()
                .all(|e| e["time"].as_str().unwrap().starts_with("2025-03-03T")),
            "{kind}"
        );
        body["format"] = json!("csv");
        let id = finished(&sb, kind, &body).await;
        let csv = sb
            .raw()
            .get(&format!("/v1/audit/{kind}/{id}"), &sb.admin_token())
            .await
            .text();
        assert!(
            csv.starts_with("This report reflects activity up to 3/3/25 23:59:59\r\n"),
            "{kind}: {csv}"
        );
    }
    // The SDK reads the range as the sandbox does: a same-day request is sent, not refused.
    let request = pubapi_sdk_ext::audit::AuditRequest::from_json(
        AuditReportKind::Logins,
        json!({"format": "json", "date_start": "2025-03-03", "date_end": "2025-03-03", "events": ["logins"]}),
    )
    .unwrap();
    let job = sb.client_for("power").audit().create(request).await;
    assert!(job.is_ok(), "{job:?}");
    sb.assert_conformant();
}

#[tokio::test]
async fn reports_are_404_before_they_are_ready_after_deletion_and_for_another_type() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let status_of = async |path: &str| raw.get(path, &token).await.status;
    let id = create(&sb, "logins", &logins("json")).await;
    assert_eq!(status_of(&format!("/v1/audit/logins/{id}")).await, 404);
    sb.advance(Duration::from_secs(300));
    assert_eq!(status_of(&format!("/v1/audit/files/{id}")).await, 404);
    assert_eq!(status_of(&format!("/v1/audit/bogus/{id}")).await, 400);
    let deleted = raw
        .request("DELETE", &format!("/v1/audit/logins/{id}"), Some(&token))
        .send()
        .await;
    assert_eq!((deleted.status, deleted.body.len()), (204, 0));
    assert_eq!(status_of(&format!("/v1/audit/logins/{id}")).await, 404);
    assert_eq!(status_of(&format!("/v1/audit/jobs/{id}")).await, 404);
    let again = raw
        .request("DELETE", &format!("/v1/audit/logins/{id}"), Some(&token))
        .send()
        .await;
    assert_eq!(again.status, 404);
    assert_eq!(again.json()["Errors"][0]["code"], "NOT_FOUND");
    sb.assert_conformant();
}

#[tokio::test]
async fn a_million_event_report_is_paged_lazily() {
    let sb = sandbox_with(|config| config.audit.synthetic_events = 1_000_000).await;
    let id = finished(&sb, "files", &json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-03-01", "file": "report*"})).await;
    let page = sb
        .raw()
        .get(
            &format!("/v1/audit/files/{id}?offset=999950&count=100"),
            &sb.admin_token(),
        )
        .await
        .json();
    assert_eq!(page["total_count"], 1_000_000);
    assert_eq!(page["count"], 50);
    assert_eq!(page["events"].as_array().unwrap().len(), 50);
    sb.assert_conformant();
}

#[tokio::test]
async fn reports_are_deterministic_for_a_seed() {
    let mut pages = Vec::new();
    for _ in 0..2 {
        let sb = sandbox().await;
        let id = finished(
            &sb,
            "users",
            &json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-03"}),
        )
        .await;
        let page = sb
            .raw()
            .get(&format!("/v1/audit/users/{id}?count=5"), &sb.admin_token())
            .await
            .json();
        pages.push(page);
    }
    assert_eq!(pages[0], pages[1]);
    assert_eq!(pages[0]["events"][0]["action_source"], "WebUI");
}

#[tokio::test]
async fn audit_end_to_end_through_the_client() {
    let sb = sandbox().await;
    let client = sb.client_for("power");
    let body: LoginsAuditRequest = serde_json::from_value(logins("json")).unwrap();
    let created = client
        .sdk()
        .create_logins_audit()
        .body(body)
        .send()
        .await
        .unwrap();
    let location = created
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap()
        .to_string();
    let id = created.into_inner().id;
    assert!(location.ends_with(&format!("/v1/audit/jobs/{id}")));
    let running = client.sdk().get_audit_job().id(&id).send().await.unwrap();
    assert_eq!(running.into_inner().status.to_string(), "running");
    sb.advance(Duration::from_secs(300));
    match client.sdk().get_audit_job().id(&id).send().await {
        Err(pubapi_sdk::Error::UnexpectedResponse(response)) => {
            assert_eq!(response.status().as_u16(), 303);
            let location = response.headers()["location"].to_str().unwrap();
            assert!(location.ends_with(&format!("/v1/audit/logins/{id}")));
        }
        other => panic!("expected the 303, got {other:?}"),
    }
    let report = client
        .sdk()
        .get_audit_report()
        .type_(AuditReportKind::Logins)
        .id(&id)
        .offset(5u64)
        .count(3u64)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (report.total_count, report.offset, report.count),
        (Some(25), Some(5), Some(3))
    );
    client
        .sdk()
        .delete_audit_report()
        .type_(AuditReportKind::Logins)
        .id(&id)
        .send()
        .await
        .unwrap();
    let gone = error_of(
        client
            .sdk()
            .get_audit_report()
            .type_(AuditReportKind::Logins)
            .id(&id)
            .send(),
    )
    .await;
    assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
    sb.assert_conformant();
}

#[tokio::test]
async fn a_whole_large_json_report_is_written_page_by_page() {
    let sb = sandbox_with(|config| config.audit.synthetic_events = 25_000).await;
    let id = finished(&sb, "logins", &logins("json")).await;
    let token = sb.admin_token();
    let all = sb
        .raw()
        .get(&format!("/v1/audit/logins/{id}?offset=5"), &token)
        .await
        .json();
    assert_eq!(
        (all["total_count"].clone(), all["count"].clone()),
        (json!(25_000), json!(24_995))
    );
    let events = all["events"].as_array().unwrap();
    assert_eq!(events.len(), 24_995);
    let around = sb
        .raw()
        .get(
            &format!("/v1/audit/logins/{id}?offset=10004&count=2"),
            &token,
        )
        .await
        .json();
    assert_eq!(
        around["events"].as_array().unwrap()[..],
        events[9_999..10_001]
    );
    sb.assert_conformant();
}
