//! Tracing and request ids: a span per call and one per attempt under it, which has
//! OpenTelemetry's names for an HTTP client's span (`http.request.method`, `server.address`,
//! `url.template`, `http.response.status_code`, `error.type`), the call's the SDK's own
//! (operation, limit class, request id, attempt, limiter wait), never the token or impersonation values; one request
//! id per call, the same on every attempt, kept on its error. In its own test binary,
//! because tracing caches per-callsite interest process-wide: every test here captures.

use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::{ActAs, Client, Error, SecretToken};
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

/// Collects what a subscriber writes of every event and span close, on this thread.
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

#[tokio::test(start_paused = true)]
async fn trace_names_the_operation_but_never_the_token_or_impersonated_user() {
    let (captured, _guard) = capture();
    let client = client(Script::new(
        vec![Answer::empty(503)],
        Answer::json(200, r#"{"username":"admin"}"#),
    ));
    client
        .act_as(ActAs::username("bob").unwrap())
        .sdk()
        .whoami()
        .send()
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("pubapi.request"), "{log}");
    for field in [
        "http.request.method=\"GET\"",
        "server.address=\"sandbox.test\"",
        "url.template=/pubapi/v1/whoami",
        "http.response.status_code=200",
        "pubapi.operation=\"whoami\"",
        "pubapi.limit_class=\"general\"",
        "pubapi.attempt=2",
        "pubapi.limiter_wait_ms=",
    ] {
        assert!(log.contains(field), "{field} in {log}");
    }
    assert!(!log.contains(CANARY), "{log}");
    assert!(!log.contains("bob"), "{log}");
}

fn client(script: Arc<Script>) -> Client {
    script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .build()
        .unwrap()
}

fn sent_ids(script: &Script) -> Vec<String> {
    script
        .seen()
        .iter()
        .map(|seen| seen.headers["x-request-id"].to_str().unwrap().to_string())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn every_call_has_one_request_id_kept_across_its_retries_and_on_its_error() {
    let (captured, _guard) = capture();
    let script = Script::new(
        vec![Answer::empty(503), Answer::empty(503)],
        Answer::json(404, r#"{"code":"not_found","message":"no such webhook"}"#),
    );
    let client = client(script.clone());
    // Two 503s, then a 404: three attempts of one call, one id.
    let error = client
        .sdk()
        .get_webhook_details()
        .webhook_id("w1")
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    let ids = sent_ids(&script);
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(ids[0].len(), 36);
    let id = error.request_id().expect("the error keeps the call's id");
    assert_eq!(id.as_str(), ids[0]);
    assert!(error.to_string().contains(&ids[0]), "{error}");
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains(&format!("pubapi.request_id={}", ids[0])),
        "{log}"
    );
    assert!(log.contains("error.type=\"404\""), "{log}");
    // The next call has an id of its own.
    let _ = client.sdk().whoami().send().await;
    let ids = sent_ids(&script);
    assert_eq!(ids.len(), 4);
    assert_ne!(ids[3], ids[0]);
}

#[tokio::test]
async fn a_call_that_got_no_answer_keeps_its_request_id_on_the_transport_error() {
    let (captured, _guard) = capture();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = Client::builder()
        .isolated_budget()
        .base_url(&format!("http://127.0.0.1:{port}/pubapi"))
        .token(SecretToken::try_from(CANARY).unwrap())
        .retry(pubapi_sdk_ext::RetryConfig::default().with_max_attempts(1))
        .build()
        .unwrap();
    let error = client
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
    let id = error
        .request_id()
        .expect("the transport error keeps the call's id");
    assert_eq!(id.as_str().len(), 36);
    assert!(error.to_string().contains(id.as_str()), "{error}");
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains(&format!("pubapi.request_id={id}")), "{log}");
    assert!(log.contains("error.type=\"connect\""), "{log}");
    // The next call's id is another.
    let again = client
        .sdk()
        .whoami()
        .send()
        .await
        .map_err(Error::from)
        .unwrap_err();
    assert_ne!(again.request_id(), Some(id));
}

#[tokio::test(start_paused = true)]
async fn permissions_audit_with_assignee_users_alone_warns_that_groups_are_left_out() {
    use pubapi_sdk_ext::types::{AuditFormat, PermissionsAuditRequest};
    let (captured, _guard) = capture();
    let script = Script::new(
        vec![],
        Answer::json(202, r#"{"id":"j1"}"#)
            .header("location", "https://sandbox.test/pubapi/v1/audit/jobs/j1"),
    );
    let body = PermissionsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Json).unwrap();
    let client = script.client();
    client
        .audit()
        .create(PermissionsAuditRequest {
            assignee_users: vec!["alice".into()],
            ..body.clone()
        })
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("WARN") && log.contains("leaves out every group"),
        "{log}"
    );

    captured.0.lock().unwrap().clear();
    client
        .audit()
        .create(PermissionsAuditRequest {
            assignee_users: vec!["alice".into()],
            assignee_groups: vec!["Finance".into()],
            ..body
        })
        .await
        .unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!log.contains("leaves out every group"), "{log}");
}
