//! The `pubapi` binary: the command line of [`pubapi_cli`].

#[tokio::main]
async fn main() -> std::process::ExitCode {
    pubapi_cli::main().await
}
