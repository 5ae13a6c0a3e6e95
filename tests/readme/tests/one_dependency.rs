//! A program that depends on `pubapi-sdk-ext` alone (and tokio) can name every type of its
//! public signatures and implement every public trait: this file can name no other crate
//! (`pubapi-sandbox` only stands in for the platform). Each test also checks that the
//! implementation is the one the SDK used.

use pubapi_sandbox::{Sandbox, SandboxConfig};
use pubapi_sdk_ext::fleet::{Acquired, Lease, Reservation, Reserve};
use pubapi_sdk_ext::fleet::{Answer, CheckpointStore, FileCheckpoints, FleetBudget, FleetError};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::transport::ReqwestTransport;
use pubapi_sdk_ext::webhook::{
    Batch, ClaimFuture, Claimant, DedupError, DedupKey, DedupStore, HandlerError, MemoryDedup,
    Receiver, WebhookSecret,
};
use pubapi_sdk_ext::{
    BoxFuture, Client, ClientBuilder, Fleet, Transport, http, reqwest, sdk, serde_json, types,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A sandbox and its client for `user`, built by `configure` from the builder sdk-ext names
/// (the sandbox stops serving when it is dropped).
async fn client_of(
    user: &str,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> (Sandbox, Client) {
    let sandbox = Sandbox::start(SandboxConfig::testing()).await;
    let client = configure(sandbox.client_builder_for(user))
        .build()
        .expect("client builds");
    (sandbox, client)
}

/// What a transport's `send` returns.
type Sending<'a> = BoxFuture<'a, reqwest::Result<reqwest::Response>>;

/// Sends with reqwest and counts what it sent: a caller's wrapper around the transport.
#[derive(Debug, Default)]
struct CountingTransport {
    sent: AtomicUsize,
}

impl Transport for CountingTransport {
    fn send<'a>(&'a self, client: &'a reqwest::Client, request: reqwest::Request) -> Sending<'a> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        ReqwestTransport.send(client, request)
    }
}

#[tokio::test]
async fn generated_client_and_transport_are_named_from_pubapi_sdk_ext() {
    let transport = Arc::new(CountingTransport::default());
    let (_sandbox, client) = client_of("admin", |builder| {
        builder.isolated_budget().transport(transport.clone())
    })
    .await;

    let generated: &sdk::Client = client.sdk();
    let response: Result<sdk::ResponseValue<types::Whoami>, sdk::Error<()>> =
        generated.whoami().send().await;
    let me = response.expect("whoami answers").into_inner();

    assert_eq!(me.username, "admin");
    assert_eq!(transport.sent.load(Ordering::SeqCst), 1);
}

/// Grants every start at once and counts the bookings: a caller's own fleet store.
#[derive(Debug, Default)]
struct GrantingBudget {
    reserved: AtomicUsize,
}

impl FleetBudget for GrantingBudget {
    fn reserve<'a>(&'a self, request: Reserve<'a>) -> BoxFuture<'a, Result<Answer, FleetError>> {
        let _ = request;
        self.reserved.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(Answer {
                reservation: Reservation::Granted {
                    wait: Duration::ZERO,
                },
                generation: "one".to_string(),
                lost_history: false,
            })
        })
    }
}

#[tokio::test]
async fn a_fleet_budget_is_implemented_from_pubapi_sdk_ext() {
    let budget = Arc::new(GrantingBudget::default());
    // Its own user: a token's clients in one process share one budget, fleet included.
    let (_sandbox, client) =
        client_of("sam", |builder| builder.fleet(Fleet::new(budget.clone()))).await;

    let me = client.identity().whoami().await.expect("whoami answers");

    assert_eq!(me.username, "sam");
    assert!(budget.reserved.load(Ordering::SeqCst) >= 1);
}

/// Keeps checkpoints in files and counts the saves: a caller's wrapper around a store.
#[derive(Debug)]
struct CountingCheckpoints {
    inner: FileCheckpoints,
    saved: AtomicUsize,
}

impl CheckpointStore for CountingCheckpoints {
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        self.inner.load(name)
    }

    fn save<'a>(
        &'a self,
        lease: &'a Lease,
        id: i64,
    ) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        self.saved.fetch_add(1, Ordering::SeqCst);
        self.inner.save(lease, id)
    }

    fn acquire<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Acquired, FleetError>> {
        self.inner.acquire(name)
    }

    fn renew<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<bool, FleetError>> {
        self.inner.renew(lease)
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), FleetError>> {
        self.inner.release(lease)
    }
}

#[tokio::test]
async fn a_checkpoint_store_is_implemented_from_pubapi_sdk_ext() {
    let path = std::env::temp_dir().join(format!(
        "pubapi-readme-check-{}.checkpoints",
        std::process::id()
    ));
    let store = CountingCheckpoints {
        inner: FileCheckpoints::new(&path),
        saved: AtomicUsize::new(0),
    };

    let Acquired::Lease(lease) = store.acquire("permissions").await.expect("acquired") else {
        panic!("no other consumer holds the stream");
    };
    store.save(&lease, 42).await.expect("saved");
    let loaded = store.load("permissions").await;
    store.release(&lease).await.expect("released");
    let lock = store.inner.lock_path();
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(lock);

    assert_eq!(loaded.expect("loaded"), Some(42));
    assert_eq!(store.saved.load(Ordering::SeqCst), 1);
}

/// Remembers deliveries in memory and counts the claims: a caller's wrapper around a store.
#[derive(Debug)]
struct CountingDedup {
    inner: MemoryDedup,
    // Shared with the test: the receiver owns the store.
    claims: Arc<AtomicUsize>,
}

impl DedupStore for CountingDedup {
    fn claim<'a>(&'a self, claimant: &'a Claimant, keys: &'a [DedupKey]) -> ClaimFuture<'a> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.inner.claim(claimant, keys)
    }

    fn commit<'a>(
        &'a self,
        claimant: &'a Claimant,
        keys: &'a [DedupKey],
    ) -> BoxFuture<'a, Result<(), DedupError>> {
        self.inner.commit(claimant, keys)
    }

    fn release(
        &self,
        claimant: Claimant,
        keys: Vec<DedupKey>,
    ) -> BoxFuture<'static, Result<(), DedupError>> {
        self.inner.release(claimant, keys)
    }

    fn window(&self) -> Duration {
        self.inner.window()
    }
}

#[tokio::test]
async fn a_webhook_delivery_is_handled_with_http_types_from_pubapi_sdk_ext() {
    let claims = Arc::new(AtomicUsize::new(0));
    let store = CountingDedup {
        inner: MemoryDedup::new(Duration::from_secs(600), 1_000),
        claims: claims.clone(),
    };
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new("s3cr3t-from-the-registration").expect("secret"))
        .dedup_store("orders", store)
        .build()
        .expect("receiver builds");
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_static("s3cr3t-from-the-registration"),
    );
    let body = serde_json::json!({"data": [{
        "eventId": "evt-1", "domain": "example", "timestamp": 1_700_000_000_000_i64,
        "user": {"id": 1001, "displayName": "Ada", "username": "ada", "email": "ada@example.com"},
        "actionSource": "PublicAPI", "eventType": "fs:add_folder", "webhookId": "wh-1",
        "data": {"targetPath": "/Shared/Reports"}
    }]})
    .to_string();
    let handler = |batch: Batch| async move {
        assert_eq!(batch.events.len(), 1);
        Ok::<(), HandlerError>(())
    };

    let first = receiver.handle(&headers, body.as_bytes(), &handler).await;
    let again = receiver.handle(&headers, body.as_bytes(), &handler).await;

    assert_eq!(first.status_code(), http::StatusCode::OK);
    assert_eq!((first.accepted, again.accepted), (1, 0));
    assert_eq!(claims.load(Ordering::SeqCst), 2);
}

/// Compiled, not run (it needs a Redis): a shared dedup store from the re-exported `redis`.
#[allow(
    dead_code,
    reason = "compiled to show the types are reachable; needs a Redis to run"
)]
async fn redis_dedup(
    url: &str,
) -> Result<pubapi_sdk_ext::webhook::RedisDedup, Box<dyn std::error::Error>> {
    use pubapi_sdk_ext::redis;
    let manager = redis::aio::ConnectionManager::new(redis::Client::open(url)?).await?;
    Ok(pubapi_sdk_ext::webhook::RedisDedup::new(manager))
}

/// The doc tests of this crate may also name its dev-dependency `pubapi-sandbox`: only the
/// sandbox's own README should, so that the other READMEs' programs need `pubapi-sdk-ext` and
/// tokio alone.
#[test]
fn only_the_sandbox_readme_names_the_sandbox_crate() {
    let readmes = [
        ("README.md", include_str!("../../../README.md")),
        (
            "sdk-ext/README.md",
            include_str!("../../../sdk-ext/README.md"),
        ),
        ("cli/README.md", include_str!("../../../cli/README.md")),
    ];
    for (name, text) in readmes {
        for block in rust_blocks(text) {
            assert!(
                !block.contains("pubapi_sandbox"),
                "{name}: a Rust block names pubapi_sandbox, a dev-dependency:\n{block}"
            );
        }
    }
}

/// The fenced blocks rustdoc compiles: no language, or `rust` and its attributes.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        match (&mut current, trimmed.strip_prefix("```")) {
            (None, Some(info)) => {
                let rust = info.split(',').all(|word| {
                    matches!(
                        word.trim(),
                        "" | "rust" | "no_run" | "ignore" | "should_panic" | "compile_fail"
                    ) || word.trim().starts_with("edition")
                });
                current = Some(String::new());
                if !rust {
                    current = Some("\u{0}".to_string());
                }
            }
            (Some(block), Some(_)) => {
                if !block.starts_with('\u{0}') {
                    blocks.push(std::mem::take(block));
                }
                current = None;
            }
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

#[test]
fn rust_blocks_are_told_from_other_blocks() {
    let text = "```sh\ncargo run\n```\n\n```no_run\nuse pubapi_sandbox::Sandbox;\n```\n";
    assert_eq!(rust_blocks(text), ["use pubapi_sandbox::Sandbox;\n"]);
}
