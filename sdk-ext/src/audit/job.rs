//! Audit report jobs: create, poll no more often than every 2 minutes, find the report.

use super::AuditRequest;
use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use crate::waiter::{Verdict, WaitConfig, WaitError, observer, wait};
use pubapi_sdk::types::{AuditFormat, AuditJobStatus, AuditReportKind};
use std::time::Duration;

/// A created audit report job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditJob {
    /// The job id (also the report id).
    pub id: String,
    /// The report kind.
    pub kind: AuditReportKind,
    /// The report format asked for.
    pub format: AuditFormat,
}

/// Where a finished report is: the kind and id taken from the job's `Location`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReportLocation {
    /// The report kind (first path segment after `/v1/audit/`).
    pub kind: AuditReportKind,
    /// The report id.
    pub id: String,
}

/// The state of a job, from `GET /v1/audit/jobs/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// `200 {status: running}` (or another status the API may add, carried as sent).
    Running {
        /// The status as sent.
        status: String,
    },
    /// `303 See Other` with the report's `Location`; the body says `completed`.
    Completed(ReportLocation),
}

observer! {
    /// A function told the state of each poll of an audit job (see [`AuditWait::on_status`]).
    ///
    /// ```
    /// use pubapi_sdk_ext::audit::{AuditWait, JobObserver, JobState};
    ///
    /// let how = AuditWait {
    ///     on_status: JobObserver::new(|state| {
    ///         if let JobState::Running { status } = state {
    ///             eprintln!("still {status}");
    ///         }
    ///     }),
    ///     ..AuditWait::default()
    /// };
    /// # let _ = how;
    /// ```
    ///
    /// Two observers are equal when they are the same function (or both none).
    pub struct JobObserver(&JobState);
}

/// How to wait for a job. Polls are at least [`AuditWait::MIN_INTERVAL`] apart (from one
/// answer to the next request) in the server's time, whatever is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditWait {
    /// The interval between polls (default and minimum: 2 minutes).
    pub interval: Duration,
    /// Give up after this long (default: 1 hour).
    pub deadline: Duration,
    /// Told the state of every poll: a progress display's hook. None by default.
    pub on_status: JobObserver,
    /// How many times faster than this process's clock the server's runs: 1 (the default)
    /// for the platform; a sandbox with a scaled clock runs faster. The interval, its
    /// 2-minute minimum and the deadline are the server's time, waited this many times less.
    pub server_time_scale: u32,
}

impl AuditWait {
    /// The reference: "Job status must be polled no more often than once every 2 minutes".
    pub const MIN_INTERVAL: Duration = Duration::from_secs(120);

    fn config(&self) -> WaitConfig {
        let scale = self.server_time_scale.max(1);
        let interval = self.interval.max(Self::MIN_INTERVAL) / scale;
        WaitConfig::new(interval, interval, self.deadline / scale)
    }
}

impl Default for AuditWait {
    fn default() -> Self {
        AuditWait {
            interval: Self::MIN_INTERVAL,
            deadline: Duration::from_secs(3600),
            on_status: JobObserver::default(),
            server_time_scale: 1,
        }
    }
}

/// Creates an audit report job (`POST /v1/audit/<kind>`, 202) after validating the
/// request; nothing is sent when validation fails.
pub(crate) async fn create_audit_report(
    client: &Client,
    request: impl Into<AuditRequest>,
) -> Result<AuditJob, Error> {
    let request = request.into();
    request.validate()?;
    if request.assignee_scope() == Some(crate::audit_request::AssigneeScope::OnlyUsers) {
        tracing::warn!(
            "a permissions audit with assignee_users alone leaves out every group \
             (list assignee_groups too to include them)"
        );
    }
    let created = send_create(client, request.clone()).await?;
    let id = Some(created.id)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Error::Decode {
            path: "id".into(),
            message: "the 202 body has no job id".into(),
            body: Default::default(),
            request_id: None,
        })?;
    Ok(AuditJob {
        id,
        kind: request.kind(),
        format: request.format(),
    })
}

/// Sends the request to its kind's operation.
async fn send_create(
    client: &Client,
    request: AuditRequest,
) -> Result<pubapi_sdk::types::AuditJobCreated, Error> {
    let sdk = client.sdk();
    let sent = match request {
        AuditRequest::Logins(b) => sdk.create_logins_audit().body(b).send().await,
        AuditRequest::Files(b) => sdk.create_files_audit().body(b).send().await,
        AuditRequest::Permissions(b) => sdk.create_permissions_audit().body(b).send().await,
        AuditRequest::Users(b) => sdk.create_users_audit().body(b).send().await,
        AuditRequest::Groups(b) => sdk.create_groups_audit().body(b).send().await,
        AuditRequest::WorkgroupSettings(b) => {
            sdk.create_workgroup_settings_audit().body(b).send().await
        }
        AuditRequest::Workflows(b) => sdk.create_workflows_audit().body(b).send().await,
        AuditRequest::WorkflowTemplates(b) => {
            sdk.create_workflow_templates_audit().body(b).send().await
        }
        AuditRequest::QualityDocs(b) => sdk.create_quality_docs_audit().body(b).send().await,
        AuditRequest::QualityDocsCategories(b) => {
            sdk.create_quality_docs_categories_audit()
                .body(b)
                .send()
                .await
        }
        AuditRequest::QualityDocsCourses(b) => {
            sdk.create_quality_docs_courses_audit().body(b).send().await
        }
        AuditRequest::Etmf(b) => sdk.create_etmf_audit().body(b).send().await,
        AuditRequest::SnapshotRestore(b) => {
            sdk.create_snapshot_restore_audit().body(b).send().await
        }
        AuditRequest::UploadRequests(b) => sdk.create_upload_requests_audit().body(b).send().await,
    };
    sent.map(|created| created.into_inner())
        .map_err(Error::from)
}

/// Polls a job once (`GET /v1/audit/jobs/{id}`); 303 becomes [`JobState::Completed`] with
/// the report taken from `Location`, which is never followed automatically.
pub(crate) async fn audit_job_state(client: &Client, job_id: &str) -> Result<JobState, Error> {
    match client.sdk().get_audit_job().id(job_id).send().await {
        Ok(status) => Ok(JobState::Running {
            status: String::from(status.into_inner().status),
        }),
        Err(pubapi_sdk::Error::UnexpectedResponse(response))
            if crate::verdict::is_report_ready(response.status()) =>
        {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            let location = location.ok_or_else(|| decode("Location", "303 without Location"))?;
            // The body only repeats `completed`: read a bounded prefix, never the whole.
            let body = crate::request::failed::read_capped(response, None)
                .await
                .map_err(Error::from)?;
            // The report is where `Location` says: a body that is not the status the
            // reference shows (a proxy's page, nothing) does not lose it.
            if !body.is_empty() && body.len() < crate::request::failed::MAX_ERROR_BODY {
                match Error::decode::<AuditJobStatus>(body) {
                    Ok(status) => tracing::debug!(status = ?status.status, "audit job finished"),
                    Err(error) => {
                        tracing::debug!(%error, "audit job finished, its 303 body not a status")
                    }
                }
            }
            Ok(JobState::Completed(report_location(client, &location)?))
        }
        Err(e) => Err(Error::from(e)),
    }
}

/// Polls `job` until it completes, no more often than every 2 minutes (from one answer to the next request),
/// within `how.deadline`, telling `how.on_status` each poll's state; the error says how long it waited and how many polls it made.
/// Dropping the future cancels the wait.
pub(crate) async fn wait_for_audit_job(
    client: &Client,
    job: &AuditJob,
    how: AuditWait,
) -> Result<ReportLocation, WaitError<Error>> {
    let observer = &how.on_status;
    wait(how.config(), || async {
        match audit_job_state(client, &job.id).await {
            Ok(state) => {
                observer.tell(&state);
                match state {
                    JobState::Completed(location) => Verdict::Done(location),
                    JobState::Running { .. } => Verdict::Pending,
                }
            }
            Err(e) => Verdict::Failed(e),
        }
    })
    .await
}

/// Reads a report's kind and id from a `Location` (absolute or relative). It must point
/// below this client's `{base_url}/v1/audit/`: a report elsewhere is refused, so no
/// credential goes to another origin.
fn report_location(client: &Client, location: &str) -> Result<ReportLocation, Error> {
    let base = reqwest::Url::parse(&format!("{}/", client.base_url()))
        .map_err(|e| decode("Location", &e.to_string()))?;
    let url = base
        .join(location)
        .map_err(|e| decode("Location", &e.to_string()))?;
    let prefix = format!("{}v1/audit/", base.path());
    let rest = url
        .path()
        .strip_prefix(&prefix)
        .filter(|_| url.origin() == base.origin())
        .ok_or_else(|| {
            decode(
                "Location",
                &format!("{url} is not a report of {}", client.base_url()),
            )
        })?;
    let (kind, id) = rest
        .split_once('/')
        .filter(|(_, id)| !id.is_empty() && !id.contains('/'))
        .ok_or_else(|| decode("Location", &format!("{url} is not /v1/audit/<type>/<id>")))?;
    let kind = kind
        .parse::<AuditReportKind>()
        .map_err(|_| decode("Location", &format!("unknown report type {kind:?}")))?;
    let id = percent_encoding::percent_decode_str(id)
        .decode_utf8()
        .map_err(|_| decode("Location", &format!("the report id in {url} is not UTF-8")))?
        .into_owned();
    // An id that is not one clean segment (`a\..\b`, `..`) would address another report.
    crate::path::check_segment(&id).map_err(|e| {
        decode(
            "Location",
            &format!("the report id {id:?} is unusable: {e}"),
        )
    })?;
    Ok(ReportLocation { kind, id })
}

fn decode(path: &str, message: &str) -> Error {
    Error::Decode {
        path: path.into(),
        message: message.into(),
        body: Default::default(),
        request_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One client for every case: building one loads the TLS roots.
    fn client() -> &'static Client {
        static CLIENT: std::sync::OnceLock<Client> = std::sync::OnceLock::new();
        CLIENT.get_or_init(|| {
            Client::builder()
                .isolated_budget()
                .base_url("https://acme.example.com/pubapi")
                .token(crate::SecretToken::try_from("t").unwrap())
                .build()
                .unwrap()
        })
    }

    #[test]
    fn a_location_whose_id_decodes_to_another_path_is_refused() {
        let client = client();
        for location in [
            "/pubapi/v1/audit/logins/a%5C..%5Cb",
            "/pubapi/v1/audit/logins/..",
            "/pubapi/v1/audit/logins/%2e%2e",
            "/pubapi/v1/audit/logins/a%2Fb",
            "/pubapi/v1/audit/logins/a%FFb",
        ] {
            assert!(report_location(client, location).is_err(), "{location}");
        }
        assert_eq!(
            report_location(client, "/pubapi/v1/audit/logins/r%201")
                .unwrap()
                .id,
            "r 1"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn any_location_is_refused_or_names_one_clean_segment(
            location in prop_oneof![
                any::<String>(),
                "(https://acme\\.example\\.com)?/pubapi/v1/audit/(logins|files|jobs|x)/[a-z0-9%./\\\\ -]{0,12}",
            ]
        ) {
            if let Ok(at) = report_location(client(), &location) {
                prop_assert!(crate::path::encode_segment(&at.id).is_ok(), "{location:?} -> {at:?}");
            }
        }
    }
}
