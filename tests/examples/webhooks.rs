//! Register a webhook and receive its deliveries on a local receiver.
//! `cargo run -p pubapi-testkit --example webhooks`
use pubapi_sdk_ext::webhook::registration::Registration;
use pubapi_sdk_ext::webhook::{self, Batch, EventData, HandlerError, Receiver, WebhookSecret};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, sandbox) = pubapi_testkit::example_client().await?;
    let secret = "example-secret-5f0c2e9a71b3";
    let receiver = Arc::new(
        Receiver::builder()
            .secret(WebhookSecret::new(secret)?)
            .build()?,
    );
    let (tx, mut delivered) = tokio::sync::mpsc::unbounded_channel();
    let handler = Arc::new(move |batch: Batch| {
        let tx = tx.clone();
        async move {
            batch
                .events
                .into_iter()
                .for_each(|event| drop(tx.send(event)));
            Ok::<(), HandlerError>(())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hooks", listener.local_addr()?);
    let app = axum::Router::new().route("/hooks", webhook::axum::endpoint(receiver, handler));
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The platform requires https; a sandbox accepts a loopback receiver in test mode.
    let registration = Registration::loopback_for_tests(&url)?
        .event_names(["fs:*"])?
        .auth_header(secret);
    let hook = client.webhooks().create(&registration).await?;
    println!("registered {} ({})", hook.webhook_id, hook.status);
    if let Some(sandbox) = &sandbox {
        sandbox.activity_as("sam").create_folder("/Inbox")?;
    }
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(5), delivered.recv()).await
    {
        let path = match &event.data {
            EventData::FsAddFolder(folder) => folder.target_path.as_str(),
            EventData::FsAddFile(file) => file.target_path.as_str(),
            _ => "",
        };
        println!("{} by {} {path}", event.event_type, event.user.username);
    }
    client.webhooks().delete(&hook.webhook_id).await?;
    Ok(())
}
