//! One budget per token across processes, on a real `redis-server` started on a loopback
//! port: each limiter here stands for one process of a fleet (its own state, the store shared).
#![cfg(feature = "redis")]

mod support;

use pubapi_sdk_ext::fleet::redis::{RedisBudget, RedisCheckpoints};
use pubapi_sdk_ext::fleet::{CheckpointStore, Fleet};
use pubapi_sdk_ext::limiter::RateLimiter;
use pubapi_sdk_ext::limits::LimitError;
use pubapi_sdk_ext::{Budget, LimitClass, Limits, Pacing, SecretToken};
use std::sync::Arc;
use std::time::Duration;
use support::redis_server::RedisServer;
use tokio::time::Instant;

const GENERAL: LimitClass = LimitClass::General;

fn limits(per_second: Option<u32>, per_day: Option<u32>) -> Limits {
    Limits {
        general: Budget::new(per_second, per_day),
        ai: Budget::new(None, Some(100)),
    }
}

/// One "process" of the fleet: its own limiter, the store shared through Redis.
async fn process(server: &RedisServer, token: &str, limits: Limits, pacing: Pacing) -> RateLimiter {
    let budget = RedisBudget::connect(&server.url()).await.unwrap();
    let token = SecretToken::try_from(token)
        .unwrap()
        .fingerprint_in("https://acme.test/pubapi");
    RateLimiter::in_fleet(limits, pacing, Fleet::new(Arc::new(budget)), token)
}

/// The most instants in any half-open window of `window`.
fn busiest(times: &[Instant], window: Duration) -> usize {
    let mut times = times.to_vec();
    times.sort();
    (0..times.len())
        .map(|i| {
            times[i..]
                .iter()
                .take_while(|t| **t < times[i] + window)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn four_processes_of_one_token_pace_as_one_through_redis() {
    let server = RedisServer::start();
    // 20 per second, so the test takes 2 s instead of the 20 s of the reference's 2 per second.
    let pacing = Pacing::even(Duration::from_millis(10));
    let mut fleet = Vec::new();
    for _ in 0..4 {
        fleet.push(process(&server, "fleet-token", limits(Some(20), Some(1000)), pacing).await);
    }
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for limiter in fleet {
        tasks.spawn(async move {
            let mut starts = Vec::new();
            for _ in 0..10 {
                let permit = limiter
                    .acquire(GENERAL, Duration::from_secs(30))
                    .await
                    .unwrap();
                starts.push(Instant::now());
                permit.sent();
            }
            starts
        });
    }
    let starts: Vec<Instant> = tasks.join_all().await.into_iter().flatten().collect();
    let total = starts.iter().max().unwrap().duration_since(t0);
    assert_eq!(starts.len(), 40);
    assert!(busiest(&starts, Duration::from_secs(1)) <= 20);
    // One start every 51 ms for the whole fleet: 39 gaps.
    let floor = Duration::from_millis(51 * 39);
    assert!(total >= floor - Duration::from_millis(20), "{total:?}");
    assert!(total <= floor + floor / 10, "{total:?}");
}

#[tokio::test]
async fn the_daily_window_is_one_for_the_whole_fleet() {
    let server = RedisServer::start();
    let mut fleet = Vec::new();
    for _ in 0..4 {
        fleet.push(
            process(
                &server,
                "daily-token",
                limits(None, Some(5)),
                Pacing::default(),
            )
            .await,
        );
    }
    let (mut granted, mut exhausted) = (0, 0);
    for limiter in &fleet {
        for _ in 0..2 {
            match limiter.acquire(GENERAL, Duration::from_secs(1)).await {
                Ok(permit) => {
                    granted += 1;
                    permit.sent();
                }
                Err(LimitError::DailyBudgetExhausted { .. }) => exhausted += 1,
                Err(other) => panic!("{other:?}"),
            }
        }
    }
    assert_eq!((granted, exhausted), (5, 3));
    // Another token has a day of its own.
    let other = process(
        &server,
        "another-token",
        limits(None, Some(5)),
        Pacing::default(),
    )
    .await;
    other
        .acquire(GENERAL, Duration::from_secs(1))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_unreachable_store_falls_back_to_a_share_of_the_budget_then_recovers() {
    let mut server = RedisServer::start();
    let limiter = process(
        &server,
        "outage-token",
        limits(Some(20), Some(1000)),
        Pacing::even(Duration::ZERO),
    )
    .await;
    limiter
        .acquire(GENERAL, Duration::from_secs(5))
        .await
        .unwrap()
        .sent();
    server.stop();
    // A quarter of 20 per second: one start every 200 ms, and nothing fails.
    let t0 = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..3 {
        limiter
            .acquire(GENERAL, Duration::from_secs(5))
            .await
            .unwrap()
            .sent();
        starts.push(Instant::now().duration_since(t0));
    }
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(199),
            "{starts:?}"
        );
    }
    server.restart();
    // The connection manager reconnects; bookings are in Redis again.
    let mut in_redis = false;
    for _ in 0..20 {
        limiter
            .acquire(GENERAL, Duration::from_secs(5))
            .await
            .unwrap()
            .sent();
        let client = redis::Client::open(server.url()).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("pubapi:*:general")
            .query_async(&mut connection)
            .await
            .unwrap();
        if !keys.is_empty() {
            in_redis = true;
            break;
        }
    }
    assert!(in_redis, "the fleet store is used again once it answers");
}

#[tokio::test]
async fn checkpoints_on_redis_are_seen_by_every_process_and_survive_reconnecting() {
    let server = RedisServer::start();
    let first = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), None);
    first.save("v2-permissions", 4242).await.unwrap();
    let second = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(second.load("v2-permissions").await.unwrap(), Some(4242));
    second.save("v2-permissions", i64::MIN).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), Some(i64::MIN));
}
