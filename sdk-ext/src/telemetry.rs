//! The signals to operate a client with, besides the spans of `tracing`: metrics through the
//! [`metrics`](https://docs.rs/metrics) facade, behind the `metrics` feature. Without the
//! feature every function here is empty and compiles away.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `pubapi_requests_total` | counter | `operation`, `status` | calls that ended, by operationId and final status (`transport` when no answer came, `local` when refused before sending) |
//! | `pubapi_attempts_total` | counter | `operation`, `status` | every attempt, retries included |
//! | `pubapi_retries_total` | counter | `operation`, `reason` | retries, by what was retried (`throttled`, `server_error`, `transport`, `unauthorized`) |
//! | `pubapi_throttles_total` | counter | `code` | throttle answers, by gateway code (`ERR_403_DEVELOPER_OVER_QPS`, `…_OVER_RATE`, `unknown` for a code the SDK does not know, `none` for a 429 without one) |
//! | `http.client.request.duration` | histogram | `http.request.method`, `server.address`, `server.port`, `url.template`, `http.response.status_code`, `error.type` | seconds from sending an attempt to its answer's head (or its failure), as OpenTelemetry's HTTP client conventions name it; `error.type` is the status of an answer of 400 or more, or `timeout`, `connect`, `transport` |
//! | `pubapi_limiter_wait_seconds` | histogram | `class` | how long calls waited for their slot |
//! | `pubapi_fleet_store_seconds` | histogram | `class` | how long the fleet's budget store took to answer a booking |
//! | `pubapi_fleet_store_down_total` | counter | `reason` | times a process found the fleet's budget store down and paced on its share (`failed`, `slow`) |
//! | `pubapi_quota_remaining` | gauge | `class` | what the gateway's counters leave of the day (`x-accesstoken-quota-*`) |
//! | `pubapi_events_delivered_total` | counter | `version` | events an [`EventStream`](crate::events::EventStream) handed over |
//! | `pubapi_webhook_deliveries_total` | counter | `status` | deliveries the webhook receiver answered, by the status it answered (`200`, `401`, `413`, `500`, `503`) |
//! | `pubapi_webhook_duplicates_total` | counter | | events of deliveries left out as already handed over |
//!
//! Labels hold only values from closed sets the SDK defines: never a token, an act-as value,
//! a body, or text a server chose.

#[cfg(feature = "metrics")]
use metrics::{counter, gauge, histogram};
use std::time::Duration;

use crate::limits::LimitClass;

/// How a call or an attempt ended, as a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// An answer with this status.
    Status(u16),
    /// No answer arrived.
    Transport,
    /// Refused before anything was sent.
    Local,
}

impl Ended {
    /// The label: a static string for the statuses the reference documents (no allocation
    /// on a call's path), the number written out for any other.
    #[cfg(feature = "metrics")]
    fn label(self) -> std::borrow::Cow<'static, str> {
        let status = match self {
            Ended::Status(status) => status,
            Ended::Transport => return "transport".into(),
            Ended::Local => return "local".into(),
        };
        let known = match status {
            200 => "200",
            201 => "201",
            202 => "202",
            204 => "204",
            303 => "303",
            400 => "400",
            401 => "401",
            403 => "403",
            404 => "404",
            405 => "405",
            409 => "409",
            410 => "410",
            413 => "413",
            415 => "415",
            422 => "422",
            429 => "429",
            500 => "500",
            502 => "502",
            503 => "503",
            504 => "504",
            other => return other.to_string().into(),
        };
        known.into()
    }
}

/// A call ended.
pub(crate) fn request(operation: &'static str, ended: Ended) {
    count_ended("pubapi_requests_total", operation, ended);
}

/// An attempt ended.
pub(crate) fn attempt(operation: &'static str, ended: Ended) {
    count_ended("pubapi_attempts_total", operation, ended);
}

/// Adds one to the counter `name` of `operation`, labelled with how it ended.
fn count_ended(name: &'static str, operation: &'static str, ended: Ended) {
    #[cfg(feature = "metrics")]
    counter!(name, "operation" => operation, "status" => ended.label()).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, operation, ended);
}

/// An attempt is retried.
pub(crate) fn retry(operation: &'static str, reason: &'static str) {
    #[cfg(feature = "metrics")]
    counter!("pubapi_retries_total", "operation" => operation, "reason" => reason).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (operation, reason);
}

/// A throttle answer, by its gateway code (one of the SDK's, `unknown`, or `none`).
pub(crate) fn throttle(code: &'static str) {
    #[cfg(feature = "metrics")]
    counter!("pubapi_throttles_total", "code" => code).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = code;
}

/// An attempt of `operation` to `address`:`port` ended as `ended` after `took`
/// (`http.client.request.duration`, in seconds). Only with the feature: without it, the
/// policy does not even read the clock for it.
#[cfg(feature = "metrics")]
pub(crate) fn request_duration(
    operation: &'static pubapi_sdk::operations::Operation,
    address: &str,
    port: u16,
    ended: Ended,
    error_type: Option<&'static str>,
    took: Duration,
) {
    {
        let mut labels = vec![
            metrics::Label::new("http.request.method", operation.method),
            metrics::Label::new("server.address", address.to_owned()),
            metrics::Label::new("server.port", port.to_string()),
            metrics::Label::new("url.template", operation.path),
        ];
        if let Ended::Status(status) = ended {
            labels.push(metrics::Label::new(
                "http.response.status_code",
                ended.label(),
            ));
            if status >= 400 {
                labels.push(metrics::Label::new("error.type", ended.label()));
            }
        }
        if let Some(error_type) = error_type {
            labels.push(metrics::Label::new("error.type", error_type));
        }
        histogram!("http.client.request.duration", labels).record(took.as_secs_f64());
    }
}

/// A call waited this long for its slot.
pub(crate) fn limiter_wait(class: LimitClass, waited: Duration) {
    #[cfg(feature = "metrics")]
    histogram!("pubapi_limiter_wait_seconds", "class" => class.as_str())
        .record(waited.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (class.as_str(), waited);
}

/// The fleet's budget store answered a booking of `class` in this long.
pub(crate) fn fleet_store_answer(class: LimitClass, took: Duration) {
    #[cfg(feature = "metrics")]
    histogram!("pubapi_fleet_store_seconds", "class" => class.as_str()).record(took.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = (class.as_str(), took);
}

/// A process found the fleet's budget store down (`failed`) or too slow (`slow`).
pub(crate) fn fleet_store_down(reason: &'static str) {
    #[cfg(feature = "metrics")]
    counter!("pubapi_fleet_store_down_total", "reason" => reason).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = reason;
}

/// What the gateway's counters leave of the day.
pub(crate) fn quota_remaining(class: LimitClass, remaining: u32) {
    #[cfg(feature = "metrics")]
    gauge!("pubapi_quota_remaining", "class" => class.as_str()).set(f64::from(remaining));
    #[cfg(not(feature = "metrics"))]
    let _ = (class.as_str(), remaining);
}

/// An event stream handed over `count` events.
pub(crate) fn events_delivered(version: &'static str, count: u64) {
    #[cfg(feature = "metrics")]
    counter!("pubapi_events_delivered_total", "version" => version).increment(count);
    #[cfg(not(feature = "metrics"))]
    let _ = (version, count);
}

/// The webhook receiver answered a delivery with `status`, leaving out `duplicates` events.
pub(crate) fn webhook_delivery(status: u16, duplicates: usize) {
    #[cfg(feature = "metrics")]
    {
        counter!("pubapi_webhook_deliveries_total", "status" => status.to_string()).increment(1);
        if duplicates > 0 {
            counter!("pubapi_webhook_duplicates_total").increment(duplicates as u64);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (status, duplicates);
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use super::Ended;
    use std::borrow::Cow;

    #[test]
    fn a_status_label_is_the_status_written_out_and_static_where_the_reference_documents_it() {
        for status in 100..=599u16 {
            let label = Ended::Status(status).label();
            assert_eq!(label, status.to_string());
            if [200, 204, 403, 429, 503].contains(&status) {
                assert!(matches!(label, Cow::Borrowed(_)), "{status}");
            }
        }
        assert_eq!(Ended::Transport.label(), "transport");
        assert_eq!(Ended::Local.label(), "local");
    }
}
