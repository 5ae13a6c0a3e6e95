//! A deterministic simulation of a fleet that shares one token: processes (each a [`Client`]
//! with a pacer of its own, as separate OS processes have), a model of the Redis store behind
//! the SDK's own [`FleetBudget`](pubapi_sdk_ext::fleet::FleetBudget) trait ([`store`]), and
//! the gateway as a recorder of arrivals ([`Gateway`]), all on tokio's paused clock: a run of
//! minutes takes milliseconds, and a run is its seed. Every arrival is checked against every
//! window of its class (second, minute, day; general and AI) as the gateway counts them.
//!
//! The seed draws the scenario ([`Scenario::draw`]): how many processes, when each starts,
//! its clock's offset, its calls and their classes, when one is killed; the store's latency
//! (either direction, spiking); and the store's faults (down, paused, slow, restarted with or
//! without its data, flushed, failed over to a replica that lacks the last writes). A failing
//! seed prints the scenario and the trace of the seconds before the violation, and reruns
//! identically.

pub mod rng;
pub mod server;
pub mod store;
pub mod streams;

use pubapi_sdk_ext::fleet::Fleet;
use pubapi_sdk_ext::limits::{Budget, LimitClass, Limits};
use pubapi_sdk_ext::reqwest;
use pubapi_sdk_ext::{Client, SecretToken, Transport};
use rng::Rng;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Broken, Latency, ModelBudget, Store};
use tokio::time::Instant;

/// What happened, in order, with the simulation's time: the store's commands, the faults,
/// the arrivals at the gateway.
#[derive(Clone, Default)]
pub struct Trace {
    lines: Arc<Mutex<Vec<(Duration, String)>>>,
    epoch: Arc<Mutex<Option<Instant>>>,
}

impl Trace {
    fn start(&self) {
        *self.epoch.lock().unwrap() = Some(Instant::now());
    }

    fn elapsed(&self) -> Duration {
        self.epoch
            .lock()
            .unwrap()
            .map_or(Duration::ZERO, |e| e.elapsed())
    }

    /// Notes `line` at the simulation's time now.
    pub fn note(&self, line: String) {
        let at = self.elapsed();
        self.lines.lock().unwrap().push((at, line));
    }

    /// The lines from `from` to `to`, one per line, each with its time.
    fn between(&self, from: Duration, to: Duration) -> String {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, _)| *at >= from && *at <= to)
            .map(|(at, line)| format!("{:>9.3} {line}", at.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every line, for comparing two runs of one seed.
    pub fn all(&self) -> Vec<(Duration, String)> {
        self.lines.lock().unwrap().clone()
    }
}

/// One call a process makes, after thinking for `think` since its previous one.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub class: LimitClass,
    pub think: Duration,
}

/// One process of the fleet.
#[derive(Debug, Clone)]
pub struct Process {
    pub starts_at: Duration,
    /// Its machine's clock against the simulation's, µs.
    pub clock_offset_us: i64,
    /// Its tasks, each making its calls in order.
    pub tasks: Vec<Vec<Call>>,
    /// When it is killed (SIGKILL: nothing more leaves it).
    pub killed_at: Option<Duration>,
}

/// A fault of the store, at a time of the run.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    Down(Duration),
    Pause(Duration),
    Slow(Duration),
    Restart {
        down: Duration,
        keep_data: bool,
    },
    Flush,
    Failover {
        electing: Duration,
        lag: Duration,
        clock_offset_us: i64,
    },
}

impl Fault {
    /// A fault of any kind, drawn from `rng`.
    fn draw(rng: &mut Rng) -> Fault {
        match rng.range(0, 7) {
            0 => Fault::Down(millis(rng, 200, 8_000)),
            1 => Fault::Pause(millis(rng, 200, 8_000)),
            2 => Fault::Slow(millis(rng, 1_000, 10_000)),
            3 => Fault::Restart {
                down: millis(rng, 100, 3_000),
                keep_data: rng.chance(50),
            },
            4 => Fault::Flush,
            _ => Fault::Failover {
                electing: millis(rng, 100, 3_000),
                lag: millis(rng, 0, 2_000),
                clock_offset_us: rng.range(0, 200_001) as i64 - 100_000,
            },
        }
    }

    /// Whether the store loses (some of) its data: flushed, restarted empty, failed over.
    fn loses_data(&self) -> bool {
        matches!(
            self,
            Fault::Flush
                | Fault::Restart {
                    keep_data: false,
                    ..
                }
                | Fault::Failover { .. }
        )
    }
}

/// Does `fault` to the store, now.
fn apply_fault(store: &Store, fault: Fault) {
    match fault {
        Fault::Down(d) => store.down_for(d),
        Fault::Pause(d) => store.pause_for(d),
        Fault::Slow(d) => store.slow_for(d),
        Fault::Restart { down, keep_data } => store.restart(down, keep_data),
        Fault::Flush => store.flush(),
        Fault::Failover {
            electing,
            lag,
            clock_offset_us,
        } => store.fail_over(electing, lag, clock_offset_us),
    }
}

/// Everything a seed decides.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub processes: Vec<Process>,
    pub latency: Latency,
    pub faults: Vec<(Duration, Fault)>,
    /// Whether processes' tasks are stalled between the SDK's send and the gateway (a busy
    /// machine, a TLS handshake): up to this.
    pub send_stall: Duration,
}

fn millis(rng: &mut Rng, low: u64, high: u64) -> Duration {
    Duration::from_millis(rng.range(low, high))
}

impl Scenario {
    /// The scenario of `seed`.
    pub fn draw(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let count = rng.range(2, 5) as usize;
        let processes = (0..count)
            .map(|_| {
                let starts_at = if rng.chance(30) {
                    millis(&mut rng, 0, 25_000)
                } else {
                    millis(&mut rng, 0, 1_000)
                };
                let tasks = (0..rng.range(1, 4))
                    .map(|_| {
                        (0..rng.range(2, 10))
                            .map(|_| Call {
                                class: if rng.chance(20) {
                                    LimitClass::Ai
                                } else {
                                    LimitClass::General
                                },
                                think: if rng.chance(50) {
                                    Duration::ZERO
                                } else {
                                    millis(&mut rng, 0, 3_000)
                                },
                            })
                            .collect()
                    })
                    .collect();
                let killed_at = rng.chance(15).then(|| millis(&mut rng, 1_000, 30_000));
                Process {
                    starts_at,
                    clock_offset_us: rng.range(0, 400_001) as i64 - 200_000,
                    tasks,
                    killed_at,
                }
            })
            .collect();
        let latency = Latency {
            base: Duration::from_micros(rng.range(100, 3_000)),
            spike_percent: rng.range(0, 15),
            spike: millis(&mut rng, 5, 600),
        };
        let faults = (0..rng.range(0, 3))
            .map(|_| {
                let at = millis(&mut rng, 500, 30_000);
                (at, Fault::draw(&mut rng))
            })
            .collect();
        let send_stall = if rng.chance(50) {
            millis(&mut rng, 0, 40)
        } else {
            Duration::ZERO
        };
        Scenario {
            seed,
            processes,
            latency,
            faults,
            send_stall,
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |d: Duration| d.as_secs_f64();
        writeln!(
            f,
            "seed {}: store latency up to {:?} each way, {}% spiking by up to {:?}; sends \
             stalled up to {:?}",
            self.seed,
            self.latency.base,
            self.latency.spike_percent,
            self.latency.spike,
            self.send_stall
        )?;
        for (i, p) in self.processes.iter().enumerate() {
            let tasks: Vec<String> = p
                .tasks
                .iter()
                .map(|calls| {
                    let ai = calls.iter().filter(|c| c.class == LimitClass::Ai).count();
                    format!("{} calls ({ai} ai)", calls.len())
                })
                .collect();
            write!(
                f,
                "  p{i}: starts at {:.3}, clock {:+} µs, tasks [{}]",
                secs(p.starts_at),
                p.clock_offset_us,
                tasks.join(", ")
            )?;
            match p.killed_at {
                Some(at) => writeln!(f, ", killed at {:.3}", secs(at))?,
                None => writeln!(f)?,
            }
        }
        for (at, fault) in &self.faults {
            writeln!(f, "  at {:.3}: {fault:?}", secs(*at))?;
        }
        Ok(())
    }
}

/// One arrival at the gateway.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub at: Duration,
    pub process: usize,
    pub class: LimitClass,
}

/// The gateway: records every arrival and checks it against the windows of its class.
#[derive(Default)]
struct GatewayLog {
    arrivals: Vec<Arrival>,
    violations: Vec<Violation>,
    /// When each process ended (its calls made, or killed).
    ended: std::collections::HashMap<usize, Duration>,
    /// When the store lost its data (a flush, a restart without it, a failover).
    losses: Vec<Duration>,
    /// Windows over their limit only by the calls of processes that had ended before the
    /// store lost its data: what no process can tell the store (see `fleet::redis`, "What
    /// Redis must keep"), counted, not failed.
    residual: usize,
}

/// A broken promise: what, and when.
#[derive(Debug, Clone)]
pub struct Violation {
    pub at: Duration,
    pub what: String,
}

/// What a process sends goes through this: after the process's stall, it arrives.
struct Gateway {
    log: Arc<Mutex<GatewayLog>>,
    process: usize,
    limits: Limits,
    stall: Duration,
    rng: Mutex<Rng>,
    killed: Arc<AtomicBool>,
    trace: Trace,
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gateway(p{})", self.process)
    }
}

/// The windows the gateway counts: (name, length, limit).
fn windows(budget: Budget) -> Vec<(&'static str, Duration, u32)> {
    [
        ("second", Duration::from_secs(1), budget.per_second),
        ("minute", Duration::from_secs(60), budget.per_minute),
        ("hour", Duration::from_secs(3_600), budget.per_hour),
        ("day", Duration::from_secs(86_400), budget.per_day),
    ]
    .into_iter()
    .filter_map(|(name, length, limit)| Some((name, length, limit?)))
    .collect()
}

impl GatewayLog {
    /// Records `arrival` and checks every window of its class that ends with it.
    fn arrive(&mut self, arrival: Arrival, budget: Budget) {
        self.arrivals.push(arrival);
        for (name, length, limit) in windows(budget) {
            let inside: Vec<&Arrival> = self
                .arrivals
                .iter()
                .filter(|a| a.class == arrival.class && a.at + length > arrival.at)
                .collect();
            // The calls of processes that ended before the last loss ahead of this arrival
            // are not in the store any more, and no live process knows them.
            let last_loss = self
                .losses
                .iter()
                .rev()
                .find(|l| **l <= arrival.at)
                .copied();
            let known = inside
                .iter()
                .filter(|a| {
                    let gone = last_loss.is_some_and(|loss| {
                        a.at < loss && self.ended.get(&a.process).is_some_and(|end| *end <= loss)
                    });
                    !gone
                })
                .count();
            if inside.len() > limit as usize && known <= limit as usize {
                self.residual += 1;
            } else if inside.len() > limit as usize {
                let who: Vec<String> = inside
                    .iter()
                    .map(|a| format!("p{}@{:.3}", a.process, a.at.as_secs_f64()))
                    .collect();
                self.violations.push(Violation {
                    at: arrival.at,
                    what: format!(
                        "{} {} calls in one {name} (limit {limit}): {}",
                        inside.len(),
                        arrival.class,
                        who.join(" ")
                    ),
                });
            }
        }
    }

    fn today(&self, class: LimitClass) -> usize {
        self.arrivals.iter().filter(|a| a.class == class).count()
    }
}

impl Transport for Gateway {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> pubapi_sdk_ext::BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let class = if request.url().path().contains("/v1/ai/") {
            LimitClass::Ai
        } else {
            LimitClass::General
        };
        let stall = {
            let mut rng = self.rng.lock().unwrap();
            Duration::from_micros(rng.range(0, self.stall.as_micros() as u64 + 1))
        };
        Box::pin(async move {
            tokio::time::sleep(stall).await;
            if self.killed.load(Ordering::Relaxed) {
                return std::future::pending().await;
            }
            let budget = self.limits.budget(class);
            let at = self.trace.elapsed();
            self.trace
                .note(format!("gateway: p{} {class} arrives", self.process));
            let today = {
                let mut log = self.log.lock().unwrap();
                log.arrive(
                    Arrival {
                        at,
                        process: self.process,
                        class,
                    },
                    budget,
                );
                log.today(class)
            };
            let body = match class {
                LimitClass::Ai => "[]",
                LimitClass::General => {
                    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#
                }
            };
            let mut response = pubapi_sdk_ext::http::Response::builder()
                .status(200)
                .header("content-type", "application/json");
            if let Some(per_day) = budget.per_day {
                response = response
                    .header("x-accesstoken-quota-allotted", per_day.to_string())
                    .header("x-accesstoken-quota-current", today.to_string());
            }
            Ok(response.body(body.as_bytes().to_vec()).unwrap().into())
        })
    }
}

/// The first of `violations` and the lines of `trace` in the five seconds before it (empty
/// when there is none): the heart of a failing run's report.
fn first_violation(violations: &[Violation], trace: &Trace) -> String {
    let Some(first) = violations.first() else {
        return String::new();
    };
    format!(
        "first violation at {:.3}: {}\n{}",
        first.at.as_secs_f64(),
        first.what,
        trace.between(first.at.saturating_sub(Duration::from_secs(5)), first.at)
    )
}

/// What a run found.
pub struct Outcome {
    pub scenario: Scenario,
    /// Windows over their limit only by calls of processes that ended before a loss.
    pub residual: usize,
    pub arrivals: Vec<Arrival>,
    pub violations: Vec<Violation>,
    /// Calls that ended in an error, by process, with the error.
    pub failed: Vec<(usize, String)>,
    pub made: usize,
    pub trace: Trace,
}

impl Outcome {
    /// The report of a failing run: the scenario, the first violation and the trace of the
    /// five seconds before it.
    pub fn report(&self) -> String {
        let mut out = format!("{}\n", self.scenario);
        out.push_str(&first_violation(&self.violations, &self.trace));
        if self.violations.is_empty() && !self.failed.is_empty() {
            let end = self
                .trace
                .all()
                .last()
                .map_or(Duration::ZERO, |(at, _)| *at);
            out.push_str(
                &self
                    .trace
                    .between(end.saturating_sub(Duration::from_secs(5)), end),
            );
        }
        for (process, error) in self.failed.iter().take(5) {
            out.push_str(&format!("\np{process}: a call failed: {error}"));
        }
        out
    }

    /// One line: the seed, its faults and what broke first.
    pub fn summary(&self) -> String {
        let faults: Vec<String> = self
            .scenario
            .faults
            .iter()
            .map(|(at, fault)| format!("{:.1}s {fault:?}", at.as_secs_f64()))
            .collect();
        let broke = match (self.violations.first(), self.failed.first()) {
            (Some(v), _) => format!("{:.3}: {}", v.at.as_secs_f64(), v.what),
            (None, Some((p, error))) => format!("p{p}: {error}"),
            (None, None) => "held".into(),
        };
        format!(
            "seed {} [{}] {broke}",
            self.scenario.seed,
            faults.join("; ")
        )
    }

    /// Whether every promise held: no window over its limit, no call lost.
    pub fn held(&self) -> bool {
        self.violations.is_empty() && self.failed.is_empty()
    }
}

const TOKEN: &str = "sim-fleet-token";

/// Runs `scenario` with the client half `broken` (or faithful).
pub fn run(scenario: Scenario, broken: Broken) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(run_on_paused_clock(scenario, broken))
}

async fn run_on_paused_clock(scenario: Scenario, broken: Broken) -> Outcome {
    let trace = Trace::default();
    trace.start();
    let started = Instant::now();
    let store = Store::new(scenario.latency, trace.clone());
    let snapshots =
        tokio::spawn(Arc::clone(&store).keep_snapshots(started + Duration::from_secs(3_600)));
    let log = Arc::new(Mutex::new(GatewayLog::default()));
    let failed = Arc::new(Mutex::new(Vec::new()));
    let made = Arc::new(Mutex::new(0_usize));
    let mut rng = Rng::new(scenario.seed ^ 0xA5A5);

    let mut faults = Vec::new();
    for (at, fault) in scenario.faults.clone() {
        let (store, log, trace) = (Arc::clone(&store), Arc::clone(&log), trace.clone());
        faults.push(tokio::spawn(async move {
            tokio::time::sleep_until(started + at).await;
            if fault.loses_data() {
                log.lock().unwrap().losses.push(trace.elapsed());
            }
            apply_fault(&store, fault);
        }));
    }

    let mut processes = tokio::task::JoinSet::new();
    for (index, plan) in scenario.processes.iter().cloned().enumerate() {
        let (store, log, failed, made, trace) = (
            Arc::clone(&store),
            Arc::clone(&log),
            Arc::clone(&failed),
            Arc::clone(&made),
            trace.clone(),
        );
        let (mut store_rng, gateway_rng) = (rng.fork(), rng.fork());
        let log_of_ends = Arc::clone(&log);
        let stall = scenario.send_stall;
        processes.spawn(async move {
            tokio::time::sleep_until(started + plan.starts_at).await;
            trace.note(format!("p{index}: starts"));
            let killed = Arc::new(AtomicBool::new(false));
            // A service retries its connection to the store until it answers.
            let budget = loop {
                match ModelBudget::connect(
                    Arc::clone(&store),
                    index,
                    plan.clock_offset_us,
                    // Each connection draws its own delays.
                    store_rng.fork(),
                    Arc::clone(&killed),
                    broken,
                )
                .await
                {
                    Ok(budget) => break budget,
                    Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            };
            let limits = Limits::default();
            let gateway = Gateway {
                log,
                process: index,
                limits,
                stall,
                rng: Mutex::new(gateway_rng),
                killed: Arc::clone(&killed),
                trace: trace.clone(),
            };
            let client = Client::builder()
                .base_url("https://acme.example.com/pubapi")
                .token(SecretToken::try_from(TOKEN).unwrap())
                .isolated_budget()
                .fleet(Fleet::new(Arc::new(budget)))
                .transport(Arc::new(gateway))
                .build()
                .unwrap();
            let mut tasks = tokio::task::JoinSet::new();
            for calls in plan.tasks.clone() {
                let (client, failed, made) =
                    (client.clone(), Arc::clone(&failed), Arc::clone(&made));
                tasks.spawn(async move {
                    for call in calls {
                        tokio::time::sleep(call.think).await;
                        let result = match call.class {
                            LimitClass::General => client.identity().whoami().await.map(drop),
                            LimitClass::Ai => client.agents().list().await.map(drop),
                        };
                        match result {
                            Ok(()) => *made.lock().unwrap() += 1,
                            Err(error) => failed.lock().unwrap().push((index, error.to_string())),
                        }
                    }
                });
            }
            match plan.killed_at {
                Some(at) => {
                    let all_done = async { while tasks.join_next().await.is_some() {} };
                    tokio::select! {
                        biased;
                        () = tokio::time::sleep_until(started + at) => {
                            trace.note(format!("p{index}: killed"));
                            killed.store(true, Ordering::Relaxed);
                            tasks.abort_all();
                        }
                        () = all_done => {}
                    }
                }
                None => while tasks.join_next().await.is_some() {},
            }
            let ended = trace.elapsed();
            log_of_ends.lock().unwrap().ended.insert(index, ended);
        });
    }
    // Every call ends within its deadline (180 s), whatever the store does: a run still going
    // after 15 minutes has a call that waits forever.
    let ended = tokio::time::timeout(Duration::from_secs(900), async {
        while processes.join_next().await.is_some() {}
    })
    .await;
    if ended.is_err() {
        failed
            .lock()
            .unwrap()
            .push((usize::MAX, "the run did not end within 15 minutes".into()));
    }
    snapshots.abort();
    for fault in faults {
        fault.abort();
    }
    let log = std::mem::take(&mut *log.lock().unwrap());
    let failed = std::mem::take(&mut *failed.lock().unwrap());
    let made = *made.lock().unwrap();
    Outcome {
        scenario,
        residual: log.residual,
        arrivals: log.arrivals,
        violations: log.violations,
        failed,
        made,
        trace,
    }
}
