//! The content of audit reports: events recorded from sandbox activity that pass the job's
//! filters, merged in time order with synthetic events generated lazily from the seed (so a
//! report of a million events costs nothing until a page of it is read).
//!
//! CSV reports start, as the platform's do, with a title row before the header:
//! `This report reflects activity up to <end>`, where `<end>` is the last instant the report
//! covers (the end of its `date_end` day when `date_end` is a plain date or the time portion
//! is ignored, the `date_end` instant otherwise, and never after the sandbox's now when the
//! job was created) in the platform's short form
//! `2/24/17 23:59:59` (UTC). The header follows (the logins columns are the reference's),
//! then one row per event.
//!
//! A synthetic event is drawn from a generator seeded by the report and its index: a `Draw`
//! picks users and values the job's filters name (or samples) and writes the kind's shape.

use super::dates::{DAY_MS, iso_seconds, us_short_datetime};
use super::fs::is_within;
use super::ids::{hash_str, mix};
use serde_json::{Value, json};
use std::sync::Arc;

/// One event recorded for audit reports.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Report kind (`logins`, `files`, ...).
    pub kind: &'static str,
    /// Time, epoch milliseconds.
    pub at_ms: i64,
    /// The event as the JSON report shows it.
    pub event: Value,
}

/// The start of the title row of CSV reports (the platform's words).
pub const CSV_TITLE_PREFIX: &str = "This report reflects activity up to ";

/// A user the synthetic generator may name.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownUser {
    /// Username.
    pub username: String,
    /// User id.
    pub id: i64,
}

/// The finished content of one job.
#[derive(Debug, Clone)]
pub struct Report {
    kind: &'static str,
    start_ms: i64,
    end_ms: i64,
    filters: Value,
    seed: u64,
    users: Arc<Vec<KnownUser>>,
    recorded: Arc<Vec<(i64, Value)>>,
    synthetic: u64,
}

impl Report {
    /// A report of `kind` over `start_ms..=end_ms` from the recorded events passing
    /// `filters`, plus `synthetic` generated events.
    pub fn new(
        kind: &'static str,
        (start_ms, end_ms): (i64, i64),
        filters: Value,
        seed: u64,
        users: Vec<KnownUser>,
        records: &[AuditRecord],
        synthetic: u64,
    ) -> Self {
        let mut recorded: Vec<(i64, Value)> = records
            .iter()
            .filter(|r| r.kind == kind && r.at_ms >= start_ms && r.at_ms <= end_ms)
            .filter(|r| passes(kind, &filters, &r.event))
            .map(|r| (r.at_ms, r.event.clone()))
            .collect();
        recorded.sort_by_key(|(at, _)| *at);
        // A range that ends before it starts (one in the sandbox's future, cut at its now)
        // has no events.
        let synthetic = if end_ms < start_ms { 0 } else { synthetic };
        Report {
            kind,
            start_ms,
            end_ms,
            filters,
            seed,
            users: Arc::new(users),
            recorded: Arc::new(recorded),
            synthetic,
        }
    }

    /// Events in the report.
    pub fn total(&self) -> u64 {
        self.recorded.len() as u64 + self.synthetic
    }

    fn synthetic_time(&self, i: u64) -> i64 {
        let span = i128::from((self.end_ms - self.start_ms).max(0));
        let n = i128::from(self.synthetic.max(1));
        self.start_ms + ((span * (2 * i128::from(i) + 1)) / (2 * n)) as i64
    }

    /// Splits the first `j` merged events into (synthetic, recorded) counts.
    fn split(&self, j: u64) -> (u64, u64) {
        let k_total = self.recorded.len() as u64;
        let (mut lo, mut hi) = (j.saturating_sub(self.synthetic), j.min(k_total));
        while lo < hi {
            let k = lo + (hi - lo).div_ceil(2);
            let i = j - k;
            // Too many recorded events taken if the last one is after synthetic event i.
            if i < self.synthetic && self.recorded[(k - 1) as usize].0 > self.synthetic_time(i) {
                hi = k - 1;
            } else {
                lo = k;
            }
        }
        (j - lo, lo)
    }

    /// Events `offset .. offset + count` in time order.
    pub fn page(&self, offset: u64, count: u64) -> Vec<Value> {
        let end = offset.saturating_add(count).min(self.total());
        if offset >= end {
            return Vec::new();
        }
        let (mut i, mut k) = self.split(offset);
        let mut out = Vec::with_capacity((end - offset) as usize);
        for _ in offset..end {
            let take_recorded = (k as usize) < self.recorded.len()
                && (i >= self.synthetic || self.recorded[k as usize].0 <= self.synthetic_time(i));
            if take_recorded {
                out.push(self.recorded[k as usize].1.clone());
                k += 1;
            } else {
                out.push(self.synthetic_event(i));
                i += 1;
            }
        }
        out
    }

    /// The title row of the CSV report, without its line end.
    pub fn csv_title(&self) -> String {
        format!("{CSV_TITLE_PREFIX}{}", us_short_datetime(self.end_ms))
    }

    /// The whole report as CSV: the title row, the header (logins: Username, Event,
    /// IP Address, Access, Time), then the events; lines end with CRLF.
    pub fn csv(&self) -> String {
        let columns = csv_columns(self.kind);
        let mut out = self.csv_title();
        out.push_str("\r\n");
        let header = columns
            .iter()
            .map(|(title, _)| *title)
            .collect::<Vec<_>>()
            .join(",");
        out.push_str(&header);
        out.push_str("\r\n");
        let mut offset = 0;
        while offset < self.total() {
            for event in self.page(offset, 10_000) {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|(_, fields)| csv_cell(fields.iter().find_map(|field| event.get(*field))))
                    .collect();
                out.push_str(&cells.join(","));
                out.push_str("\r\n");
            }
            offset += 10_000;
        }
        out
    }

    /// The `i`th synthetic event: the same for the same seed, kind and `i`, drawn by a
    /// [`Draw`] in the kind's shape.
    fn synthetic_event(&self, i: u64) -> Value {
        let mut draw = Draw {
            report: self,
            r: Rng(mix(self.seed
                ^ hash_str(self.kind)
                ^ i.wrapping_mul(0x9E37))),
        };
        let time = iso_seconds(self.synthetic_time(i));
        let ip = format!(
            "10.{}.{}.{}",
            draw.below(256),
            draw.below(256),
            1 + draw.below(254)
        );
        match self.kind {
            "logins" => draw.login(time, ip),
            "files" => draw.file(time, ip),
            "permissions" => draw.permission(time),
            "users" => draw.user_action(time),
            "groups" => draw.group_action(time),
            "workgroup-settings" => draw.setting(time, ip),
            kind => draw.other(kind, time, i),
        }
    }
}

/// The draws of one synthetic event: its seeded generator, and the report whose filters and
/// users a drawn value honours.
struct Draw<'a> {
    report: &'a Report,
    r: Rng,
}

impl Draw<'_> {
    /// The next number of the generator.
    fn next(&mut self) -> u64 {
        self.r.next()
    }

    /// A number below `n`.
    fn below(&mut self, n: usize) -> usize {
        self.r.below(n)
    }

    /// A user: one the job's `field` filter names (a known user's id, else one made from the
    /// name), else a known user, else a placeholder.
    fn user(&mut self, field: &str) -> KnownUser {
        let users = &self.report.users;
        match filter_list(&self.report.filters, field) {
            Some(names) if !names.is_empty() => {
                let name = names[self.r.below(names.len())].clone();
                let id = users
                    .iter()
                    .find(|u| u.username == name)
                    .map_or(2000 + (hash_str(&name) % 1000) as i64, |u| u.id);
                KnownUser { username: name, id }
            }
            _ if !users.is_empty() => users[self.r.below(users.len())].clone(),
            _ => KnownUser {
                username: "user".into(),
                id: 2000,
            },
        }
    }

    /// A value: one the job's `field` filter names, else one of `pool`.
    fn choose(&mut self, field: &str, pool: &[&str]) -> String {
        match filter_list(&self.report.filters, field) {
            Some(values) if !values.is_empty() => values[self.r.below(values.len())].clone(),
            _ => pool[self.r.below(pool.len())].to_string(),
        }
    }

    /// A `logins` event.
    fn login(&mut self, time: String, ip: String) -> Value {
        let u = self.user("users");
        json!({
            "username": u.username,
            "user_id": u.id,
            "event": self.choose("events", super::facts::values("LoginEvent")),
            "ip_address": ip,
            "access": self.choose("access_points", super::facts::values("AccessPoint")),
            "time": time,
        })
    }

    /// A `files` event: a file of a filtered (or sample) folder.
    fn file(&mut self, time: String, ip: String) -> Value {
        let u = self.user("users");
        let folder = match filter_list(&self.report.filters, "folders") {
            Some(f) if !f.is_empty() => f[self.below(f.len())].clone(),
            _ => ["/Company/Policies", "/Engineering", "/Finance"][self.below(3)].to_string(),
        };
        let file = format!("report-{:04}.pdf", self.below(10_000));
        json!({
            "username": u.username,
            "user_id": u.id,
            "file": file,
            "target_path": format!("{folder}/{file}"),
            "transaction": self.choose("transaction_type", &["upload", "download", "preview", "copy", "move"]),
            "access": ({
                let points = super::facts::values("AccessPoint");
                points.get(self.below(points.len())).copied().unwrap_or_default()
            }),
            "time": time,
            "ipAddress": ip,
            "file_checksum": format!("{:032x}", u128::from(self.next()) << 64 | u128::from(self.next())),
        })
    }

    /// A `permissions` event: a role given or changed on a sample folder.
    fn permission(&mut self, time: String) -> Value {
        let assigner = self.user("assigners");
        let assignee = self.user("assignee_users");
        let roles = ["Viewer", "Editor", "Owner"];
        let change = if self.below(2) == 0 {
            format!("+{}", roles[self.below(3)])
        } else {
            format!("{} >> {}", roles[self.below(3)], roles[self.below(3)])
        };
        json!({
            "folder": (["/Company/Policies", "/Engineering", "/Finance"][self.below(3)]),
            "assignee": assignee.username,
            "assignee_id": assignee.id,
            "assigner": assigner.username,
            "assigner_id": assigner.id,
            "change": change,
            "time": time,
        })
    }

    /// A `users` event.
    fn user_action(&mut self, time: String) -> Value {
        let by = self.user("performed_by");
        let subject = self.user("subject");
        json!({
            "performed_by": by.username,
            "performed_by_id": by.id,
            "subject": subject.username,
            "subject_id": subject.id,
            "action": self.choose("action_type", &["CREATE", "UPDATE", "DISABLE", "ENABLE", "PASSWORD_RESET"]),
            "action_info": "",
            "date_and_time": time,
            "action_source": "WebUI",
        })
    }

    /// A `groups` event.
    fn group_action(&mut self, time: String) -> Value {
        let actor = self.user("users");
        json!({
            "time": time,
            "actor": actor.username,
            "actor_id": actor.id,
            "group": self.choose("groups", &["Engineering", "Finance", "Sales"]),
            "action": self.choose("action_type", &["CREATE", "ADD_USERS", "REMOVE_USERS", "RENAME"]),
            "action_info": "",
            "source": "WebUI",
        })
    }

    /// A `workgroup-settings` event: a sample security setting changed.
    fn setting(&mut self, time: String, ip: String) -> Value {
        let actor = self.user("users");
        json!({
            "time": time,
            "actor": actor.username,
            "ip_address": ip,
            "setting_screen": "Security",
            "setting_name": (["Password minimum length", "Session timeout", "Public links"][self.below(3)]),
            "old_value": format!("{}", 8 + self.below(4)),
            "new_value": format!("{}", 12 + self.below(4)),
        })
    }

    /// An event of the other kinds: an action of the kind's list.
    fn other(&mut self, kind: &str, time: String, i: u64) -> Value {
        let actor = self.user("users");
        let (field, pool) = other_actions(kind);
        json!({
            "time": time,
            "username": actor.username,
            "user_id": actor.id,
            "action": self.choose(field, pool),
            "details": format!("{kind} event {i}"),
        })
    }
}

fn other_actions(kind: &str) -> (&'static str, &'static [&'static str]) {
    match kind {
        "workflows" => (
            "workflow_actions",
            &["WORKFLOW_CREATED", "STEP_COMPLETED", "WORKFLOW_COMPLETED"],
        ),
        "workflow-templates" => (
            "workflow_template_actions",
            &["TEMPLATE_CREATED", "TEMPLATE_EDITED"],
        ),
        "quality-docs" => (
            "quality_docs_actions",
            &["DOCUMENT_ADDED", "DOCUMENT_MODIFIED", "PREVIEW"],
        ),
        "quality-docs-categories" => (
            "quality_docs_categories_actions",
            &["CATEGORY_ADDED", "CATEGORY_MODIFIED"],
        ),
        "quality-docs-courses" => (
            "quality_docs_courses_actions",
            &["COURSE_CREATED", "COURSE_MODIFIED"],
        ),
        "etmf" => ("etmf_actions", &["STUDY_CREATED", "DOCUMENT_ADDED"]),
        "upload-requests" => (
            "upload_requests_actions",
            &["REQUEST_CREATED", "FILE_UPLOADED"],
        ),
        _ => ("", &["SNAPSHOT_RESTORED"]),
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn filter_list(filters: &Value, field: &str) -> Option<Vec<String>> {
    filters.get(field)?.as_array().map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

fn in_list(filters: &Value, field: &str, value: Option<&Value>, ignore_case: bool) -> bool {
    match filter_list(filters, field) {
        None => true,
        Some(list) => {
            let value = value.and_then(Value::as_str).unwrap_or("");
            list.iter().any(|l| {
                if ignore_case {
                    l.eq_ignore_ascii_case(value)
                } else {
                    l == value
                }
            })
        }
    }
}

/// Whether `name` matches a pattern with `*` wildcards.
pub fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Whether `path` is within one of the folders the job's `folders` filter names (any path
/// when it names none).
fn in_folders(filters: &Value, path: &str) -> bool {
    filter_list(filters, "folders").is_none_or(|folders| folders.iter().any(|f| is_within(path, f)))
}

/// Whether a recorded event passes the filters of a job of `kind`.
pub fn passes(kind: &str, filters: &Value, event: &Value) -> bool {
    let field = |name: &str| event.get(name);
    match kind {
        "logins" => {
            in_list(filters, "events", field("event"), false)
                // Access points match in any letter case (the spec's `AccessPoint` pattern).
                && in_list(filters, "access_points", field("access"), true)
                && in_list(filters, "users", field("username"), false)
        }
        "files" => {
            let path = field("target_path").and_then(Value::as_str).unwrap_or("");
            let folders_ok = in_folders(filters, path);
            let name = path.rsplit('/').next().unwrap_or("");
            let file_ok = match filters.get("file").and_then(Value::as_str) {
                Some(pattern) => glob(pattern, name),
                None => true,
            };
            folders_ok
                && file_ok
                && in_list(filters, "users", field("username"), false)
                && in_list(filters, "transaction_type", field("transaction"), false)
        }
        "permissions" => {
            let folder = field("folder").and_then(Value::as_str).unwrap_or("");
            let folders_ok = in_folders(filters, folder);
            let assignee = field("assignee").and_then(Value::as_str).unwrap_or("");
            let users = filter_list(filters, "assignee_users");
            let groups = filter_list(filters, "assignee_groups");
            let assignee_ok = match (users, groups) {
                (None, None) => true,
                (u, g) => {
                    u.is_some_and(|u| u.iter().any(|x| x == assignee))
                        || g.is_some_and(|g| g.iter().any(|x| x.eq_ignore_ascii_case(assignee)))
                }
            };
            folders_ok && assignee_ok && in_list(filters, "assigners", field("assigner"), false)
        }
        "users" => {
            in_list(filters, "action_type", field("action"), false)
                && in_list(filters, "performed_by", field("performed_by"), false)
                && in_list(filters, "subject", field("subject"), false)
        }
        "groups" => {
            in_list(filters, "action_type", field("action"), false)
                && in_list(filters, "users", field("actor"), false)
                && in_list(filters, "groups", field("group"), true)
        }
        "workgroup-settings" => in_list(filters, "users", field("actor"), false),
        _ => in_list(filters, "users", field("username"), false),
    }
}

/// The CSV columns of a kind: each header its columns are shown under (`audit_kinds`, read
/// from the spec's `x-pubapi-columns`), with the JSON fields shown there (the first present
/// is the cell: files' `File/Folder` is the `file` or the `folder`).
pub fn csv_columns(kind: &str) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    let columns = pubapi_sdk::audit_kinds::by_name(kind).map_or(&[][..], |k| k.columns);
    for column in columns {
        let Some(header) = column.csv else { continue };
        match out.iter_mut().find(|(shown, _)| *shown == header) {
            Some((_, fields)) => fields.push(column.field),
            None => out.push((header, vec![column.field])),
        }
    }
    out
}

fn csv_cell(value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The day range of kinds whose time portion is ignored: midnight of the start day to the
/// end of the end day.
pub fn whole_days(start_ms: i64, end_ms: i64) -> (i64, i64) {
    (
        start_ms.div_euclid(DAY_MS) * DAY_MS,
        end_ms.div_euclid(DAY_MS) * DAY_MS + DAY_MS - 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Vec<KnownUser> {
        vec![KnownUser {
            username: "admin".into(),
            id: 1001,
        }]
    }

    fn login(at_ms: i64, user: &str) -> AuditRecord {
        AuditRecord {
            kind: "logins",
            at_ms,
            event: json!({"username": user, "user_id": 1, "event": "logins", "ip_address": "127.0.0.1", "access": "Web", "time": iso_seconds(at_ms)}),
        }
    }

    /// A logins report of the first 10 ms with `filters`: only the `records`, no synthetic
    /// events.
    fn recorded_logins(filters: Value, records: &[AuditRecord]) -> Report {
        Report::new("logins", (0, 10), filters, 1, users(), records, 0)
    }

    #[test]
    fn recorded_and_synthetic_events_merge_in_time_order() {
        let records = vec![login(50, "a"), login(0, "b"), login(1000, "c")];
        let report = Report::new("logins", (0, 1000), json!({}), 1, users(), &records, 4);
        assert_eq!(report.total(), 7);
        let all = report.page(0, 100);
        let names: Vec<&str> = all
            .iter()
            .map(|e| e["username"].as_str().unwrap())
            .collect();
        // synthetic times are 125, 375, 625, 875
        assert_eq!(
            names,
            vec!["b", "a", "admin", "admin", "admin", "admin", "c"]
        );
        for offset in 0..7 {
            for count in 0..8 {
                let want: Vec<Value> = all.iter().skip(offset).take(count).cloned().collect();
                assert_eq!(report.page(offset as u64, count as u64), want);
            }
        }
    }

    #[test]
    fn a_million_synthetic_events_page_without_storing() {
        let report = Report::new(
            "files",
            (0, 86_400_000),
            json!({"users": ["zoe"]}),
            9,
            users(),
            &[],
            1_000_000,
        );
        let page = report.page(999_990, 100);
        assert_eq!(page.len(), 10);
        assert!(page.iter().all(|e| e["username"] == "zoe"));
        assert_eq!(report.page(999_990, 5), page[..5].to_vec());
    }

    #[test]
    fn filters_select_recorded_events() {
        let records = vec![login(1, "a"), login(2, "b")];
        assert_eq!(
            recorded_logins(json!({"users": ["b"]}), &records).total(),
            1
        );
        assert_eq!(
            recorded_logins(json!({"events": ["logouts"]}), &records).total(),
            0
        );
    }

    #[test]
    fn csv_of_logins_has_the_reference_columns() {
        let csv = recorded_logins(json!({}), &[login(1, "x,y")]).csv();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("This report reflects activity up to 1/1/70 00:00:00")
        );
        assert_eq!(lines.next(), Some("Username,Event,IP Address,Access,Time"));
        assert_eq!(
            lines.next(),
            Some("\"x,y\",logins,127.0.0.1,Web,1970-01-01T00:00:00Z")
        );
    }

    #[test]
    fn csv_title_names_the_last_covered_instant() {
        let (start, end) = whole_days(DAY_MS * 17_217, DAY_MS * 17_221);
        let report = Report::new("files", (start, end), json!({}), 1, users(), &[], 2);
        // 2017-02-20 ..= 2017-02-24, as a platform client's test expects it.
        assert_eq!(
            report.csv_title(),
            "This report reflects activity up to 2/24/17 23:59:59"
        );
        assert!(report.csv().starts_with(
            "This report reflects activity up to 2/24/17 23:59:59\r\nFile/Folder,Target Path/Link,"
        ));
        assert_eq!(report.csv().lines().count(), 4);
    }

    #[test]
    fn glob_matches_wildcards() {
        assert!(glob("report*.pdf", "report-1.pdf"));
        assert!(glob("r*", "r"));
        assert!(!glob("report*.pdf", "report-1.doc"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(glob("exact.txt", "exact.txt"));
    }
}
