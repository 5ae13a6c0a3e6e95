//! The connection to Redis that the fleet's quota windows ([`super::redis`]) and stream
//! checkpoints ([`super::redis_streams`]) both open: its timeouts, its key prefix and its
//! errors.

use super::FleetError;
use redis::aio::ConnectionManager;
use std::time::Duration;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "pubapi:";

/// How long a command may take before the client stops waiting (and paces on its share).
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection manager to `url` that reconnects by itself, with the timeouts above.
pub(super) async fn connect(url: &str) -> Result<ConnectionManager, FleetError> {
    let client = redis::Client::open(url).map_err(redis_error)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_number_of_retries(1);
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(redis_error)
}

/// A Redis failure as the fleet reports it.
pub(super) fn redis_error(e: redis::RedisError) -> FleetError {
    FleetError::new(format!("redis: {e}"))
}
