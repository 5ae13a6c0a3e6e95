//! Wire conformance of the identity area: `GET /v1/whoami` (reference 4.8, 5.4).

mod wire;

use httpmock::MockServer;
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

wire::request_tests! {
    whoami_request_full_through_an_email_view_sends_the_email_header_only:
        bob_by_email, Reply::json(200, &whoami_body()),
        |sdk| sdk.whoami()
        => Expect::get("/v1/whoami").act_as_email(wire::BOB_EMAIL);

    whoami_request_full_with_both_per_call_headers_sends_only_the_username:
        client, Reply::json(200, &whoami_body()),
        |sdk| sdk
            .whoami()
            .x_service_act_as(wire::BOB)
            .x_service_act_as_email("someone.else@acme.example.com")
        => Expect::get("/v1/whoami").act_as(wire::BOB);
}

wire::parameterless_get_tests! {
    whoami_request_full_through_a_view_sends_the_impersonation_header: bob,
    whoami_request_minimal_sends_bearer_token_and_no_impersonation,
    Reply::json(200, &whoami_body()), |sdk| sdk.whoami() => "/v1/whoami"
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

wire::error_tests! {
    whoami_errors_decode_webhooks_format_401_and_general_throttle_403:
        "whoami", [401, 403],
        |sdk| sdk.whoami();
}

#[tokio::test]
async fn whoami_forward_compat_ignores_unknown_fields() {
    wire::forward_compat!(&whoami_body(), &[""], |sdk| sdk.whoami());
}
