//! The deprecated copilot's handle, `client.copilot()`: still callable, with its deprecation
//! surfaced (see [`crate::ai::Deprecation`] and the migration in [`crate::ai`]).

use crate::Client;
use crate::ai::{CopilotAnswer, Deprecation};
use crate::error::Error;
use pubapi_sdk::types::CopilotAskRequest;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process has warned that the copilot is deprecated.
static WARNED: AtomicBool = AtomicBool::new(false);

/// The copilot endpoint: `client.copilot()` (deprecated).
#[derive(Debug, Clone, Copy)]
pub struct Copilot<'a> {
    pub(crate) client: &'a Client,
}

impl Copilot<'_> {
    /// Asks the copilot. Before its sunset a warning is logged once per process; after it
    /// the call is refused with [`Error::Removed`] naming the assistant, with nothing sent,
    /// unless the client was built with
    /// [`call_removed_operations`](crate::ClientBuilder::call_removed_operations).
    pub async fn ask(&self, request: CopilotAskRequest) -> Result<CopilotAnswer, Error> {
        if !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "POST /v1/ai/copilot/ask is deprecated and removed on 30 September 2026; \
                 use client.assistant().ask_and_wait(..)"
            );
        }
        #[allow(deprecated)]
        let call = pubapi_sdk::ClientCopilotExt::ask_copilot(self.client.sdk()).body(request);
        let response = call.send().await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let deprecation = Deprecation {
            deprecation: header("deprecation"),
            sunset: header("sunset"),
            link: header("link"),
            notice: response.deprecation_notice.clone(),
        };
        Ok(CopilotAnswer {
            body: response.into_inner(),
            deprecation,
        })
    }
}
