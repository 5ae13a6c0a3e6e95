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
//!
//! The parts: [`window`] holds the log of starts and its rolling windows; this module books
//! and waits on it ([`RateLimiter::acquire`], [`Permit`]); with a fleet, [`fleet`] books
//! through the fleet's store and [`health`] keeps track of whether that store answers and what
//! it has been told; [`unseen`] places the calls the gateway counted that this process did not
//! make. Each uses only those before it in that list (and this module).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::Fleet;
use crate::limits::{
    BudgetConflict, LimitClass, LimitError, Limits, Pacing, Quota, ServerCounters,
};
use crate::token::TokenFingerprint;

mod fleet;
mod health;
mod unseen;
mod window;
use health::{FleetLink, Health};
use unseen::Reach;
use window::{ClassLog, Start, index};

/// A send this close to its slot counts as on time.
const ON_TIME: Duration = Duration::from_millis(1);
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

/// The limiters of the process, by token fingerprint and the domain the token is used on.
type Registry = Mutex<HashMap<(TokenFingerprint, BudgetDomain), Weak<Inner>>>;

/// The domain a token's budget is counted on, as the gateway counts it: its host and port,
/// whatever the spelling (`localhost` and `127.0.0.1` are one host, a trailing slash or a
/// base path changes nothing). Clients of one token against two servers (a mock server per
/// test) pace apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BudgetDomain(Arc<str>);

impl BudgetDomain {
    /// The domain of `base_url`: its host (`loopback` for every loopback spelling) and port.
    pub(crate) fn of(base_url: &reqwest::Url) -> Self {
        let host = if crate::loopback::is_loopback(base_url) {
            "loopback"
        } else {
            base_url.host_str().unwrap_or_default()
        };
        let port = base_url.port_or_known_default().unwrap_or_default();
        BudgetDomain(format!("{host}:{port}").into())
    }
}

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

    /// The limiter of the token with this fingerprint on `domain` in this process: the one
    /// already in use by another client of the token there, or a new one with `limits`,
    /// `pacing` and `fleet`.
    ///
    /// # Errors
    /// [`BudgetConflict`] when the token's limiter has other settings: they could not take
    /// effect, and a client must not believe they do.
    pub(crate) fn for_token(
        fingerprint: TokenFingerprint,
        domain: &BudgetDomain,
        limits: Limits,
        pacing: Pacing,
        fleet: Option<Fleet>,
    ) -> Result<Self, BudgetConflict> {
        let mut registry = registry().lock().unwrap_or_else(PoisonError::into_inner);
        let key = (fingerprint, domain.clone());
        if let Some(inner) = registry.get(&key).and_then(Weak::upgrade) {
            let limiter = RateLimiter { inner };
            limiter.agrees_with(limits, pacing, fleet.as_ref())?;
            return Ok(limiter);
        }
        registry.retain(|_, weak| weak.strong_count() > 0);
        let limiter = RateLimiter::of_token(fingerprint, limits, pacing, fleet);
        registry.insert(key, Arc::downgrade(&limiter.inner));
        Ok(limiter)
    }

    /// A limiter of the token with this fingerprint shared with nobody in the process: in
    /// `fleet`'s windows when there is one.
    pub(crate) fn of_token(
        fingerprint: TokenFingerprint,
        limits: Limits,
        pacing: Pacing,
        fleet: Option<Fleet>,
    ) -> Self {
        match fleet {
            Some(fleet) => RateLimiter::in_fleet(limits, pacing, fleet, fingerprint),
            None => RateLimiter::with_pacing(limits, pacing),
        }
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
    /// The slot is booked at once, so concurrent callers get distinct slots in call order. When the
    /// slot is free now, this returns without a timer. Fails without booking when the slot is more
    /// than `max_wait` away: with [`LimitError::DailyBudgetExhausted`] when a long window (day,
    /// minute) or a block from [`RateLimiter::server_exhausted`] is the cause, with
    /// [`LimitError::WouldExceedDeadline`] when only the per-second queue is. If the returned
    /// future is dropped while waiting, the slot is given back (to the fleet's store too, see
    /// [`FleetGrant`](fleet::FleetGrant)); slots booked after it keep their places, which can only
    /// make the limiter stricter.
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

    /// Takes back the start `id` of `class`: the platform refused its request with a throttle
    /// (429, or 403 `ERR_403_DEVELOPER_OVER_QPS`) before executing it, and does not count it
    /// in its quota, so no window of this limiter counts it either (the retry waits for the
    /// answer's `Retry-After` instead). A start of a fleet's is its store's, and stays.
    pub(crate) fn not_counted(&self, class: LimitClass, id: u64) {
        if self.has_fleet() {
            return;
        }
        self.lock()[index(class)].remove(id);
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
            "{:?} with a fallback share of {:?}",
            fleet.budget, fleet.fallback_share
        ),
    }
}

/// A fleet in a person's words, for [`BudgetConflict`].
fn fleet_words(fleet: Option<&Fleet>) -> String {
    match fleet {
        None => "no fleet".to_string(),
        Some(fleet) => match fleet.fallback_share {
            Some(share) => format!(
                "a fleet whose processes keep to 1/{share} of the budget while its store is down"
            ),
            None => "a fleet whose calls wait for its store while it is down".to_string(),
        },
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

    /// The id of the booked start in the log (for [`RateLimiter::not_counted`]).
    pub(crate) fn start_id(&self) -> u64 {
        self.start.1
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
