//! Property tests over what a server answers, as the request machinery reads it: error
//! bodies (the three formats and the gateway's `fault` envelope), `Retry-After`, the outcome
//! classifier and the gateway code. They sit next to the parsers because the classifier and
//! the `Retry-After` parser are private; the webhook receiver and act-as values have theirs
//! in `tests/proptest_untrusted.rs`.
//!
//! Each property holds for every input: no panic, no hang (every case returns), bounded
//! output, and an invariant that says what the parser is for. 2,000 cases each.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use crate::error::{Area, Error, ErrorFormat};
use crate::gateway::{GATEWAY_ERROR_CODE, INACTIVE, OVER_QPS, OVER_RATE, gateway_code, is_known};
use crate::request::retry::{Decision, GiveUpReason, RetryConfig};
use crate::retry_after::{parse_retry_after, retry_after};
use crate::rng::SplitMix64;
use crate::verdict::{EndpointKind, Refusal, Verdict, judge};

// ---------------------------------------------------------------------------------------------
// Strategies

#[path = "../../tests/support/untrusted_strategies.rs"]
mod untrusted_strategies;
use untrusted_strategies::{arb_edits, arb_json, mutate};

/// A time between 1970 and 9999, whole seconds (what HTTP dates can say).
fn arb_now() -> impl Strategy<Value = SystemTime> {
    (0..253_402_300_799_u64).prop_map(|secs| UNIX_EPOCH + Duration::from_secs(secs))
}

/// `Retry-After` texts: delta-seconds (some huge), dates in the three formats, near misses,
/// and anything.
fn arb_retry_after_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ("[ \t]{0,2}", "[0-9]{1,25}", "[ \t]{0,2}").prop_map(|(a, n, b)| format!("{a}{n}{b}")),
        (0..253_402_300_799_u64, 0..3_u8).prop_map(|(secs, style)| {
            let date = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs));
            match style {
                0 => date,
                // asctime: `Sun Nov  6 08:49:37 1994`, rebuilt from the IMF-fixdate.
                1 => {
                    let parts: Vec<&str> =
                        date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
                    format!(
                        "{} {} {:>2} {} {}",
                        parts[0],
                        parts[2],
                        parts[1].trim_start_matches('0'),
                        parts[4],
                        parts[3]
                    )
                }
                _ => date.to_lowercase(),
            }
        }),
        "[-+]?[0-9]{0,6}([.][0-9]{0,3})?[smh]?",
        ".{0,40}",
    ]
}

// ---------------------------------------------------------------------------------------------
// Error bodies

const NOW: SystemTime = UNIX_EPOCH;

fn formats() -> [ErrorFormat; 3] {
    [ErrorFormat::Ai, ErrorFormat::Webhooks, ErrorFormat::General]
}

fn areas() -> &'static [Area] {
    Area::ALL
}

/// A JSON object with these members, the `None` ones left out.
fn object(members: &[(&str, Option<Value>)]) -> Value {
    Value::Object(
        members
            .iter()
            .filter_map(|(key, value)| Some(((*key).to_owned(), value.clone()?)))
            .collect(),
    )
}

/// A field value as servers send them: mostly text, sometimes another JSON type.
fn arb_field() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => ".{0,24}".prop_map(|s| Some(Value::String(s))),
        1 => Just(None),
        1 => arb_json().prop_map(Some),
    ]
}

/// Error bodies in each of the three formats, the gateway's `fault` envelope, any JSON, any
/// bytes, and all of these mutated.
fn arb_error_body() -> impl Strategy<Value = Vec<u8>> {
    let ai = (arb_field(), arb_field())
        .prop_map(|(c, m)| object(&[("errorCode", c), ("errorMessage", m)]));
    let webhooks = (arb_field(), arb_field(), arb_field())
        .prop_map(|(c, m, d)| object(&[("code", c), ("message", m), ("details", d)]));
    let general = (
        prop::collection::vec((arb_field(), arb_field()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(entries, lower)| {
            let entries: Vec<Value> = entries
                .into_iter()
                .map(|(c, d)| object(&[("code", c), ("description", d)]))
                .collect();
            json!({ if lower { "errors" } else { "Errors" }: entries })
        });
    let fault = (arb_field(), arb_field()).prop_map(|(s, c)| {
        json!({"fault": object(&[("faultstring", s), ("detail", Some(object(&[("errorcode", c)])))])})
    });
    let json_body = prop_oneof![ai, webhooks, general, fault, arb_json()]
        .prop_map(|value| serde_json::to_vec(&value).unwrap());
    prop_oneof![
        6 => json_body.clone(),
        2 => (json_body, arb_edits()).prop_map(|(body, edits)| mutate(body, edits)),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => Just(b"<html><body>502 Bad Gateway</body></html>".to_vec()),
    ]
}

/// A gateway code: the ones the classifier knows, in any case and padding, others, or bytes.
fn arb_gateway_code() -> impl Strategy<Value = Option<Vec<u8>>> {
    let known = prop_oneof![
        Just(OVER_QPS),
        Just(OVER_RATE),
        Just("ERR_403_DEVELOPER_INACTIVE"),
    ];
    prop_oneof![
        1 => Just(None),
        3 => (known, prop::collection::vec(any::<bool>(), 32), "[ \t]{0,2}", "[ \t]{0,2}")
            .prop_map(|(code, upper, a, b)| {
                let code: String = code
                    .chars()
                    .zip(upper.iter().cycle())
                    .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
                    .collect();
                Some(format!("{a}{code}{b}").into_bytes())
            }),
        1 => prop::collection::vec(any::<u8>(), 0..30).prop_map(Some),
    ]
}

/// Response headers with any `Retry-After` and gateway code (dropped when not a valid
/// header value, as no server could send them).
fn arb_response_headers() -> impl Strategy<Value = HeaderMap> {
    (prop::option::of(arb_retry_after_text()), arb_gateway_code()).prop_map(|(retry, gateway)| {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(value) = retry.and_then(|r| HeaderValue::from_str(&r).ok()) {
            headers.insert(RETRY_AFTER, value);
        }
        if let Some(value) = gateway.and_then(|g| HeaderValue::from_bytes(&g).ok()) {
            headers.insert(GATEWAY_ERROR_CODE, value);
        }
        headers
    })
}

fn arb_status() -> impl Strategy<Value = u16> {
    prop_oneof![
        3 => prop::sample::select(vec![400_u16, 401, 403, 404, 409, 422, 429, 500, 502, 503]),
        1 => 100..600_u16,
        1 => any::<u16>(),
    ]
}

fn kinds() -> [EndpointKind; 3] {
    [EndpointKind::General, EndpointKind::Ai, EndpointKind::Token]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    // -- error bodies --------------------------------------------------------------------------

    /// Any body with any status, format and headers becomes an error that keeps the status,
    /// the body byte for byte, `Retry-After` and the gateway code, with a variant that follows
    /// the status, and text bounded by the body.
    #[test]
    fn error_from_any_response_keeps_status_body_and_headers(
        status in arb_status(),
        format in any::<Index>(),
        area in any::<Index>(),
        body in arb_error_body(),
        headers in arb_response_headers(),
    ) {
        let (format, area) = (*format.get(&formats()), *area.get(areas()));
        let error = Error::from_response(format, area, status, &headers, Bytes::from(body.clone()), NOW);
        prop_assert_eq!(error.status(), Some(status));
        let api = error.api_error().unwrap();
        prop_assert_eq!(&api.body()[..], &body[..]);
        prop_assert_eq!(api.retry_after(), retry_after(&headers, NOW));
        prop_assert_eq!(api.gateway_code(), gateway_code(&headers));
        let bound = 2 * body.len() + 32;
        for text in [api.code(), api.message(), api.details()].into_iter().flatten() {
            prop_assert!(text.len() <= bound);
        }
        for message in api.messages() {
            for text in [&message.code, &message.description].into_iter().flatten() {
                prop_assert!(text.len() <= bound);
            }
        }
        let shown = error.to_string();
        // The server's code (at most 40 characters and `…`) and message (at most 120 and
        // `…`) are shown on one line after at most 96 characters of the SDK's own.
        prop_assert!(shown.chars().count() <= 96 + 41 + 3 + 121, "{}", shown);
        prop_assert!(!shown.contains(['\n', '\r']), "{}", shown);
        let inactive = api.gateway_code().is_some_and(|g| g.eq_ignore_ascii_case(INACTIVE));
        let variant_follows_status = match status {
            401 => matches!(error, Error::Unauthorized(_)),
            403 | 429 if inactive => matches!(error, Error::Unauthorized(_)),
            403 => matches!(error, Error::Forbidden { .. } | Error::Throttled { .. } | Error::QuotaExhausted { .. }),
            404 => matches!(error, Error::NotFound(_)),
            409 => matches!(error, Error::Conflict(_)),
            400 | 422 => matches!(error, Error::InvalidRequest(_)),
            429 => matches!(error, Error::Throttled { .. } | Error::QuotaExhausted { .. }),
            500..=599 => matches!(error, Error::Server(_)),
            _ => matches!(error, Error::UnexpectedStatus(_)),
        };
        prop_assert!(variant_follows_status, "{} {:?}", status, error);
    }

    /// A body in any of the three formats is read whatever the endpoint's format: its code
    /// and message come out as sent, and a general body keeps every entry in order.
    #[test]
    fn error_code_and_message_are_read_in_every_format(
        status in arb_status(),
        endpoint in any::<Index>(),
        sent in any::<Index>(),
        code in ".{0,20}",
        message in ".{0,40}",
        more in prop::collection::vec((".{0,10}", ".{0,10}"), 0..3),
    ) {
        let sent = *sent.get(&formats());
        let body = match sent {
            ErrorFormat::Ai => json!({"errorCode": code, "errorMessage": message}),
            ErrorFormat::Webhooks => json!({"code": code, "message": message, "details": "d"}),
            ErrorFormat::General => {
                let mut entries = vec![json!({"code": code, "description": message})];
                entries.extend(more.iter().map(|(c, d)| json!({"code": c, "description": d})));
                json!({ "Errors": entries })
            }
        };
        let body = Bytes::from(serde_json::to_vec(&body).unwrap());
        let error = Error::from_response(*endpoint.get(&formats()), Area::Audit, status, &HeaderMap::new(), body, NOW);
        let api = error.api_error().unwrap();
        prop_assert_eq!(api.format(), sent);
        prop_assert_eq!(api.code(), Some(code.as_str()));
        prop_assert_eq!(api.message(), Some(message.as_str()));
        if sent == ErrorFormat::General {
            prop_assert_eq!(api.messages().len(), 1 + more.len());
            for (entry, (c, d)) in api.messages()[1..].iter().zip(&more) {
                prop_assert_eq!(entry.code.as_deref(), Some(c.as_str()));
                prop_assert_eq!(entry.description.as_deref(), Some(d.as_str()));
            }
        }
    }

    /// The gateway's own envelope, `{fault: {faultstring, detail: {errorcode}}}`: the error
    /// keeps status and body whatever the endpoint's format.
    ///
    /// Its `errorcode` is the code and its `faultstring` the message.
    #[test]
    fn gateway_fault_envelope_keeps_status_and_body(
        status in arb_status(),
        endpoint in any::<Index>(),
        faultstring in ".{0,30}",
        errorcode in "[a-zA-Z.]{1,30}",
    ) {
        let body = json!({"fault": {"faultstring": faultstring, "detail": {"errorcode": errorcode}}});
        let body = Bytes::from(serde_json::to_vec(&body).unwrap());
        let error = Error::from_response(*endpoint.get(&formats()), Area::Events, status, &HeaderMap::new(), body.clone(), NOW);
        prop_assert_eq!(error.status(), Some(status));
        prop_assert_eq!(error.api_error().unwrap().body(), &body);
        prop_assert_eq!(error.code(), Some(errorcode.as_str()));
        prop_assert_eq!(error.api_error().unwrap().message(), Some(faultstring.as_str()));
    }

    /// An error's `Display` names the status, and is meant to be short, lowercase and one line
    /// (it ends up in log lines).
    /// The server's code and message are shortened and their line breaks escaped, so a body
    /// such as `{"code":"x\n2026-01-01 INFO forged"}` cannot forge a log line.
    #[test]
    fn error_display_names_the_status(status in arb_status(), code in "(.|\n){0,300}") {
        let body = Bytes::from(serde_json::to_vec(&json!({"code": code, "message": "m"})).unwrap());
        let error = Error::from_response(ErrorFormat::Webhooks, Area::Webhooks, status, &HeaderMap::new(), body, NOW);
        let shown = error.to_string();
        prop_assert!(shown.contains(&format!("({status}")), "{}", shown);
        prop_assert!(shown.chars().count() <= 160, "{}", shown);
        prop_assert!(!shown.contains(['\n', '\r']), "{}", shown);
    }

    /// The error built from a response and the verdict the retries read agree on what a
    /// response means for the general and AI endpoints: throttled, quota, server error, or final.
    #[test]
    fn the_error_says_what_the_verdict_says(
        status in 400..600_u16,
        ai in any::<bool>(),
        body in arb_error_body(),
        headers in arb_response_headers(),
    ) {
        let (kind, area, format) = if ai {
            (EndpointKind::Ai, Area::Assistant, ErrorFormat::Ai)
        } else {
            (EndpointKind::General, Area::Audit, ErrorFormat::General)
        };
        let outcome = judge(status, &headers, kind, NOW);
        let error = Error::from_response(format, area, status, &headers, Bytes::from(body), NOW);
        let agree = match outcome {
            Verdict::Throttled { retry_after } => {
                matches!(error, Error::Throttled { retry_after: r, .. } if r == retry_after)
            }
            Verdict::QuotaExhausted { retry_after } => {
                matches!(error, Error::QuotaExhausted { resets_in: r, .. } if r == retry_after)
            }
            Verdict::UnknownThrottle { retry_after } => matches!(
                error,
                Error::Throttled { retry_after: Some(r), .. } if r == retry_after
            ),
            Verdict::ServerError => matches!(error, Error::Server(_)),
            Verdict::Refused(_) => !matches!(
                error,
                Error::Throttled { .. } | Error::QuotaExhausted { .. } | Error::Server(_)
            ),
            other => return Err(TestCaseError::fail(format!("{status}: {other:?}"))),
        };
        prop_assert!(agree, "{} {:?} {:?}", status, outcome, error);
        prop_assert_eq!(
            error.is_retryable(),
            matches!(
                outcome,
                Verdict::Throttled { .. }
                    | Verdict::UnknownThrottle { .. }
                    | Verdict::ServerError
            )
        );
    }

    /// A success body that does not decode becomes `Error::Decode` with the body kept and a
    /// path no longer than the body can name.
    #[test]
    fn undecodable_success_body_keeps_the_body_and_a_bounded_path(body in arb_error_body()) {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Page { items: Vec<Item>, total: u32 }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Item { id: u64, name: String }
        match Error::decode::<Page>(Bytes::from(body.clone())) {
            Ok(_) => prop_assert!(serde_json::from_slice::<Value>(&body).is_ok()),
            Err(Error::Decode { path, message, body: kept, .. }) => {
                prop_assert_eq!(&kept.0[..], &body[..]);
                prop_assert!(path.len() <= body.len() + 8, "{}", path);
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "{:?}", other),
        }
    }

    // -- Retry-After ---------------------------------------------------------------------------

    /// A `Retry-After` value is a delay only when it is delta-seconds (saturating) or an HTTP
    /// date (its distance from now, zero once past); anything else is ignored.
    #[test]
    fn retry_after_is_a_delay_only_for_delta_seconds_or_a_date(
        value in arb_retry_after_text(),
        now in arb_now(),
    ) {
        let trimmed = value.trim_matches([' ', '\t']);
        match parse_retry_after(&value, now) {
            None => {
                let digits = !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit());
                prop_assert!(!digits && httpdate::parse_http_date(trimmed).is_err());
            }
            Some(delay) if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) => {
                prop_assert_eq!(delay, Duration::from_secs(trimmed.parse().unwrap_or(u64::MAX)));
            }
            Some(delay) => {
                let date = httpdate::parse_http_date(trimmed).unwrap();
                prop_assert_eq!(delay, date.duration_since(now).unwrap_or(Duration::ZERO));
            }
        }
    }

    /// Every delta-seconds value and every HTTP date reads back exactly.
    #[test]
    fn every_delta_and_every_date_reads_back(
        seconds in any::<u64>(),
        date in 0..253_402_300_799_u64,
        now in arb_now(),
    ) {
        prop_assert_eq!(parse_retry_after(&seconds.to_string(), now), Some(Duration::from_secs(seconds)));
        let text = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(date));
        let now_secs = now.duration_since(UNIX_EPOCH).unwrap().as_secs();
        prop_assert_eq!(parse_retry_after(&text, now), Some(Duration::from_secs(date.saturating_sub(now_secs))));
    }

    /// Whatever a throttle response's `Retry-After` says, a retry never waits longer than the
    /// configured cap, nor past the total wait; a longer ask gives up instead.
    #[test]
    fn an_honoured_retry_after_never_exceeds_its_cap(
        value in arb_retry_after_text(),
        raw in prop::collection::vec(any::<u8>(), 0..30),
        use_raw in any::<bool>(),
        cap in 0..7_200_u64,
        total in 0..7_200_u64,
        waited in 0..7_200_u64,
        attempt in 1..5_u32,
        now in arb_now(),
    ) {
        let mut headers = HeaderMap::new();
        let header = if use_raw { HeaderValue::from_bytes(&raw).ok() } else { HeaderValue::from_str(&value).ok() };
        if let Some(header) = header {
            headers.insert(RETRY_AFTER, header);
        }
        headers.insert(GATEWAY_ERROR_CODE, HeaderValue::from_static(OVER_QPS));
        let outcome = judge(403, &headers, EndpointKind::General, now);
        let asked = retry_after(&headers, now);
        prop_assert_eq!(outcome, Verdict::Throttled { retry_after: asked });
        let config = RetryConfig::default()
            .with_max_attempts(10)
            .with_max_retry_after(Duration::from_secs(cap))
            .with_max_total_wait(Duration::from_secs(total));
        let waited = Duration::from_secs(waited);
        match config.decide(&outcome, true, attempt, waited, &mut SplitMix64::new(7)) {
            Decision::Retry { after } => {
                prop_assert!(after <= config.max_retry_after() || asked.is_none());
                prop_assert!(waited + after <= config.max_total_wait());
                if let Some(asked) = asked {
                    prop_assert_eq!(after, asked);
                }
            }
            Decision::GiveUp(GiveUpReason::RetryAfterTooLong { retry_after }) => {
                prop_assert!(retry_after > config.max_retry_after());
            }
            Decision::GiveUp(_) => {}
            Decision::Done => prop_assert!(false, "a throttle is not a success"),
        }
    }

    // -- outcome classifier --------------------------------------------------------------------

    /// The classifier speaks the documented vocabulary for any status, gateway code and
    /// `Retry-After`: success for 2xx and 3xx, quota on the daily-quota code or an AI 429
    /// asking to wait past the per-minute window, throttled
    /// only on the per-second code, a 429, or the token endpoint's 409, a throttle of an
    /// unknown kind on a 403 or 429 with another code and `Retry-After`, server error for 5xx,
    /// and otherwise final (also a 403 or 429 saying the token is inactive); the delay is
    /// always the header's.
    #[test]
    fn the_verdict_follows_status_gateway_code_and_endpoint(
        status in prop_oneof![any::<u16>(), arb_status()],
        headers in arb_response_headers(),
        kind in any::<Index>(),
        now in arb_now(),
    ) {
        let kind = *kind.get(&kinds());
        let code = gateway_code(&headers);
        let is = |known: &str| code.is_some_and(|c| c.eq_ignore_ascii_case(known));
        let delay = retry_after(&headers, now);
        let expected = match status {
            200..=399 => Verdict::Success,
            403 | 429 if is(INACTIVE) => Verdict::Refused(Refusal::Unauthorized),
            403 | 429 if code.is_some_and(|c| !is_known(c)) && delay.is_some() => {
                Verdict::UnknownThrottle { retry_after: delay.unwrap_or_default() }
            }
            403 | 429 if is(OVER_RATE) => Verdict::QuotaExhausted { retry_after: delay },
            429 if kind == EndpointKind::Ai && delay.is_some_and(|d| d > Duration::from_secs(60)) => {
                Verdict::QuotaExhausted { retry_after: delay }
            }
            403 if is(OVER_QPS) => Verdict::Throttled { retry_after: delay },
            429 => Verdict::Throttled { retry_after: delay },
            409 if kind == EndpointKind::Token => Verdict::Throttled { retry_after: delay },
            500..=599 => Verdict::ServerError,
            401 => Verdict::Refused(Refusal::Unauthorized),
            403 => Verdict::Refused(Refusal::Forbidden),
            404 => Verdict::Refused(Refusal::NotFound),
            409 => Verdict::Refused(Refusal::Conflict),
            400 | 422 => Verdict::Refused(Refusal::Invalid),
            _ => Verdict::Refused(Refusal::Unexpected),
        };
        prop_assert_eq!(judge(status, &headers, kind, now), expected);
    }

    /// The gateway code read from a header is its text without surrounding blanks, never empty.
    #[test]
    fn gateway_code_is_the_trimmed_header_text(code in arb_gateway_code()) {
        let mut headers = HeaderMap::new();
        let sent = code.and_then(|c| HeaderValue::from_bytes(&c).ok());
        if let Some(value) = &sent {
            headers.insert(GATEWAY_ERROR_CODE, value.clone());
        }
        match gateway_code(&headers) {
            None => prop_assert!(sent.is_none_or(|v| v.to_str().is_err() || v.to_str().unwrap().trim_matches([' ', '\t']).is_empty())),
            Some(read) => {
                let text = sent.as_ref().unwrap().to_str().unwrap();
                prop_assert!(!read.is_empty());
                prop_assert_eq!(read, text.trim_matches([' ', '\t']));
            }
        }
    }
}
