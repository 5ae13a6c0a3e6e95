//! Audit reports v1: typed, validated requests for the 14 report kinds; jobs polled no more
//! often than every 2 minutes; JSON reports read page by page; CSV reports streamed.
//!
//! `client.audit()` ([`crate::api::Audit`]) reaches every audit operation, calling into this
//! module; [`Audit::run`](crate::api::Audit::run) is the one-call version.
//! [`DailyExport`] writes one file per whole UTC day, run after run (see [`export`]); it and
//! the CLI write a report into a [`PartFile`] renamed into place when whole. The kinds, their
//! filters and date precision are the spec's (`pubapi_sdk::audit_kinds`).

mod csv;
mod event;
mod event_time;
pub mod export;
mod fit;
mod job;
mod part_file;
mod report;

pub use crate::audit_date::AuditDate;
pub use crate::audit_request::{AssigneeScope, AuditRequest};
pub use csv::{CsvError, CsvRecord, CsvReport, CsvRow, CsvRows, MAX_FIELDS, MAX_ROW_BYTES};
pub use event::{AuditEvent, RoleChange};
pub use export::{
    BudgetStop, DailyExport, DailyExportBuilder, DayError, DayObserver, ExportDay, ExportError,
    ExportFormat, ExportSummary, Start, WrittenDay,
};
pub use job::{AuditJob, AuditWait, JobObserver, JobState, ReportLocation};
pub(crate) use job::{audit_job_state, create_audit_report, wait_for_audit_job};
pub use part_file::PartFile;
pub use report::{
    DEFAULT_PAGE_SIZE, EventAsSent, FinishedReport, MAX_PAGE_BYTES, ReadError, ReadPlan,
    ReportPage, ReportRead, one_line,
};
pub(crate) use report::{
    audit_report_csv, audit_report_events, audit_report_events_as_sent, audit_report_page,
    audit_report_plan, remove_audit_report, run_audit_report,
};
