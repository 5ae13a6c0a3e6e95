//! `pubapi agents|assistant|documents|kb|search`: the SDK's AI handles. Asks that the
//! platform answers asynchronously wait with the SDK's waiters behind a spinner.

use crate::Session;
use crate::args::{AgentsCommand, AssistantCommand, DocumentsCommand, KbCommand, SearchArgs};
use crate::failure::Failure;
use crate::progress;
use indicatif::ProgressBar;
use pubapi_sdk::types::{
    AssistantAskRequest, DocumentAskRequest, DocumentSummaryRequest, HybridSearchRequest,
    KnowledgeBaseAskRequest, KnowledgeBaseListRequest,
};
use pubapi_sdk_ext::ai::{AiWait, StatusObserver};
use serde_json::json;

/// How the CLI waits for AI answers: the SDK's defaults (on the sandbox's faster clock when
/// that is where the question went), each poll's status shown on `spinner` after `who`.
fn ai_wait(session: &Session, spinner: &ProgressBar, who: &str) -> AiWait {
    let patient = AiWait::default();
    let (spinner, who) = (spinner.clone(), who.to_string());
    AiWait {
        min_interval: session.real(patient.min_interval),
        max_interval: session.real(patient.max_interval),
        on_status: StatusObserver::new(move |status| {
            spinner.set_message(format!("{who}: {status}, waiting for the answer"));
        }),
        ..patient
    }
}

fn question_error(e: impl std::fmt::Display) -> Failure {
    Failure::usage(format!("the question: {e}"))
}

/// Runs `pubapi agents …`.
pub async fn agents(session: &Session, command: AgentsCommand) -> Result<(), Failure> {
    match command {
        AgentsCommand::List => {
            let agents = session.client.agents().list().await?;
            if session.out.json {
                return session.out.json_document(&agents);
            }
            session.out.table(
                &["ID", "NAME", "DESCRIPTION"],
                agents
                    .iter()
                    .map(|a| {
                        vec![
                            a.agent_id.clone(),
                            a.name.clone().unwrap_or_default(),
                            a.description.clone().unwrap_or_default(),
                        ]
                    })
                    .collect(),
            )
        }
        AgentsCommand::Ask { agent, question } => {
            let who = format!("agent {agent}");
            let spinner = progress::status(format!("{who}: asking"));
            let agents = session.client.agents();
            let asked = agents.ask_and_wait(&agent, &question, ai_wait(session, &spinner, &who));
            let answer = spinning(&spinner, asked).await?;
            if session.out.json {
                return session.out.json_document(&json!({
                    "request": answer.request,
                    "result": answer.result,
                }));
            }
            session
                .out
                .text(answer.result.response_text.as_deref().unwrap_or_default())
        }
    }
}

/// What `work` gives once done, with `spinner` cleared away first.
async fn spinning<T>(spinner: &ProgressBar, work: impl Future<Output = T>) -> T {
    let done = work.await;
    spinner.finish_and_clear();
    done
}

/// Runs `pubapi assistant …`.
pub async fn assistant(session: &Session, command: AssistantCommand) -> Result<(), Failure> {
    let AssistantCommand::Ask {
        question,
        citations,
    } = command;
    let mut request = AssistantAskRequest::new(question).map_err(question_error)?;
    request.include_citations = Some(citations);
    let spinner = progress::status("assistant: asking");
    let assistant = session.client.assistant();
    let asked = assistant.ask_and_wait(request, ai_wait(session, &spinner, "assistant"));
    let answer = spinning(&spinner, asked).await?;
    if session.out.json {
        return session.out.json_document(&json!({
            "execution": answer.execution,
            "result": answer.result,
        }));
    }
    let mut text = answer.text().unwrap_or_default().to_string();
    if citations {
        for citation in &answer.result.citations {
            text.push_str(&format!(
                "\n  cites {}",
                citation.filename.as_deref().unwrap_or("?")
            ));
        }
    }
    session.out.text(&text)
}

/// Runs `pubapi documents …`.
pub async fn documents(session: &Session, command: DocumentsCommand) -> Result<(), Failure> {
    let response = match command {
        DocumentsCommand::Ask { entry, question } => {
            let request = DocumentAskRequest::new(question).map_err(question_error)?;
            let answer = session.client.documents().ask(&entry, request).await?;
            if session.out.json {
                return session.out.json_document(&answer);
            }
            answer.response.and_then(|r| r.text)
        }
        DocumentsCommand::Summarize { entry } => {
            let summary = session
                .client
                .documents()
                .summarize(&entry, Some(DocumentSummaryRequest::default()))
                .await?;
            if session.out.json {
                return session.out.json_document(&summary);
            }
            summary.response.and_then(|r| r.text)
        }
    };
    session.out.text(response.as_deref().unwrap_or_default())
}

/// Runs `pubapi kb …`.
pub async fn kb(session: &Session, command: KbCommand) -> Result<(), Failure> {
    match command {
        KbCommand::List { status } => {
            let request = serde_json::from_value::<KnowledgeBaseListRequest>(json!({
                "status": status,
            }))
            .map_err(|e| Failure::usage(format!("--status: {e}")))?;
            let page = session.client.knowledge_bases().page(request).await?;
            if session.out.json {
                return session.out.json_document(&page);
            }
            session.out.table(
                &["ID", "NAME", "STATUS", "PATHS"],
                page.content
                    .iter()
                    .map(|kb| {
                        vec![
                            kb.id.clone().unwrap_or_default(),
                            kb.name.clone().unwrap_or_default(),
                            kb.status.clone().unwrap_or_default(),
                            kb.paths
                                .iter()
                                .filter_map(|p| p.path.clone())
                                .collect::<Vec<_>>()
                                .join(", "),
                        ]
                    })
                    .collect(),
            )
        }
        KbCommand::Ask { kb, question } => {
            let request = KnowledgeBaseAskRequest::new(question).map_err(question_error)?;
            let answer = session.client.knowledge_bases().ask(&kb, request).await?;
            if session.out.json {
                return session.out.json_document(&answer);
            }
            let text = answer.response.and_then(|r| r.text).unwrap_or_default();
            session.out.text(&text)
        }
    }
}

/// Runs `pubapi search …`.
pub async fn search(session: &Session, args: SearchArgs) -> Result<(), Failure> {
    let mut request = HybridSearchRequest::new(args.query)
        .map_err(|e| Failure::usage(format!("the query: {e}")))?;
    let size = u64::try_from(args.size)
        .ok()
        .and_then(std::num::NonZeroU64::new)
        .ok_or_else(|| Failure::usage(format!("--size {}: at least 1", args.size)))?;
    request.size = Some(size);
    request.semantic_weight = args.semantic_weight;
    request.folder_path = args.folder;
    let found = session.client.search().page(request).await?;
    if session.out.json {
        return session.out.json_document(&found);
    }
    session.out.table(
        &["SCORE", "FILE", "ENTRY", "TEXT"],
        found
            .results
            .iter()
            .map(|hit| {
                let best = hit.chunks.first();
                vec![
                    format!("{:.3}", best.and_then(|c| c.score).unwrap_or(0.0)),
                    hit.filename.clone().unwrap_or_default(),
                    hit.entry_id.clone().unwrap_or_default(),
                    best.and_then(|c| c.text()).unwrap_or_default().to_string(),
                ]
            })
            .collect(),
    )
}
