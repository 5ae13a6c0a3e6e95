//! The sandbox clock: every state machine of the sandbox (audit jobs, limits windows, event
//! retention, webhook retries, poll intervals) reads time here, never from the wall clock.
//!
//! The clock runs at `scale` times real time (1.0 by default; 0.0 freezes it) from a start
//! instant, plus whatever tests added with [`SandboxClock::advance`]. Real elapsed time comes
//! from tokio's clock, so tests with paused tokio time see a paused sandbox too.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How the sandbox clock starts and runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockConfig {
    /// Starts at the current wall-clock time and runs at `scale` times real time (1.0 is
    /// real time, 120.0 makes a real second two sandbox minutes).
    Real {
        /// Sandbox milliseconds per real millisecond.
        scale: f64,
    },
    /// Starts at `start_ms` (epoch milliseconds) and stands still until advanced.
    Manual {
        /// The start instant, epoch milliseconds.
        start_ms: i64,
    },
}

impl ClockConfig {
    /// Real time (scale 1).
    pub fn real() -> Self {
        ClockConfig::Real { scale: 1.0 }
    }

    /// Real time sped up `scale` times.
    pub fn scaled(scale: f64) -> Self {
        ClockConfig::Real { scale }
    }

    /// A frozen clock at 2025-03-03T09:00:00Z, moved only by [`SandboxClock::advance`].
    pub fn manual() -> Self {
        ClockConfig::Manual {
            start_ms: MANUAL_START_MS,
        }
    }
}

impl Default for ClockConfig {
    fn default() -> Self {
        ClockConfig::real()
    }
}

/// Why the sandbox clock cannot be set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockError {
    /// The time asked for is before the sandbox's now.
    Backwards {
        /// The sandbox's now, epoch milliseconds.
        now_ms: i64,
        /// The time asked for, epoch milliseconds.
        asked_ms: i64,
    },
    /// The time asked for is after the clock's end, [`MAX_MS`].
    PastTheEnd {
        /// The time asked for, epoch milliseconds (or how far ahead, for an advance).
        asked_ms: i64,
    },
}

impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockError::Backwards { now_ms, asked_ms } => write!(
                f,
                "the sandbox clock only moves forward: it is {}, {} is {} ms earlier",
                crate::iso_millis(*now_ms),
                crate::iso_millis(*asked_ms),
                now_ms.saturating_sub(*asked_ms)
            ),
            ClockError::PastTheEnd { asked_ms } => write!(
                f,
                "the sandbox clock ends at {}: {asked_ms} ms is past it",
                crate::iso_millis(MAX_MS)
            ),
        }
    }
}

impl std::error::Error for ClockError {}

/// 9999-12-31T23:59:59.999Z, the clock's end: the last instant a date of the API can name.
/// The clock stops there, however far it is advanced or however fast it runs, so that every
/// instant the sandbox computes from its now (windows, jobs, retries, expiries) fits.
pub const MAX_MS: i64 = 253_402_300_799_999;

/// 0000-01-01T00:00:00Z, the earliest instant a manual clock starts at.
pub const MIN_MS: i64 = -62_167_219_200_000;

/// The largest speed of the clock (sandbox milliseconds per real millisecond): a real second
/// is then 11.5 sandbox days.
pub const MAX_SCALE: f64 = 1_000_000.0;

/// `now_ms` moved `by` later, saturating (durations of any size from a configuration).
pub(crate) fn later(now_ms: i64, by: Duration) -> i64 {
    now_ms.saturating_add(millis(by))
}

/// `now_ms` moved `by` earlier, saturating.
pub(crate) fn earlier(now_ms: i64, by: Duration) -> i64 {
    now_ms.saturating_sub(millis(by))
}

/// A duration in whole milliseconds, saturating at `i64::MAX`.
pub(crate) fn millis(by: Duration) -> i64 {
    i64::try_from(by.as_millis()).unwrap_or(i64::MAX)
}

/// 2025-03-03T09:00:00Z, the start of a manual clock.
pub const MANUAL_START_MS: i64 = 1_740_992_400_000;

#[derive(Debug)]
struct State {
    /// Sandbox time at `base_real`.
    base_ms: f64,
    base_real: Instant,
    scale: f64,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    changed: Notify,
}

/// The injectable, advanceable clock shared by every part of one sandbox.
#[derive(Debug, Clone)]
pub struct SandboxClock {
    inner: Arc<Inner>,
}

impl SandboxClock {
    /// A clock configured by `config`; `wall_now_ms` is the wall-clock time used by
    /// [`ClockConfig::Real`].
    pub fn new(config: ClockConfig, wall_now_ms: i64) -> Self {
        let (start, scale) = match config {
            ClockConfig::Real { scale } => (wall_now_ms, sanitize(scale)),
            ClockConfig::Manual { start_ms } => (start_ms, 0.0),
        };
        let start = start.clamp(MIN_MS, MAX_MS);
        SandboxClock {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    base_ms: start as f64,
                    base_real: Instant::now(),
                    scale,
                }),
                changed: Notify::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sandbox time, epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        let state = self.state();
        now_of(&state) as i64
    }

    /// Moves the clock forward by `by` (wakes every timer that became due), at most to
    /// [`MAX_MS`].
    pub fn advance(&self, by: Duration) {
        {
            let mut state = self.state();
            state.base_ms = (state.base_ms + by.as_millis() as f64).min(MAX_MS as f64);
        }
        self.inner.changed.notify_waiters();
    }

    /// The current speed (sandbox milliseconds per real millisecond).
    pub fn scale(&self) -> f64 {
        self.state().scale
    }

    /// Changes the speed from now on (0 freezes the clock; at most [`MAX_SCALE`]).
    pub fn set_scale(&self, scale: f64) {
        {
            let mut state = self.state();
            let now = now_of(&state);
            state.base_ms = now;
            state.base_real = Instant::now();
            state.scale = sanitize(scale);
        }
        self.inner.changed.notify_waiters();
    }

    /// Waits until the sandbox time reaches `deadline_ms` (real sleeps at the current scale,
    /// woken early by [`advance`](Self::advance) and [`set_scale`](Self::set_scale)).
    pub async fn sleep_until(&self, deadline_ms: i64) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (now, scale) = {
                let state = self.state();
                (now_of(&state), state.scale)
            };
            if now >= deadline_ms as f64 {
                return;
            }
            if scale > 0.0 {
                let real_ms = ((deadline_ms as f64 - now) / scale).ceil().max(1.0);
                let real = Duration::from_micros((real_ms * 1000.0).min(1e15) as u64);
                tokio::select! {
                    () = tokio::time::sleep(real) => {}
                    () = &mut changed => {}
                }
            } else {
                changed.await;
            }
        }
    }
}

fn now_of(state: &State) -> f64 {
    let real = state.base_real.elapsed().as_secs_f64() * 1000.0;
    (state.base_ms + real * state.scale).min(MAX_MS as f64)
}

fn sanitize(scale: f64) -> f64 {
    if scale.is_finite() && scale > 0.0 {
        scale.min(MAX_SCALE)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn manual_clock_moves_only_when_advanced() {
        let clock = SandboxClock::new(ClockConfig::manual(), 0);
        assert_eq!(clock.now_ms(), MANUAL_START_MS);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(clock.now_ms(), MANUAL_START_MS);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now_ms(), MANUAL_START_MS + 90_000);
    }

    #[tokio::test(start_paused = true)]
    async fn scaled_clock_runs_faster_than_real_time() {
        let clock = SandboxClock::new(ClockConfig::scaled(120.0), 1_000_000);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(clock.now_ms(), 1_000_000 + 120_000);
    }

    #[tokio::test(start_paused = true)]
    async fn the_clock_stops_at_its_end_however_far_or_fast_it_goes() {
        let clock = SandboxClock::new(ClockConfig::manual(), 0);
        clock.advance(Duration::MAX);
        assert_eq!(clock.now_ms(), MAX_MS);
        clock.advance(Duration::from_millis(u64::MAX));
        assert_eq!(clock.now_ms(), MAX_MS);
        let fast = SandboxClock::new(ClockConfig::scaled(1e308), 0);
        assert_eq!(fast.scale(), MAX_SCALE);
        fast.set_scale(f64::MAX);
        tokio::time::sleep(Duration::from_secs(86_400 * 365 * 10)).await;
        assert_eq!(fast.now_ms(), MAX_MS);
        let early = SandboxClock::new(ClockConfig::Manual { start_ms: i64::MIN }, 0);
        assert_eq!(early.now_ms(), MIN_MS);
        assert_eq!(later(MAX_MS, Duration::MAX), i64::MAX);
        assert_eq!(earlier(MIN_MS, Duration::MAX), i64::MIN);
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_until_wakes_on_advance() {
        let clock = SandboxClock::new(ClockConfig::manual(), 0);
        let waiter = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep_until(MANUAL_START_MS + 60_000).await })
        };
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(30));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        clock.advance(Duration::from_secs(30));
        waiter.await.unwrap();
    }
}
