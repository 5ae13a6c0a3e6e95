//! Audit reports v1: typed, validated requests for the 14 report kinds; jobs polled no more
//! often than every 2 minutes; JSON reports read page by page; CSV reports streamed.
//!
//! See [`crate::Client::run_audit_report`] for the one-call version.

mod csv;
mod date;
mod event;
mod job;
mod report;
mod request;

pub use csv::{CsvRow, CsvRows, MAX_FIELDS, MAX_ROW_BYTES};
pub use date::AuditDate;
pub use event::{AuditEvent, PermissionChange};
pub use job::{AuditJob, AuditWait, JobState, ReportLocation};
pub use report::{
    CsvError, CsvReport, DEFAULT_PAGE_SIZE, FinishedReport, MAX_PAGE_BYTES, ReadError, ReadPlan,
    ReportPage, ReportRead,
};
pub use request::AuditRequest;
