//! What the receiver hands to the application: batches, dead letters, and the handler trait.

use std::future::Future;

use bytes::Bytes;

use super::{DeliveryParseError, WebhookEvent};

/// The application's side of a [`Receiver`](super::Receiver): stores or processes one batch.
///
/// Return `Ok` only once the batch is safe (written to durable storage or a queue): the
/// receiver answers the platform 200 right after, and a 200 means the platform will not send
/// the batch again. Return an error to have the receiver answer 500 so that the platform
/// retries (see the [retry schedule](super#delivery-and-retries)); the events are then not
/// remembered as seen, so the retry is handed over again.
///
/// Keep it short: acknowledge quickly and do the real work from the queue.
///
/// Implement it with an `async fn`, or pass a closure `Fn(Batch) -> impl Future`:
///
/// ```
/// use pubapi_sdk_ext::webhook::{Batch, DeliveryHandler, HandlerError};
///
/// struct Enqueue;
///
/// impl DeliveryHandler for Enqueue {
///     async fn handle_batch(&self, batch: Batch) -> Result<(), HandlerError> {
///         for event in &batch.events {
///             println!("{} {}", event.event_type, event.event_id);
///         }
///         Ok(())
///     }
/// }
///
/// let as_closure = |batch: Batch| async move {
///     if batch.dead_letters.is_empty() { Ok(()) } else { Err(HandlerError::new("no dead-letter store")) }
/// };
/// # fn assert_handler(_: &impl DeliveryHandler) {}
/// # assert_handler(&Enqueue);
/// # assert_handler(&as_closure);
/// ```
pub trait DeliveryHandler: Send + Sync {
    /// Stores or processes one batch; see the trait docs for what `Ok` promises.
    fn handle_batch(&self, batch: Batch) -> impl Future<Output = Result<(), HandlerError>> + Send;
}

impl<F, Fut> DeliveryHandler for F
where
    F: Fn(Batch) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), HandlerError>> + Send,
{
    fn handle_batch(&self, batch: Batch) -> impl Future<Output = Result<(), HandlerError>> + Send {
        self(batch)
    }
}

/// What one delivery brings that was not handed over before.
///
/// Duplicates and the application's own events (if configured) are already removed. Never
/// empty: a delivery with nothing new is answered without calling the handler.
#[derive(Debug)]
#[non_exhaustive]
pub struct Batch {
    /// New events, in delivery order.
    pub events: Vec<WebhookEvent>,
    /// Parts of the delivery that could not be read as events, kept raw so nothing is lost.
    pub dead_letters: Vec<DeadLetter>,
}

impl Batch {
    /// A batch, for testing a handler.
    #[must_use]
    pub fn new(events: Vec<WebhookEvent>, dead_letters: Vec<DeadLetter>) -> Self {
        Batch {
            events,
            dead_letters,
        }
    }
}

/// A part of an authenticated delivery that is not a readable event.
///
/// The receiver answers 200 for these (after the handler returned `Ok`) so that one bad
/// delivery does not exhaust the retries and disable the registration; store them for a
/// person or a later version to look at, and reconcile through the API if needed.
#[derive(Debug)]
#[non_exhaustive]
pub enum DeadLetter {
    /// The whole body: not JSON, no `data` array, or over one of the receiver's limits
    /// (size, number of elements); `error` says which.
    Body {
        /// The body as received.
        raw: Bytes,
        /// What was wrong with it.
        error: DeliveryParseError,
    },
    /// One element of `data` that is not an event: not an object, or a required envelope
    /// field missing, repeated or of the wrong type.
    Item {
        /// The element's JSON text as received (a copy of its bytes of the body, so that a
        /// dead letter costs no more memory than it took on the wire).
        raw: Bytes,
        /// What was wrong with it.
        reason: String,
    },
}

wrapping_error! {
    /// The error a [`DeliveryHandler`] returns to have the delivery retried.
    ///
    /// ```
    /// use pubapi_sdk_ext::webhook::HandlerError;
    ///
    /// let from_text = HandlerError::new("queue unavailable");
    /// let from_error = HandlerError::new(std::io::Error::other("disk full"));
    /// assert_eq!(from_text.to_string(), "delivery handler failed");
    /// assert_eq!(std::error::Error::source(&from_error).unwrap().to_string(), "disk full");
    /// ```
    pub struct HandlerError: "delivery handler failed";
}
