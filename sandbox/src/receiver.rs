//! A scripted webhook receiver on 127.0.0.1 for tests: it records every delivery and answers
//! the statuses it was given (200 once the script is used up).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// One delivery as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The `authorization` header.
    pub authorization: Option<String>,
    /// The `content-type` header.
    pub content_type: Option<String>,
    /// The body.
    pub body: Value,
    /// The status answered.
    pub answered: u16,
}

#[derive(Debug, Default)]
struct Inner {
    script: VecDeque<u16>,
    received: Vec<Received>,
}

/// A local receiver of webhook deliveries.
#[derive(Debug)]
pub struct TestReceiver {
    url: String,
    inner: Arc<Mutex<Inner>>,
    server: JoinHandle<()>,
}

async fn receive(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
    let answered = inner.script.pop_front().unwrap_or(200);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    inner.received.push(Received {
        authorization: header("authorization"),
        content_type: header("content-type"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        answered,
    });
    StatusCode::from_u16(answered).unwrap_or(StatusCode::OK)
}

impl TestReceiver {
    /// Starts a receiver answering `script` in order, then 200.
    ///
    /// # Panics
    /// When no port on 127.0.0.1 can be bound.
    pub async fn start(script: &[u16]) -> TestReceiver {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(e) => panic!("cannot bind a receiver on 127.0.0.1: {e}"),
        };
        let url = match listener.local_addr() {
            Ok(addr) => format!("http://{addr}/hooks"),
            Err(e) => panic!("no local address: {e}"),
        };
        let inner = Arc::new(Mutex::new(Inner {
            script: script.iter().copied().collect(),
            received: Vec::new(),
        }));
        let app = axum::Router::new()
            .route("/hooks", axum::routing::post(receive))
            .with_state(inner.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestReceiver { url, inner, server }
    }

    /// The URL to register.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every delivery received so far.
    pub fn received(&self) -> Vec<Received> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .received
            .clone()
    }

    /// Appends statuses to answer.
    pub fn answer(&self, statuses: &[u16]) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .script
            .extend(statuses);
    }
}

impl Drop for TestReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}
