//! Tracing: a span per request naming the operation, method, attempt, status and limiter
//! wait, and never the token or impersonation values. In its own test binary, because
//! tracing caches per-callsite interest process-wide.

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::{ActAs, Client, SecretToken};
use std::sync::{Arc, Mutex};

const CANARY: &str = "CANARY-token-7f3a9c";

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
        .isolated_budget()
        .base_url("http://sandbox.test/pubapi")
        .allow_plain_http()
        .token(SecretToken::try_from(CANARY).unwrap())
        .transport(Script::new(
            vec![Answer::empty(503)],
            Answer::json(200, r#"{"username":"admin"}"#),
        ))
        .build()
        .unwrap();
    client
        .act_as(ActAs::username("bob").unwrap())
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("pubapi.request"), "{log}");
    assert!(log.contains("operation=\"whoami\""), "{log}");
    assert!(log.contains("attempt=2"), "{log}");
    assert!(!log.contains(CANARY), "{log}");
    assert!(!log.contains("bob"), "{log}");
}
