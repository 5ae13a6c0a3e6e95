//! The blocking client (`pubapi-sdk-ext`, feature `blocking`) against the sandbox: each
//! test's thread has no async runtime, like a script's; the sandbox is served on a runtime
//! of its own. The client asks an agent and waits, reads events as an iterator, waits for an
//! audit job and reads the report, hands typed errors through, and refuses (with a typed
//! error, nothing sent) when called inside an async runtime.

use pubapi_sdk::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
use pubapi_sdk_ext::ai::{AiWait, AskError, StatusObserver};
use pubapi_sdk_ext::audit::{AuditWait, JobObserver, JobState, ReportRead};
use pubapi_sdk_ext::blocking::{self, Client};
use pubapi_sdk_ext::events::{EventStream, EventsVersion, StreamItem, StreamNotice, StreamStart};
use pubapi_sdk_ext::fleet::FileCheckpoints;
use pubapi_sdk_ext::waiter::WaitError;
use pubapi_sdk_ext::{BuildError, Error};
use pubapi_testkit::sandbox::{Sandbox, SandboxConfig};
use pubapi_testkit::{SAMPLE_AGENT, SAMPLE_QUESTION, four_events};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A sandbox served on a runtime of its own, so the test's thread stays free of one.
struct Served {
    // Dropped before the runtime that serves it.
    sandbox: Arc<Sandbox>,
    _runtime: tokio::runtime::Runtime,
}

impl std::ops::Deref for Served {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

fn serve(config: SandboxConfig) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime for the sandbox");
    let sandbox = runtime.block_on(Sandbox::start(config));
    Served {
        sandbox: Arc::new(sandbox),
        _runtime: runtime,
    }
}

fn client(sb: &Sandbox) -> Client {
    sb.client_builder_for("admin")
        .build_blocking()
        .expect("a blocking client")
}

/// The operations the sandbox answered, in order.
fn operations(sb: &Sandbox) -> Vec<&'static str> {
    sb.traffic()
        .iter()
        .map(|e| e.operation.unwrap_or("?"))
        .collect()
}

fn logins_request() -> LoginsAuditRequest {
    LoginsAuditRequest::new(
        "2025-03-01",
        "2025-03-04",
        AuditFormat::Json,
        [LoginEvent::Logins, LoginEvent::FailedAttempts],
    )
    .expect("a valid request")
}

#[test]
fn ask_and_wait_blocks_through_the_polls_until_the_agent_answers() {
    let mut config = SandboxConfig::testing();
    config.ai.agent_polls = 2;
    let sb = serve(config);
    let client = client(&sb);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let how = AiWait {
        min_interval: AiWait::FLOOR,
        on_status: StatusObserver::new({
            let seen = seen.clone();
            move |status| seen.lock().unwrap().push(status.to_string())
        }),
        ..AiWait::default()
    };
    let answer = client
        .agents()
        .ask_and_wait(SAMPLE_AGENT, SAMPLE_QUESTION, how)
        .expect("an answer");
    assert_eq!(answer.result.status.to_string(), "COMPLETED");
    let text = answer.result.response_text.unwrap_or_default();
    assert!(text.contains("180 euros per night"), "{text}");
    assert_eq!(*seen.lock().unwrap(), ["PENDING", "RUNNING", "COMPLETED"]);
    assert_eq!(
        operations(&sb),
        [
            "askAgent",
            "getAgentRequestStatus",
            "getAgentRequestStatus",
            "getAgentRequestStatus"
        ]
    );
    // In two steps: the ids in hand, waiting again costs no new question.
    let request = client
        .agents()
        .ask(SAMPLE_AGENT, SAMPLE_QUESTION)
        .expect("asked");
    let how = AiWait {
        min_interval: AiWait::FLOOR,
        ..AiWait::default()
    };
    let again = client
        .agents()
        .wait(SAMPLE_AGENT, &request, how)
        .expect("an answer");
    assert_eq!(again.request, request);
    assert_eq!(again.result.status.to_string(), "COMPLETED");
    sb.assert_conformant();
}

#[test]
fn the_event_stream_is_an_iterator_that_stops_handing_out_once_caught_up() {
    let sb = serve(SandboxConfig::testing());
    four_events(&sb);
    let client = client(&sb);
    let mut events = client
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::After(0))
        .build();
    let mut ids = Vec::new();
    // Taking the item after `CaughtUp` would sleep the polling interval: stop there.
    for item in events.by_ref() {
        match item.expect("no error") {
            StreamItem::Event(event) => ids.push(event.id()),
            StreamItem::Notice(StreamNotice::CaughtUp { next_poll_in }) => {
                assert!(next_poll_in >= EventStream::MIN_POLL_INTERVAL);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(ids, [1, 2, 3, 4]);
    assert_eq!(events.checkpoint(), Some(4));

    let backwards: Vec<i64> = client
        .events()
        .backfill(EventsVersion::V2, i64::MAX)
        .map(|event| event.expect("no error").id())
        .collect();
    assert_eq!(backwards, [4, 3, 2, 1]);
    let cursor = client.events().cursor().expect("the cursor");
    assert_eq!((cursor.oldest_event_id, cursor.latest_event_id), (1, 4));
    sb.assert_conformant();
}

#[test]
fn event_cursor_and_agent_times_read_as_instants_on_the_blocking_client() {
    use pubapi_sdk_ext::ai::AgentRequestStatusExt;
    use pubapi_sdk_ext::events::EventsCursorExt;
    use pubapi_sdk_ext::jiff::Timestamp;
    let mut config = SandboxConfig::testing();
    config.ai.agent_polls = 0;
    let sb = serve(config);
    four_events(&sb);
    let client = client(&sb);
    let now = Timestamp::from_millisecond(sb.now_ms()).unwrap();
    let cursor = client.events().cursor().expect("the cursor");
    assert_eq!(cursor.timestamp_at(), Ok(Some(now)));
    let event = client
        .events()
        .backfill(EventsVersion::V2, i64::MAX)
        .next()
        .expect("an event")
        .expect("no error");
    assert_eq!(event.occurred_at(), Ok(now));
    let how = AiWait {
        min_interval: AiWait::FLOOR,
        ..AiWait::default()
    };
    let answer = client
        .agents()
        .ask_and_wait(SAMPLE_AGENT, "Hotel costs?", how)
        .expect("an answer");
    let whole_seconds = Timestamp::from_second(sb.now_ms().div_euclid(1000)).unwrap();
    assert_eq!(answer.result.last_updated_at(), Ok(Some(whole_seconds)));
    sb.assert_conformant();
}

/// A blocking client whose token comes from the sandbox's password grant for `sam` with
/// `password`.
fn signed_in_as_sam(sb: &Sandbox, password: &str) -> Client {
    let url = sb
        .base_url()
        .replace("/pubapi", pubapi_testkit::sandbox::TOKEN_PATH);
    let grant = pubapi_sdk_ext::PasswordGrant::new(&url, "sandbox-app", "sam", password).unwrap();
    sb.client_builder_with_token("unused")
        .token_source(Arc::new(grant))
        .build_blocking()
        .expect("a blocking client")
}

#[test]
fn a_password_grant_supplies_the_blocking_clients_token() {
    let sb = serve(SandboxConfig::testing());
    let client = signed_in_as_sam(&sb, "sam-password");
    assert_eq!(client.identity().whoami().expect("whoami").username, "sam");
    let client = signed_in_as_sam(&sb, "guess");
    assert!(matches!(
        client.identity().whoami(),
        Err(Error::InvalidInput(_))
    ));
    sb.assert_conformant();
}

/// The next `n` items of `stream`, skipping `StandingBy` notices, read on a thread of their
/// own: a lease that is never given up fails the test after a minute instead of hanging it.
fn items(mut stream: blocking::EventStream, n: usize) -> (Vec<StreamItem>, blocking::EventStream) {
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let items: Vec<StreamItem> = stream
            .by_ref()
            .map(|item| item.expect("no error"))
            .filter(|item| !matches!(item, StreamItem::Notice(StreamNotice::StandingBy { .. })))
            .take(n)
            .collect();
        let _ = sent.send((items, stream));
    });
    received
        .recv_timeout(Duration::from_secs(60))
        .expect("the stream took the lease within a minute")
}

fn consuming_after(item: &StreamItem) -> Option<(i64, bool)> {
    match item {
        StreamItem::Notice(StreamNotice::Consuming {
            after, taken_over, ..
        }) => Some((*after, *taken_over)),
        _ => None,
    }
}

fn event_id(item: &StreamItem) -> Option<i64> {
    match item {
        StreamItem::Event(event) => Some(event.id()),
        StreamItem::Undecodable(event) => event.id,
        _ => None,
    }
}

#[test]
fn a_stream_with_a_checkpoint_file_saves_and_gives_its_lease_up_on_release_and_on_drop() {
    let sb = serve(SandboxConfig::testing());
    four_events(&sb);
    let client = client(&sb);
    let dir = std::env::temp_dir().join(format!("pubapi-blocking-cp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(FileCheckpoints::new(dir.join("checkpoints.json")));
    let stream = |start| {
        client
            .events()
            .stream(EventsVersion::V2)
            .start(start)
            .checkpoints(store.clone(), "v2-all")
            .build()
    };

    let (taken, first) = items(stream(StreamStart::After(0)), 3);
    assert_eq!(consuming_after(&taken[0]), Some((0, false)), "{taken:?}");
    assert_eq!(
        taken[1..].iter().map(event_id).collect::<Vec<_>>(),
        [Some(1), Some(2)]
    );
    assert!(first.lease_token().is_some());
    first.save_checkpoint().expect("saved");
    // Dropped: the lease is given up in the background of the client's runtime.
    drop(first);

    // Resumes after the saved checkpoint, whatever its start says; nothing was taken over.
    let (taken, second) = items(stream(StreamStart::Latest), 2);
    assert_eq!(consuming_after(&taken[0]), Some((2, false)), "{taken:?}");
    assert_eq!(event_id(&taken[1]), Some(3));
    second.save_checkpoint().expect("saved");
    second.release().expect("released");

    // Released: the next stream holds the lease from its first item.
    let mut third = stream(StreamStart::Latest);
    let first_item = third.next().expect("an item").expect("no error");
    assert_eq!(
        consuming_after(&first_item),
        Some((3, false)),
        "{first_item:?}"
    );
    drop(third);
    std::fs::remove_dir_all(&dir).unwrap();
    sb.assert_conformant();
}

#[test]
fn an_audit_wait_blocks_until_the_job_completes_and_the_report_reads_as_an_iterator() {
    let sb = serve(SandboxConfig::testing());
    let client = client(&sb);
    let job = client.audit().create(logins_request()).expect("a job");
    let states = Arc::new(Mutex::new(Vec::new()));
    let how = AuditWait {
        // The sandbox's clock stands still: the first poll moves it past the job's duration
        // (and the 2 minutes between polls), so the second poll finds the report.
        on_status: JobObserver::new({
            let (states, sandbox) = (states.clone(), sb.sandbox.clone());
            move |state| {
                states.lock().unwrap().push(state.clone());
                sandbox.advance(sandbox.config().audit.job_duration);
            }
        }),
        // 2 minutes of the server's time between polls, waited 1,200 times faster.
        server_time_scale: 1200,
        ..AuditWait::default()
    };
    let location = client.audit().wait(&job, how).expect("the report");
    let states = states.lock().unwrap().clone();
    assert!(
        matches!(states.as_slice(), [JobState::Running { .. }, JobState::Completed(at)] if *at == location),
        "{states:?}"
    );
    let total = client
        .audit()
        .page(&location, 0, 1)
        .expect("a page")
        .total_count
        .expect("a total");
    assert!(total > 10, "{total}");

    let traffic_before = sb.traffic().len();
    let read = ReportRead {
        page_size: 10,
        offset: 3,
    };
    let events: Vec<_> = client
        .audit()
        .events(location.clone(), read)
        .collect::<Result<_, _>>()
        .expect("every event");
    assert_eq!(events.len() as u64, total - 3);
    assert_eq!(
        (sb.traffic().len() - traffic_before) as u64,
        (total - 3).div_ceil(10),
        "one request per page"
    );
    // As sent: the same events, each with every field the sandbox sent.
    let as_sent: Vec<_> = client
        .audit()
        .events_as_sent(location.clone(), read)
        .collect::<Result<_, _>>()
        .expect("every event");
    assert_eq!(as_sent.len(), events.len());
    for (sent, typed) in as_sent.iter().zip(&events) {
        let sent: serde_json::Value = serde_json::from_str(sent.get()).expect("JSON");
        let typed = serde_json::to_value(typed).expect("JSON");
        for (field, value) in typed.as_object().expect("an object") {
            assert_eq!(sent.get(field), Some(value), "{field}");
        }
    }
    client.audit().remove(&location).expect("deleted");
    assert!(matches!(
        client.audit().page(&location, 0, 1),
        Err(Error::NotFound(_))
    ));
    sb.assert_conformant();
}

#[test]
fn run_returns_a_finished_report_whose_events_and_csv_read_blocking() {
    let mut config = SandboxConfig::testing();
    config.audit.job_duration = Duration::ZERO;
    let sb = serve(config);
    let client = client(&sb);
    let report = client
        .audit()
        .run(logins_request(), AuditWait::default())
        .expect("a report");
    let total = report
        .plan(ReportRead::default())
        .expect("a plan")
        .total_events;
    assert_eq!(report.events().count() as u64, total);

    let csv = LoginsAuditRequest {
        format: AuditFormat::Csv,
        ..logins_request()
    };
    let report = client
        .audit()
        .run(csv, AuditWait::default())
        .expect("a report");
    let mut rows = report.csv().expect("a download").rows();
    let first = rows.next().expect("a row").expect("no error");
    assert!(rows.header().is_some_and(|h| !h.is_empty()));
    assert_eq!(first.header(), rows.header().unwrap());
    assert_eq!(1 + rows.count() as u64, total);
    let mut bytes = Vec::new();
    let copied = report
        .csv()
        .expect("a download")
        .copy_to(&mut bytes)
        .expect("copied");
    assert_eq!(copied, bytes.len() as u64);
    assert!(!bytes.is_empty());
    sb.assert_conformant();
}

#[test]
fn api_errors_come_through_typed() {
    let sb = serve(SandboxConfig::testing());
    let stranger = sb
        .client_builder_with_token("not-a-token")
        .build_blocking()
        .expect("a client");
    match stranger.identity().whoami() {
        Err(Error::Unauthorized(error)) => assert_eq!(error.status(), 401),
        other => panic!("{other:?}"),
    }

    let client = client(&sb);
    match client
        .agents()
        .ask_and_wait("agt-nobody", "Anyone there?", AiWait::default())
    {
        Err(WaitError::Failed {
            error: AskError::Api(Error::NotFound(error)),
            polls: 0,
            ..
        }) => assert_eq!(error.code(), Some("AGENT_NOT_FOUND")),
        other => panic!("{other:?}"),
    }

    let before = sb.traffic().len();
    assert!(matches!(
        client.agents().ask(SAMPLE_AGENT, "   "),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(sb.traffic().len(), before, "a blank question is not sent");
}

#[test]
fn inside_an_async_runtime_it_refuses_with_a_typed_error_and_sends_nothing() {
    let sb = serve(SandboxConfig::testing());
    four_events(&sb);
    let client = client(&sb);
    let events = client.events().backfill(EventsVersion::V2, i64::MAX);
    let stream = client
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::After(0))
        .build();
    let builder = sb.client_builder_for("admin");
    let caller = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    caller.block_on(async move {
        assert!(matches!(
            builder.build_blocking(),
            Err(BuildError::InAsyncContext)
        ));
        assert!(matches!(
            client.identity().whoami(),
            Err(Error::InAsyncContext)
        ));
        assert!(matches!(
            client
                .agents()
                .ask_and_wait(SAMPLE_AGENT, "Hotel costs?", AiWait::default()),
            Err(WaitError::Failed {
                error: AskError::Api(Error::InAsyncContext),
                polls: 0,
                ..
            })
        ));
        assert!(matches!(
            client.block_on(async { 1 }),
            Err(Error::InAsyncContext)
        ));
        let refused: Vec<_> = events.collect();
        assert!(
            matches!(refused.as_slice(), [Err(Error::InAsyncContext)]),
            "once, then the end: {refused:?}"
        );
        let refused: Vec<_> = stream.collect();
        assert!(
            matches!(refused.as_slice(), [Err(Error::InAsyncContext)]),
            "once, then the end: {refused:?}"
        );
        // The last handle on the client's runtime, dropped here, stops it without a panic.
        drop(client);
    });
    assert!(sb.traffic().is_empty(), "nothing was sent");
}

#[test]
fn the_refusal_says_what_to_do() {
    assert_eq!(
        Error::InAsyncContext.to_string(),
        "the blocking client was called inside an async runtime, nothing sent; use the async \
         client there"
    );
    assert_eq!(
        BuildError::InAsyncContext.to_string(),
        "a blocking client cannot be built inside an async runtime: use build() there"
    );
}
