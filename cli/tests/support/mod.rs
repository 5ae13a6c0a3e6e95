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
