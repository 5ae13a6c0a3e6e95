//! The workspace's short example programs (`tests/examples/`) and the root README's set-up,
//! held to what issue 23 asked of them. They live here because the CLI's tests are where the
//! README's `cargo run -p pubapi-cli` commands are checked; each failure says which rule and
//! where.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn examples() -> Vec<(String, String)> {
    let dir = workspace().join("tests/examples");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_examples_print_what_a_person_reads_and_write_no_file_where_they_run() {
    let mut broken = Vec::new();
    for (name, text) in examples() {
        for (n, line) in text.lines().enumerate() {
            let at = format!("tests/examples/{name}:{}", n + 1);
            // Debug output (`Some(Delete)`, `FsAddFolder(FsAddFolderData { … })`) is for
            // developers of the SDK, not for the person running the example.
            if line.contains(":?}") || line.contains(":#?}") {
                broken.push(format!("{at}: Debug formatting: {}", line.trim()));
            }
            // Files go into a folder the run names or a temporary one, never where it runs.
            for opener in ["File::create(\"", "FileCheckpoints::new(\"", "fs::write(\""] {
                if line.contains(opener) {
                    broken.push(format!(
                        "{at}: a file in the current folder: {}",
                        line.trim()
                    ));
                }
            }
        }
    }
    // A resumed tail says so, and says when nothing is new.
    let tail = examples()
        .into_iter()
        .find(|(name, _)| name == "tail_permissions.rs")
        .unwrap()
        .1;
    for says in [
        "resuming after event",
        "no permission change since the checkpoint",
    ] {
        if !tail.contains(says) {
            broken.push(format!(
                "tests/examples/tail_permissions.rs does not say {says:?}"
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The packages and flags each `cargo run` and `cargo build` of the README's `sh` blocks
/// name, one entry per command.
fn cargo_commands(readme: &str, verb: &str) -> Vec<String> {
    let mut commands = Vec::new();
    for line in blocks(readme, "sh") {
        for part in line.split("&&") {
            let part = part.trim().trim_end_matches('\\').trim();
            if let Some(rest) = part.strip_prefix(&format!("cargo {verb} ")) {
                // Up to the program's own arguments, and without the comment.
                let rest = rest
                    .split(" -- ")
                    .next()
                    .unwrap()
                    .split('#')
                    .next()
                    .unwrap();
                commands.push(rest.trim().to_string());
            }
        }
    }
    commands
}

#[test]
fn the_readme_set_up_builds_what_its_commands_then_run() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let builds = cargo_commands(&readme, "build");
    let runs = cargo_commands(&readme, "run");
    assert!(!runs.is_empty(), "no cargo run in the README");
    // `cargo run -p P [--example E]` builds P alone with P's features: the set-up must have
    // built exactly that (`-p P` alone, and `--examples` for an example), not only a
    // workspace build, whose features unify across every package and give other artifacts.
    let mut missing = Vec::new();
    for run in &runs {
        let package = run
            .split_whitespace()
            .skip_while(|w| *w != "-p")
            .nth(1)
            .unwrap_or_else(|| panic!("cargo run without -p: {run}"));
        let example = run.contains("--example ");
        let built = builds.iter().any(|build| {
            let words: Vec<&str> = build.split_whitespace().collect();
            let packages = words.iter().filter(|w| **w == "-p").count();
            packages == 1
                && words.windows(2).any(|w| w == ["-p", package])
                && !words.contains(&"--workspace")
                && !words.contains(&"--all-features")
                && (words.contains(&"--examples") == example)
        });
        if !built {
            missing.push(format!("cargo run {run}"));
        }
    }
    assert!(
        missing.is_empty(),
        "the README's set-up builds nothing these run without recompiling:\n{}\nset-up builds: {builds:?}",
        missing.join("\n")
    );
}

/// The lines of the README's blocks fenced as `lang`.
fn blocks<'a>(readme: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}");
    section_lines(readme, |l| l.starts_with("```").then(|| l == fence)).collect()
}

#[test]
fn the_readmes_commands_write_under_target_and_make_the_folders_they_redirect_into() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let mut broken = Vec::new();
    for line in blocks(&readme, "sh") {
        let command = line.split(" #").next().unwrap();
        let words: Vec<&str> = command.split_whitespace().collect();
        // What a command writes into: the value of a flag that names a file or folder, and
        // the folder an example is given after `--`.
        for pair in words.windows(2) {
            let writes = matches!(pair[0], "--out" | "--checkpoint" | "--state" | "--out-dir")
                || (pair[0] == "--" && command.contains("--example "));
            if writes && pair[1] != "-" && !pair[1].starts_with("target/") {
                broken.push(format!(
                    "{} {} writes into the working tree (use target/…): {line}",
                    pair[0], pair[1]
                ));
            }
        }
        // A redirect into a folder the command makes first (it may not exist yet).
        for part in command.split("&&") {
            if let Some((_, file)) = part.split_once(" > ") {
                let file = file.split_whitespace().next().unwrap_or_default();
                let folder = file.rsplit_once('/').map_or(".", |(folder, _)| folder);
                let made = command
                    .split("&&")
                    .any(|p| p.trim() == format!("mkdir -p {folder}"));
                if folder != "." && !made {
                    broken.push(format!(
                        "> {file} without `mkdir -p {folder}` first: {line}"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// `[features]` names and optional dependencies of the workspace crate in `dir`.
fn features_of(dir: &str) -> (String, Vec<String>) {
    let manifest = std::fs::read_to_string(workspace().join(dir).join("Cargo.toml")).unwrap();
    let name = manifest_value(&manifest, "name");
    let features = section_lines(&manifest, |l| l.starts_with('[').then(|| l == "[features]"))
        .filter_map(|line| line.split_once(" = "))
        .map(|(feature, _)| feature.trim().to_string())
        .collect();
    (name, features)
}

/// The value of the first line `key = "value"` of a manifest.
fn manifest_value(manifest: &str, key: &str) -> String {
    manifest
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = ")))
        .unwrap()
        .trim_matches('"')
        .to_string()
}

/// The lines of `text` inside the sections it keeps: a line for which `starts` is
/// `Some(kept)` begins a section (kept or not) and is not itself returned.
fn section_lines(text: &str, starts: impl Fn(&str) -> Option<bool>) -> impl Iterator<Item = &str> {
    let mut kept = false;
    text.lines().filter(move |line| match starts(line) {
        Some(keep) => {
            kept = keep;
            false
        }
        None => kept,
    })
}

#[test]
fn the_readmes_dependency_lines_resolve_before_the_crates_are_published() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme
        .split("## Use it in your project")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let root_manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let repository = manifest_value(&root_manifest, "repository");
    let crates = ["sdk-ext", "sandbox", "httpmock"].map(features_of);
    let mut broken = Vec::new();
    let (mut by_git, mut by_path) = (0, 0);
    for line in blocks(section, "toml") {
        let Some((name, spec)) = line.split_once(" = ") else {
            continue;
        };
        let name = name.trim();
        if !name.starts_with("pubapi-") {
            continue;
        }
        let Some((_, features)) = crates.iter().find(|(crate_name, _)| crate_name == name) else {
            broken.push(format!(
                "{name} is not a published crate of the workspace: {line}"
            ));
            continue;
        };
        // Resolvable today: from the repository, or from a clone's folder of that crate.
        if spec.contains(&format!("git = \"{repository}\"")) {
            by_git += 1;
        } else if let Some(path) = spec
            .split("path = \"../pubapi/")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        {
            by_path += 1;
            if features_of(path).0 != name {
                broken.push(format!("{path} is not the folder of {name}: {line}"));
            }
        } else {
            broken.push(format!(
                "{name} neither from git ({repository}) nor a path: does not resolve before \
                 publishing: {line}"
            ));
        }
        if let Some(named) = spec.split("features = [").nth(1) {
            for feature in named.split(']').next().unwrap().split(',') {
                let feature = feature.trim().trim_matches('"');
                if !feature.is_empty() && !features.iter().any(|f| f == feature) {
                    broken.push(format!("{name} has no feature {feature}: {line}"));
                }
            }
        }
    }
    assert!(by_git > 0 && by_path > 0, "a git line and a path line each");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_command_lines_say_values_in_words_never_in_rusts_debug_form() {
    // What `pubapi` and `pubapi-sandbox` print, and the control plane's refusals: their
    // sources up to their unit tests.
    let mut sources = vec![workspace().join("sandbox/src/control.rs")];
    for dir in ["cli/src", "sandbox/src/cli"] {
        for entry in std::fs::read_dir(workspace().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                sources.push(path);
            }
        }
    }
    sources.sort();
    let mut broken = Vec::new();
    for path in sources {
        let text = std::fs::read_to_string(&path).unwrap();
        let shipped = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in shipped.lines().enumerate() {
            if line.contains(":?}") || line.contains(":#?}") || line.contains("{:?") {
                let at = path.strip_prefix(workspace()).unwrap().display();
                broken.push(format!("{at}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "Debug formatting:\n{}",
        broken.join("\n")
    );
}
