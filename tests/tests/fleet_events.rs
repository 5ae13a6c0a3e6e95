//! One consumer per event stream across a fleet: three OS processes run the same stream
//! through a real `redis-server`, the sandbox serving the events API; the holder is
//! SIGKILLed twice mid-stream.
//!
//! The workers are this test binary run again with `PUBAPI_FLEET_WORKER` set: each runs the
//! stream as a service would (handle an event, then save the checkpoint) and appends a line
//! per item to one file (`O_APPEND`, one write per line), which the controller reads.

#[allow(dead_code, reason = "a file of sdk-ext's test support, used as is")]
#[path = "../../sdk-ext/tests/support/redis_server.rs"]
mod redis_server;

use futures_util::StreamExt;
use pubapi_sandbox::{Sandbox, SandboxConfig};
use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamNotice, StreamStart};
use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
use pubapi_sdk_ext::{Budget, Client, Limits, SecretToken};
use redis_server::RedisServer;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const WORKER: &str = "PUBAPI_FLEET_WORKER";
const TEST: &str = "three_consumers_of_one_stream_hand_every_event_over_in_order_through_two_kills";
const LEASE: Duration = Duration::from_millis(1500);
const EVENTS: usize = 150;

#[allow(
    clippy::disallowed_methods,
    reason = "worker processes stamp their hand-overs with the machine's clock"
)]
fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set for a worker"))
}

/// A worker: consumes the stream, one line per item.
async fn worker() {
    let me = var(WORKER);
    let hold_at: i64 = var("FLEET_HOLD_AT").parse().unwrap();
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(var("FLEET_OUT"))
        .unwrap();
    let mut say = |line: String| {
        out.write_all(format!("{line} {me} {}\n", unix_ms()).as_bytes())
            .unwrap();
    };
    let client = Client::builder()
        .base_url(&var("FLEET_BASE_URL"))
        .token(SecretToken::try_from(var("FLEET_TOKEN")).unwrap())
        .limits(Limits {
            general: Budget::new(Some(100), Some(1_000_000)),
            ai: Budget::new(None, Some(100)),
        })
        .build()
        .unwrap();
    let store = RedisCheckpoints::connect(&var("FLEET_REDIS"))
        .await
        .unwrap()
        .lease_time(LEASE);
    let mut stream = client
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::Oldest)
        .page_size(10)
        .checkpoints(Arc::new(store), "fleet-test")
        .build();
    let mut may_repeat = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamItem::Event(event)) => {
                let id = event.id();
                let token = stream.lease_token().unwrap();
                say(format!("event {id} {token} {}", u8::from(may_repeat)));
                // The holder that takes over hands it out again, and goes on.
                let first_time = !std::mem::take(&mut may_repeat);
                if id == hold_at && first_time {
                    // Handled and not saved: the controller kills this process now.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                // The rest of the handler's work.
                tokio::time::sleep(Duration::from_millis(10)).await;
                if let Err(e) = stream.save_checkpoint().await {
                    say(format!("save-failed {:?}", e.kind));
                }
            }
            Ok(StreamItem::Notice(StreamNotice::Consuming {
                token,
                after,
                taken_over,
            })) => {
                may_repeat = taken_over;
                say(format!(
                    "consuming {token} {after} {}",
                    u8::from(taken_over)
                ));
            }
            Ok(StreamItem::Notice(StreamNotice::StandingBy { .. })) => say("standing-by".into()),
            Ok(StreamItem::Notice(StreamNotice::LeaseLost { token })) => {
                say(format!("lost {token}"))
            }
            Ok(StreamItem::Notice(_)) => {}
            Ok(StreamItem::Undecodable(event)) => say(format!("undecodable {:?}", event.id)),
            // An item of a later version of the SDK: said, so the controller sees it.
            Ok(_) => say("unknown-item".into()),
            // One word, on one line: an error's text may hold spaces and line breaks.
            Err(e) => say(format!("error {}", e.to_string().replace([' ', '\n'], "_"))),
        }
    }
}

/// One line of the workers' file.
#[derive(Debug, Clone)]
struct Line {
    words: Vec<String>,
    worker: String,
    at_ms: u128,
}

/// The whole lines of the workers' file. A line being appended may be seen in part: a write
/// that crosses a page of the file's cache is made visible page by page, so the text after the
/// last line break is not read yet.
fn lines(path: &Path) -> Vec<Line> {
    let bytes = std::fs::read(path).unwrap();
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(&[][..], |end| &bytes[..end]);
    std::str::from_utf8(whole)
        .unwrap()
        .lines()
        .map(|line| {
            let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
            let at_ms = words
                .pop()
                .unwrap()
                .parse()
                .unwrap_or_else(|e| panic!("{line:?} does not end with a time: {e}"));
            let worker = words.pop().unwrap();
            Line {
                words,
                worker,
                at_ms,
            }
        })
        .collect()
}

fn events(lines: &[Line]) -> Vec<&Line> {
    lines.iter().filter(|l| l.words[0] == "event").collect()
}

fn id_of(line: &Line) -> i64 {
    line.words[1].parse().unwrap()
}

/// Waits until the workers' file satisfies `done`, at most `limit`.
fn wait_for(path: &Path, limit: Duration, what: &str, done: impl Fn(&[Line]) -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        let seen = lines(path);
        if done(&seen) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {seen:#?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn spawn_worker(
    n: usize,
    out: &Path,
    sandbox: &Sandbox,
    redis: &RedisServer,
    hold_at: i64,
) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture"])
        .env(WORKER, format!("w{n}"))
        .env("FLEET_OUT", out)
        .env("FLEET_BASE_URL", sandbox.base_url())
        .env("FLEET_TOKEN", sandbox.admin_token())
        .env("FLEET_REDIS", redis.url())
        .env("FLEET_HOLD_AT", hold_at.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn out_file() -> PathBuf {
    let path = std::env::temp_dir().join(format!("pubapi-fleet-events-{}", std::process::id()));
    std::fs::write(&path, "").unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_consumers_of_one_stream_hand_every_event_over_in_order_through_two_kills() {
    if std::env::var_os(WORKER).is_some() {
        return worker().await;
    }
    let redis = RedisServer::start();
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    for i in 0..EVENTS {
        sandbox
            .activity_as("sam")
            .create_folder(&format!("/Fleet {i}"))
            .unwrap();
    }
    // What the stream holds, read once by the controller.
    let mut all = sandbox
        .client_for("admin")
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::Oldest)
        .build();
    let mut expected = Vec::new();
    while let Some(item) = all.next().await {
        match item.unwrap() {
            StreamItem::Event(event) => expected.push(event.id()),
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => break,
            StreamItem::Notice(_) => {}
            StreamItem::Undecodable(event) => panic!("the sandbox sent {event:?}"),
            other => panic!("an item this test does not know: {other:?}"),
        }
    }
    assert_eq!(expected.len(), EVENTS);

    let out = out_file();
    // The first kill lands where a holder handled an event and had not saved it (the worst
    // moment); the second wherever the holder is.
    let hold_at = expected[40];
    let mut workers: Vec<Option<Child>> = (0..3)
        .map(|n| Some(spawn_worker(n, &out, &sandbox, &redis, hold_at)))
        .collect();
    let kill = |workers: &mut Vec<Option<Child>>, name: &str| {
        let n: usize = name.trim_start_matches('w').parse().unwrap();
        let mut child = workers[n].take().expect("a live worker");
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        unix_ms()
    };
    let holder_of = |id: i64| {
        let seen = lines(&out);
        let line = events(&seen).into_iter().find(|l| id_of(l) == id).cloned();
        line.unwrap().worker
    };
    wait_for(&out, Duration::from_secs(60), "the held event", |seen| {
        events(seen).iter().any(|l| id_of(l) == hold_at)
    });
    let first_kill = kill(&mut workers, &holder_of(hold_at));
    let kill_count = EVENTS * 2 / 3;
    wait_for(&out, Duration::from_secs(60), "two thirds", |seen| {
        events(seen).len() >= kill_count
    });
    let second = events(&lines(&out)).last().unwrap().worker.clone();
    let second_kill = kill(&mut workers, &second);
    let last = *expected.last().unwrap();
    let finished = std::panic::catch_unwind(|| {
        wait_for(&out, Duration::from_secs(60), "the last event", |seen| {
            events(seen).iter().any(|l| id_of(l) == last)
        })
    });
    // The stream has caught up: the last worker would poll again in 5 minutes.
    for child in workers.iter_mut().filter_map(Option::take) {
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Err(panic) = finished {
        std::panic::resume_unwind(panic);
    }

    let seen = lines(&out);
    let handed = events(&seen);
    let ids: Vec<i64> = handed.iter().map(|l| id_of(l)).collect();
    // Every id, in order, none missing: dropping the repeats leaves exactly the stream.
    let mut unique = Vec::new();
    let mut repeats = Vec::new();
    for (i, line) in handed.iter().enumerate() {
        let id = id_of(line);
        if unique.contains(&id) {
            repeats.push((i, line));
        } else {
            unique.push(id);
        }
    }
    assert_eq!(unique, expected, "{ids:?}");
    // One consumer at a time: three runs of one worker each, split at the kills.
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for (i, line) in handed.iter().enumerate() {
        if runs.last().is_none_or(|(w, _)| *w != line.worker) {
            runs.push((&line.worker, i));
        }
    }
    assert_eq!(runs.len(), 3, "{runs:?}");
    let workers_seen: std::collections::BTreeSet<&str> = runs.iter().map(|(w, _)| *w).collect();
    assert_eq!(workers_seen.len(), 3, "{runs:?}");
    // Fencing tokens grow with each holder.
    let tokens: Vec<u64> = runs
        .iter()
        .map(|(_, i)| handed[*i].words[2].parse().unwrap())
        .collect();
    assert!(tokens.windows(2).all(|t| t[0] < t[1]), "{tokens:?}");
    // At most one repeat per kill, only the first event of a new holder, and flagged. The
    // first kill came after `hold_at` was handled and before it was saved: it is repeated.
    assert!(repeats.len() <= 2, "{repeats:?}");
    for (i, line) in &repeats {
        assert!(runs.iter().any(|(_, start)| start == i), "{line:?}");
        assert_eq!(line.words[3], "1", "a repeat is flagged: {line:?}");
    }
    assert_eq!(
        ids.iter().filter(|id| **id == hold_at).count(),
        2,
        "{ids:?}"
    );
    assert!(
        runs[1..]
            .iter()
            .all(|(_, start)| handed[*start].words[3] == "1"),
        "a holder that took over from a dead one says so: {runs:?}"
    );
    // The takeover within the lease time (and a fifth, how often standbys look) and a page.
    for ((_, start), killed) in runs[1..].iter().zip([first_kill, second_kill]) {
        let took = Duration::from_millis((handed[*start].at_ms - killed) as u64);
        eprintln!("taken over {took:?} after the kill (lease time {LEASE:?})");
        assert!(
            took <= LEASE + LEASE / 5 + Duration::from_millis(300),
            "{took:?}"
        );
    }
    eprintln!(
        "{} events handed over for {EVENTS}, repeated: {:?}",
        ids.len(),
        repeats.iter().map(|(_, l)| id_of(l)).collect::<Vec<_>>()
    );
    // Nothing was saved by a holder that had lost the stream, and nothing failed.
    assert!(
        seen.iter()
            .all(|l| l.words[0] != "save-failed" && l.words[0] != "error"),
        "{seen:#?}"
    );
    let _ = std::fs::remove_file(&out);
}
