//! `pubapi` run as a process, as a user runs it: against `--sandbox`, and against a sandbox
//! served by the test (`PUBAPI_BASE_URL` and `PUBAPI_TOKEN`), so that state carries from
//! one command to the next.

mod support;

use pubapi_sandbox::{ClockConfig, Fault, LimitsConfig, Sandbox, SandboxConfig};
use pubapi_testkit::tls_endpoint::{Certificates, Endpoint};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Run, finished, pubapi};

/// The words of a command line, split at white space (the lines here quote nothing).
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The words of `line`, then `rest` (paths, and arguments with spaces) as they are.
fn argv<'a>(line: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = words(line);
    args.extend_from_slice(rest);
    args
}

/// `pubapi args` run to the end with the configuration file `config`.
fn run_with_config(config: &Path, args: &[&str]) -> Run {
    finished(
        pubapi()
            .env("PUBAPI_CONFIG", config)
            .args(args)
            .output()
            .unwrap(),
    )
}

fn run_sandboxed(args: &[&str]) -> Run {
    finished(pubapi().arg("--sandbox").args(args).output().unwrap())
}

/// A sandbox the test serves, and the environment pointing `pubapi` at it.
struct Served {
    sandbox: Sandbox,
}

impl Served {
    async fn start() -> Served {
        let mut config = SandboxConfig::default()
            .with_clock(ClockConfig::scaled(60.0))
            .with_limits(LimitsConfig::off())
            .with_sample_history();
        // The CLI polls a job at once, then 2 real minutes later: finish jobs at once.
        config.audit.job_duration = Duration::ZERO;
        config.webhooks.allow_http_loopback = true;
        // AI answers at the first poll (the CLI polls on the platform's schedule, 5 s on).
        config.ai.agent_polls = 1;
        config.ai.assistant_polls = 1;
        Served {
            sandbox: Sandbox::start(config).await,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = pubapi();
        command
            .env("PUBAPI_BASE_URL", self.sandbox.base_url())
            .env("PUBAPI_TOKEN", self.sandbox.admin_token())
            .args(args);
        command
    }

    /// Adds `fault` to the sandbox's answers.
    fn inject(&self, fault: Fault) {
        self.sandbox.inject(fault);
    }

    /// A new folder of `sam`'s: activity, for the events and the deliveries.
    fn new_folder(&self, path: &str) {
        self.sandbox
            .activity_as("sam")
            .create_folder(path)
            .unwrap_or_else(|_| panic!("activity"));
    }

    /// Runs `pubapi args` to the end, off the runtime's threads.
    async fn run(&self, args: &[&str]) -> Run {
        let mut command = self.command(args);
        let run = tokio::task::spawn_blocking(move || finished(command.output().unwrap()))
            .await
            .unwrap();
        let token = self.sandbox.admin_token();
        assert!(
            !run.stdout.contains(&token) && !run.stderr.contains(&token),
            "pubapi {args:?} printed the token"
        );
        run
    }
}

/// `command` started with its stdout thrown away and its stderr piped (kept for the output a
/// failing test prints).
fn started(command: &mut Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `command` started with `stdout` as given and its stderr piped, and a reader of its stderr.
fn spawned(command: &mut Command, stdout: Stdio) -> (Child, BufReader<ChildStderr>) {
    let mut child = command
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    (child, stderr)
}

/// Reads `stderr` up to a line that says `says`, for 30 s at most.
fn wait_until_it_says(stderr: &mut impl BufRead, says: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut line = String::new();
    while !line.contains(says) {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0 && Instant::now() < deadline);
    }
}

/// The URL `webhooks listen` says it listens on, on the first line of its stderr.
fn listening_url(stderr: &mut impl BufRead) -> String {
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string()
}

/// Ctrl-C for a child: SIGINT, as a terminal sends it.
fn interrupt(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "SIGINT to {}", child.id());
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pubapi-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The checkpoint file `cp` of a tail in `dir`, as an argument.
fn checkpoint_in(dir: &Path) -> String {
    dir.join("cp").to_str().unwrap().to_owned()
}

/// A configuration file holding `toml`, in a folder of the test's own (`name`).
fn config_file(name: &str, toml: &str) -> PathBuf {
    let config = temp_dir(name).join("config.toml");
    std::fs::write(&config, toml).unwrap();
    config
}

fn event_ids(stdout: &str) -> Vec<i64> {
    stdout
        .lines()
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            event["id"].as_i64().unwrap()
        })
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_audit_run_on_the_sandbox_writes_a_csv_with_a_header_and_rows() {
    let dir = temp_dir("audit-csv");
    let out = dir.join("logins.csv");
    let run = run_sandboxed(&argv(
        "audit logins --from 2026-01-01 --to 2026-02-01 --format csv --out",
        &[out.to_str().unwrap()],
    ));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let csv = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("This report reflects activity up to"),
        "{csv}"
    );
    assert_eq!(lines[1], "Username,Event,IP Address,Access,Time");
    assert!(lines.len() > 90, "{} lines", lines.len());
    // A plain `--to` date covers its whole day.
    assert!(
        lines[2..]
            .iter()
            .all(|l| l.contains(",2026-01-") || l.contains(",2026-02-01T")),
        "{csv}"
    );
    assert_eq!(files_in(&dir), ["logins.csv"], "no temporary file is left");
    assert!(run.stderr.contains("written"), "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "the report went to the file: {}",
        run.stdout
    );
}

#[test]
fn a_json_report_is_one_array_of_the_events() {
    let run = run_sandboxed(&words(
        "audit logins --from 2026-01-01 --to 2026-01-03 --events failed_attempts --format json",
    ));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|e| e["event"] == "failed_attempts"),
        "{events:?}"
    );
    // One event a line between the brackets.
    assert_eq!(
        run.stdout.lines().count(),
        events.len() + 2,
        "{}",
        run.stdout
    );
}

#[test]
fn exit_codes_tell_usage_api_and_network_failures_apart() {
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &words("audit users --from 2026-02-01 --to 2026-01-01"),
            2,
            "--to 2026-01-01 is not after --from 2026-02-01",
        ),
        (
            &words("audit logins --from yesterday --to 2026-01-01"),
            2,
            "--from",
        ),
        (&["audit", "get", "logins"], 2, "KIND/ID"),
        (&["audit", "status", "no-such-job"], 3, "404"),
        (&["agents", "ask", "agt-policy-helper", ""], 2, "question"),
        (
            &words("webhooks create --url http://example.com/in --event fs:*"),
            2,
            "https",
        ),
        (
            &words("webhooks create --url https://example.com/in --event fs:nope"),
            2,
            "fs:nope",
        ),
        (
            // A typo in an event type is refused by the command line, before any request.
            &["events", "tail", "--type", "bogus", "--no-follow"],
            2,
            "not an event type; one of file_system, note, permission_change",
        ),
        (&["nope"], 2, "unrecognized subcommand"),
    ];
    for (args, code, says) in cases {
        let run = run_sandboxed(args);
        assert_eq!(run.code, *code, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
    let unreachable = finished(
        pubapi()
            .env("PUBAPI_BASE_URL", "http://127.0.0.1:9/pubapi")
            .env("PUBAPI_TOKEN", "tok-unreachable-0123456789")
            .arg("whoami")
            .output()
            .unwrap(),
    );
    unreachable.assert_says(5, &["hint:"]);
    assert!(
        !unreachable.stderr.contains("tok-unreachable"),
        "{}",
        unreachable.stderr
    );
}

#[test]
fn nothing_configured_runs_on_the_sandbox_with_a_one_line_notice() {
    let run = finished(pubapi().arg("whoami").output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("sandbox"), "{}", run.stderr);
    assert!(run.stdout.contains("admin"), "{}", run.stdout);
}

#[test]
fn tables_on_the_sandbox() {
    for (args, name) in [
        (&["agents", "list"][..], "agents_list"),
        (&["kb", "list"][..], "kb_list"),
        (&["whoami"][..], "whoami"),
    ] {
        let run = run_sandboxed(args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(name, run.stdout);
    }
}

#[test]
fn help_of_the_main_commands() {
    for (args, name) in [
        (&["--help"][..], "help"),
        (&["audit", "--help"][..], "help_audit"),
        (&["audit", "logins", "--help"][..], "help_audit_logins"),
        (&["events", "tail", "--help"][..], "help_events_tail"),
        (&["webhooks", "--help"][..], "help_webhooks"),
    ] {
        let run = finished(pubapi().args(args).output().unwrap());
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(name, run.stdout);
    }
    let forwarded = finished(pubapi().args(["sandbox", "--help"]).output().unwrap());
    assert_eq!(forwarded.code, 0, "{}", forwarded.stderr);
    assert!(
        forwarded.stdout.starts_with("usage: pubapi sandbox"),
        "{}",
        forwarded.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_stopped_and_started_again_prints_no_event_twice_and_skips_none() {
    let served = Served::start().await;
    let dir = temp_dir("tail");
    let cp = &checkpoint_in(&dir);
    let all = served.run(&["events", "tail", "--no-follow"]).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    let all = event_ids(&all.stdout);
    assert!(all.len() > 20, "{}", all.len());

    let first = served
        .run(&["events", "tail", "--checkpoint", cp, "--max-events", "7"])
        .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    // New activity between the two runs is read by the second.
    served.new_folder("/Between");
    let second = served
        .run(&["events", "tail", "--checkpoint", cp, "--no-follow"])
        .await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let mut resumed = event_ids(&first.stdout);
    assert_eq!(resumed.len(), 7);
    resumed.extend(event_ids(&second.stdout));
    let newest = served.sandbox.stored_events();
    assert_eq!(
        resumed[..all.len()],
        all[..],
        "the same events in the same order"
    );
    assert_eq!(resumed.len(), all.len() + (newest - all.len()).min(2));
    let unique: std::collections::BTreeSet<i64> = resumed.iter().copied().collect();
    assert_eq!(unique.len(), resumed.len(), "no event twice");
    // Nothing is left beside the checkpoint: the lock file goes with the lease.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["cp"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_tail_with_its_checkpoint_saved() {
    let served = Served::start().await;
    let dir = temp_dir("tail-int");
    let cp = dir.join("cp");
    let (child, mut stderr) = spawned(
        &mut served.command(&["events", "tail", "--checkpoint", cp.to_str().unwrap()]),
        Stdio::piped(),
    );
    // Following: it says when it has caught up and waits.
    wait_until_it_says(&mut stderr, "caught up");
    interrupt(&child);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130));
    let printed = event_ids(&String::from_utf8_lossy(&output.stdout));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&cp).unwrap()).unwrap();
    assert_eq!(saved["v2"].as_i64(), printed.last().copied(), "{saved}");
}

#[test]
fn a_tail_with_an_empty_or_garbled_checkpoint_file_exits_2_at_once_naming_the_file() {
    let dir = temp_dir("tail-corrupt");
    let cp = dir.join("cp");
    for garbage in [&b""[..], b"garbage\n", b"{\"v2\": \"twelve\"}"] {
        std::fs::write(&cp, garbage).unwrap();
        let mut child = pubapi()
            .args(["--sandbox", "events", "tail", "--no-follow", "--checkpoint"])
            .arg(&cp)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The sandbox starts in the process; the checkpoint is read before any event.
        let deadline = Instant::now() + Duration::from_secs(10);
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{garbage:?}: still running after 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = started.elapsed();
        let run = finished(child.wait_with_output().unwrap());
        assert_eq!(run.code, 2, "{garbage:?}: {}", run.stderr);
        assert!(took < Duration::from_secs(1), "{garbage:?}: {took:?}");
        assert!(run.stderr.contains(cp.to_str().unwrap()), "{}", run.stderr);
        assert!(run.stderr.contains("holds no checkpoint"), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert_eq!(
            std::fs::read(&cp).unwrap(),
            garbage,
            "the file is left alone"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_tail_on_a_checkpoint_file_in_use_refuses_with_no_follow() {
    let served = Served::start().await;
    let dir = temp_dir("tail-locked");
    let cp = dir.join("cp");
    let (mut first, mut stderr) = spawned(
        &mut served.command(&["events", "tail", "--checkpoint", cp.to_str().unwrap()]),
        Stdio::null(),
    );
    wait_until_it_says(&mut stderr, "caught up");
    let second = served
        .run(&argv(
            "events tail --checkpoint",
            &[cp.to_str().unwrap(), "--no-follow"],
        ))
        .await;
    second.assert_says(1, &["another process is tailing through"]);
    assert!(second.stdout.is_empty(), "{}", second.stdout);
    interrupt(&first);
    let status = tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(130));
    // The first one gone, the file is free again.
    let third = served
        .run(&argv(
            "events tail --checkpoint",
            &[cp.to_str().unwrap(), "--no-follow"],
        ))
        .await;
    assert_eq!(third.code, 0, "{}", third.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_download_leaves_no_file_behind() {
    let served = Served::start().await;
    served.inject(Fault::on("getAuditReport").slow_body(200));
    let dir = temp_dir("audit-int");
    let out = dir.join("logins.csv");
    let child = started(&mut served.command(&argv(
        "audit logins --from 2026-01-01 --to 2026-03-01 --out",
        &[out.to_str().unwrap()],
    )));
    // The download has begun once a part file exists.
    let deadline = Instant::now() + Duration::from_secs(20);
    while files_in(&dir).is_empty() {
        assert!(Instant::now() < deadline, "no download started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    interrupt(&child);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{:?}", output);
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_endpoint_is_refused_by_webhooks_create_with_nothing_sent() {
    let served = Served::start().await;
    let endpoint = Endpoint::tls(&Certificates::new().self_signed()).await;
    let url = endpoint.url();
    let refused = served
        .run(&argv("webhooks create --event fs:* --url", &[&url]))
        .await;
    refused.assert_says(
        2,
        &[
            "its certificate is self-signed",
            "add --skip-endpoint-check to register it anyway",
        ],
    );
    assert!(
        served.sandbox.traffic().is_empty(),
        "the platform saw a request"
    );
    // The caller who knows better.
    let created = served
        .run(&argv(
            "webhooks create --event fs:* --skip-endpoint-check --url",
            &[&url],
        ))
        .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    assert_eq!(served.sandbox.traffic().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_from_create_to_delete_and_a_quota_answer() {
    let served = Served::start().await;
    let created = served
        .run(&words("--json webhooks create --url http://127.0.0.1:9/in --loopback-for-tests --event fs:* --path /Projects --auth-header hook-secret-123456"))
        .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created: serde_json::Value = serde_json::from_str(&created.stdout).unwrap();
    let id = created[0]["webhookId"].as_str().unwrap().to_string();
    let listed = served.run(&["webhooks", "list"]).await;
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);
    let details = served.run(&["webhooks", "details", &id]).await;
    assert!(details.stdout.contains("fs:*"), "{}", details.stdout);
    assert!(
        !details.stdout.contains("hook-secret-123456"),
        "{}",
        details.stdout
    );
    for (command, status) in [("disable", "disabled"), ("enable", "enabled")] {
        let run = served.run(&["webhooks", command, &id]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.to_lowercase().contains(status), "{}", run.stdout);
    }
    let renewed = served.run(&["--json", "webhooks", "renew", &id]).await;
    assert_eq!(renewed.code, 0, "{}", renewed.stderr);
    let renewed: serde_json::Value = serde_json::from_str(&renewed.stdout).unwrap();
    let new_id = renewed[0]["webhookId"].as_str().unwrap().to_string();
    assert_ne!(new_id, id);
    let gone = served.run(&["webhooks", "details", &id]).await;
    assert_eq!(gone.code, 3, "{}", gone.stderr);
    let deleted = served.run(&["webhooks", "delete", &new_id]).await;
    assert_eq!(deleted.code, 0, "{}", deleted.stderr);

    served.inject(Fault::on("whoami").quota_exhausted(3600));
    let quota = served.run(&["whoami"]).await;
    quota.assert_says(4, &["hint:"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_prints_each_delivered_event_as_a_json_line() {
    let served = Served::start().await;
    let listen = words("webhooks listen --port 0 --secret listen-secret-4711");
    let (mut child, mut stderr) = spawned(&mut served.command(&listen), Stdio::piped());
    let url = listening_url(&mut stderr);
    let created = served
        .run(&argv(
            "webhooks create --loopback-for-tests --event fs:* --auth-header listen-secret-4711 --url",
            &[&url],
        ))
        .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    served.new_folder("/Heard");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let event = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line
    });
    let event = tokio::time::timeout(Duration::from_secs(20), event)
        .await
        .expect("a delivery within 20 s")
        .unwrap();
    let event: serde_json::Value = serde_json::from_str(&event).unwrap();
    assert_eq!(event["eventType"], "fs:add_folder", "{event}");
    assert_eq!(event["data"]["targetPath"], "/Heard", "{event}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_profile_from_the_config_file_is_used_and_its_token_never_shown() {
    let config = config_file(
        "profile",
        "default = \"broken\"\n[profiles.broken]\nbase_url = \"http://127.0.0.1:9/pubapi\"\n\
         token = \"tok-secret-profile-987654321\"\n",
    );
    let run = run_with_config(&config, &["--act-as", "sam", "whoami"]);
    assert_eq!(
        run.code, 5,
        "the profile's unreachable URL was used: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("tok-secret-profile"), "{}", run.stderr);
    assert!(!run.stdout.contains("tok-secret-profile"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_runs_against_a_served_sandbox_without_printing_the_token() {
    let served = Served::start().await;
    let dir = temp_dir("every");
    let csv = dir.join("files.csv");
    let json = dir.join("users.json");
    // (arguments, what stdout (or, for file and stream commands, stderr) says)
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["whoami"], "admin"),
        (vec!["--act-as", "sam", "whoami"], "sam"),
        (vec!["quota"], "general"),
        (vec!["agents", "list"], "agt-policy-helper"),
        (
            argv(
                "agents ask agt-policy-helper",
                &["How much are hotel costs per night?"],
            ),
            "180",
        ),
        (
            vec![
                "assistant",
                "ask",
                "What happens when a webhook delivery fails?",
                "--citations",
            ],
            "cites",
        ),
        (
            argv(
                "documents ask 4100002",
                &["What is the daily meal allowance?"],
            ),
            "45 euros",
        ),
        (vec!["documents", "summarize", "4100002"], "travel"),
        (
            vec!["kb", "list", "--status", "ACTIVE"],
            "kb-company-policies",
        ),
        (
            argv(
                "kb ask kb-company-policies",
                &["How long are invoices kept?"],
            ),
            "seven years",
        ),
        (
            vec!["search", "postmortem action items", "--size", "3"],
            "SCORE",
        ),
        (
            argv(
                "audit files --from 2026-01-01 --to 2026-01-31 --folders /Projects --out",
                &[csv.to_str().unwrap()],
            ),
            "written",
        ),
        (
            argv(
                "audit users --from 2026-01-01 --to 2026-01-31 --format json --out",
                &[json.to_str().unwrap()],
            ),
            "written",
        ),
        (
            words("events tail --v1 --type note --no-follow --max-events 2"),
            "\"note\"",
        ),
        (vec!["--json", "webhooks", "list"], "["),
    ];
    for (args, says) in &cases {
        let run = served.run(args).await;
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stdout.contains(says) || run.stderr.contains(says),
            "{args:?} does not say {says:?}: {}{}",
            run.stdout,
            run.stderr
        );
    }
    // The reports, then get and delete by the KIND/ID the run printed.
    let run = served
        .run(&words("audit logins --from 2026-01-01 --to 2026-01-02"))
        .await;
    assert!(
        run.stdout.starts_with("This report reflects"),
        "{}",
        run.stdout
    );
    let report = run
        .stderr
        .split_whitespace()
        .find(|w| w.starts_with("logins/"))
        .unwrap()
        .to_string();
    let again = served.run(&["audit", "get", &report]).await;
    assert_eq!(again.stdout, run.stdout, "{}", again.stderr);
    let job = report.trim_start_matches("logins/");
    let status = served.run(&["audit", "status", job]).await;
    assert!(status.stdout.contains("completed"), "{}", status.stdout);
    let deleted = served.run(&["audit", "delete", &report]).await;
    assert_eq!(deleted.code, 0, "{}", deleted.stderr);
    let gone = served.run(&["audit", "get", &report]).await;
    assert_eq!(gone.code, 3, "{}", gone.stderr);
    // A webhook updated in place.
    let created = served
        .run(&words(
            "--json webhooks create --url https://hooks.example.com/a --event fs:* --skip-endpoint-check",
        ))
        .await;
    let created: serde_json::Value = serde_json::from_str(&created.stdout).unwrap();
    let id = created[0]["webhookId"].as_str().unwrap();
    let updated = served
        .run(&argv(
            "webhooks update --url https://hooks.example.com/b --event comment:* --skip-endpoint-check",
            &[id],
        ))
        .await;
    assert_eq!(updated.code, 0, "{}", updated.stderr);
    let details = served.run(&["webhooks", "details", id]).await;
    assert!(
        details.stdout.contains("hooks.example.com/b"),
        "{}",
        details.stdout
    );
    assert!(details.stdout.contains("comment:*"), "{}", details.stdout);
}

#[test]
fn a_sandbox_tail_stopped_and_started_again_prints_no_event_twice_and_skips_none() {
    // Every `--sandbox` run starts a sandbox with the same history under the same ids.
    let dir = temp_dir("sandbox-tail");
    let cp = &checkpoint_in(&dir);
    let all = run_sandboxed(&["events", "tail", "--no-follow"]);
    let first = run_sandboxed(&["events", "tail", "--checkpoint", cp, "--max-events", "10"]);
    let second = run_sandboxed(&["events", "tail", "--checkpoint", cp, "--no-follow"]);
    for run in [&all, &first, &second] {
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let mut resumed = event_ids(&first.stdout);
    resumed.extend(event_ids(&second.stdout));
    assert_eq!(resumed, event_ids(&all.stdout));
}

#[test]
fn the_sandbox_command_serves_until_interrupted() {
    let mut child = pubapi()
        .args(["sandbox", "--port", "0", "--limits", "off"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.starts_with("PUBAPI_BASE_URL=http://127.0.0.1:"),
        "{first}"
    );
    let (url, token) = first.trim().split_once(' ').unwrap();
    let run = finished(
        pubapi()
            .env(
                "PUBAPI_BASE_URL",
                url.trim_start_matches("PUBAPI_BASE_URL="),
            )
            .env("PUBAPI_TOKEN", token.trim_start_matches("PUBAPI_TOKEN="))
            .arg("whoami")
            .output()
            .unwrap(),
    );
    assert!(run.stdout.contains("admin"), "{}", run.stderr);
    interrupt(&child);
    assert!(child.wait().unwrap().success());
}

/// A stand-in gateway on loopback that counts the requests it gets: `whoami` answered with
/// the gateway's counters (`x-accesstoken-*`), as the platform's gateway sends them.
struct Gateway {
    base_url: String,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Gateway {
    async fn start() -> Gateway {
        use std::sync::atomic::Ordering;
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                let authorized = request
                    .headers()
                    .get("authorization")
                    .is_some_and(|v| v == "Bearer tok-gateway-0123456789abcdef");
                if !authorized || request.uri().path() != "/pubapi/v1/whoami" {
                    return axum::http::Response::builder()
                        .status(404)
                        .body(axum::body::Body::empty())
                        .unwrap();
                }
                axum::http::Response::builder()
                    .header("content-type", "application/json")
                    .header("x-accesstoken-qps-allotted", "2")
                    .header("x-accesstoken-qps-current", "1")
                    .header("x-accesstoken-quota-allotted", "1000")
                    .header("x-accesstoken-quota-current", "21")
                    .body(axum::body::Body::from(
                        r#"{"clientId":"c1","username":"admin","domain":"acme.example.com","scopes":["audit"]}"#,
                    ))
                    .unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/pubapi", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Gateway { base_url, calls }
    }

    async fn run(&self, args: &[&str]) -> Run {
        let mut command = pubapi();
        command
            .env("PUBAPI_BASE_URL", &self.base_url)
            .env("PUBAPI_TOKEN", "tok-gateway-0123456789abcdef")
            .args(args);
        let run = tokio::task::spawn_blocking(move || finished(command.output().unwrap()))
            .await
            .unwrap();
        assert!(
            !run.stdout.contains("tok-gateway") && !run.stderr.contains("tok-gateway"),
            "pubapi {args:?} printed the token"
        );
        run
    }

    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_shows_the_gateways_counters_after_one_whoami_call_and_says_where_each_came_from() {
    let gateway = Gateway::start().await;
    let run = gateway.run(&["quota"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(gateway.calls(), 1, "one whoami call");
    let general = run
        .stdout
        .lines()
        .find(|l| l.starts_with("general"))
        .unwrap();
    let cells: Vec<&str> = general.split_whitespace().collect();
    // The gateway counted 21 calls today (the whoami among them), not this process's 1.
    assert_eq!(cells[1..4], ["1000", "21", "979"], "{}", run.stdout);
    assert!(
        general.contains("gateway (x-accesstoken-quota-*)"),
        "{general}"
    );
    // No AI call was answered: the AI figures are this process's own, and say so.
    let ai = run.stdout.lines().find(|l| l.starts_with("ai")).unwrap();
    assert!(ai.contains("used by this process only"), "{ai}");

    let json = gateway.run(&["--json", "quota"]).await;
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows[0]["used_today"], 21, "{rows}");
    assert_eq!(rows[0]["per_second"], 2, "{rows}");
    assert_eq!(rows[0]["from"]["used_today"], "gateway", "{rows}");
    assert_eq!(rows[1]["from"]["used_today"], "this process", "{rows}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_the_request_as_curl_with_the_token_as_a_variable_and_sends_nothing() {
    let gateway = Gateway::start().await;
    let secret_file = temp_dir("dry-run").join("hook.secret");
    std::fs::write(&secret_file, "hook-secret-from-file-42\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["whoami"], "curl '{BASE}/v1/whoami'"),
        (
            vec!["agents", "ask", "agt-policy-helper", "Hotel costs?"],
            "curl -X POST '{BASE}/v1/ai/agents/agt-policy-helper/ask'",
        ),
        (
            vec!["assistant", "ask", "What is a webhook?"],
            "curl -X POST '{BASE}/v1/ai/assistant/ask'",
        ),
        (
            words("audit logins --from 2026-01-01 --to 2026-01-02 --events failed_attempts"),
            "curl -X POST '{BASE}/v1/audit/logins'",
        ),
        (
            argv(
                "webhooks create --url https://hooks.example.com/in --event fs:* --auth-header-file",
                &[secret_file.to_str().unwrap()],
            ),
            "curl -X POST '{BASE}/v1/webhooks'",
        ),
        (vec!["webhooks", "list"], "curl '{BASE}/v1/webhooks'"),
        (
            // A tail from the oldest event asks for the cursor of 30 days ago first.
            vec!["events", "tail", "--no-follow"],
            "curl '{BASE}/v1/events/cursor",
        ),
    ];
    for (args, first_line) in &cases {
        let mut with_flag = vec!["--dry-run"];
        with_flag.extend(args);
        let run = gateway.run(&with_flag).await;
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let expected = first_line.replace("{BASE}", &gateway.base_url);
        assert!(
            run.stdout.starts_with(&expected),
            "{args:?}: {}\nexpected {expected}",
            run.stdout
        );
        assert!(
            run.stdout
                .contains("-H \"Authorization: Bearer $PUBAPI_TOKEN\""),
            "{args:?}: {}",
            run.stdout
        );
        assert!(run.stderr.contains("not sent"), "{args:?}: {}", run.stderr);
    }
    assert_eq!(gateway.calls(), 0, "a dry run sends nothing");
    // The body is there, a secret read from a file shows as the file, not its value.
    let create = gateway
        .run(&argv("--dry-run webhooks create --url https://hooks.example.com/in --event fs:* --auth-header-file", &[secret_file.to_str().unwrap()]))
        .await;
    assert!(
        create.stdout.contains("\"eventType\":[\"fs:*\"]"),
        "{}",
        create.stdout
    );
    assert!(
        !create.stdout.contains("hook-secret-from-file"),
        "{}",
        create.stdout
    );
    assert!(create.stdout.contains("$(head -n1 '"), "{}", create.stdout);
    // Pasted into a shell, the line sends the same request (the shell fills in the token).
    let dry = gateway.run(&["--dry-run", "whoami"]).await;
    let sent = tokio::task::spawn_blocking(move || {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{} -s -o /dev/null -w '%{{http_code}}'",
                dry.stdout.trim()
            ))
            .env("PUBAPI_TOKEN", "tok-gateway-0123456789abcdef")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&sent.stdout), "200", "{sent:?}");
    assert_eq!(gateway.calls(), 1);
    let listen = gateway
        .run(&words(
            "--dry-run webhooks listen --port 0 --secret s-123456",
        ))
        .await;
    assert_eq!(listen.code, 2, "{}", listen.stderr);
}

#[test]
fn a_reader_that_stops_reading_ends_the_command_quietly() {
    let dir = temp_dir("epipe");
    for args in [
        &["--sandbox", "whoami"][..],
        &["--sandbox", "events", "tail", "--no-follow"],
        &["--sandbox", "--json", "agents", "list"],
        &words("--sandbox audit logins --from 2026-01-01 --to 2026-01-03"),
        &["completions", "bash"],
    ] {
        // The reading end is closed before anything is written: every write is EPIPE.
        let mut child = pubapi()
            .current_dir(&dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let run = finished(child.wait_with_output().unwrap());
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains("Broken pipe") && !run.stderr.contains("stdout"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
    // As a shell runs it.
    let run = finished(
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; {} --sandbox events tail --no-follow | head -1",
                env!("CARGO_BIN_EXE_pubapi")
            ))
            .env("PUBAPI_CONFIG", "/nonexistent/pubapi/config.toml")
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
    assert!(!run.stderr.contains("Broken pipe"), "{}", run.stderr);
}

#[test]
fn date_errors_name_the_flags_in_plain_words() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--from", "2026-13-01", "--to", "2026-02-01"],
            "--from `2026-13-01` is not a date: give a day as YYYY-MM-DD",
        ),
        (
            &["--from", "2026-01-01", "--to", "2026-02-30"],
            "--to `2026-02-30` is not a date",
        ),
        (
            &["--from", "2026-02-01", "--to", "2026-01-01"],
            "--to 2026-01-01 is not after --from 2026-02-01",
        ),
    ];
    for (dates, says) in cases {
        let mut args = vec!["audit", "logins"];
        args.extend(*dates);
        let run = run_sandboxed(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        for unwanted in ["date_start", "date_end", "ReportDate", "\"))"] {
            assert!(!run.stderr.contains(unwanted), "{args:?}: {}", run.stderr);
        }
    }
    // Users reports compare days: a time on the day before is not after, whatever its hour.
    let run = run_sandboxed(&words(
        "audit users --from 2026-02-01T10:00:00Z --to 2026-01-31T18:00:00Z",
    ));
    run.assert_says(2, &["compares days only"]);
}

#[test]
fn an_http_webhook_url_is_refused_with_a_word_on_loopback_for_tests() {
    let run = run_sandboxed(&words(
        "webhooks create --url http://127.0.0.1:9000/in --event fs:*",
    ));
    run.assert_says(2, &["--loopback-for-tests"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_while_acting_as_someone_says_so_instead_of_suggesting_act_as() {
    let served = Served::start().await;
    let run = served.run(&["--act-as", "nobody", "whoami"]).await;
    run.assert_says(3, &["acts as nobody"]);
    assert!(!run.stderr.contains("acts as another"), "{}", run.stderr);
}

#[test]
fn an_unknown_profile_lists_the_profiles_there_are() {
    let config = config_file(
        "profiles",
        "[profiles.prod]\ndomain = \"acme.example.com\"\ntoken_env = \"X\"\n\
         [profiles.staging]\ndomain = \"staging.example.com\"\ntoken_env = \"X\"\n",
    );
    let run = run_with_config(&config, &["--profile", "prd", "whoami"]);
    run.assert_says(2, &["its profiles: prod, staging"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_takes_its_secret_from_the_environment_or_a_file_and_says_when_it_refuses() {
    let served = Served::start().await;
    let dir = temp_dir("listen-secret");
    let file = dir.join("secret");
    std::fs::write(&file, "file-secret-0451\n").unwrap();
    for (how, secret) in [("env", "env-secret-0451"), ("file", "file-secret-0451")] {
        let mut command = served.command(&["webhooks", "listen", "--port", "0"]);
        match how {
            "env" => command.env("PUBAPI_WEBHOOK_SECRET", secret),
            _ => command.arg("--secret-file").arg(&file),
        };
        let (mut child, mut stderr) = spawned(&mut command, Stdio::null());
        let url = listening_url(&mut stderr);
        let client = reqwest::Client::new();
        let post = |auth: &str| {
            client
                .post(&url)
                .header("authorization", auth)
                .header("content-type", "application/json")
                .body("[]")
                .send()
        };
        let refused = post("wrong-secret").await.unwrap();
        assert_eq!(refused.status(), 401, "{how}");
        let taken = post(secret).await.unwrap();
        assert_eq!(taken.status(), 200, "{how}");
        let said = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            stderr.read_line(&mut line).unwrap();
            line
        })
        .await
        .unwrap();
        assert!(
            said.contains("refused a delivery") && said.contains("401"),
            "{how}: {said}"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    let missing = served.run(&["webhooks", "listen", "--port", "0"]).await;
    missing.assert_says(2, &["PUBAPI_WEBHOOK_SECRET"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_point_at_a_report_only_where_it_stays() {
    let args = words("audit logins --from 2026-01-01 --to 2026-01-02");
    let sandboxed = run_sandboxed(&args);
    assert_eq!(sandboxed.code, 0, "{}", sandboxed.stderr);
    assert!(
        !sandboxed.stderr.contains("pubapi audit"),
        "the run's sandbox is gone: {}",
        sandboxed.stderr
    );
    let served = Served::start().await;
    let kept = served.run(&args).await;
    kept.assert_says(0, &["pubapi audit delete logins/"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durations_read_as_hours_minutes_and_seconds() {
    let served = Served::start().await;
    served.inject(Fault::on("whoami").quota_exhausted(12_107));
    let run = served.run(&["whoami"]).await;
    run.assert_says(4, &["resets in 3h 21m 47s"]);
    assert!(!run.stderr.contains("12107s"), "{}", run.stderr);
}

#[test]
fn completions_and_a_man_page_come_from_the_command_line_definitions() {
    for (shell, marker) in [
        ("bash", "complete -F _pubapi"),
        ("zsh", "#compdef pubapi"),
        ("fish", "complete -c pubapi"),
    ] {
        let run = finished(pubapi().args(["completions", shell]).output().unwrap());
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}");
        // Commands and flags, the spec's report kinds among them.
        for word in ["webhooks", "logins", "act-as", "dry-run"] {
            assert!(run.stdout.contains(word), "{shell}: no {word}");
        }
    }
    let man = finished(pubapi().arg("man").output().unwrap());
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(man.stdout.starts_with(".ie"), "{}", &man.stdout[..80]);
    assert!(man.stdout.contains(".TH pubapi 1"), "{}", man.stdout);
    assert!(man.stdout.contains("completions"), "{}", man.stdout);
    let bad = finished(pubapi().args(["completions", "tcsh"]).output().unwrap());
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// `pubapi --sandbox args` run in `dir` (a folder of the test's own, to see what it writes).
fn run_sandboxed_in(dir: &Path, args: &[&str]) -> Run {
    finished(
        pubapi()
            .current_dir(dir)
            .arg("--sandbox")
            .args(args)
            .output()
            .unwrap(),
    )
}

#[test]
fn out_dash_writes_the_report_to_standard_output_and_no_file() {
    let dir = temp_dir("out-dash");
    let run = run_sandboxed_in(
        &dir,
        &words("audit logins --from 2026-01-01 --to 2026-01-02 --out -"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("This report reflects activity up to"),
        "{}",
        run.stdout
    );
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
}

#[test]
fn a_job_id_that_is_not_one_says_why_and_what_one_looks_like() {
    // (argument, what the message must say)
    let cases = [
        (
            "logins/nope",
            "`logins/nope` is not an audit job id: it has a `/`; logins/nope looks like a \
             report (KIND/ID): `pubapi audit get logins/nope`",
        ),
        (
            "a/b/c",
            "`a/b/c` is not an audit job id: a job id has no `/`",
        ),
        ("..", "`..` is not an audit job id"),
    ];
    for (job, says) in cases {
        let run = run_sandboxed(&["audit", "status", job]);
        assert_eq!(run.code, 2, "{job}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{job}: {}", run.stderr);
        assert!(
            run.stderr.contains("pubapi audit status 6f1c2a"),
            "{job}: what a valid one looks like: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("getAuditJob"), "{}", run.stderr);
    }
}

#[test]
fn a_dry_run_creates_no_file_and_needs_no_folder_it_would_write_to() {
    let dir = temp_dir("dry-run-files");
    let missing = dir.join("not-yet");
    let state = missing.join("logins.state");
    let checkpoint = dir.join("events.cp");
    let csv = missing.join("logins.csv");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            argv(
                "audit export logins --since 2026-01-01 --state",
                &[
                    state.to_str().unwrap(),
                    "--out-dir",
                    missing.to_str().unwrap(),
                ],
            ),
            "/v1/whoami'",
        ),
        (
            argv(
                "audit logins --from 2026-01-01 --to 2026-01-02 --out",
                &[csv.to_str().unwrap()],
            ),
            "-X POST",
        ),
        (
            argv("events tail --checkpoint", &[checkpoint.to_str().unwrap()]),
            "/v1/events/cursor",
        ),
    ];
    for (args, curl) in cases {
        let run = run_sandboxed_in(&dir, &[&["--dry-run"], &args[..]].concat());
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stdout.contains(curl), "{args:?}: {}", run.stdout);
        assert!(
            files_in(&dir).is_empty(),
            "{args:?} left {:?}",
            files_in(&dir)
        );
    }
}

#[test]
fn a_dry_run_on_the_built_in_sandbox_says_the_sandbox_is_gone_when_it_ends() {
    let run = run_sandboxed(&["--dry-run", "whoami"]);
    run.assert_says(
        0,
        &[
            "names the built-in sandbox at http://127.0.0.1:",
            "stops when this command ends",
            "pubapi sandbox --port 8080",
        ],
    );
    assert!(run.stdout.contains("/v1/whoami'"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_tail_with_nothing_new_says_so() {
    let served = Served::start().await;
    let dir = temp_dir("tail-nothing-new");
    let cp = &checkpoint_in(&dir);
    let first = served
        .run(&["events", "tail", "--checkpoint", cp, "--no-follow"])
        .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(!first.stdout.is_empty());
    assert!(!first.stderr.contains("no new events"), "{}", first.stderr);
    let again = served
        .run(&["events", "tail", "--checkpoint", cp, "--no-follow"])
        .await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.is_empty(), "{}", again.stdout);
    assert!(
        again
            .stderr
            .contains(&format!("no new events since the checkpoint in {cp}")),
        "{}",
        again.stderr
    );
}

#[test]
fn a_damaged_checkpoint_file_is_named_in_a_users_words() {
    let dir = temp_dir("tail-damaged");
    let cp = dir.join("cp");
    std::fs::write(&cp, b"garbage\n").unwrap();
    let run = run_sandboxed(&argv(
        "events tail --no-follow --checkpoint",
        &[cp.to_str().unwrap()],
    ));
    run.assert_says(2, &["the checkpoint file is damaged"]);
    assert!(!run.stderr.contains("fleet store"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_run_learns_a_served_sandboxs_time_scale_from_its_control_plane() {
    // A sandbox 600 times faster than real time: the 2 minutes the platform asks between
    // polls are 0.2 s of it. Not knowing the scale, the CLI would wait 2 real minutes.
    let mut config = SandboxConfig::default()
        .with_clock(ClockConfig::scaled(600.0))
        .with_limits(LimitsConfig::off())
        .with_sample_history();
    config.audit.job_duration = Duration::from_secs(600);
    let sandbox = Sandbox::start(config).await;
    let dir = temp_dir("served-scale");
    let out = dir.join("logins.csv");
    let mut child = started(
        pubapi()
            .env("PUBAPI_BASE_URL", sandbox.base_url())
            .env("PUBAPI_TOKEN", sandbox.admin_token())
            .args(argv(
                "audit logins --from 2026-01-01 --to 2026-01-02 --out",
                &[out.to_str().unwrap()],
            )),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("still waiting after 30 s: the scale of the served sandbox was not learnt");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("This report reflects activity up to")
    );
}

/// `pubapi search` outside the hybrid-search bounds (a weight of 1.5, a query of two
/// characters) is a usage error naming the field and the bound, and nothing reaches the
/// platform: no AI call of the day is spent on a 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_outside_the_bounds_is_refused_naming_the_field_with_nothing_sent() {
    let served = Served::start().await;
    let before = served.sandbox.counters().requests;
    for (args, says) in [
        (
            ["search", "policy", "--semantic-weight", "1.5"],
            "invalid semanticWeight: 1.5 is outside 0 to 1; nothing was sent",
        ),
        (
            ["search", "ab", "--semantic-weight", "0.5"],
            "invalid query: 2 characters, outside 3 to 250; nothing was sent",
        ),
    ] {
        let run = served.run(&args).await;
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{}", run.stderr);
    }
    assert_eq!(
        served.sandbox.counters().requests,
        before,
        "nothing was sent"
    );
}
