//! Audit reporting v1 (reference 4.7): creation bodies validated like the reference, jobs that
//! stay `running` for a configured sandbox time and then answer 303, reports as JSON (with
//! `offset`/`count`) or CSV, deletion.
//!
//! Format: a report is CSV when the job asked for `csv`, unless the request's `Accept` names
//! only `application/json`; it is JSON when the job asked for `json`, unless `Accept` names
//! only `text/csv`.
//!
//! A creation body is read against its kind's row of the spec's table of kinds
//! (`pubapi_sdk::audit_kinds`: its filters, `suppress_emails` among them or not): `validate` checks the format, the range of the dates, then each
//! filter (`check_field`) and the rules of the kind, and reports every problem it finds.

use super::Shared;
use super::auth::Caller;
use super::clock::{later, millis};
use super::dates::{RequestDate, parse_request_date};
use super::fs::shown;
use super::http::{ApiRequest, Reply, error, general_errors};
use super::limits::Violation;
use super::reports::{KnownUser, Report, whole_days};
use pubapi_sdk::audit_kinds::{Filter, FilterShape};
use serde_json::{Map, Value, json};

/// How a filter field of a creation body is checked.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// An array of strings.
    Strings,
    /// An array of integers.
    Integers,
    /// An array of these values.
    Enum(&'static [&'static str]),
    /// An array of these values in any letter case; the body is given the listed spelling.
    EnumAnyCase(&'static [&'static str]),
    /// A boolean.
    Bool,
    /// An integer.
    Integer,
    /// A string.
    Text,
    /// A name that may hold a `*` wildcard, but not first.
    Pattern,
    /// An array of `{id, subcategoryIds?}`.
    Categories,
}

/// What a creation body of one kind accepts.
struct KindSpec {
    /// Its filter fields (besides `format`, `date_start`, `date_end` and `suppress_emails`), in
    /// its request schema's order.
    fields: Vec<(&'static str, Field)>,
    /// Whether it accepts `suppress_emails`.
    suppress_emails: bool,
    /// Whether it reads whole days (the time portion of its dates ignored).
    time_ignored: bool,
}

/// What a body of `kind` accepts, from the spec's table of kinds (`pubapi_sdk::audit_kinds`):
/// its filters, whether one of them is `suppress_emails`, and its date precision. A kind the
/// spec does not list is refused before this is read.
fn spec_of(kind: &str) -> KindSpec {
    let row = kind.parse().ok().map(pubapi_sdk::audit_kinds::of);
    let filters = row.map_or(&[][..], |row| row.filters);
    KindSpec {
        fields: filters
            .iter()
            .filter(|f| f.name != "suppress_emails")
            .map(|f| (f.name, field_of(f)))
            .collect(),
        suppress_emails: filters.iter().any(|f| f.name == "suppress_emails"),
        time_ignored: row.is_some_and(|row| row.ignores_time()),
    }
}

/// How a filter is checked: by its shape and values in the spec's table, but for what the
/// table does not say: a file name's wildcard may not come first (`pattern: '^[^*]'`), access
/// points match in any letter case (`x-pubapi-spellings`), and categories are objects.
fn field_of(filter: &Filter) -> Field {
    match (filter.name, filter.shape) {
        ("file", _) => Field::Pattern,
        ("access_points", _) => Field::EnumAnyCase(filter.values),
        ("quality_docs_categories", _) => Field::Categories,
        (_, FilterShape::Flag) => Field::Bool,
        (_, FilterShape::Integer) => Field::Integer,
        (_, FilterShape::Text) => Field::Text,
        (_, FilterShape::List { integers: true }) => Field::Integers,
        (_, FilterShape::List { .. }) if filter.values.is_empty() => Field::Strings,
        (_, FilterShape::List { .. }) => Field::Enum(filter.values),
    }
}

/// A validated creation body.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// `csv` or `json`.
    pub format: String,
    /// Report range, epoch milliseconds (whole days where the time portion is ignored).
    pub range: (i64, i64),
    /// The body, for the filters.
    pub body: Value,
}

type Problem = (String, String);

fn problem(code: &str, description: String) -> Problem {
    (code.to_string(), description)
}

/// An `INVALID_VALUE` problem.
fn invalid(description: String) -> Problem {
    problem("INVALID_VALUE", description)
}

/// Validates a creation body of `kind`; every problem found is reported.
pub fn validate(kind: &str, body: Option<Value>) -> Result<Validated, Vec<Problem>> {
    let Some(Value::Object(mut map)) = body else {
        return Err(vec![problem(
            "INVALID_BODY",
            "the body must be a JSON object".into(),
        )]);
    };
    let spec = spec_of(kind);
    let mut problems = Vec::new();
    let format = format_of(&map, &mut problems);
    let range = range_of(&map, &spec, &mut problems);
    check_suppress_emails(kind, &map, &spec, &mut problems);
    for (name, field) in spec.fields {
        if let Some(value) = map.get_mut(name) {
            check_field(name, field, value, &mut problems);
        }
    }
    check_kind_rules(kind, &map, &mut problems);
    match (problems.is_empty(), format, range) {
        (true, Some(format), Some(range)) => Ok(Validated {
            format,
            range,
            body: Value::Object(map),
        }),
        _ => Err(problems),
    }
}

/// The body's `format`: `csv` or `json`.
fn format_of(map: &Map<String, Value>, problems: &mut Vec<Problem>) -> Option<String> {
    match map.get("format") {
        None => {
            problems.push(problem("MISSING_FIELD", "`format` is required".into()));
            None
        }
        Some(Value::String(f)) if f == "csv" || f == "json" => Some(f.clone()),
        Some(other) => {
            problems.push(invalid(format!(
                "`format` must be `csv` or `json`, not {other}"
            )));
            None
        }
    }
}

/// The date field `name`: a date or a UTC timestamp.
fn date_of(
    map: &Map<String, Value>,
    name: &str,
    problems: &mut Vec<Problem>,
) -> Option<RequestDate> {
    match map.get(name) {
        None => {
            problems.push(problem("MISSING_FIELD", format!("`{name}` is required")));
            None
        }
        Some(Value::String(text)) => {
            let date = parse_request_date(text);
            if date.is_none() {
                problems.push(problem(
                    "INVALID_DATE",
                    format!(
                        "`{name}` must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, not {}",
                        shown(text)
                    ),
                ));
            }
            date
        }
        Some(other) => {
            problems.push(problem(
                "INVALID_DATE",
                format!("`{name}` must be a string, not {other}"),
            ));
            None
        }
    }
}

/// The report range of `date_start` and `date_end`, in epoch milliseconds; it must not be
/// empty.
fn range_of(
    map: &Map<String, Value>,
    spec: &KindSpec,
    problems: &mut Vec<Problem>,
) -> Option<(i64, i64)> {
    let start = date_of(map, "date_start", problems);
    let end = date_of(map, "date_end", problems);
    let (start, end) = (start?, end?);
    // A plain-date `date_end` is the last day covered (the platform's clients document it
    // so), so it ends at the end of that day and a same-day range is after its start, as
    // the reference requires; a timestamp `date_end` ends at that instant.
    let (s, e) = if spec.time_ignored {
        whole_days(start.day_start(), end.day_start())
    } else if end.has_time {
        (start.ms, end.ms)
    } else {
        (start.ms, whole_days(end.ms, end.ms).1)
    };
    if e <= s {
        problems.push(problem(
            "INVALID_DATE_RANGE",
            "`date_end` must be after `date_start`".into(),
        ));
        return None;
    }
    Some((s, e))
}

/// `suppress_emails`: a boolean, and only for the kinds that accept it.
fn check_suppress_emails(
    kind: &str,
    map: &Map<String, Value>,
    spec: &KindSpec,
    problems: &mut Vec<Problem>,
) {
    match map.get("suppress_emails") {
        None | Some(Value::Bool(_)) if spec.suppress_emails => {}
        None => {}
        Some(_) if !spec.suppress_emails => problems.push(problem(
            "INVALID_FIELD",
            format!("`suppress_emails` is not accepted by {kind} reports"),
        )),
        Some(other) => problems.push(invalid(format!(
            "`suppress_emails` must be a boolean, not {other}"
        ))),
    }
}

/// The rules of one kind beyond its fields: logins need `events`; files need `folders`
/// (absolute paths) unless `file` is given.
fn check_kind_rules(kind: &str, map: &Map<String, Value>, problems: &mut Vec<Problem>) {
    match kind {
        "logins" if !map.contains_key("events") => problems.push(problem(
            "MISSING_FIELD",
            "`events` is required for logins reports".into(),
        )),
        "files" if !map.contains_key("folders") && !map.contains_key("file") => {
            problems.push(problem(
                "MISSING_FIELD",
                "`folders` is required unless `file` is given".into(),
            ));
        }
        "files" => {
            if let Some(Value::Array(folders)) = map.get("folders") {
                for folder in folders.iter().filter_map(Value::as_str) {
                    if !folder.starts_with('/') {
                        problems.push(invalid(format!(
                            "folder {} is not an absolute path",
                            shown(folder)
                        )));
                    }
                }
            }
        }
        _ => {}
    }
}

/// The strings of an array of strings; `None` for anything else.
fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Checks one filter field; an [`Field::EnumAnyCase`] value is given its listed spelling.
fn check_field(name: &str, field: Field, value: &mut Value, problems: &mut Vec<Problem>) {
    let wrong = |what: &str| invalid(format!("`{name}` must be {what}"));
    match field {
        Field::Strings | Field::Enum(_) | Field::EnumAnyCase(_) => {
            let Some(values) = strings(value) else {
                problems.push(wrong("an array of strings"));
                return;
            };
            match field {
                Field::Enum(allowed) => check_listed(name, &values, allowed, problems),
                Field::EnumAnyCase(allowed) => {
                    *value = spelled(name, &values, allowed, problems);
                }
                _ => {}
            }
        }
        Field::Integers
            if !value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_i64)) =>
        {
            problems.push(wrong("an array of integers"));
        }
        Field::Bool if !value.is_boolean() => problems.push(wrong("a boolean")),
        Field::Integer if !value.is_i64() => problems.push(wrong("an integer")),
        Field::Text if !value.is_string() => problems.push(wrong("a string")),
        Field::Pattern => match value.as_str() {
            None => problems.push(wrong("a string")),
            // Reference 4.7: a name that "may contain a `*` wildcard but not at the start";
            // an empty one names nothing (the spec's `pattern: '^[^*]'`).
            Some("") => problems.push(invalid(format!(
                "`{name}` is empty: give a name or leave the field out"
            ))),
            Some(p) if p.starts_with('*') => problems.push(invalid(format!(
                "`{name}` may contain a `*` wildcard but not at the start"
            ))),
            Some(_) => {}
        },
        Field::Categories if !is_categories(value) => {
            problems.push(wrong("an array of {id, subcategoryIds?}"));
        }
        Field::Integers | Field::Bool | Field::Integer | Field::Text | Field::Categories => {}
    }
}

/// Each of `values` must be one of `allowed`, as written.
fn check_listed(name: &str, values: &[String], allowed: &[&str], problems: &mut Vec<Problem>) {
    for v in values.iter().filter(|v| !allowed.contains(&v.as_str())) {
        problems.push(invalid(format!(
            "{} is not a valid `{name}` value (one of {})",
            shown(v),
            allowed.join(", ")
        )));
    }
}

/// Each of `values` must be one of `allowed` in any letter case; the listed spellings of those
/// that are.
fn spelled(name: &str, values: &[String], allowed: &[&str], problems: &mut Vec<Problem>) -> Value {
    let mut listed = Vec::with_capacity(values.len());
    for v in values {
        match allowed.iter().find(|a| a.eq_ignore_ascii_case(v)) {
            Some(a) => listed.push(Value::from(*a)),
            None => problems.push(invalid(format!(
                "{} is not a valid `{name}` value (one of {}, in any case)",
                shown(v),
                allowed.join(", ")
            ))),
        }
    }
    Value::Array(listed)
}

/// Whether the value is an array of `{id, subcategoryIds?}` with string ids.
fn is_categories(value: &Value) -> bool {
    value.as_array().is_some_and(|items| {
        items.iter().all(|item| {
            item.get("id").is_some_and(Value::is_string)
                && item
                    .get("subcategoryIds")
                    .is_none_or(|s| strings(s).is_some())
        })
    })
}

/// One report job.
#[derive(Debug, Clone)]
pub struct AuditJob {
    /// Job (and report) id.
    pub id: String,
    /// Report kind.
    pub kind: &'static str,
    /// `csv` or `json`.
    pub format: String,
    /// When the job is done, sandbox epoch milliseconds.
    pub ready_ms: i64,
    /// The previous status poll.
    pub last_poll_ms: Option<i64>,
    /// The content.
    pub report: Report,
}

/// Jobs and the audit records of sandbox activity.
#[derive(Debug, Default)]
pub struct AuditStore {
    /// Jobs by id (deleted ones are removed).
    pub jobs: Vec<AuditJob>,
    /// Events recorded from activity.
    pub records: Vec<super::reports::AuditRecord>,
}

fn forbidden_unless_allowed(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Option<Reply> {
    if !shared.config.audit.enabled {
        return Some(error(
            req.op,
            403,
            "AUDIT_NOT_ENABLED",
            "audit reporting is not enabled in the domain plan",
        ));
    }
    if !caller.user.role.can_run_reports() {
        return Some(error(
            req.op,
            403,
            "FORBIDDEN",
            &format!("user {} may not run reports", caller.user.username),
        ));
    }
    None
}

/// `POST /v1/audit/<kind>`.
pub fn create(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    if let Some(refused) = forbidden_unless_allowed(shared, req, caller) {
        return refused;
    }
    let kind = super::facts::audit_kinds()
        .iter()
        .copied()
        .find(|k| req.path == format!("/v1/audit/{k}"))
        .unwrap_or("logins");
    let body = match req.json() {
        Ok(body) => body,
        Err(message) => return general_errors(400, &[problem("INVALID_BODY", message)]),
    };
    let valid = match validate(kind, body) {
        Ok(valid) => valid,
        Err(problems) => return general_errors(400, &problems),
    };
    let now = shared.now();
    let config = &shared.config;
    let mut world = shared.world();
    let id = world.ids.id("");
    let users: Vec<KnownUser> = world
        .users
        .all()
        .iter()
        .map(|(u, _)| KnownUser {
            username: u.username.clone(),
            id: u.id,
        })
        .collect();
    // Nothing has happened after the sandbox's now: a range ending later ends now.
    let (start_ms, end_ms) = valid.range;
    let report = Report::new(
        kind,
        (start_ms, end_ms.min(now)),
        valid.body,
        config.seed ^ super::ids::hash_str(&id),
        users,
        &world.audit.records,
        config.audit.synthetic_events,
    );
    world.audit.jobs.push(AuditJob {
        id: id.clone(),
        kind,
        format: valid.format,
        ready_ms: later(now, config.audit.job_duration),
        last_poll_ms: None,
        report,
    });
    Reply::json(202, &json!({ "id": id })).header(
        "Location",
        format!("{}/v1/audit/jobs/{id}", shared.base_url),
    )
}

fn not_found(req: &ApiRequest, what: &str) -> Reply {
    error(req.op, 404, "NOT_FOUND", what)
}

/// `GET /v1/audit/jobs/{id}`.
pub fn job(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    if let Some(refused) = forbidden_unless_allowed(shared, req, caller) {
        return refused;
    }
    let now = shared.now();
    let config = &shared.config.audit;
    let mut world = shared.world();
    let world = &mut *world;
    let Some(job) = world
        .audit
        .jobs
        .iter_mut()
        .find(|j| j.id == req.param("id"))
    else {
        return not_found(req, "the job id is unknown or the report was deleted");
    };
    let min_interval = millis(config.min_poll_interval);
    if let Some(last) = job.last_poll_ms
        && now.saturating_sub(last) < min_interval
    {
        world.counters.violation(Violation::AuditPollTooSoon);
        if config.enforce_poll_interval {
            let wait = last
                .saturating_add(min_interval)
                .saturating_sub(now)
                .saturating_add(999)
                / 1000;
            return Reply::empty(429).header("Retry-After", wait.max(1).to_string());
        }
    }
    job.last_poll_ms = Some(now);
    if now < job.ready_ms {
        return Reply::json(200, &json!({ "status": "running" }));
    }
    Reply::json(303, &json!({ "status": "completed" })).header(
        "Location",
        format!("{}/v1/audit/{}/{}", shared.base_url, job.kind, job.id),
    )
}

fn find_report<'a>(
    jobs: &'a [AuditJob],
    req: &ApiRequest,
    now: i64,
) -> Result<&'a AuditJob, Reply> {
    let kind = req.param("type");
    if !super::facts::audit_kinds().contains(&kind) {
        return Err(error(
            req.op,
            400,
            "INVALID_VALUE",
            &format!("{} is not a report type", shown(kind)),
        ));
    }
    match jobs
        .iter()
        .find(|j| j.id == req.param("id") && j.kind == kind)
    {
        Some(job) if job.ready_ms <= now => Ok(job),
        Some(_) => Err(not_found(req, "the report is not ready yet")),
        None => Err(not_found(
            req,
            "the report id is unknown or already deleted",
        )),
    }
}

fn wants_csv(req: &ApiRequest, format: &str) -> bool {
    let accept = req.header("accept").unwrap_or("").to_ascii_lowercase();
    let csv = accept.contains("text/csv");
    let json = accept.contains("application/json");
    match format {
        "csv" => csv || !json,
        _ => csv && !json,
    }
}

/// `GET /v1/audit/{type}/{id}`.
pub fn report(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    if let Some(refused) = forbidden_unless_allowed(shared, req, caller) {
        return refused;
    }
    let number = |name: &str| -> Result<Option<u64>, Reply> {
        match req.query(name) {
            None => Ok(None),
            Some(text) => text.trim().parse::<u64>().map(Some).map_err(|_| {
                error(
                    req.op,
                    400,
                    "INVALID_VALUE",
                    &format!("`{name}` must be a non-negative integer"),
                )
            }),
        }
    };
    let (offset, count) = match (number("offset"), number("count")) {
        (Ok(offset), Ok(count)) => (offset.unwrap_or(0), count),
        (Err(reply), _) | (_, Err(reply)) => return reply,
    };
    let now = shared.now();
    let (report, format) = {
        let world = shared.world();
        match find_report(&world.audit.jobs, req, now) {
            Ok(job) => (job.report.clone(), job.format.clone()),
            Err(reply) => return reply,
        }
    };
    if wants_csv(req, &format) {
        return Reply::csv(200, report.csv());
    }
    let total = report.total();
    let end = offset.saturating_add(count.unwrap_or(total)).min(total);
    let returned = end.saturating_sub(offset);
    // Written page by page: a report of millions of events is never held as one JSON tree.
    let mut body =
        format!("{{\"total_count\":{total},\"offset\":{offset},\"count\":{returned},\"events\":[")
            .into_bytes();
    let mut at = offset;
    while at < end {
        let chunk = (end - at).min(10_000);
        for (i, event) in report.page(at, chunk).iter().enumerate() {
            if at > offset || i > 0 {
                body.push(b',');
            }
            body.extend(serde_json::to_vec(event).unwrap_or_default());
        }
        at += chunk;
    }
    body.extend(b"]}");
    Reply {
        content_type: Some("application/json".into()),
        body,
        ..Reply::empty(200)
    }
}

/// `DELETE /v1/audit/{type}/{id}`.
pub fn delete(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    if let Some(refused) = forbidden_unless_allowed(shared, req, caller) {
        return refused;
    }
    let now = shared.now();
    let mut world = shared.world();
    let id = match find_report(&world.audit.jobs, req, now) {
        Ok(job) => job.id.clone(),
        Err(reply) => return reply,
    };
    world.audit.jobs.retain(|j| j.id != id);
    Reply::empty(204)
}

/// Every field name a body of `kind` accepts.
#[cfg(test)]
fn accepted_fields(kind: &str) -> Vec<&'static str> {
    let spec = spec_of(kind);
    let mut fields = vec!["format", "date_start", "date_end"];
    if spec.suppress_emails {
        fields.push("suppress_emails");
    }
    fields.extend(spec.fields.iter().map(|(name, _)| *name));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dates::DAY_MS;

    fn codes(kind: &str, body: Value) -> Vec<String> {
        match validate(kind, Some(body)) {
            Ok(_) => Vec::new(),
            Err(problems) => problems.into_iter().map(|(c, _)| c).collect(),
        }
    }

    #[test]
    fn a_valid_logins_body_passes() {
        let ok = validate(
            "logins",
            Some(json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-31T12:00:00Z", "events": ["logins"], "access_points": ["Web"]})),
        )
        .unwrap();
        assert_eq!(ok.format, "json");
    }

    #[test]
    fn every_problem_is_reported() {
        assert_eq!(
            codes("logins", json!({})),
            vec![
                "MISSING_FIELD",
                "MISSING_FIELD",
                "MISSING_FIELD",
                "MISSING_FIELD"
            ]
        );
        assert_eq!(
            codes(
                "logins",
                json!({"format": "xml", "date_start": "01/01/2025", "date_end": "2025-01-02", "events": ["login"]})
            ),
            vec!["INVALID_VALUE", "INVALID_DATE", "INVALID_VALUE"]
        );
    }

    #[test]
    fn date_end_must_be_after_date_start() {
        let base = |start: &str, end: &str| {
            codes(
                "logins",
                json!({"format": "csv", "date_start": start, "date_end": end, "events": ["logins"]}),
            )
        };
        assert_eq!(base("2025-01-02", "2025-01-01"), vec!["INVALID_DATE_RANGE"]);
        assert!(base("2025-01-01T10:00:00Z", "2025-01-01T10:00:01Z").is_empty());
        assert_eq!(
            base("2025-01-01T10:00:00Z", "2025-01-01T10:00:00Z"),
            vec!["INVALID_DATE_RANGE"]
        );
        // Files ignore the time portion: a reversed day range is refused.
        assert_eq!(
            codes(
                "files",
                json!({"format": "csv", "date_start": "2025-01-02T10:00:00Z", "date_end": "2025-01-01T11:00:00Z", "folders": ["/a"]})
            ),
            vec!["INVALID_DATE_RANGE"]
        );
    }

    #[test]
    fn a_plain_date_end_covers_its_whole_day() {
        let range = |kind: &str, start: &str, end: &str| {
            let mut body = json!({"format": "json", "date_start": start, "date_end": end});
            body["events"] = json!(["logins"]);
            body["folders"] = json!(["/a"]);
            validate(kind, Some(body)).map(|v| v.range)
        };
        let day = 20_089 * DAY_MS; // 2025-01-01
        for (kind, start, end, covered) in [
            (
                "logins",
                "2025-01-01",
                "2025-01-01",
                (day, day + DAY_MS - 1),
            ),
            (
                "logins",
                "2025-01-01T10:00:00Z",
                "2025-01-01",
                (day + 36_000_000, day + DAY_MS - 1),
            ),
            (
                "logins",
                "2025-01-01",
                "2025-01-01T12:00:00Z",
                (day, day + 43_200_000),
            ),
            ("files", "2025-01-01", "2025-01-01", (day, day + DAY_MS - 1)),
            (
                "files",
                "2025-01-01T10:00:00Z",
                "2025-01-01T11:00:00Z",
                (day, day + DAY_MS - 1),
            ),
        ] {
            assert_eq!(range(kind, start, end), Ok(covered), "{kind} {start} {end}");
        }
    }

    #[test]
    fn access_points_match_in_any_case_and_take_the_listed_spelling() {
        let body = json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02", "events": ["logins"], "access_points": ["web", "MOBILE", "Ftp"]});
        let valid = validate("logins", Some(body)).unwrap();
        assert_eq!(valid.body["access_points"], json!(["Web", "Mobile", "FTP"]));
        let wrong = json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02", "events": ["logins"], "access_points": ["desktop"]});
        assert_eq!(codes("logins", wrong), vec!["INVALID_VALUE"]);
    }

    #[test]
    fn files_need_folders_or_a_file_without_a_leading_wildcard() {
        let body = |extra: Value| {
            let mut b =
                json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02"});
            for (k, v) in extra.as_object().unwrap() {
                b[k] = v.clone();
            }
            codes("files", b)
        };
        assert_eq!(body(json!({})), vec!["MISSING_FIELD"]);
        assert!(body(json!({"file": "report*.pdf"})).is_empty());
        assert_eq!(body(json!({"file": "*.pdf"})), vec!["INVALID_VALUE"]);
        assert_eq!(
            body(json!({"folders": ["relative"]})),
            vec!["INVALID_VALUE"]
        );
        assert_eq!(
            body(json!({"folders": ["/a"], "transaction_type": ["upload", "print"]})),
            vec!["INVALID_VALUE"]
        );
    }

    #[test]
    fn suppress_emails_only_where_accepted() {
        let base = json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02", "suppress_emails": true});
        assert_eq!(codes("users", base.clone()), vec!["INVALID_FIELD"]);
        assert!(codes("snapshot-restore", base).is_empty());
        assert!(accepted_fields("logins").contains(&"suppress_emails"));
        assert!(!accepted_fields("groups").contains(&"suppress_emails"));
    }

    #[test]
    fn quality_docs_categories_need_ids() {
        let body = json!({"format": "json", "date_start": "2025-01-01", "date_end": "2025-01-02", "quality_docs_categories": [{"subcategoryIds": ["a"]}]});
        assert_eq!(codes("quality-docs", body), vec!["INVALID_VALUE"]);
    }
}
