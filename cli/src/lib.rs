//! `pubapi`: the everyday jobs of the Content Platform Public API from a shell, on
//! `pubapi-sdk-ext`'s public API only, with the sandbox built in. The binary (`src/main.rs`)
//! calls [`main`]; the library also gives the benchmarks the MCP server ([`mcp::Server`]).
//!
//! `main` reads the command line (`args`), decides where commands go (`config`), opens a
//! `Session` (a client, and the in-process sandbox when there is one) and runs the command in
//! its module: `ai`, `audit`, `events`, `webhooks`, `mcp`. Results go to stdout as tables
//! (`output`) or JSON; live feedback goes to stderr on a terminal only (`progress`); failures
//! become an exit code and a message with a hint (`failure`). With `--dry-run` the client's
//! transport prints the first request instead (`dry_run`).

mod ai;
mod args;
mod audit;
mod config;
mod dry_run;
mod events;
mod failure;
pub mod mcp;

/// The typed rows of the 14 audit report kinds (one schema per kind), and the writers of
/// `--columns schema` (CSV, JSON lines) and `--format parquet` (see `pubapi audit export
/// --help`): for programs that read or write the CLI's files, and its benchmarks.
pub mod data {
    pub use crate::audit::columns::{
        Cell, Column, ColumnType, EXTRA, RowSchema, SchemaRows, TextForm, schema, type_name,
        write_csv_record,
    };
    #[cfg(feature = "parquet")]
    pub use crate::audit::parquet::{
        BATCH_ROWS, CSV_HEADER, EventsParquet, JSON_FIELD, ROW_GROUP_ROWS, arrow_schema, properties,
    };
}
mod output;
mod progress;
mod webhooks;

use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use config::{Endpoint, ProcessEnv, Target};
use dry_run::DryRun;
use failure::Failure;
use output::Output;
use pubapi_sandbox::{ClockConfig, Sandbox, SandboxConfig};
use pubapi_sdk_ext::{ActAs, Client, LimitClass};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How much faster than real time the in-process sandbox's clock runs: its audit jobs take
/// 5 sandbox minutes (5 real seconds), and the 2 minutes between polls the platform asks
/// for are 2 real seconds of it.
const SANDBOX_TIME_SCALE: f64 = 60.0;

/// What a command works with.
#[derive(Debug)]
pub(crate) struct Session {
    /// The client (acting as `--act-as` when given).
    pub client: Client,
    /// The in-process sandbox, when commands run against one.
    pub sandbox: Option<Sandbox>,
    /// Where results go.
    pub out: Output,
    /// Whether this is a `--dry-run`: the first request is printed, nothing is sent, and
    /// no file is written.
    pub dry_run: bool,
    /// The time scale a sandbox served elsewhere told through its control plane (1 for the
    /// platform).
    pub served_scale: f64,
}

impl Session {
    /// Sandbox time per real time: 1 on the platform. Waits the platform asks for in its
    /// own time (2 minutes between audit polls) last this much less in real time.
    pub fn time_scale(&self) -> f64 {
        self.sandbox
            .as_ref()
            .map_or(self.served_scale, |sandbox| sandbox.clock().scale())
            .max(1.0)
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
    parsed.map_err(|e| Failure::usage(format!("--act-as `{who}`: {e}")))
}

/// The wall clock: the CLI's one reading of it, where a command hands "now" to the SDK (a
/// webhook's renewal) or says when a budget resets (`pubapi mcp`).
pub(crate) fn wall_clock() -> std::time::SystemTime {
    #[allow(
        clippy::disallowed_methods,
        reason = "the command line is where now enters"
    )]
    std::time::SystemTime::now()
}

/// How long asking a sandbox on loopback for its clock may take.
const SCALE_QUESTION_TIMEOUT: Duration = Duration::from_secs(2);

/// The clock's scale of a sandbox served at `base_url` (`pubapi-sandbox --time-scale 60`), from
/// its control plane (`GET /_sandbox/clock`, with `$PUBAPI_SANDBOX_CONTROL_TOKEN` when set);
/// `None` for a base URL off loopback (the platform is never asked) or no sandbox there.
async fn served_sandbox_scale(base_url: &str) -> Option<f64> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return None;
    }
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/pubapi").unwrap_or(root);
    let mut request = reqwest::Client::new()
        .get(format!("{root}/_sandbox/clock"))
        .timeout(SCALE_QUESTION_TIMEOUT);
    if let Ok(token) = std::env::var("PUBAPI_SANDBOX_CONTROL_TOKEN") {
        request = request.bearer_auth(token.trim());
    }
    let answer = request.send().await.ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let clock: serde_json::Value = answer.json().await.ok()?;
    clock["scale"].as_f64().filter(|scale| scale.is_finite())
}

async fn open(
    target: Target,
    out: Output,
    dry: Option<Arc<DryRun>>,
    waits: bool,
) -> Result<Session, Failure> {
    let dry_run = dry.is_some();
    let mut served_scale = 1.0;
    let transport = |builder: pubapi_sdk_ext::ClientBuilder| match &dry {
        Some(dry) => builder.transport(dry.clone()),
        None => builder,
    };
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
            let client = transport(sandbox.client_builder_for("admin"))
                .build()
                .map_err(|e| Failure::failed(format!("no client for the sandbox: {e}")))?;
            (client, Some(sandbox), act_as)
        }
        Target::Platform {
            endpoint,
            token,
            act_as,
        } => {
            if let (Endpoint::BaseUrl(url), true, false) = (&endpoint, waits, dry_run)
                && let Some(scale) = served_sandbox_scale(url).await
            {
                served_scale = scale;
            }
            let builder = Client::builder().token(token);
            let builder = match &endpoint {
                Endpoint::Domain(domain) => builder.domain(domain),
                Endpoint::BaseUrl(url) => builder.base_url(url),
            };
            let client = transport(builder).build().map_err(|e| {
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
        dry_run,
        served_scale,
    })
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Output::new(cli.global.json);
    match &cli.command {
        Command::Sandbox { args } => {
            let code = pubapi_sandbox::cli::run("pubapi sandbox", args).await;
            return if code == ExitCode::SUCCESS {
                Ok(())
            } else {
                Err(Failure::failed("the sandbox stopped with an error"))
            };
        }
        Command::Completions { shell } => return completions(*shell, &out),
        Command::Man => return man(&out),
        _ => {}
    }
    // Input that needs no network is checked before anything starts.
    if let Command::Audit(command) = &cli.command {
        audit::check_before_start(command, cli.global.dry_run)?;
    }
    if let Command::Mcp(args) = &cli.command {
        if cli.global.dry_run {
            return Err(Failure::usage(
                "--dry-run: mcp serves tool calls; a dry run has no first request to print",
            ));
        }
        mcp::check_before_start(args)?;
    }
    let dry = if cli.global.dry_run {
        Some(dry_run_of(&cli.command)?)
    } else {
        None
    };
    let target = config::target(&cli.global, &ProcessEnv)?;
    // Commands that wait in the server's time learn a served sandbox's faster clock.
    let waits = matches!(
        cli.command,
        Command::Audit(_) | Command::Agents(_) | Command::Assistant(_) | Command::Mcp(_)
    );
    let session = open(target, out, dry.clone(), waits).await?;
    // A tail and a receiver hear Ctrl-C themselves (between events, so a checkpoint is
    // exact); every other command stops where it is, its guards cleaning up behind it.
    let hears_ctrl_c = matches!(
        cli.command,
        Command::Events(_) | Command::Webhooks(args::WebhooksCommand::Listen { .. })
    );
    let work = command(&session, cli.command);
    let printed = async {
        match &dry {
            Some(dry) => dry.request().await,
            None => std::future::pending().await,
        }
    };
    let result = if hears_ctrl_c {
        tokio::select! {
            result = work => result,
            curl = printed => shown(&session, &curl),
        }
    } else {
        tokio::select! {
            result = work => result,
            curl = printed => shown(&session, &curl),
            _ = tokio::signal::ctrl_c() => Err(Failure::interrupted()),
        }
    };
    let acting_as = session
        .client
        .acting_as()
        .map(|who| who.as_str().to_string());
    if let Some(sandbox) = session.sandbox {
        sandbox.shutdown().await;
    }
    result.map_err(|failure| failure.acting_as(acting_as.as_deref()))
}

/// The transport of a `--dry-run`, for a command that sends requests.
fn dry_run_of(command: &Command) -> Result<Arc<DryRun>, Failure> {
    if let Command::Webhooks(args::WebhooksCommand::Listen { .. }) = command {
        return Err(Failure::usage(
            "--dry-run: webhooks listen sends no request (it receives deliveries)",
        ));
    }
    let dry = Arc::new(DryRun::default());
    // A registration's secret shows as where it came from, never as its value.
    if let Command::Webhooks(
        args::WebhooksCommand::Create(registration)
        | args::WebhooksCommand::Update { registration, .. },
    ) = command
        && let Some(secret) = webhooks::auth_header(registration)?
    {
        let shown = match &registration.auth_header_file {
            Some(path) => format!("$(head -n1 '{}')", path.display()),
            None if registration.auth_header.is_none() => format!("${}", webhooks::SECRET_VAR),
            None => return Ok(dry),
        };
        dry.hide(secret, shown);
    }
    Ok(dry)
}

/// A dry run's request on stdout; nothing was sent.
fn shown(session: &Session, curl: &str) -> Result<(), Failure> {
    session.out.text(curl)?;
    eprintln!("pubapi: --dry-run: the command's first request, not sent");
    if let Some(sandbox) = &session.sandbox {
        eprintln!("{}", gone_sandbox_note(sandbox.base_url()));
    }
    Ok(())
}

/// What a dry run against the built-in sandbox says about the URL it printed.
fn gone_sandbox_note(base_url: &str) -> String {
    format!(
        "pubapi: the request names the built-in sandbox at {base_url}, which stops when this \
         command ends; to send it, serve one that stays (`pubapi sandbox --port 8080`, whose \
         first line sets PUBAPI_BASE_URL and PUBAPI_TOKEN) and run the curl command against it"
    )
}

/// `pubapi completions SHELL`.
fn completions(shell: args::Shell, out: &Output) -> Result<(), Failure> {
    use clap_complete::Shell as To;
    let shell = match shell {
        args::Shell::Bash => To::Bash,
        args::Shell::Zsh => To::Zsh,
        args::Shell::Fish => To::Fish,
        args::Shell::Elvish => To::Elvish,
        args::Shell::Powershell => To::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "pubapi", &mut script);
    out.bytes(&script)
}

/// `pubapi man`: the man page of `pubapi`, with its commands.
fn man(out: &Output) -> Result<(), Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| Failure::failed(format!("cannot render the man page: {e}")))?;
    out.bytes(&page)
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
        Command::Mcp(args) => mcp::serve(session, args).await,
        Command::Sandbox { .. } | Command::Completions { .. } | Command::Man => Ok(()),
    }
}

async fn whoami(session: &Session) -> Result<(), Failure> {
    let me = session.client.identity().whoami().await?;
    if session.out.json {
        return session.out.json_document(&me);
    }
    session.out.pairs(&[
        ("user", me.username.clone()),
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

/// One class's figures and where each came from.
struct ClassQuota {
    class: &'static str,
    per_day: Option<u32>,
    per_day_from: &'static str,
    used: Option<u32>,
    used_from: &'static str,
    per_second: Option<u32>,
    next_call_in: Duration,
}

impl ClassQuota {
    fn of(session: &Session, class: &'static str, limit: LimitClass) -> ClassQuota {
        let quota = session.client.quota(limit);
        let server = quota.server.unwrap_or_default();
        let (per_day, per_day_from) = match server.quota_allotted {
            Some(n) => (Some(n), "gateway"),
            None => (quota.per_day, "this client's budget"),
        };
        let (used, used_from) = match server.quota_current {
            Some(n) => (Some(n), "gateway"),
            None => (quota.used_today, "this process"),
        };
        ClassQuota {
            class,
            per_day,
            per_day_from,
            used,
            used_from,
            per_second: server.qps_allotted,
            next_call_in: quota.next_slot_in,
        }
    }

    fn left(&self) -> Option<u32> {
        Some(self.per_day?.saturating_sub(self.used?))
    }

    /// Which figure came from where, in a few words.
    fn from(&self) -> String {
        match (self.per_day_from, self.used_from) {
            ("gateway", "gateway") => "gateway (x-accesstoken-quota-*)".into(),
            ("gateway", used) => format!("per day: gateway; used: {used}"),
            (per_day, "gateway") => format!("per day: {per_day}; used: gateway"),
            (per_day, used) => format!("{per_day}; used by {used} only"),
        }
    }
}

/// What is left today per class, each figure saying where it came from: the gateway's
/// counters (`x-accesstoken-*`, on the answers that carry them) when known, else this
/// client's budget and this process's count. When nothing is known yet, one `whoami` call
/// asks the gateway (and counts as one).
async fn quota(session: &Session) -> Result<(), Failure> {
    let classes = [("general", LimitClass::General), ("ai", LimitClass::Ai)];
    let known = classes
        .iter()
        .any(|(_, class)| session.client.quota(*class).server.is_some());
    if !known {
        session.client.identity().whoami().await?;
    }
    let rows: Vec<ClassQuota> = classes
        .iter()
        .map(|(name, class)| ClassQuota::of(session, name, *class))
        .collect();
    if session.out.json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| {
                serde_json::json!({
                    "class": row.class,
                    "per_day": row.per_day,
                    "used_today": row.used,
                    "remaining_today": row.left(),
                    "per_second": row.per_second,
                    "next_call_in_ms": u64::try_from(row.next_call_in.as_millis()).unwrap_or(u64::MAX),
                    "from": {"per_day": row.per_day_from, "used_today": row.used_from},
                })
            })
            .collect();
        return session.out.json_document(&rows);
    }
    let number = |n: Option<u32>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    session.out.table(
        &[
            "CLASS",
            "PER DAY",
            "USED TODAY",
            "LEFT TODAY",
            "NEXT CALL",
            "FROM",
        ],
        rows.iter()
            .map(|row| {
                vec![
                    row.class.to_string(),
                    number(row.per_day),
                    number(row.used),
                    number(row.left()),
                    match row.next_call_in {
                        wait if wait < Duration::from_secs(1) => "now".into(),
                        Duration::MAX => "never (no budget)".into(),
                        wait => format!("in {}", failure::human(wait)),
                    },
                    row.from(),
                ]
            })
            .collect(),
    )
}

/// The `pubapi` command: reads the command line, runs the command, and says how it ended
/// (the exit codes of `pubapi --help`).
pub async fn main() -> ExitCode {
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
            if !matches!(
                failure.exit,
                failure::Exit::Interrupted | failure::Exit::ReaderGone
            ) {
                eprintln!("pubapi: {failure}");
            }
            failure.exit.into()
        }
    }
}
