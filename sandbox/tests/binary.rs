//! The `pubapi-sandbox` binary prints its base URL and an admin token first, serves, and
//! stops on Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// `GET url` with a bearer token, the body as JSON.
async fn get_json(url: &str, token: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Kills the sandbox it started if the test fails before stopping it.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The binary started with `args` (its stdout piped, its stderr as given), the lines it goes on
/// to print, and the base URL and admin token of its first line
/// (`PUBAPI_BASE_URL=… PUBAPI_TOKEN=…`).
fn start(args: &[&str], stderr: Stdio) -> (Started, Lines<BufReader<ChildStdout>>, String, String) {
    let mut started = Started(
        Command::new(env!("CARGO_BIN_EXE_pubapi-sandbox"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the binary starts"),
    );
    let mut lines = BufReader::new(started.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let (url_part, token_part) = first.split_once(' ').unwrap();
    let base_url = url_part.strip_prefix("PUBAPI_BASE_URL=").unwrap();
    let token = token_part.strip_prefix("PUBAPI_TOKEN=").unwrap();
    (started, lines, base_url.to_owned(), token.to_owned())
}

#[tokio::test]
async fn the_binary_prints_its_url_and_token_then_serves_until_interrupted() {
    let (mut started, _lines, base_url, token) =
        start(&["--port", "0", "--time-scale", "60"], Stdio::null());
    let child = &mut started.0;
    assert!(base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/pubapi"));
    let me = get_json(&format!("{base_url}/v1/whoami"), &token).await;
    assert_eq!(me["username"], "admin");

    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the sandbox did not stop on SIGINT"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn bad_arguments_exit_with_usage() {
    let output = Command::new(env!("CARGO_BIN_EXE_pubapi-sandbox"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage: pubapi-sandbox"));
}

/// A process of this crate's binary, killed if the test fails before it ends.
struct Process(Child);

impl Process {
    fn start(args: &[&str]) -> Process {
        Process(
            Command::new(env!("CARGO_BIN_EXE_pubapi-sandbox"))
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary starts"),
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs one control command to its end and returns its standard output as JSON.
fn control(base_url: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_pubapi-sandbox"))
        .args(args)
        .env("PUBAPI_BASE_URL", base_url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The binary alone, with limits off or on: a webhook registered over the public API, a
/// folder created with `pubapi-sandbox activity`, and the delivery printed by
/// `pubapi-sandbox receive`, with the event in the events stream too.
#[tokio::test]
async fn the_binary_alone_makes_activity_that_reaches_a_loopback_receiver() {
    for limits in ["off", "reference"] {
        let mut sandbox = Process::start(&["--port", "0", "--limits", limits]);
        let first = BufReader::new(sandbox.0.stdout.take().unwrap())
            .lines()
            .next()
            .unwrap()
            .unwrap();
        let (url_part, token_part) = first.split_once(' ').unwrap();
        let base_url = url_part
            .strip_prefix("PUBAPI_BASE_URL=")
            .unwrap()
            .to_string();
        let token = token_part
            .strip_prefix("PUBAPI_TOKEN=")
            .unwrap()
            .to_string();

        let mut receiver = Process::start(&["receive", "--port", "0", "--auth", "s3cr3t"]);
        let announced = BufReader::new(receiver.0.stderr.take().unwrap())
            .lines()
            .next()
            .unwrap()
            .unwrap();
        let hook_url = announced
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap()
            .to_string();
        let mut deliveries = BufReader::new(receiver.0.stdout.take().unwrap()).lines();

        let created = reqwest::Client::new()
            .post(format!("{base_url}/v1/webhooks"))
            .bearer_auth(&token)
            .json(&serde_json::json!({
                "url": format!("{hook_url}hooks"),
                "eventType": ["fs:*"],
                "authHeader": "s3cr3t",
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201, "limits {limits}");

        let state = control(&base_url, &["status"]);
        assert_eq!(
            state["limits"]["generalPerSecond"],
            if limits == "off" {
                serde_json::Value::Null
            } else {
                2.into()
            }
        );
        let made = control(
            &base_url,
            &["activity", "create-folder", "/Projects", "--as", "sam"],
        );
        assert_eq!(made["entry"]["path"], "/Projects", "limits {limits}");

        let line = tokio::task::spawn_blocking(move || deliveries.next().unwrap().unwrap())
            .await
            .unwrap();
        let delivery: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(delivery["path"], "/hooks");
        assert_eq!(delivery["accepted"], true);
        let item = &delivery["body"]["data"][0];
        assert_eq!(item["eventType"], "fs:add_folder", "{delivery}");
        assert_eq!(item["data"]["targetPath"], "/Projects", "{delivery}");

        let events = get_json(&format!("{base_url}/v2/events?id=0"), &token).await;
        assert!(
            events.to_string().contains("/Projects"),
            "limits {limits}: {events}"
        );
        let record = control(&base_url, &["deliveries"]);
        assert_eq!(record["deliveries"][0]["delivered"], true, "{record}");
    }
}

#[tokio::test]
async fn with_dash_v_it_logs_each_request_and_its_banner_reads_as_words() {
    let (mut started, mut out, base_url, token) = start(&["--port", "0", "-v"], Stdio::piped());
    let child = &mut started.0;
    let mut banner = Vec::new();
    for line in out.by_ref() {
        let line = line.unwrap();
        let last = line.starts_with("# limits");
        banner.push(line);
        if last {
            break;
        }
    }
    let banner = banner.join("\n");
    // Words, not Rust's Debug text of the role and scopes.
    for debug in ["PowerUser", "Admin", "Standard", "[\"", "{"] {
        assert!(!banner.contains(debug), "{debug} in:\n{banner}");
    }
    assert!(
        banner.contains("admin, scopes Service.webhooks"),
        "{banner}"
    );
    assert!(banner.contains("/_sandbox/ui"), "{banner}");

    get_json(&format!("{base_url}/v1/whoami"), &token).await;
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let logged = tokio::task::spawn_blocking(move || err.next().map(|l| l.unwrap()))
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(
        logged.contains(" GET /v1/whoami 200 whoami "),
        "the log line: {logged}"
    );
    let _ = child.kill();
}
