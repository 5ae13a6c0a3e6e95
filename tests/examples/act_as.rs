//! Act as another user (admin tokens): per client, or per call through a view.
//! `cargo run -p pubapi-testkit --example act_as`
use pubapi_sdk_ext::ActAs;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    let sam = client.act_as(ActAs::username("sam")?);
    let me = sam.identity().whoami().await?;
    println!("acting as {}", me.username);
    for hook in sam.webhooks().list().await? {
        println!("sam's webhook {} is {}", hook.webhook_id, hook.status);
    }
    // The same budget: views share their client's pacing.
    let by_email = client.act_as(ActAs::email("power@sandbox.example.com")?);
    let power = by_email.identity().whoami().await?;
    println!("acting as {}", power.username);
    Ok(())
}
