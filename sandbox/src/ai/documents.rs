//! Document AI (`/v1/ai/document/{entry-id}/...`): questions about one document version
//! and its summary. Citations carry the reference's chunk `text` (2.3).

use super::answers::{CitationStyle, compose, grouped_citations, rank};
use super::body::{check_common, include_citations, question};
use crate::Shared;
use crate::auth::Caller;
use crate::corpus::first_sentence;
use crate::fs::FsEntry;
use crate::http::{ApiRequest, Reply, error};
use serde_json::{Value, json};

fn document(shared: &Shared, req: &ApiRequest) -> Result<FsEntry, Reply> {
    let id = req.param("entry-id");
    shared
        .world()
        .fs
        .by_entry_id(id)
        .filter(|d| !d.chunks.is_empty())
        .cloned()
        .ok_or_else(|| {
            error(
                req.op,
                404,
                "DOCUMENT_NOT_FOUND",
                &format!("no document version {id}"),
            )
        })
}

/// `POST /v1/ai/document/{entry-id}/ask`.
pub fn ask_document(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let doc = match document(shared, req) {
        Ok(doc) => doc,
        Err(reply) => return reply,
    };
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let hits = rank(std::slice::from_ref(&doc), &question, 0.5);
    let mut answer = json!({ "response": { "text": compose(&hits) } });
    if include_citations(&body) {
        answer["citations"] = json!(grouped_citations(&hits, CitationStyle::Document));
    }
    Reply::json(200, &answer)
}

/// `POST /v1/ai/document/{entry-id}/summary`.
pub fn summarize_document(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let doc = match document(shared, req) {
        Ok(doc) => doc,
        Err(reply) => return reply,
    };
    match req.json() {
        Ok(None) => {}
        Ok(Some(Value::Object(body))) => {
            if let Err(reply) = check_common(req, &body) {
                return reply;
            }
        }
        Ok(Some(_)) => {
            return error(
                req.op,
                400,
                "INVALID_REQUEST",
                "the body must be a JSON object",
            );
        }
        Err(message) => return error(req.op, 400, "INVALID_REQUEST", &message),
    }
    let summary: Vec<&str> = doc
        .chunks
        .iter()
        .take(3)
        .map(|c| first_sentence(c))
        .collect();
    Reply::json(
        200,
        &json!({ "response": { "text": format!("{}: {}", doc.name(), summary.join(" ")) } }),
    )
}
