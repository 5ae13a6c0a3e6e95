//! Permission changes from the events stream, resumable from a checkpoint file.
//! `cargo run -p pubapi-testkit --example tail_permissions`
use pubapi_sdk_ext::events::{
    EventStream, EventsVersion, PollingEventData, StreamItem, StreamNotice, StreamStart,
};
use pubapi_sdk_ext::fleet::FileCheckpoints;
use pubapi_sdk_ext::prelude::*;
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, _sandbox) = pubapi_testkit::example_client().await?;
    let checkpoints = Arc::new(FileCheckpoints::new("permissions.checkpoint"));
    let mut stream = EventStream::builder(EventsVersion::V2)
        .types(["permission_change"])
        .start(StreamStart::Oldest)
        .checkpoints(checkpoints, "permissions")
        .build(client);
    while let Some(item) = stream.next().await {
        match item? {
            StreamItem::Event(event) => {
                if let PollingEventData::PermissionChange(change) = event.data() {
                    let folder = change.data.target_path.unwrap_or_default();
                    let changed = change.attributes.and_then(|a| a.change_permission_event);
                    for entry in changed.into_iter().flat_map(|c| c.changed_permissions) {
                        let (action, who) = (entry.action, entry.entry.unwrap_or_default());
                        println!(
                            "#{} {folder}: {action:?} {:?} {:?}",
                            event.raw.id, who.subject, who.priv_
                        );
                    }
                }
            }
            // A service would go on; the example stops once it has read everything.
            StreamItem::Notice(StreamNotice::CaughtUp { .. }) => break,
            StreamItem::Notice(_) => {}
        }
        stream.save_checkpoint().await?;
    }
    Ok(())
}
