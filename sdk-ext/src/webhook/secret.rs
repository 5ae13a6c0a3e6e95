//! The shared secret a webhook registration echoes in the `authorization` header.

use std::fmt;
use std::str::FromStr;

use crate::digest::{equal_in_constant_time, sha256};

/// The value registered as a webhook's `authHeader`, which the platform sends back verbatim
/// in the `authorization` header of every delivery (reference 2.9, 5.8).
///
/// Only the SHA-256 digest of the value is kept, so the secret never sits in memory longer
/// than it takes to build this, and a check costs the same whatever the received value's
/// length or content ([`WebhookSecret::matches`]). `Debug` prints no part of it.
///
/// Use a high-entropy value (128 bits or more, such as 32 random hex characters).
///
/// ```
/// use pubapi_sdk_ext::webhook::WebhookSecret;
///
/// let secret = WebhookSecret::new("Bearer 4f1c2e9a7b3d5f60a1b2c3d4e5f60718")?;
/// assert_eq!(format!("{secret:?}"), "WebhookSecret(** redacted **)");
/// assert!(secret.matches(b"Bearer 4f1c2e9a7b3d5f60a1b2c3d4e5f60718"));
/// assert!(!secret.matches(b"Bearer guess"));
/// # Ok::<(), pubapi_sdk_ext::webhook::SecretError>(())
/// ```
#[derive(Clone)]
pub struct WebhookSecret {
    digest: [u8; 32],
}

impl WebhookSecret {
    /// Takes the registered `authHeader` value.
    ///
    /// # Errors
    ///
    /// [`SecretError`] when the value is empty, starts or ends with whitespace (HTTP strips
    /// it, so a delivery could never match), or holds a control character (it could not be
    /// sent in a header).
    pub fn new(value: impl AsRef<str>) -> Result<Self, SecretError> {
        let value = value.as_ref();
        if value.is_empty() {
            return Err(SecretError::Empty);
        }
        if value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']) {
            return Err(SecretError::SurroundingWhitespace);
        }
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(SecretError::ControlCharacter);
        }
        Ok(WebhookSecret {
            digest: sha256(value.as_bytes()),
        })
    }

    /// Whether `received` (the raw header value) is this secret, in constant time.
    #[must_use]
    pub fn matches(&self, received: &[u8]) -> bool {
        self.matches_digest(&sha256(received))
    }

    /// Constant-time comparison against the digest of a received value.
    pub(crate) fn matches_digest(&self, received_digest: &[u8; 32]) -> bool {
        equal_in_constant_time(&self.digest, received_digest)
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(** redacted **)")
    }
}

impl FromStr for WebhookSecret {
    type Err = SecretError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        WebhookSecret::new(value)
    }
}

/// Why a value cannot be a webhook secret. Never contains the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretError {
    /// The value is empty.
    Empty,
    /// The value starts or ends with whitespace, which HTTP strips from header values.
    SurroundingWhitespace,
    /// The value holds a control character, which a header cannot carry.
    ControlCharacter,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SecretError::Empty => "webhook secret is empty",
            SecretError::SurroundingWhitespace => "webhook secret starts or ends with whitespace",
            SecretError::ControlCharacter => "webhook secret contains a control character",
        })
    }
}

impl std::error::Error for SecretError {}

#[cfg(test)]
mod tests {
    use super::{SecretError, WebhookSecret};

    const CANARY: &str = "CANARY-5ecr3t-d0-not-print";

    #[test]
    fn secret_debug_is_redacted() {
        let secret = WebhookSecret::new(CANARY).unwrap();
        let printed = format!("{secret:?} {secret:#?}");
        assert!(!printed.contains(CANARY));
        assert!(!printed.contains("CANARY"));
        assert_eq!(format!("{secret:?}"), "WebhookSecret(** redacted **)");
    }

    #[test]
    fn secret_matches_only_the_exact_value() {
        let secret = WebhookSecret::new(CANARY).unwrap();
        assert!(secret.matches(CANARY.as_bytes()));
        assert!(!secret.matches(b""));
        assert!(!secret.matches(&CANARY.as_bytes()[1..]));
        assert!(!secret.matches(CANARY.to_lowercase().as_bytes()));
        assert!(!secret.matches(format!("{CANARY}x").as_bytes()));
    }

    #[test]
    fn unsendable_secrets_are_rejected() {
        assert_eq!(WebhookSecret::new("").unwrap_err(), SecretError::Empty);
        assert_eq!(
            WebhookSecret::new(" abc").unwrap_err(),
            SecretError::SurroundingWhitespace
        );
        assert_eq!(
            WebhookSecret::new("abc\t").unwrap_err(),
            SecretError::SurroundingWhitespace
        );
        assert_eq!(
            WebhookSecret::new("a\r\nb").unwrap_err(),
            SecretError::ControlCharacter
        );
        assert!(WebhookSecret::new("Bearer a b").is_ok());
    }
}
