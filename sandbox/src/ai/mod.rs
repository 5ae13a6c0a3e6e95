//! The AI endpoints: agents, document Q&A and summaries, the assistant, the deprecated
//! copilot, knowledge bases and hybrid search, all answering deterministically from the
//! documents of the sandbox's file system (the built-in corpus plus files created with
//! content).
//!
//! # How the parts fit
//!
//! One module per area of the API, as `pubapi-sdk-ext`'s `ai` is split: [`agents`],
//! [`documents`], [`assistant`], [`copilot`], [`knowledge_bases`] and [`mod@hybrid_search`]
//! each hold their endpoints (the router calls them through the re-exports below) and the
//! behaviour they document. They share two modules and depend on nothing else here:
//!
//! - [`body`]: reading a request body: the `question` and the fields every AI question
//!   takes, the `[fail]`/`[confirm]` markers, `selectedItems`, and the paging and filter
//!   fields of the knowledge-base list and hybrid search;
//! - [`answers`]: what every area answers from: the documents, the chunks ranked for a
//!   question ([`answers::rank`]), the answer composed from them and its citations
//!   (`answers` reads `selectedItems` through `body`; uses go one way).
//!
//! This module keeps the state the areas change between calls ([`AiState`]: agent requests
//! and assistant executions, polled until they end) and the creation time of the built-in
//! agents and knowledge bases.

mod agents;
mod answers;
mod assistant;
mod body;
mod copilot;
mod documents;
mod hybrid_search;
mod knowledge_bases;

pub use agents::{agent_status, ask_agent, list_agents};
pub use assistant::{ask_assistant, assistant_status};
pub use body::{CONFIRM_MARKER, FAIL_MARKER};
pub use copilot::ask_copilot;
pub use documents::{ask_document, summarize_document};
pub use hybrid_search::hybrid_search;
pub use knowledge_bases::{ask_knowledge_base, list_knowledge_bases};

use crate::dates::midnight_ms;
use agents::AgentRequest;
use assistant::Execution;

/// Epoch milliseconds of a catalogue date (09:00 UTC that day).
fn date_ms(date: (i64, u32, u32)) -> i64 {
    midnight_ms(date) + 9 * 3_600_000
}

/// Agent requests and assistant executions.
#[derive(Debug, Default)]
pub struct AiState {
    requests: Vec<AgentRequest>,
    executions: Vec<Execution>,
}
