//! Typed events of JSON audit reports.

use pubapi_sdk::types::{self, AuditReportKind};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// One event of a JSON audit report, typed for the kinds whose shape the reference shows.
///
/// It serializes as the event's JSON object (the fields its type knows; every field of an
/// [`AuditEvent::Other`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AuditEvent {
    /// A logins report event.
    Logins(types::LoginsAuditEvent),
    /// A files report event (a subset of the fields appears per event).
    Files(types::FilesAuditEvent),
    /// A permissions report event, with its `change` parsed.
    Permissions(types::PermissionsAuditEvent),
    /// A users report event.
    Users(types::UsersAuditEvent),
    /// A groups report event.
    Groups(types::GroupsAuditEvent),
    /// A workgroup-settings report event.
    WorkgroupSettings(types::WorkgroupSettingsAuditEvent),
    /// An event of a kind whose shape is not shown (workflows, quality docs, eTMF, ...), or
    /// one that did not match its kind's shape: the JSON as sent.
    Other(Map<String, Value>),
    /// An event that is not a JSON object (the reference makes every event one): the value
    /// as sent, so nothing of the report is lost.
    NotAnObject(Value),
}

impl AuditEvent {
    /// Types `raw` by the report `kind`; never fails. The map's strings are moved into the
    /// typed event, not copied: the map is first read for whether it fits its kind's shape
    /// (without copying a string), then taken apart. A map that does not fit is kept as it
    /// came, in [`AuditEvent::Other`].
    pub fn from_json(kind: AuditReportKind, raw: Map<String, Value>) -> AuditEvent {
        match kind {
            AuditReportKind::Logins => moved(raw, AuditEvent::Logins),
            AuditReportKind::Files => moved(raw, AuditEvent::Files),
            AuditReportKind::Permissions => moved(raw, AuditEvent::Permissions),
            AuditReportKind::Users => moved(raw, AuditEvent::Users),
            AuditReportKind::Groups => moved(raw, AuditEvent::Groups),
            AuditReportKind::WorkgroupSettings => moved(raw, AuditEvent::WorkgroupSettings),
            _ => AuditEvent::Other(raw),
        }
    }

    /// Types the JSON text of one event by the report `kind`, decoding it once; an event that
    /// does not fit its kind's shape is carried as [`AuditEvent::Other`].
    pub(crate) fn from_raw(kind: AuditReportKind, raw: &str) -> AuditEvent {
        AuditEvent::typed(kind, raw).unwrap_or_else(|| {
            // `raw` is one value of a page that parsed, so it parses.
            match serde_json::from_slice(raw.as_bytes()).unwrap_or_default() {
                Value::Object(map) => AuditEvent::Other(map),
                other => AuditEvent::NotAnObject(other),
            }
        })
    }

    /// The event decoded from `source` into the type of `kind`; `None` for a kind whose shape
    /// is not shown, or an event that does not fit it.
    fn typed(kind: AuditReportKind, source: impl Source) -> Option<AuditEvent> {
        match kind {
            AuditReportKind::Logins => source.decode().map(AuditEvent::Logins),
            AuditReportKind::Files => source.decode().map(AuditEvent::Files),
            AuditReportKind::Permissions => source.decode().map(AuditEvent::Permissions),
            AuditReportKind::Users => source.decode().map(AuditEvent::Users),
            AuditReportKind::Groups => source.decode().map(AuditEvent::Groups),
            AuditReportKind::WorkgroupSettings => {
                source.decode().map(AuditEvent::WorkgroupSettings)
            }
            _ => None,
        }
    }

    /// The parsed `change` of a permissions event.
    pub fn role_change(&self) -> Option<RoleChange> {
        match self {
            AuditEvent::Permissions(p) => p.change.as_deref().map(RoleChange::parse),
            _ => None,
        }
    }
}

/// `raw` as a `T` (its strings moved, not copied), or as it came when it does not fit.
fn moved<T: DeserializeOwned>(
    mut raw: Map<String, Value>,
    typed: fn(T) -> AuditEvent,
) -> AuditEvent {
    if !super::fit::fits::<T>(&mut raw) {
        return AuditEvent::Other(raw);
    }
    match super::fit::take::<T>(&mut raw) {
        Ok(event) => typed(event),
        // `fits` said it decodes: for the typed events (see `fit`), it does. Were it ever
        // not so, the map is gone, and the event is said to be empty rather than typed wrong.
        Err(_) => AuditEvent::Other(Map::new()),
    }
}

/// Where one event is decoded from: its JSON text, or (in the tests, the decode that copies
/// which `from_json` is compared with) a map read in place.
trait Source: Copy {
    /// The event as a `T`, if it fits.
    fn decode<T: DeserializeOwned>(self) -> Option<T>;
}

impl Source for &str {
    fn decode<T: DeserializeOwned>(self) -> Option<T> {
        // From the bytes, as the page's one pass (`report.rs`) reads its events: one
        // compiled visitor for both (the text is UTF-8, so both read it alike).
        serde_json::from_slice(self.as_bytes()).ok()
    }
}

#[cfg(test)]
impl Source for &Map<String, Value> {
    fn decode<T: DeserializeOwned>(self) -> Option<T> {
        T::deserialize(self).ok()
    }
}

/// The `change` field of a permissions report event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleChange {
    /// `+role`: the role was granted.
    Grant {
        /// The role granted.
        role: String,
    },
    /// `old>>new`: the role changed.
    Change {
        /// The previous role.
        from: String,
        /// The new role.
        to: String,
    },
    /// Any other form, as sent.
    Other(String),
}

impl RoleChange {
    /// Parses a `change` value. Whitespace around the value and around each role is not
    /// part of a role: the sandbox sends `Viewer >> Editor`.
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::RoleChange;
    /// assert_eq!(RoleChange::parse("+Editor"), RoleChange::Grant { role: "Editor".into() });
    /// assert_eq!(
    ///     RoleChange::parse("Viewer>>Editor"),
    ///     RoleChange::Change { from: "Viewer".into(), to: "Editor".into() },
    /// );
    /// assert_eq!(RoleChange::parse("Viewer >> Editor"), RoleChange::parse("Viewer>>Editor"));
    /// ```
    pub fn parse(change: &str) -> RoleChange {
        let trimmed = change.trim();
        if let Some(role) = trimmed
            .strip_prefix('+')
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            return RoleChange::Grant {
                role: role.to_string(),
            };
        }
        match trimmed
            .split_once(">>")
            .map(|(from, to)| (from.trim(), to.trim()))
        {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => RoleChange::Change {
                from: from.to_string(),
                to: to.to_string(),
            },
            _ => RoleChange::Other(change.to_string()),
        }
    }
}

/// The strategies every property test of untrusted input shares (`arb_json`, ...).
#[cfg(test)]
#[path = "../../tests/support/untrusted_strategies.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod untrusted_strategies;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn role_change_roles_are_trimmed_on_both_sides() {
        let change = |from: &str, to: &str| RoleChange::Change {
            from: from.into(),
            to: to.into(),
        };
        let grant = |role: &str| RoleChange::Grant { role: role.into() };
        let table = [
            ("Viewer >> Editor", change("Viewer", "Editor")),
            ("Viewer>>Editor", change("Viewer", "Editor")),
            ("  Viewer  >>\tEditor \n", change("Viewer", "Editor")),
            ("Co Owner >> Viewer", change("Co Owner", "Viewer")),
            ("+Editor", grant("Editor")),
            (" + Editor ", grant("Editor")),
            (" >> Editor", RoleChange::Other(" >> Editor".into())),
            ("+ ", RoleChange::Other("+ ".into())),
        ];
        for (sent, parsed) in table {
            assert_eq!(RoleChange::parse(sent), parsed, "{sent:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn role_change_parse_ignores_spaces_around_the_roles(
            from in "[A-Za-z][A-Za-z ]{0,8}[A-Za-z]",
            to in "[A-Za-z][A-Za-z ]{0,8}[A-Za-z]",
            a in " {0,3}", b in " {0,3}", c in " {0,3}", d in " {0,3}",
        ) {
            let sent = format!("{a}{from}{b}>>{c}{to}{d}");
            proptest::prop_assert_eq!(
                RoleChange::parse(&sent),
                RoleChange::Change { from: from.clone(), to: to.clone() }
            );
        }
    }

    #[test]
    fn logins_event_is_typed() {
        let e = AuditEvent::from_json(
            AuditReportKind::Logins,
            raw(json!({"username": "alice", "user_id": 7, "event": "login",
                       "ip_address": "192.0.2.1", "access": "Web", "time": "2026-01-01T10:00:00Z"})),
        );
        match e {
            AuditEvent::Logins(l) => {
                assert_eq!(l.username.as_deref(), Some("alice"));
                assert_eq!(l.user_id, Some(7));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A JSON object whose keys are often the field names of the typed kinds, its values any
    /// JSON: most fit no typed shape, many fit one.
    fn arb_event() -> impl proptest::strategy::Strategy<Value = Map<String, Value>> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("username".to_owned()),
            Just("user_id".to_owned()),
            Just("time".to_owned()),
            Just("change".to_owned()),
            Just("assignee_id".to_owned()),
            Just("actionInfo".to_owned()),
            ".{0,5}",
        ];
        let value = prop_oneof![
            ".{0,8}".prop_map(Value::String),
            any::<i64>().prop_map(Value::from),
            super::untrusted_strategies::arb_json(),
        ];
        proptest::collection::btree_map(key, value, 0..6)
            .prop_map(|map| map.into_iter().collect::<Map<_, _>>())
    }

    const KINDS: [AuditReportKind; 8] = [
        AuditReportKind::Logins,
        AuditReportKind::Files,
        AuditReportKind::Permissions,
        AuditReportKind::Users,
        AuditReportKind::Groups,
        AuditReportKind::WorkgroupSettings,
        AuditReportKind::Etmf,
        AuditReportKind::Workflows,
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn a_map_is_typed_as_its_json_text_is_and_what_does_not_fit_stays_as_sent(
            kind in proptest::sample::select(&KINDS[..]),
            map in arb_event(),
        ) {
            let text = Value::Object(map.clone()).to_string();
            // The text does not always give the map back: serde_json's float parsing may
            // round a float's last digit differently. Read in place, the map keeps it.
            let lossless = serde_json::from_str::<Map<String, Value>>(&text).ok() == Some(map.clone());
            let typed = AuditEvent::from_json(kind, map.clone());
            match AuditEvent::from_raw(kind, &text) {
                AuditEvent::Other(_) => proptest::prop_assert_eq!(typed, AuditEvent::Other(map)),
                from_text if lossless => proptest::prop_assert_eq!(typed, from_text),
                _ => proptest::prop_assert!(!matches!(typed, AuditEvent::Other(_))),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Moving the strings out gives what copying them gave (the decode `from_json` made
        /// before, read in place from a borrowed map), misfits included.
        #[test]
        fn moving_a_maps_strings_types_it_as_copying_them_did(
            kind in proptest::sample::select(&KINDS[..]),
            map in arb_event(),
        ) {
            let copied = AuditEvent::typed(kind, &map).unwrap_or(AuditEvent::Other(map.clone()));
            proptest::prop_assert_eq!(AuditEvent::from_json(kind, map), copied);
        }
    }

    #[test]
    fn a_map_that_does_not_fit_its_kind_stays_other_with_every_field_as_sent() {
        let sent = raw(
            json!({"username": "alice", "user_id": "seven", "extra": [1, {"a": null}],
                             "time": "2026-01-01T10:00:00Z"}),
        );
        assert_eq!(
            AuditEvent::from_json(AuditReportKind::Logins, sent.clone()),
            AuditEvent::Other(sent.clone())
        );
        let text = Value::Object(sent.clone()).to_string();
        assert_eq!(
            AuditEvent::from_raw(AuditReportKind::Logins, &text),
            AuditEvent::Other(sent)
        );
    }

    #[test]
    fn an_event_that_is_not_an_object_is_kept_as_sent_and_serializes_back() {
        for sent in [json!(null), json!(42), json!("login"), json!([1, {"a": 2}])] {
            for kind in KINDS {
                let event = AuditEvent::from_raw(kind, &sent.to_string());
                assert_eq!(event, AuditEvent::NotAnObject(sent.clone()));
                assert_eq!(serde_json::to_value(&event).unwrap(), sent);
                assert_eq!(event.occurred_at().unwrap(), None);
            }
        }
    }

    #[test]
    fn kinds_whose_shape_is_not_shown_stay_open() {
        let e = AuditEvent::from_json(AuditReportKind::Etmf, raw(json!({"study": "S1"})));
        assert_eq!(e, AuditEvent::Other(raw(json!({"study": "S1"}))));
    }

    #[test]
    fn permission_change_forms() {
        assert_eq!(
            RoleChange::parse("+Owner"),
            RoleChange::Grant {
                role: "Owner".into()
            }
        );
        assert_eq!(
            RoleChange::parse("Viewer>>Manager"),
            RoleChange::Change {
                from: "Viewer".into(),
                to: "Manager".into()
            }
        );
        for other in ["", "+", ">>Editor", "Viewer>>", "-Editor"] {
            assert_eq!(RoleChange::parse(other), RoleChange::Other(other.into()));
        }
    }
}
