//! The receiver's builder: its settings, their defaults and checks, and the errors of
//! [`ReceiverBuilder::build`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{
    DEFAULT_DEDUP_CAPACITY, DEFAULT_DEDUP_WINDOW, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ITEMS,
    DEFAULT_MAX_READ_BYTES, DEFAULT_RECEIVER_NAME, DEFAULT_RECENT_CAPACITY, DEFAULT_RECENT_WINDOW,
    MAX_RECEIVER_NAME_BYTES, Receiver,
};
use crate::webhook::dedup::{DedupStore, MemoryDedup};
use crate::webhook::recent::Recent;
use crate::webhook::{WebhookSecret, client_id_hash};

/// Configures a [`Receiver`]; made by [`Receiver::builder`].
#[derive(Debug)]
pub struct ReceiverBuilder {
    current: Option<WebhookSecret>,
    previous: Option<WebhookSecret>,
    own_client_id_hashes: Vec<String>,
    max_body_bytes: usize,
    max_read_bytes: usize,
    max_items: usize,
    /// `None`: the default, for the in-process store.
    dedup_window: Option<Duration>,
    /// `None`: the default, for the in-process store.
    dedup_capacity: Option<usize>,
    /// The receiver's name and a shared store.
    dedup_store: Option<(String, Arc<dyn DedupStore>)>,
    /// `None`: the default, with a shared store.
    recent: Option<(usize, Duration)>,
}

impl Default for ReceiverBuilder {
    fn default() -> Self {
        ReceiverBuilder {
            current: None,
            previous: None,
            own_client_id_hashes: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_items: DEFAULT_MAX_ITEMS,
            dedup_window: None,
            dedup_capacity: None,
            dedup_store: None,
            recent: None,
        }
    }
}

impl ReceiverBuilder {
    /// The secret the registration sends now (its `authHeader`). Required.
    #[must_use]
    pub fn secret(mut self, secret: WebhookSecret) -> Self {
        self.current = Some(secret);
        self
    }

    /// The secret the registration sent before, still accepted while rotating.
    ///
    /// Rotate by deploying with the new secret as current and the old as previous, then
    /// updating the registration's `authHeader`, then (after the last retry of old deliveries,
    /// 71 minutes) deploying without the previous secret.
    #[must_use]
    pub fn previous_secret(mut self, secret: WebhookSecret) -> Self {
        self.previous = Some(secret);
        self
    }

    /// How long a handed-over event is remembered (default [`DEFAULT_DEDUP_WINDOW`]), by the
    /// in-process store; a [`dedup_store`](Self::dedup_store) has its own setting.
    #[must_use]
    pub fn dedup_window(mut self, window: Duration) -> Self {
        self.dedup_window = Some(window);
        self
    }

    /// How many handed-over events are remembered at most; the oldest are forgotten first
    /// (default [`DEFAULT_DEDUP_CAPACITY`]), by the in-process store; a
    /// [`dedup_store`](Self::dedup_store) has its own bounds.
    #[must_use]
    pub fn dedup_capacity(mut self, capacity: usize) -> Self {
        self.dedup_capacity = Some(capacity);
        self
    }

    /// Remembers handed-over events in `store` instead of this process's memory, under the
    /// receiver's name `receiver_name`: give it to every replica of one endpoint, and a
    /// different name to every other endpoint sharing the store, so that two registrations
    /// receiving the same event each handle it once.
    ///
    /// The name is 1 to 64 ASCII letters, digits, `-`, `_` or `.`. The store keeps its own
    /// window and bounds, so [`dedup_window`](Self::dedup_window) and
    /// [`dedup_capacity`](Self::dedup_capacity) are refused with it.
    ///
    /// ```no_run
    /// # #[cfg(feature = "redis")]
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use pubapi_sdk_ext::redis;
    /// use pubapi_sdk_ext::webhook::{Receiver, RedisDedup, WebhookSecret};
    ///
    /// let redis = redis::Client::open("redis://127.0.0.1/")?;
    /// let manager = redis::aio::ConnectionManager::new(redis).await?;
    /// let receiver = Receiver::builder()
    ///     .secret(WebhookSecret::new(std::env::var("WEBHOOK_SECRET")?)?)
    ///     .dedup_store("orders", RedisDedup::new(manager))
    ///     .build()?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn dedup_store(mut self, receiver_name: &str, store: impl DedupStore) -> Self {
        self.dedup_store = Some((receiver_name.to_owned(), Arc::new(store)));
        self
    }

    /// Bounds the receiver's second line behind a [`dedup_store`](Self::dedup_store): the keys
    /// of the last `count` events this process handed over (and, apart from them, of the dead
    /// letters of its last [`DEAD_LETTER_DEDUP_CAPACITY`](crate::webhook::DEAD_LETTER_DEDUP_CAPACITY)
    /// deliveries that had some), each for `window` after the handler returned `Ok`. Defaults:
    /// [`DEFAULT_RECENT_CAPACITY`](super::DEFAULT_RECENT_CAPACITY) and
    /// [`DEFAULT_RECENT_WINDOW`](super::DEFAULT_RECENT_WINDOW); a window longer than the
    /// store's [window](DedupStore::window) is shortened to it. A `count` or `window` of zero
    /// turns the second line off.
    ///
    /// A store that **lost** what it held (Redis restarted without its data, flushed, failed
    /// over to a replica that had not received the last writes, or evicted keys under
    /// memory pressure; or a commit that failed, whose claim then expired) answers that an
    /// event it was told about is new. When this process handed that event over within these
    /// bounds, the receiver counts it as a duplicate instead (answered 200 like any duplicate,
    /// in [`HandleOutcome::forgotten_by_store`](super::HandleOutcome::forgotten_by_store)), logs a warning, and records it in the store
    /// again. So **the same process never hands one event over twice within these bounds**,
    /// whatever the store lost. What this does not cover:
    ///
    /// - another replica, or this process after a restart, that never handed the event over
    ///   cannot know it: a repeat that reaches it after the store lost its set is handed over
    ///   again (the platform sends a delivery again only when it got no 200, so on a lost
    ///   answer or a refused delivery);
    /// - past `count` events or past `window`, the oldest are forgotten here too;
    /// - only what a handler finished is kept: a claim the store loses while its handler
    ///   still runs lets a repeat that arrives meanwhile be handed over at the same time;
    /// - while the store cannot be reached, deliveries are still refused with 503.
    ///
    /// Only with a [`dedup_store`](Self::dedup_store): the in-process default store is already
    /// this process's memory, so without one [`build`](Self::build) refuses this setting.
    #[must_use]
    pub fn recent_deliveries(mut self, count: usize, window: Duration) -> Self {
        self.recent = Some((count, window));
        self
    }

    /// Drops events caused by this OAuth client id (their `user.clientIdHash` is the SHA-1 of
    /// it; see [`client_id_hash`]). May be called for several client ids.
    #[must_use]
    pub fn ignore_own_client_id(mut self, client_id: &str) -> Self {
        self.own_client_id_hashes.push(client_id_hash(client_id));
        self
    }

    /// The largest body parsed, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]); a larger
    /// authenticated body is handed over raw as a dead letter, never refused. The heap of
    /// handling a delivery is bounded by a multiple of this (see [`Receiver`]).
    #[must_use]
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// The most the axum route reads of a body before answering 413 (default
    /// [`DEFAULT_MAX_READ_BYTES`]): a memory bound, far above any real batch.
    #[must_use]
    pub fn max_read_bytes(mut self, max: usize) -> Self {
        self.max_read_bytes = max;
        self
    }

    /// The most elements of `data` read from one delivery (default [`DEFAULT_MAX_ITEMS`]);
    /// a body with more is handed over raw as a dead letter, never refused.
    ///
    /// This is also the most event ids one delivery can add to the dedup memory, so the most
    /// it can evict of other deliveries': keep it well below
    /// [`dedup_capacity`](Self::dedup_capacity), and raise it with
    /// [`max_body_bytes`](Self::max_body_bytes) (a real event takes 146 bytes or more).
    #[must_use]
    pub fn max_items(mut self, max: usize) -> Self {
        self.max_items = max;
        self
    }

    /// Builds the receiver.
    ///
    /// # Errors
    ///
    /// [`ReceiverBuildError`] when no secret was given or a limit is zero.
    pub fn build(self) -> Result<Receiver, ReceiverBuildError> {
        let current = self.current.ok_or(ReceiverBuildError::MissingSecret)?;
        if self.dedup_capacity == Some(0) {
            return Err(ReceiverBuildError::ZeroDedupCapacity);
        }
        if self.dedup_window.is_some_and(|window| window.is_zero()) {
            return Err(ReceiverBuildError::ZeroDedupWindow);
        }
        if self.max_body_bytes == 0 || self.max_read_bytes == 0 {
            return Err(ReceiverBuildError::ZeroMaxBodyBytes);
        }
        if self.max_items == 0 {
            return Err(ReceiverBuildError::ZeroMaxItems);
        }
        let (name, dedup, recent): (Arc<str>, Arc<dyn DedupStore>, _) = match self.dedup_store {
            Some(_) if self.dedup_window.is_some() || self.dedup_capacity.is_some() => {
                return Err(ReceiverBuildError::DedupSettingsWithStore);
            }
            Some((name, _)) if !is_receiver_name(&name) => {
                return Err(ReceiverBuildError::InvalidReceiverName);
            }
            Some((name, store)) => {
                let (count, window) = self
                    .recent
                    .unwrap_or((DEFAULT_RECENT_CAPACITY, DEFAULT_RECENT_WINDOW));
                let recent = Recent::new(count, window.min(store.window()));
                (name.into(), store, recent)
            }
            None if self.recent.is_some() => {
                return Err(ReceiverBuildError::RecentDeliveriesWithoutStore);
            }
            None => (
                DEFAULT_RECEIVER_NAME.into(),
                Arc::new(MemoryDedup::new(
                    self.dedup_window.unwrap_or(DEFAULT_DEDUP_WINDOW),
                    self.dedup_capacity.unwrap_or(DEFAULT_DEDUP_CAPACITY),
                )),
                None,
            ),
        };
        Ok(Receiver {
            current,
            previous: self.previous,
            own_client_id_hashes: self.own_client_id_hashes,
            max_body_bytes: self.max_body_bytes,
            max_read_bytes: self.max_read_bytes,
            max_items: self.max_items,
            name,
            dedup,
            recent,
        })
    }
}

/// 1 to 64 ASCII letters, digits, `-`, `_` or `.`: readable in a shared store's keys, and
/// never a separator.
fn is_receiver_name(name: &str) -> bool {
    (1..=MAX_RECEIVER_NAME_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// Why [`ReceiverBuilder::build`] refused the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReceiverBuildError {
    /// No [`secret`](ReceiverBuilder::secret) was given.
    MissingSecret,
    /// [`dedup_capacity`](ReceiverBuilder::dedup_capacity) is zero.
    ZeroDedupCapacity,
    /// [`dedup_window`](ReceiverBuilder::dedup_window) is zero.
    ZeroDedupWindow,
    /// [`max_body_bytes`](ReceiverBuilder::max_body_bytes) is zero.
    ZeroMaxBodyBytes,
    /// [`max_items`](ReceiverBuilder::max_items) is zero.
    ZeroMaxItems,
    /// The receiver name given with [`dedup_store`](ReceiverBuilder::dedup_store) is empty,
    /// longer than 64 bytes, or has a character other than ASCII letters, digits, `-`, `_`
    /// and `.`.
    InvalidReceiverName,
    /// [`dedup_window`](ReceiverBuilder::dedup_window) or
    /// [`dedup_capacity`](ReceiverBuilder::dedup_capacity) was set with a
    /// [`dedup_store`](ReceiverBuilder::dedup_store), which has its own settings.
    DedupSettingsWithStore,
    /// [`recent_deliveries`](ReceiverBuilder::recent_deliveries) was set without a
    /// [`dedup_store`](ReceiverBuilder::dedup_store): the in-process default store is this
    /// process's memory already.
    RecentDeliveriesWithoutStore,
}

impl fmt::Display for ReceiverBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReceiverBuildError::MissingSecret => "webhook receiver needs a secret",
            ReceiverBuildError::ZeroDedupCapacity => "webhook receiver dedup capacity is zero",
            ReceiverBuildError::ZeroDedupWindow => "webhook receiver dedup window is zero",
            ReceiverBuildError::ZeroMaxBodyBytes => "webhook receiver body limit is zero",
            ReceiverBuildError::ZeroMaxItems => "webhook receiver item limit is zero",
            ReceiverBuildError::InvalidReceiverName => {
                "webhook receiver name is not 1 to 64 of [A-Za-z0-9._-]"
            }
            ReceiverBuildError::DedupSettingsWithStore => {
                "webhook receiver dedup window or capacity set with a dedup store of its own"
            }
            ReceiverBuildError::RecentDeliveriesWithoutStore => {
                "webhook receiver recent deliveries set without a dedup store"
            }
        })
    }
}

impl std::error::Error for ReceiverBuildError {}
