//! The query of the events lists.

use crate::error::Error;
use pubapi_sdk::types::{EventSuppress, PollingEventType};

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
    /// Event types ([`PollingEventType::FileSystem`], [`PollingEventType::Note`],
    /// [`PollingEventType::PermissionChange`]); empty means the version's default. A type the
    /// spec does not list yet goes in [`PollingEventType::Unknown`], and must still read as an
    /// event name (see [`EventQuery::validate`]).
    pub types: Vec<PollingEventType>,
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
    /// [`Error::InvalidInput`] for a count outside 1..=100, or a type in
    /// [`PollingEventType::Unknown`] that is not an event name as the reference writes them:
    /// lower-case ASCII letters, digits and `_`, starting with a letter (so never empty, never a
    /// `|`, which joins the names on the wire).
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(count) = self.count
            && !(1..=Self::MAX_COUNT).contains(&count)
        {
            return Err(Error::invalid_input(
                "count",
                format!("{count} is outside 1..=100"),
            ));
        }
        if let Some(bad) = self.types.iter().find(|t| !is_event_name(t.as_str())) {
            return Err(Error::invalid_input(
                "type",
                format!("{:?} is not an event type name", bad.as_str()),
            ));
        }
        Ok(())
    }

    pub(crate) fn type_param(&self) -> Option<String> {
        let names: Vec<&str> = self.types.iter().map(PollingEventType::as_str).collect();
        (!names.is_empty()).then(|| names.join("|"))
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

/// Whether `name` is written like the reference's event type names (`file_system`,
/// `permission_change`): lower-case ASCII letters, digits and `_`, starting with a letter.
fn is_event_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
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
            types: vec![PollingEventType::FileSystem, PollingEventType::Note],
            ..EventQuery::after(1)
        };
        assert_eq!(query.type_param().as_deref(), Some("file_system|note"));
    }

    #[test]
    fn unknown_type_that_is_not_an_event_name_is_refused_before_sending() {
        for bad in ["a|b", "", "File_System", "file system", " note"] {
            let query = EventQuery {
                types: vec![PollingEventType::Unknown(bad.into())],
                ..EventQuery::after(1)
            };
            assert!(
                matches!(query.validate(), Err(Error::InvalidInput(_))),
                "{bad:?}"
            );
        }
        let future_type = EventQuery {
            types: vec![PollingEventType::Unknown("task".into())],
            ..EventQuery::after(1)
        };
        assert!(future_type.validate().is_ok());
        assert_eq!(future_type.type_param().as_deref(), Some("task"));
    }
}
