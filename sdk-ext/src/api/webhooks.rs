//! The webhooks handle, `client.webhooks()`: create, list, inspect, enable or disable,
//! update, delete and renew registrations. What a registration says is built with
//! [`crate::webhook::registration::Registration`]; the deliveries it brings are read by
//! [`crate::webhook::Receiver`].

use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use crate::webhook::registration::{Registration, Status, expires_within};
use pubapi_sdk::types::{Webhook, WebhookState, WebhookStatusRequest, WebhookSummary};
use std::time::{Duration, SystemTime};

/// The webhook endpoints: `client.webhooks()`.
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'a> {
    pub(crate) client: &'a Client,
}

impl Webhooks<'_> {
    /// Registers a webhook (201 `{webhookId, expires, status}`), once its endpoint passed
    /// the check ([`Registration::check_endpoint`]): a refused endpoint is
    /// [`Error::InvalidInput`] with [`InputError::Endpoint`](crate::error::InputError::Endpoint),
    /// and nothing is sent.
    pub async fn create(&self, registration: &Registration) -> Result<WebhookSummary, Error> {
        registration.checked().await?;
        let call = self
            .client
            .sdk()
            .create_webhook()
            .body(registration.create_body());
        Ok(call.send().await?.into_inner())
    }

    /// The registrations of the token's user and client id.
    pub async fn list(&self) -> Result<Vec<WebhookSummary>, Error> {
        Ok(self
            .client
            .sdk()
            .list_webhooks()
            .send()
            .await?
            .into_inner()
            .0)
    }

    /// The full registration.
    pub async fn details(&self, id: &str) -> Result<Webhook, Error> {
        let call = self.client.sdk().get_webhook_details().webhook_id(id);
        Ok(call.send().await?.into_inner())
    }

    /// Status and expiry.
    pub async fn status(&self, id: &str) -> Result<WebhookSummary, Error> {
        let call = self.client.sdk().get_webhook_status().webhook_id(id);
        Ok(call.send().await?.into_inner())
    }

    /// Enables or disables deliveries.
    pub async fn set_status(&self, id: &str, status: Status) -> Result<WebhookSummary, Error> {
        let body = WebhookStatusRequest {
            status: status.state(),
        };
        let call = self
            .client
            .sdk()
            .set_webhook_status()
            .webhook_id(id)
            .body(body);
        Ok(call.send().await?.into_inner())
    }

    /// Replaces the configuration (and optionally the status). Whether fields left out keep
    /// their value is not shown in the reference, so the whole registration is sent, once its
    /// endpoint passed the check, as for [`Webhooks::create`].
    pub async fn update(
        &self,
        id: &str,
        registration: &Registration,
        status: Option<Status>,
    ) -> Result<(), Error> {
        registration.checked().await?;
        let body = registration.update_body(status);
        let call = self.client.sdk().update_webhook().webhook_id(id).body(body);
        call.send().await?;
        Ok(())
    }

    /// Deletes the registration (204).
    pub async fn delete(&self, id: &str) -> Result<(), Error> {
        let call = self.client.sdk().delete_webhook().webhook_id(id);
        call.send().await?;
        Ok(())
    }

    /// Re-enables a registration the platform disabled (after 4 failed delivery attempts);
    /// does nothing to one that is enabled. Returns the current summary.
    pub async fn ensure_enabled(&self, id: &str) -> Result<WebhookSummary, Error> {
        let current = self.status(id).await?;
        match current.status {
            WebhookState::Enabled => Ok(current),
            _ => self.set_status(id, Status::Enabled).await,
        }
    }

    /// Renews a registration that expires within `window` of `now`: registers the same
    /// configuration again (a new `expires`), then deletes the old one. The new registration
    /// exists before the old one goes, so no event is lost; one may arrive twice (the
    /// receiver deduplicates by event id). At the webhook quota the creation fails with 409
    /// and the old registration is left as it is; so does an endpoint refused by the check of
    /// [`Webhooks::create`]. Returns the new summary, or `None` when
    /// no renewal was due. What the platform does when `expires` passes is not shown in
    /// the reference.
    pub async fn renew_if_expiring(
        &self,
        id: &str,
        registration: &Registration,
        window: Duration,
        now: SystemTime,
    ) -> Result<Option<WebhookSummary>, Error> {
        let current = self.status(id).await?;
        if !expires_within(&current, window, now) {
            return Ok(None);
        }
        let renewed = self.create(registration).await?;
        self.delete(id).await?;
        Ok(Some(renewed))
    }
}
