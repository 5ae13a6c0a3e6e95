//! Turning the generated client's results into [`Error`]: the last step of a request.

use crate::error::json_path::json_path_at;
use crate::error::{ApiError, Error, ErrorFormat, InputError, RawBody, TimeoutBound};
use crate::limits::LimitError;
use crate::request::failed::{FailedBody, read_capped};
use crate::request::rejection::LocalRejection;
use crate::request::silence::TimedOut;
use crate::request::success_body::EmptySuccess;
use crate::verdict::EndpointKind;
use bytes::Bytes;
use pubapi_sdk::operations::Operation;

impl Error {
    /// Converts a failed response (status not 2xx) into the typed error, reading its body
    /// unless the client's policy already did.
    pub async fn from_http_response(response: reqwest::Response) -> Error {
        if FailedBody::of(&response).is_some() {
            return Error::of_answer(&response);
        }
        let operation = operation_at(response.url().path());
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match read_capped(response, None).await {
            Ok(body) => body,
            Err(e) => return Error::from(e),
        };
        Error::of_operation(operation, status, &headers, body)
    }

    /// The error of a failed answer the client's policy read ([`FailedBody`]), built from the
    /// verdict the policy gave it (the answer is not judged again), keeping the id of the
    /// call it answers. An answer that passed no policy (a plain `pubapi-sdk` client), or a
    /// success status the generated code does not decode, keeps its status and headers, and
    /// the operation its path names, if one does.
    fn of_answer(response: &reqwest::Response) -> Error {
        let (status, headers) = (response.status().as_u16(), response.headers());
        let error = match FailedBody::of(response) {
            Some(failed) => {
                let operation = failed.operation;
                let error = ApiError::new(
                    operation.error_format,
                    status,
                    headers,
                    failed.body.clone(),
                    crate::time::now(),
                );
                Error::of_verdict(failed.verdict, error, Some(operation.area))
            }
            None => Error::of_operation(
                operation_at(response.url().path()),
                status,
                headers,
                Bytes::new(),
            ),
        };
        error.with_request_id(response.extensions().get::<crate::RequestId>().cloned())
    }

    /// The error of `operation`'s failed answer, judged by its [verdict](crate::verdict) (for
    /// an answer no policy judged).
    fn of_operation(
        operation: Option<&'static Operation>,
        status: u16,
        headers: &http::HeaderMap,
        body: Bytes,
    ) -> Error {
        let now = crate::time::now();
        let (format, endpoint) = match operation {
            Some(op) => (op.error_format, EndpointKind::of_class(op.limit_class)),
            None => (ErrorFormat::General, EndpointKind::General),
        };
        let verdict = crate::verdict::judge(status, headers, endpoint, now);
        let error = ApiError::new(format, status, headers, body, now);
        Error::of_verdict(verdict, error, operation.map(|op| op.area))
    }

    /// The typed error of a `reqwest::Error`: the policy's refusal it carries
    /// ([`LocalRejection::into_error`]), with the id of the call when an attempt of it was
    /// sent before the refusal (on the error's URL, as a transport failure's), or a failure
    /// of the transport.
    pub(crate) fn of_reqwest(error: reqwest::Error) -> Error {
        if let Some(empty) = EmptySuccess::in_sources(&error) {
            // What the generated code would have said of the empty body.
            let error = Error::decode_slice::<serde::de::IgnoredAny>(b"").err();
            return error
                .unwrap_or_else(|| Error::invalid_input("body", "empty"))
                .with_request_id(empty.request_id.clone());
        }
        if let Some(timed_out) = TimedOut::in_sources(&error) {
            return Error::Timeout {
                elapsed: timed_out.elapsed,
                bound: timed_out.bound,
                attempts: timed_out.attempts,
                request_id: timed_out.request_id.clone(),
            };
        }
        match LocalRejection::in_sources(&error) {
            Some(rejection) => {
                Error::of_rejection(rejection.clone(), crate::request_id::of_transport(&error))
            }
            None => Error::Transport(error),
        }
    }

    /// The error of a refusal of the client's policy; `id` is the call's when an attempt of
    /// it was sent before: a refused input then refused the retry
    /// ([`Error::RetryNotSent`]), and the other refusals keep the id too.
    fn of_rejection(rejection: LocalRejection, id: Option<crate::RequestId>) -> Error {
        match (Error::from(rejection), id) {
            (Error::InvalidInput(error), Some(request_id)) => Error::RetryNotSent {
                error: Box::new(error),
                request_id,
            },
            (error, id) => error.with_request_id(id),
        }
    }
}

/// The operation whose path template `path` matches (the first, when several methods share
/// it: they share the area and error format too), for an answer that passed no policy.
fn operation_at(path: &str) -> Option<&'static Operation> {
    crate::error::operations_at(path).next()
}

/// `?` on a generated operation's result: the failed body was read by the client's policy,
/// so the conversion needs no waiting. Where the error is inspected in place, or the function
/// returns another error type (`?` into a `Box<dyn Error>` would keep the generated client's
/// error), `map_err(Error::from)` converts it.
///
/// ```no_run
/// use pubapi_sdk_ext::Error;
/// use pubapi_sdk_ext::prelude::*;
/// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Error> {
/// let hooks = client.sdk().list_webhooks().send().await?;
///
/// let details = client.sdk().get_webhook_details().webhook_id("w1").send().await;
/// match details.map_err(Error::from) {
///     Ok(hook) => println!("{:?}", hook.into_inner()),
///     Err(Error::NotFound(_)) => println!("no such webhook"),
///     Err(other) => return Err(other),
/// }
/// # Ok(()) }
/// ```
impl From<progenitor_client::Error<()>> for Error {
    fn from(error: progenitor_client::Error<()>) -> Error {
        use progenitor_client::Error as Sdk;
        match error {
            Sdk::UnexpectedResponse(response) => Error::of_answer(&response),
            Sdk::InvalidResponsePayload(body, e) => Error::Decode {
                path: json_path_at(&body, e.line(), e.column()),
                message: e.to_string(),
                request_id: crate::request::success_body::id_of(&body).map(Box::new),
                body: RawBody(body),
            },
            Sdk::CommunicationError(e) | Sdk::ResponseBodyError(e) | Sdk::InvalidUpgrade(e) => {
                Error::of_reqwest(e)
            }
            // The generated client documents no error bodies (the policy reads them), so
            // this comes only from a client built without one.
            Sdk::ErrorResponse(value) => {
                Error::of_operation(None, value.status().as_u16(), value.headers(), Bytes::new())
            }
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
                request_id: None,
            },
            LocalRejection::Limit(LimitError::NoBudget { class }) => Error::QuotaExhausted {
                class: Some(class),
                resets_in: None,
                error: None,
                request_id: None,
            },
            LocalRejection::Limit(LimitError::WouldExceedDeadline { max_wait, .. }) => {
                Error::Timeout {
                    elapsed: max_wait,
                    bound: TimeoutBound::Operation,
                    attempts: 0,
                    request_id: None,
                }
            }
            LocalRejection::Limit(LimitError::StoreUnavailable {
                class,
                waited,
                error,
            }) => Error::FleetUnavailable {
                class,
                waited,
                error,
            },
            LocalRejection::Deadline { elapsed, attempts } => Error::Timeout {
                elapsed,
                bound: TimeoutBound::Operation,
                attempts,
                request_id: None,
            },
            LocalRejection::Removed {
                operation,
                sunset,
                successor,
            } => Error::Removed {
                operation,
                sunset,
                successor,
            },
            LocalRejection::Token(error) => Error::InvalidInput(InputError::Token(error)),
            LocalRejection::Impersonation(e) => Error::InvalidInput(InputError::Impersonation(e)),
            LocalRejection::Budget(conflict) => {
                Error::InvalidInput(InputError::BudgetConflict(conflict))
            }
            LocalRejection::PathValue {
                operation,
                parameter,
                error,
            } => Error::InvalidInput(InputError::PathValue {
                operation,
                parameter,
                error,
            }),
            LocalRejection::Invalid { field, problem } => {
                Error::InvalidInput(InputError::Invalid { field, problem })
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Area;
    use std::time::Duration;

    #[test]
    fn a_url_path_takes_its_operations_area_and_error_format() {
        let cases = [
            ("/pubapi/v1/ai/agents/list", Area::Agents, ErrorFormat::Ai),
            (
                "/pubapi/v1/ai/document/e1/ask",
                Area::DocumentAi,
                ErrorFormat::Ai,
            ),
            ("/pubapi/v1/audit/jobs/1", Area::Audit, ErrorFormat::General),
            (
                "/pubapi/v1/webhooks/w1/status",
                Area::Webhooks,
                ErrorFormat::Webhooks,
            ),
            ("/pubapi/v1/whoami", Area::Identity, ErrorFormat::Webhooks),
            ("/pubapi/v2/events", Area::Events, ErrorFormat::General),
        ];
        for (path, area, format) in cases {
            let operation = operation_at(path).expect(path);
            assert_eq!(
                (operation.area, operation.error_format),
                (area, format),
                "{path}"
            );
        }
        // A path of no operation has no area to guess: no limit class, no 403 reason.
        assert!(operation_at("/pubapi/v1/nothing/here").is_none());
    }

    /// The error of an answer the policy read is built from the verdict it carries: a plain
    /// 403 the policy judged a throttle (as it would with the gateway's code) is throttled,
    /// and the same answer without the policy's body is judged here, forbidden.
    #[test]
    fn a_failed_answer_is_not_judged_again() {
        use crate::request::failed::FailedBody;
        use crate::verdict::{Refusal, Verdict};
        let operation = operation_at("/pubapi/v1/whoami").unwrap();
        let answer = |failed: Option<FailedBody>| {
            let mut response = http::Response::new(Bytes::new());
            *response.status_mut() = http::StatusCode::FORBIDDEN;
            if let Some(failed) = failed {
                response.extensions_mut().insert(failed);
            }
            Error::of_answer(&reqwest::Response::from(response))
        };
        let judged = |verdict| FailedBody {
            operation,
            body: Bytes::from_static(b"{}"),
            verdict,
        };
        let throttled = answer(Some(judged(Verdict::Throttled { retry_after: None })));
        assert!(
            matches!(throttled, Error::Throttled { .. }),
            "{throttled:?}"
        );
        let refused = answer(Some(judged(Verdict::Refused(Refusal::NotFound))));
        assert!(matches!(refused, Error::NotFound(_)), "{refused:?}");
        let unjudged = answer(None);
        assert!(matches!(unjudged, Error::Forbidden { .. }), "{unjudged:?}");
    }

    #[tokio::test]
    async fn local_budget_rejection_becomes_quota_exhausted_without_a_response() {
        let rejection = LocalRejection::Limit(LimitError::DailyBudgetExhausted {
            class: crate::LimitClass::Ai,
            available_in: Duration::from_secs(60),
        });
        match Error::from(rejection.into_error().await) {
            Error::QuotaExhausted {
                class,
                resets_in,
                error,
                request_id: None,
            } => {
                assert_eq!(class, Some(crate::LimitClass::Ai));
                assert_eq!(resets_in, Some(Duration::from_secs(60)));
                assert!(error.is_none());
            }
            other => panic!("{other:?}"),
        }
    }
}
