//! The AI handles of the blocking client: agents, the assistant, the deprecated copilot,
//! document Q&A, knowledge bases and hybrid search.

use super::Iter;
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

blocking_handle! {
    /// The agents of the domain: `client.agents()` (see [`crate::api::Agents`]).
    Agents = agents {
        /// Lists the agents (see [`crate::api::Agents::list`]).
        fn list(&self) -> Result<Vec<Agent>, Error> => call;

        /// Asks `agent_id` a question; the answer comes later (see [`crate::api::Agents::ask`]).
        fn ask(
            &self,
            agent_id: &str,
            question: impl AgentQuestion,
        ) -> Result<AgentAskResponse, Error> => call;

        /// One status poll of a question.
        fn status(
            &self,
            agent_id: &str,
            request_id: &str,
        ) -> Result<AgentRequestStatus, Error> => call;

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
        fn ask_and_wait(
            &self,
            agent_id: &str,
            question: impl AgentQuestion,
            how: AiWait,
        ) -> Result<AgentAnswer, WaitError<AskError>> => call;

        /// Blocks polling a question already asked until it ends (see
        /// [`crate::api::Agents::wait`]): waiting again for an answer already paid for.
        fn wait(
            &self,
            agent_id: &str,
            request: &AgentAskResponse,
            how: AiWait,
        ) -> Result<AgentAnswer, WaitError<AskError>> => call;
    }
}

blocking_handle! {
    /// The assistant endpoints: `client.assistant()` (see [`crate::api::Assistant`]).
    Assistant = assistant {
        /// Starts an execution; answers at once with its id.
        fn ask(&self, request: AssistantAskRequest) -> Result<AssistantAskResponse, Error> => call;

        /// One status poll (`includeCitations` true).
        fn status(&self, execution_id: &str) -> Result<AssistantStatusResponse, Error> => call;

        /// Asks and blocks until the execution ends (see
        /// [`crate::api::Assistant::ask_and_wait`]).
        fn ask_and_wait(
            &self,
            request: AssistantAskRequest,
            how: AiWait,
        ) -> Result<AssistantAnswer, WaitError<AskError>> => call;

        /// Blocks polling an execution already started until it ends (see
        /// [`crate::api::Assistant::wait`]).
        fn wait(
            &self,
            execution: &AssistantAskResponse,
            how: AiWait,
        ) -> Result<AssistantAnswer, WaitError<AskError>> => call;
    }
}

blocking_handle! {
    /// The copilot endpoint: `client.copilot()` (deprecated; see [`crate::api::Copilot`]).
    Copilot = copilot {
        /// Asks the copilot (see [`crate::api::Copilot::ask`]: refused after its sunset).
        fn ask(&self, request: CopilotAskRequest) -> Result<CopilotAnswer, Error> => call;
    }
}

blocking_handle! {
    /// Questions about, and summaries of, one document version: `client.documents()`.
    Documents = documents {
        /// Asks a question about the document version `entry_id`.
        fn ask(
            &self,
            entry_id: &str,
            request: DocumentAskRequest,
        ) -> Result<DocumentAskResponse, Error> => call;

        /// Summarizes the document version `entry_id`, with an optional chat history.
        fn summarize(
            &self,
            entry_id: &str,
            request: Option<DocumentSummaryRequest>,
        ) -> Result<DocumentSummaryResponse, Error> => call;
    }
}

blocking_handle! {
    /// Knowledge bases: `client.knowledge_bases()`.
    KnowledgeBases = knowledge_bases {
        /// One page of the list (`POST /v1/ai/kb/list`).
        fn page(
            &self,
            request: KnowledgeBaseListRequest,
        ) -> Result<KnowledgeBasePage, Error> => call;

        /// The knowledge bases of the list, one at a time (see
        /// [`crate::api::KnowledgeBases::list`]).
        fn list(&self, request: KnowledgeBaseListRequest) -> Iter<KnowledgeBase, Error> => iter;

        /// Asks a knowledge base (`POST /v1/ai/kb/{kb-id}/ask`).
        fn ask(
            &self,
            kb_id: &str,
            request: KnowledgeBaseAskRequest,
        ) -> Result<KnowledgeBaseAskResponse, Error> => call;
    }
}

blocking_handle! {
    /// Hybrid (semantic + keyword) search: `client.search()`.
    Search = search {
        /// One page of results.
        fn page(&self, request: HybridSearchRequest) -> Result<HybridSearchResponse, Error> => call;

        /// All results, page by page, one at a time (see [`crate::api::Search::results`]). Every
        /// page is an AI call.
        fn results(&self, request: HybridSearchRequest) -> Iter<HybridSearchResult, Error> => iter;
    }
}
