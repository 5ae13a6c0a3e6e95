//! What every AI area answers from: the documents of the file system, their chunks ranked
//! for a question, the answer composed from the best one and the citations of the hits.

use super::body::{question, selected_ids};
use crate::Shared;
use crate::fs::{FsEntry, is_within};
use crate::http::{ApiRequest, Reply, error};
use crate::search;
use serde_json::{Map, Value, json};

pub(super) const NO_ANSWER: &str =
    "I could not find an answer to that in the documents available to me.";

/// A matching chunk of a document.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The document.
    pub doc: FsEntry,
    /// Index of the chunk.
    pub chunk: usize,
    /// Blended score.
    pub score: f64,
}

impl Hit {
    pub(super) fn chunk_id(&self) -> String {
        format!("{}-{}", self.doc.entry_id, self.chunk)
    }

    pub(super) fn text(&self) -> &str {
        &self.doc.chunks[self.chunk]
    }

    pub(super) fn preview_url(&self) -> String {
        format!("/preview/{}", self.doc.object_id)
    }
}

/// The citations of `hits`, one per hit, each chunk's text under `text_key` (the assistant
/// says `sourceText`, the copilot `text`).
pub(super) fn citations(hits: &[Hit], text_key: &str) -> Value {
    let citations: Vec<Value> = hits
        .iter()
        .map(|h| {
            let mut chunk = json!({ "chunkId": h.chunk_id() });
            chunk[text_key] = json!(h.text());
            json!({
                "filename": h.doc.name(),
                "entryId": h.doc.entry_id,
                "objectId": h.doc.object_id,
                "previewUrl": h.preview_url(),
                "chunks": [chunk],
            })
        })
        .collect();
    Value::Array(citations)
}

/// Every matching chunk of `docs` for `query`, best first.
pub fn rank(docs: &[FsEntry], query: &str, semantic_weight: f64) -> Vec<Hit> {
    let passages: Vec<(usize, usize, &str)> = docs
        .iter()
        .enumerate()
        .flat_map(|(d, doc)| {
            doc.chunks
                .iter()
                .enumerate()
                .map(move |(c, text)| (d, c, text.as_str()))
        })
        .collect();
    let texts: Vec<&str> = passages.iter().map(|(_, _, t)| *t).collect();
    let mut hits: Vec<Hit> = search::score(query, &texts, semantic_weight)
        .into_iter()
        .filter(|s| s.matches)
        .map(|s| {
            let (d, c, _) = passages[s.index];
            Hit {
                doc: docs[d].clone(),
                chunk: c,
                score: s.score,
            }
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.doc.path.cmp(&b.doc.path))
            .then(a.chunk.cmp(&b.chunk))
    });
    hits
}

/// The three best hits of `docs` for `question`: what an answer is composed from and cites.
pub(super) fn best_hits(docs: &[FsEntry], question: &str) -> Vec<Hit> {
    rank(docs, question, 0.5).into_iter().take(3).collect()
}

/// A synchronous answer from `hits` that starts a conversation: `response.text` and a new
/// `conversationId`.
pub(super) fn answer_in_new_conversation(shared: &Shared, hits: &[Hit]) -> Value {
    json!({
        "response": { "text": compose(hits) },
        "conversationId": shared.world().ids.id("conv-"),
    })
}

/// An answer composed from the best hit (and the hits it cites).
pub(super) fn compose(hits: &[Hit]) -> String {
    match hits.first() {
        None => NO_ANSWER.to_string(),
        Some(best) => format!("{} (source: {})", best.text(), best.doc.name()),
    }
}

pub(super) fn documents_in(shared: &Shared, folders: &[&str]) -> Vec<FsEntry> {
    shared
        .world()
        .fs
        .documents()
        .filter(|d| folders.is_empty() || folders.iter().any(|f| is_within(&d.path, f)))
        .cloned()
        .collect()
}

fn selected_documents(shared: &Shared, body: &Map<String, Value>) -> Result<Vec<FsEntry>, String> {
    let Some((files, folders)) = selected_ids(body)? else {
        return Ok(documents_in(shared, &[]));
    };
    let world = shared.world();
    let folder_paths: Vec<String> = world
        .fs
        .entries()
        .filter(|e| e.is_folder && folders.contains(&e.group_id))
        .map(|e| e.path.clone())
        .collect();
    Ok(world
        .fs
        .documents()
        .filter(|d| {
            files.contains(&d.entry_id) || folder_paths.iter().any(|f| is_within(&d.path, f))
        })
        .cloned()
        .collect())
}

/// An assistant or copilot question: its text, its body and the documents its
/// `selectedItems` select (every document without them).
pub(super) struct Asked {
    pub(super) question: String,
    pub(super) body: Map<String, Value>,
    pub(super) docs: Vec<FsEntry>,
}

/// The question of an assistant or copilot body and the documents it selects, or the
/// documented 400.
pub(super) fn question_and_selection(shared: &Shared, req: &ApiRequest) -> Result<Asked, Reply> {
    let (question, body) = question(req, None)?;
    let docs = selected_documents(shared, &body)
        .map_err(|message| error(req.op, 400, "INVALID_REQUEST", &message))?;
    Ok(Asked {
        question,
        body,
        docs,
    })
}

/// The citations of the best three hits, one per document with its chunks.
///
/// Ask-document citations are the reference's `{filename, entryId, chunks: [{chunkId,
/// text}]}` (2.3). Ask-KB citations (the reference does not show that response) are the
/// platform clients' `{filename, entryId, objectId, previewUrl, chunks: [{chunkId,
/// sourceText}]}`, the shape the reference gives the assistant's citations (2.4).
pub(super) fn grouped_citations(hits: &[Hit], style: CitationStyle) -> Vec<Value> {
    let mut citations: Vec<Value> = Vec::new();
    for hit in hits.iter().take(3) {
        let chunk = match style {
            CitationStyle::Document => json!({ "chunkId": hit.chunk_id(), "text": hit.text() }),
            CitationStyle::SourceText => {
                json!({ "chunkId": hit.chunk_id(), "sourceText": hit.text() })
            }
        };
        match citations
            .iter_mut()
            .find(|c| c["entryId"] == hit.doc.entry_id.as_str())
        {
            Some(c) => c["chunks"]
                .as_array_mut()
                .into_iter()
                .for_each(|a| a.push(chunk.clone())),
            None => citations.push(match style {
                CitationStyle::Document => json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "chunks": [chunk],
                }),
                CitationStyle::SourceText => json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "objectId": hit.doc.object_id,
                    "previewUrl": hit.preview_url(),
                    "chunks": [chunk],
                }),
            }),
        }
    }
    citations
}

/// Which citation shape an answer carries (see [`grouped_citations`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum CitationStyle {
    /// Ask-document (reference 2.3): chunks carry `text`.
    Document,
    /// Ask-KB (the platform's clients): `objectId`, `previewUrl`, chunks carry `sourceText`.
    SourceText,
}
