//! A webhook receiver on 127.0.0.1 that prints every event it receives.
//!
//! ```text
//! WEBHOOK_SECRET=... cargo run -p pubapi-sdk-ext --features receiver-axum \
//!     --example webhook_receiver -- [--addr 127.0.0.1:8080] [--once]
//! ```
//!
//! - `--addr`: where to listen (default `127.0.0.1:8080`; only loopback is used here: put a
//!   TLS-terminating proxy with a publicly trusted certificate in front for the platform).
//! - `--once`: listen on a free port, send itself one signed sample delivery, print it, and
//!   exit; a self-contained check that the wiring works.
//!
//! The secret is the registration's `authHeader`, read from `WEBHOOK_SECRET` (a demo value
//! is used with `--once` when it is unset).

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;

use pubapi_sdk_ext::webhook::{
    self, Batch, DeadLetter, EventData, EventType, HandlerError, Receiver, WebhookSecret, testing,
};
use tokio::sync::mpsc;

const DEMO_SECRET: &str = "demo-secret-0f1e2d3c4b5a69788796a5b4";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut once = false;
    let mut addr: SocketAddr = "127.0.0.1:8080".parse()?;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--once" => once = true,
            "--addr" => addr = args.next().ok_or("--addr needs a value")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if once {
        addr.set_port(0);
    }
    let secret = match std::env::var("WEBHOOK_SECRET") {
        Ok(secret) => secret,
        Err(_) if once => DEMO_SECRET.to_owned(),
        Err(_) => return Err("set WEBHOOK_SECRET to the registration's authHeader".into()),
    };

    let receiver = Arc::new(
        Receiver::builder()
            .secret(WebhookSecret::new(&secret)?)
            .build()?,
    );
    let (handled, mut handled_rx) = mpsc::unbounded_channel::<usize>();
    let handler = Arc::new(move |batch: Batch| {
        let handled = handled.clone();
        async move {
            for event in &batch.events {
                println!(
                    "{} {} by {} ({}): {}",
                    event.event_type,
                    event.event_id,
                    event.user.username,
                    event.domain,
                    describe(&event.data)
                );
            }
            for dead_letter in &batch.dead_letters {
                match dead_letter {
                    DeadLetter::Body { raw, error } => {
                        println!("dead letter: {error} ({} bytes)", raw.len());
                    }
                    DeadLetter::Item { reason, .. } => println!("dead letter item: {reason}"),
                    _ => println!("dead letter"),
                }
            }
            let _ = handled.send(batch.events.len());
            Ok::<(), HandlerError>(())
        }
    });

    let app = webhook::axum::router(Arc::clone(&receiver), handler);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("listening on http://{local}/");

    if !once {
        axum::serve(listener, app).await?;
        return Ok(());
    }

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    let (headers, body) = testing::DeliveryBuilder::new(&secret)
        .event(
            EventType::FsAddFile,
            testing::sample_data(&EventType::FsAddFile),
        )
        .event(
            EventType::PermissionPermissionChange,
            testing::sample_data(&EventType::PermissionPermissionChange),
        )
        .build();
    let response = pubapi_sdk_ext::reqwest::Client::new()
        .post(format!("http://{local}/"))
        .headers(headers)
        .body(body)
        .send()
        .await?;
    println!("self-sent delivery answered {}", response.status());
    let events = handled_rx.recv().await.unwrap_or(0);
    let _ = stop.send(());
    server.await??;
    if response.status() != 200 || events != 2 {
        return Err("self-sent delivery was not handled".into());
    }
    Ok(())
}

fn describe(data: &EventData) -> String {
    match data {
        EventData::FsAddFile(file) => format!("added {}", file.target_path),
        EventData::PermissionPermissionChange(change) => format!(
            "{} on {}: {} -> {}",
            change.assignee.as_deref().unwrap_or("?"),
            change.folder_path,
            change.old_privilege,
            change.new_privilege
        ),
        EventData::Unknown { data, .. } => format!("(untyped) {data}"),
        other => format!("{:?}", other.event_type()),
    }
}
