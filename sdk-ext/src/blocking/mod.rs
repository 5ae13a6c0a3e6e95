//! A blocking client (feature `blocking`): the same handles and types as the async
//! [`Client`](crate::Client), each call blocking the calling thread, for admin tools and
//! scripts that call a handful of operations and want no async runtime.
//!
//! ```no_run
//! use pubapi_sdk_ext::ai::AiWait;
//! use pubapi_sdk_ext::{Client, SecretToken};
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder()
//!     .domain("acme.example.com")
//!     .token(SecretToken::try_from(std::env::var("PUBAPI_TOKEN")?)?)
//!     .build_blocking()?;
//! let answer = client.agents().ask_and_wait("agent-1", "Summarise Q3", AiWait::default())?;
//! println!("{}", answer.result.response_text.unwrap_or_default());
//! # Ok(()) }
//! ```
//!
//! It is built by the same [`ClientBuilder`], with
//! [`build_blocking`](crate::ClientBuilder::build_blocking) instead of `build`, and wraps an
//! async client: every request passes the same policy (checks, token, impersonation, pacing
//! shared with every client of the token in the process, retries). Handles have the async
//! client's names (`client.agents()`, `client.audit()`, `client.events()`,
//! `client.webhooks()`, ...) and methods, and return the same types; what is a
//! [`Stream`](futures_util::Stream) there is an [`Iterator`] here ([`Iter`], [`EventStream`],
//! [`CsvRows`]).
//!
//! # How it runs, and its limits
//! - The client owns a small tokio runtime (one worker thread, shared by its clones and
//!   [`act_as`](Client::act_as) views) and runs each call on it with `block_on`. The worker
//!   keeps the connections and an event stream's lease alive between calls.
//! - **Not inside an async runtime.** On a thread of a tokio runtime (an async task,
//!   `spawn_blocking`, inside `Runtime::enter`) blocking would stall that runtime or panic, so
//!   the client refuses instead: [`build_blocking`](crate::ClientBuilder::build_blocking)
//!   returns [`BuildError::InAsyncContext`], and a call returns [`Error::InAsyncContext`]
//!   (inside its usual error type: [`WaitError::Failed`] for a wait, with `resume_at` in a
//!   [`ReadError`], [`CsvError::Api`]; a checkpoint save's [`FleetError`] is of kind
//!   `Unavailable` and says so) with nothing sent; an iterator hands that error out once,
//!   then ends. Use the async client there. Dropping a blocking client inside a runtime does not panic: its runtime
//!   is shut down in the background.
//! - **Waits block for as long as they wait**: an AI answer up to its [`AiWait`] deadline
//!   (10 minutes by default), an audit job polled at least 2 minutes apart up to its
//!   [`AuditWait`] deadline (1 hour by default), and [`EventStream`]'s `next()` sleeps the
//!   polling interval (5 minutes or more) once it has caught up. Run them on a thread of their
//!   own when something else must go on.
//!
//! [`AiWait`]: crate::ai::AiWait
//! [`AuditWait`]: crate::audit::AuditWait

/// Writes a blocking handle from the async handle of the same area: the struct, and for each
/// listed method, one of the same name and arguments that runs the async handle's method on
/// the client's runtime. `=> call` for a method whose future gives a `Result`, `=> iter` for
/// one that gives a stream (read as an [`Iter`]). Methods that do more (wrap what comes back,
/// start where a read resumes) are written by hand in a second `impl` block of the handle.
macro_rules! blocking_handle {
    (
        $(#[$attr:meta])*
        $handle:ident = $accessor:ident {
            $(
                $(#[$method_attr:meta])*
                fn $method:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty => $run:ident;
            )*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy)]
        pub struct $handle<'a> {
            pub(super) client: &'a $crate::blocking::Client,
        }

        impl $handle<'_> {
            $(
                $(#[$method_attr])*
                pub fn $method(&self $(, $arg: $ty)*) -> $ret {
                    // The copilot's accessor is deprecated; its blocking mirror says so itself.
                    #[allow(deprecated)]
                    let handle = self.client.inner.$accessor();
                    self.client.$run(handle.$method($($arg),*))
                }
            )*
        }
    };
}

/// `Debug` for a blocking wrapper: `$name` and the async value it wraps (`inner`); the
/// runtime is left out.
macro_rules! debug_inner {
    ($wrapper:ident, $name:literal) => {
        impl std::fmt::Debug for $wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct($name)
                    .field("inner", &self.inner)
                    .finish_non_exhaustive()
            }
        }
    };
}

#[cfg(feature = "ai")]
mod ai;
#[cfg(feature = "audit")]
mod audit;
#[cfg(feature = "events")]
mod events;
mod identity;
#[cfg(feature = "webhooks")]
mod webhooks;

#[cfg(feature = "ai")]
pub use ai::{Agents, Assistant, Copilot, Documents, KnowledgeBases, Search};
#[cfg(feature = "audit")]
pub use audit::{Audit, CsvReport, CsvRows, FinishedReport};
#[cfg(feature = "events")]
pub use events::{EventStream, Events};
pub use identity::Identity;
#[cfg(feature = "webhooks")]
pub use webhooks::Webhooks;

use crate::act_as::ActAs;
#[cfg(feature = "audit")]
use crate::audit::{CsvError, ReadError};
use crate::client::{BuildError, ClientBuilder};
use crate::error::Error;
use crate::fleet::{FleetError, FleetErrorKind};
use crate::limits::{LimitClass, Quota};
use crate::waiter::WaitError;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

impl ClientBuilder {
    /// Builds a [blocking client](Client): the same settings as [`ClientBuilder::build`],
    /// with a runtime of its own to run each call on (see [the module](crate::blocking)).
    ///
    /// # Errors
    /// The errors of [`ClientBuilder::build`]; [`BuildError::InAsyncContext`] on a thread of
    /// a tokio runtime (use `build()` there); [`BuildError::Runtime`] when the runtime
    /// cannot start.
    #[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
    pub fn build_blocking(self) -> Result<Client, BuildError> {
        if in_async_context() {
            return Err(BuildError::InAsyncContext);
        }
        let runtime = Runtime::start()?;
        // Built inside its runtime: whatever the client sets up as it is built (a fleet
        // store's tasks) belongs to the runtime that runs its calls.
        let inner = runtime.enter(|| self.build())?;
        Ok(Client {
            inner,
            runtime: Arc::new(runtime),
        })
    }
}

/// A blocking client of the Content Platform Public API for one token: built with
/// [`ClientBuilder::build_blocking`], cheap to clone (clones share the token, the pacer and
/// the runtime).
///
/// Every operation is reached through a handle per area, as on the async
/// [`Client`](crate::Client): `agents()`, `assistant()`, `copilot()`, `documents()`,
/// `knowledge_bases()`, `search()`, `audit()`, `webhooks()`, `events()`, `identity()`. The
/// generated client stays reachable through [`Client::sdk`] with [`Client::block_on`].
#[derive(Clone)]
pub struct Client {
    inner: crate::Client,
    runtime: Arc<Runtime>,
}

debug_inner!(Client, "blocking::Client");

impl Client {
    /// A view of this client whose calls run as `who` (see
    /// [`Client::act_as`](crate::Client::act_as)); it shares this client's runtime.
    pub fn act_as(&self, who: ActAs) -> Client {
        self.with(self.inner.act_as(who))
    }

    /// A view of this client that does not impersonate anyone.
    pub fn without_act_as(&self) -> Client {
        self.with(self.inner.without_act_as())
    }

    /// Whom this view acts as.
    pub fn acting_as(&self) -> Option<&ActAs> {
        self.inner.acting_as()
    }

    /// A view of this client whose calls take `options` (see
    /// [`Client::with_options`](crate::Client::with_options)); it shares this client's
    /// runtime.
    ///
    /// # Errors
    /// [`CallOptionsError`](crate::options::CallOptionsError) for a header the SDK sets itself
    /// or a timeout of zero.
    pub fn with_options(
        &self,
        options: crate::options::CallOptions,
    ) -> Result<Client, crate::options::CallOptionsError> {
        Ok(self.with(self.inner.with_options(options)?))
    }

    /// The base URL, e.g. `https://acme.example.com/pubapi`.
    pub fn base_url(&self) -> &str {
        self.inner.base_url()
    }

    /// The remaining budget of a limit class, as the token's pacer sees it (see
    /// [`Client::quota`](crate::Client::quota)).
    pub fn quota(&self, class: LimitClass) -> Quota {
        self.inner.quota(class)
    }

    /// The generated client, the escape hatch to every operation as progenitor builds it;
    /// run its futures with [`Client::block_on`]. Its requests pass this client's policy.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::prelude::*;
    ///
    /// # fn run(client: pubapi_sdk_ext::blocking::Client) -> Result<(), pubapi_sdk_ext::Error> {
    /// let hooks = client.block_on(client.sdk().list_webhooks().send())??;
    /// println!("{} webhooks", hooks.len());
    /// # Ok(()) }
    /// ```
    pub fn sdk(&self) -> &pubapi_sdk::Client {
        self.inner.sdk()
    }

    /// Runs `future` on this client's runtime and returns its output.
    ///
    /// # Errors
    /// [`Error::InAsyncContext`] on a thread of a tokio runtime; `future` is dropped unpolled.
    pub fn block_on<F: Future>(&self, future: F) -> Result<F::Output, Error> {
        self.runtime.block_on(future).ok_or(Error::InAsyncContext)
    }

    /// Runs one call of the async client.
    fn call<T, E: Refused>(&self, future: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        self.runtime.call(future)
    }

    /// A stream of the async client, read as an iterator on this client's runtime.
    fn iter<T, E>(&self, stream: BoxStream<'static, Result<T, E>>) -> Iter<T, E> {
        Iter::new(stream, self.runtime.clone(), 0)
    }

    fn with(&self, inner: crate::Client) -> Client {
        Client {
            inner,
            runtime: self.runtime.clone(),
        }
    }
}

/// The handles of the areas of the API, one accessor each, as on the async client.
impl Client {
    crate::api::area_accessors!("one at a time");
}

/// Whether this thread belongs to a tokio runtime, where `block_on` would panic (inside an
/// async task) or stall the runtime.
fn in_async_context() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// The runtime a blocking client owns: one worker thread, so that what runs between calls
/// (pooled connections, an event stream's lease renewal) keeps running.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn start() -> Result<Runtime, BuildError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pubapi-blocking")
            .enable_all()
            .build()
            .map(|runtime| Runtime(Some(runtime)))
            .map_err(|e| BuildError::Runtime(e.to_string()))
    }

    /// Runs `future` to completion; `None`, with nothing run, on a thread of a tokio
    /// runtime.
    fn block_on<F: Future>(&self, future: F) -> Option<F::Output> {
        if in_async_context() {
            return None;
        }
        self.0.as_ref().map(|runtime| runtime.block_on(future))
    }

    /// Runs `future`, or says why not in its own error type.
    fn call<T, E: Refused>(&self, future: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        self.block_on(future)
            .unwrap_or_else(|| Err(E::in_async_context(0)))
    }

    /// Runs `f` with this runtime entered (what it spawns, and what a drop in it spawns, runs
    /// here).
    fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        let _entered = self.0.as_ref().map(tokio::runtime::Runtime::enter);
        f()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            // Dropping a runtime waits for its worker, which a thread of another runtime may
            // not do (tokio panics); there it is left to stop in the background.
            if in_async_context() {
                runtime.shutdown_background();
            } else {
                runtime.shutdown_timeout(Duration::from_secs(1));
            }
        }
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Runtime")
    }
}

/// An error type that can say the blocking client was called inside an async runtime.
trait Refused {
    /// The refusal, `handed_out` items into a sequence (where a read resumes).
    fn in_async_context(handed_out: u64) -> Self;
}

impl Refused for Error {
    fn in_async_context(_: u64) -> Self {
        Error::InAsyncContext
    }
}

impl<E: From<Error>> Refused for WaitError<E> {
    fn in_async_context(_: u64) -> Self {
        WaitError::before_waiting(E::from(Error::InAsyncContext))
    }
}

#[cfg(feature = "audit")]
impl Refused for ReadError {
    fn in_async_context(handed_out: u64) -> Self {
        ReadError {
            resume_at: handed_out,
            error: Error::InAsyncContext,
        }
    }
}

#[cfg(feature = "audit")]
impl Refused for CsvError {
    fn in_async_context(_: u64) -> Self {
        CsvError::Api(Error::InAsyncContext)
    }
}

impl Refused for FleetError {
    fn in_async_context(_: u64) -> Self {
        FleetError {
            kind: FleetErrorKind::Unavailable,
            message: Error::InAsyncContext.to_string(),
        }
    }
}

/// A sequence of the SDK (report events, search results, knowledge bases, a backfill) read
/// one item at a time, each `next()` blocking until the item is there. It ends where the
/// async stream ends; called inside an async runtime it hands out
/// [`Error::InAsyncContext`] once and ends.
pub struct Iter<T, E> {
    stream: Option<BoxStream<'static, Result<T, E>>>,
    runtime: Arc<Runtime>,
    /// Where the sequence started (an audit report's offset).
    start: u64,
    handed_out: u64,
}

impl<T, E> Iter<T, E> {
    fn new(stream: BoxStream<'static, Result<T, E>>, runtime: Arc<Runtime>, start: u64) -> Self {
        Iter {
            stream: Some(stream),
            runtime,
            start,
            handed_out: 0,
        }
    }
}

impl<T, E: Refused> Iterator for Iter<T, E> {
    type Item = Result<T, E>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = self.stream.as_mut()?;
        match self.runtime.block_on(stream.next()) {
            Some(item) => {
                self.handed_out += u64::from(item.is_some());
                item
            }
            None => {
                self.stream = None;
                Some(Err(E::in_async_context(
                    self.start.saturating_add(self.handed_out),
                )))
            }
        }
    }
}

impl<T, E> Drop for Iter<T, E> {
    fn drop(&mut self) {
        // What the stream spawns as it is dropped belongs to the runtime it ran on.
        let stream = self.stream.take();
        self.runtime.enter(|| drop(stream));
    }
}

impl<T, E> fmt::Debug for Iter<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("handed_out", &self.handed_out)
            .field("ended", &self.stream.is_none())
            .finish_non_exhaustive()
    }
}
