//! The assistant's finished execution.

use super::AssistantStatus;
use crate::time::{self, TimeError};
use jiff::Timestamp;
use pubapi_sdk::types::AssistantToolCall;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::test_time::{AT, at};
    use serde_json::json;

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
}
