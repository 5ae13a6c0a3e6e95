//! Subscription filters: the values of a webhook registration's `eventType` (reference 6.1).

use std::fmt;
use std::str::FromStr;

use super::EventType;
use pubapi_sdk::types::WebhookEventTypeFilter;

/// An event family that subscriptions may name with a wildcard (`fs:*` and so on).
///
/// The platform has no wildcard for workflow and group events (reference 6.1, item 5), so
/// there is no variant for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wildcard {
    /// `fs:*`, every file-system event.
    Fs,
    /// `link:*`, every link event.
    Link,
    /// `comment:*`, every comment event.
    Comment,
    /// `permission:*`, every permission event.
    Permission,
    /// `meta:*`, every metadata event.
    Meta,
}

impl Wildcard {
    /// Every wildcard the platform accepts.
    pub const ALL: &'static [Wildcard] = &[
        Wildcard::Fs,
        Wildcard::Link,
        Wildcard::Comment,
        Wildcard::Permission,
        Wildcard::Meta,
    ];

    /// The family the wildcard covers (`fs`, `link`...).
    #[must_use]
    pub fn family(self) -> &'static str {
        match self {
            Wildcard::Fs => "fs",
            Wildcard::Link => "link",
            Wildcard::Comment => "comment",
            Wildcard::Permission => "permission",
            Wildcard::Meta => "meta",
        }
    }

    /// The wildcard as written in a subscription (`fs:*`...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Wildcard::Fs => "fs:*",
            Wildcard::Link => "link:*",
            Wildcard::Comment => "comment:*",
            Wildcard::Permission => "permission:*",
            Wildcard::Meta => "meta:*",
        }
    }
}

/// One entry of a webhook subscription: an exact event name or a family wildcard.
///
/// [`EventFilter::parse`] accepts the names of the reference and the five wildcards, and
/// rejects the rest before the platform does (it answers `400 request_schema_error`). To
/// subscribe to a name added to the platform after this SDK, build
/// `EventFilter::Exact(EventType::Unknown(..))` directly.
///
/// ```
/// use pubapi_sdk_ext::webhook::{EventFilter, EventFilterError, EventType};
///
/// let all_fs = EventFilter::parse("fs:*")?;
/// assert!(all_fs.matches(&EventType::FsMoveFile));
/// assert!(!all_fs.matches(&EventType::LinkCreate));
///
/// let exact = EventFilter::parse("group:create")?;
/// assert!(exact.matches(&EventType::GroupCreate));
///
/// assert!(matches!(
///     EventFilter::parse("group:*"),
///     Err(EventFilterError::NoWildcardForFamily { .. })
/// ));
/// # Ok::<(), EventFilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventFilter {
    /// Exactly this event.
    Exact(EventType),
    /// Every event of a family.
    Wildcard(Wildcard),
}

impl EventFilter {
    /// Parses a subscription entry: an event name of the reference or one of the wildcards
    /// `fs:*`, `link:*`, `comment:*`, `permission:*`, `meta:*`.
    ///
    /// # Errors
    ///
    /// [`EventFilterError`] for an empty text, a wildcard of a family that has none
    /// (`workflow:*`, `group:*`), any other wildcard, or a name the reference does not list.
    pub fn parse(text: &str) -> Result<Self, EventFilterError> {
        if text.is_empty() {
            return Err(EventFilterError::Empty);
        }
        // What a subscription may name is the spec's `WebhookEventTypeFilter`, generated as a
        // closed enum; this only sorts its values into names and wildcards.
        let Ok(known) = text.parse::<WebhookEventTypeFilter>() else {
            return Err(match text.strip_suffix(":*") {
                Some(family @ ("workflow" | "group")) => EventFilterError::NoWildcardForFamily {
                    family: family.to_owned(),
                },
                Some(_) => EventFilterError::UnknownWildcard {
                    text: text.to_owned(),
                },
                None => EventFilterError::UnknownEvent {
                    name: text.to_owned(),
                },
            });
        };
        let text = known.to_string();
        match text.strip_suffix(":*") {
            Some(family) => Wildcard::ALL
                .iter()
                .find(|w| w.family() == family)
                .map(|w| EventFilter::Wildcard(*w))
                .ok_or(EventFilterError::UnknownWildcard { text: text.clone() }),
            None => Ok(EventFilter::Exact(EventType::from(text.as_str()))),
        }
    }

    /// Whether an event of this type is delivered under this filter.
    ///
    /// A wildcard also matches names of its family that this SDK does not know.
    #[must_use]
    pub fn matches(&self, event_type: &EventType) -> bool {
        match self {
            EventFilter::Exact(exact) => exact == event_type,
            EventFilter::Wildcard(wildcard) => {
                event_type
                    .as_str()
                    .split_once(':')
                    .map(|(family, _)| family)
                    == Some(wildcard.family())
            }
        }
    }

    /// The filter as written in a subscription.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            EventFilter::Exact(event_type) => event_type.as_str(),
            EventFilter::Wildcard(wildcard) => wildcard.as_str(),
        }
    }
}

impl From<EventType> for EventFilter {
    fn from(event_type: EventType) -> Self {
        EventFilter::Exact(event_type)
    }
}

impl From<Wildcard> for EventFilter {
    fn from(wildcard: Wildcard) -> Self {
        EventFilter::Wildcard(wildcard)
    }
}

impl FromStr for EventFilter {
    type Err = EventFilterError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        EventFilter::parse(text)
    }
}

impl fmt::Display for EventFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EventFilter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EventFilter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        EventFilter::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a subscription entry was refused by [`EventFilter::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventFilterError {
    /// The text was empty.
    Empty,
    /// A wildcard of a family the platform offers none for (`workflow:*`, `group:*`).
    NoWildcardForFamily {
        /// The family named (`workflow` or `group`).
        family: String,
    },
    /// A wildcard the platform does not know (`*`, `user:*`...).
    UnknownWildcard {
        /// The text given.
        text: String,
    },
    /// An event name the reference does not list.
    UnknownEvent {
        /// The text given.
        name: String,
    },
}

impl fmt::Display for EventFilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventFilterError::Empty => f.write_str("empty event filter"),
            EventFilterError::NoWildcardForFamily { family } => {
                write!(f, "{family} events have no wildcard; name each event")
            }
            EventFilterError::UnknownWildcard { text } => write!(f, "unknown wildcard `{text}`"),
            EventFilterError::UnknownEvent { name } => write!(f, "unknown event name `{name}`"),
        }
    }
}

impl std::error::Error for EventFilterError {}

#[cfg(test)]
mod tests {
    use super::{EventFilter, EventFilterError, Wildcard};
    use crate::webhook::EventType;

    #[test]
    fn the_wildcards_are_the_specs() {
        let families: std::collections::BTreeSet<&str> = EventType::KNOWN
            .iter()
            .filter_map(|name| name.split_once(':').map(|(family, _)| family))
            .collect();
        for family in families {
            let text = format!("{family}:*");
            let in_spec = text
                .parse::<pubapi_sdk::types::WebhookEventTypeFilter>()
                .is_ok();
            let here = Wildcard::ALL.iter().any(|w| w.as_str() == text);
            assert_eq!(in_spec, here, "{text}");
        }
    }

    #[test]
    fn every_documented_event_name_is_an_exact_filter() {
        for name in EventType::KNOWN {
            let event_type = EventType::from(*name);
            let filter = EventFilter::parse(event_type.as_str()).unwrap();
            assert_eq!(filter, EventFilter::Exact(event_type.clone()));
            assert_eq!(filter.to_string(), event_type.as_str());
        }
    }

    #[test]
    fn the_five_documented_wildcards_parse() {
        for (text, wildcard) in [
            ("fs:*", Wildcard::Fs),
            ("link:*", Wildcard::Link),
            ("comment:*", Wildcard::Comment),
            ("permission:*", Wildcard::Permission),
            ("meta:*", Wildcard::Meta),
        ] {
            assert_eq!(
                EventFilter::parse(text).unwrap(),
                EventFilter::Wildcard(wildcard)
            );
            assert_eq!(wildcard.as_str(), text);
        }
    }

    #[test]
    fn workflow_and_group_wildcards_are_rejected() {
        for family in ["workflow", "group"] {
            assert_eq!(
                EventFilter::parse(&format!("{family}:*")),
                Err(EventFilterError::NoWildcardForFamily {
                    family: family.to_owned()
                })
            );
        }
    }

    #[test]
    fn unknown_wildcards_names_and_empty_text_are_rejected() {
        assert_eq!(EventFilter::parse(""), Err(EventFilterError::Empty));
        assert!(matches!(
            EventFilter::parse("*"),
            Err(EventFilterError::UnknownEvent { .. })
        ));
        assert!(matches!(
            EventFilter::parse("user:*"),
            Err(EventFilterError::UnknownWildcard { .. })
        ));
        assert!(matches!(
            EventFilter::parse("fs:add_file "),
            Err(EventFilterError::UnknownEvent { .. })
        ));
    }

    #[test]
    fn wildcard_matches_its_family_only_including_unknown_names() {
        let fs = EventFilter::Wildcard(Wildcard::Fs);
        let fs_events = EventType::KNOWN
            .iter()
            .filter(|name| fs.matches(&EventType::from(**name)))
            .count();
        assert_eq!(fs_events, 14);
        assert!(fs.matches(&EventType::Unknown("fs:tag_file".into())));
        assert!(!fs.matches(&EventType::Unknown("fsx:add".into())));
        assert!(!fs.matches(&EventType::MetaAddMetadataKey));
        let meta = EventFilter::Wildcard(Wildcard::Meta);
        assert!(meta.matches(&EventType::MetaDeleteMetadataKey));
    }

    #[test]
    fn exact_filter_matches_only_its_event() {
        let filter = EventFilter::Exact(EventType::LinkCreate);
        assert!(filter.matches(&EventType::LinkCreate));
        assert!(!filter.matches(&EventType::LinkDelete));
    }

    #[test]
    fn filters_are_strings_in_json_and_invalid_ones_fail_to_deserialize() {
        let filters: Vec<EventFilter> =
            serde_json::from_str(r#"["fs:*","workflow:completed"]"#).unwrap();
        assert_eq!(
            serde_json::to_string(&filters).unwrap(),
            r#"["fs:*","workflow:completed"]"#
        );
        assert!(serde_json::from_str::<EventFilter>(r#""group:*""#).is_err());
    }
}
