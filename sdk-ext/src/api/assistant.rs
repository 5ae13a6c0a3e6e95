//! The assistant handle, `client.assistant()`: ask, then poll the execution until it is no
//! longer `IN_PROGRESS`. The answer types are in [`crate::ai`].

use crate::Client;
use crate::ai::{AiWait, AskError, AssistantAnswer, AssistantStatus};
use crate::error::Error;
use crate::prelude::*;
use crate::waiter::{Started, Verdict, WaitError, wait};
use pubapi_sdk::types::{AssistantAskRequest, AssistantAskResponse, AssistantStatusResponse};

/// The assistant endpoints: `client.assistant()`.
#[derive(Debug, Clone, Copy)]
pub struct Assistant<'a> {
    pub(crate) client: &'a Client,
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
    /// `IN_PROGRESS` (reference 4.3): every other status is final and ends the wait at once,
    /// with no further poll. `COMPLETED` returns answer, citations and tool calls; a final
    /// status the SDK does not name returns the answer the same way, its status kept as
    /// [`AssistantStatus::Other`] (see [`AssistantAnswer::status`]). The platform's other
    /// final statuses are errors: `FAILED` ([`AskError::Failed`] with the failure text) and
    /// `AWAITING_USER_CONFIRMATION` ([`AskError::AwaitingConfirmation`] with the pending
    /// actions).
    ///
    /// An error after the question was asked keeps the execution ([`WaitError::started`]);
    /// [`Assistant::ask`] then [`Assistant::wait`] does the same in two steps, with the ids in
    /// hand. Either way, after a timeout or a failed poll, waiting again costs no new
    /// question.
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
        let execution = self
            .ask(request)
            .await
            .map_err(|e| WaitError::before_waiting(AskError::Api(e)))?;
        self.wait(&execution, how)
            .await
            .map_err(|e| e.after_starting(Started::AssistantQuestion(execution)))
    }

    /// Polls an execution already started ([`Assistant::ask`]) until it ends, as
    /// [`Assistant::ask_and_wait`] does: the way to wait again for an answer already paid
    /// for after a wait timed out or a poll failed (see [`crate::api::Agents::wait`]).
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::ai::AiWait;
    /// use pubapi_sdk_ext::types::AssistantAskRequest;
    /// use pubapi_sdk_ext::waiter::WaitError;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let assistant = client.assistant();
    /// let request = AssistantAskRequest::builder().question("Which contracts renew in May?");
    /// let execution = assistant.ask(request.try_into()?).await?;
    /// let answer = loop {
    ///     match assistant.wait(&execution, AiWait::default()).await {
    ///         // Still running: wait again, without asking (and paying) again.
    ///         Err(WaitError::TimedOut { .. }) => continue,
    ///         other => break other?,
    ///     }
    /// };
    /// println!("{}", answer.text().unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub async fn wait(
        &self,
        execution: &AssistantAskResponse,
        how: AiWait,
    ) -> Result<AssistantAnswer, WaitError<AskError>> {
        let id = &execution.execution_id;
        let result = wait(how.config(), || async {
            match self.status(id).await {
                Ok(status) => {
                    how.on_status.tell(&status.status);
                    match AssistantStatus::from(status.status.as_str()) {
                        AssistantStatus::InProgress => Verdict::Pending,
                        AssistantStatus::Failed => Verdict::Failed(AskError::Failed {
                            status: status.status,
                            response_text: status.response_text,
                        }),
                        AssistantStatus::AwaitingUserConfirmation => {
                            Verdict::Failed(AskError::AwaitingConfirmation {
                                execution: Box::new(execution.clone()),
                                result: Box::new(status),
                            })
                        }
                        AssistantStatus::Completed | AssistantStatus::Other(_) => {
                            Verdict::Done(status)
                        }
                    }
                }
                Err(e) => Verdict::Failed(AskError::Api(e)),
            }
        })
        .await?;
        Ok(AssistantAnswer {
            execution: execution.clone(),
            result,
        })
    }
}
