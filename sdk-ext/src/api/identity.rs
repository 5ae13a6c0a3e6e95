//! The identity handle, `client.identity()`: who the token belongs to.

use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use pubapi_sdk::types::Whoami;

/// The token's own identity: `client.identity()`.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    pub(crate) client: &'a Client,
}

impl Identity<'_> {
    /// `GET /v1/whoami`: the user, domain, client id and scopes of the token (or of the user
    /// this client acts as).
    pub async fn whoami(&self) -> Result<Whoami, Error> {
        Ok(self.client.sdk().whoami().send().await?.into_inner())
    }
}
