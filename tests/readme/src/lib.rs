//! The READMEs' Rust blocks, compiled (and, where they need no server, run) as doc tests of
//! a crate whose dependencies are a user's: `pubapi-sdk-ext` (features `redis` and, for
//! tests, `test-util`) and `tokio`, with `pubapi-sandbox` and `pubapi-httpmock` for tests (the
//! httpmock it extends is `pubapi_httpmock::httpmock`, so a user needs no `httpmock` of their
//! own). A block that names any other crate does not compile here. Run them with
//! `cargo test -p pubapi-readme-check --doc`.
//!
//! The root README follows.
#![doc = include_str!("../../../README.md")]

/// `sdk-ext/README.md`, the client's own page.
#[doc = include_str!("../../../sdk-ext/README.md")]
pub mod sdk_ext_readme {}

/// `sandbox/README.md`, the sandbox.
#[doc = include_str!("../../../sandbox/README.md")]
pub mod sandbox_readme {}

/// `httpmock/README.md`, the typed mocks. Its links name items of `pubapi-httpmock`, whose
/// crate page it is: here only its code counts.
#[doc = include_str!("../../../httpmock/README.md")]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod httpmock_readme {}

/// `cli/README.md`, the command line.
#[doc = include_str!("../../../cli/README.md")]
pub mod cli_readme {}
