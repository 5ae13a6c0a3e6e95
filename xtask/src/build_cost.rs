//! `cargo xtask build-cost`: what depending on `pubapi-sdk-ext` costs a user's clean build.
//!
//! It writes throwaway user crates in a folder outside the workspace (a crate per area
//! feature alone, one with every area, one with no area (`core`: the client, tokens, pacing,
//! retries and errors every area builds on, the floor of any user's build), and a bare crate
//! on reqwest + serde + tokio with the SDK's reqwest features), builds each from clean (its
//! own target folder, removed first) in debug and in release, one after the other in one
//! run, and prints the wall and CPU times with the ratio of CPU time to the bare crate's.
//! Every crate starts from a copy of the workspace's `Cargo.lock`, so all build the same
//! dependency versions.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The SDK's area features, each measured alone.
const AREAS: [&str; 4] = ["ai", "audit", "events", "webhooks"];

/// The reqwest features of the workspace (`[workspace.dependencies]`), so the bare crate
/// compiles the same HTTP stack as the SDK.
const REQWEST: &str = r#"reqwest = { version = "0.13", default-features = false, features = ["json", "query", "stream", "rustls"] }"#;

/// One clean build: how long it took, and the CPU time its processes used where the system
/// says it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Build {
    wall: Duration,
    cpu: Option<Duration>,
}

impl Build {
    /// What the ratio is taken of: the CPU time, or the wall time where there is none.
    fn cost(&self) -> Duration {
        self.cpu.unwrap_or(self.wall)
    }
}

/// The user and system time of this process's waited-for children (and theirs), from
/// `/proc/self/stat` (`cutime`, `cstime`, in clock ticks of 10 ms on Linux).
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // Fields 16 and 17 of proc(5) are the 14th and 15th after the name.
    Some(Duration::from_millis((ticks(13)? + ticks(14)?) * 10))
}

/// A user crate to build.
struct UserCrate {
    /// Its name in the table and folder.
    name: String,
    /// Its `[dependencies]` lines.
    dependencies: String,
    /// Its `src/main.rs`.
    main: &'static str,
}

const SDK_MAIN: &str = r#"#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = pubapi_sdk_ext::Client::builder()
        .domain("acme.example.com")
        .token(pubapi_sdk_ext::SecretToken::try_from("t0k3n")?)
        .build()?;
    if std::env::args().count() > 1 {
        let me = client.identity().whoami().await?;
        println!("{}", me.username);
    }
    Ok(())
}
"#;

const BARE_MAIN: &str = r#"#[derive(serde::Deserialize)]
struct Whoami {
    username: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = reqwest::Client::builder().build()?;
    if std::env::args().count() > 1 {
        let me: Whoami = client
            .get("https://acme.example.com/pubapi/v1/whoami")
            .bearer_auth("t0k3n")
            .send()
            .await?
            .json()
            .await?;
        println!("{}", me.username);
    }
    Ok(())
}
"#;

/// What to build: `--debug`, `--release` (both when neither is given), `--rounds N` (every
/// crate built N times over, in turn; the fastest build of each counts, which takes most of a
/// busy machine's noise and the first build's cold caches out, and the table lists every
/// round's CPU time as the spread), `--crates bare,audit,all` (only those user crates; the
/// bare one is always built, as the baseline).
pub(crate) fn run(root: &Path, args: &[&str]) -> Result<String, String> {
    let mut profiles: Vec<&str> = Vec::new();
    let mut rounds = 1u32;
    let mut only: Option<Vec<String>> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--debug" => profiles.push("debug"),
            "--release" => profiles.push("release"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("build-cost: --rounds takes a number above 0")?;
            }
            "--crates" => {
                let names = args.next().ok_or("build-cost: --crates takes a list")?;
                only = Some(names.split(',').map(str::to_string).collect());
            }
            other => return Err(format!("build-cost: unknown argument {other}")),
        }
    }
    if profiles.is_empty() {
        profiles = vec!["debug", "release"];
    }
    let mut crates = user_crates(root);
    if let Some(only) = &only {
        if let Some(unknown) = only.iter().find(|n| !crates.iter().any(|c| &&c.name == n)) {
            return Err(format!("build-cost: no user crate {unknown}"));
        }
        crates.retain(|c| c.name == "bare" || only.contains(&c.name));
    }
    let dir = std::env::temp_dir().join("pubapi-build-cost");
    let lock = std::fs::read_to_string(root.join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    for krate in &crates {
        write_crate(&dir.join(&krate.name), krate, &lock)?;
    }
    let started = Instant::now();
    let mut rows: Vec<(String, Vec<Vec<Build>>)> = crates
        .iter()
        .map(|krate| (krate.name.clone(), vec![Vec::new(); profiles.len()]))
        .collect();
    for round in 1..=rounds {
        for (krate, (_, builds)) in crates.iter().zip(&mut rows) {
            for (profile, builds) in profiles.iter().zip(builds.iter_mut()) {
                let build = clean_build(&dir.join(&krate.name), profile == &"release")?;
                eprintln!(
                    "round {round}: {:<10} {profile:<8} {:>7.1} s wall {:>7.1} s CPU",
                    krate.name,
                    build.wall.as_secs_f64(),
                    build.cost().as_secs_f64()
                );
                builds.push(build);
            }
        }
    }
    let mut command: Vec<String> = profiles.iter().map(|p| format!("--{p}")).collect();
    command.push(format!("--rounds {rounds}"));
    if let Some(only) = only {
        command.push(format!("--crates {}", only.join(",")));
    }
    Ok(table(
        &profiles,
        &rows,
        started.elapsed(),
        &command.join(" "),
    ))
}

/// The bare crate first (the baseline), then no area (`core`), each area alone, every area.
fn user_crates(root: &Path) -> Vec<UserCrate> {
    let sdk = root.join("sdk-ext");
    let sdk = sdk.display();
    let tokio = r#"tokio = { version = "1", features = ["rt", "macros"] }"#;
    let mut crates = vec![UserCrate {
        name: "bare".into(),
        dependencies: format!(
            "{REQWEST}\nserde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n{tokio}\n"
        ),
        main: BARE_MAIN,
    }];
    crates.push(UserCrate {
        name: "core".into(),
        dependencies: format!(
            "pubapi-sdk-ext = {{ path = \"{sdk}\", default-features = false }}\n{tokio}\n"
        ),
        main: SDK_MAIN,
    });
    for area in AREAS {
        crates.push(UserCrate {
            name: area.into(),
            dependencies: format!(
                "pubapi-sdk-ext = {{ path = \"{sdk}\", default-features = false, features = [\"{area}\"] }}\n{tokio}\n"
            ),
            main: SDK_MAIN,
        });
    }
    crates.push(UserCrate {
        name: "all".into(),
        dependencies: format!("pubapi-sdk-ext = {{ path = \"{sdk}\" }}\n{tokio}\n"),
        main: SDK_MAIN,
    });
    crates
}

fn write_crate(dir: &Path, krate: &UserCrate, lock: &str) -> Result<(), String> {
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    std::fs::create_dir_all(dir.join("src"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let manifest = format!(
        "[package]\nname = \"user-{}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         # Its own workspace: not a member of any around it.\n[workspace]\n\n[dependencies]\n{}",
        krate.name, krate.dependencies
    );
    write(dir.join("Cargo.toml"), &manifest)?;
    write(dir.join("src/main.rs"), krate.main)?;
    write(dir.join("Cargo.lock"), lock)
}

/// Removes the crate's target folder and builds it; the wall and CPU time of the build.
fn clean_build(dir: &Path, release: bool) -> Result<Build, String> {
    let target = dir.join("target");
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .map_err(|e| format!("cannot remove {}: {e}", target.display()))?;
    }
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .arg("build")
        .arg("--quiet")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS");
    if release {
        command.arg("--release");
    }
    let cpu_before = children_cpu();
    let started = Instant::now();
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let wall = started.elapsed();
    if !status.success() {
        return Err(format!("cargo build failed in {}", dir.display()));
    }
    let cpu = children_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    Ok(Build { wall, cpu })
}

/// The fastest of a crate's builds in one profile (by CPU time where there is one).
fn fastest(builds: &[Build]) -> Build {
    builds
        .iter()
        .copied()
        .min_by_key(Build::cost)
        .expect("every crate is built at least once")
}

/// The Markdown table: a row per crate; per profile the fastest build's wall time and CPU
/// time, its ratio of CPU time to `bare`'s fastest, and every round's CPU time (the spread).
fn table(
    profiles: &[&str],
    rows: &[(String, Vec<Vec<Build>>)],
    total: Duration,
    command: &str,
) -> String {
    let mut out = String::from("| user crate |");
    for profile in profiles {
        out.push_str(&format!(
            " {profile} wall (s) | {profile} CPU (s) | {profile} CPU ÷ bare | {profile} CPU per round (s) |"
        ));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|---:|---:|---:|".repeat(profiles.len()));
    let bare = &rows[0].1;
    for (name, builds) in rows {
        let label = match name.as_str() {
            "bare" => "bare: reqwest + serde + tokio".to_string(),
            "all" => "pubapi-sdk-ext, every area (default)".to_string(),
            "core" => "pubapi-sdk-ext, no area (the floor)".to_string(),
            area => format!("pubapi-sdk-ext, `{area}` only"),
        };
        out.push_str(&format!("\n| {label} |"));
        for (builds, base) in builds.iter().zip(bare) {
            let (build, base) = (fastest(builds), fastest(base));
            let seconds = |cpu: Option<Duration>| {
                cpu.map_or_else(
                    || "–".to_string(),
                    |cpu| format!("{:.1}", cpu.as_secs_f64()),
                )
            };
            let rounds: Vec<String> = builds.iter().map(|b| seconds(b.cpu)).collect();
            out.push_str(&format!(
                " {:.1} | {} | {:.2}× | {} |",
                build.wall.as_secs_f64(),
                seconds(build.cpu),
                build.cost().as_secs_f64() / base.cost().as_secs_f64(),
                rounds.join(" / ")
            ));
        }
    }
    out.push_str(&format!(
        "\n\nwhole run: {:.0} s (`cargo xtask build-cost {command}`)",
        total.as_secs_f64(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_divides_by_the_bare_crate() {
        let build = |wall, cpu| Build {
            wall: Duration::from_secs(wall),
            cpu: Some(Duration::from_secs(cpu)),
        };
        let rows = vec![
            ("bare".to_string(), vec![vec![build(45, 70), build(40, 60)]]),
            (
                "audit".to_string(),
                vec![vec![build(50, 66), build(52, 69)]],
            ),
        ];
        let table = table(&["debug"], &rows, Duration::from_secs(90), "--debug");
        assert!(
            table.contains("| bare: reqwest + serde + tokio | 40.0 | 60.0 | 1.00× | 70.0 / 60.0 |"),
            "{table}"
        );
        assert!(
            table.contains("| pubapi-sdk-ext, `audit` only | 50.0 | 66.0 | 1.10× | 66.0 / 69.0 |"),
            "{table}"
        );
    }

    /// Without a CPU time (a system without `/proc`), the ratio is of wall time.
    #[test]
    fn without_cpu_time_the_ratio_is_of_wall_time() {
        let rows = vec![
            (
                "bare".to_string(),
                vec![vec![Build {
                    wall: Duration::from_secs(40),
                    cpu: None,
                }]],
            ),
            (
                "all".to_string(),
                vec![vec![Build {
                    wall: Duration::from_secs(48),
                    cpu: None,
                }]],
            ),
        ];
        let table = table(&["debug"], &rows, Duration::from_secs(88), "--debug");
        assert!(table.contains("| 48.0 | – | 1.20× | – |"), "{table}");
    }

    /// The CPU time of children waited for grows with their work.
    #[test]
    #[cfg(target_os = "linux")]
    fn children_cpu_time_counts_a_waited_child() {
        let before = children_cpu().expect("/proc/self/stat");
        let status = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let after = children_cpu().unwrap();
        assert!(after > before, "{before:?} then {after:?}");
    }

    #[test]
    fn a_crate_per_area_alone_beside_the_bare_one_no_area_and_all() {
        let crates = user_crates(Path::new("/w"));
        let names: Vec<&str> = crates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["bare", "core", "ai", "audit", "events", "webhooks", "all"]
        );
        assert!(
            crates[1]
                .dependencies
                .contains(r#"pubapi-sdk-ext = { path = "/w/sdk-ext", default-features = false }"#)
        );
        assert!(crates[3].dependencies.contains(
            r#"pubapi-sdk-ext = { path = "/w/sdk-ext", default-features = false, features = ["audit"] }"#
        ));
        assert!(crates[0].dependencies.contains(REQWEST));
    }

    /// `--crates` names user crates; another name is refused before anything is built.
    #[test]
    fn an_unknown_crate_is_refused_before_building() {
        let error = run(
            Path::new("/nowhere"),
            &["--debug", "--crates", "audit,nope"],
        );
        assert_eq!(error, Err("build-cost: no user crate nope".to_string()));
    }

    /// The bare crate keeps the SDK's HTTP stack when the workspace changes it.
    #[test]
    fn the_bare_crate_has_the_workspace_reqwest() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let manifest = std::fs::read_to_string(root).unwrap();
        assert!(manifest.lines().any(|line| line == REQWEST), "{REQWEST}");
    }
}
