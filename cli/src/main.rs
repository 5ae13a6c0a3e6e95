//! `pubapi`: the everyday jobs of the Content Platform Public API from a shell, on
//! `pubapi-sdk-ext`'s public API only, with the sandbox built in.
//!
//! `main` reads the command line ([`args`]), decides where commands go ([`config`]), opens
//! a [`Session`] (a client, and the in-process sandbox when there is one) and runs the
//! command in its module: [`ai`], [`audit`], [`events`], [`webhooks`]. Results go to stdout
//! as tables ([`output`]) or JSON; live feedback goes to stderr on a terminal only
//! ([`progress`]); failures become an exit code and a message with a hint ([`failure`]).

mod ai;
mod args;
mod audit;
mod config;
mod events;
mod failure;
mod output;
mod progress;
mod webhooks;

use args::{Cli, Command};
use clap::Parser;
use config::{Endpoint, ProcessEnv, Target};
use failure::Failure;
use output::Output;
use pubapi_sandbox::{ClockConfig, Sandbox, SandboxConfig};
use pubapi_sdk_ext::{ActAs, Client, LimitClass};
use std::process::ExitCode;
use std::time::Duration;

/// How much faster than real time the in-process sandbox's clock runs: its audit jobs take
/// 5 sandbox minutes (5 real seconds), and the 2 minutes between polls the platform asks
/// for are 2 real seconds of it.
const SANDBOX_TIME_SCALE: f64 = 60.0;

/// What a command works with.
#[derive(Debug)]
pub struct Session {
    /// The client (acting as `--act-as` when given).
    pub client: Client,
    /// The in-process sandbox, when commands run against one.
    pub sandbox: Option<Sandbox>,
    /// Where results go.
    pub out: Output,
}

impl Session {
    /// Sandbox time per real time: 1 on the platform. Waits the platform asks for in its
    /// own time (2 minutes between audit polls) last this much less in real time.
    pub fn time_scale(&self) -> f64 {
        self.sandbox
            .as_ref()
            .map_or(1.0, |sandbox| sandbox.clock().scale().max(1.0))
    }

    /// `platform_wait` of the server's time, in real time.
    pub fn real(&self, platform_wait: Duration) -> Duration {
        platform_wait.div_f64(self.time_scale())
    }
}

fn act_as(who: &str) -> Result<ActAs, Failure> {
    let parsed = if who.contains('@') {
        ActAs::email(who)
    } else {
        ActAs::username(who)
    };
    parsed.map_err(|e| Failure::usage(format!("--act-as {who:?}: {e}")))
}

async fn open(target: Target, out: Output) -> Result<Session, Failure> {
    let (client, sandbox, who) = match target {
        Target::Sandbox { notice, act_as } => {
            if let Some(notice) = notice {
                eprintln!("{notice}");
            }
            let config = SandboxConfig::default()
                .with_clock(ClockConfig::scaled(SANDBOX_TIME_SCALE))
                .with_sample_history();
            let sandbox = Sandbox::try_start(config)
                .await
                .map_err(|e| Failure::failed(format!("the sandbox did not start: {e}")))?;
            let client = sandbox
                .client_builder_for("admin")
                .build()
                .map_err(|e| Failure::failed(format!("no client for the sandbox: {e}")))?;
            (client, Some(sandbox), act_as)
        }
        Target::Platform {
            endpoint,
            token,
            act_as,
        } => {
            let builder = Client::builder().token(token);
            let builder = match &endpoint {
                Endpoint::Domain(domain) => builder.domain(domain),
                Endpoint::BaseUrl(url) => builder.base_url(url),
            };
            let client = builder.build().map_err(|e| {
                Failure::usage(format!("cannot use this configuration: {e}"))
                    .hint("PUBAPI_DOMAIN is a host name (acme.example.com); PUBAPI_BASE_URL a URL ending in /pubapi")
            })?;
            (client, None, act_as)
        }
    };
    let client = match who {
        Some(who) => client.act_as(act_as(&who)?),
        None => client,
    };
    Ok(Session {
        client,
        sandbox,
        out,
    })
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Output::new(cli.global.json);
    if let Command::Sandbox { args } = &cli.command {
        let code = pubapi_sandbox::cli::run("pubapi sandbox", args).await;
        return if code == ExitCode::SUCCESS {
            Ok(())
        } else {
            Err(Failure::failed("the sandbox stopped with an error"))
        };
    }
    // Input that needs no network is checked before anything starts.
    audit::check_before_start(&cli.command)?;
    let target = config::target(&cli.global, &ProcessEnv)?;
    let session = open(target, out).await?;
    // A tail and a receiver hear Ctrl-C themselves (between events, so a checkpoint is
    // exact); every other command stops where it is, its guards cleaning up behind it.
    let hears_ctrl_c = matches!(
        cli.command,
        Command::Events(_) | Command::Webhooks(args::WebhooksCommand::Listen { .. })
    );
    let work = command(&session, cli.command);
    let result = if hears_ctrl_c {
        work.await
    } else {
        tokio::select! {
            result = work => result,
            _ = tokio::signal::ctrl_c() => Err(Failure::interrupted()),
        }
    };
    if let Some(sandbox) = session.sandbox {
        sandbox.shutdown().await;
    }
    result
}

async fn command(session: &Session, command: Command) -> Result<(), Failure> {
    match command {
        Command::Whoami => whoami(session).await,
        Command::Quota => quota(session).await,
        Command::Agents(command) => ai::agents(session, command).await,
        Command::Assistant(command) => ai::assistant(session, command).await,
        Command::Documents(command) => ai::documents(session, command).await,
        Command::Kb(command) => ai::kb(session, command).await,
        Command::Search(search) => ai::search(session, search).await,
        Command::Audit(command) => audit::run(session, command).await,
        Command::Events(command) => events::run(session, command).await,
        Command::Webhooks(command) => webhooks::run(session, command).await,
        Command::Sandbox { .. } => Ok(()),
    }
}

async fn whoami(session: &Session) -> Result<(), Failure> {
    let me = session.client.identity().whoami().await?;
    if session.out.json {
        return session.out.json_document(&me);
    }
    session.out.pairs(&[
        ("user", me.username.clone().unwrap_or_default()),
        ("domain", me.domain.clone().unwrap_or_default()),
        ("client", me.client_id.clone().unwrap_or_default()),
        ("scopes", me.scopes.join(", ")),
        (
            "acting as",
            session
                .client
                .acting_as()
                .map(|who| who.as_str().to_string())
                .unwrap_or_else(|| "-".into()),
        ),
    ])
}

/// What is left today per class: the pacer's count, with the gateway's own counters once a
/// response carried them (one `whoami` call first, so a fresh process has them).
async fn quota(session: &Session) -> Result<(), Failure> {
    session.client.identity().whoami().await?;
    let classes = [("general", LimitClass::General), ("ai", LimitClass::Ai)];
    let rows: Vec<serde_json::Value> = classes
        .iter()
        .map(|(name, class)| {
            let quota = session.client.quota(*class);
            serde_json::json!({
                "class": name,
                "per_day": quota.per_day,
                "used_today": quota.used_today,
                "remaining_today": quota.remaining_today,
                "next_slot_in_ms": u64::try_from(quota.next_slot_in.as_millis()).unwrap_or(u64::MAX),
                "server_counted": quota.server.is_some(),
            })
        })
        .collect();
    if session.out.json {
        return session.out.json_document(&rows);
    }
    let number = |v: &serde_json::Value| match v.as_u64() {
        Some(n) => n.to_string(),
        None => "-".into(),
    };
    session.out.table(
        &["CLASS", "PER DAY", "USED TODAY", "LEFT TODAY", "COUNTED BY"],
        rows.iter()
            .map(|row| {
                vec![
                    row["class"].as_str().unwrap_or_default().to_string(),
                    number(&row["per_day"]),
                    number(&row["used_today"]),
                    number(&row["remaining_today"]),
                    if row["server_counted"] == true {
                        "gateway".into()
                    } else {
                        "this process".into()
                    },
                ]
            })
            .collect(),
    )
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(failure::Exit::Usage as u8)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if failure.exit != failure::Exit::Interrupted {
                eprintln!("pubapi: {failure}");
            }
            failure.exit.into()
        }
    }
}
