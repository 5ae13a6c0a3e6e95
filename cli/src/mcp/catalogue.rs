//! The tools: their names, what each is for, whether it only reads, and their input and
//! output schemas. Inputs that are a request body of the API are the spec's own types
//! (`pubapi_sdk::types`, whose `schemars` derives carry the reference's required fields,
//! bounds and enums); the report kinds are the spec's table (`pubapi_sdk::audit_kinds`). Every
//! input takes `act_as`, the user to act as for that call (admin tokens only).

use pubapi_sdk::audit_kinds::{self, AuditKind};
use pubapi_sdk::types::{self, AuditReportKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What a tool may do to the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Reads only.
    Read,
    /// Makes something new (an audit report job) and changes nothing there was.
    Create,
    /// Changes something (needs `--allow-writes`).
    Write,
    /// Deletes something (needs `--allow-writes`; annotated destructive).
    Delete,
}

impl Access {
    /// Whether the tool needs `--allow-writes`.
    pub(super) fn writes(self) -> bool {
        matches!(self, Access::Write | Access::Delete)
    }
}

/// Which call a tool makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Whoami,
    Quota,
    AuditStart(AuditReportKind),
    AuditStatus,
    AuditRead,
    AuditDelete,
    EventsRead,
    WebhooksList,
    WebhooksShow,
    WebhooksRegister,
    WebhooksEnable,
    WebhooksDisable,
    WebhooksDelete,
    Search,
}

/// One tool.
#[derive(Debug, Clone)]
pub(super) struct ToolDef {
    pub(super) call: Call,
    pub(super) access: Access,
    pub(super) tool: rmcp::model::Tool,
}

/// The input of a tool that takes nothing but `act_as`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NoArguments {}

/// `audit_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditStatusIn {
    /// The job id `audit_start_<kind>` answered.
    pub job_id: String,
}

/// `audit_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditReadIn {
    /// The finished report, `KIND/ID`, as `audit_status` answered it.
    pub report: String,
    /// Where to start: the `next_cursor` of the previous page (0 or none: the first row).
    #[serde(default)]
    pub cursor: Option<u64>,
    /// Rows in this page, 1 to 1000 (default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub page_size: Option<u64>,
}

/// `audit_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditDeleteIn {
    /// The finished report, `KIND/ID`.
    pub report: String,
}

/// `events_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EventsReadIn {
    /// Read the events after this event id (a `next_cursor` answered before).
    #[serde(default)]
    pub cursor: Option<i64>,
    /// Or read after the checkpoint saved under this name, and save the window's end there;
    /// a new name starts after the oldest stored event.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// Only these event types (default: all three).
    #[serde(default)]
    pub types: Vec<types::PollingEventType>,
    /// Only events at this folder path, subfolders included.
    #[serde(default)]
    pub folder: Option<String>,
    /// Drop the events this application (`app`) or this user (`user`) caused.
    #[serde(default)]
    pub suppress: Option<types::EventSuppress>,
    /// The most events in this answer, 1 to 100 (default 50).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub max_events: Option<u32>,
}

/// `webhooks_show`, `_enable`, `_disable`, `_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WebhookIdIn {
    /// The registration's id (`webhookId`).
    pub webhook_id: String,
}

/// One class of the token's budget.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct ClassQuota {
    /// `general` (1,000 a day, 2 a second) or `ai` (100 a day, 10 a minute).
    pub class: String,
    /// Calls allowed a day.
    pub per_day: Option<u32>,
    /// Calls counted today (the gateway's count when it has told one).
    pub used_today: Option<u32>,
    /// Calls left today.
    pub remaining_today: Option<u32>,
    /// Seconds until a call of this class could be sent (0: now).
    pub next_call_in_seconds: f64,
    /// When the budget frees up again, when none is left: UTC, RFC 3339.
    pub resets_at: Option<String>,
    /// Where the figures come from: `gateway` (its `x-accesstoken-*` counters) or `client`.
    pub from: String,
}

/// `quota`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct QuotaOut {
    /// Each class.
    pub classes: Vec<ClassQuota>,
}

/// `whoami`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct WhoamiOut {
    /// The token's user, domain, client and scopes.
    pub whoami: types::Whoami,
    /// Whom the call acted as, if anyone.
    pub acting_as: Option<String>,
}

/// An audit job's state, and when to ask again.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct AuditJobOut {
    /// The job id.
    pub job_id: String,
    /// The report kind, when known (the job was made here, or has completed).
    pub kind: Option<String>,
    /// `running` (or another status the platform sent) or `completed`.
    pub state: String,
    /// When completed: the report, `KIND/ID`, to read with `audit_read`.
    pub report: Option<String>,
    /// Whether this answer asked the platform (false: the platform's two-minute floor
    /// between polls has not passed, and this is the last known state).
    pub polled: bool,
    /// When not completed: seconds until the job may be asked about again.
    pub ask_again_in_seconds: Option<f64>,
}

/// `audit_read`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct AuditPageOut {
    /// The report, `KIND/ID`.
    pub report: String,
    /// Rows in the whole report.
    pub total: Option<u64>,
    /// The first row of this page.
    pub offset: u64,
    /// The rows, each the event's fields as the platform named them.
    pub rows: Vec<Map<String, Value>>,
    /// Where the next page starts; none after the last page.
    pub next_cursor: Option<u64>,
}

/// `audit_delete`, `webhooks_delete`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct DeletedOut {
    /// What was deleted.
    pub deleted: String,
}

/// `events_read`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct EventsOut {
    /// The events, oldest first.
    pub events: Vec<types::PollingEvent>,
    /// The cursor after these events: give it as `cursor` next time (the named checkpoint,
    /// when one was given, is saved there).
    pub next_cursor: Option<i64>,
    /// The checkpoint the window was read after, when one was named.
    pub checkpoint: Option<String>,
    /// Whether the window reached the newest event.
    pub caught_up: bool,
    /// Whether the platform was asked (false: it was caught up and its poll interval has not
    /// passed; nothing was sent).
    pub polled: bool,
    /// When caught up: seconds until the events list may be polled again.
    pub ask_again_in_seconds: Option<f64>,
    /// The cursor was below the oldest stored event: events between may have been missed.
    pub may_have_missed: bool,
}

/// `webhooks_list`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct WebhooksOut {
    /// The registrations of this user and client.
    pub webhooks: Vec<types::WebhookSummary>,
}

/// `webhooks_show`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct WebhookOut {
    /// The registration (its `authHeader` secret left out).
    pub webhook: types::Webhook,
}

/// `webhooks_register`, `_enable`, `_disable`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct WebhookStatusOut {
    /// The registration's id, state and expiry.
    pub webhook: types::WebhookSummary,
}

/// `search`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct SearchOut {
    /// The page of results.
    pub response: types::HybridSearchResponse,
}

/// The JSON Schema of `T`, draft-07, its definitions inside it.
pub(super) fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let generator = schemars::r#gen::SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or_default();
    drop_width_formats(&mut value);
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Takes out the formats that only say a Rust integer's width (`uint32`, `int64`, `double`):
/// JSON Schema has none of them, and validators warn of each (the bounds that matter are
/// `minimum` and `maximum`, which stay).
fn drop_width_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let width = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                matches!(f, "float" | "double")
                    || f.strip_prefix('u')
                        .unwrap_or(f)
                        .strip_prefix("int")
                        .is_some_and(|bits| bits.parse::<u8>().is_ok())
            });
            if width {
                map.remove("format");
            }
            map.values_mut().for_each(drop_width_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_width_formats),
        _ => {}
    }
}

/// `T`'s schema with the properties in `drop` taken out (the server sets them).
fn body_schema<T: JsonSchema>(drop: &[&str]) -> Map<String, Value> {
    let mut schema = schema_of::<T>();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for name in drop {
            properties.remove(*name);
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|name| !drop.iter().any(|d| name == d));
    }
    schema
}

/// The input of `webhooks_register` beside the request's fields: register without the
/// endpoint's TLS check (the CLI's `--skip-endpoint-check`).
pub(super) const SKIP_ENDPOINT_CHECK: &str = "skip_endpoint_check";

/// `webhooks_register`'s schema with [`SKIP_ENDPOINT_CHECK`] (the server reads it before the
/// request's fields).
fn with_skip_endpoint_check(mut schema: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            SKIP_ENDPOINT_CHECK.into(),
            json!({
                "type": "boolean",
                "default": false,
                "description": "Register without first checking the endpoint: by default an \
                    https endpoint must answer a TLS handshake with a certificate a public \
                    authority signed, as the platform requires for deliveries; set true only \
                    when the user says the endpoint will be reachable that way."
            }),
        );
    }
    schema
}

/// An input schema with `act_as`, which every tool takes (the server reads it before the
/// rest of the input).
fn with_act_as(mut schema: Map<String, Value>) -> Map<String, Value> {
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "act_as".into(),
            json!({
                "type": "string",
                "description": "Act as this user for this call: a username or an email address (admin tokens only)."
            }),
        );
    }
    schema
}

/// The schema of the request body that creates a report of `kind`, without `format` (the
/// server asks for JSON, which `audit_read` reads as rows).
fn audit_request_schema(kind: AuditReportKind) -> Map<String, Value> {
    let drop = ["format"];
    match kind {
        AuditReportKind::Logins => body_schema::<types::LoginsAuditRequest>(&drop),
        AuditReportKind::Files => body_schema::<types::FilesAuditRequest>(&drop),
        AuditReportKind::Permissions => body_schema::<types::PermissionsAuditRequest>(&drop),
        AuditReportKind::Users => body_schema::<types::UsersAuditRequest>(&drop),
        AuditReportKind::Groups => body_schema::<types::GroupsAuditRequest>(&drop),
        AuditReportKind::WorkgroupSettings => {
            body_schema::<types::WorkgroupSettingsAuditRequest>(&drop)
        }
        AuditReportKind::Workflows => body_schema::<types::WorkflowsAuditRequest>(&drop),
        AuditReportKind::WorkflowTemplates => {
            body_schema::<types::WorkflowTemplatesAuditRequest>(&drop)
        }
        AuditReportKind::QualityDocs => body_schema::<types::QualityDocsAuditRequest>(&drop),
        AuditReportKind::QualityDocsCategories => {
            body_schema::<types::QualityDocsCategoriesAuditRequest>(&drop)
        }
        AuditReportKind::QualityDocsCourses => {
            body_schema::<types::QualityDocsCoursesAuditRequest>(&drop)
        }
        AuditReportKind::Etmf => body_schema::<types::EtmfAuditRequest>(&drop),
        AuditReportKind::SnapshotRestore => {
            body_schema::<types::SnapshotRestoreAuditRequest>(&drop)
        }
        AuditReportKind::UploadRequests => body_schema::<types::UploadRequestsAuditRequest>(&drop),
    }
}

/// The events input's schema, its `types` listing the values the spec knows (the generated
/// open enum takes any string).
fn events_schema() -> Map<String, Value> {
    let mut schema = schema_of::<EventsReadIn>();
    if let Some(types) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("types"))
        .and_then(Value::as_object_mut)
    {
        types.insert(
            "items".into(),
            json!({"type": "string", "enum": types::PollingEventType::KNOWN}),
        );
    }
    schema
}

/// The tool name of a report kind: `audit_start_workgroup_settings`.
pub(super) fn audit_start_name(kind: &AuditKind) -> String {
    format!("audit_start_{}", kind.name.replace('-', "_"))
}

fn tool(
    name: String,
    title: &str,
    description: String,
    access: Access,
    call: Call,
    input: Map<String, Value>,
    output: Map<String, Value>,
) -> ToolDef {
    use rmcp::model::ToolAnnotations;
    let annotations = ToolAnnotations::with_title(title)
        .read_only(access == Access::Read)
        .destructive(access == Access::Delete)
        .idempotent(matches!(
            access,
            Access::Read | Access::Write | Access::Delete
        ))
        .open_world(true);
    let tool = rmcp::model::Tool::new(name, description, Arc::new(with_act_as(input)))
        .with_title(title)
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations);
    ToolDef { call, access, tool }
}

/// Every tool, in the order they are listed.
pub(super) fn all() -> Vec<ToolDef> {
    let mut tools = vec![
        tool(
            // Named as the operation it calls.
            pubapi_sdk::operations::id::WHOAMI.into(),
            "Who the token is",
            "The token's user, domain, client id and scopes (one general API call).".into(),
            Access::Read,
            Call::Whoami,
            schema_of::<NoArguments>(),
            schema_of::<WhoamiOut>(),
        ),
        tool(
            "quota".into(),
            "Budget left today",
            "What is left of today's budget per limit class (general: 1,000 a day, 2 a \
             second; ai: 100 a day, 10 a minute), when the next call could go, and when a \
             used-up class frees up. Sends nothing once a call has told the gateway's counters."
                .into(),
            Access::Read,
            Call::Quota,
            schema_of::<NoArguments>(),
            schema_of::<QuotaOut>(),
        ),
    ];
    for kind in audit_kinds::ALL {
        tools.push(tool(
            audit_start_name(kind),
            kind.summary,
            format!(
                "{}: starts the report job (`POST /v1/audit/{}`, JSON) and answers its job id at \
                 once, without waiting. Ask `audit_status` when it says (the platform allows a \
                 poll every two minutes), then read the rows with `audit_read`.{}",
                kind.summary,
                kind.name,
                if kind.ignores_time() {
                    " This kind reads whole days: the time of day in its dates is ignored."
                } else {
                    ""
                }
            ),
            Access::Create,
            Call::AuditStart(kind.kind),
            audit_request_schema(kind.kind),
            schema_of::<AuditJobOut>(),
        ));
    }
    tools.extend([
        tool(
            "audit_status".into(),
            "Audit job status",
            "Where an audit job stands: running, or completed with its report (`KIND/ID`). \
             The platform allows one poll every two minutes: sooner, this answers the last \
             known state and when to ask again, and sends nothing."
                .into(),
            Access::Read,
            Call::AuditStatus,
            schema_of::<AuditStatusIn>(),
            schema_of::<AuditJobOut>(),
        ),
        tool(
            "audit_read".into(),
            "Read audit rows",
            "One page of a finished report's rows, with the report's total and the cursor of \
             the next page."
                .into(),
            Access::Read,
            Call::AuditRead,
            schema_of::<AuditReadIn>(),
            schema_of::<AuditPageOut>(),
        ),
        tool(
            "audit_delete".into(),
            "Delete an audit report",
            "Deletes a finished report from the platform; it cannot be read again.".into(),
            Access::Delete,
            Call::AuditDelete,
            schema_of::<AuditDeleteIn>(),
            schema_of::<DeletedOut>(),
        ),
        tool(
            "events_read".into(),
            "Read events",
            "A window of the events list (file system, notes, permission changes) after a \
             cursor or a named checkpoint, filtered by type, folder and who caused them; \
             answers the cursor to continue from. Once caught up, the platform asks for five \
             minutes before the next poll: sooner, this answers no events and when to ask \
             again, and sends nothing."
                .into(),
            Access::Read,
            Call::EventsRead,
            events_schema(),
            schema_of::<EventsOut>(),
        ),
        tool(
            "webhooks_list".into(),
            "List webhooks",
            "The webhook registrations of this user and client: id, state, expiry.".into(),
            Access::Read,
            Call::WebhooksList,
            schema_of::<NoArguments>(),
            schema_of::<WebhooksOut>(),
        ),
        tool(
            "webhooks_show".into(),
            "Show a webhook",
            "One registration in full: URL, events, path, state, expiry (its secret left out)."
                .into(),
            Access::Read,
            Call::WebhooksShow,
            schema_of::<WebhookIdIn>(),
            schema_of::<WebhookOut>(),
        ),
        tool(
            "webhooks_register".into(),
            "Register a webhook",
            "Registers an https:// endpoint for deliveries of the events named (all when none), \
             under the paths given (all when none)."
                .into(),
            Access::Write,
            Call::WebhooksRegister,
            with_skip_endpoint_check(body_schema::<types::WebhookCreateRequest>(&[])),
            schema_of::<WebhookStatusOut>(),
        ),
        tool(
            "webhooks_enable".into(),
            "Enable a webhook",
            "Turns deliveries of a registration on.".into(),
            Access::Write,
            Call::WebhooksEnable,
            schema_of::<WebhookIdIn>(),
            schema_of::<WebhookStatusOut>(),
        ),
        tool(
            "webhooks_disable".into(),
            "Disable a webhook",
            "Turns deliveries of a registration off (it stays registered).".into(),
            Access::Write,
            Call::WebhooksDisable,
            schema_of::<WebhookIdIn>(),
            schema_of::<WebhookStatusOut>(),
        ),
        tool(
            "webhooks_delete".into(),
            "Delete a webhook",
            "Deletes a registration; deliveries stop.".into(),
            Access::Delete,
            Call::WebhooksDelete,
            schema_of::<WebhookIdIn>(),
            schema_of::<DeletedOut>(),
        ),
        tool(
            "search".into(),
            "Hybrid search",
            "One page of hybrid (keyword and semantic) search over the documents, on the AI \
             budget (100 a day, 10 a minute): a call past it is refused with when it resets, \
             and nothing is sent."
                .into(),
            Access::Read,
            Call::Search,
            body_schema::<types::HybridSearchRequest>(&[]),
            schema_of::<SearchOut>(),
        ),
    ]);
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_kind_has_a_start_tool_whose_schema_is_its_request_less_format() {
        let tools = all();
        for kind in audit_kinds::ALL {
            let name = audit_start_name(kind);
            let def = tools
                .iter()
                .find(|t| t.tool.name == name)
                .unwrap_or_else(|| panic!("no tool {name}"));
            let properties = def.tool.input_schema["properties"].as_object().unwrap();
            assert!(!properties.contains_key("format"), "{name}");
            assert!(properties.contains_key("date_start"), "{name}");
            assert!(properties.contains_key("act_as"), "{name}");
            let required = def.tool.input_schema["required"].as_array().unwrap();
            assert!(required.contains(&json!("date_end")), "{name}");
            assert!(!required.contains(&json!("format")), "{name}");
        }
    }

    #[test]
    fn only_deleting_tools_are_destructive_and_only_reading_tools_read_only() {
        for def in all() {
            let notes = def.tool.annotations.clone().unwrap();
            assert_eq!(
                notes.destructive_hint,
                Some(def.access == Access::Delete),
                "{}",
                def.tool.name
            );
            assert_eq!(
                notes.read_only_hint,
                Some(def.access == Access::Read),
                "{}",
                def.tool.name
            );
            assert!(def.tool.output_schema.is_some(), "{}", def.tool.name);
        }
    }

    #[test]
    fn no_schema_keeps_a_rust_integer_width_as_its_format() {
        for def in all() {
            let text = serde_json::to_string(&def.tool).unwrap();
            for width in ["uint32", "uint64", "uint8", "int64", "\"double\""] {
                assert!(!text.contains(width), "{}: {width}", def.tool.name);
            }
        }
    }

    #[test]
    fn the_events_types_list_the_spec_values() {
        let schema = events_schema();
        assert_eq!(
            schema["properties"]["types"]["items"]["enum"],
            json!(["file_system", "note", "permission_change"])
        );
        assert_eq!(schema["properties"]["max_events"]["maximum"], json!(100.0));
    }
}
