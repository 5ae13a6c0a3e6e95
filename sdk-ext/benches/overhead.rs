//! Per-call overhead of `pubapi-sdk-ext` over the generated client and over raw reqwest +
//! serde_json, sequential and with 32 concurrent callers, against one loopback server. The
//! sdk-ext client has no limits here (its pacing is measured in `pacing.rs`): what is measured
//! is the policy a free slot costs (token, limiter, impersonation, classification).
//!
//! Then the same calls with the signals on: a `tracing` subscriber that records every span
//! (`tracing_subscriber::registry()`, so the SDK's span with its fields and request id is
//! built, entered and closed on every call), and, with `--features metrics`, a metrics
//! recorder that keeps every counter and histogram in a map (as an exporter would).
//!
//! `cargo bench -p pubapi-sdk-ext --bench overhead` (add `--features metrics` for the
//! metrics variant; in counted mode, `--features otel` adds the signals `otel`: spans into an
//! OpenTelemetry SDK through `tracing-opentelemetry`, and `traceparent` on every attempt)

use criterion::{Criterion, criterion_group, criterion_main};
use pubapi_sdk::types::Whoami;
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::{Budget, Client, Limits, SecretToken};
use std::hint::black_box;
mod support;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const WHOAMI: &str = r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":["Service.webhooks"]}"#;

/// Requests answered, printed at the end of a run: with `--profile-time`, instruction counts
/// of two runs divided by the difference in requests give the cost of one call.
static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Answers every request with the whoami body, keeping connections alive.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            socket.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read);
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{WHOAMI}",
                    WHOAMI.len()
                );
                let mut line = Vec::new();
                loop {
                    if support::skip_head(&mut lines, &mut line).await.is_none() {
                        return;
                    }
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                    SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    format!("http://{addr}/pubapi")
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct PlainWhoAmI {
    #[serde(rename = "clientId")]
    client_id: Option<String>,
    username: Option<String>,
    domain: Option<String>,
    scopes: Vec<String>,
}

fn overhead(c: &mut Criterion) {
    // Counted mode runs on one thread: a multi-threaded runtime's parking and work stealing
    // differ from run to run and blur instruction counts by several per cent.
    let runtime = if std::env::var_os("PUBAPI_OVERHEAD_COUNT").is_some() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Runtime::new().unwrap()
    };
    let base = runtime.block_on(serve());
    let raw = reqwest::Client::new();
    // Every variant sends the same request: the generated client alone has no notion of a
    // token, so its HTTP client adds the one header the API requires, as a user would.
    let token_header = || {
        let mut headers = reqwest::header::HeaderMap::new();
        let value = reqwest::header::HeaderValue::from_static("Bearer bench-token");
        headers.insert(reqwest::header::AUTHORIZATION, value);
        headers
    };
    let generated_http = reqwest::Client::builder()
        .default_headers(token_header())
        .build()
        .unwrap();
    let generated = pubapi_sdk::Client::new_with_client(
        &base,
        generated_http,
        pubapi_sdk::hooks::Inner::default(),
    );
    // The generated client on an HTTP client configured as sdk-ext configures its own (read
    // timeout, connect timeout, no redirects, HTTP/1.1, no retry layer of reqwest's own): what is left
    // is the policy's cost.
    let same_http = reqwest::Client::builder()
        .default_headers(token_header())
        .read_timeout(std::time::Duration::from_secs(60))
        .connect_timeout(std::time::Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .http1_only()
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .build()
        .unwrap();
    let generated_same_http =
        pubapi_sdk::Client::new_with_client(&base, same_http, pubapi_sdk::hooks::Inner::default());
    // The generated client on the HTTP client its own `Client::new` builds (15 s to connect,
    // 15 s for the whole call, the body included), with the token header: the generated
    // client as it comes, bounded in time as sdk-ext is.
    let own_timeouts = std::time::Duration::from_secs(15);
    let own_http = reqwest::Client::builder()
        .default_headers(token_header())
        .connect_timeout(own_timeouts)
        .timeout(own_timeouts)
        .build()
        .unwrap();
    let generated_own_timeouts =
        pubapi_sdk::Client::new_with_client(&base, own_http, pubapi_sdk::hooks::Inner::default());
    let unlimited = Budget::new(None, None);
    let ext = Client::builder()
        .base_url(&base)
        .token(SecretToken::try_from("bench-token").unwrap())
        .limits(Limits {
            general: unlimited,
            ai: unlimited,
        })
        .build()
        .unwrap();
    let url = format!("{base}/v1/whoami");

    let raw_call = || async {
        let body = raw
            .get(&url)
            .bearer_auth("bench-token")
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        serde_json::from_slice::<PlainWhoAmI>(&body).unwrap()
    };
    let generated_call = || async { generated.whoami().send().await.unwrap().into_inner() };
    let generated_same_http_call = || async {
        generated_same_http
            .whoami()
            .send()
            .await
            .unwrap()
            .into_inner()
    };
    let generated_own_timeouts_call = || async {
        generated_own_timeouts
            .whoami()
            .send()
            .await
            .unwrap()
            .into_inner()
    };
    let ext_call = || async { ext.identity().whoami().await.unwrap() };

    // Counted mode, for instruction counts that do not depend on how busy the machine is:
    // `PUBAPI_OVERHEAD_COUNT=<variant>:<sequential|concurrent>:<off|on|otel>:<calls>` (a variant is
    // `generated_client`, `generated_client_same_http_settings`,
    // `generated_client_own_timeouts` or `sdk_ext`)
    // makes exactly that many calls (after a warm-up of 64) and exits; two counts' difference
    // in callgrind, divided by the difference in calls, is the cost of one call.
    if let Ok(spec) = std::env::var("PUBAPI_OVERHEAD_COUNT") {
        let parts: Vec<&str> = spec.split(':').collect();
        let [variant, mode, signals, calls] = parts[..] else {
            panic!("PUBAPI_OVERHEAD_COUNT={spec}: want variant:mode:signals:calls");
        };
        let calls: usize = calls.parse().expect("a number of calls");
        match signals {
            "on" => signals_on(),
            #[cfg(feature = "otel")]
            "otel" => signals_otel(),
            "off" => {}
            other => panic!("unknown signals {other}"),
        }
        let call = || async {
            match variant {
                "sdk_ext" => black_box::<Whoami>(ext_call().await),
                "generated_client" => black_box::<Whoami>(generated_call().await),
                "generated_client_same_http_settings" => {
                    black_box::<Whoami>(generated_same_http_call().await)
                }
                "generated_client_own_timeouts" => {
                    black_box::<Whoami>(generated_own_timeouts_call().await)
                }
                other => panic!("unknown variant {other}"),
            };
        };
        runtime.block_on(async {
            for round in [64, calls] {
                match mode {
                    "sequential" => {
                        for _ in 0..round {
                            call().await;
                        }
                    }
                    "concurrent" => {
                        for _ in 0..round / 32 {
                            futures_util::future::join_all((0..32).map(|_| call())).await;
                        }
                    }
                    other => panic!("unknown mode {other}"),
                }
            }
        });
        eprintln!(
            "requests served: {}",
            SERVED.load(std::sync::atomic::Ordering::Relaxed)
        );
        std::process::exit(0);
    }

    let mut sequential = c.benchmark_group("whoami_sequential");
    sequential.bench_function("raw_reqwest_serde", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(raw_call().await) })
    });
    sequential.bench_function("generated_client", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box::<Whoami>(generated_call().await) })
    });
    sequential.bench_function("generated_client_same_http_settings", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box::<Whoami>(generated_same_http_call().await) })
    });
    sequential.bench_function("sdk_ext", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box::<Whoami>(ext_call().await) })
    });
    sequential.finish();

    let mut concurrent = c.benchmark_group("whoami_32_concurrent");
    concurrent.throughput(criterion::Throughput::Elements(32));
    concurrent.bench_function("raw_reqwest_serde", |b| {
        b.to_async(&runtime)
            .iter(|| async { futures_util::future::join_all((0..32).map(|_| raw_call())).await })
    });
    concurrent.bench_function("generated_client", |b| {
        b.to_async(&runtime).iter(|| async {
            futures_util::future::join_all((0..32).map(|_| generated_call())).await
        })
    });
    concurrent.bench_function("generated_client_same_http_settings", |b| {
        b.to_async(&runtime).iter(|| async {
            futures_util::future::join_all((0..32).map(|_| generated_same_http_call())).await
        })
    });
    concurrent.bench_function("sdk_ext", |b| {
        b.to_async(&runtime)
            .iter(|| async { futures_util::future::join_all((0..32).map(|_| ext_call())).await })
    });
    concurrent.finish();

    // The signals on, for the rest of the run: spans recorded, and metrics when the feature
    // is on. The generated client is measured again beside them, in the same conditions.
    signals_on();
    let on = if cfg!(feature = "metrics") {
        "spans_and_metrics_on"
    } else {
        "spans_on"
    };
    let mut sequential = c.benchmark_group(format!("whoami_sequential_{on}"));
    sequential.bench_function("generated_client", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box::<Whoami>(generated_call().await) })
    });
    sequential.bench_function("sdk_ext", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box::<Whoami>(ext_call().await) })
    });
    sequential.finish();
    let mut concurrent = c.benchmark_group(format!("whoami_32_concurrent_{on}"));
    concurrent.throughput(criterion::Throughput::Elements(32));
    concurrent.bench_function("generated_client", |b| {
        b.to_async(&runtime).iter(|| async {
            futures_util::future::join_all((0..32).map(|_| generated_call())).await
        })
    });
    concurrent.bench_function("sdk_ext", |b| {
        b.to_async(&runtime)
            .iter(|| async { futures_util::future::join_all((0..32).map(|_| ext_call())).await })
    });
    concurrent.finish();
    eprintln!(
        "requests served: {}",
        SERVED.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// Spans recorded (a `tracing` registry at INFO) and, with the `metrics` feature, every
/// metric kept by key.
fn signals_on() {
    tracing::subscriber::set_global_default(tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::registry(),
        tracing_subscriber::filter::LevelFilter::INFO,
    ))
    .unwrap();
    #[cfg(feature = "metrics")]
    metrics::set_global_recorder(keeping::Keeping::default()).unwrap();
}

/// Spans through `tracing-opentelemetry` into an OpenTelemetry SDK that keeps no span (no
/// processor: what is measured is the SDK's side, not an exporter's), and W3C trace context
/// propagated on every attempt (feature `otel`): the call's and each attempt's span become
/// OpenTelemetry spans, and each attempt carries its `traceparent`.
#[cfg(feature = "otel")]
fn signals_otel() {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("bench"));
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(layer),
    )
    .unwrap();
    // Kept for the whole run.
    std::mem::forget(provider);
}

/// A recorder that keeps every value in a map by key, as an exporter does.
#[cfg(feature = "metrics")]
mod keeping {
    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct Keeping(Mutex<HashMap<Key, Arc<Cell>>>);

    #[derive(Default)]
    pub struct Cell(AtomicU64);

    impl metrics::CounterFn for Cell {
        fn increment(&self, value: u64) {
            self.0.fetch_add(value, Ordering::Relaxed);
        }
        fn absolute(&self, value: u64) {
            self.0.store(value, Ordering::Relaxed);
        }
    }

    impl metrics::GaugeFn for Cell {
        fn increment(&self, _: f64) {}
        fn decrement(&self, _: f64) {}
        fn set(&self, value: f64) {
            self.0.store(value.to_bits(), Ordering::Relaxed);
        }
    }

    impl metrics::HistogramFn for Cell {
        fn record(&self, value: f64) {
            self.0.fetch_add(value.to_bits() & 1, Ordering::Relaxed);
        }
    }

    impl Keeping {
        fn cell(&self, key: &Key) -> Arc<Cell> {
            let mut map = self.0.lock().unwrap();
            if let Some(cell) = map.get(key) {
                return cell.clone();
            }
            map.entry(key.clone()).or_default().clone()
        }
    }

    impl Recorder for Keeping {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell(key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell(key))
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(self.cell(key))
        }
    }
}

criterion_group!(benches, overhead);
criterion_main!(benches);
