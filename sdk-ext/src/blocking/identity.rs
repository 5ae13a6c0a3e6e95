//! The identity handle of the blocking client.

use crate::error::Error;
use pubapi_sdk::types::Whoami;

blocking_handle! {
    /// The token's own identity: `client.identity()`.
    Identity = identity {
        /// `GET /v1/whoami` (see [`crate::api::Identity::whoami`]).
        fn whoami(&self) -> Result<Whoami, Error> => call;
    }
}
