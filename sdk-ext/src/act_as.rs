//! Impersonation: making an admin token act as another user.
//!
//! An admin token plus one request header makes the call run as another user
//! and be recorded as impersonated: `X-Service-Act-As` carries a username,
//! `X-Service-Act-As-Email` an e-mail address (if both are sent the server
//! ignores the e-mail one, so this crate only ever sends one).
//!
//! The value is checked before any request is built. `http` would accept
//! leading and trailing spaces (which servers trim, so the call would run as
//! somebody else than meant), TAB and raw non-ASCII bytes; all of those are
//! refused here, as are control characters and values over
//! [`MAX_LEN`] bytes. Which characters the platform allows is not documented,
//! so non-ASCII is refused until it is.
//!
//! The value is personal data: `Debug` never prints it, errors never contain
//! it, and the header value is marked sensitive.

use std::fmt;

use http::{HeaderName, HeaderValue};

/// Longest accepted value, in bytes.
pub const MAX_LEN: usize = 256;

/// `x-service-act-as`: the header that carries a username.
pub const ACT_AS: HeaderName = HeaderName::from_static("x-service-act-as");

/// `x-service-act-as-email`: the header that carries an e-mail address.
pub const ACT_AS_EMAIL: HeaderName = HeaderName::from_static("x-service-act-as-email");

/// Both impersonation headers, for code that must strip them (for example
/// before following a redirect to another origin).
pub const HEADER_NAMES: [HeaderName; 2] = [ACT_AS, ACT_AS_EMAIL];

/// The user a request runs as.
///
/// ```
/// use pubapi_sdk_ext::act_as::ActAs;
///
/// let who = ActAs::email("jane.doe@example.com")?;
/// assert_eq!(who.header_name(), "x-service-act-as-email");
/// assert_eq!(who.header_value().to_str().unwrap(), "jane.doe@example.com");
/// assert_eq!(format!("{who:?}"), "ActAs::Email(** redacted **)");
///
/// assert!(ActAs::username(" jane").is_err());
/// # Ok::<(), pubapi_sdk_ext::act_as::ImpersonationError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ActAs {
    /// Sent as `X-Service-Act-As`.
    Username(Username),
    /// Sent as `X-Service-Act-As-Email`.
    Email(EmailAddress),
}

impl ActAs {
    /// Act as the user with this username.
    pub fn username(value: &str) -> Result<ActAs, ImpersonationError> {
        Username::try_from(value).map(ActAs::Username)
    }

    /// Act as the user with this e-mail address.
    pub fn email(value: &str) -> Result<ActAs, ImpersonationError> {
        EmailAddress::try_from(value).map(ActAs::Email)
    }

    /// The header to send: [`ACT_AS`] or [`ACT_AS_EMAIL`].
    pub fn header_name(&self) -> HeaderName {
        match self {
            ActAs::Username(_) => ACT_AS,
            ActAs::Email(_) => ACT_AS_EMAIL,
        }
    }

    /// The header value, marked sensitive.
    pub fn header_value(&self) -> HeaderValue {
        match self {
            ActAs::Username(u) => u.0.header.clone(),
            ActAs::Email(e) => e.0.header.clone(),
        }
    }

    /// The validated value (personal data: keep it out of logs).
    pub fn as_str(&self) -> &str {
        match self {
            ActAs::Username(u) => u.as_str(),
            ActAs::Email(e) => e.as_str(),
        }
    }
}

impl fmt::Debug for ActAs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActAs::Username(_) => f.write_str("ActAs::Username(** redacted **)"),
            ActAs::Email(_) => f.write_str("ActAs::Email(** redacted **)"),
        }
    }
}

/// A value checked for an impersonation header, with the header value made of it (marked
/// sensitive): the inside of [`Username`] and [`EmailAddress`].
#[derive(Clone, PartialEq, Eq, Hash)]
struct HeaderText {
    value: Box<str>,
    header: HeaderValue,
}

impl HeaderText {
    /// Checks `value` for a header ([`check_header_text`]) and makes its header value.
    fn new(value: &str) -> Result<Self, ImpersonationError> {
        check_header_text(value)?;
        Ok(HeaderText {
            value: value.into(),
            header: sensitive(value)?,
        })
    }
}

/// What every checked impersonation value has: `as_str`, and a `Debug` that never shows it.
macro_rules! checked_value {
    ($name:ident, $what:literal) => {
        impl $name {
            #[doc = concat!("The validated ", $what, ".")]
            pub fn as_str(&self) -> &str {
                &self.0.value
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(** redacted **)"))
            }
        }
    };
}

checked_value!(Username, "username");
checked_value!(EmailAddress, "address");

/// A validated username for `X-Service-Act-As`.
///
/// Visible ASCII and inner spaces, 1 to [`MAX_LEN`] bytes, no surrounding
/// spaces.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Username(HeaderText);

impl TryFrom<&str> for Username {
    type Error = ImpersonationError;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        HeaderText::new(value).map(Username)
    }
}

/// A validated e-mail address for `X-Service-Act-As-Email`.
///
/// An ASCII `addr-spec` in dot-atom form: `local@domain`, where the local
/// part is made of RFC 5322 `atext` and single dots, and the domain of
/// letters, digits and hyphens in dot-separated labels.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EmailAddress(HeaderText);

impl TryFrom<&str> for EmailAddress {
    type Error = ImpersonationError;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        let text = HeaderText::new(value)?;
        check_addr_spec(value).map_err(ImpersonationError::InvalidEmail)?;
        Ok(EmailAddress(text))
    }
}

/// Why an impersonation value was refused. Never contains the value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImpersonationError {
    /// The value is empty.
    Empty,
    /// The value is longer than [`MAX_LEN`] bytes.
    TooLong {
        /// Length in bytes.
        len: usize,
    },
    /// A control character (C0, including TAB, CR, LF and NUL, or DEL).
    ControlCharacter {
        /// Byte offset of the character.
        position: usize,
    },
    /// A character outside ASCII.
    NonAscii {
        /// Byte offset of the character.
        position: usize,
    },
    /// Leading or trailing white space, which servers trim away.
    SurroundingWhitespace,
    /// The value does not look like an e-mail address.
    InvalidEmail(EmailProblem),
}

impl fmt::Display for ImpersonationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImpersonationError::Empty => f.write_str("impersonation value is empty"),
            ImpersonationError::TooLong { len } => write!(
                f,
                "impersonation value is {len} bytes long, more than {MAX_LEN}"
            ),
            ImpersonationError::ControlCharacter { position } => {
                write!(
                    f,
                    "impersonation value has a control character at byte {position}"
                )
            }
            ImpersonationError::NonAscii { position } => {
                write!(
                    f,
                    "impersonation value has a non-ascii character at byte {position}"
                )
            }
            ImpersonationError::SurroundingWhitespace => {
                f.write_str("impersonation value starts or ends with white space")
            }
            ImpersonationError::InvalidEmail(_) => {
                f.write_str("impersonation value is not an e-mail address")
            }
        }
    }
}

impl std::error::Error for ImpersonationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImpersonationError::InvalidEmail(problem) => Some(problem),
            _ => None,
        }
    }
}

/// What is wrong with an e-mail address.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmailProblem {
    /// There is no `@`.
    MissingAt,
    /// There is more than one `@`.
    MoreThanOneAt,
    /// Nothing before the `@`.
    EmptyLocalPart,
    /// Nothing after the `@`.
    EmptyDomain,
    /// A space (e-mail addresses have none outside quoted local parts,
    /// which are not accepted).
    Space,
    /// A character not allowed in a dot-atom local part.
    InvalidLocalCharacter {
        /// Byte offset in the whole address.
        position: usize,
    },
    /// A leading, trailing or doubled dot in the local part.
    MisplacedDotInLocalPart,
    /// A domain label that is empty or has a character other than a
    /// letter, digit or hyphen.
    InvalidDomain,
}

impl fmt::Display for EmailProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmailProblem::MissingAt => f.write_str("no @"),
            EmailProblem::MoreThanOneAt => f.write_str("more than one @"),
            EmailProblem::EmptyLocalPart => f.write_str("empty local part"),
            EmailProblem::EmptyDomain => f.write_str("empty domain"),
            EmailProblem::Space => f.write_str("contains a space"),
            EmailProblem::InvalidLocalCharacter { position } => {
                write!(f, "invalid local part character at byte {position}")
            }
            EmailProblem::MisplacedDotInLocalPart => f.write_str("misplaced dot in local part"),
            EmailProblem::InvalidDomain => f.write_str("invalid domain"),
        }
    }
}

impl std::error::Error for EmailProblem {}

/// Rules shared by both headers.
fn check_header_text(value: &str) -> Result<(), ImpersonationError> {
    if value.is_empty() {
        return Err(ImpersonationError::Empty);
    }
    if value.len() > MAX_LEN {
        return Err(ImpersonationError::TooLong { len: value.len() });
    }
    for (position, byte) in value.bytes().enumerate() {
        if byte.is_ascii_control() {
            return Err(ImpersonationError::ControlCharacter { position });
        }
        if !byte.is_ascii() {
            return Err(ImpersonationError::NonAscii { position });
        }
    }
    if value.starts_with(' ') || value.ends_with(' ') {
        return Err(ImpersonationError::SurroundingWhitespace);
    }
    Ok(())
}

/// Checks the dot-atom `addr-spec` shape; `value` is already printable ASCII.
fn check_addr_spec(value: &str) -> Result<(), EmailProblem> {
    if value.contains(' ') {
        return Err(EmailProblem::Space);
    }
    let (local, domain) = match value.split_once('@') {
        None => return Err(EmailProblem::MissingAt),
        Some((_, domain)) if domain.contains('@') => return Err(EmailProblem::MoreThanOneAt),
        Some(parts) => parts,
    };
    if local.is_empty() {
        return Err(EmailProblem::EmptyLocalPart);
    }
    if domain.is_empty() {
        return Err(EmailProblem::EmptyDomain);
    }
    if let Some(position) = local.bytes().position(|b| !is_atext(b) && b != b'.') {
        return Err(EmailProblem::InvalidLocalCharacter { position });
    }
    if local.split('.').any(str::is_empty) {
        return Err(EmailProblem::MisplacedDotInLocalPart);
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !domain.split('.').all(label_ok) {
        return Err(EmailProblem::InvalidDomain);
    }
    Ok(())
}

/// RFC 5322 `atext`.
fn is_atext(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b)
}

fn sensitive(value: &str) -> Result<HeaderValue, ImpersonationError> {
    // `check_header_text` admits only bytes `HeaderValue` accepts; the error
    // arm is there so no input can panic.
    let mut header = HeaderValue::from_str(value)
        .map_err(|_| ImpersonationError::ControlCharacter { position: 0 })?;
    header.set_sensitive(true);
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn username_goes_in_x_service_act_as() {
        let who = ActAs::username("jane").unwrap();
        assert_eq!(who.header_name(), "x-service-act-as");
        assert_eq!(who.header_value(), "jane");
        assert_eq!(who.as_str(), "jane");
    }

    #[test]
    fn email_goes_in_x_service_act_as_email() {
        let who = ActAs::email("jane.doe+x@mail.example.com").unwrap();
        assert_eq!(who.header_name(), "x-service-act-as-email");
        assert_eq!(who.header_value(), "jane.doe+x@mail.example.com");
    }

    #[test]
    fn header_value_is_sensitive() {
        assert!(
            ActAs::username("jane")
                .unwrap()
                .header_value()
                .is_sensitive()
        );
        assert!(
            ActAs::email("j@x.io")
                .unwrap()
                .header_value()
                .is_sensitive()
        );
    }

    #[test]
    fn debug_does_not_print_the_value() {
        let user = ActAs::username("CANARYuser").unwrap();
        let email = ActAs::email("CANARY@example.com").unwrap();
        assert_eq!(format!("{user:?}"), "ActAs::Username(** redacted **)");
        assert_eq!(format!("{email:?}"), "ActAs::Email(** redacted **)");
        for text in [
            format!("{:?}", user.header_value()),
            format!("{:#?}", user),
            format!("{:?}", Username::try_from("CANARYuser").unwrap()),
            format!(
                "{:?}",
                EmailAddress::try_from("CANARY@example.com").unwrap()
            ),
        ] {
            assert!(!text.contains("CANARY"), "{text}");
        }
    }

    #[test]
    fn empty_value_is_rejected() {
        assert_eq!(ActAs::username(""), Err(ImpersonationError::Empty));
        assert_eq!(ActAs::email(""), Err(ImpersonationError::Empty));
    }

    #[test]
    fn control_characters_are_rejected_including_tab_and_del() {
        for (value, position) in [
            ("ja\tne", 2),
            ("jane\r\nX-Evil: 1", 4),
            ("\njane", 0),
            ("ja\0ne", 2),
            ("jane\u{7f}", 4),
            ("\u{1b}[31m", 0),
        ] {
            assert_eq!(
                ActAs::username(value),
                Err(ImpersonationError::ControlCharacter { position }),
                "{value:?}"
            );
        }
    }

    #[test]
    fn surrounding_white_space_is_rejected() {
        for value in [" jane", "jane ", "  ", " j@x.io"] {
            assert_eq!(
                ActAs::username(value),
                Err(ImpersonationError::SurroundingWhitespace),
                "{value:?}"
            );
        }
        assert!(ActAs::username("jane doe").is_ok());
    }

    #[test]
    fn non_ascii_is_rejected() {
        assert_eq!(
            ActAs::username("müller"),
            Err(ImpersonationError::NonAscii { position: 1 })
        );
        assert_eq!(
            ActAs::email("jü@x.io"),
            Err(ImpersonationError::NonAscii { position: 1 })
        );
        assert_eq!(
            ActAs::username("a\u{85}"),
            Err(ImpersonationError::NonAscii { position: 1 })
        );
    }

    #[test]
    fn values_longer_than_256_bytes_are_rejected() {
        let max = "a".repeat(MAX_LEN);
        assert!(ActAs::username(&max).is_ok());
        let long = "a".repeat(MAX_LEN + 1);
        assert_eq!(
            ActAs::username(&long),
            Err(ImpersonationError::TooLong { len: 257 })
        );
        let long_email = format!("{}@x.io", "a".repeat(MAX_LEN));
        assert_eq!(
            ActAs::email(&long_email),
            Err(ImpersonationError::TooLong { len: 261 })
        );
    }

    #[test]
    fn email_must_look_like_an_addr_spec() {
        use EmailProblem::*;
        for (value, problem) in [
            ("jane", MissingAt),
            ("jane@x@y", MoreThanOneAt),
            ("@x.io", EmptyLocalPart),
            ("jane@", EmptyDomain),
            ("jane doe@x.io", Space),
            ("jane@x .io", Space),
            ("ja(ne)@x.io", InvalidLocalCharacter { position: 2 }),
            ("\"jane\"@x.io", InvalidLocalCharacter { position: 0 }),
            (".jane@x.io", MisplacedDotInLocalPart),
            ("jane.@x.io", MisplacedDotInLocalPart),
            ("ja..ne@x.io", MisplacedDotInLocalPart),
            ("jane@x..io", InvalidDomain),
            ("jane@.x.io", InvalidDomain),
            ("jane@x.io.", InvalidDomain),
            ("jane@x_y.io", InvalidDomain),
            ("jane@[127.0.0.1]", InvalidDomain),
        ] {
            assert_eq!(
                ActAs::email(value),
                Err(ImpersonationError::InvalidEmail(problem)),
                "{value:?}"
            );
        }
        for value in [
            "a@b",
            "first.last@sub.example.co",
            "o'brien+tag@x-y.io",
            "!#$%&'*+-/=?^_`{|}~@x.io",
        ] {
            assert!(ActAs::email(value).is_ok(), "{value:?}");
        }
    }

    #[test]
    fn errors_name_the_problem_but_never_the_value() {
        let err = ActAs::email("SECRET@x..io").unwrap_err();
        assert_eq!(
            err.to_string(),
            "impersonation value is not an e-mail address"
        );
        assert_eq!(
            std::error::Error::source(&err).unwrap().to_string(),
            "invalid domain"
        );
        let err = ActAs::username("SECRET\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "impersonation value has a control character at byte 6"
        );
        assert!(!format!("{err:?}").contains("SECRET"));
    }

    /// Draws strings mixing the characters that matter here.
    fn generated(rng: &mut SplitMix64) -> String {
        const POOL: &[char] = &[
            'a', 'Z', '0', '.', '@', '@', '-', '_', '+', ' ', ' ', '\t', '\r', '\n', '\0',
            '\u{7f}', '"', '(', ':', '\\', '%', 'é', 'ü', '\u{85}', '\u{a0}', '\u{2028}', '😀',
            '\u{feff}',
        ];
        let pick = |rng: &mut SplitMix64, likely: &[u8], len: usize| -> String {
            (0..len)
                .map(|_| match rng.below(20) {
                    0 => POOL[rng.below(POOL.len() as u64) as usize],
                    1 => char::from(b' ' + rng.below(95) as u8),
                    _ => char::from(likely[rng.below(likely.len() as u64) as usize]),
                })
                .collect()
        };
        match rng.below(3) {
            // E-mail shaped, with the odd wrong character.
            0 => {
                let (local_len, domain_len) = (1 + rng.below(12), 1 + rng.below(12));
                let local = pick(rng, b"abXY09.+_-'", local_len as usize);
                let domain = pick(rng, b"abc09-.", domain_len as usize);
                format!("{local}@{domain}")
            }
            _ => {
                let len = match rng.below(10) {
                    0 => 250 + rng.below(20),
                    _ => rng.below(24),
                };
                pick(rng, b"aZ0 .@-_", len as usize)
            }
        }
    }

    #[test]
    fn accepted_values_round_trip_byte_exactly_and_nothing_panics() {
        let mut rng = SplitMix64::new(0x5eed_ac7a5);
        let (mut users, mut emails) = (0, 0);
        for _ in 0..50_000 {
            let value = generated(&mut rng);
            for result in [ActAs::username(&value), ActAs::email(&value)] {
                let Ok(who) = result else { continue };
                match who {
                    ActAs::Username(_) => users += 1,
                    ActAs::Email(_) => emails += 1,
                }
                let header = who.header_value();
                assert_eq!(header.to_str().unwrap().as_bytes(), value.as_bytes());
                assert_eq!(header.as_bytes(), value.as_bytes());
                assert_eq!(who.as_str(), value);
                assert!(value.len() <= MAX_LEN);
                assert!(value.bytes().all(|b| (b' '..=b'~').contains(&b)));
                assert!(!value.starts_with(' ') && !value.ends_with(' '));
            }
        }
        // The generator must reach both acceptance paths to mean anything.
        assert!(users > 1_000, "{users}");
        assert!(emails > 2_000, "{emails}");
    }
}
