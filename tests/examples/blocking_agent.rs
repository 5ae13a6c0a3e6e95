//! Ask an agent and print its answer, with the blocking client: no async runtime, no
//! `.await`. `cargo run -p pubapi-testkit --example blocking_agent`
use pubapi_sdk_ext::ai::AiWait;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _sandbox) = pubapi_testkit::example_client_builder()?;
    let client = builder.build_blocking()?;
    let question = "How much are hotel costs per night?";
    let answer = client
        .agents()
        .ask_and_wait("agt-policy-helper", question, AiWait::default())?;
    println!("{}", answer.result.response_text.unwrap_or_default());
    Ok(())
}
