//! What failures look like: refused before sending, refused by the server, matched by kind.
//! `cargo run -p pubapi-testkit --example errors`
use pubapi_sdk_ext::Error;
use pubapi_sdk_ext::webhook::registration::Registration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    // Bad input never reaches the network.
    match Registration::new("http://hooks.example.com/in") {
        Err(Error::InvalidInput(problem)) => println!("refused locally: {problem}"),
        Err(other) => println!("refused another way: {other}"),
        Ok(_) => println!("unexpected: an http:// URL was accepted"),
    }
    // The server's answer: status, code and message, typed by kind.
    match client.agents().ask("agt-nope", "Anyone there?").await {
        Err(Error::NotFound(answer)) => println!(
            "{} {}: {}",
            answer.status(),
            answer.code().unwrap_or_default(),
            answer.message().unwrap_or_default()
        ),
        Err(other) if other.is_retryable() => println!("try again later: {other}"),
        Err(other) => println!("{other}"),
        Ok(asked) => println!("asked: {}", asked.request_id),
    }
    Ok(())
}
