//! Wire conformance of audit reporting v1 (reference 2.8, 4.7): fourteen report creations
//! (202 with the job id and its `Location`), the job poll (200 running, 303 when done), the
//! report (JSON or CSV) and its deletion.

mod wire;

use httpmock::MockServer;
use pubapi_httpmock::MockServerExt;
use pubapi_sdk::{ResponseValue, types};
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::audit::{JobState, ReportLocation};
use pubapi_sdk_ext::prelude::*;
use pubapi_testkit::{AUDIT_KINDS, error_of};
use serde_json::{Value, json};
use std::fmt::Debug;
use std::str::FromStr;
use wire::{AWKWARD_ID, AWKWARD_ID_ENCODED, Expect, Kind, Reply, assert_decoded};

// ------------------------------------------------------------------ shared

const START: &str = "2026-01-01";
const END: &str = "2026-01-31T23:59:59Z";
const JOB_URL: &str = "https://acme.example.com/pubapi/v1/audit/jobs/job-1";

/// The 202 of every creation: `{id}` and the job's `Location`.
fn accepted() -> Reply {
    Reply::json(202, &json!({"id": "job-1"})).header("location", JOB_URL)
}

/// Checks a creation's 202 (status, `Location`, every field of `{id}`) and returns what the
/// success snapshots hold.
fn job_created(response: ResponseValue<types::AuditJobCreated>) -> Value {
    assert_eq!(response.status(), 202);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, JOB_URL);
    let created = response.into_inner();
    wire::assert_round_trip(&created, &json!({"id": "job-1"}));
    json!({"status": 202, "location": location, "body": created})
}

/// The wire strings of a request enum, from a list of them separated by white space.
fn words(values: &str) -> Vec<&str> {
    values.split_whitespace().collect()
}

/// Every value of a request enum, from the reference's wire strings ([`words`]).
fn all<T: FromStr>(values: &str) -> Vec<T>
where
    T::Err: Debug,
{
    words(values).iter().map(|v| v.parse().unwrap()).collect()
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

/// Absolute folder paths, as the spec types the files report's `folders`.
fn folders(values: &[&str]) -> Vec<types::FilesAuditRequestFoldersItem> {
    values.iter().map(|v| v.parse().unwrap()).collect()
}

const USERS: &[&str] = &["alice", "bob"];

/// The creation 202 with an unknown field in its body and an unknown header still decodes.
async fn assert_created_ignores_unknown_fields<F, Fut>(create: F)
where
    F: FnOnce(pubapi_sdk_ext::Client) -> Fut,
    Fut: Future<Output = Result<ResponseValue<types::AuditJobCreated>, Error>>,
{
    let server = MockServer::start_async().await;
    let sent = wire::with_unknown_fields(&json!({"id": "job-1"}), &[""]);
    let reply = Reply::json(202, &sent)
        .header("location", JOB_URL)
        .header("x-job-eta", "120");
    let _seen = wire::serve(&server, reply).await;
    let created = create(wire::client(&server)).await.unwrap().into_inner();
    wire::assert_round_trip(&created, &json!({"id": "job-1"}));
}

/// The category filter of the two quality-docs kinds, one with subcategories and one without.
fn categories() -> Vec<types::QualityDocsCategoryFilter> {
    vec![
        types::QualityDocsCategoryFilter {
            id: "cat-1".into(),
            subcategory_ids: strings(&["sub-1", "sub-2"]),
        },
        types::QualityDocsCategoryFilter {
            id: "cat-2".into(),
            subcategory_ids: Vec::new(),
        },
    ]
}

fn categories_json() -> Value {
    json!([{"id": "cat-1", "subcategoryIds": ["sub-1", "sub-2"]}, {"id": "cat-2"}])
}

// ------------------------------------------------------------------ the fourteen creations

/// The five wire tests of a report creation, which differ between kinds only in what the
/// kind's module gives them: the operation (its generated method, its id and its path),
/// `minimal()` and `full()`, the request in its minimal and its full form, and `minimal_json()`
/// and `full_json()`, the bodies they must become on the wire.
///
/// Each kind's module is named after its operation, so its tests read
/// `create_logins_audit::success_decodes_the_202_job_id_and_location`.
macro_rules! creation_tests {
    ($method:ident, $operation:literal, $path:literal) => {
        wire::request_tests! {
            /// Every filter and every value of each filter's enum, acting as another user.
            request_full_sends_every_filter:
                bob, accepted(),
                |sdk| sdk.$method().body(full())
                => Expect::post($path).act_as(wire::BOB).json(full_json());

            /// The required fields and the defaults the generated builder fills in; the omitted
            /// filters are left out.
            request_minimal_sends_the_required_fields_and_defaults:
                client, accepted(),
                |sdk| sdk.$method().body(minimal())
                => Expect::post($path).json(minimal_json());
        }

        #[tokio::test]
        async fn success_decodes_the_202_job_id_and_location() {
            let (response, _) =
                wire::answered!(client, accepted(), |sdk| sdk.$method().body(minimal()));
            assert_decoded!(job_created(response));
        }

        wire::error_tests! {
            errors_decode_general_format_and_throttles:
                $operation, [400, 401, 403, 404, 429],
                |sdk| sdk.$method().body(minimal());
        }

        #[tokio::test]
        async fn forward_compat_ignores_unknown_fields() {
            assert_created_ignores_unknown_fields(|client| async move {
                client
                    .sdk()
                    .$method()
                    .body(minimal())
                    .send()
                    .await
                    .map_err(Error::from)
            })
            .await;
        }
    };
}

/// The fourteen creations, one row a kind, each a module of [`creation_tests!`]: the module
/// (named after the operation), the operation id and path, and the request type; then the
/// minimal and the full request, each as the builder calls after `format` (csv in the minimal,
/// json in the full one), `date_start` and `date_end`, and the fields of the body they must
/// become beside those three.
macro_rules! creations {
    ($(
        $(#[$doc:meta])*
        $module:ident: $operation:literal, $path:literal, $request:ident {
            minimal: [$($minimal:tt)*] => {$($minimal_json:tt)*},
            full: [$($full:tt)*] => {$($full_json:tt)*} $(,)?
        }
    )*) => {$(
        $(#[$doc])*
        mod $module {
            use super::*;

            creation_tests!($module, $operation, $path);

            fn minimal() -> types::builder::$request {
                types::$request::builder()
                    .format(types::AuditFormat::Csv)
                    .date_start(START)
                    .date_end(END)
                    $($minimal)*
            }

            fn minimal_json() -> Value {
                json!({"format": "csv", "date_start": START, "date_end": END, $($minimal_json)*})
            }

            fn full() -> types::builder::$request {
                minimal().format(types::AuditFormat::Json) $($full)*
            }

            fn full_json() -> Value {
                json!({"format": "json", "date_start": START, "date_end": END, $($full_json)*})
            }
        }
    )*};
}

// The values of the request enums, as the reference lists them, in its order.
const LOGIN_EVENTS: &str = "logins logouts account_lockouts password_resets failed_attempts";
const ACCESS_POINTS: &str = "Web FTP Mobile";
const TRANSACTION_TYPES: &str = "upload download preview delete copy move create_folder \
    restore_trash delete_trash create_link delete_link download_link";
const USER_ACTIONS: &str = "CREATE UPDATE DISABLE ENABLE DELETE PASSWORD_RESET PASSWORD_CHANGE";
const GROUP_ACTIONS: &str = "CREATE ADD_USERS REMOVE_USERS RENAME DELETE";
const WORKFLOW_ACTIONS: &str = "WORKFLOW_CREATED WORKFLOW_CANCELLED WORKFLOW_COMPLETED \
    STEP_ACTIVATED STEP_COMPLETED STEP_CANCELLED STEP_REJECTED STEP_FAILED WEBHOOK_CALLED \
    WEBHOOK_COMPLETION_SIGNAL_RECEIVED WEBHOOK_RETRIED FILE_MOVED FILE_MOVE_RETRIED \
    FILE_CONVERTED FILE_CONVERT_RETRIED TODO_TASK_COMPLETED REVIEW_TASK_COMPLETED \
    REVIEW_TASK_CANCELLED APPROVAL_TASK_APPROVED APPROVAL_TASK_REJECTED APPROVAL_TASK_CANCELLED \
    E_SIGNATURE_CAPTURED COMMENT_ADDED WORKFLOW_EDITED";
const WORKFLOW_TYPES: &str = "REVIEW_APPROVE TODO APPROVAL REVIEW MULTISTEP TEMPLATE";
const WORKFLOW_TEMPLATE_ACTIONS: &str = "TEMPLATE_CREATED TEMPLATE_STATUS_CHANGED TEMPLATE_EDITED \
    STEP_ADDED STEP_REMOVED ITEM_ADDED ITEM_REMOVED";
const QUALITY_DOCS_ACTIONS: &str = "DOCUMENT_ADDED DOCUMENT_MODIFIED DOCUMENT_IMPORTED \
    DOWNLOAD_RENDITION PREVIEW DOWNLOAD_ORIGINAL TRAINING_ASSIGNED TRAINING_MODIFIED \
    TRAINING_CANCELED TRAINING_OVERDUE TRAINING_COMPLETED TRAINING_IMPORTED DRAFT_ADDED \
    DRAFT_EDITED DRAFT_DELETED";
const QUALITY_DOCS_STATUSES: &str = "DRAFT EFFECTIVE FUTURE_EFFECTIVE OBSOLETE";
const QUALITY_DOCS_CATEGORIES_ACTIONS: &str = "CATEGORY_ADDED CATEGORY_MODIFIED SUBCATEGORY_ADDED \
    SUBCATEGORY_MODIFIED";
const QUALITY_DOCS_COURSES_ACTIONS: &str = "COURSE_CREATED COURSE_MODIFIED COURSE_STATUS_CHANGED \
    COURSE_DOCUMENT_STATUS_CHANGED";
const QUALITY_DOCS_COURSES_PARAMETERS: &str = "NAME DESCRIPTION DAYS_TO_COMPLETE \
    MIN_DAYS_BEFORE_OBSOLETE RECURRENCE_PERIOD START_DATE ASSIGNEES DOCUMENTS COURSE_STATUS \
    DOCUMENT_STATUS";
const ETMF_ACTIONS: &str = "STUDY_CREATED STUDY_UPDATED TRIAL_UPDATED COUNTRY_CREATED \
    COUNTRY_UPDATED SITE_CREATED SITE_UPDATED STUDY_ACTIVATED STUDY_DEACTIVATED TRIAL_ACTIVATED \
    TRIAL_DEACTIVATED COUNTRY_ACTIVATED COUNTRY_DEACTIVATED SITE_ACTIVATED SITE_DEACTIVATED \
    DOCUMENT_ADDED DOCUMENT_DELETED DOCUMENT_RECLASSIFIED DOCUMENT_CLASSIFICATION_CHANGED \
    ARTIFACT_CREATED ARTIFACT_STATUS_UPDATED REQUIRED_ARTIFACT_ADDED REQUIRED_ARTIFACT_REMOVED \
    STUDY_PERMISSIONS_UPDATED TRIAL_PERMISSIONS_UPDATED COUNTRY_PERMISSIONS_UPDATED \
    SITE_PERMISSIONS_UPDATED MILESTONE_ADDED MILESTONE_COMPLETED MILESTONE_ACTIVATED \
    MILESTONE_UPDATED IMPORT_CREATED IMPORT_FAILED IMPORT_SUCCEEDED IMPORT_CONFIRMED \
    IMPORT_REJECTED QC_INITIATED QC_APPROVED QC_REJECTED COMMENT_CREATED \
    ARTIFACT_REQUIREMENT_SETTING_UPDATED MILESTONE_REQUIREMENT_SETTING_UPDATED \
    MILESTONE_ACTIVATION_REQUIREMENT_SETTING_UPDATED ARTIFACT_UNBLINDED ARTIFACT_BLINDED";
const UPLOAD_REQUESTS_ACTIONS: &str = "REQUEST_CREATED REQUEST_MODIFIED REQUEST_STATUS_CHANGED \
    FILE_UPLOADED FILE_REMOVED DOCUMENT_SUBMITTED DOCUMENT_SKIPPED DOCUMENT_ACCEPTED \
    DOCUMENT_REJECTED REQUEST_COMPLETED REQUEST_CANCELED";

creations! {
    /// `createLoginsAudit`: `suppress_emails` is always sent (its default, `false`); the omitted
    /// filters are not.
    create_logins_audit: "createLoginsAudit", "/v1/audit/logins", LoginsAuditRequest {
        minimal: [.events(vec![types::LoginEvent::Logins])]
            => {"suppress_emails": false, "events": ["logins"]},
        full: [.suppress_emails(true).events(all::<types::LoginEvent>(LOGIN_EVENTS))
            .access_points(all::<types::AccessPoint>(ACCESS_POINTS)).users(strings(USERS))]
            => {"suppress_emails": true, "events": words(LOGIN_EVENTS),
                "access_points": words(ACCESS_POINTS), "users": USERS},
    }

    /// `createFilesAudit`.
    create_files_audit: "createFilesAudit", "/v1/audit/files", FilesAuditRequest {
        minimal: [.folders(folders(&["/Shared"]))]
            => {"suppress_emails": false, "folders": ["/Shared"]},
        full: [.suppress_emails(true)
            .folders(folders(&["/Shared/Contracts", "/Shared/Q1 reports"]))
            .file("contract*.pdf".parse::<types::FilesAuditRequestFile>().ok())
            .users(strings(USERS))
            .transaction_type(all::<types::FileTransactionType>(TRANSACTION_TYPES))]
            => {"suppress_emails": true, "folders": ["/Shared/Contracts", "/Shared/Q1 reports"],
                "file": "contract*.pdf", "users": USERS,
                "transaction_type": words(TRANSACTION_TYPES)},
    }

    /// `createPermissionsAudit`: omitted assignee filters change the meaning (only groups, only
    /// users), so an unset filter must be left out, never sent as `[]`.
    create_permissions_audit: "createPermissionsAudit", "/v1/audit/permissions",
        PermissionsAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).folders(strings(&["/Shared/Contracts"]))
            .assigners(strings(&["alice"])).assignee_users(strings(&["bob", "carol"]))
            .assignee_groups(strings(&["Legal"]))]
            => {"suppress_emails": true, "folders": ["/Shared/Contracts"], "assigners": ["alice"],
                "assignee_users": ["bob", "carol"], "assignee_groups": ["Legal"]},
    }

    /// `createUsersAudit`: this kind takes no `suppress_emails`; `include_system_actions` is
    /// sent with its default.
    create_users_audit: "createUsersAudit", "/v1/audit/users", UsersAuditRequest {
        minimal: [] => {"include_system_actions": false},
        full: [.action_type(all::<types::UserActionType>(USER_ACTIONS))
            .performed_by(strings(&["alice"])).include_system_actions(true)
            .subject(strings(&["carol"]))]
            => {"action_type": words(USER_ACTIONS), "performed_by": ["alice"],
                "include_system_actions": true, "subject": ["carol"]},
    }

    /// `createGroupsAudit`.
    create_groups_audit: "createGroupsAudit", "/v1/audit/groups", GroupsAuditRequest {
        minimal: [] => {"include_system_actions": false},
        full: [.action_type(all::<types::GroupActionType>(GROUP_ACTIONS)).users(strings(USERS))
            .include_system_actions(true).groups(strings(&["Legal", "finance"]))]
            => {"action_type": words(GROUP_ACTIONS), "users": USERS,
                "include_system_actions": true, "groups": ["Legal", "finance"]},
    }

    /// `createWorkgroupSettingsAudit`.
    create_workgroup_settings_audit: "createWorkgroupSettingsAudit",
        "/v1/audit/workgroup-settings", WorkgroupSettingsAuditRequest {
        minimal: [] => {},
        full: [.users(strings(USERS))] => {"users": USERS},
    }

    /// `createWorkflowsAudit`.
    create_workflows_audit: "createWorkflowsAudit", "/v1/audit/workflows", WorkflowsAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS))
            .file("Contract review*".parse::<types::WorkflowsAuditRequestFile>().ok())
            .workflow_actions(all::<types::WorkflowAction>(WORKFLOW_ACTIONS))
            .workflow_types(all::<types::WorkflowType>(WORKFLOW_TYPES))]
            => {"suppress_emails": true, "users": USERS, "file": "Contract review*",
                "workflow_actions": words(WORKFLOW_ACTIONS),
                "workflow_types": words(WORKFLOW_TYPES)},
    }

    /// `createWorkflowTemplatesAudit`.
    create_workflow_templates_audit: "createWorkflowTemplatesAudit",
        "/v1/audit/workflow-templates", WorkflowTemplatesAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS)).workflow_template_actions(
            all::<types::WorkflowTemplateAction>(WORKFLOW_TEMPLATE_ACTIONS))]
            => {"suppress_emails": true, "users": USERS,
                "workflow_template_actions": words(WORKFLOW_TEMPLATE_ACTIONS)},
    }

    /// `createQualityDocsAudit`.
    create_quality_docs_audit: "createQualityDocsAudit", "/v1/audit/quality-docs",
        QualityDocsAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS))
            .quality_document_id("qd-77".to_string()).quality_docs_categories(categories())
            .quality_docs_actions(all::<types::QualityDocsAction>(QUALITY_DOCS_ACTIONS))
            .quality_docs_statuses(all::<types::QualityDocsStatus>(QUALITY_DOCS_STATUSES))]
            => {"suppress_emails": true, "users": USERS, "quality_document_id": "qd-77",
                "quality_docs_categories": categories_json(),
                "quality_docs_actions": words(QUALITY_DOCS_ACTIONS),
                "quality_docs_statuses": words(QUALITY_DOCS_STATUSES)},
    }

    /// `createQualityDocsCategoriesAudit`.
    create_quality_docs_categories_audit: "createQualityDocsCategoriesAudit",
        "/v1/audit/quality-docs-categories", QualityDocsCategoriesAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS)).quality_docs_categories(categories())
            .quality_docs_categories_actions(all::<types::QualityDocsCategoriesAction>(
                QUALITY_DOCS_CATEGORIES_ACTIONS,
            ))]
            => {"suppress_emails": true, "users": USERS,
                "quality_docs_categories": categories_json(),
                "quality_docs_categories_actions": words(QUALITY_DOCS_CATEGORIES_ACTIONS)},
    }

    /// `createQualityDocsCoursesAudit`.
    create_quality_docs_courses_audit: "createQualityDocsCoursesAudit",
        "/v1/audit/quality-docs-courses", QualityDocsCoursesAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS))
            .quality_docs_courses_ids(strings(&["course-1", "course-2"]))
            .quality_docs_courses_actions(all::<types::QualityDocsCoursesAction>(
                QUALITY_DOCS_COURSES_ACTIONS,
            ))
            .quality_docs_courses_parameters(all::<types::QualityDocsCoursesParameter>(
                QUALITY_DOCS_COURSES_PARAMETERS,
            ))]
            => {"suppress_emails": true, "users": USERS,
                "quality_docs_courses_ids": ["course-1", "course-2"],
                "quality_docs_courses_actions": words(QUALITY_DOCS_COURSES_ACTIONS),
                "quality_docs_courses_parameters": words(QUALITY_DOCS_COURSES_PARAMETERS)},
    }

    /// `createEtmfAudit`.
    create_etmf_audit: "createEtmfAudit", "/v1/audit/etmf", EtmfAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS))
            .etmf_actions(all::<types::EtmfAction>(ETMF_ACTIONS))
            .etmf_study_ids(strings(&["study-1", "study-2"]))
            .etmf_artifact_number("01.01.01".to_string())]
            => {"suppress_emails": true, "users": USERS, "etmf_actions": words(ETMF_ACTIONS),
                "etmf_study_ids": ["study-1", "study-2"], "etmf_artifact_number": "01.01.01"},
    }

    /// `createSnapshotRestoreAudit`: for this kind `include_system_actions` defaults to true,
    /// and the default is what is sent.
    create_snapshot_restore_audit: "createSnapshotRestoreAudit", "/v1/audit/snapshot-restore",
        SnapshotRestoreAuditRequest {
        minimal: [] => {"suppress_emails": false, "include_system_actions": true},
        full: [.suppress_emails(true).users(strings(USERS)).include_system_actions(false)]
            => {"suppress_emails": true, "users": USERS, "include_system_actions": false},
    }

    /// `createUploadRequestsAudit`.
    create_upload_requests_audit: "createUploadRequestsAudit", "/v1/audit/upload-requests",
        UploadRequestsAuditRequest {
        minimal: [] => {"suppress_emails": false},
        full: [.suppress_emails(true).users(strings(USERS))
            .upload_requests_actions(all::<types::UploadRequestsAction>(UPLOAD_REQUESTS_ACTIONS))]
            => {"suppress_emails": true, "users": USERS,
                "upload_requests_actions": words(UPLOAD_REQUESTS_ACTIONS)},
    }
}

// ------------------------------------------------------------------ getAuditJob

const REPORT_URL: &str = "https://acme.example.com/pubapi/v1/audit/logins/job-1";

/// The body of the job's 303: `{status: completed}`.
fn completed() -> types::AuditJobStatus {
    types::AuditJobStatus {
        status: types::AuditJobState::Completed,
    }
}

#[tokio::test]
async fn get_audit_job_success_decodes_running_while_the_report_is_generated() {
    let job = wire::success!(json!({"status": "running"}), |sdk| sdk
        .get_audit_job()
        .id("job-1"));
    assert_eq!(job.status, types::AuditJobState::from("running"));
}

#[tokio::test]
async fn get_audit_job_forward_compat_accepts_unknown_fields_and_an_unknown_status() {
    let job = wire::forward_compat!(&json!({"status": "queued"}), &[""], |sdk| sdk
        .get_audit_job()
        .id("job-1"));
    assert_eq!(job.status, types::AuditJobState::from("queued"));
}

/// The generated client does not decode the 303 (redirects are not followed): the finished
/// job reaches it as an unexpected response that keeps its status, `Location` and
/// `{status: completed}` body, and `Error::from` makes it an `UnexpectedStatus`.
/// `Client::audit_job_state` turns it into `JobState::Completed` (below).
#[tokio::test]
async fn get_audit_job_303_reaches_the_generated_client_with_its_location() {
    let server = MockServer::start_async().await;
    let reply = Reply::json(303, &json!({"status": "completed"})).header("location", REPORT_URL);
    let seen = wire::serve(&server, reply).await;
    let client = wire::single_attempt_client(&server);
    match client.sdk().get_audit_job().id("job-1").send().await {
        Err(pubapi_sdk::Error::UnexpectedResponse(response)) => {
            assert_eq!(response.status(), 303);
            assert_eq!(response.headers()["location"], REPORT_URL);
            let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
            let job: types::AuditJobStatus = serde_json::from_value(body.clone()).unwrap();
            assert_eq!(job.status, types::AuditJobState::from("completed"));
            wire::assert_round_trip(&job, &body);
        }
        other => panic!("{other:?}"),
    }
    // Nor through `Error::from`: a 303 is not decoded.
    let error = error_of(client.sdk().get_audit_job().id("job-1").send()).await;
    assert_eq!(wire::kind(&error), Kind::UnexpectedStatus(303));
    assert_eq!(
        seen.calls().await,
        2,
        "one request each, the redirect is not followed"
    );
}

// ------------------------------------------------------------------ getAuditReport

/// A logins report as CSV (the one column set the reference shows).
const CSV: &str = "Username,Event,IP Address,Access,Time\r\n\
                   alice,Login,203.0.113.7,Web,2026-01-05T08:00:00Z\r\n";

/// A finished JSON report of each kind whose event shape the reference describes.
fn described_reports() -> Vec<(&'static str, Value)> {
    let report = |events: Value| {
        let count = events.as_array().unwrap().len();
        json!({"total_count": 120, "offset": 20, "count": count, "events": events})
    };
    vec![
        (
            "logins",
            report(json!([{
                "username": "alice", "user_id": 1001, "event": "Login",
                "ip_address": "203.0.113.7", "access": "Web", "time": "2026-01-05T08:00:00Z"
            }])),
        ),
        (
            "files",
            report(json!([{
                "username": "alice", "user_id": 1001, "file": "contract.pdf",
                "folder": "/Shared/Contracts", "target_path": "/Shared/Archive/contract.pdf",
                "link": "https://acme.example.com/l/abc", "transaction": "move",
                "actionInfo": "moved from drafts", "access": "Web",
                "time": "2026-01-05T08:01:00Z", "ipAddress": "203.0.113.7",
                "file_checksum": "9e107d9d372bb6826bd81d3542a419d6"
            }])),
        ),
        (
            "permissions",
            report(json!([
                {
                    "folder": "/Shared/Contracts", "assignee": "bob", "assignee_id": 1002,
                    "assigner": "alice", "assigner_id": 1001, "change": "+Viewer",
                    "time": "2026-01-05T08:02:00Z"
                },
                {
                    "folder": "/Shared/Contracts", "assignee": "bob", "assignee_id": 1002,
                    "assigner": "alice", "assigner_id": 1001, "change": "Viewer >> Editor",
                    "time": "2026-01-06T08:02:00Z"
                }
            ])),
        ),
        (
            "users",
            report(json!([{
                "performed_by": "alice", "performed_by_id": 1001, "subject": "carol",
                "subject_id": 1003, "action": "CREATE", "action_info": "role Standard",
                "date_and_time": "2026-01-05T08:03:00Z", "action_source": "WebUI"
            }])),
        ),
        (
            "groups",
            report(json!([{
                "time": "2026-01-05T08:04:00Z", "actor": "alice", "actor_id": 1001,
                "group": "Legal", "action": "ADD_USERS", "action_info": "added carol",
                "source": "WebUI"
            }])),
        ),
        (
            "workgroup-settings",
            report(json!([{
                "time": "2026-01-05T08:05:00Z", "actor": "alice", "ip_address": "203.0.113.7",
                "setting_screen": "Security", "setting_name": "Two-step verification",
                "old_value": "off", "new_value": "on"
            }])),
        ),
    ]
}

/// The events of `report`, decoded as the typed event of `kind` and serialized again.
fn typed_events(kind: &str, report: &types::AuditReport) -> Vec<Value> {
    fn again<T: serde::de::DeserializeOwned + serde::Serialize>(event: Value) -> Value {
        json!(serde_json::from_value::<T>(event).unwrap())
    }
    report
        .events
        .iter()
        .map(|event| {
            let event = Value::Object(event.clone());
            match kind {
                "logins" => again::<types::LoginsAuditEvent>(event),
                "files" => again::<types::FilesAuditEvent>(event),
                "permissions" => again::<types::PermissionsAuditEvent>(event),
                "users" => again::<types::UsersAuditEvent>(event),
                "groups" => again::<types::GroupsAuditEvent>(event),
                "workgroup-settings" => again::<types::WorkgroupSettingsAuditEvent>(event),
                other => panic!("no typed event for {other}"),
            }
        })
        .collect()
}

/// An empty page of a report, at `offset`.
fn empty_report(offset: u64) -> Value {
    json!({"total_count": 0, "offset": offset, "count": 0, "events": []})
}

wire::request_tests! {
    get_audit_report_request_full_encodes_kind_and_id_and_sends_count_and_offset:
        bob, Reply::json(200, &empty_report(20)),
        |sdk| sdk
            .get_audit_report()
            .type_(types::AuditReportKind::WorkgroupSettings)
            .id(AWKWARD_ID)
            .offset(20_u64)
            .count(10_u64)
        => Expect::get(&format!("/v1/audit/workgroup-settings/{AWKWARD_ID_ENCODED}"))
            .query("count=10&offset=20")
            .act_as(wire::BOB);

    get_audit_report_request_minimal_sends_no_query:
        client, Reply::json(200, &empty_report(0)),
        |sdk| sdk.get_audit_report().type_(types::AuditReportKind::Logins).id("job-1")
        => Expect::get("/v1/audit/logins/job-1");
}

#[tokio::test]
async fn get_audit_report_request_full_sends_every_report_kind_as_its_path_segment() {
    for kind in AUDIT_KINDS {
        let server = MockServer::start_async().await;
        let seen = wire::serve(&server, Reply::json(200, &empty_report(0))).await;
        wire::client(&server)
            .sdk()
            .get_audit_report()
            .type_(kind)
            .id("job-1")
            .offset(0_u64)
            .count(0_u64)
            .send()
            .await
            .unwrap();
        seen.assert_only(Expect::get(&format!("/v1/audit/{kind}/job-1")).query("count=0&offset=0"))
            .await;
    }
}

#[tokio::test]
async fn get_audit_report_success_decodes_json_reports_of_the_six_described_kinds() {
    let mut decoded = serde_json::Map::new();
    for (kind, body) in described_reports() {
        let server = MockServer::start_async().await;
        let _seen = wire::serve(&server, Reply::json(200, &body)).await;
        let report = wire::client(&server)
            .sdk()
            .get_audit_report()
            .type_(kind)
            .id("job-1")
            .send()
            .await
            .unwrap()
            .into_inner();
        wire::assert_round_trip(&report, &body);
        assert_eq!(
            typed_events(kind, &report),
            body["events"].as_array().unwrap().clone(),
            "{kind}: the typed events keep every field"
        );
        decoded.insert(kind.to_owned(), json!(report));
    }
    assert_decoded!(decoded);
}

/// The event shapes of the other eight kinds are not shown: their events are kept whole.
#[tokio::test]
async fn get_audit_report_success_keeps_events_of_kinds_without_a_described_shape() {
    let body = json!({
        "total_count": 1, "offset": 0, "count": 1,
        "events": [{"workflow": "Contract review", "action": "WORKFLOW_CREATED", "actor": {"id": 1001}}]
    });
    let report = wire::decoded!(Reply::json(200, &body), |sdk| sdk
        .get_audit_report()
        .type_(types::AuditReportKind::Workflows)
        .id("job-1"));
    wire::assert_round_trip(&report, &body);
}

/// Unknown top-level fields are dropped; events are open objects, so their new fields are kept,
/// and the typed events ignore them.
#[tokio::test]
async fn get_audit_report_forward_compat_ignores_unknown_fields_and_keeps_them_in_events() {
    let (kind, known) = described_reports().remove(0);
    let sent = wire::with_unknown_fields(&known, &["", "/events/0"]);
    let report = wire::decoded!(Reply::json(200, &sent), |sdk| sdk
        .get_audit_report()
        .type_(kind)
        .id("job-1"));
    let mut expected = known.clone();
    expected["events"] = sent["events"].clone();
    wire::assert_round_trip(&report, &expected);
    assert_eq!(typed_events(kind, &report)[0], known["events"][0]);
}

/// The generated client only asks for and decodes JSON (progenitor drops the `text/csv` body),
/// so through it a CSV report is a decode error that keeps the CSV bytes.
/// `Client::audit_report_csv` streams it (below).
#[tokio::test]
async fn get_audit_report_csv_is_a_decode_error_with_the_csv_through_the_generated_client() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::status(200).body("text/csv", CSV)).await;
    let client = wire::single_attempt_client(&server);
    let report = || {
        client
            .sdk()
            .get_audit_report()
            .type_(types::AuditReportKind::Logins)
            .id("job-1")
            .send()
    };
    match report().await {
        Err(pubapi_sdk::Error::InvalidResponsePayload(bytes, _)) => assert_eq!(bytes, CSV),
        other => panic!("{other:?}"),
    }
    // Nor through `Error::from`: CSV is not JSON.
    let error = error_of(report()).await;
    match error {
        Error::Decode { body, .. } => assert_eq!(*body, CSV),
        other => panic!("{other:?}"),
    }
    let requests = seen.requests().await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].headers["accept"], "application/json");
}

// ------------------------------------------------------------------ deleteAuditReport

#[tokio::test]
async fn delete_audit_report_success_is_a_204_without_content() {
    let answered = wire::answered!(client, Reply::status(204), |sdk| sdk
        .delete_audit_report()
        .type_(types::AuditReportKind::Logins)
        .id("job-1"));
    wire::assert_no_content(answered, 204);
}

/// The 204 has no body to extend; headers the reference does not name do not disturb it.
#[tokio::test]
async fn delete_audit_report_forward_compat_ignores_unknown_headers_on_the_204() {
    let reply = Reply::status(204).header("x-request-id", "r-1");
    let (response, _) = wire::answered!(client, reply, |sdk| sdk
        .delete_audit_report()
        .type_(types::AuditReportKind::Logins)
        .id("job-1"));
    assert_eq!(response.status(), 204);
}

// ------------------------------------------------------------------ through Client::audit_job_state

/// `Client::audit().job_state` of `job-1`, asked by [`wire::client`] of `server`.
async fn job_state(server: &MockServer) -> JobState {
    wire::client(server)
        .audit()
        .job_state("job-1")
        .await
        .unwrap()
}

/// The state of a job whose report `id` of `kind` is ready.
fn ready(kind: types::AuditReportKind, id: &str) -> JobState {
    JobState::Completed(ReportLocation {
        kind,
        id: id.into(),
    })
}

#[tokio::test]
async fn get_audit_job_303_report_ready_is_completed_with_its_location_through_audit_job_state() {
    let server = MockServer::start_async().await;
    let location = server.url("/pubapi/v1/audit/workgroup-settings/job%201");
    let reply = Reply::json(303, &json!({"status": "completed"})).header("location", &location);
    let seen = wire::serve(&server, reply).await;
    let state = wire::bob(&server).audit().job_state("job 1").await.unwrap();
    assert_eq!(
        state,
        ready(types::AuditReportKind::WorkgroupSettings, "job 1")
    );
    seen.assert_only(Expect::get("/v1/audit/jobs/job%201").act_as(wire::BOB))
        .await;
}

#[tokio::test]
async fn get_audit_job_303_with_a_relative_location_is_completed_through_audit_job_state() {
    let server = MockServer::start_async().await;
    let done = server.get_audit_job(|when, then| {
        when.id("job-1");
        then.see_other(&completed())
            .location("/pubapi/v1/audit/logins/job-1");
    });
    assert_eq!(
        job_state(&server).await,
        ready(types::AuditReportKind::Logins, "job-1")
    );
    done.assert();
}

/// A `Location` on another origin is not a report of this domain: refused, never fetched.
#[tokio::test]
async fn get_audit_job_303_to_another_origin_is_refused_through_audit_job_state() {
    let server = MockServer::start_async().await;
    let done = server.get_audit_job(|when, then| {
        when.id("job-1");
        then.see_other(&completed()).location(REPORT_URL);
    });
    let report = server.get_audit_report(|_, then| {
        then.ok_csv("never fetched");
    });
    let result = wire::client(&server).audit().job_state("job-1").await;
    assert!(
        matches!(&result, Err(Error::Decode { path, .. }) if path == "Location"),
        "{result:?}"
    );
    done.assert_calls(1);
    report.assert_calls(0);
}

#[tokio::test]
async fn get_audit_job_success_running_is_running_through_audit_job_state() {
    let server = MockServer::start_async().await;
    let _seen = wire::serve(&server, Reply::json(200, &json!({"status": "running"}))).await;
    assert_eq!(
        job_state(&server).await,
        JobState::Running {
            status: "running".into()
        }
    );
}

#[tokio::test]
async fn get_audit_job_errors_through_audit_job_state_decode_general_format_and_throttles() {
    wire::assert_errors(
        "getAuditJob",
        &[400, 401, 403, 404, 429],
        |client| async move { client.audit().job_state("job-1").await.map(drop) },
    )
    .await;
}

// ------------------------------------------------------------------ through Client::audit_report_csv

/// The CSV request asks for `text/csv`; it is built by `pubapi-sdk-ext` itself, so it carries
/// no `api-version`, and its id is encoded by `pubapi_sdk_ext::path::encode_segment`.
#[tokio::test]
async fn get_audit_report_csv_is_streamed_through_audit_report_csv() {
    let server = MockServer::start_async().await;
    let seen = wire::serve(&server, Reply::status(200).body("text/csv", CSV)).await;
    let at = ReportLocation {
        kind: types::AuditReportKind::Logins,
        id: AWKWARD_ID.into(),
    };
    let report = wire::bob(&server).audit().csv(&at).await.unwrap();
    let mut out = Vec::new();
    let written = report.copy_to(&mut out).await.unwrap();
    assert_eq!(out, CSV.as_bytes());
    assert_eq!(written, CSV.len() as u64);
    seen.assert_only(
        Expect::get(&format!("/v1/audit/logins/{AWKWARD_ID_ENCODED}"))
            .header("accept", "text/csv")
            .without_header("api-version")
            .act_as(wire::BOB),
    )
    .await;
}

#[tokio::test]
async fn get_audit_report_csv_errors_through_audit_report_csv_decode_general_format_and_throttles()
{
    wire::assert_errors(
        "getAuditReport",
        &[400, 401, 403, 404, 429],
        |client| async move {
            let at = ReportLocation {
                kind: types::AuditReportKind::Logins,
                id: "job-1".into(),
            };
            client.audit().csv(&at).await.map(drop)
        },
    )
    .await;
}

// ------------------------------------------------------------------ the exact requests

// One call of each operation and the exact request it must become: every field and header in
// the full form, only what is required in the minimal one.
wire::request_tests! {
    get_audit_job_request_full_encodes_the_job_id:
        bob, Reply::json(200, &json!({"status": "running"})),
        |sdk| sdk.get_audit_job().id(AWKWARD_ID)
        => Expect::get(&format!("/v1/audit/jobs/{AWKWARD_ID_ENCODED}")).act_as(wire::BOB);

    get_audit_job_request_minimal_sends_the_plain_id:
        client, Reply::json(200, &json!({"status": "running"})),
        |sdk| sdk.get_audit_job().id("job-1")
        => Expect::get("/v1/audit/jobs/job-1");

    delete_audit_report_request_full_encodes_kind_and_id:
        bob, Reply::status(204),
        |sdk| sdk
            .delete_audit_report()
            .type_(types::AuditReportKind::QualityDocsCategories)
            .id(AWKWARD_ID)
        => Expect::delete(&format!(
            "/v1/audit/quality-docs-categories/{AWKWARD_ID_ENCODED}"
        ))
        .accept_any()
        .act_as(wire::BOB);

    delete_audit_report_request_minimal_sends_no_body_and_accepts_anything:
        client, Reply::status(204),
        |sdk| sdk.delete_audit_report().type_(types::AuditReportKind::Logins).id("job-1")
        => Expect::delete("/v1/audit/logins/job-1").accept_any();
}

// ------------------------------------------------------------------ the documented errors

// The error statuses the reference documents for each operation, in the area's format.
wire::error_tests! {
    get_audit_job_errors_decode_general_format_and_throttles:
        "getAuditJob", [400, 401, 403, 404, 429],
        |sdk| sdk.get_audit_job().id("job-1");

    get_audit_report_errors_decode_general_format_and_throttles:
        "getAuditReport", [400, 401, 403, 404, 429],
        |sdk| sdk.get_audit_report().type_(types::AuditReportKind::Logins).id("job-1");

    delete_audit_report_errors_decode_general_format_and_throttles:
        "deleteAuditReport", [400, 401, 403, 404, 429],
        |sdk| sdk.delete_audit_report().type_(types::AuditReportKind::Logins).id("job-1");
}
