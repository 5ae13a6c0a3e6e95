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
}

impl RedisServer {
    /// Starts a server with no persistence on a free loopback port and waits until it
    /// answers `PING`.
    ///
    /// # Panics
    /// When `redis-server` is not installed (`apt-get install -y redis-server`) or does not
    /// answer within 10 s.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = std::env::temp_dir().join(format!("pubapi-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for redis-server");
        let mut server = RedisServer {
            child: None,
            port,
            dir,
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
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (apt-get install -y redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.command("PING").as_deref() != Some("+PONG") {
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

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A suspended process dies of SIGKILL too.
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
