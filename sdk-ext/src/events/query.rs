//! The query of the events lists.

use crate::error::Error;
use pubapi_sdk::types::EventSuppress;

/// Which events list to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventsVersion {
    /// `GET /v1/events`: `file_system` and `note` by default, `permission_change` only when
    /// asked for.
    V1,
    /// `GET /v2/events`: all three types by default.
    V2,
}

impl EventsVersion {
    /// `v1` or `v2`, the metrics label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            EventsVersion::V1 => "v1",
            EventsVersion::V2 => "v2",
        }
    }
}

/// Whose events to drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suppress {
    /// Events caused by the current application.
    App,
    /// Events caused by the current user.
    User,
    /// Nothing (the default).
    None,
}

impl Suppress {
    pub(crate) fn as_sdk(self) -> EventSuppress {
        match self {
            Suppress::App => EventSuppress::App,
            Suppress::User => EventSuppress::User,
            Suppress::None => EventSuppress::None,
        }
    }
}

/// The query of one events page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventQuery {
    /// The cursor: events after this id (or, with `reverse`, up to it).
    pub id: i64,
    /// Only events at this path, including subfolders (events do not follow a moved folder).
    pub folder: Option<String>,
    /// Whose events to drop.
    pub suppress: Option<Suppress>,
    /// Event types (`file_system`, `note`, `permission_change`); empty means the version's
    /// default.
    pub types: Vec<String>,
    /// Page size, 1 to 100; `None` means the API's default of 50.
    pub count: Option<u8>,
    /// Walk backwards: the page holds the events with ids `id - count + 1` up to `id`.
    pub reverse: bool,
}

impl EventQuery {
    /// The largest page the API serves.
    pub const MAX_COUNT: u8 = crate::request::validate::MAX_EVENTS_COUNT;

    /// Events after `id`, in pages of 100.
    pub fn after(id: i64) -> Self {
        EventQuery {
            id,
            folder: None,
            suppress: None,
            types: Vec::new(),
            count: Some(Self::MAX_COUNT),
            reverse: false,
        }
    }

    /// Checks the bounds the reference gives, before anything is sent.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a count outside 1..=100 or a type with a `|`.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(count) = self.count
            && !(1..=Self::MAX_COUNT).contains(&count)
        {
            return Err(Error::invalid_input(
                "count",
                format!("{count} is outside 1..=100"),
            ));
        }
        if let Some(bad) = self.types.iter().find(|t| t.is_empty() || t.contains('|')) {
            return Err(Error::invalid_input(
                "type",
                format!("{bad:?} is not an event type"),
            ));
        }
        Ok(())
    }

    pub(crate) fn type_param(&self) -> Option<String> {
        (!self.types.is_empty()).then(|| self.types.join("|"))
    }

    /// The ids one page spans: `count`, or the API's default of 50.
    pub(crate) fn page_size(&self) -> i64 {
        i64::from(self.count.unwrap_or(50))
    }

    pub(crate) fn count_param(&self) -> Option<std::num::NonZeroU64> {
        self.count
            .and_then(|c| std::num::NonZeroU64::new(u64::from(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_outside_one_to_hundred_is_refused() {
        for count in [0, 101] {
            let query = EventQuery {
                count: Some(count),
                ..EventQuery::after(1)
            };
            assert!(
                matches!(query.validate(), Err(Error::InvalidInput(_))),
                "{count}"
            );
        }
        assert!(EventQuery::after(1).validate().is_ok());
    }

    #[test]
    fn types_are_joined_with_a_pipe() {
        let query = EventQuery {
            types: vec!["file_system".into(), "note".into()],
            ..EventQuery::after(1)
        };
        assert_eq!(query.type_param().as_deref(), Some("file_system|note"));
        let bad = EventQuery {
            types: vec!["a|b".into()],
            ..EventQuery::after(1)
        };
        assert!(bad.validate().is_err());
    }
}
