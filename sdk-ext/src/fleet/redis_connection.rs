//! The connection to Redis that the fleet's quota windows ([`super::redis`]) and stream
//! checkpoints ([`super::redis_streams`]) both open: which Redis the URL names (one server,
//! Sentinel or Cluster, each with or without TLS), its timeouts, its key prefix and its errors.
//! The forms are documented for users in [`super::redis`]'s module doc.
//!
//! One [`Connection`] type serves every form, so the scripts and commands run on it unchanged
//! (it is a [`redis::aio::ConnectionLike`]):
//! - one server: a [`ConnectionManager`], which reconnects to the same address by itself;
//! - Sentinel: a connection to the primary the sentinels name, found again through them when
//!   the primary cannot be reached or answers `READONLY` (it was demoted by a failover), at
//!   most once per failed command;
//! - Cluster: redis-rs's cluster connection, which follows `MOVED`/`ASK` and failovers itself.
//!
//! Every form keeps the same timeouts: [`CONNECTION_TIMEOUT`] to connect to a server, and
//! [`RESPONSE_TIMEOUT`] for an answer.

use super::FleetError;
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

/// The port of a Redis server when the URL names none.
const REDIS_PORT: u16 = 6379;

/// The port of a sentinel when the URL names none.
const SENTINEL_PORT: u16 = 26379;

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
            let link = SentinelLink::connect(&nodes).await?;
            Ok(Connection::Sentinel(Arc::new(link)))
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
        let addresses = nodes.hosts.iter().map(|host| {
            if nodes.tls {
                ConnectionAddr::TcpTls {
                    host: host.name.clone(),
                    port: host.port,
                    insecure: false,
                    tls_params: None,
                }
            } else {
                ConnectionAddr::Tcp(host.name.clone(), host.port)
            }
        });
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
        })
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

/// Which Redis a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// One server: the URL redis-rs reads (without the `ca` parameter), and the `ca` file.
    Single { url: String, ca: Option<String> },
    /// A Sentinel deployment: the sentinels, the primary's name.
    Sentinel(Nodes),
    /// A Redis Cluster: some of its nodes.
    Cluster(Nodes),
}

/// The servers of a Sentinel or Cluster URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Nodes {
    tls: bool,
    username: Option<String>,
    password: Option<String>,
    hosts: Vec<Host>,
    /// Sentinel: the primary's name.
    primary: Option<String>,
    db: i64,
    ca: Option<String>,
}

/// One `host:port` of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Host {
    name: String,
    port: u16,
}

impl Host {
    /// `host:port`, an IPv6 address in brackets.
    fn address(&self) -> String {
        if self.name.contains(':') {
            format!("[{}]:{}", self.name, self.port)
        } else {
            format!("{}:{}", self.name, self.port)
        }
    }
}

/// A malformed URL: `problem` says what is wrong (the URL is not repeated: it may hold a
/// password).
fn malformed(problem: impl std::fmt::Display) -> FleetError {
    FleetError::invalid(format!("redis url: {problem}"))
}

/// The user name and password of a URL's `user:password` part, decoded; an empty one is
/// none.
fn user_and_password(
    credentials: Option<&str>,
) -> Result<(Option<String>, Option<String>), FleetError> {
    let Some(credentials) = credentials else {
        return Ok((None, None));
    };
    let (user, password) = match credentials.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (credentials, None),
    };
    let user = Some(decode(user, "user name")?).filter(|u| !u.is_empty());
    let password = password
        .map(|p| decode(p, "password"))
        .transpose()?
        .filter(|p| !p.is_empty());
    Ok((user, password))
}

impl Target {
    fn parse(url: &str) -> Result<Target, FleetError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(malformed(
                "no scheme (`redis://`, `redis+sentinel://`, ...)",
            ));
        };
        let (tls, form) = match scheme {
            "redis+sentinel" => (false, Form::Sentinel),
            "rediss+sentinel" => (true, Form::Sentinel),
            "redis+cluster" => (false, Form::Cluster),
            "rediss+cluster" => (true, Form::Cluster),
            "redis" | "rediss" | "redis+unix" | "unix" | "valkey" | "valkeys" => {
                return Target::single(url, scheme == "rediss" || scheme == "valkeys");
            }
            other => {
                return Err(malformed(format_args!(
                    "unknown scheme {other:?}: one of redis, rediss, redis+sentinel, \
                     rediss+sentinel, redis+cluster, rediss+cluster"
                )));
            }
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        if rest.contains('#') || query.is_some_and(|q| q.contains('#')) {
            return Err(malformed("a fragment (`#...`) is not supported"));
        }
        let ca = ca_parameter(query, tls)?;
        let (authority, path) = match rest.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (rest, ""),
        };
        let (credentials, hosts) = match authority.rsplit_once('@') {
            Some((credentials, hosts)) => (Some(credentials), hosts),
            None => (None, authority),
        };
        let (username, password) = user_and_password(credentials)?;
        let default_port = match form {
            Form::Sentinel => SENTINEL_PORT,
            Form::Cluster => REDIS_PORT,
        };
        let hosts = hosts
            .split(',')
            .map(|host| parse_host(host, default_port))
            .collect::<Result<Vec<_>, _>>()?;
        let nodes = Nodes {
            tls,
            username,
            password,
            hosts,
            primary: None,
            db: 0,
            ca,
        };
        Target::of_path(form, nodes, path)
    }

    /// The Sentinel or Cluster target of `nodes`, with what the URL's `path` says.
    fn of_path(form: Form, mut nodes: Nodes, path: &str) -> Result<Target, FleetError> {
        let mut segments = path.split('/');
        let first = segments.next().filter(|s| !s.is_empty());
        let second = segments.next().filter(|s| !s.is_empty());
        if segments.any(|s| !s.is_empty()) {
            return Err(malformed("too many path segments"));
        }
        match form {
            Form::Sentinel => {
                let Some(primary) = first else {
                    return Err(malformed(
                        "a Sentinel URL names its primary: \
                         redis+sentinel://host:port,host:port/<primary-name>[/db]",
                    ));
                };
                nodes.primary = Some(decode(primary, "primary name")?);
                if let Some(db) = second {
                    nodes.db = db
                        .parse::<i64>()
                        .ok()
                        .filter(|db| *db >= 0)
                        .ok_or_else(|| {
                            malformed(format_args!("database {db:?} is not a number"))
                        })?;
                }
                Ok(Target::Sentinel(nodes))
            }
            Form::Cluster => {
                if first.is_some() || second.is_some() {
                    return Err(malformed(
                        "a Cluster URL has no path (a cluster has only database 0): \
                         redis+cluster://host:port,host:port",
                    ));
                }
                Ok(Target::Cluster(nodes))
            }
        }
    }

    /// One server: redis-rs reads the URL, less a `ca` parameter.
    fn single(url: &str, tls: bool) -> Result<Target, FleetError> {
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, query),
            None => {
                return Ok(Target::Single {
                    url: url.to_string(),
                    ca: None,
                });
            }
        };
        let (query, fragment) = match query.split_once('#') {
            Some((query, fragment)) => (query, Some(fragment)),
            None => (query, None),
        };
        let mut ca = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("ca", path)) => ca = Some(pair_value(path, tls)?),
                _ => kept.push(pair),
            }
        }
        let mut url = base.to_string();
        if !kept.is_empty() {
            url.push('?');
            url.push_str(&kept.join("&"));
        }
        if let Some(fragment) = fragment {
            url.push('#');
            url.push_str(fragment);
        }
        Ok(Target::Single { url, ca })
    }
}

/// The two multi-server forms.
#[derive(Debug, Clone, Copy)]
enum Form {
    Sentinel,
    Cluster,
}

/// The `ca` parameter of a Sentinel or Cluster URL's query, the only one there is.
fn ca_parameter(query: Option<&str>, tls: bool) -> Result<Option<String>, FleetError> {
    let mut ca = None;
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        match pair.split_once('=') {
            Some(("ca", path)) => ca = Some(pair_value(path, tls)?),
            _ => {
                let name = pair.split_once('=').map_or(pair, |(name, _)| name);
                return Err(malformed(format_args!(
                    "unknown parameter {name:?} (the only one is `ca`, with rediss+...)"
                )));
            }
        }
    }
    Ok(ca)
}

/// The path of a `ca` parameter, which only a TLS URL may have.
fn pair_value(path: &str, tls: bool) -> Result<String, FleetError> {
    if !tls {
        return Err(malformed(
            "a `ca` file is for TLS: use rediss://, rediss+sentinel:// or rediss+cluster://",
        ));
    }
    let path = decode(path, "ca path")?;
    if path.is_empty() {
        return Err(malformed("the `ca` parameter names no file"));
    }
    Ok(path)
}

fn decode(text: &str, what: &str) -> Result<String, FleetError> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| malformed(format_args!("the {what} is not UTF-8 once percent-decoded")))
}

/// `host[:port]` or `[ipv6][:port]`.
fn parse_host(text: &str, default_port: u16) -> Result<Host, FleetError> {
    let (name, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let Some((name, after)) = bracketed.split_once(']') else {
            return Err(malformed(format_args!("unclosed `[` in host {text:?}")));
        };
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return Err(malformed(format_args!("host {text:?} is not host:port"))),
            },
        };
        (name, port)
    } else {
        match text.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        }
    };
    if name.is_empty() {
        return Err(malformed(
            "a host is empty (hosts are host:port, separated by commas)",
        ));
    }
    if name.contains(|c: char| c.is_whitespace() || "/?#@,[]".contains(c)) {
        return Err(malformed(format_args!("host {name:?} is not a host name")));
    }
    let port = match port {
        None => default_port,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| {
                malformed(format_args!("port {port:?} of host {name:?} is not a port"))
            })?,
    };
    Ok(Host {
        name: name.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::{Host, Nodes, Target};
    use crate::fleet::FleetErrorKind;

    fn host(name: &str, port: u16) -> Host {
        Host {
            name: name.into(),
            port,
        }
    }

    #[test]
    fn a_sentinel_url_names_the_sentinels_the_primary_and_the_database() {
        let target =
            Target::parse("rediss+sentinel://app:p%40ss@s1:26380,[::1],s3/main/2?ca=/etc/ca.pem")
                .unwrap();
        assert_eq!(
            target,
            Target::Sentinel(Nodes {
                tls: true,
                username: Some("app".into()),
                password: Some("p@ss".into()),
                hosts: vec![host("s1", 26380), host("::1", 26379), host("s3", 26379)],
                primary: Some("main".into()),
                db: 2,
                ca: Some("/etc/ca.pem".into()),
            })
        );
    }

    #[test]
    fn a_cluster_url_names_some_of_its_nodes() {
        let target = Target::parse("redis+cluster://:secret@10.0.0.1:7000,10.0.0.2").unwrap();
        assert_eq!(
            target,
            Target::Cluster(Nodes {
                tls: false,
                username: None,
                password: Some("secret".into()),
                hosts: vec![host("10.0.0.1", 7000), host("10.0.0.2", 6379)],
                primary: None,
                db: 0,
                ca: None,
            })
        );
    }

    #[test]
    fn a_single_server_url_goes_to_redis_rs_without_its_ca_parameter() {
        assert_eq!(
            Target::parse("redis://127.0.0.1:6379/3").unwrap(),
            Target::Single {
                url: "redis://127.0.0.1:6379/3".into(),
                ca: None
            }
        );
        assert_eq!(
            Target::parse("rediss://h:6380/0?ca=%2Fetc%2Fca.pem&protocol=resp3").unwrap(),
            Target::Single {
                url: "rediss://h:6380/0?protocol=resp3".into(),
                ca: Some("/etc/ca.pem".into())
            }
        );
    }

    #[test]
    fn a_malformed_url_is_refused_with_its_problem_named() {
        let table = [
            ("127.0.0.1:6379", "no scheme"),
            (
                "redis+sentinal://h:1/m",
                "unknown scheme \"redis+sentinal\"",
            ),
            ("redis+sentinel://h:26379", "names its primary"),
            ("redis+sentinel://h:26379/", "names its primary"),
            (
                "redis+sentinel://h:26379/m/x",
                "database \"x\" is not a number",
            ),
            (
                "redis+sentinel://h:26379/m/-1",
                "database \"-1\" is not a number",
            ),
            ("redis+sentinel://h:26379/m/0/x", "too many path segments"),
            ("redis+sentinel:///m", "a host is empty"),
            ("redis+cluster://a:7000,,b:7001", "a host is empty"),
            ("redis+cluster://a:7000,", "a host is empty"),
            (
                "redis+cluster://h:port",
                "port \"port\" of host \"h\" is not a port",
            ),
            (
                "redis+cluster://h:70000",
                "port \"70000\" of host \"h\" is not a port",
            ),
            (
                "redis+cluster://h:0",
                "port \"0\" of host \"h\" is not a port",
            ),
            ("redis+cluster://[::1:7000", "unclosed `[`"),
            ("redis+cluster://[::1]7000", "is not host:port"),
            ("redis+cluster://h:7000/0", "has no path"),
            (
                "redis+cluster://h:7000?ca=/ca.pem",
                "a `ca` file is for TLS",
            ),
            ("rediss+cluster://h:7000?ca=", "names no file"),
            ("rediss+cluster://h:7000?tls=1", "unknown parameter \"tls\""),
            ("rediss+cluster://h:7000#insecure", "fragment"),
            ("redis+sentinel://u:%FF@h/m", "password is not UTF-8"),
            ("redis://h:6379/?ca=/ca.pem", "a `ca` file is for TLS"),
        ];
        for (url, problem) in table {
            let error = Target::parse(url).expect_err(url);
            assert_eq!(error.kind, FleetErrorKind::Invalid, "{url}");
            assert!(
                error.message.contains(problem),
                "{url}: {:?} does not say {problem:?}",
                error.message
            );
            assert!(
                !error.message.contains("%FF"),
                "{url}: the URL is not repeated"
            );
        }
    }

    #[tokio::test]
    async fn a_url_redis_rs_cannot_read_is_invalid_not_unavailable() {
        let error = super::connect("redis://h:notaport/").await.unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Invalid, "{error}");
        let error = super::connect("rediss://127.0.0.1:1/?ca=/nonexistent/ca.pem")
            .await
            .unwrap_err();
        assert_eq!(error.kind, FleetErrorKind::Invalid, "{error}");
        assert!(error.message.contains("/nonexistent/ca.pem"), "{error}");
    }
}
