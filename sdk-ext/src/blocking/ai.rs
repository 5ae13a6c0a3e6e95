//! The AI handles of the blocking client: agents, the assistant, the deprecated copilot,
//! document Q&A, knowledge bases and hybrid search.

use super::{Client, Iter};
use crate::ai::{AgentAnswer, AgentQuestion, AiWait, AskError, AssistantAnswer, CopilotAnswer};
use crate::error::Error;
use crate::waiter::WaitError;
use pubapi_sdk::types::{
    Agent, AgentAskResponse, AgentRequestStatus, AssistantAskRequest, AssistantAskResponse,
    AssistantStatusResponse, CopilotAskRequest, DocumentAskRequest, DocumentAskResponse,
    DocumentSummaryRequest, DocumentSummaryResponse, HybridSearchRequest, HybridSearchResponse,
    HybridSearchResult, KnowledgeBase, KnowledgeBaseAskRequest, KnowledgeBaseAskResponse,
    KnowledgeBaseListRequest, KnowledgeBasePage,
};

/// The agents of the domain: `client.agents()` (see [`crate::api::Agents`]).
#[derive(Debug, Clone, Copy)]
pub struct Agents<'a> {
    pub(super) client: &'a Client,
}

impl Agents<'_> {
    /// Lists the agents (see [`crate::api::Agents::list`]).
    pub fn list(&self) -> Result<Vec<Agent>, Error> {
        self.client.call(self.client.inner.agents().list())
    }

    /// Asks `agent_id` a question; the answer comes later (see [`crate::api::Agents::ask`]).
    pub fn ask(
        &self,
        agent_id: &str,
        question: impl AgentQuestion,
    ) -> Result<AgentAskResponse, Error> {
        self.client
            .call(self.client.inner.agents().ask(agent_id, question))
    }

    /// One status poll of a question.
    pub fn status(&self, agent_id: &str, request_id: &str) -> Result<AgentRequestStatus, Error> {
        self.client
            .call(self.client.inner.agents().status(agent_id, request_id))
    }

    /// Asks and blocks until the answer is there, polling as `how` says (see
    /// [`crate::api::Agents::ask_and_wait`]).
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::ai::AiWait;
    /// # fn run(client: pubapi_sdk_ext::blocking::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let answer = client.agents().ask_and_wait("agent-1", "Summarise Q3", AiWait::default())?;
    /// println!("{}", answer.result.response_text.unwrap_or_default());
    /// # Ok(()) }
    /// ```
    pub fn ask_and_wait(
        &self,
        agent_id: &str,
        question: impl AgentQuestion,
        how: AiWait,
    ) -> Result<AgentAnswer, WaitError<AskError>> {
        let agents = self.client.inner.agents();
        self.client
            .call(agents.ask_and_wait(agent_id, question, how))
    }

    /// Blocks polling a question already asked until it ends (see
    /// [`crate::api::Agents::wait`]): waiting again for an answer already paid for.
    pub fn wait(
        &self,
        agent_id: &str,
        request: &AgentAskResponse,
        how: AiWait,
    ) -> Result<AgentAnswer, WaitError<AskError>> {
        let agents = self.client.inner.agents();
        self.client.call(agents.wait(agent_id, request, how))
    }
}

/// The assistant endpoints: `client.assistant()` (see [`crate::api::Assistant`]).
#[derive(Debug, Clone, Copy)]
pub struct Assistant<'a> {
    pub(super) client: &'a Client,
}

impl Assistant<'_> {
    /// Starts an execution; answers at once with its id.
    pub fn ask(&self, request: AssistantAskRequest) -> Result<AssistantAskResponse, Error> {
        self.client.call(self.client.inner.assistant().ask(request))
    }

    /// One status poll (`includeCitations` true).
    pub fn status(&self, execution_id: &str) -> Result<AssistantStatusResponse, Error> {
        self.client
            .call(self.client.inner.assistant().status(execution_id))
    }

    /// Asks and blocks until the execution ends (see
    /// [`crate::api::Assistant::ask_and_wait`]).
    pub fn ask_and_wait(
        &self,
        request: AssistantAskRequest,
        how: AiWait,
    ) -> Result<AssistantAnswer, WaitError<AskError>> {
        self.client
            .call(self.client.inner.assistant().ask_and_wait(request, how))
    }

    /// Blocks polling an execution already started until it ends (see
    /// [`crate::api::Assistant::wait`]).
    pub fn wait(
        &self,
        execution: &AssistantAskResponse,
        how: AiWait,
    ) -> Result<AssistantAnswer, WaitError<AskError>> {
        self.client
            .call(self.client.inner.assistant().wait(execution, how))
    }
}

/// The copilot endpoint: `client.copilot()` (deprecated; see [`crate::api::Copilot`]).
#[derive(Debug, Clone, Copy)]
pub struct Copilot<'a> {
    pub(super) client: &'a Client,
}

impl Copilot<'_> {
    /// Asks the copilot (see [`crate::api::Copilot::ask`]: refused after its sunset).
    pub fn ask(&self, request: CopilotAskRequest) -> Result<CopilotAnswer, Error> {
        #[allow(deprecated)]
        let copilot = self.client.inner.copilot();
        self.client.call(copilot.ask(request))
    }
}

/// Questions about, and summaries of, one document version: `client.documents()`.
#[derive(Debug, Clone, Copy)]
pub struct Documents<'a> {
    pub(super) client: &'a Client,
}

impl Documents<'_> {
    /// Asks a question about the document version `entry_id`.
    pub fn ask(
        &self,
        entry_id: &str,
        request: DocumentAskRequest,
    ) -> Result<DocumentAskResponse, Error> {
        self.client
            .call(self.client.inner.documents().ask(entry_id, request))
    }

    /// Summarizes the document version `entry_id`, with an optional chat history.
    pub fn summarize(
        &self,
        entry_id: &str,
        request: Option<DocumentSummaryRequest>,
    ) -> Result<DocumentSummaryResponse, Error> {
        self.client
            .call(self.client.inner.documents().summarize(entry_id, request))
    }
}

/// Knowledge bases: `client.knowledge_bases()`.
#[derive(Debug, Clone, Copy)]
pub struct KnowledgeBases<'a> {
    pub(super) client: &'a Client,
}

impl KnowledgeBases<'_> {
    /// One page of the list (`POST /v1/ai/kb/list`).
    pub fn page(&self, request: KnowledgeBaseListRequest) -> Result<KnowledgeBasePage, Error> {
        self.client
            .call(self.client.inner.knowledge_bases().page(request))
    }

    /// The knowledge bases of the list, one at a time (see
    /// [`crate::api::KnowledgeBases::list`]).
    pub fn list(&self, request: KnowledgeBaseListRequest) -> Iter<KnowledgeBase, Error> {
        self.client
            .iter(self.client.inner.knowledge_bases().list(request))
    }

    /// Asks a knowledge base (`POST /v1/ai/kb/{kb-id}/ask`).
    pub fn ask(
        &self,
        kb_id: &str,
        request: KnowledgeBaseAskRequest,
    ) -> Result<KnowledgeBaseAskResponse, Error> {
        self.client
            .call(self.client.inner.knowledge_bases().ask(kb_id, request))
    }
}

/// Hybrid (semantic + keyword) search: `client.search()`.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    pub(super) client: &'a Client,
}

impl Search<'_> {
    /// One page of results.
    pub fn page(&self, request: HybridSearchRequest) -> Result<HybridSearchResponse, Error> {
        self.client.call(self.client.inner.search().page(request))
    }

    /// All results, page by page, one at a time (see [`crate::api::Search::results`]). Every
    /// page is an AI call.
    pub fn results(&self, request: HybridSearchRequest) -> Iter<HybridSearchResult, Error> {
        self.client
            .iter(self.client.inner.search().results(request))
    }
}
