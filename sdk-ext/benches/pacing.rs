//! Pacing as the gateway sees it: a loopback server records when each request arrives and
//! reports the busiest rolling second and the total time against the floor of the spacing.
//!
//! 1. one client, 20 calls, every request on a new connection and every third connection
//!    accepted 80 ms late;
//! 2. four clones of one client, 20 calls together, the same server;
//! 3. a fleet of 4 OS processes sharing one token through Redis (a `redis-server` started on a
//!    loopback port), 10 calls each.
//!
//! `cargo bench -p pubapi-sdk-ext --features redis --bench pacing`

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Client, SecretToken};
#[cfg(feature = "redis")]
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
mod support;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const WHOAMI: &str =
    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#;
const WORKER: &str = "PUBAPI_PACING_WORKER";

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

#[cfg(feature = "redis")]
async fn fleet_of_processes() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut redis = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (apt-get install -y redis-server)");
    let redis_url = format!("redis://127.0.0.1:{port}/");
    let ready = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            ready.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (base, arrivals) = serve(Duration::from_millis(80)).await;
    let me = std::env::current_exe().unwrap();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&me)
                .env(WORKER, format!("{base} {redis_url}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut worker in workers {
        assert!(worker.wait().unwrap().success());
    }
    let _ = redis.kill();
    let _ = redis.wait();
    report(
        "fleet of 4 processes through Redis, 10 calls each",
        &arrivals.lock().unwrap(),
        SPACING * 39,
    );
}

#[cfg(feature = "redis")]
async fn worker(spec: &str) {
    use pubapi_sdk_ext::fleet::{Fleet, redis::RedisBudget};
    let (base, redis_url) = spec.split_once(' ').unwrap();
    let budget = RedisBudget::connect(redis_url).await.unwrap();
    let client = Client::builder()
        .base_url(base)
        .token(SecretToken::try_from("pacing-fleet").unwrap())
        .fleet(Fleet::new(Arc::new(budget)))
        .build()
        .unwrap();
    for _ in 0..10 {
        client.sdk().whoami().send().await.unwrap();
    }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if let Ok(spec) = std::env::var(WORKER) {
        #[cfg(feature = "redis")]
        runtime.block_on(worker(&spec));
        #[cfg(not(feature = "redis"))]
        let _ = spec;
        return;
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    runtime.block_on(one_client());
    runtime.block_on(four_clones());
    #[cfg(feature = "redis")]
    runtime.block_on(fleet_of_processes());
    #[cfg(not(feature = "redis"))]
    println!("fleet of processes: run with --features redis");
}
