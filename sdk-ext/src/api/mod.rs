//! The handles, one per area of the API: what `client.agents()`, `client.audit()`,
//! `client.events()`, ... return.
//!
//! How the parts fit:
//! - [`Client`](crate::Client) (in the crate root) has every area accessor in one `impl`
//!   block; each accessor hands out one of these handles, which borrows the client.
//! - A handle holds every operation of its area, with the checks the SDK performs, so no
//!   public path skips them. Its methods are short: they call the generated client
//!   ([`Client::sdk`](crate::Client::sdk)), or the area's machinery, which stays in the
//!   area's module: the AI waits and answer types in [`crate::ai`], audit jobs, report pages
//!   and CSV in [`crate::audit`], the resumable event stream in [`crate::events`], webhook
//!   registrations and the receiver of their deliveries in [`crate::webhook`].
//! - Nothing under `api/` is used by those modules: the handles sit on top of them.
//!
//! The blocking client ([`crate::blocking`], feature `blocking`) has the same handles, under
//! the same names, in its own module.
//!
//! Each handle is there with its area's feature (`ai`, `audit`, `events`, `webhooks`; all by
//! default), like the area's module and the generated code it calls; [`Identity`] always is.

#[cfg(feature = "ai")]
mod agents;
#[cfg(feature = "ai")]
mod assistant;
#[cfg(feature = "audit")]
mod audit;
#[cfg(feature = "ai")]
mod copilot;
#[cfg(feature = "ai")]
mod documents;
#[cfg(feature = "events")]
mod events;
mod identity;
#[cfg(feature = "ai")]
mod knowledge_bases;
#[cfg(feature = "ai")]
mod search;
#[cfg(feature = "webhooks")]
mod webhooks;

#[cfg(feature = "ai")]
pub use agents::Agents;
#[cfg(feature = "ai")]
pub use assistant::Assistant;
#[cfg(feature = "audit")]
pub use audit::Audit;
#[cfg(feature = "ai")]
pub use copilot::Copilot;
#[cfg(feature = "ai")]
pub use documents::Documents;
#[cfg(feature = "events")]
pub use events::Events;
pub use identity::Identity;
#[cfg(feature = "ai")]
pub use knowledge_bases::KnowledgeBases;
#[cfg(feature = "ai")]
pub use search::Search;
#[cfg(feature = "webhooks")]
pub use webhooks::Webhooks;
