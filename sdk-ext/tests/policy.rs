//! The request policy of `Client`, driven through a scripted transport with paused time, so
//! schedules are asserted exactly.

use pubapi_sdk_ext::interceptor::{Attempt, AttemptHeaders, Interceptor};
use pubapi_sdk_ext::limits::{Budget, Limits};
use pubapi_sdk_ext::options::{CallOptions, CallOptionsError};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::{ActAs, Client, Error, LimitClass, RequestId, RetryConfig, SecretToken};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[path = "support/rotating_token.rs"]
mod rotating_token;
use rotating_token::Rotating;

const CANARY: &str = "CANARY-token-7f3a9c";

const WHOAMI: &str = r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":["Service.webhooks"]}"#;

fn ok_whoami() -> Answer {
    Answer::json(200, WHOAMI)
}

fn client(script: &Arc<Script>) -> Client {
    client_with(script, RetryConfig::default())
}

fn client_with(script: &Arc<Script>, retry: RetryConfig) -> Client {
    script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .retry(retry)
        .build()
        .unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The most arrivals in any rolling second (half-open).
fn busiest_second(times: &[Duration]) -> usize {
    let mut times = times.to_vec();
    times.sort();
    (0..times.len())
        .map(|i| {
            times[i..]
                .iter()
                .take_while(|t| **t < times[i] + secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn twenty_calls_with_every_third_connection_delayed_never_put_three_arrivals_in_a_second() {
    for tasks in [1, 4] {
        let script = Script::new(vec![], ok_whoami());
        script.delay_every(3, Duration::from_millis(80));
        let client = client(&script);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..tasks {
            let client = client.clone();
            set.spawn(async move {
                for _ in 0..20 / tasks {
                    client.sdk().whoami().send().await.unwrap();
                }
            });
        }
        set.join_all().await;
        let times = script.times();
        assert_eq!(times.len(), 20);
        assert!(busiest_second(&times) <= 2, "{tasks} tasks: {times:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn clients_of_one_token_share_one_budget_and_a_new_token_starts_its_own() {
    let script = Script::new(vec![], ok_whoami());
    let build = |token: &str| {
        Client::builder()
            .base_url("http://budget-share.test/pubapi")
            .allow_plain_http()
            .token(SecretToken::try_from(token).unwrap())
            .transport(script.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (build("shared-budget-token"), build("shared-budget-token"));
    let bob = b.act_as(ActAs::username("bob").unwrap());
    let mut set = tokio::task::JoinSet::new();
    for client in [a.clone(), b.clone(), bob, a.clone()] {
        set.spawn(async move {
            for _ in 0..3 {
                client.sdk().whoami().send().await.unwrap();
            }
        });
    }
    set.join_all().await;
    let mut times = script.times();
    times.sort();
    let expected: Vec<Duration> = (0..12).map(|i| Duration::from_millis(550 * i)).collect();
    assert_eq!(times, expected, "one budget, one start every 550 ms");
    for client in [&a, &b] {
        assert_eq!(client.quota(LimitClass::General).remaining_today, Some(988));
    }
    // A rotated token is another budget.
    let rotated = build("rotated-budget-token");
    rotated.sdk().whoami().send().await.unwrap();
    assert_eq!(
        rotated.quota(LimitClass::General).remaining_today,
        Some(999)
    );
    assert_eq!(a.quota(LimitClass::General).remaining_today, Some(988));
}

#[tokio::test(start_paused = true)]
async fn one_token_is_one_budget_however_its_base_url_is_spelt() {
    let script = Script::new(vec![], ok_whoami());
    let spellings = [
        "http://127.0.0.1:8080/pubapi",
        "http://localhost:8080/pubapi",
        "http://LOCALHOST:8080/pubapi/",
    ];
    let mut set = tokio::task::JoinSet::new();
    for base_url in spellings {
        let client = Client::builder()
            .base_url(base_url)
            .token(SecretToken::try_from("one-domain-token").unwrap())
            .transport(script.clone())
            .build()
            .unwrap();
        set.spawn(async move {
            for _ in 0..4 {
                client.sdk().whoami().send().await.unwrap();
            }
        });
    }
    set.join_all().await;
    let times = script.times();
    assert_eq!(times.len(), 12);
    assert!(busiest_second(&times) <= 2, "{times:?}");
}

/// The gateway counts a token's calls on its domain: clients of one token against other
/// hosts or ports (a mock server per test) pace apart, each at the reference's 2 a second.
#[tokio::test(start_paused = true)]
async fn one_token_on_other_hosts_or_ports_is_another_budget() {
    let domains = [
        "http://127.0.0.1:8080/pubapi",
        "http://127.0.0.1:8081/pubapi",
        "https://acme.example.com/pubapi",
        "https://other.example.com/pubapi",
    ];
    let mut set = tokio::task::JoinSet::new();
    let mut scripts = Vec::new();
    for base_url in domains {
        let script = Script::new(vec![], ok_whoami());
        let client = Client::builder()
            .base_url(base_url)
            .token(SecretToken::try_from("many-domains-token").unwrap())
            .transport(script.clone())
            .build()
            .unwrap();
        scripts.push(script);
        set.spawn(async move {
            let started = Instant::now();
            for _ in 0..4 {
                client.sdk().whoami().send().await.unwrap();
            }
            started.elapsed()
        });
    }
    for took in set.join_all().await {
        // 4 calls spread at 2 a second on a budget of its own: the last leaves 3 × 550 ms
        // after the first (on one budget of 16 calls, the last would wait 8 s).
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
    for script in scripts {
        assert_eq!(script.times().len(), 4);
    }
}

#[tokio::test(start_paused = true)]
async fn an_inactive_token_is_unauthorized_and_never_retried() {
    let inactive = Answer::empty(403)
        .header("x-gateway-error-code", "ERR_403_DEVELOPER_INACTIVE")
        .header("retry-after", "1");
    let script = Script::new(vec![], inactive);
    let result = client(&script)
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::Unauthorized(_))), "{result:?}");
    assert_eq!(script.seen().len(), 1);
}

/// A 403 or 429 with `Retry-After` and a gateway code the SDK does not know is a throttle
/// of a new kind: retried after `Retry-After` as often as configured (2 by default), then the
/// call fails as throttled, naming the code. Without `Retry-After`, a 403 stays final.
#[tokio::test(start_paused = true)]
async fn a_throttle_with_an_unknown_code_is_retried_after_retry_after_a_bounded_number_of_times() {
    // (status, Retry-After, retries configured, attempts expected)
    let cases: [(u16, Option<&str>, Option<u32>, usize); 6] = [
        (403, Some("2"), None, 3),
        (429, Some("2"), None, 3),
        (403, Some("2"), Some(0), 1),
        (403, Some("2"), Some(5), 6),
        (429, Some("2"), Some(1), 2),
        (403, None, None, 1),
    ];
    for (status, after, retries, attempts) in cases {
        let mut answer = Answer::empty(status).header("x-gateway-error-code", "ERR_SOMETHING_NEW");
        if let Some(after) = after {
            answer = answer.header("retry-after", after);
        }
        let script = Script::new(vec![], answer);
        let mut retry = RetryConfig::default().with_max_attempts(10);
        if let Some(retries) = retries {
            retry = retry.with_unknown_throttle_retries(retries);
        }
        let error = client_with(&script, retry)
            .sdk()
            .whoami()
            .send()
            .await
            .map_err(Error::from)
            .unwrap_err();
        let case = format!("{status} {after:?} {retries:?}");
        let times = script.times();
        assert_eq!(times.len(), attempts, "{case}");
        if after.is_some() {
            for pair in times.windows(2) {
                assert_eq!(pair[1] - pair[0], secs(2), "{case}: {times:?}");
            }
            assert!(
                matches!(error, Error::Throttled { retry_after: Some(r), .. } if r == secs(2)),
                "{case}: {error:?}"
            );
            assert!(error.to_string().contains("ERR_SOMETHING_NEW"), "{error}");
        } else {
            assert!(
                matches!(error, Error::Forbidden { .. }),
                "{case}: {error:?}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn quota_shows_the_gateway_counters_and_follows_a_higher_server_count() {
    let counted = Answer::json(200, WHOAMI)
        .header("x-accesstoken-qps-allotted", "2")
        .header("x-accesstoken-qps-current", "1")
        .header("x-accesstoken-quota-allotted", "1000")
        .header("x-accesstoken-quota-current", "640");
    let script = Script::new(vec![], counted);
    let client = client(&script);
    client.sdk().whoami().send().await.unwrap();
    let quota = client.quota(LimitClass::General);
    assert_eq!(quota.remaining_today, Some(360));
    let server = quota.server.unwrap();
    assert_eq!(
        (server.quota_current, server.quota_allotted),
        (Some(640), Some(1000))
    );
}

#[tokio::test(start_paused = true)]
async fn pacing_spreads_calls_evenly_with_the_margin_and_bursts_on_request() {
    let script = Script::new(vec![], ok_whoami());
    let client = client(&script);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let client = client.clone();
        tasks.spawn(async move {
            client
                .sdk()
                .whoami()
                .send()
                .await
                .map_err(Error::from)
                .map(|_| ())
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap().unwrap();
    }
    let mut times = script.times();
    times.sort();
    let expected: Vec<Duration> = (0..10).map(|i| Duration::from_millis(550 * i)).collect();
    assert_eq!(times, expected);
    assert_eq!(client.quota(LimitClass::General).remaining_today, Some(990));

    // Bursts, opted into: two at once, each window kept 100 ms longer.
    let script = Script::new(vec![], ok_whoami());
    let client = script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .pacing(pubapi_sdk_ext::Pacing::burst(Duration::from_millis(100)))
        .build()
        .unwrap();
    for _ in 0..6 {
        client.sdk().whoami().send().await.unwrap();
    }
    let expected: Vec<Duration> = [0, 0, 1100, 1100, 2200, 2200]
        .map(Duration::from_millis)
        .into();
    assert_eq!(script.times(), expected);
}

#[tokio::test(start_paused = true)]
async fn over_qps_is_retried_after_retry_after_even_for_post() {
    let throttled = Answer::empty(403)
        .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
        .header("retry-after", "3");
    let created = Answer::json(
        201,
        r#"{"webhookId":"w1","expires":1767225600,"status":"enabled"}"#,
    );
    let script = Script::new(vec![throttled], created);
    let hook = client(&script)
        .sdk()
        .create_webhook()
        .body(pubapi_sdk::types::WebhookCreateRequest {
            url: "https://hooks.example.com/in".into(),
            auth_header: None,
            event_type: vec![],
            path: None,
        })
        .send()
        .await
        .unwrap();
    assert_eq!(hook.webhook_id, "w1");
    assert_eq!(script.times(), vec![secs(0), secs(3)]);
    assert!(script.seen().iter().all(|s| s.method == "POST"));
}

#[tokio::test(start_paused = true)]
async fn daily_quota_is_not_retried_and_blocks_further_calls_locally() {
    let over_rate = Answer::empty(403)
        .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_RATE")
        .header("retry-after", "3600");
    let script = Script::new(vec![over_rate], ok_whoami());
    let client = client(&script);
    match client.sdk().whoami().send().await.map_err(Error::from) {
        Err(Error::QuotaExhausted {
            class, resets_in, ..
        }) => {
            assert_eq!(class, Some(LimitClass::General));
            assert_eq!(resets_in, Some(secs(3600)));
        }
        other => panic!("{other:?}"),
    }
    match client.sdk().whoami().send().await.map_err(Error::from) {
        Err(Error::QuotaExhausted { error: None, .. }) => {}
        other => panic!("expected a local refusal, got {other:?}"),
    }
    assert_eq!(
        script.seen().len(),
        1,
        "nothing sent after the quota ran out"
    );
}

#[tokio::test(start_paused = true)]
async fn post_is_not_resent_after_a_server_error() {
    let script = Script::new(vec![], Answer::empty(500));
    let result = client(&script)
        .sdk()
        .ask_assistant()
        .body(pubapi_sdk::types::AssistantAskRequest::builder().question("What changed?"))
        .send()
        .await
        .map_err(Error::from);
    assert!(
        matches!(result, Err(Error::Server(ref e)) if e.status() == 500),
        "{result:?}"
    );
    assert_eq!(script.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn get_is_retried_after_server_errors_with_bounded_jittered_backoff() {
    let script = Script::new(vec![Answer::empty(500), Answer::empty(503)], ok_whoami());
    client(&script).sdk().whoami().send().await.unwrap();
    let times = script.times();
    assert_eq!(times.len(), 3);
    // Full jitter: the first wait is within [0, 1 s], the second within [0, 2 s], and the
    // per-second pacer may add up to 1 s before an attempt.
    assert!(times[1] - times[0] <= secs(1) + secs(1), "{times:?}");
    assert!(times[2] - times[1] <= secs(2) + secs(1), "{times:?}");
}

#[tokio::test(start_paused = true)]
async fn get_gives_up_after_the_configured_attempts() {
    let script = Script::new(vec![], Answer::empty(503));
    let result = client_with(&script, RetryConfig::default().with_max_attempts(4))
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::Server(_))), "{result:?}");
    assert_eq!(script.seen().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn ai_429_is_retried_no_earlier_than_retry_after() {
    let script = Script::new(
        vec![Answer::empty(429).header("retry-after", "7")],
        Answer::json(200, "[]"),
    );
    let agents = client(&script).sdk().list_agents().send().await.unwrap();
    assert!(agents.is_empty());
    assert_eq!(script.times(), vec![secs(0), secs(7)]);
}

#[tokio::test(start_paused = true)]
async fn retry_after_beyond_the_cap_is_returned_not_waited() {
    let script = Script::new(
        vec![],
        Answer::empty(403)
            .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
            .header("retry-after", "600"),
    );
    let result = client(&script)
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);
    match result {
        Err(Error::Throttled { retry_after, .. }) => assert_eq!(retry_after, Some(secs(600))),
        other => panic!("{other:?}"),
    }
    assert_eq!(script.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn operation_deadline_bounds_retries() {
    let script = Script::new(
        vec![],
        Answer::empty(403)
            .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
            .header("retry-after", "4"),
    );
    let retry = RetryConfig::default()
        .with_max_attempts(100)
        .with_operation_timeout(secs(10));
    let started = Instant::now();
    let result = client_with(&script, retry)
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::Throttled { .. })), "{result:?}");
    assert!(started.elapsed() <= secs(10));
    assert_eq!(script.times(), vec![secs(0), secs(4), secs(8)]);
}

#[tokio::test(start_paused = true)]
async fn unauthorized_says_the_token_is_invalid_or_revoked() {
    let script = Script::new(
        vec![],
        Answer::json(
            401,
            r#"{"code":"gateway_error_forbidden_not_authorized","message":"Token invalid"}"#,
        ),
    );
    let result = client(&script)
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from);
    match result {
        Err(Error::Unauthorized(e)) => {
            assert_eq!(e.code(), Some("gateway_error_forbidden_not_authorized"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(script.seen().len(), 1, "a static token is not retried");
}

#[tokio::test(start_paused = true)]
async fn bearer_token_is_sent_and_marked_sensitive() {
    let script = Script::new(vec![], ok_whoami());
    client(&script).sdk().whoami().send().await.unwrap();
    let seen = &script.seen()[0];
    let auth = seen.headers.get("authorization").unwrap();
    assert_eq!(auth.to_str().unwrap(), format!("Bearer {CANARY}"));
    assert!(auth.is_sensitive());
    assert_eq!(seen.path, "/pubapi/v1/whoami");
}

#[tokio::test(start_paused = true)]
async fn impersonation_view_sends_exactly_one_header() {
    let script = Script::new(vec![], ok_whoami());
    let client = client(&script);
    client
        .act_as(ActAs::username("bob").unwrap())
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap();
    client
        .act_as(ActAs::email("carol@example.com").unwrap())
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap();
    client.sdk().whoami().send().await.unwrap();
    let seen = script.seen();
    assert_eq!(seen[0].headers.get("x-service-act-as").unwrap(), "bob");
    assert!(!seen[0].headers.contains_key("x-service-act-as-email"));
    assert_eq!(
        seen[1].headers.get("x-service-act-as-email").unwrap(),
        "carol@example.com"
    );
    assert!(!seen[1].headers.contains_key("x-service-act-as"));
    assert!(!seen[2].headers.contains_key("x-service-act-as"));
    assert!(!seen[2].headers.contains_key("x-service-act-as-email"));
    assert!(
        client.acting_as().is_none(),
        "the view did not change the client"
    );
}

#[tokio::test(start_paused = true)]
async fn per_call_impersonation_with_both_headers_sends_the_username_only() {
    let script = Script::new(vec![], ok_whoami());
    client(&script)
        .act_as(ActAs::username("view-user").unwrap())
        .sdk()
        .whoami()
        .x_service_act_as("dave")
        .x_service_act_as_email("erin@example.com")
        .send()
        .await
        .unwrap();
    let headers = &script.seen()[0].headers;
    assert_eq!(headers.get("x-service-act-as").unwrap(), "dave");
    assert!(!headers.contains_key("x-service-act-as-email"));
}

#[tokio::test(start_paused = true)]
async fn impersonated_calls_count_against_the_tokens_own_budget() {
    let script = Script::new(vec![], ok_whoami());
    let client = client(&script);
    let bob = client.act_as(ActAs::username("bob").unwrap());
    bob.sdk().whoami().send().await.unwrap();
    client.sdk().whoami().send().await.unwrap();
    assert_eq!(client.quota(LimitClass::General).used_today, Some(2));
    assert_eq!(bob.quota(LimitClass::General).used_today, Some(2));
}

#[test]
fn bad_impersonation_values_are_refused_before_any_request() {
    for bad in ["", " bob", "bob ", "bo\r\nb", "b\tob", "bøb"] {
        assert!(ActAs::username(bad).is_err(), "{bad:?}");
    }
    assert!(ActAs::email("not-an-email").is_err());
}

#[tokio::test(start_paused = true)]
async fn canary_token_never_appears_in_debug_output() {
    let script = Script::new(vec![], Answer::empty(401));
    let client = client(&script).act_as(ActAs::username("bob").unwrap());
    let error = client
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    let builder = Client::builder()
        .isolated_budget()
        .token(SecretToken::try_from(CANARY).unwrap());
    for text in [
        format!("{client:?}"),
        format!("{error:?}"),
        format!("{error}"),
        format!("{builder:?}"),
    ] {
        assert!(!text.contains(CANARY), "{text}");
        assert!(!text.contains("bob"), "impersonation value leaked: {text}");
    }
}

#[tokio::test(start_paused = true)]
async fn revoked_token_is_replaced_once_by_a_rotating_source() {
    let script = Script::new(vec![Answer::empty(401)], ok_whoami());
    let source = Arc::new(Rotating::default());
    let client = script
        .builder()
        .token_source(source.clone())
        .build()
        .unwrap();
    client.sdk().whoami().send().await.unwrap();
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].headers["authorization"], "Bearer old-token");
    assert_eq!(seen[1].headers["authorization"], "Bearer new-token");
    assert_eq!(*source.invalidated.lock().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn invalid_per_call_impersonation_is_refused_with_nothing_sent() {
    let script = Script::new(vec![], ok_whoami());
    for bad in [" dave", "dave ", "", "dåve"] {
        let result = client(&script)
            .sdk()
            .whoami()
            .x_service_act_as(bad)
            .send()
            .await
            .map_err(Error::from);
        assert!(
            matches!(result, Err(Error::InvalidInput(_))),
            "{bad:?}: {result:?}"
        );
    }
    let result = client(&script)
        .sdk()
        .whoami()
        .x_service_act_as_email("not-an-address")
        .send()
        .await
        .map_err(Error::from);
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert!(script.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn path_values_that_would_leave_their_segment_are_refused_naming_the_parameter() {
    use pubapi_sdk_ext::error::InputError;
    use pubapi_sdk_ext::path::PathError;
    let script = Script::new(vec![], Answer::empty(204));
    let client = client(&script);
    for dots in ["..", "."] {
        let result = client
            .sdk()
            .delete_webhook()
            .webhook_id(dots)
            .send()
            .await
            .map_err(Error::from);
        assert!(
            matches!(&result, Err(Error::InvalidInput(_))),
            "{dots:?}: {result:?}"
        );
    }
    for bad in ["a\\..\\..", "a\\b", "", "w1/../../v1/whoami", "a/b", "/"] {
        let result = client
            .sdk()
            .delete_webhook()
            .webhook_id(bad)
            .send()
            .await
            .map_err(Error::from);
        assert!(
            matches!(
                &result,
                Err(Error::InvalidInput(InputError::PathValue {
                    operation: "deleteWebhook",
                    parameter: "webhookId",
                    ..
                }))
            ),
            "{bad:?}: {result:?}"
        );
    }
    // A backslash and dot segments address another job on the same endpoint once a URL
    // parser reads them: refused before sending.
    let result = client
        .sdk()
        .get_audit_job()
        .id("x\\..\\job-2")
        .send()
        .await
        .map_err(Error::from);
    match result {
        Err(Error::InvalidInput(InputError::PathValue {
            parameter, error, ..
        })) => {
            assert_eq!(parameter, "id");
            assert!(matches!(error, PathError::Backslash { .. }), "{error:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(script.seen().is_empty());
    // Values that merely need encoding go through, in one segment.
    client
        .sdk()
        .delete_webhook()
        .webhook_id("w 1#3?4%5")
        .send()
        .await
        .unwrap();
    assert_eq!(
        script.seen()[0].path,
        "/pubapi/v1/webhooks/w%201%233%3F4%255"
    );
}

/// `?` turns a generated operation's error into [`Error`] with the server's status, code
/// and message: the policy read the failed body before the generated code saw it.
#[tokio::test(start_paused = true)]
async fn question_mark_converts_a_generated_error_keeping_the_servers_message() {
    async fn call(client: &Client) -> Result<(), Error> {
        client
            .sdk()
            .get_agent_request_status()
            .agent_id("agt-1")
            .request_id("r-1")
            .send()
            .await?;
        Ok(())
    }
    let script = Script::new(
        vec![Answer::json(
            404,
            r#"{"errorCode":"AGENT_NOT_FOUND","errorMessage":"no agent agt-1"}"#,
        )],
        ok_whoami(),
    );
    let error = call(&client(&script)).await.unwrap_err();
    assert!(matches!(error, Error::NotFound(_)), "{error:?}");
    assert_eq!(error.status(), Some(404));
    assert_eq!(error.code(), Some("AGENT_NOT_FOUND"));
    assert!(error.to_string().contains("no agent agt-1"), "{error}");

    // A success body that does not fit names the JSON path of the mismatch.
    let script = Script::new(vec![Answer::json(200, r#"{"username":7}"#)], ok_whoami());
    let error = client(&script)
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    match error {
        Error::Decode { path, .. } => assert_eq!(path, "username"),
        other => panic!("{other:?}"),
    }
}

/// The checks hold on every public path: the generated builders behind `Client::sdk` are
/// refused before sending, like the area handles.
#[tokio::test(start_paused = true)]
async fn the_generated_client_is_checked_like_the_handles_and_nothing_is_sent() {
    let script = Script::new(
        vec![],
        Answer::json(201, r#"{"webhookId":"w1","status":"enabled"}"#),
    );
    let client = client(&script);
    let body: pubapi_sdk::types::WebhookCreateRequest =
        serde_json::from_value(serde_json::json!({"url": "http://hooks.example.com/in"})).unwrap();
    let error = client
        .sdk()
        .create_webhook()
        .body(body)
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    match &error {
        Error::InvalidInput(pubapi_sdk_ext::error::InputError::Invalid { field, problem }) => {
            assert_eq!(*field, "url");
            assert!(problem.contains("https://"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    let error = client
        .sdk()
        .list_events_v2()
        .id(0)
        .count(std::num::NonZeroU64::new(500).unwrap())
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    assert!(error.to_string().contains("count"), "{error}");
    assert!(script.seen().is_empty(), "nothing reached the server");
}

/// A source whose first fetch takes a second (a token endpoint), and which then has its token
/// at hand.
#[derive(Debug, Default)]
struct SlowFirstFetch(std::sync::Mutex<Option<SecretToken>>);

impl pubapi_sdk_ext::TokenSource for SlowFirstFetch {
    fn token(&self) -> pubapi_sdk_ext::token::TokenFuture<'_> {
        Box::pin(async move {
            tokio::time::sleep(secs(1)).await;
            let token = SecretToken::try_from("fetched")?;
            *self.0.lock().unwrap() = Some(token.clone());
            Ok(token)
        })
    }

    fn ready(&self) -> Option<SecretToken> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_token_fetch_books_the_slot_from_when_the_token_came_not_from_the_call() {
    let script = Script::new(vec![], ok_whoami());
    let client = script
        .builder()
        .token_source(Arc::new(SlowFirstFetch::default()))
        .build()
        .unwrap();
    // The first call waits a second for its token and leaves then; the second starts just
    // after and has the token at hand: it must keep the spacing from the first's real start.
    let first = tokio::spawn({
        let client = client.clone();
        async move { client.sdk().whoami().send().await.map(|_| ()) }
    });
    tokio::time::sleep(Duration::from_millis(1001)).await;
    client.sdk().whoami().send().await.unwrap();
    first.await.unwrap().unwrap();
    assert_eq!(
        script.times(),
        [Duration::from_millis(1000), Duration::from_millis(1550)]
    );
}

/// A gateway's AI window as the platform keeps it for one token: 10 calls in any minute,
/// then 429 `ERR_403_DEVELOPER_OVER_QPS` with `Retry-After` until the oldest leaves; every
/// answer carries the day's count (`x-accesstoken-quota-current`).
#[derive(Debug, Default)]
struct AiGateway {
    accepted: Vec<Duration>,
    /// 429s answered, by process.
    throttled: [usize; 2],
}

impl AiGateway {
    fn answer(&mut self, process: usize, at: Duration) -> Answer {
        let in_minute: Vec<Duration> = self
            .accepted
            .iter()
            .copied()
            .filter(|t| at < *t + secs(60))
            .collect();
        let counters = |answer: Answer, count: usize| {
            answer
                .header("x-accesstoken-quota-allotted", "100")
                .header("x-accesstoken-quota-current", count.to_string())
        };
        if in_minute.len() >= 10 {
            self.throttled[process] += 1;
            let retry_after = (in_minute[0] + secs(60) - at).as_secs_f64().ceil() as u64;
            return counters(Answer::empty(429), self.accepted.len())
                .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
                .header("retry-after", retry_after.to_string());
        }
        self.accepted.push(at);
        counters(Answer::json(200, "[]"), self.accepted.len())
    }
}

#[tokio::test(start_paused = true)]
async fn two_processes_without_a_fleet_that_fill_the_ai_minute_get_at_most_one_429_each() {
    let gateway = Arc::new(std::sync::Mutex::new(AiGateway::default()));
    let mut set = tokio::task::JoinSet::new();
    for process in 0..2 {
        let gateway = gateway.clone();
        // Each process its own pacer (a budget of its own), both on one token and gateway.
        let script = Script::handler(move |seen| gateway.lock().unwrap().answer(process, seen.at));
        let client = client(&script);
        set.spawn(async move {
            for _ in 0..10 {
                client.agents().list().await.unwrap();
            }
        });
    }
    set.join_all().await;
    let gateway = gateway.lock().unwrap();
    assert_eq!(gateway.accepted.len(), 20);
    assert!(gateway.throttled.iter().all(|n| *n <= 1), "{gateway:?}");
}

/// A client of the default retries, and a view of it that sends its calls once.
fn client_and_view_without_retries(script: &Arc<Script>) -> (Client, Client) {
    let client = client(script);
    let once = client.with_options(CallOptions::new().retries(0)).unwrap();
    (client, once)
}

#[tokio::test(start_paused = true)]
async fn a_per_call_option_of_no_retries_sends_an_ai_call_once_while_the_client_retries_another() {
    let throttled = || Answer::empty(429).header("retry-after", "1");
    let script = Script::new(vec![throttled(), throttled()], Answer::json(200, "[]"));
    let (client, once) = client_and_view_without_retries(&script);

    let error = once.agents().list().await.unwrap_err();
    assert_eq!(error.status(), Some(429), "{error}");
    assert_eq!(script.seen().len(), 1, "sent once");

    // The client's default (3 attempts): throttled, then the empty list.
    assert!(client.agents().list().await.unwrap().is_empty());
    assert_eq!(script.seen().len(), 3, "the client's call was sent twice");
    // One budget: the view's call counts for the client too, and only the answered
    // attempt is counted (the platform does not count a throttled one).
    assert_eq!(client.quota(LimitClass::Ai).remaining_today, Some(100 - 1));
}

/// A call the platform refused with a throttle (429, or 403 `ERR_403_DEVELOPER_OVER_QPS`)
/// was not executed, and the platform does not count it in the day's quota: nor does the
/// pacer. A day of 5 AI calls whose every other attempt is throttled still makes 5 calls
/// (it once made 3: each throttled attempt ate a call of the day).
#[tokio::test(start_paused = true)]
async fn throttled_attempts_the_platform_did_not_count_do_not_eat_the_days_budget() {
    let cases = [
        Answer::empty(429).header("retry-after", "1"),
        Answer::empty(403)
            .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
            .header("retry-after", "1"),
    ];
    for throttled in cases {
        // Each call is throttled once, then answered.
        let answers = (0..5)
            .flat_map(|_| [throttled.clone(), Answer::json(200, "[]")])
            .collect();
        let script = Script::new(answers, Answer::json(200, "[]"));
        let client = script
            .builder()
            .limits(Limits {
                ai: Budget::new(None, Some(5)),
                ..Limits::default()
            })
            .build()
            .unwrap();
        let mut done = 0;
        for _ in 0..5 {
            client.agents().list().await.unwrap();
            done += 1;
        }
        assert_eq!(done, 5);
        assert_eq!(client.quota(LimitClass::Ai).remaining_today, Some(0));
        assert_eq!(script.seen().len(), 10, "5 throttled, 5 answered");
    }
}

#[tokio::test(start_paused = true)]
async fn more_retries_per_call_than_the_client_allows_are_taken() {
    let script = Script::new(vec![Answer::empty(503); 4], ok_whoami());
    let client = client_with(&script, RetryConfig::default().with_max_attempts(1));
    let patient = client.with_options(CallOptions::new().retries(4)).unwrap();
    patient.identity().whoami().await.unwrap();
    assert_eq!(script.seen().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_caller_given_request_id_is_sent_on_every_attempt_and_kept_on_the_error() {
    // As services have them: a UUID (in the case it came in), nginx's `$request_id`, a W3C
    // trace id, a token of their own.
    for text in [
        "0192F3A8-5B1C-7D2E-8F3A-9C4B5D6E7F80",
        "7f3c5e0a9b2d4c6e8f1a3b5c7d9e0f21",
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "req-42:edge/7",
    ] {
        let id: RequestId = text.parse().unwrap();
        let script = Script::new(
            vec![Answer::empty(503), Answer::empty(503)],
            Answer::json(404, r#"{"code":"not_found","message":"no such webhook"}"#),
        );
        let view = client(&script)
            .with_options(CallOptions::new().request_id(id.clone()))
            .unwrap();
        let error = view.webhooks().details("w1").await.unwrap_err();
        let seen = script.seen();
        assert_eq!(seen.len(), 3);
        for attempt in &seen {
            assert_eq!(attempt.headers["x-request-id"], text);
        }
        assert_eq!(error.request_id(), Some(id));
        assert!(
            error.to_string().ends_with(&format!("[request id {text}]")),
            "{error}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_views_request_id_goes_on_every_call_made_through_it_and_a_per_call_id_wins() {
    let inbound: RequestId = "7f3c5e0a9b2d4c6e8f1a3b5c7d9e0f21".parse().unwrap();
    let own: RequestId = "4bf92f3577b34da6a3ce929d0e0e4736".parse().unwrap();
    let script = Script::new(vec![], ok_whoami());
    let client = client(&script);
    let view = client
        .with_options(CallOptions::new().request_id(inbound.clone()))
        .unwrap();
    view.identity().whoami().await.unwrap();
    view.sdk().whoami().send().await.unwrap();
    view.with_options(CallOptions::new().request_id(own.clone()))
        .unwrap()
        .identity()
        .whoami()
        .await
        .unwrap();
    // Other options on a view of the view leave the view's id on.
    view.with_options(CallOptions::new().retries(0))
        .unwrap()
        .identity()
        .whoami()
        .await
        .unwrap();
    view.identity().whoami().await.unwrap();
    client.identity().whoami().await.unwrap();
    let sent: Vec<String> = script
        .seen()
        .iter()
        .map(|attempt| attempt.headers["x-request-id"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sent[..5],
        [
            inbound.as_str(),
            inbound.as_str(),
            own.as_str(),
            inbound.as_str(),
            inbound.as_str()
        ]
    );
    // The client itself still gives each call an id of its own.
    assert_ne!(sent[5], inbound.as_str());
    assert_eq!(sent[5].len(), 36);
}

#[tokio::test(start_paused = true)]
async fn extra_headers_of_a_view_are_sent_on_every_attempt_with_the_views_impersonation() {
    let script = Script::new(vec![Answer::empty(503)], ok_whoami());
    let view = client(&script)
        .act_as(ActAs::username("bob").unwrap())
        .with_options(
            CallOptions::new().header("x-tenant".parse().unwrap(), "blue".parse().unwrap()),
        )
        .unwrap();
    // The options stay on an act-as view of the view.
    let alice = view.act_as(ActAs::username("alice").unwrap());
    view.identity().whoami().await.unwrap();
    alice.sdk().whoami().send().await.unwrap();
    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    for (attempt, who) in seen.iter().zip(["bob", "bob", "alice"]) {
        assert_eq!(attempt.headers["x-tenant"], "blue");
        assert_eq!(attempt.headers["x-service-act-as"], who);
        assert_eq!(
            attempt.headers.get_all("x-service-act-as").iter().count(),
            1
        );
    }
}

#[tokio::test(start_paused = true)]
async fn headers_the_sdk_sets_itself_are_refused_with_nothing_sent() {
    let script = Script::new(vec![], ok_whoami());
    let client = client(&script);
    for name in [
        "authorization",
        "x-request-id",
        "x-service-act-as-email",
        "host",
    ] {
        let options = CallOptions::new().header(name.parse().unwrap(), "x".parse().unwrap());
        let error = client.with_options(options).unwrap_err();
        assert_eq!(
            error,
            CallOptionsError::ReservedHeader {
                name: name.parse().unwrap()
            }
        );
        assert!(error.to_string().contains(name), "{error}");
    }
    assert!(script.seen().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_per_call_operation_timeout_shorter_than_the_retry_after_ends_the_call_at_once() {
    let throttled = || Answer::empty(429).header("retry-after", "5");
    let script = Script::new(vec![throttled(), throttled()], ok_whoami());
    let client = client(&script);
    let hurried = client
        .with_options(CallOptions::new().operation_timeout(secs(3)))
        .unwrap();
    let started = Instant::now();
    let error = hurried.identity().whoami().await.unwrap_err();
    assert_eq!(error.status(), Some(429));
    assert_eq!((script.seen().len(), started.elapsed()), (1, secs(0)));
    // The client's own deadline (180 s) waits the 5 seconds.
    client.identity().whoami().await.unwrap();
    let times = script.times();
    assert_eq!(times.len(), 3);
    assert_eq!(times[2] - times[1], secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_success_status_the_spec_does_not_document_is_an_error_with_the_calls_request_id() {
    for status in [201, 202, 204] {
        let script = Script::new(vec![], Answer::empty(status));
        let error = client(&script)
            .identity()
            .whoami()
            .await
            .expect_err("whoami documents 200 only");
        let sent = script.seen()[0].headers["x-request-id"].clone();
        assert_eq!(error.status(), Some(status), "{error}");
        assert_eq!(
            error.request_id().map(|id| id.to_string()).as_deref(),
            Some(sent.to_str().unwrap()),
            "{status}: {error:?}"
        );
    }
}

/// Adds `x-tenant: blue` before every attempt, tries to change the token, and notes what it
/// saw (`name.before n id`, `name.after n status`) in `log`.
#[derive(Debug)]
struct Noting {
    name: &'static str,
    log: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Interceptor for Noting {
    fn before_send(&self, attempt: &Attempt<'_>, headers: &mut AttemptHeaders<'_>) {
        headers
            .append("x-tenant".parse().unwrap(), "blue".parse().unwrap())
            .unwrap();
        let token = headers.insert(
            "authorization".parse().unwrap(),
            "Bearer x".parse().unwrap(),
        );
        assert!(token.is_err(), "the token is the sdk's");
        let id = attempt.request_id().unwrap();
        self.log.lock().unwrap().push(format!(
            "{}.before {} {} {id}",
            self.name,
            attempt.operation(),
            attempt.number()
        ));
    }

    fn after_receive(
        &self,
        attempt: &Attempt<'_>,
        answer: &mut pubapi_sdk_ext::reqwest::Result<pubapi_sdk_ext::reqwest::Response>,
    ) {
        let status = answer.as_ref().unwrap().status().as_u16();
        self.log
            .lock()
            .unwrap()
            .push(format!("{}.after {} {status}", self.name, attempt.number()));
    }
}

#[tokio::test(start_paused = true)]
async fn interceptors_add_a_header_seen_once_on_every_attempt_in_order_around_it() {
    let script = Script::new(vec![Answer::empty(503), Answer::empty(503)], ok_whoami());
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let noting = |name| {
        Arc::new(Noting {
            name,
            log: log.clone(),
        })
    };
    let client = script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .interceptor(noting("outer"))
        .interceptor(noting("inner"))
        .build()
        .unwrap();
    client.identity().whoami().await.unwrap();
    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    let id = seen[0].headers["x-request-id"].to_str().unwrap().to_owned();
    for attempt in &seen {
        let tenants: Vec<_> = attempt.headers.get_all("x-tenant").iter().collect();
        assert_eq!(tenants, ["blue", "blue"], "one from each interceptor");
        assert_eq!(
            attempt.headers["authorization"],
            format!("Bearer {CANARY}").as_str()
        );
    }
    let mut expected = Vec::new();
    for (number, status) in [(1, 503), (2, 503), (3, 200)] {
        expected.extend([
            format!("outer.before whoami {number} {id}"),
            format!("inner.before whoami {number} {id}"),
            format!("inner.after {number} {status}"),
            format!("outer.after {number} {status}"),
        ]);
    }
    assert_eq!(*log.lock().unwrap(), expected);
}

/// Turns the first answer it sees into a 503.
#[derive(Debug, Default)]
struct FirstFails(std::sync::atomic::AtomicBool);

impl Interceptor for FirstFails {
    fn after_receive(
        &self,
        _attempt: &Attempt<'_>,
        answer: &mut pubapi_sdk_ext::reqwest::Result<pubapi_sdk_ext::reqwest::Response>,
    ) {
        if !self.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let failed = pubapi_sdk_ext::http::Response::builder()
                .status(503)
                .body(Vec::<u8>::new())
                .unwrap();
            *answer = Ok(failed.into());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_an_interceptor_replaces_is_retried_on_the_clients_budget() {
    let script = Script::new(vec![], ok_whoami());
    let client = script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .interceptor(Arc::new(FirstFails::default()))
        .build()
        .unwrap();
    client.identity().whoami().await.unwrap();
    let times = script.times();
    assert_eq!(times.len(), 2, "the injected 503 was retried");
    assert!(times[1] >= Duration::from_millis(550), "paced: {times:?}");
    assert_eq!(
        client.quota(LimitClass::General).remaining_today,
        Some(1000 - 2)
    );
}

/// The default limits with `general` as the general API's budget.
fn general_limit(general: Budget) -> Limits {
    Limits {
        general,
        ..Limits::default()
    }
}

/// A source whose first fetch gives a token and every later one fails (a vault sealed
/// between the call's attempts): nothing at hand, so every attempt asks.
#[derive(Debug, Default)]
struct FailsAfterFirst(std::sync::atomic::AtomicBool);

impl pubapi_sdk_ext::TokenSource for FailsAfterFirst {
    fn token(&self) -> pubapi_sdk_ext::token::TokenFuture<'_> {
        let fetched = self.0.swap(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            match fetched {
                false => SecretToken::try_from("first"),
                true => Err(pubapi_sdk_ext::token::TokenError::unavailable(
                    "vault sealed",
                )),
            }
        })
    }
}

/// A client whose retries are 100 ms apart and end within 500 ms.
fn hurried(builder: pubapi_sdk_ext::ClientBuilder) -> pubapi_sdk_ext::ClientBuilder {
    builder.retry(
        RetryConfig::default()
            .with_base_backoff(Duration::from_millis(100))
            .with_max_backoff(Duration::from_millis(100))
            .with_operation_timeout(Duration::from_millis(500)),
    )
}

/// One path by which a call that was sent ends in an error: what the server answers (in
/// order, then the fallback), how the client is set up, and the variant it ends in.
struct SentCall {
    case: &'static str,
    answers: Vec<Answer>,
    fallback: Answer,
    setup: fn(pubapi_sdk_ext::ClientBuilder) -> pubapi_sdk_ext::ClientBuilder,
    ends_in: fn(&Error) -> bool,
}

/// Every error of a call that was sent keeps the id all its attempts carried, in
/// `request_id()` and at the end of its `Display`: an answer of 400 or more, a success status
/// the spec does not document, a success whose body does not decode, and a retry refused on this side (no slot of its pacer in the
/// time left, its daily budget spent by its first attempt, no token for it).
#[tokio::test(start_paused = true)]
async fn every_error_of_a_call_that_was_sent_keeps_the_id_its_attempts_carried() {
    let over_rate = Answer::empty(403)
        .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_RATE")
        .header("retry-after", "60");
    let rows = [
        SentCall {
            case: "a server error after the retries",
            answers: vec![],
            fallback: Answer::empty(503),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::Server(_)),
        },
        SentCall {
            case: "not found",
            answers: vec![],
            fallback: Answer::empty(404),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::NotFound(_)),
        },
        SentCall {
            case: "a revoked token",
            answers: vec![],
            fallback: Answer::empty(401),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::Unauthorized(_)),
        },
        SentCall {
            case: "throttled after the retries",
            answers: vec![],
            fallback: Answer::empty(429).header("retry-after", "0"),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::Throttled { .. }),
        },
        SentCall {
            case: "the daily quota used up on the server",
            answers: vec![over_rate],
            fallback: ok_whoami(),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::QuotaExhausted { error: Some(_), .. }),
        },
        SentCall {
            case: "a success status the spec does not document",
            answers: vec![],
            fallback: Answer::empty(202),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::UnexpectedStatus(_)),
        },
        SentCall {
            case: "a success whose body does not decode",
            answers: vec![],
            fallback: Answer::json(200, r#"{"username":7}"#),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::Decode { path, .. } if path == "username"),
        },
        SentCall {
            case: "a success whose body is empty",
            answers: vec![],
            fallback: Answer::empty(200),
            setup: |b| b,
            ends_in: |e| matches!(e, Error::Decode { message, .. } if message.contains("EOF")),
        },
        SentCall {
            case: "a retry with no slot in the time left",
            answers: vec![Answer::empty(503)],
            fallback: ok_whoami(),
            setup: |b| hurried(b).limits(general_limit(Budget::new(Some(1), None))),
            ends_in: |e| matches!(e, Error::Timeout { .. }),
        },
        SentCall {
            case: "a retry with the daily budget spent",
            answers: vec![Answer::empty(503)],
            fallback: ok_whoami(),
            setup: |b| b.limits(general_limit(Budget::new(None, Some(1)))),
            ends_in: |e| matches!(e, Error::QuotaExhausted { error: None, .. }),
        },
        SentCall {
            case: "a retry whose token refresh fails",
            answers: vec![Answer::empty(503)],
            fallback: ok_whoami(),
            setup: |b| b.token_source(Arc::new(FailsAfterFirst::default())),
            ends_in: |e| {
                matches!(e, Error::RetryNotSent { error, .. }
                    if matches!(**error, pubapi_sdk_ext::error::InputError::Token(_)))
            },
        },
    ];
    for row in rows {
        let case = row.case;
        let script = Script::new(row.answers, row.fallback);
        let client = (row.setup)(script.builder()).build().unwrap();
        let error = client.identity().whoami().await.unwrap_err();
        assert!((row.ends_in)(&error), "{case}: {error:?}");
        let seen = script.seen();
        let sent = seen[0].headers["x-request-id"].to_str().unwrap().to_owned();
        assert!(
            seen.iter()
                .all(|s| s.headers["x-request-id"] == sent.as_str()),
            "{case}: one id for every attempt"
        );
        assert_eq!(
            error.request_id().map(|id| id.to_string()),
            Some(sent.clone()),
            "{case}: {error:?}"
        );
        assert!(
            error.to_string().ends_with(&format!("[request id {sent}]")),
            "{case}: {error}"
        );
    }
    // Refused before anything was sent: no id.
    let script = Script::new(vec![], ok_whoami());
    let client = script
        .builder()
        .limits(general_limit(Budget::new(None, Some(1))))
        .build()
        .unwrap();
    client.identity().whoami().await.unwrap();
    let error = client.identity().whoami().await.unwrap_err();
    assert!(
        matches!(error, Error::QuotaExhausted { error: None, .. }),
        "{error:?}"
    );
    assert_eq!(error.request_id(), None);
}
