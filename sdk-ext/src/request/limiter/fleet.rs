//! Booking through a fleet's store: [`RateLimiter::through_fleet`] asks the store for a start
//! that keeps the whole fleet within the budget ([`RateLimiter::reserve_in_fleet`]), waits for
//! it, and books again when the process woke too late for it; a start the store may hold for a
//! call never made is given back ([`FleetGrant`]).
//!
//! The process's own floor comes from [`super::window`]; every answer and failure of the store
//! goes to [`super::health`], which decides when the store is left for the local share.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::fleet::{FleetError, HistoryStart, Reservation, Reserve};
use crate::limits::{LimitClass, LimitError};

use super::health::{BOOKING_HORIZON, FleetLink};

/// A refusal for a start `asked` ahead at most: `Ok` with the wait when the start is within
/// `max_wait` (ask again later), or the refusal the caller gets, against its own `max_wait`.
fn beyond_the_horizon(
    refused: LimitError,
    asked: Duration,
    max_wait: Duration,
) -> Result<Duration, LimitError> {
    match refused {
        LimitError::WouldExceedDeadline { wait, class, .. } if asked < max_wait => {
            if wait <= max_wait {
                Ok(wait)
            } else {
                Err(LimitError::WouldExceedDeadline {
                    class,
                    wait,
                    max_wait,
                })
            }
        }
        LimitError::DailyBudgetExhausted { available_in, .. }
            if asked < max_wait && available_in <= max_wait =>
        {
            Ok(available_in)
        }
        refused => Err(refused),
    }
}
use super::window::index;
use super::{Permit, RateLimiter};

impl RateLimiter {
    /// Books through the fleet's store. While the store is marked down (it failed less than
    /// [`FLEET_RETRY_AFTER`](super::health::FLEET_RETRY_AFTER) ago), the call waits until it
    /// is tried again, within `max_wait` from `called`, and then refuses with
    /// [`LimitError::StoreUnavailable`]: nothing the store did not grant is sent. With a
    /// fallback share, `Err` with the share to pace to locally instead.
    pub(super) async fn through_fleet(
        &self,
        link: &FleetLink,
        class: LimitClass,
        max_wait: Duration,
        called: Instant,
    ) -> Result<Result<Permit<'_>, LimitError>, u32> {
        let deadline = called + max_wait;
        loop {
            let now = Instant::now();
            if !link.health().down_at(now) {
                match self
                    .reserve_in_fleet(link, class, deadline.saturating_duration_since(now))
                    .await
                {
                    Ok(permit) => return Ok(permit),
                    Err(Some(error)) => self.store_failed(link, &error),
                    // The store failed for a call this one waited behind.
                    Err(None) => {}
                }
            }
            if let Some(share) = link.fleet.fallback_share {
                return Err(share);
            }
            let (retry_at, error) = {
                let health = link.health();
                let error = health.last_error.clone();
                (health.retry_at.unwrap_or_else(Instant::now), error)
            };
            if retry_at >= deadline {
                return Ok(Err(LimitError::StoreUnavailable {
                    class,
                    waited: called.elapsed(),
                    error: error
                        .unwrap_or_else(|| FleetError::unavailable("the store did not answer")),
                }));
            }
            // At least a moment: a failure recorded without marking the store down must not
            // make the loop spin.
            tokio::time::sleep_until(retry_at.max(now + Duration::from_millis(10))).await;
        }
    }
    /// Books through the fleet's store; `Err` when the store failed (the caller falls back to
    /// a local share; `None` when the failure is recorded already: this call's, or that of a
    /// call this one waited behind), `Ok` with the permit or the refusal otherwise.
    pub(super) async fn reserve_in_fleet(
        &self,
        link: &FleetLink,
        class: LimitClass,
        max_wait: Duration,
    ) -> Result<Result<Permit<'_>, LimitError>, Option<FleetError>> {
        let called = Instant::now();
        loop {
            let max_wait = max_wait.saturating_sub(called.elapsed());
            let turn = link.turn.lock().await;
            // Calls queued behind one that found the store down do not each wait for its timeout.
            if link.health().down_at(Instant::now()) {
                return Err(None);
            }
            // Booked no further ahead than the horizon: a start further away is asked for
            // again once it is within it.
            let asked = max_wait.min(BOOKING_HORIZON);
            let (wait, grant) = match self.granted_start(link, class, asked).await? {
                Ok(granted) => granted,
                Err(refused) => match beyond_the_horizon(refused, asked, max_wait) {
                    Ok(wait) => {
                        drop(turn);
                        let again = wait.saturating_sub(BOOKING_HORIZON);
                        tokio::time::sleep(again.max(Duration::from_millis(10))).await;
                        continue;
                    }
                    Err(refused) => return Ok(Err(refused)),
                },
            };
            let at = Instant::now() + wait;
            // Entered at once, so the next booking's floor counts it.
            self.lock()[index(class)].insert_at(at, grant.id);
            drop(turn);
            if !wait.is_zero() {
                tokio::time::sleep_until(at).await;
            }
            let now = Instant::now();
            if let Some(refused) = self.blocked_at(class, now) {
                // Not made: the grant goes back to the store as it drops.
                drop(grant);
                return Ok(Err(refused));
            }
            // Woken later than the booked start by more than allowed (the process was
            // descheduled, the runtime busy): sent now, the call would crowd the starts the
            // fleet booked after it, which its own log cannot move. Given back, booked again
            // (within the wait allowed: the store refuses a start past it).
            let late = now.saturating_duration_since(at);
            if late > self.inner.pacing.lateness_allowed() {
                self.give_back_to_book_again(link, grant, late).await?;
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
    }

    /// Asks the store for a start of `class` within `max_wait`, the caller holding the turn:
    /// the wait and the grant, or the refusal; `Err` as [`RateLimiter::reserve_in_fleet`]'s.
    async fn granted_start(
        &self,
        link: &FleetLink,
        class: LimitClass,
        max_wait: Duration,
    ) -> Result<Result<(Duration, FleetGrant<'_>), LimitError>, Option<FleetError>> {
        let (budget, pacing) = (self.inner.limits.budget(class), self.inner.pacing);
        // After an answer that came too late to use, ask for a start at least twice that
        // answer's time ahead.
        let mut ahead = Duration::ZERO;
        for _ in 0..4 {
            let now = Instant::now();
            let (unsynced, share, generation) = booking_state(link, class, now);
            let (floor, id, history) =
                match self.fleet_floor(class, now, share, ahead, max_wait, unsynced) {
                    Ok(floor) => floor,
                    Err(refused) => return Ok(Err(refused)),
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
                quiet_after_loss: super::health::quiet_after_loss(budget, pacing),
                quiet_after_new: super::health::quiet_after_new(pacing),
            };
            let (reservation, answered_in, grant) =
                self.ask(link, request, unsynced.then_some(id + 1)).await?;
            match reservation {
                Reservation::Granted { wait } => return Ok(Ok((wait, grant))),
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
        Err(Some(FleetError::new(
            "the store answered four times without a start to use",
        )))
    }

    /// Sends `request` (booking its start) and takes in the answer ([`RateLimiter::answered`],
    /// [`RateLimiter::timed`]): what the store said, how long it took, and the grant of the
    /// start, armed; `Err(None)` when the store failed (recorded).
    async fn ask(
        &self,
        link: &FleetLink,
        request: Reserve<'_>,
        synced_before: Option<u64>,
    ) -> Result<(Reservation, Duration, FleetGrant<'_>), Option<FleetError>> {
        let class = request.class;
        let asked = Instant::now();
        // Armed while the store may hold a start this call will not make: a caller that
        // stops waiting now, or for the start, gives it back.
        let grant = FleetGrant {
            limiter: self,
            class,
            id: request.id,
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
        self.answered(link, class, &answer, synced_before);
        self.timed(link, answered_in);
        Ok((answer.reservation, answered_in, grant))
    }

    /// The process's own floor for a start of `class` asked of the store at `now`: its
    /// windows, its spacing, its share during a grace, and at least `ahead`; with the id it
    /// takes and, when the store has not seen the class's starts (`unsynced`), the history.
    /// The refusal when that floor is past `max_wait`.
    fn fleet_floor(
        &self,
        class: LimitClass,
        now: Instant,
        share: u32,
        ahead: Duration,
        max_wait: Duration,
        unsynced: bool,
    ) -> Result<(Duration, u64, Option<Vec<HistoryStart>>), LimitError> {
        let (budget, pacing) = (self.inner.limits.budget(class), self.inner.pacing);
        let mut classes = self.lock();
        let log = &mut classes[index(class)];
        log.prune(budget, pacing, now);
        let Some(slot) = log.earliest(budget, pacing, now, share) else {
            return Err(LimitError::NoBudget { class });
        };
        let floor = (slot.at - now).max(ahead);
        if floor > max_wait {
            return Err(LimitError::too_far(class, floor, slot.long - now, max_wait));
        }
        let id = log.next_id;
        log.next_id += 1;
        Ok((floor, id, unsynced.then(|| log.history(now))))
    }

    /// The refusal of a start of `class` at `now` that the server's block forbids.
    fn blocked_at(&self, class: LimitClass, now: Instant) -> Option<LimitError> {
        let blocked = self.lock()[index(class)]
            .blocked_until
            .filter(|until| *until > now);
        blocked.map(|until| LimitError::DailyBudgetExhausted {
            class,
            available_in: until - now,
        })
    }

    /// Gives back a start the process woke `late` for, before it books again, so that the
    /// store never counts both (a day at its limit would refuse the new one); `Err(None)`
    /// when the store failed (recorded).
    async fn give_back_to_book_again(
        &self,
        link: &FleetLink,
        grant: FleetGrant<'_>,
        late: Duration,
    ) -> Result<(), Option<FleetError>> {
        tracing::warn!(
            late_ms = late.as_millis() as u64,
            "woke later than the fleet's booked start by more than the margin: booking again"
        );
        let class = grant.class;
        let id = grant.keep();
        self.lock()[index(class)].remove(id);
        if let Err(error) = link.fleet.budget.give_back(&link.token, class, id).await {
            link.health().to_give_back.push((class, id, Instant::now()));
            self.store_failed(link, &error);
            return Err(None);
        }
        Ok(())
    }
}

/// What a booking through the store starts from at `now`: whether the store has not seen the
/// class's starts, the share to keep to (the fallback share during a grace), and the store's
/// generation as last seen.
fn booking_state(link: &FleetLink, class: LimitClass, now: Instant) -> (bool, u32, String) {
    let health = link.health();
    let share = match (health.grace_until, link.fleet.fallback_share) {
        (Some(until), Some(share)) if until > now => share,
        _ => 1,
    };
    (
        health.unsynced[index(class)],
        share,
        health.generation.clone(),
    )
}

/// A start the fleet's store may hold for a call that has not been made yet: dropped armed
/// (its caller stopped waiting), it leaves the local log and a task gives it back to the
/// store ([`crate::fleet::FleetBudget::give_back`]), so a call never made spends nothing of
/// the fleet's budget. A give-back that fails leaves the start counted: stricter, never
/// looser.
pub(super) struct FleetGrant<'a> {
    pub(super) limiter: &'a RateLimiter,
    pub(super) class: LimitClass,
    pub(super) id: u64,
    pub(super) armed: bool,
}

impl FleetGrant<'_> {
    /// The start is the call's (made, or booked on purpose): the id, disarmed.
    pub(super) fn keep(mut self) -> u64 {
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
