//! An agent's question (checked before sending), its finished answer, and the typed time of
//! an agent's status.

use crate::error::Error;
use crate::time::{self, TimeError};
use jiff::Timestamp;
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

/// The time of an agent's execution result (reference 2.2).
pub trait AgentRequestStatusExt {
    /// `lastUpdated`, an ISO 8601 UTC timestamp, as an instant; `None` when absent.
    ///
    /// # Errors
    /// [`TimeError`] naming `lastUpdated` and its text when it is not an ISO 8601 instant.
    fn last_updated_at(&self) -> Result<Option<Timestamp>, TimeError>;
}

impl AgentRequestStatusExt for AgentRequestStatus {
    fn last_updated_at(&self) -> Result<Option<Timestamp>, TimeError> {
        time::optional_instant("lastUpdated", self.last_updated.as_deref())
    }
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

    use crate::ai::test_time::at;
    use serde_json::json;

    #[test]
    fn agent_last_updated_is_an_iso_8601_utc_timestamp() {
        let status: AgentRequestStatus = serde_json::from_value(
            json!({"status": "COMPLETED", "lastUpdated": "2026-01-05T10:00:00Z"}),
        )
        .unwrap();
        assert_eq!(status.last_updated_at(), Ok(at()));
        let bad: AgentRequestStatus =
            serde_json::from_value(json!({"status": "COMPLETED", "lastUpdated": "soon"})).unwrap();
        assert_eq!(
            bad.last_updated_at().unwrap_err().to_string(),
            "`lastUpdated` is not an iso 8601 instant: \"soon\""
        );
        let none: AgentRequestStatus =
            serde_json::from_value(json!({"status": "RUNNING"})).unwrap();
        assert_eq!(none.last_updated_at(), Ok(None));
    }
}
