//! Client-side pacing so a token stays inside its [`Limits`]: the pace step of a request.
//!
//! The limiter is a sliding-window log: it remembers when each request of
//! the last 24 hours started (or is booked to start) and books a new request
//! at the earliest instant at which, in every rolling window (second, minute,
//! 24 hours), no more requests start than the budget allows. A token bucket or
//! GCRA would not give that guarantee over a rolling window (a `per_day(1000)`
//! GCRA can admit more than 1,000 in some 24 h span).
//!
//! The gateway counts arrivals, not our starts, and a request can leave later
//! than its slot (a new connection, a TLS handshake, a busy runtime). So every
//! window is kept [`Pacing::margin`] longer than the gateway's, starts are
//! spread evenly by default (at 2 per second, one every 550 ms rather than two
//! at once each second), and a request is counted from when it actually
//! leaves ([`Permit::sent`]): a later start moves its entry, and callers
//! booked after it re-check their slot before they go.
//!
//! When a slot is free at once, [`RateLimiter::acquire`] takes a lock and
//! returns: no timer, no task switch. Time comes from tokio's clock, so tests
//! run on paused time.
//!
//! Every client built with the same token in one process shares one limiter
//! ([`RateLimiter::for_token`], keyed by a fingerprint of the token, never the
//! token itself); clones and act-as views share it too.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::Fleet;
use crate::fleet::{Answer, FleetError, HistoryStart, Reservation, Reserve};
use crate::limits::{
    Budget, BudgetConflict, LimitClass, LimitError, Limits, MINUTE, Pacing, Quota, ServerCounters,
};
use crate::token::TokenFingerprint;

mod unseen;
use unseen::{Reach, Unseen};

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(60 * 60);
/// A process that wakes later than its fleet start by more than this (or the pacing margin,
/// when larger) books again: a timer's ordinary lateness is a millisecond or two.
const LATE_WAKE: Duration = Duration::from_millis(25);
/// How many times a process that woke too late for its fleet start books again.
const MAX_REBOOKS: u32 = 2;
/// A send this close to its slot counts as on time.
const ON_TIME: Duration = Duration::from_millis(1);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Longest block [`RateLimiter::server_exhausted`] records, so a wild
/// `Retry-After` cannot overflow the clock.
const MAX_BLOCK: Duration = Duration::from_secs(366 * 24 * 60 * 60);

/// Paces the requests of one token. Cheap to clone; clones share state.
#[derive(Clone)]
pub(crate) struct RateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    limits: Limits,
    pacing: Pacing,
    /// The fleet's shared windows, when the token's budget is shared across processes.
    fleet: Option<FleetLink>,
    classes: Mutex<[ClassLog; 2]>,
}

/// A limiter's place in a fleet.
struct FleetLink {
    fleet: Fleet,
    token: TokenFingerprint,
    /// One exchange with the store at a time: a booking's floor is read from the local log
    /// and the booking entered into it in one turn, so two calls of the process never get
    /// grants closer than the process allows itself.
    turn: tokio::sync::Mutex<()>,
    health: Mutex<Health>,
}

impl FleetLink {
    fn health(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a process knows of its fleet's store.
#[derive(Default)]
struct Health {
    /// The store failed last time: warn once per outage.
    failing: bool,
    /// After a failure the store is tried again from this instant on, so an unreachable
    /// store does not cost every call its connection timeout.
    retry_at: Option<Instant>,
    /// The store's generation as last seen (empty before its first answer).
    generation: String,
    /// By class: the store has not been given this process's starts since the process
    /// started, the store failed, or the store lost its data.
    unsynced: [bool; 2],
    /// Until then bookings keep the process's fallback share as their floor (see
    /// [`FLEET_GRACE`]).
    grace_until: Option<Instant>,
    /// A task is recording this process's starts in the store once it answers again.
    resyncing: bool,
    /// When the store was last asked by the watch or answered a booking: every answer says
    /// whether it still holds what the process gave it.
    last_answer: Option<Instant>,
    /// A task asks the store that question when the process has not for a while (see
    /// [`RateLimiter::watch`]).
    watching: bool,
    /// Answers in a row slower than [`SLOW_ANSWER`].
    slow_answers: u32,
    /// Starts the store may hold that no call will make, found while it was down, each with
    /// when it was found: given back by the task that gives it the history once it answers
    /// (one that no window counts any more is left alone).
    to_give_back: Vec<(LimitClass, u64, Instant)>,
}

impl Health {
    /// Whether the store is marked down at `now`: calls pace on their share until
    /// `retry_at`.
    fn down_at(&self, now: Instant) -> bool {
        self.retry_at.is_some_and(|at| at > now)
    }

    /// Keeps the start `id` of `class` to give back once the store answers, when the store
    /// is marked down now (it is not asked before); `false` when it is not.
    fn give_back_later(&mut self, class: LimitClass, id: u64) -> bool {
        let now = Instant::now();
        if !self.down_at(now) {
            return false;
        }
        self.to_give_back.push((class, id, now));
        true
    }
}

/// How long a process paces on its own share after the fleet's store failed.
const FLEET_RETRY_AFTER: Duration = Duration::from_secs(2);

/// After the store answers again (or turns out to have lost its data), a process keeps its
/// fallback share as the floor of its bookings for this long. The store learns what each
/// process sent during the outage only when that process reaches it again, which happens
/// within [`FLEET_RETRY_AFTER`] plus one failed attempt (a store's timeout, 1 s for Redis) of
/// the store's return, whether or not the process makes calls (a task retries for it): until
/// then the others still pace on their shares, invisible to the store, and a process that
/// took the whole budget from the store would go over it together with them. A store emptied
/// under a process that saw no failure (a flush, a failover to an empty replica) is found by
/// its watch within [`FLEET_RETRY_AFTER`] of its last answer, and given the history in the
/// next round trip.
const FLEET_GRACE: Duration = Duration::from_millis(3500);

/// Marks `link`'s store down: calls pace on the share until [`FLEET_RETRY_AFTER`] from now,
/// and what they book is unseen by the store; warns once per outage. `reason` labels the
/// metric: `failed` or `slow`.
fn mark_down(link: &FleetLink, health: &mut Health, error: &FleetError, reason: &'static str) {
    health.retry_at = Some(Instant::now() + FLEET_RETRY_AFTER);
    health.unsynced = [true; 2];
    health.slow_answers = 0;
    crate::telemetry::fleet_store_down(reason);
    if std::mem::replace(&mut health.failing, true) {
        tracing::debug!(%error, "the fleet's budget store still fails");
    } else {
        tracing::warn!(
            %error,
            share = link.fleet.fallback_share,
            "the fleet's budget store is unreachable or too slow: pacing to a share of the budget"
        );
    }
}

/// An answer of the fleet's store slower than this is slow: every call of the process waits
/// for it behind the one before (bookings take turns), so a store answering in 900 ms would
/// have the process send less than one call a second however much the budget allows.
const SLOW_ANSWER: Duration = Duration::from_millis(500);

/// After this many slow answers in a row the store is treated as down (a warning, the
/// metric `pubapi_fleet_store_down_total{reason="slow"}`): the process paces on its share,
/// which keeps the fleet within the budget without waiting on the store, and asks it again
/// after [`FLEET_RETRY_AFTER`].
const SLOW_ANSWERS_IN_A_ROW: u32 = 3;

/// How long a start counts: the longest window of `budget`, and the margin.
fn longest_window(budget: Budget, pacing: Pacing) -> Duration {
    let window = if budget.per_day.is_some() {
        DAY
    } else if budget.per_hour.is_some() {
        HOUR
    } else if budget.per_minute.is_some() {
        MINUTE
    } else {
        SECOND
    };
    window + pacing.margin
}

/// What a pass of [`RateLimiter::resync`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resync {
    /// The store has seen every start, and has every start no call will make back.
    Done,
    /// The store answered, and there is more to give it: starts booked on the share while
    /// the history was out.
    MoreToDo,
    /// The store failed.
    Failed,
}

/// Start times of one class, ascending, plus a block set by the server.
#[derive(Default)]
struct ClassLog {
    starts: VecDeque<Start>,
    /// The id of the next booking.
    next_id: u64,
    blocked_until: Option<Instant>,
    /// What the server's headers said last.
    server: Option<ServerCounters>,
    /// Calls the server counted that this log has no start for (another client of the token,
    /// a restart), where its counters place them ([`unseen`]).
    unseen: Unseen,
    /// The last answer that carried the day's count: when it came and the count.
    answered: Option<(Instant, u32)>,
}

/// One booked or made start.
#[derive(Debug, Clone, Copy)]
struct Start {
    at: Instant,
    id: u64,
}

/// The limiters of the process, by token fingerprint.
type Registry = Mutex<HashMap<TokenFingerprint, Weak<Inner>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl RateLimiter {
    /// A limiter with these budgets, the default [`Pacing`] and no requests
    /// yet, shared with nobody.
    pub(crate) fn new(limits: Limits) -> Self {
        RateLimiter::with_pacing(limits, Pacing::default())
    }

    /// A limiter with these budgets and this pacing, shared with nobody.
    pub(crate) fn with_pacing(limits: Limits, pacing: Pacing) -> Self {
        RateLimiter {
            inner: Arc::new(Inner {
                limits,
                pacing,
                fleet: None,
                classes: Mutex::new(Default::default()),
            }),
        }
    }

    /// A limiter whose windows live in `fleet`'s store, shared by every process of the fleet
    /// that uses the token `token` (see [`crate::fleet`]).
    pub(crate) fn in_fleet(
        limits: Limits,
        pacing: Pacing,
        fleet: Fleet,
        token: TokenFingerprint,
    ) -> Self {
        RateLimiter {
            inner: Arc::new(Inner {
                limits,
                pacing,
                fleet: Some(FleetLink {
                    fleet,
                    token,
                    turn: tokio::sync::Mutex::new(()),
                    health: Mutex::new(Health {
                        unsynced: [true; 2],
                        ..Health::default()
                    }),
                }),
                classes: Mutex::new(Default::default()),
            }),
        }
    }

    /// The limiter of the token with this fingerprint in this process: the one already in
    /// use by another client of the token, or a new one with `limits`, `pacing` and `fleet`.
    ///
    /// # Errors
    /// [`BudgetConflict`] when the token's limiter has other settings: they could not take
    /// effect, and a client must not believe they do.
    pub(crate) fn for_token(
        fingerprint: TokenFingerprint,
        limits: Limits,
        pacing: Pacing,
        fleet: Option<Fleet>,
    ) -> Result<Self, BudgetConflict> {
        let mut registry = registry().lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(inner) = registry.get(&fingerprint).and_then(Weak::upgrade) {
            let limiter = RateLimiter { inner };
            limiter.agrees_with(limits, pacing, fleet.as_ref())?;
            return Ok(limiter);
        }
        registry.retain(|_, weak| weak.strong_count() > 0);
        let limiter = match fleet {
            Some(fleet) => RateLimiter::in_fleet(limits, pacing, fleet, fingerprint),
            None => RateLimiter::with_pacing(limits, pacing),
        };
        registry.insert(fingerprint, Arc::downgrade(&limiter.inner));
        Ok(limiter)
    }

    /// Whether this limiter has these settings; the first that differs otherwise.
    fn agrees_with(
        &self,
        limits: Limits,
        pacing: Pacing,
        fleet: Option<&Fleet>,
    ) -> Result<(), BudgetConflict> {
        let conflict = |setting, existing: String, requested: String| {
            Err(BudgetConflict {
                setting,
                existing,
                requested,
            })
        };
        if self.inner.limits != limits {
            return conflict("limits", self.inner.limits.to_string(), limits.to_string());
        }
        if self.inner.pacing != pacing {
            return conflict("pacing", self.inner.pacing.to_string(), pacing.to_string());
        }
        let known = self.inner.fleet.as_ref().map(|link| &link.fleet);
        if fleet_identity(known) != fleet_identity(fleet) {
            let (existing, mut requested) = (fleet_words(known), fleet_words(fleet));
            if existing == requested {
                requested.push_str(", on another store");
            }
            return conflict("fleet", existing, requested);
        }
        Ok(())
    }

    /// Whether two handles share one limiter.
    pub(crate) fn same_as(&self, other: &RateLimiter) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the windows live in a fleet's store.
    pub(crate) fn has_fleet(&self) -> bool {
        self.inner.fleet.is_some()
    }

    /// Waits for the earliest start slot of `class` and returns once the
    /// request may be sent; call [`Permit::sent`] when it leaves.
    ///
    /// The slot is booked at once, so concurrent callers get distinct slots
    /// in call order. When the slot is free now, this returns without a timer.
    /// Fails without booking when the slot is more than `max_wait` away: with
    /// [`LimitError::DailyBudgetExhausted`] when a long window (day, minute)
    /// or a block from [`RateLimiter::server_exhausted`] is the cause, with
    /// [`LimitError::WouldExceedDeadline`] when only the per-second queue is.
    /// If the returned future is dropped while waiting, the slot is given back (to the
    /// fleet's store too, see [`FleetGrant`]); slots booked after it keep their places, which
    /// can only make the limiter stricter.
    pub(crate) async fn acquire(
        &self,
        class: LimitClass,
        max_wait: Duration,
    ) -> Result<Permit<'_>, LimitError> {
        self.acquire_from(class, max_wait, Instant::now()).await
    }

    /// [`RateLimiter::acquire`], for a caller that read the clock just before (`called`).
    pub(crate) async fn acquire_from(
        &self,
        class: LimitClass,
        max_wait: Duration,
        called: Instant,
    ) -> Result<Permit<'_>, LimitError> {
        let mut share = 1;
        let mut now = called;
        if let Some(link) = &self.inner.fleet {
            // Boxed, like every wait: a free local slot's future stays small.
            match Box::pin(self.through_fleet(link, class, max_wait, called)).await {
                Ok(permit) => return permit,
                Err(fallback_share) => share = fallback_share,
            }
            now = Instant::now();
        }
        match self.book_local(class, max_wait, now, share, called)? {
            Acquired::Now(permit) => Ok(permit),
            Acquired::Later(booking) => Box::pin(self.wait_for(booking, called)).await,
        }
    }

    /// The local part of [`RateLimiter::acquire_from`], without a future: the permit when the
    /// slot booked is free `now`, or the booking to wait for ([`RateLimiter::wait_for`]). A
    /// limiter without a fleet is paced by this alone, so the usual call with a free slot
    /// makes no future for it.
    pub(crate) fn book_local(
        &self,
        class: LimitClass,
        max_wait: Duration,
        now: Instant,
        share: u32,
        called: Instant,
    ) -> Result<Acquired<'_>, LimitError> {
        let booking = self.book(class, max_wait, now, share)?;
        if booking.at > now {
            return Ok(Acquired::Later(booking));
        }
        // Free now: nothing to wait for and nothing that could have moved it.
        let (at, id) = booking.keep();
        Ok(Acquired::Now(Permit {
            limiter: self,
            class,
            start: (at, id),
            // Read only when a fleet's store was asked first.
            waited: if now == called {
                Duration::ZERO
            } else {
                now.saturating_duration_since(called)
            },
        }))
    }

    /// Books through the fleet's store, unless it failed less than [`FLEET_RETRY_AFTER`] ago;
    /// `Err` with the share of the budget to pace to locally when the store failed.
    async fn through_fleet(
        &self,
        link: &FleetLink,
        class: LimitClass,
        max_wait: Duration,
        called: Instant,
    ) -> Result<Result<Permit<'_>, LimitError>, u32> {
        let resting = link.health().down_at(called);
        if resting {
            return Err(link.fleet.fallback_share);
        }
        match self.reserve_in_fleet(link, class, max_wait).await {
            Ok(permit) => Ok(permit),
            Err(Some(error)) => {
                self.store_failed(link, &error);
                Err(link.fleet.fallback_share)
            }
            // The store failed for a call this one waited behind.
            Err(None) => Err(link.fleet.fallback_share),
        }
    }

    /// The store failed: pace on the fallback share, try it again after [`FLEET_RETRY_AFTER`],
    /// and have a task give it this process's starts once it answers.
    fn store_failed(&self, link: &FleetLink, error: &FleetError) {
        let mut health = link.health();
        mark_down(link, &mut health, error, "failed");
        self.resync_later(health);
    }

    /// Has a task give the store what it has not seen ([`RateLimiter::resync`]) every
    /// [`FLEET_RETRY_AFTER`] until it is done, unless one already does.
    fn resync_later(&self, mut health: std::sync::MutexGuard<'_, Health>) {
        if !health.resyncing
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            health.resyncing = true;
            // Released first: a runtime that is shutting down drops a task at once, and its
            // flag then takes the lock.
            drop(health);
            let inner = Arc::downgrade(&self.inner);
            // Made before the task first runs: a runtime may drop it unpolled.
            let task = TaskFlag::new(inner.clone(), |health| &mut health.resyncing);
            runtime.spawn(async move {
                loop {
                    tokio::time::sleep(FLEET_RETRY_AFTER).await;
                    let Some(inner) = inner.upgrade() else { return };
                    if (RateLimiter { inner }).resync().await == Resync::Done {
                        // `resync` cleared the flag.
                        return task.done();
                    }
                }
            });
        }
    }

    /// Gives the store this process's starts of every class it has not seen, and back the
    /// starts no call will make ([`Health::to_give_back`]).
    async fn resync(&self) -> Resync {
        let Some(link) = &self.inner.fleet else {
            return Resync::Done;
        };
        // Down again: what is booked from now on is booked on the share, unseen, including
        // in a class whose history has just been given.
        let still_down = |error: &FleetError| {
            mark_down(link, &mut link.health(), error, "failed");
            Resync::Failed
        };
        let turn = link.turn.lock().await;
        for class in [LimitClass::General, LimitClass::Ai] {
            if !link.health().unsynced[index(class)] {
                continue;
            }
            let (next_id, history) = {
                let now = Instant::now();
                let mut classes = self.lock();
                let log = &mut classes[index(class)];
                log.prune(self.inner.limits.budget(class), self.inner.pacing, now);
                (log.next_id, log.history(now))
            };
            let generation = link.health().generation.clone();
            let request = self.booking_nothing(link, class, next_id, Some(&history), &generation);
            match link.fleet.budget.reserve(request).await {
                Ok(answer) => self.answered(link, class, &answer, Some(next_id)),
                Err(error) => return still_down(&error),
            }
        }
        // No history lists these starts any more (each left the log before it was put
        // here): bookings need not wait behind their give-backs. One that no window of its
        // class counts any more (twice the longest: a start may have been booked ahead of
        // when it was found) is gone from the store already.
        drop(turn);
        let to_give_back = std::mem::take(&mut link.health().to_give_back);
        let now = Instant::now();
        for (at, &(class, id, found)) in to_give_back.iter().enumerate() {
            let counted = longest_window(self.inner.limits.budget(class), self.inner.pacing);
            if now.saturating_duration_since(found) > counted * 2 {
                continue;
            }
            if let Err(error) = link.fleet.budget.give_back(&link.token, class, id).await {
                link.health()
                    .to_give_back
                    .extend_from_slice(&to_give_back[at..]);
                return still_down(&error);
            }
        }
        let mut health = link.health();
        // Starts booked on the share while the history was out (the fallback path takes no
        // turn) are given on the next pass: a process that makes no call through the store
        // has nothing else to give them.
        if health.unsynced.contains(&true) || !health.to_give_back.is_empty() {
            return Resync::MoreToDo;
        }
        health.resyncing = false;
        Resync::Done
    }

    /// Asks the store, [`FLEET_RETRY_AFTER`] after its last answer, whether it still holds
    /// what this process gave it, and gives it the history when it does not: a store emptied
    /// under a process that makes no call (a flush, a failover to an empty replica: no
    /// failure to see) would otherwise count none of the process's starts, and the others
    /// would book them again. Ends when the limiter is dropped or has no start left that a
    /// window counts (the next answer starts it again).
    async fn watch(inner: Weak<Inner>, task: TaskFlag) {
        loop {
            let next = {
                let Some(inner) = inner.upgrade() else { return };
                let Some(link) = &inner.fleet else { return };
                let health = link.health();
                health.last_answer.map(|at| at + FLEET_RETRY_AFTER)
            };
            if let Some(next) = next
                && next > Instant::now()
            {
                tokio::time::sleep_until(next).await;
                continue;
            }
            let Some(inner) = inner.upgrade() else { return };
            if !(RateLimiter { inner }).check_store().await {
                // `check_store` cleared the flag.
                return task.done();
            }
        }
    }

    /// A request that books nothing: it records `history`, or (without one) asks whether the
    /// store still holds what the process gave it.
    fn booking_nothing<'a>(
        &'a self,
        link: &'a FleetLink,
        class: LimitClass,
        next_id: u64,
        history: Option<&'a [HistoryStart]>,
        generation: &'a str,
    ) -> Reserve<'a> {
        Reserve {
            token: &link.token,
            class,
            budget: self.inner.limits.budget(class),
            pacing: self.inner.pacing,
            max_wait: Duration::ZERO,
            not_before: Duration::ZERO,
            book: false,
            id: next_id,
            history,
            generation,
        }
    }

    /// One question of [`RateLimiter::watch`]; `false` when the watch ends.
    async fn check_store(&self) -> bool {
        let Some(link) = &self.inner.fleet else {
            return false;
        };
        let woke_after = link.health().last_answer;
        let now = Instant::now();
        let class = {
            let mut classes = self.lock();
            let mut counted = None;
            for class in [LimitClass::General, LimitClass::Ai] {
                let log = &mut classes[index(class)];
                log.prune(self.inner.limits.budget(class), self.inner.pacing, now);
                if !log.starts.is_empty() {
                    counted = Some(class);
                }
            }
            counted
        };
        let (failing, generation) = {
            let mut health = link.health();
            if class.is_none() {
                // A booking answered since the watch woke may not be in the log yet: the
                // watch goes on for it. Otherwise the next answer starts a new watch.
                if health.last_answer != woke_after {
                    return true;
                }
                health.watching = false;
                return false;
            }
            // Asked again from now on, whatever the answer.
            health.last_answer = Some(now);
            (health.failing, health.generation.clone())
        };
        // A store that failed is asked by the task that gives it the history once it answers:
        // started again here if it is gone (its runtime was dropped, while this one runs),
        // or an idle process would never give the store what it booked on its share.
        let Some(class) = class.filter(|_| !failing) else {
            self.resync_later(link.health());
            return true;
        };
        let next_id = self.lock()[index(class)].next_id;
        let request = self.booking_nothing(link, class, next_id, None, &generation);
        match link.fleet.budget.reserve(request).await {
            // A booking made meanwhile learned the store's new generation and gave it the
            // history: this answer is older news.
            Ok(_) if link.health().generation != generation => {}
            Ok(answer) => {
                self.answered(link, class, &answer, None);
                if answer.reservation == Reservation::HistoryNeeded {
                    link.health().unsynced = [true; 2];
                    match self.resync().await {
                        Resync::Done => {}
                        // Starts booked meanwhile: the task that gives the history does them.
                        Resync::MoreToDo => self.resync_later(link.health()),
                        // Failed on the way: the task that retries a failed store takes over.
                        Resync::Failed => {
                            let error = FleetError::new("failed while given the history");
                            self.store_failed(link, &error);
                        }
                    }
                }
            }
            Err(error) => self.store_failed(link, &error),
        }
        true
    }

    /// Takes in what the store answered to a request that carried the history up to
    /// `synced_before` (an id) when it carried one.
    fn answered(
        &self,
        link: &FleetLink,
        class: LimitClass,
        answer: &Answer,
        synced_before: Option<u64>,
    ) {
        let now = Instant::now();
        let mut health = link.health();
        let recovered = std::mem::take(&mut health.failing);
        health.retry_at = None;
        health.last_answer = Some(now);
        let watch = if health.watching {
            None
        } else {
            let runtime = tokio::runtime::Handle::try_current().ok();
            health.watching = runtime.is_some();
            runtime
        };
        if recovered {
            tracing::info!("the fleet's budget store answers again");
        }
        if answer.lost_history {
            tracing::warn!(
                "the fleet's budget store lost its data: every process records its starts again"
            );
            health.unsynced = [true; 2];
        }
        if recovered || answer.lost_history {
            health.grace_until = Some(now + FLEET_GRACE);
        }
        health.generation.clone_from(&answer.generation);
        if let Some(before) = synced_before
            && answer.reservation != Reservation::HistoryNeeded
        {
            // Recorded; starts booked locally while the request was out (the fallback path
            // does not take turns) are still to be.
            health.unsynced[index(class)] = self.lock()[index(class)].next_id > before;
        }
        // Released first: a runtime that is shutting down drops a task at once, and its flag
        // then takes the lock.
        drop(health);
        if let Some(runtime) = watch {
            let inner = Arc::downgrade(&self.inner);
            // Made before the task first runs: a runtime may drop it unpolled.
            let task = TaskFlag::new(inner.clone(), |health| &mut health.watching);
            runtime.spawn(Self::watch(inner, task));
        }
    }

    /// Counts an answer of the store that took `answered_in`: the third slow one in a row marks
    /// the store down (see [`SLOW_ANSWER`]); this call keeps its answer.
    fn timed(&self, link: &FleetLink, answered_in: Duration) {
        let mut health = link.health();
        if answered_in <= SLOW_ANSWER {
            health.slow_answers = 0;
            return;
        }
        health.slow_answers += 1;
        if health.slow_answers >= SLOW_ANSWERS_IN_A_ROW {
            let error = FleetError::unavailable(format!(
                "answered slower than {} ms {SLOW_ANSWERS_IN_A_ROW} times in a row (the last in {} ms)",
                SLOW_ANSWER.as_millis(),
                answered_in.as_millis()
            ));
            mark_down(link, &mut health, &error, "slow");
            self.resync_later(health);
        }
    }

    /// Books through the fleet's store; `Err` when the store failed (the caller falls back to
    /// a local share; `None` when the failure is recorded already: this call's, or that of a
    /// call this one waited behind), `Ok` with the permit or the refusal otherwise.
    async fn reserve_in_fleet(
        &self,
        link: &FleetLink,
        class: LimitClass,
        max_wait: Duration,
    ) -> Result<Result<Permit<'_>, LimitError>, Option<FleetError>> {
        let called = Instant::now();
        let budget = self.inner.limits.budget(class);
        let pacing = self.inner.pacing;
        for rebooking in 0..=MAX_REBOOKS {
            let max_wait = max_wait.saturating_sub(called.elapsed());
            let turn = link.turn.lock().await;
            // Calls queued behind one that found the store down do not each wait for its timeout.
            if link.health().down_at(Instant::now()) {
                return Err(None);
            }
            let mut wait = None;
            // After an answer that came too late to use, ask for a start at least twice that
            // answer's time ahead.
            let mut ahead = Duration::ZERO;
            for _ in 0..4 {
                let now = Instant::now();
                let (unsynced, share, generation) = {
                    let health = link.health();
                    let share = match health.grace_until {
                        Some(until) if until > now => link.fleet.fallback_share,
                        _ => 1,
                    };
                    (
                        health.unsynced[index(class)],
                        share,
                        health.generation.clone(),
                    )
                };
                // The process's own floor: its windows, its spacing, its share during a grace.
                let (floor, id, history) = {
                    let mut classes = self.lock();
                    let log = &mut classes[index(class)];
                    log.prune(budget, pacing, now);
                    let Some(slot) = log.earliest(budget, pacing, now, share) else {
                        return Ok(Err(LimitError::NoBudget { class }));
                    };
                    let floor = (slot.at - now).max(ahead);
                    if floor > max_wait {
                        return Ok(Err(LimitError::too_far(
                            class,
                            floor,
                            slot.long - now,
                            max_wait,
                        )));
                    }
                    let id = log.next_id;
                    log.next_id += 1;
                    (floor, id, unsynced.then(|| log.history(now)))
                };
                let request = Reserve {
                    token: &link.token,
                    class,
                    budget,
                    pacing,
                    max_wait,
                    not_before: floor,
                    book: true,
                    id,
                    history: history.as_deref(),
                    generation: &generation,
                };
                let asked = Instant::now();
                // Armed while the store may hold a start this call will not make: a caller that
                // stops waiting now, or for the start, gives it back.
                let grant = FleetGrant {
                    limiter: self,
                    class,
                    id,
                    armed: true,
                };
                // On an error the grant drops armed: the store may have booked before its answer
                // was lost; it is given back once the store answers again (found down first, so
                // that no give-back waits for a store that does not answer), and the process
                // books again on its share.
                let answer = match link.fleet.budget.reserve(request).await {
                    Ok(answer) => answer,
                    Err(error) => {
                        self.store_failed(link, &error);
                        return Err(None);
                    }
                };
                let answered_in = asked.elapsed();
                crate::telemetry::fleet_store_answer(class, answered_in);
                self.answered(link, class, &answer, unsynced.then_some(id + 1));
                self.timed(link, answered_in);
                match answer.reservation {
                    Reservation::Granted { wait: granted } => {
                        wait = Some((granted, grant));
                        break;
                    }
                    Reservation::Refused { wait, long_wait } => {
                        grant.keep();
                        return Ok(Err(LimitError::too_far(class, wait, long_wait, max_wait)));
                    }
                    Reservation::NoBudget => {
                        grant.keep();
                        return Ok(Err(LimitError::NoBudget { class }));
                    }
                    // The store is not the one the process knew: again, with the history.
                    Reservation::HistoryNeeded => {
                        grant.keep();
                        link.health().unsynced[index(class)] = true;
                    }
                    // Booked in the past, where nobody will start: given back as the grant drops,
                    // and the next asks further ahead.
                    Reservation::Missed { late_by } => {
                        drop(grant);
                        tracing::debug!(
                            late_by_ms = late_by.as_millis() as u64,
                            "the fleet's store answered after the start it booked: booking again"
                        );
                        ahead = ahead.max(answered_in * 2);
                    }
                }
            }
            let Some((wait, grant)) = wait else {
                return Err(Some(FleetError::new(
                    "the store answered four times without a start to use",
                )));
            };
            let at = Instant::now() + wait;
            // Entered at once, so the next booking's floor counts it.
            self.lock()[index(class)].insert_at(at, grant.id);
            drop(turn);
            if !wait.is_zero() {
                tokio::time::sleep_until(at).await;
            }
            let now = Instant::now();
            let blocked = self.lock()[index(class)]
                .blocked_until
                .filter(|until| *until > now);
            if let Some(until) = blocked {
                // Not made: the grant goes back to the store as it drops.
                drop(grant);
                return Ok(Err(LimitError::DailyBudgetExhausted {
                    class,
                    available_in: until - now,
                }));
            }
            // Woken later than the booked start by more than the margin (the process was
            // descheduled, the runtime busy): sent now, the call would crowd the starts the
            // fleet booked after it, which its own log cannot move. Given back, booked again.
            let late = now.saturating_duration_since(at);
            if late > pacing.margin.max(LATE_WAKE) && rebooking < MAX_REBOOKS {
                tracing::warn!(
                    late_ms = late.as_millis() as u64,
                    "woke later than the fleet's booked start by more than the margin: booking again"
                );
                // Given back before booking again, so that the store never counts both (a
                // day at its limit would refuse the new one).
                let id = grant.keep();
                self.lock()[index(class)].remove(id);
                if let Err(error) = link.fleet.budget.give_back(&link.token, class, id).await {
                    link.health().to_give_back.push((class, id, Instant::now()));
                    self.store_failed(link, &error);
                    return Err(None);
                }
                continue;
            }
            let id = grant.keep();
            return Ok(Ok(Permit {
                limiter: self,
                class,
                start: (at, id),
                waited: now.saturating_duration_since(called),
            }));
        }
        Err(Some(FleetError::new(
            "the process woke too late for every start the store booked",
        )))
    }

    /// Waits for a slot booked in the future, following it when an earlier request that left
    /// late moves it.
    pub(crate) async fn wait_for<'a>(
        &'a self,
        booking: Booking<'a>,
        called: Instant,
    ) -> Result<Permit<'a>, LimitError> {
        let class = booking.class;
        let mut at = booking.at;
        loop {
            if at > Instant::now() {
                tokio::time::sleep_until(at).await;
            }
            let now = Instant::now();
            let mut classes = self.lock();
            let log = &mut classes[index(class)];
            if let Some(until) = log.blocked_until
                && until > now
            {
                // The server declared the quota used up while we waited.
                drop(classes);
                drop(booking);
                return Err(LimitError::DailyBudgetExhausted {
                    class,
                    available_in: until - now,
                });
            }
            // An earlier request that left late moved this slot with it: wait for it.
            let current = log.find(booking.id).map(|i| log.starts[i].at);
            if let Some(current) = current
                && current > now
            {
                at = current;
                continue;
            }
            drop(classes);
            let (_, id) = booking.keep();
            return Ok(Permit {
                limiter: self,
                class,
                start: (current.unwrap_or(at), id),
                waited: now.saturating_duration_since(called),
            });
        }
    }

    /// How much of `class`'s budget is used, counting booked slots.
    pub(crate) fn quota(&self, class: LimitClass) -> Quota {
        let now = Instant::now();
        let budget = self.inner.limits.budget(class);
        let pacing = self.inner.pacing;
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.prune(budget, pacing, now);
        let used_today = budget
            .per_day
            .map(|_| u32::try_from(log.count()).unwrap_or(u32::MAX));
        let next_slot_in = match log.earliest(budget, pacing, now, 1) {
            Some(slot) => slot.at - now,
            None => Duration::MAX,
        };
        Quota {
            used_today,
            remaining_today: budget
                .per_day
                .zip(used_today)
                .map(|(limit, used)| limit.saturating_sub(used)),
            per_day: budget.per_day,
            next_slot_in,
            server: log.server,
        }
    }

    /// Records that the server said the daily quota of `class` is used up
    /// (its counting can differ from ours): no request of the class starts
    /// before `retry_after` from now. Callers already waiting for a slot
    /// before then fail with [`LimitError::DailyBudgetExhausted`].
    pub(crate) fn server_exhausted(&self, class: LimitClass, retry_after: Duration) {
        let now = Instant::now();
        let until = now + retry_after.min(MAX_BLOCK);
        let mut classes = self.lock();
        let blocked = &mut classes[index(class)].blocked_until;
        *blocked = Some(blocked.map_or(until, |b| b.max(until)));
    }

    /// Takes in the gateway's counters of a response of `class`: [`Quota`] shows them, and
    /// the calls the server counted that this limiter did not make are counted where the
    /// counters place them ([`unseen`]): the increase since this limiter's previous answer,
    /// beyond its own starts since then, between the two answers in every window; the day's
    /// count beyond what the log holds in the daily window only (a count, whatever the header
    /// claims, never a list). A lower count than the previous answer's (the gateway's day
    /// turned) places nothing between them.
    pub(crate) fn observe(&self, class: LimitClass, counters: ServerCounters) {
        let now = Instant::now();
        let budget = self.inner.limits.budget(class);
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.server = Some(counters);
        let Some(server_used) = counters.quota_current else {
            return;
        };
        let cap = budget.per_day.unwrap_or(u32::MAX);
        if let Some((before, previous)) = log.answered.replace((now, server_used))
            && let Some(increase) = server_used.checked_sub(previous)
        {
            let own = log.starts.partition_point(|s| s.at <= now)
                - log.starts.partition_point(|s| s.at <= before);
            let others = increase
                .saturating_sub(u32::try_from(own).unwrap_or(u32::MAX))
                .min(cap);
            log.unseen
                .add(before + (now - before) / 2, others, Reach::Every);
        }
        if budget.per_day.is_some() {
            let ours = u32::try_from(log.count()).unwrap_or(u32::MAX);
            let missing = server_used.saturating_sub(ours).min(cap);
            log.unseen.add(now, missing, Reach::DayOnly);
        }
    }

    fn book(
        &self,
        class: LimitClass,
        max_wait: Duration,
        now: Instant,
        share: u32,
    ) -> Result<Booking<'_>, LimitError> {
        let budget = self.inner.limits.budget(class);
        let pacing = self.inner.pacing;
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.prune(budget, pacing, now);
        let slot = log
            .earliest(budget, pacing, now, share)
            .ok_or(LimitError::NoBudget { class })?;
        // Compared before subtracting: a free slot (the usual) costs no clock arithmetic.
        if slot.at > now && slot.at - now > max_wait {
            return Err(LimitError::too_far(
                class,
                slot.at - now,
                slot.long - now,
                max_wait,
            ));
        }
        let id = log.next_id;
        log.next_id += 1;
        log.starts.push_back(Start { at: slot.at, id });
        Ok(Booking {
            limiter: self,
            class,
            at: slot.at,
            id,
            armed: true,
        })
    }

    fn lock(&self) -> MutexGuard<'_, [ClassLog; 2]> {
        // The state stays consistent even if a holder panicked.
        self.inner
            .classes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many starts of `class` the log holds.
    #[cfg(test)]
    pub(crate) fn log_len(&self, class: LimitClass) -> usize {
        self.lock()[index(class)].starts.len()
    }
}

impl Default for RateLimiter {
    /// A limiter with [`Limits::default`] and [`Pacing::default`].
    fn default() -> Self {
        RateLimiter::new(Limits::default())
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limits", &self.inner.limits)
            .field("pacing", &self.inner.pacing)
            .finish_non_exhaustive()
    }
}

/// What makes two fleets the same: their store (as it describes itself, which for Redis is
/// the server without credentials and the key prefix) and fallback share.
fn fleet_identity(fleet: Option<&Fleet>) -> String {
    match fleet {
        None => "no fleet".to_string(),
        Some(fleet) => format!(
            "{:?} with a fallback share of 1/{}",
            fleet.budget, fleet.fallback_share
        ),
    }
}

/// A fleet in a person's words, for [`BudgetConflict`].
fn fleet_words(fleet: Option<&Fleet>) -> String {
    match fleet {
        None => "no fleet".to_string(),
        Some(fleet) => format!(
            "a fleet whose processes keep to 1/{} of the budget while its store is down",
            fleet.fallback_share
        ),
    }
}

fn index(class: LimitClass) -> usize {
    match class {
        LimitClass::General => 0,
        LimitClass::Ai => 1,
    }
}

/// The earliest start and the part of it owed to the long windows (day,
/// minute) and server blocks.
struct Slot {
    at: Instant,
    long: Instant,
}

impl ClassLog {
    /// The position of the start with this id: searched from the newest, where it usually is.
    fn find(&self, id: u64) -> Option<usize> {
        self.starts.iter().rposition(|s| s.id == id)
    }

    /// Forgets the start with this id (a booking given back). Bookings after it keep their
    /// slots: that can only be stricter.
    fn remove(&mut self, id: u64) {
        if let Some(i) = self.find(id) {
            self.starts.remove(i);
        }
    }

    /// Counts a start at `at` with the id `id` (taken from `next_id` before), in order among
    /// the booked ones.
    fn insert_at(&mut self, at: Instant, id: u64) {
        let i = self.starts.partition_point(|s| s.at <= at);
        self.starts.insert(i, Start { at, id });
    }

    /// The starts of the log for a fleet's store, as offsets from `now`.
    fn history(&self, now: Instant) -> Vec<HistoryStart> {
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.starts
            .iter()
            .map(|s| HistoryStart {
                id: s.id,
                offset_us: if s.at >= now {
                    micros(s.at - now)
                } else {
                    -micros(now - s.at)
                },
            })
            .collect()
    }

    /// How many starts the log counts in its daily window: those it lists and those the
    /// server counted unseen.
    fn count(&self) -> usize {
        self.starts.len() + self.unseen.count()
    }

    /// The `k`-th latest start (`k` ≥ 1) a window counts, if there are `k`: the listed
    /// starts and the unseen ones in their place, all of them for the daily window (`day`),
    /// for the shorter ones only those placed between two answers.
    fn kth_latest(&self, k: usize, day: bool) -> Option<Instant> {
        let len = self.starts.len();
        let listed = |j: usize| (j >= 1 && len >= j).then(|| self.starts[len - j].at);
        // Unseen starts newer than the group in hand.
        let mut newer_unseen = 0;
        for group in self.unseen.newest_first(day) {
            let newer_listed = len - self.starts.partition_point(|s| s.at <= group.at);
            if k <= newer_listed + newer_unseen {
                return listed(k - newer_unseen);
            }
            newer_unseen += group.n as usize;
            if k <= newer_listed + newer_unseen {
                return Some(group.at);
            }
        }
        listed(k - newer_unseen)
    }

    /// Drops starts that can no longer matter: older than the longest window
    /// the budget has, plus the margin.
    fn prune(&mut self, budget: Budget, pacing: Pacing, now: Instant) {
        if let Some(horizon) = now.checked_sub(longest_window(budget, pacing)) {
            while self.starts.front().is_some_and(|s| s.at <= horizon) {
                self.starts.pop_front();
            }
            self.unseen.prune(horizon);
        }
        if self.blocked_until.is_some_and(|b| b <= now) {
            self.blocked_until = None;
        }
    }

    /// The earliest start at or after `now` that keeps every window within
    /// `1 / share` of its budget, or `None` when a window allows nothing at all.
    ///
    /// Booked starts are ascending and every new one is at or after the
    /// last, so a window of `k` is respected when the new start is at least
    /// one window after the k-th latest start.
    fn earliest(&self, budget: Budget, pacing: Pacing, now: Instant, share: u32) -> Option<Slot> {
        let after_kth_latest = |k: u32, window: Duration| -> Option<Instant> {
            let k = if k == 0 { 0 } else { (k / share).max(1) };
            let k = usize::try_from(k).ok().filter(|k| *k > 0)?;
            Some(match self.kth_latest(k, window == DAY) {
                Some(at) => at + window + pacing.margin,
                None => now,
            })
        };
        let mut long = now;
        if let Some(k) = budget.per_day {
            long = long.max(after_kth_latest(k, DAY)?);
        }
        if let Some(k) = budget.per_hour {
            long = long.max(after_kth_latest(k, HOUR)?);
        }
        if let Some(k) = budget.per_minute {
            long = long.max(after_kth_latest(k, MINUTE)?);
        }
        if let Some(until) = self.blocked_until {
            long = long.max(until);
        }
        let mut at = long;
        if let Some(k) = budget.per_second {
            at = at.max(after_kth_latest(k, SECOND)?);
            if (!pacing.burst || share > 1)
                && let Some(last) = self.starts.back()
            {
                at = at.max(last.at + (SECOND + pacing.margin) * share / k);
            }
        }
        if let Some(last) = self.starts.back() {
            at = at.max(last.at);
        }
        Some(Slot { at, long })
    }
}

/// What [`RateLimiter::book_local`] got: leave to send now, or a slot to wait for.
pub(crate) enum Acquired<'a> {
    /// The slot is free now.
    Now(Permit<'a>),
    /// The slot is later: wait for it with [`RateLimiter::wait_for`].
    Later(Booking<'a>),
}

/// A booked slot, given back if the waiter goes away before it.
pub(crate) struct Booking<'a> {
    limiter: &'a RateLimiter,
    class: LimitClass,
    at: Instant,
    id: u64,
    armed: bool,
}

impl Booking<'_> {
    fn keep(mut self) -> (Instant, u64) {
        self.armed = false;
        (self.at, self.id)
    }
}

impl Drop for Booking<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.limiter.lock()[index(self.class)].remove(self.id);
    }
}

/// A flag of [`Health`] that says a task runs (`watching`, `resyncing`), cleared if the
/// runtime drops the task before it ends (a blocking client's runtime, dropped with its
/// client while another client of the token lives on): a later need starts a new task.
struct TaskFlag {
    inner: Weak<Inner>,
    flag: fn(&mut Health) -> &mut bool,
    armed: bool,
}

impl TaskFlag {
    fn new(inner: Weak<Inner>, flag: fn(&mut Health) -> &mut bool) -> Self {
        TaskFlag {
            inner,
            flag,
            armed: true,
        }
    }

    /// The task ended by itself, having cleared the flag when it should.
    fn done(mut self) {
        self.armed = false;
    }
}

impl Drop for TaskFlag {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(inner) = self.inner.upgrade()
            && let Some(link) = &inner.fleet
        {
            *(self.flag)(&mut link.health()) = false;
        }
    }
}

/// A start the fleet's store may hold for a call that has not been made yet: dropped armed
/// (its caller stopped waiting), it leaves the local log and a task gives it back to the
/// store ([`crate::fleet::FleetBudget::give_back`]), so a call never made spends nothing of
/// the fleet's budget. A give-back that fails leaves the start counted: stricter, never
/// looser.
struct FleetGrant<'a> {
    limiter: &'a RateLimiter,
    class: LimitClass,
    id: u64,
    armed: bool,
}

impl FleetGrant<'_> {
    /// The start is the call's (made, or booked on purpose): the id, disarmed.
    fn keep(mut self) -> u64 {
        self.armed = false;
        self.id
    }
}

impl Drop for FleetGrant<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.limiter.lock()[index(self.class)].remove(self.id);
        let Some(link) = &self.limiter.inner.fleet else {
            return;
        };
        // A store found down is not asked before it answers: the task that gives it the
        // history gives the start back then.
        if link.health().give_back_later(self.class, self.id) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = Arc::clone(&self.limiter.inner);
        let (class, id) = (self.class, self.id);
        runtime.spawn(async move {
            let Some(link) = &inner.fleet else { return };
            // After any request carrying a history that still lists the start (each holds
            // the turn), which would otherwise record it again.
            let _turn = link.turn.lock().await;
            // Found down meanwhile: given back with the history, once the store answers.
            if link.health().give_back_later(class, id) {
                return;
            }
            if let Err(error) = link.fleet.budget.give_back(&link.token, class, id).await {
                tracing::debug!(%error, "a start not made is given back once the store answers");
                // Down for the calls too: callers that give up before the store's timeout
                // would otherwise never learn it, and never pace on their share.
                link.health().to_give_back.push((class, id, Instant::now()));
                let limiter = RateLimiter {
                    inner: Arc::clone(&inner),
                };
                limiter.store_failed(link, &error);
            }
        });
    }
}

/// Leave to send one request, returned by [`RateLimiter::acquire`].
#[derive(Debug, Clone)]
pub(crate) struct Permit<'a> {
    /// Borrowed: a clone would make every call touch the limiter's reference count.
    limiter: &'a RateLimiter,
    class: LimitClass,
    /// The booked start and its id in the log.
    start: (Instant, u64),
    waited: Duration,
}

impl Permit<'_> {
    /// The booked start instant.
    #[cfg(test)]
    fn start(&self) -> Instant {
        self.start.0
    }

    /// How long [`RateLimiter::acquire`] waited for the slot.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }

    /// [`Permit::sent`], for a caller that sends in the same poll as it got the permit, with
    /// nothing awaited in between: a slot granted without a wait is then on time, and the
    /// clock is not read again.
    pub(crate) fn sent_in_same_poll(self) {
        if !self.waited.is_zero() {
            self.sent();
        }
    }

    /// Says the request leaves now: when that is later than its slot, its
    /// start moves to now, so the windows count it from when it really left,
    /// and every start booked after it moves by the same delay (their callers
    /// wait for the new slots), keeping their places and their spacing.
    pub(crate) fn sent(self) {
        let (booked, id) = self.start;
        let now = Instant::now();
        // Within a millisecond is on time: far below any margin, and it keeps the lock off
        // the path of a request whose slot was free.
        if now <= booked + ON_TIME {
            return;
        }
        let delay = now - booked;
        let mut classes = self.limiter.lock();
        let log = &mut classes[index(self.class)];
        if let Some(i) = log.find(id) {
            for start in log.starts.iter_mut().skip(i) {
                start.at += delay;
            }
        }
    }
}

impl PartialEq for Permit<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.limiter.same_as(other.limiter)
            && (self.class, self.start.0, self.waited) == (other.class, other.start.0, other.waited)
    }
}

impl Eq for Permit<'_> {}

#[cfg(test)]
mod tests;
