//! `pubapi_sdk_ext::audit::DailyExport` against the sandbox: one whole file per UTC day that
//! has ended by the sandbox's clock, across restarts (a new export on the same state file),
//! faults in the middle of a day, the daily budget, a damaged state file and a held lock.
//!
//! These live in the testkit rather than `sdk-ext/tests` because they need the sandbox, which
//! itself depends on `pubapi-sdk-ext`.

use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{
    DailyExport, DailyExportBuilder, DayError, ExportDay, ExportError, ExportFormat,
    ReportLocation, ReportRead, Start,
};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Budget, Client, Limits};
use pubapi_testkit::export_files_in;
use pubapi_testkit::sandbox::{ClockConfig, Fault, Sandbox, SandboxConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// 2026-03-10T12:00:00Z: the sandbox's now at the start of every test.
const NOON_MARCH_10_MS: i64 = 1_773_144_000_000;

async fn sandbox() -> Sandbox {
    let mut config = SandboxConfig::testing()
        .with_clock(ClockConfig::Manual {
            start_ms: NOON_MARCH_10_MS,
        })
        .with_sample_history();
    config.audit.job_duration = Duration::ZERO;
    Sandbox::start(config).await
}

fn day(text: &str) -> ExportDay {
    ExportDay::parse(text).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    dir
}

/// What most tests start from: the sandbox, the admin's client, and a fresh folder for `name`.
async fn started(name: &str) -> (Sandbox, Client, PathBuf) {
    let sb = sandbox().await;
    let client = sb.client_for("admin");
    (sb, client, temp_dir(name))
}

/// The logins export of these tests, in `dir`, from `start`.
fn export_builder(client: &Client, dir: &Path, start: Start) -> DailyExportBuilder {
    DailyExport::builder(client, AuditReportKind::Logins)
        .start(start)
        .state_file(dir.join("state"))
        .out_dir(dir.join("out"))
        .filters(
            serde_json::json!({"events": ["logins", "logouts", "failed_attempts"]})
                .as_object()
                .unwrap()
                .clone(),
        )
}

/// Filters of logins alone (the export of these tests also has logouts and failed attempts).
fn logins_only() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({"events": ["logins"]})
        .as_object()
        .unwrap()
        .clone()
}

fn export(client: &Client, dir: &Path, start: Start) -> DailyExport {
    export_builder(client, dir, start).build().unwrap()
}

/// A whole CSV day file: the title row, the logins header, and rows of that day only.
fn assert_whole_csv_day(path: &Path, day: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    assert!(
        lines[0].starts_with("This report reflects activity up to"),
        "{text}"
    );
    assert_eq!(lines[1], "Username,Event,IP Address,Access,Time", "{text}");
    for row in &lines[2..] {
        assert!(
            row.contains(&format!(",{day}T")),
            "a row of another day in {day}: {row}"
        );
    }
    assert!(text.ends_with('\n'), "{text}");
    lines.len() - 2
}

#[tokio::test]
async fn three_runs_across_two_days_with_a_fault_mid_day_leave_one_whole_file_per_day() {
    let (sb, client, dir) = started("three-runs").await;
    let out = dir.join("out");

    // Run 1 on March 10: March 9 has ended, March 10 has not.
    let summary = export(&client, &dir, Start::Since(day("2026-03-09")))
        .run()
        .await
        .unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    assert_eq!(summary.written[0].day, day("2026-03-09"));
    assert_eq!(summary.next_day, day("2026-03-10"));
    assert_eq!(summary.server_today, Some(day("2026-03-10")));
    assert_eq!(summary.stopped, None);
    assert!(summary.reports_left.is_empty());
    assert_eq!(export_files_in(&out), ["logins-2026-03-09.csv"]);

    // A day later, the report read breaks in the middle of March 10's download.
    sb.advance(Duration::from_secs(86_400));
    sb.inject(Fault::on("getAuditReport").times(1).cut_body(60));
    let failed = export(&client, &dir, Start::SinceLast)
        .run()
        .await
        .unwrap_err();
    let why = failed_on(&failed, "2026-03-10", 0);
    assert!(matches!(why, DayError::Download(_)), "{failed:?}");
    assert_eq!(sb.faults_left(), 0);
    // Nothing of the day is left behind, not even a temporary file.
    assert_eq!(export_files_in(&out), ["logins-2026-03-09.csv"]);

    // Run 3, a new export on the same state file: March 10 is done again from scratch.
    let summary = export(&client, &dir, Start::SinceLast).run().await.unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    assert_eq!(summary.written[0].day, day("2026-03-10"));
    assert_eq!(summary.next_day, day("2026-03-11"));
    assert_eq!(
        export_files_in(&out),
        ["logins-2026-03-09.csv", "logins-2026-03-10.csv"]
    );
    let rows_9 = assert_whole_csv_day(&out.join("logins-2026-03-09.csv"), "2026-03-09");
    let rows_10 = assert_whole_csv_day(&out.join("logins-2026-03-10.csv"), "2026-03-10");
    assert!(rows_9 > 0 && rows_10 > 0, "{rows_9} {rows_10}");

    // A fourth run the same day has nothing to do and sends one call (the server's time).
    let before = sb.counters().requests;
    let summary = export(&client, &dir, Start::SinceLast).run().await.unwrap();
    assert!(summary.written.is_empty(), "{summary:?}");
    assert_eq!(sb.counters().requests, before + 1);
}

#[tokio::test]
async fn a_job_creation_that_fails_mid_run_keeps_the_days_before_and_the_next_run_resumes() {
    let (sb, client, dir) = started("create-fault").await;
    // March 7, 8 and 9 are whole; the second creation fails (after the client's retries).
    sb.inject(
        Fault::on("createLoginsAudit")
            .after(1)
            .times(20)
            .status(500),
    );
    let failed = export(&client, &dir, Start::Since(day("2026-03-07")))
        .run()
        .await
        .unwrap_err();
    let why = failed_on(&failed, "2026-03-08", 1);
    assert!(matches!(why, DayError::Api(_)), "{failed:?}");
    sb.clear_faults();
    assert_eq!(export_files_in(&dir.join("out")), ["logins-2026-03-07.csv"]);
    let summary = export(&client, &dir, Start::SinceLast).run().await.unwrap();
    let days: Vec<String> = summary.written.iter().map(|w| w.day.to_string()).collect();
    assert_eq!(days, ["2026-03-08", "2026-03-09"]);
    assert_eq!(
        export_files_in(&dir.join("out")),
        [
            "logins-2026-03-07.csv",
            "logins-2026-03-08.csv",
            "logins-2026-03-09.csv"
        ]
    );
}

#[tokio::test]
async fn the_run_stops_cleanly_before_a_day_the_budget_would_not_cover() {
    let sb = sandbox().await;
    // 8 calls a day: the server's time (1), a day (create, poll, read, delete: 4), then 3 left,
    // fewer than the 6 a day is expected to take.
    let client = sb
        .client_builder_for("admin")
        .isolated_budget()
        .limits(Limits {
            general: Budget::new(None, Some(8)),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let dir = temp_dir("budget");
    let summary = export(&client, &dir, Start::Since(day("2026-03-07")))
        .run()
        .await
        .unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    let stop = summary.stopped.clone().expect("stopped for the budget");
    assert_eq!(stop.day, day("2026-03-08"));
    assert_eq!((stop.needed, stop.left), (6, 3));
    assert!(stop.to_string().contains("2026-03-08"), "{stop}");
    assert_eq!(summary.next_day, day("2026-03-08"));
    assert_eq!(export_files_in(&dir.join("out")), ["logins-2026-03-07.csv"]);
    // The state says where the next run starts.
    let state = std::fs::read_to_string(dir.join("state")).unwrap();
    assert!(state.contains("\"next_day\": \"2026-03-08\""), "{state}");
}

#[tokio::test]
async fn a_quota_used_up_in_the_middle_of_a_day_is_a_budget_stop_with_nothing_kept() {
    let (sb, client, dir) = started("quota-mid-day").await;
    sb.inject(Fault::on("getAuditReport").times(1).quota_exhausted(3600));
    let summary = export(&client, &dir, Start::Since(day("2026-03-09")))
        .run()
        .await
        .unwrap();
    assert!(summary.written.is_empty(), "{summary:?}");
    let stop = summary.stopped.expect("stopped for the budget");
    assert_eq!((stop.day, stop.left), (day("2026-03-09"), 0));
    assert_eq!(stop.resets_in, Some(Duration::from_secs(3600)));
    assert!(export_files_in(&dir.join("out")).is_empty());
    // The client keeps to the block the platform asked for: the next run with it stops for
    // the budget before sending anything.
    let before = sb.counters().requests;
    let summary = export(&client, &dir, Start::SinceLast).run().await.unwrap();
    assert_eq!(summary.stopped.map(|s| s.day), Some(day("2026-03-09")));
    assert_eq!(summary.server_today, None);
    assert_eq!(sb.counters().requests, before);
    // A client with a fresh budget (the next day, another process) writes the day.
    let fresh = sb
        .client_builder_for("admin")
        .isolated_budget()
        .build()
        .unwrap();
    let summary = export(&fresh, &dir, Start::SinceLast).run().await.unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    assert_whole_csv_day(&dir.join("out/logins-2026-03-09.csv"), "2026-03-09");
}

/// The NDJSON export of March 9's logins in `dir`, one event a call, its report kept.
fn ndjson_one_event_a_call(client: &Client, dir: &Path) -> DailyExport {
    DailyExport::builder(client, AuditReportKind::Logins)
        .start(Start::Since(day("2026-03-09")))
        .state_file(dir.join("state"))
        .out_dir(dir.join("out"))
        .format(ExportFormat::Ndjson)
        .filters(logins_only())
        .page_size(1)
        .max_days(1)
        .keep_reports(true)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_ndjson_day_cut_by_the_quota_is_read_on_by_the_next_run_from_where_it_stopped() {
    let sb = sandbox().await;
    // What becomes of the part file before the next run starts, and the offset that run
    // reads from: kept as recorded, or longer (a run killed after it wrote more and before
    // it recorded it: cut back to the record), the two events read before the quota ran out;
    // shorter than recorded, or as long but not ending in a whole line, nothing.
    type Change = fn(&str) -> String;
    let cases: [(&str, Change, &str); 4] = [
        ("kept", |read| read.to_string(), "2"),
        ("longer", |read| format!("{read}{{\"username\": \"ha"), "2"),
        ("shortened", |read| read[..read.len() - 1].to_string(), "0"),
        (
            "not a whole line",
            |read| format!("{} ", &read[..read.len() - 1]),
            "0",
        ),
    ];
    for (case, change, first_offset) in cases {
        let dir = temp_dir(&format!("ndjson-quota-{case}"));
        sb.inject(
            Fault::on("getAuditReport")
                .after(2)
                .times(1)
                .quota_exhausted(3600),
        );
        let summary = ndjson_one_event_a_call(&sb.client_for("admin"), &dir)
            .run()
            .await
            .unwrap();
        assert_eq!(
            summary.stopped.map(|s| s.day),
            Some(day("2026-03-09")),
            "{case}"
        );
        let state: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("state")).unwrap()).unwrap();
        assert_eq!(state["job"]["read"]["events"], 2, "{case}: {state}");
        let job = state["job"]["id"].as_str().unwrap().to_string();
        let part = dir.join(format!("out/.logins-2026-03-09.ndjson.{job}.part"));
        let read = std::fs::read_to_string(&part).unwrap();
        assert_eq!(read.lines().count(), 2, "{case}: {read}");
        assert_eq!(state["job"]["read"]["bytes"], read.len(), "{case}: {state}");
        std::fs::write(&part, change(&read)).unwrap();
        let jobs_before = sb.counters().by_operation.get("createLoginsAudit").copied();
        let traffic_before = sb.traffic().len();
        // A client with a fresh budget (the next day, another process).
        let fresh = sb
            .client_builder_for("admin")
            .isolated_budget()
            .build()
            .unwrap();
        let summary = ndjson_one_event_a_call(&fresh, &dir).run().await.unwrap();
        assert_eq!(summary.written.len(), 1, "{case}: {summary:?}");
        assert!(!part.exists(), "{case}");
        assert_eq!(
            sb.counters().by_operation.get("createLoginsAudit").copied(),
            jobs_before,
            "{case}: the recorded job is read, not made again"
        );
        let offsets: Vec<String> = sb.traffic()[traffic_before..]
            .iter()
            .filter(|e| e.operation == Some("getAuditReport"))
            .filter_map(|e| e.query.iter().find(|(k, _)| k == "offset"))
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(
            offsets.first().map(String::as_str),
            Some(first_offset),
            "{case}: {offsets:?}"
        );
        // The day's file is the job's report, every event once, in its order.
        let at = ReportLocation {
            kind: AuditReportKind::Logins,
            id: job,
        };
        let mut expected = String::new();
        let mut events = fresh.audit().events_as_sent(at, ReportRead::default());
        while let Some(event) = events.next().await {
            expected.push_str(&pubapi_sdk_ext::audit::one_line(&event.unwrap()));
            expected.push('\n');
        }
        assert!(expected.lines().count() >= 3, "{expected}");
        assert_eq!(
            std::fs::read_to_string(&summary.written[0].path).unwrap(),
            expected,
            "{case}"
        );
    }
}

#[tokio::test]
async fn an_empty_or_garbled_state_file_is_refused_before_any_call_and_left_as_it_is() {
    let (sb, client, dir) = started("bad-state").await;
    for (content, empty) in [("", true), ("  \n", true), ("{\"next_day\": 3", false)] {
        std::fs::write(dir.join("state"), content).unwrap();
        for start in [Start::SinceLast, Start::Since(day("2026-03-01"))] {
            let error = export(&client, &dir, start).run().await.unwrap_err();
            match (&error, empty) {
                (ExportError::StateEmpty { path }, true)
                | (ExportError::StateCorrupt { path, .. }, false) => {
                    assert_eq!(path, &dir.join("state"));
                }
                (other, _) => panic!("{content:?}: {other:?}"),
            }
            assert!(error.to_string().contains("state"), "{error}");
        }
        assert_eq!(std::fs::read_to_string(dir.join("state")).unwrap(), content);
    }
    assert_eq!(sb.counters().requests, 0);
    assert!(export_files_in(&dir.join("out")).is_empty());
}

#[tokio::test]
async fn a_state_file_past_its_cap_is_refused_before_it_is_read_or_anything_is_sent() {
    let (sb, client, dir) = started("huge-state").await;
    // 64 MiB (sparse): read whole, it would cost that much and more in heap.
    let state = std::fs::File::create(dir.join("state")).unwrap();
    state.set_len(64 * 1024 * 1024).unwrap();
    let error = export(&client, &dir, Start::SinceLast)
        .run()
        .await
        .unwrap_err();
    match &error {
        ExportError::StateCorrupt { path, problem } => {
            assert_eq!(path, &dir.join("state"));
            assert!(problem.contains("more than a state file"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sb.counters().requests, 0);
}

#[tokio::test]
async fn a_run_leaves_no_lock_file_beside_its_state() {
    let (_sb, client, dir) = started("no-lock-left").await;
    export(&client, &dir, Start::Since(day("2026-03-08")))
        .run()
        .await
        .unwrap();
    assert!(dir.join("state").exists());
    assert!(!dir.join("state.lock").exists());
}

/// A sandbox, an admin's client, and a folder in which the logins export has written
/// March 8 and 9.
async fn after_march_8_and_9(name: &str) -> (Sandbox, Client, PathBuf) {
    let (sb, client, dir) = started(name).await;
    export(&client, &dir, Start::Since(day("2026-03-08")))
        .run()
        .await
        .unwrap();
    (sb, client, dir)
}

#[tokio::test]
async fn a_folder_holds_the_days_of_one_set_of_filters_and_other_filters_are_refused_before_any_call()
 {
    let (sb, client, dir) = after_march_8_and_9("claimed").await;
    let out = dir.join("out");
    let days = export_files_in(&out);
    assert_eq!(days, ["logins-2026-03-08.csv", "logins-2026-03-09.csv"]);
    let requests = sb.counters().requests;
    // Logins only, with a state file of its own: its days are not the first export's.
    let other = export_builder(&client, &dir, Start::Since(day("2026-03-08")))
        .state_file(dir.join("other-state"))
        .filters(logins_only())
        .build()
        .unwrap();
    let error = other.run().await.unwrap_err();
    let ExportError::OutDirClaimed {
        claim,
        claimed,
        asked,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(claim, &out.join(".pubapi-export-logins-csv.json"));
    assert!(claimed.contains("failed_attempts") && !asked.contains("failed_attempts"));
    assert!(error.to_string().contains("its own folder"), "{error}");
    assert_eq!(sb.counters().requests, requests, "nothing was sent");
    assert_eq!(export_files_in(&out), days);
    // The same filters with a state file of their own share the folder: the days there are
    // theirs.
    let again = export_builder(&client, &dir, Start::Since(day("2026-03-08")))
        .state_file(dir.join("third-state"))
        .build()
        .unwrap();
    let summary = again.run().await.unwrap();
    assert_eq!(
        summary.already_there,
        [day("2026-03-08"), day("2026-03-09")]
    );
}

#[tokio::test]
async fn a_garbled_folder_claim_is_refused_before_any_call_and_left_as_it_is() {
    let (sb, client, dir) = started("bad-claim").await;
    let claim = dir.join("out/.pubapi-export-logins-csv.json");
    let other_kind =
        r#"{"pubapi_audit_export_folder": 1, "kind": "emails", "format": "csv", "filters": {}}"#;
    for content in ["", "{\"kind\": ", other_kind] {
        std::fs::write(&claim, content).unwrap();
        let error = export(&client, &dir, Start::Since(day("2026-03-08")))
            .run()
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ExportError::ClaimCorrupt { claim: path, .. } if path == &claim),
            "{content:?}: {error:?}"
        );
        assert_eq!(std::fs::read_to_string(&claim).unwrap(), content);
    }
    assert_eq!(sb.counters().requests, 0);
    assert!(export_files_in(&dir.join("out")).is_empty());
}

#[tokio::test]
async fn since_last_needs_the_state_file_and_since_must_agree_with_it() {
    let (sb, client, dir) = started("start").await;
    let error = export(&client, &dir, Start::SinceLast)
        .run()
        .await
        .unwrap_err();
    assert!(matches!(error, ExportError::NoState { .. }), "{error:?}");
    assert!(!dir.join("state").exists());

    export(&client, &dir, Start::Since(day("2026-03-08")))
        .run()
        .await
        .unwrap();
    // Another start day on the same state file is refused; the same one continues it.
    let error = export(&client, &dir, Start::Since(day("2026-03-01")))
        .run()
        .await
        .unwrap_err();
    match error {
        ExportError::StateMismatch {
            field,
            in_state,
            asked,
            ..
        } => assert_eq!(
            (field, in_state.as_str(), asked.as_str()),
            ("since", "2026-03-08", "2026-03-01")
        ),
        other => panic!("{other:?}"),
    }
    sb.advance(Duration::from_secs(86_400));
    let summary = export(&client, &dir, Start::Since(day("2026-03-08")))
        .run()
        .await
        .unwrap();
    assert_eq!(summary.written.len(), 1);
    assert_eq!(summary.written[0].day, day("2026-03-10"));
    // Another format on the same state file is refused.
    let ndjson = DailyExport::builder(&client, AuditReportKind::Logins)
        .start(Start::SinceLast)
        .state_file(dir.join("state"))
        .out_dir(dir.join("out"))
        .format(ExportFormat::Ndjson)
        .filters(
            serde_json::json!({"events": ["logins", "logouts", "failed_attempts"]})
                .as_object()
                .unwrap()
                .clone(),
        )
        .build()
        .unwrap();
    let error = ndjson.run().await.unwrap_err();
    assert!(
        matches!(
            error,
            ExportError::StateMismatch {
                field: "format",
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_second_run_on_a_state_file_in_use_refuses_at_once() {
    let (sb, client, dir) = started("locked").await;
    let export = export(&client, &dir, Start::Since(day("2026-03-09")));
    let held = std::fs::File::create(export.lock_path()).unwrap();
    held.try_lock().unwrap();
    let error = export.run().await.unwrap_err();
    assert!(matches!(error, ExportError::Locked { .. }), "{error:?}");
    assert!(error.to_string().contains("another export"), "{error}");
    assert_eq!(sb.counters().requests, 0);
    drop(held);
    assert_eq!(export.run().await.unwrap().written.len(), 1);
}

#[tokio::test]
async fn ndjson_days_hold_one_event_a_line_of_that_day() {
    let (_sb, client, dir) = started("ndjson").await;
    let summary = DailyExport::builder(&client, AuditReportKind::Logins)
        .start(Start::Since(day("2026-03-08")))
        .state_file(dir.join("state"))
        .out_dir(dir.join("out"))
        .format(ExportFormat::Ndjson)
        .filters(logins_only())
        .build()
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(summary.written.len(), 2);
    for (written, date) in summary.written.iter().zip(["2026-03-08", "2026-03-09"]) {
        assert_eq!(
            written.path.file_name().unwrap().to_str().unwrap(),
            format!("logins-{date}.ndjson")
        );
        let text = std::fs::read_to_string(&written.path).unwrap();
        assert_eq!(text.len() as u64, written.bytes);
        assert!(!text.is_empty());
        for line in text.lines() {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            let time = event.to_string();
            assert!(time.contains(date), "{line}");
        }
    }
}

/// The five kinds whose API ignores the time of day (files, permissions, users, groups,
/// workgroup-settings) are exported by day too: each day is asked for as the same-day range
/// `date_start = date_end = D`, which reads exactly that day, so each file holds the events
/// of its own day and no other.
#[tokio::test]
async fn kinds_whose_api_ignores_the_time_of_day_write_one_file_per_day() {
    let sb = sandbox().await;
    let client = sb.client_for("admin");
    let kinds = [
        (
            AuditReportKind::Files,
            "files",
            serde_json::json!({"folders": ["/Finance"]}),
        ),
        (
            AuditReportKind::Permissions,
            "permissions",
            serde_json::json!({}),
        ),
        (AuditReportKind::Users, "users", serde_json::json!({})),
        (AuditReportKind::Groups, "groups", serde_json::json!({})),
        (
            AuditReportKind::WorkgroupSettings,
            "workgroup-settings",
            serde_json::json!({}),
        ),
    ];
    for (kind, name, filters) in kinds {
        let dir = temp_dir(&format!("plain-date-{name}"));
        let summary = DailyExport::builder(&client, kind)
            .start(Start::Since(day("2026-03-08")))
            .state_file(dir.join("state"))
            .out_dir(dir.join("out"))
            .format(ExportFormat::Ndjson)
            .filters(filters.as_object().unwrap().clone())
            .build()
            .unwrap()
            .run()
            .await
            .unwrap();
        let days: Vec<String> = summary.written.iter().map(|w| w.day.to_string()).collect();
        assert_eq!(days, ["2026-03-08", "2026-03-09"], "{name}");
        for written in &summary.written {
            let date = written.day.to_string();
            assert_eq!(
                written.path.file_name().unwrap().to_str().unwrap(),
                format!("{name}-{date}.ndjson")
            );
            let text = std::fs::read_to_string(&written.path).unwrap();
            if kind == AuditReportKind::Files {
                assert!(!text.is_empty(), "file activity on {date}");
            }
            for line in text.lines() {
                let event: serde_json::Value = serde_json::from_str(line).unwrap();
                assert!(event.to_string().contains(&date), "{name} {date}: {line}");
            }
        }
    }
}

/// A kind's required filters are the SDK's to check when the export is built: nothing sent.
#[tokio::test]
async fn an_export_without_a_kinds_required_filter_is_refused_at_build() {
    let sb = sandbox().await;
    let client = sb.client_for("admin");
    for kind in [AuditReportKind::Logins, AuditReportKind::Files] {
        let error = DailyExport::builder(&client, kind)
            .start(Start::SinceLast)
            .state_file("s")
            .out_dir(".")
            .build()
            .unwrap_err();
        // Logins need `events`, files `folders` or `file`: the SDK's check names the field.
        assert!(matches!(error, ExportError::InvalidRequest(_)), "{error:?}");
    }
    assert_eq!(sb.counters().requests, 0);
}

#[tokio::test]
async fn a_day_file_already_in_the_folder_is_taken_as_done_and_not_fetched_again() {
    let (sb, client, dir) = after_march_8_and_9("already-there").await;
    let written = std::fs::read(dir.join("out/logins-2026-03-09.csv")).unwrap();
    // A run that stopped between March 9's rename and the state's update left the state a
    // day behind its files.
    let state = std::fs::read_to_string(dir.join("state")).unwrap();
    std::fs::write(
        dir.join("state"),
        state.replace(
            "\"next_day\": \"2026-03-10\"",
            "\"next_day\": \"2026-03-09\"",
        ),
    )
    .unwrap();
    let before = sb.counters().by_operation.get("createLoginsAudit").copied();
    assert_eq!(before, Some(2));
    let summary = export(&client, &dir, Start::SinceLast).run().await.unwrap();
    assert_eq!(summary.already_there, [day("2026-03-09")]);
    assert!(summary.written.is_empty(), "{summary:?}");
    assert_eq!(summary.next_day, day("2026-03-10"));
    assert_eq!(
        sb.counters().by_operation.get("createLoginsAudit").copied(),
        before
    );
    assert_eq!(
        std::fs::read(dir.join("out/logins-2026-03-09.csv")).unwrap(),
        written
    );
}

/// A sandbox whose reports are ready ten minutes (of its clock, which stands still until
/// moved) after they are asked for.
async fn slow_reports() -> Sandbox {
    let mut config = SandboxConfig::testing()
        .with_clock(ClockConfig::Manual {
            start_ms: NOON_MARCH_10_MS,
        })
        .with_sample_history();
    config.audit.job_duration = Duration::from_secs(600);
    Sandbox::start(config).await
}

/// An export of March 9 that waits five minutes of the server's time (1,000 times faster).
fn impatient_export(client: &Client, dir: &Path) -> DailyExport {
    export_builder(client, dir, Start::Since(day("2026-03-09")))
        .wait(pubapi_sdk_ext::audit::AuditWait {
            deadline: Duration::from_secs(300),
            server_time_scale: 1000,
            ..Default::default()
        })
        .build()
        .unwrap()
}

/// Asserts that an export `failed` on day `on`, after `written` days; why the day failed.
#[track_caller]
fn failed_on<'a>(failed: &'a ExportError, on: &str, written: usize) -> &'a DayError {
    match failed {
        ExportError::Day {
            day: failed_day,
            written: before,
            error,
        } => {
            assert_eq!((*failed_day, *before), (day(on), written), "{failed:?}");
            error
        }
        other => panic!("{other:?}"),
    }
}

async fn times_out(export: DailyExport) {
    match export.run().await.unwrap_err() {
        ExportError::Day {
            error: DayError::TimedOut { .. },
            ..
        } => {}
        other => panic!("{other:?}"),
    }
}

/// A sandbox of slow reports, an admin's client, and a folder in which `runs` impatient
/// exports of March 9 have timed out.
async fn after_timeouts(name: &str, runs: usize) -> (Sandbox, Client, PathBuf) {
    let sb = slow_reports().await;
    let client = sb.client_for("admin");
    let dir = temp_dir(name);
    for _ in 0..runs {
        times_out(impatient_export(&client, &dir)).await;
    }
    (sb, client, dir)
}

#[tokio::test]
async fn a_report_slower_than_a_runs_wait_is_read_by_the_next_run_not_made_again() {
    let (sb, client, dir) = after_timeouts("slow-report", 2).await;
    // Both runs waited for the one job the first made.
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 1);
    sb.advance(Duration::from_secs(600));
    let summary = impatient_export(&client, &dir).run().await.unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 1);
    assert_eq!(sb.counters().requests_to("deleteAuditReport"), 1);
    assert!(summary.reports_left.is_empty());
    assert_whole_csv_day(&dir.join("out").join("logins-2026-03-09.csv"), "2026-03-09");
    // The state moved past the day and holds no job any more.
    let state = std::fs::read_to_string(dir.join("state")).unwrap();
    assert!(!state.contains("\"job\""), "{state}");
}

#[tokio::test]
async fn a_job_three_runs_waited_for_in_vain_is_made_again() {
    let (sb, client, dir) = after_timeouts("stuck-report", 3).await;
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 1);
    times_out(impatient_export(&client, &dir)).await;
    // The job given up is deleted (best effort) before another is made.
    assert_eq!(sb.counters().requests_to("deleteAuditReport"), 1);
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 2);
}

#[tokio::test]
async fn a_recorded_job_whose_day_is_already_written_has_its_report_deleted() {
    let (sb, client, dir) = after_timeouts("written-before-delete", 1).await;
    // A run that wrote the day and was killed before deleting its report and moving on.
    std::fs::write(dir.join("out").join("logins-2026-03-09.csv"), "written\n").unwrap();
    sb.advance(Duration::from_secs(600));
    let summary = impatient_export(&client, &dir).run().await.unwrap();
    assert_eq!(summary.already_there, [day("2026-03-09")]);
    assert_eq!(sb.counters().requests_to("deleteAuditReport"), 1);
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 1);
}

#[tokio::test]
async fn a_recorded_jobs_report_gone_at_read_time_is_made_again_in_the_same_run() {
    let (sb, client, dir) = after_timeouts("report-gone", 1).await;
    sb.advance(Duration::from_secs(600));
    // The job still says where its report is, and the report is gone (expired).
    sb.inject(Fault::on("getAuditReport").times(1).status(404));
    let summary = impatient_export(&client, &dir).run().await;
    // The new job is as slow as the first: the run waits for it and times out; the next
    // run reads it.
    match summary {
        Err(ExportError::Day {
            error: DayError::TimedOut { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 2);
    sb.advance(Duration::from_secs(600));
    let summary = impatient_export(&client, &dir).run().await.unwrap();
    let days: Vec<ExportDay> = summary.written.iter().map(|w| w.day).collect();
    assert_eq!(days, [day("2026-03-09")]);
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 2);
    assert_whole_csv_day(&dir.join("out").join("logins-2026-03-09.csv"), "2026-03-09");
}

#[tokio::test]
async fn a_new_jobs_report_gone_at_read_time_fails_the_day_without_a_third_job() {
    let (sb, client, dir) = started("new-report-gone").await;
    let march_9 = || export(&client, &dir, Start::Since(day("2026-03-09")));
    // The first run's report is gone when read: the day fails, its job stays recorded.
    sb.inject(Fault::on("getAuditReport").times(1).status(404));
    march_9().run().await.unwrap_err();
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 1);
    // The next run finds the recorded job gone and makes one; that one's report is gone too
    // when read: the day fails again, and no third job is made in the same run.
    sb.inject(Fault::on("getAuditJob").times(1).status(404));
    sb.inject(Fault::on("getAuditReport").times(1).status(404));
    match march_9().run().await {
        Err(ExportError::Day {
            error: DayError::Api(pubapi_sdk_ext::Error::NotFound(_)),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 2);
    // And the run after reads that job's report.
    let summary = march_9().run().await.unwrap();
    assert_eq!(summary.written.len(), 1, "{summary:?}");
    assert_eq!(sb.counters().requests_to("createLoginsAudit"), 2);
}
