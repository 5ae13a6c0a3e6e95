//! A webhook endpoint refused before its registration ([`EndpointRefused`], why in
//! [`EndpointProblem`]): the errors of the check in
//! [`webhook::endpoint`](crate::webhook::endpoint), which
//! [`InputError::Endpoint`](super::InputError::Endpoint) carries.

use std::fmt;

/// An endpoint refused before it was registered; nothing was sent to the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRefused {
    /// The endpoint checked, `host:port`.
    pub endpoint: String,
    /// Why the platform could not deliver to it.
    pub problem: EndpointProblem,
}

/// Why an endpoint was refused ([`EndpointRefused`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndpointProblem {
    /// Its certificate is self-signed (its own issuer), which the platform refuses.
    SelfSigned,
    /// Its certificate is signed by an authority the public roots do not hold: a private or
    /// company CA, or a chain the endpoint does not send whole.
    UnknownIssuer,
    /// Its certificate has expired.
    Expired {
        /// When, if the certificate said.
        not_after: Option<jiff::Timestamp>,
    },
    /// Its certificate is not valid yet.
    NotYetValid {
        /// From when, if the certificate said.
        not_before: Option<jiff::Timestamp>,
    },
    /// Its certificate is not for the URL's host.
    WrongName {
        /// The host of the URL.
        host: String,
        /// The names the certificate is for (empty when it did not say).
        names: Vec<String>,
    },
    /// Another certificate problem (a bad signature, an algorithm the check does not take, a
    /// CA certificate serving as the endpoint's own).
    Certificate {
        /// What is wrong, in the TLS library's words.
        reason: String,
    },
    /// The handshake failed before the certificate could be checked: the endpoint does not
    /// speak TLS on that port (plain `http`?), or ended the handshake.
    Handshake {
        /// What happened, in the TLS library's words.
        reason: String,
    },
    /// The endpoint cannot be reached: its host has no address, the connection is refused,
    /// or nothing answered within [`CHECK_TIMEOUT`](crate::webhook::endpoint::CHECK_TIMEOUT).
    Unreachable {
        /// What happened.
        reason: String,
    },
}

impl fmt::Display for EndpointRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "webhook endpoint {} refused before registering it: {}; the platform delivers only \
             over https with a certificate a public authority signed (skip_endpoint_check() \
             registers it anyway)",
            self.endpoint, self.problem
        )
    }
}

impl std::error::Error for EndpointRefused {}

impl fmt::Display for EndpointProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointProblem::SelfSigned => f.write_str("its certificate is self-signed"),
            EndpointProblem::UnknownIssuer => f.write_str(
                "its certificate is signed by an authority the public roots do not hold \
                 (a private or company CA, or an incomplete chain)",
            ),
            EndpointProblem::Expired {
                not_after: Some(at),
            } => write!(f, "its certificate expired at {at}"),
            EndpointProblem::Expired { not_after: None } => {
                f.write_str("its certificate has expired")
            }
            EndpointProblem::NotYetValid {
                not_before: Some(at),
            } => write!(f, "its certificate is valid only from {at}"),
            EndpointProblem::NotYetValid { not_before: None } => {
                f.write_str("its certificate is not valid yet")
            }
            EndpointProblem::WrongName { host, names } if names.is_empty() => {
                write!(f, "its certificate is not for {host}")
            }
            EndpointProblem::WrongName { host, names } => write!(
                f,
                "its certificate is for {}, not for {host}",
                names.join(", ")
            ),
            EndpointProblem::Certificate { reason } => {
                write!(f, "its certificate is refused: {reason}")
            }
            EndpointProblem::Handshake { reason } => {
                write!(f, "the TLS handshake failed: {reason}")
            }
            EndpointProblem::Unreachable { reason } => write!(f, "it cannot be reached: {reason}"),
        }
    }
}
