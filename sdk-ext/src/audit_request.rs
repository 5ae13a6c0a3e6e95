//! Audit report requests: one variant per report kind, validated before sending.

use crate::audit_date::AuditDate;
use crate::error::Error;
use pubapi_sdk::types::{self, AuditFormat, AuditReportKind};

/// A request to create an audit report of one of the 14 kinds.
///
/// Build the body with the generated type's constructor, which takes the required fields
/// (the dates are checked against the spec's pattern as it is built), and set the filters
/// you need (typed enums; `suppress_emails` exists only on the kinds that accept it); then
/// convert:
///
/// ```
/// use pubapi_sdk_ext::types::{AuditFormat, LoginEvent, LoginsAuditRequest};
/// use pubapi_sdk_ext::audit::AuditRequest;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let body = LoginsAuditRequest::new(
///     "2026-01-01",
///     "2026-01-31T23:59:59Z",
///     AuditFormat::Json,
///     [LoginEvent::Logins, LoginEvent::FailedAttempts],
/// )?;
/// let request = AuditRequest::from(LoginsAuditRequest { suppress_emails: true, ..body });
/// assert!(request.validate().is_ok());
/// assert!(LoginsAuditRequest::new("01/31/2026", "2026-02-01", AuditFormat::Csv, []).is_err());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AuditRequest {
    /// `POST /v1/audit/logins`.
    Logins(types::LoginsAuditRequest),
    /// `POST /v1/audit/files`.
    Files(types::FilesAuditRequest),
    /// `POST /v1/audit/permissions`.
    Permissions(types::PermissionsAuditRequest),
    /// `POST /v1/audit/users`.
    Users(types::UsersAuditRequest),
    /// `POST /v1/audit/groups`.
    Groups(types::GroupsAuditRequest),
    /// `POST /v1/audit/workgroup-settings`.
    WorkgroupSettings(types::WorkgroupSettingsAuditRequest),
    /// `POST /v1/audit/workflows`.
    Workflows(types::WorkflowsAuditRequest),
    /// `POST /v1/audit/workflow-templates`.
    WorkflowTemplates(types::WorkflowTemplatesAuditRequest),
    /// `POST /v1/audit/quality-docs`.
    QualityDocs(types::QualityDocsAuditRequest),
    /// `POST /v1/audit/quality-docs-categories`.
    QualityDocsCategories(types::QualityDocsCategoriesAuditRequest),
    /// `POST /v1/audit/quality-docs-courses`.
    QualityDocsCourses(types::QualityDocsCoursesAuditRequest),
    /// `POST /v1/audit/etmf`.
    Etmf(types::EtmfAuditRequest),
    /// `POST /v1/audit/snapshot-restore`.
    SnapshotRestore(types::SnapshotRestoreAuditRequest),
    /// `POST /v1/audit/upload-requests`.
    UploadRequests(types::UploadRequestsAuditRequest),
}

/// Evaluates `$body` with `$request` bound to the body of whichever kind `$value` is.
macro_rules! each_kind {
    ($value:expr, $request:ident => $body:expr) => {
        match $value {
            AuditRequest::Logins($request) => $body,
            AuditRequest::Files($request) => $body,
            AuditRequest::Permissions($request) => $body,
            AuditRequest::Users($request) => $body,
            AuditRequest::Groups($request) => $body,
            AuditRequest::WorkgroupSettings($request) => $body,
            AuditRequest::Workflows($request) => $body,
            AuditRequest::WorkflowTemplates($request) => $body,
            AuditRequest::QualityDocs($request) => $body,
            AuditRequest::QualityDocsCategories($request) => $body,
            AuditRequest::QualityDocsCourses($request) => $body,
            AuditRequest::Etmf($request) => $body,
            AuditRequest::SnapshotRestore($request) => $body,
            AuditRequest::UploadRequests($request) => $body,
        }
    };
}

macro_rules! from_body {
    ($($variant:ident($body:ident)),* $(,)?) => {
        $(
            impl From<types::$body> for AuditRequest {
                fn from(body: types::$body) -> Self {
                    AuditRequest::$variant(body)
                }
            }
        )*

        impl AuditRequest {
            /// The request of `kind` a JSON body holds (what `POST /v1/audit/<kind>` sends):
            /// for bodies built at run time, such as a command line's flags. Call
            /// [`AuditRequest::validate`] (or [`crate::api::Audit::create`], which does)
            /// to check the dates and filters.
            ///
            /// # Errors
            /// [`Error::InvalidInput`] (field `body`) naming what does not fit the kind's
            /// request schema: a missing field, an unknown filter value.
            pub fn from_json(
                kind: AuditReportKind,
                body: serde_json::Value,
            ) -> Result<AuditRequest, Error> {
                let decoded = match kind {
                    $(
                        AuditReportKind::$variant => {
                            Error::decode_value::<types::$body>(&body)
                                .map(AuditRequest::$variant)
                        }
                    )*
                };
                decoded.map_err(|(path, problem)| {
                    Error::invalid_input("body", match path.as_str() {
                        "." => problem,
                        _ => format!("{path}: {problem}"),
                    })
                })
            }

            /// The request a body sent to `operation_id` (`create<Kind>Audit`) holds; `None`
            /// for another operation.
            pub(crate) fn from_body(
                operation_id: &str,
                body: &[u8],
            ) -> Option<Result<AuditRequest, serde_json::Error>> {
                match operation_id {
                    $(
                        concat!("create", stringify!($variant), "Audit") => Some(
                            serde_json::from_slice::<types::$body>(body).map(AuditRequest::$variant),
                        ),
                    )*
                    _ => None,
                }
            }
        }
    };
}

from_body!(
    Logins(LoginsAuditRequest),
    Files(FilesAuditRequest),
    Permissions(PermissionsAuditRequest),
    Users(UsersAuditRequest),
    Groups(GroupsAuditRequest),
    WorkgroupSettings(WorkgroupSettingsAuditRequest),
    Workflows(WorkflowsAuditRequest),
    WorkflowTemplates(WorkflowTemplatesAuditRequest),
    QualityDocs(QualityDocsAuditRequest),
    QualityDocsCategories(QualityDocsCategoriesAuditRequest),
    QualityDocsCourses(QualityDocsCoursesAuditRequest),
    Etmf(EtmfAuditRequest),
    SnapshotRestore(SnapshotRestoreAuditRequest),
    UploadRequests(UploadRequestsAuditRequest),
);

/// Which assignees a permissions report covers, read from its `assignee_users` and
/// `assignee_groups` (reference 4.7: an omitted `assignee_groups` means only users are
/// included, an omitted `assignee_users` only groups). See [`AuditRequest::assignee_scope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AssigneeScope {
    /// Neither list is sent: the reference does not say which assignees are included.
    Unfiltered,
    /// Only `assignee_users` is sent: every group is left out of the report.
    OnlyUsers,
    /// Only `assignee_groups` is sent: every user is left out of the report.
    OnlyGroups,
    /// Both lists are sent: the listed users and the listed groups.
    UsersAndGroups,
}

impl AuditRequest {
    /// For a permissions report, which assignees it covers; `None` for other kinds.
    ///
    /// Listing `assignee_users` alone leaves out every group (reference 4.7), which is easy to
    /// miss: creating such a report also logs a warning. To cover both, list the groups too.
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::{AssigneeScope, AuditRequest};
    /// use pubapi_sdk_ext::types::{AuditFormat, PermissionsAuditRequest};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let body = PermissionsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Json)?;
    /// let users_only = AuditRequest::from(PermissionsAuditRequest {
    ///     assignee_users: vec!["alice".into()],
    ///     ..body.clone()
    /// });
    /// assert_eq!(users_only.assignee_scope(), Some(AssigneeScope::OnlyUsers));
    /// let both = AuditRequest::from(PermissionsAuditRequest {
    ///     assignee_users: vec!["alice".into()],
    ///     assignee_groups: vec!["Finance".into()],
    ///     ..body
    /// });
    /// assert_eq!(both.assignee_scope(), Some(AssigneeScope::UsersAndGroups));
    /// # Ok(()) }
    /// ```
    pub fn assignee_scope(&self) -> Option<AssigneeScope> {
        let AuditRequest::Permissions(r) = self else {
            return None;
        };
        Some(
            match (r.assignee_users.is_empty(), r.assignee_groups.is_empty()) {
                (true, true) => AssigneeScope::Unfiltered,
                (false, true) => AssigneeScope::OnlyUsers,
                (true, false) => AssigneeScope::OnlyGroups,
                (false, false) => AssigneeScope::UsersAndGroups,
            },
        )
    }

    /// The report kind (also the path segment of the report).
    pub fn kind(&self) -> AuditReportKind {
        match self {
            AuditRequest::Logins(_) => AuditReportKind::Logins,
            AuditRequest::Files(_) => AuditReportKind::Files,
            AuditRequest::Permissions(_) => AuditReportKind::Permissions,
            AuditRequest::Users(_) => AuditReportKind::Users,
            AuditRequest::Groups(_) => AuditReportKind::Groups,
            AuditRequest::WorkgroupSettings(_) => AuditReportKind::WorkgroupSettings,
            AuditRequest::Workflows(_) => AuditReportKind::Workflows,
            AuditRequest::WorkflowTemplates(_) => AuditReportKind::WorkflowTemplates,
            AuditRequest::QualityDocs(_) => AuditReportKind::QualityDocs,
            AuditRequest::QualityDocsCategories(_) => AuditReportKind::QualityDocsCategories,
            AuditRequest::QualityDocsCourses(_) => AuditReportKind::QualityDocsCourses,
            AuditRequest::Etmf(_) => AuditReportKind::Etmf,
            AuditRequest::SnapshotRestore(_) => AuditReportKind::SnapshotRestore,
            AuditRequest::UploadRequests(_) => AuditReportKind::UploadRequests,
        }
    }

    /// `csv` or `json`.
    pub fn format(&self) -> AuditFormat {
        each_kind!(self, r => r.format)
    }

    /// Whether the API ignores the time portion of this kind's dates (reference 4.7), as
    /// the spec says it (`x-pubapi-date-precision`, read from `pubapi_sdk::audit_kinds`).
    pub fn ignores_time(&self) -> bool {
        pubapi_sdk::audit_kinds::of(self.kind()).ignores_time()
    }

    /// Checks what the reference requires, before anything is sent: dates as `YYYY-MM-DD`
    /// or `YYYY-MM-DDTHH:MM:SSZ` with `date_end` after `date_start` (see
    /// [`AuditDate::ends_after`]: a plain-date `date_end` covers its whole day; compared by
    /// day where the API ignores the time), `events` for logins, `folders` (absolute) or `file` for
    /// files, a `file` pattern whose `*` wildcard is not first, no empty names in filters.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the field and the problem.
    pub fn validate(&self) -> Result<(), Error> {
        let (start, end) = each_kind!(self, r => (&r.date_start, &r.date_end));
        let start = AuditDate::parse(start).ok_or_else(|| {
            Error::invalid_input(
                "date_start",
                format!("{start:?} is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
            )
        })?;
        let end = AuditDate::parse(end).ok_or_else(|| {
            Error::invalid_input(
                "date_end",
                format!("{end:?} is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
            )
        })?;
        let (start, end) = if self.ignores_time() {
            (start.date_only(), end.date_only())
        } else {
            (start, end)
        };
        if !end.ends_after(&start) {
            return Err(Error::invalid_input(
                "date_end",
                format!(
                    "{end} does not end after date_start {start} begins (a plain-date \
                     date_end is the last day covered; a timestamp ends at that instant)"
                ),
            ));
        }
        match self {
            AuditRequest::Logins(r) if r.events.is_empty() => Err(Error::invalid_input(
                "events",
                "at least one event type is required",
            )),
            AuditRequest::Files(r) => {
                if r.folders.is_empty() && r.file.is_none() {
                    return Err(Error::invalid_input(
                        "folders",
                        "folders or file is required",
                    ));
                }
                // Absolute folders and the `file` pattern (not empty, no leading `*`) are
                // the spec's, checked when the generated `FilesAuditRequestFoldersItem` and
                // `FilesAuditRequestFile` are built.
                Ok(())
            }
            _ => Ok(()),
        }?;
        self.check_names()
    }

    fn check_names(&self) -> Result<(), Error> {
        let lists: Vec<(&'static str, &Vec<String>)> = match self {
            AuditRequest::Logins(r) => vec![("users", &r.users)],
            AuditRequest::Files(r) => vec![("users", &r.users)],
            AuditRequest::Permissions(r) => vec![
                ("assigners", &r.assigners),
                ("assignee_users", &r.assignee_users),
                ("assignee_groups", &r.assignee_groups),
            ],
            AuditRequest::Users(r) => {
                vec![("performed_by", &r.performed_by), ("subject", &r.subject)]
            }
            AuditRequest::Groups(r) => vec![("users", &r.users), ("groups", &r.groups)],
            _ => vec![],
        };
        for (field, names) in lists {
            if names.iter().any(|n| n.trim().is_empty()) {
                return Err(Error::invalid_input(field, "contains an empty name"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_audit_with_assignee_users_alone_leaves_out_every_group() {
        let body =
            types::PermissionsAuditRequest::new("2026-01-01", "2026-01-31", AuditFormat::Json)
                .unwrap();
        let with = |users: &[&str], groups: &[&str]| {
            AuditRequest::from(types::PermissionsAuditRequest {
                assignee_users: users.iter().map(|u| u.to_string()).collect(),
                assignee_groups: groups.iter().map(|g| g.to_string()).collect(),
                ..body.clone()
            })
            .assignee_scope()
        };
        assert_eq!(with(&["alice"], &[]), Some(AssigneeScope::OnlyUsers));
        assert_eq!(with(&[], &["Finance"]), Some(AssigneeScope::OnlyGroups));
        assert_eq!(
            with(&["alice"], &["Finance"]),
            Some(AssigneeScope::UsersAndGroups)
        );
        assert_eq!(with(&[], &[]), Some(AssigneeScope::Unfiltered));
        let logins = types::LoginsAuditRequest::new(
            "2026-01-01",
            "2026-01-31",
            AuditFormat::Json,
            [types::LoginEvent::Logins],
        )
        .unwrap();
        assert_eq!(AuditRequest::from(logins).assignee_scope(), None);
    }
    use crate::error::InputError;
    use types::{FilesAuditRequest, LoginEvent, LoginsAuditRequest, UsersAuditRequest};

    fn logins(start: &str, end: &str, events: Vec<LoginEvent>) -> AuditRequest {
        AuditRequest::from(LoginsAuditRequest {
            format: AuditFormat::Csv,
            date_start: start.parse().unwrap(),
            date_end: end.parse().unwrap(),
            events,
            access_points: vec![],
            users: vec![],
            suppress_emails: false,
        })
    }

    fn files(folders: &[&str], file: Option<&str>) -> AuditRequest {
        AuditRequest::from(FilesAuditRequest {
            format: AuditFormat::Json,
            date_start: "2026-01-01".parse().unwrap(),
            date_end: "2026-01-02".parse().unwrap(),
            folders: folders.iter().map(|s| s.parse().unwrap()).collect(),
            file: file.map(|f| f.parse().unwrap()),
            users: vec![],
            transaction_type: vec![],
            suppress_emails: false,
        })
    }

    fn field_of(result: Result<(), Error>) -> &'static str {
        match result {
            Err(Error::InvalidInput(InputError::Invalid { field, .. })) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn logins_require_at_least_one_event_type() {
        assert_eq!(
            field_of(logins("2026-01-01", "2026-01-02", vec![]).validate()),
            "events"
        );
        assert!(
            logins("2026-01-01", "2026-01-02", vec![LoginEvent::Logouts])
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn dates_must_use_a_documented_form() {
        // The spec's pattern refuses other forms as the request is built…
        for other in [
            "01/01/2026",
            "2026-01-02T10:00:00+02:00",
            "2026-1-2",
            "",
            "0000-00-00",
            "2026-13-01",
            "2026-01-32",
            "2026-01-02T24:00:00Z",
            "2026-01-02T10:60:00Z",
            // The pattern knows each month's days and the leap years.
            "2026-02-30",
            "2025-02-29",
            "1900-02-29",
            "2026-04-31",
        ] {
            assert!(other.parse::<types::ReportDate>().is_err(), "{other:?}");
        }
        assert!("2000-02-29".parse::<types::ReportDate>().is_ok());
    }

    #[test]
    fn a_json_body_is_typed_by_kind_and_its_errors_name_the_field() {
        let body = serde_json::json!({
            "format": "csv", "date_start": "2026-01-01", "date_end": "2026-01-02",
            "events": ["logins"],
        });
        let request = AuditRequest::from_json(AuditReportKind::Logins, body.clone()).unwrap();
        assert_eq!(request.kind(), AuditReportKind::Logins);
        let mut bad = body.clone();
        bad["date_start"] = "yesterday".into();
        let refused = AuditRequest::from_json(AuditReportKind::Logins, bad).unwrap_err();
        assert!(refused.to_string().contains("date_start"), "{refused}");
        let mut bad = body;
        bad["events"] = serde_json::json!(["nope"]);
        let refused = AuditRequest::from_json(AuditReportKind::Logins, bad).unwrap_err();
        assert!(refused.to_string().contains("events[0]"), "{refused}");
    }

    #[test]
    fn date_end_must_be_after_date_start() {
        let r = logins("2026-01-02", "2026-01-01", vec![LoginEvent::Logins]);
        assert_eq!(field_of(r.validate()), "date_end");
        let same_day = logins("2026-01-01", "2026-01-01", vec![LoginEvent::Logins]);
        assert!(
            same_day.validate().is_ok(),
            "a plain date_end covers its day"
        );
        let same = logins(
            "2026-01-01T10:00:00Z",
            "2026-01-01T10:00:00Z",
            vec![LoginEvent::Logins],
        );
        assert_eq!(field_of(same.validate()), "date_end");
        let later_same_day = logins(
            "2026-01-01T10:00:00Z",
            "2026-01-01T11:00:00Z",
            vec![LoginEvent::Logins],
        );
        assert!(later_same_day.validate().is_ok());
    }

    #[test]
    fn kinds_that_ignore_time_compare_days() {
        let users = |start: &str, end: &str| {
            AuditRequest::from(UsersAuditRequest {
                format: AuditFormat::Json,
                date_start: start.parse().unwrap(),
                date_end: end.parse().unwrap(),
                action_type: vec![],
                performed_by: vec![],
                include_system_actions: false,
                subject: vec![],
            })
        };
        let same_day = users("2026-01-01T08:00:00Z", "2026-01-01T18:00:00Z");
        assert!(same_day.ignores_time());
        assert!(
            same_day.validate().is_ok(),
            "the same day, as days, is that whole day"
        );
        let day_before = users("2026-01-02T08:00:00Z", "2026-01-01T18:00:00Z");
        assert_eq!(field_of(day_before.validate()), "date_end");
    }

    #[test]
    fn files_need_absolute_folders_or_a_file_whose_wildcard_is_not_first() {
        assert_eq!(field_of(files(&[], None).validate()), "folders");
        assert!(
            "Shared/x"
                .parse::<types::FilesAuditRequestFoldersItem>()
                .is_err()
        );
        assert!(files(&["/Shared/x"], None).validate().is_ok());
        assert!(files(&[], Some("report*.pdf")).validate().is_ok());
    }

    #[test]
    fn file_and_workflow_name_patterns_may_not_start_with_the_wildcard_or_be_empty() {
        use types::{FilesAuditRequestFile, WorkflowsAuditRequestFile};
        assert!("*.pdf".parse::<FilesAuditRequestFile>().is_err());
        assert!("".parse::<FilesAuditRequestFile>().is_err());
        assert!("report*.pdf".parse::<FilesAuditRequestFile>().is_ok());
        assert!("*review".parse::<WorkflowsAuditRequestFile>().is_err());
        assert!("review*".parse::<WorkflowsAuditRequestFile>().is_ok());
    }

    #[test]
    fn every_kind_maps_to_its_path_segment() {
        let r = logins("2026-01-01", "2026-01-02", vec![LoginEvent::Logins]);
        assert_eq!(r.kind().to_string(), "logins");
        assert_eq!(r.format(), AuditFormat::Csv);
    }
}
