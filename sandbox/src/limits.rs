//! Per-token request limits (reference 8) on the sandbox clock, and the counters of requests
//! and violations tests assert on.

use super::config::LimitsConfig;
use super::dates::DAY_MS;
use pubapi_sdk_ext::limits::{Budget, LimitClass};
use std::collections::{BTreeMap, HashMap};

/// A breach of a limit or of a polling rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Violation {
    /// General API: more than the per-second limit (403 `ERR_403_DEVELOPER_OVER_QPS`).
    OverQps,
    /// General API: daily quota used up (403 `ERR_403_DEVELOPER_OVER_RATE`).
    OverRate,
    /// AI: more than the per-second limit (429).
    AiOverQps,
    /// AI: more than the per-minute limit (429 `ERR_403_DEVELOPER_OVER_QPS`).
    AiOverMinute,
    /// AI: daily quota used up (429).
    AiOverRate,
    /// An audit job polled sooner than the minimum interval after the previous poll.
    AuditPollTooSoon,
    /// The events list polled sooner than the minimum interval after catching up.
    EventsPollTooSoon,
    /// A call with a token deactivated through the control plane (403
    /// `ERR_403_DEVELOPER_INACTIVE`).
    InactiveToken,
    /// The token endpoint asked more often than its hourly limit (409).
    TokenEndpointOverRate,
}

impl Violation {
    /// Every kind, in order.
    pub const ALL: [Violation; 9] = [
        Violation::OverQps,
        Violation::OverRate,
        Violation::AiOverQps,
        Violation::AiOverMinute,
        Violation::AiOverRate,
        Violation::AuditPollTooSoon,
        Violation::EventsPollTooSoon,
        Violation::InactiveToken,
        Violation::TokenEndpointOverRate,
    ];

    /// The kind's name over HTTP (`GET /_sandbox/counters`): `overQps`, `aiOverMinute`, ...
    pub fn name(self) -> &'static str {
        match self {
            Violation::OverQps => "overQps",
            Violation::OverRate => "overRate",
            Violation::AiOverQps => "aiOverQps",
            Violation::AiOverMinute => "aiOverMinute",
            Violation::AiOverRate => "aiOverRate",
            Violation::AuditPollTooSoon => "auditPollTooSoon",
            Violation::EventsPollTooSoon => "eventsPollTooSoon",
            Violation::InactiveToken => "inactiveToken",
            Violation::TokenEndpointOverRate => "tokenEndpointOverRate",
        }
    }

    /// The rule the kind breaks, in words a client's author can act on.
    pub fn rule(self) -> &'static str {
        match self {
            Violation::OverQps => {
                "general API: at most the per-second limit per token (the reference says 2)"
            }
            Violation::OverRate => {
                "general API: at most the daily quota per token (the reference says 1,000)"
            }
            Violation::AiOverQps => "AI: at most the per-second limit per token",
            Violation::AiOverMinute => {
                "AI: at most the per-minute limit per token (the platform's clients keep to 10)"
            }
            Violation::AiOverRate => {
                "AI: at most the daily quota per token (the reference says 100)"
            }
            Violation::AuditPollTooSoon => {
                "audit: poll a job no sooner than the minimum interval (2 minutes)"
            }
            Violation::EventsPollTooSoon => {
                "events: once caught up, poll no sooner than the minimum interval (5 minutes)"
            }
            Violation::InactiveToken => "a deactivated token must not be used again",
            Violation::TokenEndpointOverRate => {
                "token endpoint: 100 per hour for public applications, 10 per user per hour \
                 for internal ones"
            }
        }
    }
}

/// Why a request was throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// The per-second window is full.
    OverQps {
        /// Seconds until the window resets.
        retry_after: u64,
    },
    /// The per-minute window is full (AI).
    MinuteFull {
        /// Seconds until the window resets.
        retry_after: u64,
    },
    /// The daily window is full.
    OverRate {
        /// Seconds until the window resets.
        retry_after: u64,
    },
}

impl Throttle {
    /// The `X-Gateway-Error-Code` value.
    pub fn gateway_code(self) -> &'static str {
        match self {
            // A minute's window is a short one: the gateway's spike code, retried after
            // `Retry-After`, not a quota.
            Throttle::OverQps { .. } | Throttle::MinuteFull { .. } => "ERR_403_DEVELOPER_OVER_QPS",
            Throttle::OverRate { .. } => "ERR_403_DEVELOPER_OVER_RATE",
        }
    }

    /// The `Retry-After` value.
    pub fn retry_after(self) -> u64 {
        match self {
            Throttle::OverQps { retry_after }
            | Throttle::MinuteFull { retry_after }
            | Throttle::OverRate { retry_after } => retry_after,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Windows {
    second: i64,
    in_second: u32,
    minute: i64,
    in_minute: u32,
    day: i64,
    in_day: u32,
}

/// What the gateway reports on an answer: the `x-accesstoken-*` headers of the token's
/// class, counted after the request (a refused one does not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayCounters {
    /// The per-second limit (`x-accesstoken-qps-allotted`), when the class has one.
    pub qps_allotted: Option<u32>,
    /// Requests counted in the current second (`x-accesstoken-qps-current`).
    pub qps_current: u32,
    /// The daily quota (`x-accesstoken-quota-allotted`), when the class has one.
    pub quota_allotted: Option<u32>,
    /// Requests counted today (`x-accesstoken-quota-current`).
    pub quota_current: u32,
}

impl GatewayCounters {
    /// The headers, as the platform names them: a window without a limit is left out.
    pub fn headers(self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        if let Some(allotted) = self.qps_allotted {
            headers.push(("x-accesstoken-qps-allotted".into(), allotted.to_string()));
            headers.push((
                "x-accesstoken-qps-current".into(),
                self.qps_current.to_string(),
            ));
        }
        if let Some(allotted) = self.quota_allotted {
            headers.push(("x-accesstoken-quota-allotted".into(), allotted.to_string()));
            headers.push((
                "x-accesstoken-quota-current".into(),
                self.quota_current.to_string(),
            ));
        }
        headers
    }
}

/// The windows of every token, per limit class.
#[derive(Debug, Default)]
pub struct LimitState {
    windows: HashMap<(String, bool), Windows>,
}

/// The budget class `ai` selects.
fn class_of(ai: bool) -> LimitClass {
    if ai {
        LimitClass::Ai
    } else {
        LimitClass::General
    }
}

impl LimitState {
    /// Admits one request of `token` (`ai` selects the AI budget) at `now_ms`, or says why
    /// not. Refused requests do not use the budget.
    pub fn admit(
        &mut self,
        token: &str,
        ai: bool,
        now_ms: i64,
        limits: &LimitsConfig,
    ) -> Result<(), Throttle> {
        let Budget {
            per_second,
            per_minute,
            per_day,
            ..
        } = limits.budget(class_of(ai));
        let w = self.current(token, ai, now_ms);
        let (second, minute, day) = windows_of(now_ms);
        if per_day.is_some_and(|limit| w.in_day >= limit) {
            let left_ms = (day + 1) * DAY_MS - now_ms;
            return Err(Throttle::OverRate {
                retry_after: ceil_seconds(left_ms),
            });
        }
        if per_minute.is_some_and(|limit| w.in_minute >= limit) {
            let left_ms = (minute + 1) * MINUTE_MS - now_ms;
            return Err(Throttle::MinuteFull {
                retry_after: ceil_seconds(left_ms),
            });
        }
        if per_second.is_some_and(|limit| w.in_second >= limit) {
            let left_ms = (second + 1) * 1000 - now_ms;
            return Err(Throttle::OverQps {
                retry_after: ceil_seconds(left_ms),
            });
        }
        w.in_second += 1;
        w.in_minute += 1;
        w.in_day += 1;
        Ok(())
    }

    /// The gateway's counters of `token` in the class at `now_ms` (`ai` selects the AI
    /// budget).
    pub fn counters(
        &mut self,
        token: &str,
        ai: bool,
        now_ms: i64,
        limits: &LimitsConfig,
    ) -> GatewayCounters {
        let Budget {
            per_second,
            per_day,
            ..
        } = limits.budget(class_of(ai));
        let w = self.current(token, ai, now_ms);
        GatewayCounters {
            qps_allotted: per_second,
            qps_current: w.in_second,
            quota_allotted: per_day,
            quota_current: w.in_day,
        }
    }

    /// The windows of `token` in the class, those that ended started afresh.
    fn current(&mut self, token: &str, ai: bool, now_ms: i64) -> &mut Windows {
        let w = self.windows.entry((token.to_string(), ai)).or_default();
        let (second, minute, day) = windows_of(now_ms);
        if w.second != second {
            w.second = second;
            w.in_second = 0;
        }
        if w.minute != minute {
            w.minute = minute;
            w.in_minute = 0;
        }
        if w.day != day {
            w.day = day;
            w.in_day = 0;
        }
        w
    }
}

const MINUTE_MS: i64 = 60_000;

/// The second, minute and UTC day `now_ms` falls in.
fn windows_of(now_ms: i64) -> (i64, i64, i64) {
    (
        now_ms.div_euclid(1000),
        now_ms.div_euclid(MINUTE_MS),
        now_ms.div_euclid(DAY_MS),
    )
}

fn ceil_seconds(ms: i64) -> u64 {
    u64::try_from((ms + 999) / 1000).unwrap_or(1).max(1)
}

/// Counts of what happened in a sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests received (every request under `/pubapi`).
    pub requests: u64,
    /// Requests per operation id.
    pub by_operation: BTreeMap<String, u64>,
    /// Replies per status.
    pub by_status: BTreeMap<u16, u64>,
    /// Violations per kind.
    pub violations: BTreeMap<Violation, u64>,
    /// Faults injected.
    pub faults_injected: u64,
    /// Webhook delivery attempts made.
    pub delivery_attempts: u64,
    /// Delivery attempts answered 200.
    pub deliveries_succeeded: u64,
    /// Delivery attempts that failed.
    pub deliveries_failed: u64,
    /// Webhooks disabled after failing every attempt.
    pub webhooks_disabled: u64,
}

impl Counters {
    /// Violations of one kind.
    pub fn violations_of(&self, kind: Violation) -> u64 {
        self.violations.get(&kind).copied().unwrap_or(0)
    }

    /// Violations of every kind.
    pub fn total_violations(&self) -> u64 {
        self.violations.values().sum()
    }

    /// Requests to one operation (by operation id, e.g. `whoami`).
    pub fn requests_to(&self, operation_id: &str) -> u64 {
        self.by_operation.get(operation_id).copied().unwrap_or(0)
    }

    /// Replies with one status.
    pub fn replies_with(&self, status: u16) -> u64 {
        self.by_status.get(&status).copied().unwrap_or(0)
    }

    pub(crate) fn violation(&mut self, kind: Violation) {
        *self.violations.entry(kind).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_740_992_400_000; // a whole second, 09:00 UTC

    /// Token `t` after the `per_day` requests of its day's budget (of the AI class or the
    /// general one), the `i`th at `at(i)`, each admitted; with the limits it ran under.
    fn day_spent(ai: bool, per_day: u32, at: impl Fn(i64) -> i64) -> (LimitState, LimitsConfig) {
        let mut limits = LimitsConfig::reference();
        if ai {
            limits.ai_per_day = Some(per_day);
        } else {
            limits.general_per_day = Some(per_day);
        }
        let mut state = LimitState::default();
        for i in 0..i64::from(per_day) {
            assert!(state.admit("t", ai, at(i), &limits).is_ok(), "request {i}");
        }
        (state, limits)
    }

    #[test]
    fn per_second_window_resets_each_second() {
        let mut state = LimitState::default();
        let limits = LimitsConfig::reference();
        assert!(state.admit("t", false, T0, &limits).is_ok());
        assert!(state.admit("t", false, T0 + 10, &limits).is_ok());
        assert_eq!(
            state.admit("t", false, T0 + 500, &limits),
            Err(Throttle::OverQps { retry_after: 1 })
        );
        // Another token has its own budget.
        assert!(state.admit("u", false, T0 + 500, &limits).is_ok());
        assert!(state.admit("t", false, T0 + 1000, &limits).is_ok());
    }

    #[test]
    fn daily_quota_says_when_the_day_ends() {
        let (mut state, limits) = day_spent(false, 3, |i| T0 + i * 1000);
        let refused = state.admit("t", false, T0 + 5000, &limits).unwrap_err();
        assert_eq!(refused.gateway_code(), "ERR_403_DEVELOPER_OVER_RATE");
        // 09:00:05 to midnight is 14h 59m 55s.
        assert_eq!(refused.retry_after(), 15 * 3600 - 5);
        assert!(
            state
                .admit("t", false, T0 + 15 * 3_600_000, &limits)
                .is_ok()
        );
    }

    #[test]
    fn ai_minute_window_resets_each_minute_and_says_when() {
        let mut state = LimitState::default();
        let limits = LimitsConfig::reference();
        for i in 0..10 {
            assert!(state.admit("t", true, T0 + i * 1000, &limits).is_ok());
        }
        let refused = state.admit("t", true, T0 + 15_500, &limits).unwrap_err();
        assert_eq!(refused, Throttle::MinuteFull { retry_after: 45 });
        assert_eq!(refused.gateway_code(), "ERR_403_DEVELOPER_OVER_QPS");
        assert!(state.admit("t", true, T0 + 60_000, &limits).is_ok());
        // The general API has no minute window.
        for i in 0..30 {
            assert!(state.admit("t", false, T0 + i * 1000, &limits).is_ok());
        }
    }

    #[test]
    fn gateway_counters_count_admitted_requests_of_the_class() {
        let mut state = LimitState::default();
        let limits = LimitsConfig::reference();
        state.admit("t", false, T0, &limits).unwrap();
        state.admit("t", false, T0 + 10, &limits).unwrap();
        let _ = state.admit("t", false, T0 + 20, &limits);
        let counters = state.counters("t", false, T0 + 20, &limits);
        assert_eq!(
            counters.headers(),
            [
                ("x-accesstoken-qps-allotted".to_string(), "2".to_string()),
                ("x-accesstoken-qps-current".to_string(), "2".to_string()),
                (
                    "x-accesstoken-quota-allotted".to_string(),
                    "1000".to_string()
                ),
                ("x-accesstoken-quota-current".to_string(), "2".to_string()),
            ]
        );
        // The next second starts at 0; AI has no per-second limit to report.
        assert_eq!(
            state.counters("t", false, T0 + 1000, &limits).qps_current,
            0
        );
        assert_eq!(state.counters("t", true, T0, &limits).headers().len(), 2);
        assert!(
            state
                .counters("t", true, T0, &LimitsConfig::off())
                .headers()
                .is_empty()
        );
    }

    #[test]
    fn ai_budget_is_separate_and_has_no_per_second_limit_by_default() {
        let (mut state, limits) = day_spent(true, 5, |_| T0);
        assert!(matches!(
            state.admit("t", true, T0, &limits),
            Err(Throttle::OverRate { .. })
        ));
        assert!(state.admit("t", false, T0, &limits).is_ok());
    }
}
