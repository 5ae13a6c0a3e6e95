//! Checkpoints: the saves of [`EventStream::save_checkpoint`], and the [`Memory`] the
//! stream and its walker share of what the store held, so that a store that lost its
//! checkpoint is found out and written again ([`StreamNotice::CheckpointLost`]); the walker
//! reads the checkpoint it resumes after (`Walker::resolve`).

use super::{EventStream, StreamNotice};
use crate::fleet::{FleetError, FleetErrorKind};
use std::collections::VecDeque;

/// What a stream and its walker both know of the store: the newest checkpoint seen there
/// (loaded, or saved by this stream), and notices a save has to say.
#[derive(Debug, Default)]
pub(super) struct Memory(std::sync::Mutex<Remembered>);

/// What the memory holds, behind its one lock.
#[derive(Debug, Default)]
struct Remembered {
    known: Option<i64>,
    reported: VecDeque<StreamNotice>,
}

impl Remembered {
    fn seen(&mut self, id: i64) {
        self.known = Some(self.known.map_or(id, |known| known.max(id)));
    }

    fn lost(&self, name: &str, found: Option<i64>) -> Option<i64> {
        let known = self.known?;
        if found.is_some_and(|found| found >= known) {
            return None;
        }
        tracing::warn!(stream = %name, ?found, known, "the checkpoint store lost the stream's checkpoint: it is written again");
        Some(known)
    }
}

impl Memory {
    fn lock(&self) -> std::sync::MutexGuard<'_, Remembered> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers that the store held `id`.
    pub(super) fn seen(&self, id: i64) {
        self.lock().seen(id);
    }

    /// The newest checkpoint known, when the store holds `found` and that is behind it (the
    /// store lost what it held); logged as a warning.
    pub(super) fn lost(&self, name: &str, found: Option<i64>) -> Option<i64> {
        self.lock().lost(name, found)
    }

    /// Remembers a save of `id` that found `found` in the store (under one lock): a
    /// [`StreamNotice::CheckpointLost`] to report when the store had lost what it held.
    pub(super) fn saved(&self, name: &str, found: Option<i64>, id: i64) {
        let mut memory = self.lock();
        if memory.lost(name, found).is_some() {
            memory.reported.push_back(StreamNotice::CheckpointLost {
                found,
                restored: id,
            });
        }
        memory.seen(id);
    }

    /// The next notice a save has to say.
    pub(super) fn next_reported(&self) -> Option<StreamNotice> {
        self.lock().reported.pop_front()
    }
}

impl EventStream {
    /// Saves [`EventStream::checkpoint`] in the store given to
    /// [`EventStreamBuilder::checkpoints`](super::EventStreamBuilder::checkpoints), fenced by the stream's lease (nothing to do
    /// without a store, while standing by, or before the first item). Call it after
    /// processing each item: then a consumer that dies leaves at most one event handled and
    /// not saved.
    ///
    /// A save that finds the store without the checkpoint this stream saw or saved there,
    /// or behind it (the store lost its data), writes it all the same and says
    /// [`StreamNotice::CheckpointLost`] next.
    ///
    /// # Errors
    /// [`FleetError`] when the store cannot be reached: the stream hands out nothing more
    /// until the checkpoint is stored (it tries again itself, before its next item), so a
    /// holder that cannot save never runs ahead of what a holder after it would resume from;
    /// a store that stays unreachable for the lease time is a lost lease
    /// ([`StreamNotice::LeaseLost`]).
    /// [`FleetErrorKind::LeaseLost`] when another consumer holds the stream now: the stream
    /// says [`StreamNotice::LeaseLost`] next and hands out nothing more until it holds it
    /// again.
    pub async fn save_checkpoint(&self) -> Result<(), FleetError> {
        let (Some((store, name)), Some(lease), Some(id)) =
            (&self.store, &self.lease, self.checkpoint)
        else {
            return Ok(());
        };
        match store.save(lease, id).await {
            Ok(found) => {
                self.memory.saved(name, found, id);
                if let Some(watch) = &self.watch {
                    watch.saved(id);
                }
                Ok(())
            }
            Err(e) => {
                if let Some(watch) = &self.watch {
                    match e.kind {
                        FleetErrorKind::LeaseLost => watch.lose(),
                        FleetErrorKind::Unavailable => watch.save_failed(id),
                        _ => {}
                    }
                }
                Err(e)
            }
        }
    }
}
