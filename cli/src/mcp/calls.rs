//! The server: `tools/list` from the catalogue, and each `tools/call` carried out through the
//! session's one client. A call's input is checked first (its shape, then the SDK's own
//! validation); a refusal is a tool error naming the field, with nothing sent.

use super::McpArgs;
use super::catalogue::{self, Call, ToolDef};
use super::floors::{Floors, Gate};
use super::refusal::{Refusal, shown};
use crate::Session;
use pubapi_sdk::types::{self, AuditFormat, AuditReportKind};
use pubapi_sdk_ext::audit::{AuditRequest, AuditWait, JobState, ReportLocation};
use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamNotice, StreamStart};
use pubapi_sdk_ext::fleet::FileCheckpoints;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::webhook::registration::{Registration, Status};
use pubapi_sdk_ext::{ActAs, Client, LimitClass};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The MCP server: the client every call goes through, and what it remembers between calls.
#[derive(Debug, Clone)]
pub struct Server {
    client: Client,
    allow_writes: bool,
    /// Server time per real time (a sandbox's clock may run faster).
    scale: f64,
    floors: Arc<Floors>,
    checkpoints: Option<Arc<FileCheckpoints>>,
    tools: Arc<Vec<ToolDef>>,
}

/// The longest an `events_read` call reads before it answers what it has.
const WINDOW_TIME: Duration = Duration::from_secs(30);

/// What a call produces: the structured result, and its one-line summary.
type Answer = Result<(Value, String), Refusal>;

/// The instructions a client shows its model.
const INSTRUCTIONS: &str = "Tools for the Content Platform Public API's audit reports, events \
list and webhook registrations, on the token's budget (general: 1,000 calls a day, 2 a second; \
ai: 100 a day, 10 a minute). Audit reports are jobs: start one (audit_start_<kind>), ask \
audit_status no sooner than it says, then page through the rows with audit_read. Every tool \
takes act_as (a username or email) to act as another user, for admin tokens.";

impl Server {
    /// The server of `session`'s client.
    pub(crate) fn new(session: &Session, args: &McpArgs) -> Server {
        Server::with_client(
            session.client.clone(),
            session.time_scale(),
            args.allow_writes,
            args.checkpoints
                .as_ref()
                .map(|path| Arc::new(FileCheckpoints::new(path))),
        )
    }

    /// A server of `client` whose platform's clock runs `scale` times real time.
    pub fn with_client(
        client: Client,
        scale: f64,
        allow_writes: bool,
        checkpoints: Option<Arc<FileCheckpoints>>,
    ) -> Server {
        Server {
            client,
            allow_writes,
            scale: scale.max(1.0),
            floors: Arc::default(),
            checkpoints,
            tools: Arc::new(catalogue::all()),
        }
    }

    /// The tools this server lists: the writing ones only with `--allow-writes`.
    pub fn listed(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .filter(|def| self.allow_writes || !def.access.writes())
            .map(|def| def.tool.clone())
            .collect()
    }

    /// `platform_wait` of the server's time, in real time.
    fn real(&self, platform_wait: Duration) -> Duration {
        platform_wait.div_f64(self.scale)
    }

    /// Carries out the call `name` with `arguments`: the result a client sees.
    pub async fn call(&self, name: &str, arguments: Map<String, Value>) -> CallToolResult {
        let answer = match self.tools.iter().find(|def| def.tool.name == name) {
            None => Err(Refusal::unknown_tool(name)),
            Some(def) if def.access.writes() && !self.allow_writes => {
                Err(Refusal::writes_not_allowed(name))
            }
            Some(def) => self.dispatch(def.call, arguments).await,
        };
        match answer {
            Ok((structured, summary)) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(summary)]);
                result.structured_content = Some(structured);
                result
            }
            Err(refusal) => refusal.into_result(crate::wall_clock()),
        }
    }

    async fn dispatch(&self, call: Call, mut arguments: Map<String, Value>) -> Answer {
        let act_as = match arguments.remove("act_as") {
            None | Some(Value::Null) => None,
            Some(Value::String(who)) => Some(who),
            Some(other) => {
                return Err(Refusal::input(
                    "act_as",
                    format!("`{}` is not a username or an email", shown(&other)),
                ));
            }
        };
        let client = self.client_as(act_as.as_deref())?;
        match call {
            Call::Whoami => whoami(&client, arguments).await,
            Call::Quota => quota(&client, arguments).await,
            Call::AuditStart(kind) => self.audit_start(&client, kind, arguments).await,
            Call::AuditStatus => self.audit_status(&client, arguments).await,
            Call::AuditRead => audit_read(&client, arguments).await,
            Call::AuditDelete => self.audit_delete(&client, arguments).await,
            Call::EventsRead => self.events_read(&client, arguments).await,
            Call::WebhooksList => webhooks_list(&client, arguments).await,
            Call::WebhooksShow => webhooks_show(&client, arguments).await,
            Call::WebhooksRegister => webhooks_register(&client, arguments).await,
            Call::WebhooksEnable => webhooks_status(&client, arguments, Status::Enabled).await,
            Call::WebhooksDisable => webhooks_status(&client, arguments, Status::Disabled).await,
            Call::WebhooksDelete => webhooks_delete(&client, arguments).await,
            Call::Search => search(&client, arguments).await,
        }
    }

    /// The client, acting as `who` when given (the server's own `--act-as` otherwise).
    fn client_as(&self, who: Option<&str>) -> Result<Client, Refusal> {
        let Some(who) = who else {
            return Ok(self.client.clone());
        };
        let parsed = if who.contains('@') {
            ActAs::email(who)
        } else {
            ActAs::username(who)
        };
        parsed
            .map(|who| self.client.act_as(who))
            .map_err(|e| Refusal::input("act_as", e))
    }

    async fn audit_start(
        &self,
        client: &Client,
        kind: AuditReportKind,
        mut arguments: Map<String, Value>,
    ) -> Answer {
        if arguments.contains_key("format") {
            return Err(Refusal::input(
                "format",
                "the server asks for JSON, which audit_read reads as rows: leave it out",
            ));
        }
        arguments.insert(
            "format".into(),
            Value::String(AuditFormat::Json.to_string()),
        );
        let request = AuditRequest::from_json(kind, Value::Object(arguments))?;
        let job = client.audit().create(request).await?;
        let now = Instant::now();
        self.floors.job_seen(&job.id, now, None);
        let wait = self.poll_floor();
        let out = catalogue::AuditJobOut {
            job_id: job.id.clone(),
            kind: Some(job.kind.to_string()),
            state: "running".into(),
            report: None,
            polled: false,
            ask_again_in_seconds: Some(seconds(wait)),
        };
        let summary = format!(
            "{} report job {} started; ask audit_status in {}",
            job.kind,
            job.id,
            crate::failure::human(wait.max(Duration::from_secs(1)))
        );
        answer(&out, summary)
    }

    /// The platform's two minutes between polls of one job, in real time.
    fn poll_floor(&self) -> Duration {
        self.real(AuditWait::MIN_INTERVAL) + Duration::from_millis(100)
    }

    async fn audit_status(&self, client: &Client, arguments: Map<String, Value>) -> Answer {
        let input: catalogue::AuditStatusIn = decode(arguments)?;
        let id = input.job_id.trim();
        if id.is_empty() || id.contains('/') {
            return Err(Refusal::input(
                "job_id",
                format!(
                    "`{}` is not a job id (one word, as audit_start answered; a report KIND/ID \
                     goes to audit_read)",
                    input.job_id
                ),
            ));
        }
        let floor = self.poll_floor();
        let (state, polled, wait) = match self.floors.job_gate(id, floor, Instant::now()) {
            Gate::Closed { wait, seen } => (seen, false, Some(wait)),
            Gate::Open => {
                let state = client.audit().job_state(id).await?;
                self.floors
                    .job_seen(id, Instant::now(), Some(state.clone()));
                (Some(state), true, Some(floor))
            }
        };
        let (state, report, kind, wait) = match state {
            Some(JobState::Completed(at)) => (
                "completed".to_string(),
                Some(format!("{}/{}", at.kind, at.id)),
                Some(at.kind.to_string()),
                None,
            ),
            Some(JobState::Running { status }) => (status, None, None, wait),
            None => ("running".to_string(), None, None, wait),
        };
        let summary = match (&report, wait) {
            (Some(report), _) => format!("job {id} completed: read {report} with audit_read"),
            (None, Some(wait)) => format!(
                "job {id} {state}{}; ask again in {}",
                if polled { "" } else { " (not asked: too soon)" },
                crate::failure::human(wait.max(Duration::from_secs(1)))
            ),
            (None, None) => format!("job {id} {state}"),
        };
        let out = catalogue::AuditJobOut {
            job_id: id.to_string(),
            kind,
            state,
            report,
            polled,
            ask_again_in_seconds: wait.map(seconds),
        };
        answer(&out, summary)
    }

    async fn audit_delete(&self, client: &Client, arguments: Map<String, Value>) -> Answer {
        let input: catalogue::AuditDeleteIn = decode(arguments)?;
        let at = report_location(&input.report)?;
        client.audit().remove(&at).await?;
        self.floors.job_gone(&at.id);
        let deleted = format!("{}/{}", at.kind, at.id);
        answer(
            &catalogue::DeletedOut {
                deleted: deleted.clone(),
            },
            format!("report {deleted} deleted"),
        )
    }

    async fn events_read(&self, client: &Client, arguments: Map<String, Value>) -> Answer {
        let input: catalogue::EventsReadIn = decode(arguments)?;
        let max = match input.max_events.unwrap_or(50) {
            max @ 1..=100 => max as u8,
            other => {
                return Err(Refusal::input(
                    "max_events",
                    format!("{other} is not from 1 to 100"),
                ));
            }
        };
        if input.cursor.is_some() && input.checkpoint.is_some() {
            return Err(Refusal::input(
                "checkpoint",
                "give a cursor or a checkpoint, not both",
            ));
        }
        if let Some(name) = &input.checkpoint
            && (name.trim().is_empty() || name.len() > 200)
        {
            return Err(Refusal::input(
                "checkpoint",
                "a checkpoint name is 1 to 200 characters",
            ));
        }
        if let Some(wait) = self.floors.events_wait(Instant::now()) {
            let out = catalogue::EventsOut {
                events: Vec::new(),
                next_cursor: input.cursor.or_else(|| {
                    input
                        .checkpoint
                        .as_deref()
                        .and_then(|name| self.floors.checkpoint(name))
                }),
                checkpoint: input.checkpoint.clone(),
                caught_up: true,
                polled: false,
                ask_again_in_seconds: Some(seconds(wait)),
                may_have_missed: false,
            };
            let summary = format!(
                "caught up; the events list may be polled again in {} (nothing was sent)",
                crate::failure::human(wait.max(Duration::from_secs(1)))
            );
            return answer(&out, summary);
        }
        let start = match (input.cursor, &input.checkpoint) {
            (Some(cursor), _) => StreamStart::After(cursor),
            (None, Some(name)) => self
                .floors
                .checkpoint(name)
                .map_or(StreamStart::Oldest, StreamStart::After),
            (None, None) => StreamStart::Latest,
        };
        let mut builder = client
            .events()
            .stream(EventsVersion::V2)
            .start(start)
            .page_size(max)
            .types(input.types.clone());
        if let Some(folder) = &input.folder {
            builder = builder.folder(folder.clone());
        }
        if let Some(suppress) = input.suppress {
            builder = builder.suppress(match suppress {
                types::EventSuppress::App => pubapi_sdk_ext::events::Suppress::App,
                types::EventSuppress::User => pubapi_sdk_ext::events::Suppress::User,
                types::EventSuppress::None => pubapi_sdk_ext::events::Suppress::None,
            });
        }
        if let (Some(store), Some(name)) = (&self.checkpoints, &input.checkpoint) {
            builder = builder.checkpoints(store.clone(), name.clone());
        }
        let mut stream = builder.build();
        let mut events = Vec::new();
        let mut caught_up = None;
        let mut may_have_missed = false;
        // A window is a few pages; a checkpoint file another server holds (its lease) would
        // keep this one standing by: the call answers what it has by then.
        let give_up = Instant::now() + WINDOW_TIME;
        while events.len() < usize::from(max) {
            let Ok(item) = tokio::time::timeout_at(give_up, stream.next()).await else {
                break;
            };
            match item {
                None => break,
                Some(Err(error)) => return Err(error.into()),
                Some(Ok(StreamItem::Event(event))) => events.push(event.raw),
                Some(Ok(StreamItem::Undecodable(_))) => {}
                Some(Ok(StreamItem::Notice(StreamNotice::CaughtUp { next_poll_in }))) => {
                    caught_up = Some(next_poll_in);
                    break;
                }
                Some(Ok(StreamItem::Notice(StreamNotice::MayHaveMissed { .. }))) => {
                    may_have_missed = true;
                }
                Some(Ok(_)) => {}
            }
        }
        let next_cursor = stream.checkpoint().or(input.cursor);
        if let Some(name) = &input.checkpoint {
            if let Some(id) = next_cursor {
                self.floors.save_checkpoint(name, id);
            }
            stream
                .save_checkpoint()
                .await
                .map_err(|e| Refusal::input("checkpoint", e))?;
        }
        let wait = caught_up.map(|wait| self.real(wait));
        if let Some(wait) = wait {
            self.floors.events_caught_up(Instant::now(), wait);
        }
        let summary = format!(
            "{} event(s){}{}",
            events.len(),
            next_cursor.map_or(String::new(), |c| format!(", next cursor {c}")),
            match wait {
                Some(wait) => format!(
                    "; caught up, poll again in {}",
                    crate::failure::human(wait.max(Duration::from_secs(1)))
                ),
                None => "; more may follow at once".into(),
            }
        );
        let out = catalogue::EventsOut {
            events,
            next_cursor,
            checkpoint: input.checkpoint,
            caught_up: wait.is_some(),
            polled: true,
            ask_again_in_seconds: wait.map(seconds),
            may_have_missed,
        };
        answer(&out, summary)
    }
}

/// Seconds, to the millisecond.
fn seconds(wait: Duration) -> f64 {
    (wait.as_secs_f64() * 1000.0).ceil() / 1000.0
}

/// `out` as the structured result, with its summary.
fn answer<T: Serialize>(out: &T, summary: String) -> Answer {
    let value = serde_json::to_value(out)
        .map_err(|e| Refusal::input("result", format!("cannot be written as JSON: {e}")))?;
    Ok((value, summary))
}

/// The arguments as `T`, or a refusal naming the field that does not fit.
fn decode<T: DeserializeOwned>(arguments: Map<String, Value>) -> Result<T, Refusal> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // A missing or unknown field is named by the message, at the root.
        let field = match path.as_str() {
            "." => inner
                .split('`')
                .nth(1)
                .filter(|_| inner.contains("field"))
                .unwrap_or("arguments")
                .to_string(),
            path => path.to_string(),
        };
        Refusal::input(field, inner)
    })
}

/// No argument but `act_as`.
fn no_arguments(arguments: Map<String, Value>) -> Result<(), Refusal> {
    match arguments.keys().next() {
        Some(name) => Err(Refusal::input(
            name.clone(),
            "this tool takes no such argument",
        )),
        None => Ok(()),
    }
}

fn report_location(text: &str) -> Result<ReportLocation, Refusal> {
    crate::audit::report_location(text).map_err(|failure| Refusal::input("report", failure))
}

async fn whoami(client: &Client, arguments: Map<String, Value>) -> Answer {
    no_arguments(arguments)?;
    let me = client.identity().whoami().await?;
    let acting_as = client.acting_as().map(|who| who.as_str().to_string());
    let summary = format!(
        "{} on {}{}",
        me.username,
        me.domain.as_deref().unwrap_or("-"),
        acting_as
            .as_deref()
            .map_or(String::new(), |who| format!(", acting as {who}"))
    );
    answer(
        &catalogue::WhoamiOut {
            whoami: me,
            acting_as,
        },
        summary,
    )
}

async fn quota(client: &Client, arguments: Map<String, Value>) -> Answer {
    no_arguments(arguments)?;
    let classes = [("general", LimitClass::General), ("ai", LimitClass::Ai)];
    if !classes
        .iter()
        .any(|(_, class)| client.quota(*class).server.is_some())
    {
        client.identity().whoami().await?;
    }
    let now = crate::wall_clock();
    let rows: Vec<catalogue::ClassQuota> = classes
        .iter()
        .map(|(name, class)| {
            let quota = client.quota(*class);
            let server = quota.server.unwrap_or_default();
            let per_day = server.quota_allotted.or(quota.per_day);
            let used = server.quota_current.max(quota.used_today);
            let remaining = per_day.zip(used).map(|(n, used)| n.saturating_sub(used));
            let next = quota.next_slot_in;
            let resets_at = (remaining == Some(0) && next != Duration::MAX)
                .then(|| now.checked_add(next))
                .flatten()
                .and_then(|at| pubapi_sdk_ext::jiff::Timestamp::try_from(at).ok())
                .map(|at| {
                    at.round(pubapi_sdk_ext::jiff::Unit::Second)
                        .unwrap_or(at)
                        .to_string()
                });
            catalogue::ClassQuota {
                class: (*name).to_string(),
                per_day,
                used_today: used,
                remaining_today: remaining,
                next_call_in_seconds: if next == Duration::MAX {
                    -1.0
                } else {
                    seconds(next)
                },
                resets_at,
                from: if server.quota_current.is_some() {
                    "gateway".into()
                } else {
                    "client".into()
                },
            }
        })
        .collect();
    let summary = rows
        .iter()
        .map(|row| {
            format!(
                "{}: {} of {} left",
                row.class,
                row.remaining_today
                    .map_or_else(|| "?".into(), |n| n.to_string()),
                row.per_day.map_or_else(|| "?".into(), |n| n.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    answer(&catalogue::QuotaOut { classes: rows }, summary)
}

async fn audit_read(client: &Client, arguments: Map<String, Value>) -> Answer {
    let input: catalogue::AuditReadIn = decode(arguments)?;
    let at = report_location(&input.report)?;
    let size = input.page_size.unwrap_or(100);
    if !(1..=1000).contains(&size) {
        return Err(Refusal::input(
            "page_size",
            format!("{size} is not from 1 to 1000"),
        ));
    }
    let offset = input.cursor.unwrap_or(0);
    let page = client.audit().page(&at, offset, size).await?;
    let rows: Vec<Map<String, Value>> = page
        .events
        .iter()
        .map(|event| match serde_json::to_value(event) {
            Ok(Value::Object(map)) => map,
            Ok(other) => Map::from_iter([("value".to_string(), other)]),
            Err(_) => Map::new(),
        })
        .collect();
    let end = offset + rows.len() as u64;
    let next_cursor = match page.total_count {
        Some(total) => (end < total).then_some(end),
        None => (rows.len() as u64 == size).then_some(end),
    };
    let report = format!("{}/{}", at.kind, at.id);
    let summary = format!(
        "rows {}..{} of {} in {report}{}",
        offset,
        end,
        page.total_count
            .map_or_else(|| "?".into(), |n| n.to_string()),
        next_cursor.map_or(String::new(), |c| format!("; next cursor {c}"))
    );
    answer(
        &catalogue::AuditPageOut {
            report,
            total: page.total_count,
            offset,
            rows,
            next_cursor,
        },
        summary,
    )
}

async fn webhooks_list(client: &Client, arguments: Map<String, Value>) -> Answer {
    no_arguments(arguments)?;
    let webhooks = client.webhooks().list().await?;
    let summary = format!("{} webhook registration(s)", webhooks.len());
    answer(&catalogue::WebhooksOut { webhooks }, summary)
}

async fn webhooks_show(client: &Client, arguments: Map<String, Value>) -> Answer {
    let input: catalogue::WebhookIdIn = decode(arguments)?;
    let mut webhook = client.webhooks().details(&input.webhook_id).await?;
    // The delivery secret is the receiver's: a model has no use for it.
    webhook.auth_header = None;
    let summary = format!(
        "webhook {} ({}) to {}",
        input.webhook_id,
        webhook
            .status
            .as_ref()
            .map_or_else(|| "?".into(), ToString::to_string),
        webhook.url.as_deref().unwrap_or("?")
    );
    answer(&catalogue::WebhookOut { webhook }, summary)
}

async fn webhooks_register(client: &Client, mut arguments: Map<String, Value>) -> Answer {
    let skip_check = match arguments.remove(catalogue::SKIP_ENDPOINT_CHECK) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other) => {
            return Err(Refusal::input(
                catalogue::SKIP_ENDPOINT_CHECK,
                format!("expected true or false, found {other}"),
            ));
        }
    };
    let body: types::WebhookCreateRequest = decode(arguments)?;
    let mut registration = Registration::new(&body.url)?;
    if skip_check {
        registration = registration.skip_endpoint_check();
    }
    if !body.event_type.is_empty() {
        let names: Vec<String> = body.event_type.iter().map(ToString::to_string).collect();
        registration = registration.event_names(&names)?;
    }
    if let Some(paths) = &body.path {
        registration = registration.paths(paths.split(',').map(|p| p.trim().to_string()))?;
    }
    if let Some(header) = body.auth_header {
        registration = registration.auth_header(header);
    }
    let webhook = client.webhooks().create(&registration).await?;
    let summary = format!(
        "webhook {} registered ({})",
        webhook.webhook_id, webhook.status
    );
    answer(&catalogue::WebhookStatusOut { webhook }, summary)
}

async fn webhooks_status(client: &Client, arguments: Map<String, Value>, to: Status) -> Answer {
    let input: catalogue::WebhookIdIn = decode(arguments)?;
    let webhook = client.webhooks().set_status(&input.webhook_id, to).await?;
    let summary = format!("webhook {} is {}", webhook.webhook_id, webhook.status);
    answer(&catalogue::WebhookStatusOut { webhook }, summary)
}

async fn webhooks_delete(client: &Client, arguments: Map<String, Value>) -> Answer {
    let input: catalogue::WebhookIdIn = decode(arguments)?;
    client.webhooks().delete(&input.webhook_id).await?;
    answer(
        &catalogue::DeletedOut {
            deleted: input.webhook_id.clone(),
        },
        format!("webhook {} deleted", input.webhook_id),
    )
}

async fn search(client: &Client, arguments: Map<String, Value>) -> Answer {
    let request: types::HybridSearchRequest = decode(arguments)?;
    let response = client.search().page(request).await?;
    let summary = format!("{} result(s)", response.results.len());
    answer(&catalogue::SearchOut { response }, summary)
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                "pubapi",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        Ok(self.call(&request.name, arguments).await.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed().into_iter().find(|tool| tool.name == name)
    }
}
