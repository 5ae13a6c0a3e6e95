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
//! The Redis stores take one URL that says which Redis: one server, Sentinel or Cluster, with
//! or without TLS; the `redis` module's doc lists the forms and what each piece of state needs
//! Redis to keep (persistence, eviction).
//!
//! A client joins a fleet with [`crate::ClientBuilder::fleet`]; every client of one token in a
//! process must join the same fleet with the same limits and pacing, or `build()` refuses it
//! ([`crate::limits::BudgetConflict`]).
//!
//! # Through the store's faults
//!
//! The gateway's limits hold whatever the store does: every start a process sends is one the
//! store granted, in the store's clock, and the store's windows hold every start it granted
//! or was told of. Checked by exploring the protocol (`tests/fleet_sim.rs`: 10,000 seeded
//! scenarios on a paused clock, processes with their own clocks, a store model with latency
//! either way and every fault below, every window checked at every arrival) and against a
//! real `redis-server` stopped, paused, restarted with and without its data, and answering
//! late (`tests/fleet_faults.rs`, `tests/fleet_replicated.rs`).
//!
//! - **Down, paused or slower than its timeout**: a call waits for the store, within its own
//!   deadline, and tries it again 2 s after a failure (calls queued behind a failing one do
//!   not each wait for its timeout), then fails with
//!   [`Error::FleetUnavailable`](crate::Error::FleetUnavailable), nothing sent; a warning is
//!   logged once per outage. Processes that paced on their own while the store is away could
//!   not keep a window that allows fewer calls than there are processes, so by default none
//!   does; [`Fleet::fallback_share`] chooses availability instead (each process keeps to a
//!   share of every window; what it sent meanwhile is recorded in the store once it answers,
//!   and its share stays its floor for 3.5 s after, until every process has had that chance).
//! - **Emptied** (restarted without its data, flushed, a failover to a replica that lacks
//!   the last writes) or **another server** (a failover, a restart): the store's generation
//!   changes; each process learns it at its next booking, or from a question it asks the
//!   store 2 s after the store last answered it (while it has starts a window counts), and
//!   records its own starts again ([`Reserve::history`]). The store books nothing for 3.5 s
//!   after it begins a generation ([`Reserve::quiet_after_new`]): by then every live process
//!   has given its history, and no start booked before the loss is still ahead, since none
//!   is booked more than 3 s ahead (a call whose start is further away asks again when it is
//!   closer). Once a process reports the loss, the store books nothing within the class's
//!   longest window shorter than a day ([`Reserve::quiet_after_loss`]: a minute for the AI
//!   class), so the calls of processes that have exited since have left it. The one thing no
//!   process can tell the store is the day's calls of processes that exited before the loss:
//!   the gateway's own count of the day, which each process reads from its answers, keeps
//!   the daily window; a loss that no live process witnessed (every process that made calls
//!   in the last minute had exited) leaves the minute window to the gateway too.
//! - **Given up**: a start the store booked for a call that will not use it is given back
//!   ([`FleetBudget::give_back`], after any request that carries the process's history): its
//!   caller stopped waiting before it (a timeout, a cancelled task), the class was blocked
//!   meanwhile, the answer came after it ([`Reservation::Missed`]), or the answer was lost
//!   (the store may have booked it). None is sent to a store found down, and one that fails
//!   marks the store down: those starts go back with the history, once the store answers. A
//!   give-back that finds no tokio runtime to run on leaves the start counted: stricter,
//!   never looser.
//! - **Paused**: a booking that reaches the store after its caller stopped waiting takes no
//!   slot (the store checks a deadline in its own clock).
//! - **Slow**: a booked start is an instant of the store's clock, so an answer that comes late
//!   leaves less to wait; one that comes after its start by more than
//!   [`Pacing::lateness_allowed`](crate::Pacing::lateness_allowed) is not used
//!   ([`Reservation::Missed`]), and the process books again further ahead. A process that
//!   wakes later than that after its start gives the start back and books again.
//! - **Always**: a grant is never earlier than the process's own floor
//!   ([`Reserve::not_before`]): its own windows and spacing, so no answer of the store can put
//!   two of its calls closer than it allows itself.
//!
//! # One consumer per event stream
//!
//! A [`CheckpointStore`] also decides who consumes a stream: an [`EventStream`] with
//! checkpoints ([`EventStreamBuilder::checkpoints`]) takes the stream's [`Lease`] from its
//! store before it reads anything, and hands out events only while it holds it. Nothing else
//! is needed: replicas start the stream the same way, one of them consumes, the others stand
//! by ([`StreamNotice::StandingBy`]) and one takes over when the holder stops.
//!
//! - `RedisCheckpoints` (feature `redis`): a lease key (10 s by default), renewed every
//!   third of that while the holder runs, and a fencing token from the server's clock that
//!   grows with every acquisition. A holder that dies (SIGKILL) or stalls longer than the
//!   lease time loses it, and a standby takes over within the lease time and a fifth. Redis
//!   that loses its data (a flush, a restart without persistence, a failover to a replica
//!   that had not received the last writes) hands out no token twice and never gives the
//!   stream to two holders: the first acquisition after the loss, or on a server that did
//!   not record the stream itself (a promoted replica), waits one lease time, by which the
//!   old holder has found its lease gone and stopped (see `fleet::redis`).
//!
//! A holder hands out an event only while its hold has a third of the lease time left (its
//! own clock, counted from before each renewal was sent, so it ends before the store's
//! lease): **a handler that ends within a third of the lease time never overlaps another
//! consumer's**, however late a renewal comes (the stream waits for it before the next
//! event). A holder whose save cannot reach the store hands out nothing more until the
//! checkpoint is stored (it tries again itself), and loses the lease when the store stays
//! away for the lease time. Checked by exploring the protocol (`tests/fleet_sim.rs`: 2,000
//! seeded runs of 2 to 4 consumers, killed, stopped and started late, through every fault
//! of the store: never two consumers inside a handler, tokens only growing, nothing
//! skipped, and with the store's data kept at most one event handled again per change of
//! holder) and on real servers (`tests/events.rs`, `tests/fleet_redis.rs`,
//! `tests/fleet_replicated.rs`).
//! - [`FileCheckpoints`]: an OS advisory lock on a lock file beside the checkpoint file
//!   (`<file>.lock`), so two processes on one machine never both consume through one file. The
//!   second stands by and takes over within a second of the first one ending; the OS frees
//!   the lock of a process that dies.
//! - A store of your own that keeps the default lease methods grants every consumer the
//!   stream, as before leases: it serves one consumer.
//!
//! Saves are fenced and never go backwards: [`CheckpointStore::save`] takes the lease, the
//! store refuses the save of a holder whose lease has passed to another
//! ([`FleetErrorKind::LeaseLost`]) and keeps the larger of the saved and the new id. So every
//! event is handed out in order, and one is handed out again only when a holder handled it
//! and died before saving it: the new holder says so ([`StreamNotice::Consuming`] with
//! `taken_over`), and the first event after that notice is the one (save after every event,
//! and it is at most one per death).
//!
//! A checkpoint the store lost is never skipped over silently. A consumer remembers the
//! newest checkpoint it saw in the store (its own saves, and what it reads while standing
//! by): a holder whose save finds the store without it or behind it, and a new holder that
//! finds none or an older one, say [`StreamNotice::CheckpointLost`], resume from the newest
//! they knew and write it again. A process that never saw the stream cannot tell a store
//! that lost everything from a new stream: it starts as [`EventStreamBuilder::start`] says
//! (the default, [`StreamStart::Latest`], skips what happened meanwhile; choose
//! [`StreamStart::Oldest`] or an `After` of your own records where that matters). Persistence
//! (`appendonly yes`, and a replica acknowledging writes with `WAIT` or
//! `min-replicas-to-write`) keeps that from happening at all.
//!
//! A store that answers with something that is not a checkpoint (an empty or garbled file, a
//! key that holds no integer) is [`FleetErrorKind::Corrupt`]: the stream ends at once with
//! the error, which names the file or key. A store that cannot be reached is
//! [`FleetErrorKind::Unavailable`]: the stream reports each failure as an error item (and a
//! `tracing` warning) and tries again after a backoff of 1 s doubling up to a minute.
//!
//! [`EventStream`]: crate::events::EventStream
//! [`EventStreamBuilder::checkpoints`]: crate::events::EventStreamBuilder::checkpoints
//! [`StreamNotice::StandingBy`]: crate::events::StreamNotice::StandingBy
//! [`StreamNotice::Consuming`]: crate::events::StreamNotice::Consuming
//! [`StreamNotice::CheckpointLost`]: crate::events::StreamNotice::CheckpointLost
//! [`EventStreamBuilder::start`]: crate::events::EventStreamBuilder::start
//! [`StreamStart::Latest`]: crate::events::StreamStart::Latest
//! [`StreamStart::Oldest`]: crate::events::StreamStart::Oldest

pub(crate) mod file;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
#[cfg(feature = "redis")]
mod redis_clock;
// Crate-visible: the webhook dedup store may open the same connection.
#[cfg(feature = "redis")]
pub(crate) mod redis_connection;
#[cfg(feature = "redis")]
mod redis_streams;
#[cfg(feature = "redis")]
mod redis_url;

pub use crate::fleet_error::{FleetError, FleetErrorKind};
pub use file::FileCheckpoints;

use crate::limits::{Budget, LimitClass, Pacing};
use crate::token::TokenFingerprint;
use pubapi_sdk::hooks::BoxFuture;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What the operations of a fleet store return: a boxed future of `T` or a [`FleetError`].
pub type FleetFuture<'a, T> = BoxFuture<'a, Result<T, FleetError>>;

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
    /// Book a start (`true`), or only record [`Reserve::history`] (`false`). A request that
    /// books nothing and carries no history is a process's question whether the store still
    /// holds what it gave it (see the [module doc](self#through-the-stores-faults)): asked 2 s
    /// after the store last answered the process, while it has starts a window counts. A
    /// store must book nothing for it.
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
    /// After the store is found to have lost what it held (a process reports an older
    /// generation, or another server holds the keys now), it books no start of the class
    /// earlier than this after it was found: by then every live process has given it its
    /// history, and the starts of processes that have exited since have left the class's
    /// windows, but for the day's, which the gateway's own count keeps.
    pub quiet_after_loss: Duration,
    /// When the store begins a generation nobody has reported a loss of (the token's first
    /// booking on it, or the first after a loss that no process has noticed yet, such as a
    /// new process's after a flush), it books no start earlier than this after: by then every
    /// live process has asked the store and given it its history. A loss reported later
    /// stretches it to [`Reserve::quiet_after_loss`].
    pub quiet_after_new: Duration,
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
    /// Booked, but the answer came after the start it booked (a slow store): sent now, the
    /// call would crowd the starts booked after it. The process gives the start back
    /// ([`FleetBudget::give_back`]) and asks again further ahead.
    Missed {
        /// How long ago the booked start was when the answer arrived.
        late_by: Duration,
    },
}

/// The quota windows of tokens, shared by a fleet: every reservation is atomic and timed by
/// the store's clock, so clock skew between machines does not matter.
pub trait FleetBudget: Send + Sync + fmt::Debug + 'static {
    /// Books the earliest start allowed for one call, no earlier than
    /// [`Reserve::not_before`], after recording [`Reserve::history`].
    ///
    /// A store must not book a request that reaches it after the caller stopped waiting for
    /// the answer (a store paused and resumed would otherwise fill slots nobody uses).
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> FleetFuture<'a, Answer>;

    /// Gives back the start booked for call `id` ([`Reserve::id`]) of `token`'s `class`: its
    /// caller stopped waiting before it (a timeout, a cancelled task), so it will not be
    /// made, and the fleet's windows should not count it. Giving back a start that is not
    /// booked does nothing.
    ///
    /// The default does nothing: the start stays counted, which can only make the fleet
    /// stricter.
    fn give_back<'a>(
        &'a self,
        token: &'a TokenFingerprint,
        class: LimitClass,
        id: u64,
    ) -> FleetFuture<'a, ()> {
        let _ = (token, class, id);
        Box::pin(async { Ok(()) })
    }
}

/// Where stream checkpoints are kept (the last event id processed, by stream name), and who
/// consumes each stream: see [the module doc](self#one-consumer-per-event-stream).
///
/// `load` and `save` are required; the lease methods have defaults that grant every consumer
/// the stream (a store for one consumer).
pub trait CheckpointStore: Send + Sync + fmt::Debug + 'static {
    /// The checkpoint saved under `name`, if any.
    ///
    /// # Errors
    /// [`FleetErrorKind::Corrupt`] naming the file or key when what is there is not a
    /// checkpoint; [`FleetErrorKind::Unavailable`] when the store cannot be read now.
    fn load<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Option<i64>>;

    /// Saves `id` as the checkpoint of the lease's stream when `lease` is still the stream's
    /// current lease, keeping the saved id when it is larger (a checkpoint never goes back),
    /// and answers the checkpoint the store held before (`None` when it held none): a store
    /// that lost its data answers less than the stream saved last, and the stream says so
    /// ([`StreamNotice::CheckpointLost`](crate::events::StreamNotice::CheckpointLost)).
    ///
    /// # Errors
    /// [`FleetErrorKind::LeaseLost`] when another consumer holds the stream now, or nobody
    /// (nothing is saved); [`FleetErrorKind::Corrupt`] when what is saved there is not a
    /// checkpoint.
    fn save<'a>(&'a self, lease: &'a Lease, id: i64) -> FleetFuture<'a, Option<i64>>;

    /// Takes the lease of stream `name`, or says when to try again while another consumer
    /// holds it. The default grants it at once, with token 0 and no expiry.
    fn acquire<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Acquired> {
        Box::pin(async move { Ok(Acquired::Lease(Lease::new(name, 0))) })
    }

    /// Extends a lease for another lease time: `Ok(false)` when it is no longer held (it ran
    /// out, and another consumer may hold it). The default keeps every lease.
    fn renew<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, bool> {
        let _ = lease;
        Box::pin(async { Ok(true) })
    }

    /// Gives a lease up, so a standby takes over at once and knows that nothing was left
    /// unsaved. The default does nothing.
    fn release<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, ()> {
        let _ = lease;
        Box::pin(async { Ok(()) })
    }
}

/// A consumer's hold on one stream: while it is held, no other consumer of the same store
/// hands out the stream's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The stream's name.
    pub name: String,
    /// The fencing token: larger with every acquisition of the stream's lease, even after the
    /// store lost its data, and carried by every renewal and save, so the store refuses those
    /// of an earlier holder.
    pub token: u64,
    /// The previous holder's lease ended without a release (it died or stalled): it may have
    /// handled the event after the saved checkpoint and not saved it.
    pub taken_over: bool,
    /// The lease runs out unless renewed within this ([`CheckpointStore::renew`]); `None`
    /// when it lasts until released (a file lock, which the OS frees when its process ends).
    pub expires_in: Option<Duration>,
}

impl Lease {
    /// A lease of `name` with `token`, not taken over, that lasts until released.
    pub fn new(name: impl Into<String>, token: u64) -> Self {
        Lease {
            name: name.into(),
            token,
            taken_over: false,
            expires_in: None,
        }
    }
}

/// What [`CheckpointStore::acquire`] answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// The stream is this consumer's.
    Lease(Lease),
    /// Another consumer holds the stream: try again after `retry_in`.
    Busy {
        /// When to try again.
        retry_in: Duration,
    },
}

/// Microseconds since the Unix epoch on this machine (0 before it): the file store's lease
/// tokens and the Redis budget's reading of the server's clock.
pub(crate) fn unix_us() -> i64 {
    crate::time::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// How a client takes part in a fleet: the shared budget store and what to do without it.
#[derive(Clone)]
pub struct Fleet {
    /// The store of the quota windows.
    pub budget: Arc<dyn FleetBudget>,
    /// While the store cannot be reached: `None` (the default) sends nothing the store did not
    /// grant, so calls wait for the store within their deadline; `Some(n)` paces each process
    /// on `1 / n` of every window instead, which keeps working through an outage but cannot
    /// keep the per-second window (see [`Fleet::fallback_share`]).
    pub fallback_share: Option<u32>,
}

impl Fleet {
    /// A fleet around `budget`. While the store cannot be reached (down, paused, answering
    /// slower than its timeout), a call waits for it, within the call's own deadline, and
    /// fails with [`LimitError::StoreUnavailable`](crate::limits::LimitError::StoreUnavailable)
    /// when the store has not answered by then: nothing the store did not grant is sent, so
    /// the fleet never goes over a window however the store fails.
    pub fn new(budget: Arc<dyn FleetBudget>) -> Self {
        Fleet {
            budget,
            fallback_share: None,
        }
    }

    /// While the store cannot be reached, each process paces itself on `1 / share` of every
    /// window (`share` at least 1) instead of waiting for the store: calls go on through an
    /// outage, and what a process sent meanwhile is counted in the fleet's windows once the
    /// store answers. The trade: processes that pace apart cannot keep a window that
    /// allows fewer calls than there are processes (four processes on a quarter of 2 calls a
    /// second each send one call every 2.2 s, and nothing keeps those four calls out of one
    /// second), so the gateway may throttle a few calls (`OVER_QPS`), which the client
    /// retries; the daily window holds when the processes use it evenly.
    pub fn fallback_share(mut self, share: u32) -> Self {
        self.fallback_share = Some(share.max(1));
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
