//! The mutable state of a sandbox, and how one thing that happens (a file created, a
//! permission changed) fans out to the events stream, the audit records and the webhook
//! deliveries.

use super::ai::AiState;
use super::audit::AuditStore;
use super::auth::Users;
use super::config::{LimitsConfig, SandboxConfig, UserConfig};
use super::delivery::{DeliveryQueue, Pending};
use super::events::{EventStore, StoredEvent};
use super::faults::FaultScript;
use super::fs::FileSystem;
use super::ids::IdGen;
use super::limits::{Counters, LimitState};
use super::reports::AuditRecord;
use super::token::TokenWindows;
use super::traffic::TrafficLog;
use super::webhooks::WebhookStore;
use pubapi_sdk_ext::webhook::client_id_hash;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Where an action came from (`action_source` of polling events, `actionSource` of
/// deliveries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ActionSource {
    /// The web application.
    #[default]
    WebUi,
    /// The desktop sync client.
    SyncEngine,
    /// The mobile apps.
    Mobile,
    /// The public API.
    PublicApi,
    /// Web editing.
    WebEdit,
    /// The platform itself.
    System,
    /// A virtual private cloud connector.
    Vpc,
    /// Anything else (FTP, integrations, ...).
    Other,
}

impl ActionSource {
    /// Every source, in the reference's order.
    pub const ALL: [ActionSource; 8] = [
        ActionSource::WebUi,
        ActionSource::SyncEngine,
        ActionSource::Mobile,
        ActionSource::PublicApi,
        ActionSource::WebEdit,
        ActionSource::System,
        ActionSource::Vpc,
        ActionSource::Other,
    ];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionSource::WebUi => "WebUI",
            ActionSource::SyncEngine => "SyncEngine",
            ActionSource::Mobile => "Mobile",
            ActionSource::PublicApi => "PublicAPI",
            ActionSource::WebEdit => "WebEdit",
            ActionSource::System => "System",
            ActionSource::Vpc => "VPC",
            ActionSource::Other => "Other",
        }
    }
}

/// Who did something.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The user.
    pub user: UserConfig,
    /// The OAuth client id that did it.
    pub client_id: String,
    /// The admin's username when done through impersonation.
    pub impersonated_by: Option<String>,
    /// Where it came from.
    pub source: ActionSource,
}

/// A polling event before it gets its id.
#[derive(Debug, Clone)]
pub struct Polling {
    /// `type`.
    pub kind: &'static str,
    /// `action`.
    pub action: &'static str,
    /// `data`.
    pub data: Value,
    /// `eventTypeSpecificAttributes`.
    pub attributes: Option<Value>,
    /// Paths for the `folder` filter.
    pub paths: Vec<String>,
}

/// One thing that happened, in the forms the different consumers see.
#[derive(Debug, Clone)]
pub struct Happening {
    /// Who.
    pub actor: Actor,
    /// The webhook event: name, `data`, paths for the path filters.
    pub webhook: Option<(String, Value, Vec<String>)>,
    /// The `customProperties` of the webhook event, for the events that carry them.
    pub custom_properties: Option<Value>,
    /// The polling event.
    pub polling: Option<Polling>,
    /// The audit record: kind and event.
    pub audit: Option<(&'static str, Value)>,
}

/// Everything that changes while a sandbox runs.
#[derive(Debug)]
pub struct World {
    /// Users and tokens.
    pub users: Users,
    /// Rate-limit windows.
    pub limits: LimitState,
    /// The token endpoint's hourly windows.
    pub token_windows: TokenWindows,
    /// The limits in force (the configuration's until changed).
    pub limits_config: LimitsConfig,
    /// How many times the sandbox was reset: a delivery attempt started before a reset
    /// drops its result.
    pub generation: u64,
    /// Counters.
    pub counters: Counters,
    /// Exchanges served (oldest first).
    pub traffic: TrafficLog,
    /// Exchanges served so far (sequence numbers).
    pub traffic_seq: u64,
    /// Fault rules.
    pub faults: FaultScript,
    /// Id generator.
    pub ids: IdGen,
    /// The file system and corpus.
    pub fs: FileSystem,
    /// The events stream.
    pub events: EventStore,
    /// When each token last caught up with the events stream.
    pub events_caught_up: HashMap<String, i64>,
    /// Webhook registrations.
    pub webhooks: WebhookStore,
    /// Webhook delivery attempts.
    pub deliveries: DeliveryQueue,
    /// Audit jobs and records.
    pub audit: AuditStore,
    /// Agent requests and assistant executions.
    pub ai: AiState,
}

impl World {
    /// The initial state for `config`.
    pub fn new(config: &SandboxConfig) -> Self {
        let mut ids = IdGen::new(config.seed);
        let fs = FileSystem::with_corpus(&mut ids);
        World {
            users: Users::new(config),
            limits: LimitState::default(),
            token_windows: TokenWindows::default(),
            limits_config: config.limits,
            generation: 0,
            counters: Counters::default(),
            traffic: TrafficLog::default(),
            traffic_seq: 0,
            faults: FaultScript::default(),
            ids,
            fs,
            events: EventStore::default(),
            events_caught_up: HashMap::new(),
            webhooks: WebhookStore::default(),
            deliveries: DeliveryQueue::default(),
            audit: AuditStore::default(),
            ai: AiState::default(),
        }
    }

    /// Back to the initial state for `config` (users and tokens come from the seed, so they
    /// stay the same); attempts in flight are forgotten.
    pub fn reset(&mut self, config: &SandboxConfig) {
        let generation = self.generation + 1;
        *self = World::new(config);
        self.generation = generation;
    }

    /// Records what happened at `now_ms`: an event in the stream, an audit record, and a
    /// delivery for every enabled registration whose filters it passes.
    pub fn happen(&mut self, happening: Happening, now_ms: i64, config: &SandboxConfig) {
        let actor = &happening.actor;
        if let Some(polling) = happening.polling {
            // The reference says only "optional link to the object"; the platform's clients
            // show a public API URL of it.
            let object_detail = polling
                .paths
                .first()
                .map(|p| format!("https://{}/pubapi/v1/fs{p}", config.domain));
            self.events.push(
                StoredEvent {
                    id: 0,
                    at_ms: now_ms,
                    action_source: actor.source.as_str(),
                    actor: actor.user.id,
                    client_id: actor.client_id.clone(),
                    kind: polling.kind,
                    action: polling.action,
                    object_detail,
                    data: polling.data,
                    attributes: polling.attributes,
                    paths: polling.paths,
                },
                now_ms,
                &config.events,
            );
        }
        if let Some((kind, event)) = happening.audit {
            self.audit.records.push(AuditRecord {
                kind,
                at_ms: now_ms,
                event,
            });
        }
        if let Some(webhook) = happening.webhook {
            let custom_properties = happening.custom_properties.as_ref();
            self.schedule_deliveries(actor, webhook, custom_properties, now_ms, config);
        }
    }

    /// Schedules a delivery of the webhook event `(event_type, data, paths)` to every enabled
    /// registration whose filters it passes.
    fn schedule_deliveries(
        &mut self,
        actor: &Actor,
        (event_type, data, paths): (String, Value, Vec<String>),
        custom_properties: Option<&Value>,
        now_ms: i64,
        config: &SandboxConfig,
    ) {
        let event_id = self.ids.id("evt-");
        let mut user = json!({
            "id": actor.user.id,
            "displayName": actor.user.display_name,
            "username": actor.user.username,
            "email": actor.user.email,
            "clientIdHash": client_id_hash(&actor.client_id),
        });
        if let Some(admin) = &actor.impersonated_by {
            user["impersonatedBy"] = json!(admin);
        }
        let first_delay = config
            .webhooks
            .retry_schedule
            .first()
            .map_or(0, |d| d.as_millis() as i64);
        let targets: Vec<String> = self
            .webhooks
            .all()
            .iter()
            .filter(|h| h.enabled && h.wants(&event_type, &paths))
            .map(|h| h.id.clone())
            .collect();
        for webhook_id in targets {
            let mut event = json!({
                "eventId": event_id,
                "domain": config.domain,
                "timestamp": now_ms,
                "user": user,
                "actionSource": actor.source.as_str(),
                "eventType": event_type,
                "webhookId": webhook_id,
                "data": data,
            });
            if let Some(properties) = custom_properties {
                event["customProperties"] = properties.clone();
            }
            let body = json!({ "data": [event] });
            self.deliveries.schedule(Pending {
                due_ms: now_ms + first_delay,
                seq: 0,
                webhook_id,
                attempt: 1,
                event_id: event_id.clone(),
                event_type: event_type.clone(),
                body,
            });
        }
    }
}
