//! Code of yours around every attempt a client sends: an [`Interceptor`] adds headers before
//! an attempt leaves and sees (or replaces) its answer, for every call of every handle, the
//! generated client and the requests built by hand alike.
//!
//! Interceptors run inside the request policy, where they cannot undo it: after the checks,
//! the impersonation and the attempt's slot of the pacer, and before the retry step judges the
//! answer. They cannot send a request themselves, change the token, the request id or the
//! impersonation ([`AttemptHeaders`] refuses the SDK's own headers), or skip a wait: an
//! answer one of them replaces is judged and retried like one from the network, on the same
//! budget, and the retry goes to the request's own URL whatever URL the answer names (so no
//! answer can send the token to another server). Added with [`ClientBuilder::interceptor`](crate::ClientBuilder::interceptor), they
//! run in that order before sending and in the reverse order after (the first added is the
//! outermost, as with tower's layers), inside the attempt's span.
//!
//! A [`Transport`](crate::Transport) is the seam for what needs to wait (a proxy, a recorder
//! writing to disk); an interceptor is for what each attempt should carry or say.
//!
//! ```
//! use pubapi_sdk_ext::interceptor::{Attempt, AttemptHeaders, Interceptor};
//! use pubapi_sdk_ext::{Client, SecretToken};
//! use std::sync::Arc;
//!
//! /// Names the service's tenant on every attempt, and logs each answer's status.
//! #[derive(Debug)]
//! struct Tenant(pubapi_sdk_ext::http::HeaderValue);
//!
//! impl Interceptor for Tenant {
//!     fn before_send(&self, _attempt: &Attempt<'_>, headers: &mut AttemptHeaders<'_>) {
//!         headers
//!             .insert("x-tenant".parse().unwrap(), self.0.clone())
//!             .expect("not a header the sdk sets");
//!     }
//!
//!     fn after_receive(
//!         &self,
//!         attempt: &Attempt<'_>,
//!         answer: &mut pubapi_sdk_ext::reqwest::Result<pubapi_sdk_ext::reqwest::Response>,
//!     ) {
//!         if let Ok(response) = answer {
//!             tracing::info!(operation = attempt.operation(), status = response.status().as_u16());
//!         }
//!     }
//! }
//!
//! let client = Client::builder()
//!     .domain("acme.example.com")
//!     .token(SecretToken::try_from("t0k3n")?)
//!     .interceptor(Arc::new(Tenant("blue".parse()?)))
//!     .build()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::request_id::RequestId;
use http::{HeaderName, HeaderValue};
use pubapi_sdk::operations::Operation;
use std::fmt;

/// Code run around every attempt of a client's calls (see the [module doc](self)). Both
/// methods do nothing unless implemented.
pub trait Interceptor: Send + Sync + fmt::Debug + 'static {
    /// Before the attempt is sent, after its slot of the pacer: may add headers.
    fn before_send(&self, attempt: &Attempt<'_>, headers: &mut AttemptHeaders<'_>) {
        let _ = (attempt, headers);
    }

    /// After the attempt's answer (or failure) arrived, before the retry step judges it: may
    /// look at it or replace it (to inject a fault in a test, say).
    fn after_receive(
        &self,
        attempt: &Attempt<'_>,
        answer: &mut reqwest::Result<reqwest::Response>,
    ) {
        let _ = (attempt, answer);
    }
}

/// What an interceptor knows of the attempt.
#[derive(Debug)]
pub struct Attempt<'a> {
    operation: &'static Operation,
    number: u32,
    request_id: Option<RequestId>,
    /// Room to give more without a change of the methods' signatures.
    _more: std::marker::PhantomData<&'a ()>,
}

impl Attempt<'_> {
    /// The operation's id, such as `listAgents`.
    pub fn operation(&self) -> &'static str {
        self.operation.id
    }

    /// The operation as the spec describes it (method, path template, limit class, ...).
    pub fn operation_details(&self) -> &'static Operation {
        self.operation
    }

    /// Which attempt of the call this is: 1 for the first.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The call's request id (the same on every attempt).
    pub fn request_id(&self) -> Option<RequestId> {
        self.request_id.clone()
    }
}

/// The headers of an attempt, as an interceptor may change them: every header but those the
/// SDK sets itself (the token, the request id, impersonation, the body's framing, the trace
/// context), which it can neither read nor write.
pub struct AttemptHeaders<'a>(pub(crate) &'a mut http::HeaderMap);

impl AttemptHeaders<'_> {
    /// Sets `name` to `value`, replacing what it had.
    ///
    /// # Errors
    /// [`ReservedHeader`] for a header the SDK sets itself; nothing is changed.
    pub fn insert(&mut self, name: HeaderName, value: HeaderValue) -> Result<(), ReservedHeader> {
        check(&name)?;
        self.0.insert(name, value);
        Ok(())
    }

    /// Adds `value` to `name`'s values.
    ///
    /// # Errors
    /// [`ReservedHeader`] for a header the SDK sets itself; nothing is changed.
    pub fn append(&mut self, name: HeaderName, value: HeaderValue) -> Result<(), ReservedHeader> {
        check(&name)?;
        self.0.append(name, value);
        Ok(())
    }

    /// Removes `name`.
    ///
    /// # Errors
    /// [`ReservedHeader`] for a header the SDK sets itself; nothing is changed.
    pub fn remove(&mut self, name: &HeaderName) -> Result<(), ReservedHeader> {
        check(name)?;
        self.0.remove(name);
        Ok(())
    }

    /// `name`'s first value; `None` for a header the SDK sets itself.
    pub fn get(&self, name: &HeaderName) -> Option<&HeaderValue> {
        check(name).ok()?;
        self.0.get(name)
    }
}

impl fmt::Debug for AttemptHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: values may be personal.
        f.debug_list()
            .entries(self.0.keys().filter(|name| check(name).is_ok()))
            .finish()
    }
}

fn check(name: &HeaderName) -> Result<(), ReservedHeader> {
    if crate::options::is_reserved(name) || name == "traceparent" || name == "tracestate" {
        return Err(ReservedHeader { name: name.clone() });
    }
    Ok(())
}

/// A header the SDK sets itself, which an interceptor may not read or change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedHeader {
    /// The header.
    pub name: HeaderName,
}

impl fmt::Display for ReservedHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the sdk sets the header {} itself", self.name)
    }
}

impl std::error::Error for ReservedHeader {}

/// Runs `interceptors`' `before_send` in order on `request`'s headers.
pub(crate) fn before_send(
    interceptors: &[std::sync::Arc<dyn Interceptor>],
    operation: &'static Operation,
    number: u32,
    request_id: Option<RequestId>,
    request: &mut reqwest::Request,
) {
    let attempt = Attempt {
        operation,
        number,
        request_id,
        _more: std::marker::PhantomData,
    };
    let mut headers = AttemptHeaders(request.headers_mut());
    for interceptor in interceptors {
        interceptor.before_send(&attempt, &mut headers);
    }
}

/// Runs `interceptors`' `after_receive` in the reverse order on `answer`.
pub(crate) fn after_receive(
    interceptors: &[std::sync::Arc<dyn Interceptor>],
    operation: &'static Operation,
    number: u32,
    request_id: Option<RequestId>,
    answer: &mut reqwest::Result<reqwest::Response>,
) {
    let attempt = Attempt {
        operation,
        number,
        request_id,
        _more: std::marker::PhantomData,
    };
    for interceptor in interceptors.iter().rev() {
        interceptor.after_receive(&attempt, answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_own_headers_can_be_neither_read_nor_changed() {
        let mut map = http::HeaderMap::new();
        map.insert(
            http::header::AUTHORIZATION,
            "Bearer secret".parse().unwrap(),
        );
        let mut headers = AttemptHeaders(&mut map);
        let value: HeaderValue = "x".parse().unwrap();
        for name in [
            "authorization",
            "x-request-id",
            "x-service-act-as",
            "x-service-act-as-email",
            "traceparent",
            "content-length",
        ] {
            let name: HeaderName = name.parse().unwrap();
            let refused = Err(ReservedHeader { name: name.clone() });
            assert_eq!(headers.insert(name.clone(), value.clone()), refused);
            assert_eq!(headers.append(name.clone(), value.clone()), refused);
            assert_eq!(headers.remove(&name), refused);
            assert_eq!(headers.get(&name), None);
        }
        assert!(!format!("{headers:?}").contains("authorization"));
        assert_eq!(map.len(), 1);
        assert_eq!(map[http::header::AUTHORIZATION], "Bearer secret");
    }
}
