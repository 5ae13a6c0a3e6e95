//! The blocking client on the wire (feature `blocking`): its requests pass the async client's
//! policy (token, impersonation), the escape hatch runs generated calls, clones and views
//! share the runtime, and its iterators fetch lazily. Real sockets (httpmock); the test
//! threads have no async runtime. Whole flows against the sandbox are in
//! `tests/tests/blocking.rs` of the test kit.

use httpmock::prelude::*;
use pubapi_sdk::types::HybridSearchRequest;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{ActAs, Error, SecretToken, blocking};
use serde_json::json;

const TOKEN: &str = "blocking-token";

fn client(server: &MockServer) -> blocking::Client {
    pubapi_sdk_ext::Client::builder()
        .isolated_budget()
        .base_url(&server.url("/pubapi"))
        .token(SecretToken::try_from(TOKEN).unwrap())
        .build_blocking()
        .unwrap()
}

#[test]
fn an_act_as_view_sends_the_token_and_the_impersonation_header() {
    let server = MockServer::start();
    let whoami = server.mock(|when, then| {
        when.method(GET)
            .path("/pubapi/v1/whoami")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("x-service-act-as", "bob");
        then.status(200)
            .header("content-type", "application/json")
            .json_body(json!({"username": "bob", "domain": "acme", "scopes": ["Service.admin"]}));
    });
    let client = client(&server);
    let bob = client.act_as(ActAs::username("bob").unwrap());
    let me = bob.identity().whoami().unwrap();
    assert_eq!(me.username, "bob");
    assert_eq!(bob.acting_as(), Some(&ActAs::username("bob").unwrap()));
    assert_eq!(client.acting_as(), None);
    whoami.assert_calls(1);
}

#[test]
fn the_escape_hatch_runs_a_generated_call_and_clones_outlive_the_first_handle() {
    let server = MockServer::start();
    let list = server.mock(|when, then| {
        when.method(GET).path("/pubapi/v1/webhooks");
        then.status(200)
            .header("content-type", "application/json")
            .json_body(json!([]));
    });
    let client = client(&server);
    let clone = client.clone();
    drop(client);
    let hooks = clone
        .block_on(clone.sdk().list_webhooks().send())
        .unwrap()
        .map_err(Error::from)
        .unwrap();
    assert!(hooks.is_empty());
    assert!(clone.webhooks().list().unwrap().is_empty());
    list.assert_calls(2);
}

#[test]
fn a_result_iterator_fetches_the_next_page_only_when_asked() {
    let server = MockServer::start();
    let page = |number: i64| {
        server.mock(move |when, then| {
            when.method(POST)
                .path("/pubapi/v1/hybrid-search")
                .json_body_includes(json!({"page": number}).to_string());
            then.status(200)
                .header("content-type", "application/json")
                .json_body(json!({
                    "results": [{"entryId": format!("e{number}a")}, {"entryId": format!("e{number}b")}],
                    "number": number,
                    "last": number == 1,
                }));
        })
    };
    let (first, second) = (page(0), page(1));
    let client = client(&server);
    let mut results = client
        .search()
        .results(HybridSearchRequest::new("renewal terms").unwrap());
    let entry = |item: Option<Result<pubapi_sdk::types::HybridSearchResult, Error>>| {
        item.expect("an item").expect("no error").entry_id
    };
    assert_eq!(entry(results.next()).as_deref(), Some("e0a"));
    assert_eq!(entry(results.next()).as_deref(), Some("e0b"));
    first.assert_calls(1);
    second.assert_calls(0);
    let rest: Vec<_> = results.map(|r| r.unwrap().entry_id.unwrap()).collect();
    assert_eq!(rest, ["e1a", "e1b"]);
    second.assert_calls(1);
}

#[test]
fn on_a_thread_of_a_tokio_runtime_calls_are_refused_with_a_typed_error_and_nothing_is_sent() {
    let server = MockServer::start();
    let anything = server.mock(|when, then| {
        when.any_request();
        then.status(200);
    });
    let client = client(&server);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    // Inside an async task, where blocking would panic…
    let in_task = client.clone();
    runtime.block_on(async move {
        assert!(matches!(
            in_task.identity().whoami(),
            Err(Error::InAsyncContext)
        ));
    });
    // …and on the runtime's blocking pool, where it would hold one of its threads.
    let in_pool = client.clone();
    let refused = runtime.block_on(async move {
        tokio::task::spawn_blocking(move || in_pool.webhooks().list().map(|_| ()))
            .await
            .unwrap()
    });
    assert!(matches!(refused, Err(Error::InAsyncContext)));
    // The same client works again on a thread of its own.
    drop(runtime);
    assert!(matches!(
        client.identity().whoami(),
        Err(Error::Decode { .. })
    ));
    anything.assert_calls(1);
}

#[tokio::test]
async fn build_blocking_inside_an_async_task_is_refused() {
    let built = pubapi_sdk_ext::Client::builder()
        .base_url("http://127.0.0.1:9/pubapi")
        .token(SecretToken::try_from(TOKEN).unwrap())
        .build_blocking();
    assert!(matches!(
        built,
        Err(pubapi_sdk_ext::BuildError::InAsyncContext)
    ));
}

#[test]
fn the_client_is_shared_across_threads_and_its_sequences_move_between_them() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<blocking::Client>();
    send::<blocking::Iter<pubapi_sdk::types::HybridSearchResult, Error>>();
    send::<blocking::EventStream>();
    send::<blocking::CsvRows>();
    send::<blocking::FinishedReport>();

    let server = MockServer::start();
    let whoami = server.mock(|when, then| {
        when.method(GET).path("/pubapi/v1/whoami");
        then.status(200)
            .header("content-type", "application/json")
            .json_body(json!({"username": "admin"}));
    });
    let client = client(&server);
    std::thread::scope(|threads| {
        for _ in 0..3 {
            threads.spawn(|| {
                let me = client.identity().whoami().unwrap();
                assert_eq!(me.username, "admin");
            });
        }
    });
    whoami.assert_calls(3);
}
