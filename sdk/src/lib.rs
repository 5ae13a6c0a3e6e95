#![doc = include_str!("../README.md")]

pub mod hooks;
pub mod path;

// Formatted by prettyplease in `cargo xtask regenerate`, not by rustfmt.
#[rustfmt::skip]
#[allow(missing_docs, unused_imports, deprecated, clippy::all, clippy::pedantic)]
mod generated;

pub use generated::*;
