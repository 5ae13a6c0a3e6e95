//! `pubapi audit export` run as cron runs it: a process at a time against a sandbox the test
//! serves (`PUBAPI_BASE_URL`, `PUBAPI_TOKEN`), whose clock the test moves across days and
//! into which it injects faults between runs.

mod support;

use pubapi_sandbox::{ClockConfig, Fault, LimitsConfig, Sandbox, SandboxConfig};
use pubapi_testkit::export_files_in;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::Run;

/// 2026-03-10T12:00:00Z: the sandbox's now at the start of every test.
const NOON_MARCH_10_MS: i64 = 1_773_144_000_000;

async fn served(limits: LimitsConfig) -> Sandbox {
    let mut config = SandboxConfig::default()
        .with_clock(ClockConfig::Manual {
            start_ms: NOON_MARCH_10_MS,
        })
        .with_limits(limits)
        .with_sample_history();
    // The CLI polls a job at once, then 2 real minutes later: finish jobs at once.
    config.audit.job_duration = Duration::ZERO;
    Sandbox::start(config).await
}

/// Runs `pubapi args` against `sandbox` to the end, with no terminal (as cron runs it).
async fn pubapi(sandbox: &Sandbox, args: &[&str]) -> Run {
    support::against(sandbox, args).await
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-cli-export-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("d")).unwrap();
    dir
}

/// The export's flags with the state file `s` and the folder `d` of `dir`.
fn export_args<'a>(dir: &'a Path, start: &[&'a str]) -> Vec<String> {
    let mut args: Vec<String> = ["audit", "export", "logins"]
        .iter()
        .chain(start)
        .map(|a| a.to_string())
        .collect();
    args.extend([
        "--state".into(),
        dir.join("s").display().to_string(),
        "--out-dir".into(),
        dir.join("d").display().to_string(),
    ]);
    args
}

async fn export(sandbox: &Sandbox, dir: &Path, start: &[&str]) -> Run {
    let args = export_args(dir, start);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    pubapi(sandbox, &args).await
}

/// A complete CSV day file: title row, the logins header, at least one row, every row of
/// that day, a final newline.
fn assert_complete_day(path: &Path, day: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("This report reflects activity up to"),
        "{text}"
    );
    assert_eq!(lines[1], "Username,Event,IP Address,Access,Time", "{text}");
    assert!(lines.len() > 2, "no rows: {text}");
    for row in &lines[2..] {
        assert!(
            row.contains(&format!(",{day}T")),
            "a row of another day in {day}: {row}"
        );
    }
    assert!(text.ends_with('\n'), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_runs_across_two_sandbox_days_with_a_fault_mid_day_leave_one_complete_file_per_day() {
    let sandbox = served(LimitsConfig::off()).await;
    let dir = temp_dir("three-runs");
    let out = dir.join("d");

    // `--since-last` needs the state file, and says so.
    let run = export(&sandbox, &dir, &["--since-last"]).await;
    run.assert_says(2, &["there is no state file", "--since YYYY-MM-DD"]);

    // The first run names its first day. March 10 has not ended on the sandbox's clock.
    let run = export(&sandbox, &dir, &["--since", "2026-03-09"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("", ""),
        "quiet on success"
    );
    assert_eq!(export_files_in(&out), ["logins-2026-03-09.csv"]);

    // The next day, the report read breaks in the middle of March 10's download.
    sandbox.advance(Duration::from_secs(86_400));
    sandbox.inject(Fault::on("getAuditReport").times(1).cut_body(60));
    let run = export(&sandbox, &dir, &["--since-last"]).await;
    run.assert_says(
        3,
        &[
            "the export of 2026-03-10 failed",
            "the next run does it again",
        ],
    );
    assert_eq!(
        export_files_in(&out),
        ["logins-2026-03-09.csv"],
        "nothing half-written"
    );

    // The third run writes March 10 from scratch.
    let run = export(&sandbox, &dir, &["--since-last", "-v"]).await;
    run.assert_says(
        0,
        &[
            "logins-2026-03-10.csv written",
            "the next day to export is 2026-03-11",
        ],
    );

    assert_eq!(
        export_files_in(&out),
        ["logins-2026-03-09.csv", "logins-2026-03-10.csv"]
    );
    assert_complete_day(&out.join("logins-2026-03-09.csv"), "2026-03-09");
    assert_complete_day(&out.join("logins-2026-03-10.csv"), "2026-03-10");
    // A day's file covers what `audit logins` covers for that day (the sandbox makes up
    // each report's synthetic rows anew, so the times are compared, not the rows).
    let whole = dir.join("whole.csv");
    let run = pubapi(
        &sandbox,
        &[
            "audit",
            "logins",
            "--from",
            "2026-03-10T00:00:00Z",
            "--to",
            "2026-03-11T00:00:00Z",
            "--out",
            whole.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    let times = |path: &Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| line.rsplit(',').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(times(&whole), times(&out.join("logins-2026-03-10.csv")));

    // `--since` with the state's own first day continues it; another day is refused.
    let run = export(&sandbox, &dir, &["--since", "2026-03-09"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let run = export(&sandbox, &dir, &["--since", "2026-03-01"]).await;
    run.assert_says(2, &["is for since 2026-03-09, not 2026-03-01"]);
    assert_eq!(
        export_files_in(&out),
        ["logins-2026-03-09.csv", "logins-2026-03-10.csv"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_that_would_overrun_the_daily_budget_stops_with_exit_code_6() {
    // 8 calls a day on the gateway: the server's time (1), March 7 (create, poll, read,
    // delete: 4), then 3 left, fewer than the 6 a day is expected to take.
    let sandbox = served(LimitsConfig {
        general_per_day: Some(8),
        ..LimitsConfig::off()
    })
    .await;
    let dir = temp_dir("budget");
    let run = export(&sandbox, &dir, &["--since", "2026-03-07"]).await;
    run.assert_says(6, &["stopped before 2026-03-08 for the daily budget: a day needs about 6 calls and 3 are left", "the next run starts at 2026-03-08"]);
    assert_eq!(export_files_in(&dir.join("d")), ["logins-2026-03-07.csv"]);
    // The next sandbox day the budget is there again and the run goes on where it stopped.
    sandbox.advance(Duration::from_secs(86_400));
    let run = export(&sandbox, &dir, &["--since-last"]).await;
    assert_eq!(run.code, 6, "{run:?}");
    assert_eq!(
        export_files_in(&dir.join("d")),
        ["logins-2026-03-07.csv", "logins-2026-03-08.csv"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_state_file_or_a_held_lock_stops_the_run_before_any_call() {
    let sandbox = served(LimitsConfig::off()).await;
    let dir = temp_dir("state");
    for (content, exit, says) in [
        ("", 2, "is empty"),
        ("{\"next_day\"", 2, "is not an audit export state"),
    ] {
        std::fs::write(dir.join("s"), content).unwrap();
        let run = export(&sandbox, &dir, &["--since-last"]).await;
        assert_eq!(run.code, exit, "{run:?}");
        assert!(run.stderr.contains(says), "{run:?}");
        assert!(
            run.stderr.contains(&dir.join("s").display().to_string()),
            "{run:?}"
        );
        assert!(
            run.stderr
                .contains("move it away and run again with --since"),
            "{run:?}"
        );
        assert_eq!(std::fs::read_to_string(dir.join("s")).unwrap(), content);
    }
    std::fs::remove_file(dir.join("s")).unwrap();
    let lock = std::fs::File::create(dir.join("s.lock")).unwrap();
    lock.try_lock().unwrap();
    let run = export(&sandbox, &dir, &["--since", "2026-03-09"]).await;
    run.assert_says(1, &["another export is running"]);
    assert_eq!(sandbox.counters().requests, 0);
    assert!(export_files_in(&dir.join("d")).is_empty());
    drop(lock);
    let run = export(&sandbox, &dir, &["--since", "2026-03-09"]).await;
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_with_other_filters_into_a_claimed_folder_is_a_usage_error_before_any_call() {
    let sandbox = served(LimitsConfig::off()).await;
    let dir = temp_dir("claimed");
    let run = export(&sandbox, &dir, &["--since", "2026-03-09"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let requests = sandbox.counters().requests;
    let mut args = export_args(&dir, &["--since", "2026-03-09"]);
    let state = args.iter().position(|a| a == "--state").unwrap() + 1;
    args[state] = dir.join("other-state").display().to_string();
    args.extend(["--filters".into(), r#"{"events": ["logins"]}"#.into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = pubapi(&sandbox, &args).await;
    run.assert_says(2, &["other --filters needs its own --out-dir"]);
    assert_eq!(sandbox.counters().requests, requests, "nothing was sent");
    assert_eq!(export_files_in(&dir.join("d")), ["logins-2026-03-09.csv"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_are_checked_before_anything_is_sent() {
    let sandbox = served(LimitsConfig::off()).await;
    let dir = temp_dir("flags");
    let state = dir.join("s").display().to_string();
    let out = dir.join("d").display().to_string();
    for (args, says) in [
        (vec!["--since", "2026-02-30"], "is not a day"),
        (
            vec!["--since", "2026-03-01", "--since-last"],
            "cannot be used with",
        ),
        (vec![], "--since"),
    ] {
        let mut line = vec!["audit", "export", "logins"];
        line.extend(args);
        line.extend(["--state", &state, "--out-dir", &out]);
        let run = pubapi(&sandbox, &line).await;
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains(says), "{line:?}: {run:?}");
    }
    let run = pubapi(
        &sandbox,
        &[
            "audit",
            "export",
            "files",
            "--since",
            "2026-03-01",
            "--state",
            &state,
            "--out-dir",
            &out,
        ],
    )
    .await;
    // Files need `folders` or `file` in --filters.
    run.assert_says(2, &["folders or file is required"]);
    let run = pubapi(
        &sandbox,
        &[
            "audit",
            "export",
            "logins",
            "--since",
            "2026-03-01",
            "--state",
            &state,
            "--out-dir",
            "/nonexistent/d",
        ],
    )
    .await;
    run.assert_says(2, &["no such folder"]);
    assert_eq!(sandbox.counters().requests, 0);
    assert!(!dir.join("s").exists());
}

/// `pubapi audit export files` (a kind whose API ignores the time of day) writes one file per
/// day that has ended, each of its own day's activity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_of_files_writes_one_file_per_day() {
    let sandbox = served(LimitsConfig::off()).await;
    let dir = temp_dir("files");
    let out = dir.join("d");
    let state = dir.join("s").display().to_string();
    let out_arg = out.display().to_string();
    let args = [
        "audit",
        "export",
        "files",
        "--since",
        "2026-03-08",
        "--filters",
        r#"{"folders": ["/Finance"]}"#,
        "--state",
        &state,
        "--out-dir",
        &out_arg,
    ];
    let run = pubapi(&sandbox, &args).await;
    assert_eq!(run.code, 0, "{run:?}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with(".pubapi-export-"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[2].starts_with("files-csv-run-") && names[2].ends_with(".manifest.json"));
    assert_eq!(names[..2], ["files-2026-03-08.csv", "files-2026-03-09.csv"]);
    for (day, other) in [("2026-03-08", "2026-03-09"), ("2026-03-09", "2026-03-08")] {
        let text = std::fs::read_to_string(out.join(format!("files-{day}.csv"))).unwrap();
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert!(!rows.is_empty(), "no rows: {text}");
        assert!(
            rows.iter()
                .all(|row| row.contains(day) && !row.contains(other)),
            "a row of another day in {day}: {text}"
        );
    }
}
