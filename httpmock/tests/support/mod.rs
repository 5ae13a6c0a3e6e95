//! What the typed-mock tests share: the builder of the client under test, pointed at the mock
//! server, without pacing (each file sets the retries it tests).

use httpmock::MockServer;
use pubapi_httpmock::base_url;
use pubapi_sdk_ext::{Budget, ClientBuilder, Limits, SecretToken};

/// The client under test before its retries are chosen: the mock server's base URL, a token
/// and no pacing, so only the retries' own waits take time.
pub fn client_builder(server: &MockServer) -> ClientBuilder {
    pubapi_sdk_ext::Client::builder()
        .isolated_budget()
        .base_url(&base_url(server))
        .token(SecretToken::try_from("t").expect("a token"))
        .limits(Limits {
            general: Budget::new(None, None),
            ai: Budget::new(None, None),
        })
}
