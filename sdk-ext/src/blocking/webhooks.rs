//! The webhook registration handle of the blocking client.

use crate::error::Error;
use crate::webhook::registration::{Registration, Status};
use pubapi_sdk::types::{Webhook, WebhookSummary};
use std::time::{Duration, SystemTime};

blocking_handle! {
    /// The webhook endpoints: `client.webhooks()` (see [`crate::api::Webhooks`]).
    Webhooks = webhooks {
        /// Registers a webhook.
        fn create(&self, registration: &Registration) -> Result<WebhookSummary, Error> => call;

        /// The registrations of the token's user and client id.
        fn list(&self) -> Result<Vec<WebhookSummary>, Error> => call;

        /// The full registration.
        fn details(&self, id: &str) -> Result<Webhook, Error> => call;

        /// Status and expiry.
        fn status(&self, id: &str) -> Result<WebhookSummary, Error> => call;

        /// Enables or disables deliveries.
        fn set_status(&self, id: &str, status: Status) -> Result<WebhookSummary, Error> => call;

        /// Replaces the configuration (and optionally the status).
        fn update(
            &self,
            id: &str,
            registration: &Registration,
            status: Option<Status>,
        ) -> Result<(), Error> => call;

        /// Deletes the registration.
        fn delete(&self, id: &str) -> Result<(), Error> => call;

        /// Re-enables a registration the platform disabled; does nothing to one that is enabled.
        fn ensure_enabled(&self, id: &str) -> Result<WebhookSummary, Error> => call;

        /// Renews a registration that expires within `window` of `now` (see
        /// [`crate::api::Webhooks::renew_if_expiring`]).
        fn renew_if_expiring(
            &self,
            id: &str,
            registration: &Registration,
            window: Duration,
            now: SystemTime,
        ) -> Result<Option<WebhookSummary>, Error> => call;
    }
}
