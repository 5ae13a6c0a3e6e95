//! When to try a request again, and after how long: the retry step of a request.
//!
//! [`RetryConfig::decide`] turns the [`Verdict`] of an attempt into a
//! [`Decision`]:
//!
//! - throttled (403 + `OVER_QPS`, 429, 409 on the token endpoint): retried
//!   after the server's `Retry-After` (backoff when it sent none), for any
//!   method, because a throttled request was not executed; a `Retry-After`
//!   above [`RetryConfig::max_retry_after`] gives up instead of sleeping;
//! - daily quota used up: give up at once (it resets in hours);
//! - server errors and transport failures: full-jitter exponential backoff,
//!   only for idempotent methods, except connection failures (the request
//!   was never sent), which are retried for any method;
//! - anything else: give up.
//!
//! Attempts, the total time spent waiting and a client-wide
//! [`RetryBudget`] bound the retries. The defaults follow the AWS SDK's
//! standard mode: 3 attempts, 1 s base, 20 s cap.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::rng::SplitMix64;
use crate::verdict::Verdict;

/// Tokens a retry takes from the [`RetryBudget`].
pub(crate) const RETRY_COST: u32 = 5;
/// Tokens a retry after a timeout takes.
pub(crate) const TIMEOUT_RETRY_COST: u32 = 10;
/// Tokens a success puts back.
pub(crate) const SUCCESS_REFUND: u32 = 1;

/// Whether repeating a request with this method is safe (RFC 9110): GET,
/// HEAD, OPTIONS, TRACE, PUT and DELETE. The client asks the operation instead
/// (`x-pubapi-idempotent` in the spec); the tests use this as their oracle.
#[cfg(test)]
pub(crate) fn method_is_idempotent(method: &http::Method) -> bool {
    use http::Method;
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::TRACE,
        Method::PUT,
        Method::DELETE,
    ]
    .contains(method)
}

/// When the client tries a request again, and how retries are bounded (see
/// [`ClientBuilder::retry`](crate::ClientBuilder::retry)).
///
/// Each attempt's outcome decides:
///
/// - throttled (403 `ERR_403_DEVELOPER_OVER_QPS`, 429): retried after the server's
///   `Retry-After` (a backoff when it sent none), for any method, because a throttled request
///   was not executed; a `Retry-After` above [`RetryConfig::max_retry_after`] gives up instead
///   of sleeping;
/// - the daily quota used up (`ERR_403_DEVELOPER_OVER_RATE`): no retry, it resets in hours;
/// - server errors and timeouts: full-jitter exponential backoff, only for idempotent
///   operations; a connection that never opened is retried for any operation (nothing was
///   sent);
/// - anything else: no retry.
///
/// Attempts, the total time spent waiting, the operation's deadline and a client-wide
/// [`RetryBudget`] bound the retries. The defaults follow the AWS SDK's standard mode: 3
/// attempts, 1 s base, 20 s cap.
///
/// ```
/// use std::time::Duration;
/// use pubapi_sdk_ext::RetryConfig;
///
/// let config = RetryConfig::default()
///     .with_max_attempts(5)
///     .with_max_retry_after(Duration::from_secs(10));
/// assert_eq!(config.max_attempts(), 5);
/// assert_eq!(config.max_backoff(), Duration::from_secs(20));
/// ```
#[derive(Debug, Clone)]
pub struct RetryConfig {
    max_attempts: u32,
    base_backoff: Duration,
    max_backoff: Duration,
    max_retry_after: Duration,
    max_total_wait: Duration,
    operation_timeout: Duration,
    unknown_throttle_retries: u32,
    budget: RetryBudget,
}

impl Default for RetryConfig {
    /// 3 attempts, backoff 1 s doubling up to 20 s, `Retry-After` honoured
    /// up to 60 s, at most 120 s of waiting and 180 s per operation, 2 retries
    /// of a throttle with a gateway code the SDK does not know, and a fresh
    /// budget of 500.
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            base_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            max_total_wait: Duration::from_secs(120),
            operation_timeout: Duration::from_secs(180),
            unknown_throttle_retries: 2,
            budget: RetryBudget::default(),
        }
    }
}

impl RetryConfig {
    /// How many times a 403 or 429 with `Retry-After` and a gateway code the SDK does not
    /// know is retried after its `Retry-After` (default 2; within
    /// [`RetryConfig::with_max_attempts`]) before the call fails with
    /// [`crate::Error::Throttled`] naming the code. The gateway adds codes over time: such an
    /// answer is a throttle of a kind not met before, and giving up at once would turn a
    /// pause into an outage. 0 gives up at once.
    pub fn with_unknown_throttle_retries(mut self, retries: u32) -> Self {
        self.unknown_throttle_retries = retries;
        self
    }

    /// Attempts in total, the first included (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The first backoff's upper bound; it doubles with each attempt.
    pub fn with_base_backoff(mut self, base: Duration) -> Self {
        self.base_backoff = base;
        self
    }

    /// The largest backoff upper bound.
    pub fn with_max_backoff(mut self, max: Duration) -> Self {
        self.max_backoff = max;
        self
    }

    /// The longest `Retry-After` that is waited for; longer ones give up.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// The most time spent waiting between the attempts of one operation.
    pub fn with_max_total_wait(mut self, max: Duration) -> Self {
        self.max_total_wait = max;
        self
    }

    /// The deadline of one operation, all attempts and waits included, an attempt in flight
    /// too: when it passes, the attempt is cancelled and the call ends with
    /// [`Error::Timeout`](crate::Error::Timeout) (the attempts made, the request id).
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// The budget retries draw from. Give every config of one client the
    /// same budget (clones share it).
    pub fn with_budget(mut self, budget: RetryBudget) -> Self {
        self.budget = budget;
        self
    }

    /// Attempts in total, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The first backoff's upper bound.
    pub fn base_backoff(&self) -> Duration {
        self.base_backoff
    }

    /// The largest backoff upper bound.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The longest `Retry-After` waited for.
    pub fn max_retry_after(&self) -> Duration {
        self.max_retry_after
    }

    /// The most waiting between attempts of one operation.
    pub fn max_total_wait(&self) -> Duration {
        self.max_total_wait
    }

    /// The deadline of one operation.
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// The budget retries draw from.
    pub fn budget(&self) -> &RetryBudget {
        &self.budget
    }

    /// A full-jitter backoff after attempt `attempt` (1-based): uniform in
    /// `[0, min(max_backoff, base_backoff * 2^(attempt-1))]`.
    pub(crate) fn backoff(&self, attempt: u32, rng: &mut impl Jitter) -> Duration {
        let doubling = 1u32 << attempt.saturating_sub(1).min(31);
        let bound = self
            .base_backoff
            .saturating_mul(doubling)
            .min(self.max_backoff);
        let bound_nanos = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX - 1);
        Duration::from_nanos(rng.below(bound_nanos.saturating_add(1)))
    }

    /// A success: [`SUCCESS_REFUND`] goes back into the budget. Every success passes here,
    /// those the policy hands back without [`RetryConfig::decide`] included.
    pub(crate) fn succeeded(&self) {
        self.budget.deposit(SUCCESS_REFUND);
    }

    /// What to do after attempt `attempt` (1-based) ended in `verdict`.
    ///
    /// `waited_so_far` is the time already spent waiting between earlier
    /// attempts of the same operation. A success puts
    /// [`SUCCESS_REFUND`] back into the budget; a retry takes
    /// [`RETRY_COST`] ([`TIMEOUT_RETRY_COST`] after a timeout). A throttle is retried
    /// even for a POST (the request was not executed); a server error is not.
    pub(crate) fn decide(
        &self,
        verdict: &Verdict,
        method_is_idempotent: bool,
        attempt: u32,
        waited_so_far: Duration,
        rng: &mut impl Jitter,
    ) -> Decision {
        let max_attempts = self.max_attempts;
        self.decide_within(
            max_attempts,
            verdict,
            method_is_idempotent,
            attempt,
            waited_so_far,
            rng,
        )
    }

    /// [`RetryConfig::decide`] with `max_attempts` in place of the config's (a call's own,
    /// [`crate::options::CallOptions::retries`]).
    pub(crate) fn decide_within(
        &self,
        max_attempts: u32,
        verdict: &Verdict,
        method_is_idempotent: bool,
        attempt: u32,
        waited_so_far: Duration,
        rng: &mut impl Jitter,
    ) -> Decision {
        let (retry_after, cost) = match *verdict {
            Verdict::Success => {
                self.succeeded();
                return Decision::Done;
            }
            Verdict::Refused(_) => return Decision::GiveUp(GiveUpReason::NotRetryable),
            Verdict::QuotaExhausted { retry_after } => {
                return Decision::GiveUp(GiveUpReason::QuotaExhausted { retry_after });
            }
            Verdict::Throttled { retry_after } => (retry_after, RETRY_COST),
            Verdict::UnknownThrottle { retry_after } => {
                if attempt > self.unknown_throttle_retries {
                    return Decision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: attempt });
                }
                (Some(retry_after), RETRY_COST)
            }
            Verdict::ServerError if !method_is_idempotent => {
                return Decision::GiveUp(GiveUpReason::NotIdempotent);
            }
            Verdict::ServerError => (None, RETRY_COST),
            Verdict::NoAnswer { connect, timeout } => {
                if !connect && !method_is_idempotent {
                    return Decision::GiveUp(GiveUpReason::NotIdempotent);
                }
                (
                    None,
                    if timeout {
                        TIMEOUT_RETRY_COST
                    } else {
                        RETRY_COST
                    },
                )
            }
        };
        if attempt >= max_attempts {
            return Decision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: attempt });
        }
        let after = match retry_after {
            Some(retry_after) if retry_after > self.max_retry_after => {
                return Decision::GiveUp(GiveUpReason::RetryAfterTooLong { retry_after });
            }
            Some(retry_after) => retry_after,
            None => self.backoff(attempt, rng),
        };
        if waited_so_far.saturating_add(after) > self.max_total_wait {
            return Decision::GiveUp(GiveUpReason::TotalWaitExceeded {
                waited: waited_so_far,
                next: after,
            });
        }
        if !self.budget.try_withdraw(cost) {
            return Decision::GiveUp(GiveUpReason::BudgetExhausted);
        }
        Decision::Retry { after }
    }
}

/// Where a backoff's jitter comes from: a generator of the caller's, or one shared by a
/// client's calls, which is locked only when a backoff is drawn (never after a success).
pub(crate) trait Jitter {
    /// A uniform value in `[0, bound)`.
    fn below(&mut self, bound: u64) -> u64;
}

impl Jitter for SplitMix64 {
    fn below(&mut self, bound: u64) -> u64 {
        SplitMix64::below(self, bound)
    }
}

impl Jitter for &Mutex<SplitMix64> {
    fn below(&mut self, bound: u64) -> u64 {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .below(bound)
    }
}

/// What [`RetryConfig::decide`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The attempt succeeded; nothing to retry.
    Done,
    /// Try again after this long.
    Retry {
        /// How long to wait first.
        after: Duration,
    },
    /// Stop and report the last outcome.
    GiveUp(GiveUpReason),
}

/// Why retrying stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUpReason {
    /// The outcome is final (400, 401, 403, 404, ...).
    NotRetryable,
    /// The daily quota is used up.
    QuotaExhausted {
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The request may have been executed and its method is not idempotent.
    NotIdempotent,
    /// The configured number of attempts was made.
    AttemptsExhausted {
        /// Attempts made.
        attempts: u32,
    },
    /// The server asked for a longer wait than allowed.
    RetryAfterTooLong {
        /// The wait asked for.
        retry_after: Duration,
    },
    /// The next wait would pass the total waiting allowed.
    TotalWaitExceeded {
        /// Waited so far.
        waited: Duration,
        /// The wait that was next.
        next: Duration,
    },
    /// The client-wide retry budget is empty.
    BudgetExhausted,
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GiveUpReason::NotRetryable => f.write_str("not retryable"),
            GiveUpReason::QuotaExhausted { .. } => f.write_str("daily quota exhausted"),
            GiveUpReason::NotIdempotent => f.write_str("not idempotent"),
            GiveUpReason::AttemptsExhausted { attempts } => {
                write!(f, "gave up after {attempts} attempts")
            }
            GiveUpReason::RetryAfterTooLong { retry_after } => {
                write!(f, "retry-after of {}s is too long", retry_after.as_secs())
            }
            GiveUpReason::TotalWaitExceeded { .. } => f.write_str("total wait exceeded"),
            GiveUpReason::BudgetExhausted => f.write_str("retry budget exhausted"),
        }
    }
}

/// A client-wide token bucket that bounds retries (AWS style), given to
/// [`RetryConfig::with_budget`]: each retry takes 5 tokens (10 after a timeout), each
/// success puts 1 back, and when it is empty nothing is retried. With the default capacity of 500 a fully failing service gets at
/// most 100 retries until requests succeed again. Clones share the bucket.
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<BudgetInner>,
}

struct BudgetInner {
    capacity: u32,
    available: AtomicU32,
}

impl RetryBudget {
    /// A full bucket of `capacity` tokens.
    pub fn new(capacity: u32) -> Self {
        RetryBudget {
            inner: Arc::new(BudgetInner {
                capacity,
                available: AtomicU32::new(capacity),
            }),
        }
    }

    /// Tokens when full.
    pub fn capacity(&self) -> u32 {
        self.inner.capacity
    }

    /// Tokens left.
    pub fn available(&self) -> u32 {
        self.inner.available.load(Ordering::Relaxed)
    }

    /// Takes `cost` tokens if that many are left.
    pub(crate) fn try_withdraw(&self, cost: u32) -> bool {
        self.inner
            .available
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(cost))
            .is_ok()
    }

    /// Puts `tokens` back, up to the capacity.
    pub(crate) fn deposit(&self, tokens: u32) {
        let capacity = self.inner.capacity;
        // A full bucket is left unwritten (the usual case after a success), so concurrent
        // successes do not contend for it.
        let _ = self
            .inner
            .available
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < capacity).then(|| n.saturating_add(tokens).min(capacity))
            });
    }
}

impl Default for RetryBudget {
    /// Capacity 500.
    fn default() -> Self {
        RetryBudget::new(500)
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("capacity", &self.capacity())
            .field("available", &self.available())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn throttled(secs: u64) -> Verdict {
        Verdict::Throttled {
            retry_after: Some(S(secs)),
        }
    }

    /// Drives one operation through `outcomes` (the last repeats) and
    /// returns the attempts made, the waits and the final decision.
    fn drive(
        config: &RetryConfig,
        outcomes: &[Verdict],
        idempotent: bool,
        rng: &mut SplitMix64,
    ) -> (u32, Vec<Duration>, Decision) {
        let mut waits = Vec::new();
        let mut waited = Duration::ZERO;
        for attempt in 1.. {
            let outcome = outcomes[(attempt as usize - 1).min(outcomes.len() - 1)];
            match config.decide(&outcome, idempotent, attempt, waited, rng) {
                Decision::Retry { after } => {
                    waits.push(after);
                    waited += after;
                }
                decision => return (attempt, waits, decision),
            }
        }
        unreachable!()
    }

    #[test]
    fn defaults_follow_the_aws_standard_mode() {
        let c = RetryConfig::default();
        assert_eq!(c.max_attempts(), 3);
        assert_eq!(c.base_backoff(), S(1));
        assert_eq!(c.max_backoff(), S(20));
        assert_eq!(c.max_retry_after(), S(60));
        assert_eq!(c.max_total_wait(), S(120));
        assert_eq!(c.operation_timeout(), S(180));
        assert_eq!(c.budget().capacity(), 500);
        assert_eq!(c.budget().available(), 500);
    }

    #[test]
    fn setters_change_the_config() {
        let c = RetryConfig::default()
            .with_max_attempts(0)
            .with_base_backoff(S(2))
            .with_max_backoff(S(3))
            .with_max_retry_after(S(4))
            .with_max_total_wait(S(5))
            .with_operation_timeout(S(6))
            .with_budget(RetryBudget::new(7));
        assert_eq!(c.max_attempts(), 1);
        assert_eq!(
            (
                c.base_backoff(),
                c.max_backoff(),
                c.max_retry_after(),
                c.max_total_wait(),
                c.operation_timeout()
            ),
            (S(2), S(3), S(4), S(5), S(6))
        );
        assert_eq!(c.budget().capacity(), 7);
    }

    #[test]
    fn throttled_is_retried_after_exactly_retry_after_even_for_post() {
        let (attempts, waits, last) = drive(
            &RetryConfig::default(),
            &[throttled(2)],
            false,
            &mut SplitMix64::new(0),
        );
        assert_eq!(attempts, 3);
        assert_eq!(waits, [S(2), S(2)]);
        assert_eq!(
            last,
            Decision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 3 })
        );
    }

    #[test]
    fn never_retried_earlier_than_retry_after() {
        let config = RetryConfig::default().with_budget(RetryBudget::new(u32::MAX));
        for seed in 0..50 {
            let mut rng = SplitMix64::new(seed);
            for secs in 0..=60 {
                for attempt in 1..3 {
                    match config.decide(
                        &throttled(secs),
                        seed % 2 == 0,
                        attempt,
                        Duration::ZERO,
                        &mut rng,
                    ) {
                        Decision::Retry { after } => assert!(after >= S(secs)),
                        other => panic!("{secs}s attempt {attempt}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn throttled_without_retry_after_backs_off() {
        let config = RetryConfig::default();
        let outcome = Verdict::Throttled { retry_after: None };
        let (attempts, waits, _) = drive(&config, &[outcome], false, &mut SplitMix64::new(3));
        assert_eq!(attempts, 3);
        assert!(waits[0] <= S(1) && waits[1] <= S(2), "{waits:?}");
    }

    #[test]
    fn retry_after_above_max_retry_after_gives_up() {
        let config = RetryConfig::default();
        let decision = config.decide(
            &throttled(61),
            true,
            1,
            Duration::ZERO,
            &mut SplitMix64::new(0),
        );
        assert_eq!(
            decision,
            Decision::GiveUp(GiveUpReason::RetryAfterTooLong { retry_after: S(61) })
        );
        assert_eq!(config.budget().available(), 500);
    }

    #[test]
    fn quota_exhausted_gives_up_at_once() {
        let outcome = Verdict::QuotaExhausted {
            retry_after: Some(S(3600)),
        };
        let (attempts, waits, last) = drive(
            &RetryConfig::default(),
            &[outcome],
            true,
            &mut SplitMix64::new(0),
        );
        assert_eq!((attempts, waits.len()), (1, 0));
        assert_eq!(
            last,
            Decision::GiveUp(GiveUpReason::QuotaExhausted {
                retry_after: Some(S(3600))
            })
        );
    }

    #[test]
    fn server_error_is_retried_with_backoff_for_idempotent_methods() {
        let (attempts, waits, last) = drive(
            &RetryConfig::default(),
            &[Verdict::ServerError],
            true,
            &mut SplitMix64::new(9),
        );
        assert_eq!(attempts, 3);
        assert_eq!(waits.len(), 2);
        assert!(waits[0] <= S(1) && waits[1] <= S(2), "{waits:?}");
        assert_eq!(
            last,
            Decision::GiveUp(GiveUpReason::AttemptsExhausted { attempts: 3 })
        );
    }

    #[test]
    fn post_is_not_retried_after_500() {
        let (attempts, waits, last) = drive(
            &RetryConfig::default(),
            &[Verdict::ServerError],
            false,
            &mut SplitMix64::new(0),
        );
        assert_eq!((attempts, waits.len()), (1, 0));
        assert_eq!(last, Decision::GiveUp(GiveUpReason::NotIdempotent));
    }

    #[test]
    fn post_is_not_retried_after_a_timeout_once_sent() {
        let outcome = Verdict::NoAnswer {
            connect: false,
            timeout: true,
        };
        let (attempts, _, last) = drive(
            &RetryConfig::default(),
            &[outcome],
            false,
            &mut SplitMix64::new(0),
        );
        assert_eq!(attempts, 1);
        assert_eq!(last, Decision::GiveUp(GiveUpReason::NotIdempotent));
        let (attempts, _, _) = drive(
            &RetryConfig::default(),
            &[outcome],
            true,
            &mut SplitMix64::new(0),
        );
        assert_eq!(attempts, 3);
    }

    #[test]
    fn connect_errors_are_retried_for_any_method() {
        for timeout in [false, true] {
            let outcome = Verdict::NoAnswer {
                connect: true,
                timeout,
            };
            let (attempts, waits, _) = drive(
                &RetryConfig::default(),
                &[outcome],
                false,
                &mut SplitMix64::new(0),
            );
            assert_eq!((attempts, waits.len()), (3, 2));
        }
    }

    #[test]
    fn do_not_retry_gives_up_and_success_is_done() {
        let config = RetryConfig::default();
        let mut rng = SplitMix64::new(0);
        assert_eq!(
            config.decide(
                &Verdict::Refused(crate::verdict::Refusal::NotFound),
                true,
                1,
                Duration::ZERO,
                &mut rng
            ),
            Decision::GiveUp(GiveUpReason::NotRetryable)
        );
        assert_eq!(
            config.decide(&Verdict::Success, false, 1, Duration::ZERO, &mut rng),
            Decision::Done
        );
    }

    #[test]
    fn success_after_a_retry_ends_the_operation() {
        let outcomes = [Verdict::ServerError, Verdict::Success];
        let (attempts, waits, last) = drive(
            &RetryConfig::default(),
            &outcomes,
            true,
            &mut SplitMix64::new(0),
        );
        assert_eq!((attempts, waits.len(), last), (2, 1, Decision::Done));
    }

    #[test]
    fn total_wait_is_bounded() {
        let config = RetryConfig::default().with_max_attempts(10);
        let (attempts, waits, last) =
            drive(&config, &[throttled(50)], true, &mut SplitMix64::new(0));
        assert_eq!(attempts, 3);
        assert_eq!(waits, [S(50), S(50)]);
        assert_eq!(
            last,
            Decision::GiveUp(GiveUpReason::TotalWaitExceeded {
                waited: S(100),
                next: S(50)
            })
        );
    }

    #[test]
    fn backoff_bound_doubles_up_to_the_cap() {
        let config = RetryConfig::default();
        for (attempt, bound) in [
            (1, 1),
            (2, 2),
            (3, 4),
            (4, 8),
            (5, 16),
            (6, 20),
            (7, 20),
            (40, 20),
            (u32::MAX, 20),
        ] {
            let mut max = 0;
            let mut rng = SplitMix64::new(attempt as u64);
            for _ in 0..2_000 {
                max = max.max(config.backoff(attempt, &mut rng).as_millis());
            }
            assert!(max <= bound * 1000, "attempt {attempt}: {max}");
            assert!(max >= bound * 1000 * 99 / 100, "attempt {attempt}: {max}");
        }
    }

    #[test]
    fn every_jittered_delay_is_within_bounds_for_many_seeds() {
        let config = RetryConfig::default()
            .with_max_attempts(50)
            .with_max_total_wait(Duration::MAX);
        for seed in 0..2_000u64 {
            let mut rng = SplitMix64::new(seed.wrapping_mul(0x9e37_79b9));
            for attempt in 1..20u32 {
                let bound = S(1u64 << (attempt - 1).min(6)).min(S(20));
                let d = config.backoff(attempt, &mut rng);
                assert!(d <= bound, "seed {seed} attempt {attempt}: {d:?}");
            }
        }
    }

    #[test]
    fn seeded_jitter_is_a_fixed_sequence() {
        let config = RetryConfig::default()
            .with_max_attempts(6)
            .with_max_total_wait(Duration::MAX);
        let mut rng = SplitMix64::new(2024);
        let delays: Vec<u128> = (1..=6)
            .map(|a| config.backoff(a, &mut rng).as_millis())
            .collect();
        assert_eq!(delays, GOLDEN_MILLIS);
        // The same seed gives the same delays through `decide`.
        let (_, waits, _) = drive(
            &config,
            &[Verdict::ServerError],
            true,
            &mut SplitMix64::new(2024),
        );
        let waits: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(waits, GOLDEN_MILLIS[..5]);
    }

    const GOLDEN_MILLIS: [u128; 6] = [622, 194, 1194, 929, 13289, 11048];

    #[test]
    fn an_hour_of_503_gets_at_most_100_retries() {
        let config = RetryConfig::default();
        let mut rng = SplitMix64::new(77);
        let attempt_time = Duration::from_millis(200);
        let mut clock = Duration::ZERO;
        let (mut operations, mut retries) = (0, 0);
        while clock < S(3600) {
            operations += 1;
            let mut waited = Duration::ZERO;
            for attempt in 1.. {
                clock += attempt_time;
                match config.decide(&Verdict::ServerError, true, attempt, waited, &mut rng) {
                    Decision::Retry { after } => {
                        retries += 1;
                        waited += after;
                        clock += after;
                    }
                    _ => break,
                }
            }
        }
        assert!(operations > 10_000, "{operations}");
        assert_eq!(retries, 100);
        assert_eq!(config.budget().available(), 0);
    }

    #[test]
    fn an_empty_budget_stops_retries_before_max_attempts() {
        let budget = RetryBudget::new(20);
        let config = RetryConfig::default()
            .with_max_attempts(100)
            .with_max_total_wait(Duration::MAX)
            .with_budget(budget.clone());
        let (attempts, waits, last) = drive(
            &config,
            &[Verdict::ServerError],
            true,
            &mut SplitMix64::new(1),
        );
        assert_eq!((attempts, waits.len()), (5, 4));
        assert_eq!(last, Decision::GiveUp(GiveUpReason::BudgetExhausted));
        assert_eq!(budget.available(), 0);
    }

    #[test]
    fn only_a_backoff_draws_from_the_generator() {
        /// Counts the draws; a shared generator is locked once per draw.
        struct Counting(u32);
        impl Jitter for Counting {
            fn below(&mut self, bound: u64) -> u64 {
                self.0 += 1;
                bound / 2
            }
        }
        let config = RetryConfig::default();
        let mut draws = Counting(0);
        config.decide(&Verdict::Success, true, 1, Duration::ZERO, &mut draws);
        config.decide(&throttled(1), true, 1, Duration::ZERO, &mut draws);
        config.decide(
            &Verdict::Refused(crate::verdict::Refusal::NotFound),
            true,
            1,
            Duration::ZERO,
            &mut draws,
        );
        assert_eq!(draws.0, 0);
        config.decide(&Verdict::ServerError, true, 1, Duration::ZERO, &mut draws);
        assert_eq!(draws.0, 1);
    }

    #[test]
    fn timeouts_cost_ten_and_successes_refund_one() {
        let budget = RetryBudget::new(30);
        let config = RetryConfig::default().with_budget(budget.clone());
        let mut rng = SplitMix64::new(1);
        let timeout = Verdict::NoAnswer {
            connect: false,
            timeout: true,
        };
        assert!(matches!(
            config.decide(&timeout, true, 1, Duration::ZERO, &mut rng),
            Decision::Retry { .. }
        ));
        assert_eq!(budget.available(), 20);
        assert!(matches!(
            config.decide(&Verdict::ServerError, true, 1, Duration::ZERO, &mut rng),
            Decision::Retry { .. }
        ));
        assert_eq!(budget.available(), 15);
        assert!(matches!(
            config.decide(&throttled(1), false, 1, Duration::ZERO, &mut rng),
            Decision::Retry { .. }
        ));
        assert_eq!(budget.available(), 10);
        config.decide(&Verdict::Success, true, 1, Duration::ZERO, &mut rng);
        assert_eq!(budget.available(), 11);
        for _ in 0..100 {
            config.decide(&Verdict::Success, true, 1, Duration::ZERO, &mut rng);
        }
        assert_eq!(budget.available(), 30);
    }

    #[test]
    fn give_up_reasons_display_short_lowercase() {
        assert_eq!(
            GiveUpReason::BudgetExhausted.to_string(),
            "retry budget exhausted"
        );
        assert_eq!(
            GiveUpReason::RetryAfterTooLong { retry_after: S(90) }.to_string(),
            "retry-after of 90s is too long"
        );
        assert_eq!(
            GiveUpReason::AttemptsExhausted { attempts: 3 }.to_string(),
            "gave up after 3 attempts"
        );
    }

    #[test]
    fn idempotent_methods_are_get_head_options_trace_put_delete() {
        for m in [
            Method::GET,
            Method::HEAD,
            Method::OPTIONS,
            Method::TRACE,
            Method::PUT,
            Method::DELETE,
        ] {
            assert!(method_is_idempotent(&m), "{m}");
        }
        for m in [Method::POST, Method::PATCH, Method::CONNECT] {
            assert!(!method_is_idempotent(&m), "{m}");
        }
    }
}
