//! The sample history: the same events under the same ids for the same seed and end day,
//! audit records from its first day, and the configured clock taking over after it.

use pubapi_sandbox::{ClockConfig, HISTORY_START_MS, LimitsConfig, Sandbox, SandboxConfig};
use pubapi_sdk_ext::events::{EventQuery, EventsVersion};

/// 2026-02-15T09:00:00Z.
const FEB_15: i64 = 1_771_146_000_000;

fn config(start_ms: i64) -> SandboxConfig {
    SandboxConfig::default()
        .with_clock(ClockConfig::Manual { start_ms })
        .with_limits(LimitsConfig::off())
        .with_sample_history()
}

/// Every stored event as `(id, type, action, path)`, oldest first.
async fn events_of(sandbox: &Sandbox) -> Vec<(i64, String, String, String)> {
    let client = sandbox.client_for("admin");
    let cursor = client.events().cursor().await.unwrap();
    let mut after = cursor.oldest_event_id - 1;
    let mut seen = Vec::new();
    while let Some(page) = client
        .events()
        .page(EventsVersion::V2, &EventQuery::after(after))
        .await
        .unwrap()
    {
        for event in &page.events {
            seen.push((
                event.id,
                event.type_.to_string(),
                event
                    .action
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                event.data["target_path"].as_str().unwrap_or("").to_string(),
            ));
        }
        if page.latest_id <= after || page.latest_id >= cursor.latest_event_id {
            break;
        }
        after = page.latest_id;
    }
    seen
}

#[tokio::test]
async fn two_sandboxes_ending_on_the_same_day_hold_the_same_events_under_the_same_ids() {
    let first = Sandbox::start(config(FEB_15)).await;
    let second = Sandbox::start(config(FEB_15 + 3_600_000)).await;
    let (a, b) = (events_of(&first).await, events_of(&second).await);
    assert!(a.len() >= 20, "{} events", a.len());
    assert_eq!(a, b);
    let ids: Vec<i64> = a.iter().map(|e| e.0).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let kinds: std::collections::BTreeSet<&str> = a.iter().map(|e| e.1.as_str()).collect();
    assert!(
        kinds.contains("file_system") && kinds.contains("note"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn the_history_ends_where_the_configured_clock_starts() {
    let sandbox = Sandbox::start(config(FEB_15)).await;
    assert_eq!(sandbox.now_ms(), FEB_15);
    assert!(sandbox.entry("/Projects/2026-01").is_some());
    assert!(sandbox.entry("/Projects/2025-12").is_some());
    let real = Sandbox::start(
        SandboxConfig::default()
            .with_limits(LimitsConfig::off())
            .with_sample_history(),
    )
    .await;
    #[allow(
        clippy::disallowed_methods,
        reason = "the test compares the sandbox's real-time clock with the wall clock"
    )]
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (real.now_ms() - wall).abs() < 60_000,
        "a real clock runs from now"
    );
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(real.now_ms() > wall, "and keeps running");
}

#[tokio::test]
async fn a_clock_starting_before_the_history_gets_none() {
    let sandbox = Sandbox::start(config(HISTORY_START_MS - 86_400_000)).await;
    assert_eq!(sandbox.stored_events(), 0);
    assert!(sandbox.entry("/Projects").is_none());
}
