//! Tests of the webhook module as a whole: parsing every documented event, the receiver's
//! documented behaviours, and robustness against arbitrary input.

mod bounds;
mod dedup_store;
mod events;
mod properties;
mod receiver;
mod recent;
mod robustness;

use crate::webhook::{Receiver, WebhookSecret};

/// A receiver with every default, for deliveries signed with `secret`.
fn default_receiver(secret: &str) -> Receiver {
    Receiver::builder()
        .secret(WebhookSecret::new(secret).unwrap())
        .build()
        .unwrap()
}

/// The strategies every property test of untrusted input shares (`arb_json`, ...).
#[path = "../../../tests/support/untrusted_strategies.rs"]
// Unused here: what the request and receiver properties use besides `arb_json`; and
// `request::proptest_untrusted` loads the same file for its own tests.
#[allow(dead_code, clippy::duplicate_mod)]
mod untrusted_strategies;
