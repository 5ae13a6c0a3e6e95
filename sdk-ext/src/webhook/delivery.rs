//! The body the platform POSTs to a webhook (reference section 2.10).

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::parse_error::DeliveryParseError;
use super::{EventData, EventType, WebhookCustomProperties, WebhookUser};

/// One webhook delivery: the elements of its `data` array, in order.
///
/// Parsing is forgiving by design. [`Delivery::parse`] fails only when the body is not JSON
/// or has no `data` array; an element that lacks a required envelope field (or is not an
/// object) becomes [`DeliveryItem::Malformed`] with its raw JSON, so one bad element does not
/// cost the rest of the batch. An element whose `data` does not match its event type is still
/// an event, with [`EventData::Unknown`]. An element that repeats an envelope field is
/// malformed too (its `eventId` would be ambiguous). An optional field of another type
/// (`customProperties` that is not an object) is not read, with a warning, and the event is
/// kept: see [`WebhookEvent::custom_properties`].
///
/// Elements are found without building a tree of the whole body and read one at a time;
/// [`Receiver`](super::Receiver) reads them the same way, and also bounds how many and how
/// large (see its memory notes).
///
/// ```
/// use pubapi_sdk_ext::webhook::{Delivery, DeliveryItem, EventData};
///
/// let body = br#"{"data": [
///   {"eventId": "e-1", "domain": "acme", "timestamp": 1700000000000,
///    "user": {"id": 7, "displayName": "Ada", "username": "ada", "email": "ada@example.com"},
///    "actionSource": "WebUI", "eventType": "fs:add_folder", "webhookId": "wh-1",
///    "data": {"targetPath": "/Shared/Reports"}},
///   {"eventId": "e-2"}
/// ]}"#;
/// let delivery = Delivery::parse(body)?;
/// assert_eq!(delivery.items.len(), 2);
///
/// let event = delivery.events().next().unwrap();
/// assert!(matches!(&event.data, EventData::FsAddFolder(f) if f.target_path == "/Shared/Reports"));
/// assert!(matches!(delivery.items[1], DeliveryItem::Malformed { .. }));
/// # Ok::<(), pubapi_sdk_ext::webhook::DeliveryParseError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Delivery {
    /// The elements of `data`, in the order received.
    pub items: Vec<DeliveryItem>,
}

impl Delivery {
    /// Parses a delivery body.
    ///
    /// # Errors
    ///
    /// [`DeliveryParseError`] when the body is not JSON or has no `data` array. Problems of
    /// single elements are not errors (see [`DeliveryItem::Malformed`]).
    pub fn parse(body: &[u8]) -> Result<Self, DeliveryParseError> {
        let items = super::scan::data_elements(body)?
            .map(|range| {
                let raw = body.get(range).unwrap_or_default();
                match read_element(raw) {
                    Ok(event) => DeliveryItem::Event(Box::new(event)),
                    Err(reason) => DeliveryItem::Malformed {
                        // The body was checked to be JSON, so this does not fail.
                        raw: serde_json::from_slice(raw).unwrap_or(Value::Null),
                        reason,
                    },
                }
            })
            .collect();
        Ok(Delivery { items })
    }

    /// Same as [`Delivery::parse`], from JSON already parsed.
    ///
    /// # Errors
    ///
    /// [`DeliveryParseError::NoDataArray`] when `value` is not an object with a `data` array.
    pub fn from_value(value: Value) -> Result<Self, DeliveryParseError> {
        let Value::Object(mut body) = value else {
            return Err(DeliveryParseError::NoDataArray);
        };
        let Some(Value::Array(elements)) = body.remove("data") else {
            return Err(DeliveryParseError::NoDataArray);
        };
        let items = elements.into_iter().map(DeliveryItem::from_value).collect();
        Ok(Delivery { items })
    }

    /// The well-formed events, in order.
    pub fn events(&self) -> impl Iterator<Item = &WebhookEvent> {
        self.items.iter().filter_map(|item| match item {
            DeliveryItem::Event(event) => Some(event.as_ref()),
            DeliveryItem::Malformed { .. } => None,
        })
    }
}

/// The length of the shortest element that reads as an event: every envelope field, empty.
pub(crate) const MIN_EVENT_BYTES: usize = r#"{"eventId":"","domain":"","timestamp":0,"user":{"id":0,"displayName":"","username":"","email":""},"actionSource":"","eventType":"","webhookId":""}"#.len();

/// Reads one element of `data` (its JSON text) as an event, or says why it is not one.
///
/// The one reading of an element that both [`Delivery::parse`] and the receiver use. An
/// element that repeats an envelope field is not an event: which of its `eventId`s would
/// deduplicate it?
pub(crate) fn read_element(raw: &[u8]) -> Result<WebhookEvent, String> {
    let envelope: RawEvent<IgnoredAny> =
        serde_json::from_slice(raw).map_err(|error| error.to_string())?;
    // Typed straight from its text: no `Value` of it next to the typed copy.
    let data = super::scan::member(raw, "data").and_then(|range| raw.get(range));
    let data = EventData::from_json(&envelope.event_type, data);
    Ok(envelope.into_event(data))
}

/// `customProperties` as the reference's object. It is optional, so a value of another JSON
/// type (`false`, `[]`, a string) does not cost the event: it is not read, a warning says so,
/// and the value stays in `extra` under `customProperties`, as sent.
fn custom_properties(
    value: Option<Value>,
    extra: &mut Map<String, Value>,
    event_id: &str,
) -> Option<WebhookCustomProperties> {
    let value = value?;
    match WebhookCustomProperties::deserialize(&value) {
        Ok(properties) => Some(properties),
        Err(error) => {
            tracing::warn!(
                event_id,
                %error,
                "webhook event's customProperties is not an object; kept in extra, not read"
            );
            extra.insert(CUSTOM_PROPERTIES.to_owned(), value);
            None
        }
    }
}

/// The wire name of [`WebhookEvent::custom_properties`].
const CUSTOM_PROPERTIES: &str = "customProperties";

/// Why an element cannot be an event, found without building anything of it: every
/// envelope field present, once, and the element an object. `None` when it could be one.
pub(crate) fn envelope_problem(raw: &[u8]) -> Option<String> {
    /// The envelope's required fields, each only skipped over.
    #[derive(Deserialize)]
    #[serde(rename = "WebhookEvent", rename_all = "camelCase")]
    #[allow(dead_code)] // read only for their presence
    struct Shape {
        event_id: IgnoredAny,
        domain: IgnoredAny,
        timestamp: IgnoredAny,
        user: IgnoredAny,
        action_source: IgnoredAny,
        event_type: IgnoredAny,
        webhook_id: IgnoredAny,
    }
    serde_json::from_slice::<Shape>(raw)
        .err()
        .map(|error| error.to_string())
}

/// One element of a delivery's `data` array.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DeliveryItem {
    /// An element with every required envelope field.
    Event(Box<WebhookEvent>),
    /// An element that is not an object or lacks a required envelope field (`eventId`,
    /// `domain`, `timestamp`, `user`, `actionSource`, `eventType`, `webhookId`), or has one of
    /// them with the wrong type. Kept whole so nothing is lost.
    Malformed {
        /// The element as received.
        raw: Value,
        /// Why it was not read as an event.
        reason: String,
    },
}

impl DeliveryItem {
    /// Reads one element of `data`; never fails.
    #[must_use]
    pub fn from_value(raw: Value) -> Self {
        match WebhookEvent::deserialize(&raw) {
            Ok(event) => DeliveryItem::Event(Box::new(event)),
            Err(error) => DeliveryItem::Malformed {
                raw,
                reason: error.to_string(),
            },
        }
    }
}

/// One webhook event (an element of a delivery's `data`).
///
/// The payload is a notification, not a source of truth: see the [module
/// docs](super#what-a-shared-secret-cannot-do) before acting on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawEvent", into = "RawEvent")]
#[non_exhaustive]
pub struct WebhookEvent {
    /// Unique within the domain; with `domain`, the key for deduplication (`eventId`).
    pub event_id: String,
    /// The customer domain (`domain`).
    pub domain: String,
    /// When the event happened, Unix time in milliseconds (`timestamp`).
    pub timestamp_ms: i64,
    /// Who caused the event (`user`).
    pub user: WebhookUser,
    /// The API or client that performed the action (`actionSource`).
    pub action_source: String,
    /// The event's canonical (most specific) name (`eventType`).
    pub event_type: EventType,
    /// The registration this delivery belongs to (`webhookId`).
    pub webhook_id: String,
    /// Project information (`customProperties`, optional). `None` when the element has
    /// none, or has one that is not an object (`false`, `[]`, a string): such a value is not
    /// read (a `tracing` warning says so) and is kept as sent in
    /// [`extra`](Self::extra)`["customProperties"]`; the event is kept.
    pub custom_properties: Option<WebhookCustomProperties>,
    /// The typed `data`.
    pub data: EventData,
    /// Top-level fields the reference does not list, kept as received.
    pub extra: Map<String, Value>,
}

impl WebhookEvent {
    /// [`timestamp_ms`](Self::timestamp_ms) (Unix time in milliseconds) as an instant, as
    /// [`PollingEvent::occurred_at`](crate::events::PollingEvent::occurred_at) reads an
    /// event's time (`std::time::SystemTime::from(instant)` where a `SystemTime` is wanted).
    ///
    /// ```
    /// # use pubapi_sdk_ext::webhook::Delivery;
    /// # let body = br#"{"data": [{"eventId": "e-1", "domain": "example",
    /// #     "timestamp": 1700000000000, "actionSource": "PublicAPI", "webhookId": "wh-1",
    /// #     "user": {"id": 1, "displayName": "A", "username": "a", "email": "a@example.com"},
    /// #     "eventType": "link:create", "data": {}}]}"#;
    /// # let delivery = Delivery::parse(body).unwrap();
    /// let event = delivery.events().next().unwrap();
    /// let at = event.occurred_at()?;
    /// assert_eq!(at.as_millisecond(), event.timestamp_ms);
    /// assert_eq!(at.to_string(), "2023-11-14T22:13:20Z");
    /// # Ok::<(), pubapi_sdk_ext::time::TimeError>(())
    /// ```
    ///
    /// # Errors
    /// [`TimeError::OutOfRange`](crate::time::TimeError::OutOfRange) naming `timestamp` when
    /// the number is outside the years -9999 to 9999.
    pub fn occurred_at(&self) -> Result<jiff::Timestamp, crate::time::TimeError> {
        crate::time::epoch_millis("timestamp", self.timestamp_ms)
    }
}

/// The envelope as on the wire; `data` is typed once `eventType` is known. As a
/// `RawEvent<IgnoredAny>`, [`read_element`] only checks that `data` is JSON and types it from
/// its text.
#[derive(Serialize, Deserialize)]
#[serde(rename = "WebhookEvent", rename_all = "camelCase")]
struct RawEvent<D = Value> {
    event_id: String,
    domain: String,
    timestamp: i64,
    user: WebhookUser,
    action_source: String,
    event_type: EventType,
    webhook_id: String,
    /// Read as [`WebhookCustomProperties`] by [`custom_properties`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom_properties: Option<Value>,
    #[serde(default)]
    data: D,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl<D> RawEvent<D> {
    /// The event, with `data` as typed from this envelope's `data`.
    fn into_event(self, data: EventData) -> WebhookEvent {
        let mut extra = self.extra;
        let custom_properties =
            custom_properties(self.custom_properties, &mut extra, &self.event_id);
        WebhookEvent {
            event_id: self.event_id,
            domain: self.domain,
            timestamp_ms: self.timestamp,
            user: self.user,
            action_source: self.action_source,
            event_type: self.event_type,
            webhook_id: self.webhook_id,
            custom_properties,
            data,
            extra,
        }
    }
}

impl From<RawEvent> for WebhookEvent {
    fn from(mut raw: RawEvent) -> Self {
        let data = EventData::from_value(&raw.event_type, std::mem::take(&mut raw.data));
        raw.into_event(data)
    }
}

impl From<WebhookEvent> for RawEvent {
    fn from(event: WebhookEvent) -> Self {
        let data = serde_json::to_value(&event.data).unwrap_or(Value::Null);
        RawEvent {
            event_id: event.event_id,
            domain: event.domain,
            timestamp: event.timestamp_ms,
            user: event.user,
            action_source: event.action_source,
            event_type: event.event_type,
            webhook_id: event.webhook_id,
            custom_properties: event
                .custom_properties
                .and_then(|properties| serde_json::to_value(properties).ok()),
            data,
            extra: event.extra,
        }
    }
}
