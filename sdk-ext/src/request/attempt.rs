//! What each attempt of a call shows a service's traces and metrics, as OpenTelemetry's HTTP
//! client conventions define it: a span per attempt, child of the call's span, named
//! `{method} {url.template}` (through `otel.name`, which `tracing-opentelemetry` reads), with
//! `http.request.method`, `server.address`, `server.port`, `url.full` (the values of the
//! path and the query replaced by `REDACTED`: they may hold file paths, ids, questions),
//! `url.template`, `http.request.resend_count` (on a resend), `http.response.status_code`,
//! `error.type` and, on a failure, `otel.status_code = "ERROR"`; the
//! `http.client.request.duration` histogram ([`crate::telemetry`]); and, with the `otel`
//! feature, the W3C trace context of the attempt's span in the request's headers
//! ([`inject`]), so the service's trace goes on in the platform's logs.
//!
//! Nothing secret: no token, act-as value, path or query value, or body.

use crate::telemetry::Ended;
use pubapi_sdk::operations::Operation;
use std::fmt;

/// What replaces a value of the path or the query in `url.full`.
const REDACTED: &str = "REDACTED";

/// The span of one attempt of `operation`, child of the call's `call` span; none when the
/// call's span is disabled (nothing listens, and no field is worked out).
pub(crate) fn span(
    call: &tracing::Span,
    operation: &'static Operation,
    request: &reqwest::Request,
    attempt: u32,
) -> tracing::Span {
    if call.is_disabled() {
        return tracing::Span::none();
    }
    let url = request.url();
    let span = tracing::info_span!(
        parent: call,
        "pubapi.attempt",
        // The fields recorded later first: a field is found by its name, in this order.
        http.response.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        http.request.resend_count = tracing::field::Empty,
        otel.name = tracing::field::display(SpanName(Template { url, operation })),
        otel.kind = "client",
        http.request.method = operation.method,
        server.address = url.host_str().unwrap_or_default(),
        // Integers as `i64`: `tracing-opentelemetry` exports a `u64` as text.
        server.port = i64::from(url.port_or_known_default().unwrap_or_default()),
        url.full = tracing::field::display(ScrubbedUrl { url, operation }),
        url.template = tracing::field::display(Template { url, operation }),
    );
    if attempt > 1 {
        span.record("http.request.resend_count", i64::from(attempt - 1));
    }
    span
}

/// Puts an attempt's end on its span: the status, or the error's type and the error status.
pub(crate) fn end(span: &tracing::Span, ended: Ended, error_type: Option<&'static str>) {
    if span.is_disabled() {
        return;
    }
    if let Ended::Status(status) = ended {
        span.record("http.response.status_code", i64::from(status));
    }
    match (ended, error_type) {
        (_, Some(error_type)) => {
            span.record("error.type", error_type);
            span.record("otel.status_code", "ERROR");
        }
        (Ended::Status(status), None) if crate::verdict::has_error_body(status) => {
            span.record("error.type", tracing::field::display(status));
            span.record("otel.status_code", "ERROR");
        }
        _ => {}
    }
}

/// Records an attempt's duration, from sending to the answer's head (or the failure), in the
/// `http.client.request.duration` histogram.
#[cfg(feature = "metrics")]
pub(crate) fn duration(
    operation: &'static Operation,
    url: &reqwest::Url,
    ended: Ended,
    error_type: Option<&'static str>,
    took: std::time::Duration,
) {
    crate::telemetry::request_duration(
        operation,
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or_default(),
        ended,
        error_type,
        took,
    );
}

/// `{method} {url.template}`, written when a subscriber asks.
struct SpanName<'a>(Template<'a>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0.operation.method, self.0)
    }
}

/// `url.template` as the conventions define it: the path template of the URL the request
/// went to, the base URL's path included (`/pubapi/v1/webhooks/{webhookId}/status`), as
/// `url.full` has it.
struct Template<'a> {
    url: &'a reqwest::Url,
    operation: &'static Operation,
}

impl fmt::Display for Template<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(base_path(self.url, self.operation))?;
        f.write_str(self.operation.path)
    }
}

/// The base URL's path in `url`, before the operation's template (which the policy checked
/// the path's last segments match).
fn base_path<'u>(url: &'u reqwest::Url, operation: &'static Operation) -> &'u str {
    let path = url.path();
    let segments = operation.path.matches('/').count();
    path.rmatch_indices('/')
        .nth(segments.saturating_sub(1))
        .map_or("", |(at, _)| &path[..at])
}

/// A request's URL with its path values and query values replaced by [`REDACTED`]: the
/// scheme, host and port, the base URL's path, the operation's template with its values
/// replaced, and each query name with its value replaced.
struct ScrubbedUrl<'a> {
    url: &'a reqwest::Url,
    operation: &'static Operation,
}

impl fmt::Display for ScrubbedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.url;
        write!(
            f,
            "{}://{}",
            url.scheme(),
            url.host_str().unwrap_or_default()
        )?;
        if let Some(port) = url.port() {
            write!(f, ":{port}")?;
        }
        // The policy checked the path's shape: the template's segments are its last ones.
        f.write_str(base_path(url, self.operation))?;
        for segment in self.operation.path.split('/').skip(1) {
            if segment.starts_with('{') {
                write!(f, "/{REDACTED}")?;
            } else {
                write!(f, "/{segment}")?;
            }
        }
        let mut separator = '?';
        for (name, _) in url.query_pairs() {
            let name: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
            write!(f, "{separator}{name}={REDACTED}")?;
            separator = '&';
        }
        Ok(())
    }
}

/// Puts the W3C trace context of `span` (`traceparent`, `tracestate`) into `headers`,
/// through the propagator the service installed (`opentelemetry::global`); nothing when the
/// span is disabled or not known to a `tracing-opentelemetry` layer.
#[cfg(feature = "otel")]
pub(crate) fn inject(span: &tracing::Span, headers: &mut http::HeaderMap) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Injector(headers));
    });
}

/// Sets the propagator's headers on a request, replacing those of an earlier attempt.
#[cfg(feature = "otel")]
struct Injector<'a>(&'a mut http::HeaderMap);

#[cfg(feature = "otel")]
impl opentelemetry::propagation::Injector for Injector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_full_keeps_the_base_and_template_and_redacts_every_value() {
        let by_name = |name| pubapi_sdk::operations::by_method_name(name).unwrap();
        let cases = [
            (
                "whoami",
                "https://acme.example.com/pubapi/v1/whoami",
                "https://acme.example.com/pubapi/v1/whoami",
            ),
            (
                "get_webhook_details",
                "http://127.0.0.1:8080/pubapi/v1/webhooks/hook%2042/details",
                "http://127.0.0.1:8080/pubapi/v1/webhooks/REDACTED/details",
            ),
            (
                "list_events_v2",
                "https://acme.example.com/pubapi/v2/events?cursor=c%201&limit=5",
                "https://acme.example.com/pubapi/v2/events?cursor=REDACTED&limit=REDACTED",
            ),
        ];
        for (name, url, scrubbed) in cases {
            let operation = by_name(name);
            let url = reqwest::Url::parse(url).unwrap();
            assert_eq!(
                ScrubbedUrl {
                    url: &url,
                    operation
                }
                .to_string(),
                scrubbed,
                "{name}"
            );
        }
    }

    #[test]
    fn url_template_and_the_span_name_keep_the_base_path_as_url_full_does() {
        let by_name = |name| pubapi_sdk::operations::by_method_name(name).unwrap();
        let cases = [
            (
                "get_webhook_status",
                "https://acme.example.com/pubapi/v1/webhooks/w%201/status",
                "/pubapi/v1/webhooks/{webhookId}/status",
            ),
            (
                "whoami",
                "http://127.0.0.1:8080/pubapi/v1/whoami",
                "/pubapi/v1/whoami",
            ),
            // A base URL without a path of its own.
            ("whoami", "https://api.example.com/v1/whoami", "/v1/whoami"),
            (
                "list_events_v2",
                "https://acme.example.com/edge/pubapi/v2/events?cursor=1",
                "/edge/pubapi/v2/events",
            ),
        ];
        for (name, url, template) in cases {
            let operation = by_name(name);
            let url = reqwest::Url::parse(url).unwrap();
            let template_of = || Template {
                url: &url,
                operation,
            };
            assert_eq!(template_of().to_string(), template, "{name}");
            assert_eq!(
                SpanName(template_of()).to_string(),
                format!("{} {template}", operation.method)
            );
        }
    }
}
