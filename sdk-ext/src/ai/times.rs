//! Typed time reads of the AI answers: the generated types keep each time field as sent
//! (ISO 8601 text or epoch milliseconds); these traits read them as [`Timestamp`] instants.

use crate::time::{self, TimeError};
use jiff::Timestamp;
use pubapi_sdk::types::{
    AgentRequestStatus, AssistantStatusResponse, AssistantToolCall, HybridSearchResult,
};

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

/// The time of an assistant status body (reference 2.4).
pub trait AssistantStatusResponseExt {
    /// `lastUpdated`, epoch milliseconds, as an instant; `None` when absent.
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`] when the number is outside the years -9999 to 9999.
    fn last_updated_at(&self) -> Result<Option<Timestamp>, TimeError>;
}

impl AssistantStatusResponseExt for AssistantStatusResponse {
    fn last_updated_at(&self) -> Result<Option<Timestamp>, TimeError> {
        time::optional_epoch_millis("lastUpdated", self.last_updated)
    }
}

/// The time of one of the assistant's tool calls.
pub trait AssistantToolCallExt {
    /// `timestamp` as an instant; `None` when absent. The reference says ISO 8601; the
    /// platform's clients also receive epoch seconds as a string (`"1767607200"`), which is
    /// read too.
    ///
    /// # Errors
    /// [`TimeError`] naming `timestamp` and its text when it is neither.
    fn timestamp_at(&self) -> Result<Option<Timestamp>, TimeError>;
}

impl AssistantToolCallExt for AssistantToolCall {
    fn timestamp_at(&self) -> Result<Option<Timestamp>, TimeError> {
        let Some(text) = self.timestamp.as_deref() else {
            return Ok(None);
        };
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return match text.parse::<i64>() {
                Ok(seconds) => time::epoch_seconds("timestamp", seconds).map(Some),
                Err(_) => Err(TimeError::NotAnInstant {
                    field: "timestamp",
                    text: text.to_string(),
                }),
            };
        }
        time::instant("timestamp", text).map(Some)
    }
}

/// The time of a hybrid-search result.
pub trait HybridSearchResultExt {
    /// `uploadedTimestamp`, when the current version was uploaded (epoch milliseconds), as an
    /// instant; `None` when absent.
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`] when the number is outside the years -9999 to 9999.
    fn uploaded_at(&self) -> Result<Option<Timestamp>, TimeError>;
}

impl HybridSearchResultExt for HybridSearchResult {
    fn uploaded_at(&self) -> Result<Option<Timestamp>, TimeError> {
        time::optional_epoch_millis("uploadedTimestamp", self.uploaded_timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AT: i64 = 1_767_607_200_000; // 2026-01-05T10:00:00Z

    fn at() -> Option<Timestamp> {
        Some(Timestamp::from_millisecond(AT).unwrap())
    }

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

    #[test]
    fn assistant_last_updated_is_epoch_milliseconds() {
        let status: AssistantStatusResponse =
            serde_json::from_value(json!({"status": "COMPLETED", "lastUpdated": AT})).unwrap();
        assert_eq!(status.last_updated_at(), Ok(at()));
    }

    #[test]
    fn tool_call_timestamp_is_iso_8601_or_epoch_seconds_as_a_string() {
        let call = |t: &str| AssistantToolCall {
            timestamp: Some(t.to_string()),
            ..Default::default()
        };
        assert_eq!(call("2026-01-05T10:00:00Z").timestamp_at(), Ok(at()));
        assert_eq!(call("1767607200").timestamp_at(), Ok(at()));
        for bad in ["-", "99999999999999999999", "later"] {
            assert_eq!(
                call(bad).timestamp_at().unwrap_err().field(),
                "timestamp",
                "{bad}"
            );
        }
        assert_eq!(AssistantToolCall::default().timestamp_at(), Ok(None));
    }

    #[test]
    fn search_result_upload_time_is_epoch_milliseconds() {
        let result: HybridSearchResult =
            serde_json::from_value(json!({"entryId": "e1", "uploadedTimestamp": AT})).unwrap();
        assert_eq!(result.uploaded_at(), Ok(at()));
    }

    #[test]
    fn knowledge_base_created_on_and_last_processed_at_are_epoch_milliseconds() {
        use crate::ai::KnowledgeBaseExt;
        let kb: pubapi_sdk::types::KnowledgeBase = serde_json::from_value(
            json!({"id": "kb1", "createdOn": AT, "lastProcessedAt": AT + 1000}),
        )
        .unwrap();
        assert_eq!(kb.created_at(), Ok(at()));
        assert_eq!(
            kb.processed_at().unwrap().unwrap().as_millisecond(),
            AT + 1000
        );
        let far: pubapi_sdk::types::KnowledgeBase =
            serde_json::from_value(json!({"id": "kb1", "createdOn": i64::MAX})).unwrap();
        assert_eq!(far.created_at().unwrap_err().field(), "createdOn");
        assert_eq!(far.processed_at(), Ok(None));
    }
}
