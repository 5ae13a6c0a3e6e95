//! Unit tests of [`super`], kept apart so the module holds the code alone.

use super::url::check_segments;
use super::*;
use crate::request::replay::Replay;
use crate::request_id::REQUEST_ID_HEADER;
use crate::token::StaticToken;
use std::collections::VecDeque;

/// Keeps every request it is given and answers the statuses it holds, then 200; each
/// answer other than 200 carries `retry_after` as its `Retry-After`, when set.
#[derive(Debug, Default)]
struct Recorder {
    statuses: Mutex<VecDeque<u16>>,
    retry_after: Option<&'static str>,
    sent: Mutex<Vec<reqwest::Request>>,
}

impl Transport for Recorder {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let status = self.statuses.lock().unwrap().pop_front().unwrap_or(200);
        self.sent.lock().unwrap().push(request);
        let mut response = http::Response::builder().status(status);
        if let (Some(after), true) = (self.retry_after, status != 200) {
            response = response.header(http::header::RETRY_AFTER, after);
        }
        let response = response.body(Vec::<u8>::new()).unwrap();
        Box::pin(async move { Ok(response.into()) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_resends_what_the_first_attempt_sent() {
    let recorder = Arc::new(Recorder::default());
    recorder.statuses.lock().unwrap().push_back(503);
    let client = client_on(&recorder, RetryConfig::default());
    let bob = client.act_as(ActAs::username("bob").unwrap());
    // The empty body does not decode: only what was sent matters here.
    let _ = bob.identity().whoami().await;
    let sent = recorder.sent.lock().unwrap();
    assert_eq!(sent.len(), 2);
    let (first, retry) = (&sent[0], &sent[1]);
    assert_eq!(
        (
            first.method(),
            first.url(),
            first.version(),
            first.headers()
        ),
        (
            retry.method(),
            retry.url(),
            retry.version(),
            retry.headers()
        )
    );
    assert_eq!(first.headers()["authorization"], "Bearer t0k3n");
    assert_eq!(first.headers()[ACT_AS], "bob");
    // Sent through reqwest, the generated client's request (an act-as view's whoami)
    // would be kept for a retry without a copy.
    assert!(matches!(Replay::of(first), Some(Replay::Inline { .. })));
}

/// A client on `recorder` with `retry`.
/// A [`Recorder`] that stops before transmit, as a dry run does.
#[derive(Debug, Default)]
struct Stopping(Recorder);

impl Transport for Stopping {
    fn send<'a>(
        &'a self,
        client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        self.0.send(client, request)
    }

    fn stops_before_transmit(&self) -> bool {
        true
    }
}

/// A transport that stops before transmit (a dry run) is handed each request once, with
/// the token and the call's id, and takes no slot of the pacer: a daily budget of one is
/// still whole after three calls, and a 503 is not tried again. Its client's base URL
/// answers nothing: had anything been sent, the calls would fail to connect.
#[tokio::test(start_paused = true)]
async fn a_dry_run_takes_no_pacer_slot_and_is_handed_each_request_once() {
    let dry = Arc::new(Stopping::default());
    dry.0.statuses.lock().unwrap().extend([503, 503, 503]);
    let one_a_day = crate::limits::Budget::new(None, Some(1));
    let client = crate::Client::builder()
        .isolated_budget()
        .limits(Limits {
            general: one_a_day,
            ..Limits::default()
        })
        .base_url("http://127.0.0.1:1/pubapi")
        .token(SecretToken::try_from("t0k3n").unwrap())
        .transport(dry.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        let error = client.identity().whoami().await.unwrap_err();
        assert_eq!(error.status(), Some(503), "{error}");
    }
    let sent = std::mem::take(&mut *dry.0.sent.lock().unwrap());
    assert_eq!(sent.len(), 3);
    for request in &sent {
        assert_eq!(
            request.headers()[http::header::AUTHORIZATION],
            "Bearer t0k3n"
        );
        assert!(request.headers().contains_key(REQUEST_ID_HEADER));
    }
    let limiter = client.shared.limiter();
    assert_eq!(limiter.log_len(crate::LimitClass::General), 0);
    // The same client's pacer still has its one slot of the day.
    assert!(
        limiter
            .acquire(crate::LimitClass::General, Duration::ZERO)
            .await
            .is_ok()
    );
}

fn client_on(recorder: &Arc<Recorder>, retry: RetryConfig) -> crate::Client {
    crate::Client::builder()
        .isolated_budget()
        .base_url("http://127.0.0.1:1/pubapi")
        .token(SecretToken::try_from("t0k3n").unwrap())
        .transport(recorder.clone())
        .retry(retry)
        .build()
        .unwrap()
}

/// Each success puts one token back into the retry budget (`RetryBudget`'s contract), the
/// successes handed back without the retry step's decision included: otherwise a
/// long-lived client's budget only drains, and after about 100 retries in its life it
/// never retries again.
#[tokio::test(start_paused = true)]
async fn a_success_through_the_client_refunds_the_retry_budget() {
    let recorder = Arc::new(Recorder::default());
    recorder.statuses.lock().unwrap().push_back(503);
    let budget = crate::RetryBudget::new(10);
    let client = client_on(
        &recorder,
        RetryConfig::default().with_budget(budget.clone()),
    );
    // The empty bodies do not decode: only what the budget holds matters here.
    let _ = client.identity().whoami().await;
    assert_eq!(recorder.sent.lock().unwrap().len(), 2);
    assert_eq!(
        budget.available(),
        10 - 5 + 1,
        "a retry takes 5, its success gives 1"
    );
    for _ in 0..3 {
        let _ = client.identity().whoami().await;
    }
    assert_eq!(budget.available(), 9);
    for _ in 0..3 {
        let _ = client.identity().whoami().await;
    }
    assert_eq!(budget.available(), 10, "never over the capacity");
}

/// An operation timeout past what an instant can hold (`Duration::MAX`, "no deadline")
/// is worked out without overflowing when a call needs a second attempt.
#[tokio::test(start_paused = true)]
async fn an_operation_timeout_of_duration_max_is_no_overflow_on_a_retry() {
    let recorder = Arc::new(Recorder::default());
    recorder.statuses.lock().unwrap().extend([503, 503]);
    let client = client_on(
        &recorder,
        RetryConfig::default().with_operation_timeout(Duration::MAX),
    );
    let _ = client.identity().whoami().await;
    assert_eq!(recorder.sent.lock().unwrap().len(), 3);
}

/// A `Retry-After` past what an instant reaches, with every cap lifted: no overflow
/// when the policy checks it against the deadline; the call ends with the 429.
#[tokio::test(start_paused = true)]
async fn a_huge_retry_after_with_no_caps_is_no_overflow() {
    let recorder = Arc::new(Recorder {
        retry_after: Some("99999999999999999999"),
        ..Recorder::default()
    });
    recorder.statuses.lock().unwrap().push_back(429);
    let retry = RetryConfig::default()
        .with_max_retry_after(Duration::MAX)
        .with_max_total_wait(Duration::MAX)
        .with_operation_timeout(Duration::MAX);
    let client = client_on(&recorder, retry);
    let error = client.identity().whoami().await.unwrap_err();
    assert_eq!(error.status(), Some(429), "{error}");
    assert_eq!(recorder.sent.lock().unwrap().len(), 1);
}

/// glibc serves blocks of up to 1,032 bytes from a per-thread cache; the boxed future
/// of every call once grew to 1,048 bytes unnoticed, and each call then cost about 1 k
/// instructions more in the allocator (`BENCHMARKS.md`). Checked in the build the tests
/// run in; the release build's future is smaller (1,016 bytes when this was written).
#[test]
fn the_boxed_call_fits_the_allocators_per_thread_cache() {
    const THREAD_CACHE_MAX: usize = 1032;
    let client = crate::Client::builder()
        .isolated_budget()
        .base_url("http://127.0.0.1:1/pubapi")
        .token(SecretToken::try_from("t0k3n").unwrap())
        .build()
        .unwrap();
    let policy = Policy::new(client.shared.clone(), None, None);
    let http = reqwest::Client::new();
    let operation = pubapi_sdk::operations::by_method_name("whoami").unwrap();
    let request = reqwest::Request::new(
        http::Method::GET,
        "http://127.0.0.1:1/pubapi/v1/whoami".parse().unwrap(),
    );
    let call = policy.run(&http, request, operation);
    let size = std::mem::size_of_val(&*call);
    assert!(
        size <= THREAD_CACHE_MAX,
        "the boxed call is {size} bytes, over the {THREAD_CACHE_MAX} of the thread cache"
    );
}

#[test]
fn the_quota_follows_the_token_used_last_through_a_rotation_and_back() {
    let first = SecretToken::try_from("rotation-first").unwrap();
    let second = SecretToken::try_from("rotation-second").unwrap();
    let shared = Shared::new(
        Arc::new(StaticToken::new(first.clone())),
        Budgets::PerToken {
            limits: Limits::default(),
            pacing: Pacing::default(),
            fleet: None,
            domain: Some(BudgetDomain::of(&"http://127.0.0.1:1/".parse().unwrap())),
        },
        RetryConfig::default(),
        None,
        Box::new([]),
        Settings {
            call_removed_operations: false,
            attempt_timeout: Duration::from_secs(60),
        },
    );
    let of_first = shared.limiter_for(&first).unwrap().into_owned();
    assert!(shared.limiter().same_as(&of_first));
    let of_second = shared.limiter_for(&second).unwrap().into_owned();
    assert!(!of_second.same_as(&of_first));
    assert!(shared.limiter().same_as(&of_second));
    assert!(shared.limiter_for(&first).unwrap().same_as(&of_first));
    assert!(shared.limiter().same_as(&of_first));
    assert!(shared.limiter_for(&second).unwrap().same_as(&of_second));
    assert!(shared.limiter().same_as(&of_second));
}

#[test]
fn a_template_without_values_is_checked_as_the_walk_over_its_segments_checks_it() {
    let fixed = [
        "",
        "/",
        "v1/whoami",
        "/v1/whoami",
        "/pubapi/v1/whoami",
        "/pubapi//v1/whoami",
        "/pubapi/v1/whoami/",
        "/pubapi/xv1/whoami",
        "/pubapi/v1/whoamix",
    ];
    let literal = pubapi_sdk::operations::ALL
        .iter()
        .filter(|operation| !operation.path.contains('{'));
    for operation in literal {
        let own = [
            operation.path.to_string(),
            format!("/pubapi{}", operation.path),
            format!("/pubapi{}/", operation.path),
            format!("/pubapi/x{}", &operation.path[1..]),
            format!("/pubapi{}", &operation.path[..operation.path.len() - 1]),
        ];
        for path in fixed.iter().map(|p| p.to_string()).chain(own) {
            assert_eq!(
                check_path(operation, &path).is_ok(),
                check_segments(operation, &path).is_ok(),
                "{} against {path:?}",
                operation.path
            );
        }
    }
}
