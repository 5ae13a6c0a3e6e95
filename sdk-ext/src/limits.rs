//! The request budgets of one access token, how the client paces itself within them, and
//! what is left of them.
//!
//! Limits apply per access token. The reference gives 2 requests per second
//! and 1,000 per day for the general API, and 100 per day for the AI API
//! (whose per-second and per-minute values are not shown; the platform's own
//! command-line tool keeps to 10 AI calls a minute, so that is the default).
//! Other plans may differ, so the numbers are configuration ([`Limits`], given to
//! [`ClientBuilder::limits`](crate::ClientBuilder::limits)) with these values as the default.
//!
//! The client books each request a start in every rolling window (second, minute, day) before
//! sending it, spread as [`Pacing`] says, shared by every client of the token in the process
//! (or in a [fleet](crate::fleet)). [`Client::quota`](crate::Client::quota) shows what is
//! left as a [`Quota`]; a request that finds no slot in time fails with
//! [`Error::QuotaExhausted`](crate::Error::QuotaExhausted) or
//! [`Error::Timeout`](crate::Error::Timeout) without being sent.
//!
//! This module is a leaf: the client's pacer and the fleet's stores both depend on it, and it
//! on neither.

use std::fmt;
use std::time::Duration;

/// The window of a [`Budget`]'s `per_minute`.
pub(crate) const MINUTE: Duration = Duration::from_secs(60);

pub use pubapi_sdk::operations::LimitClass;

/// How many requests may start in any rolling window. `None` means the
/// window is not limited. `Some(0)` allows no requests at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// At most this many requests start in any rolling second.
    pub per_second: Option<u32>,
    /// At most this many requests start in any rolling minute.
    pub per_minute: Option<u32>,
    /// At most this many requests start in any rolling hour (the token endpoint's windows).
    pub per_hour: Option<u32>,
    /// At most this many requests start in any rolling 24 hours.
    pub per_day: Option<u32>,
}

impl Budget {
    /// A budget of `per_second` and `per_day`, with no per-minute window.
    pub const fn new(per_second: Option<u32>, per_day: Option<u32>) -> Self {
        Budget {
            per_second,
            per_minute: None,
            per_hour: None,
            per_day,
        }
    }

    /// The same budget with at most `per_hour` starts in any rolling hour.
    pub const fn with_per_hour(mut self, per_hour: Option<u32>) -> Self {
        self.per_hour = per_hour;
        self
    }

    /// The same budget with at most `per_minute` starts in any rolling minute.
    pub const fn with_per_minute(mut self, per_minute: Option<u32>) -> Self {
        self.per_minute = per_minute;
        self
    }
}

/// `2 per second, 1000 per day`: each limited window, shortest first; `unlimited` when none
/// is (what a [`BudgetConflict`] names).
impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let windows = [
            (self.per_second, "second"),
            (self.per_minute, "minute"),
            (self.per_hour, "hour"),
            (self.per_day, "day"),
        ];
        let mut separator = "";
        for (limit, window) in windows {
            if let Some(limit) = limit {
                write!(f, "{separator}{limit} per {window}")?;
                separator = ", ";
            }
        }
        if separator.is_empty() {
            f.write_str("unlimited")?;
        }
        Ok(())
    }
}

/// The budgets of one token, by [`LimitClass`].
///
/// ```
/// use pubapi_sdk_ext::limits::{Budget, LimitClass, Limits};
///
/// let limits = Limits::default();
/// assert_eq!(limits.budget(LimitClass::General), Budget::new(Some(2), Some(1000)));
///
/// // A plan with a larger AI allowance:
/// let limits = Limits { ai: Budget::new(Some(1), Some(500)), ..Limits::default() };
/// assert_eq!(limits.budget(LimitClass::Ai).per_day, Some(500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The general API: 2 per second and 1,000 per day by default.
    pub general: Budget,
    /// The AI API: 100 per day and 10 per minute by default, no per-second
    /// limit (the reference does not show one).
    pub ai: Budget,
}

impl Limits {
    /// The budget of `class`.
    pub fn budget(&self, class: LimitClass) -> Budget {
        match class {
            LimitClass::General => self.general,
            LimitClass::Ai => self.ai,
        }
    }
}

/// `general 2 per second, 1000 per day; ai 10 per minute, 100 per day`.
impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "general {}; ai {}", self.general, self.ai)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            general: Budget::new(Some(2), Some(1000)),
            ai: Budget::new(None, Some(100)).with_per_minute(Some(10)),
        }
    }
}

/// How starts are spread inside the budget, and how much slack the windows
/// keep for requests that leave late (see [`ClientBuilder::pacing`](crate::ClientBuilder::pacing)).
///
/// The gateway counts arrivals, not the client's starts, and a request can leave later
/// than its slot (a new connection, a TLS handshake, a busy runtime). So every
/// window is kept [`Pacing::margin`] longer than the gateway's, starts are
/// spread evenly by default (at 2 per second, one every 550 ms rather than two
/// at once each second), and a request is counted from when it actually leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Every window is kept this much longer than the gateway's: a request may
    /// reach the gateway up to this much later (relative to the others) than
    /// it was counted without breaking a window. Default
    /// [`Pacing::DEFAULT_MARGIN`].
    pub margin: Duration,
    /// Let up to the per-second budget start at once (`true`), or spread
    /// starts evenly, one every `(1 s + margin) / per_second` (`false`, the
    /// default).
    pub burst: bool,
}

impl Pacing {
    /// 100 ms. Measured on loopback, a new connection delays a request by
    /// about 0.3 ms and the issue's runs saw the third request of a client
    /// arrive 0.1 to 6 ms early against pair booking; a TLS handshake to a
    /// gateway in the same region costs one to two round trips (10 to 60 ms).
    /// 100 ms covers that with room, and costs 9 % of the nominal rate at 2
    /// per second (one start every 550 ms instead of 500 ms).
    pub const DEFAULT_MARGIN: Duration = Duration::from_millis(100);

    /// Even spacing with `margin`.
    pub const fn even(margin: Duration) -> Self {
        Pacing {
            margin,
            burst: false,
        }
    }

    /// How late a call may leave after its booked start, counted twice over: once for a
    /// fleet store's answer that arrives after the start it booked, once for a process that
    /// wakes after it. A quarter of the margin each (at least a millisecond): together half
    /// of it, and the other half is left for what happens after the call leaves (a new
    /// connection, a busy machine), so no window the margin keeps is crowded. Later than
    /// that, a start is given back and booked again.
    pub fn lateness_allowed(&self) -> Duration {
        (self.margin / 4).max(Duration::from_millis(1))
    }

    /// Bursts of up to the per-second budget, windows kept `margin` longer.
    pub const fn burst(margin: Duration) -> Self {
        Pacing {
            margin,
            burst: true,
        }
    }
}

/// `even starts with a 100ms margin` or `bursts with a 100ms margin`.
impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.burst { "bursts" } else { "even starts" };
        write!(
            f,
            "{how} with a {} margin",
            crate::time::HumanDuration(self.margin)
        )
    }
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::even(Pacing::DEFAULT_MARGIN)
    }
}

/// Two clients of one token in one process asked for different pacing: the pacer of a token
/// is shared by every client of it (the gateway counts the token's calls, not a client's), so
/// the second client's settings could not take effect. Returned by
/// [`ClientBuilder::build`](crate::ClientBuilder::build) (or, for a token source that has no
/// token before the first call, by that call as [`crate::error::InputError::BudgetConflict`]).
///
/// Build every client of a token with the same [`Limits`], [`Pacing`] and fleet, or give the
/// one that differs a pacer of its own with
/// [`ClientBuilder::isolated_budget`](crate::ClientBuilder::isolated_budget).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetConflict {
    /// What differs: `limits`, `pacing` or `fleet`.
    pub setting: &'static str,
    /// What the token's pacer already has.
    pub existing: String,
    /// What this client asked for.
    pub requested: String,
}

impl fmt::Display for BudgetConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "another client of this token in the process already paces it with {} {}, and \
             this client asks for {}: build every client of a token with the same limits, \
             pacing and fleet, or give this one a budget of its own with isolated_budget()",
            self.setting, self.existing, self.requested
        )
    }
}

impl std::error::Error for BudgetConflict {}

/// A snapshot of one class's budget, from [`Client::quota`](crate::Client::quota): what the
/// token's pacer has counted, with the gateway's own counters when a response carried them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Requests started or booked in the last 24 h (or counted by the
    /// server, when it counted more); `None` without a daily budget.
    pub used_today: Option<u32>,
    /// `per_day - used_today`; `None` without a daily budget.
    pub remaining_today: Option<u32>,
    /// The daily budget.
    pub per_day: Option<u32>,
    /// How long a request made now would wait (`Duration::MAX` when the
    /// budget allows nothing).
    pub next_slot_in: Duration,
    /// The gateway's counters from the last response that had them.
    pub server: Option<ServerCounters>,
}

/// The gateway's own counters, from the `x-accesstoken-*` response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// `x-accesstoken-qps-allotted`.
    pub qps_allotted: Option<u32>,
    /// `x-accesstoken-qps-current`.
    pub qps_current: Option<u32>,
    /// `x-accesstoken-quota-allotted`: the daily quota.
    pub quota_allotted: Option<u32>,
    /// `x-accesstoken-quota-current`: calls counted today.
    pub quota_current: Option<u32>,
}

impl ServerCounters {
    /// Reads the counters from response headers; `None` when none is there.
    pub(crate) fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        if !headers
            .keys()
            .any(|k| k.as_str().starts_with("x-accesstoken-"))
        {
            return None;
        }
        let read = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u32>().ok())
        };
        let counters = ServerCounters {
            qps_allotted: read("x-accesstoken-qps-allotted"),
            qps_current: read("x-accesstoken-qps-current"),
            quota_allotted: read("x-accesstoken-quota-allotted"),
            quota_current: read("x-accesstoken-quota-current"),
        };
        (counters != ServerCounters::default()).then_some(counters)
    }
}

/// Why the pacer gave no slot to a request, which was then not sent.
///
/// The client reports it as [`Error::QuotaExhausted`](crate::Error::QuotaExhausted) (a long
/// window or the budget), [`Error::Timeout`](crate::Error::Timeout) (the per-second
/// queue) or [`Error::FleetUnavailable`](crate::Error::FleetUnavailable) (the fleet's store);
/// the token endpoint's pacer ([`crate::TokenPacer`]) returns it as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// The daily budget (or a block the server asked for) leaves no slot
    /// within the wait allowed. Nothing was booked.
    DailyBudgetExhausted {
        /// The exhausted class.
        class: LimitClass,
        /// When the next slot opens.
        available_in: Duration,
    },
    /// The per-second queue is longer than the wait allowed. Nothing was
    /// booked.
    WouldExceedDeadline {
        /// The class queued for.
        class: LimitClass,
        /// How long the wait would have been.
        wait: Duration,
        /// The wait that was allowed.
        max_wait: Duration,
    },
    /// The configured budget of the class allows no request at all.
    NoBudget {
        /// The class without budget.
        class: LimitClass,
    },
    /// The fleet's store (see [`crate::fleet`]) could not be reached within the wait
    /// allowed, and the fleet sends nothing the store did not grant (no
    /// [`Fleet::fallback_share`](crate::fleet::Fleet::fallback_share)). Nothing was sent.
    StoreUnavailable {
        /// The class the call waited for.
        class: LimitClass,
        /// How long it waited for the store.
        waited: Duration,
        /// The store's last failure.
        error: crate::fleet_error::FleetError,
    },
}

impl LimitError {
    /// The earliest slot is `wait` away, more than `max_wait`; `long_wait` of it is owed to
    /// the long windows (day, hour, minute) and server blocks.
    pub(crate) fn too_far(
        class: LimitClass,
        wait: Duration,
        long_wait: Duration,
        max_wait: Duration,
    ) -> Self {
        if long_wait > max_wait {
            LimitError::DailyBudgetExhausted {
                class,
                available_in: wait,
            }
        } else {
            LimitError::WouldExceedDeadline {
                class,
                wait,
                max_wait,
            }
        }
    }
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::DailyBudgetExhausted {
                class,
                available_in,
            } => write!(
                f,
                "daily {class} budget exhausted, next slot in {}",
                crate::time::HumanDuration(*available_in)
            ),
            LimitError::WouldExceedDeadline {
                class,
                wait,
                max_wait,
            } => write!(
                f,
                "{class} slot is {} away, more than the {} allowed",
                crate::time::HumanDuration(*wait),
                crate::time::HumanDuration(*max_wait)
            ),
            LimitError::NoBudget { class } => write!(f, "no {class} budget configured"),
            LimitError::StoreUnavailable {
                class,
                waited,
                error,
            } => write!(
                f,
                "no {class} slot: the fleet's budget store did not answer in {} ({error})",
                crate::time::HumanDuration(*waited)
            ),
        }
    }
}

impl std::error::Error for LimitError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_reference_values() {
        let limits = Limits::default();
        assert_eq!(limits.general, Budget::new(Some(2), Some(1000)));
        assert_eq!(
            limits.ai,
            Budget::new(None, Some(100)).with_per_minute(Some(10))
        );
    }

    #[test]
    fn budget_picks_the_class() {
        let limits = Limits {
            general: Budget::new(Some(5), None),
            ai: Budget::new(Some(1), Some(7)),
        };
        assert_eq!(limits.budget(LimitClass::General).per_second, Some(5));
        assert_eq!(limits.budget(LimitClass::Ai).per_day, Some(7));
    }

    /// What a [`BudgetConflict`] names: the settings in words, not Rust's `Debug`.
    #[test]
    fn limits_and_pacing_display_in_words() {
        assert_eq!(
            Limits::default().to_string(),
            "general 2 per second, 1000 per day; ai 10 per minute, 100 per day"
        );
        assert_eq!(
            Budget::new(None, None).with_per_hour(Some(100)).to_string(),
            "100 per hour"
        );
        assert_eq!(Budget::new(None, None).to_string(), "unlimited");
        assert_eq!(
            Pacing::default().to_string(),
            "even starts with a 100ms margin"
        );
        assert_eq!(
            Pacing::burst(Duration::from_secs(1)).to_string(),
            "bursts with a 1s margin"
        );
    }

    #[test]
    fn class_displays_lowercase() {
        assert_eq!(LimitClass::General.to_string(), "general");
        assert_eq!(LimitClass::Ai.to_string(), "ai");
    }
}
