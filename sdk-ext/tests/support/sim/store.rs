//! The fleet's store as the processes reach it: the model server ([`super::server`]) behind a
//! network with latency on either direction (asymmetric, spiking, held in order on the way
//! back while the store is slow), and its faults: down (connections refused), paused
//! (commands wait), slow, restarted with or without its data, flushed, failed over to a
//! replica that lacks the last writes (another machine, another clock).
//!
//! Each process reaches it through a [`ModelBudget`], the client half of `RedisBudget` as it
//! stands in `src/fleet/redis.rs`: the deadline sent in the server's time, the server's clock
//! estimated from every answer as NTP does, the booked start turned into a wait from the
//! answer's arrival, a start already past by more than half the margin `Missed`, a 1 s
//! response timeout. It is the SDK's own trait, [`FleetBudget`], that the processes' limiters
//! call.

use super::Trace;
use super::rng::Rng;
use super::server::{Data, Raw, ScriptArgs, Server};
use pubapi_sdk_ext::fleet::{Answer, FleetBudget, FleetError, FleetFuture, Reservation, Reserve};
use pubapi_sdk_ext::limits::LimitClass;
use pubapi_sdk_ext::token::TokenFingerprint;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// `RedisBudget`'s response timeout.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
const RESPONSE_TIMEOUT_US: i64 = 1_000_000;
/// How far back a replica's data may lag: snapshots of the primary are kept this long.
const SNAPSHOT_SPAN: Duration = Duration::from_secs(5);
const SNAPSHOT_EVERY: Duration = Duration::from_millis(100);

/// A deliberate bug, to show that the simulation finds one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// The faithful client half.
    No,
    /// The booked start counted from the answer's arrival, as if the store had answered
    /// at once: an answer that came back late sends its call late by as much.
    AnswerTimeAsSendTime,
}

/// The network between the processes and the store.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    /// Each direction's usual delay: 0 to this.
    pub base: Duration,
    /// The chance in percent that a direction spikes, and how far.
    pub spike_percent: u64,
    pub spike: Duration,
}

/// What the store is doing now.
#[derive(Debug, Default)]
struct Faults {
    down_until: Option<Instant>,
    paused_until: Option<Instant>,
    slow_until: Option<Instant>,
}

struct State {
    server: Server,
    /// The server's clock against the simulation's, in µs (another machine after a failover).
    clock_offset_us: i64,
    faults: Faults,
    /// The primary's data as it was, for a replica that lags.
    snapshots: VecDeque<(Instant, Data)>,
    starts: u64,
}

/// The store: one server at a time, its faults, the network's latency.
pub struct Store {
    state: Mutex<State>,
    latency: Latency,
    epoch: Instant,
    trace: Trace,
}

impl Store {
    pub fn new(latency: Latency, trace: Trace) -> Arc<Self> {
        Arc::new(Store {
            state: Mutex::new(State {
                server: Server::new("run-0".into()),
                clock_offset_us: 0,
                faults: Faults::default(),
                snapshots: VecDeque::new(),
                starts: 0,
            }),
            latency,
            epoch: Instant::now(),
            trace,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Microseconds of the simulation's clock, as a Unix time (the servers' clocks and the
    /// processes' are this plus an offset).
    pub fn virtual_us(&self) -> i64 {
        1_800_000_000_000_000 + i64::try_from(self.epoch.elapsed().as_micros()).unwrap()
    }

    /// Keeps a snapshot of the data every 100 ms, for a failover to a lagging replica.
    pub async fn keep_snapshots(self: Arc<Self>, until: Instant) {
        while Instant::now() < until {
            {
                let mut state = self.state();
                let data = state.server.data.clone();
                let now = Instant::now();
                state.snapshots.push_back((now, data));
                while state
                    .snapshots
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > SNAPSHOT_SPAN)
                {
                    state.snapshots.pop_front();
                }
            }
            tokio::time::sleep(SNAPSHOT_EVERY).await;
        }
    }

    pub fn down_for(&self, how_long: Duration) {
        self.trace.note(format!("store: down for {how_long:?}"));
        self.state().faults.down_until = Some(Instant::now() + how_long);
    }

    pub fn pause_for(&self, how_long: Duration) {
        self.trace.note(format!("store: paused for {how_long:?}"));
        self.state().faults.paused_until = Some(Instant::now() + how_long);
    }

    pub fn slow_for(&self, how_long: Duration) {
        self.trace.note(format!("store: slow for {how_long:?}"));
        self.state().faults.slow_until = Some(Instant::now() + how_long);
    }

    /// A restart after `down` of refused connections: the data kept or lost, a new run id.
    pub fn restart(&self, down: Duration, keep_data: bool) {
        self.trace.note(format!(
            "store: restart after {down:?}, keeping data: {keep_data}"
        ));
        let mut state = self.state();
        state.starts += 1;
        let run_id = format!("run-{}", state.starts);
        let data = if keep_data {
            state.server.data.clone()
        } else {
            Data::default()
        };
        state.server = Server { data, run_id };
        state.faults.down_until = Some(Instant::now() + down);
    }

    /// `FLUSHALL`.
    pub fn flush(&self) {
        self.trace.note("store: FLUSHALL".into());
        self.state().server.data = Data::default();
    }

    /// A failover after `electing` of refused connections to a replica on another machine
    /// (clock off by `clock_offset_us`) whose data is the primary's of `lag` ago.
    pub fn fail_over(&self, electing: Duration, lag: Duration, clock_offset_us: i64) {
        self.trace.note(format!(
            "store: failover to a replica {lag:?} behind, clock {clock_offset_us} µs off, after {electing:?}"
        ));
        let mut state = self.state();
        let now = Instant::now();
        let data = state
            .snapshots
            .iter()
            .rev()
            .find(|(at, _)| now.duration_since(*at) >= lag)
            .or(state.snapshots.front())
            .map(|(_, data)| data.clone())
            .unwrap_or_default();
        state.starts += 1;
        let run_id = format!("replica-{}", state.starts);
        state.server = Server { data, run_id };
        state.clock_offset_us = clock_offset_us;
        state.faults.down_until = Some(now + electing);
    }

    /// A delay of one direction.
    fn delay(&self, rng: &mut Rng) -> Duration {
        let base = Duration::from_micros(rng.range(0, self.latency.base.as_micros() as u64 + 1));
        if rng.chance(self.latency.spike_percent) {
            base + Duration::from_micros(rng.range(0, self.latency.spike.as_micros() as u64 + 1))
        } else {
            base
        }
    }
}

/// The server's clock estimated from readings of it, as `RedisBudget`'s `Clock` does: the
/// reading with the smallest bound (half its round trip) kept, its bound aging 50 µs a second.
#[derive(Debug, Default, Clone, Copy)]
struct Clock {
    offset_us: i64,
    bound_us: Option<i64>,
    taken_us: i64,
}

impl Clock {
    fn sample(&mut self, before: i64, after: i64, server: i64) {
        let bound = (after - before).max(0) / 2;
        let better = match self.bound_us {
            None => true,
            Some(known) => {
                let aged = known.saturating_add((after - self.taken_us).max(0) / 20_000);
                bound <= aged
            }
        };
        if better {
            self.offset_us = server - (before + (after - before) / 2);
            self.bound_us = Some(bound);
            self.taken_us = after;
        }
    }

    fn server_time(&self, local_us: i64) -> i64 {
        local_us.saturating_add(self.offset_us)
    }
}

/// One process's connection to the store: the client half of `RedisBudget`.
pub struct ModelBudget {
    store: Arc<Store>,
    process: usize,
    nonce: u64,
    /// This machine's clock against the simulation's, µs.
    clock_offset_us: i64,
    clock: Mutex<Clock>,
    rng: Mutex<Rng>,
    /// When the last answer on this connection is let through while the store is slow
    /// (answers come back in order, each held behind the one before).
    pipe: Mutex<Instant>,
    killed: Arc<AtomicBool>,
    broken: Broken,
}

impl std::fmt::Debug for ModelBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelBudget(p{})", self.process)
    }
}

impl ModelBudget {
    /// Connects process `process` (its clock `clock_offset_us` off): reads the server's
    /// clock three times, as `RedisBudget::connect` does.
    pub async fn connect(
        store: Arc<Store>,
        process: usize,
        clock_offset_us: i64,
        mut rng: Rng,
        killed: Arc<AtomicBool>,
        broken: Broken,
    ) -> Result<Self, FleetError> {
        let nonce = rng.next_u64();
        let budget = ModelBudget {
            store,
            process,
            nonce,
            clock_offset_us,
            clock: Mutex::default(),
            rng: Mutex::new(rng),
            pipe: Mutex::new(Instant::now()),
            killed,
            broken,
        };
        budget.measure_clock(false).await?;
        Ok(budget)
    }

    fn local_us(&self) -> i64 {
        self.store.virtual_us() + self.clock_offset_us
    }

    fn clock_places(&self, request: &Reserve<'_>) -> bool {
        let allowed =
            i64::try_from(request.pacing.lateness_allowed().as_micros()).unwrap_or(i64::MAX);
        self.clock().bound_us.is_some_and(|bound| bound <= allowed)
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn measure_clock(&self, fresh: bool) -> Result<(), FleetError> {
        self.store
            .trace
            .note(format!("p{}: reads the server's clock", self.process));
        if fresh {
            *self.clock() = Clock::default();
        }
        for _ in 0..3 {
            let before = self.local_us();
            let server = self.round_trip(|_, now| now).await?;
            self.clock().sample(before, self.local_us(), server);
        }
        Ok(())
    }

    /// One command: to the server after the way there, run on the server's clock, back after
    /// the way back (held in order while the store is slow), within the response timeout.
    /// The command runs on the server whether or not the answer is still awaited.
    pub async fn round_trip<T: Send + 'static>(
        &self,
        command: impl FnOnce(&mut Server, i64) -> T + Send + 'static,
    ) -> Result<T, FleetError> {
        if self.killed.load(Ordering::Relaxed) {
            // A killed process sends nothing more.
            return std::future::pending().await;
        }
        let (there, back) = {
            let mut rng = self.rng.lock().unwrap();
            (self.store.delay(&mut rng), self.store.delay(&mut rng))
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let store = Arc::clone(&self.store);
        let slow_hold = {
            let mut rng = self.rng.lock().unwrap();
            Duration::from_millis(rng.range(0, 401))
        };
        let pipe = {
            // Where this answer stands in the connection's order, decided when it is sent.
            let mut pipe = self.pipe.lock().unwrap();
            let arrives = Instant::now() + there + back;
            let slow = store
                .state()
                .faults
                .slow_until
                .is_some_and(|until| until > Instant::now());
            let release = if slow {
                (*pipe).max(arrives) + slow_hold
            } else {
                (*pipe).max(arrives)
            };
            *pipe = release;
            release
        };
        tokio::spawn(async move {
            tokio::time::sleep(there).await;
            loop {
                let paused = store.state().faults.paused_until;
                match paused {
                    Some(until) if until > Instant::now() => tokio::time::sleep_until(until).await,
                    _ => break,
                }
            }
            let answer = {
                let mut state = store.state();
                let down = state
                    .faults
                    .down_until
                    .is_some_and(|until| until > Instant::now());
                if down {
                    None
                } else {
                    let now = store.virtual_us() + state.clock_offset_us;
                    Some(command(&mut state.server, now))
                }
            };
            tokio::time::sleep_until(pipe.max(Instant::now() + back)).await;
            let _ = tx.send(answer);
        });
        let answer = tokio::time::timeout(RESPONSE_TIMEOUT, rx).await;
        if !matches!(answer, Ok(Ok(Some(_)))) {
            self.store
                .trace
                .note(format!("p{}: the store failed", self.process));
        }
        match answer {
            Ok(Ok(Some(answer))) => Ok(answer),
            Ok(Ok(None)) => Err(FleetError::unavailable("model: connection refused")),
            Ok(Err(_)) => Err(FleetError::unavailable("model: connection closed")),
            Err(_) => Err(FleetError::unavailable("model: response timed out")),
        }
    }

    fn key(&self, token: &TokenFingerprint, class: LimitClass) -> String {
        format!("pubapi:{{{token}}}:{}", class.as_str())
    }

    fn member(&self, id: u64) -> String {
        format!("{:x}-{id}", self.nonce)
    }

    async fn run(&self, request: &Reserve<'_>) -> Result<Raw, FleetError> {
        self.store
            .trace
            .note(format!("p{}: asks the store", self.process));
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let limit = |v: Option<u32>| v.map_or(-1, i64::from);
        let sent = self.local_us();
        let deadline = self
            .clock()
            .server_time(sent)
            .saturating_add(RESPONSE_TIMEOUT_US);
        let args = ScriptArgs {
            key: self.key(request.token, request.class),
            generation_key: format!("pubapi:{{{}}}:generation", request.token),
            server_key: format!("pubapi:{{{}}}:server", request.token),
            reset_key: format!("pubapi:{{{}}}:reset", request.token),
            per_second: limit(request.budget.per_second),
            per_minute: limit(request.budget.per_minute),
            per_day: limit(request.budget.per_day),
            margin: micros(request.pacing.margin),
            burst: request.pacing.burst,
            max_wait: micros(request.max_wait),
            member: self.member(request.id),
            per_hour: limit(request.budget.per_hour),
            not_before: micros(request.not_before),
            deadline,
            known: request.generation.to_owned(),
            candidate: format!("{:x}-{}", self.nonce, self.local_us()),
            book: request.book,
            nonce: format!("{:x}", self.nonce),
            quiet: micros(request.quiet_after_loss),
            quiet_new: micros(request.quiet_after_new),
            history: request.history.map(|starts| {
                (
                    deadline - RESPONSE_TIMEOUT_US,
                    starts.iter().map(|s| (s.id, s.offset_us)).collect(),
                )
            }),
        };
        let (process, book, class) = (self.process, request.book, request.class);
        let trace = self.store.trace.clone();
        let raw = self
            .round_trip(move |server, now| {
                let raw = server.reserve(now, &args);
                trace.note(format!(
                    "store: p{process} {} {class:?} history={} -> status {} wait {} µs",
                    if book { "books" } else { "records" },
                    args.history.as_ref().map_or(0, |(_, h)| h.len()),
                    raw.0,
                    raw.1
                ));
                raw
            })
            .await?;
        let after = self.local_us();
        self.clock().sample(sent, after, raw.5);
        let c = *self.clock();
        self.store.trace.note(format!(
            "p{}: clock sample rtt {} µs, true offset {} µs, estimate {} µs ± {:?}",
            self.process,
            after - sent,
            self.store.state().clock_offset_us - self.clock_offset_us,
            c.offset_us,
            c.bound_us
        ));
        Ok(raw)
    }

    fn answer(&self, raw: Raw, request: &Reserve<'_>) -> Answer {
        let (status, wait, long_wait, generation, lost, ran_at) = raw;
        let duration = |us: i64| Duration::from_micros(u64::try_from(us).unwrap_or(0));
        let reservation = match status {
            0 if request.book => {
                let server_now = self.clock().server_time(self.local_us());
                let left = match self.broken {
                    Broken::No => ran_at.saturating_add(wait).saturating_sub(server_now),
                    Broken::AnswerTimeAsSendTime => wait,
                };
                let tolerance = i64::try_from(request.pacing.lateness_allowed().as_micros())
                    .unwrap_or(i64::MAX);
                self.store.trace.note(format!(
                    "p{}: answer in, start {} µs away",
                    self.process, left
                ));
                if left < -tolerance || !self.clock_places(request) {
                    Reservation::Missed {
                        late_by: duration(-left),
                    }
                } else {
                    Reservation::Granted {
                        wait: duration(left),
                    }
                }
            }
            0 => Reservation::Granted {
                wait: Duration::ZERO,
            },
            -1 => Reservation::Refused {
                wait: duration(wait),
                long_wait: duration(long_wait),
            },
            -4 => Reservation::HistoryNeeded,
            _ => Reservation::NoBudget,
        };
        Answer {
            reservation,
            generation,
            lost_history: lost == 1,
        }
    }
}

impl FleetBudget for ModelBudget {
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> FleetFuture<'a, Answer> {
        Box::pin(async move {
            let raw = self.run(&request).await?;
            if raw.0 != -3 {
                // A booked start is placed by the estimate of the server's clock: one not
                // known closely enough (every reading so far slow, say just after connecting)
                // is measured again before the start is placed.
                if raw.3 != request.generation {
                    // Another generation: maybe another server (a failover, a restart), with
                    // a clock of its own. What was known of the old one's is dropped.
                    self.measure_clock(true).await?;
                } else if raw.0 == 0 && request.book && !self.clock_places(&request) {
                    self.measure_clock(false).await?;
                }
                return Ok(self.answer(raw, &request));
            }
            self.measure_clock(true).await?;
            match self.run(&request).await? {
                (-3, ..) => Err(FleetError::unavailable(
                    "model: the server's clock disagrees with this machine's",
                )),
                raw => Ok(self.answer(raw, &request)),
            }
        })
    }

    fn give_back<'a>(
        &'a self,
        token: &'a TokenFingerprint,
        class: LimitClass,
        id: u64,
    ) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let (key, member) = (self.key(token, class), self.member(id));
            let (process, trace) = (self.process, self.store.trace.clone());
            self.round_trip(move |server, _| {
                trace.note(format!("store: p{process} gives back {member}"));
                server.zrem(&key, &member);
            })
            .await
        })
    }
}
