//! Webhooks in the sandbox (reference 2.9, 2.10, 4.8, 6.1): registration rules, listing per
//! user and client id, status, update, delete, quota, and deliveries with filters, the
//! `authorization` header, the retry schedule on the sandbox clock and disabling.

use pubapi_sdk::types::{WebhookCreateRequest, WebhookStatusRequest, WebhookUpdateRequest};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::webhook::{Delivery, EventData};
use pubapi_testkit::admin_post;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{
    Role, Sandbox, SandboxConfig, TestReceiver, UserConfig, WebhooksConfig,
};
use pubapi_testkit::sandbox_with;
use serde_json::{Value, json};
use std::time::Duration;

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

async fn register(sb: &Sandbox, user: &str, body: Value) -> String {
    let reply = sb
        .raw()
        .post("/v1/webhooks", &sb.token(user).unwrap(), &body)
        .await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["webhookId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn registration_answers_201_enabled_with_an_expiry() {
    let sb = sandbox().await;
    let reply = admin_post(&sb, "/v1/webhooks", &json!({"url": "https://hooks.example.com/in", "eventType": ["fs:*"], "path": "/P", "authHeader": "s3cret"})).await;
    assert_eq!(reply.status, 201);
    let body = reply.json();
    assert_eq!(body["status"], "enabled");
    let expires = body["expires"].as_i64().unwrap();
    assert_eq!(expires, sb.now_ms() / 1000 + 365 * 86_400);
    sb.assert_conformant();
}

#[tokio::test]
async fn registration_bodies_are_validated() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let many: Vec<String> = (0..101).map(|i| format!("/f{i}")).collect();
    let cases = [
        (json!({}), "request_schema_error"),
        (
            json!({"url": "http://hooks.example.com/in"}),
            "hook_invalid_url",
        ),
        (json!({"url": "not a url"}), "hook_invalid_url"),
        (
            json!({"url": "https://h.example.com", "eventType": []}),
            "request_schema_error",
        ),
        (
            json!({"url": "https://h.example.com", "eventType": ["fs:nope"]}),
            "request_schema_error",
        ),
        (
            json!({"url": "https://h.example.com", "eventType": ["group:*"]}),
            "request_schema_error",
        ),
        (
            json!({"url": "https://h.example.com", "path": many.join(",")}),
            "request_schema_error",
        ),
        (
            json!({"url": "https://h.example.com", "authHeader": 7}),
            "request_schema_error",
        ),
    ];
    for (body, code) in cases {
        let reply = raw.post("/v1/webhooks", &token, &body).await;
        assert_eq!(
            (reply.status, reply.json()["code"].as_str()),
            (400, Some(code)),
            "{body}"
        );
    }
    let bad_json = raw
        .request("POST", "/v1/webhooks", Some(&token))
        .body("{")
        .send()
        .await;
    assert_eq!(bad_json.json()["code"], "request_schema_error");
    let hundred: Vec<String> = (0..100).map(|i| format!("/f{i}")).collect();
    register(
        &sb,
        "admin",
        json!({"url": "https://h.example.com", "path": hundred.join(",")}),
    )
    .await;
    register(
        &sb,
        "admin",
        json!({"url": "http://127.0.0.1:9/in", "eventType": ["comment:*", "group:create"]}),
    )
    .await;
    sb.assert_conformant();
}

#[tokio::test]
async fn http_to_loopback_is_refused_outside_test_mode() {
    let mut config = SandboxConfig::testing();
    config.webhooks = WebhooksConfig {
        allow_http_loopback: false,
        ..WebhooksConfig::default()
    };
    let sb = Sandbox::start(config).await;
    let reply = admin_post(
        &sb,
        "/v1/webhooks",
        &json!({"url": "http://127.0.0.1:9/in"}),
    )
    .await;
    assert_eq!(reply.json()["code"], "hook_invalid_url");
    sb.assert_conformant();
}

#[tokio::test]
async fn list_holds_the_users_webhooks_on_the_tokens_client_id() {
    let sb = Sandbox::start(SandboxConfig::testing().with_user(
        UserConfig::new(1005, "otto", "Otto Other", Role::Standard).with_client_id("other-app"),
    ))
    .await;
    let admin_hook = register(&sb, "admin", json!({"url": "https://a.example.com"})).await;
    let sam_hook = register(&sb, "sam", json!({"url": "https://s.example.com"})).await;
    let otto_hook = register(&sb, "otto", json!({"url": "https://o.example.com"})).await;
    let ids = |reply: pubapi_testkit::sandbox::RawResponse| -> Vec<String> {
        reply
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["webhookId"].as_str().unwrap().to_string())
            .collect()
    };
    let raw = sb.raw();
    assert_eq!(
        ids(raw.get("/v1/webhooks", &sb.admin_token()).await),
        vec![admin_hook.clone()]
    );
    assert_eq!(
        ids(raw.get("/v1/webhooks", &sb.token("sam").unwrap()).await),
        vec![sam_hook.clone()]
    );
    let admin_as_sam = raw
        .request("GET", "/v1/webhooks", Some(&sb.admin_token()))
        .header("X-Service-Act-As", "sam")
        .send()
        .await;
    assert_eq!(ids(admin_as_sam), vec![sam_hook.clone()]);
    // Ids of another client id are not found.
    let otto = sb.token("otto").unwrap();
    let foreign = raw
        .get(&format!("/v1/webhooks/{admin_hook}/details"), &otto)
        .await;
    assert_eq!(
        (foreign.status, foreign.json()["code"].as_str()),
        (404, Some("hook_not_found_error"))
    );
    assert_eq!(
        raw.get(&format!("/v1/webhooks/{otto_hook}/status"), &otto)
            .await
            .status,
        200
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn details_status_update_and_delete() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let token = sb.admin_token();
    let id = register(
        &sb,
        "admin",
        json!({"url": "https://h.example.com/in", "eventType": ["fs:add_file"], "path": "/P", "authHeader": "one"}),
    )
    .await;
    let hook = format!("/v1/webhooks/{id}");
    let (details_path, status_path) = (format!("{hook}/details"), format!("{hook}/status"));
    let details = raw.get(&details_path, &token).await.json();
    assert_eq!(details["url"], "https://h.example.com/in");
    assert_eq!(details["eventType"], json!(["fs:add_file"]));
    assert_eq!(
        (details["path"].clone(), details["authHeader"].clone()),
        (json!("/P"), json!("one"))
    );
    let disabled = raw
        .post(&status_path, &token, &json!({"status": "disabled"}))
        .await;
    assert_eq!(
        (disabled.status, disabled.json()["status"].clone()),
        (200, json!("disabled"))
    );
    assert_eq!(
        raw.get(&status_path, &token).await.json()["status"],
        "disabled"
    );
    let bad_status = raw
        .post(&status_path, &token, &json!({"status": "paused"}))
        .await;
    assert_eq!(bad_status.status, 400);
    let updated = raw
        .request("PUT", &hook, Some(&token))
        .json(
            &json!({"url": "https://h.example.com/v2", "eventType": ["fs:*"], "status": "enabled"}),
        )
        .send()
        .await;
    assert_eq!((updated.status, updated.body.len()), (200, 0));
    let details = raw.get(&details_path, &token).await.json();
    assert_eq!(details["url"], "https://h.example.com/v2");
    assert_eq!(details["eventType"], json!(["fs:*"]));
    assert_eq!(details["status"], "enabled");
    assert_eq!(details["path"], "/P", "omitted fields keep their value");
    let bad_update = raw
        .request("PUT", &hook, Some(&token))
        .json(&json!({"eventType": ["fs:*"]}))
        .send()
        .await;
    assert_eq!(bad_update.json()["code"], "request_schema_error");
    let deleted = raw.request("DELETE", &hook, Some(&token)).send().await;
    assert_eq!((deleted.status, deleted.body.len()), (204, 0));
    for (method, path) in [
        ("GET", &details_path),
        ("GET", &status_path),
        ("DELETE", &hook),
    ] {
        let gone = raw.request(method, path, Some(&token)).send().await;
        assert_eq!(
            (gone.status, gone.json()["code"].as_str()),
            (404, Some("hook_not_found_error")),
            "{path}"
        );
    }
    let put_gone = raw
        .request("PUT", &hook, Some(&token))
        .json(&json!({"url": "https://h.example.com"}))
        .send()
        .await;
    assert_eq!(put_gone.status, 404);
    sb.assert_conformant();
}

#[tokio::test]
async fn the_quota_per_client_id_gives_409() {
    let sb = sandbox_with(|config| config.webhooks.quota_per_client = 2).await;
    register(&sb, "admin", json!({"url": "https://a.example.com"})).await;
    register(&sb, "sam", json!({"url": "https://b.example.com"})).await;
    let third = admin_post(
        &sb,
        "/v1/webhooks",
        &json!({"url": "https://c.example.com"}),
    )
    .await;
    assert_eq!(
        (third.status, third.json()["code"].as_str()),
        (409, Some("hook_quota_error"))
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn activity_is_delivered_with_the_authorization_header_and_filters_apply() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[]).await;
    let id = register(
        &sb,
        "admin",
        json!({"url": receiver.url(), "eventType": ["fs:add_file", "comment:*"], "path": "/In, /Also", "authHeader": "Bearer hook-secret"}),
    )
    .await;
    let sam = sb.activity_as("sam");
    sam.create_folder("/In").unwrap(); // fs:add_folder: filtered out by type
    sam.create_folder("/Out").unwrap();
    let file = sam.create_file("/In/report.txt", "q1 numbers").unwrap();
    sam.create_file("/Out/other.txt", "x").unwrap(); // filtered out by path
    sam.add_note("/In/report.txt", "please review").unwrap();
    sb.settle().await;
    let received = receiver.received();
    assert_eq!(received.len(), 2, "{received:#?}");
    assert!(
        received
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer hook-secret"))
    );
    assert!(
        received
            .iter()
            .all(|r| r.content_type.as_deref() == Some("application/json"))
    );
    let event = &received[0].body["data"][0];
    assert_eq!(event["eventType"], "fs:add_file");
    assert_eq!(event["webhookId"], id.as_str());
    assert_eq!(event["domain"], "sandbox.example.com");
    assert_eq!(event["timestamp"], sb.now_ms());
    assert_eq!(event["actionSource"], "WebUI");
    assert_eq!(event["user"]["username"], "sam");
    assert_eq!(event["user"]["id"], 1003);
    assert_eq!(
        event["data"],
        json!({"targetEntryId": file.entry_id, "targetGroupId": file.group_id, "targetFileChecksum": file.checksum, "targetPath": "/In/report.txt", "itemType": "file"})
    );
    // The receiver of pubapi-sdk-ext reads the sandbox's deliveries.
    let delivery = Delivery::from_value(received[1].body.clone()).unwrap();
    let typed: Vec<_> = delivery.events().collect();
    assert!(
        matches!(&typed[0].data, EventData::CommentSetComment(c) if c.comment == "please review")
    );
    assert_eq!(sb.counters().deliveries_succeeded, 2);
    sb.assert_conformant();
}

#[tokio::test]
async fn every_fs_event_kind_is_delivered_with_its_data() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[]).await;
    register(&sb, "admin", json!({"url": receiver.url()})).await;
    let a = sb.activity();
    a.create_folder("/D").unwrap();
    a.create_file("/D/f.txt", "one").unwrap();
    a.create_file("/D/f.txt", "two").unwrap();
    a.copy_entry("/D/f.txt", "/D/g.txt").unwrap();
    a.move_entry("/D/g.txt", "/D/h.txt").unwrap();
    a.copy_entry("/D", "/E").unwrap();
    a.move_entry("/E", "/F").unwrap();
    a.delete("/D/h.txt").unwrap();
    a.restore("/D/h.txt").unwrap();
    a.delete("/F").unwrap();
    a.change_permission("/D", "Finance", Some("Viewer"), Some("Editor"))
        .unwrap();
    a.emit("group:create", json!({"groupName": "Ops", "groupId": "g1", "members": [], "owner": "admin", "user": {"id": 1001, "fullName": "Ada Admin", "userName": "admin", "email": "admin@sandbox.example.com"}}), &[]).unwrap();
    sb.settle().await;
    let types: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| r.body["data"][0]["eventType"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types,
        [
            "fs:add_folder",
            "fs:add_file",
            "fs:add_file",
            "fs:copy_file",
            "fs:move_file",
            "fs:copy_folder",
            "fs:move_folder",
            "fs:delete_file",
            "fs:restore_from_trash",
            "fs:delete_folder",
            "permission:permission_change",
            "group:create",
        ]
    );
    let received = receiver.received();
    assert_eq!(received[2].body["data"][0]["data"]["itemType"], "version");
    let permission = &received[10].body["data"][0]["data"];
    assert_eq!(permission["groupName"], "Finance");
    assert!(permission["assignee"].is_null());
    assert_eq!(
        (
            permission["oldPrivilege"].clone(),
            permission["newPrivilege"].clone()
        ),
        (json!("Viewer"), json!("Editor"))
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn failed_deliveries_are_retried_after_1_10_and_60_minutes() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[500, 503, 404, 200]).await;
    let id = register(&sb, "admin", json!({"url": receiver.url()})).await;
    let start = sb.now_ms();
    sb.activity().create_folder("/Retry").unwrap();
    sb.settle().await;
    assert_eq!(receiver.received().len(), 1);
    sb.advance(Duration::from_secs(59));
    sb.settle().await;
    assert_eq!(receiver.received().len(), 1, "not before a minute");
    sb.advance(Duration::from_secs(1));
    sb.settle().await;
    assert_eq!(receiver.received().len(), 2);
    sb.advance(Duration::from_secs(600));
    sb.settle().await;
    assert_eq!(receiver.received().len(), 3);
    sb.advance(Duration::from_secs(3600));
    sb.settle().await;
    assert_eq!(receiver.received().len(), 4);
    let log = sb.deliveries();
    let attempts: Vec<(u32, i64, Option<u16>)> = log
        .iter()
        .map(|d| (d.attempt, (d.at_ms - start) / 1000, d.status))
        .collect();
    assert_eq!(
        attempts,
        vec![
            (1, 0, Some(500)),
            (2, 60, Some(503)),
            (3, 660, Some(404)),
            (4, 4260, Some(200))
        ]
    );
    assert!(log.iter().all(|d| d.event_id == log[0].event_id));
    let status = sb
        .raw()
        .get(&format!("/v1/webhooks/{id}/status"), &sb.admin_token())
        .await;
    assert_eq!(status.json()["status"], "enabled");
    sb.assert_conformant();
}

#[tokio::test]
async fn a_webhook_is_disabled_after_4_failed_attempts() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[500, 500, 500, 500]).await;
    let id = register(&sb, "admin", json!({"url": receiver.url()})).await;
    sb.activity().create_folder("/Fail").unwrap();
    for wait in [0, 60, 600, 3600] {
        sb.advance(Duration::from_secs(wait));
        sb.settle().await;
    }
    assert_eq!(receiver.received().len(), 4);
    let status = sb
        .raw()
        .get(&format!("/v1/webhooks/{id}/status"), &sb.admin_token())
        .await;
    assert_eq!(status.json()["status"], "disabled");
    let counters = sb.counters();
    assert_eq!(
        (counters.deliveries_failed, counters.webhooks_disabled),
        (4, 1)
    );
    // Deliveries stop while disabled and resume when enabled again.
    sb.activity().create_folder("/Quiet").unwrap();
    sb.settle().await;
    assert_eq!(receiver.received().len(), 4);
    admin_post(
        &sb,
        &format!("/v1/webhooks/{id}/status"),
        &json!({"status": "enabled"}),
    )
    .await;
    sb.activity().create_folder("/Loud").unwrap();
    sb.settle().await;
    assert_eq!(receiver.received().len(), 5);
    sb.assert_conformant();
}

#[tokio::test]
async fn disabling_cancels_pending_retries() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[500]).await;
    let id = register(&sb, "admin", json!({"url": receiver.url()})).await;
    sb.activity().create_folder("/Cancel").unwrap();
    sb.settle().await;
    assert_eq!(sb.pending_deliveries(), 1);
    admin_post(
        &sb,
        &format!("/v1/webhooks/{id}/status"),
        &json!({"status": "disabled"}),
    )
    .await;
    assert_eq!(sb.pending_deliveries(), 0);
    sb.advance(Duration::from_secs(3600));
    sb.settle().await;
    assert_eq!(receiver.received().len(), 1);
    sb.assert_conformant();
}

#[tokio::test]
async fn remote_urls_are_never_contacted_by_default() {
    let sb = sandbox().await;
    register(&sb, "admin", json!({"url": "https://hooks.example.com/in"})).await;
    sb.activity().create_folder("/Remote").unwrap();
    sb.settle().await;
    let log = sb.deliveries();
    assert_eq!(log.len(), 1);
    assert!(!log[0].delivered);
    assert!(log[0].error.as_deref().unwrap().contains("non-loopback"));
    assert_eq!(sb.pending_deliveries(), 1, "the retry is scheduled");
    sb.assert_conformant();
}

#[tokio::test]
async fn webhooks_end_to_end_through_the_client() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[]).await;
    let client = sb.client_for("sam");
    let body: WebhookCreateRequest = serde_json::from_value(
        json!({"url": receiver.url(), "eventType": ["fs:*"], "authHeader": "sam-secret"}),
    )
    .unwrap();
    let created = client
        .sdk()
        .create_webhook()
        .body(body)
        .send()
        .await
        .unwrap()
        .into_inner();
    let id = created.webhook_id;
    let listed = client
        .sdk()
        .list_webhooks()
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.0.len(), 1);
    let details = client
        .sdk()
        .get_webhook_details()
        .webhook_id(&id)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(details.auth_header.as_deref(), Some("sam-secret"));
    sb.activity_as("power").create_folder("/E2E").unwrap();
    sb.settle().await;
    assert_eq!(receiver.received().len(), 1);
    let status: WebhookStatusRequest =
        serde_json::from_value(json!({"status": "disabled"})).unwrap();
    let summary = client
        .sdk()
        .set_webhook_status()
        .webhook_id(&id)
        .body(status)
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(summary.status.to_string(), "disabled");
    let update: WebhookUpdateRequest =
        serde_json::from_value(json!({"url": receiver.url(), "status": "enabled"})).unwrap();
    client
        .sdk()
        .update_webhook()
        .webhook_id(&id)
        .body(update)
        .send()
        .await
        .unwrap();
    client
        .sdk()
        .delete_webhook()
        .webhook_id(&id)
        .send()
        .await
        .unwrap();
    let gone = error_of(client.sdk().get_webhook_status().webhook_id(&id).send()).await;
    assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
    assert_eq!(gone.code(), Some("hook_not_found_error"));
    sb.assert_conformant();
}
