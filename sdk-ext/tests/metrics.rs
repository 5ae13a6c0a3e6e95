//! Metrics through the `metrics` facade (feature `metrics`): what a call, its retries, a
//! throttle, the gateway's counters and the webhook receiver record, under the names and
//! labels `pubapi_sdk_ext::telemetry` documents, and never a secret in a label.

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use pubapi_sdk_ext::prelude::*;
use pubapi_sdk_ext::testing::{Answer, Script};
use pubapi_sdk_ext::webhook::Receiver;
use pubapi_sdk_ext::{ActAs, SecretToken};
use std::sync::{Arc, Mutex};

const CANARY: &str = "CANARY-token-7f3a9c";

/// One value recorded: name, labels, kind, value.
type Value = (String, Vec<(String, String)>, &'static str, f64);

/// Every value recorded.
#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<Vec<Value>>>);

struct Handle {
    key: Key,
    kind: &'static str,
    recorded: Recorded,
}

impl Handle {
    fn push(&self, value: f64) {
        let labels = self
            .key
            .labels()
            .map(|l| (l.key().to_string(), l.value().to_string()))
            .collect();
        self.recorded.0.lock().unwrap().push((
            self.key.name().to_string(),
            labels,
            self.kind,
            value,
        ));
    }
}

impl CounterFn for Handle {
    fn increment(&self, value: u64) {
        self.push(value as f64);
    }
    fn absolute(&self, value: u64) {
        self.push(value as f64);
    }
}

impl GaugeFn for Handle {
    fn increment(&self, value: f64) {
        self.push(value);
    }
    fn decrement(&self, value: f64) {
        self.push(-value);
    }
    fn set(&self, value: f64) {
        self.push(value);
    }
}

impl HistogramFn for Handle {
    fn record(&self, value: f64) {
        self.push(value);
    }
}

impl Recorder for Recorded {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(self.handle(key, "counter")))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(self.handle(key, "gauge")))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(self.handle(key, "histogram")))
    }
}

impl Recorded {
    fn handle(&self, key: &Key, kind: &'static str) -> Handle {
        Handle {
            key: key.clone(),
            kind,
            recorded: self.clone(),
        }
    }

    /// The sum of what was recorded under `name` with every label of `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, l, _, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, _, _, value)| value)
            .sum()
    }

    fn count(&self, name: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, ..)| n == name)
            .count()
    }
}

/// The token [`CANARY`], which no label may show.
fn canary() -> SecretToken {
    SecretToken::try_from(CANARY).unwrap()
}

/// Runs `body` on a current-thread runtime with paused time, `recorded` its recorder.
fn with_recorder<F: std::future::Future>(recorded: &Recorded, body: F) -> F::Output {
    metrics::with_local_recorder(recorded, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(body)
    })
}

#[test]
fn a_call_its_retries_a_throttle_and_the_gateways_counters_are_counted_without_secrets() {
    let recorded = Recorded::default();
    let throttled = Answer::empty(403)
        .header("x-gateway-error-code", "ERR_403_DEVELOPER_OVER_QPS")
        .header("retry-after", "1");
    let counted = Answer::json(200, r#"{"username":"admin"}"#)
        .header("x-accesstoken-quota-allotted", "1000")
        .header("x-accesstoken-quota-current", "640");
    let script = Script::new(vec![Answer::empty(503), throttled], counted);
    with_recorder(&recorded, async {
        let client = script.builder().token(canary()).build().unwrap();
        let view = client.act_as(ActAs::username("bob").unwrap());
        view.sdk().whoami().send().await.unwrap();
        // Refused before sending: a path value that cannot be one segment.
        let _ = client
            .sdk()
            .get_webhook_details()
            .webhook_id("..")
            .send()
            .await;
    });
    let op = ("operation", "whoami");
    let table = [
        ("pubapi_requests_total", &[op, ("status", "200")][..], 1.0),
        ("pubapi_attempts_total", &[op], 3.0),
        ("pubapi_attempts_total", &[op, ("status", "503")], 1.0),
        ("pubapi_attempts_total", &[op, ("status", "403")], 1.0),
        (
            "pubapi_retries_total",
            &[op, ("reason", "server_error")],
            1.0,
        ),
        ("pubapi_retries_total", &[op, ("reason", "throttled")], 1.0),
        (
            "pubapi_throttles_total",
            &[("code", "ERR_403_DEVELOPER_OVER_QPS")],
            1.0,
        ),
    ];
    for (name, labels, value) in table {
        assert_eq!(recorded.sum(name, labels), value, "{name} {labels:?}");
    }
    assert_eq!(recorded.count("pubapi_limiter_wait_seconds"), 3);
    assert_eq!(
        recorded.sum("pubapi_quota_remaining", &[("class", "general")]),
        360.0
    );
    assert_eq!(
        recorded.sum(
            "pubapi_requests_total",
            &[("operation", "getWebhookDetails"), ("status", "local")]
        ),
        1.0
    );
    let everything = format!("{:?}", recorded.0.lock().unwrap());
    assert!(!everything.contains(CANARY), "{everything}");
    assert!(!everything.contains("bob"), "{everything}");
}

#[test]
fn every_attempt_is_in_the_http_client_request_duration_with_the_conventions_attributes() {
    let recorded = Recorded::default();
    let script = Script::new(
        vec![Answer::empty(503)],
        Answer::json(200, r#"{"username":"admin"}"#),
    );
    script.delay_every(1, std::time::Duration::from_millis(250));
    with_recorder(&recorded, async {
        script.client().sdk().whoami().send().await.unwrap();
    });
    let name = "http.client.request.duration";
    let common = [
        ("http.request.method", "GET"),
        ("server.address", "sandbox.test"),
        ("server.port", "80"),
        ("url.template", "/v1/whoami"),
    ];
    let table = [
        (
            &[("http.response.status_code", "503"), ("error.type", "503")][..],
            0.25,
        ),
        (&[("http.response.status_code", "200")][..], 0.25),
    ];
    for (labels, seconds) in table {
        let labels: Vec<_> = common.iter().chain(labels).copied().collect();
        assert_eq!(recorded.sum(name, &labels), seconds, "{labels:?}");
    }
    assert_eq!(recorded.count(name), 2);
    let everything = format!("{:?}", recorded.0.lock().unwrap());
    let error_types = everything.matches("\"error.type\"").count();
    assert_eq!(
        error_types, 1,
        "only the 503 has an error.type: {everything}"
    );
}

#[test]
fn the_webhook_receiver_counts_deliveries_by_status_and_the_duplicates_it_left_out() {
    use pubapi_sdk_ext::webhook::testing::{self, DeliveryBuilder};
    use pubapi_sdk_ext::webhook::{Batch, EventType, HandlerError, WebhookSecret};
    const SECRET: &str = "metrics-secret-0123456789";
    let recorded = Recorded::default();
    let receiver = Receiver::builder()
        .secret(WebhookSecret::new(SECRET).unwrap())
        .build()
        .unwrap();
    let delivery = DeliveryBuilder::new(SECRET)
        .event_with_id(
            EventType::FsAddFile,
            "e1",
            testing::sample_data(&EventType::FsAddFile),
        )
        .build();
    let handler = |_: Batch| async { Ok::<(), HandlerError>(()) };
    with_recorder(&recorded, async {
        let (headers, body) = &delivery;
        assert_eq!(receiver.handle(headers, body, &handler).await.status, 200);
        // The platform sends it again: left out as a duplicate.
        assert_eq!(receiver.handle(headers, body, &handler).await.status, 200);
        let unsigned = http::HeaderMap::new();
        assert_eq!(receiver.handle(&unsigned, body, &handler).await.status, 401);
    });
    assert_eq!(
        recorded.sum("pubapi_webhook_deliveries_total", &[("status", "200")]),
        2.0
    );
    assert_eq!(
        recorded.sum("pubapi_webhook_deliveries_total", &[("status", "401")]),
        1.0
    );
    assert_eq!(recorded.sum("pubapi_webhook_duplicates_total", &[]), 1.0);
    let everything = format!("{:?}", recorded.0.lock().unwrap());
    assert!(!everything.contains(SECRET), "{everything}");
}

#[test]
fn an_event_stream_counts_the_events_it_hands_over() {
    use pubapi_sdk_ext::events::{EventsVersion, StreamItem, StreamStart};
    let events: Vec<serde_json::Value> = (11..=13)
        .map(|id| {
            serde_json::json!({"id": id, "timestamp": "2026-01-05T10:00:00Z",
                "action_source": "WebUI", "actor": 1, "type": "file_system", "action": "create",
                "data": {"target_path": format!("/f/{id}.txt"), "is_folder": false}})
        })
        .collect();
    let page = serde_json::json!({"latest_id": 13, "oldest_id": 11, "count": 3, "events": events});
    let script = Script::new(
        vec![Answer::json(200, page.to_string())],
        Answer::empty(204),
    );
    let recorded = Recorded::default();
    with_recorder(&recorded, async {
        let client = script.builder().token(canary()).build().unwrap();
        let mut stream = client
            .events()
            .stream(EventsVersion::V2)
            .start(StreamStart::After(10))
            .build();
        let mut seen = 0;
        while seen < 3 {
            if let StreamItem::Event(_) = stream.next().await.unwrap().unwrap() {
                seen += 1;
            }
        }
    });
    assert_eq!(
        recorded.sum("pubapi_events_delivered_total", &[("version", "v2")]),
        3.0
    );
}
