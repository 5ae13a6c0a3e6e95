//! Turning the generated client's results into [`Error`].

use crate::error::{Area, Error, InputError};
use crate::limiter::LimitError;
use crate::policy::AnsweredOperation;
use crate::rejection::LocalRejection;
use bytes::Bytes;
use progenitor_client::ResponseValue;
use pubapi_sdk::operations::Operation;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::time::SystemTime;

/// The largest error body kept (bigger bodies are cut; the status and headers still count).
pub(crate) const MAX_ERROR_BODY: usize = 1 << 20;

/// The area of the API an operation belongs to, from its tag.
pub(crate) fn area_of(operation: &Operation) -> Area {
    match operation.tag {
        "agents" => Area::Agents,
        "document-ai" => Area::DocumentAi,
        "assistant" => Area::Assistant,
        "copilot" => Area::Copilot,
        "knowledge-bases" => Area::KnowledgeBases,
        "hybrid-search" => Area::HybridSearch,
        "audit" => Area::Audit,
        "webhooks" => Area::Webhooks,
        "identity" => Area::Identity,
        _ => Area::Events,
    }
}

/// The area of a URL path, for responses that did not pass a policy.
fn area_of_path(path: &str) -> Area {
    let rest = path
        .find("/v1/")
        .or_else(|| path.find("/v2/"))
        .map_or(path, |i| &path[i + 3..]);
    let areas = [
        ("/ai/agents", Area::Agents),
        ("/ai/document", Area::DocumentAi),
        ("/ai/assistant", Area::Assistant),
        ("/ai/copilot", Area::Copilot),
        ("/ai/kb", Area::KnowledgeBases),
        ("/hybrid-search", Area::HybridSearch),
        ("/audit", Area::Audit),
        ("/webhooks", Area::Webhooks),
        ("/whoami", Area::Identity),
    ];
    areas
        .into_iter()
        .find(|(prefix, _)| rest.starts_with(prefix))
        .map_or(Area::Events, |(_, area)| area)
}

impl Error {
    /// Converts a failed response (status not 2xx, or a policy's local rejection) into the
    /// typed error, reading its body.
    pub async fn from_http_response(response: reqwest::Response) -> Error {
        if let Some(rejection) = LocalRejection::of(&response) {
            return Error::from(rejection.clone());
        }
        let area = response
            .extensions()
            .get::<AnsweredOperation>()
            .map(|answered| area_of(answered.0))
            .unwrap_or_else(|| area_of_path(response.url().path()));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match read_capped(response).await {
            Ok(body) => body,
            Err(e) => return Error::Transport(e),
        };
        Error::from_response(
            area.error_format(),
            area,
            status,
            &headers,
            body,
            SystemTime::now(),
        )
    }

    /// Converts an error of the generated client, given the success type `T` it expected
    /// (so a decode failure can name the JSON path).
    pub async fn from_sdk<T: DeserializeOwned>(error: progenitor_client::Error<()>) -> Error {
        use progenitor_client::Error as Sdk;
        match error {
            Sdk::UnexpectedResponse(response) => Error::from_http_response(response).await,
            Sdk::InvalidResponsePayload(body, _) => match Error::decode::<T>(body) {
                Err(e) => e,
                Ok(_) => Error::Decode {
                    path: ".".into(),
                    message: "the body decoded on a second reading".into(),
                    body: Default::default(),
                },
            },
            Sdk::CommunicationError(e) | Sdk::ResponseBodyError(e) | Sdk::InvalidUpgrade(e) => {
                Error::Transport(e)
            }
            Sdk::ErrorResponse(value) => Error::from_response(
                Area::Events.error_format(),
                Area::Events,
                value.status().as_u16(),
                value.headers(),
                Bytes::new(),
                SystemTime::now(),
            ),
            Sdk::InvalidRequest(problem) | Sdk::Custom(problem) => {
                Error::InvalidInput(InputError::Invalid {
                    field: "request",
                    problem,
                })
            }
        }
    }
}

impl From<LocalRejection> for Error {
    fn from(rejection: LocalRejection) -> Error {
        match rejection {
            LocalRejection::Limit(LimitError::DailyBudgetExhausted {
                class,
                available_in,
            }) => Error::QuotaExhausted {
                class: Some(class),
                resets_in: Some(available_in),
                error: None,
            },
            LocalRejection::Limit(LimitError::NoBudget { class }) => Error::QuotaExhausted {
                class: Some(class),
                resets_in: None,
                error: None,
            },
            LocalRejection::Limit(LimitError::WouldExceedDeadline { max_wait, .. }) => {
                Error::Timeout { elapsed: max_wait }
            }
            LocalRejection::Deadline { elapsed } => Error::Timeout { elapsed },
            LocalRejection::Removed {
                operation,
                sunset,
                successor,
            } => Error::Removed {
                operation,
                sunset,
                successor,
            },
            LocalRejection::Token(problem) => Error::InvalidInput(InputError::Invalid {
                field: "token",
                problem,
            }),
            LocalRejection::Impersonation(e) => Error::InvalidInput(InputError::Impersonation(e)),
            LocalRejection::PathValue {
                operation,
                parameter,
                error,
            } => Error::InvalidInput(InputError::PathValue {
                operation,
                parameter,
                error,
            }),
            LocalRejection::Path { template, sent } => Error::InvalidInput(InputError::Invalid {
                field: "path",
                problem: format!(
                    "the request path {sent} does not match the operation's path {template}: \
                     a URL parser resolved a path value of `.` or `..`"
                ),
            }),
        }
    }
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a body and stops: the rest is never read.
pub(crate) async fn read_capped(mut response: reqwest::Response) -> reqwest::Result<Bytes> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Ok(Bytes::from(body))
}

/// `.typed()` on the future of any generated operation: the result with [`Error`] as its
/// error type.
///
/// ```no_run
/// use pubapi_sdk_ext::prelude::*;
/// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), pubapi_sdk_ext::Error> {
/// let hooks = client.list_webhooks().send().typed().await?;
/// # Ok(()) }
/// ```
pub trait TypedResultExt<T>: Sized {
    /// Awaits the operation and converts its error into [`Error`].
    fn typed(self) -> impl Future<Output = Result<ResponseValue<T>, Error>> + Send;
}

impl<F, T> TypedResultExt<T> for F
where
    F: Future<Output = Result<ResponseValue<T>, progenitor_client::Error<()>>> + Send,
    T: DeserializeOwned + Send,
{
    async fn typed(self) -> Result<ResponseValue<T>, Error> {
        match self.await {
            Ok(value) => Ok(value),
            Err(e) => Err(Error::from_sdk::<T>(e).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn area_of_a_url_path_follows_the_reference_layout() {
        let cases = [
            ("/pubapi/v1/ai/agents/list", Area::Agents),
            ("/pubapi/v1/ai/document/e1/ask", Area::DocumentAi),
            ("/pubapi/v1/ai/assistant/ask", Area::Assistant),
            ("/pubapi/v1/ai/copilot/ask", Area::Copilot),
            ("/pubapi/v1/ai/kb/list", Area::KnowledgeBases),
            ("/pubapi/v1/hybrid-search", Area::HybridSearch),
            ("/pubapi/v1/audit/jobs/1", Area::Audit),
            ("/pubapi/v1/webhooks/w1/status", Area::Webhooks),
            ("/pubapi/v1/whoami", Area::Identity),
            ("/pubapi/v2/events", Area::Events),
        ];
        for (path, area) in cases {
            assert_eq!(area_of_path(path), area, "{path}");
        }
    }

    #[test]
    fn every_operation_has_the_area_of_its_path() {
        for op in pubapi_sdk::operations::ALL {
            assert_eq!(area_of(op), area_of_path(op.path), "{}", op.id);
        }
    }

    #[tokio::test]
    async fn local_budget_rejection_becomes_quota_exhausted_without_a_response() {
        let rejection = LocalRejection::Limit(LimitError::DailyBudgetExhausted {
            class: crate::LimitClass::Ai,
            available_in: Duration::from_secs(60),
        });
        match Error::from_http_response(rejection.into_response()).await {
            Error::QuotaExhausted {
                class,
                resets_in,
                error,
            } => {
                assert_eq!(class, Some(crate::LimitClass::Ai));
                assert_eq!(resets_in, Some(Duration::from_secs(60)));
                assert!(error.is_none());
            }
            other => panic!("{other:?}"),
        }
    }
}
