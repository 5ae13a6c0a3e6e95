//! The operation table carries the facts the spec states once: area, limit class, error format
//! and idempotency.

use pubapi_sdk::operations::{self, Area, ErrorFormat, LimitClass};

fn op(id: &str) -> &'static operations::Operation {
    operations::find(id).unwrap_or_else(|| panic!("{id} is in the table"))
}

#[test]
fn every_area_is_a_tag_of_the_spec_with_its_limit_class() {
    for op in operations::ALL {
        assert_eq!(op.area.as_str(), op.tag, "{}", op.id);
        assert_eq!(op.area.limit_class(), op.limit_class, "{}", op.id);
    }
    assert_eq!(Area::ALL.len(), 10);
    assert_eq!(Area::KnowledgeBases.to_string(), "knowledge-bases");
}

#[test]
fn ai_operations_draw_from_the_ai_budget_and_answer_in_the_ai_format() {
    for id in [
        "askAgent",
        "askDocument",
        "askAssistant",
        "askCopilot",
        "hybridSearch",
    ] {
        assert_eq!(op(id).limit_class, LimitClass::Ai, "{id}");
        assert_eq!(op(id).error_format, ErrorFormat::Ai, "{id}");
    }
    assert_eq!(LimitClass::Ai.to_string(), "ai");
}

#[test]
fn whoami_answers_in_the_webhook_format_and_events_in_the_general_one() {
    assert_eq!(op("whoami").area, Area::Identity);
    assert_eq!(op("whoami").error_format, ErrorFormat::Webhooks);
    assert_eq!(op("createWebhook").error_format, ErrorFormat::Webhooks);
    assert_eq!(op("getEventsCursor").error_format, ErrorFormat::General);
    assert_eq!(op("listEventsV2").error_format, ErrorFormat::General);
    assert_eq!(op("createLoginsAudit").error_format, ErrorFormat::General);
    assert_eq!(op("createLoginsAudit").limit_class, LimitClass::General);
    assert_eq!(ErrorFormat::Webhooks.to_string(), "webhooks");
}

#[test]
fn posts_that_are_reads_or_idempotent_sets_are_idempotent() {
    for id in [
        "listKnowledgeBases",
        "hybridSearch",
        "setWebhookStatus",
        "getWebhookStatus",
    ] {
        assert!(op(id).idempotent && op(id).is_idempotent(), "{id}");
    }
    for id in ["askAgent", "createWebhook", "createLoginsAudit"] {
        assert!(!op(id).idempotent, "{id}");
    }
}
