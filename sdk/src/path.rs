//! How a value is placed in a URL path: the one encoder every path value goes through.
//!
//! The reference (section 8): each element of a file path placed in a URL is percent-encoded,
//! the separating slashes are not. [`encode_segment`] encodes one element (or one id); the
//! generated methods call it for every path parameter (the codegen transform
//! `strict_path_encoding` puts it there), and `pubapi-sdk-ext` builds folder paths from it.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Every byte but the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes `value` as one URL path segment: every byte outside the unreserved set is
/// encoded, so `/` becomes `%2F`, `\` becomes `%5C`, and `%`, `?`, `#` and non-ASCII text
/// cannot change the URL's meaning. Dot segments (`.`, `..`) are left as they are: refusing
/// them is the caller's job (`pubapi-sdk-ext` does it before sending).
///
/// ```
/// assert_eq!(pubapi_sdk::path::encode_segment("a/b\\c d"), "a%2Fb%5Cc%20d");
/// assert_eq!(pubapi_sdk::path::encode_segment("job-1.v2~x_y"), "job-1.v2~x_y");
/// ```
pub fn encode_segment(value: &str) -> String {
    utf8_percent_encode(value, NOT_UNRESERVED).to_string()
}
