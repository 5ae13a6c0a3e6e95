//! The AI endpoints done right: agents and the assistant answered with one call that polls
//! politely (every poll counts against the AI budget of 100 calls a day), the deprecated
//! copilot with its sunset surfaced, and page streams over knowledge bases and hybrid search.

mod agents;
mod answer_wait;
mod assistant;
mod copilot;
mod documents;
mod pages;

pub use agents::{AgentAnswer, AgentQuestion, Agents, MAX_QUESTION_CHARS};
pub use answer_wait::{AgentStatus, AiWait, AskError, AssistantStatus, StatusObserver};
pub use assistant::{Assistant, AssistantAnswer};
pub use copilot::{Copilot, CopilotAnswer, Deprecation, SUNSET};
pub use documents::Documents;
pub use pages::{KnowledgeBaseExt, KnowledgeBaseState, KnowledgeBases, Search};
