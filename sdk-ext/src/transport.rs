//! The seam where a request leaves the SDK.

use pubapi_sdk::hooks::BoxFuture;
use std::fmt;

/// Sends one HTTP request: the last step of every attempt.
///
/// By default a client sends with its `reqwest::Client`, as [`ReqwestTransport`] does
/// (without the boxed future a `Transport` returns). Tests replace it to script responses
/// deterministically (with paused time, real sockets would time out), and a caller can wrap
/// it to record traffic.
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` with `client` and returns its response.
    fn send<'a>(
        &'a self,
        client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>>;

    /// Whether this transport stops each request before it is transmitted (a dry run, which
    /// only shows what would be sent), as smithy-rs's orchestrator can stop before transmit:
    /// the policy then hands it the request once the checks and the token are done, without
    /// a slot of the token's pacer (nothing reaches the server, so nothing counts against
    /// its limits), and sends it once, without retries. `false` by default.
    fn stops_before_transmit(&self) -> bool {
        false
    }
}

/// Sends requests over the network with reqwest (rustls, redirects not followed).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReqwestTransport;

impl Transport for ReqwestTransport {
    fn send<'a>(
        &'a self,
        client: &'a reqwest::Client,
        request: reqwest::Request,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>> {
        Box::pin(client.execute(request))
    }
}
