//! Permission changes from the events stream, resumable from a checkpoint file in the folder
//! given (else a new temporary one, so nothing to resume):
//! `cargo run -p pubapi-testkit --example tail_permissions -- DIR`
use pubapi_sdk_ext::events::{
    EventsVersion, PollingEventData, PollingEventType, StreamItem, StreamNotice, StreamStart,
};
use pubapi_sdk_ext::fleet::{CheckpointStore, FileCheckpoints};
use pubapi_sdk_ext::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    let dir = match std::env::args().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::temp_dir().join(format!("pubapi-tail-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let checkpoints = Arc::new(FileCheckpoints::new(dir.join("permissions.checkpoint")));
    if let Some(after) = checkpoints.load("permissions").await? {
        // Saved by an earlier run: the stream starts after it.
        let file = checkpoints.path().display();
        println!("resuming after event #{after}, the checkpoint in {file}");
    }
    let mut printed = 0;
    let mut stream = client
        .events()
        .stream(EventsVersion::V2)
        .types([PollingEventType::PermissionChange])
        .start(StreamStart::Oldest)
        .checkpoints(checkpoints, "permissions")
        .build();
    while let Some(item) = stream.next().await {
        match item? {
            StreamItem::Event(event) => {
                if let PollingEventData::PermissionChange(change) = event.data() {
                    let folder = change.data.target_path.unwrap_or_default();
                    let changed = change
                        .attributes
                        .and_then(|a| a.change_permission_event.as_ref());
                    for entry in changed.into_iter().flat_map(|c| &c.changed_permissions) {
                        let action = entry.action.as_ref().map(|a| a.to_string());
                        let who = entry.entry.clone().unwrap_or_default();
                        println!(
                            "#{} {folder}: {} {} {}",
                            event.raw.id,
                            action.as_deref().unwrap_or("changed"),
                            who.subject.as_deref().unwrap_or("someone"),
                            who.priv_.as_deref().unwrap_or("(no level)")
                        );
                        printed += 1;
                    }
                }
            }
            // Kept as sent, in its place: a service would log it, or keep it to look at.
            StreamItem::Undecodable(event) => {
                let id = event
                    .id
                    .map_or_else(|| "?".to_string(), |id| id.to_string());
                eprintln!("#{id}: an event the SDK cannot read: {}", event.error);
            }
            // A service would go on; the example stops once it has read everything.
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => {
                if printed == 0 {
                    println!("no permission change since the checkpoint");
                }
                break;
            }
            // Other notices, and items of a later SDK.
            _ => {}
        }
        stream.save_checkpoint().await?;
    }
    Ok(())
}
