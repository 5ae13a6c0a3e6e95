//! The API's time values read as instants through the SDK's typed accessors, against the
//! sandbox: ISO 8601 text (event `timestamp`, cursor `timestamp`, agent `lastUpdated`, report
//! `time`), epoch milliseconds (assistant `lastUpdated`, knowledge-base `createdOn`,
//! search `uploadedTimestamp`) and epoch seconds (webhook `expires`), each equal to the
//! instant the sandbox's clock stood at.

use pubapi_sdk::types::{AssistantAskRequest, HybridSearchRequest, KnowledgeBaseListRequest};
use pubapi_sdk_ext::Client;
use pubapi_sdk_ext::ai::{
    AgentRequestStatusExt, AiWait, AssistantStatusResponseExt, HybridSearchResultExt,
    KnowledgeBaseExt,
};
use pubapi_sdk_ext::events::{EventsCursorExt, EventsVersion};
use pubapi_sdk_ext::jiff::Timestamp;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::webhook::{Registration, WebhookExpiry};
use pubapi_testkit::poll_every_second;
use pubapi_testkit::sandbox::{Sandbox, SandboxConfig};
use std::time::Duration;

/// A sandbox whose AI answers at the first poll, and its admin's client.
async fn sandbox_and_admin() -> (Sandbox, Client) {
    let mut config = SandboxConfig::testing();
    config.ai.agent_polls = 0;
    config.ai.assistant_polls = 0;
    let sb = Sandbox::start(config).await;
    let client = sb.client_for("admin");
    (sb, client)
}

fn now(sb: &Sandbox) -> Timestamp {
    Timestamp::from_millisecond(sb.now_ms()).unwrap()
}

fn how() -> AiWait {
    poll_every_second(Duration::from_secs(30))
}

#[tokio::test]
async fn event_timestamp_and_cursor_timestamp_are_iso_8601_instants() {
    let (sb, client) = sandbox_and_admin().await;
    sb.activity_as("sam").create_folder("/P").unwrap();
    let event = client
        .events()
        .backfill(EventsVersion::V2, i64::MAX)
        .next()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.occurred_at(), Ok(now(&sb)));
    let cursor = client.events().cursor().await.unwrap();
    assert_eq!(cursor.timestamp_at(), Ok(Some(now(&sb))));
    sb.assert_conformant();
}

#[tokio::test]
async fn agent_last_updated_is_an_iso_8601_utc_instant_and_assistant_last_updated_epoch_ms() {
    let (sb, client) = sandbox_and_admin().await;
    let agent = client
        .agents()
        .ask_and_wait("agt-policy-helper", "Hotel costs?", how())
        .await
        .unwrap();
    // The sandbox writes the agent's time to the second.
    let whole_seconds = Timestamp::from_second(sb.now_ms().div_euclid(1000)).unwrap();
    assert_eq!(agent.result.last_updated_at(), Ok(Some(whole_seconds)));

    let request = AssistantAskRequest::new("hotel per night").unwrap();
    let answer = client
        .assistant()
        .ask_and_wait(request, how())
        .await
        .unwrap();
    assert_eq!(answer.result.last_updated_at(), Ok(Some(now(&sb))));
    sb.assert_conformant();
}

#[tokio::test]
async fn knowledge_base_created_on_and_search_upload_time_are_epoch_milliseconds() {
    let (sb, client) = sandbox_and_admin().await;
    let request = KnowledgeBaseListRequest::default();
    let page = client.knowledge_bases().page(request).await.unwrap();
    let finance = page
        .content
        .iter()
        .find(|kb| kb.name.as_deref() == Some("Finance reports"))
        .unwrap();
    let created = finance.created_at().unwrap().unwrap();
    assert_eq!(created.to_string(), "2025-01-15T09:00:00Z");

    let search = HybridSearchRequest::builder()
        .query("postmortem action items")
        .semantic_weight(0.0);
    let hits = client
        .search()
        .page(search.try_into().unwrap())
        .await
        .unwrap();
    assert!(!hits.results.is_empty(), "{hits:?}");
    for hit in &hits.results {
        let uploaded = hit.uploaded_at().unwrap().unwrap();
        assert!(uploaded <= now(&sb), "{uploaded}");
    }
    sb.assert_conformant();
}

#[tokio::test]
async fn webhook_expires_is_unix_seconds() {
    let (sb, client) = sandbox_and_admin().await;
    // A name of the documentation: there is no endpoint to check.
    let registration = Registration::new("https://hooks.example.com/in")
        .unwrap()
        .skip_endpoint_check();
    let summary = client.webhooks().create(&registration).await.unwrap();
    let expires = summary.expires_at().unwrap().unwrap();
    assert!(expires > now(&sb), "{expires}");
    assert_eq!(expires.as_millisecond(), summary.expires.unwrap() * 1000);
    let details = client
        .webhooks()
        .details(&summary.webhook_id)
        .await
        .unwrap();
    assert_eq!(details.expires_at(), Ok(Some(expires)));
    sb.assert_conformant();
}
