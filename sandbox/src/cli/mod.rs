//! The command line of `pubapi-sandbox` (and of `pubapi sandbox`, which forwards to it):
//! serves a sandbox of the Content Platform Public API on 127.0.0.1 until stopped (Ctrl-C),
//! drives a running one through its control plane (`/_sandbox`), or receives webhook
//! deliveries and prints them.
//!
//! Serving, the first line of output is `PUBAPI_BASE_URL=<url> PUBAPI_TOKEN=<admin token>`,
//! so a shell can `eval` it; the lines after it list the other users and their tokens.

mod args;

use crate::{Sandbox, SandboxConfig};
use args::{Command, USAGE};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;

/// Runs the command line `args` (without the program name); `program` is the name the usage
/// shows (`pubapi-sandbox`, or `pubapi sandbox` when another tool forwards to it). Exit
/// codes: 0 done, 1 failed, 2 usage error.
pub async fn run(program: &str, args: &[String]) -> ExitCode {
    let usage = USAGE.replace("pubapi-sandbox", program);
    let command = match args::parse(args) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("{program}: {message}\n\n{usage}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Help => {
            println!("{usage}");
            Ok(())
        }
        Command::Serve { config, verbose } => serve(*config, verbose).await,
        Command::Control {
            url,
            method,
            path,
            body,
        } => control(url, method, path, body).await,
        Command::Receive { port, auth } => receive(port, auth).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn serve(config: SandboxConfig, verbose: bool) -> Result<(), String> {
    let sandbox = Sandbox::try_start(config)
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "PUBAPI_BASE_URL={} PUBAPI_TOKEN={}",
        sandbox.base_url(),
        sandbox.admin_token()
    );
    for (user, token) in sandbox.users() {
        let _ = writeln!(
            out,
            "# user {:<8} {:<36} {}, scopes {}, client {}",
            user.username,
            token,
            user.role.name(),
            if user.scopes.is_empty() {
                "none".to_string()
            } else {
                user.scopes.join(" ")
            },
            user.client_id
        );
    }
    let root = sandbox.base_url().trim_end_matches("/pubapi");
    let _ = writeln!(
        out,
        "# limits {}; control plane {root}/_sandbox, dashboard {root}/_sandbox/ui; serving {} \
         until Ctrl-C",
        sandbox.limits(),
        sandbox.domain()
    );
    let _ = out.flush();
    drop(out);
    if verbose {
        tokio::select! {
            () = stopped() => {}
            () = log_requests(&sandbox) => {}
        }
    } else {
        stopped().await;
    }
    sandbox.shutdown().await;
    Ok(())
}

/// How often `-v` looks for requests to log.
const LOG_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Logs every exchange to standard error as it is recorded, one line each (`-v`); never
/// returns.
async fn log_requests(sandbox: &Sandbox) {
    let mut seen = 0;
    loop {
        let exchanges = sandbox.traffic_after(seen);
        if !exchanges.is_empty() {
            let mut err = std::io::stderr().lock();
            for exchange in &exchanges {
                let _ = writeln!(err, "{}", log_line(exchange));
                seen = exchange.seq;
            }
        }
        tokio::time::sleep(LOG_EVERY).await;
    }
}

/// `2025-03-03T09:00:00.000Z GET /v1/whoami?x=1 200 whoami 12 B`: sandbox time, request,
/// status, operation (`-` for none), the reply's length, the token's user, the request's
/// `x-request-id` and `traceparent` (`-` for none); `INJECTED` for a fault injection's answer.
fn log_line(exchange: &crate::Exchange) -> String {
    let query = if exchange.query.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = exchange
            .query
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("?{}", pairs.join("&"))
    };
    format!(
        "{} {} {}{query} {} {} {} B user={} request-id={} traceparent={}{}",
        crate::iso_millis(exchange.at_ms),
        exchange.method,
        exchange.path,
        exchange.status,
        exchange.operation.unwrap_or("-"),
        exchange.response_body.len(),
        exchange.token_user.as_deref().unwrap_or("-"),
        exchange.request_id.as_deref().unwrap_or("-"),
        exchange.traceparent.as_deref().unwrap_or("-"),
        if exchange.fault {
            " INJECTED (a fault injection answered, not the limits)"
        } else {
            ""
        }
    )
}

/// The control plane's root for a base URL such as `http://127.0.0.1:8080/pubapi`.
fn control_root(url: Option<String>) -> Result<String, String> {
    let url = match url {
        Some(url) => url,
        None => std::env::var("PUBAPI_BASE_URL").map_err(|_| {
            "no sandbox to talk to: give --url http://127.0.0.1:PORT/pubapi or set \
             PUBAPI_BASE_URL (the first line `pubapi-sandbox` prints)"
                .to_string()
        })?,
    };
    let root = url.trim_end_matches('/');
    let root = root.strip_suffix("/pubapi").unwrap_or(root);
    Ok(format!("{root}/_sandbox"))
}

async fn control(
    url: Option<String>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(), String> {
    let url = format!("{}{path}", control_root(url)?);
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let mut request = reqwest::Client::new().request(method, &url);
    if let Ok(token) = std::env::var("PUBAPI_SANDBOX_CONTROL_TOKEN") {
        request = request.bearer_auth(token.trim());
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("cannot reach the sandbox at {url}: {e}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("the answer from {url} broke off: {e}"))?;
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        let message = answer["error"]
            .as_str()
            .map_or(answer.to_string(), str::to_string);
        return Err(format!("{status}: {message}"));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&answer).unwrap_or_default()
    );
    Ok(())
}

/// Prints every delivery as one JSON line `{path, authorization, body}` and answers 200
/// (401 when `auth` is set and the delivery's `authorization` differs).
async fn receive(port: u16, auth: Option<String>) -> Result<(), String> {
    use axum::body::Bytes;
    use axum::http::{HeaderMap, StatusCode, Uri};

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let handler = move |uri: Uri, headers: HeaderMap, body: Bytes| {
        let auth = auth.clone();
        async move {
            let authorization = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let accepted = auth.is_none() || authorization == auth;
            let line = serde_json::json!({
                "path": uri.path(),
                "accepted": accepted,
                "body": serde_json::from_slice::<Value>(&body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into())),
            });
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            if accepted {
                StatusCode::OK
            } else {
                StatusCode::UNAUTHORIZED
            }
        }
    };
    let app = axum::Router::new().fallback(handler);
    eprintln!("# receiving webhook deliveries at http://{addr}/ until Ctrl-C");
    let serve = axum::serve(listener, app).with_graceful_shutdown(stopped());
    serve.await.map_err(|e| e.to_string())
}
