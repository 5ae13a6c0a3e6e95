//! `pubapi-sandbox`: the sandbox's command line (see [`pubapi_sandbox::cli`]).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    pubapi_sandbox::cli::run("pubapi-sandbox", &args).await
}
