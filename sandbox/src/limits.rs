//! Per-token request limits (reference 8) on the sandbox clock, and the counters of requests
//! and violations tests assert on.

use super::config::LimitsConfig;
use super::dates::DAY_MS;
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
    /// AI: daily quota used up (429).
    AiOverRate,
    /// An audit job polled sooner than the minimum interval after the previous poll.
    AuditPollTooSoon,
    /// The events list polled sooner than the minimum interval after catching up.
    EventsPollTooSoon,
}

/// Why a request was throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// The per-second window is full.
    OverQps {
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
            Throttle::OverQps { .. } => "ERR_403_DEVELOPER_OVER_QPS",
            Throttle::OverRate { .. } => "ERR_403_DEVELOPER_OVER_RATE",
        }
    }

    /// The `Retry-After` value.
    pub fn retry_after(self) -> u64 {
        match self {
            Throttle::OverQps { retry_after } | Throttle::OverRate { retry_after } => retry_after,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Windows {
    second: i64,
    in_second: u32,
    day: i64,
    in_day: u32,
}

/// The windows of every token, per limit class.
#[derive(Debug, Default)]
pub struct LimitState {
    windows: HashMap<(String, bool), Windows>,
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
        let (per_second, per_day) = if ai {
            (limits.ai_per_second, limits.ai_per_day)
        } else {
            (limits.general_per_second, limits.general_per_day)
        };
        let w = self.windows.entry((token.to_string(), ai)).or_default();
        let second = now_ms.div_euclid(1000);
        let day = now_ms.div_euclid(DAY_MS);
        if w.second != second {
            w.second = second;
            w.in_second = 0;
        }
        if w.day != day {
            w.day = day;
            w.in_day = 0;
        }
        if per_day.is_some_and(|limit| w.in_day >= limit) {
            let left_ms = (day + 1) * DAY_MS - now_ms;
            return Err(Throttle::OverRate {
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
        w.in_day += 1;
        Ok(())
    }
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
        let mut state = LimitState::default();
        let limits = LimitsConfig {
            general_per_day: Some(3),
            ..LimitsConfig::reference()
        };
        for i in 0..3 {
            assert!(state.admit("t", false, T0 + i * 1000, &limits).is_ok());
        }
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
    fn ai_budget_is_separate_and_has_no_per_second_limit_by_default() {
        let mut state = LimitState::default();
        let limits = LimitsConfig {
            ai_per_day: Some(5),
            ..LimitsConfig::reference()
        };
        for _ in 0..5 {
            assert!(state.admit("t", true, T0, &limits).is_ok());
        }
        assert!(matches!(
            state.admit("t", true, T0, &limits),
            Err(Throttle::OverRate { .. })
        ));
        assert!(state.admit("t", false, T0, &limits).is_ok());
    }
}
