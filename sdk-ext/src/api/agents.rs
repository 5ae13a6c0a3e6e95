//! The agents handle, `client.agents()`: list the agents, ask one (the question checked
//! before sending), poll its status, or ask and wait for the answer. The question and answer
//! types are in [`crate::ai`].

use crate::Client;
use crate::ai::{AgentAnswer, AgentQuestion, AgentStatus, AiWait, AskError};
use crate::error::Error;
use crate::prelude::*;
use crate::waiter::{Started, Verdict, WaitError, wait};
use pubapi_sdk::types::{Agent, AgentAskResponse, AgentRequestStatus};

/// The agents of the domain: `client.agents()`.
#[derive(Debug, Clone, Copy)]
pub struct Agents<'a> {
    pub(crate) client: &'a Client,
}

impl Agents<'_> {
    /// Lists the agents (sorted by name, ascending, as the API does by default).
    pub async fn list(&self) -> Result<Vec<Agent>, Error> {
        Ok(self.client.sdk().list_agents().send().await?.into_inner().0)
    }

    /// Asks `agent_id` a question (its text, or an [`AgentAskRequest`] with the optional
    /// fields the platform's clients send); the answer comes later (see
    /// [`Agents::ask_and_wait`]). The question is checked before sending: not blank, at most
    /// 35,000 characters.
    ///
    /// [`AgentAskRequest`]: crate::types::AgentAskRequest
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::types::AgentAskRequest;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let asked = client.agents().ask("agent-1", "Summarise Q3").await?;
    /// let follow_up = AgentAskRequest {
    ///     conversation_id: asked.conversation_id.clone(),
    ///     entry_ids: vec!["4100002".into()],
    ///     ..AgentAskRequest::new("And Q4?")?
    /// };
    /// client.agents().ask("agent-1", follow_up).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ask(
        &self,
        agent_id: &str,
        question: impl AgentQuestion,
    ) -> Result<AgentAskResponse, Error> {
        let body = question.into_request()?;
        let sent = self.client.sdk().ask_agent().agent_id(agent_id).body(body);
        Ok(sent.send().await?.into_inner())
    }

    /// One status poll of a question.
    pub async fn status(
        &self,
        agent_id: &str,
        request_id: &str,
    ) -> Result<AgentRequestStatus, Error> {
        let call = self
            .client
            .sdk()
            .get_agent_request_status()
            .agent_id(agent_id)
            .request_id(request_id);
        Ok(call.send().await?.into_inner())
    }

    /// Asks and polls the status until `COMPLETED` (the answer) or `FAILED`
    /// ([`AskError::Failed`] with the response text), the statuses the reference ends
    /// polling on, or `AWAITING_USER_CONFIRMATION`, where the platform's CLI stops too
    /// ([`AskError::AgentAwaitingConfirmation`] with the ids and the status body). Every other
    /// status (`PENDING`, `RUNNING`, `IN_PROGRESS`, or one the SDK does not name, see
    /// [`AgentStatus`]) keeps it polling until the wait's deadline ([`WaitError::TimedOut`]).
    ///
    /// An error after the question was asked keeps the agent and the ids
    /// ([`WaitError::started`]); [`Agents::ask`] then [`Agents::wait`] does the same in two
    /// steps, with the ids in hand. Either way, after a timeout or a failed poll, waiting
    /// again costs no new question.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::ai::AiWait;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let answer = client.agents().ask_and_wait("agent-1", "Summarise Q3", AiWait::default()).await?;
    /// println!("{}", answer.result.response_text.unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub async fn ask_and_wait(
        &self,
        agent_id: &str,
        question: impl AgentQuestion,
        how: AiWait,
    ) -> Result<AgentAnswer, WaitError<AskError>> {
        let request = self
            .ask(agent_id, question)
            .await
            .map_err(|e| WaitError::before_waiting(AskError::Api(e)))?;
        self.wait(agent_id, &request, how).await.map_err(|e| {
            e.after_starting(Started::AgentQuestion {
                agent_id: agent_id.to_owned(),
                request,
            })
        })
    }

    /// Polls the status of a question already asked ([`Agents::ask`]) until it ends, as
    /// [`Agents::ask_and_wait`] does: the way to wait again for an answer already paid for
    /// after a wait timed out or a poll failed. `agent_id` is the agent the question was
    /// asked of (the ask's response does not name it). The response serializes to JSON, so
    /// a process can keep it and wait in another; ids kept another way make one with
    /// `AgentAskResponse { request_id, conversation_id }`.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::ai::AiWait;
    /// use pubapi_sdk_ext::waiter::WaitError;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let agents = client.agents();
    /// let request = agents.ask("agent-1", "Summarise Q3").await?;
    /// let answer = match agents.wait("agent-1", &request, AiWait::default()).await {
    ///     // Still running after ten minutes: give it another ten, without asking again.
    ///     Err(WaitError::TimedOut { .. }) => agents.wait("agent-1", &request, AiWait::default()).await?,
    ///     other => other?,
    /// };
    /// println!("{}", answer.result.response_text.unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub async fn wait(
        &self,
        agent_id: &str,
        request: &AgentAskResponse,
        how: AiWait,
    ) -> Result<AgentAnswer, WaitError<AskError>> {
        let request_id = &request.request_id;
        let result = wait(how.config(), || async {
            match self.status(agent_id, request_id).await {
                Ok(status) => {
                    how.on_status.tell(&status.status);
                    match AgentStatus::from(status.status.as_str()) {
                        AgentStatus::Completed => Verdict::Done(status),
                        AgentStatus::Failed => Verdict::Failed(AskError::Failed {
                            status: status.status,
                            response_text: status.response_text,
                        }),
                        AgentStatus::AwaitingUserConfirmation => {
                            Verdict::Failed(AskError::AgentAwaitingConfirmation {
                                request: Box::new(request.clone()),
                                result: Box::new(status),
                            })
                        }
                        _ => Verdict::Pending,
                    }
                }
                Err(e) => Verdict::Failed(AskError::Api(e)),
            }
        })
        .await?;
        Ok(AgentAnswer {
            request: request.clone(),
            result,
        })
    }
}
