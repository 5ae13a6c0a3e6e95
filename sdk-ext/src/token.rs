//! The bearer token and where it comes from.
//!
//! Every endpoint takes `Authorization: Bearer <ACCESS_TOKEN>`. Tokens are
//! meant to be cached and reused: they do not expire on their own, but they
//! stop working when the user changes the password (the server then answers
//! 401, and [`TokenSource::invalidate`] is called so a rotating source can
//! fetch a new one).
//!
//! The token endpoint `/puboauth/token` lives outside `/pubapi` and its
//! request parameters and grant flows are not part of the reference: the caller
//! obtains a token and hands it over, as a [`StaticToken`] or through their own
//! [`TokenSource`], or lets [`PasswordGrant`](crate::PasswordGrant) obtain it with the
//! password grant the platform's own clients use. Keep in
//! mind that the token endpoint itself is rate limited (100 requests per hour
//! for the public application flow), so a source should fetch once and cache.
//! A source that calls the token endpoint can send its request with
//! [`send_token_request`](crate::send_token_request) (retried after the endpoint's 409
//! throttle as long as its `Retry-After` says) or through a [`TokenPacer`](crate::TokenPacer)
//! (which also keeps the endpoint's hourly limits).

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::HeaderValue;

/// A bearer token, kept out of logs.
///
/// `Debug` prints `SecretToken(** redacted **)`; there is no `Display` and no
/// `Serialize`, so the value only leaves through [`SecretToken::expose`] or
/// the sensitive header built by [`SecretToken::header_value`].
///
/// ```
/// use pubapi_sdk_ext::token::SecretToken;
///
/// let token = SecretToken::try_from("abc.DEF-123".to_owned())?;
/// assert_eq!(format!("{token:?}"), "SecretToken(** redacted **)");
/// assert_eq!(token.expose(), "abc.DEF-123");
/// assert!(token.header_value().is_sensitive());
/// # Ok::<(), pubapi_sdk_ext::token::TokenError>(())
/// ```
#[derive(Clone)]
pub struct SecretToken {
    // Shared, so a clone per request costs no allocation.
    value: std::sync::Arc<str>,
    header: HeaderValue,
}

impl SecretToken {
    /// The raw token, for the rare caller that must hand it to something
    /// else (for example a token cache). Prefer [`SecretToken::header_value`].
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// A fingerprint of the token: the first 16 bytes of the SHA-256 of a fixed label and the
    /// token. It keys the token's shared budget, in the process and in a fleet's store, so the
    /// token itself is never a key. It does not depend on the base URL: a token belongs to one
    /// domain, and the gateway counts its calls however the domain is spelt (`127.0.0.1` or
    /// `localhost`, a trailing slash, upper case).
    pub fn fingerprint(&self) -> TokenFingerprint {
        let mut hasher = crate::digest::Sha256::new();
        hasher.update(b"pubapi token budget\0");
        hasher.update(self.value.as_bytes());
        let digest = hasher.finish();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        TokenFingerprint(bytes)
    }

    /// The `Authorization` header value, `Bearer <token>`, marked sensitive
    /// so `http` and `reqwest` print it as `Sensitive` and HPACK does not
    /// index it.
    pub fn header_value(&self) -> HeaderValue {
        self.header.clone()
    }
}

impl TryFrom<String> for SecretToken {
    type Error = TokenError;

    /// Accepts a non-empty token made only of visible ASCII (`!` to `~`).
    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.is_empty() {
            return Err(TokenError::Empty);
        }
        if let Some(position) = value.bytes().position(|b| !b.is_ascii_graphic()) {
            return Err(TokenError::InvalidCharacter { position });
        }
        let mut header = HeaderValue::try_from(format!("Bearer {value}"))
            .map_err(|_| TokenError::InvalidCharacter { position: 0 })?;
        header.set_sensitive(true);
        Ok(SecretToken {
            value: value.into(),
            header,
        })
    }
}

impl TryFrom<&str> for SecretToken {
    type Error = TokenError;

    /// Same rules as `TryFrom<String>`.
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        SecretToken::try_from(value.to_owned())
    }
}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretToken(** redacted **)")
    }
}

impl PartialEq for SecretToken {
    /// Compares in time independent of where the tokens differ.
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.value.as_bytes(), other.value.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl Eq for SecretToken {}

/// Why a token could not be built or obtained.
///
/// The messages never contain the token itself. It is cheap to clone: a source's failure is
/// shared, so the same error reaches every call that waited on the fetch.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is the empty string.
    Empty,
    /// The token has a byte that is not visible ASCII (space, control,
    /// non-ASCII) at this byte position.
    InvalidCharacter {
        /// Byte offset of the first offending byte.
        position: usize,
    },
    /// A [`TokenSource`] could not produce a token; the source's own error (for the
    /// password grant, a [`GrantError`](crate::password_grant::GrantError)) is kept, to
    /// match on with `downcast_ref`.
    Unavailable(Arc<dyn StdError + Send + Sync>),
}

impl TokenError {
    /// Wraps the failure of a custom [`TokenSource`].
    pub fn unavailable(source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        TokenError::Unavailable(Arc::from(source.into()))
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Empty => f.write_str("token is empty"),
            TokenError::InvalidCharacter { position } => {
                write!(
                    f,
                    "token has a byte that is not visible ascii at {position}"
                )
            }
            TokenError::Unavailable(_) => f.write_str("token source failed"),
        }
    }
}

impl StdError for TokenError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            TokenError::Unavailable(source) => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// The future returned by [`TokenSource::token`].
pub type TokenFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SecretToken, TokenError>> + Send + 'a>>;

/// Where the client gets its bearer token for each request.
///
/// Implement it to plug in your own token handling (a cache refreshed from
/// `/puboauth/token`, a secret store, ...). It is called before every
/// request, so it should answer from a cache; fetching must be single-flight.
///
/// ```
/// use pubapi_sdk_ext::token::{SecretToken, TokenError, TokenFuture, TokenSource};
///
/// #[derive(Debug)]
/// struct FromEnv;
///
/// impl TokenSource for FromEnv {
///     fn token(&self) -> TokenFuture<'_> {
///         Box::pin(async {
///             let raw = std::env::var("PUBAPI_TOKEN").map_err(TokenError::unavailable)?;
///             SecretToken::try_from(raw)
///         })
///     }
/// }
/// ```
pub trait TokenSource: Send + Sync + fmt::Debug {
    /// The token to send with the next request.
    fn token(&self) -> TokenFuture<'_>;

    /// The token at hand without waiting, when the source has one (a static token): the
    /// request path then skips the future. The default is `None`.
    fn ready(&self) -> Option<SecretToken> {
        None
    }

    /// Called after the server rejected `rejected` with 401 (for example
    /// because the user changed the password), so a rotating source can drop
    /// it and fetch a new one. The default does nothing.
    fn invalidate(&self, rejected: &SecretToken) {
        let _ = rejected;
    }
}

impl<T: TokenSource + ?Sized> TokenSource for Arc<T> {
    fn token(&self) -> TokenFuture<'_> {
        (**self).token()
    }

    fn ready(&self) -> Option<SecretToken> {
        (**self).ready()
    }

    fn invalidate(&self, rejected: &SecretToken) {
        (**self).invalidate(rejected)
    }
}

/// A [`TokenSource`] that always hands out the same token.
///
/// Invalidation does nothing: once the token is revoked every call fails
/// with 401 until a new client is built with a new token.
///
/// ```
/// use pubapi_sdk_ext::token::{SecretToken, StaticToken, TokenSource};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let source = StaticToken::new(SecretToken::try_from("t0k3n")?);
/// assert_eq!(source.token().await?.expose(), "t0k3n");
/// # Ok::<(), pubapi_sdk_ext::token::TokenError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct StaticToken {
    token: SecretToken,
}

impl StaticToken {
    /// A source that returns `token` for every request.
    pub fn new(token: SecretToken) -> Self {
        StaticToken { token }
    }
}

impl TokenSource for StaticToken {
    fn token(&self) -> TokenFuture<'_> {
        let token = self.token.clone();
        Box::pin(async move { Ok(token) })
    }

    fn ready(&self) -> Option<SecretToken> {
        Some(self.token.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "CANARYtoken.1234-_~+/=";

    /// The fingerprint keys a token's budget in a fleet's store, so it must not change
    /// between versions (replicas of two versions share one budget during a deploy).
    #[test]
    fn a_tokens_fingerprint_is_the_same_in_every_version() {
        let token = SecretToken::try_from("t0k3n").unwrap();
        assert_eq!(
            token.fingerprint().to_string(),
            "462129b21acf552406901c7e84a1017d"
        );
    }

    #[test]
    fn debug_is_redacted() {
        let token = SecretToken::try_from(CANARY).unwrap();
        let debug = format!("{token:?}");
        assert_eq!(debug, "SecretToken(** redacted **)");
        let source = StaticToken::new(token.clone());
        assert!(!format!("{source:?}").contains("CANARY"));
        assert!(!format!("{:?}", token.header_value()).contains("CANARY"));
    }

    #[test]
    fn expose_returns_the_token() {
        assert_eq!(SecretToken::try_from(CANARY).unwrap().expose(), CANARY);
    }

    #[test]
    fn header_value_is_bearer_and_sensitive() {
        let header = SecretToken::try_from(CANARY).unwrap().header_value();
        assert!(header.is_sensitive());
        assert_eq!(header.to_str().unwrap(), format!("Bearer {CANARY}"));
        assert_eq!(format!("{header:?}"), "Sensitive");
    }

    #[test]
    fn empty_token_is_rejected() {
        assert!(matches!(SecretToken::try_from(""), Err(TokenError::Empty)));
    }

    #[test]
    fn token_with_invisible_or_non_ascii_bytes_is_rejected() {
        for (value, position) in [
            ("ab cd", 2),
            (" abc", 0),
            ("abc\n", 3),
            ("a\r\nX-Evil: 1", 1),
            ("a\tb", 1),
            ("a\u{7f}", 1),
            ("a\0", 1),
            ("tökén", 1),
        ] {
            match SecretToken::try_from(value) {
                Err(TokenError::InvalidCharacter { position: p }) => {
                    assert_eq!(p, position, "{value:?}")
                }
                other => panic!("{value:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn every_visible_ascii_byte_is_accepted() {
        let all: String = (b'!'..=b'~').map(char::from).collect();
        assert_eq!(SecretToken::try_from(all.as_str()).unwrap().expose(), all);
    }

    #[test]
    fn token_error_display_never_contains_the_token() {
        let err = SecretToken::try_from("SECRET value").unwrap_err();
        assert_eq!(
            err.to_string(),
            "token has a byte that is not visible ascii at 6"
        );
        assert!(!format!("{err:?}").contains("SECRET"));
    }

    #[test]
    fn unavailable_token_error_chains_its_source() {
        let err = TokenError::unavailable("vault sealed");
        assert_eq!(err.to_string(), "token source failed");
        assert_eq!(err.source().unwrap().to_string(), "vault sealed");
    }

    #[test]
    fn tokens_compare_by_value() {
        let a = SecretToken::try_from("abc").unwrap();
        assert_eq!(a, SecretToken::try_from("abc").unwrap());
        assert_ne!(a, SecretToken::try_from("abd").unwrap());
        assert_ne!(a, SecretToken::try_from("abcd").unwrap());
    }

    #[tokio::test]
    async fn static_token_returns_the_same_token_and_ignores_invalidate() {
        let token = SecretToken::try_from(CANARY).unwrap();
        let source: Arc<dyn TokenSource> = Arc::new(StaticToken::new(token.clone()));
        assert_eq!(source.token().await.unwrap(), token);
        source.invalidate(&token);
        assert_eq!(source.token().await.unwrap(), token);
    }

    #[derive(Debug, Default)]
    struct Rotating {
        invalidated: std::sync::Mutex<Vec<String>>,
    }

    impl TokenSource for Rotating {
        fn token(&self) -> TokenFuture<'_> {
            Box::pin(async move {
                let generation = self.invalidated.lock().unwrap().len();
                SecretToken::try_from(format!("gen{generation}"))
            })
        }

        fn invalidate(&self, rejected: &SecretToken) {
            self.invalidated
                .lock()
                .unwrap()
                .push(rejected.expose().to_owned());
        }
    }

    #[tokio::test]
    async fn invalidate_lets_a_rotating_source_hand_out_a_new_token() {
        let source = Arc::new(Rotating::default());
        let first = source.token().await.unwrap();
        assert_eq!(first.expose(), "gen0");
        source.invalidate(&first);
        assert_eq!(source.token().await.unwrap().expose(), "gen1");
        assert_eq!(*source.invalidated.lock().unwrap(), vec!["gen0".to_owned()]);
    }
}

/// A fingerprint of a token, from [`SecretToken::fingerprint`]: safe to log and to use as a
/// key; it does not reveal the token.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenFingerprint([u8; 16]);

impl fmt::Display for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TokenFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenFingerprint({self})")
    }
}
