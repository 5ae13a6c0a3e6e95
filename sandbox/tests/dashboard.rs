//! The dashboard at `/_sandbox/ui`, driven in headless Chromium (Debian's `chromium`) through
//! the DevTools protocol: against a sandbox with traffic, a violation, delivery attempts and
//! an audit job, the charts and tables show what the control plane's JSON says, a control
//! action changes the sandbox, and a screenshot is taken. Without Chromium the test says so
//! and passes, unless `CI_REQUIRE_CHROMIUM=1` (CI installs it) makes that a failure.
//!
//! The screenshot goes to a temporary folder; `PUBAPI_DASHBOARD_SCREENSHOT=<file>` copies it
//! there too (how `sandbox/docs/dashboard.png` was made).

use pubapi_sandbox::{LimitsConfig, Sandbox, SandboxConfig, ServerConfig, TestReceiver};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where Debian's Chromium is, if it is installed.
fn chromium() -> Option<PathBuf> {
    let from_env = std::env::var_os("CHROMIUM").map(PathBuf::from);
    from_env
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from))
        .find(|path| path.is_file())
}

/// A headless Chromium of the test's own, killed (with its profile folder removed) on drop.
struct Browser {
    child: Child,
    profile: PathBuf,
    port: u16,
}

impl Browser {
    fn start(binary: &Path) -> Browser {
        let profile =
            std::env::temp_dir().join(format!("pubapi-dashboard-chromium-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).unwrap();
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--window-size=1280,1600",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…" names the port.
        let stderr = child.stderr.take().unwrap();
        let (found, port) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("ws://127.0.0.1:").nth(1)
                    && let Some(port) = rest.split('/').next().and_then(|p| p.parse().ok())
                {
                    let _ = found.send(port);
                }
            }
        });
        let port = port
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium says where its DevTools listen within 30 s");
        Browser {
            child,
            profile,
            port,
        }
    }

    /// The DevTools of its page.
    async fn page(&self) -> DevTools {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let targets: Value = reqwest::get(format!("http://127.0.0.1:{}/json/list", self.port))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let page = targets
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["webSocketDebuggerUrl"].as_str());
            if let Some(url) = page {
                return DevTools::connect(url).await;
            }
            assert!(Instant::now() < deadline, "no page target: {targets}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Its helper processes end a moment later and may still write into the profile.
        for _ in 0..40 {
            let _ = std::fs::remove_dir_all(&self.profile);
            if !self.profile.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A minimal DevTools protocol client: JSON commands over one WebSocket (RFC 6455 text
/// frames, masked as a client must).
struct DevTools {
    stream: TcpStream,
    next_id: u64,
}

impl DevTools {
    async fn connect(url: &str) -> DevTools {
        let rest = url.strip_prefix("ws://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut stream = TcpStream::connect(host).await.unwrap();
        let handshake = format!(
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(handshake.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        DevTools { stream, next_id: 0 }
    }

    async fn send_text(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65_536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).await.unwrap();
    }

    /// The next whole text message (continuation frames joined; control frames skipped).
    async fn receive_text(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).await.unwrap();
            let fin = head[0] & 0x80 != 0;
            let opcode = head[0] & 0x0f;
            let length = match head[1] & 0x7f {
                126 => {
                    let mut n = [0u8; 2];
                    self.stream.read_exact(&mut n).await.unwrap();
                    u16::from_be_bytes(n) as usize
                }
                127 => {
                    let mut n = [0u8; 8];
                    self.stream.read_exact(&mut n).await.unwrap();
                    u64::from_be_bytes(n) as usize
                }
                n => n as usize,
            };
            let mut payload = vec![0u8; length];
            self.stream.read_exact(&mut payload).await.unwrap();
            match opcode {
                0x1 | 0x0 => message.extend_from_slice(&payload),
                0x8 => panic!("chromium closed the DevTools connection"),
                _ => continue,
            }
            if fin {
                return String::from_utf8(message).unwrap();
            }
        }
    }

    /// Runs a DevTools command; its result.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let command = json!({"id": id, "method": method, "params": params});
        self.send_text(&command.to_string()).await;
        loop {
            let message: Value = serde_json::from_str(&self.receive_text().await).unwrap();
            if message["id"] == id {
                assert!(message["error"].is_null(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    async fn until(&mut self, expression: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while self.eval(expression).await != Value::Bool(true) {
            assert!(
                Instant::now() < deadline,
                "not within {within:?}: {expression}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Decodes standard base64 (the screenshot's encoding).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .map(value)
        .collect();
    digits
        .chunks(4)
        .flat_map(|chunk| {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
            let bytes = n.to_be_bytes();
            bytes[1..chunk.len()].to_vec()
        })
        .collect()
}

/// `GET /_sandbox{path}` as JSON.
async fn control(sandbox: &Sandbox, path: &str) -> Value {
    let root = sandbox.base_url().replace("/pubapi", "/_sandbox");
    reqwest::get(format!("{root}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A sandbox with something in every panel: whoami calls past the reference's 2 a second
/// (a violation), a folder delivered to a receiver that first answers 500 (a failed attempt,
/// then a delivered one) and a logins job still running on the frozen clock.
async fn busy_sandbox() -> (Sandbox, TestReceiver) {
    let sandbox =
        Sandbox::start(SandboxConfig::testing().with_limits(LimitsConfig::reference())).await;
    let raw = sandbox.raw();
    let token = sandbox.admin_token();
    let receiver = TestReceiver::start(&[500, 200]).await;
    let created = raw
        .request("POST", "/v1/webhooks", Some(&token))
        .json(&json!({"url": receiver.url(), "eventType": ["fs:*"]}))
        .send()
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let job = raw
        .request("POST", "/v1/audit/logins", Some(&token))
        .json(
            &json!({"format": "csv", "date_start": "2025-03-01", "date_end": "2025-03-02",
            "events": ["logins", "failed_attempts"]}),
        )
        .send()
        .await;
    assert_eq!(job.status, 202, "{}", job.text());
    sandbox.activity().create_folder("/Shown").unwrap();
    sandbox.settle().await;
    // The retry is due a while later on the sandbox clock (the job takes longer).
    sandbox.advance(Duration::from_secs(60));
    sandbox.settle().await;
    // Then five calls in one second, against the reference's 2 a second.
    for _ in 0..5 {
        raw.request("GET", "/v1/whoami", Some(&token)).send().await;
    }
    (sandbox, receiver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_what_the_control_plane_says_and_drives_it() {
    let Some(binary) = chromium() else {
        assert!(
            std::env::var("CI_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "CI_REQUIRE_CHROMIUM=1 but chromium is not installed (apt-get install chromium)"
        );
        eprintln!(
            "SKIPPED: chromium is not installed (apt-get install chromium); the dashboard was not driven"
        );
        return;
    };
    let (sandbox, _receiver) = busy_sandbox().await;
    let deliveries = control(&sandbox, "/deliveries").await;
    assert!(
        deliveries["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["delivered"] == false),
        "a failed attempt to show: {deliveries}"
    );

    let browser = Browser::start(&binary);
    let mut page = browser.page().await;
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await;
    let url = format!(
        "{}/_sandbox/ui",
        sandbox.base_url().trim_end_matches("/pubapi")
    );
    page.call("Page.navigate", json!({ "url": url })).await;
    page.until(
        "document.body && Number(document.body.dataset.renders) >= 1",
        Duration::from_secs(20),
    )
    .await;

    // The charts: one per limit window, a bar per window of the clock with its arrivals, and
    // the limit line where there is a limit.
    let arrivals = control(&sandbox, "/arrivals").await;
    let drawn = page
        .eval(
            "[...document.querySelectorAll('#charts svg')].map(s => ({
                id: s.id, limit: s.dataset.limit,
                line: s.querySelector('line.limit') ? Number(s.querySelector('line.limit').dataset.limit) : null,
                bars: [...s.querySelectorAll('rect.bar')].map(b => Number(b.dataset.arrivals)),
                refused: [...s.querySelectorAll('rect.bar')].map(b => Number(b.dataset.throttled)),
            }))",
        )
        .await;
    let windows = arrivals["windows"].as_array().unwrap();
    assert_eq!(drawn.as_array().unwrap().len(), windows.len(), "{drawn}");
    for (window, chart) in windows.iter().zip(drawn.as_array().unwrap()) {
        let id = format!(
            "chart-{}-{}",
            window["class"].as_str().unwrap(),
            window["window"].as_str().unwrap()
        );
        assert_eq!(chart["id"], id.as_str());
        // One value of each bucket of the window, in order.
        let column = |key: &str| -> Value {
            let buckets = window["buckets"].as_array().unwrap();
            buckets.iter().map(|b| b[key].clone()).collect()
        };
        assert_eq!(chart["bars"], column("arrivals"), "{id}");
        assert_eq!(chart["refused"], column("throttled"), "{id}");
        assert_eq!(chart["line"], window["limit"], "{id}: the limit line");
    }
    // The five whoami calls in one second against the limit of 2: three refused.
    let general_second = &drawn[0];
    assert_eq!(general_second["line"], 2);
    assert!(
        general_second["bars"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == 5),
        "{general_second}"
    );
    assert!(
        general_second["refused"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == 3)
    );

    // Violations by kind, with the rule each breaks, as the counters say.
    let counters = control(&sandbox, "/counters").await;
    let shown = page
        .eval(
            "[...document.querySelectorAll('#violations tbody tr')].map(r =>
                [...r.cells].map(c => c.textContent))",
        )
        .await;
    let expected: Vec<Value> = counters["violationRules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| json!([v["kind"], v["rule"], v["count"].to_string()]))
        .collect();
    assert_eq!(shown, Value::from(expected));
    assert!(
        shown
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row[0] == "overQps" && row[2] == "3"),
        "the three refused whoami calls: {shown}"
    );

    // Delivery attempts with their cause, newest first.
    let attempts = page
        .eval(
            "[...document.querySelectorAll('#deliveries tbody tr')].map(r =>
                ({event: r.dataset.event, delivered: r.dataset.delivered, cause: r.cells[5].textContent,
                  status: r.cells[4].textContent}))",
        )
        .await;
    let mut records = deliveries["deliveries"].as_array().unwrap().clone();
    records.reverse();
    assert_eq!(
        attempts.as_array().unwrap().len(),
        records.len(),
        "{attempts}"
    );
    for (record, row) in records.iter().zip(attempts.as_array().unwrap()) {
        assert_eq!(row["event"], record["eventId"]);
        assert_eq!(row["delivered"], record["delivered"].to_string().as_str());
        if record["delivered"] == true {
            assert_eq!(row["cause"], "delivered");
        } else if let Some(status) = record["status"].as_u64() {
            assert_eq!(row["status"], status.to_string().as_str());
            assert_eq!(
                row["cause"],
                format!("the receiver answered {status}").as_str()
            );
        } else {
            assert_eq!(row["cause"], record["error"]);
        }
    }

    // The audit job, running on the frozen clock.
    let jobs = control(&sandbox, "/audit").await;
    let job = jobs["jobs"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(jobs["jobs"][0]["state"], "running");
    let state = format!("document.querySelector('#audit tr[data-job=\"{job}\"]')?.dataset.state");
    assert_eq!(page.eval(&state).await, "running");

    // The clock and the traffic log.
    let clock = control(&sandbox, "/clock").await;
    assert_eq!(
        page.eval("Number(document.getElementById('clock').dataset.nowMs)")
            .await,
        clock["nowMs"]
    );
    let traffic = control(&sandbox, "/traffic").await;
    let newest = traffic["exchanges"].as_array().unwrap().last().unwrap()["seq"].clone();
    assert_eq!(
        page.eval("Number(document.querySelector('#traffic tbody tr').dataset.seq)")
            .await,
        newest
    );

    // The screenshot, with the violation in the chart: into a temporary folder (and where PUBAPI_DASHBOARD_SCREENSHOT says).
    let shot = page
        .call("Page.captureScreenshot", json!({"format": "png"}))
        .await;
    let png = base64(shot["data"].as_str().unwrap());
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        png.len() > 20_000,
        "{} bytes: a page with something on it",
        png.len()
    );
    let file = std::env::temp_dir().join(format!("pubapi-dashboard-{}.png", std::process::id()));
    std::fs::write(&file, &png).unwrap();
    if let Some(copy) = std::env::var_os("PUBAPI_DASHBOARD_SCREENSHOT") {
        std::fs::copy(&file, copy).unwrap();
    }
    eprintln!("the dashboard's screenshot: {}", file.display());

    // A control action: advancing the clock an hour finishes the job.
    page.eval(
        "document.getElementById('advance-seconds').value = '3600';
         document.getElementById('advance').click(); true",
    )
    .await;
    page.until(&format!("{state} === 'completed'"), Duration::from_secs(10))
        .await;
    let after = control(&sandbox, "/clock").await;
    assert_eq!(
        after["nowMs"].as_i64().unwrap() - clock["nowMs"].as_i64().unwrap(),
        3_600_000
    );
    assert_eq!(
        page.eval("document.getElementById('said').textContent")
            .await,
        "the clock moved 3600 s"
    );
}

#[tokio::test]
async fn the_page_keeps_the_control_planes_host_origin_and_token_rules() {
    let open = Sandbox::start(SandboxConfig::testing()).await;
    let url = format!("http://{}/_sandbox/ui", open.addr());
    let http = reqwest::Client::new();
    let get = |headers: &[(&str, &str)]| {
        let mut request = http.get(&url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    let page = get(&[]).await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("connect-src 'self'"),
        "{policy}"
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("Arrivals against the limit windows")
    );
    // (host, origin, status)
    for (headers, status) in [
        (vec![("host", "evil.example:80")], 403),
        (vec![("origin", "http://evil.example")], 403),
        (vec![("sec-fetch-site", "cross-site")], 403),
        (vec![("sec-fetch-site", "none")], 200),
    ] {
        assert_eq!(get(&headers).await.unwrap().status(), status, "{headers:?}");
    }

    let guarded = Sandbox::start(SandboxConfig::testing().with_server(ServerConfig {
        control_token: Some("s3cret".into()),
        ..ServerConfig::default()
    }))
    .await;
    let root = format!("http://{}/_sandbox", guarded.addr());
    for (path, status) in [
        ("/ui", 403),
        ("/ui?token=wrong", 403),
        ("/ui?token=s3cret", 200),
        // The address's token opens the page only, never the JSON paths.
        ("/audit?token=s3cret", 403),
        ("/arrivals?token=s3cret", 403),
    ] {
        let answer = http.get(format!("{root}{path}")).send().await.unwrap();
        assert_eq!(answer.status(), status, "{path}");
    }
    let audit = http
        .get(format!("{root}/audit"))
        .header("x-sandbox-control-token", "s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(audit.status(), 200);
}
