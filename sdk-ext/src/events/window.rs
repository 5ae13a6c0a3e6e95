//! Windows of ids: what one page of the events list says (the events to hand out, where the
//! window ended, whether more may follow at once), pure so that the arithmetic is
//! property-tested on its own. Pages whose events do not all read are read event by event
//! ([`Window::lenient`], [`read_leniently`]): the stream and the backfill both go on past an
//! event they cannot read.

use super::{PollingEvent, UndecodableEvent};

/// A page's own fields (its `events` left empty) and its events in the page's order, each
/// read or kept as sent; `None` when the page itself does not have its shape.
pub(crate) fn read_leniently(body: &[u8]) -> Option<(pubapi_sdk::types::EventPage, Vec<Entry>)> {
    let mut page: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(body).ok()?;
    let serde_json::Value::Array(events) = page.remove("events")? else {
        return None;
    };
    let shell: pubapi_sdk::types::EventPage =
        serde_json::from_value(serde_json::Value::Object(page)).ok()?;
    let entries = events
        .into_iter()
        .map(|raw| {
            let event = crate::Error::decode_value(&raw);
            match event.map(pubapi_sdk::types::PollingEvent::into) {
                Ok(event) => Entry::Event(event),
                Err((path, message)) => Entry::Undecodable(UndecodableEvent {
                    id: raw.get("id").and_then(serde_json::Value::as_i64),
                    error: format!("{path}: {message}"),
                    raw,
                }),
            }
        })
        .collect();
    Some((shell, entries))
}

/// One event of a window: read, or kept as sent.
#[derive(Debug)]
pub(crate) enum Entry {
    Event(PollingEvent),
    Undecodable(UndecodableEvent),
}

impl Entry {
    pub(crate) fn id(&self) -> Option<i64> {
        match self {
            Entry::Event(event) => Some(event.id()),
            Entry::Undecodable(event) => event.id,
        }
    }
}

/// What one forward page says: the events to deliver, where the window ended and whether
/// more may follow at once. Pure, so the arithmetic is property-tested on its own.
#[derive(Debug)]
pub(crate) struct Window {
    /// Events after the cursor, ascending by id, each id once (events without an id last,
    /// in the page's order).
    pub(crate) events: Vec<Entry>,
    /// The new cursor once `events` are delivered: never below the cursor asked from.
    pub(crate) end: i64,
    /// A full window of ids was read: the next one may be read at once.
    pub(crate) more: bool,
    /// The server restarted from its oldest stored id, above the cursor.
    pub(crate) restarted_at: Option<i64>,
}

impl Window {
    /// Reads the page answered for `cursor` with `count` ids per window.
    pub(crate) fn forward(cursor: i64, count: i64, page: pubapi_sdk::types::EventPage) -> Window {
        let events = page.events.into_iter();
        let entries = events.map(|e| Entry::Event(PollingEvent::from(e)));
        Window::of(
            cursor,
            count,
            page.oldest_id,
            page.latest_id,
            entries.collect(),
        )
    }

    /// Reads, event by event, a page that failed to decode as a whole: `None` unless the page
    /// itself has its shape (then the error was the page's, and stays the caller's). Every
    /// event that reads is typed (also when the page failed for another cause a value does
    /// not keep, such as a key twice in an event: a stream must not stop on it).
    pub(crate) fn lenient(cursor: i64, count: i64, body: &[u8]) -> Option<Window> {
        let (shell, entries) = read_leniently(body)?;
        Some(Window::of(
            cursor,
            count,
            shell.oldest_id,
            shell.latest_id,
            entries,
        ))
    }

    fn of(
        cursor: i64,
        count: i64,
        oldest_id: Option<i64>,
        latest_id: i64,
        entries: Vec<Entry>,
    ) -> Window {
        let count = count.max(1);
        let restarted_at = oldest_id.filter(|oldest| cursor.saturating_add(1) < *oldest);
        // The window starts after the cursor, or at the oldest stored id above it.
        let base = restarted_at.map_or(cursor, |oldest| oldest - 1);
        let bound = base.saturating_add(count);
        // An event without an id goes right after the event before it in the page: the
        // checkpoint after it stays that event's id, so a consumer that stops on it is handed
        // it again rather than never.
        let mut before = i64::MIN;
        let mut keyed: Vec<((i64, bool, usize), Entry)> = entries
            .into_iter()
            .enumerate()
            .map(|(at, entry)| match entry.id() {
                Some(id) => {
                    before = id;
                    ((id, false, at), entry)
                }
                None => ((before, true, at), entry),
            })
            .filter(|((_, idless, _), entry)| *idless || entry.id().is_some_and(|id| id > cursor))
            .collect();
        keyed.sort_by_key(|(key, _)| *key);
        let mut events: Vec<Entry> = keyed.into_iter().map(|(_, entry)| entry).collect();
        events.dedup_by(|a, b| a.id().is_some() && a.id() == b.id());
        let newest = events.iter().filter_map(Entry::id).max();
        // Only ids fill a window: a page of events without one still ends at `latest_id`.
        let full_by_count = events.iter().filter_map(Entry::id).count() as i64 >= count;
        // `latest_id` ends the window; one beyond the ids the window can hold is not trusted
        // (and a full page of events is read up to its last id only).
        let latest = Some(latest_id)
            .filter(|latest| *latest > cursor && !full_by_count)
            .map(|latest| latest.min(bound));
        let end = newest.max(latest).unwrap_or(cursor).max(cursor);
        let more = end > cursor && (full_by_count || end >= bound);
        Window {
            events,
            end,
            more,
            restarted_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use pubapi_sdk::types::EventPage;
    use serde_json::json;

    /// Ids near the cursor, near the ends of the range, and anywhere.
    fn id_near(cursor: i64) -> impl Strategy<Value = i64> {
        prop_oneof![
            (-150i64..150).prop_map(move |d| cursor.saturating_add(d)),
            Just(i64::MIN),
            Just(i64::MAX),
            any::<i64>(),
        ]
    }

    fn page(cursor: i64) -> impl Strategy<Value = (i64, EventPage)> {
        (
            proptest::collection::vec(id_near(cursor), 0..120),
            id_near(cursor),
            proptest::option::of(id_near(cursor)),
        )
            .prop_map(move |(ids, latest_id, oldest_id)| {
                let events = ids
                    .into_iter()
                    .map(|id| {
                        serde_json::from_value(serde_json::json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}))
                            .unwrap()
                    })
                    .collect();
                let page = EventPage {
                    count: None,
                    events,
                    latest_id,
                    oldest_id,
                };
                (cursor, page)
            })
    }

    #[test]
    fn events_without_an_id_do_not_decode_and_duplicate_ids_are_delivered_once() {
        // The spec makes `id` and `type` required: an event without them is a decode error
        // naming the field, not an event the window has to place.
        let missing =
            serde_json::from_value::<pubapi_sdk::types::PollingEvent>(json!({"type": "note"}));
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("missing field `id`")
        );
        let events = [
            json!({"id": 7, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
            json!({"id": 7, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
        ]
        .into_iter()
        .map(|e| serde_json::from_value(e).unwrap())
        .collect();
        let page = EventPage {
            count: None,
            events,
            latest_id: 9,
            oldest_id: None,
        };
        let window = Window::forward(5, 10, page);
        let ids: Vec<i64> = window.events.iter().filter_map(Entry::id).collect();
        assert_eq!(ids, vec![7]);
        assert_eq!((window.end, window.more), (9, false));
    }

    #[test]
    fn a_full_page_of_events_moves_by_latest_id() {
        let events = (51..=60)
            .map(|id| {
                serde_json::from_value(
                    json!({"id": id, "timestamp": "2026-01-05T10:00:00Z", "type": "note"}),
                )
                .unwrap()
            })
            .collect();
        let page = EventPage {
            count: None,
            events,
            latest_id: 60,
            oldest_id: Some(51),
        };
        let window = Window::forward(50, 10, page);
        assert_eq!(window.events.len(), 10);
        assert_eq!((window.end, window.more), (60, true));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        #[test]
        fn a_window_never_moves_back_delivers_each_id_once_and_only_claims_more_with_progress(
            (cursor, page) in prop_oneof![
                any::<i64>(),
                Just(i64::MIN),
                Just(i64::MAX),
                Just(i64::MAX - 50),
                Just(i64::MIN + 50),
            ].prop_flat_map(page),
            count in 1i64..=100,
        ) {
            let window = Window::forward(cursor, count, page);
            prop_assert!(window.end >= cursor);
            let ids: Vec<i64> = window.events.iter().filter_map(Entry::id).collect();
            prop_assert!(ids.iter().all(|id| *id > cursor));
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            prop_assert!(ids.iter().all(|id| *id <= window.end));
            if window.more {
                prop_assert!(window.end > cursor, "more without progress");
            }
        }

        #[test]
        fn a_lenient_read_of_any_body_never_panics(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Window::lenient(0, 50, &body);
        }

        #[test]
        fn a_lenient_read_hands_over_every_event_once_in_order_and_moves_forward(
            cursor in -5i64..5,
            count in 1i64..=20,
            events in proptest::collection::vec(
                (proptest::option::of(-10i64..10), any::<bool>(), any::<bool>()),
                1..20,
            ),
            latest in -10i64..30,
        ) {
            // An event: its id (or none), whether it keeps its timestamp, its type.
            let raw: Vec<serde_json::Value> = events
                .iter()
                .map(|(id, timestamp, note)| {
                    let mut event = json!({"type": if *note { "note" } else { "file_system" }});
                    if let Some(id) = id {
                        event["id"] = json!(id);
                    }
                    if *timestamp {
                        event["timestamp"] = json!("2026-01-05T10:00:00Z");
                    }
                    event
                })
                .collect();
            let body = json!({"latest_id": latest, "events": raw}).to_string();
            let window = Window::lenient(cursor, count, body.as_bytes()).unwrap();
            prop_assert!(window.end >= cursor);
            let ids: Vec<Option<i64>> = window.events.iter().map(Entry::id).collect();
            // Ascending ids above the cursor, each once, with those without an id among them.
            let with: Vec<i64> = ids.iter().flatten().copied().collect();
            prop_assert!(with.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            prop_assert!(with.iter().all(|id| *id > cursor && *id <= window.end));
            let mut expected: Vec<i64> =
                events.iter().filter_map(|e| e.0).filter(|id| *id > cursor).collect();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(&with, &expected);
            prop_assert_eq!(
                ids.len() - ids.iter().flatten().count(),
                events.iter().filter(|e| e.0.is_none()).count()
            );
            if window.more {
                prop_assert!(window.end > cursor, "more without progress");
            }
            // A window that hands something over moves on, unless the page's `latest_id` was
            // not past the cursor (a server that contradicts itself).
            if window.end == cursor {
                prop_assert!(latest <= cursor || ids.is_empty(), "{ids:?}");
            }
        }
    }
}
