//! The report paths of issue 10 against a baseline in the same run: raw reqwest + serde into a
//! plain struct, served by one loopback server.
//!
//! - `json_report_1m_events`: a 1,000,000-event JSON report read through
//!   `Client::audit_report_events` vs the same pages fetched and decoded by hand;
//! - `csv_report_1gib`: a 1 GiB CSV copied through `CsvReport::copy_to` (attempt timeout 1 s)
//!   vs raw reqwest chunks;
//! - `decode`: one report page and one events page decoded by the SDK vs a plain struct;
//!   a page of 100 events of mixed types (as the sandbox sends them) decoded with `data()` of
//!   each event vs a plain struct with typed data; one audit event typed from a map by
//!   `AuditEvent::from_json` vs a plain struct decoding the same map;
//! - `csv_rows`: 20,000 CSV rows read in place by `CsvRows::next_record` (and as owned rows by
//!   `next`) vs csv-core reading the same chunks.
//!
//! Peak heap of one read of each variant is measured with a counting allocator (three rounds,
//! baseline and SDK in turn) and printed before the timings, with the wall time of seven
//! interleaved pairs of 1M-event reads (baseline, then SDK) and the ratio of each pair.
//!
//! `cargo bench -p pubapi-sdk-ext --bench reports`; `PUBAPI_FROM_JSON_COUNT` (see
//! [`from_json_counted`]) counts one audit event's decode under callgrind instead.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use peak_alloc::PeakAlloc;
use pubapi_sdk::types::AuditReportKind;
use pubapi_sdk_ext::audit::{AuditEvent, ReportLocation, ReportPage, ReportRead};
use pubapi_sdk_ext::events::{PollingEvent, PollingEventData};
use pubapi_sdk_ext::{Budget, Client, Limits, SecretToken};
use serde::Deserialize;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
mod support;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const TOTAL: u64 = 1_000_000;
const PAGE: u64 = 10_000;
const CSV_BYTES: u64 = 1 << 30;
/// Interleaved pairs of 1M-event reads (baseline, then SDK) timed before criterion's runs.
const PAIRS: usize = 7;

fn login(i: u64) -> serde_json::Value {
    serde_json::json!({"username": format!("user{i}"), "user_id": i, "event": "login",
                       "ip_address": "192.0.2.1", "access": "Web",
                       "time": "2026-01-02T10:00:00Z"})
}

/// One page of `PAGE` login events, as the platform sends it.
fn report_page() -> Vec<u8> {
    page_at(0, &page_events())
}

/// The `events` array of a page, rendered once.
fn page_events() -> Vec<u8> {
    let events: Vec<_> = (0..PAGE).map(login).collect();
    serde_json::to_vec(&events).unwrap()
}

/// The page that starts at `offset`, as the platform answers it (it says its offset).
fn page_at(offset: u64, events: &[u8]) -> Vec<u8> {
    let mut page = format!(r#"{{"total_count":{TOTAL},"offset":{offset},"count":{PAGE},"events":"#)
        .into_bytes();
    page.extend_from_slice(events);
    page.push(b'}');
    page
}

/// The `offset` query parameter of a request line (0 when absent).
fn offset_of(request_line: &str) -> u64 {
    request_line
        .split(['?', '&', ' '])
        .find_map(|part| part.strip_prefix("offset="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One events page of 100 file-system events.
fn events_page() -> Vec<u8> {
    let events: Vec<_> = (1..=100)
        .map(|id| {
            serde_json::json!({"id": id, "timestamp": "2026-01-05T10:00:00Z",
                "action_source": "WebUI", "actor": 7, "type": "file_system", "action": "move",
                "object_detail": "/pubapi/v1/fs/Shared/a.txt",
                "data": {"target_path": "/Shared/b/a.txt", "target_id": "v2",
                         "target_group_id": "g1", "source_path": "/Shared/a.txt",
                         "source_id": "v1", "source_group_id": "g1", "is_folder": false}})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "latest_id": 100, "oldest_id": 1, "count": 100, "events": events
    }))
    .unwrap()
}

/// One events page of 100 events of mixed types, as the platform (and the sandbox) sends
/// them: in every ten, six file-system events (create, move, delete), three permission
/// changes with their `eventTypeSpecificAttributes`, one note.
fn mixed_events_page() -> Vec<u8> {
    let events: Vec<_> = (1..=100)
        .map(|id| {
            let mut event = serde_json::json!({"id": id, "timestamp": "2026-01-05T10:00:00.123Z",
                "action_source": "WebUI", "actor": 7,
                "object_detail": format!("/pubapi/v1/fs/Shared/f{id}.txt")});
            let (kind, action, data) = match id % 10 {
                0..=5 => {
                    let action = ["create", "move", "delete"][id % 3];
                    let mut data = serde_json::json!({"target_path": format!("/Shared/b/f{id}.txt"),
                        "target_id": format!("v{id}"), "target_group_id": format!("g{id}"),
                        "is_folder": false});
                    if action == "move" {
                        data["source_path"] = format!("/Shared/f{id}.txt").into();
                        data["source_id"] = format!("v{}", id + 1000).into();
                        data["source_group_id"] = format!("g{id}").into();
                    }
                    ("file_system", action, data)
                }
                6..=8 => {
                    event["eventTypeSpecificAttributes"] = serde_json::json!({
                    "changeGroupEvents": [], "groupChange": false, "changeContext": null,
                    "targetFolderId": format!("g{id}"),
                    "changePermissionEvent": {"changedPermissions": [
                        {"action": "DELETE", "entry": {"subject": "user:alice", "priv": "viewer"}},
                        {"action": "ADD", "entry": {"subject": "user:alice", "priv": "editor"}}
                    ]}});
                    let data = serde_json::json!({"target_path": format!("/Shared/d{id}"),
                                                  "is_folder": false});
                    ("permission_change", "permission_change", data)
                }
                _ => {
                    let data = serde_json::json!({"target_path": format!("/Shared/f{id}.txt"),
                        "target_group_id": format!("g{id}"), "text": "please review"});
                    ("note", "create", data)
                }
            };
            event["type"] = kind.into();
            event["action"] = action.into();
            event["data"] = data;
            event
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "latest_id": 100, "oldest_id": 1, "count": 100, "events": events
    }))
    .unwrap()
}

/// Serves the JSON page at the offset asked for every request to a report, and 1 GiB of CSV
/// rows for requests that accept `text/csv`, keeping connections alive.
async fn serve(events: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let row: Vec<u8> = b"user1,login,192.0.2.1,Web,2026-01-02T10:00:00Z\n"
        .iter()
        .copied()
        .cycle()
        .take(64 * 1024)
        .collect();
    let row = Arc::new(row);
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            socket.set_nodelay(true).unwrap();
            let (events, row) = (events.clone(), row.clone());
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read);
                loop {
                    let Some(head) = support::read_head(&mut lines).await else {
                        return;
                    };
                    let csv = head
                        .iter()
                        .any(|line| line.to_ascii_lowercase().starts_with("accept: text/csv"));
                    let page = page_at(offset_of(&head[0]), &events);
                    let (length, kind) = if csv {
                        (CSV_BYTES, "text/csv")
                    } else {
                        (page.len() as u64, "application/json")
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {length}\r\n\r\n"
                    );
                    if write.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let sent = if csv {
                        let mut sent = Ok(());
                        for _ in 0..CSV_BYTES / row.len() as u64 {
                            sent = write.write_all(&row).await;
                            if sent.is_err() {
                                break;
                            }
                        }
                        sent
                    } else {
                        write.write_all(&page).await
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/pubapi")
}

/// The plain struct a hand-written client would decode a login event into.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainLogin {
    username: Option<String>,
    user_id: Option<i64>,
    event: Option<String>,
    ip_address: Option<String>,
    access: Option<String>,
    time: Option<String>,
}

#[derive(serde::Deserialize)]
struct PlainReportPage {
    events: Vec<PlainLogin>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainFsData {
    target_path: Option<String>,
    target_id: Option<String>,
    target_group_id: Option<String>,
    source_path: Option<String>,
    source_id: Option<String>,
    source_group_id: Option<String>,
    is_folder: Option<bool>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainEvent {
    id: i64,
    timestamp: Option<String>,
    action_source: Option<String>,
    actor: Option<i64>,
    #[serde(rename = "type")]
    kind: Option<String>,
    action: Option<String>,
    object_detail: Option<String>,
    data: PlainFsData,
}

/// The `data` of any event type, as a hand-written client that knows them would decode it:
/// one struct with every field the types use.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainAnyData {
    target_path: Option<String>,
    target_id: Option<String>,
    target_group_id: Option<String>,
    source_path: Option<String>,
    source_id: Option<String>,
    source_group_id: Option<String>,
    is_folder: Option<bool>,
    text: Option<String>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainEntry {
    subject: Option<String>,
    #[serde(rename = "priv")]
    level: Option<String>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainChanged {
    action: Option<String>,
    entry: Option<PlainEntry>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainPermissionEvent {
    #[serde(rename = "changedPermissions", default)]
    changed_permissions: Vec<PlainChanged>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainAttributes {
    #[serde(rename = "changeContext")]
    change_context: Option<String>,
    #[serde(rename = "changeGroupEvents", default)]
    change_group_events: Vec<serde_json::Value>,
    #[serde(rename = "changePermissionEvent")]
    change_permission_event: Option<PlainPermissionEvent>,
    #[serde(rename = "groupChange")]
    group_change: Option<bool>,
    #[serde(rename = "targetFolderId")]
    target_folder_id: Option<String>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainAnyEvent {
    id: i64,
    timestamp: String,
    action_source: Option<String>,
    actor: Option<i64>,
    #[serde(rename = "type")]
    kind: String,
    action: Option<String>,
    object_detail: Option<String>,
    data: PlainAnyData,
    #[serde(rename = "eventTypeSpecificAttributes")]
    attributes: Option<PlainAttributes>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainAnyEventPage {
    latest_id: Option<i64>,
    oldest_id: Option<i64>,
    events: Vec<PlainAnyEvent>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainEventPage {
    latest_id: Option<i64>,
    oldest_id: Option<i64>,
    events: Vec<PlainEvent>,
}

fn client(base: &str) -> Client {
    Client::builder()
        .base_url(base)
        .token(SecretToken::try_from("t").unwrap())
        .limits(Limits {
            general: Budget::new(None, None),
            ai: Budget::new(None, None),
        })
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .unwrap()
}

fn location() -> ReportLocation {
    ReportLocation {
        kind: AuditReportKind::Logins,
        id: "j1".into(),
    }
}

async fn raw_json(raw: &reqwest::Client, base: &str) -> u64 {
    let mut offset = 0;
    while offset < TOTAL {
        let url = format!("{base}/v1/audit/logins/j1?offset={offset}&count={PAGE}");
        let body = raw.get(url).send().await.unwrap().bytes().await.unwrap();
        let page: PlainReportPage = serde_json::from_slice(&body).unwrap();
        offset += page.events.len() as u64;
        black_box(page);
    }
    offset
}

async fn sdk_json(client: &Client) -> u64 {
    let mut stream = client.audit().events(location(), ReportRead::default());
    let mut events = 0u64;
    while let Some(event) = stream.next().await {
        black_box(event.unwrap());
        events += 1;
    }
    events
}

async fn raw_csv(raw: &reqwest::Client, base: &str) -> u64 {
    let url = format!("{base}/v1/audit/logins/j1");
    let mut response = raw
        .get(url)
        .header("accept", "text/csv")
        .send()
        .await
        .unwrap();
    let mut bytes = 0;
    while let Some(chunk) = response.chunk().await.unwrap() {
        bytes += chunk.len() as u64;
    }
    bytes
}

async fn sdk_csv(client: &Client) -> u64 {
    let report = client.audit().csv(&location()).await.unwrap();
    report.copy_to(&mut tokio::io::sink()).await.unwrap()
}

/// Peak heap above the live bytes at the start of `run`.
fn peak_of<T>(run: impl FnOnce() -> T) -> (T, usize) {
    let base = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let out = run();
    (out, ALLOCATOR.peak_usage().saturating_sub(base))
}

/// `PUBAPI_FROM_JSON_COUNT=<variant>:<events>` types exactly that many login events, each
/// from its own clone of one map, and exits: two counts' difference in callgrind, divided by
/// the difference in events, is the cost of one event (a clone of the map, its decode, and
/// the drop of what is left). Variants: `clone_only` (the clone and its drop: the floor),
/// `plain_struct_by_value`, `plain_struct_by_ref`, `generated_type_by_ref` (what
/// `from_json` did before it moved strings: the generated type read from the borrowed map)
/// and `sdk_from_json`.
fn from_json_counted(spec: &str) {
    let (variant, events) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("PUBAPI_FROM_JSON_COUNT={spec}: want variant:events"));
    let events: usize = events.parse().expect("a number of events");
    let map = match login(7) {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("a login event is an object"),
    };
    for _ in 0..events {
        let map = black_box(map.clone());
        match variant {
            "clone_only" => drop(black_box(map)),
            "plain_struct_by_value" => drop(black_box(PlainLogin::deserialize(map).unwrap())),
            "plain_struct_by_ref" => drop(black_box(PlainLogin::deserialize(&map).unwrap())),
            "generated_type_by_ref" => drop(black_box(
                pubapi_sdk::types::LoginsAuditEvent::deserialize(&map).unwrap(),
            )),
            "sdk_from_json" => drop(black_box(AuditEvent::from_json(
                AuditReportKind::Logins,
                map,
            ))),
            other => panic!("unknown variant {other}"),
        }
    }
}

fn reports(c: &mut Criterion) {
    if let Ok(spec) = std::env::var("PUBAPI_FROM_JSON_COUNT") {
        from_json_counted(&spec);
        std::process::exit(0);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let page = report_page();
    let base = runtime.block_on(serve(Arc::new(page_events())));
    let client = client(&base);
    let raw = reqwest::Client::new();

    // Peak heap of one read of each variant, three rounds, baseline and SDK in turn; each
    // read must have read all it should.
    let peak = |read: &dyn Fn() -> u64, expected: u64| {
        let (n, peak) = peak_of(read);
        assert_eq!(n, expected);
        peak
    };
    for round in 1..=3 {
        for (name, peak) in [
            (
                "raw reqwest + serde, 1M JSON events",
                peak(&|| runtime.block_on(raw_json(&raw, &base)), TOTAL),
            ),
            (
                "sdk audit_report_events, 1M JSON events",
                peak(&|| runtime.block_on(sdk_json(&client)), TOTAL),
            ),
            (
                "raw reqwest chunks, 1 GiB CSV",
                peak(&|| runtime.block_on(raw_csv(&raw, &base)), CSV_BYTES),
            ),
            (
                "sdk CsvReport::copy_to, 1 GiB CSV",
                peak(&|| runtime.block_on(sdk_csv(&client)), CSV_BYTES),
            ),
        ] {
            println!(
                "peak heap, round {round}: {name}: {:.2} MiB",
                peak as f64 / (1 << 20) as f64
            );
        }
    }

    // Wall time of the 1M-event read, baseline and SDK in turn (pairs a few seconds apart,
    // so other work on the machine weighs on both alike): the ratio of each pair.
    let mut ratios = Vec::new();
    for _ in 0..PAIRS {
        let timed = |read: &dyn Fn() -> u64| {
            let start = std::time::Instant::now();
            assert_eq!(read(), TOTAL);
            start.elapsed().as_secs_f64()
        };
        let raw_s = timed(&|| runtime.block_on(raw_json(&raw, &base)));
        let sdk_s = timed(&|| runtime.block_on(sdk_json(&client)));
        println!(
            "1M JSON events, interleaved: raw {raw_s:.3} s, sdk {sdk_s:.3} s, ratio {:.3}",
            sdk_s / raw_s
        );
        ratios.push(sdk_s / raw_s);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "1M JSON events, interleaved: sdk / raw over {PAIRS} pairs: median {:.3}, min {:.3}, max {:.3}",
        ratios[PAIRS / 2],
        ratios[0],
        ratios[PAIRS - 1]
    );

    let mut json = c.benchmark_group("json_report_1m_events");
    json.sample_size(10).throughput(Throughput::Elements(TOTAL));
    json.bench_function("raw_reqwest_serde_plain_struct", |b| {
        b.to_async(&runtime).iter(|| raw_json(&raw, &base))
    });
    json.bench_function("sdk_audit_report_events", |b| {
        b.to_async(&runtime).iter(|| sdk_json(&client))
    });
    json.finish();

    let mut csv = c.benchmark_group("csv_report_1gib");
    csv.sample_size(10).throughput(Throughput::Bytes(CSV_BYTES));
    csv.bench_function("raw_reqwest_chunks", |b| {
        b.to_async(&runtime).iter(|| raw_csv(&raw, &base))
    });
    csv.bench_function("sdk_copy_to_attempt_timeout_1s", |b| {
        b.to_async(&runtime).iter(|| sdk_csv(&client))
    });
    csv.finish();

    let events = events_page();
    let mut decode = c.benchmark_group("decode");
    decode.throughput(Throughput::Elements(PAGE));
    decode.bench_function("report_page_plain_struct", |b| {
        b.iter(|| serde_json::from_slice::<PlainReportPage>(black_box(&page)).unwrap())
    });
    decode.bench_function("report_page_sdk_typed", |b| {
        b.iter(|| ReportPage::decode(AuditReportKind::Logins, black_box(&page)).unwrap())
    });
    decode.throughput(Throughput::Elements(100));
    decode.bench_function("events_page_plain_struct", |b| {
        b.iter(|| serde_json::from_slice::<PlainEventPage>(black_box(&events)).unwrap())
    });
    decode.bench_function("events_page_sdk_generated", |b| {
        b.iter(|| {
            serde_json::from_slice::<pubapi_sdk::types::EventPage>(black_box(&events)).unwrap()
        })
    });
    let mixed = mixed_events_page();
    decode.bench_function("events_page_mixed_plain_struct_typed_data", |b| {
        b.iter(|| serde_json::from_slice::<PlainAnyEventPage>(black_box(&mixed)).unwrap())
    });
    decode.bench_function("events_page_mixed_sdk_generated", |b| {
        b.iter(|| {
            serde_json::from_slice::<pubapi_sdk::types::EventPage>(black_box(&mixed)).unwrap()
        })
    });
    decode.bench_function("events_page_mixed_sdk_data", |b| {
        b.iter(|| sdk_events_with_data(black_box(&mixed), |data| _ = black_box(data)))
    });
    decode.throughput(Throughput::Elements(1));
    let map = match login(7) {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("a login event is an object"),
    };
    // Each side is given its own copy of the map (made outside the timing) and drops it.
    decode.bench_function("audit_event_plain_struct_from_map", |b| {
        b.iter_batched(
            || map.clone(),
            |map| PlainLogin::deserialize(map).unwrap(),
            BatchSize::SmallInput,
        )
    });
    decode.bench_function("audit_event_plain_struct_from_map_ref", |b| {
        b.iter_batched(
            || map.clone(),
            |map| PlainLogin::deserialize(&map).unwrap(),
            BatchSize::SmallInput,
        )
    });
    decode.bench_function("audit_event_sdk_from_json", |b| {
        b.iter_batched(
            || map.clone(),
            |map| AuditEvent::from_json(AuditReportKind::Logins, map),
            BatchSize::SmallInput,
        )
    });
    decode.finish();

    // CSV rows read in place, against csv-core reading the same chunks into one buffer: each
    // side touches every field's bytes.
    let chunks = csv_chunks();
    // Both sides read every field: the title's and header's bytes are csv-core's only extra.
    let extra = "This report reflects activity up to 1/31/26 23:59:59".len()
        + "UsernameEventIP AddressAccessTime".len();
    assert_eq!(
        csv_core_fields(&chunks),
        runtime.block_on(sdk_record_fields(&chunks)) + extra
    );
    let mut rows = c.benchmark_group("csv_rows");
    rows.throughput(Throughput::Elements(CSV_ROWS));
    rows.bench_function("csv_core_in_place", |b| {
        b.iter(|| csv_core_fields(black_box(&chunks)))
    });
    rows.bench_function("sdk_next_record", |b| {
        b.iter(|| runtime.block_on(sdk_record_fields(black_box(&chunks))))
    });
    rows.bench_function("sdk_next_owned", |b| {
        b.iter(|| runtime.block_on(sdk_owned_fields(black_box(&chunks))))
    });
    rows.finish();
}

/// An events page decoded as the SDK does (the generated page, each event a `PollingEvent`),
/// with the typed `data()` of every event, each handed to `use_data` (which the plain side
/// gets in its structs).
fn sdk_events_with_data(
    body: &[u8],
    use_data: impl Fn(&PollingEventData<'_>),
) -> Vec<PollingEvent> {
    let page: pubapi_sdk::types::EventPage = serde_json::from_slice(body).unwrap();
    let events: Vec<PollingEvent> = page.events.into_iter().map(PollingEvent::from).collect();
    for event in &events {
        use_data(&event.data());
    }
    events
}

/// Data rows in the `csv_rows` group.
const CSV_ROWS: u64 = 20_000;

/// A logins report of [`CSV_ROWS`] rows (the title row, the header, then the rows), cut into
/// chunks of 16 KiB as a download arrives.
fn csv_chunks() -> Vec<bytes::Bytes> {
    let mut body = String::from(
        "This report reflects activity up to 1/31/26 23:59:59\r\nUsername,Event,IP Address,Access,Time\r\n",
    );
    for i in 0..CSV_ROWS {
        body.push_str(&format!(
            "user{i},\"Login, failed\",192.0.2.{},Web,2026-01-31T10:00:{:02}Z\r\n",
            i % 250,
            i % 60
        ));
    }
    body.into_bytes()
        .chunks(16 << 10)
        .map(bytes::Bytes::copy_from_slice)
        .collect()
}

/// Total field bytes of every record, read by csv-core in place.
fn csv_core_fields(chunks: &[bytes::Bytes]) -> usize {
    let mut reader = csv_core::Reader::new();
    let (mut out, mut ends) = (vec![0u8; 4096], vec![0usize; 64]);
    let (mut out_len, mut ends_len, mut total) = (0, 0, 0);
    let mut inputs = chunks.iter().map(|c| &c[..]);
    let mut input: &[u8] = b"";
    loop {
        if input.is_empty() {
            // An empty input is the end to csv-core: the next chunk first, if there is one.
            input = inputs.next().unwrap_or_default();
        }
        let (result, read, written, ended) =
            reader.read_record(input, &mut out[out_len..], &mut ends[ends_len..]);
        input = &input[read..];
        out_len += written;
        ends_len += ended;
        match result {
            csv_core::ReadRecordResult::InputEmpty => {}
            csv_core::ReadRecordResult::Record => {
                let mut start = 0;
                for &end in &ends[..ends_len] {
                    total += black_box(&out[start..end]).len();
                    start = end;
                }
                (out_len, ends_len) = (0, 0);
            }
            csv_core::ReadRecordResult::End => return total,
            _ => unreachable!("the buffers are large enough"),
        }
    }
}

/// A CSV report over `chunks`, as a download would hand them over.
fn csv_report(chunks: &[bytes::Bytes]) -> pubapi_sdk_ext::audit::CsvReport {
    let chunks = chunks.to_vec();
    let stream = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    let response = http::Response::new(reqwest::Body::wrap_stream(stream));
    pubapi_sdk_ext::audit::CsvReport::from_response(reqwest::Response::from(response))
}

/// Total field bytes of every data row, read in place through `next_record`.
async fn sdk_record_fields(chunks: &[bytes::Bytes]) -> usize {
    let mut rows = csv_report(chunks).rows();
    let mut total = 0;
    while let Some(record) = rows.next_record().await {
        for field in record.unwrap().iter_bytes() {
            total += black_box(field).len();
        }
    }
    total
}

/// Total field bytes of every data row, each row an owned copy (`next`).
async fn sdk_owned_fields(chunks: &[bytes::Bytes]) -> usize {
    let mut rows = csv_report(chunks).rows();
    let mut total = 0;
    while let Some(row) = rows.next().await {
        total += row
            .unwrap()
            .fields()
            .iter()
            .map(|f| black_box(f).len())
            .sum::<usize>();
    }
    total
}

criterion_group!(benches, reports);
criterion_main!(benches);
