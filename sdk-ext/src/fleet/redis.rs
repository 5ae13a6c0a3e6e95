//! The fleet's state on Redis (feature `redis`): a token's quota windows and stream
//! checkpoints, through one [`ConnectionManager`] that reconnects by itself.
//!
//! The windows of a token's class are one sorted set, `<prefix><fingerprint>:<class>`, whose
//! scores are start instants in microseconds of the Redis server's clock. A reservation is one
//! Lua script (one round trip, atomic: no read-modify-write race between replicas) that reads
//! `TIME`, finds the earliest start that keeps every window (second, minute, day, each kept
//! the pacing margin longer, and even spacing unless bursts are allowed), books it, trims what
//! has left the longest window and sets an expiry. Replicas' clocks never enter the decision.

pub use super::redis_streams::RedisCheckpoints;
use super::{FleetBudget, FleetError, Reservation, Reserve};
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
        let seed = crate::rng::SplitMix64::from_entropy().next_u64();
        Ok(RedisBudget {
            connection,
            prefix: prefix.to_string(),
            script: redis::Script::new(RESERVE),
            nonce: std::sync::Arc::new((seed, AtomicU64::new(0))),
        })
    }
}

pub(super) async fn connect(url: &str) -> Result<ConnectionManager, FleetError> {
    let client = redis::Client::open(url).map_err(redis_error)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)))
        .set_number_of_retries(1);
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(redis_error)
}

pub(super) fn redis_error(e: redis::RedisError) -> FleetError {
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

/// The real `redis-server` the fleet tests start on a loopback port (shared with the
/// integration tests).
#[cfg(test)]
#[allow(
    unreachable_pub,
    reason = "a file of the integration tests' support, used as is"
)]
#[path = "../../tests/support/redis_server.rs"]
mod redis_server;

/// One budget per token across processes: each limiter here stands for one process of a
/// fleet (its own state, the store shared through Redis).
#[cfg(test)]
mod tests {
    use super::RedisBudget;
    use super::redis_server::RedisServer;
    use crate::fleet::Fleet;
    use crate::limits::{Budget, LimitClass, LimitError, Limits, Pacing};
    use crate::request::limiter::RateLimiter;
    use crate::token::SecretToken;
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::time::Instant;

    const GENERAL: LimitClass = LimitClass::General;

    fn limits(per_second: Option<u32>, per_day: Option<u32>) -> Limits {
        Limits {
            general: Budget::new(per_second, per_day),
            ai: Budget::new(None, Some(100)),
        }
    }

    /// One "process" of the fleet: its own limiter, the store shared through Redis.
    async fn process(
        server: &RedisServer,
        token: &str,
        limits: Limits,
        pacing: Pacing,
    ) -> RateLimiter {
        let budget = RedisBudget::connect(&server.url()).await.unwrap();
        let token = SecretToken::try_from(token)
            .unwrap()
            .fingerprint_in("https://acme.test/pubapi");
        RateLimiter::in_fleet(limits, pacing, Fleet::new(Arc::new(budget)), token)
    }

    /// The most instants in any half-open window of `window`.
    fn busiest(times: &[Instant], window: Duration) -> usize {
        let mut times = times.to_vec();
        times.sort();
        (0..times.len())
            .map(|i| {
                times[i..]
                    .iter()
                    .take_while(|t| **t < times[i] + window)
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn four_processes_of_one_token_pace_as_one_through_redis() {
        let server = RedisServer::start();
        // 20 per second, so the test takes 2 s instead of the 20 s of the reference's 2 per second.
        let pacing = Pacing::even(Duration::from_millis(10));
        let mut fleet = Vec::new();
        for _ in 0..4 {
            fleet.push(process(&server, "fleet-token", limits(Some(20), Some(1000)), pacing).await);
        }
        let t0 = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for limiter in fleet {
            tasks.spawn(async move {
                let mut starts = Vec::new();
                for _ in 0..10 {
                    let permit = limiter
                        .acquire(GENERAL, Duration::from_secs(30))
                        .await
                        .unwrap();
                    starts.push(Instant::now());
                    permit.sent();
                }
                starts
            });
        }
        let starts: Vec<Instant> = tasks.join_all().await.into_iter().flatten().collect();
        let total = starts.iter().max().unwrap().duration_since(t0);
        assert_eq!(starts.len(), 40);
        assert!(busiest(&starts, Duration::from_secs(1)) <= 20);
        // One start every 51 ms for the whole fleet: 39 gaps.
        let floor = Duration::from_millis(51 * 39);
        assert!(total >= floor - Duration::from_millis(20), "{total:?}");
        assert!(total <= floor + floor / 10, "{total:?}");
    }

    #[tokio::test]
    async fn the_daily_window_is_one_for_the_whole_fleet() {
        let server = RedisServer::start();
        let mut fleet = Vec::new();
        for _ in 0..4 {
            fleet.push(
                process(
                    &server,
                    "daily-token",
                    limits(None, Some(5)),
                    Pacing::default(),
                )
                .await,
            );
        }
        let (mut granted, mut exhausted) = (0, 0);
        for limiter in &fleet {
            for _ in 0..2 {
                match limiter.acquire(GENERAL, Duration::from_secs(1)).await {
                    Ok(permit) => {
                        granted += 1;
                        permit.sent();
                    }
                    Err(LimitError::DailyBudgetExhausted { .. }) => exhausted += 1,
                    Err(other) => panic!("{other:?}"),
                }
            }
        }
        assert_eq!((granted, exhausted), (5, 3));
        // Another token has a day of its own.
        let other = process(
            &server,
            "another-token",
            limits(None, Some(5)),
            Pacing::default(),
        )
        .await;
        other
            .acquire(GENERAL, Duration::from_secs(1))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_unreachable_store_falls_back_to_a_share_of_the_budget_then_recovers() {
        let mut server = RedisServer::start();
        let limiter = process(
            &server,
            "outage-token",
            limits(Some(20), Some(1000)),
            Pacing::even(Duration::ZERO),
        )
        .await;
        limiter
            .acquire(GENERAL, Duration::from_secs(5))
            .await
            .unwrap()
            .sent();
        server.stop();
        // A quarter of 20 per second: one start every 200 ms, and nothing fails.
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..3 {
            limiter
                .acquire(GENERAL, Duration::from_secs(5))
                .await
                .unwrap()
                .sent();
            starts.push(Instant::now().duration_since(t0));
        }
        for pair in starts.windows(2) {
            assert!(
                pair[1] - pair[0] >= Duration::from_millis(199),
                "{starts:?}"
            );
        }
        server.restart();
        // The connection manager reconnects; bookings are in Redis again.
        let mut in_redis = false;
        for _ in 0..20 {
            limiter
                .acquire(GENERAL, Duration::from_secs(5))
                .await
                .unwrap()
                .sent();
            let client = redis::Client::open(server.url()).unwrap();
            let mut connection = client.get_multiplexed_async_connection().await.unwrap();
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("pubapi:*:general")
                .query_async(&mut connection)
                .await
                .unwrap();
            if !keys.is_empty() {
                in_redis = true;
                break;
            }
        }
        assert!(in_redis, "the fleet store is used again once it answers");
    }
}
