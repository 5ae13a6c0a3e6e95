#![doc = include_str!("../README.md")]

/// The sandbox, published as `pubapi-sandbox`; re-exported so the tests read `sandbox::…`.
pub use pubapi_sandbox as sandbox;
pub use pubapi_sandbox::conformance;

pub mod tls_endpoint;

use pubapi_sandbox::{RawResponse, Sandbox, SandboxConfig};
use pubapi_sdk_ext::ai::AiWait;
use pubapi_sdk_ext::{Client, ClientBuilder, Error, SecretToken};
use std::time::Duration;

/// The error `call` fails with, as the SDK's [`Error`] (a generated call's error converted, as
/// [`Error::from`] does for a caller); panics with the value when the call succeeds.
///
/// `let error = error_of(client.sdk().whoami().send()).await;`
pub async fn error_of<T, E>(call: impl std::future::IntoFuture<Output = Result<T, E>>) -> Error
where
    T: std::fmt::Debug,
    Error: From<E>,
{
    match call.await {
        Ok(value) => panic!("the call succeeded, where it must fail: {value:?}"),
        Err(error) => Error::from(error),
    }
}

/// A sandbox of [`SandboxConfig::testing`] with `change` made to its configuration:
/// `let sb = sandbox_with(|config| config.audit.enabled = false).await;`
pub async fn sandbox_with(change: impl FnOnce(&mut SandboxConfig)) -> Sandbox {
    let mut config = SandboxConfig::testing();
    change(&mut config);
    Sandbox::start(config).await
}

/// What the sandbox answers to a GET of `path` with the admin's token, sent as it is (no SDK
/// checks).
pub async fn admin_get(sb: &Sandbox, path: &str) -> RawResponse {
    sb.raw().get(path, &sb.admin_token()).await
}

/// What the sandbox answers to a POST of `body` (JSON) to `path` with the admin's token, sent
/// as it is (no SDK checks): the tests of the sandbox's own answers start from here.
pub async fn admin_post(sb: &Sandbox, path: &str, body: &serde_json::Value) -> RawResponse {
    sb.raw().post(path, &sb.admin_token(), body).await
}

/// Asserts that the gateway refused a request: the `status` and the `x-gateway-error-code`
/// header `code`.
#[track_caller]
pub fn assert_gateway_refused(response: &RawResponse, status: u16, code: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    assert_eq!(response.header("x-gateway-error-code"), Some(code));
}

/// Waits for an AI answer by polling once a second until `deadline`: the sandbox answers after
/// a set number of polls, so a test or an example waits seconds, not the platform's intervals.
pub fn poll_every_second(deadline: Duration) -> AiWait {
    let second = Duration::from_secs(1);
    AiWait {
        min_interval: second,
        max_interval: second,
        deadline,
        ..AiWait::default()
    }
}

/// The fourteen audit report kinds of the reference, in the spec's order (`AuditReportKind`):
/// each is the path segment of its creation (`/v1/audit/{kind}`) and of its report
/// (`/v1/audit/{kind}/{job id}`). The tests that walk every kind read this one list.
pub const AUDIT_KINDS: [&str; 14] = [
    "logins",
    "files",
    "permissions",
    "users",
    "groups",
    "workgroup-settings",
    "workflows",
    "workflow-templates",
    "quality-docs",
    "quality-docs-categories",
    "quality-docs-courses",
    "etmf",
    "snapshot-restore",
    "upload-requests",
];

/// The sandbox's sample agent, which answers [`SAMPLE_QUESTION`] from its documents ("180
/// euros per night").
pub const SAMPLE_AGENT: &str = "agt-policy-helper";

/// A question [`SAMPLE_AGENT`] answers.
pub const SAMPLE_QUESTION: &str = "How much are hotel costs per night?";

/// Four events of the activity feed, as `sam`: folder `/P`, file `/P/a.txt`, a note on it, and
/// (by the admin) a permission change on `/P`; in a fresh sandbox their ids are 1 to 4.
pub fn four_events(sb: &Sandbox) {
    let sam = sb.activity_as("sam");
    sam.create_folder("/P").unwrap();
    sam.create_file("/P/a.txt", "alpha").unwrap();
    sam.add_note("/P/a.txt", "looks good").unwrap();
    sb.activity()
        .change_permission("/P", "sam", None, Some("Editor"))
        .unwrap();
}

/// The names of the files in a daily export's folder `dir`, sorted, temporary ones too, but
/// for the export's claim on the folder (`.pubapi-export-logins-csv.json`).
pub fn export_files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".pubapi-export-logins-csv.json")
        // Each run's manifest (`pubapi audit export`) is beside the days, not one of them.
        .filter(|name| !name.ends_with(".manifest.json"))
        .collect();
    names.sort();
    names
}

/// The client the short example programs (`tests/examples/`) use: the platform (or a sandbox
/// served elsewhere) when `PUBAPI_DOMAIN` or `PUBAPI_BASE_URL`, and `PUBAPI_TOKEN` are set;
/// else a sandbox in this process with its sample history, returned beside the client so it
/// lives as long as the program needs it. The in-process sandbox finishes audit jobs and AI
/// answers at the first poll, so the examples wait the platform's intervals only once.
///
/// # Errors
/// A token or URL the client refuses.
pub async fn example_client() -> Result<(Client, Option<Sandbox>), Box<dyn std::error::Error>> {
    if let Some(builder) = platform_builder()? {
        return Ok((builder.build()?, None));
    }
    let sandbox = Sandbox::try_start(example_config()).await?;
    Ok((sandbox.client_builder_for("admin").build()?, Some(sandbox)))
}

/// [`example_client`] for programs without an async runtime (the blocking client's
/// examples): the builder of the same client, to finish with `build_blocking()`, and the
/// in-process sandbox, served on a runtime of its own while the [`BackgroundSandbox`] lives.
///
/// # Errors
/// A token or URL the client refuses; a call inside an async runtime (use
/// [`example_client`] there); a sandbox that cannot start.
pub fn example_client_builder()
-> Result<(ClientBuilder, Option<BackgroundSandbox>), Box<dyn std::error::Error>> {
    if let Some(builder) = platform_builder()? {
        return Ok((builder, None));
    }
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(
            "example_client_builder() is for programs without an async runtime: \
                    use example_client() there"
                .into(),
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let sandbox = runtime.block_on(Sandbox::try_start(example_config()))?;
    let builder = sandbox.client_builder_for("admin");
    Ok((builder, Some(BackgroundSandbox { sandbox, runtime })))
}

/// A sandbox served on a runtime of its own, for programs that have none: from
/// [`example_client_builder`]. Stops when dropped.
#[derive(Debug)]
pub struct BackgroundSandbox {
    // Dropped before the runtime that serves it.
    sandbox: Sandbox,
    runtime: tokio::runtime::Runtime,
}

impl BackgroundSandbox {
    /// The sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The runtime serving it.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
}

/// The platform's client builder when `PUBAPI_TOKEN` is set (with `PUBAPI_DOMAIN` or
/// `PUBAPI_BASE_URL`), else `None`.
fn platform_builder() -> Result<Option<ClientBuilder>, Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let Some(token) = var("PUBAPI_TOKEN") else {
        return Ok(None);
    };
    let builder = Client::builder().token(SecretToken::try_from(token)?);
    let builder = match (var("PUBAPI_DOMAIN"), var("PUBAPI_BASE_URL")) {
        (Some(domain), _) => builder.domain(&domain),
        (None, Some(url)) => builder.base_url(&url),
        (None, None) => return Err("PUBAPI_TOKEN is set without PUBAPI_DOMAIN".into()),
    };
    Ok(Some(builder))
}

/// The in-process sandbox of the examples: its sample history, audit jobs and AI answers
/// finished at the first poll, webhooks to loopback allowed.
fn example_config() -> SandboxConfig {
    let mut config = SandboxConfig::default().with_sample_history();
    config.audit.job_duration = std::time::Duration::ZERO;
    config.ai.agent_polls = 1;
    config.ai.assistant_polls = 1;
    config.webhooks.allow_http_loopback = true;
    config
}

#[cfg(test)]
mod tests {
    use super::AUDIT_KINDS;
    use pubapi_sdk::types::AuditReportKind;
    use std::collections::BTreeSet;

    #[test]
    fn audit_kinds_are_the_spec_report_kinds_each_once() {
        let kinds: BTreeSet<AuditReportKind> = AUDIT_KINDS
            .iter()
            .map(|kind| kind.parse().expect("a kind of the spec"))
            .collect();
        assert_eq!(kinds.len(), AUDIT_KINDS.len());
        let written: Vec<String> = kinds.iter().map(ToString::to_string).collect();
        let mut sorted = AUDIT_KINDS.map(String::from).to_vec();
        sorted.sort_by_key(|kind| kind.parse::<AuditReportKind>().unwrap());
        assert_eq!(written, sorted);
    }
}
