//! When an audit report event happened, typed.

use super::event::AuditEvent;
use crate::time::{self, TimeError};
use jiff::Timestamp;

impl AuditEvent {
    /// When the event happened, as an instant: the ISO 8601 `time` of logins, files,
    /// permissions, groups and workgroup-settings events, the `date_and_time` of users events
    /// (reference 2.8); for an event of a kind whose shape is not shown, its `time` or
    /// `date_and_time` text when it has one. `None` when the event has no such field.
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::AuditEvent;
    /// use pubapi_sdk_ext::types::AuditReportKind;
    ///
    /// let raw = serde_json::json!({"username": "ada", "time": "2026-01-05T10:00:00Z"});
    /// let event = AuditEvent::from_json(AuditReportKind::Logins, raw.as_object().unwrap().clone());
    /// let at = event.occurred_at()?.unwrap();
    /// assert_eq!(at.as_millisecond(), 1_767_607_200_000);
    /// # Ok::<(), pubapi_sdk_ext::time::TimeError>(())
    /// ```
    ///
    /// # Errors
    /// [`TimeError`] naming the field and its text when the text is not an ISO 8601 instant,
    /// or the value is not text at all (an epoch number: its JSON as the text).
    pub fn occurred_at(&self) -> Result<Option<Timestamp>, TimeError> {
        let time = |text: &Option<String>| time::optional_instant("time", text.as_deref());
        match self {
            AuditEvent::Logins(e) => time(&e.time),
            AuditEvent::Files(e) => time(&e.time),
            AuditEvent::Permissions(e) => time(&e.time),
            AuditEvent::Users(e) => {
                time::optional_instant("date_and_time", e.date_and_time.as_deref())
            }
            AuditEvent::Groups(e) => time(&e.time),
            AuditEvent::WorkgroupSettings(e) => time(&e.time),
            AuditEvent::Other(raw) => {
                for field in ["time", "date_and_time"] {
                    match raw.get(field) {
                        None | Some(serde_json::Value::Null) => {}
                        Some(serde_json::Value::String(text)) => {
                            return time::instant(field, text).map(Some);
                        }
                        // A number or anything else: not the ISO 8601 text of the reference.
                        Some(other) => return time::instant(field, &other.to_string()).map(Some),
                    }
                }
                Ok(None)
            }
            AuditEvent::NotAnObject(_) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pubapi_sdk::types::AuditReportKind;
    use serde_json::{Value, json};

    const AT: i64 = 1_767_607_200_000; // 2026-01-05T10:00:00Z

    fn event(kind: AuditReportKind, value: Value) -> AuditEvent {
        AuditEvent::from_json(kind, value.as_object().unwrap().clone())
    }

    #[test]
    fn report_event_time_fields_read_as_instants() {
        let at = Some(Timestamp::from_millisecond(AT).unwrap());
        let time = json!({"time": "2026-01-05T10:00:00Z"});
        for kind in [
            AuditReportKind::Logins,
            AuditReportKind::Files,
            AuditReportKind::Permissions,
            AuditReportKind::Groups,
            AuditReportKind::WorkgroupSettings,
            AuditReportKind::Workflows,
        ] {
            assert_eq!(event(kind, time.clone()).occurred_at(), Ok(at), "{kind:?}");
        }
        let users = event(
            AuditReportKind::Users,
            json!({"action": "CREATE", "date_and_time": "2026-01-05T10:00:00Z"}),
        );
        assert!(matches!(users, AuditEvent::Users(_)));
        assert_eq!(users.occurred_at(), Ok(at));
        assert_eq!(
            event(AuditReportKind::Etmf, json!({"study": "S1"})).occurred_at(),
            Ok(None)
        );
    }

    #[test]
    fn report_event_time_that_is_not_an_instant_is_an_error_naming_the_field() {
        let users = event(
            AuditReportKind::Users,
            json!({"date_and_time": "05/01/2026"}),
        );
        assert_eq!(
            users.occurred_at().unwrap_err().to_string(),
            "`date_and_time` is not an iso 8601 instant: \"05/01/2026\""
        );
        let logins = event(AuditReportKind::Logins, json!({"time": ""}));
        assert_eq!(logins.occurred_at().unwrap_err().field(), "time");
        // A time that is not text (epoch milliseconds) does not fit the typed event, and is
        // an error naming the field, not an event without a time.
        let epoch = event(AuditReportKind::Logins, json!({"time": AT}));
        assert!(matches!(epoch, AuditEvent::Other(_)));
        assert_eq!(
            epoch.occurred_at().unwrap_err().to_string(),
            "`time` is not an iso 8601 instant: \"1767607200000\""
        );
    }
}
