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
mod verdict;
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

// What a caller names without a second dependency: the generated types and client, and the
// foreign types in this crate's public signatures, at the versions this crate uses.
/// The byte buffer of raw bodies ([`error::RawBody`], webhook dead letters).
pub use bytes::Bytes;
/// The boxed stream of reports, search results, knowledge bases and backfills.
pub use futures_util::stream::BoxStream;
/// The `http` crate: header maps, names and values, status codes in this crate's
/// signatures (a webhook receiver's headers, [`ActAs::header_name`], ...).
pub use http;
/// The generated crate behind [`Client::sdk`]: its `Client`, the builders its methods return
/// (`sdk::builder`), `sdk::ResponseValue` and `sdk::Error` of their `.send()`, the
/// operations table.
pub use pubapi_sdk as sdk;
/// The boxed future the SDK's traits return ([`Transport`], [`fleet::FleetBudget`],
/// [`fleet::CheckpointStore`], [`webhook::DedupStore`]).
pub use pubapi_sdk::hooks::BoxFuture;
/// The request and response types of the API, generated from the spec
/// (`pubapi_sdk::types`): `LoginsAuditRequest`, `HybridSearchRequest`, `Whoami`, ...
pub use pubapi_sdk::types;
/// The `redis` crate (feature `redis`): a [`webhook::RedisDedup`] is made from a
/// `redis::aio::ConnectionManager`.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis;
/// The `reqwest` crate: a [`Transport`] sends a `reqwest::Request` with a `reqwest::Client`.
pub use reqwest;
/// The `serde_json` crate: the open JSON values in events, reports and answers
/// (`serde_json::Value`, `serde_json::Map`).
pub use serde_json;

/// The traits a caller needs: the generated operations on `client.sdk()` (one trait per area
/// of the API) and `.next()` on the SDK's streams.
pub mod prelude {
    /// The trait of the SDK's streams, for functions that take one.
    pub use futures_util::Stream;
    /// `.next()` on the SDK's streams (event streams, report events, search results).
    pub use futures_util::StreamExt;
    pub use pubapi_sdk::prelude::{
        ClientAgentsExt, ClientAssistantExt, ClientAuditExt, ClientCopilotExt, ClientDocumentAiExt,
        ClientEventsExt, ClientHybridSearchExt, ClientIdentityExt, ClientKnowledgeBasesExt,
        ClientWebhooksExt,
    };
}
