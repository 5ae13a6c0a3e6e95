//! What a response or transport failure means for retrying: the classify step of a request.
//!
//! The platform throttles in three ways: the general API answers 403 with
//! `X-Gateway-Error-Code: ERR_403_DEVELOPER_OVER_QPS` (per-second limit) or
//! `ERR_403_DEVELOPER_OVER_RATE` (daily quota); the AI API answers 429 with
//! the same header; the token endpoint answers 409. All of them carry
//! `Retry-After`. A plain 403 is final, and so is a 409 anywhere but the
//! token endpoint, so the classification keys on the header and the kind of
//! endpoint rather than on the status alone.

use std::time::{Duration, SystemTime};

use http::HeaderMap;

use crate::gateway::{INACTIVE, OVER_QPS, OVER_RATE, gateway_code, is_unknown_throttle};
use crate::retry_after::retry_after;

/// Which kind of endpoint answered; it changes what 409 means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EndpointKind {
    /// Audit, webhooks, events, whoami: 403 + gateway code when throttled.
    General,
    /// The AI endpoints: 429 when throttled.
    Ai,
    /// `/puboauth/token`: 409 when throttled.
    Token,
}

/// The outcome of one attempt, in the vocabulary the retry policy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// 2xx or 3xx.
    Success,
    /// A short-term limit was hit; the request was not executed.
    Throttled {
        /// The server's `Retry-After`, if it sent a valid one.
        retry_after: Option<Duration>,
    },
    /// A 403 or 429 with `Retry-After` and a gateway code the SDK does not know: retried
    /// after `Retry-After` a bounded number of times.
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
    /// No response arrived.
    TransportError {
        /// The connection was never made, so the request was never sent.
        connect: bool,
        /// A timeout fired.
        timeout: bool,
    },
    /// A final answer (400, 401, 403, 404, 409, 422, ...).
    DoNotRetry,
}

/// Classifies a response by status, gateway code and endpoint kind: a 403 is a throttle only
/// with the per-second gateway code, and final without it.
pub(crate) fn classify_response(
    status: u16,
    headers: &HeaderMap,
    endpoint: EndpointKind,
    now: SystemTime,
) -> Outcome {
    let retry_after = || retry_after(headers, now);
    match status {
        200..=399 => Outcome::Success,
        // Only these read the gateway's code: a success costs no header lookup.
        403 | 429 => {
            let gateway = gateway_code(headers);
            let is = |code: &str| gateway.is_some_and(|g| g.eq_ignore_ascii_case(code));
            if is(INACTIVE) {
                Outcome::DoNotRetry
            } else if let Some(after) = retry_after()
                && is_unknown_throttle(status, gateway, true)
            {
                Outcome::UnknownThrottle { retry_after: after }
            } else if is(OVER_RATE) {
                Outcome::QuotaExhausted {
                    retry_after: retry_after(),
                }
            } else if status == 429 || is(OVER_QPS) {
                Outcome::Throttled {
                    retry_after: retry_after(),
                }
            } else {
                Outcome::DoNotRetry
            }
        }
        409 if endpoint == EndpointKind::Token => Outcome::Throttled {
            retry_after: retry_after(),
        },
        500..=599 => Outcome::ServerError,
        _ => Outcome::DoNotRetry,
    }
}

/// Classifies a reqwest failure that produced no response.
pub(crate) fn classify_transport(error: &reqwest::Error) -> Outcome {
    Outcome::TransportError {
        connect: error.is_connect(),
        timeout: error.is_timeout(),
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
        let outcome = classify_response(
            403,
            &headers(Some(OVER_QPS), Some("5")),
            EndpointKind::General,
            NOW,
        );
        assert_eq!(outcome, Outcome::Throttled { retry_after: RA });
    }

    #[test]
    fn daily_quota_is_403_with_over_rate() {
        let outcome = classify_response(
            403,
            &headers(Some(OVER_RATE), Some("5")),
            EndpointKind::General,
            NOW,
        );
        assert_eq!(outcome, Outcome::QuotaExhausted { retry_after: RA });
    }

    #[test]
    fn ai_throttle_is_429_and_429_with_over_rate_is_quota() {
        let h = headers(Some(OVER_QPS), Some("5"));
        assert_eq!(
            classify_response(429, &h, EndpointKind::Ai, NOW),
            Outcome::Throttled { retry_after: RA }
        );
        let h = headers(Some(OVER_RATE), None);
        assert_eq!(
            classify_response(429, &h, EndpointKind::Ai, NOW),
            Outcome::QuotaExhausted { retry_after: None }
        );
    }

    #[test]
    fn token_endpoint_throttle_is_409() {
        let h = headers(None, Some("5"));
        assert_eq!(
            classify_response(409, &h, EndpointKind::Token, NOW),
            Outcome::Throttled { retry_after: RA }
        );
        assert_eq!(
            classify_response(409, &h, EndpointKind::General, NOW),
            Outcome::DoNotRetry
        );
    }

    #[test]
    fn gateway_code_is_matched_trimmed_and_case_insensitively() {
        let h = headers(Some(" err_403_developer_over_qps "), None);
        assert_eq!(
            classify_response(403, &h, EndpointKind::General, NOW),
            Outcome::Throttled { retry_after: None }
        );
        assert_eq!(gateway_code(&headers(Some("  "), None)), None);
    }

    #[test]
    fn garbage_retry_after_is_none() {
        let h = headers(Some(OVER_QPS), Some("soon"));
        assert_eq!(
            classify_response(403, &h, EndpointKind::General, NOW),
            Outcome::Throttled { retry_after: None }
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
            classify_transport(&error),
            Outcome::TransportError {
                connect: true,
                timeout: false
            }
        );
    }

    /// What the reference says each (status, gateway code, endpoint) means.
    fn expected(status: u16, gateway: Option<&str>, kind: EndpointKind) -> Outcome {
        let retry_after = RA;
        match (status, gateway, kind) {
            (200 | 201 | 202 | 204 | 303, _, _) => Outcome::Success,
            (403 | 429, Some(INACTIVE), _) => Outcome::DoNotRetry,
            (403 | 429, Some(code), _) if !crate::gateway::is_known(code) => {
                Outcome::UnknownThrottle {
                    retry_after: retry_after.unwrap_or_default(),
                }
            }
            (403, Some(OVER_QPS), _) => Outcome::Throttled { retry_after },
            (403 | 429, Some(OVER_RATE), _) => Outcome::QuotaExhausted { retry_after },
            (429, _, _) => Outcome::Throttled { retry_after },
            (409, _, EndpointKind::Token) => Outcome::Throttled { retry_after },
            (500 | 502 | 503 | 504, _, _) => Outcome::ServerError,
            (400 | 401 | 403 | 404 | 409 | 405 | 422 | 100 | 600 | 0, _, _) => Outcome::DoNotRetry,
            other => panic!("no expectation for {other:?}"),
        }
    }

    /// Whether the first attempt is retried, per method and outcome: throttles
    /// always (the request was not executed), server errors only for
    /// idempotent methods, nothing else.
    fn expected_retry(outcome: Outcome, method: &Method) -> bool {
        let idempotent = [Method::GET, Method::HEAD, Method::PUT, Method::DELETE].contains(method);
        match outcome {
            Outcome::Throttled { .. } | Outcome::UnknownThrottle { .. } => true,
            Outcome::ServerError => idempotent,
            _ => false,
        }
    }

    #[test]
    fn classification_table_over_status_gateway_code_endpoint_and_method() {
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
                    let outcome = classify_response(status, &h, kind, NOW);
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
                        if let (Decision::Retry { after }, Outcome::Throttled { .. }) =
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
    fn plain_403_400_404_422_are_never_retried() {
        let config = RetryConfig::default();
        for status in [400, 403, 404, 422] {
            for kind in [EndpointKind::General, EndpointKind::Ai, EndpointKind::Token] {
                let outcome = classify_response(status, &HeaderMap::new(), kind, NOW);
                assert_eq!(outcome, Outcome::DoNotRetry);
                let decision =
                    config.decide(&outcome, true, 1, Duration::ZERO, &mut SplitMix64::new(0));
                assert!(matches!(decision, Decision::GiveUp(_)));
            }
        }
    }
}
