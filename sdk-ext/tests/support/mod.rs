//! A scripted transport shared by the integration tests: answers from a queue or from a
//! handler, records what it saw, and never touches a socket (so paused time is safe).
#![allow(dead_code)]

pub mod redis_server;

use pubapi_sdk::hooks::BoxFuture;
use pubapi_sdk_ext::transport::Transport;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// One scripted answer: status, headers, body.
#[derive(Clone, Debug)]
pub struct Answer(pub u16, pub Vec<(&'static str, &'static str)>, pub String);

impl Answer {
    /// A JSON answer.
    pub fn json(status: u16, body: impl Into<String>) -> Answer {
        Answer(
            status,
            vec![("content-type", "application/json")],
            body.into(),
        )
    }

    /// An answer without a body.
    pub fn empty(status: u16) -> Answer {
        Answer(status, vec![], String::new())
    }
}

/// What the transport saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Duration,
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: http::HeaderMap,
}

type Handler = Box<dyn Fn(&Seen) -> Answer + Send + Sync>;

pub struct Script {
    start: Instant,
    answers: Mutex<VecDeque<Answer>>,
    handler: Handler,
    seen: Mutex<Vec<Seen>>,
    sent: std::sync::atomic::AtomicUsize,
    delay: Mutex<Option<(usize, Duration)>>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").finish_non_exhaustive()
    }
}

impl Script {
    /// Answers from `answers` in order, then `fallback` forever.
    pub fn new(answers: Vec<Answer>, fallback: Answer) -> Arc<Script> {
        Self::with_queue(answers, move |_| fallback.clone())
    }

    /// Answers every request with `handler`.
    pub fn handler(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Arc<Script> {
        Self::with_queue(vec![], handler)
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
            sent: Default::default(),
            delay: Mutex::new(None),
        })
    }

    /// Every `nth` request reaches the server `delay` after it was sent (a new connection).
    pub fn delay_every(&self, nth: usize, delay: Duration) {
        *self.delay.lock().unwrap() = Some((nth, delay));
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn times(&self) -> Vec<Duration> {
        self.seen().into_iter().map(|s| s.at).collect()
    }
}

impl Transport for Script {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let sent = self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let delay = (*self.delay.lock().unwrap())
            .filter(|(nth, _)| sent.is_multiple_of(*nth))
            .map(|(_, delay)| delay);
        Box::pin(async move {
            // A slow connection: the request reaches the server later than it was sent.
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let seen = Seen {
                at: self.start.elapsed(),
                method: request.method().to_string(),
                path: request.url().path().to_string(),
                query: request.url().query().unwrap_or_default().to_string(),
                headers: request.headers().clone(),
            };
            self.seen.lock().unwrap().push(seen.clone());
            let queued = self.answers.lock().unwrap().pop_front();
            let Answer(status, headers, body) = queued.unwrap_or_else(|| (self.handler)(&seen));
            let mut response = http::Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            let response = response.body(body.into_bytes()).unwrap();
            Ok(reqwest::Response::from(response))
        })
    }
}
