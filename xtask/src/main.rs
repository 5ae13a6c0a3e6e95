//! `cargo xtask`: project automation for pubapi.
//!
//! ```text
//! cargo xtask regenerate          write sdk/src/generated.rs, httpmock/src/generated.rs and
//!                                 sdk/openapi.yaml from spec/openapi.yaml
//! cargo xtask regenerate --check  fail when either is stale
//! cargo xtask build-cost [--debug] [--release] [--rounds N] [--crates core,audit,all]
//!                                 clean builds of throwaway user crates (no area, each area
//!                                 feature alone, all, and a bare reqwest + serde + tokio
//!                                 crate), timed
//! ```

mod build_cost;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask regenerate [--check]\n       cargo xtask build-cost [--debug] [--release] [--rounds N] [--crates a,b]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["regenerate"] => regenerate(&workspace_root(), false),
        ["regenerate", "--check"] => regenerate(&workspace_root(), true),
        ["build-cost", rest @ ..] => build_cost::run(&workspace_root(), rest),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Generates the client from the spec and writes it (or, with `check`, compares it).
fn regenerate(root: &Path, check: bool) -> Result<String, String> {
    let spec_path = root.join("spec/openapi.yaml");
    let spec = std::fs::read_to_string(&spec_path)
        .map_err(|e| format!("cannot read {}: {e}", spec_path.display()))?;
    let generated = pubapi_codegen::generate(&spec).map_err(|e| e.to_string())?;
    let target = root.join("sdk/src/generated.rs");
    ensure_file_contents(&target, &generated.code, check)?;
    let mocks = root.join("httpmock/src/generated.rs");
    ensure_file_contents(&mocks, &generated.httpmock_code, check)?;
    // `pubapi_sdk::SPEC_YAML` embeds this copy: a published crate cannot reach `spec/`.
    ensure_file_contents(&root.join("sdk/openapi.yaml"), &spec, check)?;
    let mut report = format!(
        "{}, {} and sdk/openapi.yaml are up to date (spec sha256 {})",
        target.strip_prefix(root).unwrap_or(&target).display(),
        mocks.strip_prefix(root).unwrap_or(&mocks).display(),
        generated.spec_hash
    );
    if !check {
        report.push_str("\nremoved from the generated surface (handled by pubapi-sdk-ext):");
        let mut transforms: Vec<&str> = generated.removals.iter().map(|r| r.transform).collect();
        transforms.dedup();
        for transform in transforms {
            let of: Vec<&pubapi_codegen::Removal> = generated
                .removals
                .iter()
                .filter(|r| r.transform == transform)
                .collect();
            let mut subjects: Vec<&str> = of.iter().map(|r| r.subject.as_str()).collect();
            subjects.sort_unstable();
            subjects.dedup();
            report.push_str(&format!(
                "\n  {transform}: {} removals in {} places ({})",
                of.len(),
                subjects.len(),
                subjects.join(", ")
            ));
        }
    }
    Ok(report)
}

/// The one place that writes generated files. In check mode it never writes and fails when
/// the file differs.
fn ensure_file_contents(path: &Path, contents: &str, check: bool) -> Result<(), String> {
    let current = std::fs::read_to_string(path).unwrap_or_default();
    if current == contents {
        return Ok(());
    }
    if check {
        return Err(format!(
            "{} is stale: run `cargo xtask regenerate` and commit the result",
            path.display()
        ));
    }
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo test` goes red when `sdk/` or `httpmock/` drifts from `spec/`.
    #[test]
    fn sdk_is_fresh() {
        if let Err(message) = regenerate(&workspace_root(), true) {
            panic!("{message}");
        }
    }

    #[test]
    fn check_mode_reports_a_stale_file_without_writing_it() {
        let dir = std::env::temp_dir().join(format!("xtask-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("generated.rs");
        std::fs::write(&file, "old").unwrap();
        let err = ensure_file_contents(&file, "new", true).unwrap_err();
        assert!(err.contains("run `cargo xtask regenerate`"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
        ensure_file_contents(&file, "new", false).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
