#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]

pub mod act_as;
pub mod ai;
pub mod audit;
mod audit_date;
mod audit_request;
#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub mod blocking;
pub mod client;
pub mod error;
pub mod events;
pub mod fleet;
mod gateway;
pub mod identity;
pub mod limits;
pub mod path;
pub mod registration;
mod request;
pub mod request_id;
mod retry_after;
mod rng;
pub mod telemetry;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;
pub mod token;
pub mod transport;
pub mod waiter;
pub mod webhook;

pub use act_as::ActAs;
pub use client::{BuildError, Client, ClientBuilder};
pub use error::Error;
pub use fleet::Fleet;
pub use limits::{Budget, LimitClass, Limits, Pacing, Quota};
pub use request::retry::{RetryBudget, RetryConfig};
/// For a [`TokenSource`] that calls the token endpoint: its flow, its limits and a pacer
/// that keeps them.
pub use request::token_endpoint::{
    TokenFlow, TokenLimits, TokenPacer, TokenPacingError, send_token_request,
};
pub use request_id::RequestId;
pub use token::{SecretToken, TokenSource};
pub use transport::Transport;

/// The traits a caller needs: the generated operations on `client.sdk()` (one trait per area
/// of the API) and `.next()` on the SDK's streams.
pub mod prelude {
    /// `.next()` on the SDK's streams (event streams, report events, search results).
    pub use futures_util::StreamExt;
    pub use pubapi_sdk::prelude::{
        ClientAgentsExt, ClientAssistantExt, ClientAuditExt, ClientCopilotExt, ClientDocumentAiExt,
        ClientEventsExt, ClientHybridSearchExt, ClientIdentityExt, ClientKnowledgeBasesExt,
        ClientWebhooksExt,
    };
}
