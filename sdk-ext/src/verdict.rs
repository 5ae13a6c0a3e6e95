//! What an answer means: the one place that reads a status.
//!
//! Every answer (an operation's, or the token endpoint's) is judged here once, from its
//! status, its gateway code (`X-Gateway-Error-Code`, see [`crate::gateway`]), its
//! `Retry-After` and the kind of endpoint that sent it, into a [`Verdict`]. The retry step
//! decides on the verdict ([`crate::RetryConfig`]), the policy feeds the pacer from it, and
//! the typed [`Error`](crate::Error) is built from it, adding only what the failed body says
//! (the server's code, which tells a 403's [`ForbiddenReason`]).
//!
//! The platform throttles in three ways: the general API answers 403 with
//! `ERR_403_DEVELOPER_OVER_QPS` (per-second limit) or `ERR_403_DEVELOPER_OVER_RATE` (daily
//! quota); the AI API answers 429 with the same codes; the token endpoint answers 409. All of
//! them carry `Retry-After`. A plain 403 is final, and so is a 409 anywhere but the token
//! endpoint, so the verdict keys on the code and the kind of endpoint, not on the status
//! alone. The success the generated client does not decode (a report's `303 See Other`) is
//! named here too.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::HeaderMap;
use pubapi_sdk::operations::Area;

use crate::gateway::{INACTIVE, OVER_QPS, OVER_RATE, gateway_code, is_known};
use crate::limits::{LimitClass, MINUTE};
use crate::retry_after::retry_after;

/// Which kind of endpoint answered: it changes what 409 means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EndpointKind {
    /// Audit, webhooks, events, whoami: 403 + gateway code when throttled.
    General,
    /// The AI endpoints: 429 when throttled.
    Ai,
    /// `/puboauth/token`: 409 when throttled.
    Token,
}

impl EndpointKind {
    /// The kind of an operation's endpoint, from its limit class.
    pub(crate) fn of_class(class: LimitClass) -> EndpointKind {
        match class {
            LimitClass::Ai => EndpointKind::Ai,
            LimitClass::General => EndpointKind::General,
        }
    }
}

/// What one attempt's answer (or its absence) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// 2xx or 3xx.
    Success,
    /// A short-term limit was hit; the request was not executed.
    Throttled {
        /// The server's `Retry-After`, if it sent a valid one.
        retry_after: Option<Duration>,
    },
    /// A 403 or 429 with `Retry-After` and a gateway code the SDK does not know (the gateway
    /// adds codes over time): retried after `Retry-After` a bounded number of times, then
    /// the error is [`Error::Throttled`](crate::Error::Throttled) naming the code.
    UnknownThrottle {
        /// The server's `Retry-After`.
        retry_after: Duration,
    },
    /// The daily quota is used up; retrying soon is pointless.
    QuotaExhausted {
        /// The server's `Retry-After`, if it sent a valid one.
        retry_after: Option<Duration>,
    },
    /// 5xx: the request may or may not have been executed.
    ServerError,
    /// No answer arrived.
    NoAnswer {
        /// The connection was never made, so the request was never sent.
        connect: bool,
        /// A timeout fired.
        timeout: bool,
    },
    /// A final answer.
    Refused(Refusal),
}

/// Why an answer is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401, or a 403/429 whose gateway code says the token is not valid
    /// (`ERR_403_DEVELOPER_INACTIVE`).
    Unauthorized,
    /// 403 without a throttle code (the body's code tells the [`ForbiddenReason`]).
    Forbidden,
    /// 404.
    NotFound,
    /// 409 (anywhere but the token endpoint).
    Conflict,
    /// 400 or 422.
    Invalid,
    /// Any status the API does not document.
    Unexpected,
}

/// Judges an answer by status, gateway code, `Retry-After` (read against `now`) and the kind
/// of endpoint.
pub(crate) fn judge(
    status: u16,
    headers: &HeaderMap,
    endpoint: EndpointKind,
    now: SystemTime,
) -> Verdict {
    judge_with_clock(status, headers, endpoint, || now)
}

/// [`judge`], reading the clock only for a `Retry-After` given as a date.
pub(crate) fn judge_now(status: u16, headers: &HeaderMap, endpoint: EndpointKind) -> Verdict {
    judge_with_clock(status, headers, endpoint, crate::time::now)
}

fn judge_with_clock(
    status: u16,
    headers: &HeaderMap,
    endpoint: EndpointKind,
    now: impl Fn() -> SystemTime,
) -> Verdict {
    let retry_after = || retry_after(headers, now());
    match status {
        200..=399 => Verdict::Success,
        // Only these read the gateway's code: a success costs no header lookup.
        403 | 429 => {
            let gateway = gateway_code(headers);
            let is = |code: &str| gateway.is_some_and(|g| g.eq_ignore_ascii_case(code));
            if is(INACTIVE) {
                Verdict::Refused(Refusal::Unauthorized)
            } else if let Some(after) = retry_after()
                && gateway.is_some_and(|code| !is_known(code))
            {
                Verdict::UnknownThrottle { retry_after: after }
            } else if is(OVER_RATE) {
                Verdict::QuotaExhausted {
                    retry_after: retry_after(),
                }
            } else if status == 429
                && endpoint == EndpointKind::Ai
                && let Some(after) = retry_after().filter(|after| *after > MINUTE)
            {
                // The platform's daily AI quota answers 429 with the seconds to midnight UTC
                // (tens of thousands), with or without `OVER_RATE`: a wait longer than the
                // AI's shorter window (10 calls a minute) is the day's, and the pacer holds
                // the class until then.
                Verdict::QuotaExhausted {
                    retry_after: Some(after),
                }
            } else if status == 429 || is(OVER_QPS) {
                Verdict::Throttled {
                    retry_after: retry_after(),
                }
            } else {
                Verdict::Refused(Refusal::Forbidden)
            }
        }
        409 if endpoint == EndpointKind::Token => Verdict::Throttled {
            retry_after: retry_after(),
        },
        401 => Verdict::Refused(Refusal::Unauthorized),
        404 => Verdict::Refused(Refusal::NotFound),
        409 => Verdict::Refused(Refusal::Conflict),
        400 | 422 => Verdict::Refused(Refusal::Invalid),
        500..=599 => Verdict::ServerError,
        _ => Verdict::Refused(Refusal::Unexpected),
    }
}

/// Judges a failure that produced no answer.
pub(crate) fn judge_transport(error: &reqwest::Error) -> Verdict {
    Verdict::NoAnswer {
        connect: error.is_connect(),
        timeout: error.is_timeout(),
    }
}

/// Whether a final answer's body is worth reading: a status of 400 or more (a success, or
/// an undocumented 1xx/3xx, is handed back as it is).
pub(crate) fn has_error_body(status: u16) -> bool {
    status >= 400
}

/// A report status answer that says the report is ready (`303 See Other`, its `Location`
/// naming the report), which the generated client hands back as an unexpected response.
pub(crate) fn is_report_ready(status: http::StatusCode) -> bool {
    status == http::StatusCode::SEE_OTHER
}

/// Why a 403 was returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForbiddenReason {
    /// The token lacks the scope (`missing_scope_error`; webhooks need
    /// `Service.webhooks`).
    MissingScope,
    /// The feature is not enabled for the domain (agents).
    FeatureNotEnabled,
    /// The user may not run audit reports, or audit reporting is not in
    /// the domain's plan.
    MayNotRunReports,
    /// A gateway throttle code this crate does not know, without a `Retry-After` (the known
    /// `ERR_403_DEVELOPER_OVER_QPS` and `..._OVER_RATE` become
    /// [`Error::Throttled`](crate::Error::Throttled) and
    /// [`Error::QuotaExhausted`](crate::Error::QuotaExhausted)).
    Throttled,
    /// Any other authorization failure.
    Other,
}

impl ForbiddenReason {
    /// The reason of a [`Refusal::Forbidden`]: from the gateway's code, the body's `code` and
    /// the area that answered (`None` when the answer passed no client's policy and its path
    /// names no operation).
    pub(crate) fn of(area: Option<Area>, gateway: Option<&str>, code: Option<&str>) -> Self {
        let throttle_code = gateway.is_some_and(|g| {
            g.get(..22)
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case("ERR_403_DEVELOPER_OVER"))
        });
        if throttle_code {
            ForbiddenReason::Throttled
        } else if code == Some("missing_scope_error") {
            ForbiddenReason::MissingScope
        } else if area == Some(Area::Agents) {
            ForbiddenReason::FeatureNotEnabled
        } else if area == Some(Area::Audit) {
            ForbiddenReason::MayNotRunReports
        } else {
            ForbiddenReason::Other
        }
    }
}

impl fmt::Display for ForbiddenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForbiddenReason::MissingScope => "missing scope",
            ForbiddenReason::FeatureNotEnabled => "feature not enabled",
            ForbiddenReason::MayNotRunReports => "may not run reports",
            ForbiddenReason::Throttled => "throttled",
            ForbiddenReason::Other => "not allowed",
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::GATEWAY_ERROR_CODE;
    use crate::request::retry::{Decision, RetryConfig, method_is_idempotent};
    use crate::rng::SplitMix64;
    use http::{HeaderValue, Method};

    fn headers(gateway: Option<&'static str>, retry_after: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(code) = gateway {
            headers.insert(GATEWAY_ERROR_CODE, HeaderValue::from_static(code));
        }
        if let Some(value) = retry_after {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static(value));
        }
        headers
    }

    const NOW: SystemTime = SystemTime::UNIX_EPOCH;
    const RA: Option<Duration> = Some(Duration::from_secs(5));

    #[test]
    fn general_throttle_is_403_with_over_qps() {
        let outcome = judge(
            403,
            &headers(Some(OVER_QPS), Some("5")),
            EndpointKind::General,
            NOW,
        );
        assert_eq!(outcome, Verdict::Throttled { retry_after: RA });
    }

    #[test]
    fn daily_quota_is_403_with_over_rate() {
        let outcome = judge(
            403,
            &headers(Some(OVER_RATE), Some("5")),
            EndpointKind::General,
            NOW,
        );
        assert_eq!(outcome, Verdict::QuotaExhausted { retry_after: RA });
    }

    #[test]
    fn ai_throttle_is_429_and_429_with_over_rate_is_quota() {
        let h = headers(Some(OVER_QPS), Some("5"));
        assert_eq!(
            judge(429, &h, EndpointKind::Ai, NOW),
            Verdict::Throttled { retry_after: RA }
        );
        let h = headers(Some(OVER_RATE), None);
        assert_eq!(
            judge(429, &h, EndpointKind::Ai, NOW),
            Verdict::QuotaExhausted { retry_after: None }
        );
    }

    #[test]
    fn ai_429_asking_to_wait_past_the_minute_window_is_the_daily_quota() {
        // The platform's daily AI quota: 429, `Retry-After` the seconds to midnight UTC, with
        // or without `OVER_RATE`. A wait the per-minute window explains stays a throttle, and
        // the general endpoints are not read this way.
        let cases = [
            (None, "40000", EndpointKind::Ai, true),
            (Some(OVER_QPS), "40000", EndpointKind::Ai, true),
            (None, "61", EndpointKind::Ai, true),
            (None, "60", EndpointKind::Ai, false),
            (None, "5", EndpointKind::Ai, false),
            (None, "40000", EndpointKind::General, false),
        ];
        for (code, after, kind, quota) in cases {
            let seconds = Duration::from_secs(after.parse().unwrap());
            let expected = if quota {
                Verdict::QuotaExhausted {
                    retry_after: Some(seconds),
                }
            } else {
                Verdict::Throttled {
                    retry_after: Some(seconds),
                }
            };
            let h = headers(code, Some(after));
            assert_eq!(
                judge(429, &h, kind, NOW),
                expected,
                "{code:?} {after} {kind:?}"
            );
        }
    }

    #[test]
    fn token_endpoint_throttle_is_409() {
        let h = headers(None, Some("5"));
        assert_eq!(
            judge(409, &h, EndpointKind::Token, NOW),
            Verdict::Throttled { retry_after: RA }
        );
        assert_eq!(
            judge(409, &h, EndpointKind::General, NOW),
            Verdict::Refused(Refusal::Conflict)
        );
    }

    #[test]
    fn gateway_code_is_matched_trimmed_and_case_insensitively() {
        let h = headers(Some(" err_403_developer_over_qps "), None);
        assert_eq!(
            judge(403, &h, EndpointKind::General, NOW),
            Verdict::Throttled { retry_after: None }
        );
        assert_eq!(gateway_code(&headers(Some("  "), None)), None);
    }

    #[test]
    fn garbage_retry_after_is_none() {
        let h = headers(Some(OVER_QPS), Some("soon"));
        assert_eq!(
            judge(403, &h, EndpointKind::General, NOW),
            Verdict::Throttled { retry_after: None }
        );
    }

    #[tokio::test]
    async fn connection_refused_is_a_connect_error() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let error = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            judge_transport(&error),
            Verdict::NoAnswer {
                connect: true,
                timeout: false
            }
        );
    }

    /// What the reference says each (status, gateway code, endpoint) means.
    fn expected(status: u16, gateway: Option<&str>, kind: EndpointKind) -> Verdict {
        let retry_after = RA;
        match (status, gateway, kind) {
            (200 | 201 | 202 | 204 | 303, _, _) => Verdict::Success,
            (403 | 429, Some(INACTIVE), _) => Verdict::Refused(Refusal::Unauthorized),
            (403 | 429, Some(code), _) if !crate::gateway::is_known(code) => {
                Verdict::UnknownThrottle {
                    retry_after: retry_after.unwrap_or_default(),
                }
            }
            (403, Some(OVER_QPS), _) => Verdict::Throttled { retry_after },
            (403 | 429, Some(OVER_RATE), _) => Verdict::QuotaExhausted { retry_after },
            (429, _, _) => Verdict::Throttled { retry_after },
            (409, _, EndpointKind::Token) => Verdict::Throttled { retry_after },
            (500 | 502 | 503 | 504, _, _) => Verdict::ServerError,
            (401, _, _) => Verdict::Refused(Refusal::Unauthorized),
            (403, _, _) => Verdict::Refused(Refusal::Forbidden),
            (404, _, _) => Verdict::Refused(Refusal::NotFound),
            (409, _, _) => Verdict::Refused(Refusal::Conflict),
            (400 | 422, _, _) => Verdict::Refused(Refusal::Invalid),
            (405 | 100 | 600 | 0, _, _) => Verdict::Refused(Refusal::Unexpected),
            other => panic!("no expectation for {other:?}"),
        }
    }

    /// Whether the first attempt is retried, per method and outcome: throttles
    /// always (the request was not executed), server errors only for
    /// idempotent methods, nothing else.
    fn expected_retry(outcome: Verdict, method: &Method) -> bool {
        let idempotent = [Method::GET, Method::HEAD, Method::PUT, Method::DELETE].contains(method);
        match outcome {
            Verdict::Throttled { .. } | Verdict::UnknownThrottle { .. } => true,
            Verdict::ServerError => idempotent,
            _ => false,
        }
    }

    #[test]
    fn verdict_table_over_status_gateway_code_endpoint_and_method() {
        let statuses = [
            0, 100, 200, 201, 202, 204, 303, 400, 401, 403, 404, 405, 409, 422, 429, 500, 502, 503,
            504, 600,
        ];
        let gateways = [
            None,
            Some(OVER_QPS),
            Some(OVER_RATE),
            Some(INACTIVE),
            Some("ERR_SOMETHING_ELSE"),
        ];
        let kinds = [EndpointKind::General, EndpointKind::Ai, EndpointKind::Token];
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::PUT,
            Method::DELETE,
            Method::POST,
            Method::PATCH,
        ];
        let mut rows = 0;
        for status in statuses {
            for gateway in gateways {
                for kind in kinds {
                    let mut h = headers(None, Some("5"));
                    if let Some(code) = gateway {
                        h.insert(GATEWAY_ERROR_CODE, HeaderValue::from_static(code));
                    }
                    let outcome = judge(status, &h, kind, NOW);
                    assert_eq!(
                        outcome,
                        expected(status, gateway, kind),
                        "{status} {gateway:?} {kind:?}"
                    );
                    for method in &methods {
                        // A fresh budget per row: rows are independent.
                        let decision = RetryConfig::default().decide(
                            &outcome,
                            method_is_idempotent(method),
                            1,
                            Duration::ZERO,
                            &mut SplitMix64::new(1),
                        );
                        let retried = matches!(decision, Decision::Retry { .. });
                        assert_eq!(
                            retried,
                            expected_retry(outcome, method),
                            "{status} {gateway:?} {kind:?} {method} -> {decision:?}"
                        );
                        if let (Decision::Retry { after }, Verdict::Throttled { .. }) =
                            (decision, outcome)
                        {
                            assert_eq!(after, Duration::from_secs(5));
                        }
                        rows += 1;
                    }
                }
            }
        }
        assert_eq!(rows, 20 * 5 * 3 * 6);
    }

    #[test]
    fn plain_403_400_404_422_are_final() {
        let config = RetryConfig::default();
        for status in [400, 403, 404, 422] {
            for kind in [EndpointKind::General, EndpointKind::Ai, EndpointKind::Token] {
                let outcome = judge(status, &HeaderMap::new(), kind, NOW);
                assert!(matches!(outcome, Verdict::Refused(_)), "{status} {kind:?}");
                let decision =
                    config.decide(&outcome, true, 1, Duration::ZERO, &mut SplitMix64::new(0));
                assert!(matches!(decision, Decision::GiveUp(_)));
            }
        }
    }
}
