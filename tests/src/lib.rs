#![doc = include_str!("../README.md")]

/// The sandbox, published as `pubapi-sandbox`; re-exported so the tests read `sandbox::…`.
pub use pubapi_sandbox as sandbox;
pub use pubapi_sandbox::conformance;
