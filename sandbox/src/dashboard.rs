//! The dashboard: a page the sandbox serves at `/_sandbox/ui` (one HTML file with its script,
//! styles and charts inline, nothing fetched from elsewhere, nothing built), drawn from the
//! control plane's JSON, and the two control paths only it needed:
//!
//! - `GET /_sandbox/arrivals?buckets=N`: for each limit window (general per second and per
//!   day, AI per second, per minute and per day), the requests that arrived in each of the
//!   last `N` windows of the sandbox clock (default 30, at most 300), counted as the limiter
//!   counts them (fixed windows, per token): all of them, those of the busiest token, and
//!   those refused by the limits (`throttled`) and those a fault injection answered
//!   (`injected`, never counted as refused); with the window's limit (`null`: unlimited).
//! - `GET /_sandbox/audit`: the audit jobs, each with its kind, format and state (`running`
//!   until the sandbox clock reaches its ready time, then `completed`).
//!
//! Arrivals are read from the traffic log, so they cover the exchanges it keeps
//! ([`SandboxConfig::traffic_capacity`](crate::SandboxConfig::traffic_capacity)).

use super::Shared;
use super::dates::{DAY_MS, iso_millis};
use super::traffic::Exchange;
use pubapi_sdk::operations::{ALL, LimitClass};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The page, with its script and styles.
pub(crate) const PAGE: &str = include_str!("../ui/dashboard.html");

/// What the page may load and where it may connect: only its own inline script, styles and
/// images, and the control plane of its own origin.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Windows shown when `buckets` is not given, and the most that may be asked for.
const BUCKETS: (usize, usize) = (30, 300);

/// One limit window of one class.
struct Window {
    class: &'static str,
    ai: bool,
    name: &'static str,
    ms: i64,
    limit: Option<u32>,
}

/// `GET /_sandbox/arrivals`.
pub(crate) fn arrivals(shared: &Shared, query: &[(String, String)]) -> Result<Value, String> {
    let mut buckets = BUCKETS.0;
    for (name, value) in query {
        match name.as_str() {
            "buckets" => {
                buckets = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=BUCKETS.1).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "buckets `{value}` is not a whole number from 1 to {}",
                            BUCKETS.1
                        )
                    })?;
            }
            other => return Err(format!("no query parameter `{other}` (buckets)")),
        }
    }
    let now = shared.now();
    let (limits, traffic): (_, Vec<Exchange>) = {
        let world = shared.world();
        (world.limits_config, world.traffic.iter().cloned().collect())
    };
    let windows = [
        Window {
            class: "general",
            ai: false,
            name: "second",
            ms: 1000,
            limit: limits.general_per_second,
        },
        Window {
            class: "general",
            ai: false,
            name: "day",
            ms: DAY_MS,
            limit: limits.general_per_day,
        },
        Window {
            class: "ai",
            ai: true,
            name: "second",
            ms: 1000,
            limit: limits.ai_per_second,
        },
        Window {
            class: "ai",
            ai: true,
            name: "minute",
            ms: 60_000,
            limit: limits.ai_per_minute,
        },
        Window {
            class: "ai",
            ai: true,
            name: "day",
            ms: DAY_MS,
            limit: limits.ai_per_day,
        },
    ];
    let windows: Vec<Value> = windows
        .iter()
        .map(|window| window_json(window, &traffic, now, buckets))
        .collect();
    Ok(json!({ "now": iso_millis(now), "nowMs": now, "windows": windows }))
}

/// Whether `exchange` was an operation of the AI limit class, or `None` outside the spec.
fn is_ai(exchange: &Exchange) -> Option<bool> {
    let id = exchange.operation?;
    ALL.iter()
        .find(|op| op.id == id)
        .map(|op| op.limit_class == LimitClass::Ai)
}

/// Whether the limits refused `exchange` (the gateway's over-QPS or over-rate code); an
/// injected fault that answers with the same code is the test's, not the limits'.
fn throttled(exchange: &Exchange) -> bool {
    !exchange.fault
        && exchange
            .header("x-gateway-error-code")
            .is_some_and(|code| code.starts_with("ERR_403_DEVELOPER_OVER"))
}

fn window_json(window: &Window, traffic: &[Exchange], now: i64, buckets: usize) -> Value {
    let last = now.div_euclid(window.ms);
    let first = last - (buckets as i64 - 1);
    // Per window: arrivals by token user, and the refused ones.
    let mut counted: BTreeMap<i64, (BTreeMap<&str, u64>, u64, u64)> = BTreeMap::new();
    for exchange in traffic {
        let (Some(ai), Some(user)) = (is_ai(exchange), exchange.token_user.as_deref()) else {
            continue;
        };
        let at = exchange.at_ms.div_euclid(window.ms);
        if ai != window.ai || at < first || at > last {
            continue;
        }
        let (users, refused, injected) = counted.entry(at).or_default();
        *users.entry(user).or_default() += 1;
        if throttled(exchange) {
            *refused += 1;
        }
        if exchange.fault {
            *injected += 1;
        }
    }
    let buckets: Vec<Value> = (first..=last)
        .map(|at| {
            let start = at * window.ms;
            let (users, refused, injected) = counted.remove(&at).unwrap_or_default();
            let busiest = users
                .iter()
                .max_by_key(|(user, n)| (**n, std::cmp::Reverse(**user)));
            json!({
                "start": iso_millis(start),
                "startMs": start,
                "arrivals": users.values().sum::<u64>(),
                "busiest": busiest.map_or(0, |(_, n)| *n),
                "busiestUser": busiest.map(|(user, _)| *user),
                "throttled": refused,
                "injected": injected,
            })
        })
        .collect();
    json!({
        "class": window.class,
        "window": window.name,
        "windowMs": window.ms,
        "limit": window.limit,
        "buckets": buckets,
    })
}

/// `GET /_sandbox/audit`.
pub(crate) fn audit_jobs(shared: &Shared) -> Value {
    let now = shared.now();
    let world = shared.world();
    let jobs: Vec<Value> = world
        .audit
        .jobs
        .iter()
        .map(|job| {
            json!({
                "id": job.id,
                "kind": job.kind,
                "format": job.format,
                "state": if now >= job.ready_ms { "completed" } else { "running" },
                "ready": iso_millis(job.ready_ms),
                "readyMs": job.ready_ms,
                "lastPoll": job.last_poll_ms.map(iso_millis),
            })
        })
        .collect();
    json!({ "jobs": jobs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_fetches_nothing_from_elsewhere() {
        for external in ["http://", "https://", "//cdn", "src=\"", "@import", "url("] {
            assert!(
                !PAGE.contains(external) || external == "http://" && only_svg_namespace(PAGE),
                "the page names {external}"
            );
        }
    }

    /// `http://` appears only as the SVG namespace (which is a name, not a fetch).
    fn only_svg_namespace(page: &str) -> bool {
        page.matches("http://").count() == page.matches("http://www.w3.org/2000/svg").count()
    }
}
