//! The webhook receiver's documented memory bound, measured: handling a delivery of `n`
//! bytes whose `data` has `k` elements holds at most about `40·n + 256·k` bytes of heap.
//!
//! A counting global allocator would need `unsafe impl GlobalAlloc`, which the workspace
//! forbids (`unsafe_code = "forbid"`), so this measures the peak resident memory instead:
//! each body is handled in a fresh child process (this test binary run again), which resets
//! its high-water mark (`/proc/self/clear_refs`) just before `Receiver::handle` and reads
//! `VmHWM` right after. A fresh process has no freed memory to reuse, so what the delivery
//! allocates and touches shows. Linux only.
#![cfg(target_os = "linux")]

use std::process::Command;

use pubapi_sdk_ext::webhook::{
    Batch, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ITEMS, HandlerError, Receiver, WebhookSecret,
    testing,
};

const SECRET: &str = "memory-secret-9f8e7d6c5b4a3928";
const CHILD: &str = "PUBAPI_RECEIVER_MEMORY_SHAPE";
const TEST_NAME: &str = "one_delivery_holds_at_most_40_bytes_per_body_byte_plus_256_per_element";
/// Page rounding, the allocator's own bookkeeping, and the first touch of a thread arena.
const SLACK: usize = 2 * 1024 * 1024;
/// What a body may grow to: close to the default parse limit, never over it.
const TARGET: usize = DEFAULT_MAX_BODY_BYTES - 4096;

fn receiver() -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .build()
        .unwrap()
}

/// A full envelope around `data`, with extra text spliced in after `"webhookId"` (a field
/// list starting with a comma) and into `user` (likewise).
fn element(id: &str, event_type: &str, extra: &str, user_extra: &str, data: &str) -> String {
    format!(
        r#"{{"eventId":"{id}","domain":"acme","timestamp":1700000000000,"user":{{"id":7,"displayName":"Ada","username":"ada","email":"ada@example.com"{user_extra}}},"actionSource":"PublicAPI","eventType":"{event_type}","webhookId":"wh-1"{extra},"data":{data}}}"#
    )
}

fn body(elements: &[String]) -> Vec<u8> {
    format!("{{\"data\":[{}]}}", elements.join(",")).into_bytes()
}

/// `count` arrays nested 100 deep: 64 bytes of `Value` tree per byte of text.
fn nested_arrays(count: usize) -> String {
    let one = format!("{}{}", "[".repeat(100), "]".repeat(100));
    format!("[{}]", vec![one; count].join(","))
}

/// `count` one-entry objects: about 90 bytes of `Value` tree per byte of text.
fn tiny_objects(count: usize) -> String {
    format!("[{}]", vec![r#"{"a":0}"#; count].join(","))
}

fn pad(padding: usize) -> String {
    format!(r#","pad":"{}""#, "p".repeat(padding))
}

/// Elements of `each` bytes or so, as many as fit in [`TARGET`] (at most `max`).
fn fill(max: usize, make: impl Fn(usize) -> String) -> Vec<u8> {
    let mut elements = Vec::new();
    let mut len = 12;
    while elements.len() < max {
        let next = make(elements.len());
        if len + next.len() + 1 > TARGET {
            break;
        }
        len += next.len() + 1;
        elements.push(next);
    }
    body(&elements)
}

/// The bodies measured, by name; `padding` makes dense elements just light enough to be read.
fn shape(name: &str, padding: usize) -> Vec<u8> {
    match name {
        // The issue's delivery: ~166,000 tiny elements (over `max_items`: kept raw).
        "flood_of_empty_objects" => body(&vec!["{}".to_owned(); 166_000]),
        "half_a_million_zeros" => body(&vec!["0".to_owned(); 500_000]),
        // `max_items` tiny dead letters: the per-element part of the bound.
        "max_items_tiny_dead_letters" => body(&vec!["0".to_owned(); DEFAULT_MAX_ITEMS]),
        "max_items_dead_letter_objects" => {
            body(&vec![r#"{"eventId":7}"#.to_owned(); DEFAULT_MAX_ITEMS])
        }
        "sample_events_of_every_type" => fill(usize::MAX, |n| {
            let types = testing::all_event_types();
            let event_type = &types[n % types.len()];
            testing::sample_event(event_type, &format!("e-{n}")).to_string()
        }),
        "smallest_events" => fill(usize::MAX, |n| {
            format!(
                r#"{{"eventId":"{n}","domain":"","timestamp":0,"user":{{"id":0,"displayName":"","username":"","email":""}},"actionSource":"","eventType":"","webhookId":""}}"#
            )
        }),
        "unreadably_dense_element" => body(&[element(
            "dense",
            "link:create",
            "",
            "",
            &nested_arrays(4_000),
        )]),
        // The densest elements still read as events, in each place a tree can grow.
        "dense_envelope_extra" => body(&[element(
            "e",
            "link:create",
            &format!(r#","x":{}{}"#, nested_arrays(900), pad(padding)),
            "",
            "{}",
        )]),
        "dense_user_extra" => body(&[element(
            "e",
            "link:create",
            &pad(padding),
            &format!(r#","x":{}"#, tiny_objects(16_000)),
            "{}",
        )]),
        "dense_data_extra" => body(&[element(
            "e",
            "fs:add_folder",
            &pad(padding),
            "",
            &format!(r#"{{"targetPath":"/a","x":{}}}"#, nested_arrays(900)),
        )]),
        "dense_unknown_data" => body(&[element(
            "e",
            "fs:not_yet_known",
            &pad(padding),
            "",
            &tiny_objects(16_000),
        )]),
        "dense_group_members" => body(&[element(
            "e",
            "group:add_members",
            &pad(padding),
            "",
            &format!(r#"{{"members":{}}}"#, nested_arrays(900)),
        )]),
        "many_dense_events" => fill(usize::MAX, |n| {
            element(
                &format!("e-{n}"),
                "fs:add_folder",
                &pad(padding),
                "",
                &format!(r#"{{"targetPath":"/a","x":{}}}"#, tiny_objects(200)),
            )
        }),
        other => panic!("unknown shape {other}"),
    }
}

/// Shapes whose padding is searched: the least with which the receiver still reads them.
const DENSE: [&str; 6] = [
    "dense_envelope_extra",
    "dense_user_extra",
    "dense_data_extra",
    "dense_unknown_data",
    "dense_group_members",
    "many_dense_events",
];

const PLAIN: [&str; 7] = [
    "flood_of_empty_objects",
    "half_a_million_zeros",
    "max_items_tiny_dead_letters",
    "max_items_dead_letter_objects",
    "sample_events_of_every_type",
    "smallest_events",
    "unreadably_dense_element",
];

fn handle(receiver: &Receiver, body: &[u8]) -> pubapi_sdk_ext::webhook::HandleOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let keep = |batch: Batch| async move {
        // Held until the handler returns, like a handler that stores the batch.
        std::hint::black_box(&batch);
        Ok::<(), HandlerError>(())
    };
    runtime.block_on(receiver.handle(&testing::authorized_headers(SECRET), body, &keep))
}

/// The least padding with which every element of the shape is read as an event.
fn least_padding_read(name: &str) -> usize {
    let read_whole = |padding: usize| {
        let outcome = handle(&receiver(), &shape(name, padding));
        outcome.dead_letters == 0 && outcome.accepted > 0
    };
    // A body of one element takes at most what the target leaves; a body of many, filled
    // to the target, takes fewer elements as they grow.
    let most = if name.starts_with("many_") {
        64 * 1024
    } else {
        TARGET.saturating_sub(shape(name, 0).len())
    };
    let (mut low, mut high) = (0, most);
    assert!(read_whole(high), "{name} is never read");
    while high - low > 16.max(high / 100) {
        let middle = low + (high - low) / 2;
        if read_whole(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}

fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// In the child: handle the body in `path` and print the peak memory it took.
///
/// The body is read from a file in one allocation, so that the child's heap holds nothing
/// freed that the delivery could reuse unseen.
fn measure(path: &str) {
    let body = std::fs::read(path).unwrap();
    let receiver = receiver();
    // Warm up: runtime, lazy statics and the allocator's first arena, outside the measure.
    handle(&receiver, br#"{"data":[]}"#);
    let before = status_kib("VmRSS:");
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS");
    let outcome = handle(&receiver, &body);
    let peak = status_kib("VmHWM:").saturating_sub(before) * 1024;
    println!(
        "MEASURED accepted={} dead_letters={} peak={peak}",
        outcome.accepted, outcome.dead_letters
    );
}

/// Handles `body` in a child process; returns what it printed and the peak.
fn run_child(name: &str, body: &[u8]) -> (String, usize) {
    let path = std::env::temp_dir().join(format!(
        "pubapi-receiver-memory-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, body).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|line| line.split_once("MEASURED ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("{name}: {stdout}"))
        .to_owned();
    let peak = line
        .split(' ')
        .find_map(|part| part.strip_prefix("peak="))
        .and_then(|peak| peak.parse().ok())
        .unwrap();
    (line, peak)
}

#[test]
fn one_delivery_holds_at_most_40_bytes_per_body_byte_plus_256_per_element() {
    if let Ok(spec) = std::env::var(CHILD) {
        measure(&spec);
        return;
    }
    let mut runs: Vec<(&str, usize)> = PLAIN.iter().map(|name| (*name, 0)).collect();
    runs.extend(DENSE.iter().map(|name| (*name, least_padding_read(name))));
    let mut over = Vec::new();
    for (name, padding) in runs {
        let body = shape(name, padding);
        assert!(
            body.len() <= DEFAULT_MAX_BODY_BYTES,
            "{name}: {}",
            body.len()
        );
        let elements = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["data"]
            .as_array()
            .map_or(0, Vec::len);
        let (line, peak) = run_child(name, &body);
        let bound = 40 * body.len() + 256 * elements;
        let report = format!(
            "{name}: {} bytes, {elements} elements, {line}: {:.1} x body, bound {bound}",
            body.len(),
            peak as f64 / body.len() as f64
        );
        println!("{report}");
        if peak > bound + SLACK {
            over.push(report);
        }
    }
    assert!(over.is_empty(), "over the documented bound: {over:#?}");
}
