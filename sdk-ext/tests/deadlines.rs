//! Deadlines that are deadlines: the operation timeout bounds the whole call, an attempt in
//! flight included (cancelled, answered with `Error::Timeout`, its attempts and request id);
//! a view's attempt bound may be longer or shorter than its client's; a bound on silence that
//! runs out is a timeout a caller can match. On a scripted transport with paused time (exact
//! figures), and on loopback servers that answer late or trickle (real time, kept short).

use pubapi_sdk_ext::error::TimeoutBound;
use pubapi_sdk_ext::options::CallOptions;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::{Client, Error, RetryConfig, SecretToken};
use std::time::Duration;
use tokio::time::Instant;

#[path = "support/slow_server.rs"]
#[allow(
    dead_code,
    reason = "each test file uses the part of the server it needs"
)]
mod slow_server;
use slow_server::{Reply, serve};

/// The id of the scripted calls, given by the caller.
const ID: &str = "req-deadline-7f3c";

const WHOAMI: &str =
    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A script whose every answer reaches the client `delay` after the request was sent.
fn answering_after(delay: Duration) -> std::sync::Arc<Script> {
    let script = Script::new(vec![], Answer::json(200, WHOAMI));
    script.delay_every(1, delay);
    script
}

/// The timeout a call ended with: its bound and attempts, and whether its request id is the
/// one its first attempt carried.
fn timeout_of(error: &Error, sent_id: &str) -> (TimeoutBound, u32) {
    match error {
        Error::Timeout {
            bound,
            attempts,
            request_id,
            ..
        } => {
            assert_eq!(
                request_id.as_ref().map(|id| id.to_string()).as_deref(),
                Some(sent_id),
                "{error}"
            );
            (*bound, *attempts)
        }
        other => panic!("not a timeout: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_2_s_operation_timeout_ends_a_call_answered_after_10_s_at_2_s_with_a_timeout() {
    // Set on the client (its retry config) and on a view (call options).
    for on_view in [false, true] {
        let script = answering_after(secs(10));
        let retry = if on_view {
            RetryConfig::default()
        } else {
            RetryConfig::default().with_operation_timeout(secs(2))
        };
        let client = script.builder().retry(retry).build().unwrap();
        // The request never reaches the script (it is cancelled on its way): the id is the
        // caller's, to be known.
        let options = CallOptions::new().request_id(ID.parse().unwrap());
        let options = if on_view {
            options.operation_timeout(secs(2))
        } else {
            options
        };
        let client = client.with_options(options).unwrap();
        let started = Instant::now();
        let error = client.identity().whoami().await.unwrap_err();
        assert_eq!(started.elapsed(), secs(2), "on a view: {on_view}");
        assert!(script.seen().is_empty(), "cancelled before it arrived");
        assert_eq!(timeout_of(&error, ID), (TimeoutBound::Operation, 1));
        assert!(
            error
                .to_string()
                .starts_with("timed out after 2s, 1 attempt [request id"),
            "{error}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_views_attempt_bound_may_be_longer_or_shorter_than_its_clients() {
    // The client waits 2 s in silence; its view 10 s: a 5 s answer gets through the view.
    let script = answering_after(secs(5));
    let client = script
        .builder()
        .attempt_timeout(secs(2))
        .build()
        .unwrap()
        .with_options(CallOptions::new().request_id(ID.parse().unwrap()))
        .unwrap();
    let patient = client
        .with_options(CallOptions::new().attempt_timeout(secs(10)))
        .unwrap();
    let started = Instant::now();
    let me = patient.identity().whoami().await.unwrap();
    assert_eq!(
        (me.username.as_str(), started.elapsed()),
        ("admin", secs(5))
    );
    assert_eq!(script.seen().len(), 1);

    // The client's own 2 s: each of its 3 attempts is cancelled after 2 s of silence, and the
    // call is a timeout of the attempts' bound, not a transport failure.
    let started = Instant::now();
    let error = client.identity().whoami().await.unwrap_err();
    assert_eq!(timeout_of(&error, ID), (TimeoutBound::Silence, 3));
    assert!(started.elapsed() >= secs(6), "{:?}", started.elapsed());
    assert_eq!(script.seen().len(), 1, "none of the three arrived");

    // A view's shorter bound, on a client of the default 60 s.
    let script = answering_after(secs(5));
    let hurried = script
        .client()
        .with_options(
            CallOptions::new()
                .attempt_timeout(secs(1))
                .retries(0)
                .request_id(ID.parse().unwrap()),
        )
        .unwrap();
    let started = Instant::now();
    let error = hurried.identity().whoami().await.unwrap_err();
    assert_eq!(started.elapsed(), secs(1));
    assert_eq!(timeout_of(&error, ID), (TimeoutBound::Silence, 1));
}

fn on_loopback(base: &str) -> pubapi_sdk_ext::ClientBuilder {
    Client::builder()
        .isolated_budget()
        .base_url(base)
        .token(SecretToken::try_from("t0k3n-deadlines").unwrap())
}

/// The issue's figure, on a real socket: a 2 s operation timeout on a call the server answers
/// after 10 s returns `Error::Timeout` within 2.1 s.
#[tokio::test]
async fn on_a_socket_a_2_s_operation_timeout_returns_a_timeout_within_2_1_s_of_a_10_s_answer() {
    let (base, seen) = serve(vec![Reply::json_after(secs(10), 200, WHOAMI)]).await;
    let client = on_loopback(&base)
        .retry(RetryConfig::default().with_operation_timeout(secs(2)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let error = client.identity().whoami().await.unwrap_err();
    let took = started.elapsed();
    assert!(took >= secs(2) && took < millis(2100), "{took:?}");
    let sent = seen.header(0, "x-request-id").unwrap();
    assert_eq!(timeout_of(&error, &sent), (TimeoutBound::Operation, 1));
}

/// Scaled down (a tenth): a view's attempt bound of 1 s lets a 500 ms answer through on a
/// client whose own bound is 200 ms, which alone times out.
#[tokio::test]
async fn on_a_socket_a_views_longer_attempt_bound_lets_a_late_answer_through() {
    let (base, _) = serve(vec![Reply::json_after(millis(500), 200, WHOAMI)]).await;
    let client = on_loopback(&base)
        .attempt_timeout(millis(200))
        .build()
        .unwrap();
    let patient = client
        .with_options(CallOptions::new().attempt_timeout(secs(1)))
        .unwrap();
    assert_eq!(patient.identity().whoami().await.unwrap().username, "admin");
    let once = client.with_options(CallOptions::new().retries(0)).unwrap();
    let error = once.identity().whoami().await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Timeout {
                bound: TimeoutBound::Silence,
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
}

/// A body that keeps trickling (a byte every 50 ms, so no silence bound fires) is still cut
/// at the operation timeout; one that falls silent longer than the attempt bound is a timeout
/// of that bound.
#[tokio::test]
async fn on_a_socket_a_trickling_body_is_cut_at_the_deadline_and_a_silent_one_at_its_bound() {
    let (base, seen) = serve(vec![Reply::trickle(200, WHOAMI, millis(50))]).await;
    let client = on_loopback(&base)
        .retry(RetryConfig::default().with_operation_timeout(millis(500)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let error = client.identity().whoami().await.unwrap_err();
    let took = started.elapsed();
    assert!(took >= millis(500) && took < millis(700), "{took:?}");
    let sent = seen.header(0, "x-request-id").unwrap();
    assert_eq!(timeout_of(&error, &sent), (TimeoutBound::Operation, 1));

    let (base, seen) = serve(vec![Reply::trickle(200, WHOAMI, millis(400))]).await;
    let client = on_loopback(&base)
        .attempt_timeout(millis(150))
        .build()
        .unwrap()
        .with_options(CallOptions::new().retries(0))
        .unwrap();
    let error = client.identity().whoami().await.unwrap_err();
    let sent = seen.header(0, "x-request-id").unwrap();
    assert_eq!(timeout_of(&error, &sent), (TimeoutBound::Silence, 1));
}
