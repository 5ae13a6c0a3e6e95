//! The deprecated copilot: still callable, with its deprecation surfaced.
//!
//! `POST /v1/ai/copilot/ask` is removed on 30 September 2026. Its replacement is the
//! asynchronous assistant. Migration:
//!
//! ```no_run
//! use pubapi_sdk_ext::types::AssistantAskRequest;
//! use pubapi_sdk_ext::ai::AiWait;
//! # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), Box<dyn std::error::Error>> {
//! // Before: let answer = client.copilot().ask(request).await?.body.response;
//! let request = AssistantAskRequest::builder().question("What is in the Q3 folder?");
//! let answer = client.assistant().ask_and_wait(request.try_into()?, AiWait::default()).await?;
//! println!("{}", answer.text().unwrap_or_default());
//! # Ok(()) }
//! ```

use pubapi_sdk::types::CopilotAskResponse;
use std::time::Duration;
#[cfg(test)]
use std::time::UNIX_EPOCH;

/// The copilot's sunset, 30 September 2026 00:00 UTC, in seconds since the Unix epoch (the
/// spec's `x-pubapi-sunset` of `askCopilot`).
pub const SUNSET: Duration = Duration::from_secs(1_790_726_400);

/// What the copilot's responses say about its deprecation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deprecation {
    /// The `Deprecation` header (`true`).
    pub deprecation: Option<String>,
    /// The `Sunset` header (an HTTP date).
    pub sunset: Option<String>,
    /// The `Link` header: the replacement, with relation `successor-version`.
    pub link: Option<String>,
    /// The body's `deprecationNotice`.
    pub notice: Option<String>,
}

/// A copilot answer with its deprecation information.
#[derive(Debug, Clone, PartialEq)]
pub struct CopilotAnswer {
    /// The answer body.
    pub body: CopilotAskResponse,
    /// The deprecation headers and notice.
    pub deprecation: Deprecation,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sunset_is_the_thirtieth_of_september_2026_as_the_spec_says() {
        assert_eq!(
            httpdate::fmt_http_date(UNIX_EPOCH + SUNSET),
            "Wed, 30 Sep 2026 00:00:00 GMT"
        );
        let operation = pubapi_sdk::operations::find("askCopilot").unwrap();
        assert_eq!(operation.sunset, Some(SUNSET.as_secs()));
        assert_eq!(operation.successor, Some("askAssistant"));
    }
}
