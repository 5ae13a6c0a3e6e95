//! A stateful, in-process sandbox of the Content Platform Public API.
//!
//! [`Sandbox::start`] serves all 39 operations of `spec/openapi.yaml` under `/pubapi` on
//! `127.0.0.1` (axum), answering only with the statuses, bodies and headers the spec
//! documents: tokens and roles, impersonation, per-token limits, audit jobs, the events
//! stream, webhooks with real deliveries and retries, and AI answers from a small built-in
//! corpus. Tests drive it through its test API (not public routes): [`Sandbox::activity`]
//! makes things happen, [`Sandbox::advance`] moves the sandbox clock, [`Sandbox::inject`]
//! scripts faults, and [`Sandbox::counters`], [`Sandbox::traffic`] and
//! [`Sandbox::deliveries`] tell what happened.
//!
//! # Behaviours of the platform and how to reach them
//!
//! - **Agent requests** poll `PENDING`, then `RUNNING` ([`AiConfig::agent_polls`] polls in
//!   all), then `COMPLETED`; a question containing [`FAIL_MARKER`] (`[fail]`) ends `FAILED`
//!   with the failure text in `responseText`.
//! - **Assistant executions** poll `IN_PROGRESS` ([`AiConfig::assistant_polls`] polls), then
//!   `COMPLETED`; `[fail]` in the question ends `FAILED` (failure text in `responseText`),
//!   [`CONFIRM_MARKER`] (`[confirm]`) ends `AWAITING_USER_CONFIRMATION` with one pending
//!   action `{actionId, type, description}` (and stays there: the API has no confirmation).
//!   Markers work from any client, in any letter case.
//! - **The copilot** answers 200 with `Deprecation`, `Sunset` and `Link` while the sandbox
//!   clock is before its removal date ([`removal_ms`]`("askCopilot")`, 30 September 2026,
//!   from `x-pubapi-sunset` in the spec), and 410 Gone (`errorCode` [`REMOVED_CODE`],
//!   naming the successor `POST /v1/ai/assistant/ask`, same headers) from then on; any
//!   operation the spec gives a removal date is treated alike. [`ClockConfig::manual`] (as
//!   in [`SandboxConfig::testing`]) starts on 2025-03-03, before the sunset;
//!   `ClockConfig::Manual { start_ms }` starts anywhere and [`Sandbox::advance`] crosses
//!   it; a real-time clock starts at the wall-clock time, past it. The spec documents the
//!   410 on `askCopilot`. `pubapi-sdk-ext`
//!   clients refuse the copilot locally after the (wall-clock) sunset unless built with
//!   `call_removed_operations()` ([`Sandbox::client_builder_for`] gives a builder).
//! - **CSV audit reports** start with the platform's title row,
//!   `This report reflects activity up to 3/4/25 23:59:59` ([`CSV_TITLE_PREFIX`] and the
//!   last instant the report covers, UTC), then the header (logins: the reference's
//!   `Username,Event,IP Address,Access,Time`), then the rows.
//!
//! ```no_run
//! use pubapi_sandbox::{Sandbox, SandboxConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let sandbox = Sandbox::start(SandboxConfig::testing()).await;
//! let client = sandbox.client_for("admin");
//! let me = client.identity().whoami().await?;
//! assert_eq!(me.username, "admin");
//! sandbox.assert_conformant();
//! # Ok(()) }
//! ```

pub mod cli;
pub mod conformance;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod activity;
mod ai;
mod audit;
mod auth;
mod clock;
mod config;
mod control;
mod corpus;
mod dashboard;
mod dates;
mod delivery;
mod events;
mod facts;
mod faults;
mod fs;
mod history;
mod http;
mod ids;
mod limits;
mod raw;
mod receiver;
mod reports;
mod routes;
mod search;
mod serve;
mod token;
mod traffic;
mod webhooks;
mod world;

pub use activity::Activity;
pub use ai::{CONFIRM_MARKER, FAIL_MARKER};
pub use clock::{ClockConfig, ClockError, MANUAL_START_MS, MAX_MS, MAX_SCALE, SandboxClock};
pub use config::{
    AiConfig, AuditConfig, EventsConfig, LimitsConfig, Role, SandboxConfig, ServerConfig,
    TokenEndpointConfig, UserConfig, WEBHOOKS_SCOPE, WebhooksConfig,
};
pub use dates::{iso_millis, iso_seconds};
pub use delivery::DeliveryRecord;
pub use facts::lists as spec_value_lists;
pub use faults::{Fault, FaultAction};
pub use fs::{ActivityError, FsEntry};
pub use history::HISTORY_START_MS;
pub use http::REMOVED_CODE;
pub use limits::{Counters, Violation};
pub use raw::{RawClient, RawRequest, RawResponse};
pub use receiver::{Received, TestReceiver};
pub use reports::CSV_TITLE_PREFIX;
pub use routes::INACTIVE_CODE;
pub use token::TOKEN_PATH;
pub use traffic::Exchange;
pub use webhooks::Registration;
pub use world::ActionSource;

use crate::conformance::{ConformanceReport, Validator};
use pubapi_sdk_ext::{Budget, Limits};
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use world::World;

/// Reads a date (`2026-09-29`, midnight UTC) or a UTC time (`2026-09-29T12:00:00Z`) as
/// epoch milliseconds, the forms the sandbox's clock options take.
pub fn parse_time(text: &str) -> Option<i64> {
    dates::parse_request_date(text).map(|date| date.ms)
}

/// When the spec removes the operation `operation_id` (`x-pubapi-sunset`), epoch
/// milliseconds; from then on the sandbox answers it 410 Gone. `None` for an operation
/// without a removal date or an unknown id.
pub fn removal_ms(operation_id: &str) -> Option<i64> {
    pubapi_sdk::operations::ALL
        .iter()
        .find(|op| op.id == operation_id)
        .and_then(http::sunset_ms)
}

/// State shared by the server, the delivery engine and the test API.
pub(crate) struct Shared {
    pub(crate) config: SandboxConfig,
    pub(crate) clock: SandboxClock,
    pub(crate) base_url: String,
    /// The address served.
    pub(crate) addr: SocketAddr,
    world: Mutex<World>,
    /// Wakes the delivery engine (new attempts scheduled, attempts finished).
    pub(crate) wakeup: Notify,
}

impl Shared {
    pub(crate) fn world(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Moves the clock forward and wakes the deliveries.
    pub(crate) fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.wakeup.notify_one();
    }

    /// Moves the clock forward to `epoch_ms`, never back nor past [`MAX_MS`].
    pub(crate) fn advance_to(&self, epoch_ms: i64) -> Result<(), ClockError> {
        if epoch_ms > MAX_MS {
            return Err(ClockError::PastTheEnd { asked_ms: epoch_ms });
        }
        let now = self.now();
        let ahead =
            u64::try_from(epoch_ms.saturating_sub(now)).map_err(|_| ClockError::Backwards {
                now_ms: now,
                asked_ms: epoch_ms,
            })?;
        self.advance(Duration::from_millis(ahead));
        Ok(())
    }

    /// Checks every exchange served and every delivery body sent so far against the spec
    /// (see [`Sandbox::check_conformance`]).
    pub(crate) fn check_conformance(&self) -> ConformanceReport {
        let (traffic, deliveries) = {
            let world = self.world();
            let traffic: Vec<Exchange> = world.traffic.iter().cloned().collect();
            (traffic, world.deliveries.log().to_vec())
        };
        let validator = Validator::embedded();
        let mut report = validator.check_all(&traffic);
        for record in deliveries {
            for problem in validator.check_delivery(&record.body) {
                report.problems.push(format!(
                    "delivery {} attempt {} to {}: {problem}",
                    record.event_id, record.attempt, record.webhook_id
                ));
            }
        }
        report
    }

    /// Back to the start state (see [`Sandbox::reset`]).
    pub(crate) fn reset(&self) {
        self.world().reset(&self.config);
        self.wakeup.notify_one();
    }
}

/// A running sandbox; stops when dropped (or with [`Sandbox::shutdown`]).
pub struct Sandbox {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: Option<JoinHandle<()>>,
    engine: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("base_url", &self.shared.base_url)
            .field("domain", &self.shared.config.domain)
            .finish_non_exhaustive()
    }
}

fn build_client(builder: pubapi_sdk_ext::ClientBuilder) -> pubapi_sdk_ext::Client {
    match builder.build() {
        Ok(client) => client,
        Err(e) => panic!("cannot build a client for the sandbox: {e}"),
    }
}

/// The wall clock, epoch milliseconds: the sandbox's one reading of it, where a real-time
/// [`SandboxClock`] starts; every state machine reads the sandbox clock from then on.
#[allow(
    clippy::disallowed_methods,
    reason = "the sandbox's one reading of the wall clock, the start of its own clock"
)]
fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Sandbox {
    /// Starts a sandbox on `127.0.0.1` (the configured port, any free one for 0).
    ///
    /// # Panics
    /// When the port cannot be bound; use [`Sandbox::try_start`] to handle that.
    pub async fn start(config: SandboxConfig) -> Sandbox {
        match Sandbox::try_start(config).await {
            Ok(sandbox) => sandbox,
            Err(e) => panic!("the sandbox cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts a sandbox, or says why the port cannot be bound.
    ///
    /// # Errors
    /// The error of binding the listener.
    pub async fn try_start(config: SandboxConfig) -> std::io::Result<Sandbox> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port)).await?;
        let addr = listener.local_addr()?;
        let wall_now = wall_clock_ms();
        // The sample history is played on a frozen clock from its first day up to where the
        // configured clock starts; then the configured clock takes over from there.
        let (start_ms, scale) = match config.clock {
            ClockConfig::Real { scale } => (wall_now, scale),
            ClockConfig::Manual { start_ms } => (start_ms, 0.0),
        };
        let history = config.sample_history && start_ms > HISTORY_START_MS;
        let clock = if history {
            SandboxClock::new(
                ClockConfig::Manual {
                    start_ms: HISTORY_START_MS,
                },
                wall_now,
            )
        } else {
            SandboxClock::new(config.clock, wall_now)
        };
        // A token belongs to one domain: each sandbox's tokens are its own (from the seed and
        // its port), so clients of two sandboxes in one process never share a budget.
        let mut config = config;
        for user in &mut config.users {
            if user.token.is_none() {
                user.token = Some(user.token_for_seed(config.seed ^ u64::from(addr.port())));
            }
        }
        let shared = Arc::new(Shared {
            world: Mutex::new(World::new(&config)),
            base_url: format!("http://{addr}/pubapi"),
            addr,
            config,
            clock,
            wakeup: Notify::new(),
        });
        let app = axum::Router::new()
            .route("/_sandbox", axum::routing::any(control::handle))
            .route("/_sandbox/{*rest}", axum::routing::any(control::handle))
            .route(token::TOKEN_PATH, axum::routing::any(token::handle))
            .fallback(routes::handle)
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let server_config = shared.config.server.clone();
        let server = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            serve::serve(listener, app, server_config, shutdown).await;
        });
        let engine = tokio::spawn(delivery::run(shared.clone()));
        let sandbox = Sandbox {
            shared,
            addr,
            server: Some(server),
            engine,
            stop: Some(stop),
        };
        if history {
            history::play(&sandbox, start_ms).map_err(|e| {
                std::io::Error::other(format!("the sample history did not play: {e}"))
            })?;
            sandbox.clock().set_scale(scale);
        }
        Ok(sandbox)
    }

    /// The base URL, `http://127.0.0.1:<port>/pubapi`.
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The domain name whoami and deliveries report.
    pub fn domain(&self) -> &str {
        &self.shared.config.domain
    }

    /// The configuration the sandbox runs with.
    pub fn config(&self) -> &SandboxConfig {
        &self.shared.config
    }

    /// The token of the first admin user.
    ///
    /// # Panics
    /// When the configuration has no admin user.
    pub fn admin_token(&self) -> String {
        match self.shared.world().users.admin() {
            Some((_, token)) => token.to_string(),
            None => panic!("the sandbox configuration has no admin user"),
        }
    }

    /// The token of a configured user.
    pub fn token(&self, username: &str) -> Option<String> {
        self.shared
            .world()
            .users
            .token_of(username)
            .map(str::to_string)
    }

    /// Every configured user with its token.
    pub fn users(&self) -> Vec<(UserConfig, String)> {
        self.shared.world().users.all().to_vec()
    }

    /// A `pubapi-sdk-ext` client for a configured user, pacing itself by the sandbox's
    /// limits.
    ///
    /// # Panics
    /// When `username` is not a configured user.
    pub fn client_for(&self, username: &str) -> pubapi_sdk_ext::Client {
        build_client(self.client_builder_for(username))
    }

    /// A `pubapi-sdk-ext` client for any token (an unknown one gets 401s).
    ///
    /// # Panics
    /// When the token is not a valid header value.
    pub fn client_with_token(&self, token: &str) -> pubapi_sdk_ext::Client {
        build_client(self.client_builder_with_token(token))
    }

    /// The builder of [`client_for`](Self::client_for) (base URL, token, the sandbox's
    /// limits), for options such as `call_removed_operations()`.
    ///
    /// # Panics
    /// When `username` is not a configured user.
    pub fn client_builder_for(&self, username: &str) -> pubapi_sdk_ext::ClientBuilder {
        let token = match self.token(username) {
            Some(token) => token,
            None => panic!("no sandbox user {username:?}"),
        };
        self.client_builder_with_token(&token)
    }

    /// The builder of [`client_with_token`](Self::client_with_token).
    ///
    /// # Panics
    /// When the token is not a valid header value.
    pub fn client_builder_with_token(&self, token: &str) -> pubapi_sdk_ext::ClientBuilder {
        let limits = self.limits();
        let token = match pubapi_sdk_ext::SecretToken::try_from(token.to_string()) {
            Ok(token) => token,
            Err(e) => panic!("cannot build a client for the sandbox: {e}"),
        };
        pubapi_sdk_ext::Client::builder()
            .base_url(self.base_url())
            .token(token)
            .limits(Limits {
                general: Budget::new(limits.general_per_second, limits.general_per_day),
                ai: Budget::new(limits.ai_per_second, limits.ai_per_day)
                    .with_per_minute(self.client_ai_per_minute(limits)),
            })
    }

    /// The AI minute window a client paces by: the sandbox's, unless its clock runs faster
    /// than real time. There a sandbox minute passes in less than a real one, and a client
    /// keeping to 10 in a real minute would be far slower than the sandbox asks (a client
    /// going faster gets the sandbox's 429 with `Retry-After`).
    fn client_ai_per_minute(&self, limits: LimitsConfig) -> Option<u32> {
        if self.shared.clock.scale() > 1.0 {
            return None;
        }
        limits.ai_per_minute
    }

    /// A client for plain HTTP calls (exact statuses, headers and bodies).
    pub fn raw(&self) -> RawClient {
        RawClient::new(self.base_url())
    }

    /// The sandbox clock.
    pub fn clock(&self) -> &SandboxClock {
        &self.shared.clock
    }

    /// Sandbox time, epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.shared.now()
    }

    /// Moves the sandbox clock forward (due deliveries run, jobs finish, windows reset).
    pub fn advance(&self, by: Duration) {
        self.shared.advance(by);
    }

    /// Moves the sandbox clock forward to `epoch_ms`.
    ///
    /// # Errors
    /// [`ClockError::Backwards`] when `epoch_ms` is before the sandbox's now: the clock never
    /// runs back (jobs, windows and retries would lose their order);
    /// [`ClockError::PastTheEnd`] after [`MAX_MS`].
    pub fn advance_to(&self, epoch_ms: i64) -> Result<(), ClockError> {
        self.shared.advance_to(epoch_ms)
    }

    /// The limits in force.
    pub fn limits(&self) -> LimitsConfig {
        self.shared.world().limits_config
    }

    /// Changes the limits from the next request on (the windows' counts so far stay).
    /// Clients built afterwards by [`client_for`](Self::client_for) pace by the new ones.
    pub fn set_limits(&self, limits: LimitsConfig) {
        self.shared.world().limits_config = limits;
    }

    /// Deactivates the token of `username`: from the next request on it is answered 403 with
    /// `X-Gateway-Error-Code: ERR_403_DEVELOPER_INACTIVE`, as the platform answers a token that
    /// is no longer valid (each such call counts a [`Violation::InactiveToken`]). A reset
    /// activates every token again.
    ///
    /// # Panics
    /// When `username` is not a configured user.
    pub fn deactivate_token(&self, username: &str) {
        self.set_token_active(username, false);
    }

    /// Activates the token of `username` again (see [`deactivate_token`](Self::deactivate_token)).
    ///
    /// # Panics
    /// When `username` is not a configured user.
    pub fn activate_token(&self, username: &str) {
        self.set_token_active(username, true);
    }

    fn set_token_active(&self, username: &str, active: bool) {
        if !self.shared.world().users.set_active(username, active) {
            panic!("no sandbox user {username:?}");
        }
    }

    /// Back to the state the sandbox started in: files, events, webhooks, audit jobs, AI
    /// requests, traffic, counters, faults, limit windows and deactivations are gone, the limits are the
    /// configuration's again, and delivery attempts in flight are dropped. Users, tokens,
    /// the clock and the port stay.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Activity as the first admin.
    pub fn activity(&self) -> Activity {
        let admin = self
            .shared
            .world()
            .users
            .admin()
            .map(|(u, _)| u.username.clone())
            .unwrap_or_default();
        Activity::new(self.shared.clone(), &admin)
    }

    /// Activity as `username` (an unknown user makes every call fail with
    /// [`ActivityError::UnknownUser`]).
    pub fn activity_as(&self, username: &str) -> Activity {
        Activity::new(self.shared.clone(), username)
    }

    /// Adds a fault rule after the existing ones.
    pub fn inject(&self, fault: Fault) {
        self.shared.world().faults.push(fault);
    }

    /// Fault rules not yet spent.
    pub fn faults_left(&self) -> usize {
        self.shared.world().faults.len()
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.shared.world().faults.clear();
    }

    /// Counters of requests, replies, violations, faults and deliveries.
    pub fn counters(&self) -> Counters {
        self.shared.world().counters.clone()
    }

    /// The exchanges served (up to `traffic_capacity`, oldest first).
    pub fn traffic(&self) -> Vec<Exchange> {
        self.shared.world().traffic.iter().cloned().collect()
    }

    /// The exchanges kept whose [`Exchange::seq`] is above `seq`, oldest first (what a log
    /// that follows the traffic has not seen yet).
    pub fn traffic_after(&self, seq: u64) -> Vec<Exchange> {
        self.shared
            .world()
            .traffic
            .iter()
            .filter(|e| e.seq > seq)
            .cloned()
            .collect()
    }

    /// Every delivery attempt made, in order.
    pub fn deliveries(&self) -> Vec<DeliveryRecord> {
        self.shared.world().deliveries.log().to_vec()
    }

    /// Delivery attempts scheduled but not yet due.
    pub fn pending_deliveries(&self) -> usize {
        self.shared.world().deliveries.pending().len()
    }

    /// Every webhook registration.
    pub fn webhooks(&self) -> Vec<Registration> {
        self.shared.world().webhooks.all().to_vec()
    }

    /// The file or folder at `path`.
    pub fn entry(&self, path: &str) -> Option<FsEntry> {
        self.shared.world().fs.get(path).cloned()
    }

    /// Every file and folder.
    pub fn entries(&self) -> Vec<FsEntry> {
        self.shared.world().fs.entries().cloned().collect()
    }

    /// Events in the stream.
    pub fn stored_events(&self) -> usize {
        let now = self.shared.now();
        let mut world = self.shared.world();
        world.events.prune(now, &self.shared.config.events);
        world.events.len()
    }

    /// Waits (real time, at most 10 s) until no delivery attempt is running or due.
    pub async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let idle = {
                let now = self.shared.now();
                self.shared.world().deliveries.is_idle(now)
            };
            if idle || tokio::time::Instant::now() >= deadline {
                return;
            }
            self.shared.wakeup.notify_one();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Checks every exchange served and every delivery body sent so far against
    /// `spec/openapi.yaml`.
    pub fn check_conformance(&self) -> ConformanceReport {
        self.shared.check_conformance()
    }

    /// Panics with every problem when an exchange served so far does not conform to the
    /// spec (replies of injected faults are not checked).
    pub fn assert_conformant(&self) {
        let report = self.check_conformance();
        assert!(
            report.problems.is_empty(),
            "{} problems in {} exchanges and the deliveries (spec/openapi.yaml):\n{}",
            report.problems.len(),
            report.checked,
            report.problems.join("\n")
        );
    }

    /// Stops serving (in-flight requests finish) and stops the deliveries.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.engine.abort();
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.engine.abort();
        if let Some(server) = &self.server {
            server.abort();
        }
    }
}
