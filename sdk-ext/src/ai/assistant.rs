//! The assistant's finished execution.

use super::AssistantStatus;
use pubapi_sdk::types::{AssistantAskResponse, AssistantStatusResponse};

/// A finished assistant execution.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantAnswer {
    /// The ask response (conversation and execution ids).
    pub execution: AssistantAskResponse,
    /// The final status body (`COMPLETED`, or a final status the SDK does not name): the
    /// answer, citations, thoughts and tool calls.
    pub result: AssistantStatusResponse,
}

impl AssistantAnswer {
    /// The answer text.
    pub fn text(&self) -> Option<&str> {
        self.result.response_text.as_deref()
    }

    /// The final status, typed: [`AssistantStatus::Completed`], or
    /// [`AssistantStatus::Other`] with a final status the SDK does not name.
    pub fn status(&self) -> AssistantStatus {
        AssistantStatus::from(self.result.status.as_str())
    }
}
