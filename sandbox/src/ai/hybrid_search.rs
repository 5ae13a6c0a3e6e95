//! Hybrid search (`POST /v1/hybrid-search`): documents ranked for a query, with the
//! reference's filters and the ones the platform's clients send (see [`hybrid_search`]).
//! Where the reference shows a shape it wins: the reference's chunk `text` stays beside the
//! `chunkText` the clients read.

use super::answers::{Hit, documents_in, rank};
use super::body::{count_field, creator_filter, epoch_filter, not_blank, object_body};
use crate::Shared;
use crate::auth::Caller;
use crate::dates::{DAY_MS, parse_plain_date};
use crate::fs::{FsEntry, is_within};
use crate::http::{ApiRequest, Reply, error};
use serde_json::{Map, Value, json};

/// The hybrid-search `limit` when the request names none, and its bounds (the platform's
/// clients: 1 to 1,000, default 100; the reference shows no bounds).
const SEARCH_LIMIT: (usize, usize, usize) = (100, 1, 1_000);

/// Whether `null` stands for "no filter" in the hybrid-search field `name`: in the fields
/// the platform's clients add, yes; in the reference's own (typed in the spec, not
/// nullable) it is a value of the wrong type.
fn null_is_no_filter(name: &str) -> bool {
    !["folderPath", "fileTypes", "dateFrom", "dateTo"].contains(&name)
}

/// A list of strings, for the list filters; another JSON type is refused.
fn string_list(body: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, String> {
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) if null_is_no_filter(name) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| format!("{name} must be an array of strings")),
        Some(_) => Err(format!("{name} must be an array of strings")),
    }
}

/// The filters of a hybrid search. The reference names `folderPath`, `fileTypes`,
/// `dateFrom` and `dateTo`; the platform's clients also send `entryIds`, `folderPaths`,
/// `excludeFolderPaths`, `preferredFolderPath`, `createdAfter`/`createdBefore` (epoch
/// milliseconds), `createdBy` (an integer user id, or a username as the LangChain connector
/// sends it) and `collectionId`, and all of them are
/// applied.
///
/// - A list filter given as an empty array restricts nothing (clients send empty arrays
///   for "no filter"), and `null` is no filter in the clients' fields; a filter of another
///   JSON type is a 400.
/// - `preferredFolderPath` orders the results in that folder first and excludes nothing.
/// - `collectionId` (any JSON value but null; its type is not shown): the sandbox has no collections, so a
///   collection id matches no documents.
#[derive(Debug, Default)]
struct SearchFilters {
    folder: Option<String>,
    file_types: Option<Vec<String>>,
    modified: (Option<i64>, Option<i64>),
    entry_ids: Option<Vec<String>>,
    folders: Option<Vec<String>>,
    excluded: Vec<String>,
    preferred: Option<String>,
    created: (Option<i64>, Option<i64>),
    creator: Option<Option<i64>>,
    collection: bool,
}

impl SearchFilters {
    fn read(shared: &Shared, body: &Map<String, Value>) -> Result<Self, String> {
        let file_types = string_list(body, "fileTypes")?.map(|types| {
            types
                .iter()
                .map(|t| t.trim_start_matches('.').to_lowercase())
                .collect()
        });
        let date = |name: &str| -> Result<Option<i64>, String> {
            match body.get(name) {
                None => Ok(None),
                Some(v) => v
                    .as_str()
                    .and_then(parse_plain_date)
                    .map(Some)
                    .ok_or_else(|| format!("{name} must be a date YYYY-MM-DD")),
            }
        };
        let text = |name: &str| -> Result<Option<String>, String> {
            match body.get(name) {
                None => Ok(None),
                Some(Value::String(f)) => Ok(Some(f.clone())),
                Some(Value::Null) if null_is_no_filter(name) => Ok(None),
                Some(_) => Err(format!("{name} must be a string")),
            }
        };
        // The spec leaves its JSON type open (the clients send a string or an integer).
        let collection = !matches!(body.get("collectionId"), None | Some(Value::Null));
        let non_empty = |list: Option<Vec<String>>| list.filter(|l| !l.is_empty());
        Ok(SearchFilters {
            folder: text("folderPath")?,
            file_types,
            // `dateTo` is the last day included.
            modified: (date("dateFrom")?, date("dateTo")?.map(|t| t + DAY_MS)),
            entry_ids: non_empty(string_list(body, "entryIds")?),
            folders: non_empty(string_list(body, "folderPaths")?),
            excluded: string_list(body, "excludeFolderPaths")?.unwrap_or_default(),
            preferred: text("preferredFolderPath")?,
            created: (
                epoch_filter(body, "createdAfter", true)?,
                epoch_filter(body, "createdBefore", true)?,
            ),
            creator: creator_filter(shared, body, true)?,
            collection,
        })
    }

    /// Whether `doc` passes every filter; `admin` is the creator of the built-in corpus.
    fn pass(&self, doc: &FsEntry, admin: Option<i64>) -> bool {
        let within_any = |folders: &[String]| folders.iter().any(|f| is_within(&doc.path, f));
        let (from, to) = self.modified;
        let (after, before) = self.created;
        !self.collection
            && self.folder.as_ref().is_none_or(|f| is_within(&doc.path, f))
            && self
                .file_types
                .as_ref()
                .is_none_or(|types| types.contains(&doc.extension()))
            && from.is_none_or(|f| doc.modified_ms >= f)
            && to.is_none_or(|t| doc.modified_ms < t)
            && self
                .entry_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&doc.entry_id))
            && self.folders.as_deref().is_none_or(within_any)
            && !within_any(&self.excluded)
            && after.is_none_or(|a| doc.created_ms >= a)
            && before.is_none_or(|b| doc.created_ms < b)
            && self
                .creator
                .is_none_or(|c| c.is_some() && c == doc.created_by.or(admin))
    }

    fn preferred(&self, doc: &FsEntry) -> bool {
        self.preferred
            .as_ref()
            .is_some_and(|p| is_within(&doc.path, p))
    }
}

/// `POST /v1/hybrid-search`.
///
/// Results are documents, best first (those in `preferredFolderPath` before the others),
/// each with up to three matching chunks. At most `limit` results are found (1 to 1,000,
/// default 100, as the platform's clients send it); `page` and `size` page through them,
/// and without `size` the page is `limit` long, so a request with only `limit` gets all
/// its results on one page. Chunks carry the reference's `text` and the `chunkText` the
/// platform's clients read (plus `type`); results carry `groupId` and `uploadedTimestamp`
/// (epoch milliseconds of the current version) besides the reference's fields.
pub fn hybrid_search(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let body = match object_body(req, "the body must be a JSON object") {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let bad = |message: &str| error(req.op, 400, "INVALID_REQUEST", message);
    // The reference does not say which fields are required; the platform's clients send a
    // query of 3 to 250 characters, so an empty one is refused (the bounds are not enforced).
    let query = match body.get("query") {
        Some(Value::String(q)) if not_blank(q) => q.clone(),
        None | Some(Value::Null | Value::String(_)) => {
            return error(req.op, 400, "QUERY_MANDATORY", "query is mandatory");
        }
        Some(_) => return bad("query must be a string"),
    };
    // The range is the platform clients' (the reference does not show it).
    let weight = match body.get("semanticWeight") {
        None => 0.5,
        Some(v) => match v.as_f64() {
            Some(w) if (0.0..=1.0).contains(&w) => w,
            _ => return bad("semanticWeight must be a number from 0 to 1"),
        },
    };
    let (default_limit, min_limit, max_limit) = SEARCH_LIMIT;
    let limit = match count_field(&body, "limit", default_limit, min_limit as u64) {
        Ok(l) if l <= max_limit => l,
        _ => {
            return bad(&format!(
                "limit must be an integer from {min_limit} to {max_limit}"
            ));
        }
    };
    let (page, size) = match (
        count_field(&body, "page", 0, 0),
        count_field(&body, "size", limit, 1),
    ) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(m), _) | (_, Err(m)) => return bad(&m),
    };
    let filters = match SearchFilters::read(shared, &body) {
        Ok(f) => f,
        Err(m) => return bad(&m),
    };
    let admin = shared.world().users.admin().map(|(u, _)| u.id);
    let docs: Vec<FsEntry> = documents_in(shared, &[])
        .into_iter()
        .filter(|d| filters.pass(d, admin))
        .collect();
    let hits = rank(&docs, &query, weight);
    let mut results = by_document(&hits);
    // A stable sort: the preferred folder first, best first within each part.
    results.sort_by_key(|(d, _)| !filters.preferred(d));
    results.truncate(limit);
    let total = results.len();
    let total_pages = total.div_ceil(size);
    let page_results: Vec<Value> = results
        .into_iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .map(|(_, r)| r)
        .collect();
    Reply::json(
        200,
        &json!({
            "results": page_results,
            "totalElements": total,
            "totalPages": total_pages,
            "number": page,
            "size": size,
            "first": page == 0,
            "last": page.saturating_add(1) >= total_pages,
        }),
    )
}

/// One result per document of `hits`, in the order of its best hit, each with up to three
/// matching chunks.
fn by_document(hits: &[Hit]) -> Vec<(&FsEntry, Value)> {
    let mut results: Vec<(&FsEntry, Value)> = Vec::new();
    for hit in hits {
        let chunk = json!({
            "chunkId": hit.chunk_id(),
            "score": round(hit.score),
            "text": hit.text(),
            "chunkText": hit.text(),
            "type": "TEXT",
        });
        match results
            .iter_mut()
            .find(|(d, _)| d.entry_id == hit.doc.entry_id)
        {
            Some((_, r)) => {
                if let Some(chunks) = r["chunks"].as_array_mut()
                    && chunks.len() < 3
                {
                    chunks.push(chunk);
                }
            }
            None => results.push((
                &hit.doc,
                json!({
                    "filename": hit.doc.name(),
                    "entryId": hit.doc.entry_id,
                    "objectId": hit.doc.object_id,
                    "groupId": hit.doc.group_id,
                    "uploadedTimestamp": hit.doc.modified_ms,
                    "chunks": [chunk],
                }),
            )),
        }
    }
    results
}

fn round(score: f64) -> f64 {
    (score * 10_000.0).round() / 10_000.0
}
