//! The record of every exchange a sandbox served, for assertions and for the conformance
//! check against `spec/openapi.yaml`.

use std::collections::VecDeque;

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
    /// The request body, or its first
    /// [`traffic_request_body_bytes`](crate::ServerConfig::traffic_request_body_bytes).
    pub request_body: Vec<u8>,
    /// The length of the whole request body.
    pub request_body_len: usize,
    /// Whether the request body was longer than what was recorded.
    pub request_body_truncated: bool,
    /// The admin's username when the call impersonated someone.
    pub impersonated_by: Option<String>,
    /// The username of the token the request carried (`None`: no token of the sandbox),
    /// whose limits the request counted against.
    pub token_user: Option<String>,
    /// The request's `x-request-id`, as a client's log names the call.
    pub request_id: Option<String>,
    /// The request's W3C `traceparent`, as a tracing backend names the call's span.
    pub traceparent: Option<String>,
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
    /// Whether the reply came from fault injection or from a state the control plane set that
    /// the spec does not describe (a deactivated token): deliberately outside the spec (the
    /// conformance check leaves it out).
    pub injected: bool,
    /// Whether a fault injection answered, delayed, slowed or cut this request, its reply in
    /// the spec or not: the log, the traffic view and the dashboard mark it, and it is never
    /// counted as a refusal of the limits.
    pub fault: bool,
}

impl Exchange {
    /// A reply header by name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::http::header_value(&self.response_headers, name)
    }
}

/// The exchanges kept, bounded in number and in the bytes of their bodies.
#[derive(Debug, Default)]
pub(crate) struct TrafficLog {
    exchanges: VecDeque<Exchange>,
    bytes: usize,
}

impl TrafficLog {
    /// Keeps `exchange`, then drops the oldest ones until at most `capacity` exchanges of at
    /// most `max_bytes` in all are left (the newest one stays whatever its size).
    pub(crate) fn push(&mut self, exchange: Exchange, capacity: usize, max_bytes: usize) {
        self.bytes += kept_bytes(&exchange);
        self.exchanges.push_back(exchange);
        while self.exchanges.len() > capacity
            || (self.bytes > max_bytes && self.exchanges.len() > 1)
        {
            match self.exchanges.pop_front() {
                Some(old) => self.bytes -= kept_bytes(&old),
                None => break,
            }
        }
    }

    /// The exchanges, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Exchange> {
        self.exchanges.iter()
    }

    /// The number of exchanges kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.exchanges.len()
    }

    /// The bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// What an exchange holds that its sender chose the size of: the bodies, and the method,
/// path, query and headers (the fixed-size fields are left out).
fn kept_bytes(exchange: &Exchange) -> usize {
    let pairs = |pairs: &[(String, String)]| -> usize {
        pairs
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum()
    };
    exchange.request_body.len()
        + exchange.response_body.len()
        + exchange.method.len()
        + exchange.path.len()
        + pairs(&exchange.query)
        + pairs(&exchange.response_headers)
        + exchange.content_type.as_ref().map_or(0, String::len)
        + exchange.impersonated_by.as_ref().map_or(0, String::len)
        + exchange.token_user.as_ref().map_or(0, String::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exchange whose bodies are `request` and `reply` bytes, and nothing else of a size
    /// (its head's share has a test of its own).
    fn exchange(seq: u64, request: usize, reply: usize) -> Exchange {
        Exchange {
            seq,
            at_ms: 0,
            operation: None,
            method: String::new(),
            path: String::new(),
            query: Vec::new(),
            request_body: vec![b'x'; request],
            request_body_len: request,
            request_body_truncated: false,
            impersonated_by: None,
            token_user: None,
            request_id: None,
            traceparent: None,
            status: 200,
            response_headers: Vec::new(),
            content_type: None,
            response_body: vec![b'y'; reply],
            body_truncated: false,
            injected: false,
            fault: false,
        }
    }

    #[test]
    fn the_log_keeps_within_its_count_and_its_bytes_oldest_out_first() {
        let mut log = TrafficLog::default();
        for seq in 1..=5 {
            log.push(exchange(seq, 10, 10), 3, 1000);
        }
        assert_eq!(log.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(log.bytes(), 60);
        log.push(exchange(6, 500, 400), 3, 1000);
        assert_eq!(log.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4, 5, 6]);
        assert_eq!(log.bytes(), 940);
        log.push(exchange(7, 50, 20), 3, 1000);
        assert_eq!(log.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![5, 6, 7]);
        assert_eq!(log.bytes(), 990);
        log.push(exchange(8, 2000, 0), 3, 1000);
        assert_eq!(log.len(), 1, "the newest stays, alone, whatever its size");
        assert_eq!(log.bytes(), 2000);
    }

    #[test]
    fn paths_queries_and_headers_count_towards_the_logs_bytes() {
        // Requests to unknown paths are logged before any token is checked: a head of
        // 64 KiB each, bodies empty, must not fill memory up to the count cap.
        let mut log = TrafficLog::default();
        for seq in 1..=10 {
            let mut e = exchange(seq, 0, 0);
            e.method = "GET".into();
            e.path = "a".repeat(30_000);
            e.query = vec![("q".into(), "b".repeat(30_000))];
            e.response_headers = vec![("x".into(), "y".into())];
            log.push(e, 20_000, 100_000);
        }
        assert_eq!(log.len(), 1);
        assert_eq!(log.bytes(), 3 + 30_000 + 1 + 30_000 + 2);
    }
}
