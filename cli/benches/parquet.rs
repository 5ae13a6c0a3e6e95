//! A million audit events (a files report) written to Parquet, beside the same rows written
//! to CSV in the kind's schema (`--columns schema`): the same events, parsed the same way,
//! into a file each. Memory: the peak resident
//! size (VmHWM, reset before each run) while writing a tenth of the events and all of them,
//! printed once before the timings; flat memory is the two peaks being alike.
//!
//! `cargo bench -p pubapi-cli --bench parquet`

use criterion::{Criterion, criterion_group, criterion_main};
use pubapi_cli::data::{EventsParquet, RowSchema, SchemaRows, TextForm, schema};
use pubapi_sdk::types::AuditReportKind;
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Events in the report.
const EVENTS: usize = 1_000_000;

/// One files event as the platform's JSON report carries it.
fn event(n: usize) -> String {
    let users = ["admin", "power", "sam", "nora"];
    let actions = ["download", "upload", "move", "copy", "preview"];
    format!(
        r#"{{"access":"Web","file":"report-{n}.pdf","file_checksum":"{n:032x}","ipAddress":"10.{}.{}.{}","target_path":"/Shared/Projects/report-{n}.pdf","time":"2026-12-04T{:02}:{:02}:{:02}Z","transaction":"{}","user_id":{},"username":"{}"}}"#,
        n % 256,
        (n / 256) % 256,
        (n / 65_536) % 256,
        (n / 3600) % 24,
        (n / 60) % 60,
        n % 60,
        actions[n % actions.len()],
        1001 + n % users.len(),
        users[n % users.len()],
    )
}

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-bench-parquet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The rows as CSV in the kind's schema, as `--columns schema` writes them: the header,
/// then each event's cells.
fn to_csv(lines: &[String], rows: &RowSchema, path: &Path) {
    let file = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut out = SchemaRows::new(file, rows.clone(), TextForm::Csv).unwrap();
    for line in lines {
        out.push_line(line).unwrap();
    }
    let (_, mut file) = out.finish().unwrap();
    file.flush().unwrap();
}

fn to_parquet(lines: &[String], rows: &RowSchema, path: &Path) -> u64 {
    let file = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut out = EventsParquet::new(file, rows.clone()).unwrap();
    for line in lines {
        out.push_line(line).unwrap();
    }
    let (written, mut file) = out.finish().unwrap();
    file.flush().unwrap();
    written
}

/// The peak resident size since the last reset, in KiB (Linux; 0 elsewhere).
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Resets the peak to the current resident size (`/proc/self/clear_refs`, Linux).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn report(c: &mut Criterion) {
    let lines: Vec<String> = (0..EVENTS).map(event).collect();
    let rows = schema(AuditReportKind::Files);
    let dir = out_dir();
    for events in [EVENTS / 10, EVENTS] {
        reset_peak();
        let before = peak_kib();
        to_parquet(&lines[..events], &rows, &dir.join("memory.parquet"));
        let parquet = peak_kib().saturating_sub(before);
        reset_peak();
        let before = peak_kib();
        to_csv(&lines[..events], &rows, &dir.join("memory.csv"));
        let csv = peak_kib().saturating_sub(before);
        println!(
            "memory: {events} events: peak grew {parquet} KiB writing Parquet, {csv} KiB writing CSV"
        );
    }
    let size = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len()) >> 20;
    println!(
        "size: {EVENTS} events: {} MiB of Parquet, {} MiB of CSV",
        size("memory.parquet"),
        size("memory.csv")
    );
    let mut group = c.benchmark_group("report_1m_events");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(25));
    group.bench_function("csv", |b| {
        b.iter(|| to_csv(black_box(&lines), &rows, &dir.join("bench.csv")));
    });
    group.bench_function("parquet", |b| {
        b.iter(|| to_parquet(black_box(&lines), &rows, &dir.join("bench.parquet")));
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, report);
criterion_main!(benches);
