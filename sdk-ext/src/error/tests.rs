//! Unit tests of [`super`], kept apart so the module holds the code alone.

use super::*;
use crate::act_as::ActAs;
use crate::gateway::{OVER_QPS, OVER_RATE};
use crate::token::SecretToken;
use http::HeaderValue;

const NOW: SystemTime = SystemTime::UNIX_EPOCH;

fn respond(format: ErrorFormat, area: Area, status: u16, body: &'static str) -> Error {
    Error::from_response(
        format,
        area,
        status,
        &HeaderMap::new(),
        Bytes::from_static(body.as_bytes()),
        NOW,
    )
}

fn with_gateway(code: &'static str, retry_after: &'static str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("x-gateway-error-code", HeaderValue::from_static(code));
    headers.insert("retry-after", HeaderValue::from_static(retry_after));
    headers
}

/// Display of an error and all its sources.
fn chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        text.push_str(" <- ");
        text.push_str(&e.to_string());
        next = e.source();
    }
    text
}

// AI format

#[test]
fn ai_400_question_mandatory_is_invalid_request() {
    let e = respond(
        ErrorFormat::Ai,
        Area::Agents,
        400,
        r#"{"errorMessage":"Question is mandatory","errorCode":"QUESTION_MANDATORY"}"#,
    );
    let Error::InvalidRequest(api) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(api.format(), ErrorFormat::Ai);
    assert_eq!(api.code(), Some("QUESTION_MANDATORY"));
    assert_eq!(e.ai_code(), Some(AiErrorCode::QuestionMandatory));
    assert_eq!(api.message(), Some("Question is mandatory"));
    assert_eq!(
        e.to_string(),
        "invalid request (400 QUESTION_MANDATORY): Question is mandatory"
    );
    assert_eq!(
        chain(&e),
        "invalid request (400 QUESTION_MANDATORY): Question is mandatory"
    );
}

#[test]
fn ai_500_internal_server_error_is_server() {
    let e = respond(
        ErrorFormat::Ai,
        Area::Assistant,
        500,
        r#"{"errorMessage":"boom","errorCode":"INTERNAL_SERVER_ERROR"}"#,
    );
    assert!(matches!(&e, Error::Server(api) if api.code() == Some("INTERNAL_SERVER_ERROR")));
    assert_eq!(e.ai_code(), Some(AiErrorCode::InternalServerError));
    assert!(e.is_retryable());
}

/// The gateway's `fault` envelope on an AI endpoint is not the AI format: no AI code,
/// whatever its `errorcode` (empty, a gateway code, or an AI code's spelling); the code
/// and message stay readable as the gateway's.
#[test]
fn a_gateway_fault_envelope_on_an_ai_endpoint_has_no_ai_code() {
    for errorcode in [
        "",
        "policies.ratelimit.QuotaViolation",
        "QUESTION_MANDATORY",
    ] {
        let body = serde_json::json!({"fault": {"faultstring": "Rate limit quota violation",
                                               "detail": {"errorcode": errorcode}}});
        let e = Error::from_response(
            ErrorFormat::Ai,
            Area::Agents,
            429,
            &HeaderMap::new(),
            Bytes::from(body.to_string()),
            NOW,
        );
        assert_eq!(e.ai_code(), None, "{errorcode:?}");
        let api = e.api_error().expect("a response");
        assert!(api.is_gateway_fault());
        assert_eq!(api.ai_code(), None);
        assert_eq!(api.code(), Some(errorcode));
        assert_eq!(api.message(), Some("Rate limit quota violation"));
    }
    let ai = respond(
        ErrorFormat::Ai,
        Area::Agents,
        400,
        r#"{"errorMessage":"","errorCode":"QUESTION_MANDATORY"}"#,
    );
    assert!(!ai.api_error().unwrap().is_gateway_fault());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

    /// On an AI endpoint, an AI code is read exactly when the body carries a string
    /// `errorCode`: the gateway's envelope, any other object, or any bytes give `None`.
    #[test]
    fn an_ai_code_only_from_an_errorcode_of_the_body(
        envelope in proptest::option::of((".{0,20}", proptest::option::of(".{0,20}"))),
        error_code in proptest::option::of("[A-Z_]{0,20}"),
        status in 400u16..600,
        garbage in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        raw in proptest::prelude::any::<bool>(),
    ) {
        let mut body = serde_json::Map::new();
        if let Some((faultstring, errorcode)) = &envelope {
            body.insert("fault".into(), serde_json::json!({"faultstring": faultstring,
                                                           "detail": {"errorcode": errorcode}}));
        }
        if let Some(code) = &error_code {
            body.insert("errorCode".into(), code.as_str().into());
        }
        let bytes = if raw { garbage } else { serde_json::to_vec(&body).unwrap() };
        let e = Error::from_response(ErrorFormat::Ai, Area::Assistant, status, &HeaderMap::new(), Bytes::from(bytes), NOW);
        let expected = if raw { None } else { error_code.as_deref().map(AiErrorCode::from) };
        // Random bytes may happen to be an AI body; they never are in 40 bytes of noise
        // that is not JSON.
        let garbage_is_ai = raw && e.api_error().is_some_and(|a| a.code().is_some());
        proptest::prop_assume!(!garbage_is_ai);
        proptest::prop_assert_eq!(e.ai_code(), expected);
    }
}

#[test]
fn ai_404_is_not_found() {
    let e = respond(
        ErrorFormat::Ai,
        Area::KnowledgeBases,
        404,
        r#"{"errorMessage":"KB not found","errorCode":"NOT_FOUND"}"#,
    );
    assert!(matches!(e, Error::NotFound(_)));
    assert_eq!(e.status(), Some(404));
    // A code the reference does not name: typed as Other, kept verbatim.
    let code = e.ai_code().expect("a code");
    assert_eq!(code, AiErrorCode::Other("NOT_FOUND".into()));
    assert!(!code.is_known());
    assert_eq!(e.code(), Some("NOT_FOUND"));
}

#[test]
fn ai_429_is_throttled_with_retry_after() {
    let e = Error::from_response(
        ErrorFormat::Ai,
        Area::DocumentAi,
        429,
        &with_gateway(OVER_QPS, "3"),
        Bytes::new(),
        NOW,
    );
    let Error::Throttled { retry_after, error } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(3)));
    assert_eq!(error.gateway_code(), Some(OVER_QPS));
    assert!(e.is_retryable());
    assert_eq!(e.to_string(), "throttled, retry after 3s (429)");
}

#[test]
fn ai_429_without_a_code_asking_to_wait_till_midnight_is_ai_quota_exhausted() {
    // The platform's daily AI quota: 429 and the seconds to midnight UTC, no code.
    let mut headers = HeaderMap::new();
    headers.insert(http::header::RETRY_AFTER, "40000".parse().unwrap());
    let e = Error::from_response(
        ErrorFormat::Ai,
        Area::DocumentAi,
        429,
        &headers,
        Bytes::new(),
        NOW,
    );
    let Error::QuotaExhausted {
        class, resets_in, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*class, Some(LimitClass::Ai));
    assert_eq!(*resets_in, Some(Duration::from_secs(40_000)));
    assert!(!e.is_retryable());
}

#[test]
fn ai_429_with_over_rate_is_ai_quota_exhausted() {
    let e = Error::from_response(
        ErrorFormat::Ai,
        Area::HybridSearch,
        429,
        &with_gateway(OVER_RATE, "7200"),
        Bytes::new(),
        NOW,
    );
    let Error::QuotaExhausted {
        class,
        resets_in,
        error,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*class, Some(LimitClass::Ai));
    assert_eq!(*resets_in, Some(Duration::from_secs(7200)));
    assert!(error.is_some());
    assert!(!e.is_retryable());
    assert_eq!(
        e.to_string(),
        "daily ai quota exhausted, resets in 2h (429)"
    );
}

// What a status becomes, in each format

/// One test per row of the reference's error tables that says only what a status becomes: the
/// answer (format, area, status, body), the variant, and where the row says them, `code()`,
/// `Display` and whether the call is retried.
macro_rules! status_tests {
    ($(
        $name:ident {
            $format:ident $area:ident $status:literal $body:literal => $variant:pat
            $(, code $code:literal)? $(, says $display:literal)? $(, retried $retried:literal)?
        }
    )*) => {$(
        #[test]
        fn $name() {
            let e = respond(ErrorFormat::$format, Area::$area, $status, $body);
            assert!(matches!(e, $variant), "{e:?}");
            $(assert_eq!(e.code(), Some($code));)?
            $(assert_eq!(e.to_string(), $display);)?
            $(assert_eq!(e.is_retryable(), $retried);)?
        }
    )*};
}

status_tests! {
    ai_403_on_agents_is_feature_not_enabled {
        Ai Agents 403 ""
        => Error::Forbidden { reason: ForbiddenReason::FeatureNotEnabled, .. },
        says "forbidden, feature not enabled (403)"
    }
    webhooks_400_hook_invalid_url_is_invalid_request {
        Webhooks Webhooks 400
        r#"{"code":"hook_invalid_url","message":"url must be https"}"#
        => Error::InvalidRequest(_), code "hook_invalid_url"
    }
    webhooks_401_is_unauthorized {
        Webhooks Identity 401
        r#"{"code":"gateway_error_forbidden_not_authorized","message":"Not authorized"}"#
        => Error::Unauthorized(_),
        says "unauthorized, token invalid or revoked (401 gateway_error_forbidden_not_authorized): Not authorized",
        retried false
    }
    webhooks_403_missing_scope_error_is_missing_scope {
        Webhooks Webhooks 403
        r#"{"code":"missing_scope_error","message":"Missing scope"}"#
        => Error::Forbidden { reason: ForbiddenReason::MissingScope, .. }
    }
    webhooks_404_hook_not_found_error_is_not_found {
        Webhooks Webhooks 404
        r#"{"code":"hook_not_found_error","message":"Webhook not found"}"#
        => Error::NotFound(_), code "hook_not_found_error"
    }
    webhooks_409_hook_quota_error_is_conflict {
        Webhooks Webhooks 409
        r#"{"code":"hook_quota_error","message":"Too many webhooks"}"#
        => Error::Conflict(_), says "conflict (409 hook_quota_error): Too many webhooks",
        retried false
    }
    audit_401_is_unauthorized {
        General Audit 401
        r#"{"Errors":[{"description":"invalid token","code":"UNAUTHORIZED"}]}"#
        => Error::Unauthorized(_)
    }
    audit_403_is_may_not_run_reports {
        General Audit 403
        r#"{"Errors":[{"description":"forbidden","code":"FORBIDDEN"}]}"#
        => Error::Forbidden { reason: ForbiddenReason::MayNotRunReports, .. }
    }
    audit_404_is_not_found {
        General Audit 404
        r#"{"Errors":[{"description":"job not found","code":"NOT_FOUND"}]}"#
        => Error::NotFound(_)
    }
}

// Webhooks format, one test per row of the reference's table (the rows that say only the
// variant are in the table above)

#[test]
fn webhooks_400_request_schema_error_is_invalid_request_with_details() {
    let e = respond(
        ErrorFormat::Webhooks,
        Area::Webhooks,
        400,
        r#"{"code":"request_schema_error","message":"Invalid request","details":"eventType: unknown value"}"#,
    );
    assert_eq!(e.ai_code(), None, "not the AI format");
    let Error::InvalidRequest(api) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(api.format(), ErrorFormat::Webhooks);
    assert_eq!(api.details(), Some("eventType: unknown value"));
    assert_eq!(e.code(), Some("request_schema_error"));
}

#[test]
fn webhooks_500_without_body_is_server_with_empty_body() {
    let e = respond(ErrorFormat::Webhooks, Area::Webhooks, 500, "");
    let Error::Server(api) = &e else {
        panic!("{e:?}")
    };
    assert!(api.body().is_empty());
    assert_eq!((api.code(), api.message()), (None, None));
    assert_eq!(e.to_string(), "server error (500)");
}

// General and audit format

#[test]
fn audit_400_keeps_every_message() {
    let e = respond(
        ErrorFormat::General,
        Area::Audit,
        400,
        r#"{"Errors":[{"description":"format is required","code":"MISSING_FIELD"},{"description":"date_end must be after date_start","code":"INVALID_VALUE"}]}"#,
    );
    let Error::InvalidRequest(api) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(api.format(), ErrorFormat::General);
    assert_eq!(
        api.messages(),
        [
            ErrorMessage {
                code: Some("MISSING_FIELD".into()),
                description: Some("format is required".into())
            },
            ErrorMessage {
                code: Some("INVALID_VALUE".into()),
                description: Some("date_end must be after date_start".into())
            },
        ]
    );
    assert_eq!(e.code(), Some("MISSING_FIELD"));
    assert_eq!(
        api.to_string(),
        "http 400 MISSING_FIELD: format is required; date_end must be after date_start"
    );
}

#[test]
fn audit_429_is_throttled_with_http_date_retry_after() {
    let mut headers = HeaderMap::new();
    headers.insert(
        "retry-after",
        HeaderValue::from_static("Thu, 01 Jan 1970 00:02:00 GMT"),
    );
    let e = Error::from_response(
        ErrorFormat::General,
        Area::Audit,
        429,
        &headers,
        Bytes::new(),
        NOW,
    );
    assert!(
        matches!(e, Error::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(120))
    );
}

#[test]
fn general_403_over_qps_is_throttled() {
    let e = Error::from_response(
        ErrorFormat::General,
        Area::Events,
        403,
        &with_gateway(OVER_QPS, "1"),
        Bytes::new(),
        NOW,
    );
    assert!(
        matches!(e, Error::Throttled { retry_after: Some(d), .. } if d == Duration::from_secs(1))
    );
    assert!(e.is_retryable());
}

#[test]
fn general_403_over_rate_is_general_quota_exhausted() {
    let e = Error::from_response(
        ErrorFormat::General,
        Area::Audit,
        403,
        &with_gateway(OVER_RATE, "3600"),
        Bytes::new(),
        NOW,
    );
    let Error::QuotaExhausted {
        class, resets_in, ..
    } = e
    else {
        panic!()
    };
    assert_eq!(class, Some(LimitClass::General));
    assert_eq!(resets_in, Some(Duration::from_secs(3600)));
}

/// A 403 with a gateway code the SDK does not know is a throttle of a new kind when it
/// carries `Retry-After` (retried, then `Throttled` naming the code), and a refusal
/// without it: `Throttled` among the reasons when the code says so.
#[test]
fn unknown_gateway_code_on_403_is_throttled_with_retry_after_and_forbidden_without() {
    for code in ["ERR_403_DEVELOPER_OVER_BURST", "ERR_403"] {
        let e = Error::from_response(
            ErrorFormat::General,
            Area::Events,
            403,
            &with_gateway(code, "1"),
            Bytes::new(),
            NOW,
        );
        assert!(
            matches!(e, Error::Throttled { retry_after: Some(r), .. } if r == Duration::from_secs(1)),
            "{e:?}"
        );
        assert!(e.to_string().contains(code), "{e}");
    }
    let without_retry_after = |code: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(
            crate::gateway::GATEWAY_ERROR_CODE,
            http::HeaderValue::from_static(code),
        );
        Error::from_response(
            ErrorFormat::General,
            Area::Events,
            403,
            &headers,
            Bytes::new(),
            NOW,
        )
    };
    let cases = [
        ("ERR_403_DEVELOPER_OVER_BURST", ForbiddenReason::Throttled),
        ("ERR_403", ForbiddenReason::Other),
    ];
    for (code, reason) in cases {
        let e = without_retry_after(code);
        assert!(
            matches!(&e, Error::Forbidden { reason: r, .. } if *r == reason),
            "{code}: {e:?}"
        );
    }
}

#[test]
fn other_statuses_map_by_class() {
    assert!(matches!(
        respond(ErrorFormat::General, Area::Events, 422, ""),
        Error::InvalidRequest(_)
    ));
    assert!(matches!(
        respond(ErrorFormat::General, Area::Events, 503, ""),
        Error::Server(_)
    ));
    assert!(matches!(
        respond(ErrorFormat::General, Area::Events, 418, ""),
        Error::UnexpectedStatus(_)
    ));
    assert!(matches!(
        respond(ErrorFormat::General, Area::Events, 302, ""),
        Error::UnexpectedStatus(_)
    ));
    assert!(matches!(
        respond(ErrorFormat::General, Area::Events, 403, ""),
        Error::Forbidden {
            reason: ForbiddenReason::Other,
            ..
        }
    ));
}

// Bodies that do not fit

#[test]
fn garbage_body_is_kept_raw() {
    for body in [
        "<html>502 Bad Gateway</html>",
        "not json",
        "[1,2]",
        "\"text\"",
        "{\"unrelated\":1}",
        "{\"Errors\":",
    ] {
        let e = respond(ErrorFormat::General, Area::Audit, 502, body);
        let Error::Server(api) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(api.body(), body.as_bytes());
        assert_eq!((api.code(), api.message()), (None, None), "{body}");
        assert!(api.messages().is_empty());
    }
    let invalid_utf8 = Bytes::from_static(b"\xff\xfe\x00");
    let e = Error::from_response(
        ErrorFormat::Ai,
        Area::Agents,
        500,
        &HeaderMap::new(),
        invalid_utf8.clone(),
        NOW,
    );
    assert_eq!(*e.api_error().unwrap().body(), invalid_utf8);
}

#[test]
fn body_in_another_format_than_expected_is_still_read() {
    // A gateway 401 in webhooks format on an AI endpoint.
    let e = respond(
        ErrorFormat::Ai,
        Area::Agents,
        401,
        r#"{"code":"gateway_error_forbidden_not_authorized","message":"Not authorized"}"#,
    );
    let api = e.api_error().unwrap();
    assert_eq!(api.format(), ErrorFormat::Webhooks);
    assert_eq!(api.code(), Some("gateway_error_forbidden_not_authorized"));
}

#[test]
fn a_body_whose_code_is_not_text_is_kept_raw() {
    // The reference's error codes are strings: a body that breaks its format is not
    // guessed at.
    let body = r#"{"errorCode":42,"errorMessage":null}"#;
    let e = respond(ErrorFormat::Ai, Area::Agents, 400, body);
    assert_eq!((e.code(), e.api_error().unwrap().message()), (None, None));
    assert_eq!(e.api_error().unwrap().body(), body.as_bytes());
}

// Success bodies

#[derive(Debug, serde::Deserialize)]
struct Page {
    #[allow(dead_code)]
    items: Vec<Item>,
}

#[derive(Debug, serde::Deserialize)]
struct Item {
    #[allow(dead_code)]
    id: u64,
}

#[test]
fn decode_names_the_json_path_of_the_mismatch() {
    let body = Bytes::from_static(br#"{"items":[{"id":1},{"id":2},{"id":"three"}]}"#);
    let e = Error::decode::<Page>(body.clone()).unwrap_err();
    let Error::Decode {
        path,
        message,
        body: kept,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(path, "items[2].id");
    assert!(
        message.starts_with("invalid type: string \"three\", expected u64"),
        "{message}"
    );
    assert_eq!(**kept, body);
    assert!(
        e.to_string()
            .starts_with("response body does not decode at items[2].id: ")
    );
}

#[test]
fn decode_reports_truncated_and_trailing_bodies() {
    let e = Error::decode::<Page>(Bytes::from_static(br#"{"items":[{"id":1}"#)).unwrap_err();
    assert!(
        matches!(&e, Error::Decode { message, .. } if message.contains("EOF")),
        "{e:?}"
    );
    let e = Error::decode::<Page>(Bytes::from_static(br#"{"items":[]} x"#)).unwrap_err();
    assert!(
        matches!(&e, Error::Decode { message, .. } if message.contains("trailing")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_transport_error_names_the_operation_and_the_host_once() {
    // Nothing listens on port 9 of loopback: the connection is refused.
    let error = reqwest::Client::new()
        .get("http://127.0.0.1:9/pubapi/v1/ai/agents/agt-1/ask/r-1/status")
        .send()
        .await
        .unwrap_err();
    let error = Error::Transport(error);
    assert_eq!(
        error.to_string(),
        "transport error calling getAgentRequestStatus on 127.0.0.1: could not connect"
    );
    let text = chain(&error);
    assert_eq!(text.matches("transport error").count(), 1, "{text}");
    let shared = reqwest::Client::new()
        .get("http://127.0.0.1:9/pubapi/v1/webhooks/w-1")
        .send()
        .await
        .unwrap_err();
    // One path, several methods: every operation it may have been.
    let text = Error::Transport(shared).to_string();
    for id in ["updateWebhook", "deleteWebhook"] {
        assert!(text.contains(id), "{text}");
    }
    assert!(text.ends_with(" on 127.0.0.1: could not connect"), "{text}");
}

#[test]
fn decode_returns_the_value() {
    let page: Page = Error::decode(Bytes::from_static(br#"{"items":[{"id":7}]}"#)).unwrap();
    assert_eq!(page.items[0].id, 7);
}

// Input errors and redaction

#[test]
fn input_errors_chain_and_never_show_secrets() {
    let token_error = SecretToken::try_from("CANARY token").unwrap_err();
    let act_as_error = ActAs::username("CANARY\r\n").unwrap_err();
    let path_error = crate::path::encode_segment("..").unwrap_err();
    let errors: [Error; 4] = [
        token_error.into(),
        act_as_error.into(),
        path_error.into(),
        InputError::Invalid {
            field: "question",
            problem: "longer than 35000 characters".into(),
        }
        .into(),
    ];
    let texts: Vec<String> = errors.iter().map(|e| chain(e)).collect();
    assert_eq!(
        texts,
        [
            "invalid token; nothing was sent <- token has a byte that is not visible ascii at 6",
            "invalid impersonation value; nothing was sent <- impersonation value has a control character at byte 6",
            "invalid path; nothing was sent <- path element 0 (\"..\") is a dot segment",
            "invalid question: longer than 35000 characters; nothing was sent",
        ]
    );
    for (error, text) in errors.iter().zip(&texts) {
        assert!(!text.contains("CANARY"));
        assert!(!format!("{error:?}").contains("CANARY"));
        assert!(!error.is_retryable());
        assert_eq!(error.status(), None);
    }
}

#[test]
fn timeout_is_retryable_and_has_no_status() {
    let e = Error::Timeout {
        elapsed: Duration::from_secs(180),
        bound: crate::error::TimeoutBound::Operation,
        attempts: 0,
        request_id: None,
    };
    assert_eq!(e.to_string(), "timed out after 3m");
    let silent = Error::Timeout {
        elapsed: Duration::from_secs(2),
        bound: crate::error::TimeoutBound::Silence,
        attempts: 3,
        request_id: Some("req-1".parse().unwrap()),
    };
    assert_eq!(
        silent.to_string(),
        "timed out: nothing received for 2s (the attempt timeout), 3 attempts [request id req-1]"
    );
    assert!(e.is_retryable());
    assert_eq!(e.status(), None);
    assert!(e.source().is_none());
}

#[test]
fn limiter_quota_error_without_response_displays_class() {
    let e = Error::QuotaExhausted {
        class: Some(LimitClass::General),
        resets_in: Some(Duration::from_secs(60)),
        error: None,
        request_id: None,
    };
    assert_eq!(e.to_string(), "daily general quota exhausted, resets in 1m");
    assert_eq!(e.code(), None);
    assert!(e.source().is_none());
}

#[test]
fn operations_carry_the_specs_class_and_format() {
    let op = |id: &str| {
        pubapi_sdk::operations::ALL
            .iter()
            .find(|op| op.id == id)
            .unwrap()
    };
    assert_eq!(Area::HybridSearch.limit_class(), LimitClass::Ai);
    assert_eq!(Area::Audit.limit_class(), LimitClass::General);
    assert_eq!(op("askCopilot").error_format, ErrorFormat::Ai);
    assert_eq!(op("whoami").error_format, ErrorFormat::Webhooks);
    assert_eq!(op("listEventsV2").error_format, ErrorFormat::General);
    for op in pubapi_sdk::operations::ALL {
        assert_eq!(op.limit_class, op.area.limit_class(), "{}", op.id);
    }
}
