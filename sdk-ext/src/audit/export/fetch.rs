//! What an export asks the platform: the server's day (`GET /v1/whoami`), the budget left,
//! and one day's report job, made (or taken over from an earlier run), waited for,
//! downloaded and deleted.

use super::files::ReadSoFar;
use super::state::PendingJob;
use super::{DailyExport, DayError, ExportDay, ExportError};
use crate::audit::{
    AuditJob, ReportLocation, create_audit_report, remove_audit_report, wait_for_audit_job,
};
use crate::error::Error;
use crate::limits::LimitClass;
use crate::prelude::*;
use crate::waiter::WaitError;
use std::path::Path;

impl DailyExport {
    /// The server's time, from the `Date` of its answer to `GET /v1/whoami` (which also
    /// brings the gateway's counters).
    pub(super) async fn server_now(&self) -> Result<i64, ExportError> {
        let answer = self
            .client
            .sdk()
            .whoami()
            .send()
            .await
            .map_err(|e| ExportError::ServerTime(Error::from(e)))?;
        let date = answer
            .headers()
            .get(http::header::DATE)
            .and_then(|d| d.to_str().ok())
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .ok_or(ExportError::NoServerDate)?;
        let ms = date
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| ExportError::NoServerDate)?
            .as_millis();
        i64::try_from(ms).map_err(|_| ExportError::NoServerDate)
    }

    /// The calls left today: the lower of the client's own count and the gateway's
    /// counters; `None` when neither has a daily budget.
    pub(super) fn budget_left(&self) -> Option<u32> {
        let quota = self.client.quota(LimitClass::General);
        let gateway = quota
            .server
            .and_then(|s| Some(s.quota_allotted?.saturating_sub(s.quota_current?)));
        match (quota.remaining_today, gateway) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Exports one day into `target`: the bytes written, and the report when it could not
    /// be deleted afterwards.
    ///
    /// The job is recorded in the state file (with `since`) before it is waited for, and
    /// stays recorded until the day is written: a run that times out, is stopped or fails to
    /// download leaves it to the next run (`pending`), which reads that report instead of
    /// making another.
    pub(super) async fn export_day(
        &self,
        since: ExportDay,
        day: ExportDay,
        target: &Path,
        pending: Option<PendingJob>,
    ) -> Result<(u64, Option<ReportLocation>), DayError> {
        let (job, at, from_earlier_run) = self.finished_job(since, day, pending).await?;
        // A download that fails keeps the report for the next run (the job stays recorded),
        // unless the report of a job recorded by an earlier run is gone (expired, deleted):
        // that job is made again at once, once (the new job is not an earlier run's).
        // What a read that stops part way got is recorded with the job, for the next run. A
        // read that got further starts the job's count of runs again: only a report whose
        // read is stuck is made again after `MAX_RUNS`, and a day too big for one day's
        // budget is read over as many runs as it takes.
        let keep = |read: ReadSoFar| {
            let further = read.events > job.read.map_or(0, |before| before.events);
            let job = PendingJob {
                runs: if further { 0 } else { job.runs },
                read: Some(read),
                ..job.clone()
            };
            self.record_job(since, day, &job)
        };
        let bytes = match self.download(&at, target, job.read, keep).await {
            Ok(bytes) => bytes,
            Err(error) if from_earlier_run && error.report_gone() => {
                tracing::debug!(report = %at.id, "the recorded job's report is gone: made again");
                return Box::pin(self.export_day(since, day, target, None)).await;
            }
            Err(error) => return Err(error),
        };
        let left = if self.settings.keep_reports {
            None
        } else {
            match remove_audit_report(&self.client, &at).await {
                Ok(()) => None,
                Err(error) => {
                    tracing::warn!(report = %at.id, %error, "the day's report was not deleted");
                    Some(at)
                }
            }
        };
        Ok((bytes, left))
    }

    /// The day's finished job and where its report is: the job an earlier run recorded
    /// (`pending`) when it is still worth waiting for, or one made now; and whether it is
    /// an earlier run's.
    async fn finished_job(
        &self,
        since: ExportDay,
        day: ExportDay,
        pending: Option<PendingJob>,
    ) -> Result<(PendingJob, ReportLocation, bool), DayError> {
        let resumed = match pending {
            Some(job) if job.runs < PendingJob::MAX_RUNS => {
                let runs = job.runs + 1;
                match self
                    .wait_for(since, day, PendingJob { runs, ..job })
                    .await?
                {
                    // Gone (expired, deleted): made again below.
                    (
                        _,
                        Err(WaitError::Failed {
                            error: Error::NotFound(_),
                            ..
                        }),
                    ) => None,
                    other => Some(other),
                }
            }
            // Waited for in vain: its report, if it ever came, goes before another is made.
            Some(job) => {
                self.forget(&job).await;
                None
            }
            None => None,
        };
        // Whether the report read below is an earlier run's job's (not one made now).
        let from_earlier_run = resumed.is_some();
        let (job, outcome) = match resumed {
            Some(resumed) => resumed,
            None => {
                // Checked at `build` for another day: only a day out of the dates' range
                // fails here.
                let request = self.request(day).map_err(|e| match e {
                    ExportError::InvalidRequest(e) => DayError::Api(e),
                    other => DayError::Api(Error::invalid_input("date_start", other.to_string())),
                })?;
                let job = create_audit_report(&self.client, request)
                    .await
                    .map_err(DayError::Api)?;
                let job = PendingJob {
                    id: job.id,
                    runs: 1,
                    read: None,
                };
                self.wait_for(since, day, job).await?
            }
        };
        let at = outcome.map_err(|e| match e {
            WaitError::Failed { error, .. } => DayError::Api(error),
            WaitError::TimedOut { polls, waited, .. } => DayError::TimedOut { polls, waited },
        })?;
        Ok((job, at, from_earlier_run))
    }

    /// Records `job` as the day's, then waits for it.
    async fn wait_for(
        &self,
        since: ExportDay,
        day: ExportDay,
        job: PendingJob,
    ) -> Result<(PendingJob, Result<ReportLocation, WaitError<Error>>), DayError> {
        self.record_job(since, day, &job)?;
        let asked = AuditJob {
            id: job.id.clone(),
            kind: self.kind,
            format: self.settings.format.api_format(),
        };
        let outcome = wait_for_audit_job(&self.client, &asked, self.settings.wait.clone()).await;
        Ok((job, outcome))
    }

    /// Deletes the report of a recorded job that will not be read (unless reports are kept):
    /// best effort, as a job still running has no report to delete.
    pub(super) async fn forget(&self, job: &PendingJob) {
        if self.settings.keep_reports {
            return;
        }
        let at = ReportLocation {
            kind: self.kind,
            id: job.id.clone(),
        };
        if let Err(error) = remove_audit_report(&self.client, &at).await {
            tracing::debug!(report = %at.id, %error, "a recorded job's report was not deleted");
        }
    }
}
