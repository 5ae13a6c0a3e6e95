//! The connection to Redis that the fleet's quota windows ([`super::redis`]) and stream
//! checkpoints ([`super::redis_streams`]) both open: which Redis the URL names (one server,
//! Sentinel or Cluster, each with or without TLS), its timeouts, its key prefix and its errors.
//! The forms are documented for users in [`super::redis`]'s module doc.
//!
//! One [`Connection`] type serves every form, so the scripts and commands run on it unchanged
//! (it is a [`redis::aio::ConnectionLike`]):
//! - one server: a [`ConnectionManager`], which reconnects to the same address by itself;
//! - Sentinel: a connection to the primary the sentinels name, followed to the new one when
//!   a sentinel announces a switch (`+switch-master`, watched by a task of the link's own), and
//!   found again through them when the primary cannot be reached or answers `READONLY` (it was
//!   demoted by a failover), at most once per failed command;
//! - Cluster: redis-rs's cluster connection, which follows `MOVED`/`ASK` and failovers itself.
//!
//! Every form keeps the same timeouts: [`CONNECTION_TIMEOUT`] to connect to a server, and
//! [`RESPONSE_TIMEOUT`] for an answer.

use super::FleetError;
use super::redis_url::{Nodes, Target};
use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{
    Cmd, ConnectionAddr, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult,
    ServerErrorKind, TlsCertificates, TlsMode, Value,
};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "pubapi:";

/// How long a command may take before the client stops waiting (and paces on its share).
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long connecting to one server may take.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// How long asking the sentinels which server is the primary may take: connecting to a
/// sentinel and its answer.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to the fleet's Redis, whichever way it is deployed; cheap to clone (clones
/// share the connection).
#[derive(Clone)]
pub(crate) enum Connection {
    /// One server (`redis://`, `rediss://`).
    Single(ConnectionManager),
    /// The primary of a Sentinel deployment (`redis+sentinel://`, `rediss+sentinel://`).
    Sentinel(Arc<SentinelLink>),
    /// A Redis Cluster (`redis+cluster://`, `rediss+cluster://`).
    Cluster(ClusterConnection),
}

/// Connects to the Redis that `url` names (see [`super::redis`]'s module doc for the forms),
/// with the timeouts above.
///
/// # Errors
/// [`FleetError`] of kind [`Invalid`](super::FleetErrorKind::Invalid) naming the problem when
/// the URL is malformed or its `ca` file cannot be read;
/// [`Unavailable`](super::FleetErrorKind::Unavailable) when the servers cannot be reached now.
pub(crate) async fn connect(url: &str) -> Result<Connection, FleetError> {
    match Target::parse(url)? {
        Target::Single { url, ca } => {
            let client = match ca {
                None => redis::Client::open(url.as_str()),
                Some(path) => redis::Client::build_with_tls(url.as_str(), certificates(&path)?),
            }
            .map_err(invalid)?;
            let config = redis::aio::ConnectionManagerConfig::new()
                .set_connection_timeout(Some(CONNECTION_TIMEOUT))
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_number_of_retries(1);
            let manager = ConnectionManager::new_with_config(client, config)
                .await
                .map_err(redis_error)?;
            Ok(Connection::Single(manager))
        }
        Target::Sentinel(nodes) => {
            let link = Arc::new(SentinelLink::connect(&nodes).await?);
            link.watch(&nodes)?;
            Ok(Connection::Sentinel(link))
        }
        Target::Cluster(nodes) => {
            let scheme = if nodes.tls { "rediss" } else { "redis" };
            let addresses: Vec<String> = nodes
                .hosts
                .iter()
                .map(|host| format!("{scheme}://{}", host.address()))
                .collect();
            let mut builder = redis::cluster::ClusterClient::builder(addresses)
                .connection_timeout(CONNECTION_TIMEOUT)
                .response_timeout(RESPONSE_TIMEOUT);
            if let Some(username) = &nodes.username {
                builder = builder.username(username);
            }
            if let Some(password) = &nodes.password {
                builder = builder.password(password);
            }
            if let Some(path) = &nodes.ca {
                builder = builder.certs(certificates(path)?);
            }
            let client = builder.build().map_err(invalid)?;
            let connection = client.get_async_connection().await.map_err(redis_error)?;
            Ok(Connection::Cluster(connection))
        }
    }
}

/// A Redis failure as the fleet reports it.
pub(super) fn redis_error(e: RedisError) -> FleetError {
    FleetError::new(format!("redis: {e}"))
}

/// A configuration redis-rs refused (a malformed URL, certificates it cannot read).
fn invalid(e: RedisError) -> FleetError {
    FleetError::invalid(format!("redis: {e}"))
}

/// The root certificates of a `ca` parameter: the PEM file at `path`, trusted instead of the
/// system's roots.
fn certificates(path: &str) -> Result<TlsCertificates, FleetError> {
    let pem = std::fs::read(path).map_err(|e| {
        FleetError::invalid(format!("redis: cannot read the ca file {path:?}: {e}"))
    })?;
    Ok(TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    })
}

impl std::fmt::Debug for Connection {
    // Which form only: a client's debug output includes the password, if any.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connection::Single(_) => "Connection::Single",
            Connection::Sentinel(_) => "Connection::Sentinel",
            Connection::Cluster(_) => "Connection::Cluster",
        })
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(manager) => manager.req_packed_command(cmd),
            Connection::Sentinel(link) => Box::pin(link.command(cmd)),
            Connection::Cluster(cluster) => cluster.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(manager) => manager.req_packed_commands(pipeline, offset, count),
            Connection::Sentinel(link) => Box::pin(link.commands(pipeline, offset, count)),
            Connection::Cluster(cluster) => cluster.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(manager) => manager.get_db(),
            Connection::Sentinel(link) => link.db,
            Connection::Cluster(cluster) => cluster.get_db(),
        }
    }
}

/// The primary of a Sentinel deployment, and the sentinels that name it.
pub(crate) struct SentinelLink {
    /// Asks the sentinels; locked while one caller finds the primary again, so callers that
    /// failed together find it once.
    sentinels: tokio::sync::Mutex<SentinelClient>,
    /// The primary as last found.
    primary: Mutex<Primary>,
    /// The database the URL names.
    db: i64,
    /// The task that follows the sentinels' announcements of a new primary
    /// ([`watch_switches`]), stopped with the link.
    watcher: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for SentinelLink {
    fn drop(&mut self) {
        if let Some(watcher) = self
            .watcher
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            watcher.abort();
        }
    }
}

/// A connection to the primary as the sentinels named it.
#[derive(Clone)]
struct Primary {
    /// How many times the primary was found before this one.
    found: u64,
    /// Its address, to tell a new primary from the same one found again.
    address: String,
    connection: MultiplexedConnection,
}

/// What a failed answer of the primary says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lost {
    /// The command did not run there (the server answered `READONLY`: it was demoted), or the
    /// connection failed: find the primary again, and send the command again if it is the same
    /// server.
    Retry,
    /// No answer in time: the command may have run; find the primary again, but do not send
    /// it twice (its caller's time is up).
    Rediscover,
}

impl SentinelLink {
    async fn connect(nodes: &Nodes) -> Result<SentinelLink, FleetError> {
        let addresses = nodes
            .hosts
            .iter()
            .map(|host| sentinel_address(host, nodes.tls));
        let primary_name = nodes.primary.as_deref().unwrap_or_default();
        let mut builder =
            SentinelClientBuilder::new(addresses, primary_name, SentinelServerType::Master)
                .map_err(invalid)?
                .set_client_to_redis_db(nodes.db);
        if let Some(username) = &nodes.username {
            builder = builder.set_client_to_redis_username(username);
        }
        if let Some(password) = &nodes.password {
            builder = builder.set_client_to_redis_password(password);
        }
        if let Some(username) = &nodes.sentinel_username {
            builder = builder.set_client_to_sentinel_username(username);
        }
        if let Some(password) = &nodes.sentinel_password {
            builder = builder.set_client_to_sentinel_password(password);
        }
        if nodes.tls {
            builder = builder
                .set_client_to_redis_tls_mode(TlsMode::Secure)
                .set_client_to_sentinel_tls_mode(TlsMode::Secure);
            if let Some(path) = &nodes.ca {
                builder = builder
                    .set_client_to_redis_certificates(certificates(path)?)
                    .set_client_to_sentinel_certificates(certificates(path)?);
            }
        }
        let mut sentinels = builder.build().map_err(invalid)?;
        let primary = find_primary(&mut sentinels, 0).await.map_err(redis_error)?;
        Ok(SentinelLink {
            sentinels: tokio::sync::Mutex::new(sentinels),
            primary: Mutex::new(primary),
            db: nodes.db,
            watcher: Mutex::new(None),
        })
    }

    /// Starts following the sentinels' announcements of a new primary (see
    /// [`watch_switches`]), for as long as the link lives.
    fn watch(self: &Arc<Self>, nodes: &Nodes) -> Result<(), FleetError> {
        let sentinels = sentinel_clients(nodes)?;
        let name = nodes.primary.clone().unwrap_or_default();
        let task = tokio::spawn(watch_switches(Arc::downgrade(self), sentinels, name));
        *self.watcher.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.abort_handle());
        Ok(())
    }

    /// Asks the sentinels for the primary and moves to it when it is another server than the
    /// one in use: after a sentinel announced a switch, or when the link cannot tell whether
    /// it missed one (it was not listening).
    async fn follow_switch(&self) {
        let mut sentinels = self.sentinels.lock().await;
        let current = self.primary();
        match find_primary(&mut sentinels, current.found + 1).await {
            Ok(found) if found.address != current.address => {
                tracing::info!(from = %current.address, to = %found.address, "the sentinels switched the fleet store's primary: moved to the new one");
                *self.primary.lock().unwrap_or_else(PoisonError::into_inner) = found;
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "the sentinels could not be asked for the primary after a switch; the next failed command asks again");
            }
        }
    }

    /// The primary as last found.
    fn primary(&self) -> Primary {
        self.primary
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends `cmd` to the primary; when the answer says the primary was lost, finds it again
    /// once, and sends the command again only when it is the same server (see
    /// [`Self::after_loss`]).
    async fn command(&self, cmd: &Cmd) -> RedisResult<Value> {
        let mut primary = self.primary();
        let answer = primary.connection.req_packed_command(cmd).await;
        let lost = match &answer {
            Ok(Value::ServerError(e)) if e.kind() == Some(ServerErrorKind::ReadOnly) => {
                Some(Lost::Retry)
            }
            Ok(_) => None,
            Err(e) => lost(e),
        };
        match self.after_loss(&primary, lost).await {
            Some(mut same) => same.connection.req_packed_command(cmd).await,
            None => answer,
        }
    }

    /// Sends a pipeline to the primary, as [`Self::command`] sends one command.
    async fn commands(
        &self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let mut primary = self.primary();
        let answer = primary
            .connection
            .req_packed_commands(pipeline, offset, count)
            .await;
        let lost = match &answer {
            Ok(values) if values.iter().any(|v| {
                matches!(v, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::ReadOnly))
            }) =>
            {
                Some(Lost::Retry)
            }
            Ok(_) => None,
            Err(e) => lost(e),
        };
        match self.after_loss(&primary, lost).await {
            Some(mut same) => {
                same.connection
                    .req_packed_commands(pipeline, offset, count)
                    .await
            }
            None => answer,
        }
    }

    /// After an answer of `used` that says it was `lost`: finds the primary again, and
    /// returns it when the command should be sent again there: it did not run, and the
    /// primary is the same server (reconnected).
    ///
    /// A new primary gets nothing sent again: the caller gets the failure. Replication is
    /// asynchronous, so the new primary may lack the last writes the old one acknowledged
    /// (a requested failover leaves the old primary taking writes until the sentinels
    /// reconfigure it); a failure is what makes the fleet record them again (see
    /// [`crate::fleet`], "Back").
    async fn after_loss(&self, used: &Primary, lost: Option<Lost>) -> Option<Primary> {
        let lost = lost?;
        let found = self.find_again(used.found).await.ok()?;
        (lost == Lost::Retry && found.address == used.address).then_some(found)
    }

    /// Asks the sentinels for the primary again, unless another caller did since the
    /// primary `found` was found (then that is the answer).
    async fn find_again(&self, found: u64) -> RedisResult<Primary> {
        let mut sentinels = self.sentinels.lock().await;
        let current = self.primary();
        if current.found != found {
            return Ok(current);
        }
        let primary = find_primary(&mut sentinels, found + 1).await?;
        *self.primary.lock().unwrap_or_else(PoisonError::into_inner) = primary.clone();
        Ok(primary)
    }
}

/// How long the watcher waits before it asks every sentinel again, when none would take its
/// subscription.
const WATCH_RETRY: Duration = Duration::from_secs(1);

/// The sentinels' channel that announces a new primary: `<name> <old ip> <old port> <new ip>
/// <new port>`.
const SWITCH_CHANNEL: &str = "+switch-master";

/// Follows the sentinels' announcements of a new primary for `name`, one sentinel at a time
/// (the next when one's connection ends), while `link` lives.
///
/// A requested failover (`SENTINEL FAILOVER`) leaves the old primary taking writes until the
/// sentinels reconfigure it, seconds after they name the new one: a process that waited for
/// an error would stay on the old primary, and processes started meanwhile would use the new
/// one, two stores each granting its own windows and leases. With the announcement, every
/// process moves within a command of the switch; the new server's run id then tells the
/// budget and the leases that their records may lack the last writes (see `fleet::redis`
/// and `fleet::redis_streams`).
async fn watch_switches(
    link: std::sync::Weak<SentinelLink>,
    sentinels: Vec<redis::Client>,
    name: String,
) {
    use futures_util::StreamExt;
    loop {
        for sentinel in &sentinels {
            let subscribed = tokio::time::timeout(DISCOVERY_TIMEOUT, async {
                let mut pubsub = sentinel.get_async_pubsub().await?;
                pubsub.subscribe(SWITCH_CHANNEL).await?;
                RedisResult::Ok(pubsub)
            })
            .await;
            let Ok(Ok(pubsub)) = subscribed else {
                continue;
            };
            // A switch announced while nobody listened is not announced again: ask once.
            match link.upgrade() {
                Some(link) => link.follow_switch().await,
                None => return,
            }
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let Ok(payload) = message.get_payload::<String>() else {
                    continue;
                };
                if payload.split(' ').next() != Some(name.as_str()) {
                    continue;
                }
                match link.upgrade() {
                    Some(link) => link.follow_switch().await,
                    None => return,
                }
            }
        }
        tokio::time::sleep(WATCH_RETRY).await;
    }
}

/// The address of the sentinel `host`, over TLS when `tls`.
fn sentinel_address(host: &super::redis_url::Host, tls: bool) -> ConnectionAddr {
    if tls {
        ConnectionAddr::TcpTls {
            host: host.name.clone(),
            port: host.port,
            insecure: false,
            tls_params: None,
        }
    } else {
        ConnectionAddr::Tcp(host.name.clone(), host.port)
    }
}

/// A client of each sentinel of `nodes`, for the watcher's subscriptions, with the
/// sentinels' credentials and TLS.
fn sentinel_clients(nodes: &Nodes) -> Result<Vec<redis::Client>, FleetError> {
    use redis::IntoConnectionInfo;
    nodes
        .hosts
        .iter()
        .map(|host| {
            let address = sentinel_address(host, nodes.tls);
            let mut settings = redis::RedisConnectionInfo::default();
            if let Some(username) = &nodes.sentinel_username {
                settings = settings.set_username(username);
            }
            if let Some(password) = &nodes.sentinel_password {
                settings = settings.set_password(password);
            }
            let info = address
                .into_connection_info()
                .map_err(invalid)?
                .set_redis_settings(settings);
            match (&nodes.ca, nodes.tls) {
                (Some(path), true) => redis::Client::build_with_tls(info, certificates(path)?),
                _ => redis::Client::open(info),
            }
            .map_err(invalid)
        })
        .collect()
}

/// Whether an error says the connection no longer reaches the primary.
fn lost(e: &RedisError) -> Option<Lost> {
    if e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly) {
        Some(Lost::Retry)
    } else if e.is_timeout() {
        Some(Lost::Rediscover)
    } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        Some(Lost::Retry)
    } else {
        None
    }
}

/// Asks the sentinels which server is the primary (they check that it says so itself) and
/// connects to it.
async fn find_primary(sentinels: &mut SentinelClient, found: u64) -> RedisResult<Primary> {
    let client = tokio::time::timeout(DISCOVERY_TIMEOUT, sentinels.async_get_client())
        .await
        .map_err(|_| {
            RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the sentinels did not name a primary in time",
            ))
        })??;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECTION_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    let connection = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    Ok(Primary {
        found,
        address: client.get_connection_info().addr().to_string(),
        connection,
    })
}
