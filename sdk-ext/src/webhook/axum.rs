//! A ready-made axum endpoint around a [`Receiver`] (feature `receiver-axum`).
//!
//! It returns axum 0.8's `Router` and `MethodRouter`: the application that serves them
//! depends on axum 0.8 itself (the one crate besides this one and tokio it names here).
//!
//! ```no_run
//! use std::sync::Arc;
//! use pubapi_sdk_ext::webhook::{self, Batch, HandlerError, Receiver, WebhookSecret};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let receiver = Arc::new(
//!     Receiver::builder()
//!         .secret(WebhookSecret::new(std::env::var("WEBHOOK_SECRET")?)?)
//!         .build()?,
//! );
//! let handler = Arc::new(|batch: Batch| async move {
//!     println!("{} new events", batch.events.len());
//!     Ok::<(), HandlerError>(())
//! });
//! let app = ::axum::Router::new()
//!     .route("/hooks/pubapi", webhook::axum::endpoint(receiver, handler));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! ::axum::serve(listener, app).await?;
//! # Ok(())
//! # }
//! ```
//!
//! The endpoint refuses an unauthenticated request (401) before reading its body, refuses a
//! body over the receiver's [`max_read_bytes`](Receiver::max_read_bytes) (413, default
//! 32 MiB, far above any real batch) without buffering more than that, and otherwise answers
//! with [`HandleOutcome::status`] and an empty body (a body over
//! [`max_body_bytes`](Receiver::max_body_bytes) is handed over as a dead letter with 200).
//! Serve it behind TLS with a publicly trusted certificate: the platform refuses self-signed
//! ones (reference 6.1).

use std::sync::Arc;

use ::axum::Router;
use ::axum::body::{Body, to_bytes};
use ::axum::http::{HeaderMap, StatusCode, header::CONTENT_LENGTH};
use ::axum::routing::{MethodRouter, post};

use super::{DeliveryHandler, HandleOutcome, Receiver};

/// A `POST` route that feeds deliveries to `receiver` and `handler`; mount it at any path.
pub fn endpoint<H>(receiver: Arc<Receiver>, handler: Arc<H>) -> MethodRouter
where
    H: DeliveryHandler + 'static,
{
    post(move |headers: HeaderMap, body: Body| {
        let receiver = Arc::clone(&receiver);
        let handler = Arc::clone(&handler);
        async move { receive(&receiver, &*handler, headers, body).await }
    })
}

/// A router serving [`endpoint`] at `/`; nest or merge it into an application's router.
pub fn router<H>(receiver: Arc<Receiver>, handler: Arc<H>) -> Router
where
    H: DeliveryHandler + 'static,
{
    Router::new().route("/", endpoint(receiver, handler))
}

async fn receive<H: DeliveryHandler>(
    receiver: &Receiver,
    handler: &H,
    headers: HeaderMap,
    body: Body,
) -> StatusCode {
    if !receiver.is_authorized(&headers) {
        return StatusCode::UNAUTHORIZED;
    }
    let max = receiver.max_read_bytes();
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max as u64) {
        return StatusCode::PAYLOAD_TOO_LARGE;
    }
    // The only failures are a body over the limit and a broken connection, where nobody
    // reads the answer.
    let Ok(bytes) = to_bytes(body, max).await else {
        return StatusCode::PAYLOAD_TOO_LARGE;
    };
    let outcome: HandleOutcome = receiver.handle(&headers, &bytes, handler).await;
    outcome.status_code()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ::axum::body::Body;
    use ::axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::router;
    use crate::webhook::{Batch, EventType, HandlerError, Receiver, WebhookSecret, testing};

    const SECRET: &str = "axum-test-secret-0123456789abcdef";

    fn app(calls: Arc<AtomicUsize>) -> ::axum::Router {
        let receiver = Receiver::builder()
            .secret(WebhookSecret::new(SECRET).unwrap())
            .max_read_bytes(4096)
            .build()
            .unwrap();
        let handler = move |batch: Batch| {
            let calls = Arc::clone(&calls);
            async move {
                calls.fetch_add(batch.events.len(), Ordering::SeqCst);
                Ok::<(), HandlerError>(())
            }
        };
        router(Arc::new(receiver), Arc::new(handler))
    }

    fn request(headers: http::HeaderMap, body: Body) -> Request<Body> {
        let mut request = Request::post("/").body(body).unwrap();
        *request.headers_mut() = headers;
        request
    }

    /// Posts one `fs:add_folder` event sent with `secret`; the status answered and how many
    /// times the handler ran.
    async fn post_one_event(secret: &str) -> (StatusCode, usize) {
        let calls = Arc::new(AtomicUsize::new(0));
        let (headers, body) = testing::DeliveryBuilder::new(secret)
            .event(
                EventType::FsAddFolder,
                testing::sample_data(&EventType::FsAddFolder),
            )
            .build();
        let response = app(Arc::clone(&calls))
            .oneshot(request(headers, Body::from(body)))
            .await
            .unwrap();
        (response.status(), calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn axum_endpoint_answers_200_and_hands_over_events() {
        assert_eq!(post_one_event(SECRET).await, (StatusCode::OK, 1));
    }

    #[tokio::test]
    async fn axum_endpoint_answers_401_on_a_wrong_secret_without_calling_the_handler() {
        assert_eq!(post_one_event("wrong").await, (StatusCode::UNAUTHORIZED, 0));
    }

    #[tokio::test]
    async fn axum_endpoint_answers_413_over_the_body_limit_declared_or_not() {
        let calls = Arc::new(AtomicUsize::new(0));
        let headers = testing::authorized_headers(SECRET);
        let big = vec![b' '; 5000];

        let mut declared = headers.clone();
        declared.insert(http::header::CONTENT_LENGTH, "5000".parse().unwrap());
        let response = app(Arc::clone(&calls))
            .oneshot(request(declared, Body::from(big.clone())))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

        // No content-length: the limit applies while reading.
        let response = app(Arc::clone(&calls))
            .oneshot(request(headers, Body::from(big)))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}
