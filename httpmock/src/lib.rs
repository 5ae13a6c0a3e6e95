#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

use httpmock::MockServer;

// Formatted by prettyplease in `cargo xtask regenerate`, not by rustfmt.
#[rustfmt::skip]
// httpmock's `When` and `Then` have no `Debug`, so the wrappers around them cannot derive one.
// The path matchers call `to_string()` on every path value's type, `&str` included.
#[allow(missing_debug_implementations, clippy::unnecessary_to_owned)]
mod generated;

pub use generated::*;

/// The [httpmock](https://docs.rs/httpmock/0.8) the typed mocks extend, re-exported: name
/// `pubapi_httpmock::httpmock::MockServer` (and its `Method`, `Mock`, ...) and the version is
/// always the one [`MockServerExt`] is built for, with no `httpmock` line of your own in
/// `[dev-dependencies]` (a `cargo add --dev httpmock` picks a newer release, whose
/// `MockServer` is another type that no typed mock extends).
pub use ::httpmock;

mod sequence;
pub use sequence::{Sequence, SequenceMock};

/// The base URL of the API on `server` (`server.url(BASE_PATH)`): what the client under test
/// is built with, so its requests reach the typed mocks.
pub fn base_url(server: &MockServer) -> String {
    server.url(BASE_PATH)
}
