//! What the CLI's process tests share: the `pubapi` command with no configuration of the
//! machine it runs on, and what a run printed and how it ended.

use std::process::{Command, Output};

/// `pubapi`, built for the tests, with none of the environment's or the user's configuration:
/// each test says where it points.
pub fn pubapi() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pubapi"));
    for var in ["PUBAPI_DOMAIN", "PUBAPI_BASE_URL", "PUBAPI_TOKEN"] {
        command.env_remove(var);
    }
    command.env("PUBAPI_CONFIG", "/nonexistent/pubapi/config.toml");
    command
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts that the run ended with `code` and that its stderr says each of `says`.
    #[track_caller]
    pub fn assert_says(&self, code: i32, says: &[&str]) {
        assert_eq!(self.code, code, "{self:?}");
        for said in says {
            assert!(self.stderr.contains(said), "{said:?}: {self:?}");
        }
    }
}

/// The run of a finished process.
pub fn finished(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `pubapi args` to the end against `sandbox` (`PUBAPI_BASE_URL`, `PUBAPI_TOKEN`), off
/// the runtime's threads, with no terminal (as cron runs it).
#[allow(
    dead_code,
    reason = "not every test file runs against a served sandbox"
)]
pub async fn against<S: AsRef<std::ffi::OsStr>>(
    sandbox: &pubapi_sandbox::Sandbox,
    args: impl IntoIterator<Item = S>,
) -> Run {
    let mut command = pubapi();
    command
        .env("PUBAPI_BASE_URL", sandbox.base_url())
        .env("PUBAPI_TOKEN", sandbox.admin_token())
        .stdin(std::process::Stdio::null())
        .args(args);
    tokio::task::spawn_blocking(move || finished(command.output().unwrap()))
        .await
        .unwrap()
}
