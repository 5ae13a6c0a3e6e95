//! `pubapi audit export` for data tools: a week of file activity exported to Parquet, JSON
//! lines and CSV in the kind's schema loads into DuckDB (PyPI `duckdb`) with typed columns, the
//! same column names in each and the same rows per day as the platform's CSV of the same days;
//! `--no-title` days start with the header; each run's manifest says every day's rows and
//! SHA-256; `--merge` holds the whole range; a run resumes where the state file says.
//!
//! Without DuckDB (`python3 -m pip install duckdb`) the DuckDB test says so and passes,
//! unless `CI_REQUIRE_DUCKDB=1` (CI installs it) makes that a failure.

mod support;

use pubapi_sandbox::{ClockConfig, LimitsConfig, Sandbox, SandboxConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{Run, finished};

/// 2026-03-10T12:00:00Z: the sandbox's now.
const NOON_MARCH_10_MS: i64 = 1_773_144_000_000;

/// The week exported: Monday 2 to Sunday 8 March 2026.
const WEEK: [&str; 7] = [
    "2026-03-02",
    "2026-03-03",
    "2026-03-04",
    "2026-03-05",
    "2026-03-06",
    "2026-03-07",
    "2026-03-08",
];

async fn served() -> Sandbox {
    let mut config = SandboxConfig::default()
        .with_clock(ClockConfig::Manual {
            start_ms: NOON_MARCH_10_MS,
        })
        .with_limits(LimitsConfig::generous())
        .with_sample_history();
    config.audit.job_duration = Duration::ZERO;
    Sandbox::start(config).await
}

async fn pubapi(sandbox: &Sandbox, args: Vec<String>) -> Run {
    support::against(sandbox, args).await
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("pubapi-cli-parquet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `audit export files` of the week into `dir/<name>`, with `more` flags.
async fn export_week(sandbox: &Sandbox, dir: &Path, name: &str, more: &[&str]) -> PathBuf {
    let out = dir.join(name);
    std::fs::create_dir_all(&out).unwrap();
    let mut args: Vec<String> = [
        "audit",
        "export",
        "files",
        "--since",
        WEEK[0],
        "--until",
        WEEK[6],
        "--filters",
        r#"{"folders": ["/Shared"]}"#,
        "-v",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend([
        "--state".into(),
        dir.join(format!("{name}.state")).display().to_string(),
        "--out-dir".into(),
        out.display().to_string(),
    ]);
    args.extend(more.iter().map(|a| a.to_string()));
    let run = pubapi(sandbox, args).await;
    assert_eq!(run.code, 0, "{run:?}");
    for day in WEEK {
        assert!(run.stderr.contains(&format!("({day}: ")), "{day}: {run:?}");
    }
    assert!(!run.stderr.contains("(2026-03-09:"), "--until: {run:?}");
    out
}

/// The manifest a run wrote into `dir`.
fn manifest_in(dir: &Path) -> Value {
    let path = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .expect("a manifest");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn duckdb() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !ok {
        assert!(
            std::env::var("CI_REQUIRE_DUCKDB").as_deref() != Ok("1"),
            "CI_REQUIRE_DUCKDB=1 but duckdb is not installed (python3 -m pip install duckdb)"
        );
        eprintln!("SKIPPED: duckdb is not installed (python3 -m pip install duckdb)");
    }
    ok
}

/// What DuckDB reads of the week in each format: per day, the rows of the Parquet, JSON lines
/// and schema CSV files and of the platform's CSV (its title row skipped); each format's
/// column names and types as DuckDB infers them; the merged Parquet file's rows per day of
/// `time`; each Parquet file's SHA-256; the columns the Parquet file's key-value metadata
/// lists (`pubapi.columns`), and the platform CSV's header.
const DUCKDB_SCRIPT: &str = r#"
import duckdb, hashlib, json, sys
dirs, merged, days = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
db = duckdb.connect()
read = {
    "parquet": lambda f: f"read_parquet('{f}')",
    "jsonl": lambda f: f"read_json('{f}', format='newline_delimited')",
    "csv_schema": lambda f: f"read_csv('{f}', header=true)",
    "csv_platform": lambda f: f"read_csv('{f}', skip=1, header=true)",
}
ext = {"parquet": "parquet", "jsonl": "ndjson", "csv_schema": "csv", "csv_platform": "csv"}
out = {"days": {}, "columns": {}, "merged": {}, "sha256": {}}
for day in days:
    out["days"][day] = {
        form: db.execute(f"SELECT count(*) FROM {read[form](dirs[form] + f'/files-{day}.' + ext[form])}").fetchone()[0]
        for form in read
    }
    p = dirs["parquet"] + f"/files-{day}.parquet"
    out["sha256"][day] = hashlib.sha256(open(p, "rb").read()).hexdigest()
for form in read:
    week = read[form](dirs[form] + "/files-*." + ext[form])
    out["columns"][form] = [[name, kind] for name, kind, *_ in db.execute(f"DESCRIBE SELECT * FROM {week}").fetchall()]
for day, n in db.execute(f"SELECT strftime(time AT TIME ZONE 'UTC', '%Y-%m-%d'), count(*) FROM read_parquet('{merged}') GROUP BY 1").fetchall():
    out["merged"][day] = n
kv = db.execute(f"SELECT decode(value) FROM parquet_kv_metadata('{merged}') WHERE decode(key) = 'pubapi.columns'").fetchone()[0]
out["kv_columns"] = json.loads(kv)
out["platform_header"] = open(dirs["csv_platform"] + f"/files-{days[0]}.csv").read().splitlines()[1].split(",")
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_week_of_file_activity_in_parquet_and_json_lines_loads_into_duckdb_typed_with_the_csv_rows_per_day_and_column_names()
 {
    if !duckdb() {
        return;
    }
    let sandbox = served().await;
    let dir = temp_dir("week");
    let merged = dir.join("week.parquet");
    let merged_arg = merged.display().to_string();
    let parquet = export_week(
        &sandbox,
        &dir,
        "parquet",
        &["--format", "parquet", "--merge", &merged_arg],
    )
    .await;
    let jsonl = export_week(&sandbox, &dir, "jsonl", &["--format", "ndjson"]).await;
    let csv_schema = export_week(&sandbox, &dir, "csv-schema", &["--columns", "schema"]).await;
    let csv_platform = export_week(&sandbox, &dir, "csv", &[]).await;
    let dirs = serde_json::json!({
        "parquet": parquet, "jsonl": jsonl, "csv_schema": csv_schema, "csv_platform": csv_platform,
    });
    let run = Command::new("python3")
        .args([
            "-c",
            DUCKDB_SCRIPT,
            &dirs.to_string(),
            &merged_arg,
            &WEEK.join(","),
        ])
        .output()
        .unwrap();
    let run = finished(run);
    assert_eq!(run.code, 0, "{run:?}");
    let read: Value = serde_json::from_str(run.stdout.trim()).unwrap();

    // The same rows per day in every format, the platform's CSV included.
    let mut total = 0;
    for day in WEEK {
        let counts = &read["days"][day];
        let parquet = counts["parquet"].as_u64().unwrap();
        for form in ["jsonl", "csv_schema", "csv_platform"] {
            assert_eq!(counts[form], parquet, "{day} {form}: {read}");
        }
        assert_eq!(read["merged"][day], parquet, "{day}: {read}");
        total += parquet;
    }
    assert!(total > 7, "a week of file activity: {read}");

    // The same column names, in the same order, in Parquet, JSON lines and the schema CSV:
    // the files schema's.
    let columns = |form: &str| -> Vec<(String, String)> {
        read["columns"][form]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c[0].as_str().unwrap().into(), c[1].as_str().unwrap().into()))
            .collect()
    };
    let names = |form: &str| -> Vec<String> { columns(form).into_iter().map(|c| c.0).collect() };
    let schema: Vec<String> = pubapi_cli::data::schema(pubapi_sdk::types::AuditReportKind::Files)
        .names()
        .map(str::to_string)
        .collect();
    assert_eq!(names("parquet"), schema);
    assert_eq!(names("jsonl"), schema);
    assert_eq!(names("csv_schema"), schema);

    // Typed: the time a UTC timestamp and the user's id a number in each; Parquet's types are
    // the schema's whatever the values.
    let type_of = |form: &str, name: &str| -> String {
        columns(form)
            .into_iter()
            .find(|c| c.0 == name)
            .map(|c| c.1)
            .unwrap_or_default()
    };
    for form in ["parquet", "jsonl", "csv_schema"] {
        assert!(
            type_of(form, "time").starts_with("TIMESTAMP"),
            "{form}: {:?}",
            columns(form)
        );
        assert_eq!(
            type_of(form, "user_id"),
            "BIGINT",
            "{form}: {:?}",
            columns(form)
        );
        assert_eq!(type_of(form, "ip_address"), "VARCHAR", "{form}");
    }
    assert_eq!(type_of("parquet", "time"), "TIMESTAMP WITH TIME ZONE");
    assert_eq!(
        type_of("parquet", "link"),
        "VARCHAR",
        "a column no event fills"
    );
    assert_eq!(type_of("parquet", "extra"), "VARCHAR");

    // The platform's names kept in the Parquet file: every header of the platform's CSV is a
    // column's `platform_csv_header`.
    let listed = read["kv_columns"].as_array().unwrap();
    let headers: Vec<&str> = listed
        .iter()
        .filter_map(|c| c["platform_csv_header"].as_str())
        .collect();
    let platform: Vec<String> = read["platform_header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().trim().to_string())
        .collect();
    assert!(platform.len() >= 5, "{platform:?}");
    for header in &platform {
        assert!(headers.contains(&header.as_str()), "{header}: {listed:?}");
    }
    let ip = listed.iter().find(|c| c["name"] == "ip_address").unwrap();
    assert_eq!(ip["platform_csv_header"], "IP Address", "{ip}");

    // The manifest beside the days: each day's rows and SHA-256, and the merged file.
    let manifest = manifest_in(&parquet);
    let days = manifest["days"].as_array().unwrap();
    assert_eq!(days.len(), 7, "{manifest}");
    assert_eq!(manifest["columns"], "schema", "{manifest}");
    for entry in days {
        let day = entry["day"].as_str().unwrap();
        assert_eq!(entry["rows"], read["days"][day]["parquet"], "{entry}");
        assert_eq!(entry["sha256"], read["sha256"][day], "{entry}");
        assert_eq!(entry["file"], format!("files-{day}.parquet"), "{entry}");
    }
    assert_eq!(manifest["merged"]["rows"], total, "{manifest}");
    assert_eq!(manifest_in(&csv_platform)["columns"], "platform");
    // Nothing staged is left behind once the days are in the schema.
    for (out, ext) in [
        (&parquet, "parquet"),
        (&jsonl, "ndjson"),
        (&csv_schema, "csv"),
    ] {
        let staged = std::fs::read_dir(out.join(format!(".pubapi-{ext}-staging")))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".ndjson"))
            .count();
        assert_eq!(staged, 0, "{ext}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_title_days_start_with_the_header_and_hold_the_rows_of_the_titled_export() {
    // Byte for byte after the title is the SDK's property test (`copy_without_title`); two
    // exports' reports hold the same events per day, in other sample names.
    let sandbox = served().await;
    let dir = temp_dir("title");
    let titled = export_week(&sandbox, &dir, "titled", &[]).await;
    let bare = export_week(&sandbox, &dir, "bare", &["--no-title"]).await;
    for day in WEEK {
        let name = format!("files-{day}.csv");
        let titled = std::fs::read_to_string(titled.join(&name)).unwrap();
        let bare = std::fs::read_to_string(bare.join(&name)).unwrap();
        let titled: Vec<&str> = titled.split_inclusive('\n').collect();
        let bare: Vec<&str> = bare.split_inclusive('\n').collect();
        assert!(
            titled[0].starts_with("This report reflects activity"),
            "{day}"
        );
        assert_eq!(titled[1], bare[0], "{day}: the header first");
        assert!(bare[0].starts_with("File/Folder,"), "{day}");
        assert_eq!(titled.len() - 1, bare.len(), "{day}");
        assert!(
            bare.iter().all(|line| !line.starts_with("This report")),
            "{day}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filters_refusal_shows_an_example_for_the_kind_and_sends_nothing() {
    let sandbox = served().await;
    let dir = temp_dir("filters");
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["files", "--filters", r#"{"nope": 1}"#],
            &[
                r#"for example --filters '{"folders":["/Shared"]}'"#,
                "folders",
            ],
        ),
        (
            &["logins", "--filters", "not json"],
            &["not a JSON object", r#"for example --filters '{"events":["#],
        ),
        (
            &["logins", "--until", "2026-03-01"],
            &["--until 2026-03-01 is before --since 2026-03-02"],
        ),
    ];
    for (flags, says) in cases {
        let mut args: Vec<String> = ["audit", "export"].iter().map(|a| a.to_string()).collect();
        args.extend(flags.iter().map(|a| a.to_string()));
        args.extend(
            [
                "--since",
                "2026-03-02",
                "--state",
                &dir.join("s").display().to_string(),
                "--out-dir",
                &dir.display().to_string(),
            ]
            .iter()
            .map(|a| a.to_string()),
        );
        let run = pubapi(&sandbox, args).await;
        run.assert_says(2, says);
    }
    assert_eq!(sandbox.counters().requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_report_as_json_lines_and_as_parquet_holds_the_json_reports_events() {
    let sandbox = served().await;
    let dir = temp_dir("one");
    let report = |format: &str, out: &str| -> Vec<String> {
        [
            "audit", "logins", "--from", WEEK[0], "--to", WEEK[6], "--format", format, "--out", out,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let array = pubapi(&sandbox, report("json", "-")).await;
    assert_eq!(array.code, 0, "{array:?}");
    let events: Vec<Value> = serde_json::from_str(&array.stdout).unwrap();
    assert!(!events.is_empty());
    let json_lines = |run: Run| -> Vec<Value> {
        assert_eq!(run.code, 0, "{run:?}");
        run.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    // JSON lines in the kind's schema: every column a key, the values the events'.
    let names: Vec<&str> = pubapi_cli::data::schema(pubapi_sdk::types::AuditReportKind::Logins)
        .names()
        .collect();
    let lines = json_lines(pubapi(&sandbox, report("jsonl", "-")).await);
    assert_eq!(lines.len(), events.len());
    for (line, event) in lines.iter().zip(&events) {
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "{line}");
        // Each report's sample events are made anew: their times are the same.
        assert_eq!(line["time"], event["time"], "{line} / {event}");
        assert!(
            line["user_id"].is_i64() && line["username"].is_string(),
            "{line}"
        );
    }
    // `--columns platform`: each event as the platform sent it, in its fields.
    let mut platform = report("jsonl", "-");
    platform.extend(["--columns".to_string(), "platform".to_string()]);
    let sent = json_lines(pubapi(&sandbox, platform).await);
    assert_eq!(sent.len(), events.len());
    for (line, event) in sent.iter().zip(&events) {
        let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        assert_eq!(keys(line), keys(event), "{line} / {event}");
        assert_eq!(line["time"], event["time"]);
    }
    // CSV in the kind's schema: its header the column names, a record an event.
    let mut csv = report("csv", "-");
    csv.extend(["--columns".to_string(), "schema".to_string()]);
    let csv = pubapi(&sandbox, csv).await;
    assert_eq!(csv.code, 0, "{csv:?}");
    let records: Vec<&str> = csv.stdout.split_terminator("\r\n").collect();
    assert_eq!(records[0], names.join(","));
    assert_eq!(records.len() - 1, events.len());
    // Columns a format does not have are refused before anything is sent.
    let before = sandbox.counters().requests;
    for (format, columns, says) in [
        (
            "json",
            "schema",
            "--format json is the platform's JSON report as sent",
        ),
        ("parquet", "platform", "parquet has only the kind's schema"),
    ] {
        let mut args = report(format, "-");
        args.extend(["--columns".to_string(), columns.to_string()]);
        pubapi(&sandbox, args).await.assert_says(2, &[says]);
    }
    assert_eq!(sandbox.counters().requests, before, "nothing sent");
    let file = dir.join("logins.parquet");
    let parquet = pubapi(&sandbox, report("parquet", &file.display().to_string())).await;
    assert_eq!(parquet.code, 0, "{parquet:?}");
    assert!(
        parquet.stderr.contains(&format!("({} rows)", events.len())),
        "{parquet:?}"
    );
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
    let rows = reader.metadata().file_metadata().num_rows();
    assert_eq!(rows as usize, events.len());
    let refused = pubapi(&sandbox, report("parquet", "-")).await;
    refused.assert_says(2, &["--format parquet writes a file"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_to_stdout_writes_each_days_json_lines_as_the_manifest_counts_them() {
    let sandbox = served().await;
    let dir = temp_dir("stdout");
    let out = dir.join("d");
    std::fs::create_dir_all(&out).unwrap();
    let args: Vec<String> = [
        "audit",
        "export",
        "logins",
        "--since",
        WEEK[0],
        "--until",
        WEEK[2],
        "--format",
        "ndjson",
        "--stdout",
        "--state",
        &dir.join("s").display().to_string(),
        "--out-dir",
        &out.display().to_string(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let run = pubapi(&sandbox, args).await;
    assert_eq!(run.code, 0, "{run:?}");
    let manifest = manifest_in(&out);
    assert_eq!(manifest["days"].as_array().unwrap().len(), 3, "{manifest}");
    let lines = run.stdout.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(
        lines as u64,
        manifest["rows"].as_u64().unwrap(),
        "{manifest}"
    );
    assert!(lines > 0);
}

/// `files-<day>.<ext>` of each day of `days`.
fn day_files(days: &[&str], ext: &str) -> Vec<String> {
    days.iter()
        .map(|day| format!("files-{day}.{ext}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_in_the_kinds_schema_resumes_from_its_state_file_after_a_failed_day_and_a_stop_mid_day()
 {
    let sandbox = served().await;
    let dir = temp_dir("resume");
    let out = dir.join("d");
    std::fs::create_dir_all(&out).unwrap();
    let state = dir.join("s").display().to_string();
    let run = |start: &[&str], until: &str| -> Vec<String> {
        let mut args: Vec<String> = ["audit", "export", "files"]
            .iter()
            .chain(start)
            .chain(&[
                "--until",
                until,
                "--format",
                "ndjson",
                "--filters",
                r#"{"folders": ["/Shared"]}"#,
                "-v",
            ])
            .map(|a| a.to_string())
            .collect();
        args.extend([
            "--state".into(),
            state.clone(),
            "--out-dir".into(),
            out.display().to_string(),
        ]);
        args
    };
    let listed = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".ndjson"))
            .collect();
        names.sort();
        names
    };

    // The first run writes three days, then stops.
    let first = pubapi(&sandbox, run(&["--since", WEEK[0]], WEEK[2])).await;
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(listed(), day_files(&WEEK[..3], "ndjson"));

    // The next run's fourth day breaks mid-download: days 0-2 are not done again, nothing of
    // day 3 is kept, in the folder or staged.
    sandbox.inject(
        pubapi_sandbox::Fault::on("getAuditReport")
            .times(1)
            .cut_body(60),
    );
    let failed = pubapi(&sandbox, run(&["--since-last"], WEEK[6])).await;
    failed.assert_says(
        5,
        &[
            &format!("the export of {} failed", WEEK[3]),
            "the next run does it again",
        ],
    );
    for day in &WEEK[..3] {
        assert!(
            !failed.stderr.contains(&format!("({day}: ")),
            "{day} again: {failed:?}"
        );
    }
    assert_eq!(listed(), day_files(&WEEK[..3], "ndjson"));
    let staging = out.join(".pubapi-ndjson-staging");
    let staged = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&staging)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".ndjson"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(staged(), Vec::<String>::new());

    // A run that stopped between the SDK's day and the schema's (its staged NDJSON still there,
    // the day recorded as done) leaves the day to be made by the next run.
    let last = format!("files-{}.ndjson", WEEK[2]);
    std::fs::remove_file(out.join(&last)).unwrap();
    let stopped = concat!(
        r#"{"username":"ada","user_id":"7","time":"2026-03-04T10:00:00Z","ipAddress":"10.0.0.9","surprise":1}"#,
        "\n",
        r#"{"username":"bo","time":"2026-03-04T11:00:00Z"}"#,
        "\n"
    );
    std::fs::write(staging.join(&last), stopped).unwrap();

    let resumed = pubapi(&sandbox, run(&["--since-last"], WEEK[6])).await;
    assert_eq!(resumed.code, 0, "{resumed:?}");
    for day in &WEEK[3..] {
        assert!(
            resumed.stderr.contains(&format!("({day}: ")),
            "{day}: {resumed:?}"
        );
    }
    assert_eq!(listed(), day_files(&WEEK, "ndjson"));
    assert_eq!(staged(), Vec::<String>::new(), "nothing left staged");
    let made: Vec<Value> = std::fs::read_to_string(out.join(&last))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(made.len(), 2);
    assert_eq!(made[0]["ip_address"], "10.0.0.9");
    assert_eq!(made[0]["user_id"], 7, "an id sent as text is a number");
    assert_eq!(made[0]["extra"], r#"{"surprise":1}"#);
    assert_eq!(made[1]["extra"], Value::Null);
    let manifest = manifest_in_newest(&out);
    let days: Vec<&str> = manifest["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["day"].as_str().unwrap())
        .collect();
    assert!(
        days.contains(&WEEK[2]) && days.contains(&WEEK[6]),
        "{manifest}"
    );
    let entry = manifest["days"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["day"] == WEEK[2])
        .unwrap();
    assert_eq!(entry["rows"], 2, "{manifest}");

    // Up to date: the next run writes nothing.
    let again = pubapi(&sandbox, run(&["--since-last"], WEEK[6])).await;
    again.assert_says(0, &["the next day to export is 2026-03-09"]);
    assert!(!again.stderr.contains(" written ("), "{again:?}");
    assert_eq!(listed(), day_files(&WEEK, "ndjson"));

    // The same folder with the platform's columns is refused, nothing sent.
    let before = sandbox.counters().requests;
    let mut platform = run(&["--since-last"], WEEK[6]);
    platform.extend(["--columns".into(), "platform".into()]);
    pubapi(&sandbox, platform).await.assert_says(
        2,
        &[
            "days with other columns need another --out-dir",
            "--columns schema",
        ],
    );
    assert_eq!(sandbox.counters().requests, before);
}

/// The newest manifest in `dir` (their names end with the run's time).
fn manifest_in_newest(dir: &Path) -> Value {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .collect();
    paths.sort();
    serde_json::from_slice(&std::fs::read(paths.last().expect("a manifest")).unwrap()).unwrap()
}
