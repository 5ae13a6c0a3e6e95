#![doc = include_str!("../README.md")]

/// The sandbox, published as `pubapi-sandbox`; re-exported so the tests read `sandbox::…`.
pub use pubapi_sandbox as sandbox;
pub use pubapi_sandbox::conformance;

use pubapi_sandbox::{Sandbox, SandboxConfig};
use pubapi_sdk_ext::{Client, SecretToken};

/// The client the short example programs (`tests/examples/`) use: the platform (or a sandbox
/// served elsewhere) when `PUBAPI_DOMAIN` or `PUBAPI_BASE_URL`, and `PUBAPI_TOKEN` are set;
/// else a sandbox in this process with its sample history, returned beside the client so it
/// lives as long as the program needs it. The in-process sandbox finishes audit jobs and AI
/// answers at the first poll, so the examples wait the platform's intervals only once.
///
/// # Errors
/// A token or URL the client refuses.
pub async fn example_client() -> Result<(Client, Option<Sandbox>), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(token) = var("PUBAPI_TOKEN") {
        let builder = Client::builder().token(SecretToken::try_from(token)?);
        let builder = match (var("PUBAPI_DOMAIN"), var("PUBAPI_BASE_URL")) {
            (Some(domain), _) => builder.domain(&domain),
            (None, Some(url)) => builder.base_url(&url),
            (None, None) => return Err("PUBAPI_TOKEN is set without PUBAPI_DOMAIN".into()),
        };
        return Ok((builder.build()?, None));
    }
    let mut config = SandboxConfig::default().with_sample_history();
    config.audit.job_duration = std::time::Duration::ZERO;
    config.ai.agent_polls = 1;
    config.ai.assistant_polls = 1;
    config.webhooks.allow_http_loopback = true;
    let sandbox = Sandbox::try_start(config).await?;
    Ok((sandbox.client_builder_for("admin").build()?, Some(sandbox)))
}
