//! The events stream against a scripted events API, with paused time.

use futures_util::StreamExt;
use pubapi_sdk_ext::events::{
    EventStream, EventStreamBuilder, EventsVersion, PollingEventType, StreamItem, StreamNotice,
    StreamStart,
};
use pubapi_sdk_ext::testing::{Answer, Script, Seen};
use pubapi_sdk_ext::{Budget, Client, Limits};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Stored event ids `oldest..=latest`, shared with the test so it can add events. Each id's
/// type and folder come from `kind` and `folder`.
#[derive(Debug)]
struct Store {
    oldest: i64,
    latest: i64,
    kind: fn(i64) -> &'static str,
    folder: fn(i64) -> &'static str,
}

impl Store {
    fn new(oldest: i64, latest: i64) -> Arc<Mutex<Store>> {
        Arc::new(Mutex::new(Store {
            oldest,
            latest,
            kind: |_| "file_system",
            folder: |_| "/Shared/Team A",
        }))
    }
}

impl Store {
    /// A store whose event `id` has the type `kind(id)`.
    fn with_kind(oldest: i64, latest: i64, kind: fn(i64) -> &'static str) -> Arc<Mutex<Store>> {
        let store = Store::new(oldest, latest);
        store.lock().unwrap().kind = kind;
        store
    }
}

/// A stream of `version` read through `client` after the event `id`.
fn after(client: &Client, version: EventsVersion, id: i64) -> EventStreamBuilder {
    client
        .events()
        .stream(version)
        .start(StreamStart::After(id))
}

/// A stream of `script`'s version 2 events from the first, filtered to `folder`.
fn in_folder(script: &Arc<Script>, folder: &str) -> EventStream {
    after(&client(script), EventsVersion::V2, 0)
        .folder(folder)
        .build()
}

/// The ids a backfill of `version` from `from` hands out through `script`, in order.
async fn backfill_ids(script: &Arc<Script>, version: EventsVersion, from: i64) -> Vec<i64> {
    client(script)
        .events()
        .backfill(version, from)
        .map(|e| e.unwrap().id())
        .collect()
        .await
}

/// The lease token of `item`, which must say the stream consumes after `after`, its lease
/// `taken_over` or not.
fn consuming_token(item: StreamItem, after: i64, taken_over: bool) -> u64 {
    match item {
        StreamItem::Notice(StreamNotice::Consuming {
            token,
            after: said_after,
            taken_over: said_taken_over,
        }) if (said_after, said_taken_over) == (after, taken_over) => token,
        other => panic!("{other:?}"),
    }
}

/// The stream's next item is [`StreamNotice::CaughtUp`].
async fn assert_caught_up(stream: &mut EventStream) {
    assert!(matches!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::CaughtUp { .. })
    ));
}

fn raw_param<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn param(seen: &Seen, name: &str) -> Option<i64> {
    raw_param(seen, name).and_then(|v| v.parse().ok())
}

/// A query value decoded as RFC 3986 says (a `+` is a plus sign, not a space).
fn decoded_param(seen: &Seen, name: &str) -> Option<String> {
    raw_param(seen, name).map(|v| {
        percent_encoding::percent_decode_str(v)
            .decode_utf8_lossy()
            .into_owned()
    })
}

fn event_of(id: i64, kind: &str, folder: &str) -> serde_json::Value {
    json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "action_source": "WebUI", "actor": 1,
           "type": kind, "action": "create",
           "data": {"target_path": format!("{folder}/{id}.txt"), "is_folder": false}})
}

/// The events API as the platform serves it: a page is a window of ids (forward
/// `cursor+1 ..= cursor+count`, from the oldest stored id when the cursor is below it;
/// reverse `id-count+1 ..= id`), filters drop events inside the window, `latest_id` and
/// `oldest_id` say where the window ended and began, 204 when the window is empty.
fn events_api(store: Arc<Mutex<Store>>) -> Arc<Script> {
    events_api_adding(store, Vec::new())
}

/// [`events_api`] from a server that adds the events `extra` (ids from anywhere; `None`: an
/// event without an id) to every page it answers.
fn events_api_adding(store: Arc<Mutex<Store>>, extra: Vec<Option<i64>>) -> Arc<Script> {
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
        let (lo, hi) = if param(seen, "reverse") == Some(1) {
            (
                id.saturating_sub(count - 1).max(store.oldest),
                id.min(store.latest),
            )
        } else {
            let lo = id.saturating_add(1).max(store.oldest);
            (lo, lo.saturating_add(count - 1).min(store.latest))
        };
        if lo > hi {
            return Answer::empty(204);
        }
        let v2 = seen.path.starts_with("/pubapi/v2/");
        let types = decoded_param(seen, "type").unwrap_or_else(|| {
            if v2 {
                "file_system|note|permission_change"
            } else {
                "file_system|note"
            }
            .into()
        });
        let folder = decoded_param(seen, "folder");
        let events: Vec<serde_json::Value> = (lo..=hi)
            .filter(|i| types.split('|').any(|t| t == (store.kind)(*i)))
            .filter(|i| {
                folder
                    .as_deref()
                    .is_none_or(|f| (store.folder)(*i).starts_with(f))
            })
            .map(|i| event_of(i, (store.kind)(i), (store.folder)(i)))
            .chain(extra.iter().map(|id| match id {
                Some(id) => event_of(*id, "file_system", "/f"),
                None => json!({"action_source": "WebUI", "actor": 1, "type": "file_system",
                               "action": "create", "data": {}}),
            }))
            .collect();
        Answer::json(
            200,
            json!({"latest_id": hi, "oldest_id": lo, "count": events.len(), "events": events})
                .to_string(),
        )
    })
}

fn client(script: &Arc<Script>) -> Client {
    script
        .builder()
        .limits(Limits {
            general: Budget::new(Some(2), Some(100_000)),
            ai: Budget::new(None, Some(100)),
        })
        .build()
        .unwrap()
}

async fn take_events(stream: &mut EventStream, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    while ids.len() < n {
        if let StreamItem::Event(e) = stream.next().await.unwrap().unwrap() {
            ids.push(e.id());
        }
    }
    ids
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[tokio::test(start_paused = true)]
async fn caught_up_stream_waits_five_minutes_before_polling_again() {
    let store = Store::new(1, 10);
    let script = events_api(store.clone());
    let mut stream = after(&client(&script), EventsVersion::V2, 10).build();
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
    let store = Store::new(1, 10);
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V1, 10)
        .poll_interval(secs(5))
        .build();
    stream.next().await.unwrap().unwrap();
    stream.next().await.unwrap().unwrap();
    assert_eq!(script.times(), vec![secs(0), secs(300)]);
}

#[tokio::test(start_paused = true)]
async fn full_pages_of_one_hundred_are_read_back_to_back_until_caught_up() {
    let store = Store::new(1, 250);
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V2, 0).build();
    let ids = take_events(&mut stream, 250).await;
    assert_eq!(ids, (1..=250).collect::<Vec<_>>());
    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|s| s.query.contains("count=100")),
        "{seen:?}"
    );
    // Paging is not polling: the pacer's 2/s is the only spacing.
    let ms = Duration::from_millis;
    assert_eq!(script.times(), vec![ms(0), ms(550), ms(1100)]);
}

#[tokio::test(start_paused = true)]
async fn resuming_from_a_checkpoint_after_a_restart_loses_and_repeats_nothing() {
    let store = Store::new(1, 300);
    let script = events_api(store);
    let client = client(&script);
    let mut first = after(&client, EventsVersion::V2, 0).build();
    let mut delivered = take_events(&mut first, 130).await;
    let checkpoint = first.checkpoint().unwrap();
    assert_eq!(checkpoint, 130);
    drop(first); // the process restarts; only the checkpoint survives

    let mut second = after(&client, EventsVersion::V2, checkpoint).build();
    delivered.extend(take_events(&mut second, 170).await);
    assert_eq!(delivered, (1..=300).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn cursor_below_the_oldest_event_restarts_from_the_oldest_and_says_events_were_missed() {
    let store = Store::new(1000, 1004);
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V2, 5).build();
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
    let store = Store::new(1, 42);
    let script = events_api(store.clone());
    let mut stream = client(&script).events().stream(EventsVersion::V2).build();
    assert_caught_up(&mut stream).await;
    assert_eq!(stream.checkpoint(), Some(42));
    store.lock().unwrap().latest = 43;
    assert_eq!(take_events(&mut stream, 1).await, vec![43]);
    assert_eq!(script.seen()[0].path, "/pubapi/v1/events/cursor");
}

#[tokio::test(start_paused = true)]
async fn backfill_walks_backwards_to_the_oldest_event() {
    let store = Store::new(20, 250);
    let script = events_api(store);
    let ids = backfill_ids(&script, EventsVersion::V2, 250).await;
    assert_eq!(ids, (20..=250).rev().collect::<Vec<_>>());
    let pages: Vec<_> = script.seen().into_iter().skip(1).collect();
    assert!(
        pages.iter().all(|s| s.query.contains("reverse=1")),
        "{pages:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn stream_filters_are_sent_as_the_reference_names_them_with_the_folder_path_encoded() {
    let store = Store::new(1, 1);
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V1, 1)
        .folder("/Shared/Team A")
        .suppress(pubapi_sdk_ext::events::Suppress::App)
        .types([
            PollingEventType::FileSystem,
            PollingEventType::PermissionChange,
        ])
        .page_size(25)
        .build();
    stream.next().await.unwrap().unwrap();
    let query = &script.seen()[0].query;
    for part in [
        "id=1",
        "count=25",
        "folder=/Shared/Team%20A",
        "suppress=app",
        "type=file_system%7Cpermission_change",
    ] {
        assert!(query.contains(part), "{query} lacks {part}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_partial_page_is_followed_by_a_caught_up_notice_before_the_wait() {
    let store = Store::new(1, 3);
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V2, 0).build();
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

/// Collects items until the stream says it caught up: the event ids and the notices.
async fn until_caught_up(stream: &mut EventStream) -> (Vec<i64>, Vec<StreamNotice>) {
    let (mut ids, mut notices) = (Vec::new(), Vec::new());
    loop {
        match stream.next().await.unwrap().unwrap() {
            StreamItem::Event(e) => ids.push(e.id()),
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => return (ids, notices),
            StreamItem::Notice(other) => notices.push(other),
            other => panic!("{other:?}"),
        }
    }
}

fn every_27th_is_a_file(id: i64) -> &'static str {
    if id % 27 == 0 {
        "file_system"
    } else {
        "permission_change"
    }
}

#[tokio::test(start_paused = true)]
async fn v1_stream_over_300_ids_with_11_matching_delivers_exactly_those_in_at_most_6_requests() {
    let store = Store::new(1, 300);
    store.lock().unwrap().kind = every_27th_is_a_file;
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V1, 0).build();
    let (ids, notices) = until_caught_up(&mut stream).await;
    assert_eq!(ids, (1..=11).map(|i| i * 27).collect::<Vec<_>>());
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(stream.checkpoint(), Some(300));
    let seen = script.seen();
    assert!(seen.len() <= 6, "{} requests", seen.len());
    // Windows that were full windows of ids are read back to back, not 5 minutes apart.
    assert!(
        script.times().iter().all(|t| *t < secs(5)),
        "{:?}",
        script.times()
    );
}

#[tokio::test(start_paused = true)]
async fn a_window_without_a_matching_event_moves_the_checkpoint_and_is_not_read_again() {
    let store = Store::with_kind(1, 150, |id| match id {
        120 => "file_system",
        _ => "permission_change",
    });
    let script = events_api(store.clone());
    let mut stream = after(&client(&script), EventsVersion::V1, 0).build();
    assert_eq!(take_events(&mut stream, 1).await, vec![120]);
    // The window 101..=150 ended at the newest event: everything up to 150 is read.
    assert_eq!(stream.checkpoint(), Some(150));
    assert_caught_up(&mut stream).await;
    store.lock().unwrap().latest = 151;
    assert_caught_up(&mut stream).await;
    assert_eq!(stream.checkpoint(), Some(151));
    let cursors: Vec<i64> = script
        .seen()
        .iter()
        .map(|s| param(s, "id").unwrap())
        .collect();
    assert_eq!(cursors, vec![0, 100, 150]);
}

#[tokio::test(start_paused = true)]
async fn resuming_after_partly_filtered_windows_repeats_and_loses_nothing() {
    let store = Store::with_kind(1, 250, |id| {
        if id % 3 == 0 {
            "note"
        } else {
            "permission_change"
        }
    });
    let script = events_api(store);
    let client = client(&script);
    let mut first = after(&client, EventsVersion::V1, 0).build();
    let mut delivered = take_events(&mut first, 40).await;
    let checkpoint = first.checkpoint().unwrap();
    drop(first);
    let mut second = after(&client, EventsVersion::V1, checkpoint).build();
    delivered.extend(until_caught_up(&mut second).await.0);
    assert_eq!(delivered, (1..=83).map(|i| i * 3).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn a_page_of_ids_at_or_below_the_cursor_catches_up_instead_of_polling_again() {
    // A confused server: a full page of old events and a `latest_id` that does not move.
    let script = Script::handler(|_| {
        let events: Vec<_> = (1..=100)
            .map(|i| event_of(i, "file_system", "/f"))
            .collect();
        Answer::json(
            200,
            json!({"latest_id": 5, "oldest_id": 1, "count": 100, "events": events}).to_string(),
        )
    });
    let mut stream = after(&client(&script), EventsVersion::V2, 500).build();
    assert_caught_up(&mut stream).await;
    assert_eq!(script.seen().len(), 1);
    assert_eq!(stream.checkpoint(), Some(500));
}

#[tokio::test(start_paused = true)]
async fn long_runs_of_empty_windows_say_how_far_the_checkpoint_moved() {
    let store = Store::with_kind(1, 5000, |id| match id {
        4000 => "file_system",
        _ => "permission_change",
    });
    let script = events_api(store);
    let mut stream = after(&client(&script), EventsVersion::V1, 0).build();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::Skipped { through: 1600 })
    );
    assert_eq!(stream.checkpoint(), Some(1600));
    assert_eq!(take_events(&mut stream, 1).await, vec![4000]);
}

#[tokio::test(start_paused = true)]
async fn folder_filter_with_spaces_and_plus_signs_reads_that_folder() {
    let store = Store::new(1, 20);
    store.lock().unwrap().folder = |id| {
        if id % 2 == 0 {
            "/Shared/a+b c/x"
        } else {
            "/Shared/a b c/x"
        }
    };
    let script = events_api(store);
    let mut stream = in_folder(&script, "/Shared/a+b c");
    let (ids, _) = until_caught_up(&mut stream).await;
    assert_eq!(ids, (1..=10).map(|i| i * 2).collect::<Vec<_>>());
    assert!(script.seen()[0].query.contains("folder=/Shared/a%2Bb%20c"));
}

#[tokio::test(start_paused = true)]
async fn backfill_reads_past_windows_without_a_matching_event() {
    let store = Store::with_kind(1, 350, |id| match id {
        10 | 340 => "file_system",
        _ => "permission_change",
    });
    let script = events_api(store);
    let ids = backfill_ids(&script, EventsVersion::V1, 350).await;
    assert_eq!(ids, vec![340, 10]);
    assert_eq!(script.seen().len(), 5, "the cursor, then four windows");
}

#[tokio::test(start_paused = true)]
async fn backfill_makes_progress_when_the_server_answers_ids_above_the_one_asked() {
    let script = Script::handler(|seen| {
        if seen.path.ends_with("/events/cursor") {
            return Answer::json(200, r#"{"latest_event_id": 1000, "oldest_event_id": 1}"#);
        }
        let events = vec![event_of(1000, "file_system", "/f")];
        Answer::json(
            200,
            json!({"latest_id": 1000, "count": 1, "events": events}).to_string(),
        )
    });
    let ids = backfill_ids(&script, EventsVersion::V2, 1000).await;
    assert_eq!(ids, vec![1000]);
    assert_eq!(
        script.seen().len(),
        11,
        "the cursor, then ten windows of 100 ids"
    );
}

#[tokio::test(start_paused = true)]
async fn ids_at_the_ends_of_the_range_neither_panic_nor_stall() {
    let store = Store::new(i64::MIN, i64::MIN + 5);
    let script = events_api(store);
    let ids = backfill_ids(&script, EventsVersion::V2, i64::MAX).await;
    assert_eq!(ids, ((i64::MIN)..=(i64::MIN + 5)).rev().collect::<Vec<_>>());
    let mut stream = client(&script)
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::Oldest)
        .build();
    let (ids, _) = until_caught_up(&mut stream).await;
    assert_eq!(ids, ((i64::MIN + 1)..=(i64::MIN + 5)).collect::<Vec<_>>());

    let top = Store::new(i64::MAX - 3, i64::MAX);
    let script = events_api(top);
    let mut stream = after(&client(&script), EventsVersion::V2, i64::MAX - 10).build();
    let (ids, _) = until_caught_up(&mut stream).await;
    assert_eq!(ids, ((i64::MAX - 3)..=i64::MAX).collect::<Vec<_>>());
    assert_eq!(stream.checkpoint(), Some(i64::MAX));
}

#[tokio::test(start_paused = true)]
async fn a_folder_that_is_no_path_ends_the_stream_with_a_typed_error_naming_it() {
    use pubapi_sdk_ext::error::InputError;
    let script = events_api(Store::new(1, 5));
    let mut stream = in_folder(&script, "/Shared/../admin");
    match stream.next().await {
        Some(Err(pubapi_sdk_ext::Error::InvalidInput(InputError::PathValue {
            parameter: "folder",
            ..
        }))) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        stream.next().await.is_none(),
        "not repeated every 5 minutes"
    );
    assert!(script.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_folder_with_a_trailing_slash_reads_that_folder() {
    let script = events_api(Store::new(1, 3));
    let mut stream = in_folder(&script, "/Shared/Team A/");
    assert_eq!(until_caught_up(&mut stream).await.0, vec![1, 2, 3]);
    assert!(script.seen()[0].query.contains("folder=/Shared/Team%20A&"));
}

#[tokio::test(start_paused = true)]
async fn a_cursor_without_the_latest_id_is_an_error_not_a_replay_of_history() {
    let script = Script::new(
        vec![Answer::json(200, r#"{"oldest_event_id": 1}"#)],
        Answer::empty(500),
    );
    let mut stream = client(&script).events().stream(EventsVersion::V2).build();
    match stream.next().await {
        // The spec makes the cursor ids required: decoding names the missing field.
        Some(Err(pubapi_sdk_ext::Error::Decode { message, .. })) => {
            assert!(
                message.contains("missing field `latest_event_id`"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(stream.next().await.is_none());
    assert_eq!(script.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stream_with_a_checkpoint_file_resumes_where_it_was_saved_whatever_its_start() {
    use pubapi_sdk_ext::fleet::FileCheckpoints;
    let dir = std::env::temp_dir().join(format!("pubapi-stream-cp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("checkpoints.json");
    let _ = std::fs::remove_file(&path);
    let script = events_api(Store::new(1, 30));
    let store = Arc::new(FileCheckpoints::new(&path));
    let mut first = after(&client(&script), EventsVersion::V2, 0)
        .checkpoints(store.clone(), "v2-all")
        .build();
    let mut delivered = take_events(&mut first, 12).await;
    first.save_checkpoint().await.unwrap();
    drop(first); // the process stops; the file survives
    let mut second = client(&script)
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::Latest)
        .checkpoints(Arc::new(FileCheckpoints::new(&path)), "v2-all")
        .build();
    delivered.extend(until_caught_up(&mut second).await.0);
    assert_eq!(delivered, (1..=30).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn scratch_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-events-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_checkpoint_file_ends_the_stream_at_once_naming_the_file() {
    use pubapi_sdk_ext::fleet::{FileCheckpoints, FleetErrorKind};
    let dir = scratch_dir("corrupt");
    let path = dir.join("cp");
    for garbage in [&b""[..], b"garbage", b"{\"v2-all\": \"12\"}"] {
        std::fs::write(&path, garbage).unwrap();
        let script = events_api(Store::new(1, 30));
        let mut stream = after(&client(&script), EventsVersion::V2, 0)
            .checkpoints(Arc::new(FileCheckpoints::new(&path)), "v2-all")
            .build();
        let started = tokio::time::Instant::now();
        let error = loop {
            match stream.next().await {
                Some(Ok(StreamItem::Notice(_))) => {}
                Some(Err(pubapi_sdk_ext::Error::Checkpoint(error))) => break error,
                other => panic!("{garbage:?}: {other:?}"),
            }
        };
        assert_eq!(error.kind, FleetErrorKind::Corrupt, "{error}");
        assert!(error.message.contains(&*path.to_string_lossy()), "{error}");
        assert!(stream.next().await.is_none(), "the stream ended");
        assert_eq!(started.elapsed(), Duration::ZERO, "no retry");
        assert!(
            script.seen().is_empty(),
            "nothing read from an unknown position"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            garbage,
            "the file is left alone"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint store that cannot be reached for its first `down` loads.
#[derive(Debug)]
struct Unreachable {
    down: usize,
    loads: Mutex<Vec<tokio::time::Instant>>,
}

impl pubapi_sdk_ext::fleet::CheckpointStore for Unreachable {
    fn load<'a>(
        &'a self,
        _name: &'a str,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Option<i64>, pubapi_sdk_ext::fleet::FleetError>>
    {
        let mut loads = self.loads.lock().unwrap();
        loads.push(tokio::time::Instant::now());
        let answer = if loads.len() <= self.down {
            Err(pubapi_sdk_ext::fleet::FleetError::unavailable(
                "redis: connection refused",
            ))
        } else {
            Ok(Some(20))
        };
        Box::pin(async move { answer })
    }

    fn save<'a>(
        &'a self,
        _lease: &'a pubapi_sdk_ext::fleet::Lease,
        _id: i64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Option<i64>, pubapi_sdk_ext::fleet::FleetError>>
    {
        Box::pin(async { Ok(Some(20)) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_is_down_is_reported_at_each_failure_and_retried_with_a_capped_backoff() {
    use pubapi_sdk_ext::fleet::FleetErrorKind;
    let store = Arc::new(Unreachable {
        down: 9,
        loads: Mutex::new(Vec::new()),
    });
    let script = events_api(Store::new(1, 22));
    let mut stream = client(&script)
        .events()
        .stream(EventsVersion::V2)
        .checkpoints(store.clone(), "v2-all")
        .build();
    let mut failures = 0;
    let ids = loop {
        match stream.next().await.unwrap() {
            Err(pubapi_sdk_ext::Error::Checkpoint(error)) => {
                assert_eq!(error.kind, FleetErrorKind::Unavailable);
                failures += 1;
            }
            Ok(StreamItem::Notice(StreamNotice::Consuming { after, .. })) => {
                assert_eq!(after, 20);
                break until_caught_up(&mut stream).await.0;
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(failures, 9, "every failure is an item");
    assert_eq!(
        ids,
        vec![21, 22],
        "resumed from the store, once it answered"
    );
    let loads = store.loads.lock().unwrap().clone();
    let waits: Vec<Duration> = loads.windows(2).map(|w| w[1] - w[0]).collect();
    // 1 s doubling to the 60 s cap, each with up to a tenth more.
    let floors = [1, 2, 4, 8, 16, 32, 60, 60, 60];
    assert_eq!(waits.len(), floors.len());
    for (wait, floor) in waits.iter().zip(floors) {
        let floor = secs(floor);
        assert!(*wait >= floor && *wait <= floor + floor / 10, "{waits:?}");
    }
}

/// A store with leases that can be cut off: while `down`, every operation fails as an
/// unreachable Redis does; the saves it stored are kept in order.
#[derive(Debug, Default)]
struct Cut {
    down: std::sync::atomic::AtomicBool,
    saved: Mutex<Vec<i64>>,
}

impl Cut {
    const LEASE_TIME: Duration = Duration::from_secs(3);

    fn up<T: Send + 'static>(
        &self,
        answer: T,
    ) -> pubapi_sdk::hooks::BoxFuture<'static, Result<T, pubapi_sdk_ext::fleet::FleetError>> {
        let down = self.down.load(std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            if down {
                Err(pubapi_sdk_ext::fleet::FleetError::unavailable(
                    "redis: connection refused",
                ))
            } else {
                Ok(answer)
            }
        })
    }

    fn cut(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }
}

impl pubapi_sdk_ext::fleet::CheckpointStore for Cut {
    fn load<'a>(
        &'a self,
        _name: &'a str,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Option<i64>, pubapi_sdk_ext::fleet::FleetError>>
    {
        self.up(self.saved.lock().unwrap().last().copied())
    }

    fn save<'a>(
        &'a self,
        _lease: &'a pubapi_sdk_ext::fleet::Lease,
        id: i64,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Option<i64>, pubapi_sdk_ext::fleet::FleetError>>
    {
        let before = self.saved.lock().unwrap().last().copied();
        if !self.down.load(std::sync::atomic::Ordering::SeqCst) {
            self.saved.lock().unwrap().push(id);
        }
        self.up(before)
    }

    fn acquire<'a>(
        &'a self,
        name: &'a str,
    ) -> pubapi_sdk::hooks::BoxFuture<
        'a,
        Result<pubapi_sdk_ext::fleet::Acquired, pubapi_sdk_ext::fleet::FleetError>,
    > {
        let mut lease = pubapi_sdk_ext::fleet::Lease::new(name, 7);
        lease.expires_in = Some(Self::LEASE_TIME);
        self.up(pubapi_sdk_ext::fleet::Acquired::Lease(lease))
    }

    fn renew<'a>(
        &'a self,
        _lease: &'a pubapi_sdk_ext::fleet::Lease,
    ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<bool, pubapi_sdk_ext::fleet::FleetError>> {
        self.up(true)
    }
}

#[tokio::test(start_paused = true)]
async fn a_holder_whose_save_fails_hands_out_nothing_until_the_checkpoint_is_stored() {
    let store = Arc::new(Cut::default());
    let script = events_api(Store::new(1, 30));
    let mut stream = after(&client(&script), EventsVersion::V2, 0)
        .checkpoints(store.clone(), "v2-all")
        .build();
    consuming_token(stream.next().await.unwrap().unwrap(), 0, false);
    for _ in 0..3 {
        take_events(&mut stream, 1).await;
        stream.save_checkpoint().await.unwrap();
    }
    // The store goes away between handling event 4 and saving it (a failover, a restart).
    assert_eq!(take_events(&mut stream, 1).await, vec![4]);
    store.cut(true);
    let refused = stream.save_checkpoint().await.unwrap_err();
    assert_eq!(
        refused.kind,
        pubapi_sdk_ext::fleet::FleetErrorKind::Unavailable
    );
    let waiting = tokio::spawn(async move {
        let ids = take_events(&mut stream, 1).await;
        (stream, ids)
    });
    tokio::time::sleep(Cut::LEASE_TIME / 2).await;
    assert!(
        !waiting.is_finished(),
        "event 5 is not handed out while checkpoint 4 is not stored"
    );
    store.cut(false);
    let (mut stream, ids) = waiting.await.unwrap();
    assert_eq!(ids, vec![5]);
    assert_eq!(
        *store.saved.lock().unwrap(),
        vec![1, 2, 3, 4],
        "stored by the stream itself before it went on"
    );
    stream.save_checkpoint().await.unwrap();
    assert_eq!(
        until_caught_up(&mut stream).await.0,
        (6..=30).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn a_holder_that_cannot_reach_the_store_for_its_lease_time_loses_the_lease() {
    let store = Arc::new(Cut::default());
    let script = events_api(Store::new(1, 30));
    let mut stream = after(&client(&script), EventsVersion::V2, 0)
        .checkpoints(store.clone(), "v2-all")
        .build();
    let token = consuming_token(stream.next().await.unwrap().unwrap(), 0, false);
    assert_eq!(take_events(&mut stream, 1).await, vec![1]);
    store.cut(true);
    let cut_at = tokio::time::Instant::now();
    stream.save_checkpoint().await.unwrap_err();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::LeaseLost { token }),
        "nothing handed out after the failed save"
    );
    let held = cut_at.elapsed();
    assert!(held <= Cut::LEASE_TIME, "lost after {held:?}");
    assert_eq!(stream.lease_token(), None);
}

#[tokio::test(start_paused = true)]
async fn a_second_stream_on_a_locked_checkpoint_file_stands_by_and_takes_over_where_it_was_saved() {
    use pubapi_sdk_ext::fleet::FileCheckpoints;
    let dir = scratch_dir("standby");
    let path = dir.join("cp");
    let script = events_api(Store::new(1, 30));
    let mut first = after(&client(&script), EventsVersion::V2, 0)
        .checkpoints(Arc::new(FileCheckpoints::new(&path)), "v2-all")
        .build();
    let first_token = consuming_token(first.next().await.unwrap().unwrap(), 0, false);
    let mut delivered = Vec::new();
    for _ in 0..12 {
        delivered.extend(take_events(&mut first, 1).await);
        first.save_checkpoint().await.unwrap();
    }
    assert_eq!(first.lease_token(), Some(first_token));
    // Another process's store on the same file (a lock belongs to its open file).
    let mut second = after(&client(&script), EventsVersion::V2, 0)
        .checkpoints(Arc::new(FileCheckpoints::new(&path)), "v2-all")
        .build();
    assert_eq!(
        second.next().await.unwrap().unwrap(),
        StreamItem::Notice(StreamNotice::StandingBy { retry_in: secs(1) })
    );
    assert_eq!(second.lease_token(), None);
    second.save_checkpoint().await.unwrap(); // nothing to save while standing by
    let waiting = tokio::spawn(async move {
        let item = second.next().await.unwrap().unwrap();
        (second, item)
    });
    tokio::time::sleep(secs(5)).await;
    assert!(
        !waiting.is_finished(),
        "it stands by while the first holds the file"
    );
    first.release().await.unwrap();
    let (mut second, item) = waiting.await.unwrap();
    let token = consuming_token(item, 12, false);
    assert!(token > first_token, "{token} after {first_token}");
    delivered.extend(until_caught_up(&mut second).await.0);
    assert_eq!(delivered, (1..=30).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Stored ids near one end of the range, and ids a misbehaving server adds to every page
/// (`None`: an event without an id).
fn ends_of_the_range()
-> impl proptest::strategy::Strategy<Value = (i64, i64, i64, Vec<Option<i64>>)> {
    use proptest::prelude::*;
    let near = |end: i64| {
        prop_oneof![
            (0i64..400).prop_map(move |d| if end < 0 { end + d } else { end - d }),
            Just(end)
        ]
    };
    (
        prop_oneof![near(i64::MIN), near(i64::MAX)],
        0i64..250,
        -60i64..60,
    )
        .prop_flat_map(move |(a, len, d)| {
            let (oldest, latest) = if a < 0 {
                (a, a.saturating_add(len))
            } else {
                (a.saturating_sub(len), a)
            };
            let from = latest.saturating_add(d);
            // An id of the window as an offset from `oldest`: proptest's own shrinking of a
            // range ending at `i64::MIN` subtracts one from it and overflows.
            let in_window = (0..=latest - oldest).prop_map(move |d| oldest + d);
            let extra = proptest::collection::vec(
                prop_oneof![
                    near(i64::MIN).prop_map(Some),
                    near(i64::MAX).prop_map(Some),
                    in_window.prop_map(Some),
                    Just(None)
                ],
                0..4,
            );
            (Just(oldest), Just(latest), Just(from), extra)
        })
}

proptest::proptest! {
    // Each case builds two clients (tens of milliseconds each).
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Each id once, newest first, at both ends of the id range: from a server that answers
    /// its windows, and from one that adds ids from anywhere, and events without one, to
    /// every page (those are error items in their place).
    #[test]
    fn backfill_hands_each_id_over_once_at_both_ends_of_the_range(
        (oldest, latest, from, extra) in ends_of_the_range()
    ) {
        let store = Store::new(oldest, latest);
        let honest = events_api(store.clone());
        let misbehaving = events_api_adding(store, extra);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        for (script, honest) in [(honest, true), (misbehaving, false)] {
            let items: Vec<Result<pubapi_sdk_ext::events::PollingEvent, pubapi_sdk_ext::Error>> = runtime.block_on(
                client(&script).events().backfill(EventsVersion::V2, from).collect(),
            );
            let mut ids = Vec::new();
            for item in items {
                match item {
                    Ok(event) => ids.push(event.id()),
                    Err(pubapi_sdk_ext::Error::Decode { .. }) if !honest => {}
                    Err(other) => panic!("{other}"),
                }
            }
            proptest::prop_assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
            let top = from.min(latest);
            proptest::prop_assert!(ids.iter().all(|id| *id <= top), "{ids:?}");
            if honest {
                let expected: Vec<i64> = if top < oldest {
                    Vec::new()
                } else {
                    (oldest..=top).rev().collect()
                };
                proptest::prop_assert_eq!(ids, expected);
            }
        }
    }
}

#[cfg(feature = "redis")]
#[allow(dead_code, reason = "a file of the tests' support, used as is")]
#[path = "support/redis_server.rs"]
mod redis_server;

/// The stream on a real `redis-server`: real time (the store's lease runs on its clock).
#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use pubapi_sdk_ext::fleet::FleetErrorKind;
    use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;

    use super::redis_server;

    async fn store(server: &redis_server::RedisServer) -> Arc<RedisCheckpoints> {
        let store = RedisCheckpoints::connect(&server.url()).await.unwrap();
        Arc::new(store.lease_time(Duration::from_millis(600)))
    }

    async fn set(server: &redis_server::RedisServer, key: &str, value: &str) {
        let mut connection = server.connection().await;
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut connection)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_redis_key_holding_garbage_ends_the_stream_at_once_naming_the_key() {
        let server = redis_server::RedisServer::start();
        set(&server, "pubapi:{v2-all}:checkpoint", "twelve").await;
        let script = events_api(Store::new(1, 30));
        let mut stream = client(&script)
            .events()
            .stream(EventsVersion::V2)
            .checkpoints(store(&server).await, "v2-all")
            .build();
        match stream.next().await {
            Some(Err(pubapi_sdk_ext::Error::Checkpoint(error))) => {
                assert_eq!(error.kind, FleetErrorKind::Corrupt, "{error}");
                assert!(
                    error.message.contains("pubapi:{v2-all}:checkpoint"),
                    "{error}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(stream.next().await.is_none());
        assert!(script.seen().is_empty());
    }

    #[tokio::test]
    async fn a_holder_whose_lease_passed_on_stops_handing_out_and_its_saves_are_refused() {
        let server = redis_server::RedisServer::start();
        let script = events_api(Store::new(1, 30));
        let mut first = after(&client(&script), EventsVersion::V2, 0)
            .checkpoints(store(&server).await, "v2-all")
            .build();
        let mut delivered = Vec::new();
        for _ in 0..5 {
            delivered.extend(take_events(&mut first, 1).await);
            first.save_checkpoint().await.unwrap();
        }
        // The first stalls past its lease (as if stopped): its key runs out, another takes it.
        set(&server, "pubapi:{v2-all}:lease", "0").await;
        let mut second = after(&client(&script), EventsVersion::V2, 0)
            .checkpoints(store(&server).await, "v2-all")
            .build();
        assert!(matches!(
            second.next().await.unwrap().unwrap(),
            StreamItem::Notice(StreamNotice::StandingBy { .. })
        ));
        let mut raw = server.connection().await;
        let _: () = redis::cmd("DEL")
            .arg("pubapi:{v2-all}:lease")
            .query_async(&mut raw)
            .await
            .unwrap();
        let first_token = first.lease_token().unwrap();
        let token = consuming_token(second.next().await.unwrap().unwrap(), 5, true);
        assert!(token > first_token, "{token} after {first_token}");
        // The first one's save is refused, and it hands nothing more out.
        let refused = first.save_checkpoint().await.unwrap_err();
        assert_eq!(refused.kind, FleetErrorKind::LeaseLost, "{refused}");
        assert_eq!(
            first.next().await.unwrap().unwrap(),
            StreamItem::Notice(StreamNotice::LeaseLost { token: first_token })
        );
        assert!(matches!(
            first.next().await.unwrap().unwrap(),
            StreamItem::Notice(StreamNotice::StandingBy { .. })
        ));
        assert_eq!(first.lease_token(), None);
        delivered.extend(until_caught_up(&mut second).await.0);
        second.save_checkpoint().await.unwrap();
        assert_eq!(delivered, (1..=30).collect::<Vec<_>>());
    }
}

/// A page of ids 1..=5 after cursor 0 in which event 3 has no `timestamp` (the reference
/// gives every event one) and one more event has neither an id nor a timestamp; nothing
/// after it. `broken_page` answers whole events in a page that is not a page instead
/// (`latest_id` is text).
fn page_with_an_unreadable_event(broken_page: bool) -> Arc<Script> {
    Script::handler(move |seen| {
        if param(seen, "id") != Some(0) {
            return Answer::empty(204);
        }
        let mut events: Vec<serde_json::Value> = (1..=5)
            .map(|id| event_of(id, "file_system", "/f"))
            .collect();
        if !broken_page {
            events[2].as_object_mut().unwrap().remove("timestamp");
            events.push(json!({"type": "note", "data": {"text": "who am I?"}}));
        }
        let latest = if broken_page { json!("5") } else { json!(5) };
        Answer::json(
            200,
            json!({"latest_id": latest, "oldest_id": 1, "events": events}).to_string(),
        )
    })
}

#[tokio::test(start_paused = true)]
async fn an_event_without_the_fields_every_event_has_is_handed_over_as_sent_and_the_stream_goes_on()
{
    let script = page_with_an_unreadable_event(false);
    let mut stream = after(&client(&script), EventsVersion::V2, 0).build();
    let mut seen = Vec::new();
    loop {
        match stream.next().await.unwrap().unwrap() {
            StreamItem::Event(event) => seen.push(format!("{}", event.id())),
            StreamItem::Undecodable(event) => {
                let missing = if event.id.is_some() {
                    "timestamp"
                } else {
                    "id"
                };
                assert!(event.error.contains(missing), "{}", event.error);
                let kind = &event.raw["type"];
                seen.push(format!("unreadable {:?} {kind}", event.id));
            }
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => break,
            _ => {}
        }
        seen.push(format!("checkpoint {:?}", stream.checkpoint()));
    }
    // In their places, each once; the one without an id last, moving no checkpoint.
    assert_eq!(
        seen,
        [
            "1",
            "checkpoint Some(1)",
            "2",
            "checkpoint Some(2)",
            "unreadable Some(3) \"file_system\"",
            "checkpoint Some(3)",
            "4",
            "checkpoint Some(4)",
            "5",
            "checkpoint Some(5)",
            "unreadable None \"note\"",
            "checkpoint Some(5)",
        ]
    );
    // The next poll reads on from 5.
    assert_eq!(script.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_page_that_is_not_a_page_stays_an_error_naming_the_field() {
    let script = page_with_an_unreadable_event(true);
    let mut stream = after(&client(&script), EventsVersion::V2, 0).build();
    for _ in 0..2 {
        match stream.next().await.unwrap() {
            Err(pubapi_sdk_ext::Error::Decode { path, .. }) => assert_eq!(path, "latest_id"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(stream.checkpoint(), Some(0));
}

/// The events API over ids 1..=`latest` in windows of `count` ids (forward, or reverse),
/// where the events `idless` names come without an `id` (and without a `timestamp`).
fn api_with_events_without_ids(latest: i64, idless: &'static [i64]) -> Arc<Script> {
    Script::handler(move |seen| {
        if seen.path.ends_with("/events/cursor") {
            let cursor = json!({"latest_event_id": latest, "oldest_event_id": 1});
            return Answer::json(200, cursor.to_string());
        }
        let id = param(seen, "id").unwrap();
        let count = param(seen, "count").unwrap_or(50);
        let (lo, hi) = if param(seen, "reverse") == Some(1) {
            ((id - count + 1).max(1), id.min(latest))
        } else {
            (id.saturating_add(1), id.saturating_add(count).min(latest))
        };
        if lo > hi {
            return Answer::empty(204);
        }
        let events: Vec<serde_json::Value> = (lo..=hi)
            .map(|i| {
                let mut event = event_of(i, "file_system", "/f");
                if idless.contains(&i) {
                    let fields = event.as_object_mut().unwrap();
                    fields.remove("id");
                    fields.remove("timestamp");
                }
                event
            })
            .collect();
        Answer::json(
            200,
            json!({"latest_id": hi, "oldest_id": 1, "events": events}).to_string(),
        )
    })
}

/// Items until caught up, each as its id (`U` for an event without one) and the checkpoint
/// after it.
async fn handed_over(stream: &mut EventStream) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let label = match stream.next().await.unwrap().unwrap() {
            StreamItem::Event(event) => event.id().to_string(),
            StreamItem::Undecodable(event) => format!("U{:?}", event.id),
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => return seen,
            _ => continue,
        };
        seen.push(format!("{label}@{:?}", stream.checkpoint()));
    }
}

#[tokio::test(start_paused = true)]
async fn an_event_without_an_id_comes_after_the_one_before_it_and_again_to_a_consumer_that_stopped_on_it()
 {
    let script = api_with_events_without_ids(3, &[2]);
    let stream = |id| after(&client(&script), EventsVersion::V2, id).build();
    assert_eq!(
        handed_over(&mut stream(0)).await,
        ["1@Some(1)", "UNone@Some(1)", "3@Some(3)"]
    );
    // A consumer that stopped while handling it resumes after 1, and is handed it again.
    assert_eq!(
        handed_over(&mut stream(1)).await,
        ["UNone@Some(1)", "3@Some(3)"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_window_of_events_without_ids_moves_on_and_hands_each_over_once() {
    // One id per window: the window of id 2 holds only an event without an id.
    let script = api_with_events_without_ids(4, &[2, 3]);
    let mut stream = after(&client(&script), EventsVersion::V2, 0)
        .page_size(1)
        .build();
    assert_eq!(
        handed_over(&mut stream).await,
        ["1@Some(1)", "UNone@Some(2)", "UNone@Some(3)", "4@Some(4)"]
    );
    assert_eq!(stream.checkpoint(), Some(4));
}

/// The lowest id there is, on a page that also holds it twice and an event without an id:
/// handed over once (the event without an id no longer sorts beside it and parts the copies).
#[tokio::test(start_paused = true)]
async fn backfill_hands_the_lowest_id_over_once_beside_an_event_without_an_id() {
    let store = Store::new(i64::MIN, i64::MIN + 3);
    let script = events_api_adding(store, vec![None, Some(i64::MIN)]);
    let items: Vec<Result<i64, String>> = client(&script)
        .events()
        .backfill(EventsVersion::V2, i64::MAX)
        .map(|item| item.map(|e| e.id()).map_err(|e| e.to_string()))
        .collect()
        .await;
    let ids: Vec<i64> = items.iter().filter_map(|i| i.clone().ok()).collect();
    assert_eq!(ids, [i64::MIN + 3, i64::MIN + 2, i64::MIN + 1, i64::MIN]);
    assert_eq!(
        items.len(),
        ids.len() + 1,
        "one error item for the event without an id: {items:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn backfill_hands_an_unreadable_event_over_as_an_error_in_its_place_and_goes_on() {
    let script = api_with_events_without_ids(250, &[2, 120]);
    let items: Vec<Result<i64, String>> = client(&script)
        .events()
        .backfill(EventsVersion::V2, i64::MAX)
        .map(|item| match item {
            Ok(event) => Ok(event.id()),
            Err(pubapi_sdk_ext::Error::Decode {
                path,
                message,
                body,
                ..
            }) => {
                assert!(message.contains("id"), "{message}");
                assert!(!body.is_empty(), "the page, to look at");
                Err(path)
            }
            Err(other) => panic!("{other:?}"),
        })
        .collect()
        .await;
    // Newest first, window by window of 100 ids; an event without an id after its window's.
    let mut expected: Vec<Result<i64, String>> = Vec::new();
    expected.extend((151..=250).rev().map(Ok));
    expected.extend((51..=150).rev().filter(|id| *id != 120).map(Ok));
    expected.push(Err("events[69]".into()));
    expected.extend((1..=50).rev().filter(|id| *id != 2).map(Ok));
    expected.push(Err("events[1]".into()));
    assert_eq!(items, expected);
}

/// Redis that loses its data under the consumers of one stream: real time, real
/// `redis-server`.
#[cfg(feature = "redis")]
mod on_redis_losing_data {
    use super::*;
    use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
    use std::time::Instant;

    use super::redis_server;

    /// How Redis loses its data under the consumers (or, on Sentinel, its primary).
    #[derive(Debug, Clone, Copy)]
    enum Loss {
        Flushed,
        RestartedEmpty,
        SentinelPrimaryKilled,
    }

    /// One plain Redis, or a Sentinel set (primary, replica, three sentinels).
    enum Redis {
        Plain(redis_server::RedisServer),
        Sentinel(redis_server::SentinelSet),
    }

    impl Redis {
        fn url(&self) -> String {
            match self {
                Redis::Plain(server) => server.url(),
                Redis::Sentinel(set) => set.url(),
            }
        }
    }

    /// One event handled: by whom, under which lease, from when to the end of its save.
    #[derive(Debug, Clone, Copy)]
    struct Handled {
        consumer: usize,
        /// The token of the lease it was handled under.
        token: Option<u64>,
        id: i64,
        start: Instant,
        end: Instant,
    }

    /// What three consumers of one stream did while Redis lost its data under the holder's
    /// handler: every event handled, and the tokens of every lease taken.
    #[derive(Debug, Default)]
    struct Run {
        handled: Vec<Handled>,
        tokens: Vec<u64>,
        lost: Vec<StreamNotice>,
        /// From the loss to the first event handled after it.
        takeover: Duration,
    }

    /// Three consumers (each its own connection) hand out 200 events, 40 ms of handling and a
    /// save each; when 30 are handled and one is inside its handler, Redis loses its data.
    async fn three_consumers_through(loss: Loss) -> Run {
        const EVENTS: i64 = 200;
        let mut server = match loss {
            Loss::SentinelPrimaryKilled => Redis::Sentinel(redis_server::SentinelSet::start()),
            _ => Redis::Plain(redis_server::RedisServer::start()),
        };
        let script = events_api(Store::new(1, EVENTS));
        let run = Arc::new(Mutex::new(Run::default()));
        let in_handler = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut consumers = tokio::task::JoinSet::new();
        for consumer in 0..3 {
            let store = RedisCheckpoints::connect(&server.url()).await.unwrap();
            let mut stream = after(&client(&script), EventsVersion::V2, 0)
                .checkpoints(Arc::new(store.lease_time(Duration::from_secs(1))), "v2-all")
                .build();
            let (run, in_handler) = (run.clone(), in_handler.clone());
            consumers.spawn(async move {
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(StreamItem::Event(event)) => {
                            let start = Instant::now();
                            in_handler.store(true, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(40)).await;
                            in_handler.store(false, std::sync::atomic::Ordering::SeqCst);
                            let _ = stream.save_checkpoint().await;
                            run.lock().unwrap().handled.push(Handled {
                                consumer,
                                token: stream.lease_token(),
                                id: event.id(),
                                start,
                                end: Instant::now(),
                            });
                        }
                        Ok(StreamItem::Notice(StreamNotice::Consuming { token, .. })) => {
                            run.lock().unwrap().tokens.push(token);
                        }
                        Ok(StreamItem::Notice(notice @ StreamNotice::CheckpointLost { .. })) => {
                            run.lock().unwrap().lost.push(notice);
                        }
                        _ => {}
                    }
                }
            });
        }
        let all_handled = |run: &Run| {
            let ids: std::collections::BTreeSet<i64> = run.handled.iter().map(|h| h.id).collect();
            ids.len() as i64 == EVENTS
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let handled = run.lock().unwrap().handled.len();
            if handled >= 30 && in_handler.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            assert!(Instant::now() < deadline, "only {handled} events handled");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let lost_at = Instant::now();
        match (loss, &mut server) {
            (Loss::Flushed, Redis::Plain(server)) => {
                let _: () = redis::cmd("FLUSHALL")
                    .query_async(&mut server.connection().await)
                    .await
                    .unwrap();
            }
            (Loss::RestartedEmpty, Redis::Plain(server)) => server.restart_empty(),
            (Loss::SentinelPrimaryKilled, Redis::Sentinel(set)) => {
                set.kill_primary();
            }
            (loss, _) => unreachable!("{loss:?} on another store"),
        }
        while !all_handled(&run.lock().unwrap()) {
            assert!(Instant::now() < deadline, "not every event was handled");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        consumers.abort_all();
        let mut run = std::mem::take(&mut *run.lock().unwrap());
        // The first event handled under a lease taken after the loss.
        let before = run
            .handled
            .iter()
            .filter(|h| h.start <= lost_at)
            .filter_map(|h| h.token)
            .max();
        run.takeover = run
            .handled
            .iter()
            .filter(|h| h.token > before)
            .map(|h| h.start.saturating_duration_since(lost_at))
            .min()
            .unwrap_or_default();
        run
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn redis_that_loses_its_data_under_a_handler_never_gives_the_stream_to_two_consumers() {
        for loss in [
            Loss::Flushed,
            Loss::RestartedEmpty,
            Loss::SentinelPrimaryKilled,
        ] {
            let run = three_consumers_through(loss).await;
            let ids: std::collections::BTreeSet<i64> = run.handled.iter().map(|h| h.id).collect();
            println!(
                "{loss:?}: takeover {:?}, {} tokens, {} handlings of {} events, {} loss notices",
                run.takeover,
                run.tokens.len(),
                run.handled.len(),
                ids.len(),
                run.lost.len()
            );
            // Never two consumers inside a handler at once.
            let mut spans = run.handled.clone();
            spans.sort_by_key(|h| h.start);
            for pair in spans.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                assert!(
                    a.consumer == b.consumer || a.end <= b.start,
                    "{loss:?}: consumers {} and {} handled {} and {} at once",
                    a.consumer,
                    b.consumer,
                    a.id,
                    b.id
                );
            }
            // No token handed out twice, and each later than the one before. (On Sentinel the
            // replica that took over had the lease: its holder may keep it.)
            let lost_data = !matches!(loss, Loss::SentinelPrimaryKilled);
            if lost_data {
                assert!(
                    run.tokens.len() >= 2,
                    "{loss:?}: no takeover: {:?}",
                    run.tokens
                );
            }
            assert!(
                run.tokens.windows(2).all(|t| t[0] < t[1]),
                "{loss:?}: {:?}",
                run.tokens
            );
            // Nothing skipped (the loop ends when every id was handled), and the loss was
            // said rather than passed over: a repeat at most of what the store forgot.
            if lost_data {
                assert!(!run.lost.is_empty(), "{loss:?}: the loss was not reported");
            }
            // Handed out again: at most what a holder handles in one lease time (1 s, 25
            // events of 40 ms) with its saves not reaching the store.
            let handled = run.handled.len();
            assert!(handled <= 200 + 25, "{loss:?}: {handled} handlings");
        }
    }
}
