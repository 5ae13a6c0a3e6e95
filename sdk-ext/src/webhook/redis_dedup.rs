//! The receiver's dedup set on Redis (feature `redis`): shared by replicas, kept across restarts.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pubapi_sdk::hooks::BoxFuture;
use redis::aio::ConnectionManager;

use crate::fleet::redis_connection::{Connection, connect};
use redis::{RedisResult, Script};

use super::DEFAULT_DEDUP_WINDOW;
use super::dedup::{Claim, ClaimFuture, Claimant, DedupError, DedupKey, DedupStore};

/// The value of a committed key.
const DONE: &[u8] = b"done";

/// The start of a claimed key's value; the claimant's id follows.
const CLAIMED: &str = "claimed:";

/// The end of the name of a receiver's generation key (see [Data loss](RedisDedup#data-loss)).
const GENERATION: &str = "generation";

/// Deletes each key still claimed by `ARGV[1]`, leaving other claimants' and committed keys.
const RELEASE: &str = r"
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    released = released + redis.call('DEL', key)
  end
end
return released
";

/// A [`DedupStore`] on Redis, through a [`ConnectionManager`] ([`RedisDedup::new`]) or any
/// Redis the fleet's URLs name, Sentinel and Cluster included ([`RedisDedup::connect`]): every
/// replica of a receiver
/// that shares it hands a delivery over once, also after a restart.
///
/// # Keys
///
/// One key per event: `<prefix>{<receiver name>}:event:<digest>`, and one per delivery with
/// dead letters: `<prefix>{<receiver name>}:dead-letters:<digest>` (the receiver's name in
/// braces is the keys' hash tag: on a Redis Cluster a receiver's keys share one slot, so one
/// claim may touch them together), where the prefix defaults
/// to [`DEFAULT_KEY_PREFIX`](Self::DEFAULT_KEY_PREFIX) (`pubapi:webhook:dedup:`), the name
/// is the one given to [`ReceiverBuilder::dedup_store`](super::ReceiverBuilder::dedup_store),
/// and the digest is [`DedupKey::digest_hex`] (SHA-256 of the receiver name, domain and
/// `eventId`: keys have a fixed size whatever the sender puts in `eventId`). Find one event's
/// key with [`redis_key`](Self::redis_key). One more key per receiver, without expiry:
/// `<prefix>{<receiver name>}:generation` (see [Data loss](Self#data-loss)).
///
/// # Claim, commit, release
///
/// - **Claim**, in one atomic round trip for the whole delivery (`MULTI`, then
///   `SET generation <new value> NX` and `GET generation`, then per key
///   `SET key claimed:<claimant> NX PX <lease>` and `GET key`, `EXEC`): the key was free
///   (fresh), committed (seen, a duplicate) or claimed by another delivery (in flight: the
///   receiver answers 503 and the platform retries later).
/// - **Commit** after the handler returned `Ok`: `SET key done PX <ttl>`, so the key is
///   remembered for [`ttl`](Self::ttl) from then on.
/// - **Release** after the handler failed or its handling was cancelled: a script deletes the
///   keys still claimed by this delivery (never another's claim, never a committed key).
///
/// # Expiry
///
/// - [`ttl`](Self::ttl), default 2 hours ([`DEFAULT_DEDUP_WINDOW`]): the platform retries a
///   delivery 1 minute, 10 minutes and 1 hour after the previous attempt, so the last retry
///   comes 71 minutes after the first. A key committed at any attempt must outlive every
///   later retry of that delivery (a lost 200 makes the platform send it again); 2 hours
///   covers the 71 minutes with room for slow handlers, queueing and clock differences, and
///   matches the in-process store's window.
/// - [`claim_lease`](Self::claim_lease), default 5 minutes: a replica that dies while its
///   handler runs neither commits nor releases. Its claim expires after the lease, so a
///   later retry is handled; retries before that are answered 503. The attempts come at 0,
///   1, 11 and 71 minutes: a lease under 10 minutes means that after a crash in any attempt
///   but the last, a later retry is handled. Keep it above the longest handler (which should
///   take seconds): past the lease, a retry could be handled by another replica at the same
///   time.
///
/// # When Redis cannot be reached
///
/// The delivery is **refused with 503** ([`HandleOutcome::dedup_unavailable`](super::HandleOutcome)) and
/// the handler sees nothing: the platform retries it after 1 minute, 10 minutes and 1 hour,
/// so nothing is lost, and no event is handed over without a claim, so nothing is handed
/// over twice. An outage longer than the 71-minute retry horizon disables the registration:
/// re-enable it and reconcile through the events API. Each operation is bounded by
/// [`timeout`](Self::timeout) (default 2 s), so deliveries are answered promptly during an
/// outage; a command that failed on a dropped connection is sent once more (the manager
/// reconnects in the background), so the first delivery after Redis is back is handled. If
/// the commit fails after the handler succeeded, the answer is still 200 (the handler has the
/// batch) and the claim expires after its lease; a failed release also leaves the claim to
/// expire.
///
/// # Data loss
///
/// The store remembers what Redis keeps: a Redis restarted without persistence, flushed
/// (`FLUSHALL`, `FLUSHDB`), failed over to a replica that had not received the last writes,
/// or evicting keys under `maxmemory` forgets deliveries, and Redis then answers that they
/// are new. Two things limit the damage:
///
/// - **the receiver's recent set** (see
///   [`ReceiverBuilder::recent_deliveries`](super::ReceiverBuilder::recent_deliveries), on
///   by default): the process that handed an event over does not hand it over again, and
///   records it in Redis again; another replica that never handed it over cannot know it;
/// - **the generation key**: the first claim on an empty Redis sets
///   `<prefix>{<receiver name>}:generation` to a new random value, and every claim reads it.
///   A process that finds a value other than the one it read before knows that Redis lost
///   its data since: it logs a warning once per loss and counts it
///   ([`losses_detected`](Self::losses_detected)). This detects a Redis that lost
///   everything (or at least that key), not a failover that lost only the last writes, nor
///   evictions; the recent set covers those too.
///
/// For the guarantee across replicas, keep the data: persistence (`appendonly yes`), replicas
/// kept close to the primary (`min-replicas-to-write`, `min-replicas-max-lag`: a failover can
/// still lose the last second or so of writes), and no eviction of these keys
/// (`maxmemory-policy noeviction`, or memory for every key of the window: the `volatile-*`
/// policies evict exactly these keys, which expire).
///
/// Needs a single Redis (not Cluster: a delivery's keys go in one transaction) of version
/// 2.6.12 or later, and the commands `SET`, `GET`, `MULTI`, `EXEC`, `EVALSHA` and
/// `SCRIPT LOAD`. Claiming holds, while its round trip lasts, the commands and answers of
/// every event of the delivery: on the order of 1 KiB per event (an estimate, not measured),
/// on top of the receiver's [memory bound](super::Receiver#memory-of-one-delivery).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use pubapi_sdk_ext::webhook::{Receiver, RedisDedup, WebhookSecret};
/// use pubapi_sdk_ext::redis::aio::{ConnectionManager, ConnectionManagerConfig};
///
/// let client = pubapi_sdk_ext::redis::Client::open("redis://redis.internal:6379/")?;
/// // Give up reconnecting quickly: deliveries are answered 503 and retried by the platform.
/// let config = ConnectionManagerConfig::new().set_number_of_retries(2);
/// let manager = ConnectionManager::new_with_config(client, config).await?;
/// let receiver = Receiver::builder()
///     .secret(WebhookSecret::new(std::env::var("WEBHOOK_SECRET")?)?)
///     .dedup_store("orders", RedisDedup::new(manager).key_prefix("acme:dedup:"))
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisDedup {
    connection: Connection,
    prefix: Arc<str>,
    ttl: Duration,
    lease: Duration,
    timeout: Duration,
    release: Arc<Script>,
    /// Shared by clones: the generation each receiver's key held at the last claim.
    generations: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    /// Shared by clones: how many times a generation changed.
    losses: Arc<AtomicU64>,
}

impl RedisDedup {
    /// The default key prefix.
    pub const DEFAULT_KEY_PREFIX: &str = "pubapi:webhook:dedup:";

    /// The default [`claim_lease`](Self::claim_lease): 5 minutes.
    pub const DEFAULT_CLAIM_LEASE: Duration = Duration::from_secs(5 * 60);

    /// The default [`timeout`](Self::timeout): 2 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

    /// A store on `connection` with the default prefix, TTL, lease and timeout.
    #[must_use]
    pub fn new(connection: ConnectionManager) -> Self {
        Self::on(Connection::Single(connection))
    }

    /// A store on the Redis that `url` names, in the forms the fleet takes (see
    /// [`crate::fleet::redis`]: `redis://`, `rediss://`, `redis+sentinel://…/<primary>`,
    /// `redis+cluster://…`), with the default prefix, TTL, lease and timeout.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use pubapi_sdk_ext::webhook::RedisDedup;
    ///
    /// let dedup = RedisDedup::connect("redis+sentinel://s1:26379,s2:26379,s3:26379/main").await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`DedupError`] when the URL is malformed (naming the problem, never the password) or
    /// the servers cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, DedupError> {
        Ok(Self::on(connect(url).await.map_err(DedupError::new)?))
    }

    fn on(connection: Connection) -> Self {
        RedisDedup {
            connection,
            prefix: Self::DEFAULT_KEY_PREFIX.into(),
            ttl: DEFAULT_DEDUP_WINDOW,
            lease: Self::DEFAULT_CLAIM_LEASE,
            timeout: Self::DEFAULT_TIMEOUT,
            release: Arc::new(Script::new(RELEASE)),
            generations: Arc::default(),
            losses: Arc::default(),
        }
    }

    /// Puts every key under `prefix` (default [`DEFAULT_KEY_PREFIX`](Self::DEFAULT_KEY_PREFIX)).
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into().into();
        self
    }

    /// How long a committed key is remembered (default 2 hours, [`DEFAULT_DEDUP_WINDOW`]; see
    /// [Expiry](Self#expiry)). Whole milliseconds, at least one.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How long a claim holds without a commit or release (default
    /// [`DEFAULT_CLAIM_LEASE`](Self::DEFAULT_CLAIM_LEASE); see [Expiry](Self#expiry)). Whole
    /// milliseconds, at least one.
    #[must_use]
    pub fn claim_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The longest one operation may take, reconnecting included, before the delivery is
    /// refused (default [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT)).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The Redis key of `key` for the receiver named `receiver`, e.g. to look a delivery up
    /// or forget it by hand.
    #[must_use]
    pub fn redis_key(&self, receiver: &str, key: &DedupKey) -> String {
        format!(
            "{}{{{receiver}}}:{}:{}",
            self.prefix,
            key.kind().as_str(),
            key.digest_hex()
        )
    }

    /// How many times this store (and its clones) found that Redis had lost its data: the
    /// generation key of a receiver held another value than at the previous claim (see
    /// [Data loss](Self#data-loss)). Each loss also logs one warning.
    #[must_use]
    pub fn losses_detected(&self) -> u64 {
        self.losses.load(Ordering::Relaxed)
    }

    /// The key whose value changes when Redis loses the receiver's keys.
    fn generation_key(&self, receiver: &str) -> String {
        format!("{}{{{receiver}}}:{GENERATION}", self.prefix)
    }

    /// Remembers the generation a claim read, and says once when it changed.
    fn observe_generation(&self, name: String, generation: Option<Vec<u8>>) {
        // Absent only if deleted between the commands of one transaction: nothing to compare.
        let Some(generation) = generation else {
            return;
        };
        let mut generations = self
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = generations.insert(name, generation.clone());
        if previous.is_some_and(|previous| previous != generation) {
            self.losses.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                store = ?self,
                "webhook dedup store lost its data (its generation key changed): deliveries \
                 handed over before may be handed over again, except by the process that \
                 handed them over within its recent set's bounds"
            );
        }
    }

    fn redis_keys(&self, claimant: &Claimant, keys: &[DedupKey]) -> Vec<String> {
        keys.iter()
            .map(|key| self.redis_key(claimant.receiver(), key))
            .collect()
    }

    /// Runs `operation`, once more if the connection was dropped, within the timeout.
    async fn run<T, F, Fut>(&self, operation: F) -> Result<T, DedupError>
    where
        F: Fn(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let attempts = async {
            match operation(self.connection.clone()).await {
                Err(error) if error.is_unrecoverable_error() || error.is_io_error() => {
                    operation(self.connection.clone()).await
                }
                answered => answered,
            }
        };
        match tokio::time::timeout(self.timeout, attempts).await {
            Ok(answered) => answered.map_err(DedupError::new),
            Err(_) => Err(DedupError::new(format!(
                "redis did not answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}

/// What a claimant's claim holds as its value.
fn token(claimant: &Claimant) -> String {
    format!("{CLAIMED}{:032x}", claimant.id())
}

/// A duration as Redis `PX` milliseconds: whole, at least one.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

impl DedupStore for RedisDedup {
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        Box::pin(async move {
            let token = token(claimant);
            let generation = self.generation_key(claimant.receiver());
            let mut pipe = redis::pipe();
            pipe.atomic();
            // A new value if the key is gone: a claim that finds another than before knows.
            pipe.cmd("SET")
                .arg(&generation)
                .arg(format!("{:032x}", claimant.id()))
                .arg("NX")
                .ignore();
            pipe.cmd("GET").arg(&generation);
            for name in self.redis_keys(claimant, keys) {
                pipe.cmd("SET")
                    .arg(&name)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(self.lease))
                    .ignore();
                pipe.cmd("GET").arg(name);
            }
            let pipe = &pipe;
            let mut values: Vec<Option<Vec<u8>>> = self
                .run(|mut connection| async move { pipe.query_async(&mut connection).await })
                .await?;
            if values.len() != keys.len() + 1 {
                return Err(DedupError::new(format!(
                    "{} answers for {} keys and the generation",
                    values.len(),
                    keys.len()
                )));
            }
            self.observe_generation(generation, values.remove(0));
            Ok(values
                .iter()
                .map(|value| match value.as_deref() {
                    // Ours: set just now, or by the first try of a resent transaction.
                    Some(value) if value == token.as_bytes() => Claim::Fresh,
                    Some(value) if value.starts_with(CLAIMED.as_bytes()) => Claim::InFlight,
                    Some(_) => Claim::Seen,
                    // Not after SET NX in one transaction; held by someone in any case.
                    None => Claim::InFlight,
                })
                .collect())
        })
    }

    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            for name in self.redis_keys(claimant, keys) {
                pipe.cmd("SET")
                    .arg(name)
                    .arg(DONE)
                    .arg("PX")
                    .arg(millis(self.ttl))
                    .ignore();
            }
            let pipe = &pipe;
            self.run(|mut connection| async move { pipe.exec_async(&mut connection).await })
                .await
        })
    }

    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        let store = self.clone();
        let names = self.redis_keys(&claimant, &keys);
        let token = token(&claimant);
        Box::pin(async move {
            let (script, names, token) = (&*store.release, &names, &token);
            store
                .run(|mut connection| async move {
                    let mut invocation = script.prepare_invoke();
                    for name in names {
                        invocation.key(name);
                    }
                    invocation.arg(token);
                    invocation.invoke_async::<i64>(&mut connection).await
                })
                .await
                .map(drop)
        })
    }

    fn window(&self) -> Duration {
        self.ttl
    }
}

impl fmt::Debug for RedisDedup {
    // Not the connection: its client's debug output includes the password, if any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisDedup")
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
