//! OpenTelemetry as the HTTP client conventions define it (feature `otel`), seen through an
//! in-memory exporter: the service's span, the call's span under it, one client span per
//! attempt under that with the conventions' attributes and error status, and the W3C
//! `traceparent` of each attempt's span on the wire; never the token, the act-as value or a
//! body. In its own test binary: it installs the global propagator.

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::{ActAs, Client, SecretToken};
use std::sync::Arc;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

const CANARY: &str = "CANARY-token-7f3a9c";
const WHOAMI: &str =
    r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":[]}"#;

/// Spans end up in the returned exporter while the guard lives (this thread only).
fn exporting() -> (
    InMemorySpanExporter,
    SdkTracerProvider,
    tracing::subscriber::DefaultGuard,
) {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    (
        exporter,
        provider,
        tracing::subscriber::set_default(subscriber),
    )
}

fn client(script: &Arc<Script>) -> Client {
    script
        .builder()
        .token(SecretToken::try_from(CANARY).unwrap())
        .build()
        .unwrap()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::new(key.to_owned()))
        .map(|kv| &kv.value)
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|span| span.name == name).collect()
}

#[tokio::test(start_paused = true)]
async fn a_call_retried_twice_is_a_call_span_under_the_services_with_three_attempt_spans() {
    let (exporter, provider, _guard) = exporting();
    let script = Script::new(
        vec![Answer::empty(503), Answer::empty(503)],
        Answer::json(200, WHOAMI),
    );
    let bob = client(&script).act_as(ActAs::username("bob").unwrap());
    let service = tracing::info_span!("service.handle");
    let service_context = service.context();
    bob.identity()
        .whoami()
        .instrument(service.clone())
        .await
        .unwrap();
    drop(service);
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();

    let [service] = named(&spans, "service.handle")[..] else {
        panic!("one service span: {spans:#?}")
    };
    let [call] = named(&spans, "pubapi.request")[..] else {
        panic!("one call span: {spans:#?}")
    };
    let attempts = named(&spans, "GET /pubapi/v1/whoami");
    assert_eq!(attempts.len(), 3, "{spans:#?}");
    let trace_id = service_context.span().span_context().trace_id();
    assert_eq!(call.parent_span_id, service.span_context.span_id());
    assert_eq!(call.span_context.trace_id(), trace_id);
    assert_eq!(attribute(call, "pubapi.operation"), Some(&"whoami".into()));
    assert_eq!(
        attribute(call, "pubapi.limit_class"),
        Some(&"general".into())
    );
    assert!(attribute(call, "pubapi.request_id").is_some());
    assert!(attribute(call, "pubapi.limiter_wait_ms").is_some());
    assert_eq!(call.status, Status::Unset);

    let seen = script.seen();
    for (resends, (attempt, sent)) in attempts.iter().zip(&seen).enumerate() {
        assert_eq!(attempt.parent_span_id, call.span_context.span_id());
        assert_eq!(attempt.span_context.trace_id(), trace_id);
        assert_eq!(attempt.span_kind, SpanKind::Client);
        let expected: [(&str, Value); 5] = [
            ("http.request.method", "GET".into()),
            ("server.address", "sandbox.test".into()),
            ("server.port", 80_i64.into()),
            ("url.full", "http://sandbox.test/pubapi/v1/whoami".into()),
            ("url.template", "/pubapi/v1/whoami".into()),
        ];
        for (key, value) in expected {
            assert_eq!(
                attribute(attempt, key),
                Some(&value),
                "{key} of {attempt:#?}"
            );
        }
        let resend_count = attribute(attempt, "http.request.resend_count");
        if resends == 0 {
            assert_eq!(resend_count, None);
        } else {
            assert_eq!(resend_count, Some(&(resends as i64).into()));
        }
        let (status, error_type, otel_status) = if resends < 2 {
            (503, Some(&Value::from("503")), Status::error(""))
        } else {
            (200, None, Status::Unset)
        };
        assert_eq!(
            attribute(attempt, "http.response.status_code"),
            Some(&i64::from(status).into())
        );
        assert_eq!(attribute(attempt, "error.type"), error_type);
        assert_eq!(attempt.status, otel_status);
        // The attempt's own context on the wire, sampled.
        let traceparent = format!("00-{}-{}-01", trace_id, attempt.span_context.span_id());
        assert_eq!(sent.headers["traceparent"], traceparent.as_str());
    }
    let everything = format!("{spans:?}");
    for secret in [CANARY, "bob", "admin"] {
        assert!(!everything.contains(secret), "{secret} in {everything}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_has_the_error_status_and_path_values_are_redacted() {
    let (exporter, provider, _guard) = exporting();
    let script = Script::new(
        vec![],
        Answer::json(404, r#"{"code":"not_found","message":"no such webhook"}"#),
    );
    let error = client(&script)
        .webhooks()
        .details("hook-of-alice")
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(404));
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let [call] = named(&spans, "pubapi.request")[..] else {
        panic!("one call span: {spans:#?}")
    };
    assert_eq!(call.status, Status::error(""));
    assert_eq!(attribute(call, "error.type"), Some(&"404".into()));
    let [attempt] = named(&spans, "GET /pubapi/v1/webhooks/{webhookId}/details")[..] else {
        panic!("one attempt span: {spans:#?}")
    };
    assert_eq!(
        attribute(attempt, "url.full"),
        Some(&"http://sandbox.test/pubapi/v1/webhooks/REDACTED/details".into())
    );
    assert_eq!(attempt.status, Status::error(""));
    assert!(!format!("{spans:?}").contains("alice"));
}

#[tokio::test(start_paused = true)]
async fn without_a_layer_that_knows_the_span_no_trace_context_is_sent() {
    let script = Script::new(vec![], Answer::json(200, WHOAMI));
    let subscriber = tracing_subscriber::registry();
    let _guard = tracing::subscriber::set_default(subscriber);
    client(&script).identity().whoami().await.unwrap();
    assert!(script.seen()[0].headers.get("traceparent").is_none());
}
