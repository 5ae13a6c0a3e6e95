#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]
// With some areas left out (features `ai`, `audit`, `events`, `webhooks`), helpers only those
// areas use go unused: allowed there, as tokio does for its features; a build with every area
// (CI's clippy) still finds dead code.
#![cfg_attr(
    not(all(
        feature = "ai",
        feature = "audit",
        feature = "events",
        feature = "webhooks"
    )),
    allow(dead_code, unused_imports, unused_variables, unreachable_pub)
)]

pub mod act_as;
#[cfg(feature = "ai")]
#[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
pub mod ai;
pub mod api;
#[cfg(feature = "audit")]
#[cfg_attr(docsrs, doc(cfg(feature = "audit")))]
pub mod audit;
#[cfg(feature = "audit")]
mod audit_date;
#[cfg(feature = "audit")]
mod audit_request;
#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub mod blocking;
pub mod client;
mod digest;
#[cfg(test)]
mod display_walk;
pub mod error;
#[cfg(feature = "events")]
#[cfg_attr(docsrs, doc(cfg(feature = "events")))]
pub mod events;
pub mod fleet;
mod fleet_error;
mod gateway;
pub mod interceptor;
pub mod limits;
mod loopback;
pub mod options;
pub mod password_grant;
pub mod path;
mod request;
pub mod request_id;
mod retry_after;
mod rng;
#[cfg(test)]
mod scratch;
pub mod telemetry;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;
pub mod time;
pub mod token;
pub mod transport;
mod verdict;
pub mod waiter;
#[cfg(feature = "webhooks")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
pub mod webhook;

pub use act_as::ActAs;
pub use client::{BuildError, ClientBuilder};
pub use error::Error;
pub use fleet::Fleet;
pub use limits::{Budget, LimitClass, Limits, Pacing, Quota};
pub use password_grant::{GrantError, PasswordGrant};
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
/// The `jiff` crate: the [`jiff::Timestamp`] instants the time accessors return
/// ([`time`]), and its formatting and arithmetic.
pub use jiff;
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

#[cfg(feature = "audit")]
use api::Audit;
#[cfg(feature = "events")]
use api::Events;
use api::Identity;
#[cfg(feature = "webhooks")]
use api::Webhooks;
#[cfg(feature = "ai")]
use api::{Agents, Assistant, Copilot, Documents, KnowledgeBases, Search};
use options::CallOptions;
use pubapi_sdk::hooks::Inner;
use request::policy::{Policy, Shared};
use std::fmt;
use std::sync::Arc;

/// A client of the Content Platform Public API for one token.
///
/// Every operation is reached through a handle per area (`agents()`, `assistant()`,
/// `copilot()`, `documents()`, `knowledge_bases()`, `search()`, `audit()`, `webhooks()`,
/// `events()`, `identity()`), whose methods return `Result<_, Error>`; the generated client
/// stays reachable through one escape hatch, [`Client::sdk`]. Each request passes the client's
/// policy: the reference's checks, bearer token, impersonation, rate-limit pacing shared by
/// all clones, throttle handling and retries, tracing. Clones share the token, the pacer and
/// the retry budget.
///
/// ```no_run
/// use pubapi_sdk_ext::{ActAs, Client, SecretToken};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::builder()
///     .domain("acme.example.com")
///     .token(SecretToken::try_from(std::env::var("PUBAPI_TOKEN")?)?)
///     .build()?;
/// let me = client.identity().whoami().await?;
/// println!("token of {:?}", me.username);
///
/// // An immutable view that acts as another user (admin tokens only).
/// let bob = client.act_as(ActAs::username("bob")?);
/// let hooks = bob.webhooks().list().await?;
/// println!("bob has {} webhooks", hooks.len());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    sdk: pubapi_sdk::Client,
    shared: Arc<Shared>,
    act_as: Option<ActAs>,
    options: Option<Arc<CallOptions>>,
}

impl Client {
    /// Starts building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The generated client: the escape hatch to every operation as progenitor builds it
    /// (`client.sdk().list_webhooks().send().await?`). Its requests pass this client's
    /// policy like the area handles' (token, impersonation, pacing, retries and the checks
    /// of the reference), and `?` turns its errors into [`crate::Error`]. Prefer the area
    /// handles (`client.agents()`, `client.webhooks()`, `client.audit()`, ...), which also
    /// wait, page and stream.
    pub fn sdk(&self) -> &pubapi_sdk::Client {
        &self.sdk
    }

    /// The base URL, e.g. `https://acme.example.com/pubapi`.
    pub fn base_url(&self) -> &str {
        progenitor_client::ClientInfo::baseurl(&self.sdk)
    }

    /// A view of this client whose calls run as `who` (`X-Service-Act-As` for a username,
    /// `X-Service-Act-As-Email` for an e-mail address; exactly one is sent). The token must be
    /// an admin's. The view shares the token's pacer: impersonated calls count against the
    /// token's own budget. `self` is unchanged, so one client can serve many users.
    pub fn act_as(&self, who: ActAs) -> Client {
        self.view(Some(who), self.options.clone())
    }

    /// A view of this client that does not impersonate anyone.
    pub fn without_act_as(&self) -> Client {
        self.view(None, self.options.clone())
    }

    /// A view of this client whose calls take `options` (retries, timeouts, request id, extra
    /// headers; see [`options`]): every area handle, request builder and the generated
    /// client of the view. It shares the token, the pacer, the retry budget and whom it acts
    /// as with `self`; on a view that has options already, what `options` sets is put over
    /// them (headers are added).
    ///
    /// ```
    /// use pubapi_sdk_ext::options::CallOptions;
    /// use pubapi_sdk_ext::{Client, SecretToken};
    ///
    /// let client = Client::builder()
    ///     .domain("acme.example.com")
    ///     .token(SecretToken::try_from("t0k3n")?)
    ///     .build()?;
    /// // An AI question sent once, whatever the client's retries.
    /// let once = client.with_options(CallOptions::new().retries(0))?;
    /// assert_eq!(once.call_options().and_then(|o| o.max_attempts()), Some(1));
    ///
    /// // A header the SDK sets itself is refused before anything is sent.
    /// let token = CallOptions::new().header("authorization".parse()?, "x".parse()?);
    /// assert!(client.with_options(token).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CallOptionsError`](options::CallOptionsError) for a header the SDK sets itself or a
    /// timeout of zero.
    pub fn with_options(&self, options: CallOptions) -> Result<Client, options::CallOptionsError> {
        options.check()?;
        let options = match &self.options {
            Some(older) => older.merged(options),
            None => options,
        };
        Ok(self.view(self.act_as.clone(), Some(Arc::new(options))))
    }

    /// The options this view's calls take ([`Client::with_options`]), if any.
    pub fn call_options(&self) -> Option<&CallOptions> {
        self.options.as_deref()
    }

    /// Whom this view acts as.
    pub fn acting_as(&self) -> Option<&ActAs> {
        self.act_as.as_ref()
    }

    /// The remaining budget of a limit class, as the token's pacer sees it (with the
    /// gateway's own counters from the last response that had them). The pacer is shared by
    /// every client of the same token on the same domain in the process (whatever the spelling of its base URL), their clones and act-as
    /// views (unless built with [`ClientBuilder::isolated_budget`]), so this counts their
    /// requests too.
    ///
    /// ```
    /// use pubapi_sdk_ext::{Client, LimitClass, SecretToken};
    ///
    /// let client = Client::builder()
    ///     .domain("acme.example.com")
    ///     .token(SecretToken::try_from("t0k3n")?)
    ///     .build()?;
    /// // Before the first request: the whole day is left.
    /// let quota = client.quota(LimitClass::General);
    /// assert_eq!((quota.per_day, quota.remaining_today), (Some(1000), Some(1000)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(&self, class: LimitClass) -> Quota {
        self.shared.limiter().quota(class)
    }

    /// Sends a request built by hand (CSV reports) through the same policy as the generated
    /// operations: pacing, token, impersonation, retries, accounted to `operation`.
    pub(crate) async fn execute(
        &self,
        request: reqwest::Request,
        operation: &'static pubapi_sdk::operations::Operation,
    ) -> reqwest::Result<reqwest::Response> {
        Policy::new(
            self.shared.clone(),
            self.act_as.clone(),
            self.options.clone(),
        )
        .run(self.http(), request, operation)
        .await
    }

    /// The reqwest client (redirects not followed) for requests built by hand.
    pub(crate) fn http(&self) -> &reqwest::Client {
        progenitor_client::ClientInfo::client(&self.sdk)
    }

    fn view(&self, act_as: Option<ActAs>, options: Option<Arc<CallOptions>>) -> Client {
        let policy = Policy::new(self.shared.clone(), act_as.clone(), options.clone());
        let sdk = pubapi_sdk::Client::new_with_client(
            self.base_url(),
            self.http().clone(),
            Inner::with_policy(Arc::new(policy)),
        );
        Client {
            sdk,
            shared: self.shared.clone(),
            act_as,
            options,
        }
    }
}

/// The handles of the areas of the API, one accessor each: every way into an area starts here
/// (the handles are in [`api`]).
impl Client {
    api::area_accessors!("as a stream");
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url())
            .field("act_as", &self.act_as)
            .field("options", &self.options)
            .field("shared", &self.shared)
            .finish()
    }
}

/// The traits a caller needs: the generated operations on `client.sdk()` (one trait per area
/// of the API) and `.next()` on the SDK's streams.
pub mod prelude {
    /// The trait of the SDK's streams, for functions that take one.
    pub use futures_util::Stream;
    /// `.next()` on the SDK's streams (event streams, report events, search results).
    pub use futures_util::StreamExt;
    #[cfg(feature = "audit")]
    pub use pubapi_sdk::prelude::ClientAuditExt;
    #[cfg(feature = "events")]
    pub use pubapi_sdk::prelude::ClientEventsExt;
    pub use pubapi_sdk::prelude::ClientIdentityExt;
    #[cfg(feature = "webhooks")]
    pub use pubapi_sdk::prelude::ClientWebhooksExt;
    #[cfg(feature = "ai")]
    pub use pubapi_sdk::prelude::{
        ClientAgentsExt, ClientAssistantExt, ClientCopilotExt, ClientDocumentAiExt,
        ClientHybridSearchExt, ClientKnowledgeBasesExt,
    };
}
