//! A scripted [`Transport`] for testing code that uses the [`Client`](crate::Client) without a
//! network (feature `test-util`).
//!
//! A [`Script`] answers each request from a queue of [`Answer`]s, or from a handler that looks
//! at the request, and records what it saw of every request and when ([`Seen`]). It never opens a
//! socket, so it works under tokio's paused time (`#[tokio::test(start_paused = true)]`, which
//! needs tokio's `test-util` feature): the client's pacing, `Retry-After` waits and retries then
//! take no real time, and [`Script::times`] gives their exact schedule.
//!
//! ```
//! use pubapi_sdk_ext::prelude::*;
//! use pubapi_sdk_ext::testing::{Answer, Script};
//! use std::time::Duration;
//!
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     // Throttled once with a `Retry-After`, then an empty list for every request.
//!     let script = Script::new(
//!         vec![Answer::empty(429).header("retry-after", "7")],
//!         Answer::json(200, "[]"),
//!     );
//!     // A client of its own budget that sends through the script (`script.builder()` to
//!     // change its settings first).
//!     let client = script.client();
//!
//!     let agents = client.agents().list().await.unwrap();
//!     assert!(agents.is_empty());
//!
//!     // The client waited the 7 seconds it was told to (paused time: instantly) and asked again.
//!     assert_eq!(script.times(), [Duration::ZERO, Duration::from_secs(7)]);
//!     let seen = script.seen();
//!     assert_eq!(seen[1].method, "GET");
//!     assert_eq!(seen[1].path, "/pubapi/v1/ai/agents/list");
//! }
//! ```

use crate::transport::Transport;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use pubapi_sdk::hooks::BoxFuture;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// One scripted response: a status, headers and a body.
///
/// ```
/// use pubapi_sdk_ext::testing::Answer;
///
/// let created = Answer::json(201, r#"{"id":"j1"}"#).header("location", "/v1/audit/jobs/j1");
/// let report = Answer::empty(200).header("content-type", "text/csv").body("a,b\n1,2\n");
/// let throttled = Answer::empty(429).header("retry-after", "3");
/// ```
#[derive(Clone, Debug)]
pub struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    /// An answer with `status`, no headers and no body.
    ///
    /// # Panics
    ///
    /// When `status` is not between 100 and 999.
    #[must_use]
    pub fn empty(status: u16) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).expect("Answer: not an HTTP status"),
            headers: HeaderMap::new(),
            body: Vec::new(),
        }
    }

    /// An answer with `status`, `content-type: application/json` and `body` as given (it is
    /// not checked to be JSON, so a test can send a broken one).
    ///
    /// # Panics
    ///
    /// When `status` is not between 100 and 999.
    #[must_use]
    pub fn json(status: u16, body: impl Into<String>) -> Answer {
        Answer::empty(status)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.into())
    }

    /// Adds a header; a name given more than once is sent with each value.
    ///
    /// # Panics
    ///
    /// When `name` or `value` is not a valid header name or value.
    #[must_use]
    pub fn header<K, V>(mut self, name: K, value: V) -> Answer
    where
        K: TryInto<HeaderName>,
        K::Error: fmt::Debug,
        V: TryInto<HeaderValue>,
        V::Error: fmt::Debug,
    {
        let name = name
            .try_into()
            .expect("Answer::header: invalid header name");
        let value = value
            .try_into()
            .expect("Answer::header: invalid header value");
        self.headers.append(name, value);
        self
    }

    /// Replaces the body.
    #[must_use]
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Answer {
        self.body = body.into();
        self
    }

    fn into_response(self) -> reqwest::Response {
        let mut response = http::Response::new(self.body);
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers;
        reqwest::Response::from(response)
    }
}

/// What a [`Script`] saw of one request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Seen {
    /// When the request reached the script, since the script was made (tokio's clock, so
    /// exact under paused time).
    pub at: Duration,
    /// The method, such as `GET`.
    pub method: String,
    /// The URL's path, with the base URL's path in front (`/pubapi/v1/ai/agents/list`).
    pub path: String,
    /// The URL's query, without the `?` (empty when there is none).
    pub query: String,
    /// The request's headers, as sent (`authorization` included).
    pub headers: HeaderMap,
    /// The request's body; empty when there is none or it is a stream.
    pub body: Vec<u8>,
}

type Handler = Box<dyn Fn(&Seen) -> Answer + Send + Sync>;

/// A [`Transport`] that answers from a script instead of a network; give it to
/// [`ClientBuilder::transport`](crate::ClientBuilder::transport).
///
/// Queued answers go first, in order; once they are used up, the handler answers (for
/// [`Script::new`], always the same fallback). Every request is recorded ([`Script::seen`]).
pub struct Script {
    start: Instant,
    answers: Mutex<VecDeque<Answer>>,
    handler: Handler,
    seen: Mutex<Vec<Seen>>,
    sent: AtomicUsize,
    delay: Mutex<Option<(usize, Duration)>>,
}

impl Script {
    /// Answers with `answers` in order, then with `fallback` for every further request.
    #[must_use]
    pub fn new(answers: Vec<Answer>, fallback: Answer) -> Arc<Script> {
        Script::with_queue(answers, move |_| fallback.clone())
    }

    /// Answers every request with what `handler` makes of it (for a server with state, or
    /// answers that depend on the path or query).
    #[must_use]
    pub fn handler(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Arc<Script> {
        Script::with_queue(Vec::new(), handler)
    }

    fn with_queue(
        answers: Vec<Answer>,
        handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
    ) -> Arc<Script> {
        Arc::new(Script {
            start: Instant::now(),
            answers: Mutex::new(answers.into()),
            handler: Box::new(handler),
            seen: Mutex::new(Vec::new()),
            sent: AtomicUsize::new(0),
            delay: Mutex::new(None),
        })
    }

    /// A client builder that sends through this script: base URL
    /// `http://sandbox.test/pubapi` (plain HTTP allowed), token `t`, and a budget of its own
    /// (`isolated_budget`), so tests never share a pacer. Any setting can be changed before
    /// `build()`.
    pub fn builder(self: &Arc<Self>) -> crate::ClientBuilder {
        crate::Client::builder()
            .isolated_budget()
            .base_url("http://sandbox.test/pubapi")
            .allow_plain_http()
            .token(crate::SecretToken::try_from("t").expect("a valid token"))
            .transport(self.clone())
    }

    /// [`Script::builder`], built.
    ///
    /// # Panics
    /// Never for the builder's own settings (they are valid).
    pub fn client(self: &Arc<Self>) -> crate::Client {
        self.builder()
            .build()
            .expect("the scripted client's settings are valid")
    }

    /// From now on, every `nth` request sent (counting from the first one the script got)
    /// reaches the server `delay` after it was sent, as over a slow new connection; `nth` 0
    /// delays none.
    pub fn delay_every(&self, nth: usize, delay: Duration) {
        *lock(&self.delay) = Some((nth, delay));
    }

    /// Every request so far, in the order they reached the script.
    #[must_use]
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.seen).clone()
    }

    /// When each request so far reached the script ([`Seen::at`]), in order.
    #[must_use]
    pub fn times(&self) -> Vec<Duration> {
        lock(&self.seen).iter().map(|seen| seen.at).collect()
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let queued = lock(&self.answers).len();
        let seen = lock(&self.seen).len();
        let delay_every = *lock(&self.delay);
        f.debug_struct("Script")
            .field("queued", &queued)
            .field("seen", &seen)
            .field("delay_every", &delay_every)
            .finish_non_exhaustive()
    }
}

impl Transport for Script {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let sent = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        let delay = (*lock(&self.delay))
            .filter(|(nth, _)| *nth > 0 && sent.is_multiple_of(*nth))
            .map(|(_, delay)| delay);
        Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let seen = Seen {
                at: self.start.elapsed(),
                method: request.method().to_string(),
                path: request.url().path().to_owned(),
                query: request.url().query().unwrap_or_default().to_owned(),
                headers: request.headers().clone(),
                body: request
                    .body()
                    .and_then(reqwest::Body::as_bytes)
                    .unwrap_or_default()
                    .to_vec(),
            };
            lock(&self.seen).push(seen.clone());
            let queued = lock(&self.answers).pop_front();
            let answer = queued.unwrap_or_else(|| (self.handler)(&seen));
            Ok(answer.into_response())
        })
    }
}

/// A test that panicked while holding a lock has failed already; the script stays usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
