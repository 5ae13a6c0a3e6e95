//! The command line, as clap reads it. Every command's `--help` ends with an example; the
//! audit report kinds and their filters come from the spec (see [`crate::audit`]).

use crate::audit::AuditCommand;
use clap::{Args, Parser, Subcommand, ValueEnum};
use pubapi_sdk_ext::events::PollingEventType;
use std::path::PathBuf;

/// An event type the spec lists: a typo is refused here, not sent.
fn event_type(name: &str) -> Result<PollingEventType, String> {
    let parsed = PollingEventType::from(name);
    if parsed.is_known() {
        Ok(parsed)
    } else {
        Err(format!(
            "not an event type; one of {}",
            PollingEventType::KNOWN.join(", ")
        ))
    }
}

/// The end of `pubapi --help`: configuration, examples, and the exit codes scripts can
/// rely on (see [`crate::failure::Exit`]).
const ROOT_AFTER_HELP: &str = "\
Configuration:
  PUBAPI_DOMAIN (or PUBAPI_BASE_URL) and PUBAPI_TOKEN from the environment, or a profile in
  the config file ($PUBAPI_CONFIG, else $XDG_CONFIG_HOME/pubapi/config.toml, else
  ~/.config/pubapi/config.toml). With nothing configured, or with --sandbox, commands run
  against a sandbox in this process (sample data, no account needed).

Examples:
  pubapi --sandbox whoami
  pubapi --sandbox audit logins --from 2026-01-01 --to 2026-02-01 --format csv --out logins.csv
  pubapi --profile prod events tail --checkpoint events.cp

Exit codes:
  0    done
  1    something else failed (a file could not be written, a receiver could not listen)
  2    usage error: a flag, a value or the configuration is wrong (nothing was sent)
  3    the API refused the request (the message says why and what to do)
  4    a rate limit or quota is exhausted (try again after the time it names)
  5    the API could not be reached, or a wait timed out
  6    audit export stopped before the daily budget would run out (the next run resumes)
  130  interrupted (Ctrl-C); nothing half-written is left behind";

/// `pubapi`: the everyday jobs of the Content Platform Public API from a shell.
#[derive(Debug, Parser)]
#[command(
    name = "pubapi",
    version,
    about = "The Content Platform Public API from a shell: audit reports, events, webhooks, AI.",
    after_help = ROOT_AFTER_HELP
)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes; help lists them apart from a command's own.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Run against a sandbox in this process (sample data, no account needed).
    #[arg(long, global = true)]
    pub sandbox: bool,
    /// The profile of the config file to use (default: the file's `default`).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Act as another user (a username, or an email address): admin tokens only.
    #[arg(long, global = true, value_name = "USER|EMAIL")]
    pub act_as: Option<String>,
    /// Print one JSON document instead of a table (streams print JSON lines anyway).
    #[arg(long, global = true)]
    pub json: bool,
    /// Print the first request the command would send, as a curl command line with the
    /// token as $PUBAPI_TOKEN, and send nothing.
    #[arg(long, global = true)]
    pub dry_run: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Who the token belongs to: user, domain, client and scopes.
    #[command(after_help = "Example:\n  pubapi --sandbox whoami")]
    Whoami,
    /// What is left of today's budget, per limit class.
    #[command(after_help = "Example:\n  pubapi --sandbox quota")]
    Quota,
    /// AI agents: list them, ask one.
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// The AI assistant.
    #[command(subcommand)]
    Assistant(AssistantCommand),
    /// Questions and summaries of one document.
    #[command(subcommand)]
    Documents(DocumentsCommand),
    /// Knowledge bases: list them, ask one.
    #[command(subcommand)]
    Kb(KbCommand),
    /// Hybrid (keyword and semantic) search of the documents.
    #[command(after_help = "Example:\n  pubapi --sandbox search \"travel policy\" --size 5")]
    Search(SearchArgs),
    /// Audit reports: run one of the 14 kinds to CSV or JSON, or look after existing ones.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// The events stream.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Webhook registrations, and a receiver that prints deliveries.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// An MCP server for AI agents: audit reports, events, webhooks, quota (stdio or HTTP)
    #[command(after_help = crate::mcp::MCP_HELP)]
    Mcp(crate::mcp::McpArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  pubapi completions bash > ~/.local/share/bash-completion/completions/pubapi\n  \
                            pubapi completions zsh > \"${fpath[1]}/_pubapi\""
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff), generated from the same definitions as --help.
    #[command(after_help = "Example:\n  pubapi man > /usr/local/share/man/man1/pubapi.1")]
    Man,
    /// Serve the sandbox (the options of `pubapi-sandbox`; `pubapi sandbox --help` lists them).
    #[command(
        disable_help_flag = true,
        after_help = "Example:\n  pubapi sandbox --port 8080 --limits off --sample-history"
    )]
    Sandbox {
        /// Options and commands of `pubapi-sandbox`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
}

/// The shells `pubapi completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
    /// Elvish.
    Elvish,
    /// PowerShell.
    Powershell,
}

/// `pubapi agents …`
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// The agents this user may ask.
    #[command(after_help = "Example:\n  pubapi --sandbox agents list")]
    List,
    /// Ask an agent and wait for its answer.
    #[command(
        after_help = "Example:\n  pubapi --sandbox agents ask agt-policy-helper \
                            \"How much are hotel costs per night?\""
    )]
    Ask {
        /// The agent's id (`pubapi agents list` shows them).
        agent: String,
        /// The question (1 to 35,000 characters).
        question: String,
    },
}

/// `pubapi assistant …`
#[derive(Debug, Subcommand)]
pub enum AssistantCommand {
    /// Ask the assistant and wait for its answer.
    #[command(after_help = "Example:\n  pubapi --sandbox assistant ask \
                            \"What happens when a webhook delivery fails?\" --citations")]
    Ask {
        /// The question (1 to 35,000 characters).
        question: String,
        /// Also list the documents the answer cites.
        #[arg(long)]
        citations: bool,
    },
}

/// `pubapi documents …`
#[derive(Debug, Subcommand)]
pub enum DocumentsCommand {
    /// Ask a question about one document.
    #[command(after_help = "Example:\n  pubapi --sandbox documents ask 4100002 \
                            \"What is the daily meal allowance?\"")]
    Ask {
        /// The document's entry id.
        entry: String,
        /// The question (1 to 35,000 characters).
        question: String,
    },
    /// Summarize one document.
    #[command(after_help = "Example:\n  pubapi --sandbox documents summarize 4100002")]
    Summarize {
        /// The document's entry id.
        entry: String,
    },
}

/// `pubapi kb …`
#[derive(Debug, Subcommand)]
pub enum KbCommand {
    /// The knowledge bases.
    #[command(after_help = "Example:\n  pubapi --sandbox kb list --status ACTIVE")]
    List {
        /// Only these statuses (ACTIVE, CREATED, …); repeat or separate with commas.
        #[arg(long, value_delimiter = ',')]
        status: Vec<String>,
    },
    /// Ask a knowledge base.
    #[command(
        after_help = "Example:\n  pubapi --sandbox kb ask kb-company-policies \
                            \"How long are invoices kept?\""
    )]
    Ask {
        /// The knowledge base's id (`pubapi kb list` shows them).
        kb: String,
        /// The question (1 to 35,000 characters).
        question: String,
    },
}

/// `pubapi search …`
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// Results per page.
    #[arg(long, default_value_t = 10)]
    pub size: i64,
    /// 0 for keywords only, 1 for meaning only.
    #[arg(long, value_name = "0..1")]
    pub semantic_weight: Option<f64>,
    /// Only documents below this folder.
    #[arg(long, value_name = "PATH")]
    pub folder: Option<String>,
}

/// `pubapi events …`
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Print events as JSON lines, following the stream; resumable with --checkpoint.
    #[command(
        after_help = "Examples:\n  pubapi --sandbox events tail --no-follow\n  \
                            pubapi events tail --type permission_change --checkpoint perms.cp\n\n\
                            With --checkpoint, a stopped tail (Ctrl-C, --max-events) starts \
                            again after\nthe last event it printed: none twice, none skipped."
    )]
    Tail(TailArgs),
}

/// Which events list a tail reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Start {
    /// Everything the platform still keeps (up to 30 days).
    Oldest,
    /// Only what happens from now on.
    Latest,
}

/// `pubapi events tail …`
#[derive(Debug, Args)]
pub struct TailArgs {
    /// Read `GET /v1/events` (file system and notes; v2 adds permission changes).
    #[arg(long, conflicts_with = "v2")]
    pub v1: bool,
    /// Read `GET /v2/events` (the default).
    #[arg(long)]
    pub v2: bool,
    /// Only these event types (file_system, note, permission_change); repeatable.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',', value_parser = event_type)]
    pub types: Vec<PollingEventType>,
    /// Only events at this folder and below.
    #[arg(long, value_name = "PATH")]
    pub folder: Option<String>,
    /// Leave out the events of this application (app) or this user (user).
    #[arg(long, value_name = "app|user")]
    pub suppress: Option<String>,
    /// Keep the position in FILE: start after it, save it after every event printed.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Where to start without a checkpoint.
    #[arg(long, value_enum, default_value_t = Start::Oldest)]
    pub from: Start,
    /// Stop once caught up instead of waiting for new events (5 minutes between polls).
    #[arg(long)]
    pub no_follow: bool,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
}

/// `pubapi webhooks …`
#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// The registrations of this user and client.
    #[command(after_help = "Example:\n  pubapi --sandbox webhooks list")]
    List,
    /// Register a webhook.
    #[command(
        after_help = "Examples:\n  PUBAPI_WEBHOOK_SECRET=… pubapi webhooks create \
                            --url https://hooks.example.com/in --event 'fs:*' --path /Projects\n  \
                            pubapi --sandbox webhooks create --url http://127.0.0.1:9000/ \
                            --loopback-for-tests --event 'fs:*'"
    )]
    Create(RegistrationArgs),
    /// One registration in full.
    #[command(after_help = "Example:\n  pubapi webhooks details whk-123")]
    Details {
        /// The webhook id.
        id: String,
    },
    /// Enable a registration (also one the platform disabled after failed deliveries).
    #[command(after_help = "Example:\n  pubapi webhooks enable whk-123")]
    Enable {
        /// The webhook id.
        id: String,
    },
    /// Disable a registration.
    #[command(after_help = "Example:\n  pubapi webhooks disable whk-123")]
    Disable {
        /// The webhook id.
        id: String,
    },
    /// Replace a registration's URL, events, paths and header.
    #[command(
        after_help = "Example:\n  pubapi webhooks update whk-123 --url https://hooks.example.com/v2 \
                            --event 'fs:*'"
    )]
    Update {
        /// The webhook id.
        id: String,
        /// The new registration.
        #[command(flatten)]
        registration: RegistrationArgs,
    },
    /// Delete a registration.
    #[command(after_help = "Example:\n  pubapi webhooks delete whk-123")]
    Delete {
        /// The webhook id.
        id: String,
    },
    /// Renew a registration before it expires: registers it again and deletes the old one.
    #[command(after_help = "Example:\n  pubapi webhooks renew whk-123 --within 7d")]
    Renew {
        /// The webhook id.
        id: String,
        /// Only when it expires within this long (90s, 10m, 2h, 7d; default: always).
        #[arg(long, value_name = "DURATION")]
        within: Option<String>,
    },
    /// Receive deliveries on a local port and print each event as a JSON line.
    #[command(after_help = "Examples:\n  \
                            PUBAPI_WEBHOOK_SECRET=… pubapi webhooks listen --port 9000\n  \
                            pubapi webhooks listen --port 9000 --secret-file ~/.config/pubapi/hook.secret\n\n\
                            A delivery without the secret is refused (401) and said on stderr.")]
    Listen {
        /// The port to listen on (0: any free port, printed on stderr).
        #[arg(long)]
        port: u16,
        /// The shared secret deliveries carry in their Authorization header.
        #[command(flatten)]
        secret: ListenSecret,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        bind: String,
    },
}

/// Where `webhooks listen` reads its secret: a file, the environment (`$PUBAPI_WEBHOOK_SECRET`,
/// when neither flag is given) or the command line (seen in shell history and `ps`).
#[derive(Debug, Args)]
pub struct ListenSecret {
    /// Read the secret from FILE (its first line) [default: $PUBAPI_WEBHOOK_SECRET].
    #[arg(long, value_name = "FILE", conflicts_with = "secret")]
    pub secret_file: Option<PathBuf>,
    /// The secret itself (shows in shell history: prefer --secret-file or
    /// $PUBAPI_WEBHOOK_SECRET).
    #[arg(long, value_name = "SECRET")]
    pub secret: Option<String>,
}

/// A registration's fields.
#[derive(Debug, Args)]
pub struct RegistrationArgs {
    /// Where deliveries go (https://).
    #[arg(long)]
    pub url: String,
    /// Event names or wildcards (fs:add_file, fs:*, …); repeatable.
    #[arg(
        long = "event",
        value_name = "NAME",
        required = true,
        value_delimiter = ','
    )]
    pub events: Vec<String>,
    /// Only events at these paths; repeatable.
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// The Authorization header value deliveries carry, the receiver's secret (shows in
    /// shell history: prefer --auth-header-file or $PUBAPI_WEBHOOK_SECRET).
    #[arg(long, value_name = "VALUE", conflicts_with = "auth_header_file")]
    pub auth_header: Option<String>,
    /// Read the Authorization header value from FILE (its first line)
    /// [default: $PUBAPI_WEBHOOK_SECRET, when set].
    #[arg(long, value_name = "FILE")]
    pub auth_header_file: Option<PathBuf>,
    /// Accept an http:// URL on a loopback host (a sandbox's test mode).
    #[arg(long)]
    pub loopback_for_tests: bool,
    /// Register without first checking the https endpoint's certificate against the public
    /// roots, as the platform will (it refuses self-signed and private-CA certificates): for
    /// an endpoint not deployed yet.
    #[arg(long)]
    pub skip_endpoint_check: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn without_example(command: &clap::Command, path: String, missing: &mut Vec<String>) {
        let subcommands: Vec<&clap::Command> = command
            .get_subcommands()
            .filter(|c| c.get_name() != "help")
            .collect();
        let has_example = command
            .get_after_help()
            .is_some_and(|help| help.to_string().contains("Example"));
        if !has_example {
            missing.push(path.clone());
        }
        for sub in subcommands {
            without_example(sub, format!("{path} {}", sub.get_name()), missing);
        }
    }

    #[test]
    fn every_command_has_help_with_an_example() {
        let mut missing = Vec::new();
        let root = Cli::command();
        for sub in root.get_subcommands().filter(|c| c.get_name() != "help") {
            if sub.has_subcommands() {
                // A group's own help may list examples; every command in it must.
                for leaf in sub.get_subcommands().filter(|c| c.get_name() != "help") {
                    without_example(
                        leaf,
                        format!("{} {}", sub.get_name(), leaf.get_name()),
                        &mut missing,
                    );
                }
            } else {
                without_example(sub, sub.get_name().to_string(), &mut missing);
            }
        }
        assert!(missing.is_empty(), "no example in the help of: {missing:?}");
        Cli::command().debug_assert();
    }
}
