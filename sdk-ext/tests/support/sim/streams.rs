//! Event streams in the simulation: consumers of one stream in several processes, each an
//! [`EventStream`] of the SDK with a lease from a model of `RedisCheckpoints` ([`ModelCheckpoints`],
//! the scripts of `src/fleet/redis_streams.rs` ported to [`Server`]) over the same store model as
//! the budget (latency either way, down, paused, slow, restarted with or without its data,
//! flushed, failed over to a replica that lacks the last writes, on another clock). Each
//! consumer handles every event it is handed (a handler of its own length) and saves its
//! checkpoint after it; processes are killed, stop, or start late.
//!
//! Checked at every handling ([`Ledger::begin`]): never two consumers inside a handler at
//! once; the fencing tokens of the handlings only grow. At the end ([`Ledger::finish`]): no
//! event skipped, and when the store kept its data, at most one event handled again per
//! change of holder.

use super::rng::Rng;
use super::server::Server;
use super::store::{Latency, ModelBudget, Store};
use super::{Fault, Trace, Violation, apply_fault, millis};
use futures_util::StreamExt;
use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamNotice, StreamStart};
use pubapi_sdk_ext::fleet::{Acquired, CheckpointStore, FleetError, FleetFuture, Lease};
use pubapi_sdk_ext::limits::{Budget, Limits};
use pubapi_sdk_ext::reqwest;
use pubapi_sdk_ext::{Client, SecretToken, Transport};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The stream's keys on one server, as the scripts keep them: the lease key (its token and
/// when it expires, in the server's clock, ms), the fence hash and the checkpoint.
#[derive(Debug, Clone, Default)]
pub struct StreamKeys {
    lease: Option<(u64, i64)>,
    fence: Option<Fence>,
    checkpoint: Option<i64>,
}

/// `{<name>}:lease:fence`.
#[derive(Debug, Clone, Default)]
struct Fence {
    last: Option<u64>,
    released: Option<u64>,
    served_by: Option<String>,
    quiet_until: Option<i64>,
}

impl StreamKeys {
    /// The lease's token while it has not expired at `now_ms` (an expired key is gone).
    fn live_lease(&mut self, now_ms: i64) -> Option<u64> {
        match self.lease {
            Some((token, expires)) if expires > now_ms => Some(token),
            _ => {
                self.lease = None;
                None
            }
        }
    }
}

impl Server {
    fn stream(&mut self, name: &str) -> &mut StreamKeys {
        self.data.streams.entry(name.to_owned()).or_default()
    }

    /// `ACQUIRE`: `(1, token, taken_over)` or `(0, ms_left, 0)`.
    fn acquire(&mut self, now_us: i64, name: &str, lease_ms: i64) -> (i64, i64, bool) {
        let now_ms = now_us / 1_000;
        let run_id = self.run_id.clone();
        let keys = self.stream(name);
        if let (Some(_), Some((_, expires))) = (keys.live_lease(now_ms), keys.lease) {
            return (0, expires - now_ms, false);
        }
        let moved = keys
            .fence
            .as_ref()
            .and_then(|f| f.served_by.as_ref())
            .is_some_and(|s| *s != run_id);
        if keys.fence.is_none() || moved {
            let fence = keys.fence.get_or_insert_with(Fence::default);
            fence.quiet_until = Some(now_ms + lease_ms);
            fence.served_by = Some(run_id);
            return (0, lease_ms, false);
        }
        let fence = keys.fence.as_mut().expect("a fence");
        let quiet = fence.quiet_until.unwrap_or(0);
        if now_ms < quiet {
            return (0, quiet - now_ms, false);
        }
        let previous = fence.last;
        let mut token = u64::try_from(now_us).unwrap_or(0);
        if let Some(previous) = previous
            && previous >= token
        {
            token = previous + 1;
        }
        fence.last = Some(token);
        fence.served_by = Some(run_id);
        let taken_over = previous.is_some() && fence.released != previous;
        keys.lease = Some((token, now_ms + lease_ms));
        (1, i64::try_from(token).unwrap_or(i64::MAX), taken_over)
    }

    /// `RENEW`.
    fn renew(&mut self, now_us: i64, name: &str, token: u64, lease_ms: i64) -> bool {
        let now_ms = now_us / 1_000;
        let run_id = self.run_id.clone();
        let keys = self.stream(name);
        if keys.live_lease(now_ms) != Some(token) {
            return false;
        }
        keys.lease = Some((token, now_ms + lease_ms));
        if let Some(fence) = &mut keys.fence {
            fence.served_by = Some(run_id);
        }
        true
    }

    /// `RELEASE`.
    fn release(&mut self, now_us: i64, name: &str, token: u64) {
        let keys = self.stream(name);
        if keys.live_lease(now_us / 1_000) != Some(token) {
            return;
        }
        keys.lease = None;
        keys.fence.get_or_insert_with(Fence::default).released = Some(token);
    }

    /// `SAVE`: `Some(before)` saved or kept, `None` not the holder.
    fn save(&mut self, now_us: i64, name: &str, token: u64, id: i64) -> Option<Option<i64>> {
        let keys = self.stream(name);
        if keys.live_lease(now_us / 1_000) != Some(token) {
            return None;
        }
        let before = keys.checkpoint;
        if before.is_none_or(|saved| saved < id) {
            keys.checkpoint = Some(id);
        }
        Some(before)
    }
}

/// One process's `RedisCheckpoints`: the scripts on the store model, through its connection.
pub struct ModelCheckpoints {
    connection: ModelBudget,
    lease_time: Duration,
}

impl fmt::Debug for ModelCheckpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModelCheckpoints({:?})", self.connection)
    }
}

impl ModelCheckpoints {
    fn millis(&self) -> i64 {
        i64::try_from(self.lease_time.as_millis()).unwrap_or(i64::MAX)
    }
}

impl CheckpointStore for ModelCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Option<i64>> {
        let name = name.to_owned();
        Box::pin(
            self.connection.round_trip(move |server, _| {
                server.data.streams.get(&name).and_then(|k| k.checkpoint)
            }),
        )
    }

    fn save<'a>(&'a self, lease: &'a Lease, id: i64) -> FleetFuture<'a, Option<i64>> {
        let (name, token) = (lease.name.clone(), lease.token);
        Box::pin(async move {
            let answer = self
                .connection
                .round_trip({
                    let name = name.clone();
                    move |server, now| server.save(now, &name, token, id)
                })
                .await?;
            answer.ok_or_else(|| FleetError::lease_lost(&name))
        })
    }

    fn acquire<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Acquired> {
        let (owned, lease_ms) = (name.to_owned(), self.millis());
        Box::pin(async move {
            let (status, value, taken_over) = self
                .connection
                .round_trip(move |server, now| server.acquire(now, &owned, lease_ms))
                .await?;
            if status != 1 {
                let left = Duration::from_millis(u64::try_from(value).unwrap_or(0));
                return Ok(Acquired::Busy {
                    retry_in: left.min(self.lease_time / 5).max(Duration::from_millis(10)),
                });
            }
            Ok(Acquired::Lease(Lease {
                name: name.to_owned(),
                token: u64::try_from(value).unwrap_or(0),
                taken_over,
                expires_in: Some(self.lease_time),
            }))
        })
    }

    fn renew<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, bool> {
        let (name, token, lease_ms) = (lease.name.clone(), lease.token, self.millis());
        Box::pin(
            self.connection
                .round_trip(move |server, now| server.renew(now, &name, token, lease_ms)),
        )
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, ()> {
        let (name, token) = (lease.name.clone(), lease.token);
        Box::pin(
            self.connection
                .round_trip(move |server, now| server.release(now, &name, token)),
        )
    }
}

/// One consumer process.
#[derive(Debug, Clone)]
pub struct Consumer {
    pub starts_at: Duration,
    pub clock_offset_us: i64,
    /// How long its handler takes: up to this.
    pub handler: Duration,
    /// Killed (SIGKILL), or stopped (the stream dropped, its lease released), at this time.
    pub killed_at: Option<Duration>,
    pub stops_at: Option<Duration>,
}

/// Everything a seed decides for a run of consumers.
#[derive(Debug, Clone)]
pub struct StreamScenario {
    pub seed: u64,
    pub consumers: Vec<Consumer>,
    pub lease_time: Duration,
    pub latency: Latency,
    pub faults: Vec<(Duration, Fault)>,
}

/// How long a run lasts: every consumer stops then.
const RUN: Duration = Duration::from_secs(40);

impl StreamScenario {
    /// The scenario of `seed`.
    pub fn draw(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5EED_57E4);
        let lease_time = millis(&mut rng, 600, 3_000);
        let consumers = (0..rng.range(2, 5))
            .map(|_| Consumer {
                starts_at: if rng.chance(40) {
                    millis(&mut rng, 0, 20_000)
                } else {
                    millis(&mut rng, 0, 500)
                },
                clock_offset_us: rng.range(0, 400_001) as i64 - 200_000,
                // Within a third of the lease time: what the SDK asks of a handler.
                handler: millis(&mut rng, 0, lease_time.as_millis() as u64 / 3),
                killed_at: rng.chance(25).then(|| millis(&mut rng, 1_000, 35_000)),
                stops_at: rng.chance(15).then(|| millis(&mut rng, 1_000, 35_000)),
            })
            .collect();
        let latency = Latency {
            base: Duration::from_micros(rng.range(100, 3_000)),
            spike_percent: rng.range(0, 15),
            spike: millis(&mut rng, 5, 600),
        };
        let faults = (0..rng.range(0, 3))
            .map(|_| (millis(&mut rng, 500, 30_000), Fault::draw(&mut rng)))
            .collect();
        StreamScenario {
            seed,
            consumers,
            lease_time,
            latency,
            faults,
        }
    }

    /// Whether a fault takes the store's data away (flushed, restarted empty, failed over).
    fn loses_data(&self) -> bool {
        self.faults.iter().any(|(_, fault)| fault.loses_data())
    }
}

impl fmt::Display for StreamScenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "stream seed {}: lease {:?}, store latency up to {:?} each way, {}% spiking by up to {:?}",
            self.seed,
            self.lease_time,
            self.latency.base,
            self.latency.spike_percent,
            self.latency.spike
        )?;
        for (i, c) in self.consumers.iter().enumerate() {
            writeln!(f, "  c{i}: {c:?}")?;
        }
        for (at, fault) in &self.faults {
            writeln!(f, "  at {:.3}: {fault:?}", at.as_secs_f64())?;
        }
        Ok(())
    }
}

/// One event handled: by whom, under which lease, from when until its handler ended.
#[derive(Debug, Clone, Copy)]
struct Handling {
    consumer: usize,
    token: u64,
    id: i64,
    start: Duration,
    end: Option<Duration>,
}

/// What the consumers did, checked as they do it.
#[derive(Default)]
struct Ledger {
    handlings: Vec<Handling>,
    /// Leases taken, in the order the consumers said so.
    holder_changes: usize,
    violations: Vec<Violation>,
}

impl Ledger {
    /// `consumer` begins handling `id` under `token` at `at`: no other consumer may be inside
    /// a handler, and no earlier handling may have a larger token.
    fn begin(&mut self, consumer: usize, token: u64, id: i64, at: Duration) -> usize {
        for other in &self.handlings {
            if other.consumer != consumer && other.end.is_none_or(|end| end > at) {
                self.violations.push(Violation {
                    at,
                    what: format!(
                        "c{consumer} handles {id} (token {token}) while c{} handles {} (token {}, since {:.3})",
                        other.consumer,
                        other.id,
                        other.token,
                        other.start.as_secs_f64()
                    ),
                });
            }
        }
        if let Some(larger) = self.handlings.iter().find(|h| h.token > token) {
            self.violations.push(Violation {
                at,
                what: format!(
                    "c{consumer} handles {id} under token {token}, after c{} handled {} under {}",
                    larger.consumer, larger.id, larger.token
                ),
            });
        }
        self.handlings.push(Handling {
            consumer,
            token,
            id,
            start: at,
            end: None,
        });
        self.handlings.len() - 1
    }

    fn end(&mut self, handling: usize, at: Duration) {
        self.handlings[handling].end = Some(at);
    }

    /// A killed or stopped consumer's handler ends with it.
    fn kill(&mut self, consumer: usize, at: Duration) {
        for h in &mut self.handlings {
            if h.consumer == consumer && h.end.is_none() {
                h.end = Some(at);
            }
        }
    }

    /// No event skipped, and (when the store kept its data) at most one repeat per change
    /// of holder; the repeats, for the record.
    fn finish(&mut self, kept_data: bool) -> usize {
        let mut ids: Vec<i64> = self.handlings.iter().map(|h| h.id).collect();
        let handled = ids.len();
        ids.sort_unstable();
        ids.dedup();
        let repeats = handled - ids.len();
        if let Some(gap) = ids.windows(2).find(|w| w[1] != w[0] + 1) {
            self.violations.push(Violation {
                at: RUN,
                what: format!("events {} to {} skipped", gap[0] + 1, gap[1] - 1),
            });
        }
        if ids.first().is_some_and(|first| *first != 1) {
            self.violations.push(Violation {
                at: RUN,
                what: format!("events before {} skipped", ids[0]),
            });
        }
        let changes = self.holder_changes.saturating_sub(1);
        if kept_data && repeats > changes {
            self.violations.push(Violation {
                at: RUN,
                what: format!("{repeats} events handled again over {changes} changes of holder"),
            });
        }
        repeats
    }
}

/// The events API as the platform serves it (version 2), with events 1 to a million stored:
/// a page is the window after the cursor.
#[derive(Debug)]
struct Feed;

impl Transport for Feed {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> pubapi_sdk_ext::BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let param = |name: &str| {
            request
                .url()
                .query_pairs()
                .find(|(key, _)| key == name)
                .and_then(|(_, value)| value.parse::<i64>().ok())
        };
        let (id, count) = (param("id").unwrap_or(0), param("count").unwrap_or(50));
        let (lo, hi) = (id + 1, (id + count).min(1_000_000));
        let events: Vec<String> = (lo..=hi)
            .map(|i| {
                format!(
                    r#"{{"id":{i},"timestamp":"2026-01-05T10:00:00Z","action_source":"WebUI","actor":1,"type":"file_system","action":"create","data":{{"target_path":"/f/{i}.txt","is_folder":false}}}}"#
                )
            })
            .collect();
        let body = format!(
            r#"{{"latest_id":{hi},"oldest_id":{lo},"count":{},"events":[{}]}}"#,
            events.len(),
            events.join(",")
        );
        Box::pin(async move {
            Ok(pubapi_sdk_ext::http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(body.into_bytes())
                .unwrap()
                .into())
        })
    }
}

/// What a run of consumers found.
pub struct StreamOutcome {
    pub scenario: StreamScenario,
    pub violations: Vec<Violation>,
    pub handled: usize,
    pub repeats: usize,
    pub trace: Trace,
}

impl StreamOutcome {
    pub fn held(&self) -> bool {
        self.violations.is_empty()
    }

    /// The scenario, the first violation and the trace of the five seconds before it.
    pub fn report(&self) -> String {
        format!(
            "{}\n{}",
            self.scenario,
            super::first_violation(&self.violations, &self.trace)
        )
    }
}

/// Runs `scenario` on a paused clock.
pub fn run_streams(scenario: StreamScenario) -> StreamOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(consume(scenario))
}

const STREAM: &str = "v2-all";

async fn consume(scenario: StreamScenario) -> StreamOutcome {
    let trace = Trace::default();
    trace.start();
    let started = Instant::now();
    let store = Store::new(scenario.latency, trace.clone());
    let snapshots = tokio::spawn(Arc::clone(&store).keep_snapshots(started + RUN * 2));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng = Rng::new(scenario.seed ^ 0xC0FF_EE00);
    let faults: Vec<_> = scenario
        .faults
        .iter()
        .map(|&(at, fault)| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                tokio::time::sleep_until(started + at).await;
                apply_fault(&store, fault);
            })
        })
        .collect();
    let mut consumers = tokio::task::JoinSet::new();
    for (index, plan) in scenario.consumers.iter().cloned().enumerate() {
        let (store, ledger, trace) = (Arc::clone(&store), Arc::clone(&ledger), trace.clone());
        let (mut connection_rng, mut handler_rng) = (rng.fork(), rng.fork());
        let lease_time = scenario.lease_time;
        consumers.spawn(async move {
            tokio::time::sleep_until(started + plan.starts_at).await;
            trace.note(format!("c{index}: starts"));
            let killed = Arc::new(AtomicBool::new(false));
            let connection = loop {
                let connected = ModelBudget::connect(
                    Arc::clone(&store),
                    index,
                    plan.clock_offset_us,
                    connection_rng.fork(),
                    Arc::clone(&killed),
                    super::store::Broken::No,
                )
                .await;
                match connected {
                    Ok(connection) => break connection,
                    Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            };
            let checkpoints = Arc::new(ModelCheckpoints {
                connection,
                lease_time,
            });
            let client = Client::builder()
                .base_url("https://acme.example.com/pubapi")
                .token(SecretToken::try_from("sim-stream-token").unwrap())
                .isolated_budget()
                .limits(Limits {
                    general: Budget::new(Some(10_000), None),
                    ..Limits::default()
                })
                .transport(Arc::new(Feed))
                .build()
                .unwrap();
            let mut stream = client
                .events()
                .stream(EventsVersion::V2)
                .start(StreamStart::After(0))
                .checkpoints(checkpoints, STREAM)
                .build();
            let end = [plan.killed_at, plan.stops_at, Some(RUN)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(RUN);
            let work = async {
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(StreamItem::Event(event)) => {
                            let token = stream.lease_token().unwrap_or(0);
                            let id = event.id();
                            let at = trace.elapsed();
                            trace.note(format!("c{index}: handles {id} (token {token})"));
                            let handling = ledger.lock().unwrap().begin(index, token, id, at);
                            let took = handler_rng.range(0, plan.handler.as_micros() as u64 + 1);
                            tokio::time::sleep(Duration::from_micros(took)).await;
                            ledger.lock().unwrap().end(handling, trace.elapsed());
                            if let Err(e) = stream.save_checkpoint().await {
                                trace.note(format!("c{index}: save of {id} failed: {e}"));
                            }
                        }
                        Ok(StreamItem::Notice(notice)) => {
                            if matches!(notice, StreamNotice::Consuming { .. }) {
                                ledger.lock().unwrap().holder_changes += 1;
                            }
                            trace.note(format!("c{index}: {notice:?}"));
                        }
                        Ok(other) => trace.note(format!("c{index}: {other:?}")),
                        Err(e) => trace.note(format!("c{index}: error {e}")),
                    }
                }
            };
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(started + end) => {}
                () = work => {}
            }
            if plan.killed_at == Some(end) {
                trace.note(format!("c{index}: killed"));
                killed.store(true, Ordering::Relaxed);
                ledger.lock().unwrap().kill(index, trace.elapsed());
                std::mem::forget(stream);
            } else {
                // A handler still running is dropped with the stream (the process shuts
                // down), before the lease is released.
                trace.note(format!("c{index}: stops"));
                ledger.lock().unwrap().kill(index, trace.elapsed());
                drop(stream);
            }
        });
    }
    while consumers.join_next().await.is_some() {}
    snapshots.abort();
    for fault in faults {
        fault.abort();
    }
    let mut ledger = std::mem::take(&mut *ledger.lock().unwrap());
    let repeats = ledger.finish(!scenario.loses_data());
    StreamOutcome {
        handled: ledger.handlings.len(),
        violations: ledger.violations,
        repeats,
        scenario,
        trace,
    }
}
