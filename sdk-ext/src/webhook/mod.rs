//! Webhooks: registering them ([`registration`]: what [`Client::webhooks`](crate::Client::webhooks)
//! sends and reads, its endpoint checked first by [`endpoint`]), and receiving their
//! deliveries: typed events, authentication, deduplication, dead letters.
//!
//! A webhook registration (reference 2.9, 4.8) makes the platform POST a JSON body
//! `{"data": [event, ...]}` to an HTTPS endpoint, with the registration's `authHeader` echoed
//! in the `authorization` header. This module reads those deliveries:
//!
//! - [`Delivery`], [`WebhookEvent`] and [`EventData`]: the body, typed per [`EventType`]
//!   (every event of reference 6.2), tolerant of unknown event types and fields;
//! - [`Receiver`]: a framework-neutral handler that authenticates, bounds, parses and
//!   deduplicates a delivery, hands it to your [`DeliveryHandler`], and tells you which
//!   status to answer ([`HandleOutcome`]);
//! - [`DedupStore`]: where the receiver remembers what it handed over: [`MemoryDedup`] in
//!   this process by default, or `RedisDedup` (feature `redis`) shared by replicas and kept
//!   across restarts (see [Deduplication across replicas](#deduplication-across-replicas));
//! - [`EventFilter`]: the names and wildcards a registration may subscribe to;
//! - `testing` (feature `test-util`): signed sample deliveries for your own tests;
//! - `axum` (feature `receiver-axum`): the receiver as an axum route.
//!
//! # Delivery and retries
//!
//! The platform expects **HTTP 200**; any other answer (or none) schedules a retry. There are
//! 4 attempts in all: immediately, then after 1 minute, 10 minutes and 1 hour. When all 4
//! fail, the registration is **disabled** and deliveries stop until it is enabled again
//! (reference 6.1, 3). So:
//!
//! - answer quickly, after storing the batch durably, and process it from there;
//! - do not answer an error for content you cannot read: [`Receiver`] hands such content to
//!   the handler as a [`DeadLetter`] and answers 200, so one malformed batch does not disable
//!   the feed;
//! - expect the same event more than once (a retry after a lost answer): the receiver drops
//!   events whose `(domain, eventId)` it handed over within the last 2 hours (by default),
//!   which covers the 71-minute retry horizon;
//! - when a registration was disabled, or the process lost its memory, reconcile through the
//!   events API (`GET /v2/events`, reference 4.9) rather than trusting that nothing was
//!   missed.
//!
//! # Deduplication across replicas
//!
//! The receiver itself keeps no memory of deliveries: for each delivery it **claims** the
//! keys of its events in a [`DedupStore`], hands the fresh ones to the handler, and then
//! **commits** them (handler `Ok`, answer 200) or **releases** them (handler error, answer
//! 500, or the handling was cancelled), so the platform's retry is handed over again. A key
//! claimed by a delivery still being handled is left out and answered 503.
//!
//! - [`MemoryDedup`], the default: bounded memory in this process, forgotten on restart, not
//!   shared. Enough for one replica whose handler is idempotent across restarts.
//! - `RedisDedup` (feature `redis`): one Redis shared by every replica, set with
//!   [`ReceiverBuilder::dedup_store`] under the receiver's name. A delivery is then handed
//!   over once across replicas and across restarts: a claim is `SET key NX` with a lease, a
//!   commit keeps the key for 2 hours (the retries end 71 minutes after the first attempt).
//!   **If Redis cannot be reached, deliveries are refused with 503** before the handler sees
//!   them: the platform retries them later, so nothing is lost and nothing is handed over
//!   twice. See `RedisDedup` for keys, expiry and failure handling.
//!
//!   **If Redis loses its data** (a restart without persistence, `FLUSHALL`, a failover to a
//!   replica that had not received the last writes, evictions), it answers that deliveries
//!   it was told about are new. Behind a shared store the receiver keeps a bounded second
//!   line in the process: the keys it handed over recently
//!   ([`ReceiverBuilder::recent_deliveries`], by default the last
//!   [100,000](DEFAULT_RECENT_CAPACITY) events for [2 hours](DEFAULT_RECENT_WINDOW), which
//!   covers the 71-minute retry horizon). So **the process that handed an event over never
//!   hands it over again within those bounds**: it answers 200 (a duplicate, counted in
//!   [`HandleOutcome::forgotten_by_store`]), logs a warning and records the event in the store
//!   again. Not covered: a replica that never handed the event over (nor this process after
//!   a restart) cannot know it, and past the count or the window this process forgets too.
//!   `RedisDedup` also notices that Redis lost everything (a generation key) and logs it once
//!   per loss.
//! - Your own: implement [`DedupStore`] (claim, commit, release, window).
//!
//! # What a shared secret cannot do
//!
//! Deliveries are authenticated only by a static value echoed in a header: there is no
//! signature over the body and no timestamp. The receiver compares the SHA-256 of both sides
//! in constant time and accepts a previous secret during rotation,
//! but **anyone who has read the secret once** (a TLS-terminating proxy, a log that records
//! headers, a leaked configuration) **can forge deliveries with any content and replay old
//! ones**, and nothing in a delivery can tell. Therefore:
//!
//! - serve the endpoint over HTTPS only, with a high-entropy secret (128 bits or more), and
//!   never log the `authorization` header;
//! - treat a delivery as a **hint** that something changed, and re-read the authoritative
//!   state through the authenticated API before acting on anything that matters
//!   (permissions, deletions, workflow decisions);
//! - use the `clientIdHash` filter ([`ReceiverBuilder::ignore_own_client_id`]) to skip
//!   the application's own actions, not as a security control.
//!
//! # Example
//!
//! ```
//! use pubapi_sdk_ext::webhook::{Batch, EventData, HandlerError, Receiver, WebhookSecret};
//!
//! # async fn serve(headers: pubapi_sdk_ext::http::HeaderMap, body: Vec<u8>) -> Result<u16, Box<dyn std::error::Error>> {
//! let receiver = Receiver::builder()
//!     .secret(WebhookSecret::new("new-secret-4f1c2e9a7b3d5f60")?)
//!     .previous_secret(WebhookSecret::new("old-secret-0a1b2c3d4e5f6071")?)
//!     .build()?;
//!
//! let handler = |batch: Batch| async move {
//!     for event in &batch.events {
//!         if let EventData::FsAddFile(file) = &event.data {
//!             println!("new file at {}", file.target_path);
//!         }
//!     }
//!     Ok::<(), HandlerError>(())
//! };
//!
//! // In the HTTP server's handler:
//! let outcome = receiver.handle(&headers, &body, &handler).await;
//! Ok(outcome.status) // answer with this status
//! # }
//! ```

/// Declares a public error that wraps its cause (an error, or a message) under a fixed
/// message: `new`, `Display` (the message), `Error::source` (the cause) and a derived `Debug`.
macro_rules! wrapping_error {
    ($(#[$doc:meta])* pub struct $name:ident: $message:literal;) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            source: Box<dyn std::error::Error + Send + Sync>,
        }

        impl $name {
            /// Wraps the cause: an error, or a message.
            pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
                $name {
                    source: source.into(),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($message)
            }
        }

        impl std::error::Error for $name {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&*self.source)
            }
        }
    };
}

#[cfg(feature = "receiver-axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "receiver-axum")))]
pub mod axum;
mod client_id;
mod data;
mod dedup;
mod delivery;
pub mod endpoint;
mod filter;
mod handler;
mod parse_error;
mod receiver;
mod recent;
#[cfg(feature = "redis")]
mod redis_dedup;
pub mod registration;
mod scan;
mod secret;
#[cfg(any(test, feature = "test-util"))]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;

#[cfg(test)]
mod tests;

pub use client_id::client_id_hash;
pub use data::EventData;
pub use dedup::{
    Claim, ClaimFuture, Claimant, DEAD_LETTER_DEDUP_CAPACITY, DedupError, DedupKey, DedupKind,
    DedupStore, MemoryDedup,
};
pub use delivery::{Delivery, DeliveryItem, WebhookEvent};
pub use filter::{EventFilter, EventFilterError, Wildcard};
pub use handler::{Batch, DeadLetter, DeliveryHandler, HandlerError};
pub use parse_error::DeliveryParseError;
/// The name of a webhook event (`eventType`), generated from the spec: one variant per event
/// of the reference and `Unknown(String)` for a name added later.
pub use pubapi_sdk::types::EventType;
/// The generated payload types the variants of [`EventData`] hold, and the open enums of
/// their fields.
pub use pubapi_sdk::types::{
    CommentRemoveCommentData, CommentSetCommentData, FsAddFileData, FsAddFolderData,
    FsCopyFileData, FsCopyFolderData, FsDeleteFileData, FsDeleteFolderData, FsDeleteFromTrashData,
    FsFolderProjectActivityData, FsLockFileData, FsMoveFileData, FsMoveFolderData,
    FsRestoreFromTrashData, FsUploadLinkData, GroupCreateData, GroupEventData, GroupMembersData,
    GroupOwnerData, GroupUser, LinkDownloadLinkData, LinkEventData, LinkUploadLinkData,
    MetaKeyData, PermissionChangeData, WebhookItemType, WebhookLinkType, WorkflowApprovalTaskData,
    WorkflowAssignee, WorkflowCompletedData, WorkflowCreatedData, WorkflowFirstEntity,
    WorkflowInfo, WorkflowStep,
};
/// The envelope's parts the spec describes as they are (the user who acted; the custom
/// properties), generated: fields the reference does not list are kept in `extra`.
pub use pubapi_sdk::types::{WebhookCustomProperties, WebhookUser};
pub use receiver::{
    DEFAULT_DEDUP_CAPACITY, DEFAULT_DEDUP_WINDOW, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ITEMS,
    DEFAULT_MAX_READ_BYTES, DEFAULT_RECENT_CAPACITY, DEFAULT_RECENT_WINDOW, HandleOutcome,
    Receiver, ReceiverBuildError, ReceiverBuilder,
};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis_dedup::RedisDedup;
pub use registration::{Registration, WebhookExpiry};
pub use secret::{SecretError, WebhookSecret};
