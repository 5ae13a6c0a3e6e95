//! Tracing: a span per request naming the operation, method, attempt, status and limiter
//! wait, and never the token or impersonation values. In its own test binary, because
//! tracing caches per-callsite interest process-wide.

use pubapi_sdk::hooks::BoxFuture;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::transport::Transport;
use pubapi_sdk_ext::{ActAs, Client, SecretToken};
use std::sync::{Arc, Mutex};

const CANARY: &str = "CANARY-token-7f3a9c";

/// Answers 503 once, then a whoami body.
#[derive(Debug, Default)]
struct FlakyOnce(Mutex<u32>);

impl Transport for FlakyOnce {
    fn send<'a>(
        &'a self,
        _client: &'a reqwest::Client,
        _request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        let mut calls = self.0.lock().unwrap();
        *calls += 1;
        let response = if *calls == 1 {
            http::Response::builder().status(503).body(Vec::new())
        } else {
            http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(br#"{"username":"admin"}"#.to_vec())
        };
        let response = reqwest::Response::from(response.unwrap());
        Box::pin(async move { Ok(response) })
    }
}

/// A `MakeWriter` that collects everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test(start_paused = true)]
async fn trace_names_the_operation_but_never_the_token_or_impersonated_user() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let client = Client::builder()
        .base_url("http://sandbox.test/pubapi")
        .token(SecretToken::try_from(CANARY).unwrap())
        .transport(Arc::new(FlakyOnce::default()))
        .build()
        .unwrap();
    client
        .act_as(ActAs::username("bob").unwrap())
        .whoami()
        .send()
        .typed()
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("pubapi.request"), "{log}");
    assert!(log.contains("operation=\"whoami\""), "{log}");
    assert!(log.contains("attempt=2"), "{log}");
    assert!(!log.contains(CANARY), "{log}");
    assert!(!log.contains("bob"), "{log}");
}
