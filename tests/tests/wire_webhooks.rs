//! Wire conformance of the webhooks area (reference 2.9, 3, 4.8, 7): register, list, inspect,
//! enable or disable, update and delete push subscriptions.

mod wire;

use httpmock::MockServer;
use pubapi_sdk::types;
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::error_of;
use serde_json::{Value, json};
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Reply, assert_decoded};

fn summary_body(status: &str) -> Value {
    json!({"webhookId": "wh-1", "expires": 1_798_761_600_i64, "status": status})
}

fn list_body() -> Value {
    json!([
        summary_body("enabled"),
        {"webhookId": "wh-2", "expires": 1_798_848_000_i64, "status": "disabled"}
    ])
}

fn details_body() -> Value {
    json!({
        "webhookId": "wh-1",
        "url": "https://hooks.acme.example.com/pubapi",
        "eventType": ["fs:add_file", "comment:*"],
        "path": "/Shared/Contracts,/Shared/Legal",
        "authHeader": "Bearer delivery-secret",
        "expires": 1_798_761_600_i64,
        "status": "enabled"
    })
}

fn filters(names: &[&str]) -> Vec<types::WebhookEventTypeFilter> {
    names
        .iter()
        .map(|name| name.parse().expect("a name or wildcard the spec lists"))
        .collect()
}

fn create(url: &str) -> types::builder::WebhookCreateRequest {
    types::WebhookCreateRequest::builder().url(url)
}

fn update(url: &str) -> types::builder::WebhookUpdateRequest {
    types::WebhookUpdateRequest::builder().url(url)
}

fn state(value: &str) -> types::WebhookState {
    types::WebhookState::from(value)
}

/// The status change of the success tests: hook `wh-1` disabled.
fn disable(sdk: &pubapi_sdk::Client) -> pubapi_sdk::builder::SetWebhookStatus<'_> {
    sdk.set_webhook_status()
        .webhook_id("wh-1")
        .body(new_status("disabled"))
}

/// The body of `setWebhookStatus` that asks for `value`.
fn new_status(value: &str) -> types::builder::WebhookStatusRequest {
    types::WebhookStatusRequest::builder().status(state(value))
}

const HOOK_URL: &str = "https://hooks.acme.example.com/pubapi";

// ------------------------------------------------------------------ createWebhook

#[tokio::test]
async fn create_webhook_success_decodes_the_201_registration() {
    let server = MockServer::start_async().await;
    let body = summary_body("enabled");
    let _seen = wire::serve(&server, Reply::json(201, &body)).await;
    let response = wire::client(&server)
        .sdk()
        .create_webhook()
        .body(create(HOOK_URL))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let created = response.into_inner();
    assert_eq!(created.status, state("enabled"));
    assert_eq!(created.expires, Some(1_798_761_600));
    wire::assert_round_trip(&created, &body);
    assert_decoded!(created);
}

#[tokio::test]
async fn create_webhook_forward_compat_accepts_unknown_fields_and_an_unknown_status() {
    let known = summary_body("pending_verification");
    let sent = wire::with_unknown_fields(&known, &[""]);
    let created = wire::decoded!(Reply::json(201, &sent), |sdk| sdk
        .create_webhook()
        .body(create(HOOK_URL)));
    assert_eq!(created.status, state("pending_verification"));
    wire::assert_round_trip(&created, &known);
}

// ------------------------------------------------------------------ listWebhooks

#[tokio::test]
async fn list_webhooks_success_decodes_every_summary() {
    let hooks = wire::success!(list_body(), |sdk| sdk.list_webhooks());
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[1].status, state("disabled"));
}

#[tokio::test]
async fn list_webhooks_forward_compat_accepts_unknown_fields_and_an_unknown_status() {
    let mut known = list_body();
    known[1]["status"] = json!("expired");
    let sent = wire::with_unknown_fields(&known, &["/0", "/1"]);
    let hooks = wire::decoded!(Reply::json(200, &sent), |sdk| sdk.list_webhooks());
    assert_eq!(hooks[1].status, state("expired"));
    wire::assert_round_trip(&hooks, &known);
}

// ------------------------------------------------------------------ getWebhookDetails

#[tokio::test]
async fn get_webhook_details_success_decodes_the_full_registration() {
    let hook = wire::success!(details_body(), |sdk| sdk
        .get_webhook_details()
        .webhook_id("wh-1"));
    assert_eq!(hook.event_type, ["fs:add_file", "comment:*"]);
    assert_eq!(hook.auth_header.as_deref(), Some("Bearer delivery-secret"));
}

#[tokio::test]
async fn get_webhook_details_forward_compat_accepts_unknown_fields_status_and_event_names() {
    let mut known = details_body();
    known["status"] = json!("suspended");
    known["eventType"] = json!(["user:create", "workflow:*"]);
    let hook = wire::forward_compat!(&known, &[""], |sdk| sdk
        .get_webhook_details()
        .webhook_id("wh-1"));
    assert_eq!(hook.status, Some(state("suspended")));
}

// ------------------------------------------------------------------ getWebhookStatus

#[tokio::test]
async fn get_webhook_status_success_decodes_id_expiry_and_status() {
    let summary = wire::success!(summary_body("disabled"), |sdk| sdk
        .get_webhook_status()
        .webhook_id("wh-1"));
    assert_eq!(summary.status, state("disabled"));
}

/// A success body that does not fit is a decode error naming the JSON path, with the body.
#[tokio::test]
async fn get_webhook_status_success_with_a_mistyped_field_is_a_decode_error_naming_its_path() {
    let server = MockServer::start_async().await;
    let body = json!({"webhookId": "wh-1", "expires": "tomorrow", "status": "enabled"});
    let _seen = wire::serve(&server, Reply::json(200, &body)).await;
    let client = wire::client(&server);
    // `expires` is not an integer.
    let error = error_of(client.sdk().get_webhook_status().webhook_id("wh-1").send()).await;
    match error {
        Error::Decode {
            path, body: kept, ..
        } => {
            assert_eq!(path, "expires");
            assert_eq!(*kept, body.to_string());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn get_webhook_status_forward_compat_accepts_unknown_fields_and_an_unknown_status() {
    let summary = wire::forward_compat!(&summary_body("expired"), &[""], |sdk| sdk
        .get_webhook_status()
        .webhook_id("wh-1"));
    assert_eq!(summary.status, state("expired"));
}

// ------------------------------------------------------------------ setWebhookStatus

#[tokio::test]
async fn set_webhook_status_success_decodes_the_summary_with_the_new_status() {
    let summary = wire::success!(summary_body("disabled"), |sdk| disable(sdk));
    assert_eq!(summary.status, state("disabled"));
}

#[tokio::test]
async fn set_webhook_status_forward_compat_accepts_unknown_fields_and_an_unknown_status() {
    let summary = wire::forward_compat!(&summary_body("disabled_by_admin"), &[""], |sdk| disable(
        sdk
    ));
    assert_eq!(summary.status, state("disabled_by_admin"));
}

// ------------------------------------------------------------------ updateWebhook

#[tokio::test]
async fn update_webhook_success_is_a_200_without_content() {
    let answered = wire::answered!(client, Reply::status(200), |sdk| sdk
        .update_webhook()
        .webhook_id("wh-1")
        .body(update(HOOK_URL)));
    wire::assert_no_content(answered, 200);
}

/// The update answers without content; a body added later is not read.
#[tokio::test]
async fn update_webhook_forward_compat_ignores_a_body_on_the_200() {
    let sent = wire::with_unknown_fields(&details_body(), &[""]);
    let (response, _) = wire::answered!(client, Reply::json(200, &sent), |sdk| sdk
        .update_webhook()
        .webhook_id("wh-1")
        .body(update(HOOK_URL)));
    assert_eq!(response.status(), 200);
}

// ------------------------------------------------------------------ deleteWebhook

#[tokio::test]
async fn delete_webhook_success_is_a_204_without_content() {
    let answered = wire::answered!(client, Reply::status(204), |sdk| sdk
        .delete_webhook()
        .webhook_id("wh-1"));
    wire::assert_no_content(answered, 204);
}

/// The 204 has no body to extend; headers the reference does not name do not disturb it.
#[tokio::test]
async fn delete_webhook_forward_compat_ignores_unknown_headers_on_the_204() {
    let reply = Reply::status(204)
        .header("x-request-id", "r-1")
        .header("deprecation", "false");
    let (response, _) =
        wire::answered!(client, reply, |sdk| sdk.delete_webhook().webhook_id("wh-1"));
    assert_eq!(response.status(), 204);
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::parameterless_get_tests! {
    list_webhooks_request_full_through_a_view_sends_the_impersonation_header: bob_by_email,
    list_webhooks_request_minimal_sends_no_query_and_no_body,
    Reply::json(200, &list_body()), |sdk| sdk.list_webhooks() => "/v1/webhooks"
}

wire::request_tests! {
    create_webhook_request_full_sends_url_event_types_paths_and_auth_header:
        bob, Reply::json(201, &summary_body("enabled")),
        |sdk| sdk
            .create_webhook()
            .body(
                create(HOOK_URL)
                    .event_type(filters(&["fs:add_file", "fs:*", "group:create"]))
                    .path(Some("/Shared/Contracts,/Shared/Legal".parse().unwrap()))
                    .auth_header("Bearer delivery-secret".to_string()),
            )
        => Expect::post("/v1/webhooks").act_as(wire::BOB).json(json!({
        "url": HOOK_URL,
        "eventType": ["fs:add_file", "fs:*", "group:create"],
        "path": "/Shared/Contracts,/Shared/Legal",
        "authHeader": "Bearer delivery-secret"
    }));

    /// An omitted `eventType` means all events; an empty array would be refused (at least one
    /// item if given), so none is sent.
    create_webhook_request_minimal_sends_only_the_url:
        client, Reply::json(201, &summary_body("enabled")),
        |sdk| sdk.create_webhook().body(create(HOOK_URL))
        => Expect::post("/v1/webhooks").json(json!({"url": HOOK_URL}));

    get_webhook_details_request_full_encodes_the_webhook_id:
        bob, Reply::json(200, &details_body()),
        |sdk| sdk.get_webhook_details().webhook_id(AWKWARD_ID)
        => Expect::get(&format!("/v1/webhooks/{AWKWARD_ID_ENCODED}/details")).act_as(wire::BOB);

    get_webhook_details_request_minimal_sends_the_plain_id:
        client, Reply::json(200, &details_body()),
        |sdk| sdk.get_webhook_details().webhook_id("wh-1")
        => Expect::get("/v1/webhooks/wh-1/details");

    get_webhook_status_request_full_encodes_the_webhook_id:
        bob, Reply::json(200, &summary_body("enabled")),
        |sdk| sdk.get_webhook_status().webhook_id(AWKWARD_ID)
        => Expect::get(&format!("/v1/webhooks/{AWKWARD_ID_ENCODED}/status")).act_as(wire::BOB);

    get_webhook_status_request_minimal_sends_the_plain_id:
        client, Reply::json(200, &summary_body("enabled")),
        |sdk| sdk.get_webhook_status().webhook_id("wh-1")
        => Expect::get("/v1/webhooks/wh-1/status");

    set_webhook_status_request_full_encodes_the_id_and_sends_disabled:
        bob, Reply::json(200, &summary_body("disabled")),
        |sdk| sdk
            .set_webhook_status()
            .webhook_id(AWKWARD_ID)
            .body(new_status("disabled"))
        => Expect::post(&format!("/v1/webhooks/{AWKWARD_ID_ENCODED}/status"))
            .act_as(wire::BOB)
            .json(json!({"status": "disabled"}));

    set_webhook_status_request_minimal_sends_enabled:
        client, Reply::json(200, &summary_body("enabled")),
        |sdk| sdk
            .set_webhook_status()
            .webhook_id("wh-1")
            .body(new_status("enabled"))
        => Expect::post("/v1/webhooks/wh-1/status").json(json!({"status": "enabled"}));

    update_webhook_request_full_encodes_the_id_and_sends_every_field:
        bob, Reply::status(200),
        |sdk| sdk
            .update_webhook()
            .webhook_id(AWKWARD_ID)
            .body(
                update(HOOK_URL)
                    .event_type(filters(&["permission:*", "meta:add_metadata_key"]))
                    .path(Some("/Shared/Contracts".parse().unwrap()))
                    .auth_header("Bearer rotated-secret".to_string())
                    .status(state("disabled")),
            )
        => Expect::put(&format!("/v1/webhooks/{AWKWARD_ID_ENCODED}"))
            .accept_any()
            .act_as(wire::BOB)
            .json(json!({
                "url": HOOK_URL,
                "eventType": ["permission:*", "meta:add_metadata_key"],
                "path": "/Shared/Contracts",
                "authHeader": "Bearer rotated-secret",
                "status": "disabled"
            }));

    update_webhook_request_minimal_sends_only_the_url:
        client, Reply::status(200),
        |sdk| sdk.update_webhook().webhook_id("wh-1").body(update(HOOK_URL))
        => Expect::put("/v1/webhooks/wh-1")
            .accept_any()
            .json(json!({"url": HOOK_URL}));

    delete_webhook_request_full_encodes_the_webhook_id:
        bob, Reply::status(204),
        |sdk| sdk.delete_webhook().webhook_id(AWKWARD_ID)
        => Expect::delete(&format!("/v1/webhooks/{AWKWARD_ID_ENCODED}"))
            .accept_any()
            .act_as(wire::BOB);

    delete_webhook_request_minimal_sends_no_body_and_accepts_anything:
        client, Reply::status(204),
        |sdk| sdk.delete_webhook().webhook_id("wh-1")
        => Expect::delete("/v1/webhooks/wh-1").accept_any();
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    create_webhook_errors_decode_webhooks_format_including_quota_409:
        "createWebhook", [400, 401, 403, 409, 500],
        |sdk| sdk.create_webhook().body(create(HOOK_URL));

    list_webhooks_errors_decode_webhooks_format:
        "listWebhooks", [401, 403, 500],
        |sdk| sdk.list_webhooks();

    get_webhook_details_errors_decode_webhooks_format_including_unknown_hook_404:
        "getWebhookDetails", [401, 403, 404, 500],
        |sdk| sdk.get_webhook_details().webhook_id("wh-1");

    get_webhook_status_errors_decode_webhooks_format_including_unknown_hook_404:
        "getWebhookStatus", [401, 403, 404, 500],
        |sdk| sdk.get_webhook_status().webhook_id("wh-1");

    set_webhook_status_errors_decode_webhooks_format_including_invalid_status_400:
        "setWebhookStatus", [400, 401, 403, 404, 500],
        |sdk| sdk
            .set_webhook_status()
            .webhook_id("wh-1")
            .body(new_status("enabled"));

    update_webhook_errors_decode_webhooks_format:
        "updateWebhook", [400, 401, 403, 404, 500],
        |sdk| sdk.update_webhook().webhook_id("wh-1").body(update(HOOK_URL));

    delete_webhook_errors_decode_webhooks_format_including_unknown_hook_404:
        "deleteWebhook", [401, 403, 404, 500],
        |sdk| sdk.delete_webhook().webhook_id("wh-1");
}
