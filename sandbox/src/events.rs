//! The Events API (reference 4.9, 6.3): a store fed by sandbox activity, with retention by
//! count and age, and the cursor and list endpoints.
//!
//! Pages are windows of ids: forward, the ids after the cursor (`id + 1 ..= id + count`);
//! with `reverse=1`, `id - count + 1 ..= id`. A cursor below the oldest stored id starts at
//! the oldest. Filters (`type`, `folder`, `suppress`) drop events inside the window, so a
//! page may hold fewer than `count` events (even none) while `latest_id` still moves on.
//! `204` means the window is empty: nothing follows the cursor.
//!
//! The query is read as strictly as the reference states it (4.9): a missing or non-integer
//! `id`, a `count` that is not an integer from 1 to 100, and `type` names, `suppress` and
//! `reverse` values the reference does not list are refused with 400 in the general error
//! format, one entry per problem, before anything is read. The reference shows no events
//! error body; the spec documents this 400 (`EventsBadRequest`). `folder` takes any path.

use super::Shared;
use super::auth::Caller;
use super::clock::{earlier, millis};
use super::config::EventsConfig;
use super::dates::iso_millis;
use super::fs::{is_within, shown};
use super::http::{ApiRequest, Reply, general_errors};
use super::limits::Violation;
use serde_json::{Value, json};
use std::collections::VecDeque;

/// The polling event types (`PollingEventType`; both lists accept all three in `type`).
fn polling_types() -> &'static [&'static str] {
    super::facts::values("PollingEventType")
}

/// The `suppress` values (`EventSuppress`).
fn suppress_values() -> &'static [&'static str] {
    super::facts::values("EventSuppress")
}

/// The `reverse` values: `1` walks backwards, `0` is ignored.
pub const REVERSE: [&str; 2] = ["0", "1"];

/// The largest page (`count`).
pub const MAX_COUNT: i64 = 100;

/// The page size when `count` is not given.
pub const DEFAULT_COUNT: i64 = 50;

/// One stored event.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Id (increasing by one).
    pub id: i64,
    /// Time, epoch milliseconds.
    pub at_ms: i64,
    /// `action_source`.
    pub action_source: &'static str,
    /// User id of the actor.
    pub actor: i64,
    /// OAuth client id of the actor (`suppress=app`).
    pub client_id: String,
    /// `type`.
    pub kind: &'static str,
    /// `action`.
    pub action: &'static str,
    /// `object_detail`.
    pub object_detail: Option<String>,
    /// `data`.
    pub data: Value,
    /// `eventTypeSpecificAttributes` (permission changes).
    pub attributes: Option<Value>,
    /// Paths the event is at (`folder` filter).
    pub paths: Vec<String>,
}

impl StoredEvent {
    /// The event as the API shows it.
    pub fn to_json(&self) -> Value {
        let mut event = json!({
            "id": self.id,
            "timestamp": iso_millis(self.at_ms),
            "action_source": self.action_source,
            "actor": self.actor,
            "type": self.kind,
            "action": self.action,
            "data": self.data,
        });
        if let Some(detail) = &self.object_detail {
            event["object_detail"] = json!(detail);
        }
        if let Some(attributes) = &self.attributes {
            event["eventTypeSpecificAttributes"] = attributes.clone();
        }
        event
    }
}

/// The stream: the latest events, by id.
#[derive(Debug, Default)]
pub struct EventStore {
    events: VecDeque<StoredEvent>,
    last_id: i64,
}

impl EventStore {
    /// Stores an event (its `id` is assigned here) and applies the retention.
    pub fn push(&mut self, mut event: StoredEvent, now_ms: i64, config: &EventsConfig) -> i64 {
        self.last_id += 1;
        event.id = self.last_id;
        self.events.push_back(event);
        self.prune(now_ms, config);
        self.last_id
    }

    /// Drops events beyond the size limit and older than the age limit.
    pub fn prune(&mut self, now_ms: i64, config: &EventsConfig) {
        while self.events.len() > config.max_events {
            self.events.pop_front();
        }
        let oldest_kept = earlier(now_ms, config.max_age);
        while self.events.front().is_some_and(|e| e.at_ms < oldest_kept) {
            self.events.pop_front();
        }
    }

    /// The latest id issued (0 before any event).
    pub fn latest_id(&self) -> i64 {
        self.last_id
    }

    /// The oldest id still stored (the next id when the store is empty).
    pub fn oldest_id(&self) -> i64 {
        self.events.front().map_or(self.last_id + 1, |e| e.id)
    }

    /// Events stored.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The stored events with ids in `lo..=hi`.
    pub fn range(&self, lo: i64, hi: i64) -> impl Iterator<Item = &StoredEvent> {
        let front = self.oldest_id();
        let start = usize::try_from((lo - front).max(0)).unwrap_or(0);
        let end = usize::try_from((hi - front + 1).max(0)).unwrap_or(0);
        self.events
            .range(start.min(self.events.len())..end.min(self.events.len()))
    }
}

/// `GET /v1/events/cursor`.
pub fn cursor(shared: &Shared, _req: &ApiRequest, _caller: &Caller) -> Reply {
    let now = shared.now();
    let mut world = shared.world();
    world.events.prune(now, &shared.config.events);
    let oldest = world.events.oldest_id().min(world.events.latest_id());
    Reply::json(
        200,
        &json!({
            "timestamp": iso_millis(now),
            "latest_event_id": world.events.latest_id(),
            "oldest_event_id": oldest,
        }),
    )
}

/// A list query as the reference allows it.
#[derive(Debug, Clone, PartialEq)]
struct ListQuery {
    cursor: i64,
    folder: Option<String>,
    suppress: &'static str,
    /// The requested types; empty means the version's default.
    types: Vec<&'static str>,
    count: i64,
    reverse: bool,
}

impl ListQuery {
    /// The types asked for, or the version's default: every type in v2; in v1,
    /// `permission_change` only when requested (reference 4.9).
    fn types(&self, v2: bool) -> Vec<&'static str> {
        if !self.types.is_empty() {
            self.types.clone()
        } else if v2 {
            polling_types().to_vec()
        } else {
            polling_types()
                .iter()
                .copied()
                .filter(|t| *t != "permission_change")
                .collect()
        }
    }

    /// The window of ids `(lo, hi)` the query reads, within the stored `oldest..=latest`
    /// (empty when `lo > hi`).
    fn ids(&self, oldest: i64, latest: i64) -> (i64, i64) {
        let (cursor, count) = (self.cursor, self.count);
        if self.reverse {
            (
                cursor.saturating_sub(count - 1).max(oldest),
                cursor.min(latest),
            )
        } else {
            let start = cursor.saturating_add(1).max(oldest);
            (start, start.saturating_add(count - 1).min(latest))
        }
    }

    /// Whether `event` passes the folder and the suppression for `caller`.
    fn passes(&self, event: &StoredEvent, caller: &Caller) -> bool {
        let in_folder = match &self.folder {
            Some(f) => event.paths.iter().any(|p| is_within(p, f)),
            None => true,
        };
        in_folder
            && match self.suppress {
                "user" => event.actor != caller.user.id,
                "app" => event.client_id != caller.client_id(),
                _ => true,
            }
    }
}

/// One refusal: `(code, description)` of a general-format `Errors` entry.
type Problem = (String, String);

/// Reads the query of an events list, or every problem with it (in the order of the
/// reference's parameter table).
fn read_query(req: &ApiRequest) -> Result<ListQuery, Vec<Problem>> {
    let mut problems: Vec<Problem> = Vec::new();
    let mut invalid = |description: String| problems.push(("INVALID_VALUE".into(), description));
    let cursor = req.query("id").map(|text| {
        text.parse::<i64>().map_err(|_| {
            invalid(format!("`id` must be an integer, not {}", shown(text)));
        })
    });
    let suppress = match req.query("suppress") {
        None => "none",
        Some(text) => suppress_values()
            .iter()
            .copied()
            .find(|s| *s == text)
            .unwrap_or_else(|| {
                invalid(format!(
                    "`suppress` must be app, user or none, not {}",
                    shown(text)
                ));
                "none"
            }),
    };
    let mut types = Vec::new();
    for name in req
        .query("type")
        .into_iter()
        .flat_map(|text| text.split('|'))
    {
        match polling_types().iter().copied().find(|t| *t == name) {
            Some(known) => types.push(known),
            None => invalid(format!(
                "`type` holds {}, not one of file_system, note, permission_change",
                shown(name)
            )),
        }
    }
    let count = match req.query("count") {
        None => DEFAULT_COUNT,
        Some(text) => match text.parse::<i64>() {
            Ok(count) if (1..=MAX_COUNT).contains(&count) => count,
            _ => {
                invalid(format!(
                    "`count` must be an integer from 1 to {MAX_COUNT}, not {}",
                    shown(text)
                ));
                DEFAULT_COUNT
            }
        },
    };
    let reverse = match req.query("reverse") {
        None => false,
        Some(text) if REVERSE.contains(&text) => text == "1",
        Some(text) => {
            invalid(format!("`reverse` must be 0 or 1, not {}", shown(text)));
            false
        }
    };
    let cursor = match cursor {
        Some(Ok(cursor)) => cursor,
        Some(Err(())) => return Err(problems),
        None => {
            problems.insert(0, ("MISSING_FIELD".into(), "`id` is required".into()));
            return Err(problems);
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let folder = req
        .query("folder")
        .map(|f| f.trim().trim_end_matches('/').to_string())
        .filter(|f| !f.is_empty());
    Ok(ListQuery {
        cursor,
        folder,
        suppress,
        types,
        count,
        reverse,
    })
}

/// `GET /v1/events` (`v2 == false`) and `GET /v2/events`.
pub fn list(shared: &Shared, req: &ApiRequest, caller: &Caller, v2: bool) -> Reply {
    let query = match read_query(req) {
        Ok(query) => query,
        Err(problems) => return general_errors(400, &problems),
    };
    let types = query.types(v2);
    let reverse = query.reverse;
    let now = shared.now();
    let config = &shared.config.events;
    let mut world = shared.world();
    world.events.prune(now, config);
    if !reverse {
        let too_soon = world
            .events_caught_up
            .get(&caller.token)
            .is_some_and(|at| now.saturating_sub(*at) < millis(config.min_poll_interval));
        if too_soon {
            world.counters.violation(Violation::EventsPollTooSoon);
        }
    }
    let (oldest, latest) = (world.events.oldest_id(), world.events.latest_id());
    let (lo, hi) = query.ids(oldest, latest);
    if world.events.is_empty() || lo > hi {
        if !reverse {
            world.events_caught_up.insert(caller.token.clone(), now);
        }
        return Reply::empty(204);
    }
    let events: Vec<Value> = world
        .events
        .range(lo, hi)
        .filter(|e| types.contains(&e.kind) && query.passes(e, caller))
        .map(StoredEvent::to_json)
        .collect();
    if !reverse {
        if hi == latest {
            world.events_caught_up.insert(caller.token.clone(), now);
        } else {
            world.events_caught_up.remove(&caller.token);
        }
    }
    Reply::json(
        200,
        &json!({
            "latest_id": hi,
            "oldest_id": lo,
            "count": events.len(),
            "events": events,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn event(at_ms: i64) -> StoredEvent {
        StoredEvent {
            id: 0,
            at_ms,
            action_source: "WebUI",
            actor: 1,
            client_id: "c".into(),
            kind: "file_system",
            action: "create",
            object_detail: None,
            data: json!({}),
            attributes: None,
            paths: vec!["/a".into()],
        }
    }

    #[test]
    fn retention_keeps_the_latest_events_within_the_age() {
        let config = EventsConfig {
            max_events: 3,
            max_age: Duration::from_secs(10),
            ..EventsConfig::default()
        };
        let mut store = EventStore::default();
        for i in 0..5 {
            store.push(event(i * 1000), i * 1000, &config);
        }
        assert_eq!(
            (store.oldest_id(), store.latest_id(), store.len()),
            (3, 5, 3)
        );
        store.prune(13_500, &config);
        assert_eq!((store.oldest_id(), store.len()), (5, 1));
        store.prune(100_000, &config);
        assert!(store.is_empty());
        assert_eq!((store.oldest_id(), store.latest_id()), (6, 5));
    }

    #[test]
    fn range_reads_by_id() {
        let config = EventsConfig::default();
        let mut store = EventStore::default();
        for i in 0..5 {
            store.push(event(i), i, &config);
        }
        let ids: Vec<i64> = store.range(2, 4).map(|e| e.id).collect();
        assert_eq!(ids, vec![2, 3, 4]);
        assert_eq!(store.range(-5, 1).count(), 1);
        assert_eq!(store.range(6, 9).count(), 0);
    }
}
