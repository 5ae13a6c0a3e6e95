//! Tokens, roles, scopes and impersonation of the sandbox (reference 5).

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{ActAs, Error};
use pubapi_testkit::admin_post;
use pubapi_testkit::error_of;
use pubapi_testkit::sandbox::{Sandbox, SandboxConfig, TestReceiver};
use pubapi_testkit::sandbox_with;
use serde_json::{Value, json};

async fn sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig::testing()).await
}

#[tokio::test]
async fn whoami_reports_the_identity_behind_the_token() {
    let sb = sandbox().await;
    let reply = sb.raw().get("/v1/whoami", &sb.admin_token()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"clientId": "sandbox-app", "username": "admin", "domain": "sandbox.example.com", "scopes": ["Service.webhooks"]})
    );
    let nora = sb.raw().get("/v1/whoami", &sb.token("nora").unwrap()).await;
    assert_eq!(nora.json()["scopes"], json!([]));
    assert_eq!(nora.json()["clientId"], "other-app");
    sb.assert_conformant();
}

#[tokio::test]
async fn whoami_through_the_sdk_ext_client() {
    let sb = sandbox().await;
    let me = sb
        .client_for("power")
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(me.username, "power");
    assert_eq!(me.domain.as_deref(), Some("sandbox.example.com"));
    sb.assert_conformant();
}

#[tokio::test]
async fn unknown_token_gets_401_in_the_area_format() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let ai = raw.get("/v1/ai/agents/list", "nope").await;
    assert_eq!(
        (ai.status, ai.json()["errorCode"].as_str()),
        (401, Some("UNAUTHORIZED"))
    );
    let hooks = raw.get("/v1/webhooks", "nope").await;
    assert_eq!(hooks.status, 401);
    assert_eq!(
        hooks.json()["code"],
        "gateway_error_forbidden_not_authorized"
    );
    let audit = raw.get("/v1/audit/jobs/x", "nope").await;
    assert_eq!(audit.status, 401);
    assert_eq!(audit.json()["Errors"][0]["code"], "UNAUTHORIZED");
    let events = raw.get("/v1/events/cursor", "nope").await;
    assert_eq!((events.status, events.body.len()), (401, 0));
    let missing = raw.request("GET", "/v1/whoami", None).send().await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.json()["code"],
        "gateway_error_forbidden_not_authorized"
    );
    sb.assert_conformant();
}

#[tokio::test]
async fn unknown_token_is_unauthorized_through_the_client() {
    let sb = sandbox().await;
    let error = error_of(
        sb.client_with_token("revoked-token")
            .sdk()
            .list_webhooks()
            .send(),
    )
    .await;
    assert!(matches!(error, Error::Unauthorized(_)), "{error:?}");
    assert_eq!(error.code(), Some("gateway_error_forbidden_not_authorized"));
    sb.assert_conformant();
}

fn logins_body() -> Value {
    json!({"format": "json", "date_start": "2025-03-01", "date_end": "2025-03-02", "events": ["logins"]})
}

#[tokio::test]
async fn audit_is_for_admins_and_power_users_with_reports() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let sam = raw
        .post(
            "/v1/audit/logins",
            &sb.token("sam").unwrap(),
            &logins_body(),
        )
        .await;
    assert_eq!(sam.status, 403);
    assert_eq!(sam.json()["Errors"][0]["code"], "FORBIDDEN");
    for user in ["admin", "power"] {
        let ok = raw
            .post("/v1/audit/logins", &sb.token(user).unwrap(), &logins_body())
            .await;
        assert_eq!(ok.status, 202, "{user}");
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn audit_is_refused_when_the_plan_has_no_audit_reporting() {
    let sb = sandbox_with(|config| config.audit.enabled = false).await;
    let admin = admin_post(&sb, "/v1/audit/logins", &logins_body()).await;
    assert_eq!(admin.status, 403);
    assert_eq!(admin.json()["Errors"][0]["code"], "AUDIT_NOT_ENABLED");
    sb.assert_conformant();
}

#[tokio::test]
async fn agents_answer_403_when_the_feature_is_off() {
    let sb = sandbox_with(|config| config.ai.agents_enabled = false).await;
    let list = sb.raw().get("/v1/ai/agents/list", &sb.admin_token()).await;
    assert_eq!(list.status, 403);
    assert_eq!(list.json()["errorCode"], "AGENTS_NOT_ENABLED");
    let error = error_of(sb.client_for("admin").sdk().list_agents().send()).await;
    assert!(matches!(error, Error::Forbidden { .. }), "{error:?}");
    // Other AI endpoints still work.
    let search = admin_post(&sb, "/v1/hybrid-search", &json!({"query": "hotel"})).await;
    assert_eq!(search.status, 200);
    sb.assert_conformant();
}

#[tokio::test]
async fn webhook_calls_without_the_scope_get_missing_scope_error() {
    let sb = sandbox().await;
    let nora = sb.token("nora").unwrap();
    let list = sb.raw().get("/v1/webhooks", &nora).await;
    assert_eq!(list.status, 403);
    assert_eq!(list.json()["code"], "missing_scope_error");
    let create = sb
        .raw()
        .post(
            "/v1/webhooks",
            &nora,
            &json!({"url": "https://hooks.example.com/in"}),
        )
        .await;
    assert_eq!(create.status, 403);
    // whoami needs no scope.
    assert_eq!(sb.raw().get("/v1/whoami", &nora).await.status, 200);
    sb.assert_conformant();
}

#[tokio::test]
async fn admin_impersonates_by_username_or_email_and_email_is_ignored_when_both_are_sent() {
    let sb = sandbox().await;
    let admin = sb.admin_token();
    let raw = sb.raw();
    let sam = ("X-Service-Act-As", "sam");
    let power = ("X-Service-Act-As-Email", "power@sandbox.example.com");
    for (headers, seen_as) in [
        (vec![sam], "sam"),
        (vec![power], "power"),
        (vec![sam, power], "sam"),
    ] {
        let mut whoami = raw.request("GET", "/v1/whoami", Some(&admin));
        for (name, value) in &headers {
            whoami = whoami.header(name, value);
        }
        assert_eq!(
            whoami.send().await.json()["username"],
            seen_as,
            "{headers:?}"
        );
    }
    let recorded: Vec<Option<String>> = sb
        .traffic()
        .iter()
        .map(|e| e.impersonated_by.clone())
        .collect();
    assert_eq!(recorded, vec![Some("admin".to_string()); 3]);
    sb.assert_conformant();
}

#[tokio::test]
async fn impersonation_through_the_client_runs_with_the_users_permissions() {
    let sb = sandbox().await;
    let admin = sb.client_for("admin");
    let sam = admin.act_as(ActAs::username("sam").unwrap());
    let me = sam.sdk().whoami().send().await.unwrap().into_inner();
    assert_eq!(me.username, "sam");
    // sam may not run reports, even through an admin token.
    let error = error_of(
        sam.sdk()
            .create_logins_audit()
            .body(
                serde_json::from_value::<pubapi_sdk::types::LoginsAuditRequest>(logins_body())
                    .unwrap(),
            )
            .send(),
    )
    .await;
    assert!(matches!(error, Error::Forbidden { .. }), "{error:?}");
    sb.assert_conformant();
}

#[tokio::test]
async fn impersonation_by_a_non_admin_or_of_an_unknown_user_is_refused() {
    let sb = sandbox().await;
    let raw = sb.raw();
    let sam = sb.token("sam").unwrap();
    let whoami = raw
        .request("GET", "/v1/whoami", Some(&sam))
        .header("X-Service-Act-As", "admin")
        .send()
        .await;
    assert_eq!((whoami.status, whoami.body.len()), (403, 0));
    let hooks = raw
        .request("GET", "/v1/webhooks", Some(&sam))
        .header("X-Service-Act-As", "admin")
        .send()
        .await;
    assert_eq!(hooks.status, 403);
    assert_eq!(hooks.json()["code"], "impersonation_not_allowed");
    // The assistant documents no 403: the refusal is a 401 there.
    let assistant = raw
        .request("POST", "/v1/ai/assistant/ask", Some(&sam))
        .header("X-Service-Act-As", "admin")
        .json(&json!({"question": "hi"}))
        .send()
        .await;
    assert_eq!(assistant.status, 401);
    assert_eq!(assistant.json()["errorCode"], "IMPERSONATION_NOT_ALLOWED");
    let ghost = raw
        .request("GET", "/v1/webhooks", Some(&sb.admin_token()))
        .header("X-Service-Act-As", "ghost")
        .send()
        .await;
    assert_eq!(ghost.status, 403);
    sb.assert_conformant();
}

#[tokio::test]
async fn impersonated_activity_is_delivered_with_impersonated_by() {
    let sb = sandbox().await;
    let receiver = TestReceiver::start(&[]).await;
    let created = admin_post(
        &sb,
        "/v1/webhooks",
        &json!({"url": receiver.url(), "authHeader": "secret-1"}),
    )
    .await;
    assert_eq!(created.status, 201);
    sb.activity_as("sam")
        .impersonated_by("admin")
        .create_folder("/Impersonated")
        .unwrap();
    sb.settle().await;
    let received = receiver.received();
    assert_eq!(received.len(), 1);
    let user = &received[0].body["data"][0]["user"];
    assert_eq!(user["username"], "sam");
    assert_eq!(user["impersonatedBy"], "admin");
    assert_eq!(
        user["clientIdHash"],
        pubapi_sdk_ext::webhook::client_id_hash("sandbox-app")
    );
    sb.assert_conformant();
}
