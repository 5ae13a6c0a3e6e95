//! What a sandbox is made of: its users and tokens, its limits, and the timing of its state
//! machines. Every number of the reference is a field here, so tests can scale it.

use super::clock::ClockConfig;
use super::ids::hash_str;
use std::fmt;
use std::time::Duration;

/// The scope webhook endpoints need (reference 5.4).
pub const WEBHOOKS_SCOPE: &str = "Service.webhooks";

/// What a user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An administrator: runs reports and may impersonate other users.
    Admin,
    /// A power user; runs reports only with the can-run-reports role.
    PowerUser {
        /// Whether the user has the can-run-reports role.
        can_run_reports: bool,
    },
    /// A standard user: no reports, no impersonation.
    Standard,
}

impl Role {
    /// The role in words: `admin`, `power user`, `power user who runs reports`, `standard`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::PowerUser {
                can_run_reports: false,
            } => "power user",
            Role::PowerUser {
                can_run_reports: true,
            } => "power user who runs reports",
            Role::Standard => "standard",
        }
    }

    /// Whether audit reports are allowed for this role.
    pub fn can_run_reports(self) -> bool {
        matches!(
            self,
            Role::Admin
                | Role::PowerUser {
                    can_run_reports: true
                }
        )
    }
}

/// One user of the sandbox domain and the token issued to it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserConfig {
    /// Numeric user id (`actor` of events, `user.id` of deliveries).
    pub id: i64,
    /// Username (`X-Service-Act-As`).
    pub username: String,
    /// E-mail address (`X-Service-Act-As-Email`).
    pub email: String,
    /// Display name.
    pub display_name: String,
    /// Role.
    pub role: Role,
    /// Scopes of the user's token (`Service.webhooks` for webhook endpoints).
    pub scopes: Vec<String>,
    /// OAuth client id the token was issued to.
    pub client_id: String,
    /// The bearer token; derived from the seed and the username when `None`.
    pub token: Option<String>,
    /// The password `/puboauth/token` takes for the user (default `<username>-password`).
    pub password: String,
}

impl UserConfig {
    /// A user with the webhooks scope on the client `sandbox-app`.
    pub fn new(id: i64, username: &str, display_name: &str, role: Role) -> Self {
        UserConfig {
            id,
            username: username.to_string(),
            email: format!("{username}@sandbox.example.com"),
            display_name: display_name.to_string(),
            role,
            scopes: vec![WEBHOOKS_SCOPE.to_string()],
            client_id: "sandbox-app".to_string(),
            token: None,
            password: format!("{username}-password"),
        }
    }

    /// The same user with another password for `/puboauth/token`.
    pub fn with_password(mut self, password: &str) -> Self {
        self.password = password.to_string();
        self
    }

    /// The same user with other scopes.
    pub fn with_scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = scopes.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same user on another OAuth client.
    pub fn with_client_id(mut self, client_id: &str) -> Self {
        self.client_id = client_id.to_string();
        self
    }

    /// The same user with a fixed token.
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_string());
        self
    }

    /// The token of this user in a sandbox seeded with `seed`.
    pub fn token_for_seed(&self, seed: u64) -> String {
        self.token.clone().unwrap_or_else(|| {
            format!(
                "sbx_{}_{:016x}",
                self.username,
                hash_str(&format!("{seed}:{}", self.username))
            )
        })
    }
}

/// Per-token request limits (reference 8). Windows are fixed (a second, a UTC day) on the
/// sandbox clock; `Retry-After` says when the window resets. `None` is no limit.
///
/// Change them while the sandbox runs with [`Sandbox::set_limits`](crate::Sandbox::set_limits),
/// `PUT /_sandbox/limits` or `pubapi-sandbox limits`; the binary's `--limits` takes the text
/// form [`LimitsConfig::from_str`](std::str::FromStr) reads: `reference`, `off`, or
/// `general=2/s,1000/d,ai=10/m,100/d` (any of the five numbers, the rest unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsConfig {
    /// General API requests per second and token (reference: 2).
    #[serde(default)]
    pub general_per_second: Option<u32>,
    /// General API requests per UTC day and token (reference: 1,000).
    #[serde(default)]
    pub general_per_day: Option<u32>,
    /// AI requests per second and token (the reference states none).
    #[serde(default)]
    pub ai_per_second: Option<u32>,
    /// AI requests per minute and token (the reference does not show it; the platform's
    /// clients keep to 10).
    #[serde(default)]
    pub ai_per_minute: Option<u32>,
    /// AI requests per UTC day and token (reference: 100).
    #[serde(default)]
    pub ai_per_day: Option<u32>,
}

impl LimitsConfig {
    /// The reference's numbers: 2/s and 1,000/day for the general API, 100/day for AI, and
    /// the AI window of 10 a minute the platform's clients keep to. They are the SDK's own
    /// defaults ([`Limits::default`](pubapi_sdk_ext::limits::Limits)), the one place they
    /// are written.
    pub fn reference() -> Self {
        pubapi_sdk_ext::limits::Limits::default().into()
    }

    /// The windows of `class`, as the SDK's [`Budget`](pubapi_sdk_ext::limits::Budget) (the
    /// general API has no per-minute window; neither class has a per-hour one).
    pub fn budget(
        &self,
        class: pubapi_sdk_ext::limits::LimitClass,
    ) -> pubapi_sdk_ext::limits::Budget {
        use pubapi_sdk_ext::limits::{Budget, LimitClass};
        match class {
            LimitClass::General => Budget::new(self.general_per_second, self.general_per_day),
            LimitClass::Ai => {
                Budget::new(self.ai_per_second, self.ai_per_day).with_per_minute(self.ai_per_minute)
            }
        }
    }

    /// No limits at all: for schema fuzzers and clients that do not pace themselves.
    pub const fn off() -> Self {
        LimitsConfig {
            general_per_second: None,
            general_per_day: None,
            ai_per_second: None,
            ai_per_minute: None,
            ai_per_day: None,
        }
    }

    /// Limits high enough that tests which do not test limits never hit them (but a client
    /// built by [`Sandbox::client_for`](crate::Sandbox::client_for) still paces by them).
    pub const fn generous() -> Self {
        LimitsConfig {
            general_per_second: Some(100_000),
            general_per_day: Some(10_000_000),
            ai_per_second: None,
            ai_per_minute: Some(1_000_000),
            ai_per_day: Some(10_000_000),
        }
    }

    /// Every number multiplied by `factor` (at least 1 each).
    pub fn scaled(self, factor: f64) -> Self {
        let scale = |n: Option<u32>| n.map(|n| ((f64::from(n) * factor).round() as u32).max(1));
        LimitsConfig {
            general_per_second: scale(self.general_per_second),
            general_per_day: scale(self.general_per_day),
            ai_per_second: scale(self.ai_per_second),
            ai_per_minute: scale(self.ai_per_minute),
            ai_per_day: scale(self.ai_per_day),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self::reference()
    }
}

impl From<pubapi_sdk_ext::limits::Limits> for LimitsConfig {
    /// The windows the sandbox keeps of the SDK's budgets: per second and per day for both
    /// classes, per minute for AI (the per-hour windows are the token endpoint's).
    fn from(limits: pubapi_sdk_ext::limits::Limits) -> Self {
        LimitsConfig {
            general_per_second: limits.general.per_second,
            general_per_day: limits.general.per_day,
            ai_per_second: limits.ai.per_second,
            ai_per_minute: limits.ai.per_minute,
            ai_per_day: limits.ai.per_day,
        }
    }
}

impl fmt::Display for LimitsConfig {
    /// The text form [`FromStr`](std::str::FromStr) reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == LimitsConfig::reference() {
            return f.write_str("reference");
        }
        if *self == LimitsConfig::off() {
            return f.write_str("off");
        }
        let mut parts = Vec::new();
        for (class, second, minute, day) in [
            (
                "general",
                self.general_per_second,
                None,
                self.general_per_day,
            ),
            (
                "ai",
                self.ai_per_second,
                self.ai_per_minute,
                self.ai_per_day,
            ),
        ] {
            let windows: Vec<String> = [(second, "s"), (minute, "m"), (day, "d")]
                .into_iter()
                .filter_map(|(n, unit)| n.map(|n| format!("{n}/{unit}")))
                .collect();
            if !windows.is_empty() {
                parts.push(format!("{class}={}", windows.join(",")));
            }
        }
        f.write_str(&parts.join(","))
    }
}

impl std::str::FromStr for LimitsConfig {
    type Err = String;

    /// `reference`, `off`, or windows such as `general=2/s,1000/d,ai=10/m,100/d`: each
    /// `N/s`, `N/m` (AI only) or `N/d` belongs to the class named before it; a window not
    /// named is unlimited.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "reference" => return Ok(LimitsConfig::reference()),
            "off" => return Ok(LimitsConfig::off()),
            _ => {}
        }
        let mut limits = LimitsConfig::off();
        let mut class = None;
        for part in text.split(',').map(str::trim) {
            let window = match part.split_once('=') {
                Some((name, window)) => {
                    class = match name.trim() {
                        "general" => Some(("general", false)),
                        "ai" => Some(("ai", true)),
                        other => {
                            return Err(format!(
                                "unknown limit class `{other}` (general or ai), in `{part}`"
                            ));
                        }
                    };
                    window.trim()
                }
                None => part,
            };
            let (name, ai) = class.ok_or_else(|| {
                format!("`{window}` needs a class first, as in general={window} or ai={window}")
            })?;
            let (number, unit) = window
                .split_once('/')
                .ok_or_else(|| format!("{name} limit `{window}` is not N/s, N/m or N/d"))?;
            let number: u32 = number
                .trim()
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    format!(
                        "{name} limit `{window}`: `{}` is not a whole number from 1 to {}",
                        number.trim(),
                        u32::MAX
                    )
                })?;
            let slot = match (ai, unit.trim()) {
                (false, "s") => &mut limits.general_per_second,
                (false, "d") => &mut limits.general_per_day,
                (true, "s") => &mut limits.ai_per_second,
                (true, "m") => &mut limits.ai_per_minute,
                (true, "d") => &mut limits.ai_per_day,
                (false, "m") => {
                    return Err(format!(
                        "general limit `{window}`: the general API has no minute window (s or d)"
                    ));
                }
                (_, other) => {
                    return Err(format!(
                        "{name} limit `{window}`: unknown window `{other}` (s, m or d)"
                    ));
                }
            };
            *slot = Some(number);
        }
        Ok(limits)
    }
}

/// Audit reporting (reference 4.7).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// Whether audit reporting is in the domain plan (403 for everyone otherwise).
    pub enabled: bool,
    /// How long (sandbox time) a job stays `running`.
    pub job_duration: Duration,
    /// The minimum job poll interval; closer polls are counted as violations.
    pub min_poll_interval: Duration,
    /// Whether a too-early poll is also answered 429 (`Retry-After`) instead of only counted.
    pub enforce_poll_interval: bool,
    /// Synthetic events added to every report, generated lazily page by page from the seed
    /// (1,000,000 is fine: nothing is stored).
    pub synthetic_events: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            enabled: true,
            job_duration: Duration::from_secs(5 * 60),
            min_poll_interval: Duration::from_secs(2 * 60),
            enforce_poll_interval: false,
            synthetic_events: 25,
        }
    }
}

/// The Events API (reference 4.9, 6.3).
#[derive(Debug, Clone, PartialEq)]
pub struct EventsConfig {
    /// Events kept (the latest ones).
    pub max_events: usize,
    /// Age after which events are dropped.
    pub max_age: Duration,
    /// The minimum interval between polls once a client has caught up; closer polls are
    /// counted as violations.
    pub min_poll_interval: Duration,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            max_events: 500_000,
            max_age: Duration::from_secs(30 * 86_400),
            min_poll_interval: Duration::from_secs(5 * 60),
        }
    }
}

/// Webhooks and their deliveries (reference 4.8, 6.1).
#[derive(Debug, Clone, PartialEq)]
pub struct WebhooksConfig {
    /// Registrations per client id (409 `hook_quota_error` beyond; the reference's number is
    /// not shown).
    pub quota_per_client: usize,
    /// Test mode: `http://` URLs on a loopback host are accepted (otherwise only `https://`).
    pub allow_http_loopback: bool,
    /// Whether deliveries to non-loopback hosts are really sent. Off by default: the sandbox
    /// then records them as failed attempts without any network traffic.
    pub deliver_to_remote: bool,
    /// Delays before each attempt: immediately, 1 min, 10 min, 1 h (4 attempts).
    pub retry_schedule: Vec<Duration>,
    /// Lifetime of a registration (`expires`).
    pub registration_lifetime: Duration,
    /// Real-time timeout of one delivery attempt.
    pub delivery_timeout: Duration,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            quota_per_client: 25,
            allow_http_loopback: true,
            deliver_to_remote: false,
            retry_schedule: vec![
                Duration::ZERO,
                Duration::from_secs(60),
                Duration::from_secs(600),
                Duration::from_secs(3600),
            ],
            registration_lifetime: Duration::from_secs(365 * 86_400),
            delivery_timeout: Duration::from_secs(5),
        }
    }
}

/// The token endpoint `/puboauth/token` and its hourly limits (reference 8): fixed windows of
/// an hour on the sandbox clock, a request over them answered 409 with `Retry-After`. `None`
/// is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEndpointConfig {
    /// Requests per hour of a public application (`grant_type=authorization_code`), per
    /// client id (reference: 100).
    pub public_per_hour: Option<u32>,
    /// Requests per hour and user of an internal application (`grant_type=password`), per
    /// client id and username (reference: 10).
    pub internal_per_user_per_hour: Option<u32>,
}

impl Default for TokenEndpointConfig {
    fn default() -> Self {
        TokenEndpointConfig {
            public_per_hour: Some(100),
            internal_per_user_per_hour: Some(10),
        }
    }
}

/// The AI endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct AiConfig {
    /// Whether the agents feature is enabled for the domain (403 otherwise).
    pub agents_enabled: bool,
    /// Status polls an agent request answers before it finishes: the first `PENDING`, the
    /// others `RUNNING`; the next poll answers `COMPLETED`, or `FAILED` for a question
    /// containing `[fail]`.
    pub agent_polls: u32,
    /// Status polls an assistant execution answers `IN_PROGRESS` before it ends:
    /// `COMPLETED`, `FAILED` for a question containing `[fail]`, or
    /// `AWAITING_USER_CONFIRMATION` for one containing `[confirm]`.
    pub assistant_polls: u32,
    /// `fileLimit` of knowledge base pages.
    pub kb_file_limit: i64,
}

impl Default for AiConfig {
    fn default() -> Self {
        AiConfig {
            agents_enabled: true,
            agent_polls: 2,
            assistant_polls: 2,
            kb_file_limit: 500,
        }
    }
}

/// How the sandbox's HTTP server holds up against clients that misbehave: sizes, read
/// timeouts, the number of connections, the memory of the traffic log, and who may drive the
/// control plane. The defaults let every well-behaved client through unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The largest request body of an API operation; a longer one is answered 413 (never read
    /// as an empty body).
    pub max_body_bytes: usize,
    /// The largest request line and headers together; a longer head is answered 431.
    pub max_head_bytes: usize,
    /// How long a client may take to send a request's head, counted from the connection's
    /// first request or the end of the previous one; then the connection is closed (an idle
    /// keep-alive connection is closed after it too).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body once its head arrived; then the
    /// request is answered 408 and the connection closed.
    pub body_read_timeout: Duration,
    /// The slowest a request body may arrive, bytes a second on average, once its first
    /// five seconds have passed (as Kestrel's minimum request body data rate, 240 bytes a
    /// second): a slower one is answered 408 and its connection closed. 0: no minimum.
    pub min_body_bytes_per_second: u64,
    /// Connections served at once. A new connection past it closes the connection idle the
    /// longest (no request being served); when none is idle, the one receiving a request
    /// body the slowest (a body begun at least a second ago); when every one is busy with a
    /// request it has whole, the new one is refused with 503 and closed. Keep it below the
    /// process's open-file limit (1,024 by default).
    pub max_connections: usize,
    /// Bytes the traffic log keeps in all: the request and reply bodies, and the method,
    /// path, query and reply headers (a request head can be 64 KiB, and unknown paths are
    /// logged before any token is checked); the oldest exchanges go first beyond it.
    pub traffic_max_bytes: usize,
    /// Bytes of one request body the traffic log keeps (a longer body is kept as its length
    /// and this prefix).
    pub traffic_request_body_bytes: usize,
    /// A token the control plane requires (`Authorization: Bearer <token>` or
    /// `X-Sandbox-Control-Token: <token>`). Without one, only requests naming the sandbox's
    /// own loopback address in `Host` and no other origin in `Origin` drive it.
    pub control_token: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: 16 << 20,
            max_head_bytes: 64 << 10,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            min_body_bytes_per_second: 240,
            max_connections: 512,
            traffic_max_bytes: 64 << 20,
            traffic_request_body_bytes: 64 << 10,
            control_token: None,
        }
    }
}

/// Everything a sandbox is started with.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxConfig {
    /// The customer domain name reported by whoami and deliveries.
    pub domain: String,
    /// TCP port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// Seed of every id and synthetic value.
    pub seed: u64,
    /// The sandbox clock.
    pub clock: ClockConfig,
    /// Users and their tokens; the first admin is the one [`admin_token`] returns.
    ///
    /// [`admin_token`]: super::Sandbox::admin_token
    pub users: Vec<UserConfig>,
    /// Per-token limits.
    pub limits: LimitsConfig,
    /// Audit reporting.
    pub audit: AuditConfig,
    /// The Events API.
    pub events: EventsConfig,
    /// Webhooks.
    pub webhooks: WebhooksConfig,
    /// AI.
    pub ai: AiConfig,
    /// The token endpoint.
    pub token_endpoint: TokenEndpointConfig,
    /// Exchanges kept for [`traffic`](super::Sandbox::traffic) (oldest dropped first).
    pub traffic_capacity: usize,
    /// The HTTP server's limits and the control plane's access.
    pub server: ServerConfig,
    /// Starts with the sample history ([`crate::HISTORY_START_MS`] until the clock's
    /// start): the default users' logins, files, notes and permission changes, so reports,
    /// events and search have something to show. Off by default.
    pub sample_history: bool,
}

impl SandboxConfig {
    /// The default users: `admin` (admin), `power` (power user with reports), `sam`
    /// (standard) — all with the webhooks scope on client `sandbox-app` — and `nora`
    /// (standard, no scope, client `other-app`).
    pub fn default_users() -> Vec<UserConfig> {
        vec![
            UserConfig::new(1001, "admin", "Ada Admin", Role::Admin),
            UserConfig::new(
                1002,
                "power",
                "Pat Power",
                Role::PowerUser {
                    can_run_reports: true,
                },
            ),
            UserConfig::new(1003, "sam", "Sam Standard", Role::Standard),
            UserConfig::new(1004, "nora", "Nora Noscope", Role::Standard)
                .with_scopes(&[])
                .with_client_id("other-app"),
        ]
    }

    /// For tests: a manual clock, generous limits; the rest as [`Default`].
    pub fn testing() -> Self {
        SandboxConfig {
            clock: ClockConfig::manual(),
            limits: LimitsConfig::generous(),
            ..SandboxConfig::default()
        }
    }

    /// The same configuration with another clock.
    pub fn with_clock(mut self, clock: ClockConfig) -> Self {
        self.clock = clock;
        self
    }

    /// The same configuration with other limits.
    pub fn with_limits(mut self, limits: LimitsConfig) -> Self {
        self.limits = limits;
        self
    }

    /// The same configuration with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The same configuration, starting with the sample history (see
    /// [`SandboxConfig::sample_history`]).
    pub fn with_sample_history(mut self) -> Self {
        self.sample_history = true;
        self
    }

    /// The same configuration with a control token: the control plane then answers only
    /// requests carrying it (`Authorization: Bearer <token>` or `X-Sandbox-Control-Token`),
    /// whatever their `Host`, for a sandbox reached through a forwarded port or another name.
    pub fn with_control_token(mut self, token: impl Into<String>) -> Self {
        self.server.control_token = Some(token.into());
        self
    }

    /// The same configuration with other server limits.
    pub fn with_server(mut self, server: ServerConfig) -> Self {
        self.server = server;
        self
    }

    /// The same configuration with one more user.
    pub fn with_user(mut self, user: UserConfig) -> Self {
        self.users.push(user);
        self
    }
}

impl Default for SandboxConfig {
    /// The reference's limits, real time, the default users, port 0, seed 42.
    fn default() -> Self {
        SandboxConfig {
            domain: "sandbox.example.com".to_string(),
            port: 0,
            seed: 42,
            clock: ClockConfig::default(),
            users: Self::default_users(),
            limits: LimitsConfig::reference(),
            audit: AuditConfig::default(),
            events: EventsConfig::default(),
            webhooks: WebhooksConfig::default(),
            ai: AiConfig::default(),
            token_endpoint: TokenEndpointConfig::default(),
            traffic_capacity: 20_000,
            server: ServerConfig::default(),
            sample_history: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_scale_and_never_reach_zero() {
        let scaled = LimitsConfig::reference().scaled(0.01);
        assert_eq!(scaled.general_per_second, Some(1));
        assert_eq!(scaled.general_per_day, Some(10));
        assert_eq!(scaled.ai_per_second, None);
        assert_eq!(scaled.ai_per_minute, Some(1));
        assert_eq!(scaled.ai_per_day, Some(1));
        assert_eq!(
            LimitsConfig::reference().scaled(10.0).general_per_day,
            Some(10_000)
        );
    }

    #[test]
    fn limits_text_reads_back_what_it_writes() {
        for (text, limits) in [
            ("reference", LimitsConfig::reference()),
            ("off", LimitsConfig::off()),
            (
                "general=5/s",
                LimitsConfig {
                    general_per_second: Some(5),
                    ..LimitsConfig::off()
                },
            ),
            (
                "general=2/s,1000/d,ai=10/s,50/d",
                LimitsConfig {
                    general_per_second: Some(2),
                    general_per_day: Some(1000),
                    ai_per_second: Some(10),
                    ai_per_minute: None,
                    ai_per_day: Some(50),
                },
            ),
            (
                "general=2/s,1000/d,ai=5/m,100/d",
                LimitsConfig {
                    ai_per_minute: Some(5),
                    ..LimitsConfig::reference()
                },
            ),
        ] {
            assert_eq!(text.parse::<LimitsConfig>(), Ok(limits), "{text}");
            assert_eq!(limits.to_string(), text);
        }
    }

    #[test]
    fn bad_limits_text_is_named() {
        for (text, says) in [
            ("5/s", "needs a class first"),
            ("cpu=5/s", "unknown limit class `cpu`"),
            ("general=5", "general limit `5` is not N/s, N/m or N/d"),
            (
                "general=0/s",
                "general limit `0/s`: `0` is not a whole number from 1",
            ),
            (
                "ai=10/m,0/d",
                "ai limit `0/d`: `0` is not a whole number from 1",
            ),
            ("general=5/h", "general limit `5/h`: unknown window `h`"),
            ("ai=5/w", "ai limit `5/w`: unknown window `w`"),
            (
                "general=5/m",
                "general limit `5/m`: the general API has no minute window",
            ),
        ] {
            let error = text.parse::<LimitsConfig>().unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn tokens_are_derived_from_seed_and_username() {
        let user = UserConfig::new(1, "x", "X", Role::Standard);
        assert_eq!(user.token_for_seed(1), user.token_for_seed(1));
        assert_ne!(user.token_for_seed(1), user.token_for_seed(2));
        assert_eq!(user.clone().with_token("t").token_for_seed(1), "t");
    }

    #[test]
    fn only_admins_and_reporting_power_users_run_reports() {
        assert!(Role::Admin.can_run_reports());
        assert!(
            Role::PowerUser {
                can_run_reports: true
            }
            .can_run_reports()
        );
        assert!(
            !Role::PowerUser {
                can_run_reports: false
            }
            .can_run_reports()
        );
        assert!(!Role::Standard.can_run_reports());
    }
}
