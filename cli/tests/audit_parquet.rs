//! `pubapi audit export` for data tools: a week of file activity exported to Parquet loads
//! into DuckDB (PyPI `duckdb`) with typed columns and the same rows per day as the CSV export
//! of the same days; `--no-title` days start with the header; each run's
//! manifest says every day's rows and SHA-256; `--merge` holds the whole range.
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

/// What DuckDB reads: per day, the Parquet file's rows and the CSV file's (its title row
/// skipped), the Parquet columns' types, the merged file's rows per day of `time`, and each
/// Parquet file's SHA-256.
const DUCKDB_SCRIPT: &str = r#"
import duckdb, hashlib, json, sys
parquet, csv, merged, days = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
db = duckdb.connect()
out = {"days": {}, "types": {}, "merged": {}, "sha256": {}}
for day in days:
    p, c = f"{parquet}/files-{day}.parquet", f"{csv}/files-{day}.csv"
    out["days"][day] = {
        "parquet": db.execute(f"SELECT count(*) FROM read_parquet('{p}')").fetchone()[0],
        "csv": db.execute(f"SELECT count(*) FROM read_csv('{c}', skip=1, header=true)").fetchone()[0],
    }
    out["sha256"][day] = hashlib.sha256(open(p, "rb").read()).hexdigest()
for name, kind, *_ in db.execute(f"DESCRIBE SELECT * FROM read_parquet('{parquet}/files-{days[0]}.parquet')").fetchall():
    out["types"][name] = kind
for day, n in db.execute(f"SELECT strftime(time AT TIME ZONE 'UTC', '%Y-%m-%d'), count(*) FROM read_parquet('{merged}') GROUP BY 1").fetchall():
    out["merged"][day] = n
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_week_of_file_activity_in_parquet_loads_into_duckdb_typed_with_the_csv_rows_per_day() {
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
    let csv = export_week(&sandbox, &dir, "csv", &[]).await;
    let run = Command::new("python3")
        .args([
            "-c",
            DUCKDB_SCRIPT,
            &parquet.display().to_string(),
            &csv.display().to_string(),
            &merged_arg,
            &WEEK.join(","),
        ])
        .output()
        .unwrap();
    let run = finished(run);
    assert_eq!(run.code, 0, "{run:?}");
    let read: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let mut total = 0;
    for day in WEEK {
        let counts = &read["days"][day];
        assert_eq!(counts["parquet"], counts["csv"], "{day}: {read}");
        total += counts["parquet"].as_u64().unwrap();
        let merged_rows = read["merged"][day].as_u64().unwrap_or(0);
        assert_eq!(
            merged_rows,
            counts["parquet"].as_u64().unwrap(),
            "{day}: {read}"
        );
    }
    assert!(total > 7, "a week of file activity: {read}");
    let types = &read["types"];
    assert_eq!(types["time"], "TIMESTAMP WITH TIME ZONE", "{types}");
    assert_eq!(types["user_id"], "BIGINT", "{types}");
    assert_eq!(types["ip_address"], "VARCHAR", "{types}");
    assert_eq!(types["extra"], "VARCHAR", "{types}");

    // The manifest beside the days: each day's rows and SHA-256, and the merged file.
    let manifest = manifest_in(&parquet);
    let days = manifest["days"].as_array().unwrap();
    assert_eq!(days.len(), 7, "{manifest}");
    for entry in days {
        let day = entry["day"].as_str().unwrap();
        assert_eq!(entry["rows"], read["days"][day]["parquet"], "{entry}");
        assert_eq!(entry["sha256"], read["sha256"][day], "{entry}");
        assert_eq!(entry["file"], format!("files-{day}.parquet"), "{entry}");
    }
    assert_eq!(manifest["merged"]["rows"], total, "{manifest}");
    // Nothing staged is left behind once the days are Parquet.
    let staged = std::fs::read_dir(parquet.join(".pubapi-parquet-staging"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".ndjson"))
        .count();
    assert_eq!(staged, 0);
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
    let lines = pubapi(&sandbox, report("jsonl", "-")).await;
    assert_eq!(lines.code, 0, "{lines:?}");
    let lines: Vec<Value> = lines
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), events.len());
    assert!(lines.iter().all(Value::is_object));
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
