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
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use tokio::task::JoinSet;
    use tokio::time::{sleep, sleep_until, timeout};

    const GENERAL: LimitClass = LimitClass::General;
    const AI: LimitClass = LimitClass::Ai;
    const LONG: Duration = Duration::from_secs(3600);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// The rolling-window rules alone: bursts, no margin (the pacing of these tests'
    /// expectations; the default pacing has tests of its own below).
    const EXACT: Pacing = Pacing::burst(Duration::ZERO);

    fn limiter(per_second: Option<u32>, per_day: Option<u32>) -> RateLimiter {
        RateLimiter::with_pacing(
            Limits {
                general: Budget::new(per_second, per_day),
                ai: Budget::new(None, Some(100)),
            },
            EXACT,
        )
    }

    fn exact_default() -> RateLimiter {
        limiter(Some(2), Some(1000))
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_calls_at_two_per_second_start_at_0_0_1_1_2_2() {
        let limiter = exact_default();
        let t0 = Instant::now();
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let limiter = limiter.clone();
            set.spawn(async move {
                let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
                assert_eq!(Instant::now(), permit.start());
                assert_eq!(permit.waited(), permit.start() - t0);
                Instant::now() - t0
            });
        }
        let mut starts = set.join_all().await;
        starts.sort();
        let expected: Vec<Duration> = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4].map(secs).into();
        assert_eq!(starts, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn sequential_calls_wait_no_longer_than_needed() {
        let limiter = exact_default();
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..10 {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            starts.push(permit.start() - t0);
        }
        let expected: Vec<Duration> = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4].map(secs).into();
        assert_eq!(starts, expected);
        // After an idle gap the budget is there again at once.
        sleep(Duration::from_millis(2500)).await;
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        assert_eq!(permit.waited(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn per_second_queue_longer_than_max_wait_would_exceed_deadline_and_books_nothing() {
        let limiter = exact_default();
        let max_wait = Duration::from_millis(1500);
        for _ in 0..2 {
            limiter.acquire(GENERAL, max_wait).await.unwrap();
        }
        // Book 1 s and 1 s without waiting for them.
        let t0 = Instant::now();
        let (a, b) = tokio::join!(
            limiter.acquire(GENERAL, max_wait),
            limiter.acquire(GENERAL, max_wait)
        );
        assert_eq!(a.unwrap().start() - t0, secs(1));
        assert_eq!(b.unwrap().start() - t0, secs(1));
        // Now at 1 s: the next slot is at 2 s, within 1.5 s.
        let mut queue = JoinSet::new();
        for _ in 0..2 {
            let limiter = limiter.clone();
            queue.spawn(async move {
                let permit = limiter.acquire(GENERAL, max_wait).await;
                permit.map(|permit| permit.start())
            });
        }
        tokio::task::yield_now().await;
        // Slots 2 s and 2 s are booked; the next is at 3 s, 2 s away.
        assert_eq!(
            limiter.acquire(GENERAL, max_wait).await,
            Err(LimitError::WouldExceedDeadline {
                class: GENERAL,
                wait: secs(2),
                max_wait
            })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, secs(2));
        assert_eq!(limiter.quota(GENERAL).used_today, Some(6));
        for start in queue.join_all().await {
            assert_eq!(start.unwrap() - t0, secs(2));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn daily_budget_exhausted_is_returned_without_booking() {
        let limiter = limiter(None, Some(3));
        for _ in 0..3 {
            assert_eq!(
                limiter.acquire(GENERAL, secs(5)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        sleep(secs(60)).await;
        let err = limiter.acquire(GENERAL, secs(5)).await.unwrap_err();
        assert_eq!(
            err,
            LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: DAY - secs(60)
            }
        );
        assert_eq!(
            err.to_string(),
            "daily general budget exhausted, next slot in 23h 59m"
        );
        let quota = limiter.quota(GENERAL);
        assert_eq!(
            quota,
            Quota {
                server: None,
                used_today: Some(3),
                remaining_today: Some(0),
                per_day: Some(3),
                next_slot_in: DAY - secs(60),
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_allowed_to_wait_a_day_starts_exactly_when_the_window_frees() {
        let limiter = limiter(Some(2), Some(3));
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.acquire(GENERAL, secs(5)).await.unwrap();
        }
        // 0, 0, 1 s: the fourth and fifth start when both starts at 0 have
        // left the day window, the sixth when the one at 1 s has.
        let expected = [DAY, DAY, DAY + secs(1)];
        for expected in expected {
            let permit = limiter.acquire(GENERAL, DAY).await.unwrap();
            assert_eq!(permit.start() - t0, expected);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn used_today_falls_as_starts_leave_the_24_hour_window() {
        let limiter = limiter(None, Some(10));
        limiter.acquire(GENERAL, secs(0)).await.unwrap();
        sleep(secs(3600)).await;
        limiter.acquire(GENERAL, secs(0)).await.unwrap();
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
        sleep(DAY - secs(3600)).await;
        assert_eq!(limiter.quota(GENERAL).used_today, Some(1));
        assert_eq!(limiter.quota(GENERAL).remaining_today, Some(9));
        sleep(secs(3600)).await;
        assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn ai_class_is_separate_from_general() {
        let limiter = exact_default();
        for _ in 0..100 {
            assert_eq!(
                limiter.acquire(AI, secs(0)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        assert!(matches!(
            limiter.acquire(AI, secs(60)).await,
            Err(LimitError::DailyBudgetExhausted { class: AI, .. })
        ));
        assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
        let permit = limiter.acquire(GENERAL, secs(0)).await.unwrap();
        assert_eq!(permit.class, GENERAL);
        assert_eq!(permit.waited(), Duration::ZERO);
        assert_eq!(limiter.quota(AI).remaining_today, Some(0));
    }

    #[tokio::test(start_paused = true)]
    async fn server_exhausted_blocks_the_class_until_retry_after() {
        let limiter = exact_default();
        let t0 = Instant::now();
        limiter.server_exhausted(GENERAL, secs(600));
        assert_eq!(
            limiter.acquire(GENERAL, secs(60)).await,
            Err(LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: secs(600)
            })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, secs(600));
        // A shorter later block does not shorten it.
        limiter.server_exhausted(GENERAL, secs(10));
        assert_eq!(
            limiter.acquire(AI, secs(0)).await.unwrap().waited(),
            Duration::ZERO
        );
        let permit = limiter.acquire(GENERAL, secs(600)).await.unwrap();
        assert_eq!(permit.start() - t0, secs(600));
    }

    #[tokio::test(start_paused = true)]
    async fn server_exhausted_fails_callers_already_waiting() {
        let limiter = exact_default();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        let waiter = tokio::spawn({
            let limiter = limiter.clone();
            async move {
                let permit = limiter.acquire(GENERAL, secs(5)).await;
                permit.map(|permit| permit.start())
            }
        });
        sleep(Duration::from_millis(500)).await;
        limiter.server_exhausted(GENERAL, secs(3600));
        assert_eq!(
            waiter.await.unwrap(),
            Err(LimitError::DailyBudgetExhausted {
                class: GENERAL,
                available_in: Duration::from_millis(3_600_000 - 500)
            })
        );
        // Its slot was handed back.
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_waiter_gives_its_slot_back() {
        let limiter = exact_default();
        let t0 = Instant::now();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        limiter.acquire(GENERAL, secs(5)).await.unwrap();
        let gave_up = timeout(
            Duration::from_millis(300),
            limiter.acquire(GENERAL, secs(5)),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(limiter.quota(GENERAL).used_today, Some(2));
        let a = limiter.acquire(GENERAL, secs(5));
        let b = limiter.acquire(GENERAL, secs(5));
        let (a, b) = tokio::join!(a, b);
        assert_eq!(a.unwrap().start() - t0, secs(1));
        assert_eq!(b.unwrap().start() - t0, secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_budget_allows_nothing() {
        let limiter = limiter(Some(0), Some(10));
        assert_eq!(
            limiter.acquire(GENERAL, LONG).await,
            Err(LimitError::NoBudget { class: GENERAL })
        );
        assert_eq!(limiter.quota(GENERAL).next_slot_in, Duration::MAX);
        let limiter = limiter_day_zero();
        assert_eq!(
            limiter
                .acquire(GENERAL, LONG)
                .await
                .unwrap_err()
                .to_string(),
            "no general budget configured"
        );
    }

    fn limiter_day_zero() -> RateLimiter {
        limiter(Some(2), Some(0))
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_class_never_waits_and_remembers_only_a_second() {
        let limiter = limiter(None, None);
        for _ in 0..1000 {
            assert_eq!(
                limiter.acquire(GENERAL, secs(0)).await.unwrap().waited(),
                Duration::ZERO
            );
        }
        sleep(secs(2)).await;
        let quota = limiter.quota(GENERAL);
        assert_eq!(quota.used_today, None);
        assert_eq!(quota.remaining_today, None);
        assert_eq!(limiter.log_len(GENERAL), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn memory_stays_bounded_over_many_days() {
        let limiter = limiter(Some(50), Some(200));
        for _ in 0..5 {
            for _ in 0..200 {
                limiter.acquire(GENERAL, DAY).await.unwrap();
            }
            assert!(limiter.log_len(GENERAL) <= 200);
            sleep(DAY).await;
            assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
            assert_eq!(limiter.log_len(GENERAL), 0);
        }
    }

    #[test]
    fn limit_errors_display_short_lowercase() {
        assert_eq!(
            LimitError::WouldExceedDeadline {
                class: AI,
                wait: secs(2),
                max_wait: secs(1)
            }
            .to_string(),
            "ai slot is 2s away, more than the 1s allowed"
        );
    }

    /// The largest number of `starts` (sorted) in any half-open window of
    /// length `window`. A busiest window can always be slid to begin at a
    /// start, so only those are checked.
    fn busiest_window(starts: &[Instant], window: Duration) -> usize {
        let mut end = 0;
        let mut busiest = 0;
        for (begin, &first) in starts.iter().enumerate() {
            while end < starts.len() && starts[end] < first + window {
                end += 1;
            }
            busiest = busiest.max(end - begin);
        }
        busiest
    }

    #[derive(Debug, Default)]
    struct Run {
        starts: Vec<Instant>,
        exhausted: usize,
        other: Vec<LimitError>,
    }

    /// `tasks` callers, each making `per_task` calls in bursts of up to 5 at
    /// random instants of `[t0, t0 + span)`. The first burst is at `t0`.
    async fn simulate(
        limiter: &RateLimiter,
        class: LimitClass,
        tasks: u64,
        per_task: usize,
        span: Duration,
    ) -> Run {
        let t0 = Instant::now();
        let span_ms = span.as_millis() as u64;
        let mut set = JoinSet::new();
        for task in 0..tasks {
            let limiter = limiter.clone();
            set.spawn(async move {
                let mut rng = SplitMix64::new(task * 1_000 + class as u64);
                let mut arrivals: Vec<u64> = Vec::with_capacity(per_task);
                while arrivals.len() < per_task {
                    let centre = if task == 0 && arrivals.is_empty() {
                        0
                    } else {
                        rng.below(span_ms)
                    };
                    for _ in 0..1 + rng.below(5) {
                        arrivals.push((centre + rng.below(400)).min(span_ms - 1));
                    }
                }
                arrivals.truncate(per_task);
                arrivals.sort_unstable();
                let mut run = Run::default();
                for offset in arrivals {
                    sleep_until(t0 + Duration::from_millis(offset)).await;
                    match limiter.acquire(class, secs(10)).await {
                        Ok(permit) => {
                            assert_eq!(Instant::now(), permit.start());
                            run.starts.push(permit.start());
                        }
                        Err(LimitError::DailyBudgetExhausted { .. }) => run.exhausted += 1,
                        Err(other) => run.other.push(other),
                    }
                }
                run
            });
        }
        let mut all = Run::default();
        for run in set.join_all().await {
            all.starts.extend(run.starts);
            all.exhausted += run.exhausted;
            all.other.extend(run.other);
        }
        all.starts.sort_unstable();
        all
    }

    #[tokio::test(start_paused = true)]
    async fn a_day_at_three_times_demand_never_breaks_a_rolling_window() {
        let limiter = exact_default();
        // Arrivals end 11 s before the first start leaves the day window,
        // so exactly one day's budget can be used.
        let span = DAY - secs(11);
        let (general, ai) = tokio::join!(
            simulate(&limiter, GENERAL, 8, 375, span),
            simulate(&limiter, AI, 3, 100, span),
        );
        assert!(general.other.is_empty(), "{:?}", general.other);
        assert_eq!(general.starts.len(), 1000);
        assert_eq!(general.exhausted, 2000);
        assert_eq!(busiest_window(&general.starts, SECOND), 2);
        assert_eq!(busiest_window(&general.starts, DAY), 1000);

        assert!(ai.other.is_empty(), "{:?}", ai.other);
        assert_eq!(ai.starts.len(), 100);
        assert_eq!(ai.exhausted, 200);
        assert_eq!(busiest_window(&ai.starts, DAY), 100);
    }

    #[tokio::test(start_paused = true)]
    async fn two_days_at_three_times_demand_keep_every_rolling_window() {
        let limiter = exact_default();
        let run = simulate(&limiter, GENERAL, 8, 750, 2 * DAY).await;
        assert!(run.other.is_empty(), "{:?}", run.other);
        assert_eq!(run.starts.len() + run.exhausted, 6000);
        assert!(busiest_window(&run.starts, SECOND) <= 2);
        assert_eq!(busiest_window(&run.starts, DAY), 1000);
        // The limiter does not leave budget unused under excess demand.
        assert!(run.starts.len() >= 1900, "{}", run.starts.len());
    }

    // ---------------------------------------------------------------- default pacing

    /// Arrival instants of `calls` requests by `tasks` concurrent callers of `limiter`, where
    /// every `nth_delayed` request reaches the gateway `delay` after it was sent.
    async fn arrivals(
        limiter: &RateLimiter,
        tasks: usize,
        calls: usize,
        nth_delayed: usize,
        delay: Duration,
    ) -> Vec<Instant> {
        let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for _ in 0..tasks {
            let (limiter, counter) = (limiter.clone(), counter.clone());
            set.spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..calls / tasks {
                    let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    permit.sent();
                    // The delay is on the way (a new connection, a handshake): the gateway
                    // sees the request later than the SDK sent it.
                    if n.is_multiple_of(nth_delayed) {
                        sleep(delay).await;
                    }
                    seen.push(Instant::now());
                }
                seen
            });
        }
        let mut all: Vec<Instant> = set.join_all().await.into_iter().flatten().collect();
        all.sort_unstable();
        all
    }

    #[tokio::test(start_paused = true)]
    async fn default_pacing_spreads_starts_evenly_with_the_margin() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..6 {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            starts.push(permit.start() - t0);
            permit.sent();
        }
        let expected: Vec<Duration> = [0, 550, 1100, 1650, 2200, 2750]
            .map(Duration::from_millis)
            .into();
        assert_eq!(starts, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn a_free_slot_is_granted_at_once_without_a_timer() {
        use futures_util::FutureExt;
        let limiter = RateLimiter::default();
        let permit = limiter
            .acquire(GENERAL, LONG)
            .now_or_never()
            .expect("granted in the first poll")
            .unwrap();
        assert_eq!(permit.waited(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_send_moves_its_start_and_later_callers_wait_for_it() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let first = limiter.acquire(GENERAL, LONG).await.unwrap();
        let second = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire(GENERAL, LONG).await.unwrap().start() }
        });
        tokio::task::yield_now().await;
        // The first request leaves 400 ms after its slot (a slow handshake).
        sleep(Duration::from_millis(400)).await;
        first.sent();
        let second = second.await.unwrap();
        assert_eq!(second - t0, Duration::from_millis(950));
    }

    #[tokio::test(start_paused = true)]
    async fn no_rolling_second_holds_three_arrivals_when_every_third_request_arrives_late() {
        for tasks in [1, 4] {
            let limiter = RateLimiter::default();
            let seen = arrivals(&limiter, tasks, 20, 3, Duration::from_millis(80)).await;
            assert_eq!(seen.len(), 20);
            assert!(busiest_window(&seen, SECOND) <= 2, "{tasks} tasks");
        }
        // Pairs without a margin, the old pacing, put three arrivals in a second.
        let pairs = RateLimiter::with_pacing(Limits::default(), Pacing::burst(Duration::ZERO));
        let seen = arrivals(&pairs, 1, 20, 3, Duration::from_millis(80)).await;
        assert_eq!(busiest_window(&seen, SECOND), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn ai_calls_keep_to_ten_a_minute_by_default() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let mut last = Duration::ZERO;
        for _ in 0..11 {
            let permit = limiter.acquire(AI, LONG).await.unwrap();
            last = permit.start() - t0;
            permit.sent();
        }
        assert_eq!(last, Duration::from_millis(60_100));
    }

    /// The AI counters of an answer: `current` calls counted today.
    fn ai_counted(current: u32) -> ServerCounters {
        ServerCounters {
            qps_allotted: None,
            qps_current: None,
            quota_allotted: Some(100),
            quota_current: Some(current),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_days_count_in_a_new_processs_first_answer_is_counted_in_the_day_not_the_minute() {
        let limiter = RateLimiter::with_pacing(Limits::default(), EXACT);
        let t0 = Instant::now();
        limiter.acquire(AI, LONG).await.unwrap().sent();
        // The gateway counted 24 AI calls today: this process's one and 23 of others.
        limiter.observe(AI, ai_counted(24));
        assert_eq!(limiter.quota(AI).used_today, Some(24));
        // The next nine of the minute go at once: the day's count was made some time today.
        for _ in 0..9 {
            let permit = limiter.acquire(AI, LONG).await.unwrap();
            assert_eq!(permit.start(), t0);
            permit.sent();
        }
        assert_eq!(limiter.quota(AI).remaining_today, Some(67));
    }

    #[tokio::test(start_paused = true)]
    async fn calls_others_made_between_two_answers_are_counted_between_them_in_every_window() {
        let limiter = RateLimiter::with_pacing(Limits::default(), EXACT);
        let t0 = Instant::now();
        limiter.acquire(AI, LONG).await.unwrap().sent();
        limiter.observe(AI, ai_counted(1));
        sleep(secs(30)).await;
        limiter.acquire(AI, LONG).await.unwrap().sent();
        // 10 counted now: this process's second call and 8 of another process, made
        // between the two answers (placed at 15 s).
        limiter.observe(AI, ai_counted(10));
        let mut starts = Vec::new();
        for _ in 0..2 {
            let permit = limiter.acquire(AI, LONG).await.unwrap();
            starts.push(permit.start() - t0);
            permit.sent();
        }
        // The tenth latest of the minute is the first call (0 s), then the others (15 s);
        // counted as made at 30 s, the second would wait until 90 s.
        assert_eq!(starts, [secs(60), secs(75)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_daily_window_follows_the_server_count_when_it_is_higher() {
        let limiter = RateLimiter::default();
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        let counters = ServerCounters {
            qps_allotted: Some(2),
            qps_current: Some(1),
            quota_allotted: Some(1000),
            quota_current: Some(990),
        };
        limiter.observe(GENERAL, counters);
        let quota = limiter.quota(GENERAL);
        assert_eq!(quota.used_today, Some(990));
        assert_eq!(quota.remaining_today, Some(10));
        assert_eq!(quota.server, Some(counters));
        // A lower server count changes nothing.
        limiter.observe(
            GENERAL,
            ServerCounters {
                quota_current: Some(5),
                ..counters
            },
        );
        assert_eq!(limiter.quota(GENERAL).used_today, Some(990));
    }

    #[test]
    fn server_counters_are_read_from_the_gateway_headers() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(ServerCounters::from_headers(&headers), None);
        headers.insert("x-accesstoken-quota-current", "17".parse().unwrap());
        headers.insert("x-accesstoken-quota-allotted", " 1000 ".parse().unwrap());
        headers.insert("x-accesstoken-qps-current", "many".parse().unwrap());
        let counters = ServerCounters::from_headers(&headers).unwrap();
        assert_eq!(counters.quota_current, Some(17));
        assert_eq!(counters.quota_allotted, Some(1000));
        assert_eq!(counters.qps_current, None);
    }

    #[test]
    fn one_token_has_one_limiter_in_the_process() {
        let token = crate::SecretToken::try_from("shared-token").unwrap();
        let here = token.fingerprint();
        let a = RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
        let b = RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
        assert!(a.same_as(&b));
        let other = crate::SecretToken::try_from("rotated-token").unwrap();
        let c = RateLimiter::for_token(
            other.fingerprint(),
            Limits::default(),
            Pacing::default(),
            None,
        )
        .unwrap();
        assert!(!a.same_as(&c));
        assert!(!format!("{here:?}").contains("shared-token"));
    }

    #[test]
    fn a_client_whose_settings_differ_from_its_tokens_pacer_is_refused_naming_the_difference() {
        #[derive(Debug)]
        struct NoStore;
        impl crate::fleet::FleetBudget for NoStore {
            fn reserve<'a>(
                &'a self,
                _: Reserve<'a>,
            ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
                Box::pin(async { Err(FleetError::new("none")) })
            }
        }
        let token = crate::SecretToken::try_from("configured-token").unwrap();
        let here = token.fingerprint();
        let _first =
            RateLimiter::for_token(here, Limits::default(), Pacing::default(), None).unwrap();
        let one_ai_call = Limits {
            ai: Budget::new(None, Some(1)),
            ..Limits::default()
        };
        let fleet = Fleet::new(Arc::new(NoStore));
        let cases: [(&str, Limits, Pacing, Option<Fleet>); 3] = [
            ("limits", one_ai_call, Pacing::default(), None),
            (
                "pacing",
                Limits::default(),
                Pacing::burst(Duration::ZERO),
                None,
            ),
            ("fleet", Limits::default(), Pacing::default(), Some(fleet)),
        ];
        for (setting, limits, pacing, fleet) in cases {
            let conflict = RateLimiter::for_token(here, limits, pacing, fleet).unwrap_err();
            assert_eq!(conflict.setting, setting);
            assert_ne!(conflict.existing, conflict.requested);
            let message = conflict.to_string();
            assert!(message.contains(setting), "{message}");
            assert!(message.contains("isolated_budget"), "{message}");
            assert!(!message.contains("configured-token"), "{message}");
            // In words: no Rust Debug text (`Budget {`, `Some(`, a store's struct).
            for debug in ["{", "Some(", "None", "::"] {
                assert!(!message.contains(debug), "{setting}: {message}");
            }
        }
    }

    /// A process's limiter in a fleet whose store is `store`.
    fn in_fleet_of(
        limits: Limits,
        pacing: Pacing,
        store: Arc<dyn crate::fleet::FleetBudget>,
    ) -> RateLimiter {
        let token = crate::SecretToken::try_from("fleet-token")
            .unwrap()
            .fingerprint();
        RateLimiter::in_fleet(limits, pacing, Fleet::new(store), token)
    }

    /// The answer of a store that has always held what it was given (generation `g1`).
    fn in_generation_one(reservation: Reservation) -> Result<Answer, FleetError> {
        Ok(Answer {
            reservation,
            generation: "g1".into(),
            lost_history: false,
        })
    }

    /// A store that grants every booking at once, and records what it was asked.
    #[derive(Debug, Default)]
    struct EagerStore {
        asked: Mutex<Vec<(Duration, bool, usize)>>,
    }

    impl crate::fleet::FleetBudget for EagerStore {
        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            self.asked.lock().unwrap().push((
                request.not_before,
                request.book,
                request.history.map_or(usize::MAX, <[_]>::len),
            ));
            let wait = request.not_before;
            Box::pin(async move { in_generation_one(Reservation::Granted { wait }) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_grant_from_the_store_never_starts_two_calls_of_a_process_closer_than_its_spacing() {
        let store = Arc::new(EagerStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..4 {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            starts.push(permit.start() - t0);
            permit.sent();
        }
        // (1 s + 100 ms) / 2 apart, though the store would have let every call go at once.
        let expected: Vec<Duration> = [0, 550, 1100, 1650].map(Duration::from_millis).into();
        assert_eq!(starts, expected);
        let asked = store.asked.lock().unwrap();
        // The first booking carries the (empty) history of a process new to the store.
        assert_eq!(asked[0], (Duration::ZERO, true, 0));
        assert_eq!(asked[1], (Duration::from_millis(550), true, usize::MAX));
    }

    #[tokio::test(start_paused = true)]
    async fn what_the_servers_counters_claim_costs_a_count_not_a_start_per_call() {
        let limits = Limits {
            general: Budget::new(Some(2), Some(u32::MAX)),
            ..Limits::default()
        };
        let limiter = RateLimiter::with_pacing(limits, EXACT);
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        let started = std::time::Instant::now();
        limiter.observe(
            GENERAL,
            ServerCounters {
                qps_allotted: None,
                qps_current: None,
                quota_allotted: None,
                quota_current: Some(u32::MAX),
            },
        );
        // A list of four billion starts would take minutes and gigabytes.
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(limiter.log_len(GENERAL), 1);
        assert_eq!(limiter.quota(GENERAL).used_today, Some(u32::MAX));
        // Counted in the windows: none left today.
        assert!(matches!(
            limiter.acquire(GENERAL, secs(60)).await,
            Err(LimitError::DailyBudgetExhausted { .. })
        ));
        // And gone after a day.
        sleep(DAY + secs(1)).await;
        assert_eq!(limiter.quota(GENERAL).used_today, Some(0));
        limiter.acquire(GENERAL, LONG).await.unwrap();
    }

    proptest::proptest! {
        #[test]
        fn the_kth_latest_start_counts_the_unseen_ones_in_their_place(
            listed in proptest::collection::vec(0u64..10_000, 0..40),
            groups in proptest::collection::vec((0u64..10_000, 0u32..50, proptest::bool::ANY), 0..6),
            k in 1usize..100,
        ) {
            let t0 = Instant::now();
            let mut log = ClassLog::default();
            let mut listed = listed;
            listed.sort_unstable();
            for (id, ms) in listed.iter().enumerate() {
                log.insert_at(t0 + Duration::from_millis(*ms), id as u64);
            }
            let at = |ms: &u64| t0 + Duration::from_millis(*ms);
            let mut day: Vec<Instant> = listed.iter().map(at).collect();
            let mut short = day.clone();
            for (ms, n, day_only) in &groups {
                let reach = if *day_only { Reach::DayOnly } else { Reach::Every };
                log.unseen.add(at(ms), *n, reach);
                day.extend((0..*n).map(|_| at(ms)));
                if !day_only {
                    short.extend((0..*n).map(|_| at(ms)));
                }
            }
            for (all, is_day) in [(&mut day, true), (&mut short, false)] {
                all.sort_unstable();
                let expected = (all.len() >= k).then(|| all[all.len() - k]);
                proptest::prop_assert_eq!(log.kth_latest(k, is_day), expected);
            }
            proptest::prop_assert_eq!(log.count(), day.len());
        }
    }

    /// A store that answers nothing for a second, then fails (a paused server).
    #[derive(Debug, Default)]
    struct PausedStore {
        given_back: GivenBack,
    }

    impl crate::fleet::FleetBudget for PausedStore {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            self.given_back.record(id)
        }

        fn reserve<'a>(
            &'a self,
            _: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            Box::pin(async {
                sleep(secs(1)).await;
                Err(FleetError::new("response timed out"))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn calls_queued_behind_a_store_that_times_out_do_not_each_wait_for_its_timeout() {
        let store = Arc::new(PausedStore::default());
        let limiter = in_fleet_of(
            Limits {
                general: Budget::new(Some(20), None),
                ..Limits::default()
            },
            Pacing::even(Duration::ZERO),
            store.clone(),
        );
        let t0 = Instant::now();
        let mut set = JoinSet::new();
        for _ in 0..5 {
            let limiter = limiter.clone();
            set.spawn(async move {
                let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
                permit.sent();
                Instant::now() - t0
            });
        }
        let mut starts = set.join_all().await;
        starts.sort();
        // One timeout (1 s), then a quarter of 20 per second: 200 ms apart.
        let expected: Vec<Duration> = [1000, 1200, 1400, 1600, 1800]
            .map(Duration::from_millis)
            .into();
        assert_eq!(starts, expected);
        // The store may have booked the one booking whose answer never came: it is given
        // back once the store answers, never sent to a store that does not.
        sleep(secs(5)).await;
        assert!(store.given_back.ids().await.is_empty());
    }

    /// A store whose first answer comes back after the start it booked, then answers in
    /// time; it records how far ahead each booking asked to start.
    #[derive(Debug, Default)]
    struct LateOnceStore {
        asked: Mutex<Vec<Duration>>,
        given_back: GivenBack,
    }

    impl crate::fleet::FleetBudget for LateOnceStore {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            self.given_back.record(id)
        }

        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            let first = {
                let mut asked = self.asked.lock().unwrap();
                asked.push(request.not_before);
                asked.len() == 1
            };
            Box::pin(async move {
                sleep(Duration::from_millis(300)).await;
                let reservation = if first {
                    Reservation::Missed {
                        late_by: Duration::from_millis(300),
                    }
                } else {
                    Reservation::Granted {
                        wait: request
                            .not_before
                            .saturating_sub(Duration::from_millis(300)),
                    }
                };
                in_generation_one(reservation)
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_comes_after_its_start_is_not_used_and_the_next_asks_further_ahead() {
        let store = Arc::new(LateOnceStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let t0 = Instant::now();
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        // Asked again at 300 ms for a start at least 600 ms ahead (twice the late answer's
        // time), granted in time: it starts at 900 ms.
        assert_eq!(
            *store.asked.lock().unwrap(),
            [Duration::ZERO, Duration::from_millis(600)]
        );
        assert_eq!(permit.start() - t0, Duration::from_millis(900));
        // The start booked in the past, where nobody started, went back to the store.
        assert_eq!(store.given_back.ids().await, [0]);
    }

    /// A store that grants every booking 200 ms ahead; the first time, the process stalls
    /// (the clock jumps 500 ms while it sleeps) and wakes 300 ms past its start.
    #[derive(Debug, Default)]
    struct StallOnceStore {
        asked: Mutex<u32>,
        given_back: GivenBack,
    }

    impl crate::fleet::FleetBudget for StallOnceStore {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            self.given_back.record(id)
        }

        fn reserve<'a>(
            &'a self,
            _: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            let mut asked = self.asked.lock().unwrap();
            *asked += 1;
            if *asked == 1 {
                tokio::spawn(async {
                    sleep(Duration::from_millis(10)).await;
                    tokio::time::advance(Duration::from_millis(500)).await;
                });
            }
            Box::pin(async {
                in_generation_one(Reservation::Granted {
                    wait: Duration::from_millis(200),
                })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_process_that_wakes_past_its_fleet_start_by_more_than_the_margin_books_again() {
        let store = Arc::new(StallOnceStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let t0 = Instant::now();
        let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
        // Woken at 510 ms for a start at 200 ms: that start went back, and the second
        // booking (200 ms after 510 ms) is the one used.
        assert_eq!(*store.asked.lock().unwrap(), 2);
        assert_eq!(permit.start() - t0, Duration::from_millis(710));
        assert_eq!(store.given_back.ids().await, [0]);
    }

    /// A store that answers every booking after 600 ms, granting it at once.
    #[derive(Debug, Default)]
    struct SlowStore {
        asked: Mutex<u32>,
    }

    impl crate::fleet::FleetBudget for SlowStore {
        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            if request.book {
                *self.asked.lock().unwrap() += 1;
            }
            Box::pin(async {
                sleep(Duration::from_millis(600)).await;
                in_generation_one(Reservation::Granted {
                    wait: Duration::ZERO,
                })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_slower_than_half_a_second_three_times_in_a_row_is_left_for_the_share() {
        let store = Arc::new(SlowStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let mut starts = Vec::new();
        let t0 = Instant::now();
        for _ in 0..4 {
            let permit = limiter.acquire(GENERAL, LONG).await.unwrap();
            starts.push(permit.start() - t0);
            permit.sent();
        }
        // The fourth is not asked of the store: paced on a quarter of the budget, one start
        // every 2.2 s after the third.
        assert_eq!(*store.asked.lock().unwrap(), 3);
        assert_eq!(starts[3] - starts[2], Duration::from_millis(2200));
    }

    /// The ids a store was given back.
    #[derive(Debug, Default)]
    struct GivenBack(Mutex<Vec<u64>>);

    impl GivenBack {
        fn record(&self, id: u64) -> pubapi_sdk::hooks::BoxFuture<'_, Result<(), FleetError>> {
            self.0.lock().unwrap().push(id);
            Box::pin(async { Ok(()) })
        }

        /// The ids given back, once the tasks that give them back have run.
        async fn ids(&self) -> Vec<u64> {
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            self.0.lock().unwrap().clone()
        }
    }

    /// A runtime of its own, as each blocking client has, on paused time.
    fn paused_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    }

    #[test]
    fn a_watch_whose_runtime_was_dropped_starts_again_on_the_next_runtime() {
        // Two blocking clients of one token share its limiter, each with its own runtime:
        // the first client, and the watch spawned on its runtime, go away.
        let store = Arc::new(EagerStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        paused_runtime().block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
        paused_runtime().block_on(async {
            limiter.acquire(GENERAL, LONG).await.unwrap().sent();
            sleep(secs(3)).await;
        });
        let asked = store.asked.lock().unwrap();
        // (not_before, book, history): a question books nothing and carries no history.
        let questions = asked.iter().filter(|a| !a.1 && a.2 == usize::MAX).count();
        assert_eq!(questions, 1, "{asked:?}");
    }

    /// A store that is down or up as `down` says, and records the ids of every history it
    /// takes in.
    #[derive(Debug, Default)]
    struct SwitchedStore {
        down: std::sync::atomic::AtomicBool,
        histories: Mutex<Vec<Vec<u64>>>,
    }

    impl crate::fleet::FleetBudget for SwitchedStore {
        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Box::pin(async { Err(FleetError::new("connection refused")) });
            }
            if let Some(history) = request.history {
                let ids = history.iter().map(|start| start.id).collect();
                self.histories.lock().unwrap().push(ids);
            }
            let wait = request.not_before;
            Box::pin(async move { in_generation_one(Reservation::Granted { wait }) })
        }
    }

    #[test]
    fn a_history_task_whose_runtime_was_dropped_is_started_again_by_the_watch() {
        // Two blocking clients of one token share its limiter, each with its own runtime.
        // The watch runs on the second's; the store fails a call of the first, whose runtime
        // (with the task that would give the store the history) then goes away.
        let store = Arc::new(SwitchedStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let second = paused_runtime();
        second.block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
        store.down.store(true, std::sync::atomic::Ordering::SeqCst);
        paused_runtime().block_on(async { limiter.acquire(GENERAL, LONG).await.unwrap().sent() });
        store.down.store(false, std::sync::atomic::Ordering::SeqCst);
        // The second client's process makes no call: only its tasks can reach the store.
        second.block_on(async { sleep(secs(10)).await });
        let histories = store.histories.lock().unwrap().clone();
        // Both starts: the one the store granted and the one booked on the share.
        assert!(
            histories.iter().any(|ids| ids.len() == 2),
            "the start booked on the share never reached the store: {histories:?}"
        );
    }

    /// A store that grants every booking and answers every question of the watch that it
    /// needs the history, without saying it lost anything (a store of a user's own); records
    /// whether each request was a booking and how many starts of history it carried.
    #[derive(Debug, Default)]
    struct HistoryWantingStore {
        asked: Mutex<Vec<(bool, Option<usize>)>>,
    }

    impl crate::fleet::FleetBudget for HistoryWantingStore {
        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            let history = request.history.map(<[_]>::len);
            self.asked.lock().unwrap().push((request.book, history));
            let reservation = if !request.book && history.is_none() {
                Reservation::HistoryNeeded
            } else {
                Reservation::Granted {
                    wait: request.not_before,
                }
            };
            Box::pin(async move { in_generation_one(reservation) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_answered_history_needed_is_followed_by_the_history() {
        let store = Arc::new(HistoryWantingStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        sleep(secs(3)).await;
        let asked = store.asked.lock().unwrap().clone();
        // The booking (with the empty history of a process new to the store), the watch's
        // question, then the history: the one start, in a request that books nothing.
        assert_eq!(
            asked[..3],
            [(true, Some(0)), (false, None), (false, Some(1))],
            "{asked:?}"
        );
    }

    /// A store that takes 500 ms to take in a history and records the ids each one carried;
    /// it fails bookings (down for them) and answers the watch's questions.
    #[derive(Debug, Default)]
    struct SlowHistoryStore {
        histories: Mutex<Vec<Vec<u64>>>,
    }

    impl crate::fleet::FleetBudget for SlowHistoryStore {
        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            if request.book {
                return Box::pin(async { Err(FleetError::new("down for bookings")) });
            }
            // The watch's question: nothing lost.
            let Some(history) = request.history else {
                return Box::pin(async {
                    in_generation_one(Reservation::Granted {
                        wait: Duration::ZERO,
                    })
                });
            };
            let ids = history.iter().map(|start| start.id).collect();
            Box::pin(async move {
                sleep(Duration::from_millis(500)).await;
                self.histories.lock().unwrap().push(ids);
                in_generation_one(Reservation::Granted {
                    wait: Duration::ZERO,
                })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_made_on_the_share_while_the_history_was_out_is_given_on_the_next_pass() {
        let store = Arc::new(SlowHistoryStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        let link = limiter.inner.fleet.as_ref().unwrap();
        // Down at 0 (the task that gives the history asks at 2 s) and again at 1 s (resting
        // until 3 s): what is booked from 2 s to 2.5 s is booked on the share, unseen by the
        // history out at that time.
        let error = FleetError::new("timed out");
        limiter.store_failed(link, &error);
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        sleep(secs(1)).await;
        limiter.store_failed(link, &error);
        sleep(Duration::from_millis(1200)).await;
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        sleep(secs(5)).await;
        let histories = store.histories.lock().unwrap().clone();
        assert_eq!(histories.first(), Some(&vec![0]), "{histories:?}");
        assert!(
            histories.iter().any(|ids| ids.contains(&1)),
            "the start made while the history was out never reached the store: {histories:?}"
        );
    }

    /// Counts a call in `calls`: whether it is the first.
    fn first_time(calls: &Mutex<u32>) -> bool {
        let mut calls = calls.lock().unwrap();
        *calls += 1;
        *calls == 1
    }

    /// A store whose first booking's answer is lost, and which answers from then on; it
    /// records what is given back.
    #[derive(Debug, Default)]
    struct LostOnceStore {
        asked: Mutex<u32>,
        given_back: GivenBack,
    }

    impl crate::fleet::FleetBudget for LostOnceStore {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            self.given_back.record(id)
        }

        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            let first = first_time(&self.asked);
            let wait = request.not_before;
            Box::pin(async move {
                if first {
                    return Err(FleetError::new("the answer was lost"));
                }
                in_generation_one(Reservation::Granted { wait })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_booking_whose_answer_was_lost_is_given_back_once_the_store_answers() {
        let store = Arc::new(LostOnceStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        // Booked on the share: the store's answer was lost.
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        assert!(store.given_back.ids().await.is_empty());
        // The task that gives the store the history asks 2 s later, and gives it back the
        // start it may hold.
        sleep(secs(3)).await;
        assert_eq!(store.given_back.ids().await, [0]);
    }

    /// A store whose first booking's answer is lost and whose first give-back fails; it
    /// takes in every history (recording the ids) and fails every later booking.
    #[derive(Debug, Default)]
    struct GiveBackFailsOnceStore {
        histories: Mutex<Vec<Vec<u64>>>,
        give_backs: Mutex<u32>,
        given_back: GivenBack,
    }

    impl crate::fleet::FleetBudget for GiveBackFailsOnceStore {
        fn give_back<'a>(
            &'a self,
            _: &'a TokenFingerprint,
            _: LimitClass,
            id: u64,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<(), FleetError>> {
            let first = first_time(&self.give_backs);
            if first {
                return Box::pin(async { Err(FleetError::new("timed out")) });
            }
            self.given_back.record(id)
        }

        fn reserve<'a>(
            &'a self,
            request: Reserve<'a>,
        ) -> pubapi_sdk::hooks::BoxFuture<'a, Result<Answer, FleetError>> {
            let Some(history) = request.history.filter(|_| !request.book) else {
                return Box::pin(async { Err(FleetError::new("the answer was lost")) });
            };
            let ids = history.iter().map(|start| start.id).collect();
            self.histories.lock().unwrap().push(ids);
            Box::pin(async {
                in_generation_one(Reservation::Granted {
                    wait: Duration::ZERO,
                })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_booked_on_the_share_after_a_failed_give_back_reaches_the_store() {
        let store = Arc::new(GiveBackFailsOnceStore::default());
        let limiter = in_fleet_of(Limits::default(), Pacing::default(), store.clone());
        // Id 0's answer is lost (to be given back); 1 is booked on the share.
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        // At 2 s the history (1) goes in and the give-back of 0 fails: down again, so 2 is
        // booked on the share, after the history that cleared the class.
        sleep(Duration::from_millis(2100)).await;
        limiter.acquire(GENERAL, LONG).await.unwrap().sent();
        sleep(secs(5)).await;
        let histories = store.histories.lock().unwrap().clone();
        assert!(
            histories.iter().any(|ids| ids.contains(&2)),
            "the start booked after the failed give-back never reached the store: {histories:?}"
        );
        assert_eq!(store.given_back.ids().await, [0]);
    }
}
