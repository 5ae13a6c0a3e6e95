//! Every variant of each public error type, shown (a test module of the crate's root, so that
//! no area imports the others for it): no `Display` holds Rust's `Debug` text
//! (`Some(..)`, `None`, `Type { .. }`, `Variant(..)`, `a::path`, `["list"]`). A `Display` ends
//! up in a log line or in front of a person, who should read words.
//!
//! Each enum's variants are listed in one exhaustive `match` (a new variant does not compile
//! until it is named here) and every name must have a sample. The walks of an area's errors
//! run with its feature.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::HeaderMap;
use serde_json::json;

use crate::act_as::ImpersonationError;
#[cfg(feature = "ai")]
use crate::ai::AskError;
#[cfg(feature = "audit")]
use crate::audit::{CsvError, DayError, ExportDay, ExportError, ReadError};
use crate::client::BuildError;
use crate::error::{ApiError, Area, Error, ErrorFormat, InputError, RawBody};
use crate::fleet::FleetError;
use crate::limits::{BudgetConflict, LimitClass, LimitError, Limits, Pacing};
use crate::password_grant::GrantError;
use crate::path::PathError;
use crate::request::token_endpoint::TokenPacingError;
use crate::request_id::InvalidRequestId;
use crate::time::TimeError;
use crate::token::TokenError;
#[cfg(all(feature = "ai", feature = "audit"))]
use crate::waiter::{Started, WaitError};
#[cfg(feature = "webhooks")]
use crate::webhook::endpoint::{EndpointProblem, EndpointRefused};
#[cfg(feature = "webhooks")]
use crate::webhook::{DeliveryParseError, EventFilterError, ReceiverBuildError, SecretError};

/// What in `shown` looks like Rust's `Debug` output rather than words, if anything.
fn debug_text(shown: &str) -> Option<String> {
    for needle in ["Some(", "None", "::", "[\"", "\\\"", "{ ", " }"] {
        if shown.contains(needle) {
            return Some(needle.to_owned());
        }
    }
    // `Type {` or `Variant(`: a capitalised identifier right before a brace or parenthesis.
    let chars: Vec<char> = shown.chars().collect();
    for (at, c) in chars.iter().enumerate() {
        if !c.is_ascii_uppercase()
            || chars
                .get(at.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            continue;
        }
        let end = chars[at..]
            .iter()
            .position(|c| !(c.is_alphanumeric() || *c == '_'))
            .map_or(chars.len(), |n| at + n);
        let word: String = chars[at..end].iter().collect();
        let lowercase_after_first = word.chars().skip(1).any(|c| c.is_ascii_lowercase());
        let next = chars[end..].iter().collect::<String>();
        if lowercase_after_first && (next.starts_with('(') || next.starts_with(" {")) {
            return Some(format!("{word}{}", &next[..1]));
        }
    }
    None
}

#[test]
fn the_check_finds_debug_text_and_passes_words() {
    for debug in [
        "limits Limits { general: Budget { per_second: Some(2) } }",
        "status Other(\"x\")",
        "kind AuditReportKind::Files",
        "users [\"ada\"]",
        "retry None",
    ] {
        assert!(debug_text(debug).is_some(), "{debug}");
    }
    for words in [
        "daily ai quota exhausted, resets in 3h 21m 47s (429 ERR_403_DEVELOPER_OVER_RATE)",
        "invalid `webhookId` of getWebhookDetails",
        "path element 2 (\"..\") is a dot segment",
        "forbidden, missing scope (403 missing_scope_error): Missing scope",
    ] {
        assert_eq!(debug_text(words), None, "{words}");
    }
}

/// Shows every sample of `$ty` and checks it; the match names every variant.
macro_rules! walk {
    ($ty:ty, $samples:expr, { $($(#[$attr:meta])* $pat:pat => $name:literal),+ $(,)? }) => {{
        #[allow(unreachable_patterns)]
        fn name(e: &$ty) -> &'static str {
            match e {
                $($(#[$attr])* $pat => $name,)+
            }
        }
        let all: BTreeSet<&str> = [$($(#[$attr])* $name,)+].into_iter().collect();
        let samples: Vec<$ty> = $samples;
        let named: BTreeSet<&str> = samples.iter().map(name).collect();
        assert_eq!(named, all, "every variant of {} has a sample", stringify!($ty));
        for sample in &samples {
            let shown = sample.to_string();
            assert_eq!(
                debug_text(&shown),
                None,
                "{}::{} shows Debug text: {shown}",
                stringify!($ty),
                name(sample)
            );
        }
    }};
}

fn api_error() -> ApiError {
    ApiError::new(
        ErrorFormat::Ai,
        429,
        &HeaderMap::new(),
        Bytes::from_static(br#"{"errorCode":"OVER_RATE","errorMessage":"Daily limit"}"#),
        SystemTime::UNIX_EPOCH,
    )
}

fn api() -> Error {
    Error::from_response(
        ErrorFormat::General,
        Area::Audit,
        404,
        &HeaderMap::new(),
        Bytes::from_static(br#"{"Errors":[{"code":"NOT_FOUND","description":"no job 7"}]}"#),
        SystemTime::UNIX_EPOCH,
    )
}

fn transport() -> reqwest::Error {
    reqwest::Client::new()
        .get("not a url")
        .build()
        .expect_err("a builder error")
}

fn conflict() -> BudgetConflict {
    // As the limiter names the settings (see `Limits`' and `Pacing`'s `Display`).
    BudgetConflict {
        setting: "limits",
        existing: Limits::default().to_string(),
        requested: Pacing::default().to_string(),
    }
}

fn errors() -> Vec<Error> {
    let e = api_error;
    vec![
        Error::Unauthorized(e()),
        Error::Forbidden {
            reason: crate::error::ForbiddenReason::MissingScope,
            error: e(),
        },
        Error::NotFound(e()),
        Error::Conflict(e()),
        Error::InvalidRequest(e()),
        Error::Throttled {
            retry_after: Some(Duration::from_secs(90)),
            error: e(),
        },
        Error::QuotaExhausted {
            class: Some(LimitClass::Ai),
            resets_in: Some(Duration::from_secs(12_107)),
            error: Some(e()),
            request_id: None,
        },
        Error::QuotaExhausted {
            class: None,
            resets_in: None,
            error: None,
            request_id: None,
        },
        Error::Server(e()),
        Error::UnexpectedStatus(e()),
        Error::Transport(transport()),
        Error::Timeout {
            elapsed: Duration::from_secs(180),
            bound: crate::error::TimeoutBound::Operation,
            attempts: 2,
            request_id: None,
        },
        Error::Decode {
            path: "items[2].id".into(),
            message: "invalid type: string \"abc\", expected u32".into(),
            body: RawBody::default(),
            request_id: None,
        },
        Error::InvalidInput(InputError::Invalid {
            field: "question",
            problem: "is empty".into(),
        }),
        Error::RetryNotSent {
            error: Box::new(InputError::Token(TokenError::unavailable("vault sealed"))),
            request_id: "0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f80".parse().unwrap(),
        },
        Error::Checkpoint(FleetError::corrupt("checkpoint.json", "not a number")),
        Error::FleetUnavailable {
            class: crate::LimitClass::General,
            waited: std::time::Duration::from_secs(180),
            error: FleetError::unavailable("redis: connection refused"),
        },
        Error::Removed {
            operation: pubapi_sdk::operations::id::ASK_COPILOT,
            sunset: SystemTime::UNIX_EPOCH,
            successor: Some(pubapi_sdk::operations::id::ASK_ASSISTANT),
        },
        #[cfg(feature = "blocking")]
        Error::InAsyncContext,
    ]
}

/// The errors of a call and of its input show words.
#[test]
fn no_error_display_shows_debug_text() {
    walk!(Error, errors(), {
        Error::Unauthorized(_) => "Unauthorized",
        Error::Forbidden { .. } => "Forbidden",
        Error::NotFound(_) => "NotFound",
        Error::Conflict(_) => "Conflict",
        Error::InvalidRequest(_) => "InvalidRequest",
        Error::Throttled { .. } => "Throttled",
        Error::QuotaExhausted { .. } => "QuotaExhausted",
        Error::Server(_) => "Server",
        Error::UnexpectedStatus(_) => "UnexpectedStatus",
        Error::Transport(_) => "Transport",
        Error::Timeout { .. } => "Timeout",
        Error::Decode { .. } => "Decode",
        Error::InvalidInput(_) => "InvalidInput",
        Error::RetryNotSent { .. } => "RetryNotSent",
        Error::Checkpoint(_) => "Checkpoint",
        Error::FleetUnavailable { .. } => "FleetUnavailable",
        Error::Removed { .. } => "Removed",
        #[cfg(feature = "blocking")]
        Error::InAsyncContext => "InAsyncContext",
    });
    walk!(InputError, vec![
        InputError::Impersonation(ImpersonationError::Empty),
        InputError::Path(PathError::Empty),
        InputError::PathValue {
            operation: pubapi_sdk::operations::id::GET_WEBHOOK_DETAILS,
            parameter: "webhookId",
            error: PathError::Slash { element: "a/b".into() },
        },
        InputError::Token(TokenError::Empty),
        InputError::BudgetConflict(conflict()),
        InputError::Invalid { field: "semanticWeight", problem: "1.5 is above 1".into() },
        #[cfg(feature = "webhooks")]
        InputError::Endpoint(EndpointRefused {
            endpoint: "hooks.example.com:443".into(),
            problem: EndpointProblem::SelfSigned,
        }),
    ], {
        InputError::Impersonation(_) => "Impersonation",
        InputError::Path(_) => "Path",
        InputError::PathValue { .. } => "PathValue",
        InputError::Token(_) => "Token",
        InputError::BudgetConflict(_) => "BudgetConflict",
        InputError::Invalid { .. } => "Invalid",
        #[cfg(feature = "webhooks")]
        InputError::Endpoint(_) => "Endpoint",
    });
}

/// The client's build, its limits and its token endpoint's errors show words.
#[test]
fn no_build_or_limit_error_display_shows_debug_text() {
    walk!(BuildError, vec![
        BuildError::MissingBaseUrl,
        BuildError::MissingToken,
        BuildError::InvalidDomain("acme example".into()),
        BuildError::InvalidBaseUrl("relative URL without a base".into()),
        BuildError::Http("no tls backend".into()),
        BuildError::BudgetConflict(conflict()),
        #[cfg(feature = "blocking")]
        BuildError::InAsyncContext,
        #[cfg(feature = "blocking")]
        BuildError::Runtime("no threads".into()),
    ], {
        BuildError::MissingBaseUrl => "MissingBaseUrl",
        BuildError::MissingToken => "MissingToken",
        BuildError::InvalidDomain(_) => "InvalidDomain",
        BuildError::InvalidBaseUrl(_) => "InvalidBaseUrl",
        BuildError::Http(_) => "Http",
        BuildError::BudgetConflict(_) => "BudgetConflict",
        #[cfg(feature = "blocking")]
        BuildError::InAsyncContext => "InAsyncContext",
        #[cfg(feature = "blocking")]
        BuildError::Runtime(_) => "Runtime",
    });
    walk!(LimitError, vec![
        LimitError::DailyBudgetExhausted { class: LimitClass::Ai, available_in: Duration::from_secs(60) },
        LimitError::WouldExceedDeadline {
            class: LimitClass::General,
            wait: Duration::from_secs(2),
            max_wait: Duration::from_secs(1),
        },
        LimitError::NoBudget { class: LimitClass::Ai },
        LimitError::StoreUnavailable {
            class: LimitClass::General,
            waited: Duration::from_secs(3),
            error: FleetError::unavailable("redis: connection refused"),
        },
    ], {
        LimitError::DailyBudgetExhausted { .. } => "DailyBudgetExhausted",
        LimitError::WouldExceedDeadline { .. } => "WouldExceedDeadline",
        LimitError::NoBudget { .. } => "NoBudget",
        LimitError::StoreUnavailable { .. } => "StoreUnavailable",
    });
    walk!(TokenPacingError, vec![
        TokenPacingError::Limit(LimitError::NoBudget { class: LimitClass::General }),
        TokenPacingError::Http(transport()),
    ], {
        TokenPacingError::Limit(_) => "Limit",
        TokenPacingError::Http(_) => "Http",
    });
    walk!(GrantError, vec![
        GrantError::InvalidUrl { url: "ftp://***@idp".into(), problem: "not https".into() },
        GrantError::Refused {
            status: 400,
            error: Some("invalid_grant".into()),
            description: Some("Bad credentials".into()),
        },
        GrantError::Throttled { retry_after: Some(Duration::from_secs(3600)), description: None },
        GrantError::Paced(LimitError::NoBudget { class: LimitClass::General }),
        GrantError::Http(transport()),
        GrantError::Malformed { status: 200, problem: "no access_token".into() },
    ], {
        GrantError::InvalidUrl { .. } => "InvalidUrl",
        GrantError::Refused { .. } => "Refused",
        GrantError::Throttled { .. } => "Throttled",
        GrantError::Paced(_) => "Paced",
        GrantError::Http(_) => "Http",
        GrantError::Malformed { .. } => "Malformed",
    });
}

/// The refusals of a token, a path or act-as value, and a time show words.
#[test]
fn no_value_error_display_shows_debug_text() {
    walk!(TokenError, vec![
        TokenError::Empty,
        TokenError::InvalidCharacter { position: 3 },
        TokenError::unavailable("vault sealed"),
    ], {
        TokenError::Empty => "Empty",
        TokenError::InvalidCharacter { .. } => "InvalidCharacter",
        TokenError::Unavailable(_) => "Unavailable",
    });
    walk!(PathError, vec![
        PathError::Empty,
        PathError::EmptyElement { index: 1 },
        PathError::DotSegment { index: 2, element: "..".into() },
        PathError::Backslash { index: 0, element: "a\\b".into() },
        PathError::Slash { element: "a/b".into() },
    ], {
        PathError::Empty => "Empty",
        PathError::EmptyElement { .. } => "EmptyElement",
        PathError::DotSegment { .. } => "DotSegment",
        PathError::Backslash { .. } => "Backslash",
        PathError::Slash { .. } => "Slash",
    });
    walk!(ImpersonationError, vec![
        ImpersonationError::Empty,
        ImpersonationError::TooLong { len: 300 },
        ImpersonationError::ControlCharacter { position: 1 },
        ImpersonationError::NonAscii { position: 2 },
        ImpersonationError::SurroundingWhitespace,
        ImpersonationError::InvalidEmail(crate::act_as::EmailProblem::MissingAt),
    ], {
        ImpersonationError::Empty => "Empty",
        ImpersonationError::TooLong { .. } => "TooLong",
        ImpersonationError::ControlCharacter { .. } => "ControlCharacter",
        ImpersonationError::NonAscii { .. } => "NonAscii",
        ImpersonationError::SurroundingWhitespace => "SurroundingWhitespace",
        ImpersonationError::InvalidEmail(_) => "InvalidEmail",
    });
    walk!(TimeError, vec![
        crate::time::instant("timestamp", "yesterday").unwrap_err(),
        crate::time::epoch_millis("createdOn", i64::MAX).unwrap_err(),
    ], {
        TimeError::NotAnInstant { .. } => "NotAnInstant",
        TimeError::OutOfRange { .. } => "OutOfRange",
    });
    walk!(InvalidRequestId, vec![
        InvalidRequestId::Empty,
        InvalidRequestId::TooLong { length: 37, max: 36 },
        InvalidRequestId::Space { position: 4 },
        InvalidRequestId::LineBreak { position: 4 },
        InvalidRequestId::Control { position: 4 },
        InvalidRequestId::NotAscii { position: 2 },
    ], {
        InvalidRequestId::Empty => "Empty",
        InvalidRequestId::TooLong { .. } => "TooLong",
        InvalidRequestId::Space { .. } => "Space",
        InvalidRequestId::LineBreak { .. } => "LineBreak",
        InvalidRequestId::Control { .. } => "Control",
        InvalidRequestId::NotAscii { .. } => "NotAscii",
    });
}

/// The errors of the waiters and of the AI's asks show words.
#[test]
#[cfg(all(feature = "ai", feature = "audit"))]
fn no_wrapper_error_display_shows_debug_text() {
    let started = Started::AuditJob {
        id: "job-7".into(),
        kind: crate::types::AuditReportKind::Files,
        format: crate::types::AuditFormat::Json,
    };
    walk!(WaitError<Error>, vec![
        WaitError::Failed { error: api(), polls: 3, waited: Duration::from_secs(360), started: None },
        WaitError::TimedOut {
            polls: 1,
            waited: Duration::from_secs(7200),
            started: Some(Box::new(started.clone())),
        },
        WaitError::before_waiting(api()),
    ], {
        WaitError::Failed { .. } => "Failed",
        WaitError::TimedOut { .. } => "TimedOut",
    });
    let execution: crate::types::AssistantAskResponse =
        serde_json::from_value(json!({"executionId": "ex-1", "conversationId": "c-1"})).unwrap();
    let status: crate::types::AssistantStatusResponse = serde_json::from_value(
        json!({"status": "AWAITING_USER_CONFIRMATION", "pendingActions": [{"id": 1}]}),
    )
    .unwrap();
    let request: crate::types::AgentAskResponse =
        serde_json::from_value(json!({"requestId": "r-1", "conversationId": "c-1"})).unwrap();
    let agent_status: crate::types::AgentRequestStatus =
        serde_json::from_value(json!({"status": "AWAITING_USER_CONFIRMATION"})).unwrap();
    walk!(AskError, vec![
        AskError::Api(Error::Server(api_error())),
        AskError::Failed { status: "FAILED".into(), response_text: Some("No tool answered".into()) },
        AskError::Failed { status: "FAILED".into(), response_text: None },
        AskError::AwaitingConfirmation { execution: Box::new(execution), result: Box::new(status) },
        AskError::AgentAwaitingConfirmation {
            request: Box::new(request),
            result: Box::new(agent_status),
        },
    ], {
        AskError::Api(_) => "Api",
        AskError::Failed { .. } => "Failed",
        AskError::AwaitingConfirmation { .. } => "AwaitingConfirmation",
        AskError::AgentAwaitingConfirmation { .. } => "AgentAwaitingConfirmation",
    });
    walk!(WaitError<AskError>, vec![
        WaitError::before_waiting(AskError::Api(api())),
        WaitError::TimedOut { polls: 40, waited: Duration::from_secs(240), started: None },
    ], {
        WaitError::Failed { .. } => "Failed",
        WaitError::TimedOut { .. } => "TimedOut",
    });
}

/// The audit reports' and export's errors show words.
#[test]
#[cfg(feature = "audit")]
fn no_audit_error_display_shows_debug_text() {
    let csv = || -> Vec<CsvError> {
        vec![
            CsvError::Api(api()),
            CsvError::Broken {
                received: 1024,
                error: Error::Transport(transport()),
            },
            CsvError::RowTooLarge { record: 7 },
            CsvError::Write(std::io::Error::other("disk full")),
            CsvError::NotCsv {
                content_type: "text/html".into(),
            },
        ]
    };
    walk!(CsvError, csv(), {
        CsvError::Api(_) => "Api",
        CsvError::Broken { .. } => "Broken",
        CsvError::RowTooLarge { .. } => "RowTooLarge",
        CsvError::Write(_) => "Write",
        CsvError::NotCsv { .. } => "NotCsv",
    });
    let read = || ReadError {
        resume_at: 200,
        error: api(),
    };
    assert_eq!(debug_text(&read().to_string()), None, "{}", read());
    let day = ExportDay::parse("2026-01-05").expect("a day");
    let days = || -> Vec<DayError> {
        vec![
            DayError::Api(api()),
            DayError::TimedOut {
                polls: 3,
                waited: Duration::from_secs(600),
            },
            DayError::Download(CsvError::NotCsv {
                content_type: "text/html".into(),
            }),
            DayError::Read(read()),
            DayError::Write(std::io::Error::other("disk full")),
            DayError::State {
                path: PathBuf::from("state.json"),
                error: std::io::Error::other("read-only"),
            },
        ]
    };
    walk!(DayError, days(), {
        DayError::Api(_) => "Api",
        DayError::TimedOut { .. } => "TimedOut",
        DayError::Download(_) => "Download",
        DayError::Read(_) => "Read",
        DayError::Write(_) => "Write",
        DayError::State { .. } => "State",
    });
    let path = || PathBuf::from("exports/state.json");
    walk!(ExportError, vec![
        ExportError::Missing("out folder"),
        ExportError::InvalidRequest(api()),
        ExportError::Locked { lock: path() },
        ExportError::NoState { path: path() },
        ExportError::StateEmpty { path: path() },
        ExportError::StateCorrupt { path: path(), problem: "not json".into() },
        ExportError::StateMismatch {
            path: path(),
            field: "kind",
            in_state: "logins".into(),
            asked: "files".into(),
        },
        ExportError::OutDirClaimed { claim: path(), claimed: "{}".into(), asked: "{}".into() },
        ExportError::ClaimCorrupt { claim: path(), problem: "empty".into() },
        ExportError::Io { path: path(), error: std::io::Error::other("disk full") },
        ExportError::ServerTime(api()),
        ExportError::NoServerDate,
        ExportError::Day { day, written: 2, error: DayError::Write(std::io::Error::other("x")) },
    ], {
        ExportError::Missing(_) => "Missing",
        ExportError::InvalidRequest(_) => "InvalidRequest",
        ExportError::Locked { .. } => "Locked",
        ExportError::NoState { .. } => "NoState",
        ExportError::StateEmpty { .. } => "StateEmpty",
        ExportError::StateCorrupt { .. } => "StateCorrupt",
        ExportError::StateMismatch { .. } => "StateMismatch",
        ExportError::OutDirClaimed { .. } => "OutDirClaimed",
        ExportError::ClaimCorrupt { .. } => "ClaimCorrupt",
        ExportError::Io { .. } => "Io",
        ExportError::ServerTime(_) => "ServerTime",
        ExportError::NoServerDate => "NoServerDate",
        ExportError::Day { .. } => "Day",
    });
}

/// The webhook receiver's errors show words.
#[test]
#[cfg(feature = "webhooks")]
fn no_webhook_error_display_shows_debug_text() {
    let at = jiff::Timestamp::from_second(1_767_607_200).ok();
    let refused = |problem| EndpointRefused {
        endpoint: "127.0.0.1:8443".into(),
        problem,
    };
    walk!(EndpointRefused, vec![
        refused(EndpointProblem::SelfSigned),
        refused(EndpointProblem::UnknownIssuer),
        refused(EndpointProblem::Expired { not_after: at }),
        refused(EndpointProblem::Expired { not_after: None }),
        refused(EndpointProblem::NotYetValid { not_before: at }),
        refused(EndpointProblem::NotYetValid { not_before: None }),
        refused(EndpointProblem::WrongName { host: "127.0.0.1".into(), names: vec!["hooks.example.com".into()] }),
        refused(EndpointProblem::WrongName { host: "127.0.0.1".into(), names: Vec::new() }),
        refused(EndpointProblem::Certificate { reason: "its signature does not verify".into() }),
        refused(EndpointProblem::Handshake { reason: "the endpoint ended it with TLS alert 40".into() }),
        refused(EndpointProblem::Unreachable { reason: "Connection refused (os error 111)".into() }),
    ], {
        EndpointRefused { problem: EndpointProblem::SelfSigned, .. } => "SelfSigned",
        EndpointRefused { problem: EndpointProblem::UnknownIssuer, .. } => "UnknownIssuer",
        EndpointRefused { problem: EndpointProblem::Expired { .. }, .. } => "Expired",
        EndpointRefused { problem: EndpointProblem::NotYetValid { .. }, .. } => "NotYetValid",
        EndpointRefused { problem: EndpointProblem::WrongName { .. }, .. } => "WrongName",
        EndpointRefused { problem: EndpointProblem::Certificate { .. }, .. } => "Certificate",
        EndpointRefused { problem: EndpointProblem::Handshake { .. }, .. } => "Handshake",
        EndpointRefused { problem: EndpointProblem::Unreachable { .. }, .. } => "Unreachable",
    });
    walk!(DeliveryParseError, vec![
        DeliveryParseError::NotJson(serde_json::from_str::<serde_json::Value>("{").unwrap_err()),
        DeliveryParseError::NoDataArray,
        DeliveryParseError::TooLarge { bytes: 20_000_000, limit: 10_000_000 },
        DeliveryParseError::TooManyItems { items: 20_000, limit: 10_000 },
    ], {
        DeliveryParseError::NotJson(_) => "NotJson",
        DeliveryParseError::NoDataArray => "NoDataArray",
        DeliveryParseError::TooLarge { .. } => "TooLarge",
        DeliveryParseError::TooManyItems { .. } => "TooManyItems",
    });
    walk!(EventFilterError, vec![
        EventFilterError::Empty,
        EventFilterError::NoWildcardForFamily { family: "group".into() },
        EventFilterError::UnknownWildcard { text: "user:*".into() },
        EventFilterError::UnknownEvent { name: "fs:explode".into() },
    ], {
        EventFilterError::Empty => "Empty",
        EventFilterError::NoWildcardForFamily { .. } => "NoWildcardForFamily",
        EventFilterError::UnknownWildcard { .. } => "UnknownWildcard",
        EventFilterError::UnknownEvent { .. } => "UnknownEvent",
    });
    walk!(SecretError, vec![
        SecretError::Empty,
        SecretError::SurroundingWhitespace,
        SecretError::ControlCharacter,
    ], {
        SecretError::Empty => "Empty",
        SecretError::SurroundingWhitespace => "SurroundingWhitespace",
        SecretError::ControlCharacter => "ControlCharacter",
    });
    walk!(ReceiverBuildError, vec![
        ReceiverBuildError::MissingSecret,
        ReceiverBuildError::ZeroDedupCapacity,
        ReceiverBuildError::ZeroDedupWindow,
        ReceiverBuildError::ZeroMaxBodyBytes,
        ReceiverBuildError::ZeroMaxItems,
        ReceiverBuildError::InvalidReceiverName,
        ReceiverBuildError::DedupSettingsWithStore,
        ReceiverBuildError::RecentDeliveriesWithoutStore,
    ], {
        ReceiverBuildError::MissingSecret => "MissingSecret",
        ReceiverBuildError::ZeroDedupCapacity => "ZeroDedupCapacity",
        ReceiverBuildError::ZeroDedupWindow => "ZeroDedupWindow",
        ReceiverBuildError::ZeroMaxBodyBytes => "ZeroMaxBodyBytes",
        ReceiverBuildError::ZeroMaxItems => "ZeroMaxItems",
        ReceiverBuildError::InvalidReceiverName => "InvalidReceiverName",
        ReceiverBuildError::RecentDeliveriesWithoutStore => "RecentDeliveriesWithoutStore",
        ReceiverBuildError::DedupSettingsWithStore => "DedupSettingsWithStore",
    });
}

/// Every wrapper error reaches the API error inside it in one call, whatever it wraps.
#[test]
#[cfg(all(feature = "ai", feature = "audit"))]
fn every_wrapper_error_reaches_the_api_error_inside() {
    let status = |e: Option<&ApiError>| e.map(ApiError::status);
    let wait = WaitError::Failed {
        error: api(),
        polls: 1,
        waited: Duration::ZERO,
        started: None,
    };
    assert_eq!(status(wait.api_error()), Some(404));
    let asked: WaitError<AskError> =
        WaitError::before_waiting(AskError::Api(Error::Server(api_error())));
    assert_eq!(status(asked.api_error()), Some(429));
    assert_eq!(status(AskError::Api(api()).api_error()), Some(404));
    let timed_out: WaitError<Error> = WaitError::TimedOut {
        polls: 1,
        waited: Duration::ZERO,
        started: None,
    };
    assert_eq!(status(timed_out.api_error()), None);
    assert_eq!(status(CsvError::Api(api()).api_error()), Some(404));
    let read = ReadError {
        resume_at: 0,
        error: api(),
    };
    assert_eq!(status(read.api_error()), Some(404));
    let day = ExportDay::parse("2026-01-05").expect("a day");
    for (error, expected) in [
        (DayError::Api(api()), Some(404)),
        (
            DayError::Download(CsvError::Broken {
                received: 1,
                error: api(),
            }),
            Some(404),
        ),
        (
            DayError::Read(ReadError {
                resume_at: 3,
                error: api(),
            }),
            Some(404),
        ),
        (
            DayError::TimedOut {
                polls: 1,
                waited: Duration::ZERO,
            },
            None,
        ),
    ] {
        assert_eq!(status(error.api_error()), expected, "{error}");
        let export = ExportError::Day {
            day,
            written: 0,
            error,
        };
        assert_eq!(status(export.api_error()), expected, "{export}");
    }
    assert_eq!(
        status(ExportError::ServerTime(api()).api_error()),
        Some(404)
    );
    assert_eq!(status(ExportError::NoServerDate.api_error()), None);
}
