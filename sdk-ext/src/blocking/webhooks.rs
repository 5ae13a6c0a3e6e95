//! The webhook registration handle of the blocking client.

use super::Client;
use crate::error::Error;
use crate::webhook::registration::{Registration, Status};
use pubapi_sdk::types::{Webhook, WebhookSummary};
use std::time::{Duration, SystemTime};

/// The webhook endpoints: `client.webhooks()` (see [`crate::api::Webhooks`]).
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'a> {
    pub(super) client: &'a Client,
}

impl Webhooks<'_> {
    /// Registers a webhook.
    pub fn create(&self, registration: &Registration) -> Result<WebhookSummary, Error> {
        self.client
            .call(self.client.inner.webhooks().create(registration))
    }

    /// The registrations of the token's user and client id.
    pub fn list(&self) -> Result<Vec<WebhookSummary>, Error> {
        self.client.call(self.client.inner.webhooks().list())
    }

    /// The full registration.
    pub fn details(&self, id: &str) -> Result<Webhook, Error> {
        self.client.call(self.client.inner.webhooks().details(id))
    }

    /// Status and expiry.
    pub fn status(&self, id: &str) -> Result<WebhookSummary, Error> {
        self.client.call(self.client.inner.webhooks().status(id))
    }

    /// Enables or disables deliveries.
    pub fn set_status(&self, id: &str, status: Status) -> Result<WebhookSummary, Error> {
        self.client
            .call(self.client.inner.webhooks().set_status(id, status))
    }

    /// Replaces the configuration (and optionally the status).
    pub fn update(
        &self,
        id: &str,
        registration: &Registration,
        status: Option<Status>,
    ) -> Result<(), Error> {
        let webhooks = self.client.inner.webhooks();
        self.client.call(webhooks.update(id, registration, status))
    }

    /// Deletes the registration.
    pub fn delete(&self, id: &str) -> Result<(), Error> {
        self.client.call(self.client.inner.webhooks().delete(id))
    }

    /// Re-enables a registration the platform disabled; does nothing to one that is enabled.
    pub fn ensure_enabled(&self, id: &str) -> Result<WebhookSummary, Error> {
        self.client
            .call(self.client.inner.webhooks().ensure_enabled(id))
    }

    /// Renews a registration that expires within `window` of `now` (see
    /// [`crate::api::Webhooks::renew_if_expiring`]).
    pub fn renew_if_expiring(
        &self,
        id: &str,
        registration: &Registration,
        window: Duration,
        now: SystemTime,
    ) -> Result<Option<WebhookSummary>, Error> {
        let webhooks = self.client.inner.webhooks();
        self.client
            .call(webhooks.renew_if_expiring(id, registration, window, now))
    }
}
