//! Stream checkpoints and leases on Redis (feature `redis`), re-exported from
//! `fleet::redis`.
//!
//! Per stream name, under the prefix, with the name in braces as the keys' hash tag (a
//! stream's keys share one Redis Cluster slot, so one script may touch them together):
//! - `{<name>}:checkpoint`: the checkpoint, the decimal text of an `i64`;
//! - `{<name>}:lease`: the holder's fencing token, set with `PX` and renewed while the
//!   holder runs;
//! - `{<name>}:lease:fence`: a hash, `last` the last token handed out, `released` the last
//!   token given up by its holder, `served_by` the run id of the server that last granted or
//!   renewed the lease, and `quiet_until` (the server's clock, ms) while nobody may take the
//!   lease after the store was found without a record of the stream, or with another
//!   server's.
//!
//! Each operation is one Lua script: atomic, so no replica reads between another's check and
//! write. Ids are compared as decimal text in the scripts (Lua's numbers are doubles, which
//! cannot tell ids near the ends of the `i64` range apart); tokens, microseconds of the
//! server's clock, stay below 2^53 and are written with `%d`.
//!
//! # When Redis forgets
//!
//! A flush, a restart without persistence or a failover to a replica that had not received the
//! last writes takes the lease, the fence and the checkpoint away while a holder may be inside
//! its handler. Three rules keep one consumer and increasing tokens all the same:
//!
//! - **Tokens from a clock that does not go back**: a token is the server's time in
//!   microseconds, or the last token and one when that is larger. A store that lost its
//!   counter does not hand out 1 again: the next token is later than every token handed out
//!   before the loss (as long as the servers' clocks are not set back by more than the quiet
//!   time below).
//! - **Renewals and saves compare the exact token**: the old holder's lease key is gone or
//!   holds another token, so its next renewal (within a third of the lease time) or save says
//!   the lease is lost, and it stops at once.
//! - **A quiet lease time**: a stream the store has no record of (no fence) cannot be told
//!   from a new stream, so the first acquisition records the fence and grants nothing for one
//!   lease time. By then the old holder's renewal has failed and its hold has run out: the
//!   new holder never hands out an event while the old one may. (A new stream pays this once:
//!   its first consumer starts one lease time late.)
//! - **Another server's record is no record**: a replica promoted by a failover holds the
//!   fence it received, but maybe not the lease granted or renewed after it (replication is
//!   asynchronous), so a fence that another server (another run id: a promoted replica, or
//!   the same server restarted) wrote last counts as none: one quiet lease time, whatever
//!   tokens it records. A holder that renews on the new server makes the record its own.
//!
//! A checkpoint the store lost is reported by the stream (`StreamNotice::CheckpointLost`), not
//! skipped over; see [`crate::events::EventStream::save_checkpoint`].

use super::redis_connection::{Connection, DEFAULT_PREFIX, connect, redis_error};
use super::{Acquired, CheckpointStore, FleetError, FleetFuture, Lease};
use std::time::Duration;

/// Takes the lease when nobody holds it. `KEYS`: lease, fence; `ARGV`: lease time in ms.
/// Returns `{1, token, taken_over}`, or `{0, ms_left, 0}` while another holds it or the
/// stream is quiet (see the module doc).
const ACQUIRE: &str = r#"
local left = redis.call('PTTL', KEYS[1])
if left ~= -2 then return {0, left, 0} end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms = tonumber(ARGV[1])
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
local served_by = redis.call('HGET', KEYS[2], 'served_by')
if redis.call('EXISTS', KEYS[2]) == 0 or (served_by and served_by ~= run_id) then
  redis.call('HSET', KEYS[2], 'quiet_until', string.format('%d', now_ms + lease_ms),
    'served_by', run_id)
  return {0, lease_ms, 0}
end
local quiet = tonumber(redis.call('HGET', KEYS[2], 'quiet_until') or '0')
if now_ms < quiet then return {0, quiet - now_ms, 0} end
local previous = redis.call('HGET', KEYS[2], 'last')
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
if previous and tonumber(previous) >= token then token = tonumber(previous) + 1 end
token = string.format('%d', token)
redis.call('HSET', KEYS[2], 'last', token, 'served_by', run_id)
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
local released = redis.call('HGET', KEYS[2], 'released')
local taken_over = 0
if previous and released ~= previous then taken_over = 1 end
return {1, token, taken_over}
"#;

/// Extends the lease when it is still the caller's, and makes the fence this server's (the
/// lease is held here). `KEYS`: lease, fence; `ARGV`: token, lease time.
const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('HGET', KEYS[2], 'served_by') ~= run_id then
  redis.call('HSET', KEYS[2], 'served_by', run_id)
end
return 1
"#;

/// Gives the lease up when it is still the caller's. `KEYS`: lease, fence; `ARGV`: token.
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[2], 'released', ARGV[1])
return 1
"#;

/// Saves a checkpoint when the caller holds the lease, never below the saved one.
/// `KEYS`: checkpoint, lease; `ARGV`: id (canonical decimal), token. Returns `{1, before}`
/// saved or kept (`before` the checkpoint found, nil when there was none), `{0, nil}` not the
/// holder, `{-1, nil}` the saved value is not a checkpoint.
const SAVE: &str = r#"
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return {0, false} end
local function canonical(s)
  if s == '0' then return true end
  if not string.match(s, '^%-?[1-9]%d*$') then return false end
  local digits, limit = s, '9223372036854775807'
  if string.sub(s, 1, 1) == '-' then digits, limit = string.sub(s, 2), '9223372036854775808' end
  return #digits < 19 or (#digits == 19 and digits <= limit)
end
local function less(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a < #b end
  return a < b
end
local saved = redis.call('GET', KEYS[1])
if saved then
  if not canonical(saved) then return {-1, false} end
  if not less(saved, ARGV[1]) then return {1, saved} end
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, saved}
"#;

/// Stream checkpoints on Redis, and the lease that makes one replica of a fleet the
/// stream's consumer (see [`crate::fleet`]): one key per stream name,
/// `<prefix>{<name>}:checkpoint`, beside `<prefix>{<name>}:lease`.
#[derive(Clone)]
pub struct RedisCheckpoints {
    connection: Connection,
    prefix: String,
    lease_time: Duration,
}

impl RedisCheckpoints {
    /// The lease time unless set with [`RedisCheckpoints::lease_time`].
    pub const DEFAULT_LEASE_TIME: Duration = Duration::from_secs(10);

    /// Connects to the Redis `url` names, with keys under [`DEFAULT_PREFIX`]: one server
    /// (`redis://host:port/db`), Sentinel (`redis+sentinel://host:port,host:port/<primary-name>`)
    /// or Cluster (`redis+cluster://host:port,host:port`), over TLS with `rediss`; see
    /// [which Redis](super::redis#which-redis), and [what Redis must
    /// keep](super::redis#what-redis-must-keep) for checkpoints and leases.
    ///
    /// # Errors
    /// [`FleetError`] of kind [`Invalid`](super::FleetErrorKind::Invalid) naming the problem
    /// when the URL is malformed, of kind [`Unavailable`](super::FleetErrorKind::Unavailable)
    /// when the servers cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, FleetError> {
        Ok(RedisCheckpoints {
            connection: connect(url).await?,
            prefix: DEFAULT_PREFIX.to_string(),
            lease_time: Self::DEFAULT_LEASE_TIME,
        })
    }

    /// How long a holder's lease lasts without renewal (default 10 s, at least 300 ms): a
    /// standby takes over this long after the holder died or stalled. The holder renews it
    /// every third of it.
    pub fn lease_time(mut self, lease_time: Duration) -> Self {
        self.lease_time = lease_time.max(Duration::from_millis(300));
        self
    }

    /// The key `what` of stream `name`: the name is the key's hash tag, so a stream's keys
    /// share one Redis Cluster slot (one script touches them together).
    fn key(&self, what: &str, name: &str) -> String {
        format!("{}{{{name}}}:{what}", self.prefix)
    }

    fn millis(&self) -> u64 {
        u64::try_from(self.lease_time.as_millis()).unwrap_or(u64::MAX)
    }

    /// A failure reading `key`: a key of another type holds no checkpoint.
    fn failure(key: &str, e: redis::RedisError) -> FleetError {
        if e.code() == Some("WRONGTYPE") {
            FleetError::corrupt(format!("redis key {key}"), "it is not a string")
        } else {
            redis_error(e)
        }
    }
}

impl std::fmt::Debug for RedisCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCheckpoints")
            .field("prefix", &self.prefix)
            .field("lease_time", &self.lease_time)
            .finish_non_exhaustive()
    }
}

/// A checkpoint as saved: the canonical decimal text of an `i64`, nothing else.
fn parse_checkpoint(key: &str, bytes: &[u8]) -> Result<i64, FleetError> {
    let text = std::str::from_utf8(bytes).ok();
    text.and_then(|t| t.parse::<i64>().ok().filter(|id| id.to_string() == t))
        .ok_or_else(|| {
            let shown: String = String::from_utf8_lossy(bytes).chars().take(40).collect();
            FleetError::corrupt(
                format!("redis key {key}"),
                format!("{shown:?} is not an event id"),
            )
        })
}

impl CheckpointStore for RedisCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Option<i64>> {
        Box::pin(async move {
            let key = self.key("checkpoint", name);
            let mut connection = self.connection.clone();
            let saved: Option<Vec<u8>> = redis::cmd("GET")
                .arg(&key)
                .query_async(&mut connection)
                .await
                .map_err(|e| Self::failure(&key, e))?;
            saved
                .map(|bytes| parse_checkpoint(&key, &bytes))
                .transpose()
        })
    }

    fn save<'a>(&'a self, lease: &'a Lease, id: i64) -> FleetFuture<'a, Option<i64>> {
        Box::pin(async move {
            let key = self.key("checkpoint", &lease.name);
            let mut connection = self.connection.clone();
            let (status, before): (i64, Option<Vec<u8>>) = redis::Script::new(SAVE)
                .key(&key)
                .key(self.key("lease", &lease.name))
                .arg(id.to_string())
                .arg(lease.token.to_string())
                .invoke_async(&mut connection)
                .await
                .map_err(|e| Self::failure(&key, e))?;
            match status {
                1 => before
                    .map(|bytes| parse_checkpoint(&key, &bytes))
                    .transpose(),
                0 => Err(FleetError::lease_lost(&lease.name)),
                _ => Err(FleetError::corrupt(
                    format!("redis key {key}"),
                    "what is saved there is not an event id",
                )),
            }
        })
    }

    fn acquire<'a>(&'a self, name: &'a str) -> FleetFuture<'a, Acquired> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let (status, value, taken_over): (i64, i64, i64) = redis::Script::new(ACQUIRE)
                .key(self.key("lease", name))
                .key(format!("{}:fence", self.key("lease", name)))
                .arg(self.millis())
                .invoke_async(&mut connection)
                .await
                .map_err(redis_error)?;
            if status != 1 {
                // A lease without expiry (-1) was set by hand: look again after a lease time.
                let left = u64::try_from(value).map_or(self.lease_time, Duration::from_millis);
                // Looking again every fifth of the lease time: a standby takes over at most a
                // fifth after the lease runs out.
                return Ok(Acquired::Busy {
                    retry_in: left.min(self.lease_time / 5).max(Duration::from_millis(10)),
                });
            }
            Ok(Acquired::Lease(Lease {
                name: name.to_string(),
                token: u64::try_from(value).unwrap_or(0),
                taken_over: taken_over == 1,
                expires_in: Some(self.lease_time),
            }))
        })
    }

    fn renew<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, bool> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let held: i64 = redis::Script::new(RENEW)
                .key(self.key("lease", &lease.name))
                .key(format!("{}:fence", self.key("lease", &lease.name)))
                .arg(lease.token.to_string())
                .arg(self.millis())
                .invoke_async(&mut connection)
                .await
                .map_err(redis_error)?;
            Ok(held == 1)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let _: i64 = redis::Script::new(RELEASE)
                .key(self.key("lease", &lease.name))
                .key(format!("{}:fence", self.key("lease", &lease.name)))
                .arg(lease.token.to_string())
                .invoke_async(&mut connection)
                .await
                .map_err(redis_error)?;
            Ok(())
        })
    }
}
