//! Request types for the common calls have a constructor taking what the spec requires, and
//! `Default` only where every field is optional.

use pubapi_sdk::types::{
    AgentAskRequest, AssistantAskRequest, AuditFormat, CalendarDate, DocumentAskRequest,
    FilesAuditRequest, HybridSearchRequest, KnowledgeBaseAskRequest, KnowledgeBaseListRequest,
    LoginEvent, LoginsAuditRequest, WebhookCreateRequest,
};
use serde_json::{Value, json};

/// Asserts that `request` goes out as the JSON body `expected`.
#[track_caller]
fn assert_sends(request: &impl serde::Serialize, expected: Value) {
    assert_eq!(serde_json::to_value(request).unwrap(), expected);
}

#[test]
fn question_constructors_send_only_the_question() {
    let agent = AgentAskRequest::new("What changed?").unwrap();
    assert_sends(&agent, json!({"question": "What changed?"}));
    let assistant = AssistantAskRequest::new("Summarise").unwrap();
    assert_sends(&assistant, json!({"question": "Summarise"}));
    let document = DocumentAskRequest::new("Who signed?").unwrap();
    assert_eq!(document.include_citations, None);
    let kb = KnowledgeBaseAskRequest::new("Policy?").unwrap();
    assert_sends(&kb, json!({"question": "Policy?"}));
}

#[test]
fn empty_question_is_refused_by_the_constructor_naming_the_field() {
    let err = AgentAskRequest::new("").unwrap_err().to_string();
    assert!(err.starts_with("question: "), "{err}");
}

#[test]
fn blank_question_and_blank_search_query_are_refused_by_the_constructors() {
    let err = AgentAskRequest::new(" \t").unwrap_err().to_string();
    assert!(err.starts_with("question: "), "{err}");
    let err = HybridSearchRequest::new("  ").unwrap_err().to_string();
    assert!(err.starts_with("query: "), "{err}");
}

#[test]
fn hybrid_search_and_webhook_constructors_take_the_one_required_field() {
    let search = HybridSearchRequest::new("notice period").unwrap();
    assert_sends(&search, json!({"query": "notice period"}));
    let hook = WebhookCreateRequest::new("https://hooks.example.com/in");
    assert_sends(&hook, json!({"url": "https://hooks.example.com/in"}));
}

#[test]
fn audit_constructors_take_dates_format_and_required_filters() {
    let logins = LoginsAuditRequest::new(
        "2024-01-01",
        "2024-01-31",
        AuditFormat::Json,
        [LoginEvent::Logins],
    )
    .unwrap();
    assert_sends(
        &logins,
        json!({
            "date_start": "2024-01-01",
            "date_end": "2024-01-31",
            "format": "json",
            "events": ["logins"],
            "suppress_emails": false
        }),
    );
    let files =
        FilesAuditRequest::new("2024-01-01", "2024-01-31T23:59:59Z", AuditFormat::Csv).unwrap();
    assert_eq!(files.date_end.as_str(), "2024-01-31T23:59:59Z");
}

#[test]
fn audit_dates_outside_the_patterns_are_refused_naming_the_field() {
    // ReportDate: `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ` (reference 5.x).
    let refused = [
        ("01/31/2024", "2024-02-01", "date_start"),
        ("2024-01-01", "2024-01-31 23:59", "date_end"),
        ("2024-01-01", "2024-01-31T23:59:59+01:00", "date_end"),
    ];
    for (start, end, field) in refused {
        let error = FilesAuditRequest::new(start, end, AuditFormat::Csv)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(field), "{start} {end}: {error}");
    }
    // CalendarDate (hybrid search dateFrom/dateTo): `YYYY-MM-DD` only.
    assert!("2026-01-01".parse::<CalendarDate>().is_ok());
    assert!("2026-01-01T00:00:00Z".parse::<CalendarDate>().is_err());
    // A body with a date outside the pattern does not decode either.
    let body = json!({"date_start": "yesterday", "date_end": "2024-01-31", "format": "csv"});
    assert!(serde_json::from_value::<FilesAuditRequest>(body).is_err());
}

#[test]
fn default_exists_only_where_every_field_is_optional() {
    let list = KnowledgeBaseListRequest::default();
    assert_sends(&list, json!({}));
}
