//! How connections are served, so that no client can take the server from the others: hyper's
//! HTTP/1 with a limit on the head (431) and a timeout on reading it (the connection is
//! closed), request bodies read within a size (413) and a time (408), and a cap on the
//! connections open at once. Past the cap a new connection closes the one idle the longest (no
//! request being served: a client that connected and sends nothing, or sends its head slowly,
//! is the first to go), and when every connection is serving a request, the new one is
//! answered 503 and closed.

use crate::config::ServerConfig;
use axum::body::{Body, Bytes, HttpBody};
use futures_util::StreamExt;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long connections may take to finish their requests once the sandbox stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Refusals being written at once; past it a refused connection is closed without a word.
const MAX_REFUSALS: usize = 64;

/// What a connection refused past the cap is told.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
retry-after: 1\r\ncontent-type: application/json\r\ncontent-length: 77\r\n\r\n\
{\"error\": \"the sandbox serves too many connections at once; try again later\"}";

/// Why a request body was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Longer than the limit (413).
    TooLarge { limit: usize },
    /// Not all there within the body read timeout (408).
    TimedOut { after: Duration },
    /// The client broke it off.
    Broken(String),
}

impl BodyError {
    /// The status that answers it.
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } => 413,
            BodyError::TimedOut { .. } => 408,
            BodyError::Broken(_) => 400,
        }
    }

    /// The code of the API's error bodies.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            BodyError::TooLarge { .. } => "PAYLOAD_TOO_LARGE",
            BodyError::TimedOut { .. } => "REQUEST_TIMEOUT",
            BodyError::Broken(_) => "BAD_REQUEST",
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "the request body is longer than {limit} bytes")
            }
            BodyError::TimedOut { after } => write!(
                f,
                "the request body did not arrive within {} ms",
                after.as_millis()
            ),
            BodyError::Broken(e) => write!(f, "cannot read the request body: {e}"),
        }
    }
}

/// Reads a request body of at most `limit` bytes within `timeout`: a `Content-Length` above
/// the limit is refused before a byte is read.
pub(crate) async fn read_body(
    headers: &axum::http::HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, BodyError> {
    let announced = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let read = async {
        let mut bytes = Vec::with_capacity(announced.map_or(0, |n| n as usize));
        let mut stream = body.into_data_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| BodyError::Broken(e.to_string()))?;
            if bytes.len() + chunk.len() > limit {
                return Err(BodyError::TooLarge { limit });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(BodyError::TimedOut { after: timeout }),
    }
}

/// One open connection as the cap sees it.
struct Tracked {
    /// Requests being served (a reply's body counts until it is sent).
    busy: Arc<AtomicUsize>,
    /// When it last stopped serving, milliseconds since the server started.
    idle_since: Arc<AtomicU64>,
    /// Closes it at once.
    evict: Arc<Notify>,
}

/// The connections open, for the cap.
#[derive(Default)]
struct Registry {
    next_id: u64,
    open: HashMap<u64, Tracked>,
}

impl Registry {
    /// The connection idle the longest, if any is idle.
    fn longest_idle(&self) -> Option<u64> {
        self.open
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0)
            .min_by_key(|(id, c)| (c.idle_since.load(Ordering::SeqCst), **id))
            .map(|(id, _)| *id)
    }
}

/// Serves `app` on `listener` until `stop` resolves; then connections get
/// [`SHUTDOWN_GRACE`] to finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    config: ServerConfig,
    stop: impl Future<Output = ()>,
) {
    let started = Instant::now();
    let registry = Arc::new(Mutex::new(Registry::default()));
    let shutdown = Arc::new(tokio::sync::watch::Sender::new(false));
    let refusals = Arc::new(AtomicUsize::new(0));
    let mut connections = JoinSet::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .max_header_size(config.max_head_bytes)
        .max_buf_size(config.max_head_bytes.max(8192) + 8192);
    let builder = Arc::new(builder);
    tokio::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => {
                    // Out of file descriptors, or a connection gone before it was accepted:
                    // wait a moment instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        let admitted = {
            let mut registry = lock(&registry);
            if registry.open.len() >= config.max_connections.max(1) {
                match registry.longest_idle() {
                    Some(id) => {
                        if let Some(evicted) = registry.open.remove(&id) {
                            evicted.evict.notify_one();
                        }
                        true
                    }
                    None => false,
                }
            } else {
                true
            }
        };
        if !admitted {
            refuse(stream, &refusals);
            continue;
        }
        let busy = Arc::new(AtomicUsize::new(0));
        let idle_since = Arc::new(AtomicU64::new(elapsed_ms(started)));
        let evict = Arc::new(Notify::new());
        let id = {
            let mut registry = lock(&registry);
            registry.next_id += 1;
            let id = registry.next_id;
            registry.open.insert(
                id,
                Tracked {
                    busy: busy.clone(),
                    idle_since: idle_since.clone(),
                    evict: evict.clone(),
                },
            );
            id
        };
        let tower = TowerToHyperService::new(app.clone());
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let guard = BusyGuard::enter(busy.clone(), idle_since.clone(), started);
            let answer = hyper::service::Service::call(&tower, request);
            async move {
                let response = answer.await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| {
                    Body::new(Guarded {
                        inner: body,
                        _guard: guard,
                    })
                }))
            }
        });
        let builder = builder.clone();
        let registry = registry.clone();
        let mut shutdown = shutdown.subscribe();
        connections.spawn(async move {
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let stopping = async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            };
            tokio::select! {
                _ = connection.as_mut() => {}
                () = evict.notified() => {}
                () = stopping => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            lock(&registry).open.remove(&id);
        });
    }
    drop(listener);
    shutdown.send_replace(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

fn lock(registry: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(|p| p.into_inner())
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Answers a connection past the cap 503 and closes it, in its own task (bounded in time and
/// in number, so refusing never holds the accept loop).
fn refuse(mut stream: TcpStream, refusals: &Arc<AtomicUsize>) {
    if refusals.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSALS {
        refusals.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let refusals = refusals.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let _ = stream.write_all(REFUSAL).await;
            let _ = stream.shutdown().await;
        })
        .await;
        refusals.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Counts a request as being served until its reply is sent.
struct BusyGuard {
    busy: Arc<AtomicUsize>,
    idle_since: Arc<AtomicU64>,
    started: Instant,
}

impl BusyGuard {
    fn enter(busy: Arc<AtomicUsize>, idle_since: Arc<AtomicU64>, started: Instant) -> Self {
        busy.fetch_add(1, Ordering::SeqCst);
        BusyGuard {
            busy,
            idle_since,
            started,
        }
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.idle_since
            .store(elapsed_ms(self.started), Ordering::SeqCst);
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reply body that keeps its connection counted busy until it is sent (or dropped).
struct Guarded {
    inner: Body,
    _guard: BusyGuard,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked(busy: usize, idle_since: u64) -> Tracked {
        Tracked {
            busy: Arc::new(AtomicUsize::new(busy)),
            idle_since: Arc::new(AtomicU64::new(idle_since)),
            evict: Arc::new(Notify::new()),
        }
    }

    #[test]
    fn the_connection_idle_the_longest_goes_first_and_busy_ones_never() {
        let mut registry = Registry::default();
        registry.open.insert(1, tracked(1, 0));
        registry.open.insert(2, tracked(0, 50));
        registry.open.insert(3, tracked(0, 20));
        assert_eq!(registry.longest_idle(), Some(3));
        registry.open.remove(&3);
        registry.open.remove(&2);
        assert_eq!(registry.longest_idle(), None);
    }

    #[test]
    fn the_refusal_announces_its_exact_length() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
    }

    #[tokio::test]
    async fn bodies_over_the_limit_or_late_are_refused_and_others_read_whole() {
        let headers = axum::http::HeaderMap::new();
        let read = |body: Body| read_body(&headers, body, 8, Duration::from_millis(50));
        assert_eq!(read(Body::from("12345678")).await, Ok(b"12345678".to_vec()));
        assert_eq!(
            read(Body::from("123456789")).await,
            Err(BodyError::TooLarge { limit: 8 })
        );
        let endless = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
        assert_eq!(
            read(Body::from_stream(endless)).await,
            Err(BodyError::TimedOut {
                after: Duration::from_millis(50)
            })
        );
        let mut announced = axum::http::HeaderMap::new();
        announced.insert("content-length", "9".parse().unwrap());
        let endless = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
        assert_eq!(
            read_body(
                &announced,
                Body::from_stream(endless),
                8,
                Duration::from_secs(60)
            )
            .await,
            Err(BodyError::TooLarge { limit: 8 }),
            "refused before a byte is read"
        );
    }
}
