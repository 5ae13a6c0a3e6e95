//! Audit report jobs and reports against a scripted audit API, with paused time.

use futures_util::StreamExt;
use pubapi_sdk::types::{AuditFormat, AuditReportKind, LoginEvent, LoginsAuditRequest};
use pubapi_sdk_ext::audit::{
    AuditEvent, AuditJob, AuditWait, CsvRows, FinishedReport, JobObserver, JobState, ReadError,
    ReportLocation, ReportRead,
};
use pubapi_sdk_ext::testing::{Answer, Script, Seen};
use pubapi_sdk_ext::waiter::{Started, WaitError};
use pubapi_sdk_ext::{Budget, Client, Error, Limits};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

fn client(script: &Arc<Script>) -> Client {
    script
        .builder()
        .limits(Limits {
            general: Budget::new(Some(2), Some(1_000_000)),
            ai: Budget::new(None, Some(100)),
        })
        .build()
        .unwrap()
}

fn logins(format: AuditFormat) -> LoginsAuditRequest {
    LoginsAuditRequest {
        suppress_emails: true,
        ..LoginsAuditRequest::new("2026-01-01", "2026-01-31", format, [LoginEvent::Logins]).unwrap()
    }
}

fn param(seen: &Seen, name: &str) -> Option<u64> {
    seen.query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// An audit API whose job is done after `running_polls` polls, with a report of `total`
/// login events served in pages.
fn audit_api(running_polls: u32, total: u64) -> Arc<Script> {
    let polls = AtomicU32::new(0);
    Script::handler(
        move |seen| match (seen.method.as_str(), seen.path.as_str()) {
            ("POST", "/pubapi/v1/audit/logins") => Answer::json(202, r#"{"id":"j1"}"#)
                .header("location", "http://sandbox.test/pubapi/v1/audit/jobs/j1"),
            ("GET", "/pubapi/v1/audit/jobs/j1") => {
                if polls.fetch_add(1, Ordering::SeqCst) < running_polls {
                    Answer::json(200, r#"{"status":"running"}"#)
                } else {
                    Answer::json(303, r#"{"status":"completed"}"#)
                        .header("location", "http://sandbox.test/pubapi/v1/audit/logins/j1")
                }
            }
            ("GET", "/pubapi/v1/audit/logins/j1") if seen.headers["accept"] == "text/csv" => {
                Answer::empty(200)
                    .header("content-type", "text/csv")
                    .body(csv_body())
            }
            ("GET", "/pubapi/v1/audit/logins/j1") => {
                let offset = param(seen, "offset").unwrap_or(0);
                let count = param(seen, "count").unwrap_or(total);
                let events: Vec<_> = (offset..(offset + count).min(total))
                    .map(|i| {
                        json!({"username": format!("u{i}"), "user_id": i, "event": "login",
                                "ip_address": "192.0.2.1", "access": "Web",
                                "time": "2026-01-02T10:00:00Z"})
                    })
                    .collect();
                Answer::json(
                200,
                json!({"total_count": total, "offset": offset, "count": events.len(), "events": events})
                    .to_string(),
            )
            }
            ("DELETE", "/pubapi/v1/audit/logins/j1") => Answer::empty(204),
            _ => Answer::empty(404),
        },
    )
}

fn csv_body() -> String {
    let mut body = String::from("Username,Event,IP Address,Access,Time\n");
    for i in 0..20_000 {
        body.push_str(&format!(
            "user{i},login,192.0.2.{},Web,2026-01-02T10:00:00Z\n",
            i % 250
        ));
    }
    body
}

fn job_poll_times(script: &Script) -> Vec<Duration> {
    script
        .seen()
        .into_iter()
        .filter(|s| s.path.ends_with("/jobs/j1"))
        .map(|s| s.at)
        .collect()
}

/// An [`audit_api`] and a client of it.
fn audit_client(running_polls: u32, total: u64) -> (Arc<Script>, Client) {
    let script = audit_api(running_polls, total);
    let client = client(&script);
    (script, client)
}

/// Polls every `interval` seconds at most, for at most `deadline` seconds.
fn polled(interval: u64, deadline: u64) -> AuditWait {
    AuditWait {
        interval: Duration::from_secs(interval),
        deadline: Duration::from_secs(deadline),
        ..AuditWait::default()
    }
}

/// Creates the JSON logins job of [`logins`].
async fn create_logins_json(client: &Client) -> AuditJob {
    client
        .audit()
        .create(logins(AuditFormat::Json))
        .await
        .unwrap()
}

/// Runs the logins job of [`logins`] in `format`, waiting `how`.
async fn run_logins(
    client: &Client,
    format: AuditFormat,
    how: AuditWait,
) -> Result<FinishedReport, WaitError<Error>> {
    client.audit().run(logins(format), how).await
}

/// The rows of a CSV report whose body is `body`.
async fn csv_rows(body: &'static str) -> CsvRows {
    let script = Script::new(
        vec![
            Answer::empty(200)
                .header("content-type", "text/csv")
                .body(body),
        ],
        Answer::empty(404),
    );
    client(&script)
        .audit()
        .csv(&logins_report())
        .await
        .unwrap()
        .rows()
}

#[tokio::test(start_paused = true)]
async fn job_polls_are_at_least_two_minutes_apart_even_when_configured_shorter() {
    let (script, client) = audit_client(3, 10);
    let how = polled(5, 3600);
    let report = run_logins(&client, AuditFormat::Json, how).await.unwrap();
    // The first poll follows the creation call by the pacer's 550 ms; then 2 minutes after
    // each answer.
    let ms = Duration::from_millis;
    assert_eq!(
        job_poll_times(&script),
        vec![ms(550), ms(120_550), ms(240_550), ms(360_550)]
    );
    assert_eq!(report.location, logins_report());
    assert!(
        script
            .seen()
            .iter()
            .all(|s| !s.path.ends_with("/logins/j1")),
        "the 303's Location is not followed"
    );
}

#[tokio::test(start_paused = true)]
async fn the_status_hook_is_told_each_polls_state_when_it_is_answered() {
    let (_script, client) = audit_client(2, 1);
    let job = create_logins_json(&client).await;
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let started = tokio::time::Instant::now();
    let how = AuditWait {
        on_status: JobObserver::new({
            let told = told.clone();
            move |state| {
                told.lock()
                    .unwrap()
                    .push((started.elapsed(), state.clone()))
            }
        }),
        ..AuditWait::default()
    };
    let at = client.audit().wait(&job, how).await.unwrap();
    let running = JobState::Running {
        status: "running".into(),
    };
    let ms = Duration::from_millis;
    // Each state as its answer arrives: the first poll after the pacer's 550 ms, then every
    // 2 minutes.
    assert_eq!(
        *told.lock().unwrap(),
        vec![
            (ms(550), running.clone()),
            (ms(120_550), running),
            (ms(240_550), JobState::Completed(at)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_clock_60_times_faster_is_polled_every_2_of_its_minutes() {
    let (script, client) = audit_client(2, 1);
    let how = AuditWait {
        // Shorter than the minimum, which holds in the server's time.
        interval: Duration::from_secs(30),
        server_time_scale: 60,
        ..AuditWait::default()
    };
    run_logins(&client, AuditFormat::Json, how).await.unwrap();
    let ms = Duration::from_millis;
    assert_eq!(job_poll_times(&script), vec![ms(550), ms(2_550), ms(4_550)]);
}

#[tokio::test(start_paused = true)]
async fn job_see_other_yields_the_report_location() {
    let script = audit_api(0, 1);
    let state = client(&script).audit().job_state("j1").await.unwrap();
    assert_eq!(state, JobState::Completed(logins_report()));
}

#[tokio::test(start_paused = true)]
async fn a_303_whose_body_is_not_the_status_still_yields_the_report_location() {
    for body in ["<html>moved</html>", "{\"status\": 7}", "completed"] {
        let script = Script::new(
            vec![],
            Answer::empty(303)
                .header("location", "http://sandbox.test/pubapi/v1/audit/logins/j1")
                .body(body),
        );
        let state = client(&script).audit().job_state("j1").await.unwrap();
        let at = logins_report();
        assert_eq!(state, JobState::Completed(at), "{body}");
    }
}

#[tokio::test(start_paused = true)]
async fn location_on_another_origin_is_refused() {
    let script = Script::new(
        vec![],
        Answer::empty(303).header(
            "location",
            "https://evil.example.net/pubapi/v1/audit/logins/j1",
        ),
    );
    match client(&script).audit().job_state("j1").await {
        Err(Error::Decode { path, .. }) => assert_eq!(path, "Location"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn wait_gives_up_at_the_deadline_and_says_how_long_and_how_often() {
    let (_script, client) = audit_client(u32::MAX, 1);
    let job = create_logins_json(&client).await;
    let how = polled(120, 300);
    match client.audit().wait(&job, how).await {
        Err(WaitError::TimedOut { polls, waited, .. }) => {
            assert_eq!(polls, 3);
            assert_eq!(waited, Duration::from_millis(240_550));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_that_times_out_hands_back_its_job_to_wait_for_without_making_another() {
    let (script, client) = audit_client(3, 1);
    let how = polled(120, 300);
    let error = run_logins(&client, AuditFormat::Json, how.clone())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("logins report job j1"),
        "{error}"
    );
    let Some(Started::AuditJob {
        id, kind, format, ..
    }) = error.started()
    else {
        panic!("{error:?}")
    };
    let job = AuditJob {
        id: id.clone(),
        kind: *kind,
        format: *format,
    };
    let location = client.audit().wait(&job, how).await.unwrap();
    assert_eq!(location.id, "j1");
    let jobs_made = script
        .seen()
        .iter()
        .filter(|seen| seen.method == "POST")
        .count();
    assert_eq!(jobs_made, 1, "one job, made once");
}

#[tokio::test(start_paused = true)]
async fn a_million_event_report_is_read_page_by_page() {
    let (script, client) = audit_client(0, 1_000_000);
    let at = logins_report();
    // Reading 1,500 events fetches exactly two pages: nothing is read ahead.
    let first: Vec<_> = client
        .audit()
        .events(
            at.clone(),
            ReportRead {
                page_size: 1000,
                offset: 0,
            },
        )
        .take(1500)
        .collect()
        .await;
    assert_eq!(first.len(), 1500);
    assert_eq!(script.seen().len(), 2);

    let mut count = 0u64;
    let mut events = client.audit().events(at, ReportRead::default());
    while let Some(event) = events.next().await {
        match event.unwrap() {
            AuditEvent::Logins(login) => assert_eq!(login.user_id, Some(count as i64)),
            other => panic!("{other:?}"),
        }
        count += 1;
    }
    assert_eq!(count, 1_000_000);
    let pages: Vec<_> = script.seen().into_iter().skip(2).collect();
    assert_eq!(pages.len(), 100);
    for (i, page) in pages.iter().enumerate() {
        assert_eq!(param(page, "offset"), Some(i as u64 * 10_000));
        assert_eq!(param(page, "count"), Some(10_000));
    }
}

fn budget_client(script: &Arc<Script>, per_day: u32) -> Client {
    script
        .builder()
        .limits(Limits {
            general: Budget::new(Some(2), Some(per_day)),
            ai: Budget::new(None, Some(100)),
        })
        .build()
        .unwrap()
}

fn logins_report() -> ReportLocation {
    ReportLocation {
        kind: AuditReportKind::Logins,
        id: "j1".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_stopped_by_the_daily_budget_resumes_at_the_offset_it_names() {
    let script = audit_api(0, 50);
    let read = ReportRead {
        page_size: 10,
        offset: 0,
    };
    let mut ids = Vec::new();
    let mut events = budget_client(&script, 3)
        .audit()
        .events(logins_report(), read);
    let resume_at = loop {
        match events.next().await {
            Some(Ok(AuditEvent::Logins(login))) => ids.push(login.user_id.unwrap()),
            Some(Err(ReadError { resume_at, error })) => {
                assert!(matches!(error, Error::QuotaExhausted { .. }), "{error:?}");
                break resume_at;
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(resume_at, 30);
    assert!(events.next().await.is_none(), "an error ends the read");
    // The next day (a fresh budget): continue where it stopped.
    let rest = budget_client(&script, 1000).audit().events(
        logins_report(),
        ReportRead {
            offset: resume_at,
            ..read
        },
    );
    let rest: Vec<_> = rest.map(|e| e.unwrap()).collect().await;
    for event in rest {
        let AuditEvent::Logins(login) = event else {
            panic!("{event:?}")
        };
        ids.push(login.user_id.unwrap());
    }
    assert_eq!(ids, (0..50).collect::<Vec<i64>>());
}

#[tokio::test(start_paused = true)]
async fn a_page_that_is_not_the_one_asked_for_ends_the_read_saying_where_to_resume() {
    // A proxy that drops the query: every page starts at 0, and the second one ends early.
    let pages = std::sync::atomic::AtomicU32::new(0);
    let script = Script::handler(move |_| {
        let n = pages.fetch_add(1, Ordering::SeqCst);
        let events: Vec<_> = (0..if n == 0 { 10 } else { 0 })
            .map(|i| json!({"user_id": i}))
            .collect();
        Answer::json(
            200,
            json!({"total_count": 50, "offset": if n < 2 { 0 } else { 10 }, "events": events})
                .to_string(),
        )
    });
    let read = ReportRead {
        page_size: 10,
        offset: 0,
    };
    let results: Vec<_> = client(&script)
        .audit()
        .events(logins_report(), read)
        .collect()
        .await;
    assert_eq!(results.len(), 11);
    match results.last().unwrap() {
        Err(ReadError {
            resume_at: 10,
            error: Error::Decode { message, .. },
        }) => assert!(message.contains("from 10"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_empty_page_before_the_total_is_an_error_not_the_end() {
    let script = Script::handler(|seen| {
        let offset = param(seen, "offset").unwrap_or(0);
        let events: Vec<_> = (offset..(offset + 10).min(20))
            .map(|i| json!({"user_id": i}))
            .collect();
        Answer::json(
            200,
            json!({"total_count": 50, "offset": offset, "events": events}).to_string(),
        )
    });
    let results: Vec<_> = client(&script)
        .audit()
        .events(
            logins_report(),
            ReportRead {
                page_size: 10,
                offset: 0,
            },
        )
        .collect()
        .await;
    assert_eq!(results.len(), 21);
    assert!(matches!(
        results.last(),
        Some(Err(ReadError { resume_at: 20, .. }))
    ));
}

#[tokio::test(start_paused = true)]
async fn the_plan_says_how_many_calls_a_read_takes_against_the_quota_left() {
    let script = audit_api(0, 1_000_000);
    let client = budget_client(&script, 1000);
    let plan = client
        .audit()
        .plan(&logins_report(), ReportRead::default())
        .await
        .unwrap();
    assert_eq!(plan.total_events, 1_000_000);
    assert_eq!(plan.calls, 100);
    assert_eq!(plan.quota_left, Some(999), "the plan's own call is counted");
    assert!(plan.fits_today());
    let small_pages = client
        .audit()
        .plan(
            &logins_report(),
            ReportRead {
                page_size: 100,
                offset: 500_000,
            },
        )
        .await
        .unwrap();
    assert_eq!(small_pages.events_to_read, 500_000);
    assert_eq!(small_pages.calls, 5_000);
    assert!(!small_pages.fits_today());
}

#[tokio::test(start_paused = true)]
async fn csv_rows_set_the_title_row_apart_and_map_the_header() {
    let body = "This report reflects activity up to 2026-01-31T23:59:59Z\r\n\
                Username,Event,IP Address,Access,Time\r\n\
                alice,login,192.0.2.1,Web,2026-01-02T10:00:00Z\r\n\
                \"bob, jr\",\"failed\"\"attempt\",192.0.2.2,FTP,\"2026-01-03\n10:00\"\r\n";
    let mut rows = csv_rows(body).await;
    let first = rows.next().await.unwrap().unwrap();
    assert_eq!(
        rows.title(),
        Some("This report reflects activity up to 2026-01-31T23:59:59Z")
    );
    assert_eq!(
        first.header(),
        ["Username", "Event", "IP Address", "Access", "Time"]
    );
    assert_eq!(first.get("Username"), Some("alice"));
    let second = rows.next().await.unwrap().unwrap();
    assert_eq!(second.get("Username"), Some("bob, jr"));
    assert_eq!(second.get("Event"), Some("failed\"attempt"));
    assert_eq!(second.get("Time"), Some("2026-01-03\n10:00"));
    assert!(rows.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn csv_without_a_title_row_starts_with_the_header() {
    let body = "\u{feff}Username,Event\nalice,login";
    let mut rows = csv_rows(body).await;
    let row = rows.next().await.unwrap().unwrap();
    assert_eq!(rows.title(), None);
    assert_eq!(row.fields(), ["alice", "login"]);
    assert_eq!(
        row.get("Username"),
        Some("alice"),
        "the byte order mark is dropped"
    );
    assert!(rows.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn csv_report_bytes_are_streamed_intact() {
    let (script, client) = audit_client(0, 1);
    let at = logins_report();
    let mut out = Vec::new();
    let written = client
        .audit()
        .csv(&at)
        .await
        .unwrap()
        .copy_to(&mut out)
        .await
        .unwrap();
    assert_eq!(out, csv_body().into_bytes());
    assert_eq!(written, out.len() as u64);
    let csv_request = script.seen().pop().unwrap();
    assert_eq!(csv_request.headers["accept"], "text/csv");
    assert!(csv_request.headers.contains_key("authorization"));
}

#[tokio::test(start_paused = true)]
async fn deleting_a_report_answers_no_content() {
    let script = audit_api(0, 1);
    let at = logins_report();
    client(&script).audit().remove(&at).await.unwrap();
    assert_eq!(script.seen()[0].method, "DELETE");
}

#[tokio::test(start_paused = true)]
async fn an_invalid_request_is_refused_with_nothing_sent() {
    let script = audit_api(0, 1);
    let mut request = logins(AuditFormat::Csv);
    request.events.clear();
    let result = client(&script).audit().create(request).await;
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert!(script.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn creation_sends_the_body_and_returns_the_job() {
    let script = audit_api(0, 1);
    let job = client(&script)
        .audit()
        .create(logins(AuditFormat::Csv))
        .await
        .unwrap();
    assert_eq!(job.id, "j1");
    assert_eq!(job.kind, AuditReportKind::Logins);
    assert_eq!(job.format, AuditFormat::Csv);
    assert_eq!(script.seen()[0].method, "POST");
}

#[tokio::test(start_paused = true)]
async fn a_csv_read_that_gets_json_or_html_is_a_typed_error_naming_what_came() {
    use pubapi_sdk_ext::audit::CsvError;
    let script = Script::new(
        vec![
            Answer::json(200, r#"{"total_count":1,"events":[{"user_id":1}]}"#),
            Answer::empty(200)
                .header("content-type", "text/html; charset=utf-8")
                .body("<html><body>Sign in</body></html>"),
            Answer::empty(200)
                .header("content-type", "text/csv; charset=utf-8")
                .body("Username,Event\nalice,login\n"),
        ],
        Answer::empty(404),
    );
    let client = client(&script);
    let mut rows = client.audit().csv(&logins_report()).await.unwrap().rows();
    match rows.next().await {
        Some(Err(CsvError::NotCsv { content_type })) => {
            assert_eq!(content_type, "application/json")
        }
        other => panic!("{other:?}"),
    }

    let mut out = Vec::new();
    let report = client.audit().csv(&logins_report()).await.unwrap();
    assert_eq!(report.content_type(), Some("text/html; charset=utf-8"));
    let error = report.copy_to(&mut out).await.unwrap_err();
    assert!(
        matches!(&error, CsvError::NotCsv { content_type } if content_type.starts_with("text/html")),
        "{error:?}"
    );
    assert!(error.to_string().contains("text/html"), "{error}");
    assert!(out.is_empty(), "nothing of the page is written");

    let mut rows = client.audit().csv(&logins_report()).await.unwrap().rows();
    assert_eq!(
        rows.next().await.unwrap().unwrap().get("Username"),
        Some("alice"),
        "text/csv with parameters is CSV"
    );
}

#[tokio::test(start_paused = true)]
async fn reading_a_report_in_another_format_than_its_job_asked_is_refused_before_sending() {
    let (script, client) = audit_client(0, 3);
    let json_report = run_logins(&client, AuditFormat::Json, AuditWait::default())
        .await
        .unwrap();
    let sent = script.seen().len();
    let error = json_report.csv().await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidInput(_)) && error.to_string().contains("json"),
        "{error}"
    );
    assert_eq!(script.seen().len(), sent, "nothing sent");

    let csv_report = run_logins(&client, AuditFormat::Csv, AuditWait::default())
        .await
        .unwrap();
    let sent = script.seen().len();
    let read: Vec<_> = csv_report.events().collect().await;
    assert!(
        matches!(
            read.as_slice(),
            [Err(ReadError {
                resume_at: 0,
                error: Error::InvalidInput(_)
            })]
        ),
        "{read:?}"
    );
    assert!(matches!(
        csv_report.plan(ReportRead::default()).await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(script.seen().len(), sent, "nothing sent");
    assert!(csv_report.csv().await.is_ok(), "its own format is read");
}

#[tokio::test(start_paused = true)]
async fn a_read_from_an_offset_above_i64_max_is_refused_before_sending() {
    // A report page's `offset` and `total_count` are int64 (spec `maximum` of getAuditReport's
    // `offset` and `count`): no page could answer such a read, so nothing is sent.
    let (script, client) = audit_client(0, 50);
    let beyond = i64::MAX as u64 + 1;
    let read = ReportRead {
        page_size: 10,
        offset: beyond,
    };
    let mut events = client.audit().events(logins_report(), read);
    match events.next().await {
        Some(Err(ReadError { resume_at, error })) => {
            assert_eq!(resume_at, beyond);
            assert!(
                matches!(&error, Error::InvalidInput(e) if e.to_string().contains("offset")),
                "{error:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(events.next().await.is_none());
    let plan = client.audit().plan(&logins_report(), read).await;
    assert!(matches!(plan, Err(Error::InvalidInput(_))), "{plan:?}");
    let page = client.audit().page(&logins_report(), beyond, 10).await;
    assert!(matches!(page, Err(Error::InvalidInput(_))), "{page:?}");
    let page = client.audit().page(&logins_report(), 0, beyond).await;
    assert!(matches!(page, Err(Error::InvalidInput(_))), "{page:?}");
    assert_eq!(script.seen().len(), 0, "nothing sent");
    // The largest offset the spec allows is sent.
    let at_max = ReportRead {
        page_size: 10,
        offset: i64::MAX as u64,
    };
    assert!(at_max.check().is_ok());
}

#[tokio::test(start_paused = true)]
async fn events_as_sent_keep_every_field_in_its_order_and_spelling() {
    // Fields the typed logins event does not have, a null, keys out of order, a nested
    // object, a line break between tokens, and an event that is not an object.
    let events = [
        r#"{"username":"ada","logout_time":"2026-01-02T11:00:00Z","user_id":7,"extra":null}"#,
        "{\"time\":\"2026-01-02T10:00:00Z\",\n  \"username\":\"bob\",\"geo\":{\"cc\":\"NZ\"}}",
        "42",
    ];
    let body = format!(
        r#"{{"total_count": 3, "offset": 0, "events": [{}]}}"#,
        events.join(",")
    );
    let script = Script::new(vec![], Answer::json(200, body));
    let sent: Vec<String> = client(&script)
        .audit()
        .events_as_sent(logins_report(), ReportRead::default())
        .map(|event| event.unwrap().get().to_string())
        .collect()
        .await;
    assert_eq!(sent, events);
    // The typed events keep only what the reference shows.
    let typed: Vec<AuditEvent> = client(&script)
        .audit()
        .events(logins_report(), ReportRead::default())
        .map(Result::unwrap)
        .collect()
        .await;
    let first = serde_json::to_value(&typed[0]).unwrap();
    assert!(first.get("logout_time").is_none(), "{first}");
}
