//! State a fleet of processes shares: one rate budget per token, event stream checkpoints.
//!
//! Services run replicas that share one token, and the gateway counts the token's calls, not
//! a process's. Each piece of shared state has a small trait here with an embedded default and
//! a Redis implementation behind the `redis` feature (the `redis` module):
//!
//! | state | trait | embedded default | fleet |
//! |---|---|---|---|
//! | the quota windows of a token (per second, minute, day) | [`FleetBudget`] | the client's own pacer, shared in the process ([`crate::limits`]) | `RedisBudget` |
//! | event stream checkpoints | [`CheckpointStore`] | [`FileCheckpoints`] (replaced atomically) | `RedisCheckpoints` |
//! | the webhook receiver's dedup set | see [`crate::webhook`] | in memory | Redis `SET NX` |
//!
//! A client joins a fleet with [`crate::ClientBuilder::fleet`]. When the fleet's store cannot
//! be reached, each process does not stop: it paces itself to a conservative share of the
//! budget ([`Fleet::fallback_share`], by default a quarter: four replicas together stay within
//! the budget) until the store answers again (it is tried again 2 s after a failure, so an
//! unreachable store does not cost every call a connection timeout), and logs a warning.

mod file;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;

pub use file::FileCheckpoints;

use crate::limits::{Budget, LimitClass, Pacing};
use crate::token::TokenFingerprint;
use pubapi_sdk::hooks::BoxFuture;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A request for the earliest start of one call of a token, from a fleet's shared windows.
#[derive(Debug, Clone, Copy)]
pub struct Reserve<'a> {
    /// Whose budget (never the token itself).
    pub token: &'a TokenFingerprint,
    /// Which budget.
    pub class: LimitClass,
    /// Its windows.
    pub budget: Budget,
    /// How starts are spread and the margin every window keeps.
    pub pacing: Pacing,
    /// Book nothing when the start would be further away than this.
    pub max_wait: Duration,
    /// Never earlier than this from now: the process's own floor (its own windows and
    /// spacing, and its fallback share while the fleet's view is being rebuilt), so a grant
    /// never puts two of its starts closer than it would allow itself.
    pub not_before: Duration,
    /// Book a start (`true`), or only record [`Reserve::history`] (`false`).
    pub book: bool,
    /// The id of this booking among the process's starts of this token and class.
    pub id: u64,
    /// The process's own starts, recorded before booking when it is `Some`: after the store
    /// could not be reached (what the process sent meanwhile counts in the fleet's windows)
    /// or lost its data. Recording the same start twice keeps one.
    pub history: Option<&'a [HistoryStart]>,
    /// The store's generation as the process last saw it (empty at first); a store that
    /// answers with another one lost what it held (a restart without data).
    pub generation: &'a str,
}

/// One start of a process, for [`Reserve::history`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryStart {
    /// Its id among the process's starts ([`Reserve::id`] when it was booked).
    pub id: u64,
    /// When it started (or is booked to start), in microseconds from now: negative in the past.
    pub offset_us: i64,
}

/// What a fleet's store answered to a [`Reserve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The booking, or why there is none.
    pub reservation: Reservation,
    /// The store's generation now.
    pub generation: String,
    /// The store did not hold what the process last saw there (restarted without its data):
    /// until every process has recorded its history again, the windows undercount.
    pub lost_history: bool,
}

/// What a fleet's store answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// Booked: start after `wait` from now. (For a [`Reserve`] that books nothing: recorded.)
    Granted {
        /// How long to wait before sending.
        wait: Duration,
    },
    /// Not booked: the earliest start is `wait` away, more than allowed; `long_wait` is the
    /// part owed to the minute and day windows.
    Refused {
        /// How far the earliest start is.
        wait: Duration,
        /// How far it is for the long windows alone.
        long_wait: Duration,
    },
    /// The budget allows nothing at all.
    NoBudget,
    /// Not booked: the store's generation is not the one the process knows and no history
    /// came with the request; ask again with [`Reserve::history`].
    HistoryNeeded,
}

/// The quota windows of tokens, shared by a fleet: every reservation is atomic and timed by
/// the store's clock, so clock skew between machines does not matter.
pub trait FleetBudget: Send + Sync + fmt::Debug + 'static {
    /// Books the earliest start allowed for one call, no earlier than
    /// [`Reserve::not_before`], after recording [`Reserve::history`].
    ///
    /// A store must not book a request that reaches it after the caller stopped waiting for
    /// the answer (a store paused and resumed would otherwise fill slots nobody uses).
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Answer, FleetError>>;
}

/// Where stream checkpoints are kept: the last event id processed, by stream name.
pub trait CheckpointStore: Send + Sync + fmt::Debug + 'static {
    /// The checkpoint saved under `name`, if any.
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<i64>, FleetError>>;
    /// Saves `id` under `name`, replacing what was there.
    fn save<'a>(&'a self, name: &'a str, id: i64) -> BoxFuture<'a, Result<(), FleetError>>;
}

/// A fleet's store failed or could not be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetError {
    /// What failed, e.g. `redis: connection refused`.
    pub message: String,
}

impl FleetError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        FleetError {
            message: message.into(),
        }
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fleet store failed: {}", self.message)
    }
}

impl std::error::Error for FleetError {}

/// How a client takes part in a fleet: the shared budget store and what to do without it.
#[derive(Clone)]
pub struct Fleet {
    /// The store of the quota windows.
    pub budget: Arc<dyn FleetBudget>,
    /// While the store cannot be reached, each process keeps to `1 / fallback_share` of every
    /// window (default 4).
    pub fallback_share: u32,
}

impl Fleet {
    /// A fleet around `budget`, falling back to a quarter of the budget per process.
    pub fn new(budget: Arc<dyn FleetBudget>) -> Self {
        Fleet {
            budget,
            fallback_share: 4,
        }
    }

    /// The same fleet with another fallback share (at least 1).
    pub fn fallback_share(mut self, share: u32) -> Self {
        self.fallback_share = share.max(1);
        self
    }
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("budget", &self.budget)
            .field("fallback_share", &self.fallback_share)
            .finish()
    }
}
