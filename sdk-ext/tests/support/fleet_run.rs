//! One run of a fleet as production has it, seen from the gateway: worker OS processes share
//! one token through a real `redis-server`, a loopback server stands in for the gateway and
//! records when each request arrives, and the store suffers a fault mid-run (killed and
//! restarted, with or without its data, suspended, slow to answer).
//!
//! The workers are this executable run again with [`WORKER`] set: [`run`] (and a
//! benchmark's `main`, through [`work_if_asked`]) does a worker's job instead and exits.
//! Each worker builds a default client (the reference's 2 per second) in the fleet, makes its
//! calls back to back, and prints how many succeeded. Its requests carry its number in
//! [`WORKER_HEADER`] (added by the transport, after the limiter), so an arrival names its
//! sender.
//!
//! Included by path by `tests/fleet_faults.rs` and `benches/pacing.rs`.

#[path = "redis_server.rs"]
pub mod redis_server;

use pubapi_sdk::hooks::BoxFuture;
use pubapi_sdk_ext::fleet::{Fleet, redis::RedisBudget};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Client, Limits, Pacing, SecretToken, Transport};
use redis_server::{RedisCluster, RedisServer, SentinelSet};
use std::fmt::Write as _;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Set in a worker's environment: `<worker> <calls> <base url> <redis url>`.
pub const WORKER: &str = "PUBAPI_FLEET_WORKER";
/// The header naming the worker that sent a request.
pub const WORKER_HEADER: &str = "x-fleet-worker";
/// How a worker's report line on stdout starts.
const REPORT: &str = "fleet-worker";
/// How long the workers of a run may take before they are killed and their calls counted lost.
const RUN_DEADLINE: Duration = Duration::from_secs(180);

const WHOAMI: &str =
    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#;

/// What happens to the store, from [`Scenario::at`] for [`Scenario::lasting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "each test crate that includes this file runs some of the faults"
)]
pub enum Fault {
    /// Nothing: the store answers throughout.
    None,
    /// Killed, then started again with no data.
    RestartEmpty,
    /// Killed, then started again with the data it had (saved as it was killed).
    RestartKeepingData,
    /// Suspended (`SIGSTOP`), then resumed (`SIGCONT`) with its connections and data.
    Pause,
    /// Slow: the store's answers reach the workers 0 to 400 ms late (a proxy between them
    /// holds each answer). The delay is on the way back because that is where it matters: the
    /// store times a booking by its own clock, and a process waits from when the answer
    /// arrives. (Holding the commands instead, with `CLIENT PAUSE`, delays them before the
    /// store reads its clock, and every start stays on its slot.)
    Slow,
    /// Sentinel (a primary, a replica, three sentinels): the primary killed (SIGKILL); the
    /// sentinels promote the replica. It stays down.
    SentinelKill,
    /// Sentinel: a failover requested of the sentinels (`SENTINEL FAILOVER`); the old primary
    /// becomes a replica.
    SentinelFailover,
    /// Cluster (three primaries, a replica each): the primary holding the token's keys killed
    /// (SIGKILL); its replica takes over. It stays down.
    ClusterKill,
}

/// A fleet, its calls and the store's fault.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// What the run is called in reports.
    pub name: &'static str,
    /// Worker processes.
    pub workers: usize,
    /// Calls per worker.
    pub calls: usize,
    /// The store's fault.
    pub fault: Fault,
    /// When the fault starts, from the start of the workers.
    pub at: Duration,
    /// How long it lasts.
    pub lasting: Duration,
    /// One more worker, started this long after the others (as a deploy or a CLI command
    /// would be, inside a failover's switch).
    pub late_worker: Option<Duration>,
}

impl Scenario {
    /// Issue 19's run: 4 processes × 15 calls, the fault at 5 s for 6 s.
    pub const fn four_by_fifteen(name: &'static str, fault: Fault) -> Self {
        Scenario {
            name,
            workers: 4,
            calls: 15,
            fault,
            at: Duration::from_secs(5),
            lasting: Duration::from_secs(6),
            late_worker: None,
        }
    }

    /// This scenario with one more worker started at `at` from the start of the others.
    #[allow(dead_code, reason = "used by the failover tests only")]
    pub const fn with_late_worker(mut self, at: Duration) -> Self {
        self.late_worker = Some(at);
        self
    }

    /// Every worker, the late one included.
    pub const fn all_workers(&self) -> usize {
        self.workers + if self.late_worker.is_some() { 1 } else { 0 }
    }
}

/// One request as the gateway saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// From the start of the workers.
    pub at: Duration,
    /// The worker that sent it ([`WORKER_HEADER`]).
    pub worker: Option<usize>,
}

/// What one worker reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Calls that succeeded.
    pub ok: usize,
    /// Calls that failed.
    pub failed: usize,
    /// The first failure, or why the worker reported nothing.
    pub error: Option<String>,
}

/// A run's arrivals and the workers' reports.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run.
    pub scenario: Scenario,
    /// Every request that reached the server, in order of arrival.
    pub arrivals: Vec<Arrival>,
    /// By worker number.
    pub workers: Vec<WorkerReport>,
    /// For a failover: from the fault until the new primary took over (named by the
    /// sentinels, or the cluster whole again).
    #[allow(dead_code, reason = "read by the failover tests only")]
    pub failover: Option<Duration>,
    /// For a failover: the starts the store holds at the end, on the primary that took over
    /// (every start of the run once the processes followed it).
    #[allow(dead_code, reason = "read by the failover tests only")]
    pub stored: Option<usize>,
}

impl Outcome {
    /// The arrivals of the busiest half-open rolling second (the first, if several are).
    pub fn busiest_second(&self) -> &[Arrival] {
        let mut busiest: &[Arrival] = &[];
        for (i, first) in self.arrivals.iter().enumerate() {
            let count = self.arrivals[i..]
                .iter()
                .take_while(|a| a.at < first.at + Duration::from_secs(1))
                .count();
            if count > busiest.len() {
                busiest = &self.arrivals[i..i + count];
            }
        }
        busiest
    }

    /// From the first arrival to the last.
    pub fn total(&self) -> Duration {
        match (self.arrivals.first(), self.arrivals.last()) {
            (Some(first), Some(last)) => last.at - first.at,
            _ => Duration::ZERO,
        }
    }

    /// The shortest possible [`Self::total`]: the calls of the whole fleet one spacing of the
    /// default pacing apart ((1 s + margin) / per second: 550 ms at 2 per second).
    pub fn floor(&self) -> Duration {
        let per_second = Limits::default()
            .general
            .per_second
            .expect("a per-second limit by default");
        let spacing = (Duration::from_secs(1) + Pacing::default().margin) / per_second;
        let calls = u32::try_from(self.expected()).expect("a few calls");
        spacing * calls.saturating_sub(1)
    }

    /// Calls the workers were to make.
    pub fn expected(&self) -> usize {
        self.scenario.all_workers() * self.scenario.calls
    }

    /// Calls that failed, or that a worker never reported, or that never arrived.
    pub fn lost(&self) -> usize {
        let succeeded: usize = self.workers.iter().map(|w| w.ok).sum();
        self.expected()
            .saturating_sub(succeeded.min(self.arrivals.len()))
    }

    /// The closest two arrivals of one worker: how far apart, and whose.
    pub fn closest_of_one_worker(&self) -> Option<(Duration, usize)> {
        (0..self.scenario.all_workers())
            .filter_map(|worker| {
                let times: Vec<Duration> = self
                    .arrivals
                    .iter()
                    .filter(|a| a.worker == Some(worker))
                    .map(|a| a.at)
                    .collect();
                let closest = times.windows(2).map(|pair| pair[1] - pair[0]).min()?;
                Some((closest, worker))
            })
            .min()
    }

    /// The columns of [`Self::row`].
    pub fn header() -> &'static str {
        "scenario                                                      busiest  total s  floor s  ratio  lost  closest of one worker"
    }

    /// One line: busiest second, total against the floor, calls lost, closest arrivals of one
    /// worker.
    pub fn row(&self) -> String {
        let ratio = self.total().as_secs_f64() / self.floor().as_secs_f64();
        let closest = self
            .closest_of_one_worker()
            .map_or_else(String::new, |(gap, worker)| {
                format!("{} ms (w{worker})", gap.as_millis())
            });
        format!(
            "{:<60} {:>8} {:>8.3} {:>8.3} {:>5.2}x {:>5}  {closest}",
            self.scenario.name,
            self.busiest_second().len(),
            self.total().as_secs_f64(),
            self.floor().as_secs_f64(),
            ratio,
            self.lost()
        )
    }

    /// What a [`Self::row`] needs to be understood: the busiest second, the workers' reports
    /// and every arrival as `w<worker>@<seconds>`.
    pub fn diagnosis(&self) -> String {
        let mut text = String::from("busiest second:");
        for arrival in self.busiest_second() {
            write!(text, " {}", Self::show(arrival)).unwrap();
        }
        for (worker, report) in self.workers.iter().enumerate() {
            write!(
                text,
                "\nworker {worker}: {} ok, {} failed",
                report.ok, report.failed
            )
            .unwrap();
            if let Some(error) = &report.error {
                write!(text, " ({error})").unwrap();
            }
        }
        text.push_str("\narrivals:");
        for (i, arrival) in self.arrivals.iter().enumerate() {
            let separator = if i % 10 == 0 { "\n " } else { " " };
            write!(text, "{separator}{}", Self::show(arrival)).unwrap();
        }
        text
    }

    fn show(arrival: &Arrival) -> String {
        let worker = arrival
            .worker
            .map_or_else(|| "?".to_string(), |w| w.to_string());
        format!("w{worker}@{:.3}", arrival.at.as_secs_f64())
    }
}

/// Held by the running scenario: the arrivals are timed, and fleets sharing the CPU would
/// bunch them by themselves.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the scenario of `fault` in the test `name`, `PUBAPI_FLEET_RUNS` times (`runs` by
/// default) and one scenario at a time, printing `header` and a row per run (`row`); returns
/// the runs and, for each run that `failed` says failed, its arrivals and diagnosis.
#[allow(
    dead_code,
    reason = "used by the fault tests, not by the pacing benchmark"
)]
pub fn repeat(
    scenario: Scenario,
    runs: usize,
    header: &str,
    row: impl Fn(&Outcome) -> String,
    failed: impl Fn(&Outcome) -> bool,
) -> (usize, Vec<String>) {
    // A worker is this test alone, run again in a new process.
    let worker_args = ["--exact", scenario.name, "--nocapture", "--test-threads=1"];
    let runs: usize = std::env::var("PUBAPI_FLEET_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(runs);
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut failures = Vec::new();
    println!("{header}");
    for number in 1..=runs {
        let outcome = run(&scenario, &worker_args);
        println!("{}", row(&outcome));
        if failed(&outcome) {
            failures.push(format!(
                "run {number} of {runs}:\n{}\n{}\n{}",
                Outcome::header(),
                outcome.row(),
                outcome.diagnosis()
            ));
        }
    }
    (runs, failures)
}

/// Runs `scenario` and returns what the server saw; in a worker (see [`work_if_asked`]),
/// does the worker's job instead and exits. `worker_args` are the arguments that make this
/// executable call `run` again (a test harness's filter for the calling test), if any.
///
/// # Panics
/// When the store, the server or the workers cannot be started.
pub fn run(scenario: &Scenario, worker_args: &[&str]) -> Outcome {
    work_if_asked();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let mut redis = Store::start(scenario.fault);
    let (base, arrivals) = runtime.block_on(serve());
    let slow = Arc::new(AtomicBool::new(false));
    let store = match (scenario.fault, &redis) {
        (Fault::Slow, Store::One(server)) => {
            let port = runtime.block_on(slow_proxy(server.port(), slow.clone()));
            format!("redis://127.0.0.1:{port}/")
        }
        _ => redis.url(),
    };
    let me = std::env::current_exe().expect("the path of this executable");
    let started = Instant::now();
    let spawn = {
        let worker_args: Vec<String> = worker_args.iter().map(|a| a.to_string()).collect();
        let calls = scenario.calls;
        move |worker: usize| {
            Command::new(&me)
                .args(&worker_args)
                .env(WORKER, format!("{worker} {calls} {base} {store}"))
                .stdout(Stdio::piped())
                .spawn()
                .expect("a worker process")
        }
    };
    let mut children: Vec<Child> = (0..scenario.workers).map(&spawn).collect();
    let late = scenario.late_worker.map(|at| {
        let (spawn, worker) = (spawn.clone(), scenario.workers);
        std::thread::spawn(move || {
            std::thread::sleep((started + at).saturating_duration_since(Instant::now()));
            spawn(worker)
        })
    });
    let failover = apply(scenario, &mut redis, &slow, started);
    if let Some(late) = late {
        children.push(late.join().expect("the late worker started"));
    }
    let deadline = started + RUN_DEADLINE;
    while Instant::now() < deadline
        && children
            .iter_mut()
            .any(|c| matches!(c.try_wait(), Ok(None)))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers = children.iter_mut().map(report_of).collect();
    let stored = redis.stored("pubapi:*:general");
    drop(runtime);
    let mut arrivals: Vec<Arrival> = arrivals
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|(at, worker)| Arrival {
            at: at.saturating_duration_since(started),
            worker: *worker,
        })
        .collect();
    arrivals.sort_by_key(|a| a.at);
    Outcome {
        scenario: *scenario,
        arrivals,
        workers,
        failover,
        stored,
    }
}

/// The store of a run: one server, or a replicated deployment for a failover.
enum Store {
    One(RedisServer),
    Sentinel(SentinelSet),
    Cluster(RedisCluster),
}

impl Store {
    fn start(fault: Fault) -> Store {
        match fault {
            Fault::SentinelKill | Fault::SentinelFailover => Store::Sentinel(SentinelSet::start()),
            Fault::ClusterKill => Store::Cluster(RedisCluster::start()),
            _ => Store::One(RedisServer::start()),
        }
    }

    /// The size of the sorted set matching `pattern` on the primary now, for a replicated
    /// store.
    fn stored(&self, pattern: &str) -> Option<usize> {
        match self {
            Store::One(_) => None,
            Store::Sentinel(set) => set.stored(pattern),
            Store::Cluster(cluster) => cluster.stored(pattern),
        }
    }

    fn url(&self) -> String {
        match self {
            Store::One(server) => server.url(),
            Store::Sentinel(set) => set.url(),
            Store::Cluster(cluster) => cluster.url(),
        }
    }
}

/// How long a failover may take before the run fails.
const FAILOVER_LIMIT: Duration = Duration::from_secs(30);

/// Applies the scenario's fault to the store, on time from `started`, and returns when it is
/// over: for a failover, how long it took.
fn apply(
    scenario: &Scenario,
    store: &mut Store,
    slow: &AtomicBool,
    started: Instant,
) -> Option<Duration> {
    let wait_until = |at: Duration| {
        std::thread::sleep((started + at).saturating_duration_since(Instant::now()));
    };
    let end = scenario.at + scenario.lasting;
    wait_until(scenario.at);
    let redis = match store {
        Store::One(server) => server,
        Store::Sentinel(set) => {
            let old = match scenario.fault {
                Fault::SentinelFailover => set.request_failover(),
                _ => set.kill_primary(),
            };
            return Some(set.wait_for_new_primary(old, FAILOVER_LIMIT));
        }
        Store::Cluster(cluster) => {
            let port = cluster
                .primary_holding("pubapi:*")
                .expect("a primary holds the token's keys");
            cluster.kill(port);
            return Some(cluster.wait_for_three_primaries(FAILOVER_LIMIT));
        }
    };
    match scenario.fault {
        Fault::None | Fault::SentinelKill | Fault::SentinelFailover | Fault::ClusterKill => {}
        Fault::RestartEmpty => {
            redis.stop();
            wait_until(end);
            redis.restart_empty();
        }
        Fault::RestartKeepingData => {
            redis.save();
            redis.stop();
            wait_until(end);
            redis.restart_keeping_data();
        }
        Fault::Pause => {
            redis.pause();
            wait_until(end);
            redis.resume();
        }
        Fault::Slow => {
            slow.store(true, Ordering::Relaxed);
            wait_until(end);
            slow.store(false, Ordering::Relaxed);
        }
    }
    None
}

/// The report a worker printed, once it has exited (killed if it has not).
fn report_of(child: &mut Child) -> WorkerReport {
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
        return WorkerReport {
            error: Some(format!("killed after {RUN_DEADLINE:?}")),
            ..WorkerReport::default()
        };
    }
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_string(&mut stdout);
    }
    stdout
        .lines()
        .find_map(|line| {
            let mut words = line.strip_prefix(REPORT)?.split_whitespace();
            let ok = words.next()?.parse().ok()?;
            let failed = words.next()?.parse().ok()?;
            let error: Vec<&str> = words.collect();
            Some(WorkerReport {
                ok,
                failed,
                error: (!error.is_empty()).then(|| error.join(" ")),
            })
        })
        .unwrap_or_else(|| WorkerReport {
            error: Some(format!(
                "no report (exit {:?}); its stdout: {stdout:?}",
                child.wait().ok()
            )),
            ..WorkerReport::default()
        })
}

/// Serves whoami on loopback, keeping connections open; returns the base URL and, for every
/// request, when it arrived and which worker sent it.
async fn serve() -> (String, Arc<Mutex<Vec<(Instant, Option<usize>)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("its address");
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read);
                while let Some(worker) = read_head(&mut lines).await {
                    let now = Instant::now();
                    seen.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((now, worker));
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{WHOAMI}",
                        WHOAMI.len()
                    );
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/pubapi"), arrivals)
}

/// A loopback proxy to the store on `store_port` that, while `slow` is set, holds each
/// answer for 0 to 400 ms (spread evenly over the answers, in a fixed order); returns its
/// port.
async fn slow_proxy(store_port: u16, slow: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let answers = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(store) = TcpStream::connect(("127.0.0.1", store_port)).await else {
                continue;
            };
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_store, mut to_store) = store.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut from_client, &mut to_store).await;
            });
            let (slow, answers) = (slow.clone(), answers.clone());
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 16 * 1024];
                while let Ok(read @ 1..) = from_store.read(&mut buffer).await {
                    if slow.load(Ordering::Relaxed) {
                        let n = answers.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(n * 137 % 401)).await;
                    }
                    if to_client.write_all(&buffer[..read]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// Reads one request head (whoami has no body) and returns the worker named in it; `None`
/// when the connection closed or failed.
async fn read_head<R: AsyncBufRead + Unpin>(reader: &mut R) -> Option<Option<usize>> {
    let mut worker = None;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) if line == "\r\n" => return Some(worker),
            Ok(_) => {}
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case(WORKER_HEADER)
        {
            worker = value.trim().parse().ok();
        }
    }
}

/// In a worker process ([`WORKER`] set): makes the worker's calls, prints its report and
/// exits. Otherwise returns at once.
pub fn work_if_asked() {
    let Ok(spec) = std::env::var(WORKER) else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let [worker, calls, base, redis_url] = parts[..] else {
        panic!("{WORKER}={spec:?}: expected `<worker> <calls> <base url> <redis url>`");
    };
    let worker: usize = worker.parse().expect("a worker number");
    let calls: usize = calls.parse().expect("a number of calls");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let report = runtime.block_on(work(worker, calls, base, redis_url));
    let error = report.error.unwrap_or_default().replace('\n', " ");
    println!("{REPORT} {} {} {error}", report.ok, report.failed);
    std::process::exit(0);
}

async fn work(worker: usize, calls: usize, base: &str, redis_url: &str) -> WorkerReport {
    let budget = match RedisBudget::connect(redis_url).await {
        Ok(budget) => budget,
        Err(e) => {
            return WorkerReport {
                failed: calls,
                error: Some(e.to_string()),
                ..WorkerReport::default()
            };
        }
    };
    let client = Client::builder()
        .base_url(base)
        .token(SecretToken::try_from("fleet-run-token").expect("a token"))
        .fleet(Fleet::new(Arc::new(budget)))
        .transport(Arc::new(Tagged(worker)))
        .build()
        .expect("a client");
    let mut report = WorkerReport::default();
    for _ in 0..calls {
        match client.sdk().whoami().send().await {
            Ok(_) => report.ok += 1,
            Err(e) => {
                report.failed += 1;
                report.error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    report
}

/// Sends as the client does by default, with the worker's number in [`WORKER_HEADER`].
#[derive(Debug)]
struct Tagged(usize);

impl Transport for Tagged {
    fn send<'a>(
        &'a self,
        client: &'a reqwest::Client,
        mut request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        request
            .headers_mut()
            .insert(WORKER_HEADER, reqwest::header::HeaderValue::from(self.0));
        Box::pin(client.execute(request))
    }
}
