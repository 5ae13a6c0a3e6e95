//! The `pubapi-sandbox` binary prints its base URL and an admin token first, serves, and
//! stops on Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

#[tokio::test]
async fn the_binary_prints_its_url_and_token_then_serves_until_interrupted() {
    let mut started = Started(
        Command::new(env!("CARGO_BIN_EXE_pubapi-sandbox"))
            .args(["--port", "0", "--time-scale", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts"),
    );
    let child = &mut started.0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let (url_part, token_part) = first.split_once(' ').unwrap();
    let base_url = url_part.strip_prefix("PUBAPI_BASE_URL=").unwrap();
    let token = token_part.strip_prefix("PUBAPI_TOKEN=").unwrap();
    assert!(base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/pubapi"));
    let me: serde_json::Value = reqwest::Client::new()
        .get(format!("{base_url}/v1/whoami"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
