//! Tokens, roles and impersonation (reference 5).

use super::config::{Role, SandboxConfig, UserConfig};
use axum::http::HeaderMap;
use std::collections::{HashMap, HashSet};

/// The users of a sandbox and the tokens issued to them.
#[derive(Debug)]
pub struct Users {
    list: Vec<(UserConfig, String)>,
    by_token: HashMap<String, usize>,
    /// Tokens deactivated through the control plane.
    inactive: HashSet<String>,
}

/// Who is calling: the token's user, and the user the call runs as.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The bearer token.
    pub token: String,
    /// The user the token was issued to.
    pub token_user: UserConfig,
    /// The user the call runs as (the token's user unless impersonating).
    pub user: UserConfig,
    /// The admin's username when the call impersonates `user`.
    pub impersonated_by: Option<String>,
}

impl Caller {
    /// The OAuth client id of the token.
    pub fn client_id(&self) -> &str {
        &self.token_user.client_id
    }

    /// Whether the token carries `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.token_user.scopes.iter().any(|s| s == scope)
    }
}

/// Why impersonation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImpersonationError {
    /// Only admin tokens may impersonate.
    NotAdmin,
    /// No user has this username or e-mail address.
    UnknownUser(String),
}

impl Users {
    /// The users of `config` with their tokens.
    pub fn new(config: &SandboxConfig) -> Self {
        let list: Vec<(UserConfig, String)> = config
            .users
            .iter()
            .map(|u| (u.clone(), u.token_for_seed(config.seed)))
            .collect();
        let by_token = list
            .iter()
            .enumerate()
            .map(|(i, (_, token))| (token.clone(), i))
            .collect();
        Users {
            list,
            by_token,
            inactive: HashSet::new(),
        }
    }

    /// Deactivates (`active: false`) or activates again the token of `username`; `false`
    /// when there is no such user.
    pub fn set_active(&mut self, username: &str, active: bool) -> bool {
        let Some(token) = self.token_of(username).map(str::to_string) else {
            return false;
        };
        if active {
            self.inactive.remove(&token);
        } else {
            self.inactive.insert(token);
        }
        true
    }

    /// Whether `token` is active (every token is until deactivated).
    pub fn is_active(&self, token: &str) -> bool {
        !self.inactive.contains(token)
    }

    /// Every user with its token.
    pub fn all(&self) -> &[(UserConfig, String)] {
        &self.list
    }

    /// The token of `username`.
    pub fn token_of(&self, username: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|(u, _)| u.username == username)
            .map(|(_, t)| t.as_str())
    }

    /// The user called `username`.
    pub fn by_username(&self, username: &str) -> Option<&UserConfig> {
        self.list
            .iter()
            .map(|(u, _)| u)
            .find(|u| u.username == username)
    }

    /// The first admin and its token.
    pub fn admin(&self) -> Option<(&UserConfig, &str)> {
        self.list
            .iter()
            .find(|(u, _)| u.role == Role::Admin)
            .map(|(u, t)| (u, t.as_str()))
    }

    /// The token's user, from `Authorization: Bearer <token>`.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<(String, &UserConfig)> {
        let value = headers.get("authorization")?.to_str().ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim();
        let index = *self.by_token.get(token)?;
        Some((token.to_string(), &self.list[index].0))
    }

    /// The caller of a request: the token's user, or the user named by `X-Service-Act-As`
    /// (or, when that header is absent, `X-Service-Act-As-Email`) when the token is an
    /// admin's.
    pub fn caller(
        &self,
        token: String,
        token_user: &UserConfig,
        headers: &HeaderMap,
    ) -> Result<Caller, ImpersonationError> {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let target = match (header("x-service-act-as"), header("x-service-act-as-email")) {
            (Some(username), _) => Some((username, false)),
            (None, Some(email)) => Some((email, true)),
            (None, None) => None,
        };
        let Some((who, by_email)) = target else {
            return Ok(Caller {
                token,
                token_user: token_user.clone(),
                user: token_user.clone(),
                impersonated_by: None,
            });
        };
        if token_user.role != Role::Admin {
            return Err(ImpersonationError::NotAdmin);
        }
        let user = self
            .list
            .iter()
            .map(|(u, _)| u)
            .find(|u| {
                if by_email {
                    u.email.eq_ignore_ascii_case(who)
                } else {
                    u.username == who
                }
            })
            .ok_or_else(|| ImpersonationError::UnknownUser(who.to_string()))?;
        Ok(Caller {
            token,
            token_user: token_user.clone(),
            user: user.clone(),
            impersonated_by: Some(token_user.username.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn users() -> Users {
        Users::new(&SandboxConfig::default())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn bearer_token_finds_its_user() {
        let users = users();
        let token = users.token_of("sam").unwrap().to_string();
        let auth = format!("Bearer {token}");
        let (_, user) = users
            .authenticate(&headers(&[("authorization", &auth)]))
            .unwrap();
        assert_eq!(user.username, "sam");
        assert!(
            users
                .authenticate(&headers(&[("authorization", "Bearer nope")]))
                .is_none()
        );
        assert!(
            users
                .authenticate(&headers(&[("authorization", &token)]))
                .is_none()
        );
        assert!(users.authenticate(&HeaderMap::new()).is_none());
    }

    #[test]
    fn admin_impersonates_and_email_is_ignored_when_both_are_sent() {
        let users = users();
        let admin = users.by_username("admin").unwrap().clone();
        let caller = users
            .caller(
                "t".into(),
                &admin,
                &headers(&[
                    ("x-service-act-as", "sam"),
                    ("x-service-act-as-email", "power@sandbox.example.com"),
                ]),
            )
            .unwrap();
        assert_eq!(caller.user.username, "sam");
        assert_eq!(caller.impersonated_by.as_deref(), Some("admin"));
        let by_email = users
            .caller(
                "t".into(),
                &admin,
                &headers(&[("x-service-act-as-email", "power@sandbox.example.com")]),
            )
            .unwrap();
        assert_eq!(by_email.user.username, "power");
    }

    #[test]
    fn non_admins_and_unknown_users_are_refused() {
        let users = users();
        let sam = users.by_username("sam").unwrap().clone();
        let admin = users.by_username("admin").unwrap().clone();
        assert_eq!(
            users
                .caller("t".into(), &sam, &headers(&[("x-service-act-as", "admin")]))
                .unwrap_err(),
            ImpersonationError::NotAdmin
        );
        assert_eq!(
            users
                .caller(
                    "t".into(),
                    &admin,
                    &headers(&[("x-service-act-as", "ghost")])
                )
                .unwrap_err(),
            ImpersonationError::UnknownUser("ghost".into())
        );
    }
}
