//! The deprecated copilot (`POST /v1/ai/copilot/ask`).
//!
//! It answers synchronously with `Deprecation`, `Sunset` and `Link` until its removal date
//! in the spec (`x-pubapi-sunset`: 30 September 2026, 00:00 UTC) on the sandbox clock. From
//! then on the router answers it as removed before it gets here: 410 Gone in the AI error
//! format, `errorCode` `ENDPOINT_REMOVED`, a message naming the successor
//! (`x-pubapi-successor`: `POST /v1/ai/assistant/ask`), and the same three headers. The spec
//! documents no 410 for `askCopilot`, so the conformance check reports these exchanges. A
//! manual clock ([`ClockConfig::manual`]) starts before the sunset; a real-time clock starts
//! at the wall-clock time, which is past it.
//!
//! [`ClockConfig::manual`]: crate::ClockConfig::manual

use super::answers::{answer_in_new_conversation, best_hits, citations, question_and_selection};
use super::body::include_citations;
use crate::Shared;
use crate::auth::Caller;
use crate::http::{ApiRequest, Reply, deprecation_headers};
use serde_json::json;

/// `POST /v1/ai/copilot/ask` (deprecated; answers synchronously with its deprecation
/// headers; after its sunset the router answers 410 instead).
pub fn ask_copilot(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let asked = match question_and_selection(shared, req) {
        Ok(asked) => asked,
        Err(reply) => return reply,
    };
    let hits = best_hits(&asked.docs, &asked.question);
    let mut answer = answer_in_new_conversation(shared, &hits);
    answer["deprecationNotice"] = json!(
        "This endpoint is deprecated and is removed on 30 September 2026; use POST /v1/ai/assistant/ask."
    );
    if include_citations(&asked.body) {
        answer["citations"] = citations(&hits, "text");
    }
    deprecation_headers(req.op, Reply::json(200, &answer))
}
