//! The identity handle of the blocking client.

use super::Client;
use crate::error::Error;
use pubapi_sdk::types::Whoami;

/// The token's own identity: `client.identity()`.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    pub(super) client: &'a Client,
}

impl Identity<'_> {
    /// `GET /v1/whoami` (see [`crate::api::Identity::whoami`]).
    pub fn whoami(&self) -> Result<Whoami, Error> {
        self.client.call(self.client.inner.identity().whoami())
    }
}
