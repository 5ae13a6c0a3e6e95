//! Live feedback on stderr, and only when stderr is a terminal, so pipes and files stay
//! clean: a status line for waits (an audit job, an AI answer) and a counter with a rate
//! for downloads.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

fn bar(template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A spinner with a message that says what is being waited for.
pub fn status(message: impl Into<String>) -> ProgressBar {
    let bar = bar("{spinner} {msg} · {elapsed}");
    bar.set_message(message.into());
    bar
}

/// A download's byte count and rate.
pub fn bytes(message: impl Into<String>) -> ProgressBar {
    let bar = bar("{spinner} {msg}: {bytes} ({bytes_per_sec}) · {elapsed}");
    bar.set_message(message.into());
    bar
}

/// A download's item count and rate.
pub fn items(message: impl Into<String>) -> ProgressBar {
    let bar = bar("{spinner} {msg}: {pos} events ({per_sec}) · {elapsed}");
    bar.set_message(message.into());
    bar
}

/// `mm:ss` (or `h:mm:ss`).
pub fn clock(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs >= 3600 {
        format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
    } else {
        format!("{:02}:{:02}", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_minutes_and_seconds() {
        assert_eq!(clock(Duration::from_secs(0)), "00:00");
        assert_eq!(clock(Duration::from_secs(119)), "01:59");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
    }
}
