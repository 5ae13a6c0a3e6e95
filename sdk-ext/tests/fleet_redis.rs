//! The fleet's checkpoint store on a real `redis-server` started on a loopback port. (The
//! shared rate budget, where each process is a pacer of its own, is tested in
//! `src/fleet/redis.rs`: the pacer is private.)
#![cfg(feature = "redis")]

mod support;

use pubapi_sdk_ext::fleet::CheckpointStore;
use pubapi_sdk_ext::fleet::redis::RedisCheckpoints;
use support::redis_server::RedisServer;

#[tokio::test]
async fn checkpoints_on_redis_are_seen_by_every_process_and_survive_reconnecting() {
    let server = RedisServer::start();
    let first = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), None);
    first.save("v2-permissions", 4242).await.unwrap();
    let second = RedisCheckpoints::connect(&server.url()).await.unwrap();
    assert_eq!(second.load("v2-permissions").await.unwrap(), Some(4242));
    second.save("v2-permissions", i64::MIN).await.unwrap();
    assert_eq!(first.load("v2-permissions").await.unwrap(), Some(i64::MIN));
}
