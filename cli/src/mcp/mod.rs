//! `pubapi mcp`: a Model Context Protocol server (on `rmcp`) for what the platform's own MCP
//! server leaves out: audit reports, the events list, webhook registrations, the token's
//! quota, and hybrid search on the AI budget, over stdio or streamable HTTP on loopback.
//!
//! Every tool call goes through the session's one client (pacing, retries, the daily budgets
//! refused before sending, impersonation per call with `act_as`). Nothing blocks for the
//! platform's floors: an audit job asked for sooner than two minutes after the last poll, or
//! the events list sooner than its poll interval after catching up, is answered with what is
//! known and when to ask again, and nothing is sent.
//!
//! How the parts fit: `catalogue` says which tools there are (names, annotations, input and
//! output schemas from the spec's types); `calls` carries each call out; `refusal` turns the
//! SDK's errors into tool errors; `floors` remembers across calls when the platform may be
//! asked again. Uses go one way: `floors` and `refusal` ← `catalogue` ← `calls` ← here.

mod calls;
mod catalogue;
mod floors;
mod refusal;

use crate::Session;
use crate::failure::Failure;
pub use calls::Server;
use clap::Args;
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// How `pubapi mcp --help` ends: how to add the server to a client.
pub const MCP_HELP: &str = "\
Configure a client (Claude Desktop, Cursor, VS Code, any MCP client) to start it over stdio:
  {\"mcpServers\": {\"pubapi\": {\"command\": \"pubapi\", \"args\": [\"mcp\"],
     \"env\": {\"PUBAPI_DOMAIN\": \"acme.example.com\", \"PUBAPI_TOKEN\": \"...\"}}}}
With no PUBAPI_DOMAIN/PUBAPI_TOKEN (or profile) configured it serves the built-in sandbox,
and says where its dashboard is on stderr. Add \"--allow-writes\" to the args for the tools
that change or delete anything (webhooks register, enable, disable, delete; audit delete).

Over streamable HTTP on loopback, for clients that connect to a URL:
  pubapi mcp --http 127.0.0.1:8765      # then point the client at http://127.0.0.1:8765/mcp

Examples:
  pubapi --sandbox mcp
  pubapi --profile prod --act-as alice@acme.example.com mcp --allow-writes
  pubapi mcp --http 127.0.0.1:8765 --checkpoints ~/.local/state/pubapi/events.json";

/// `pubapi mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (a loopback address only).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// List and run the tools that change or delete anything (webhooks register, enable,
    /// disable and delete; audit delete); without it they are refused and nothing is sent.
    #[arg(long)]
    pub allow_writes: bool,
    /// Keep the events tool's named checkpoints in FILE (JSON), so they outlive the server;
    /// by default they live as long as it does.
    #[arg(long, value_name = "FILE")]
    pub checkpoints: Option<PathBuf>,
}

/// Input that needs no network, checked before anything starts.
pub(crate) fn check_before_start(args: &McpArgs) -> Result<(), Failure> {
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
    {
        return Err(Failure::usage(format!(
            "--http {addr}: the MCP server listens on loopback only (127.0.0.1 or [::1]); \
             it carries the token's authority"
        )));
    }
    Ok(())
}

/// Runs `pubapi mcp` until the client closes stdin (stdio) or Ctrl-C (HTTP).
pub(crate) async fn serve(session: &Session, args: McpArgs) -> Result<(), Failure> {
    if let Some(sandbox) = &session.sandbox {
        eprintln!(
            "pubapi mcp: serving the built-in sandbox at {} (dashboard: {}/_sandbox/ui)",
            sandbox.base_url(),
            sandbox.base_url().trim_end_matches("/pubapi")
        );
    }
    let server = Server::new(session, &args);
    match args.http {
        None => {
            let running = server
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| Failure::failed(format!("the MCP session did not start: {e}")))?;
            running
                .waiting()
                .await
                .map_err(|e| Failure::failed(format!("the MCP session ended badly: {e}")))?;
            Ok(())
        }
        Some(addr) => serve_http(server, addr).await,
    }
}

/// Streamable HTTP at `http://addr/mcp`; rmcp checks `Host` is a loopback name (no DNS
/// rebinding from a browser).
async fn serve_http(server: Server, addr: SocketAddr) -> Result<(), Failure> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::failed(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::failed(format!("cannot listen on {addr}: {e}")))?;
    eprintln!("pubapi mcp: streamable HTTP at http://{bound}/mcp");
    axum::serve(listener, router)
        .await
        .map_err(|e| Failure::failed(format!("the MCP server stopped: {e}")))
}
