//! The record of every exchange a sandbox served, for assertions and for the conformance
//! check against `spec/openapi.yaml`.

/// Reply bodies are recorded up to this size (a million-event report is not kept twice).
pub const MAX_RECORDED_BODY: usize = 8 << 20;

/// One request and the reply the sandbox sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// Order of arrival, from 1.
    pub seq: u64,
    /// Sandbox time of the reply, epoch milliseconds.
    pub at_ms: i64,
    /// The operation id the request was matched to (`None`: no operation of the spec).
    pub operation: Option<&'static str>,
    /// HTTP method.
    pub method: String,
    /// Path below `/pubapi`.
    pub path: String,
    /// Decoded query parameters.
    pub query: Vec<(String, String)>,
    /// The request body.
    pub request_body: Vec<u8>,
    /// The admin's username when the call impersonated someone.
    pub impersonated_by: Option<String>,
    /// Reply status.
    pub status: u16,
    /// Reply headers besides `Content-Type`.
    pub response_headers: Vec<(String, String)>,
    /// Reply `Content-Type`.
    pub content_type: Option<String>,
    /// Reply body (its first 8 MiB).
    pub response_body: Vec<u8>,
    /// Whether the reply body was longer than what was recorded.
    pub body_truncated: bool,
    /// Whether the reply came from fault injection (deliberately outside the spec).
    pub injected: bool,
}

impl Exchange {
    /// A reply header by name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.response_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
