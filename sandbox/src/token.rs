//! The token endpoint `/puboauth/token` (reference 5.9, 8), outside `/pubapi`: a form POST
//! that hands out the user's token, throttled per hour with 409 and `Retry-After`.
//!
//! The reference shows neither its parameters nor its grant flows; the platform's clients
//! send `client_id`, `username`, `password` and `grant_type=password` (an internal
//! application, 10 requests per user per hour). A public application's flow
//! (`grant_type=authorization_code`, 100 requests per hour per client id) takes a `code`
//! from a consent step the sandbox does not have: any user's username stands for it.
//!
//! Answers are the OAuth 2.0 ones (RFC 6749 5.1, 5.2): 200 `{"access_token", "token_type"}`,
//! 400 `invalid_request`, `unsupported_grant_type` or `invalid_grant`, 401 `invalid_client`;
//! over a limit, 409 with `Retry-After` (seconds to the end of the hour). Every request
//! counts against its window, whatever its answer. Exchanges are recorded in the traffic
//! without an operation.

use super::Shared;
use super::config::{TokenEndpointConfig, UserConfig};
use super::dates::DAY_MS;
use super::fs::shown;
use super::http::{Reply, parse_query};
use super::limits::Violation;
use super::serve::{BodyPace, DRAIN_CAP, drain_body, read_body};
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// The path of the token endpoint.
pub const TOKEN_PATH: &str = "/puboauth/token";

const HOUR_MS: i64 = DAY_MS / 24;

/// Which hourly window a token request counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenWindow {
    /// A public application: one window per client id.
    Public {
        /// The client id.
        client_id: String,
    },
    /// An internal application: one window per client id and user.
    Internal {
        /// The client id.
        client_id: String,
        /// The username sent.
        username: String,
    },
}

/// The hourly windows of the token endpoint: the hour each counts in, and its count.
#[derive(Debug, Default)]
pub struct TokenWindows {
    windows: HashMap<TokenWindow, (i64, u32)>,
}

impl TokenWindows {
    /// Counts one request of `window` at `now_ms`, or says in how many seconds the window
    /// has room again (the request is then not counted).
    pub fn admit(
        &mut self,
        window: TokenWindow,
        now_ms: i64,
        limits: &TokenEndpointConfig,
    ) -> Result<(), u64> {
        let limit = match window {
            TokenWindow::Public { .. } => limits.public_per_hour,
            TokenWindow::Internal { .. } => limits.internal_per_user_per_hour,
        };
        let hour = now_ms.div_euclid(HOUR_MS);
        let (at, count) = self.windows.entry(window).or_insert((hour, 0));
        if *at != hour {
            *at = hour;
            *count = 0;
        }
        if limit.is_some_and(|limit| *count >= limit) {
            let left_ms = (hour + 1) * HOUR_MS - now_ms;
            return Err(u64::try_from((left_ms + 999) / 1000).unwrap_or(1).max(1));
        }
        *count += 1;
        Ok(())
    }
}

/// The axum handler of `/puboauth/token`.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let server = &shared.config.server;
    let (reply, form) = if method != "POST" {
        let reply = oauth_error(405, "invalid_request", "the token endpoint takes POST")
            .header("Allow", "POST");
        let reply = if drain_body(&parts.headers, body, DRAIN_CAP, BodyPace::of(server)).await {
            reply
        } else {
            reply.header("Connection", "close")
        };
        (reply, Vec::new())
    } else {
        match read_body(
            &parts.headers,
            body,
            server.max_body_bytes,
            BodyPace::of(server),
        )
        .await
        {
            Ok(body) => (answer(&shared, &body), body),
            Err(refused) => (
                oauth_error(refused.status(), "invalid_request", &refused.to_string())
                    .header("Connection", "close"),
                Vec::new(),
            ),
        }
    };
    super::routes::record_unmatched(&shared, &method, TOKEN_PATH, form, &reply);
    super::routes::into_response(reply)
}

/// The answer to a token request with the form `body`.
fn answer(shared: &Shared, body: &[u8]) -> Reply {
    let form = parse_query(&String::from_utf8_lossy(body));
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let Some(grant_type) = field("grant_type") else {
        return oauth_error(400, "invalid_request", "grant_type is missing");
    };
    let Some(client_id) = field("client_id") else {
        return oauth_error(400, "invalid_request", "client_id is missing");
    };
    let (window, username, password) = match grant(grant_type, client_id, field) {
        Ok(grant) => grant,
        Err(reply) => return reply,
    };
    let now = shared.now();
    let mut world = shared.world();
    if let Err(retry_after) = world
        .token_windows
        .admit(window, now, &shared.config.token_endpoint)
    {
        world.counters.violation(Violation::TokenEndpointOverRate);
        return oauth_error(
            409,
            "too_many_requests",
            "the token endpoint's hourly limit is reached",
        )
        .header("Retry-After", retry_after.to_string());
    }
    if !world
        .users
        .all()
        .iter()
        .any(|(u, _)| u.client_id == client_id)
    {
        return oauth_error(
            401,
            "invalid_client",
            &format!("no client {}", shown(client_id)),
        );
    }
    let found: Option<(UserConfig, String)> = world
        .users
        .all()
        .iter()
        .find(|(u, _)| {
            u.client_id == client_id
                && u.username == username
                && password.is_none_or(|p| p == u.password)
        })
        .cloned();
    match found {
        Some((_, token)) => Reply::json(
            200,
            &json!({ "access_token": token, "token_type": "bearer" }),
        )
        .header("Cache-Control", "no-store"),
        None => oauth_error(
            400,
            "invalid_grant",
            "the credentials do not match a user of this client",
        ),
    }
}

/// What a grant of `grant_type` for `client_id` asks, from the form's fields: the token
/// window it counts in, the user name (or the code) and the password (none for a code).
fn grant<'f>(
    grant_type: &str,
    client_id: &str,
    field: impl Fn(&str) -> Option<&'f str>,
) -> Result<(TokenWindow, &'f str, Option<&'f str>), Reply> {
    let takes = |what: &str| {
        oauth_error(
            400,
            "invalid_request",
            &format!("grant_type={grant_type} takes {what}"),
        )
    };
    match grant_type {
        "password" => match (field("username"), field("password")) {
            (Some(username), Some(password)) => Ok((
                TokenWindow::Internal {
                    client_id: client_id.to_string(),
                    username: username.to_string(),
                },
                username,
                Some(password),
            )),
            _ => Err(takes("username and password")),
        },
        "authorization_code" => match field("code") {
            Some(code) => Ok((
                TokenWindow::Public {
                    client_id: client_id.to_string(),
                },
                code,
                None,
            )),
            None => Err(takes("code")),
        },
        other => Err(oauth_error(
            400,
            "unsupported_grant_type",
            &format!(
                "grant_type {} is not password or authorization_code",
                shown(other)
            ),
        )),
    }
}

fn oauth_error(status: u16, error: &str, description: &str) -> Reply {
    Reply::json(
        status,
        &json!({ "error": error, "error_description": description }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_740_992_400_000; // 09:00 UTC, a whole hour

    #[test]
    fn each_flow_has_its_hourly_window() {
        let limits = TokenEndpointConfig::default();
        let mut windows = TokenWindows::default();
        let sam = || TokenWindow::Internal {
            client_id: "app".into(),
            username: "sam".into(),
        };
        for i in 0..10 {
            assert_eq!(windows.admit(sam(), T0 + i, &limits), Ok(()));
        }
        assert_eq!(windows.admit(sam(), T0 + 1_800_000, &limits), Err(1800));
        let ada = TokenWindow::Internal {
            client_id: "app".into(),
            username: "ada".into(),
        };
        assert_eq!(windows.admit(ada, T0, &limits), Ok(()));
        assert_eq!(windows.admit(sam(), T0 + HOUR_MS, &limits), Ok(()));
        let public = || TokenWindow::Public {
            client_id: "app".into(),
        };
        for _ in 0..100 {
            assert_eq!(windows.admit(public(), T0, &limits), Ok(()));
        }
        assert_eq!(windows.admit(public(), T0, &limits), Err(3600));
    }
}
