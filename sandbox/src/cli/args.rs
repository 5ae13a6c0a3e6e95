//! The command line, read into a [`Command`]: `serve` (the default) with its options, or one
//! of the control commands that drive a running sandbox through `/_sandbox`.

use crate::{ClockConfig, LimitsConfig, SandboxConfig};
use serde_json::{Value, json};

pub(crate) const USAGE: &str = "\
usage: pubapi-sandbox [serve] [--port N] [--limits L] [--clock C] [--time-scale X] [--seed N]
                              [--sample-history] [--control-token T] [-v]
       pubapi-sandbox <control command> [--url URL]
       pubapi-sandbox receive --port N [--auth SECRET]

serve (the default): a sandbox of the Content Platform Public API on 127.0.0.1 until Ctrl-C.
Prints `PUBAPI_BASE_URL=<url> PUBAPI_TOKEN=<admin token>` first, then the other users.
  --port N         port on 127.0.0.1 (default: any free port)
  --limits L       reference (default), off, or windows such as general=2/s,1000/d,ai=10/m,100/d
  --clock C        real (default), manual (frozen at 2025-03-03T09:00:00Z), or a date or UTC
                   time to start a frozen clock at (2026-09-29, 2026-09-29T12:00:00Z)
  --time-scale X   sandbox seconds per real second on the real clock (default 1)
  --seed N         seed of ids, tokens and synthetic data (default 42)
  --sample-history start with the default users' activity since 2025-12-01 (logins, files,
                   notes, permission changes): reports and events have something to show
  --control-token T  the control plane answers only requests with this token (authorization:
                   Bearer T), from any Host; without it, only requests to the sandbox's own
                   loopback address from no other web origin
  -v, --verbose    log each API request to standard error: sandbox time, method, path,
                   status and operation

control commands (talk to the sandbox at --url, default $PUBAPI_BASE_URL, with the token in
$PUBAPI_SANDBOX_CONTROL_TOKEN if it has one):
  status                               clock, limits, users and tokens, counters
  activity create-folder PATH          also: create-file PATH [--content TEXT],
                                       move FROM TO, copy FROM TO, delete PATH,
                                       restore PATH, note PATH TEXT,
                                       permission FOLDER ASSIGNEE [--old P] [--new P],
                                       login EVENT IP ACCESS
           [--as USER] [--impersonated-by ADMIN] [--via SOURCE]
  fault add ACTION [VALUE]             server-error, status CODE, drop-connection,
                                       malformed-json, delay MS, throttle SECONDS,
                                       quota-exhausted SECONDS, slow-body BYTES_PER_SECOND,
                                       cut-body BYTES
           [--operation ID | --tag TAG] [--after N] [--times N]
  fault list | fault clear
  clock show | clock advance 90s|10m|2h|1d | clock set DATE | clock scale X
  limits show | limits reference|off|general=2/s,1000/d,ai=10/m,100/d
  reset                                back to the start state
  deliveries                           every webhook delivery attempt

receive: a webhook receiver on 127.0.0.1:N that prints each delivery as one JSON line and
answers 200 (401 when --auth is given and the authorization header differs).

Example:
  pubapi-sandbox --port 8080 --limits off &
  pubapi-sandbox receive --port 9000 --auth s3cr3t &
  export PUBAPI_BASE_URL=http://127.0.0.1:8080/pubapi
  pubapi-sandbox activity create-folder /Projects --as sam";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub(crate) enum Command {
    /// Print the usage.
    Help,
    /// Serve a sandbox.
    Serve {
        /// How it starts.
        config: Box<SandboxConfig>,
        /// Whether each request is logged (`-v`).
        verbose: bool,
    },
    /// Send a control request to a running sandbox.
    Control {
        /// `--url`, when given.
        url: Option<String>,
        /// `GET`, `POST`, `PUT` or `DELETE`.
        method: &'static str,
        /// Below `/_sandbox`.
        path: &'static str,
        /// The JSON body, if any.
        body: Option<Value>,
    },
    /// Serve a printing webhook receiver.
    Receive {
        /// The port on 127.0.0.1.
        port: u16,
        /// The `authorization` value deliveries must carry.
        auth: Option<String>,
    },
}

/// Positional words and `--name value` options, in order.
struct Words {
    positional: Vec<String>,
    options: Vec<(String, String)>,
}

/// Options that take no value.
const FLAGS: &[&str] = &["--help", "-h", "--sample-history", "-v", "--verbose"];

fn split(args: &[String]) -> Result<Words, String> {
    let mut words = Words {
        positional: Vec::new(),
        options: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if FLAGS.contains(&arg.as_str()) {
            words.options.push((arg.clone(), String::new()));
        } else if let Some(option) = arg.strip_prefix("--") {
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name.to_string(), value.to_string()),
                None => {
                    let value = args
                        .next()
                        .ok_or_else(|| format!("--{option} needs a value"))?;
                    (option.to_string(), value.clone())
                }
            };
            words.options.push((format!("--{name}"), value));
        } else {
            words.positional.push(arg.clone());
        }
    }
    Ok(words)
}

impl Words {
    /// The value of `--name` (the last one given).
    fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses an option not in `allowed`.
    fn only(&self, allowed: &[&str]) -> Result<(), String> {
        match self
            .options
            .iter()
            .find(|(n, _)| !allowed.contains(&n.as_str()))
        {
            Some((name, _)) => Err(format!("unknown option {name}")),
            None => Ok(()),
        }
    }

    /// The value of `--name` as a number.
    fn number<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, String> {
        self.option(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("{name} takes {what}, not `{v}`"))
            })
            .transpose()
    }
}

/// Reads the command line (without the program name).
pub(crate) fn parse(args: &[String]) -> Result<Command, String> {
    let words = split(args)?;
    if words.option("--help").is_some() || words.option("-h").is_some() {
        return Ok(Command::Help);
    }
    let positional: Vec<&str> = words.positional.iter().map(String::as_str).collect();
    match positional.as_slice() {
        [] | ["serve"] => serve(&words),
        ["receive"] => {
            words.only(&["--port", "--auth"])?;
            let port = words
                .number("--port", "a port number")?
                .ok_or("receive needs --port")?;
            Ok(Command::Receive {
                port,
                auth: words.option("--auth").map(str::to_string),
            })
        }
        [command, rest @ ..] => control(command, rest, &words),
    }
}

fn serve(words: &Words) -> Result<Command, String> {
    words.only(&[
        "--port",
        "--limits",
        "--clock",
        "--time-scale",
        "--seed",
        "--sample-history",
        "--control-token",
        "-v",
        "--verbose",
    ])?;
    let mut config = SandboxConfig {
        sample_history: words.option("--sample-history").is_some(),
        ..SandboxConfig::default()
    };
    if let Some(port) = words.number("--port", "a port number from 0 to 65535")? {
        config.port = port;
    }
    if let Some(seed) = words.number("--seed", "a non-negative integer")? {
        config.seed = seed;
    }
    if let Some(token) = words.option("--control-token") {
        if token.trim().is_empty() {
            return Err("--control-token must not be empty".into());
        }
        config.server.control_token = Some(token.to_string());
    }
    if let Some(limits) = words.option("--limits") {
        config.limits = limits
            .parse::<LimitsConfig>()
            .map_err(|e| format!("--limits: {e}"))?;
    }
    let scale: Option<f64> = words.number("--time-scale", "a number")?;
    if let Some(scale) = scale
        && !(scale.is_finite() && scale > 0.0)
    {
        return Err("--time-scale must be above 0".into());
    }
    config.clock = match words.option("--clock") {
        None | Some("real") => ClockConfig::scaled(scale.unwrap_or(1.0)),
        Some(_) if scale.is_some() => {
            return Err("--time-scale is for the real clock; a manual clock stands still".into());
        }
        Some("manual") => ClockConfig::manual(),
        Some(date) => ClockConfig::Manual {
            start_ms: crate::parse_time(date).ok_or_else(|| {
                format!("--clock takes real, manual, or a date such as 2026-09-29, not `{date}`")
            })?,
        },
    };
    Ok(Command::Serve {
        config: Box::new(config),
        verbose: words.option("-v").is_some() || words.option("--verbose").is_some(),
    })
}

fn control(command: &str, rest: &[&str], words: &Words) -> Result<Command, String> {
    let mut allowed: &[&str] = &["--url"];
    let (method, path, body) = match (command, rest) {
        ("status", []) => ("GET", "", None),
        ("reset", []) => ("POST", "/reset", None),
        ("deliveries", []) => ("GET", "/deliveries", None),
        ("activity", [action, args @ ..]) => {
            allowed = &[
                "--url",
                "--as",
                "--impersonated-by",
                "--via",
                "--content",
                "--old",
                "--new",
            ];
            ("POST", "/activity", Some(activity(action, args, words)?))
        }
        ("fault", ["list"]) => ("GET", "/faults", None),
        ("fault", ["clear"]) => ("DELETE", "/faults", None),
        ("fault", ["add", action, value @ ..]) => {
            allowed = &["--url", "--operation", "--tag", "--after", "--times"];
            ("POST", "/faults", Some(fault(action, value, words)?))
        }
        ("clock", ["show"]) => ("GET", "/clock", None),
        ("clock", ["advance", by]) => {
            let ms = duration_ms(by)?;
            ("POST", "/clock", Some(json!({ "advanceMs": ms })))
        }
        ("clock", ["set", to]) => ("POST", "/clock", Some(json!({ "to": to }))),
        ("clock", ["scale", x]) => {
            let scale: f64 = x.parse().map_err(|_| format!("`{x}` is not a number"))?;
            ("POST", "/clock", Some(json!({ "scale": scale })))
        }
        ("limits", ["show"]) => ("GET", "/limits", None),
        ("limits", [text]) => {
            text.parse::<LimitsConfig>()?;
            ("PUT", "/limits", Some(json!(text)))
        }
        _ => return Err(format!("unknown command: {command} {}", rest.join(" "))),
    };
    words.only(allowed)?;
    Ok(Command::Control {
        url: words.option("--url").map(str::to_string),
        method,
        path,
        body,
    })
}

fn activity(action: &str, args: &[&str], words: &Words) -> Result<Value, String> {
    let mut body = match (action, args) {
        ("create-folder", [path]) => json!({ "action": "createFolder", "path": path }),
        ("create-file", [path]) => json!({
            "action": "createFile",
            "path": path,
            "content": words.option("--content").unwrap_or(""),
        }),
        ("move", [from, to]) => json!({ "action": "move", "from": from, "to": to }),
        ("copy", [from, to]) => json!({ "action": "copy", "from": from, "to": to }),
        ("delete", [path]) => json!({ "action": "delete", "path": path }),
        ("restore", [path]) => json!({ "action": "restore", "path": path }),
        ("note", [path, text]) => json!({ "action": "addNote", "path": path, "text": text }),
        ("permission", [folder, assignee]) => json!({
            "action": "changePermission",
            "folder": folder,
            "assignee": assignee,
            "old": words.option("--old"),
            "new": words.option("--new"),
        }),
        ("login", [event, ip, access]) => json!({
            "action": "login", "event": event, "ipAddress": ip, "access": access,
        }),
        _ => {
            return Err(format!(
                "unknown activity: {action} {} (see --help)",
                args.join(" ")
            ));
        }
    };
    for (option, field) in [
        ("--as", "as"),
        ("--impersonated-by", "impersonatedBy"),
        ("--via", "via"),
    ] {
        if let Some(value) = words.option(option) {
            body[field] = json!(value);
        }
    }
    Ok(body)
}

fn fault(action: &str, value: &[&str], words: &Words) -> Result<Value, String> {
    let number = |what: &str| -> Result<u64, String> {
        match value {
            [v] => v
                .parse()
                .map_err(|_| format!("{action} takes {what}, not `{v}`")),
            _ => Err(format!("{action} takes one value: {what}")),
        }
    };
    let mut body = match action {
        "server-error" => json!({ "action": "serverError" }),
        "drop-connection" => json!({ "action": "dropConnection" }),
        "malformed-json" => json!({ "action": "malformedJson" }),
        "status" => json!({ "action": "status", "status": number("a status code")? }),
        "delay" => json!({ "action": "delay", "ms": number("milliseconds")? }),
        "throttle" => json!({ "action": "throttle", "retryAfter": number("seconds")? }),
        "quota-exhausted" => {
            json!({ "action": "quotaExhausted", "retryAfter": number("seconds")? })
        }
        "slow-body" => {
            json!({ "action": "slowBody", "bytesPerSecond": number("bytes per second")? })
        }
        "cut-body" => json!({ "action": "cutBody", "afterBytes": number("bytes")? }),
        other => return Err(format!("unknown fault `{other}` (see --help)")),
    };
    if let Some(operation) = words.option("--operation") {
        body["operation"] = json!(operation);
    }
    if let Some(tag) = words.option("--tag") {
        body["tag"] = json!(tag);
    }
    if let Some(after) = words.number::<u32>("--after", "a count")? {
        body["after"] = json!(after);
    }
    if let Some(times) = words.number::<u32>("--times", "a count")? {
        body["times"] = json!(times);
    }
    Ok(body)
}

/// `90s`, `10m`, `2h`, `1d` or plain milliseconds.
fn duration_ms(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 90s, 10m, 2h or 1d"))?;
    let unit_ms = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "`{text}` is not a duration such as 90s, 10m, 2h or 1d"
            ));
        }
    };
    number
        .checked_mul(unit_ms)
        .ok_or_else(|| format!("`{text}` is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Command, String> {
        let args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        parse(&args)
    }

    fn serve_config(line: &str) -> SandboxConfig {
        match parse_line(line) {
            Ok(Command::Serve { config, .. }) => *config,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn serve_options_parse() {
        let config = serve_config("--port 8080 --time-scale=60 --seed 7");
        assert_eq!(config.port, 8080);
        assert_eq!(config.seed, 7);
        assert_eq!(config.clock, ClockConfig::scaled(60.0));
        assert_eq!(
            serve_config("serve --limits off").limits,
            LimitsConfig::off()
        );
        assert_eq!(
            serve_config("--limits general=5/s,ai=10/d").limits,
            LimitsConfig {
                general_per_second: Some(5),
                ai_per_day: Some(10),
                ..LimitsConfig::off()
            }
        );
        assert_eq!(serve_config("--clock manual").clock, ClockConfig::manual());
        assert_eq!(
            serve_config("--clock 2026-09-29").clock,
            ClockConfig::Manual {
                start_ms: 1_790_640_000_000
            }
        );
        assert_eq!(parse_line("--help"), Ok(Command::Help));
    }

    #[test]
    fn dash_v_asks_for_the_request_log() {
        for (line, verbose) in [
            ("--port 8080", false),
            ("-v", true),
            ("serve --verbose --port 0", true),
            ("--port 0 -v", true),
        ] {
            match parse_line(line) {
                Ok(Command::Serve { verbose: v, .. }) => assert_eq!(v, verbose, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    /// Asserts that each line is refused with an error that holds its text.
    #[track_caller]
    fn assert_refused(cases: &[(&str, &str)]) {
        for (line, says) in cases {
            let error = parse_line(line).unwrap_err();
            assert!(error.contains(says), "{line}: {error}");
        }
    }

    #[test]
    fn bad_serve_options_are_named() {
        assert_refused(&[
            ("--port", "--port needs a value"),
            ("--port x", "--port takes a port number"),
            ("--time-scale 0", "--time-scale must be above 0"),
            ("--bogus 1", "unknown option --bogus"),
            ("--limits some", "--limits: "),
            ("--clock yesterday", "--clock takes real, manual, or a date"),
            (
                "--clock manual --time-scale 2",
                "a manual clock stands still",
            ),
        ]);
    }

    #[test]
    fn control_commands_become_requests() {
        let cases = [
            ("status", "GET", "", None),
            ("reset --url http://x", "POST", "/reset", None),
            (
                "activity create-folder /Projects --as sam",
                "POST",
                "/activity",
                Some(json!({ "action": "createFolder", "path": "/Projects", "as": "sam" })),
            ),
            (
                "fault add status 503 --operation whoami --times 2",
                "POST",
                "/faults",
                Some(
                    json!({ "action": "status", "status": 503, "operation": "whoami", "times": 2 }),
                ),
            ),
            (
                "clock advance 2h",
                "POST",
                "/clock",
                Some(json!({ "advanceMs": 7_200_000 })),
            ),
            ("limits off", "PUT", "/limits", Some(json!("off"))),
        ];
        for (line, method, path, body) in cases {
            match parse_line(line) {
                Ok(Command::Control {
                    method: m,
                    path: p,
                    body: b,
                    ..
                }) => {
                    assert_eq!((m, p, b), (method, path, body), "{line}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_control_commands_are_named() {
        assert_refused(&[
            ("fault add explode", "unknown fault `explode`"),
            ("fault add status", "status takes one value"),
            ("clock advance soon", "not a duration"),
            (
                "limits general=0/s",
                "general limit `0/s`: `0` is not a whole number from 1",
            ),
            ("activity fly /x", "unknown activity"),
            ("status --as sam", "unknown option --as"),
            ("receive", "receive needs --port"),
        ]);
    }
}
