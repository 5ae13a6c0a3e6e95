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

mod agents;
mod assistant;
mod audit;
mod copilot;
mod documents;
mod events;
mod identity;
mod knowledge_bases;
mod search;
mod webhooks;

pub use agents::Agents;
pub use assistant::Assistant;
pub use audit::Audit;
pub use copilot::Copilot;
pub use documents::Documents;
pub use events::Events;
pub use identity::Identity;
pub use knowledge_bases::KnowledgeBases;
pub use search::Search;
pub use webhooks::Webhooks;
