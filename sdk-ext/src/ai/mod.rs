//! What the AI handles take and give back: agent questions and answers, the assistant's
//! answer, the waits that poll politely for them (every poll counts against the AI budget of
//! 100 calls a day), the deprecated copilot's answer with its sunset surfaced, and a
//! knowledge base's typed state. The handles themselves (`client.agents()`,
//! `client.assistant()`, `client.copilot()`, `client.documents()`,
//! `client.knowledge_bases()`, `client.search()`) are in [`crate::api`].

mod agents;
mod answer_wait;
mod assistant;
mod copilot;
mod pages;
mod times;

pub use agents::{AgentAnswer, AgentQuestion, MAX_QUESTION_CHARS};
pub use answer_wait::{AgentStatus, AiWait, AskError, AssistantStatus, StatusObserver};
pub use assistant::AssistantAnswer;
pub use copilot::{CopilotAnswer, Deprecation, SUNSET};
pub(crate) use pages::pages;
pub use pages::{KnowledgeBaseExt, KnowledgeBaseListFilters, KnowledgeBaseState};
pub use times::{
    AgentRequestStatusExt, AssistantStatusResponseExt, AssistantToolCallExt, HybridSearchResultExt,
};
