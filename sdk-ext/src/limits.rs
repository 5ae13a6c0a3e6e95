//! The request budgets of one access token.
//!
//! Limits apply per access token. The reference gives 2 requests per second
//! and 1,000 per day for the general API, and 100 per day for the AI API
//! (whose per-second and per-minute values are not shown; the platform's own
//! command-line tool keeps to 10 AI calls a minute, so that is the default).
//! Other plans may differ, so the numbers are configuration with these values
//! as the default.

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

impl Default for Limits {
    fn default() -> Self {
        Limits {
            general: Budget::new(Some(2), Some(1000)),
            ai: Budget::new(None, Some(100)).with_per_minute(Some(10)),
        }
    }
}

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

    #[test]
    fn class_displays_lowercase() {
        assert_eq!(LimitClass::General.to_string(), "general");
        assert_eq!(LimitClass::Ai.to_string(), "ai");
    }
}
