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

use fleet_run::{Fault, Outcome};
use pubapi_sdk_ext::fleet::redis::RedisBudget;
use pubapi_sdk_ext::fleet::{FleetBudget, FleetErrorKind, Reservation, Reserve};
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
fn keeps_two_per_second(name: &'static str, fault: Fault) {
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
    let (runs, failures) = fleet_run::repeat(name, fault, RUNS, &header, row, failed);
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
    keeps_two_per_second(
        "a_sentinel_primary_killed_mid_run_keeps_two_per_second",
        Fault::SentinelKill,
    );
}

#[test]
fn a_failover_requested_of_the_sentinels_mid_run_keeps_two_per_second() {
    keeps_two_per_second(
        "a_failover_requested_of_the_sentinels_mid_run_keeps_two_per_second",
        Fault::SentinelFailover,
    );
}

#[test]
fn a_cluster_primary_killed_mid_run_keeps_two_per_second() {
    keeps_two_per_second(
        "a_cluster_primary_killed_mid_run_keeps_two_per_second",
        Fault::ClusterKill,
    );
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
        .reserve(Reserve {
            token: &token,
            class: LimitClass::General,
            budget: Budget::new(Some(2), Some(1000)),
            pacing: Pacing::default(),
            max_wait: Duration::from_secs(5),
            not_before: Duration::ZERO,
            book: true,
            id: 1,
            history: Some(&[]),
            generation: "",
            quiet_after_loss: Duration::from_millis(3500),
            quiet_after_new: Duration::from_millis(3500),
        })
        .await
        .expect("a start booked through TLS");
    assert!(
        matches!(answer.reservation, Reservation::Granted { .. }),
        "{answer:?}"
    );
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
