//! Pacing as the gateway sees it: a loopback server records when each request arrives and
//! reports the busiest rolling second and the total time against the floor of the spacing.
//!
//! 1. one client, 20 calls, every request on a new connection and every third connection
//!    accepted 80 ms late;
//! 2. four clones of one client, 20 calls together, the same server;
//! 3. a fleet of 4 OS processes sharing one token through Redis (a `redis-server` started on a
//!    loopback port), 10 calls each;
//! 4. the same fleet, 15 calls each, through the faults of the store of issue 19: killed at
//!    5 s and restarted 6 s later empty, or with its data; suspended (`SIGSTOP`) for 6 s; its
//!    answers 0 to 400 ms late for 6 s. Each row also gives the calls lost and the
//!    closest two arrivals of one process.
//!
//! `cargo bench -p pubapi-sdk-ext --features redis --bench pacing`

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Client, SecretToken};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
#[cfg(feature = "redis")]
#[path = "../tests/support/fleet_run.rs"]
mod fleet_run;
mod support;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const WHOAMI: &str =
    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#;

/// Serves whoami, one request per connection, every third connection accepted `delay` late;
/// returns the base URL and the arrival instants.
async fn serve(delay: Duration) -> (String, Arc<Mutex<Vec<Instant>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    tokio::spawn(async move {
        let mut connections = 0u64;
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            connections += 1;
            let late = connections.is_multiple_of(3);
            let seen = seen.clone();
            tokio::spawn(async move {
                if late {
                    tokio::time::sleep(delay).await;
                }
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read);
                if support::read_head(&mut lines).await.is_none() {
                    return;
                }
                seen.lock().unwrap().push(Instant::now());
                let response = format!(
                    "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{WHOAMI}",
                    WHOAMI.len()
                );
                let _ = write.write_all(response.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}/pubapi"), arrivals)
}

fn busiest_second(arrivals: &[Instant]) -> usize {
    let mut times = arrivals.to_vec();
    times.sort();
    (0..times.len())
        .map(|i| {
            times[i..]
                .iter()
                .take_while(|t| t.duration_since(times[i]) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn report(name: &str, arrivals: &[Instant], floor: Duration) {
    let first = *arrivals.iter().min().unwrap();
    let last = *arrivals.iter().max().unwrap();
    let total = last.duration_since(first);
    println!(
        "{name}: {} arrivals, busiest rolling second {}, total {:.3} s, floor {:.3} s ({:+.1} %)",
        arrivals.len(),
        busiest_second(arrivals),
        total.as_secs_f64(),
        floor.as_secs_f64(),
        (total.as_secs_f64() / floor.as_secs_f64() - 1.0) * 100.0
    );
}

fn client(base: &str, token: &str) -> Client {
    Client::builder()
        .base_url(base)
        .token(SecretToken::try_from(token).unwrap())
        .build()
        .unwrap()
}

/// The spacing of the default pacing at 2 per second.
const SPACING: Duration = Duration::from_millis(550);

async fn one_client() {
    let (base, arrivals) = serve(Duration::from_millis(80)).await;
    let client = client(&base, "pacing-one");
    for _ in 0..20 {
        client.sdk().whoami().send().await.unwrap();
    }
    report(
        "one client, 20 calls, every third connection 80 ms late",
        &arrivals.lock().unwrap(),
        SPACING * 19,
    );
}

async fn four_clones() {
    let (base, arrivals) = serve(Duration::from_millis(80)).await;
    let client = client(&base, "pacing-clones");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let client = client.clone();
        tasks.spawn(async move {
            for _ in 0..5 {
                client.sdk().whoami().send().await.unwrap();
            }
        });
    }
    tasks.join_all().await;
    report(
        "four clones of one client, 20 calls",
        &arrivals.lock().unwrap(),
        SPACING * 19,
    );
}

/// The fleet through Redis: 4 × 10 calls with the store up, then issue 19's faults of the
/// store, 4 × 15 calls each (`tests/support/fleet_run.rs`; `tests/fleet_faults.rs` asserts
/// the same runs).
#[cfg(feature = "redis")]
fn fleet_of_processes() {
    use fleet_run::{Fault, Outcome, Scenario};
    let scenarios = [
        Scenario {
            calls: 10,
            ..Scenario::four_by_fifteen(
                "fleet of 4 processes through Redis, 10 calls each",
                Fault::None,
            )
        },
        Scenario::four_by_fifteen(
            "4 x 15, store restarted empty (down 5-11 s)",
            Fault::RestartEmpty,
        ),
        Scenario::four_by_fifteen(
            "4 x 15, store restarted with its data (down 5-11 s)",
            Fault::RestartKeepingData,
        ),
        Scenario::four_by_fifteen("4 x 15, store paused (SIGSTOP 5-11 s)", Fault::Pause),
        Scenario::four_by_fifteen(
            "4 x 15, slow store (answers 0-400 ms late 5-11 s)",
            Fault::Slow,
        ),
    ];
    println!("{}", Outcome::header());
    for scenario in &scenarios {
        let outcome = fleet_run::run(scenario, &[]);
        println!("{}", outcome.row());
        if outcome.busiest_second().len() > 2 || outcome.lost() > 0 {
            println!("{}", outcome.diagnosis());
        }
    }
}

fn main() {
    #[cfg(feature = "redis")]
    fleet_run::work_if_asked();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // `cargo bench` passes `--bench`; nothing else to parse.
    runtime.block_on(one_client());
    runtime.block_on(four_clones());
    drop(runtime);
    #[cfg(feature = "redis")]
    fleet_of_processes();
    #[cfg(not(feature = "redis"))]
    println!("fleet of processes: run with --features redis");
}
