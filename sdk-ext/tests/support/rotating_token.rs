//! A token source that rotates once, shared by the integration tests of the 401 path
//! (`tests/policy.rs` through a scripted transport, `tests/replay.rs` through reqwest), which
//! include this file by path.

use pubapi_sdk_ext::token::TokenFuture;
use pubapi_sdk_ext::{SecretToken, TokenSource};
use std::sync::Mutex;

/// Hands out `old-token` until it is rejected, then `new-token`, counting the rejections.
#[derive(Debug, Default)]
pub(crate) struct Rotating {
    rotated: Mutex<bool>,
    /// How many times a token was rejected.
    pub(crate) invalidated: Mutex<u32>,
}

impl TokenSource for Rotating {
    fn token(&self) -> TokenFuture<'_> {
        let value = if *self.rotated.lock().unwrap() {
            "new-token"
        } else {
            "old-token"
        };
        Box::pin(async move { SecretToken::try_from(value) })
    }

    fn invalidate(&self, _rejected: &SecretToken) {
        *self.rotated.lock().unwrap() = true;
        *self.invalidated.lock().unwrap() += 1;
    }
}
