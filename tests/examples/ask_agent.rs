//! Ask an agent and wait for its answer. `cargo run -p pubapi-testkit --example ask_agent`
use pubapi_sdk_ext::ai::AiWait;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    for agent in client.agents().list().await? {
        println!("{} {}", agent.agent_id, agent.name.unwrap_or_default());
    }
    let question = "How much are hotel costs per night?";
    let answer = client
        .agents()
        .ask_and_wait("agt-policy-helper", question, AiWait::default())
        .await?;
    println!("{}", answer.result.response_text.unwrap_or_default());
    Ok(())
}
