//! Helpers of the integration tests that users have no use for (the scripted transport and
//! the signed deliveries are the crate's own `testing` modules, feature `test-util`).

pub mod redis_server;
