//! How connections are served, so that no client can take the server from the others: hyper's
//! HTTP/1 with a limit on the head (431) and a timeout on reading it (the connection is
//! closed), request bodies read within a size (413), a time and a minimum data rate (408), and
//! a cap on the connections open at once. Past the cap a new connection closes the one idle
//! the longest (no request being served: a client that connected and sends nothing, or sends
//! its head slowly, is the first to go); when none is idle, the one receiving a request body
//! the slowest (bytes a second since its head, among bodies begun at least
//! [`EVICTION_GRACE`] ago: a client trickling a body is the next to go); and when every
//! connection is serving a request it has whole, the new one is answered 503 and closed.
//!
//! Of the remedies nginx and Kestrel use against slow bodies we take two: the minimum data
//! rate ([`ServerConfig::min_body_bytes_per_second`]) ends a trickle within seconds, and the
//! eviction of the slowest reader makes room at once for a client that comes while the cap is
//! full of tricklers. A cap per peer would not help a sandbox whose clients all come from
//! 127.0.0.1.

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

/// The most of a body an answer that does not need it reads (and drops) so that its
/// connection stays open for the next request; past it the answer says `Connection: close`.
pub(crate) const DRAIN_CAP: usize = 1 << 20;

/// How long a body is read before its connection may be evicted as the slowest reader, and
/// before the minimum data rate applies.
pub(crate) const EVICTION_GRACE: Duration = Duration::from_secs(1);

/// How long a body may arrive at any rate before the minimum data rate applies (Kestrel's
/// grace period).
const MIN_RATE_GRACE: Duration = Duration::from_secs(5);

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
    /// Arriving slower than the minimum data rate (408).
    TooSlow { bytes_per_second: u64 },
    /// The client broke it off.
    Broken(String),
}

impl BodyError {
    /// The status that answers it.
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } => 413,
            BodyError::TimedOut { .. } | BodyError::TooSlow { .. } => 408,
            BodyError::Broken(_) => 400,
        }
    }

    /// The code of the API's error bodies.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            BodyError::TooLarge { .. } => "PAYLOAD_TOO_LARGE",
            BodyError::TimedOut { .. } | BodyError::TooSlow { .. } => "REQUEST_TIMEOUT",
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
            BodyError::TooSlow { bytes_per_second } => write!(
                f,
                "the request body arrived slower than {bytes_per_second} bytes a second"
            ),
            BodyError::Broken(e) => write!(f, "cannot read the request body: {e}"),
        }
    }
}

/// How long a body may take: in all, and at least how fast once [`MIN_RATE_GRACE`] passed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyPace {
    /// The whole body within it.
    pub(crate) timeout: Duration,
    /// Bytes a second on average after the grace; 0: no minimum.
    pub(crate) min_bytes_per_second: u64,
}

impl BodyPace {
    /// The pace `config` sets.
    pub(crate) fn of(config: &ServerConfig) -> Self {
        BodyPace {
            timeout: config.body_read_timeout,
            min_bytes_per_second: config.min_body_bytes_per_second,
        }
    }

    /// When a body begun at `started` that has `received` bytes so far must have more: the
    /// grace plus the time its bytes buy at the minimum rate.
    fn rate_deadline(&self, started: Instant, received: usize) -> Option<Instant> {
        if self.min_bytes_per_second == 0 {
            return None;
        }
        let bought = Duration::from_secs_f64(received as f64 / self.min_bytes_per_second as f64);
        Some(started + MIN_RATE_GRACE + bought)
    }
}

/// Reads a request body of at most `limit` bytes at `pace`: a `Content-Length` above the limit
/// is refused before a byte is read.
pub(crate) async fn read_body(
    headers: &axum::http::HeaderMap,
    body: Body,
    limit: usize,
    pace: BodyPace,
) -> Result<Vec<u8>, BodyError> {
    let announced = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let started = Instant::now();
    let timeout_at = started + pace.timeout;
    let mut bytes = Vec::with_capacity(announced.map_or(0, |n| n as usize));
    let mut stream = body.into_data_stream();
    loop {
        let rate_deadline = pace.rate_deadline(started, bytes.len());
        let deadline = rate_deadline.map_or(timeout_at, |at| at.min(timeout_at));
        let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(chunk)) => chunk.map_err(|e| BodyError::Broken(e.to_string()))?,
            Ok(None) => return Ok(bytes),
            Err(_) if rate_deadline.is_some_and(|at| at < timeout_at) => {
                return Err(BodyError::TooSlow {
                    bytes_per_second: pace.min_bytes_per_second,
                });
            }
            Err(_) => {
                return Err(BodyError::TimedOut {
                    after: pace.timeout,
                });
            }
        };
        if bytes.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// Reads and drops what is left of a body the answer does not need, up to `cap` bytes at
/// `pace`, so the connection can serve its next request; `false` when the body was longer,
/// broken or late (the answer then says `Connection: close`).
pub(crate) async fn drain_body(
    headers: &axum::http::HeaderMap,
    body: Body,
    cap: usize,
    pace: BodyPace,
) -> bool {
    if body.is_end_stream() {
        return true;
    }
    read_body(headers, body, cap, pace).await.is_ok()
}

/// One open connection as the cap sees it.
#[derive(Clone)]
struct Tracked {
    /// Requests being served (a reply's body counts until it is sent).
    busy: Arc<AtomicUsize>,
    /// When it last stopped serving, milliseconds since the server started.
    idle_since: Arc<AtomicU64>,
    /// The request body it is receiving, if any.
    receiving: Arc<Receiving>,
    /// Closes it at once.
    evict: Arc<Notify>,
}

/// The request body a connection is receiving: when it began (milliseconds since the server
/// started, plus one; 0 when none is) and how many bytes came.
#[derive(Default)]
struct Receiving {
    since: AtomicU64,
    bytes: AtomicU64,
}

impl Receiving {
    /// Bytes a second since the body began, if it began at least `grace_ms` before `now_ms`.
    fn rate(&self, now_ms: u64, grace_ms: u64) -> Option<u64> {
        let since = self.since.load(Ordering::SeqCst).checked_sub(1)?;
        let elapsed = now_ms.saturating_sub(since);
        if elapsed < grace_ms {
            return None;
        }
        Some(self.bytes.load(Ordering::SeqCst).saturating_mul(1000) / elapsed.max(1))
    }
}

/// The connections open, for the cap.
#[derive(Default)]
struct Registry {
    next_id: u64,
    open: HashMap<u64, Tracked>,
}

impl Registry {
    /// Whether a new connection may open with at most `max_connections` open: when all
    /// are taken, the one idle the longest, or else the slowest reader, is evicted for it;
    /// `false` when there is none to evict.
    fn make_room(&mut self, max_connections: usize, now_ms: u64) -> bool {
        if self.open.len() < max_connections.max(1) {
            return true;
        }
        let Some(id) = self.longest_idle().or_else(|| self.slowest_reader(now_ms)) else {
            return false;
        };
        if let Some(evicted) = self.open.remove(&id) {
            evicted.evict.notify_one();
        }
        true
    }

    /// Tracks a new connection; its id.
    fn track(&mut self, tracked: Tracked) -> u64 {
        self.next_id += 1;
        self.open.insert(self.next_id, tracked);
        self.next_id
    }

    /// The connection idle the longest, if any is idle.
    fn longest_idle(&self) -> Option<u64> {
        self.open
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0)
            .min_by_key(|(id, c)| (c.idle_since.load(Ordering::SeqCst), **id))
            .map(|(id, _)| *id)
    }

    /// The connection receiving a request body the slowest at `now_ms` (bytes a second,
    /// the longest receiving among equals), among bodies begun at least
    /// [`EVICTION_GRACE`] ago.
    fn slowest_reader(&self, now_ms: u64) -> Option<u64> {
        let grace = u64::try_from(EVICTION_GRACE.as_millis()).unwrap_or(u64::MAX);
        self.open
            .iter()
            .filter_map(|(id, c)| {
                let rate = c.receiving.rate(now_ms, grace)?;
                Some((rate, c.receiving.since.load(Ordering::SeqCst), *id))
            })
            .min()
            .map(|(_, _, id)| id)
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
        let admitted = lock(&registry).make_room(config.max_connections, elapsed_ms(started));
        if !admitted {
            refuse(stream, &refusals);
            continue;
        }
        // Tracked before its task runs, so that the next accept counts it.
        let connection = Connection::track(&builder, &registry, &shutdown, started);
        connections.spawn(connection.serve(stream, app.clone()));
    }
    drop(listener);
    shutdown.send_replace(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

/// One connection, tracked in its server's registry.
struct Connection {
    builder: Arc<hyper::server::conn::http1::Builder>,
    registry: Arc<Mutex<Registry>>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    started: Instant,
    id: u64,
    tracked: Tracked,
}

impl Connection {
    /// A new connection, tracked in `registry` now.
    fn track(
        builder: &Arc<hyper::server::conn::http1::Builder>,
        registry: &Arc<Mutex<Registry>>,
        shutdown: &tokio::sync::watch::Sender<bool>,
        started: Instant,
    ) -> Connection {
        let tracked = Tracked {
            busy: Arc::new(AtomicUsize::new(0)),
            idle_since: Arc::new(AtomicU64::new(elapsed_ms(started))),
            receiving: Arc::new(Receiving::default()),
            evict: Arc::new(Notify::new()),
        };
        let id = lock(registry).track(tracked.clone());
        Connection {
            builder: builder.clone(),
            registry: registry.clone(),
            shutdown: shutdown.subscribe(),
            started,
            id,
            tracked,
        }
    }

    /// Serves `app` on `stream` until the connection ends, is evicted, or the server shuts
    /// down (then it finishes its requests); then it is no longer tracked.
    async fn serve(self, stream: TcpStream, app: axum::Router) {
        let Connection {
            builder,
            registry,
            mut shutdown,
            started,
            id,
            tracked:
                Tracked {
                    busy,
                    idle_since,
                    receiving,
                    evict,
                },
        } = self;
        let tower = TowerToHyperService::new(app);
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let guard = BusyGuard::enter(busy.clone(), idle_since.clone(), started);
            let request =
                request.map(|incoming| Metered::new(incoming, receiving.clone(), started));
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
    }
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

/// A request body that tells its connection's [`Receiving`] while it arrives.
struct Metered {
    inner: Incoming,
    receiving: Arc<Receiving>,
}

impl Metered {
    fn new(inner: Incoming, receiving: Arc<Receiving>, started: Instant) -> Self {
        receiving.bytes.store(0, Ordering::SeqCst);
        let since = if inner.is_end_stream() {
            0
        } else {
            elapsed_ms(started).saturating_add(1)
        };
        receiving.since.store(since, Ordering::SeqCst);
        Metered { inner, receiving }
    }
}

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.receiving
                        .bytes
                        .fetch_add(data.len() as u64, Ordering::SeqCst);
                }
            }
            Poll::Ready(_) => this.receiving.since.store(0, Ordering::SeqCst),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.receiving.since.store(0, Ordering::SeqCst);
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
            receiving: Arc::new(Receiving::default()),
            evict: Arc::new(Notify::new()),
        }
    }

    /// A busy connection receiving a body begun at `since_ms` with `bytes` so far.
    fn receiving(since_ms: u64, bytes: u64) -> Tracked {
        let tracked = tracked(1, 0);
        tracked
            .receiving
            .since
            .store(since_ms + 1, Ordering::SeqCst);
        tracked.receiving.bytes.store(bytes, Ordering::SeqCst);
        tracked
    }

    #[test]
    fn the_slowest_reader_past_its_grace_goes_when_none_is_idle() {
        let mut registry = Registry::default();
        registry.open.insert(1, tracked(1, 0)); // serving a request it has whole
        registry.open.insert(2, receiving(0, 50_000)); // 5 KB/s at 10 s
        registry.open.insert(3, receiving(0, 100)); // 10 B/s
        registry.open.insert(4, receiving(9_500, 0)); // began half a second ago
        assert_eq!(registry.longest_idle(), None);
        assert_eq!(registry.slowest_reader(10_000), Some(3));
        registry.open.remove(&3);
        assert_eq!(registry.slowest_reader(10_000), Some(2));
        registry.open.remove(&2);
        assert_eq!(
            registry.slowest_reader(10_000),
            None,
            "not within its grace"
        );
        assert_eq!(registry.slowest_reader(11_000), Some(4));
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
        let pace = BodyPace {
            timeout: Duration::from_millis(50),
            min_bytes_per_second: 0,
        };
        let read = |body: Body| read_body(&headers, body, 8, pace);
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
                BodyPace {
                    timeout: Duration::from_secs(60),
                    min_bytes_per_second: 0,
                }
            )
            .await,
            Err(BodyError::TooLarge { limit: 8 }),
            "refused before a byte is read"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_slower_than_the_minimum_rate_is_refused_after_the_grace() {
        let headers = axum::http::HeaderMap::new();
        let pace = BodyPace {
            timeout: Duration::from_secs(60),
            min_bytes_per_second: 100,
        };
        // A byte a second: within the grace of 5 s it is kept, then it falls behind.
        let trickle = futures_util::stream::unfold(0u32, |n| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), n + 1))
        });
        let started = Instant::now();
        assert_eq!(
            read_body(&headers, Body::from_stream(trickle), 1 << 20, pace).await,
            Err(BodyError::TooSlow {
                bytes_per_second: 100
            })
        );
        let took = started.elapsed();
        assert!(
            took >= MIN_RATE_GRACE && took < Duration::from_secs(6),
            "{took:?}"
        );
        // At the rate, the whole body is read.
        let steady = futures_util::stream::iter(0..20).then(|_| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 150]))
        });
        let read = read_body(&headers, Body::from_stream(steady), 1 << 20, pace).await;
        assert_eq!(read.map(|b| b.len()), Ok(3000));
    }
}
