//! Turning the generated client's results into [`Error`]: the last step of a request.

use crate::error::{ApiError, Error, ErrorFormat, InputError, RawBody};
use crate::limits::LimitError;
use crate::request::failed::{FailedBody, read_capped};
use crate::request::rejection::LocalRejection;
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
        let body = match read_capped(response).await {
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
        error.with_request_id(response.extensions().get::<crate::RequestId>().copied())
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

/// The JSON path (`items[2].id`) of the value that ends at `line`:`column` of `body`, as
/// serde_json reports the position of a mismatch: just after the value that did not fit,
/// or just after the object that missed a field (whose path it then is). `.` is the root.
pub(crate) fn json_path_at(body: &[u8], line: usize, column: usize) -> String {
    enum Frame {
        Object(Option<String>),
        Array(usize),
    }
    // serde_json counts lines from 1 and columns as bytes since the line's start.
    let line_start = if line <= 1 {
        0
    } else {
        body.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(body.len(), |(i, _)| i + 1)
    };
    let end = line_start.saturating_add(column).min(body.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut expecting_key = false;
    let mut i = 0;
    while i < end {
        match body[i] {
            b'{' => {
                stack.push(Frame::Object(None));
                expecting_key = true;
            }
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
                expecting_key = false;
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(index)) => *index += 1,
                Some(Frame::Object(key)) => {
                    *key = None;
                    expecting_key = true;
                }
                None => {}
            },
            b'"' => {
                let start = i + 1;
                i = start;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                if expecting_key && let Some(Frame::Object(key)) = stack.last_mut() {
                    let raw = &body[start..i.min(body.len())];
                    let text = serde_json::from_slice::<String>(
                        &[b"\"".as_slice(), raw, b"\"".as_slice()].concat(),
                    )
                    .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned());
                    *key = Some(text);
                    expecting_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None) => {}
            Frame::Array(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if path.is_empty() {
        ".".to_string()
    } else {
        path
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
                    request_id: None,
                }
            }
            LocalRejection::Deadline { elapsed } => Error::Timeout {
                elapsed,
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

#[cfg(test)]
mod json_path_tests {
    use super::json_path_at;
    use proptest::prelude::*;
    use serde::Deserialize;

    /// The path serde_path_to_error finds for a body that does not decode as `T`, and the
    /// one [`json_path_at`] reads from serde_json's position alone.
    fn both<T: for<'de> Deserialize<'de>>(body: &str) -> (String, String) {
        let mut deserializer = serde_json::Deserializer::from_str(body);
        let expected = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
            Ok(_) => panic!("{body} decoded"),
            Err(e) => e.path().to_string(),
        };
        let error = serde_json::from_str::<T>(body).err().unwrap();
        (
            expected,
            json_path_at(body.as_bytes(), error.line(), error.column()),
        )
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        id: u32,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Page {
        items: Vec<Item>,
        #[serde(rename = "next id")]
        next: Option<u32>,
    }

    #[test]
    fn a_mismatch_is_named_by_its_json_path() {
        for body in [
            r#"{"items":[{"id":1},{"id":"three"}]}"#,
            r#"{"items":[{"id":1,"tags":["a",2]}]}"#,
            "{\n  \"items\": [\n    {\"id\": 1},\n    {\"tags\": []}\n  ]\n}",
            r#"{"items":[],"next id":"x"}"#,
            r#"{"items":{"id":1}}"#,
            r#"{"a\"b":{"id":[1,2]},"items":[{"id":-1}]}"#,
            r#"[1]"#,
        ] {
            let (expected, found) = both::<Page>(body);
            assert_eq!(found, expected, "{body}");
        }
        let (_, found) = both::<Page>(r#"{"items":[{"id":1},{"id":"three"}]}"#);
        assert_eq!(found, "items[1].id");
        let (_, found) = both::<Page>(r#"{"items":[{"id":1},{"tags":[]}]}"#);
        assert_eq!(found, "items[1]", "a missing field is named by its object");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Meta {
        size: u32,
    }

    /// A flattened struct: serde reads the object into a buffer before the fields fit.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        id: u32,
        #[serde(flatten)]
        meta: Meta,
    }

    /// An untagged enum: serde tries each variant on a buffered copy of the value.
    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Either {
        Number(u32),
        Item(Item),
    }

    /// An internally tagged enum: the tag is found in a buffered copy of the object.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Tagged {
        Item(Item),
        Meta { size: u32 },
    }

    /// The buffering shapes inside a page, by key and by index.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Shapes {
        #[serde(default)]
        flat: Vec<Flat>,
        #[serde(default)]
        either: Vec<Either>,
        #[serde(default)]
        tagged: Option<Tagged>,
    }

    #[test]
    fn a_mismatch_in_a_flattened_struct_is_named_as_serde_path_to_error_names_it() {
        for (body, path) in [
            (
                r#"{"flat":[{"id":1,"size":2},{"id":1,"size":"x"}]}"#,
                "flat[1]",
            ),
            (r#"{"flat":[{"id":"x","size":2}]}"#, "flat[0].id"),
            (r#"{"flat":[{"id":1}]}"#, "flat[0]"),
            (
                "{\"flat\":[{\"size\":1,\n \"id\":1},\n{\"id\":2}]}",
                "flat[1]",
            ),
        ] {
            let (expected, found) = both::<Shapes>(body);
            assert_eq!((found.as_str(), expected.as_str()), (path, path), "{body}");
        }
        let at_the_root = both::<Flat>(r#"{"id":1,"size":"x"}"#);
        assert_eq!(at_the_root, (".".to_owned(), ".".to_owned()));
    }

    /// An untagged or internally tagged enum fails after serde_json has read the whole value
    /// into a buffer: the position serde_json reports is past the value's container, whose
    /// path is then named (serde_path_to_error names the value itself). Where the value is
    /// its container's own check (a tag read from the object's own fields), both agree.
    #[test]
    fn a_mismatch_in_a_buffered_enum_is_named_by_its_container() {
        for (body, expected, found) in [
            (r#"{"either":[1,{"id":"x"}]}"#, "either[1]", "either"),
            (r#"{"either":[{"id":[1,{"a":2}]}]}"#, "either[0]", "either"),
            (r#"{"tagged":{"kind":"Meta","size":"x"}}"#, "tagged", "."),
            (
                r#"{"tagged":{"kind":"None"}}"#,
                "tagged.kind",
                "tagged.kind",
            ),
            (r#"{"tagged":{"size":1}}"#, "tagged", "tagged"),
        ] {
            assert_eq!(
                both::<Shapes>(body),
                (expected.to_owned(), found.to_owned()),
                "{body}"
            );
        }
    }

    proptest! {
        /// Arrays of arrays of numbers with one value replaced by a string, at any depth
        /// and with any whitespace: the path matches serde_path_to_error's.
        #[test]
        fn the_path_matches_serde_path_to_error(
            rows in prop::collection::vec(prop::collection::vec(0u8..200, 0..5), 1..6),
            pick in any::<prop::sample::Index>(),
            spaces in "[ \n]{0,2}",
        ) {
            let cells: usize = rows.iter().map(Vec::len).sum();
            prop_assume!(cells > 0);
            let target = pick.index(cells);
            let mut seen = 0;
            let mut body = String::from("[");
            for (r, row) in rows.iter().enumerate() {
                if r > 0 { body.push(','); body.push_str(&spaces); }
                body.push('[');
                for (c, value) in row.iter().enumerate() {
                    if c > 0 { body.push(','); body.push_str(&spaces); }
                    if seen == target {
                        body.push_str("\"no, \\\"not\\\" [this]\"");
                    } else {
                        body.push_str(&value.to_string());
                    }
                    seen += 1;
                }
                body.push(']');
            }
            body.push(']');
            let (expected, found) = both::<Vec<Vec<u8>>>(&body);
            prop_assert_eq!(found, expected, "{}", body);
        }
    }
}
