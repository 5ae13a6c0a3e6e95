//! The fleet's state on Redis (feature `redis`): a token's quota windows and stream
//! checkpoints, on one Redis server, a Sentinel deployment or a Redis Cluster, with or
//! without TLS.
//!
//! The windows of a token's class are one sorted set, `<prefix>{<fingerprint>}:<class>`,
//! whose scores are start instants in microseconds of the Redis server's clock, beside the
//! token's generation, `<prefix>{<fingerprint>}:generation`, and the run id of the server that
//! set it, `<prefix>{<fingerprint>}:server` (the fingerprint in braces is the keys' hash tag: a
//! token's keys share one Cluster slot). A reservation is one
//! Lua script (one round trip, atomic: no read-modify-write race between replicas) that reads
//! `TIME`, finds the earliest start that keeps every window (second, minute, day, each kept
//! the pacing margin longer, and even spacing unless bursts are allowed), books it, trims what
//! has left the longest window and sets an expiry. Replicas' clocks never enter the decision.
//!
//! # Which Redis
//!
//! [`RedisBudget::connect`] and [`RedisCheckpoints::connect`] take one URL; its scheme says
//! which Redis it names:
//!
//! | URL | Redis |
//! |---|---|
//! | `redis://[[user]:password@]host[:port][/db]` | one server (port 6379 by default), as redis-rs reads it |
//! | `redis+sentinel://[[user]:password@]host[:port],host[:port],…/<primary-name>[/db]` | Sentinel: the sentinels (port 26379 by default) and the name they monitor the primary under (`sentinel monitor <primary-name> …`) |
//! | `redis+cluster://[[user]:password@]host[:port],host[:port],…` | Redis Cluster: some of its nodes (the others are found through them); a cluster has only database 0 |
//!
//! `rediss` in place of `redis` (`rediss://`, `rediss+sentinel://`, `rediss+cluster://`) speaks
//! TLS (rustls) to every server, sentinels included, and checks their certificates against the
//! system's roots, or only against the PEM file a `ca` parameter names
//! (`rediss+sentinel://s1,s2,s3/main?ca=/etc/redis/ca.pem`; percent-encode the path if
//! needed). User and password are percent-encoded; with Sentinel they are the data nodes',
//! and sentinels that require their own take `sentinel_user` and `sentinel_password`
//! parameters (`redis+sentinel://:data-pass@s1,s2,s3/main?sentinel_password=s3cret`). A
//! malformed URL is a [`FleetError`] of kind [`Invalid`](super::FleetErrorKind::Invalid) that
//! names the problem (not the URL, which may hold a password).
//!
//! - **Sentinel**: the sentinels name the primary, which must say it is one (`ROLE`). Each
//!   store listens to a sentinel's announcements of a switch (`+switch-master`) and moves to
//!   the new primary at once: after a requested failover (`SENTINEL FAILOVER`) the old one
//!   takes writes for seconds more, and processes that stayed there would keep windows and
//!   leases apart from those started since. The new server's run id tells the scripts that it
//!   may lack the last writes: the windows are rebuilt from every process's history, and a
//!   lease waits a quiet lease time (`RedisCheckpoints`). A primary that cannot be reached or
//!   answers `READONLY` has the sentinels asked again, at most once per failed command; the
//!   command is sent again only to the same server (a dropped connection), and a new primary
//!   is a failure of the store, which makes every process record its starts again ("Back" in
//!   [`crate::fleet`]). Until the sentinels promote a replica, commands fail and calls wait.
//! - **Cluster**: redis-rs's cluster client follows `MOVED` and `ASK` and finds the new
//!   primary of a failed-over shard. Every script touches keys of one slot: a token's keys
//!   carry its fingerprint as hash tag, a stream's keys its name. Each primary has a clock of
//!   its own: a token's clock is read from the node that holds its keys, never by a keyless
//!   `TIME` that any node may answer.
//! - **Every form**: 1 s to connect to a server, 1 s for an answer (a slower command fails).
//!
//! Checked with 4 processes at the reference's 2 per second (`tests/fleet_replicated.rs`)
//! through a Sentinel failover (the primary killed; a failover requested, with a fifth
//! process started inside the switch) and a Cluster failover (the primary of the token's
//! slot killed): at most 2 calls in any second, none lost.
//!
//! # What Redis must keep
//!
//! | state | when Redis loses it | what the fleet does | what Redis needs |
//! |---|---|---|---|
//! | quota windows | restart without data, `FLUSHALL`, failover to a replica that lacks the last writes | notices (the generation, or the failure a failover is) and records every process's starts again; calls wait meanwhile | no persistence; `maxmemory-policy noeviction` (the default): the windows expire, so a `volatile-*` policy may evict one unnoticed |
//! | stream checkpoints | the same | a consumer that saw a newer checkpoint says so (`StreamNotice::CheckpointLost`), resumes from it and writes it again; one that saw none starts as its builder says | persistence (`appendonly yes`; `appendfsync always` loses no save, `everysec` up to a second of them), and on Sentinel `min-replicas-to-write 1` so a failover loses little |
//! | stream leases and fencing tokens | the same | tokens from the server's clock never repeat; a stream the store has no record of, or one another server recorded (a promoted replica), is quiet for one lease time, by which the old holder found its lease gone and stopped: never two holders | nothing more (persistence keeps the quiet time away) |
//! | webhook dedup set (`RedisDedup`, `RedisDedup::connect` takes these URLs) | the same | the process that handed a delivery over finds it in its recent set (bounded in count and time) and writes it back; another replica hands it over again | as checkpoints |
//!
//! A Cluster's manual failover (`CLUSTER FAILOVER`, no `FORCE`) waits for the replica to
//! catch up; a crashed primary's does not.

use super::redis_clock::{Clocks, TIME_SCRIPT};
pub use super::redis_connection::DEFAULT_PREFIX;
use super::redis_connection::{Connection, RESPONSE_TIMEOUT, connect, redis_error};
pub use super::redis_streams::RedisCheckpoints;
use super::{Answer, FleetBudget, FleetError, FleetFuture, Reservation, Reserve, unix_us};
use crate::limits::LimitClass;
use crate::token::TokenFingerprint;
use std::time::Duration;

/// Books the earliest start; see the module doc. Returns `{status, wait_us, long_wait_us,
/// generation, lost, now_us}` (`now_us` the server's clock when the script ran): status 0 booked (or, when nothing was to be booked, recorded), -1 too
/// far away (nothing booked), -2 no budget at all, -3 the caller's deadline passed before
/// the script ran (nothing booked: a paused server resumed), -4 the generation is not the
/// caller's and no history came with the request (nothing booked).
///
/// The generation key (one per token, in its windows' slot) holds a random value set by the
/// token's first booking on a server without it: a server restarted without its data has
/// none, so a caller that knew another one learns that the windows lost what it had sent
/// (`lost` = 1) and records its own starts again. Beside it, the server key holds the run id
/// of the server that set it (`INFO server`): another server holding the keys now (a
/// failover, a restart with its data) sets a new generation too, because the processes that
/// saw the old server fail may have paced on their shares unseen, and the new server may
/// lack the last writes (a replica). So every process records its starts again; and the
/// reset key (`<generation>@<µs>@<lost>`) marks when the generation began: no start is booked
/// within `Reserve::quiet_after_new` of it (a new token, or a loss nobody has reported yet:
/// by then every live process has asked and given its history), or within the class's
/// `Reserve::quiet_after_loss` once a loss is known (a caller reported an older generation,
/// or another server holds the keys: the starts of processes that exited have left the
/// windows by then, but the day's). Every key of the token expires once it has been idle past
/// its longest window.
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
local not_before = tonumber(ARGV[9])
local deadline = tonumber(ARGV[10])
local known = ARGV[11]
local candidate = ARGV[12]
local book = ARGV[13] == '1'
local nonce = ARGV[14]
local with_history = ARGV[15] == '1'
local quiet = tonumber(ARGV[16])
local quiet_new = tonumber(ARGV[17])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if deadline > 0 and now > deadline then return {-3, 0, 0, '', 0, now} end
local generation = redis.call('GET', KEYS[2])
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
local served_by = redis.call('GET', KEYS[3])
local lost = 0
local moved = served_by and served_by ~= run_id
local created = false
if not generation or moved then
  generation = candidate
  created = true
  redis.call('SET', KEYS[2], generation)
  if known ~= '' or moved then lost = 1 end
elseif known ~= '' and known ~= generation then
  lost = 1
end
if served_by ~= run_id then redis.call('SET', KEYS[3], run_id) end
local reset = redis.call('GET', KEYS[4])
local reset_at = nil
local reset_lost = false
if reset then
  local g, at, l = string.match(reset, '^(.*)@(%d+)@(%d)$')
  if g == generation then
    reset_at = tonumber(at)
    reset_lost = l == '1'
  end
end
if created or (lost == 1 and not reset_lost) then
  if not reset_at then reset_at = now end
  reset_lost = reset_lost or lost == 1
  local mark = string.format('%s@%d@%d', generation, reset_at, reset_lost and 1 or 0)
  redis.call('SET', KEYS[4], mark)
end
if moved and known == '' then lost = 0 end
if (lost == 1 or known ~= generation) and not with_history then
  return {-4, 0, 0, generation, lost, now}
end
local horizon = 1000000
if per_minute >= 0 then horizon = 60000000 end
if per_hour >= 0 then horizon = 3600000000 end
if per_day >= 0 then horizon = 86400000000 end
if with_history then
  local anchor = tonumber(ARGV[18])
  for i = 19, #ARGV, 2 do
    local at = anchor + tonumber(ARGV[i + 1])
    if at > now - horizon - margin then
      redis.call('ZADD', key, at, nonce .. '-' .. ARGV[i])
    end
  end
end
local function tidy()
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - horizon - margin)
  local ttl = math.floor((horizon + margin) / 1000) + 60000
  redis.call('PEXPIRE', key, ttl)
  for i = 2, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
if not book then
  tidy()
  return {0, 0, 0, generation, lost, now}
end
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
if not after_kth_latest(per_day, 86400000000) then return {-2, 0, 0, generation, lost, now} end
if not after_kth_latest(per_hour, 3600000000) then return {-2, 0, 0, generation, lost, now} end
if not after_kth_latest(per_minute, 60000000) then return {-2, 0, 0, generation, lost, now} end
if reset_at then
  local quiet_from = reset_at + quiet_new
  if reset_lost then quiet_from = reset_at + quiet end
  if quiet_from > slot then slot = quiet_from end
end
local long = slot
if not after_kth_latest(per_second, 1000000) then return {-2, 0, 0, generation, lost, now} end
local last = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
if last[2] then
  local l = tonumber(last[2])
  if per_second > 0 and burst == 0 then
    local s = l + math.floor((1000000 + margin) / per_second)
    if s > slot then slot = s end
  end
  if l > slot then slot = l end
end
if now + not_before > slot then slot = now + not_before end
if slot - now > max_wait then return {-1, slot - now, long - now, generation, lost, now} end
redis.call('ZADD', key, slot, member)
tidy()
return {0, slot - now, long - now, generation, lost, now}
"#;

/// A token's quota windows on Redis, shared by every process that uses the same server and
/// prefix.
#[derive(Clone)]
pub struct RedisBudget {
    connection: Connection,
    prefix: String,
    script: redis::Script,
    /// Makes the bookings of this store distinct from every other process's members of the
    /// sorted set (a member is `<nonce>-<booking id>`).
    nonce: u64,
    /// Each token's Redis server's clock against this machine's: a request's deadline is
    /// sent in the server's time, and a booked start is an instant of the server's clock.
    clocks: std::sync::Arc<Clocks>,
    /// Reads the clock of the node holding a token's keys.
    time_script: redis::Script,
    url: String,
}

impl RedisBudget {
    /// Connects to the Redis `url` names, with keys under [`DEFAULT_PREFIX`]: one server
    /// (`redis://host:port/db`), Sentinel (`redis+sentinel://host:port,host:port/<primary-name>`)
    /// or Cluster (`redis+cluster://host:port,host:port`), over TLS with `rediss`; see
    /// [which Redis](self#which-redis).
    ///
    /// # Errors
    /// [`FleetError`] of kind [`Invalid`](super::FleetErrorKind::Invalid) naming the problem
    /// when the URL is malformed, of kind [`Unavailable`](super::FleetErrorKind::Unavailable)
    /// when the servers cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, FleetError> {
        Self::connect_with_prefix(url, DEFAULT_PREFIX).await
    }

    /// Connects to the Redis `url` names (see [`RedisBudget::connect`]) with keys under
    /// `prefix`.
    ///
    /// # Errors
    /// As [`RedisBudget::connect`].
    pub async fn connect_with_prefix(url: &str, prefix: &str) -> Result<Self, FleetError> {
        let connection = connect(url).await?;
        // Random per store: two stores (two processes, or two clients of one) never book the
        // same member, which would move an earlier booking instead of adding one.
        let nonce = crate::rng::SplitMix64::from_entropy().next_u64();
        let budget = RedisBudget {
            connection,
            prefix: prefix.to_string(),
            script: redis::Script::new(RESERVE),
            nonce,
            clocks: Default::default(),
            time_script: redis::Script::new(TIME_SCRIPT),
            url: without_credentials(url),
        };
        // The servers answer now, or connecting fails. Each token's clock is read later, from
        // the node that holds its keys.
        let _: redis::Value = redis::cmd("PING")
            .query_async(&mut budget.connection.clone())
            .await
            .map_err(redis_error)?;
        Ok(budget)
    }

    /// Reads the clock of the server holding `token`'s keys and takes the readings in
    /// (`Clock::sample`); `fresh` drops what was known (the clocks turned out to disagree).
    async fn measure_clock(&self, token: &TokenFingerprint, fresh: bool) -> Result<(), FleetError> {
        if fresh {
            self.clocks.with(token, |clock| *clock = Default::default());
        }
        for _ in 0..3 {
            let mut connection = self.connection.clone();
            let before = unix_us();
            let (secs, micros): (i64, i64) = self
                .time_script
                .key(self.generation_key(token))
                .invoke_async(&mut connection)
                .await
                .map_err(redis_error)?;
            self.clocks.with(token, |clock| {
                clock.sample(before, unix_us(), secs * 1_000_000 + micros);
            });
        }
        Ok(())
    }

    /// Whether the estimate of the server's clock places a start of `request` within the
    /// lateness allowed ([`Pacing::lateness_allowed`](crate::Pacing::lateness_allowed)).
    fn clock_places(&self, request: &Reserve<'_>) -> bool {
        let allowed =
            i64::try_from(request.pacing.lateness_allowed().as_micros()).unwrap_or(i64::MAX);
        self.clocks
            .with(request.token, |clock| clock.bound_us)
            .is_some_and(|bound| bound <= allowed)
    }
}

/// `url` without a password or user name, for `Debug` and for comparing fleets.
fn without_credentials(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl std::fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudget")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn limit(value: Option<u32>) -> i64 {
    value.map_or(-1, i64::from)
}

impl FleetBudget for RedisBudget {
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> FleetFuture<'a, Answer> {
        Box::pin(async move {
            if self
                .clocks
                .with(request.token, |clock| clock.bound_us.is_none())
            {
                self.measure_clock(request.token, false).await?;
            }
            let raw = self.run(&request).await?;
            if raw.0 != -3 {
                // A booked start is placed by the estimate of the server's clock: one not
                // known closely enough (every reading so far slow, say just after connecting)
                // is measured again before the start is placed.
                if raw.3 != request.generation {
                    // Another generation: maybe another server (a failover, a restart), with
                    // a clock of its own. What was known of the old one's is dropped.
                    self.measure_clock(request.token, true).await?;
                } else if raw.0 == 0 && request.book && !self.clock_places(&request) {
                    self.measure_clock(request.token, false).await?;
                }
                return Ok(self.answer(raw, &request));
            }
            // Answered in time, yet past the deadline: the clocks disagree more than the
            // estimate allowed. Measure afresh and ask once more.
            self.measure_clock(request.token, true).await?;
            match self.run(&request).await? {
                (-3, ..) => Err(FleetError::new(
                    "redis: the server's clock disagrees with this machine's",
                )),
                raw => Ok(self.answer(raw, &request)),
            }
        })
    }

    fn give_back<'a>(
        &'a self,
        token: &'a TokenFingerprint,
        class: LimitClass,
        id: u64,
    ) -> FleetFuture<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let _: i64 = redis::cmd("ZREM")
                .arg(self.key(token, class))
                .arg(self.member(id))
                .query_async(&mut connection)
                .await
                .map_err(redis_error)?;
            Ok(())
        })
    }
}

/// What the script returns: status, wait, long wait (µs), generation, lost, the server's
/// clock when it ran (µs).
type Raw = (i64, i64, i64, String, i64, i64);

impl RedisBudget {
    /// The script's answer as it stands when it arrives: a booked start is an instant of the
    /// server's clock, so the wait is counted from now, not from when the script ran (an
    /// answer that took 300 ms to come back leaves 300 ms less to wait). A start already past
    /// by more than [`Pacing::lateness_allowed`](crate::Pacing::lateness_allowed) is
    /// [`Reservation::Missed`]: sent now, it would crowd the starts booked after it.
    fn answer(&self, raw: Raw, request: &Reserve<'_>) -> Answer {
        let (status, wait, long_wait, generation, lost, ran_at) = raw;
        let duration = |us: i64| Duration::from_micros(u64::try_from(us).unwrap_or(0));
        let reservation = match status {
            0 if request.book => {
                let server_now = self
                    .clocks
                    .with(request.token, |clock| clock.server_time(unix_us()));
                let left = ran_at.saturating_add(wait).saturating_sub(server_now);
                let tolerance = i64::try_from(request.pacing.lateness_allowed().as_micros())
                    .unwrap_or(i64::MAX);
                if left < -tolerance || !self.clock_places(request) {
                    Reservation::Missed {
                        late_by: duration(-left),
                    }
                } else {
                    Reservation::Granted {
                        wait: duration(left),
                    }
                }
            }
            0 => Reservation::Granted {
                wait: Duration::ZERO,
            },
            -1 => Reservation::Refused {
                wait: duration(wait),
                long_wait: duration(long_wait),
            },
            -4 => Reservation::HistoryNeeded,
            _ => Reservation::NoBudget,
        };
        Answer {
            reservation,
            generation,
            lost_history: lost == 1,
        }
    }
}

impl RedisBudget {
    /// The sorted set of `token`'s `class`: the fingerprint is the key's hash tag, so a
    /// token's keys share one Redis Cluster slot (one script touches them together).
    fn key(&self, token: &TokenFingerprint, class: LimitClass) -> String {
        format!("{}{{{token}}}:{}", self.prefix, class.as_str())
    }

    /// The generation of `token`'s windows, in the same slot as its sorted sets.
    fn generation_key(&self, token: &TokenFingerprint) -> String {
        format!("{}{{{token}}}:generation", self.prefix)
    }

    /// The key of the run id of the server that set the token's generation.
    fn server_key(&self, token: &TokenFingerprint) -> String {
        format!("{}{{{token}}}:server", self.prefix)
    }

    /// When the store was found to have lost what it held, for the generation it holds now
    /// (`<generation>@<µs>`): no start is booked within the quiet after it.
    fn reset_key(&self, token: &TokenFingerprint) -> String {
        format!("{}{{{token}}}:reset", self.prefix)
    }

    /// The member of this store's booking `id` (the script names recorded history the same
    /// way).
    fn member(&self, id: u64) -> String {
        format!("{:x}-{id}", self.nonce)
    }

    async fn run(&self, request: &Reserve<'_>) -> Result<Raw, FleetError> {
        let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let sent = unix_us();
        let deadline = self
            .clocks
            .with(request.token, |clock| clock.server_time(sent))
            .saturating_add(micros(RESPONSE_TIMEOUT));
        let mut invocation = self.script.key(self.key(request.token, request.class));
        invocation
            .key(self.generation_key(request.token))
            .key(self.server_key(request.token))
            .key(self.reset_key(request.token))
            .arg(limit(request.budget.per_second))
            .arg(limit(request.budget.per_minute))
            .arg(limit(request.budget.per_day))
            .arg(micros(request.pacing.margin))
            .arg(i64::from(request.pacing.burst))
            .arg(micros(request.max_wait))
            .arg(self.member(request.id))
            .arg(limit(request.budget.per_hour))
            .arg(micros(request.not_before))
            .arg(deadline)
            .arg(request.generation)
            .arg(format!("{:x}-{}", self.nonce, unix_us()))
            .arg(if request.book { "1" } else { "0" })
            .arg(format!("{:x}", self.nonce))
            .arg(if request.history.is_some() { "1" } else { "0" })
            .arg(micros(request.quiet_after_loss))
            .arg(micros(request.quiet_after_new))
            // History is placed from when the request left, on the server's clock, not from
            // when the script runs: a request that reaches the store late (a failover, a
            // slow link) would otherwise move the process's starts, its booked ones too,
            // later than they are, and others would be booked where it sends.
            .arg(deadline.saturating_sub(micros(RESPONSE_TIMEOUT)));
        for start in request.history.unwrap_or_default() {
            invocation.arg(start.id).arg(start.offset_us);
        }
        let mut connection = self.connection.clone();
        let raw: Raw = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(redis_error)?;
        self.clocks
            .with(request.token, |clock| clock.sample(sent, unix_us(), raw.5));
        Ok(raw)
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

    /// One "process" of the fleet: its own limiter, the store shared through Redis; calls
    /// wait for the store while it cannot be reached.
    async fn process(
        server: &RedisServer,
        token: &str,
        limits: Limits,
        pacing: Pacing,
    ) -> RateLimiter {
        process_on(server, token, limits, pacing, None).await
    }

    /// One "process" of the fleet, pacing on `1 / share` while the store cannot be reached
    /// when `share` is given.
    async fn process_on(
        server: &RedisServer,
        token: &str,
        limits: Limits,
        pacing: Pacing,
        share: Option<u32>,
    ) -> RateLimiter {
        let budget = RedisBudget::connect(&server.url()).await.unwrap();
        let token = SecretToken::try_from(token).unwrap().fingerprint();
        let mut fleet = Fleet::new(Arc::new(budget));
        if let Some(share) = share {
            fleet = fleet.fallback_share(share);
        }
        RateLimiter::in_fleet(limits, pacing, fleet, token)
    }

    /// A process at 20 per second (a test takes 1/10 of the reference's time), no margin,
    /// that paces on a quarter of the budget while the store cannot be reached (the tests of
    /// that choice use it).
    async fn quick_process(server: &RedisServer, token: &str) -> RateLimiter {
        process_on(
            server,
            token,
            limits(Some(20), Some(1000)),
            Pacing::even(Duration::ZERO),
            Some(4),
        )
        .await
    }

    /// Starts one call of `limiter`'s process (waiting up to 5 s for its slot); returns when
    /// it started.
    async fn start(limiter: &RateLimiter) -> Instant {
        start_within(limiter, Duration::from_secs(5)).await
    }

    /// Starts one call of `limiter`'s process, waiting up to `wait` for its slot; returns
    /// when it started.
    async fn start_within(limiter: &RateLimiter, wait: Duration) -> Instant {
        let permit = limiter.acquire(GENERAL, wait).await.unwrap();
        let started = Instant::now();
        permit.sent();
        started
    }

    /// A quick process of `token` that started one call, then lost its store (stopped).
    async fn started_then_cut_off(server: &mut RedisServer, token: &str) -> RateLimiter {
        let limiter = quick_process(server, token).await;
        start(&limiter).await;
        server.stop();
        limiter
    }

    /// A quick process of `token` that started two calls, both in the store.
    async fn started_twice(server: &RedisServer, token: &str) -> RateLimiter {
        let limiter = quick_process(server, token).await;
        for _ in 0..2 {
            start(&limiter).await;
        }
        limiter
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
                    starts.push(start_within(&limiter, Duration::from_secs(30)).await);
                }
                starts
            });
        }
        let starts: Vec<Instant> = tasks.join_all().await.into_iter().flatten().collect();
        // A token's first booking on a store waits out the quiet of a new generation (4.01 s:
        // the 3 s a start may be booked ahead, a second and the margin).
        let quiet = Duration::from_millis(4010);
        let total = starts.iter().max().unwrap().duration_since(t0);
        assert_eq!(starts.len(), 40);
        assert!(busiest(&starts, Duration::from_secs(1)) <= 20);
        // One start every 51 ms for the whole fleet: 39 gaps.
        let floor = quiet + Duration::from_millis(51 * 39);
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
                // Within the quiet of the token's new generation on the store.
                match limiter.acquire(GENERAL, Duration::from_secs(6)).await {
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
            .acquire(GENERAL, Duration::from_secs(6))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_unreachable_store_falls_back_to_a_share_of_the_budget_then_recovers() {
        let mut server = RedisServer::start();
        let limiter = started_then_cut_off(&mut server, "outage-token").await;
        // A quarter of 20 per second: one start every 200 ms, and nothing fails.
        three_starts_on_the_share(&limiter).await;
        server.restart();
        // The connection manager reconnects; bookings are in Redis again.
        let mut in_redis = false;
        for _ in 0..20 {
            start(&limiter).await;
            let mut connection = server.connection().await;
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

    /// How many starts the store holds for `token`'s general class.
    async fn stored(server: &RedisServer, token: &str) -> usize {
        let fingerprint = SecretToken::try_from(token).unwrap().fingerprint();
        let mut connection = server.connection().await;
        redis::cmd("ZCARD")
            .arg(format!("pubapi:{{{fingerprint}}}:general"))
            .query_async(&mut connection)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn what_a_process_sent_while_the_store_was_down_counts_in_its_windows_once_it_answers() {
        let mut server = RedisServer::start();
        let limiter = started_then_cut_off(&mut server, "history-token").await;
        for _ in 0..3 {
            start(&limiter).await;
        }
        // Back, without its data; the process makes no call, yet within the retry period
        // (2 s) plus a failed attempt its starts are in the store again: the one before the
        // outage and the three during it, each once.
        server.restart();
        let deadline = Instant::now() + Duration::from_secs(6);
        while stored(&server, "history-token").await < 4 {
            assert!(
                Instant::now() < deadline,
                "the history never reached the store"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(stored(&server, "history-token").await, 4);
    }

    #[tokio::test]
    async fn a_store_that_lost_its_data_between_two_calls_gets_the_history_and_books_nothing_for_a_quiet()
     {
        let server = RedisServer::start();
        let limiter = started_twice(&server, "restart-token").await;
        // Emptied under the process's connection (a restart breaks the connection, which the
        // process sees as an outage; a failover to an empty replica or a flush does not).
        flush(&server).await;
        three_starts_after_the_quiet(&limiter, Instant::now()).await;
        assert_eq!(stored(&server, "restart-token").await, 5);
    }

    #[tokio::test]
    async fn another_server_holding_the_keys_has_every_process_record_its_starts_and_wait_a_quiet()
    {
        let server = RedisServer::start();
        // A process that saw no failure: its calls went to the server that holds the keys.
        let limiter = started_twice(&server, "failover-token").await;
        // Another server holds them now (a failover to a replica that had them all): its run
        // id is not the one that set the generation.
        let fingerprint = SecretToken::try_from("failover-token")
            .unwrap()
            .fingerprint();
        let mut connection = server.connection().await;
        let () = redis::cmd("SET")
            .arg(format!("pubapi:{{{fingerprint}}}:server"))
            .arg("0000another0000")
            .query_async(&mut connection)
            .await
            .unwrap();
        three_starts_after_the_quiet(&limiter, Instant::now()).await;
        // Its starts recorded again, each once.
        assert_eq!(stored(&server, "failover-token").await, 5);
    }

    /// Three starts of a quick process after the store was found at `lost` to have lost its
    /// data: none within the quiet that follows (4 s: the 3 s a start may have been booked
    /// ahead, and a second), then at 20 per second.
    async fn three_starts_after_the_quiet(limiter: &RateLimiter, lost: Instant) {
        let mut starts = Vec::new();
        for _ in 0..3 {
            starts.push(start_within(limiter, Duration::from_secs(10)).await);
        }
        let quiet = starts[0] - lost;
        assert!(quiet >= Duration::from_millis(3950), "{quiet:?}");
        for pair in starts.windows(2) {
            assert!(
                pair[1] - pair[0] >= Duration::from_millis(49),
                "{:?}",
                pair[1] - pair[0]
            );
        }
    }

    /// Three starts of `limiter`'s process during a grace: at least 199 ms apart (a quarter
    /// of 20 per second).
    async fn three_starts_on_the_share(limiter: &RateLimiter) {
        let mut starts = Vec::new();
        for _ in 0..3 {
            starts.push(start(limiter).await);
        }
        for pair in starts.windows(2) {
            assert!(
                pair[1] - pair[0] >= Duration::from_millis(199),
                "{:?}",
                pair[1] - pair[0]
            );
        }
    }

    async fn flush(server: &RedisServer) {
        let mut connection = server.connection().await;
        let () = redis::cmd("FLUSHALL")
            .query_async(&mut connection)
            .await
            .unwrap();
    }

    /// Waits up to `limit` for the store to hold `count` starts of `token`.
    async fn until_stored(server: &RedisServer, token: &str, count: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let held = stored(server, token).await;
            if held == count {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the store holds {held} starts of {token}, not {count}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn a_store_flushed_under_idle_processes_gets_their_history_back_without_a_call() {
        let server = RedisServer::start();
        let day = limits(None, Some(10));
        let pacing = Pacing::even(Duration::ZERO);
        let first = process(&server, "idle-token", day, pacing).await;
        let second = process(&server, "idle-token", day, pacing).await;
        for _ in 0..6 {
            start(&first).await;
        }
        for _ in 0..4 {
            start(&second).await;
        }
        until_stored(&server, "idle-token", 10, Duration::ZERO).await;
        // Emptied with no failure to see, and neither process makes a call: each finds out
        // within 2 s of the store's last answer to it and gives it its starts again.
        flush(&server).await;
        until_stored(&server, "idle-token", 10, Duration::from_secs(4)).await;
        // Once the grace on the share is over (3.5 s), the day is still used up for both.
        tokio::time::sleep(Duration::from_millis(3600)).await;
        for process in [&first, &second] {
            let refused = process.acquire(GENERAL, Duration::from_secs(1)).await;
            assert!(
                matches!(refused, Err(LimitError::DailyBudgetExhausted { .. })),
                "{refused:?}"
            );
        }
        until_stored(&server, "idle-token", 10, Duration::ZERO).await;
    }

    #[tokio::test]
    async fn a_start_whose_caller_stopped_waiting_is_given_back_to_the_fleets_day() {
        let server = RedisServer::start();
        // One a second, three a day: after the first call, a start is a second away.
        let limiter = process(
            &server,
            "give-back-token",
            limits(Some(1), Some(3)),
            Pacing::even(Duration::ZERO),
        )
        .await;
        start(&limiter).await;
        for _ in 0..3 {
            let gave_up = tokio::time::timeout(
                Duration::from_millis(100),
                limiter.acquire(GENERAL, Duration::from_secs(5)),
            )
            .await;
            assert!(gave_up.is_err(), "the start was a second away: {gave_up:?}");
        }
        // Each start booked in the store went back: the day still has its two calls.
        until_stored(&server, "give-back-token", 1, Duration::from_secs(2)).await;
        start(&limiter).await;
        start(&limiter).await;
        until_stored(&server, "give-back-token", 3, Duration::ZERO).await;
    }

    #[tokio::test]
    async fn callers_quicker_than_a_paused_store_get_the_share_once_it_is_found_down() {
        let server = RedisServer::start();
        let limiter = quick_process(&server, "impatient-token").await;
        start(&limiter).await;
        server.pause();
        // Every caller gives up after 300 ms, before the store's 1 s response timeout could
        // tell it the store is down: the one whose request was out leaves a start to give
        // back, which meets the paused store too and says it is down.
        let t0 = Instant::now();
        let (mut first_permit, mut made) = (None, 0);
        while t0.elapsed() < Duration::from_secs(4) {
            let asked = tokio::time::timeout(
                Duration::from_millis(300),
                limiter.acquire(GENERAL, Duration::from_secs(5)),
            )
            .await;
            if let Ok(permit) = asked {
                permit.unwrap().sent();
                first_permit.get_or_insert(t0.elapsed());
                made += 1;
            }
        }
        server.resume();
        let first_permit = first_permit.expect("no caller got a start while the store was paused");
        assert!(
            first_permit < Duration::from_millis(2500),
            "{first_permit:?}"
        );
        // Once it answers, the store is used again and counts every start made, the ones
        // made on the share too, each once.
        start(&limiter).await;
        until_stored(&server, "impatient-token", made + 2, Duration::from_secs(4)).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        until_stored(&server, "impatient-token", made + 2, Duration::ZERO).await;
    }
}
