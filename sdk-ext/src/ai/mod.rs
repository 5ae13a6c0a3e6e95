//! What the AI handles take and give back: agent questions and answers, the assistant's
//! answer, the waits that poll politely for them (every poll counts against the AI budget of
//! 100 calls a day), the deprecated copilot's answer with its sunset surfaced, and a
//! knowledge base's typed state. The handles themselves (`client.agents()`,
//! `client.assistant()`, `client.copilot()`, `client.documents()`,
//! `client.knowledge_bases()`, `client.search()`) are in [`crate::api`].

//!
//! The parts, each named after what it holds:
//!
//! - `agent_answer`: an agent's question (checked before sending), its finished answer and the
//!   typed time of an agent's status;
//! - `assistant_answer`: the assistant's finished execution and the typed times of its status
//!   and tool calls;
//! - `answer_wait`: the waits for both ([`AiWait`]) and the statuses they poll through;
//! - `copilot_deprecation`: the deprecated copilot's answer with its sunset;
//! - `kb_and_search_pages`: a knowledge base's typed state and times, a search result's
//!   upload time, and the page streams of the knowledge-base list and hybrid search.

mod agent_answer;
mod answer_wait;
mod assistant_answer;
mod copilot_deprecation;
mod kb_and_search_pages;

pub use agent_answer::{AgentAnswer, AgentQuestion, AgentRequestStatusExt, MAX_QUESTION_CHARS};
pub use answer_wait::{AgentStatus, AiWait, AskError, AssistantStatus, StatusObserver};
pub use assistant_answer::{AssistantAnswer, AssistantStatusResponseExt, AssistantToolCallExt};
pub use copilot_deprecation::{CopilotAnswer, Deprecation, SUNSET};
pub(crate) use kb_and_search_pages::pages;
pub use kb_and_search_pages::{
    HybridSearchResultExt, KnowledgeBaseExt, KnowledgeBaseListFilters, KnowledgeBaseState,
};

/// The instant the time reads of the AI answers are tested with, 2026-01-05T10:00:00Z.
#[cfg(test)]
mod test_time {
    /// It in epoch milliseconds.
    pub(super) const AT: i64 = 1_767_607_200_000;

    /// It as the instant a read gives.
    pub(super) fn at() -> Option<jiff::Timestamp> {
        Some(jiff::Timestamp::from_millisecond(AT).unwrap())
    }
}
