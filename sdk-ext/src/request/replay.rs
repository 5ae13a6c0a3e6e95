//! What the policy keeps of a request for the next attempt: sending consumes the request, and
//! any call may be retried (a throttle or a failed connect for every method, a 5xx or another
//! transport failure for an idempotent one, a 401 once with a fresh token).
//!
//! Every attempt goes to the request's own URL, kept here: never the URL an answer or an
//! error names, which an interceptor, a transport or a hand-built response may set to any
//! server (and the next attempt carries the bearer token). The usual request of the
//! generated client (no body, a few headers) is kept without copying its header map: the
//! headers fit inline. Anything else is copied whole.

use crate::request_id::REQUEST_ID_HEADER;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};
use http::{Method, Version};

/// Headers kept inline, besides the token and the request id (which each attempt sets
/// again): the generated client sends `accept` and `api-version`, and an act-as view or call
/// adds one more.
const INLINE_HEADERS: usize = 3;

/// The part of a request needed to send it again.
#[derive(Debug)]
pub(crate) enum Replay {
    /// A request without body: its method, URL, version and headers. The URL is boxed: the
    /// call's future keeps the replay while it waits, and stays small.
    Inline {
        method: Method,
        url: Box<reqwest::Url>,
        version: Version,
        headers: [Option<(HeaderName, HeaderValue)>; INLINE_HEADERS],
    },
    /// A whole copy: a body, a timeout or more headers.
    Copy(reqwest::Request),
}

impl Replay {
    /// What to keep of `request`; `None` when its body is a stream, which can be sent only
    /// once.
    pub(crate) fn of(request: &reqwest::Request) -> Option<Replay> {
        if request.body().is_some() || request.timeout().is_some() {
            return copy(request).map(Replay::Copy);
        }
        let mut headers: [Option<(HeaderName, HeaderValue)>; INLINE_HEADERS] = Default::default();
        let mut slots = headers.iter_mut();
        for (name, value) in request.headers() {
            if name == AUTHORIZATION || name == REQUEST_ID_HEADER {
                continue;
            }
            match slots.next() {
                Some(slot) => *slot = Some((name.clone(), value.clone())),
                None => return copy(request).map(Replay::Copy),
            }
        }
        Some(Replay::Inline {
            method: request.method().clone(),
            url: Box::new(request.url().clone()),
            version: request.version(),
            headers,
        })
    }

    /// The request to send next: the one kept, to the URL it was first sent to, whatever
    /// the attempt's answer says.
    pub(crate) fn into_request(self) -> reqwest::Request {
        let (method, url, version, headers) = match self {
            Replay::Copy(request) => return request,
            Replay::Inline {
                method,
                url,
                version,
                headers,
            } => (method, url, version, headers),
        };
        let mut request = reqwest::Request::new(method, *url);
        *request.version_mut() = version;
        for (name, value) in headers.into_iter().flatten() {
            request.headers_mut().append(name, value);
        }
        request
    }
}

/// A whole copy of `request`; `None` when its body is a stream.
///
/// Without a body and a timeout, the copy is made field by field: `try_clone` would also set
/// the (absent) timeout on its copy, which allocates an extension map that it then replaces
/// with a copy of the original's. The policy's requests come from reqwest's builder, whose only
/// extension is the timeout.
fn copy(request: &reqwest::Request) -> Option<reqwest::Request> {
    if request.body().is_some() || request.timeout().is_some() {
        return request.try_clone();
    }
    let mut copy = reqwest::Request::new(request.method().clone(), request.url().clone());
    *copy.headers_mut() = request.headers().clone();
    *copy.version_mut() = request.version();
    Some(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample_requests() -> Vec<reqwest::Request> {
        let http = reqwest::Client::new();
        [
            http.get("http://h.test/pubapi/v1/whoami?a=1")
                .header("accept", "application/json")
                .header("api-version", "1.3.4")
                .header("x-request-id", "5ad604ef-b5fd-dd25-0000-000000000001")
                .header(AUTHORIZATION, "Bearer t0k3n")
                .build(),
            http.get("http://h.test/pubapi/v1/whoami")
                .header("accept", "application/json")
                .header("api-version", "1.3.4")
                .header("x-request-id", "5ad604ef-b5fd-dd25-0000-000000000002")
                .header("x-service-act-as", "bob")
                .header(AUTHORIZATION, "Bearer t0k3n")
                .build(),
            http.get("http://h.test/pubapi/v1/whoami")
                .header("accept", "application/json")
                .header("api-version", "1.3.4")
                .header("x-request-id", "5ad604ef-b5fd-dd25-0000-000000000003")
                .header("x-service-act-as", "bob")
                .header("x-extra", "1")
                .build(),
            http.post("http://h.test/pubapi/v1/webhooks")
                .body("{}")
                .build(),
            http.get("http://h.test/pubapi/v1/whoami")
                .header("accept", "application/json")
                .header("accept", "text/csv")
                .header(AUTHORIZATION, "Bearer t0k3n")
                .build(),
            http.get("http://h.test/pubapi/v1/whoami")
                .version(http::Version::HTTP_2)
                .build(),
            http.get("http://h.test/pubapi/v1/whoami")
                .timeout(Duration::from_secs(3))
                .version(http::Version::HTTP_2)
                .build(),
        ]
        .into_iter()
        .map(Result::unwrap)
        .collect()
    }

    /// The request sent again, with the token the next attempt sets.
    fn replayed(request: &reqwest::Request) -> reqwest::Request {
        let replay = Replay::of(request).unwrap();
        let mut again = replay.into_request();
        for name in [AUTHORIZATION, REQUEST_ID_HEADER] {
            if let Some(value) = request.headers().get(&name) {
                again.headers_mut().insert(name, value.clone());
            }
        }
        again
    }

    #[test]
    fn a_replayed_request_is_the_request_sent() {
        for request in sample_requests() {
            let again = replayed(&request);
            assert_eq!(
                (
                    again.method(),
                    again.url(),
                    again.version(),
                    again.headers(),
                    again.timeout()
                ),
                (
                    request.method(),
                    request.url(),
                    request.version(),
                    request.headers(),
                    request.timeout()
                ),
                "{request:?}"
            );
            assert_eq!(
                again.body().map(reqwest::Body::as_bytes),
                request.body().map(reqwest::Body::as_bytes)
            );
        }
    }

    #[test]
    fn the_usual_request_is_kept_inline_and_the_rest_copied() {
        let kinds: Vec<_> = sample_requests()
            .iter()
            .map(|request| match Replay::of(request).unwrap() {
                Replay::Inline { .. } => "inline",
                Replay::Copy(_) => "copy",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "inline", "inline", "copy", "copy", "inline", "inline", "copy"
            ]
        );
    }

    /// Whatever URL an answer names (an interceptor's, a transport's, one built by hand),
    /// the next attempt goes to the URL the request was sent to.
    #[test]
    fn the_next_attempt_goes_to_the_requests_url_not_the_answers() {
        for request in sample_requests() {
            let replay = Replay::of(&request).unwrap();
            assert_eq!(replay.into_request().url(), request.url(), "{request:?}");
        }
    }

    #[test]
    fn a_streaming_body_is_not_kept() {
        let stream = futures_util::stream::empty::<Result<bytes::Bytes, std::io::Error>>();
        let streaming = reqwest::Client::new()
            .post("http://h.test/pubapi/v1/webhooks")
            .body(reqwest::Body::wrap_stream(stream))
            .build()
            .unwrap();
        assert!(Replay::of(&streaming).is_none());
    }
}
