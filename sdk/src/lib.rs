#![doc = include_str!("../README.md")]

pub mod hooks;
pub mod path;

// Formatted by prettyplease in `cargo xtask regenerate`, not by rustfmt.
#[rustfmt::skip]
#[allow(missing_docs, unused_imports, deprecated, clippy::all, clippy::pedantic)]
mod generated;

pub use generated::*;

/// The OpenAPI document this crate was generated from (`spec/openapi.yaml`, copied here by
/// `cargo xtask regenerate`, which also checks the copy is fresh), for tools that validate
/// traffic or serve the API, such as `pubapi-sandbox`.
pub const SPEC_YAML: &str = include_str!("../openapi.yaml");
