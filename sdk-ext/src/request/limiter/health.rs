//! The limiter's knowledge of its fleet's store: whether it answers ([`Health`]), when it is
//! marked down and paced around on a share, and the tasks that keep it told: the one that gives
//! it this process's history once it answers again ([`RateLimiter::resync`]) and the watch that
//! asks an idle store whether it still holds what it was given ([`RateLimiter::watch`]).
//!
//! It builds on [`super::window`] (the logs whose history it gives); the bookings of
//! [`super::fleet`] report each answer and failure here.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::{Answer, Fleet, FleetError, HistoryStart, Reservation, Reserve};
use crate::limits::LimitClass;
use crate::token::TokenFingerprint;

use super::window::{index, longest_window};
use super::{Inner, RateLimiter};

/// A limiter's place in a fleet.
pub(super) struct FleetLink {
    pub(super) fleet: Fleet,
    pub(super) token: TokenFingerprint,
    /// One exchange with the store at a time: a booking's floor is read from the local log
    /// and the booking entered into it in one turn, so two calls of the process never get
    /// grants closer than the process allows itself.
    pub(super) turn: tokio::sync::Mutex<()>,
    pub(super) health: Mutex<Health>,
}

impl FleetLink {
    pub(super) fn health(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a process knows of its fleet's store.
#[derive(Default)]
pub(super) struct Health {
    /// The store failed last time: warn once per outage.
    pub(super) failing: bool,
    /// After a failure the store is tried again from this instant on, so an unreachable
    /// store does not cost every call its connection timeout.
    pub(super) retry_at: Option<Instant>,
    /// The store's generation as last seen (empty before its first answer).
    pub(super) generation: String,
    /// By class: the store has not been given this process's starts since the process
    /// started, the store failed, or the store lost its data.
    pub(super) unsynced: [bool; 2],
    /// Until then bookings keep the process's fallback share as their floor (see
    /// [`FLEET_GRACE`]).
    pub(super) grace_until: Option<Instant>,
    /// A task is recording this process's starts in the store once it answers again.
    pub(super) resyncing: bool,
    /// When the store was last asked by the watch or answered a booking: every answer says
    /// whether it still holds what the process gave it.
    pub(super) last_answer: Option<Instant>,
    /// A task asks the store that question when the process has not for a while (see
    /// [`RateLimiter::watch`]).
    pub(super) watching: bool,
    /// The store's last failure, for a call that waited for it in vain.
    pub(super) last_error: Option<FleetError>,
    /// Answers in a row slower than [`SLOW_ANSWER`].
    pub(super) slow_answers: u32,
    /// Starts the store may hold that no call will make, found while it was down, each with
    /// when it was found: given back by the task that gives it the history once it answers
    /// (one that no window counts any more is left alone).
    pub(super) to_give_back: Vec<(LimitClass, u64, Instant)>,
}

impl Health {
    /// Whether the store is marked down at `now`: calls pace on their share until
    /// `retry_at`.
    pub(super) fn down_at(&self, now: Instant) -> bool {
        self.retry_at.is_some_and(|at| at > now)
    }

    /// Keeps the start `id` of `class` to give back once the store answers, when the store
    /// is marked down now (it is not asked before); `false` when it is not.
    pub(super) fn give_back_later(&mut self, class: LimitClass, id: u64) -> bool {
        let now = Instant::now();
        if !self.down_at(now) {
            return false;
        }
        self.to_give_back.push((class, id, now));
        true
    }
}

/// How long a process paces on its own share after the fleet's store failed.
pub(super) const FLEET_RETRY_AFTER: Duration = Duration::from_secs(2);

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
pub(super) const FLEET_GRACE: Duration = Duration::from_millis(3500);

/// How far ahead a start is booked in the fleet's store: a call whose start is further away
/// asks again once it is within this. A store that loses its data (a flush, a failover to a
/// lagging replica) loses the starts booked ahead, which their processes send all the same:
/// none is further than this past the loss, within the quiet that follows a loss ([`quiet_after_new`]), so no start is booked onto one
/// of them.
pub(super) const BOOKING_HORIZON: Duration = Duration::from_secs(3);

/// [`Reserve::quiet_after_new`]: no start booked before a loss is still ahead
/// ([`BOOKING_HORIZON`]) nor within a second of one (and the margin), and every live process
/// has given the store its history ([`FLEET_GRACE`]).
pub(super) fn quiet_after_new(pacing: crate::limits::Pacing) -> Duration {
    FLEET_GRACE.max(BOOKING_HORIZON + super::window::SECOND + pacing.margin)
}

/// [`Reserve::quiet_after_loss`] for a class of `budget`: [`quiet_after_new`], or the class's
/// longest window shorter than a day past the [`BOOKING_HORIZON`] (and the margin) when that
/// is longer, so the starts of processes that exited before the loss have left it (a minute
/// for the AI class). The daily window is kept by the gateway's own count, which every
/// process reads from its answers.
pub(super) fn quiet_after_loss(
    budget: crate::limits::Budget,
    pacing: crate::limits::Pacing,
) -> Duration {
    let below_a_day = if budget.per_hour.is_some() {
        super::window::HOUR
    } else if budget.per_minute.is_some() {
        crate::limits::MINUTE
    } else {
        super::window::SECOND
    };
    quiet_after_new(pacing).max(BOOKING_HORIZON + below_a_day + pacing.margin)
}

/// Marks `link`'s store down: calls pace on the share until [`FLEET_RETRY_AFTER`] from now,
/// and what they book is unseen by the store; warns once per outage. `reason` labels the
/// metric: `failed` or `slow`.
pub(super) fn mark_down(
    link: &FleetLink,
    health: &mut Health,
    error: &FleetError,
    reason: &'static str,
) {
    health.retry_at = Some(Instant::now() + FLEET_RETRY_AFTER);
    health.last_error = Some(error.clone());
    health.unsynced = [true; 2];
    health.slow_answers = 0;
    crate::telemetry::fleet_store_down(reason);
    if std::mem::replace(&mut health.failing, true) {
        tracing::debug!(%error, "the fleet's budget store still fails");
    } else {
        match link.fleet.fallback_share {
            Some(share) => tracing::warn!(
                %error,
                share,
                "the fleet's budget store is unreachable or too slow: pacing to a share of the budget"
            ),
            None => tracing::warn!(
                %error,
                "the fleet's budget store is unreachable or too slow: calls wait for it"
            ),
        }
    }
}

/// An answer of the fleet's store slower than this is slow: every call of the process waits
/// for it behind the one before (bookings take turns), so a store answering in 900 ms would
/// have the process send less than one call a second however much the budget allows.
pub(super) const SLOW_ANSWER: Duration = Duration::from_millis(500);

/// After this many slow answers in a row the store is treated as down (a warning, the
/// metric `pubapi_fleet_store_down_total{reason="slow"}`): the process paces on its share,
/// which keeps the fleet within the budget without waiting on the store, and asks it again
/// after [`FLEET_RETRY_AFTER`].
pub(super) const SLOW_ANSWERS_IN_A_ROW: u32 = 3;

/// What a pass of [`RateLimiter::resync`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resync {
    /// The store has seen every start, and has every start no call will make back.
    Done,
    /// The store answered, and there is more to give it: starts booked on the share while
    /// the history was out.
    MoreToDo,
    /// The store failed.
    Failed,
}

impl RateLimiter {
    /// The store failed: pace on the fallback share, try it again after [`FLEET_RETRY_AFTER`],
    /// and have a task give it this process's starts once it answers.
    pub(super) fn store_failed(&self, link: &FleetLink, error: &FleetError) {
        let mut health = link.health();
        mark_down(link, &mut health, error, "failed");
        self.resync_later(health);
    }

    /// Has a task give the store what it has not seen ([`RateLimiter::resync`]) every
    /// [`FLEET_RETRY_AFTER`] until it is done, unless one already does.
    pub(super) fn resync_later(&self, mut health: std::sync::MutexGuard<'_, Health>) {
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
    pub(super) async fn resync(&self) -> Resync {
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
    pub(super) async fn watch(inner: Weak<Inner>, task: TaskFlag) {
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
    pub(super) fn booking_nothing<'a>(
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
            quiet_after_loss: quiet_after_loss(self.inner.limits.budget(class), self.inner.pacing),
            quiet_after_new: quiet_after_new(self.inner.pacing),
        }
    }

    /// One question of [`RateLimiter::watch`]; `false` when the watch ends.
    pub(super) async fn check_store(&self) -> bool {
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
    pub(super) fn answered(
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
        // Processes that paced on their shares meanwhile are unseen by the store until they
        // reach it again; without a share nothing was sent unseen.
        if (recovered || answer.lost_history) && link.fleet.fallback_share.is_some() {
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
    pub(super) fn timed(&self, link: &FleetLink, answered_in: Duration) {
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
}

/// A flag of [`Health`] that says a task runs (`watching`, `resyncing`), cleared if the
/// runtime drops the task before it ends (a blocking client's runtime, dropped with its
/// client while another client of the token lives on): a later need starts a new task.
pub(super) struct TaskFlag {
    pub(super) inner: Weak<Inner>,
    pub(super) flag: fn(&mut Health) -> &mut bool,
    pub(super) armed: bool,
}

impl TaskFlag {
    pub(super) fn new(inner: Weak<Inner>, flag: fn(&mut Health) -> &mut bool) -> Self {
        TaskFlag {
            inner,
            flag,
            armed: true,
        }
    }

    /// The task ended by itself, having cleared the flag when it should.
    pub(super) fn done(mut self) {
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
