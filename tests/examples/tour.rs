//! A tour of the Content Platform Public API with `pubapi-sdk-ext`.
//!
//! ```sh
//! cargo run -p pubapi-testkit --example tour
//! ```
//!
//! With no configuration it starts the sandbox in-process (its clock running 240 times faster
//! than real time, so an audit job finishes in about a second) and walks through every area:
//! whoami, agents, the assistant, document Q&A, knowledge bases, hybrid search, an audit
//! report, a webhook delivered to a local receiver, and the events stream.
//!
//! With `PUBAPI_DOMAIN` (or `PUBAPI_BASE_URL`, as printed by `pubapi-sandbox`) and
//! `PUBAPI_TOKEN` set, it runs the read-only parts against that domain instead.

use pubapi_sdk_ext::ai::AiWait;
use pubapi_sdk_ext::audit::{AuditEvent, AuditWait, ReportRead};
use pubapi_sdk_ext::events::{
    EventQuery, EventStream, EventsVersion, PollingEventType, StreamItem, StreamNotice, StreamStart,
};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::types::{
    self, AssistantAskRequest, AuditFormat, DocumentAskRequest, DocumentSummaryRequest,
    HybridSearchRequest, KnowledgeBaseAskRequest, KnowledgeBaseListRequest, KnowledgeBaseStatus,
    LoginEvent, LoginsAuditRequest,
};
use pubapi_sdk_ext::webhook::registration::Registration;
use pubapi_sdk_ext::webhook::{self, Batch, EventData, HandlerError, Receiver, WebhookSecret};
use pubapi_sdk_ext::{Budget, Client, Limits, SecretToken};
use pubapi_testkit::poll_every_second;
use pubapi_testkit::sandbox::{ClockConfig, LimitsConfig, Sandbox, SandboxConfig, iso_seconds};
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The sandbox clock's speed: 2 sandbox minutes (the audit poll interval) per half second.
const TIME_SCALE: f64 = 240.0;

fn section(title: &str) {
    println!("\n== {title}");
}

/// Prints each line of a listing, indented, or why the listing is not available.
fn print_listed(listed: std::result::Result<Vec<String>, pubapi_sdk_ext::Error>) {
    match listed {
        Ok(lines) => lines.iter().for_each(|line| println!("  {line}")),
        Err(e) => println!("  not available: {e}"),
    }
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let started = Instant::now();
    let token = std::env::var("PUBAPI_TOKEN").ok().filter(|t| !t.is_empty());
    let domain = std::env::var("PUBAPI_DOMAIN")
        .ok()
        .filter(|d| !d.is_empty());
    let base_url = std::env::var("PUBAPI_BASE_URL")
        .ok()
        .filter(|u| !u.is_empty());
    // The domain's platform, else one served at the base URL; with a token, read only.
    let platform = match (domain, base_url) {
        (Some(domain), _) => Some((Client::builder().domain(&domain), domain)),
        (None, Some(base_url)) => Some((Client::builder().base_url(&base_url), base_url)),
        (None, None) => None,
    };
    match (token, platform) {
        (Some(token), Some((builder, place))) => {
            println!("pubapi tour — read-only, against {place}");
            let client = builder.token(SecretToken::try_from(token)?).build()?;
            read_only(&client).await;
        }
        _ => sandbox_tour().await?,
    }
    println!("\ndone in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// What can be shown on a real domain without changing anything.
async fn read_only(client: &Client) {
    section("whoami");
    match client.identity().whoami().await {
        Ok(me) => println!(
            "  {} on {} (client {}, scopes {})",
            me.username,
            me.domain.as_deref().unwrap_or("?"),
            me.client_id.as_deref().unwrap_or("?"),
            me.scopes.join(", ")
        ),
        Err(e) => println!("  whoami failed: {e}"),
    }
    section("agents");
    let agents = client.agents().list().await;
    print_listed(agents.map(|agents| {
        let line = |agent: &types::Agent| {
            let description = agent.description.as_deref().unwrap_or("");
            format!("{} — {description}", agent.name.as_deref().unwrap_or("?"))
        };
        agents.iter().map(line).collect()
    }));
    section("knowledge bases");
    let bases = client.knowledge_bases();
    let first_page = bases.page(KnowledgeBaseListRequest::default()).await;
    print_listed(first_page.map(|page| {
        let line = |kb: &types::KnowledgeBase| {
            let status = kb.status.as_deref().unwrap_or("?");
            format!("{} [{status}]", kb.name.as_deref().unwrap_or("?"))
        };
        page.content.iter().map(line).collect()
    }));
    section("hybrid search");
    let request = HybridSearchRequest {
        size: std::num::NonZeroU64::new(5),
        ..HybridSearchRequest::new("policy").expect("a non-blank query")
    };
    print_listed(client.search().page(request).await.map(|found| {
        let name = |hit: &types::HybridSearchResult| hit.filename.clone();
        found
            .results
            .iter()
            .map(|hit| name(hit).unwrap_or("?".into()))
            .collect()
    }));
    section("webhooks");
    match client.webhooks().list().await {
        Ok(hooks) => println!("  {} registered for this user and client", hooks.len()),
        Err(e) => println!("  not available: {e}"),
    }
    section("events");
    match client.events().cursor().await {
        Ok(cursor) => {
            let latest = cursor.latest_event_id;
            println!(
                "  cursor: latest {latest}, oldest {}",
                cursor.oldest_event_id
            );
            let query = EventQuery::after((latest - 5).max(0));
            match client.events().page(EventsVersion::V2, &query).await {
                Ok(Some(page)) => {
                    for event in &page.events {
                        print_event(event);
                    }
                }
                Ok(None) => println!("  nothing new"),
                Err(e) => println!("  not available: {e}"),
            }
        }
        Err(e) => println!("  not available: {e}"),
    }
}

/// Polls for AI answers once a second: the sandbox answers after a few polls.
fn ai_wait() -> AiWait {
    poll_every_second(Duration::from_secs(60))
}

fn print_event(event: &pubapi_sdk_ext::types::PollingEvent) {
    let data = &event.data;
    println!(
        "  #{} {} {} {} by user {}",
        event.id,
        event.type_,
        event
            .action
            .as_ref()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        data.get("target_path")
            .and_then(|p| p.as_str())
            .unwrap_or(""),
        event.actor.unwrap_or(0)
    );
}

/// Everything, on an in-process sandbox.
async fn sandbox_tour() -> Result<()> {
    // The reference's limits, except that a sandbox second lasts 4 ms of real time on this
    // clock, too short a window for 2 calls.
    let limits = LimitsConfig {
        general_per_second: Some(20),
        ..LimitsConfig::reference()
    };
    let config = SandboxConfig::default()
        .with_clock(ClockConfig::scaled(TIME_SCALE))
        .with_limits(limits);
    let sandbox = Sandbox::start(config).await;
    println!(
        "pubapi tour — sandbox at {} (clock x{TIME_SCALE}), no credentials needed",
        sandbox.base_url()
    );
    // The sandbox enforces the reference's limits per sandbox second; on its fast clock a
    // client may go faster than 2 per real second.
    let client = Client::builder()
        .base_url(sandbox.base_url())
        .token(SecretToken::try_from(sandbox.admin_token())?)
        .limits(Limits {
            general: Budget::new(Some(50), Some(1000)),
            ai: Budget::new(None, Some(100)),
        })
        .build()?;

    section("whoami");
    let me = client.identity().whoami().await?;
    println!(
        "  {} on {} (client {}, scopes {})",
        me.username,
        me.domain.unwrap_or_default(),
        me.client_id.unwrap_or_default(),
        me.scopes.join(", ")
    );

    section("audit report (started)");
    let request = LoginsAuditRequest::new(
        iso_seconds(sandbox.now_ms() - 7 * 86_400_000),
        iso_seconds(sandbox.now_ms() + 60_000),
        AuditFormat::Json,
        [LoginEvent::Logins, LoginEvent::FailedAttempts],
    )?;
    let audit_job = client.audit().create(request).await?;
    println!(
        "  logins report of the last 7 days: job {} created (202); collected at the end",
        audit_job.id
    );

    section("agents");
    let agents = client.agents().list().await?;
    for agent in agents.iter() {
        println!(
            "  {} ({}) — {}",
            agent.name.as_deref().unwrap_or("?"),
            agent.agent_id,
            agent.description.as_deref().unwrap_or("")
        );
    }
    let agent_id = "agt-policy-helper";
    let question = "How much are hotel costs per night?";
    println!("  asking Policy Helper \"{question}\" and waiting for the answer");
    let answer = client
        .agents()
        .ask_and_wait(agent_id, question, ai_wait())
        .await?;
    println!(
        "  {} (request {}): {}",
        answer.result.status,
        answer.request.request_id,
        answer.result.response_text.unwrap_or_default()
    );

    section("assistant");
    let request = AssistantAskRequest {
        include_citations: Some(true),
        ..AssistantAskRequest::new("What happens when a webhook delivery fails?")?
    };
    let answer = client.assistant().ask_and_wait(request, ai_wait()).await?;
    println!(
        "  execution {}: {}: {}",
        answer.execution.execution_id,
        answer.status(),
        answer.text().unwrap_or_default()
    );
    for citation in &answer.result.citations {
        println!("    cites {}", citation.filename.as_deref().unwrap_or("?"));
    }
    for (id, call) in &answer.result.tool_calls {
        println!(
            "    tool call {id}: {} -> {}",
            call.tool_display_name.as_deref().unwrap_or("?"),
            call.output
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
    }

    section("document Q&A");
    let travel = "4100002";
    let answer = client
        .documents()
        .ask(
            travel,
            DocumentAskRequest {
                include_citations: Some(true),
                ..DocumentAskRequest::new("What is the daily meal allowance?")?
            },
        )
        .await?;
    println!(
        "  travel-and-expenses.docx, \"What is the daily meal allowance?\"\n  -> {}",
        answer.response.and_then(|r| r.text).unwrap_or_default()
    );
    let summary = client
        .documents()
        .summarize(travel, Some(DocumentSummaryRequest::default()))
        .await?;
    println!(
        "  summary: {}",
        short(
            &summary.response.and_then(|r| r.text).unwrap_or_default(),
            160
        )
    );

    section("knowledge bases");
    let page = client
        .knowledge_bases()
        .page(KnowledgeBaseListRequest {
            status: vec![KnowledgeBaseStatus::Active, KnowledgeBaseStatus::Created],
            ..KnowledgeBaseListRequest::default()
        })
        .await?;
    for kb in &page.content {
        println!(
            "  {} ({}) [{}] {}",
            kb.name.as_deref().unwrap_or("?"),
            kb.id.as_deref().unwrap_or("?"),
            kb.status.as_deref().unwrap_or("?"),
            kb.paths
                .iter()
                .filter_map(|p| p.path.as_deref())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let kb_answer = client
        .knowledge_bases()
        .ask(
            "kb-company-policies",
            KnowledgeBaseAskRequest::new("How long are invoices kept?")?,
        )
        .await?;
    println!(
        "  Company policies, \"How long are invoices kept?\"\n  -> {}",
        kb_answer.response.and_then(|r| r.text).unwrap_or_default()
    );

    section("hybrid search");
    for (query, weight) in [("postmortem action items", 0.0), ("postmortm", 1.0)] {
        let found = client
            .search()
            .page(HybridSearchRequest {
                semantic_weight: Some(weight),
                size: std::num::NonZeroU64::new(3),
                ..HybridSearchRequest::new(query)?
            })
            .await?;
        println!(
            "  \"{query}\" (semanticWeight {weight}): {} hit(s)",
            found.total_elements.unwrap_or(0)
        );
        for hit in &found.results {
            let best = hit.chunks.first();
            println!(
                "    {:.3} {} — {}",
                best.and_then(|c| c.score).unwrap_or(0.0),
                hit.filename.as_deref().unwrap_or("?"),
                short(best.and_then(|c| c.text()).unwrap_or(""), 70)
            );
        }
    }

    section("webhooks");
    let secret = "tour-secret-7f3a9c21e5b84d60";
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let receiver = Arc::new(
        Receiver::builder()
            .secret(WebhookSecret::new(secret)?)
            .build()?,
    );
    let handler = Arc::new(move |batch: Batch| {
        let events_tx = events_tx.clone();
        async move {
            for event in batch.events {
                let _ = events_tx.send(event);
            }
            Ok::<(), HandlerError>(())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let hook_url = format!("http://{}/hooks", listener.local_addr()?);
    let app = axum::Router::new().route("/hooks", webhook::axum::endpoint(receiver, handler));
    let receiver_task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    // The platform requires HTTPS; the sandbox accepts a loopback receiver in test mode.
    let registration = Registration::loopback_for_tests(&hook_url)?
        .event_names(["fs:*", "comment:*"])?
        .paths(["/Tour"])?
        .auth_header(secret);
    let created = client.webhooks().create(&registration).await?;
    let webhook_id = created.webhook_id;
    println!(
        "  registered {webhook_id} -> {hook_url} ({})",
        created.status
    );
    let cursor = client.events().cursor().await?;
    // Activity in the sandbox (what users do in the web app): it feeds deliveries and events.
    let sam = sandbox.activity_as("sam");
    sam.create_folder("/Tour")?;
    sam.create_file("/Tour/plan.txt", "The tour shows every area of the API.")?;
    sam.add_note("/Tour/plan.txt", "Looks good!")?;
    sandbox
        .activity()
        .change_permission("/Tour", "power", None, Some("Editor"))?;
    sam.login("logins", "192.0.2.10", "Web")?;
    for _ in 0..3 {
        match tokio::time::timeout(Duration::from_secs(5), events_rx.recv()).await {
            Ok(Some(event)) => {
                let what = match &event.data {
                    EventData::FsAddFolder(folder) => format!("folder {}", folder.target_path),
                    EventData::FsAddFile(file) => format!("file {}", file.target_path),
                    EventData::CommentSetComment(note) => {
                        format!("comment \"{}\" on {}", note.comment, note.target_path)
                    }
                    other => other.event_type().to_string(),
                };
                println!(
                    "  delivered {} by {}: {what}",
                    event.event_type.as_str(),
                    event.user.username
                );
            }
            _ => {
                println!("  (no delivery within 5 s)");
                break;
            }
        }
    }

    section("events");
    let start = cursor.latest_event_id;
    let mut stream = client
        .events()
        .stream(EventsVersion::V2)
        .start(StreamStart::After(start))
        .build();
    println!("  streaming from cursor {start}");
    while let Some(item) = stream.next().await {
        match item? {
            StreamItem::Event(event) => print_event(&event.raw),
            StreamItem::Undecodable(event) => {
                println!(
                    "  an event the SDK cannot read ({}): {}",
                    event.error, event.raw
                )
            }
            StreamItem::Notice(StreamNotice::CaughtUp { next_poll_in }) => {
                println!(
                    "  caught up at event #{}; a service would poll again in {} s",
                    stream.checkpoint().unwrap_or_default(),
                    next_poll_in.as_secs()
                );
                break;
            }
            StreamItem::Notice(StreamNotice::MayHaveMissed { cursor, oldest }) => {
                println!("  events after #{cursor} and before #{oldest} are no longer kept")
            }
            // Other notices, and items of a later SDK.
            _ => {}
        }
    }
    // A filtered stream moves through windows of ids whose events the filter drops, and still
    // reaches the newest event without waiting between full windows. The token just caught
    // up, so it first waits the reference's 5 minutes (of the sandbox's fast clock).
    tokio::time::sleep(EventStream::MIN_POLL_INTERVAL.div_f64(TIME_SCALE)).await;
    let newest = client.events().cursor().await?.latest_event_id;
    let mut filtered = client
        .events()
        .stream(EventsVersion::V1)
        .start(StreamStart::Oldest)
        .types([PollingEventType::PermissionChange])
        .page_size(5)
        .build();
    let mut matched = 0;
    while let Some(item) = filtered.next().await {
        match item? {
            StreamItem::Event(_) | StreamItem::Undecodable(_) => matched += 1,
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => break,
            _ => {}
        }
    }
    println!(
        "  v1 permission_change stream (windows of 5 ids): {matched} event(s), checkpoint #{} \
         of newest #{newest}{}",
        filtered.checkpoint().unwrap_or_default(),
        if filtered.checkpoint() == Some(newest) {
            ": reached the newest event"
        } else {
            ": DID NOT reach the newest event"
        }
    );
    if filtered.checkpoint() != Some(newest) {
        return Err("the filtered stream stopped before the newest event".into());
    }

    section("audit report");
    // Created at the start of the tour; by now the sandbox has finished it, so the first poll
    // of the waiter (which never polls more often than every 2 minutes) gets the 303.
    let location = client
        .audit()
        .wait(&audit_job, AuditWait::default())
        .await?;
    println!(
        "  job {} completed (303 -> {}/{})",
        audit_job.id, location.kind, location.id
    );
    let first: Vec<_> = client
        .audit()
        .events(
            location.clone(),
            ReportRead {
                page_size: 100,
                offset: 0,
            },
        )
        .take(3)
        .collect()
        .await;
    println!("  the first {} event(s):", first.len());
    for event in first {
        if let AuditEvent::Logins(login) = event? {
            println!(
                "    {} {} {} from {} ({})",
                login.time.unwrap_or_default(),
                login.username.unwrap_or_default(),
                login.event.unwrap_or_default(),
                login.ip_address.unwrap_or_default(),
                login.access.unwrap_or_default()
            );
        }
    }
    let mut csv = Vec::new();
    client
        .audit()
        .csv(&location)
        .await?
        .copy_to(&mut csv)
        .await?;
    println!("  as CSV ({} bytes, streamed):", csv.len());
    for line in String::from_utf8_lossy(&csv).lines().take(3) {
        println!("    {line}");
    }
    let mut rows = client.audit().csv(&location).await?.rows();
    if let Some(row) = rows.next().await {
        let row = row?;
        println!(
            "  as CSV rows: title \"{}\"; first row: {} {} from {}",
            rows.title().unwrap_or("(none)"),
            row.get("Username").unwrap_or("?"),
            row.get("Event").unwrap_or("?"),
            row.get("IP Address").unwrap_or("?")
        );
    }
    client.audit().remove(&location).await?;
    println!("  report deleted (204)");

    section("the sandbox's view");
    let counters = sandbox.counters();
    println!(
        "  {} requests, {} deliveries ok, violations: {}",
        counters.requests,
        counters.deliveries_succeeded,
        if counters.violations.is_empty() {
            "none".to_string()
        } else {
            let total: u64 = counters.violations.values().sum();
            format!("{total} (the sandbox's counters list them)")
        }
    );
    if !counters.violations.is_empty() {
        return Err("the SDK broke a limit of the sandbox".into());
    }
    let conformance = sandbox.check_conformance();
    println!(
        "  {} replies checked against spec/openapi.yaml: {}",
        conformance.checked,
        if conformance.problems.is_empty() {
            "all conform".to_string()
        } else {
            format!("{} problem(s)", conformance.problems.len())
        }
    );
    client.webhooks().delete(&webhook_id).await?;
    receiver_task.abort();
    sandbox.shutdown().await;
    Ok(())
}
