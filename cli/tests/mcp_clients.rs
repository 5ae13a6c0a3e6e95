//! `pubapi mcp` driven by real MCP clients, as agent hosts run them: the Python SDK (PyPI
//! `mcp`) over stdio and the TypeScript SDK (npm `@modelcontextprotocol/sdk`) over
//! streamable HTTP. The clients' scripts are in `cli/tests/mcp_clients/`; each lists the
//! tools, calls every one against a sandbox and checks every result against the tool's output
//! schema (both SDKs do, and the Python script again with `jsonschema`). This side checks what
//! reached the sandbox.
//!
//! Without the clients (`python3 -m pip install mcp`, `npm ci --prefix cli/tests/mcp_clients`)
//! a test says so and passes, unless `CI_REQUIRE_MCP_CLIENTS=1` (CI installs them) makes that
//! a failure.

mod support;

use pubapi_sandbox::{ClockConfig, LimitsConfig, Sandbox, SandboxConfig};
use pubapi_sdk::operations::id;
use pubapi_sdk_ext::types::HybridSearchRequest;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{finished, pubapi};

/// Where the clients' scripts are.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_clients")
}

/// Whether `what` can run here; when not, the test passes saying so, or fails in CI.
fn available(what: &str, ok: bool, install: &str) -> bool {
    if !ok {
        assert!(
            std::env::var("CI_REQUIRE_MCP_CLIENTS").as_deref() != Ok("1"),
            "CI_REQUIRE_MCP_CLIENTS=1 but {what} is not installed ({install})"
        );
        eprintln!("SKIPPED: {what} is not installed ({install}); the MCP server was not driven");
    }
    ok
}

fn python_client() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp, jsonschema"])
        .output()
        .is_ok_and(|out| out.status.success());
    available("the Python MCP SDK", ok, "python3 -m pip install mcp")
}

fn node_client() -> bool {
    let ok = scripts()
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .is_file()
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
    available(
        "the TypeScript MCP SDK",
        ok,
        "npm ci --prefix cli/tests/mcp_clients",
    )
}

/// The report kinds, as the clients expect the tools of.
fn kinds() -> String {
    let names: Vec<&str> = pubapi_sdk::audit_kinds::ALL
        .iter()
        .map(|kind| kind.name)
        .collect();
    serde_json::to_string(&names).unwrap()
}

/// A sandbox as the CLI's built-in one runs (a minute of its time a real second, sample
/// history), with the AI minute window off so a test can spend the day's AI budget at once.
async fn sandbox() -> Sandbox {
    let limits = LimitsConfig {
        ai_per_minute: None,
        ..LimitsConfig::reference()
    };
    Sandbox::start(
        SandboxConfig::default()
            .with_clock(ClockConfig::scaled(60.0))
            .with_sample_history()
            .with_limits(limits),
    )
    .await
}

/// What the Python client's run in `mode` against `sandbox` printed last, and the server's
/// stderr.
async fn python_run(sandbox: &Sandbox, mode: &str) -> (Value, String) {
    let stderr = tempfile_path(mode);
    let mut command = Command::new("python3");
    command
        .arg(scripts().join("python_client.py"))
        .current_dir(scripts())
        .env("PUBAPI_BIN", env!("CARGO_BIN_EXE_pubapi"))
        .env("PUBAPI_BASE_URL", sandbox.base_url())
        .env("PUBAPI_TOKEN", sandbox.admin_token())
        .env("PUBAPI_KINDS", kinds())
        .env("MCP_MODE", mode)
        .env("MCP_SERVER_STDERR", &stderr);
    let run = tokio::task::spawn_blocking(move || finished(command.output().unwrap()))
        .await
        .unwrap();
    let server_said = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert_eq!(run.code, 0, "{run:?}\nserver: {server_said}");
    let last = run.stdout.lines().last().unwrap_or_default().to_string();
    (serde_json::from_str(&last).unwrap(), server_said)
}

fn tempfile_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.stderr"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_calls_every_tool_and_each_result_fits_its_output_schema() {
    if !python_client() {
        return;
    }
    let sandbox = sandbox().await;
    let (outcome, server_said) = python_run(&sandbox, "tour").await;
    assert_eq!(outcome["ok"], true, "{outcome}");
    assert_eq!(outcome["called"].as_array().unwrap().len(), 27, "{outcome}");
    // The floors held: no audit job polled within two minutes, no events poll too soon.
    let counters = sandbox.counters();
    assert_eq!(counters.total_violations(), 0, "{counters:?}");
    // The refusals sent nothing: one job per kind, and the one webhook registered.
    assert_eq!(
        counters.requests_to(id::CREATE_LOGINS_AUDIT),
        1,
        "{counters:?}"
    );
    assert_eq!(counters.requests_to(id::CREATE_WEBHOOK), 1, "{counters:?}");
    assert!(
        !server_said.contains(&sandbox.admin_token()),
        "{server_said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_allow_writes_the_writing_tools_are_not_listed_and_refused_unsent() {
    if !python_client() {
        return;
    }
    let sandbox = sandbox().await;
    let (outcome, _) = python_run(&sandbox, "readonly").await;
    assert_eq!(outcome["listed"], 22, "{outcome}");
    let counters = sandbox.counters();
    assert_eq!(counters.requests, 0, "{counters:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_101st_ai_call_of_the_day_is_refused_with_its_reset_time_and_nothing_sent() {
    if !python_client() {
        return;
    }
    let sandbox = sandbox().await;
    // The token has used 99 of its 100 AI calls today, elsewhere.
    let elsewhere = sandbox.client_for("admin");
    for _ in 0..99 {
        let request = HybridSearchRequest::new("travel").unwrap();
        elsewhere.search().page(request).await.unwrap();
    }
    let (outcome, _) = python_run(&sandbox, "quota").await;
    assert_eq!(outcome["ok"], true, "{outcome}");
    let counters = sandbox.counters();
    assert_eq!(counters.requests_to(id::HYBRID_SEARCH), 100, "{counters:?}");
    assert_eq!(counters.total_violations(), 0, "{counters:?}");
    assert!(
        outcome["message"]
            .as_str()
            .unwrap()
            .contains("nothing was sent"),
        "{outcome}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_calls_every_tool_over_http_on_the_built_in_sandbox() {
    if !node_client() {
        return;
    }
    let mut server = pubapi()
        .args(["mcp", "--http", "127.0.0.1:0", "--allow-writes"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let url = loop {
        let line = lines.next().expect("the server ended").unwrap();
        if let Some(at) = line.split("streamable HTTP at ").nth(1) {
            break at.trim().to_string();
        }
        said.push(line);
    };
    assert!(
        said.iter().any(|line| line.contains("built-in sandbox")),
        "{said:?}"
    );
    let mut command = Command::new("node");
    command
        .arg(scripts().join("node_client.mjs"))
        .current_dir(scripts())
        .env("MCP_URL", &url)
        .env("PUBAPI_KINDS", kinds());
    let run = tokio::task::spawn_blocking(move || finished(command.output().unwrap()))
        .await
        .unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    let outcome: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(outcome["called"].as_array().unwrap().len(), 27, "{outcome}");
}

#[test]
fn mcp_over_http_listens_on_loopback_only() {
    let run = finished(
        pubapi()
            .args(["--sandbox", "mcp", "--http", "0.0.0.0:8765"])
            .output()
            .unwrap(),
    );
    run.assert_says(2, &["loopback only"]);
}

#[test]
fn mcp_help_says_how_to_configure_a_client() {
    let run = finished(pubapi().args(["mcp", "--help"]).output().unwrap());
    assert_eq!(run.code, 0, "{run:?}");
    for said in [
        "mcpServers",
        "\"command\": \"pubapi\"",
        "--allow-writes",
        "/mcp",
    ] {
        assert!(run.stdout.contains(said), "{said}: {}", run.stdout);
    }
}
