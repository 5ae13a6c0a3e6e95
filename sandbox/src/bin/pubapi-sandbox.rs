//! `pubapi-sandbox`: serves a sandbox of the Content Platform Public API on 127.0.0.1 until
//! stopped (Ctrl-C).
//!
//! The first line of output is `PUBAPI_BASE_URL=<url> PUBAPI_TOKEN=<admin token>`, so a
//! shell can `eval` it; the lines after it list the other users and their tokens.

use pubapi_sandbox::{ClockConfig, Sandbox, SandboxConfig};
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "\
usage: pubapi-sandbox [--port N] [--time-scale X] [--seed N]

  --port N         port on 127.0.0.1 (default: any free port)
  --time-scale X   sandbox seconds per real second (default 1; 120 makes audit jobs and
                   webhook retries fast)
  --seed N         seed of ids, tokens and synthetic data (default 42)

Prints `PUBAPI_BASE_URL=<url> PUBAPI_TOKEN=<admin token>` first, then serves until Ctrl-C.";

fn parse(args: &[String]) -> Result<SandboxConfig, String> {
    let mut config = SandboxConfig::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name {
            "--port" => {
                config.port = value()?
                    .parse()
                    .map_err(|_| "--port takes a number from 0 to 65535".to_string())?;
            }
            "--time-scale" => {
                let scale: f64 = value()?
                    .parse()
                    .map_err(|_| "--time-scale takes a number".to_string())?;
                if !(scale.is_finite() && scale > 0.0) {
                    return Err("--time-scale must be above 0".into());
                }
                config.clock = ClockConfig::scaled(scale);
            }
            "--seed" => {
                config.seed = value()?
                    .parse()
                    .map_err(|_| "--seed takes a non-negative integer".to_string())?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(config)
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

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(config) => config,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("pubapi-sandbox: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let sandbox = match Sandbox::try_start(config).await {
        Ok(sandbox) => sandbox,
        Err(e) => {
            eprintln!("pubapi-sandbox: cannot listen on 127.0.0.1: {e}");
            return ExitCode::FAILURE;
        }
    };
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
            "# user {:<8} {:<36} {:?}, scopes {:?}, client {}",
            user.username, token, user.role, user.scopes, user.client_id
        );
    }
    let _ = writeln!(out, "# serving {} until Ctrl-C", sandbox.domain());
    let _ = out.flush();
    drop(out);
    stopped().await;
    sandbox.shutdown().await;
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn options_parse() {
        let config = parse(&args("--port 8080 --time-scale=60 --seed 7")).unwrap();
        assert_eq!(config.port, 8080);
        assert_eq!(config.seed, 7);
        assert_eq!(config.clock, ClockConfig::scaled(60.0));
        assert!(parse(&args("--port")).is_err());
        assert!(parse(&args("--port x")).is_err());
        assert!(parse(&args("--time-scale 0")).is_err());
        assert!(parse(&args("--bogus")).is_err());
        assert_eq!(parse(&args("--help")).unwrap_err(), "");
    }
}
