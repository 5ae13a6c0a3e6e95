//! Webhook deliveries (reference 6.1): every event passing a registration's filters is
//! POSTed to its URL with the `authorization` header; anything but 200 schedules the next
//! attempt on the sandbox clock (immediately, 1 min, 10 min, 1 h by default), and when every
//! attempt failed the registration is disabled.
//!
//! Attempts to one registration are made one at a time, in the order the events happened.
//!
//! Deliveries to hosts other than loopback are recorded as failed attempts without any
//! network traffic unless `WebhooksConfig::deliver_to_remote` is set.

use super::Shared;
use super::clock::later;
use super::webhooks::is_loopback;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// One attempt still to be made.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// When it is due, sandbox epoch milliseconds.
    pub due_ms: i64,
    /// Order of scheduling (ties).
    pub seq: u64,
    /// The registration.
    pub webhook_id: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The `eventId`.
    pub event_id: String,
    /// The `eventType`.
    pub event_type: String,
    /// The delivery body `{data: [...]}`.
    pub body: Value,
}

/// What happened to one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    /// The registration.
    pub webhook_id: String,
    /// The `eventId`.
    pub event_id: String,
    /// The `eventType`.
    pub event_type: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Sandbox time of the attempt, epoch milliseconds.
    pub at_ms: i64,
    /// The receiver's status, when it answered.
    pub status: Option<u16>,
    /// Why the attempt failed without a status, starting with its cause: `timeout:` (no
    /// answer within the delivery timeout), `refused:` (no connection to the receiver),
    /// `connection:` (the connection broke), `not sent:` (a non-loopback receiver while
    /// remote deliveries are off).
    pub error: Option<String>,
    /// Whether the receiver answered 200.
    pub delivered: bool,
    /// The body sent.
    pub body: Value,
}

/// The attempts waiting, running and made.
#[derive(Debug, Default)]
pub struct DeliveryQueue {
    pending: Vec<Pending>,
    seq: u64,
    in_flight: usize,
    busy: HashSet<String>,
    log: Vec<DeliveryRecord>,
}

impl DeliveryQueue {
    /// Schedules an attempt.
    pub fn schedule(&mut self, mut pending: Pending) {
        self.seq += 1;
        pending.seq = self.seq;
        self.pending.push(pending);
    }

    /// Drops every attempt of a registration still waiting (it was disabled or deleted).
    pub fn cancel(&mut self, webhook_id: &str) {
        self.pending.retain(|p| p.webhook_id != webhook_id);
    }

    /// Takes the attempts due at `now_ms`, the earliest one per registration that has no
    /// attempt running, and marks them running.
    fn take_due(&mut self, now_ms: i64) -> Vec<Pending> {
        self.pending.sort_by_key(|p| (p.due_ms, p.seq));
        let mut due = Vec::new();
        let mut rest = Vec::new();
        for pending in std::mem::take(&mut self.pending) {
            if pending.due_ms <= now_ms && !self.busy.contains(&pending.webhook_id) {
                self.busy.insert(pending.webhook_id.clone());
                due.push(pending);
            } else {
                rest.push(pending);
            }
        }
        self.pending = rest;
        self.in_flight += due.len();
        due
    }

    /// Marks the running attempt of a registration finished.
    fn finish(&mut self, webhook_id: &str) {
        self.in_flight -= 1;
        self.busy.remove(webhook_id);
    }

    /// When the next waiting attempt of a registration without a running one is due.
    pub fn next_due(&self) -> Option<i64> {
        self.pending
            .iter()
            .filter(|p| !self.busy.contains(&p.webhook_id))
            .map(|p| p.due_ms)
            .min()
    }

    /// Whether nothing is running and nothing is due at `now_ms`.
    pub fn is_idle(&self, now_ms: i64) -> bool {
        self.in_flight == 0 && self.pending.iter().all(|p| p.due_ms > now_ms)
    }

    /// Attempts still waiting.
    pub fn pending(&self) -> &[Pending] {
        &self.pending
    }

    /// Every attempt made, in order.
    pub fn log(&self) -> &[DeliveryRecord] {
        &self.log
    }
}

/// Runs the deliveries of a sandbox until the task is aborted.
pub(crate) async fn run(shared: Arc<Shared>) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(shared.config.webhooks.delivery_timeout)
        .build()
        .unwrap_or_default();
    loop {
        let wakeup = shared.wakeup.notified();
        tokio::pin!(wakeup);
        wakeup.as_mut().enable();
        let now = shared.now();
        let (due, next) = {
            let mut world = shared.world();
            let due = world.deliveries.take_due(now);
            (due, world.deliveries.next_due())
        };
        for pending in due {
            tokio::spawn(attempt(shared.clone(), http.clone(), pending));
        }
        match next {
            Some(at) => {
                tokio::select! {
                    () = shared.clock.sleep_until(at) => {}
                    () = &mut wakeup => {}
                }
            }
            None => wakeup.await,
        }
    }
}

async fn attempt(shared: Arc<Shared>, http: reqwest::Client, pending: Pending) {
    let (generation, target) = {
        let world = shared.world();
        let target = world
            .webhooks
            .get(&pending.webhook_id)
            .filter(|h| h.enabled)
            .map(|h| (h.url.clone(), h.auth_header.clone()));
        (world.generation, target)
    };
    let Some((url, auth)) = target else {
        let mut world = shared.world();
        if world.generation == generation {
            world.deliveries.finish(&pending.webhook_id);
        }
        drop(world);
        shared.wakeup.notify_one();
        return;
    };
    let result = post(&shared, &http, &url, auth, &pending.body).await;
    let now = shared.now();
    let mut guard = shared.world();
    let world = &mut *guard;
    if world.generation != generation {
        // The sandbox was reset while this attempt ran: its queue and log are gone.
        return;
    }
    world.deliveries.finish(&pending.webhook_id);
    let delivered = result == Ok(200);
    world.deliveries.log.push(DeliveryRecord {
        webhook_id: pending.webhook_id.clone(),
        event_id: pending.event_id.clone(),
        event_type: pending.event_type.clone(),
        attempt: pending.attempt,
        at_ms: now,
        status: result.as_ref().ok().copied(),
        error: result.as_ref().err().cloned(),
        delivered,
        body: pending.body.clone(),
    });
    world.counters.delivery_attempts += 1;
    if delivered {
        world.counters.deliveries_succeeded += 1;
    } else {
        world.counters.deliveries_failed += 1;
        let schedule = &shared.config.webhooks.retry_schedule;
        match schedule.get(pending.attempt as usize) {
            Some(delay) => world.deliveries.schedule(Pending {
                due_ms: later(now, *delay),
                attempt: pending.attempt + 1,
                ..pending
            }),
            None => {
                if let Some(hook) = world.webhooks.get_mut(&pending.webhook_id)
                    && hook.enabled
                {
                    hook.enabled = false;
                    world.counters.webhooks_disabled += 1;
                    world.deliveries.cancel(&pending.webhook_id);
                }
            }
        }
    }
    drop(guard);
    shared.wakeup.notify_one();
}

/// Posts `body` to `url` (with its `authorization` header, if any); the status answered,
/// or why there is none. Only to a loopback host unless the sandbox delivers to remote ones.
async fn post(
    shared: &Shared,
    http: &reqwest::Client,
    url: &str,
    auth: Option<String>,
    body: &serde_json::Value,
) -> Result<u16, String> {
    let remote_allowed = shared.config.webhooks.deliver_to_remote
        || reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(is_loopback))
            .unwrap_or(false);
    if remote_allowed {
        let mut request = http
            .post(url)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap_or_default());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        match request.send().await {
            Ok(response) => Ok(response.status().as_u16()),
            Err(e) => Err(failure(&e, shared.config.webhooks.delivery_timeout)),
        }
    } else {
        Err("not sent: deliveries to non-loopback hosts are disabled in this sandbox".to_string())
    }
}

/// Why an attempt got no status, its cause first, then every error of the chain (reqwest's
/// own text is only "error sending request").
fn failure(error: &reqwest::Error, timeout: std::time::Duration) -> String {
    let mut chain = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        chain.push(e.to_string());
        source = e.source();
    }
    let detail = if chain.is_empty() {
        error.to_string()
    } else {
        chain.join(": ")
    };
    let cause = if error.is_timeout() {
        format!("timeout: no answer within {} ms", timeout.as_millis())
    } else if error.is_connect() {
        "refused: no connection to the receiver".to_string()
    } else {
        "connection: the exchange with the receiver broke".to_string()
    };
    format!("{cause} ({detail})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending(due_ms: i64, webhook_id: &str) -> Pending {
        Pending {
            due_ms,
            seq: 0,
            webhook_id: webhook_id.into(),
            attempt: 1,
            event_id: "e".into(),
            event_type: "fs:add_file".into(),
            body: json!({"data": []}),
        }
    }

    #[test]
    fn due_attempts_are_taken_in_order_and_counted_running() {
        let mut queue = DeliveryQueue::default();
        queue.schedule(pending(20, "b"));
        queue.schedule(pending(10, "a"));
        queue.schedule(pending(99, "c"));
        assert!(!queue.is_idle(10));
        queue.schedule(pending(15, "a"));
        let due = queue.take_due(20);
        assert_eq!(
            due.iter()
                .map(|p| p.webhook_id.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert!(!queue.is_idle(20)); // two running, one of "a" waiting its turn
        queue.finish("b");
        assert_eq!(queue.next_due(), Some(99), "a is busy");
        queue.finish("a");
        assert_eq!(queue.next_due(), Some(15));
        assert_eq!(queue.take_due(20).len(), 1);
        queue.finish("a");
        assert!(queue.is_idle(20));
        assert_eq!(queue.next_due(), Some(99));
        queue.cancel("c");
        assert_eq!(queue.next_due(), None);
    }
}
