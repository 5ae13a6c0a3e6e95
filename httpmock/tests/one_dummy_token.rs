//! The README's pattern for a service's own unit tests, as users write them: many tests in
//! one binary, run in parallel threads, each with a mock server of its own and the same dummy
//! token (`"t"`), on the client's default budget. Half the mocks answer the gateway's
//! counters (a day's count of 500 general calls, 90 AI calls): the budget is the token's on
//! its domain, so no test's counters slow another test down (each of its calls leaves within
//! its own pacing, well under a second).

use httpmock::MockServer;
use pubapi_httpmock::{MockServerExt, base_url};
use pubapi_sdk_ext::{Client, SecretToken, serde_json};
use std::time::{Duration, Instant};

/// The gateway's counters on an answer of the day's `current` calls of `allotted`.
fn counted(then: httpmock::Then, allotted: u32, current: u32) -> httpmock::Then {
    then.header("x-accesstoken-quota-allotted", allotted.to_string())
        .header("x-accesstoken-quota-current", current.to_string())
        .header("x-accesstoken-qps-allotted", "2")
        .header("x-accesstoken-qps-current", "1")
}

/// Two whoami calls and two agent lists on a mock server of the test's own, with the dummy
/// token; with `counters`, every answer carries the gateway's counters. Fails when a call
/// waited for another test's budget.
async fn calls_on_a_mock_server_of_its_own(counters: bool) {
    let started = Instant::now();
    let server = MockServer::start_async().await;
    let whoami: pubapi_sdk_ext::types::Whoami = serde_json::from_str(
        r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#,
    )
    .unwrap();
    let me = server.whoami(|_, then| {
        let then = then.ok(&whoami);
        if counters {
            counted(then.into_inner(), 1000, 500);
        }
    });
    let agents = server.list_agents(|_, then| {
        let then = then.ok(&pubapi_sdk_ext::types::AgentList(Vec::new()));
        if counters {
            counted(then.into_inner(), 100, 90);
        }
    });
    let client = Client::builder()
        .base_url(&base_url(&server))
        .token(SecretToken::try_from("t").unwrap())
        .build()
        .unwrap();
    for _ in 0..2 {
        client.identity().whoami().await.unwrap();
        client.agents().list().await.unwrap();
    }
    me.assert_calls(2);
    agents.assert_calls(2);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "4 calls took {took:?}: another test's budget slowed this one"
    );
}

macro_rules! parallel_tests {
    ($($name:ident: $counters:expr,)*) => {$(
        #[tokio::test]
        async fn $name() {
            calls_on_a_mock_server_of_its_own($counters).await;
        }
    )*};
}

parallel_tests! {
    test_01: true, test_02: false, test_03: true, test_04: false, test_05: true,
    test_06: false, test_07: true, test_08: false, test_09: true, test_10: false,
    test_11: true, test_12: false, test_13: true, test_14: false, test_15: true,
    test_16: false, test_17: true, test_18: false, test_19: true, test_20: false,
}
