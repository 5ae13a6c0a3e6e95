//! The extension point every generated request passes through.
//!
//! progenitor calls `ClientHooks::exec` for each request, and the impl must live in this crate
//! (the orphan rule). It delegates to a [`RequestPolicy`] carried in the client's inner type, so
//! `pubapi-sdk-ext` (or any caller) can add authentication, impersonation, rate-limit pacing,
//! retries and tracing without forking the generated code. Without a policy, requests go out
//! as they are.

use crate::operations::Operation;
use progenitor_client::{ClientHooks, OperationInfo};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future, as returned by [`RequestPolicy::execute`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What happens to every request of a [`Client`](crate::Client): implemented by
/// `pubapi-sdk-ext`.
///
/// `execute` receives the finished request and the spec's metadata of its operation, and
/// returns the response the generated method decodes. A policy may send the request several
/// times (retries), wait before sending (pacing), add headers, or answer without sending; it
/// must never follow redirects itself.
pub trait RequestPolicy: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` for `operation` through `client`.
    fn execute<'a>(
        &'a self,
        client: &'a reqwest::Client,
        request: reqwest::Request,
        operation: &'static Operation,
    ) -> BoxFuture<'a, reqwest::Result<reqwest::Response>>;
}

/// The inner value every generated [`Client`](crate::Client) carries: an optional policy.
#[derive(Clone, Default)]
pub struct Inner {
    policy: Option<Arc<dyn RequestPolicy>>,
}

impl Inner {
    /// An inner value that sends every request through `policy`.
    pub fn with_policy(policy: Arc<dyn RequestPolicy>) -> Self {
        Self {
            policy: Some(policy),
        }
    }

    /// The installed policy, if any.
    pub fn policy(&self) -> Option<&Arc<dyn RequestPolicy>> {
        self.policy.as_ref()
    }
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("policy", &self.policy)
            .finish()
    }
}

impl ClientHooks<Inner> for crate::Client {
    async fn exec(
        &self,
        request: reqwest::Request,
        info: &OperationInfo,
    ) -> reqwest::Result<reqwest::Response> {
        use progenitor_client::ClientInfo;
        let operation = crate::operations::by_method_name(info.operation_id);
        match (self.inner().policy(), operation) {
            (Some(policy), Some(operation)) => {
                policy.execute(self.client(), request, operation).await
            }
            _ => self.client().execute(request).await,
        }
    }
}
