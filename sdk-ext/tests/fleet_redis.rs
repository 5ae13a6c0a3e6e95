//! The fleet's checkpoint store on a real `redis-server` started on a loopback port. (The
//! shared rate budget, where each process is a pacer of its own, is tested in
//! `src/fleet/redis.rs`: the pacer is private.)
#![cfg(feature = "redis")]

mod support;

use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore, FleetErrorKind, Lease};
use std::time::{Duration, Instant};
use support::redis_server::RedisServer;

async fn lease(store: &RedisCheckpoints, name: &str) -> Lease {
    match store.acquire(name).await.unwrap() {
        Acquired::Lease(lease) => lease,
        other => panic!("{other:?}"),
    }
}

async fn redis(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

#[tokio::test]
async fn checkpoints_on_redis_are_seen_by_every_process_and_survive_reconnecting() {
    let server = RedisServer::start();
    let first = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), None);
    let held = lease(&first, "v2-permissions").await;
    first.save(&held, 4242).await.unwrap();
    let second = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(second.load("v2-permissions").await.unwrap(), Some(4242));
    first.release(&held).await.unwrap();
    let next = lease(&second, "v2-permissions").await;
    second.save(&next, i64::MAX).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), Some(i64::MAX));
}

#[tokio::test]
async fn one_holder_at_a_time_and_a_dead_holders_lease_runs_out_to_a_larger_token() {
    let server = RedisServer::start();
    let lease_time = Duration::from_millis(600);
    let first = RedisCheckpoints::connect(&server.url())
        .await
        .unwrap()
        .lease_time(lease_time);
    let second = RedisCheckpoints::connect(&server.url())
        .await
        .unwrap()
        .lease_time(lease_time);
    let held = lease(&first, "s").await;
    assert_eq!((held.token, held.taken_over), (1, false));
    assert_eq!(held.expires_in, Some(lease_time));
    match second.acquire("s").await.unwrap() {
        Acquired::Busy { retry_in } => assert!(retry_in <= lease_time / 5, "{retry_in:?}"),
        other => panic!("{other:?}"),
    }
    // Renewed, it outlives its lease time; another stream's lease is another matter.
    tokio::time::sleep(lease_time / 2).await;
    assert!(first.renew(&held).await.unwrap());
    tokio::time::sleep(lease_time / 2).await;
    assert!(matches!(
        second.acquire("s").await.unwrap(),
        Acquired::Busy { .. }
    ));
    assert_eq!(lease(&second, "other").await.token, 1);
    // The holder stops renewing (it died): the lease runs out within the lease time.
    let stopped = Instant::now();
    let taken = loop {
        match second.acquire("s").await.unwrap() {
            Acquired::Lease(lease) => break lease,
            Acquired::Busy { retry_in } => tokio::time::sleep(retry_in).await,
        }
    };
    assert!(
        stopped.elapsed() <= lease_time + lease_time / 5,
        "{:?}",
        stopped.elapsed()
    );
    assert_eq!((taken.token, taken.taken_over), (2, true));
    assert!(!first.renew(&held).await.unwrap(), "the old lease is gone");
    // A release leaves nothing unsaved: the next holder is not told to look for a repeat.
    second.release(&taken).await.unwrap();
    let after_release = lease(&first, "s").await;
    assert_eq!((after_release.token, after_release.taken_over), (3, false));
}

#[tokio::test]
async fn saves_are_fenced_by_the_current_lease_and_never_go_back() {
    let server = RedisServer::start();
    let store = RedisCheckpoints::connect(&server.url())
        .await
        .unwrap()
        .lease_time(Duration::from_millis(300));
    let old = lease(&store, "s").await;
    store.save(&old, 10).await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let new = lease(&store, "s").await;
    assert!(new.token > old.token);
    // The stalled holder wakes up and saves: refused, whatever the id.
    for id in [9, 11, i64::MAX] {
        let refused = store.save(&old, id).await.unwrap_err();
        assert_eq!(refused.kind, FleetErrorKind::LeaseLost, "{refused}");
    }
    assert_eq!(store.load("s").await.unwrap(), Some(10));
    // Monotonic, compared exactly at the ends of the range (Lua's doubles could not).
    store.save(&new, 9).await.unwrap();
    assert_eq!(store.load("s").await.unwrap(), Some(10));
    store.save(&new, i64::MAX - 1).await.unwrap();
    store.save(&new, i64::MAX - 2).await.unwrap();
    assert_eq!(store.load("s").await.unwrap(), Some(i64::MAX - 1));
    store.save(&new, i64::MAX).await.unwrap();
    assert_eq!(store.load("s").await.unwrap(), Some(i64::MAX));
    let negative = lease(&store, "n").await;
    for (id, kept) in [
        (i64::MIN + 2, i64::MIN + 2),
        (i64::MIN, i64::MIN + 2),
        (i64::MIN + 3, i64::MIN + 3),
        (-1, -1),
        (0, 0),
        (-5, 0),
        (7, 7),
    ] {
        store.save(&negative, id).await.unwrap();
        assert_eq!(store.load("n").await.unwrap(), Some(kept), "after {id}");
    }
    // Nobody holds a lease that was never acquired.
    let forged = Lease::new("unheld", 1);
    assert_eq!(
        store.save(&forged, 1).await.unwrap_err().kind,
        FleetErrorKind::LeaseLost
    );
}

#[tokio::test]
async fn a_key_holding_no_checkpoint_is_corrupt_and_named_and_a_stopped_server_is_unavailable() {
    let mut server = RedisServer::start();
    let store = RedisCheckpoints::connect(&server.url()).await.unwrap();
    let held = lease(&store, "s").await;
    let mut raw = redis(&server).await;
    for garbage in [
        "",
        "abc",
        "12x",
        "1.5",
        "007",
        "+5",
        "-0",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
    ] {
        let _: () = redis::cmd("SET")
            .arg("pubapi:{s}:checkpoint")
            .arg(garbage)
            .query_async(&mut raw)
            .await
            .unwrap();
        for error in [
            store.load("s").await.unwrap_err(),
            store.save(&held, 5).await.unwrap_err(),
        ] {
            assert_eq!(error.kind, FleetErrorKind::Corrupt, "{garbage:?}: {error}");
            assert!(
                error.message.contains("pubapi:{s}:checkpoint"),
                "{garbage:?}: {error}"
            );
        }
    }
    let _: () = redis::cmd("DEL")
        .arg("pubapi:{s}:checkpoint")
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("pubapi:{s}:checkpoint")
        .arg("id")
        .arg(5)
        .query_async(&mut raw)
        .await
        .unwrap();
    let wrong_type = store.load("s").await.unwrap_err();
    assert_eq!(wrong_type.kind, FleetErrorKind::Corrupt, "{wrong_type}");
    server.stop();
    let down = store.load("s").await.unwrap_err();
    assert_eq!(down.kind, FleetErrorKind::Unavailable, "{down}");
}
