//! Wire conformance of the identity area: `GET /v1/whoami` (reference 4.8, 5.4).

mod wire;

use httpmock::MockServer;
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{Expect, Reply, assert_decoded};

fn whoami_body() -> Value {
    json!({
        "clientId": "c-8f14e45f",
        "username": "alice",
        "domain": "acme.example.com",
        "scopes": ["Service.webhooks", "Service.files"]
    })
}

#[tokio::test]
async fn whoami_request_full_through_a_view_sends_the_impersonation_header() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &whoami_body())).await;
    wire::bob(&server).sdk().whoami().send().await.unwrap();
    seen.assert_only(Expect::get("/v1/whoami").act_as(wire::BOB))
        .await;
}

#[tokio::test]
async fn whoami_request_full_through_an_email_view_sends_the_email_header_only() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &whoami_body())).await;
    wire::bob_by_email(&server)
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap();
    seen.assert_only(Expect::get("/v1/whoami").act_as_email(wire::BOB_EMAIL))
        .await;
}

#[tokio::test]
async fn whoami_request_full_with_both_per_call_headers_sends_only_the_username() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &whoami_body())).await;
    wire::client(&server)
        .sdk()
        .whoami()
        .x_service_act_as(wire::BOB)
        .x_service_act_as_email("someone.else@acme.example.com")
        .send()
        .await
        .unwrap();
    seen.assert_only(Expect::get("/v1/whoami").act_as(wire::BOB))
        .await;
}

#[tokio::test]
async fn whoami_request_minimal_sends_bearer_token_and_no_impersonation() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::json(200, &whoami_body())).await;
    wire::client(&server).sdk().whoami().send().await.unwrap();
    seen.assert_only(Expect::get("/v1/whoami")).await;
}

#[tokio::test]
async fn whoami_success_decodes_client_id_username_domain_and_scopes() {
    let server = MockServer::start_async().await;
    let body = whoami_body();
    let _seen = wire::serve(&server, Reply::json(200, &body)).await;
    let response = wire::client(&server).sdk().whoami().send().await.unwrap();
    assert_eq!(response.status(), 200);
    let me = response.into_inner();
    assert_eq!(me.username, "alice");
    assert_eq!(me.scopes, ["Service.webhooks", "Service.files"]);
    wire::assert_round_trip(&me, &body);
    assert_decoded!(me);
}

#[tokio::test]
async fn whoami_errors_decode_webhooks_format_401_and_general_throttle_403() {
    wire::assert_errors("whoami", &[401, 403], |client| async move {
        client
            .sdk()
            .whoami()
            .send()
            .await
            .map_err(Error::from)
            .map(drop)
    })
    .await;
}

#[tokio::test]
async fn whoami_forward_compat_ignores_unknown_fields() {
    let server = MockServer::start_async().await;
    let known = whoami_body();
    let sent = wire::with_unknown_fields(&known, &[""]);
    let _seen = wire::serve(&server, Reply::json(200, &sent)).await;
    let me = wire::client(&server)
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap()
        .into_inner();
    wire::assert_round_trip(&me, &known);
}
