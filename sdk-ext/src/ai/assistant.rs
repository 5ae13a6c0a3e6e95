//! The assistant: ask, then poll the execution until it is no longer `IN_PROGRESS`.

use super::answer_wait::UnknownStatuses;
use super::{AiWait, AskError};
use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use crate::waiter::{Verdict, WaitError, wait};
use pubapi_sdk::types::{AssistantAskRequest, AssistantAskResponse, AssistantStatusResponse};

/// The assistant endpoints: `client.assistant()`.
#[derive(Debug, Clone, Copy)]
pub struct Assistant<'a> {
    client: &'a Client,
}

/// A finished assistant execution.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantAnswer {
    /// The ask response (conversation and execution ids).
    pub execution: AssistantAskResponse,
    /// The final status body (`COMPLETED`): the answer, citations, thoughts and tool calls.
    pub result: AssistantStatusResponse,
}

impl AssistantAnswer {
    /// The answer text.
    pub fn text(&self) -> Option<&str> {
        self.result.response_text.as_deref()
    }

    /// The final status as sent (the reference names `COMPLETED`; others are carried).
    pub fn status(&self) -> Option<&str> {
        Some(self.result.status.as_str())
    }
}

impl Client {
    /// The assistant endpoints.
    pub fn assistant(&self) -> Assistant<'_> {
        Assistant { client: self }
    }
}

impl Assistant<'_> {
    /// Starts an execution; answers at once with its id.
    pub async fn ask(&self, request: AssistantAskRequest) -> Result<AssistantAskResponse, Error> {
        Ok(self
            .client
            .sdk()
            .ask_assistant()
            .body(request)
            .send()
            .await?
            .into_inner())
    }

    /// One status poll (`includeCitations` true).
    pub async fn status(&self, execution_id: &str) -> Result<AssistantStatusResponse, Error> {
        let call = self
            .client
            .sdk()
            .get_assistant_status()
            .execution_id(execution_id)
            .include_citations(true);
        Ok(call.send().await?.into_inner())
    }

    /// Asks and polls `/v1/ai/assistant/{executionId}/status` until the status is no longer
    /// `IN_PROGRESS`; returns answer, citations and tool calls on `COMPLETED`. It also ends on
    /// the platform's other final statuses: `FAILED` ([`AskError::Failed`] with the failure
    /// text) and `AWAITING_USER_CONFIRMATION` ([`AskError::AwaitingConfirmation`] with the
    /// pending actions); a status it does not know ends it after
    /// [`AiWait::unknown_status_polls`] polls ([`AskError::UnknownStatus`]).
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::types::AssistantAskRequest;
    /// use pubapi_sdk_ext::ai::AiWait;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let request = AssistantAskRequest::builder().question("Which contracts renew in May?");
    /// let answer = client
    ///     .assistant()
    ///     .ask_and_wait(request.try_into()?, AiWait::default())
    ///     .await?;
    /// println!("{}", answer.text().unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub async fn ask_and_wait(
        &self,
        request: AssistantAskRequest,
        how: AiWait,
    ) -> Result<AssistantAnswer, WaitError<AskError>> {
        let execution = self.ask(request).await.map_err(|e| WaitError::Failed {
            error: AskError::Api(e),
            polls: 0,
            waited: std::time::Duration::ZERO,
        })?;
        let id = execution.execution_id.clone();
        let unknown = UnknownStatuses::new(&how);
        let result = wait(how.config(), || async {
            match self.status(&id).await {
                Ok(status) => unknown.verdict(
                    Some(status.status.clone()),
                    status.response_text.clone(),
                    status,
                    |status| AskError::AwaitingConfirmation {
                        execution: Box::new(execution.clone()),
                        result: Box::new(status),
                    },
                ),
                Err(e) => Verdict::Failed(AskError::Api(e)),
            }
        })
        .await?;
        Ok(AssistantAnswer { execution, result })
    }
}
