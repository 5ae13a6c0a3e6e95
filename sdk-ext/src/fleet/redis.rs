//! The fleet's state on Redis (feature `redis`): a token's quota windows and stream
//! checkpoints, through one [`ConnectionManager`] that reconnects by itself.
//!
//! The windows of a token's class are one sorted set, `<prefix><fingerprint>:<class>`, whose
//! scores are start instants in microseconds of the Redis server's clock. A reservation is one
//! Lua script (one round trip, atomic: no read-modify-write race between replicas) that reads
//! `TIME`, finds the earliest start that keeps every window (second, minute, day, each kept
//! the pacing margin longer, and even spacing unless bursts are allowed), books it, trims what
//! has left the longest window and sets an expiry. Replicas' clocks never enter the decision.

use super::{CheckpointStore, FleetBudget, FleetError, Reservation, Reserve};
use crate::limits::LimitClass;
use pubapi_sdk::hooks::BoxFuture;
use redis::aio::ConnectionManager;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "pubapi:";

/// Books the earliest start; see the module doc. Returns `{status, wait_us, long_wait_us}`:
/// status 0 booked, -1 too far away (nothing booked), -2 no budget at all.
const RESERVE: &str = r#"
local key = KEYS[1]
local per_second = tonumber(ARGV[1])
local per_minute = tonumber(ARGV[2])
local per_day = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local max_wait = tonumber(ARGV[6])
local member = ARGV[7]
local per_hour = tonumber(ARGV[8])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = now
local function after_kth_latest(k, window)
  if k < 0 then return true end
  if k == 0 then return false end
  local r = redis.call('ZREVRANGE', key, k - 1, k - 1, 'WITHSCORES')
  if r[2] then
    local s = tonumber(r[2]) + window + margin
    if s > slot then slot = s end
  end
  return true
end
if not after_kth_latest(per_day, 86400000000) then return {-2, 0, 0} end
if not after_kth_latest(per_hour, 3600000000) then return {-2, 0, 0} end
if not after_kth_latest(per_minute, 60000000) then return {-2, 0, 0} end
local long = slot
if not after_kth_latest(per_second, 1000000) then return {-2, 0, 0} end
local last = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
if last[2] then
  local l = tonumber(last[2])
  if per_second > 0 and burst == 0 then
    local s = l + math.floor((1000000 + margin) / per_second)
    if s > slot then slot = s end
  end
  if l > slot then slot = l end
end
if slot - now > max_wait then return {-1, slot - now, long - now} end
redis.call('ZADD', key, slot, member)
local horizon = 1000000
if per_minute >= 0 then horizon = 60000000 end
if per_hour >= 0 then horizon = 3600000000 end
if per_day >= 0 then horizon = 86400000000 end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon - margin)
redis.call('PEXPIRE', key, math.floor((horizon + margin) / 1000) + 60000)
return {0, slot - now, long - now}
"#;

/// A token's quota windows on Redis, shared by every process that uses the same server and
/// prefix.
#[derive(Clone)]
pub struct RedisBudget {
    connection: ConnectionManager,
    prefix: String,
    script: redis::Script,
    /// Makes each booking a distinct member of the sorted set.
    nonce: std::sync::Arc<(u64, AtomicU64)>,
}

impl RedisBudget {
    /// Connects to `url` (`redis://host:port/db`) with keys under [`DEFAULT_PREFIX`].
    ///
    /// # Errors
    /// [`FleetError`] when the URL is invalid or the server cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, FleetError> {
        Self::connect_with_prefix(url, DEFAULT_PREFIX).await
    }

    /// Connects to `url` with keys under `prefix`.
    ///
    /// # Errors
    /// [`FleetError`] when the URL is invalid or the server cannot be reached now.
    pub async fn connect_with_prefix(url: &str, prefix: &str) -> Result<Self, FleetError> {
        let connection = connect(url).await?;
        // Random per store: two stores (two processes, or two clients of one) never book the
        // same member, which would move an earlier booking instead of adding one.
        let seed = crate::retry::SplitMix64::from_entropy().next_u64();
        Ok(RedisBudget {
            connection,
            prefix: prefix.to_string(),
            script: redis::Script::new(RESERVE),
            nonce: std::sync::Arc::new((seed, AtomicU64::new(0))),
        })
    }
}

async fn connect(url: &str) -> Result<ConnectionManager, FleetError> {
    let client = redis::Client::open(url).map_err(redis_error)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)))
        .set_number_of_retries(1);
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(redis_error)
}

fn redis_error(e: redis::RedisError) -> FleetError {
    FleetError::new(format!("redis: {e}"))
}

impl std::fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudget")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn limit(value: Option<u32>) -> i64 {
    value.map_or(-1, i64::from)
}

impl FleetBudget for RedisBudget {
    fn reserve<'a>(
        &'a self,
        request: Reserve<'a>,
    ) -> BoxFuture<'a, Result<Reservation, FleetError>> {
        Box::pin(async move {
            let class = match request.class {
                LimitClass::General => "general",
                LimitClass::Ai => "ai",
            };
            let key = format!("{}{}:{class}", self.prefix, request.token);
            let member = format!(
                "{:x}-{}",
                self.nonce.0,
                self.nonce.1.fetch_add(1, Ordering::Relaxed)
            );
            let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
            let mut connection = self.connection.clone();
            let (status, wait, long_wait): (i64, i64, i64) = self
                .script
                .key(key)
                .arg(limit(request.budget.per_second))
                .arg(limit(request.budget.per_minute))
                .arg(limit(request.budget.per_day))
                .arg(micros(request.pacing.margin))
                .arg(i64::from(request.pacing.burst))
                .arg(micros(request.max_wait))
                .arg(member)
                .arg(limit(request.budget.per_hour))
                .invoke_async(&mut connection)
                .await
                .map_err(redis_error)?;
            let duration = |us: i64| Duration::from_micros(u64::try_from(us).unwrap_or(0));
            Ok(match status {
                0 => Reservation::Granted {
                    wait: duration(wait),
                },
                -1 => Reservation::Refused {
                    wait: duration(wait),
                    long_wait: duration(long_wait),
                },
                _ => Reservation::NoBudget,
            })
        })
    }
}

/// Stream checkpoints on Redis: one key per stream name, `<prefix>checkpoint:<name>`.
#[derive(Clone)]
pub struct RedisCheckpoints {
    connection: ConnectionManager,
    prefix: String,
}

impl RedisCheckpoints {
    /// Connects to `url` with keys under [`DEFAULT_PREFIX`].
    ///
    /// # Errors
    /// [`FleetError`] when the URL is invalid or the server cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, FleetError> {
        Ok(RedisCheckpoints {
            connection: connect(url).await?,
            prefix: DEFAULT_PREFIX.to_string(),
        })
    }
}

impl std::fmt::Debug for RedisCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCheckpoints")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl CheckpointStore for RedisCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            redis::cmd("GET")
                .arg(format!("{}checkpoint:{name}", self.prefix))
                .query_async(&mut connection)
                .await
                .map_err(redis_error)
        })
    }

    fn save<'a>(&'a self, name: &'a str, id: i64) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            redis::cmd("SET")
                .arg(format!("{}checkpoint:{name}", self.prefix))
                .arg(id)
                .query_async(&mut connection)
                .await
                .map_err(redis_error)
        })
    }
}
