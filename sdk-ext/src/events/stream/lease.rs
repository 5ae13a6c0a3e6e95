//! The stream's lease in a fleet: with a checkpoint store, only the holder of a stream's
//! lease hands out its events. The walker takes the lease before reading (or stands by),
//! a background task renews it and records in a [`LeaseWatch`] until when it is held, and
//! the lease is given up when it is lost, when the stream is released, or when the walker is
//! dropped.

use super::walker::Walker;
use super::{EventStream, StreamItem, StreamNotice};
use crate::error::Error;
use crate::fleet::{Acquired, CheckpointStore, FleetError, FleetErrorKind, Lease};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Until when a lease is held: set when it is taken, moved on by each renewal, cleared when
/// it is lost.
#[derive(Debug)]
pub(super) struct LeaseWatch(std::sync::Mutex<Hold>);

#[derive(Debug, Clone, Copy)]
enum Hold {
    Until(Instant),
    UntilReleased,
    Lost,
}

impl LeaseWatch {
    fn hold(&self) -> std::sync::MutexGuard<'_, Hold> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn holds(&self) -> bool {
        match *self.hold() {
            Hold::Until(until) => Instant::now() < until,
            Hold::UntilReleased => true,
            Hold::Lost => false,
        }
    }

    /// Renewed: held until `until` (a lost lease stays lost).
    fn extend(&self, until: Instant) {
        let mut hold = self.hold();
        if let Hold::Until(before) = *hold {
            *hold = Hold::Until(before.max(until));
        }
    }

    pub(super) fn lose(&self) {
        *self.hold() = Hold::Lost;
    }
}

/// Renews `lease` every third of its lease time while the stream lives. A renewal that fails
/// leaves the lease to run out (the stream stops handing out events then); one the store
/// refuses ends it at once.
fn spawn_renewal(
    store: Arc<dyn CheckpointStore>,
    lease: Lease,
    lease_time: Duration,
    watch: Arc<LeaseWatch>,
) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(lease_time / 3).await;
            let asked = Instant::now();
            match store.renew(&lease).await {
                Ok(true) => watch.extend(asked + lease_time),
                Ok(false) => {
                    tracing::warn!(stream = %lease.name, token = lease.token, "the event stream's lease ran out and was not renewed");
                    watch.lose();
                    return;
                }
                Err(error) => {
                    tracing::warn!(stream = %lease.name, token = lease.token, %error, "the event stream's lease was not renewed; trying again");
                }
            }
        }
    })
    .abort_handle()
}

impl Drop for Walker {
    fn drop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        // Released in the background when a runtime is there; otherwise the lease runs out
        // (a file lock ends with its store).
        if let (Some(lease), Some((store, _))) = (self.lease.take(), &self.checkpoints)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let store = store.clone();
            runtime.spawn(async move {
                let _ = store.release(&lease).await;
            });
        }
    }
}

impl EventStream {
    /// Gives the stream's lease up (a standby takes over at once, told that nothing was left
    /// unsaved) and ends the stream. Dropping the stream gives it up too, in the background.
    ///
    /// # Errors
    /// [`FleetError`] when the store could not be told; the lease then runs out by itself.
    pub async fn release(mut self) -> Result<(), FleetError> {
        // A walker away reading is dropped with its read, and gives its lease up on drop.
        *self.pending() = None;
        let Some(mut walker) = self.walker.take() else {
            return Ok(());
        };
        if let Some(renewal) = walker.renewal.take() {
            renewal.abort();
        }
        match (walker.lease.take(), &walker.checkpoints) {
            (Some(lease), Some((store, _))) => store.release(&lease).await,
            _ => Ok(()),
        }
    }
}

impl Walker {
    /// Holds the stream's lease before anything is handed out: takes it, or stands by while
    /// another consumer holds it, or says it was lost. `None` while it is held (or there is
    /// no store); otherwise the item to hand out.
    pub(super) async fn keep_lease(&mut self) -> Option<Result<StreamItem, Error>> {
        let (store, name) = self.checkpoints.clone()?;
        loop {
            if let Some(lease) = &self.lease {
                if self.watch.as_ref().is_some_and(|watch| watch.holds()) {
                    return None;
                }
                let token = lease.token;
                tracing::warn!(stream = %name, token, "the event stream's lease passed to another consumer: standing by");
                self.give_up_lease();
                return Some(Ok(StreamItem::Notice(StreamNotice::LeaseLost { token })));
            }
            if let Some(at) = self.next_try.take()
                && at > Instant::now()
            {
                tokio::time::sleep_until(at).await;
            }
            let asked = Instant::now();
            match store.acquire(&name).await {
                Ok(Acquired::Lease(lease)) => {
                    self.standing_by = false;
                    self.store_failures = 0;
                    let hold = match lease.expires_in {
                        Some(lease_time) => Hold::Until(asked + lease_time),
                        None => Hold::UntilReleased,
                    };
                    let watch = Arc::new(LeaseWatch(std::sync::Mutex::new(hold)));
                    if let Some(lease_time) = lease.expires_in {
                        self.renewal = Some(spawn_renewal(
                            store.clone(),
                            lease.clone(),
                            lease_time,
                            watch.clone(),
                        ));
                    }
                    self.watch = Some(watch);
                    // Resume from what the store holds now: another holder may have moved it.
                    self.start = Some(self.initial_start);
                    self.announce = true;
                    self.lease = Some(lease);
                    return None;
                }
                Ok(Acquired::Busy { retry_in }) => {
                    // What the holder saves, so that a store that loses it is found out. A
                    // store that cannot be read now is asked again at the next try; one that
                    // holds no checkpoint there ends the stream, as a holder's read would.
                    match store.load(&name).await {
                        Ok(Some(id)) => self.memory.seen(id),
                        Err(e) if e.kind == FleetErrorKind::Corrupt => {
                            self.store_failed(&e);
                            return Some(Err(Error::Checkpoint(e)));
                        }
                        Ok(None) | Err(_) => {}
                    }
                    self.next_try = Some(Instant::now() + retry_in);
                    if !std::mem::replace(&mut self.standing_by, true) {
                        return Some(Ok(StreamItem::Notice(StreamNotice::StandingBy {
                            retry_in,
                        })));
                    }
                }
                Err(e) => {
                    let retry = self.store_failed(&e);
                    self.next_try = retry.map(|wait| Instant::now() + wait);
                    return Some(Err(Error::Checkpoint(e)));
                }
            }
        }
    }

    /// Forgets a lost lease and what was read under it.
    pub(super) fn give_up_lease(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        self.lease = None;
        self.watch = None;
        self.buffer.clear();
        self.notices.clear();
        self.window_end = None;
        self.caught_up = false;
        self.next_poll = None;
    }
}
