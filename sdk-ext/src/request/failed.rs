//! A failed response's body, read once by the policy and kept with the operation it
//! answered and the [`Verdict`] the policy gave it: the policy (which reads and judges it)
//! and the error conversion (which decodes it, and builds the error from that verdict
//! without judging the answer again) both depend on this module and not on each other.

use bytes::Bytes;
use pubapi_sdk::operations::Operation;

use crate::verdict::Verdict;

/// The largest error body kept (bigger bodies are cut; the status and headers still count).
pub(crate) const MAX_ERROR_BODY: usize = 1 << 20;

/// A failed response's body, read by the policy (at most 1 MiB) and kept
/// with the operation it answered, so the error can be built without waiting for the body:
/// that is what lets `?` turn a generated operation's error into [`crate::Error`].
#[derive(Debug, Clone)]
pub(crate) struct FailedBody {
    /// The operation the response answered (its area and error format).
    pub(crate) operation: &'static Operation,
    /// The body as read; empty when it broke off before any byte.
    pub(crate) body: bytes::Bytes,
    /// The policy's verdict on the answer, which the error is built from.
    pub(crate) verdict: Verdict,
}

impl FailedBody {
    /// The failed body a response carries, if the policy read it.
    pub(crate) fn of(response: &reqwest::Response) -> Option<&FailedBody> {
        response.extensions().get::<FailedBody>()
    }
}

/// Reads a failed response's body (capped) and answers a response that carries it both as
/// its body and as a [`FailedBody`] extension, with the `verdict` the policy gave it.
pub(crate) async fn keep_failed_body(
    response: reqwest::Response,
    operation: &'static Operation,
    verdict: Verdict,
    silence: std::time::Duration,
) -> reqwest::Response {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let url = response.url().clone();
    // A body that breaks off, or goes silent for the attempt's bound, still leaves the status
    // and headers (and what came of it) to decide the error.
    let body = read_capped(response, Some(silence))
        .await
        .unwrap_or_default();
    use reqwest::ResponseBuilderExt;
    // Only the URL needs the builder (reqwest keeps it in a private extension).
    let mut rebuilt = http::Response::builder()
        .url(url)
        .body(body.clone())
        .unwrap_or_default();
    *rebuilt.status_mut() = status;
    *rebuilt.version_mut() = version;
    *rebuilt.headers_mut() = headers;
    rebuilt.extensions_mut().insert(FailedBody {
        operation,
        body,
        verdict,
    });
    reqwest::Response::from(rebuilt)
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a body and stops: the rest is never read; with
/// a `silence` bound, a read that waits longer ends the body there.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    silence: Option<std::time::Duration>,
) -> reqwest::Result<Bytes> {
    let mut body = Vec::new();
    loop {
        let read = match silence {
            Some(silence) => match tokio::time::timeout(silence, response.chunk()).await {
                Ok(read) => read?,
                Err(_) => None,
            },
            None => response.chunk().await?,
        };
        let Some(chunk) = read else { break };
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Ok(Bytes::from(body))
}
