//! Tests of the webhook module as a whole: parsing every documented event, the receiver's
//! documented behaviours, and robustness against arbitrary input.

mod bounds;
mod dedup_store;
mod events;
mod properties;
mod receiver;
mod robustness;
