//! A knowledge base's typed state and times, a hybrid-search result's upload time, and the
//! page streams of the knowledge-base list and hybrid search.

use crate::error::Error;
use crate::time::{self, TimeError, millis_text};
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use jiff::Timestamp;
use pubapi_sdk::types::{
    HybridSearchResult, KnowledgeBase, KnowledgeBaseListRequest, KnowledgeBaseStatus, builder,
};
use std::collections::VecDeque;
use std::fmt;

/// The state of a knowledge base, an open enum over the generated [`KnowledgeBaseStatus`]:
/// the reference names `ACTIVE`, `DELETED` and `CREATED`; any other value is kept as
/// [`KnowledgeBaseState::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KnowledgeBaseState {
    /// A state the reference names (`ACTIVE`, `DELETED`, `CREATED`).
    Known(KnowledgeBaseStatus),
    /// A state the reference does not name, as sent.
    Other(String),
}

impl KnowledgeBaseState {
    /// The state as the API spells it.
    pub fn as_str(&self) -> &str {
        match self {
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Active) => "ACTIVE",
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Deleted) => "DELETED",
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Created) => "CREATED",
            KnowledgeBaseState::Other(other) => other,
        }
    }
}

impl From<&str> for KnowledgeBaseState {
    fn from(state: &str) -> Self {
        state
            .parse::<KnowledgeBaseStatus>()
            .map(KnowledgeBaseState::Known)
            .unwrap_or_else(|_| KnowledgeBaseState::Other(state.to_string()))
    }
}

impl From<KnowledgeBaseStatus> for KnowledgeBaseState {
    fn from(state: KnowledgeBaseStatus) -> Self {
        KnowledgeBaseState::Known(state)
    }
}

impl fmt::Display for KnowledgeBaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Typed reads of a [`KnowledgeBase`] (the generated type keeps `status` as sent).
pub trait KnowledgeBaseExt {
    /// The knowledge base's `status`, typed; `None` when the body has none.
    fn state(&self) -> Option<KnowledgeBaseState>;

    /// `createdOn` (epoch milliseconds) as an instant; `None` when absent.
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`] when the number is outside the years -9999 to 9999.
    fn created_at(&self) -> Result<Option<Timestamp>, TimeError>;

    /// `lastProcessedAt` (epoch milliseconds) as an instant; `None` when absent.
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`] when the number is outside the years -9999 to 9999.
    fn processed_at(&self) -> Result<Option<Timestamp>, TimeError>;
}

impl KnowledgeBaseExt for KnowledgeBase {
    fn state(&self) -> Option<KnowledgeBaseState> {
        self.status.as_deref().map(KnowledgeBaseState::from)
    }

    fn created_at(&self) -> Result<Option<Timestamp>, TimeError> {
        crate::time::optional_epoch_millis("createdOn", self.created_on)
    }

    fn processed_at(&self) -> Result<Option<Timestamp>, TimeError> {
        crate::time::optional_epoch_millis("lastProcessedAt", self.last_processed_at)
    }
}

/// Typed filters of the knowledge-base list: a creator's user id and the bounds of the
/// creation time.
///
/// The reference types `createdBy`, `createdAfter` and `createdBefore` as `string` and does
/// not show their format; the platform's clients send an integer user id and epoch
/// milliseconds. The wire stays a string, as the reference says, and these setters write the
/// numbers the platform's clients send as decimal strings (`"1001"`, `"1727740800000"`), so
/// a caller never formats a filter by hand. Implemented for the request and for its
/// generated builder.
///
/// ```
/// use pubapi_sdk_ext::ai::KnowledgeBaseListFilters;
/// use pubapi_sdk_ext::jiff::Timestamp;
/// use pubapi_sdk_ext::types::KnowledgeBaseListRequest;
///
/// let october: Timestamp = "2024-10-01T00:00:00Z".parse()?;
/// let request = KnowledgeBaseListRequest::default()
///     .with_created_by(1001)
///     .with_created_after(october);
/// assert_eq!(request.created_by.as_deref(), Some("1001"));
/// assert_eq!(request.created_after.as_deref(), Some("1727740800000"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KnowledgeBaseListFilters: Sized {
    /// Only knowledge bases created by the user with this id (`createdBy`).
    #[must_use]
    fn with_created_by(self, user_id: i64) -> Self;

    /// Only knowledge bases created after `at` (`createdAfter`, epoch milliseconds).
    #[must_use]
    fn with_created_after(self, at: Timestamp) -> Self;

    /// Only knowledge bases created before `at` (`createdBefore`, epoch milliseconds).
    #[must_use]
    fn with_created_before(self, at: Timestamp) -> Self;
}

impl KnowledgeBaseListFilters for KnowledgeBaseListRequest {
    fn with_created_by(self, user_id: i64) -> Self {
        KnowledgeBaseListRequest {
            created_by: Some(user_id.to_string()),
            ..self
        }
    }

    fn with_created_after(self, at: Timestamp) -> Self {
        KnowledgeBaseListRequest {
            created_after: Some(millis_text(at)),
            ..self
        }
    }

    fn with_created_before(self, at: Timestamp) -> Self {
        KnowledgeBaseListRequest {
            created_before: Some(millis_text(at)),
            ..self
        }
    }
}

impl KnowledgeBaseListFilters for builder::KnowledgeBaseListRequest {
    fn with_created_by(self, user_id: i64) -> Self {
        self.created_by(Some(user_id.to_string()))
    }

    fn with_created_after(self, at: Timestamp) -> Self {
        self.created_after(Some(millis_text(at)))
    }

    fn with_created_before(self, at: Timestamp) -> Self {
        self.created_before(Some(millis_text(at)))
    }
}

/// The items of numbered pages as one stream, from page `first` upwards: `fetch` reads page
/// `n` and says whether another follows. An error is yielded and ends the stream, as does
/// the last page number.
pub(crate) fn pages<T, F, Fut>(first: i64, fetch: F) -> BoxStream<'static, Result<T, Error>>
where
    T: Send + 'static,
    F: FnMut(i64) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(Vec<T>, bool), Error>> + Send,
{
    let state = (Some(first), VecDeque::new(), fetch);
    futures_util::stream::unfold(state, |(mut next, mut buffer, mut fetch)| async move {
        loop {
            if let Some(item) = buffer.pop_front() {
                return Some((Ok(item), (next, buffer, fetch)));
            }
            let number = next.take()?;
            match fetch(number).await {
                Ok((items, more)) => {
                    next = more.then(|| number.checked_add(1)).flatten();
                    buffer.extend(items);
                }
                Err(e) => return Some((Err(e), (None, buffer, fetch))),
            }
        }
    })
    .boxed()
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
    use crate::ai::test_time::{AT, at};
    use serde_json::json;

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
