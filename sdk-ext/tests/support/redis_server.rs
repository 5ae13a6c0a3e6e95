//! A real `redis-server` (the Debian package) on a free loopback port, for the fleet tests:
//! started per test, stopped on drop, and the faults of a store in production: a crash and a
//! restart (empty, or with its data), a suspended process.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` process.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// Arguments after the defaults (a replica's `--replicaof`, a cluster node's settings).
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts a server with no persistence on a free loopback port and waits until it
    /// answers `PING`.
    ///
    /// # Panics
    /// When `redis-server` is not installed (`apt-get install -y redis-server`) or does not
    /// answer within 10 s.
    pub fn start() -> RedisServer {
        Self::start_on(free_port(), Vec::new())
    }

    /// Starts a server on `port` as [`Self::start`] does, with `extra` arguments after the
    /// defaults.
    fn start_on(port: u16, extra: Vec<String>) -> RedisServer {
        let dir = std::env::temp_dir().join(format!("pubapi-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for redis-server");
        let mut server = RedisServer {
            child: None,
            port,
            dir,
            extra,
        };
        server.restart();
        server
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (a crash: no shutdown command, the process is killed).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port with no data (as [`Self::restart_empty`]
    /// does).
    pub fn restart(&mut self) {
        self.stop();
        // The server saves nothing by itself (`--save ""`, no append-only file); only
        // `restart_keeping_data` leaves a dump, which a restart without data must not load.
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.spawn();
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (apt-get install -y redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        // A server with a password answers that it wants one: it is up.
        while !self
            .command("PING")
            .is_some_and(|reply| reply == "+PONG" || reply.starts_with("-NOAUTH"))
        {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends one inline command on a new connection and returns the first line of the reply
    /// without its line end; `None` when the server cannot be reached or does not answer
    /// within 5 s.
    fn command(&self, command: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n") {
            stream.read_exact(&mut byte).ok()?;
            reply.push(byte[0]);
        }
        reply.truncate(reply.len() - 2);
        String::from_utf8(reply).ok()
    }
}

/// The faults of a store; each test crate that includes this file uses some of them.
#[allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]
impl RedisServer {
    /// Stops the server if it runs and starts it again on the same port with no data: a
    /// crash of a store that keeps nothing on disk.
    pub fn restart_empty(&mut self) {
        self.restart();
    }

    /// Writes the data to disk (`SAVE`), for [`Self::restart_keeping_data`].
    ///
    /// # Panics
    /// When the server does not confirm the save.
    pub fn save(&self) {
        assert_eq!(self.command("SAVE").as_deref(), Some("+OK"), "redis SAVE");
    }

    /// Stops the server if it runs and starts it again on the same port with the data of the
    /// last [`Self::save`]: with `save(); stop();` before, a crash of a store that persists.
    pub fn restart_keeping_data(&mut self) {
        self.stop();
        self.spawn();
    }

    /// A plain connection of the test's own, for looking at the keys or changing them behind
    /// the store's back.
    ///
    /// # Panics
    /// When the server does not accept the connection.
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Suspends the server process (`SIGSTOP`): it keeps its connections and its data, and
    /// answers nothing until [`Self::resume`]; then it runs every command sent meanwhile.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a server suspended by [`Self::pause`] run again (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("a running redis-server");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill(1)");
        assert!(status.success(), "kill {signal} {}", child.id());
    }
}

/// A free loopback port.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A suspended process dies of SIGKILL too.
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-cli -p <port> <args>`: what it printed, or `None` when it failed or printed an
/// error.
fn cli(port: u16, args: &[&str]) -> Option<String> {
    cli_as(port, None, args)
}

/// [`cli`] with a password (`REDISCLI_AUTH`, so it is not on a command line).
fn cli_as(port: u16, password: Option<&str>, args: &[&str]) -> Option<String> {
    let mut command = Command::new("redis-cli");
    if let Some(password) = password {
        command.env("REDISCLI_AUTH", password);
    }
    let output = command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .expect("redis-cli is installed (apt-get install -y redis-tools)");
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.starts_with("ERR") && !text.starts_with("(error)"))
        .then_some(text)
}

/// The size of the first sorted set matching `pattern` on the server on `port`.
fn zcard(port: u16, pattern: &str) -> Option<usize> {
    zcard_as(port, None, pattern)
}

fn zcard_as(port: u16, password: Option<&str>, pattern: &str) -> Option<usize> {
    let keys = cli_as(port, password, &["KEYS", pattern])?;
    let key = keys.lines().next()?.trim();
    cli_as(port, password, &["ZCARD", key])?.trim().parse().ok()
}

/// Waits up to `limit` for `ready`, checking every 50 ms; returns how long it took.
///
/// # Panics
/// When `ready` is still false after `limit`, with `what` in the message.
fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

/// A free loopback port whose cluster bus port (10000 more) is free too.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// A Sentinel deployment on loopback ports: a primary, one replica and three sentinels
/// (Debian's `redis-sentinel`) that monitor the primary as [`SentinelSet::PRIMARY_NAME`]
/// with a quorum of 2, see it down after 1 s without an answer and fail it over.
#[derive(Debug)]
#[allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]
pub struct SentinelSet {
    /// The first primary, then its replica.
    servers: Vec<RedisServer>,
    sentinels: Vec<(Child, u16, PathBuf)>,
    /// The data nodes' password, when they require one.
    data_password: Option<String>,
    /// The sentinels' own password, when they require one.
    sentinel_password: Option<String>,
}

#[allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]
impl SentinelSet {
    /// The name the sentinels monitor the primary under.
    pub const PRIMARY_NAME: &str = "m";

    /// Starts the servers and the sentinels and waits until every sentinel knows the replica
    /// and the two other sentinels.
    ///
    /// # Panics
    /// When `redis-server` or `redis-sentinel` is not installed, or the deployment is not
    /// ready within 20 s.
    pub fn start() -> SentinelSet {
        Self::start_with(None, None)
    }

    /// [`Self::start`] with data nodes that require `data` as their password and sentinels
    /// that require `sentinel` as theirs.
    pub fn start_with_passwords(data: &str, sentinel: &str) -> SentinelSet {
        Self::start_with(Some(data.into()), Some(sentinel.into()))
    }

    fn start_with(data_password: Option<String>, sentinel_password: Option<String>) -> SentinelSet {
        let auth: Vec<String> = data_password
            .iter()
            .flat_map(|p| {
                [
                    "--requirepass".into(),
                    p.clone(),
                    "--masterauth".into(),
                    p.clone(),
                ]
            })
            .collect();
        let primary = RedisServer::start_on(free_port(), auth.clone());
        let mut replica_args = vec![
            "--replicaof".into(),
            "127.0.0.1".into(),
            primary.port.to_string(),
        ];
        replica_args.extend(auth);
        let replica = RedisServer::start_on(free_port(), replica_args);
        let mut set = SentinelSet {
            servers: vec![primary, replica],
            sentinels: Vec::new(),
            data_password,
            sentinel_password,
        };
        let mut secured = String::new();
        if let Some(password) = &set.data_password {
            secured.push_str(&format!(
                "sentinel auth-pass {} {password}\n",
                Self::PRIMARY_NAME
            ));
        }
        if let Some(password) = &set.sentinel_password {
            secured.push_str(&format!(
                "requirepass {password}\nsentinel sentinel-pass {password}\n"
            ));
        }
        for _ in 0..3 {
            let port = free_port();
            let dir =
                std::env::temp_dir().join(format!("pubapi-sentinel-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a directory for redis-sentinel");
            // A sentinel rewrites its configuration file: one writable file each.
            let config = dir.join("sentinel.conf");
            std::fs::write(
                &config,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\n\
                     sentinel monitor {name} 127.0.0.1 {primary} 2\n\
                     sentinel down-after-milliseconds {name} 1000\n\
                     sentinel failover-timeout {name} 3000\n{secured}",
                    dir.display(),
                    name = Self::PRIMARY_NAME,
                    primary = set.servers[0].port,
                ),
            )
            .expect("a sentinel configuration file");
            let child = Command::new("redis-sentinel")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-sentinel is installed (apt-get install -y redis-sentinel)");
            set.sentinels.push((child, port, dir));
        }
        let ports: Vec<u16> = set.sentinels.iter().map(|s| s.1).collect();
        wait_for(
            "every sentinel knows the replica and the other sentinels",
            Duration::from_secs(20),
            || {
                ports.iter().all(|port| {
                    let Some(info) = cli_as(
                        *port,
                        set.sentinel_password.as_deref(),
                        &["SENTINEL", "MASTER", Self::PRIMARY_NAME],
                    ) else {
                        return false;
                    };
                    let lines: Vec<&str> = info.lines().collect();
                    let field = |name: &str| {
                        lines
                            .iter()
                            .position(|l| *l == name)
                            .and_then(|i| lines.get(i + 1).copied())
                    };
                    field("num-slaves") == Some("1") && field("num-other-sentinels") == Some("2")
                })
            },
        );
        wait_for("the replica is in sync", Duration::from_secs(20), || {
            cli_as(
                set.servers[1].port,
                set.data_password.as_deref(),
                &["INFO", "replication"],
            )
            .is_some_and(|info| info.contains("master_link_status:up"))
        });
        set
    }

    /// `redis+sentinel://<sentinels>/<primary name>`.
    pub fn url(&self) -> String {
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.1))
            .collect();
        let credentials = self
            .data_password
            .as_ref()
            .map_or(String::new(), |p| format!(":{p}@"));
        let parameters = self
            .sentinel_password
            .as_ref()
            .map_or(String::new(), |p| format!("?sentinel_password={p}"));
        format!(
            "redis+sentinel://{credentials}{}/{}{parameters}",
            sentinels.join(","),
            Self::PRIMARY_NAME
        )
    }

    /// The value of `key` on the server on `port` (`None` when it holds none).
    pub fn get(&self, port: u16, key: &str) -> Option<String> {
        let value = cli_as(port, self.data_password.as_deref(), &["GET", key])?;
        Some(value.trim().to_string()).filter(|v| !v.is_empty())
    }

    /// The port of the primary the first sentinel that answers names.
    pub fn primary_port(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|s| {
            let answer = cli_as(
                s.1,
                self.sentinel_password.as_deref(),
                &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", Self::PRIMARY_NAME],
            )?;
            answer.lines().nth(1)?.trim().parse().ok()
        })
    }

    /// The size of the sorted set matching `pattern` on the primary the sentinels name.
    pub fn stored(&self, pattern: &str) -> Option<usize> {
        zcard_as(self.primary_port()?, self.data_password.as_deref(), pattern)
    }

    /// Kills the primary the sentinels name (SIGKILL) and returns its port.
    ///
    /// # Panics
    /// When no sentinel names a primary.
    pub fn kill_primary(&mut self) -> u16 {
        let port = self.primary_port().expect("the sentinels name a primary");
        if let Some(server) = self.servers.iter_mut().find(|s| s.port == port) {
            server.stop();
        }
        port
    }

    /// Asks a sentinel to fail the primary over (`SENTINEL FAILOVER`) and returns the old
    /// primary's port.
    ///
    /// # Panics
    /// When no sentinel names a primary or the sentinel refuses.
    pub fn request_failover(&self) -> u16 {
        let port = self.primary_port().expect("the sentinels name a primary");
        let answer = cli_as(
            self.sentinels[0].1,
            self.sentinel_password.as_deref(),
            &["SENTINEL", "FAILOVER", Self::PRIMARY_NAME],
        );
        assert_eq!(
            answer.as_deref().map(str::trim),
            Some("OK"),
            "SENTINEL FAILOVER"
        );
        port
    }

    /// Waits up to `limit` until the sentinels name a primary other than `old` and that
    /// server says it is one; returns how long it took.
    ///
    /// # Panics
    /// When it does not happen within `limit`.
    pub fn wait_for_new_primary(&self, old: u16, limit: Duration) -> Duration {
        wait_for("a new primary", limit, || {
            self.primary_port().is_some_and(|port| {
                port != old
                    && cli_as(port, self.data_password.as_deref(), &["ROLE"])
                        .is_some_and(|role| role.starts_with("master"))
            })
        })
    }
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        for (child, _, dir) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A Redis Cluster on loopback ports: three primaries with one replica each, a node seen
/// failed after 1 s without an answer (`cluster-node-timeout 1000`).
#[derive(Debug)]
#[allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

#[allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]
impl RedisCluster {
    /// Starts six nodes, makes them a cluster (`redis-cli --cluster create
    /// --cluster-replicas 1`) and waits until every node says it is `ok` and every replica is
    /// in sync.
    ///
    /// # Panics
    /// When `redis-server` or `redis-cli` is not installed, or the cluster is not ready
    /// within 30 s.
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..6)
            .map(|_| {
                RedisServer::start_on(
                    free_cluster_port(),
                    ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"]
                        .map(String::from)
                        .to_vec(),
                )
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli is installed (apt-get install -y redis-tools)");
        assert!(created.success(), "redis-cli --cluster create");
        let cluster = RedisCluster { nodes };
        wait_for("the cluster is ok", Duration::from_secs(30), || {
            cluster.nodes.iter().all(|n| {
                cli(n.port, &["CLUSTER", "INFO"]).is_some_and(|i| i.contains("cluster_state:ok"))
            }) && cluster.nodes.iter().all(|n| {
                cli(n.port, &["INFO", "replication"]).is_some_and(|i| {
                    i.contains("role:master") || i.contains("master_link_status:up")
                })
            })
        });
        cluster
    }

    /// `redis+cluster://<every node>`.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The port of the running primary that holds a key matching `pattern` (`KEYS`).
    pub fn primary_holding(&self, pattern: &str) -> Option<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|n| {
                let role = cli(n.port, &["ROLE"])?;
                let keys = cli(n.port, &["KEYS", pattern])?;
                (role.starts_with("master") && !keys.trim().is_empty()).then_some(n.port)
            })
    }

    /// Clears every running node's command counts (`CONFIG RESETSTAT`).
    pub fn reset_command_counts(&self) {
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            cli(node.port, &["CONFIG", "RESETSTAT"]);
        }
    }

    /// The ports of the running nodes that ran `command` (lower case, as `INFO commandstats`
    /// names it: `time`) since their counts were cleared, a script's calls included.
    pub fn nodes_that_ran(&self, command: &str) -> Vec<u16> {
        let counted = format!("cmdstat_{command}:");
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .filter(|n| {
                cli(n.port, &["INFO", "commandstats"]).is_some_and(|stats| stats.contains(&counted))
            })
            .map(|n| n.port)
            .collect()
    }

    /// The size of the sorted set matching `pattern` on the primary that holds it.
    pub fn stored(&self, pattern: &str) -> Option<usize> {
        zcard(self.primary_holding(pattern)?, pattern)
    }

    /// The port of the running replica of the primary on `port`.
    pub fn replica_of(&self, port: u16) -> Option<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some() && n.port != port)
            .find_map(|n| {
                let role = cli(n.port, &["ROLE"])?;
                let mut lines = role.lines();
                (lines.next()? == "slave" && lines.nth(1)?.trim() == port.to_string())
                    .then_some(n.port)
            })
    }

    /// Asks the replica on `port` to take over from its primary (`CLUSTER FAILOVER`: it
    /// catches up first).
    ///
    /// # Panics
    /// When the replica refuses.
    pub fn request_failover(&self, port: u16) {
        let answer = cli(port, &["CLUSTER", "FAILOVER"]);
        assert_eq!(
            answer.as_deref().map(str::trim),
            Some("OK"),
            "CLUSTER FAILOVER"
        );
    }

    /// Kills the node on `port` (SIGKILL).
    pub fn kill(&mut self, port: u16) {
        if let Some(node) = self.nodes.iter_mut().find(|n| n.port == port) {
            node.stop();
        }
    }

    /// Waits up to `limit` until three running nodes say they are primaries and the cluster
    /// is `ok` again; returns how long it took.
    ///
    /// # Panics
    /// When it does not happen within `limit`.
    pub fn wait_for_three_primaries(&self, limit: Duration) -> Duration {
        wait_for("three primaries again", limit, || {
            let running: Vec<&RedisServer> =
                self.nodes.iter().filter(|n| n.child.is_some()).collect();
            running
                .iter()
                .filter(|n| cli(n.port, &["ROLE"]).is_some_and(|r| r.starts_with("master")))
                .count()
                == 3
                && running.iter().all(|n| {
                    cli(n.port, &["CLUSTER", "INFO"])
                        .is_some_and(|i| i.contains("cluster_state:ok"))
                })
        })
    }
}
