//! Webhook registrations (reference 2.9, 4.8, 6.1): validation, listing per user and client
//! id, details, status, update, delete, quota, and which events each registration receives.
//!
//! Choices where the reference is silent: fields omitted in an update keep their value; a
//! registration receives the events of the whole domain (the sandbox has no per-folder
//! permissions) that pass its `eventType` and `path` filters; expiry changes nothing.

use super::Shared;
use super::auth::Caller;
use super::clock::{MAX_MS, later};
use super::config::WebhooksConfig;
use super::facts::{event_types, wildcards};
use super::fs::{is_within, shown};
use super::http::{ApiRequest, Reply, error};
use serde_json::{Map, Value, json};

/// Path filters allowed per webhook (the spec's `x-pubapi-max-items` of a registration's
/// `path`).
pub const MAX_PATHS: usize = pubapi_sdk::limits::WEBHOOK_CREATE_REQUEST_PATH_MAX_ITEMS;

/// One registration.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// `webhookId`.
    pub id: String,
    /// The user who registered it.
    pub owner: i64,
    /// The OAuth client id of the token that registered it.
    pub client_id: String,
    /// `url`.
    pub url: String,
    /// `eventType` (`None`: all events).
    pub event_types: Option<Vec<String>>,
    /// `path` (`None`: all paths).
    pub path: Option<String>,
    /// `authHeader`.
    pub auth_header: Option<String>,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// `expires`, epoch seconds.
    pub expires: i64,
}

impl Registration {
    /// `{webhookId, expires, status}`.
    pub fn summary(&self) -> Value {
        json!({ "webhookId": self.id, "expires": self.expires, "status": self.status() })
    }

    /// `enabled` or `disabled`.
    pub fn status(&self) -> &'static str {
        if self.enabled { "enabled" } else { "disabled" }
    }

    /// The full registration (2.9).
    pub fn details(&self) -> Value {
        let mut value = self.summary();
        value["url"] = json!(self.url);
        if let Some(types) = &self.event_types {
            value["eventType"] = json!(types);
        }
        if let Some(path) = &self.path {
            value["path"] = json!(path);
        }
        if let Some(auth) = &self.auth_header {
            value["authHeader"] = json!(auth);
        }
        value
    }

    /// Whether an event of `event_type` at `paths` passes the filters.
    pub fn wants(&self, event_type: &str, paths: &[String]) -> bool {
        let type_ok = match &self.event_types {
            None => true,
            Some(types) => types.iter().any(|t| {
                t == event_type
                    || t.strip_suffix('*')
                        .is_some_and(|prefix| event_type.starts_with(prefix))
            }),
        };
        let path_ok = match &self.path {
            None => true,
            Some(filter) => split_paths(filter)
                .iter()
                .any(|f| paths.iter().any(|p| is_within(p, f))),
        };
        type_ok && path_ok
    }
}

fn split_paths(filter: &str) -> Vec<String> {
    filter
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The registrations of a sandbox, in creation order.
#[derive(Debug, Default)]
pub struct WebhookStore {
    hooks: Vec<Registration>,
}

impl WebhookStore {
    /// Every registration.
    pub fn all(&self) -> &[Registration] {
        &self.hooks
    }

    /// A registration by id.
    pub fn get(&self, id: &str) -> Option<&Registration> {
        self.hooks.iter().find(|h| h.id == id)
    }

    /// A registration by id, to change it.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut Registration> {
        self.hooks.iter_mut().find(|h| h.id == id)
    }
}

/// Whether `host` is a loopback name or address.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

struct Fields {
    url: Option<String>,
    event_types: Option<Vec<String>>,
    path: Option<String>,
    auth_header: Option<String>,
    status: Option<bool>,
}

type Invalid = (&'static str, String);

fn schema_error(message: impl Into<String>) -> Invalid {
    ("request_schema_error", message.into())
}

/// Validates a create (`update == false`) or update body.
fn fields(body: Option<Value>, config: &WebhooksConfig, update: bool) -> Result<Fields, Invalid> {
    let Some(Value::Object(body)) = body else {
        return Err(schema_error("the body must be a JSON object"));
    };
    let text = |body: &Map<String, Value>, name: &str| -> Result<Option<String>, Invalid> {
        match body.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(schema_error(format!("`{name}` must be a string"))),
        }
    };
    let url = text(&body, "url")?.ok_or_else(|| schema_error("`url` is required"))?;
    check_url(&url, config)?;
    let event_types = match body.get("eventType") {
        None => None,
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(schema_error("`eventType` needs at least one item"));
            }
            let mut types = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(t) if event_types().contains(&t) || wildcards().contains(&t) => {
                        types.push(t.to_string());
                    }
                    _ => {
                        return Err(schema_error(format!(
                            "invalid eventType value {item}: an event name or one of {}",
                            wildcards().join(", ")
                        )));
                    }
                }
            }
            Some(types)
        }
        Some(_) => return Err(schema_error("`eventType` must be an array of strings")),
    };
    let path = text(&body, "path")?;
    if let Some(path) = &path {
        let paths = split_paths(path);
        if paths.len() > MAX_PATHS {
            return Err(schema_error(format!(
                "`path` holds {} paths; at most {MAX_PATHS} are allowed",
                paths.len()
            )));
        }
        // The spec's `minLength: 1`; the reference says no more of a path's form, so any
        // other text is taken (a path no folder has matches no event).
        if path.is_empty() {
            return Err(schema_error(
                "`path` must not be empty: leave it out for all paths",
            ));
        }
    }
    let auth_header = text(&body, "authHeader")?;
    let status = match (update, text(&body, "status")?) {
        (true, Some(s)) if s == "enabled" => Some(true),
        (true, Some(s)) if s == "disabled" => Some(false),
        (true, Some(s)) => return Err(schema_error(format!("invalid status {}", shown(&s)))),
        _ => None,
    };
    Ok(Fields {
        url: Some(url),
        event_types,
        path,
        auth_header,
        status,
    })
}

fn check_url(url: &str, config: &WebhooksConfig) -> Result<(), Invalid> {
    let invalid = || {
        (
            "hook_invalid_url",
            format!("{} is not a valid HTTPS URL", shown(url)),
        )
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| invalid())?;
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(invalid)?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if config.allow_http_loopback && is_loopback(host) => Ok(()),
        _ => Err(invalid()),
    }
}

fn not_found(req: &ApiRequest) -> Reply {
    error(
        req.op,
        404,
        "hook_not_found_error",
        &format!("webhook {} not found", req.param("webhookId")),
    )
}

/// `POST /v1/webhooks`.
pub fn create(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let config = &shared.config.webhooks;
    let body = match req.json() {
        Ok(body) => body,
        Err(message) => return error(req.op, 400, "request_schema_error", &message),
    };
    let fields = match fields(body, config, false) {
        Ok(fields) => fields,
        Err((code, message)) => return error(req.op, 400, code, &message),
    };
    let now = shared.now();
    let mut world = shared.world();
    let used = world
        .webhooks
        .hooks
        .iter()
        .filter(|h| h.client_id == caller.client_id())
        .count();
    if used >= config.quota_per_client {
        return error(
            req.op,
            409,
            "hook_quota_error",
            &format!(
                "the client id has {used} webhooks, the maximum for the domain; delete one first"
            ),
        );
    }
    let id = world.ids.id("wh_");
    let hook = Registration {
        id,
        owner: caller.user.id,
        client_id: caller.client_id().to_string(),
        url: fields.url.unwrap_or_default(),
        event_types: fields.event_types,
        path: fields.path,
        auth_header: fields.auth_header,
        enabled: true,
        // Never past the clock's end: a registration made there expires with it.
        expires: later(now, config.registration_lifetime).min(MAX_MS) / 1000,
    };
    let summary = hook.summary();
    world.webhooks.hooks.push(hook);
    Reply::json(201, &summary)
}

/// `GET /v1/webhooks`: the caller's registrations on the token's client id.
pub fn list(shared: &Shared, _req: &ApiRequest, caller: &Caller) -> Reply {
    let world = shared.world();
    let hooks: Vec<Value> = world
        .webhooks
        .hooks
        .iter()
        .filter(|h| h.owner == caller.user.id && h.client_id == caller.client_id())
        .map(Registration::summary)
        .collect();
    Reply::json(200, &Value::Array(hooks))
}

fn owned<'a>(
    store: &'a mut WebhookStore,
    req: &ApiRequest,
    caller: &Caller,
) -> Option<&'a mut Registration> {
    store
        .get_mut(req.param("webhookId"))
        .filter(|h| h.client_id == caller.client_id())
}

/// `GET /v1/webhooks/{webhookId}/details`.
pub fn details(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let mut world = shared.world();
    match owned(&mut world.webhooks, req, caller) {
        Some(hook) => Reply::json(200, &hook.details()),
        None => not_found(req),
    }
}

/// `GET /v1/webhooks/{webhookId}/status`.
pub fn get_status(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let mut world = shared.world();
    match owned(&mut world.webhooks, req, caller) {
        Some(hook) => Reply::json(200, &hook.summary()),
        None => not_found(req),
    }
}

/// `POST /v1/webhooks/{webhookId}/status`.
pub fn set_status(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let body = match req.json() {
        Ok(body) => body,
        Err(message) => return error(req.op, 400, "request_schema_error", &message),
    };
    let enabled = match body.as_ref().and_then(|b| b.get("status")) {
        Some(Value::String(s)) if s == "enabled" => true,
        Some(Value::String(s)) if s == "disabled" => false,
        _ => {
            return error(
                req.op,
                400,
                "request_schema_error",
                "`status` is required: `enabled` or `disabled`",
            );
        }
    };
    let mut world = shared.world();
    let Some(hook) = owned(&mut world.webhooks, req, caller) else {
        return not_found(req);
    };
    hook.enabled = enabled;
    let summary = hook.summary();
    if !enabled {
        let id = req.param("webhookId").to_string();
        world.deliveries.cancel(&id);
    }
    Reply::json(200, &summary)
}

/// `PUT /v1/webhooks/{webhookId}`.
pub fn update(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let body = match req.json() {
        Ok(body) => body,
        Err(message) => return error(req.op, 400, "request_schema_error", &message),
    };
    let exists = owned(&mut shared.world().webhooks, req, caller).is_some();
    if !exists {
        return not_found(req);
    }
    let fields = match fields(body, &shared.config.webhooks, true) {
        Ok(fields) => fields,
        Err((code, message)) => return error(req.op, 400, code, &message),
    };
    let mut world = shared.world();
    let Some(hook) = owned(&mut world.webhooks, req, caller) else {
        return not_found(req);
    };
    if let Some(url) = fields.url {
        hook.url = url;
    }
    if fields.event_types.is_some() {
        hook.event_types = fields.event_types;
    }
    if fields.path.is_some() {
        hook.path = fields.path;
    }
    if fields.auth_header.is_some() {
        hook.auth_header = fields.auth_header;
    }
    if let Some(enabled) = fields.status {
        hook.enabled = enabled;
    }
    if !hook.enabled {
        let id = hook.id.clone();
        world.deliveries.cancel(&id);
    }
    Reply::empty(200)
}

/// `DELETE /v1/webhooks/{webhookId}`.
pub fn delete(shared: &Shared, req: &ApiRequest, caller: &Caller) -> Reply {
    let mut world = shared.world();
    if owned(&mut world.webhooks, req, caller).is_none() {
        return not_found(req);
    }
    let id = req.param("webhookId");
    world.webhooks.hooks.retain(|h| h.id != id);
    world.deliveries.cancel(id);
    Reply::empty(204)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(event_types: Option<&[&str]>, path: Option<&str>) -> Registration {
        Registration {
            id: "w".into(),
            owner: 1,
            client_id: "c".into(),
            url: "https://x".into(),
            event_types: event_types.map(|t| t.iter().map(|s| s.to_string()).collect()),
            path: path.map(str::to_string),
            auth_header: None,
            enabled: true,
            expires: 0,
        }
    }

    #[test]
    fn filters_take_names_wildcards_and_folders() {
        let paths = vec!["/Projects/a.txt".to_string()];
        assert!(hook(None, None).wants("fs:add_file", &paths));
        assert!(hook(Some(&["fs:*"]), None).wants("fs:add_file", &paths));
        assert!(!hook(Some(&["fs:*"]), None).wants("comment:set_comment", &paths));
        assert!(hook(Some(&["fs:add_file"]), None).wants("fs:add_file", &paths));
        assert!(!hook(Some(&["fs:add_folder"]), None).wants("fs:add_file", &paths));
        assert!(hook(None, Some("/Other, /Projects")).wants("fs:add_file", &paths));
        assert!(!hook(None, Some("/Other")).wants("fs:add_file", &paths));
        assert!(!hook(None, Some("/Other")).wants("group:create", &[]));
    }

    #[test]
    fn urls_must_be_https_or_loopback_http_in_test_mode() {
        let config = WebhooksConfig::default();
        assert!(check_url("https://hooks.example.com/in", &config).is_ok());
        assert!(check_url("http://127.0.0.1:9000/in", &config).is_ok());
        assert!(check_url("http://localhost/in", &config).is_ok());
        assert!(check_url("http://[::1]:80/in", &config).is_ok());
        assert!(check_url("http://hooks.example.com/in", &config).is_err());
        assert!(check_url("ftp://127.0.0.1/in", &config).is_err());
        assert!(check_url("not a url", &config).is_err());
        let strict = WebhooksConfig {
            allow_http_loopback: false,
            ..WebhooksConfig::default()
        };
        assert_eq!(
            check_url("http://127.0.0.1/in", &strict).unwrap_err().0,
            "hook_invalid_url"
        );
    }

    #[test]
    fn bodies_are_validated() {
        let config = WebhooksConfig::default();
        let code = |body: Value| {
            fields(Some(body), &config, false)
                .err()
                .map(|(code, _)| code)
        };
        assert_eq!(code(json!({"url": "https://x.example"})), None);
        assert_eq!(code(json!({})), Some("request_schema_error"));
        assert_eq!(code(json!({"url": 5})), Some("request_schema_error"));
        assert_eq!(
            code(json!({"url": "http://x.example"})),
            Some("hook_invalid_url")
        );
        assert_eq!(
            code(json!({"url": "https://x.example", "eventType": []})),
            Some("request_schema_error")
        );
        assert_eq!(
            code(json!({"url": "https://x.example", "eventType": ["group:*"]})),
            Some("request_schema_error")
        );
        let many: Vec<String> = (0..101).map(|i| format!("/f{i}")).collect();
        assert_eq!(
            code(json!({"url": "https://x.example", "path": many.join(",")})),
            Some("request_schema_error")
        );
        let hundred: Vec<String> = (0..100).map(|i| format!("/f{i}")).collect();
        assert_eq!(
            code(json!({"url": "https://x.example", "path": hundred.join(",")})),
            None
        );
    }
}
