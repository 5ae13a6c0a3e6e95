//! The events stream against a scripted events API, with paused time.

mod support;

use futures_util::StreamExt;
use pubapi_sdk_ext::events::{
    EventStream, EventsVersion, StreamItem, StreamNotice, StreamStart, backfill,
};
use pubapi_sdk_ext::{Budget, Client, Limits, SecretToken};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Answer, Script, Seen};

/// Stored event ids `oldest..=latest`, shared with the test so it can add events.
#[derive(Debug)]
struct Store {
    oldest: i64,
    latest: i64,
}

fn param(seen: &Seen, name: &str) -> Option<i64> {
    seen.query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
}

fn event(id: i64) -> serde_json::Value {
    json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "action_source": "WebUI", "actor": 1,
           "type": "file_system", "action": "create",
           "data": {"target_path": format!("/f/{id}.txt"), "is_folder": false}})
}

fn events_api(store: Arc<Mutex<Store>>) -> Arc<Script> {
    Script::handler(move |seen| {
        let store = store.lock().unwrap();
        if seen.path.ends_with("/events/cursor") {
            return Answer::json(
                200,
                json!({"timestamp": "2026-01-05T10:00:00Z", "latest_event_id": store.latest,
                       "oldest_event_id": store.oldest})
                .to_string(),
            );
        }
        let id = param(seen, "id").unwrap();
        let count = param(seen, "count").unwrap_or(50);
        let ids: Vec<i64> = if param(seen, "reverse") == Some(1) {
            ((id - count + 1).max(store.oldest)..=id.min(store.latest)).collect()
        } else {
            let from = (id + 1).max(store.oldest);
            (from..=store.latest).take(count as usize).collect()
        };
        if ids.is_empty() {
            return Answer::empty(204);
        }
        Answer::json(
            200,
            json!({"latest_id": store.latest, "oldest_id": store.oldest, "count": ids.len(),
                   "events": ids.iter().map(|i| event(*i)).collect::<Vec<_>>()})
            .to_string(),
        )
    })
}

fn client(script: &Arc<Script>) -> Client {
    Client::builder()
        .base_url("http://sandbox.test/pubapi")
        .allow_plain_http()
        .token(SecretToken::try_from("t").unwrap())
        .limits(Limits {
            general: Budget::new(Some(2), Some(100_000)),
            ai: Budget::new(None, Some(100)),
        })
        .transport(script.clone())
        .build()
        .unwrap()
}

async fn take_events(stream: &mut EventStream, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    while ids.len() < n {
        match stream.next().await.unwrap().unwrap() {
            StreamItem::Event(e) => ids.push(e.id().unwrap()),
            StreamItem::Notice(_) => {}
        }
    }
    ids
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[tokio::test(start_paused = true)]
async fn caught_up_stream_waits_five_minutes_before_polling_again() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 10,
    }));
    let script = events_api(store.clone());
    let mut stream = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(10))
        .build(client(&script));
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::CaughtUp {
            next_poll_in: secs(300)
        })
    );
    store.lock().unwrap().latest = 11;
    assert_eq!(take_events(&mut stream, 1).await, vec![11]);
    assert_eq!(script.times(), vec![secs(0), secs(300)]);
    assert!(script.seen().iter().all(|s| s.path == "/pubapi/v2/events"));
}

#[tokio::test(start_paused = true)]
async fn poll_interval_below_five_minutes_is_raised() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 10,
    }));
    let script = events_api(store);
    let mut stream = EventStream::builder(EventsVersion::V1)
        .start(StreamStart::After(10))
        .poll_interval(secs(5))
        .build(client(&script));
    stream.next().await.unwrap().unwrap();
    stream.next().await.unwrap().unwrap();
    assert_eq!(script.times(), vec![secs(0), secs(300)]);
}

#[tokio::test(start_paused = true)]
async fn full_pages_of_one_hundred_are_read_back_to_back_until_caught_up() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 250,
    }));
    let script = events_api(store);
    let mut stream = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(0))
        .build(client(&script));
    let ids = take_events(&mut stream, 250).await;
    assert_eq!(ids, (1..=250).collect::<Vec<_>>());
    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|s| s.query.contains("count=100")),
        "{seen:?}"
    );
    // Paging is not polling: the pacer's 2/s is the only spacing.
    assert_eq!(script.times(), vec![secs(0), secs(0), secs(1)]);
}

#[tokio::test(start_paused = true)]
async fn resuming_from_a_checkpoint_after_a_restart_loses_and_repeats_nothing() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 300,
    }));
    let script = events_api(store);
    let client = client(&script);
    let mut first = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(0))
        .build(client.clone());
    let mut delivered = take_events(&mut first, 130).await;
    let checkpoint = first.checkpoint().unwrap();
    assert_eq!(checkpoint, 130);
    drop(first); // the process restarts; only the checkpoint survives

    let mut second = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(checkpoint))
        .build(client);
    delivered.extend(take_events(&mut second, 170).await);
    assert_eq!(delivered, (1..=300).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn cursor_below_the_oldest_event_restarts_from_the_oldest_and_says_events_were_missed() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1000,
        latest: 1004,
    }));
    let script = events_api(store);
    let mut stream = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(5))
        .build(client(&script));
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::MayHaveMissed {
            cursor: 5,
            oldest: 1000
        })
    );
    assert_eq!(
        take_events(&mut stream, 5).await,
        vec![1000, 1001, 1002, 1003, 1004]
    );
}

#[tokio::test(start_paused = true)]
async fn latest_start_reads_the_cursor_and_delivers_only_new_events() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 42,
    }));
    let script = events_api(store.clone());
    let mut stream = EventStream::builder(EventsVersion::V2).build(client(&script));
    assert!(matches!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::CaughtUp { .. })
    ));
    assert_eq!(stream.checkpoint(), Some(42));
    store.lock().unwrap().latest = 43;
    assert_eq!(take_events(&mut stream, 1).await, vec![43]);
    assert_eq!(script.seen()[0].path, "/pubapi/v1/events/cursor");
}

#[tokio::test(start_paused = true)]
async fn backfill_walks_backwards_to_the_oldest_event() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 20,
        latest: 250,
    }));
    let script = events_api(store);
    let ids: Vec<i64> = backfill(client(&script), EventsVersion::V2, 250)
        .map(|e| e.unwrap().id().unwrap())
        .collect()
        .await;
    assert_eq!(ids, (20..=250).rev().collect::<Vec<_>>());
    assert!(script.seen().iter().all(|s| s.query.contains("reverse=1")));
}

#[tokio::test(start_paused = true)]
async fn stream_filters_are_sent_as_the_reference_names_them() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 1,
    }));
    let script = events_api(store);
    let mut stream = EventStream::builder(EventsVersion::V1)
        .start(StreamStart::After(1))
        .folder("/Shared/Team A")
        .suppress(pubapi_sdk_ext::events::Suppress::App)
        .types(["file_system", "permission_change"])
        .page_size(25)
        .build(client(&script));
    stream.next().await.unwrap().unwrap();
    let query = &script.seen()[0].query;
    for part in [
        "id=1",
        "count=25",
        "folder=%2FShared%2FTeam+A",
        "suppress=app",
        "type=file_system%7Cpermission_change",
    ] {
        assert!(query.contains(part), "{query} lacks {part}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_partial_page_is_followed_by_a_caught_up_notice_before_the_wait() {
    let store = Arc::new(Mutex::new(Store {
        oldest: 1,
        latest: 3,
    }));
    let script = events_api(store);
    let mut stream = EventStream::builder(EventsVersion::V2)
        .start(StreamStart::After(0))
        .build(client(&script));
    assert_eq!(take_events(&mut stream, 3).await, vec![1, 2, 3]);
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::CaughtUp {
            next_poll_in: secs(300)
        })
    );
    assert_eq!(stream.checkpoint(), Some(3));
    assert_eq!(
        script.seen().len(),
        1,
        "the notice comes before the next poll"
    );
}
