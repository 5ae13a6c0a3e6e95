//! The limit holds through the failovers of a replicated Redis (issue 33): 4 OS processes
//! share one token through a Sentinel deployment (a primary, a replica, three sentinels) or a
//! Redis Cluster (three primaries, a replica each), all real servers on loopback ports, and
//! make 15 calls each at the default 2 per second; at 5 s the primary is killed (SIGKILL) or
//! a failover is requested of the sentinels. A loopback server stands in for the gateway and
//! records every arrival: at most 2 in any rolling second, no call lost, and at the end the
//! primary that took over holds all 60 starts (the processes followed the failover: without
//! the store, each would pace on its share, which keeps the limit too)
//! (`support/fleet_run.rs` runs a scenario). And a server that speaks only TLS is reached
//! through `rediss://`.
//!
//! Each failover test takes about 35 s, and they take turns (see `fleet_faults.rs`).
#![cfg(feature = "redis")]

#[path = "support/fleet_run.rs"]
mod fleet_run;

use fleet_run::redis_server::SentinelSet;
use fleet_run::{Fault, Outcome, Scenario};
use pubapi_sdk_ext::fleet::redis::RedisBudget;
use pubapi_sdk_ext::fleet::{FleetBudget, FleetErrorKind, Reservation, Reserve};
use pubapi_sdk_ext::token::TokenFingerprint;
use pubapi_sdk_ext::{Budget, LimitClass, Pacing, SecretToken};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Runs of each failover scenario. Issue 33 asks for 10; at about 38 s a run (the cluster's
/// or the sentinels' start included), 10 runs of the three scenarios take 19 minutes of a
/// shared 2-core CI machine, so the test runs each once, and `PUBAPI_FLEET_RUNS=10` runs the
/// 10 by hand (`-- --nocapture --test-threads=1` keeps the table together).
const RUNS: usize = 1;

/// Runs the scenario of `fault` ([`RUNS`] times, or `PUBAPI_FLEET_RUNS`) in the test `name`,
/// prints a row per run with the failover's duration and the longest silence of the gateway,
/// and fails with every run's arrivals when a rolling second held more than 2 arrivals or a
/// call was lost.
fn keeps_two_per_second(scenario: Scenario) {
    let header = format!(
        "{}  failover s  longest silence s  stored",
        Outcome::header()
    );
    let row = |outcome: &Outcome| {
        let silence = outcome
            .arrivals
            .windows(2)
            .map(|pair| pair[1].at - pair[0].at)
            .max()
            .unwrap_or_default();
        format!(
            "{}  {:>10.3}  {:>17.3}  {:>6}",
            outcome.row(),
            outcome.failover.unwrap_or_default().as_secs_f64(),
            silence.as_secs_f64(),
            outcome.stored.unwrap_or_default()
        )
    };
    // The processes followed the failover: the primary that took over holds every start
    // (those it had from before, those booked on it, and those the processes recorded again
    // after the failover).
    let failed = |outcome: &Outcome| {
        let followed = outcome.stored == Some(outcome.expected());
        outcome.busiest_second().len() > 2 || outcome.lost() > 0 || !followed
    };
    let (runs, failures) = fleet_run::repeat(scenario, RUNS, &header, row, failed);
    assert!(
        failures.is_empty(),
        "more than 2 arrivals in a rolling second, calls lost, or starts missing on the new \
         primary, in {} of {runs} runs\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_sentinel_primary_killed_mid_run_keeps_two_per_second() {
    keeps_two_per_second(Scenario::four_by_fifteen(
        "a_sentinel_primary_killed_mid_run_keeps_two_per_second",
        Fault::SentinelKill,
    ));
}

#[test]
fn a_failover_requested_of_the_sentinels_mid_run_keeps_two_per_second() {
    keeps_two_per_second(Scenario::four_by_fifteen(
        "a_failover_requested_of_the_sentinels_mid_run_keeps_two_per_second",
        Fault::SentinelFailover,
    ));
}

/// Issue 43's run: a failover requested at 5 s and a fifth process started at 10.5 s, while
/// the old primary still takes writes and the sentinels already name the new one.
#[test]
fn a_process_started_inside_a_requested_failovers_switch_keeps_two_per_second() {
    keeps_two_per_second(
        Scenario::four_by_fifteen(
            "a_process_started_inside_a_requested_failovers_switch_keeps_two_per_second",
            Fault::SentinelFailover,
        )
        .with_late_worker(Duration::from_millis(10_500)),
    );
}

#[test]
fn a_cluster_primary_killed_mid_run_keeps_two_per_second() {
    keeps_two_per_second(Scenario::four_by_fifteen(
        "a_cluster_primary_killed_mid_run_keeps_two_per_second",
        Fault::ClusterKill,
    ));
}

/// A `redis-server` that speaks only TLS, with a certificate for 127.0.0.1 from a CA made
/// for it by `openssl`.
struct TlsServer {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl TlsServer {
    fn start() -> TlsServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = std::env::temp_dir().join(format!("pubapi-tls-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the certificates");
        let openssl = |args: &[&str]| {
            let status = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl is installed");
            assert!(status.success(), "openssl {args:?}");
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=pubapi test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(dir.join("san.cnf"), "subjectAltName=IP:127.0.0.1\n").expect("san.cnf");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "san.cnf",
            "-out",
            "server.pem",
        ]);
        let child = Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args([
                "--tls-cert-file",
                "server.pem",
                "--tls-key-file",
                "server.key",
            ])
            .args(["--tls-ca-cert-file", "ca.pem", "--tls-auth-clients", "no"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        let server = TlsServer { child, port, dir };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn ca(&self) -> String {
        self.dir.join("ca.pem").display().to_string()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether this `redis-server` was built with TLS (Debian's is).
fn redis_server_speaks_tls() -> bool {
    Command::new("redis-server")
        .args(["--tls-port", "0", "--test-memory", "0"])
        .output()
        .is_ok()
        && Path::new("/usr/bin/openssl").exists()
}

#[tokio::test]
async fn a_tls_only_server_is_reached_through_rediss_with_its_ca_and_refused_without() {
    assert!(
        redis_server_speaks_tls(),
        "redis-server with TLS and openssl are installed"
    );
    let server = TlsServer::start();
    // The CA is not among the system's roots: the certificate is refused.
    let refused = RedisBudget::connect(&format!("rediss://127.0.0.1:{}/", server.port))
        .await
        .expect_err("a certificate from an unknown CA");
    assert_eq!(refused.kind, FleetErrorKind::Unavailable, "{refused}");
    // Plain text to a TLS port gets no answer either.
    let plain = RedisBudget::connect(&format!("redis://127.0.0.1:{}/", server.port)).await;
    assert!(plain.is_err(), "plain text reached a TLS-only server");
    // With the CA, the budget books through TLS.
    let url = format!(
        "rediss://127.0.0.1:{}/?ca={}",
        server.port,
        percent_encode(&server.ca())
    );
    let budget = RedisBudget::connect(&url).await.expect("a TLS connection");
    let token = SecretToken::try_from("tls-token")
        .expect("a token")
        .fingerprint();
    let answer = budget
        .reserve(first_booking(&token))
        .await
        .expect("a start booked through TLS");
    assert!(
        matches!(answer.reservation, Reservation::Granted { .. }),
        "{answer:?}"
    );
}

/// A process's first booking of a general start of `token` (no history, no generation known).
fn first_booking(token: &TokenFingerprint) -> Reserve<'_> {
    Reserve {
        token,
        class: LimitClass::General,
        budget: Budget::new(Some(2), Some(1000)),
        pacing: Pacing::default(),
        max_wait: Duration::from_secs(10),
        not_before: Duration::ZERO,
        book: true,
        id: 1,
        history: Some(&[]),
        generation: "",
        quiet_after_loss: Duration::from_millis(3500),
        quiet_after_new: Duration::from_millis(3500),
    }
}

/// `TIME` is read from the node that owns the token's slot, never from whichever node a
/// keyless command reaches: each primary of a cluster has a clock of its own, and a start is
/// placed on the clock of the node that books it. After a budget's first booking (its clock
/// measured three times, then the booking), no node but the primary holding the token's
/// keys has run `TIME`.
#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_budget_reads_the_clock_of_the_node_that_holds_the_tokens_keys() {
    use fleet_run::redis_server::RedisCluster;
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let budget = RedisBudget::connect(&cluster.url())
        .await
        .expect("the cluster");
    let token = SecretToken::try_from("slot-clock")
        .expect("a token")
        .fingerprint();
    tokio::task::block_in_place(|| cluster.reset_command_counts());
    let answer = budget
        .reserve(first_booking(&token))
        .await
        .expect("a start booked");
    assert!(
        matches!(answer.reservation, Reservation::Granted { .. }),
        "{answer:?}"
    );
    let (holder, readers) = tokio::task::block_in_place(|| {
        (
            cluster.primary_holding(&format!("pubapi:{{{token}}}:*")),
            cluster.nodes_that_ran("time"),
        )
    });
    let holder = holder.expect("a primary holds the token's keys");
    assert_eq!(readers, [holder], "the nodes that ran TIME");
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A stream's lease on a Sentinel deployment: what a holder's save lands on, and whether
/// every save went through.
async fn saves_through_a_requested_failover(set: &SentinelSet) -> (Duration, u16) {
    use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
    use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore};
    let store = RedisCheckpoints::connect(&set.url())
        .await
        .expect("the sentinels name the primary")
        .lease_time(Duration::from_secs(10));
    let lease = loop {
        match store.acquire("s").await.expect("an answer") {
            Acquired::Lease(lease) => break lease,
            Acquired::Busy { retry_in } => tokio::time::sleep(retry_in).await,
        }
    };
    store
        .save(&lease, 1)
        .await
        .expect("a save on the first primary");
    let old = tokio::task::block_in_place(|| set.request_failover());
    let named = std::time::Instant::now();
    tokio::task::block_in_place(|| set.wait_for_new_primary(old, Duration::from_secs(30)));
    let new = set.primary_port().expect("a new primary");
    // Saves go on as a holder makes them, one every 100 ms: none fails, and they move to the
    // new primary, while the old one still takes writes.
    for id in 2.. {
        store
            .save(&lease, id)
            .await
            .expect("a save through the switch");
        let landed = tokio::task::block_in_place(|| set.get(new, "pubapi:{s}:checkpoint"));
        if landed.as_deref() == Some(id.to_string().as_str()) {
            return (named.elapsed(), new);
        }
        assert!(
            named.elapsed() < Duration::from_secs(30),
            "the saves stayed on the old primary"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_failover_moves_the_store_to_the_new_primary_as_the_sentinels_announce_it() {
    let set = SentinelSet::start();
    let (moved_after, new) = saves_through_a_requested_failover(&set).await;
    // The sentinels named the new primary when `wait_for_new_primary` returned; the old one
    // takes writes for several seconds more (until they reconfigure it), and a store that
    // waited for an error would stay there that long.
    println!("the saves reached the new primary ({new}) {moved_after:?} after the request");
    assert!(
        moved_after < Duration::from_secs(8),
        "the saves reached the new primary only {moved_after:?} after the request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_with_their_own_password_serve_the_budget_the_stream_and_dedup() {
    use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
    use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore};
    use pubapi_sdk_ext::webhook::{Claimant, DedupKey, DedupStore, RedisDedup};
    let set = SentinelSet::start_with_passwords("data-pass", "sentinel-pass");
    let url = set.url();
    assert!(url.contains("sentinel_password="), "{url}");
    // Without the sentinels' password, they name nothing; the error does not show either.
    let without = url.split('?').next().expect("a URL").to_string();
    let refused = RedisBudget::connect(&without)
        .await
        .expect_err("sentinels that want a password");
    assert!(
        !refused.message.contains("data-pass") && !refused.message.contains("sentinel-pass"),
        "{refused}"
    );
    let budget = RedisBudget::connect(&url).await.expect("the budget");
    let token = SecretToken::try_from("sentinel-token")
        .expect("a token")
        .fingerprint();
    let answer = budget
        .reserve(first_booking(&token))
        .await
        .expect("a start booked");
    assert!(
        matches!(answer.reservation, Reservation::Granted { .. }),
        "{answer:?}"
    );
    let checkpoints = RedisCheckpoints::connect(&url)
        .await
        .expect("the checkpoints")
        .lease_time(Duration::from_millis(300));
    let lease = loop {
        match checkpoints.acquire("s").await.expect("an answer") {
            Acquired::Lease(lease) => break lease,
            Acquired::Busy { retry_in } => tokio::time::sleep(retry_in).await,
        }
    };
    checkpoints.save(&lease, 7).await.expect("a save");
    assert_eq!(checkpoints.load("s").await.expect("a load"), Some(7));
    let dedup = RedisDedup::connect(&url).await.expect("the dedup store");
    let claimant = Claimant::new("receiver");
    let key = DedupKey::event("receiver", "example.com", "evt-1");
    let claims = dedup
        .claim(&claimant, std::slice::from_ref(&key))
        .await
        .expect("a claim");
    assert_eq!(claims.len(), 1);
    dedup
        .commit(&claimant, std::slice::from_ref(&key))
        .await
        .expect("a commit");
    // And the watcher of the sentinels' announcements logs in too: a requested failover
    // moves the stream's saves.
    let (moved_after, _) = saves_through_a_requested_failover(&set).await;
    assert!(moved_after < Duration::from_secs(8), "{moved_after:?}");
}

/// A stream's lease on a Redis Cluster through the failover of the primary that holds the
/// stream's slot, a holder renewing every 200 ms and a standby asking. Killed: the standby
/// gets the stream only once the holder's hold has ended (its last renewal that went
/// through, asked a lease time before), the holder renews nothing after that, and the token
/// grows. Requested of its replica (which catches up first): the holder keeps the stream,
/// the standby waits, and takes it at once when the holder releases it.
async fn one_holder_on_a_cluster_through(kill: bool) {
    use fleet_run::redis_server::RedisCluster;
    use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
    use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore};
    use std::time::Instant;
    let mut cluster = tokio::task::block_in_place(RedisCluster::start);
    let lease_time = Duration::from_millis(1_500);
    let connect = || async {
        RedisCheckpoints::connect(&cluster.url())
            .await
            .expect("the cluster")
            .lease_time(lease_time)
    };
    let (holder, standby) = (connect().await, connect().await);
    let lease = loop {
        match holder.acquire("s").await.expect("an answer") {
            Acquired::Lease(lease) => break lease,
            Acquired::Busy { retry_in } => tokio::time::sleep(retry_in).await,
        }
    };
    holder.save(&lease, 5).await.expect("a save");
    let primary = tokio::task::block_in_place(|| cluster.primary_holding("pubapi:{s}:*"))
        .expect("a primary holds the stream's keys");
    let faulted = Instant::now();
    tokio::task::block_in_place(|| {
        if kill {
            cluster.kill(primary);
        } else {
            let replica = cluster.replica_of(primary).expect("its replica");
            cluster.request_failover(replica);
        }
        cluster.wait_for_three_primaries(Duration::from_secs(30));
    });
    if !kill {
        // A requested failover loses nothing: the new primary has the lease, the holder's
        // renewals go on there and make the record its own, and the standby waits.
        let until = Instant::now() + lease_time * 3;
        let mut renewed = 0;
        while Instant::now() < until {
            if let Ok(true) = holder.renew(&lease).await {
                renewed += 1;
            }
            assert!(
                matches!(
                    standby.acquire("s").await,
                    Ok(Acquired::Busy { .. }) | Err(_)
                ),
                "the standby took the stream from a holder that renews"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(renewed >= 10, "{renewed} renewals went through");
        holder.release(&lease).await.expect("a release");
        let taken = standby.acquire("s").await.expect("an answer");
        assert!(
            matches!(&taken, Acquired::Lease(t) if t.token > lease.token && !t.taken_over),
            "released to the standby at once: {taken:?}"
        );
        return;
    }
    let mut last_renewed = faulted;
    let mut next_renewal = Instant::now();
    let taken = loop {
        if Instant::now() >= next_renewal {
            let asked = Instant::now();
            if let Ok(true) = holder.renew(&lease).await {
                last_renewed = asked;
            }
            next_renewal = asked + Duration::from_millis(200);
        }
        if let Ok(Acquired::Lease(taken)) = standby.acquire("s").await {
            break taken;
        }
        assert!(
            faulted.elapsed() < Duration::from_secs(60),
            "the holder kept the stream for a minute: renewals went on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let taken_at = Instant::now();
    assert!(
        last_renewed + lease_time <= taken_at,
        "taken {:?} after the holder's last renewal, within its lease time",
        taken_at - last_renewed
    );
    assert!(
        !matches!(holder.renew(&lease).await, Ok(true)),
        "the old holder renewed after the takeover"
    );
    assert!(taken.token > lease.token, "{taken:?} after {lease:?}");
    println!(
        "killed: the standby took over {:?} after the fault",
        taken_at - faulted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_lease_on_a_cluster_has_one_holder_through_a_killed_primary() {
    one_holder_on_a_cluster_through(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_lease_on_a_cluster_has_one_holder_through_a_requested_failover() {
    one_holder_on_a_cluster_through(false).await;
}
