//! An agent's question (checked before sending) and its finished answer.

use crate::error::Error;
use pubapi_sdk::types::{AgentAskRequest, AgentAskResponse, AgentRequestStatus};

/// The longest question an agent accepts, in characters.
pub use crate::request::validate::MAX_QUESTION_CHARS;

/// A finished agent answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentAnswer {
    /// The ids of the question.
    pub request: AgentAskResponse,
    /// The final status body (`COMPLETED`), with the response text and citations.
    pub result: AgentRequestStatus,
}

/// What [`Agents::ask`](crate::api::Agents::ask) and
/// [`Agents::ask_and_wait`](crate::api::Agents::ask_and_wait) take: a question's text (`&str` or
/// `String`), or a whole [`AgentAskRequest`].
pub trait AgentQuestion {
    /// The request body, or why the question is refused ([`Error::InvalidInput`]).
    fn into_request(self) -> Result<AgentAskRequest, Error>;
}

impl AgentQuestion for &str {
    fn into_request(self) -> Result<AgentAskRequest, Error> {
        let question = check_question(self)?;
        AgentAskRequest::new(question).map_err(|e| Error::invalid_input("question", e.to_string()))
    }
}

impl AgentQuestion for String {
    fn into_request(self) -> Result<AgentAskRequest, Error> {
        self.as_str().into_request()
    }
}

impl AgentQuestion for &String {
    fn into_request(self) -> Result<AgentAskRequest, Error> {
        self.as_str().into_request()
    }
}

impl AgentQuestion for AgentAskRequest {
    fn into_request(self) -> Result<AgentAskRequest, Error> {
        check_question(&self.question)?;
        Ok(self)
    }
}

fn check_question(question: &str) -> Result<pubapi_sdk::types::AgentAskRequestQuestion, Error> {
    let invalid = |problem: String| Error::invalid_input("question", problem);
    crate::request::validate::question_text(question, Some(MAX_QUESTION_CHARS))
        .map_err(|refusal| invalid(refusal.problem))?;
    question
        .to_string()
        .try_into()
        .map_err(|e: pubapi_sdk::types::error::ConversionError| invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_of_35000_characters_is_accepted_and_one_more_refused() {
        let at_limit = "é".repeat(MAX_QUESTION_CHARS);
        assert!(check_question(&at_limit).is_ok());
        let over = "é".repeat(MAX_QUESTION_CHARS + 1);
        assert!(matches!(check_question(&over), Err(Error::InvalidInput(_))));
        assert!(matches!(check_question("  "), Err(Error::InvalidInput(_))));
    }
}
