//! The stream's lease in a fleet: with a checkpoint store, only the holder of a stream's
//! lease hands out its events. The walker takes the lease before reading, or stands by
//! (`Walker::keep_lease`); a background task started here renews it and records in a
//! [`LeaseWatch`] until when it is held; [`EventStream::release`] gives it up.

use super::EventStream;
use crate::fleet::{CheckpointStore, FleetError, Lease};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Until when a lease is held: set when it is taken, moved on by each renewal, cleared when
/// it is lost; and the checkpoint a save could not store, while there is one (the stream
/// hands out nothing until it is stored: see `Walker::keep_lease`).
#[derive(Debug)]
pub(super) struct LeaseWatch(std::sync::Mutex<Watched>);

/// What a [`LeaseWatch`] holds, behind its one lock.
#[derive(Debug)]
struct Watched {
    hold: Hold,
    unsaved: Option<i64>,
}

/// How long a lease is held.
#[derive(Debug, Clone, Copy)]
pub(super) enum Hold {
    /// Until this instant, unless renewed.
    Until(Instant),
    /// Until it is released (a store whose leases do not run out).
    UntilReleased,
    /// No longer.
    Lost,
}

impl LeaseWatch {
    pub(super) fn new(hold: Hold) -> LeaseWatch {
        LeaseWatch(std::sync::Mutex::new(Watched {
            hold,
            unsaved: None,
        }))
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn holds(&self) -> bool {
        match self.watched().hold {
            Hold::Until(until) => Instant::now() < until,
            Hold::UntilReleased => true,
            Hold::Lost => false,
        }
    }

    /// When the hold runs out unless renewed (`None`: it does not, or it is lost).
    pub(super) fn until(&self) -> Option<Instant> {
        match self.watched().hold {
            Hold::Until(until) => Some(until),
            Hold::UntilReleased | Hold::Lost => None,
        }
    }

    /// Renewed: held until `until` (a lost lease stays lost).
    fn extend(&self, until: Instant) {
        let mut watched = self.watched();
        if let Hold::Until(before) = watched.hold {
            watched.hold = Hold::Until(before.max(until));
        }
    }

    pub(super) fn lose(&self) {
        self.watched().hold = Hold::Lost;
    }

    /// A save of checkpoint `id` could not reach the store: nothing more is handed out until
    /// it (or a later one) is stored.
    pub(super) fn save_failed(&self, id: i64) {
        let mut watched = self.watched();
        watched.unsaved = Some(watched.unsaved.map_or(id, |unsaved| unsaved.max(id)));
    }

    /// Checkpoint `id` is stored: one that failed before it is no longer owed.
    pub(super) fn saved(&self, id: i64) {
        let mut watched = self.watched();
        if watched.unsaved.is_some_and(|unsaved| unsaved <= id) {
            watched.unsaved = None;
        }
    }

    /// The checkpoint a save could not store, while there is one.
    pub(super) fn unsaved(&self) -> Option<i64> {
        self.watched().unsaved
    }
}

/// Renews `lease` every third of its lease time while the stream lives. A renewal that fails
/// leaves the lease to run out (the stream stops handing out events then); one the store
/// refuses ends it at once.
pub(super) fn spawn_renewal(
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
