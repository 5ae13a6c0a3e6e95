//! The fleet's checkpoint store on a real `redis-server` started on a loopback port. (The
//! shared rate budget, where each process is a pacer of its own, is tested in
//! `src/fleet/redis.rs`: the pacer is private.)
#![cfg(feature = "redis")]

mod support;

use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore, FleetErrorKind, Lease};
use std::time::{Duration, Instant};
use support::redis_server::RedisServer;

/// The lease of `name`, waiting out the quiet lease time of a stream the store has no
/// record of.
async fn lease(store: &RedisCheckpoints, name: &str) -> Lease {
    loop {
        match store.acquire(name).await.unwrap() {
            Acquired::Lease(lease) => return lease,
            Acquired::Busy { retry_in } => tokio::time::sleep(retry_in).await,
        }
    }
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
    assert!(!held.taken_over);
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
    assert!(lease(&second, "other").await.token > held.token);
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
    assert!(taken.token > held.token && taken.taken_over, "{taken:?}");
    assert!(!first.renew(&held).await.unwrap(), "the old lease is gone");
    // A release leaves nothing unsaved: the next holder is not told to look for a repeat.
    second.release(&taken).await.unwrap();
    let after_release = lease(&first, "s").await;
    assert!(after_release.token > taken.token && !after_release.taken_over);
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
    let mut raw = server.connection().await;
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

/// How the store loses its data.
#[derive(Debug, Clone, Copy)]
enum Loss {
    Flushed,
    RestartedEmpty,
}

#[tokio::test]
async fn a_store_that_lost_its_data_hands_out_no_token_twice_and_no_lease_for_a_lease_time() {
    for loss in [Loss::Flushed, Loss::RestartedEmpty] {
        let mut server = RedisServer::start();
        let lease_time = Duration::from_millis(800);
        let connect = || async {
            RedisCheckpoints::connect(&server.url())
                .await
                .unwrap()
                .lease_time(lease_time)
        };
        let (holder, standby) = (connect().await, connect().await);
        let held = lease(&holder, "s").await;
        holder.save(&held, 41).await.unwrap();
        match loss {
            Loss::Flushed => {
                let _: () = redis::cmd("FLUSHALL")
                    .query_async(&mut server.connection().await)
                    .await
                    .unwrap();
            }
            Loss::RestartedEmpty => server.restart_empty(),
        }
        // The standby finds no record of the stream: nothing for a lease time.
        let lost = Instant::now();
        let taken = loop {
            match standby.acquire("s").await {
                Ok(Acquired::Lease(lease)) => break lease,
                Ok(Acquired::Busy { retry_in }) => tokio::time::sleep(retry_in).await,
                // The connection broken by the restart is opened again.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        assert!(
            lost.elapsed() >= lease_time,
            "{loss:?}: {:?}",
            lost.elapsed()
        );
        assert!(
            taken.token > held.token,
            "{loss:?}: {taken:?} after {held:?}"
        );
        // The old holder's renewal and save are refused: its lease is not the one held.
        let mut renewed = holder.renew(&held).await;
        if renewed.is_err() {
            renewed = holder.renew(&held).await;
        }
        assert!(!renewed.unwrap(), "{loss:?}");
        let refused = holder.save(&held, 42).await.unwrap_err();
        assert_eq!(
            refused.kind,
            FleetErrorKind::LeaseLost,
            "{loss:?}: {refused}"
        );
        // The save says what it found: nothing, for the stream to report.
        assert_eq!(standby.save(&taken, 41).await.unwrap(), None, "{loss:?}");
        assert_eq!(
            standby.save(&taken, 43).await.unwrap(),
            Some(41),
            "{loss:?}"
        );
    }
}

/// Makes `replica` copy everything `primary` holds now, then stop following it (a replica
/// that lags from here on); waits until `key` has arrived.
async fn copy_then_lag(replica: &RedisServer, primary: &RedisServer, key: &str) {
    // The primary sends its data at once (it waits 5 s for more replicas by default).
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("repl-diskless-sync-delay")
        .arg("0")
        .query_async(&mut primary.connection().await)
        .await
        .unwrap();
    let mut connection = replica.connection().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port())
        .query_async(&mut connection)
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let copied: bool = redis::cmd("EXISTS")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        if copied {
            break;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("*")
                .query_async(&mut connection)
                .await
                .unwrap();
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut connection)
                .await
                .unwrap();
            panic!("{key} did not reach the replica: it holds {keys:?}\n{info}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut connection)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_promoted_replica_without_the_current_lease_grants_none_for_a_lease_time() {
    let (primary, replica) = (RedisServer::start(), RedisServer::start());
    let lease_time = Duration::from_millis(600);
    let on = |server: &RedisServer| {
        let url = server.url();
        async move {
            RedisCheckpoints::connect(&url)
                .await
                .unwrap()
                .lease_time(lease_time)
        }
    };
    let (old_primary, new_primary) = (on(&primary).await, on(&replica).await);
    let first = lease(&old_primary, "s").await;
    old_primary.save(&first, 10).await.unwrap();
    // The replica has the stream's fence and the first lease, then falls behind: the first
    // holder stalls past its lease, and a second takes the stream on the primary.
    copy_then_lag(&replica, &primary, "pubapi:{s}:lease:fence").await;
    tokio::time::sleep(lease_time + Duration::from_millis(50)).await;
    let current = lease(&old_primary, "s").await;
    assert!(current.token > first.token);
    // The replica is promoted (the primary died): it knows the stream, not the current lease.
    let asked = Instant::now();
    let taken = lease(&new_primary, "s").await;
    assert!(
        asked.elapsed() >= lease_time,
        "granted after {:?}, while {current:?} may still be handed out",
        asked.elapsed()
    );
    assert!(taken.token > first.token, "{taken:?} after {first:?}");
    // The holder that moves to the new primary renews nothing there: it stops.
    assert!(!new_primary.renew(&current).await.unwrap());
}

#[tokio::test]
async fn a_holder_that_renews_on_the_promoted_replica_keeps_the_stream_and_a_standby_waits() {
    let (primary, replica) = (RedisServer::start(), RedisServer::start());
    let lease_time = Duration::from_millis(1500);
    let connect = |url: String| async move {
        RedisCheckpoints::connect(&url)
            .await
            .unwrap()
            .lease_time(lease_time)
    };
    let old_primary = connect(primary.url()).await;
    let held = lease(&old_primary, "s").await;
    // Everything replicated, the lease included: the promoted replica holds it.
    copy_then_lag(&replica, &primary, "pubapi:{s}:lease").await;
    let (holder, standby) = (connect(replica.url()).await, connect(replica.url()).await);
    assert!(
        holder.renew(&held).await.unwrap(),
        "the same lease, renewed"
    );
    assert!(matches!(
        standby.acquire("s").await.unwrap(),
        Acquired::Busy { .. }
    ));
    // Released on the new server, which recorded it as its own: taken at once.
    holder.release(&held).await.unwrap();
    let taken = standby.acquire("s").await.unwrap();
    assert!(
        matches!(&taken, Acquired::Lease(lease) if lease.token > held.token && !lease.taken_over),
        "{taken:?}"
    );
}
