//! The facts the sandbox checks requests with, read from the spec `pubapi-sdk` embeds
//! ([`pubapi_sdk::SPEC_YAML`]): enum values, event names, subscription wildcards, the agent
//! question's `maxLength`; the report kinds come from the table generated from the same spec
//! (`pubapi_sdk::audit_kinds`). This is the one run-time walker of the spec (the CLI reads
//! the generated table). One source, so a value the spec adds or
//! drops reaches the sandbox with the next build; the test
//! `no_hand_kept_copies_of_spec_values` keeps copies from coming back.

use serde_yaml::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The embedded spec, parsed once per process (`Null` if it did not parse, which the tests
/// below rule out).
fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| serde_yaml::from_str(pubapi_sdk::SPEC_YAML).unwrap_or(Value::Null))
}

/// The value lists of the spec's string schemas, by component name: `enum`, or
/// `x-pubapi-spellings` for a value matched in any letter case. Public (as
/// `pubapi_sandbox::spec_value_lists`) so that the test against hand-kept copies reads the
/// same lists the sandbox checks with.
pub fn lists() -> &'static HashMap<String, Vec<&'static str>> {
    static LISTS: OnceLock<HashMap<String, Vec<&'static str>>> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut lists = HashMap::new();
        let Some(schemas) = spec()
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_mapping)
        else {
            return lists;
        };
        for (name, schema) in schemas {
            let values = schema
                .get("enum")
                .or_else(|| schema.get("x-pubapi-spellings"))
                .and_then(Value::as_sequence);
            if let (Some(name), Some(values)) = (name.as_str(), values) {
                // Read once per process; the strings live as long as the spec they come from.
                let values: Vec<&'static str> = values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|v| &*Box::leak(v.to_string().into_boxed_str()))
                    .collect();
                lists.insert(name.to_string(), values);
            }
        }
        lists
    })
}

/// The values the spec lists for the string schema `component` (empty for a schema without
/// a list, which `every_list_the_sandbox_reads_is_in_the_spec` rules out).
pub fn values(component: &str) -> &'static [&'static str] {
    lists().get(component).map_or(&[], Vec::as_slice)
}

/// Every audit report kind, as in the paths: the names of the SDK's table of kinds
/// (`pubapi_sdk::audit_kinds`, generated from the spec), in the spec's order.
pub fn audit_kinds() -> &'static [&'static str] {
    static KINDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KINDS.get_or_init(|| {
        pubapi_sdk::audit_kinds::ALL
            .iter()
            .map(|k| k.name)
            .collect()
    })
}

/// Every webhook event name of reference 6.2 (`EventType`).
pub fn event_types() -> &'static [&'static str] {
    values("EventType")
}

/// The subscription wildcards: the entries of `WebhookEventTypeFilter` that are not event
/// names (workflow and group events have none).
pub fn wildcards() -> &'static [&'static str] {
    static WILDCARDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WILDCARDS.get_or_init(|| {
        values("WebhookEventTypeFilter")
            .iter()
            .copied()
            .filter(|f| !event_types().contains(f))
            .collect()
    })
}

/// The `maxLength` the spec gives `property` of the object schema `component` (`None` when
/// it gives none): `max_length("AgentAskRequest", "question")` is the longest agent question
/// (reference 8).
pub fn max_length(component: &str, property: &str) -> Option<usize> {
    spec()
        .get("components")?
        .get("schemas")?
        .get(component)?
        .get("properties")?
        .get(property)?
        .get("maxLength")?
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
}

/// The schemas whose lists the sandbox reads.
#[cfg(test)]
const READ: &[&str] = &[
    "AuditReportKind",
    "EventType",
    "WebhookEventTypeFilter",
    "LoginEvent",
    "AccessPoint",
    "FileTransactionType",
    "UserActionType",
    "GroupActionType",
    "WorkflowAction",
    "WorkflowType",
    "WorkflowTemplateAction",
    "QualityDocsAction",
    "QualityDocsStatus",
    "QualityDocsCategoriesAction",
    "QualityDocsCoursesAction",
    "QualityDocsCoursesParameter",
    "EtmfAction",
    "UploadRequestsAction",
    "PollingEventType",
    "EventSuppress",
    "AuditFormat",
    "WebhookState",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_the_sandbox_reads_is_in_the_spec() {
        for name in READ {
            assert!(
                !values(name).is_empty(),
                "{name} lists no values in the spec"
            );
        }
        assert_eq!(audit_kinds().len(), 14);
        assert_eq!(event_types().len(), 36);
        assert_eq!(wildcards().len(), 5);
        assert!(wildcards().iter().all(|w| w.ends_with(":*")));
        assert_eq!(values("AccessPoint").len(), 3);
    }

    #[test]
    fn the_agent_question_limit_is_the_specs() {
        assert_eq!(
            max_length("AgentAskRequest", "question"),
            Some(pubapi_sdk_ext::ai::MAX_QUESTION_CHARS)
        );
        assert_eq!(max_length("AgentAskRequest", "conversationId"), None);
    }
}
