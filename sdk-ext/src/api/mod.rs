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

/// The accessors of the area handles, written once for both clients: expanded in the one
/// `impl Client` block of areas of [`crate::Client`] (where the names are the handles of this
/// module) and of `crate::blocking::Client` (where they are the blocking handles, of the same
/// names). `$each` says how a sequence is handed out ("as a stream", "one at a time").
macro_rules! area_accessors {
    ($each:literal) => {
        /// The agents: list, ask, poll, ask and wait.
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        pub fn agents(&self) -> Agents<'_> {
            Agents { client: self }
        }

        /// The assistant: ask, poll, ask and wait.
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        pub fn assistant(&self) -> Assistant<'_> {
            Assistant { client: self }
        }

        /// The deprecated synchronous copilot.
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        #[deprecated(
            note = "the copilot is removed on 30 September 2026: use `client.assistant().ask_and_wait(..)`"
        )]
        pub fn copilot(&self) -> Copilot<'_> {
            Copilot { client: self }
        }

        /// Document Q&A: a question about one document version, or its summary.
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        pub fn documents(&self) -> Documents<'_> {
            Documents { client: self }
        }

        #[doc = concat!("The knowledge bases: list them page by page or ", $each, ", ask one.")]
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        pub fn knowledge_bases(&self) -> KnowledgeBases<'_> {
            KnowledgeBases { client: self }
        }

        #[doc = concat!("Hybrid search: one page, or every result ", $each, ".")]
        #[cfg(feature = "ai")]
        #[cfg_attr(docsrs, doc(cfg(feature = "ai")))]
        pub fn search(&self) -> Search<'_> {
            Search { client: self }
        }

        /// Audit reports v1: create, wait, read JSON pages or CSV, delete; or all in one call.
        #[cfg(feature = "audit")]
        #[cfg_attr(docsrs, doc(cfg(feature = "audit")))]
        pub fn audit(&self) -> Audit<'_> {
            Audit { client: self }
        }

        /// The events API: the cursor, single pages, a resumable stream, a backfill.
        #[cfg(feature = "events")]
        #[cfg_attr(docsrs, doc(cfg(feature = "events")))]
        pub fn events(&self) -> Events<'_> {
            Events { client: self }
        }

        /// Webhook registrations (they need the `Service.webhooks` scope).
        #[cfg(feature = "webhooks")]
        #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
        pub fn webhooks(&self) -> Webhooks<'_> {
            Webhooks { client: self }
        }

        /// Who the token belongs to (`whoami`).
        pub fn identity(&self) -> Identity<'_> {
            Identity { client: self }
        }
    };
}
pub(crate) use area_accessors;

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

#[cfg(feature = "audit")]
pub use audit::Audit;
#[cfg(feature = "events")]
pub use events::Events;
pub use identity::Identity;
#[cfg(feature = "webhooks")]
pub use webhooks::Webhooks;
#[cfg(feature = "ai")]
pub use {
    agents::Agents, assistant::Assistant, copilot::Copilot, documents::Documents,
    knowledge_bases::KnowledgeBases, search::Search,
};
