//! `pubapi events tail`: the SDK's event stream as JSON lines, resumable through a
//! checkpoint file.
//!
//! Each event is written and flushed before its id is saved as the checkpoint, and Ctrl-C
//! is only heard between events, so a stop at any moment leaves a checkpoint that a new run
//! starts after: no event printed twice, none skipped.
//!
//! The checkpoint file is locked (`<file>.lock`) while a tail consumes through it: a second
//! tail on the same file stands by until the first ends (with `--no-follow` it fails at
//! once, exit 1). A file that holds something else than checkpoints stops the tail at once
//! (exit 2, naming the file); a file that cannot be read now is tried again with a backoff,
//! each failure printed.
//!
//! A `--dry-run` reads the checkpoint to show the first poll but takes no lock and saves
//! nothing ([`ReadOnly`]): it creates no file.

use crate::Session;
use crate::args::{EventsCommand, Start, TailArgs};
use crate::failure::Failure;
use futures_util::StreamExt;
use pubapi_sdk_ext::BoxFuture;
use pubapi_sdk_ext::events::{
    EventStream, EventsVersion, PollingEventType, StreamItem, StreamNotice, StreamStart, Suppress,
};
use pubapi_sdk_ext::fleet::{CheckpointStore, FileCheckpoints, FleetError, FleetErrorKind, Lease};
use std::path::Path;
use std::sync::Arc;

/// Runs `pubapi events …`.
pub async fn run(session: &Session, command: EventsCommand) -> Result<(), Failure> {
    match command {
        EventsCommand::Tail(args) => tail(session, args).await,
    }
}

fn suppress(value: &str) -> Result<Suppress, Failure> {
    match value {
        "app" => Ok(Suppress::App),
        "user" => Ok(Suppress::User),
        other => Err(Failure::usage(format!(
            "--suppress takes app or user, not `{other}`"
        ))),
    }
}

/// The checkpoint's name in the file: one per list and filter, so two tails with other
/// filters can share a file without sharing a position.
fn checkpoint_name(args: &TailArgs, version: EventsVersion) -> String {
    let mut name = match version {
        EventsVersion::V1 => "v1".to_string(),
        _ => "v2".to_string(),
    };
    if !args.types.is_empty() {
        let names: Vec<&str> = args.types.iter().map(PollingEventType::as_str).collect();
        name.push_str(&format!(" type={}", names.join(",")));
    }
    if let Some(folder) = &args.folder {
        name.push_str(&format!(" folder={folder}"));
    }
    if let Some(suppress) = &args.suppress {
        name.push_str(&format!(" suppress={suppress}"));
    }
    name
}

async fn tail(session: &Session, args: TailArgs) -> Result<(), Failure> {
    let version = if args.v1 {
        EventsVersion::V1
    } else {
        EventsVersion::V2
    };
    let mut builder = session
        .client
        .events()
        .stream(version)
        .start(match args.from {
            Start::Oldest => StreamStart::Oldest,
            Start::Latest => StreamStart::Latest,
        });
    if !args.types.is_empty() {
        builder = builder.types(args.types.clone());
    }
    if let Some(folder) = &args.folder {
        builder = builder.folder(folder.clone());
    }
    if let Some(value) = &args.suppress {
        builder = builder.suppress(suppress(value)?);
    }
    if let Some(path) = &args.checkpoint {
        let file = FileCheckpoints::new(path.clone());
        let store: Arc<dyn CheckpointStore> = if session.dry_run {
            Arc::new(ReadOnly(file))
        } else {
            Arc::new(file)
        };
        builder = builder.checkpoints(store, checkpoint_name(&args, version));
    }
    let mut stream = builder.build();
    let ended = consume(session, &args, &mut stream).await;
    // Given up, so another tail on the file takes over at once; dropped, it would be freed
    // only when the process ends.
    let released = stream.release().await;
    ended?;
    released.map_err(checkpoint_failure)
}

async fn consume(
    session: &Session,
    args: &TailArgs,
    stream: &mut EventStream,
) -> Result<(), Failure> {
    let mut tail = Tail {
        printed: 0,
        said_nothing_new: false,
    };
    // The stream ends only after an error no later poll can mend: that error is the exit's.
    let mut last_error: Option<Failure> = None;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        if args.max_events.is_some_and(|max| tail.printed >= max) {
            return Ok(());
        }
        let item = tokio::select! {
            item = stream.next() => item,
            _ = &mut interrupted => return Err(Failure::interrupted()),
        };
        let Some(item) = item else {
            return last_error.map_or(Ok(()), Err);
        };
        if item.is_ok()
            && let Some(mended) = last_error.take()
        {
            eprintln!("pubapi: {mended} (the stream went on)");
        }
        match item {
            Ok(StreamItem::Event(event)) => tail.print(session, stream, &event.raw).await?,
            // Printed as sent: a line like the others, which a reader may refuse in turn.
            Ok(StreamItem::Undecodable(event)) => {
                eprintln!(
                    "pubapi: an event the SDK cannot read ({}); printed as sent",
                    event.error
                );
                tail.print(session, stream, &event.raw).await?;
            }
            Ok(StreamItem::Notice(notice)) => {
                if tail.notice(args, stream, notice).await? == Next::Stop {
                    return Ok(());
                }
            }
            // Items of a later SDK: nothing to print or save.
            Ok(_) => {}
            Err(pubapi_sdk_ext::Error::Checkpoint(error))
                if error.kind == FleetErrorKind::Unavailable =>
            {
                // Said when it happens: the stream tries the file again after a backoff.
                eprintln!(
                    "pubapi: {} (trying again)",
                    crate::failure::checkpoint_words(&error)
                );
            }
            Err(error) => {
                // The stream goes on after errors a later poll can mend, and ends after one
                // it cannot: which of the two this was, the next item says.
                if let Some(earlier) = last_error.replace(Failure::from(error)) {
                    eprintln!("pubapi: {earlier} (the stream went on)");
                }
            }
        }
    }
}

/// What `tail` has done so far: the events it printed, and whether it said "nothing new".
struct Tail {
    printed: u64,
    said_nothing_new: bool,
}

/// Whether the tail goes on after a notice.
#[derive(PartialEq)]
enum Next {
    Go,
    Stop,
}

impl Tail {
    /// Prints one event as a JSON line and saves the checkpoint after it.
    async fn print(
        &mut self,
        session: &Session,
        stream: &EventStream,
        raw: &impl serde::Serialize,
    ) -> Result<(), Failure> {
        session.out.json_line(raw)?;
        self.printed += 1;
        save(stream).await
    }

    /// Says what a notice means to a person, saving the checkpoint where it moved.
    async fn notice(
        &mut self,
        args: &TailArgs,
        stream: &EventStream,
        notice: StreamNotice,
    ) -> Result<Next, Failure> {
        match notice {
            StreamNotice::CaughtUp { next_poll_in } => {
                save(stream).await?;
                if self.printed == 0 && !self.said_nothing_new {
                    self.said_nothing_new = true;
                    eprintln!("{}", nothing_new(args.checkpoint.as_deref()));
                }
                if args.no_follow {
                    return Ok(Next::Stop);
                }
                eprintln!(
                    "caught up; next poll in {}",
                    crate::failure::human(next_poll_in)
                );
            }
            StreamNotice::MayHaveMissed { cursor, oldest } => {
                eprintln!(
                    "the platform no longer keeps the events after {cursor} and before \
                     {oldest} (it keeps 30 days): some may be missing"
                );
            }
            StreamNotice::Skipped { .. } => save(stream).await?,
            StreamNotice::StandingBy { .. } => {
                let file = args.checkpoint.as_deref().unwrap_or(Path::new("?"));
                let lock = FileCheckpoints::new(file).lock_path();
                let busy = format!(
                    "another process is tailing through {} (it holds {})",
                    file.display(),
                    lock.display()
                );
                if args.no_follow {
                    return Err(Failure::failed(busy));
                }
                eprintln!("{busy}: standing by until it stops");
            }
            StreamNotice::LeaseLost { .. } => {
                eprintln!("another process took the checkpoint file over: standing by");
            }
            // Notices of a later SDK: nothing to print or save.
            _ => {}
        }
        Ok(Next::Go)
    }
}

async fn save(stream: &EventStream) -> Result<(), Failure> {
    stream.save_checkpoint().await.map_err(checkpoint_failure)
}

fn checkpoint_failure(error: FleetError) -> Failure {
    if error.kind == FleetErrorKind::Corrupt {
        return Failure::from(pubapi_sdk_ext::Error::Checkpoint(error));
    }
    Failure::failed(format!(
        "cannot save the checkpoint: {}",
        crate::failure::checkpoint_words(&error)
    ))
}

/// What a tail that caught up before its first event says: a resumed one that nothing
/// happened since its checkpoint.
fn nothing_new(checkpoint: Option<&Path>) -> String {
    match checkpoint {
        Some(file) => format!(
            "no new events since the checkpoint in {} (nothing printed)",
            file.display()
        ),
        None => "no events (nothing printed)".to_string(),
    }
}

/// A checkpoint file a dry run reads without locking or writing anything: its first poll
/// starts where a real run would, and no file is created.
#[derive(Debug)]
struct ReadOnly(FileCheckpoints);

impl CheckpointStore for ReadOnly {
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        self.0.load(name)
    }

    /// Saves nothing; answers what the file holds, so the stream sees no loss.
    fn save<'a>(
        &'a self,
        lease: &'a Lease,
        _id: i64,
    ) -> BoxFuture<'a, Result<Option<i64>, FleetError>> {
        self.0.load(&lease.name)
    }
}
