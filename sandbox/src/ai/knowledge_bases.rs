//! Knowledge bases (`/v1/ai/kb/...`): the list of the built-in knowledge bases and
//! questions to one of them.
//!
//! Where the reference leaves fields open, these follow the platform's clients: the list
//! pages by `page` (default 0) and `size` (default 200) and filters by
//! `createdAfter`/`createdBefore` in epoch milliseconds (or dates) and `createdBy` as a user
//! id (or username); ask-KB citations carry `objectId`, `previewUrl` and
//! `chunks[].sourceText`.

use super::answers::{
    CitationStyle, NO_ANSWER, answer_in_new_conversation, best_hits, documents_in,
    grouped_citations,
};
use super::body::{
    count_field, creator_filter, epoch_filter, include_citations, object_body, question,
};
use super::date_ms;
use crate::Shared;
use crate::auth::Caller;
use crate::dates::DAY_MS;
use crate::http::{ApiRequest, Reply, error};
use serde_json::{Map, Value, json};

struct KbDef {
    id: &'static str,
    name: &'static str,
    description: &'static str,
    folders: &'static [&'static str],
    status: &'static str,
    sub_status: &'static str,
    created: (i64, u32, u32),
}

const KNOWLEDGE_BASES: &[KbDef] = &[
    KbDef {
        id: "kb-company-policies",
        name: "Company policies",
        description: "Security, travel and retention policies.",
        folders: &["/Company/Policies"],
        status: "ACTIVE",
        sub_status: "READY",
        created: (2024, 9, 1),
    },
    KbDef {
        id: "kb-engineering",
        name: "Engineering handbook",
        description: "Runbooks and integration guides.",
        folders: &["/Engineering"],
        status: "ACTIVE",
        sub_status: "READY",
        created: (2024, 10, 5),
    },
    KbDef {
        id: "kb-finance",
        name: "Finance reports",
        description: "Quarterly reports.",
        folders: &["/Finance"],
        status: "CREATED",
        sub_status: "PROCESSING",
        created: (2025, 1, 15),
    },
    KbDef {
        id: "kb-old-archive",
        name: "Old archive",
        description: "Retired content.",
        folders: &["/Archive"],
        status: "DELETED",
        sub_status: "DELETED",
        created: (2023, 3, 10),
    },
];

/// The knowledge-base page size when the request names none (the platform's clients: 200).
const KB_PAGE_SIZE: usize = 200;

fn kb_json(shared: &Shared, kb: &KbDef, body: &Map<String, Value>) -> Value {
    let world = shared.world();
    let (admin_name, admin_id, admin_display) = world
        .users
        .admin()
        .map(|(u, _)| (u.username.clone(), u.id, u.display_name.clone()))
        .unwrap_or_default();
    let (first, last) = admin_display
        .split_once(' ')
        .map(|(f, l)| (f.to_string(), l.to_string()))
        .unwrap_or((admin_display.clone(), String::new()));
    let paths: Vec<Value> = kb
        .folders
        .iter()
        .map(|f| {
            let folder_id = world
                .fs
                .get(f)
                .map(|e| e.group_id.clone())
                .unwrap_or_default();
            json!({
                "id": format!("{}-path-{}", kb.id, folder_id),
                "folderId": folder_id,
                "path": f,
                "permission": "VIEW",
                "status": kb.status,
            })
        })
        .collect();
    let mut value = json!({
        "id": kb.id,
        "name": kb.name,
        "description": kb.description,
        "paths": paths,
        "status": kb.status,
        "type": "STANDARD",
        "createdBy": admin_name,
        "createdByUser": {
            "firstName": first,
            "lastName": last,
            "userName": admin_name,
            "userId": admin_id,
            "avatarEosObjectId": "",
        },
        "createdOn": date_ms(kb.created),
        "noResponseMessage": NO_ANSWER,
        "iconName": "book",
        "subType": "DEFAULT",
        "pathCount": kb.folders.len(),
        "subStatus": kb.sub_status,
    });
    if body.get("includeProcessingStatistics") == Some(&Value::Bool(true)) {
        value["progress"] = json!(if kb.status == "CREATED" { 40 } else { 100 });
        value["lastProcessedAt"] = json!(date_ms(kb.created) + DAY_MS);
    }
    if body.get("includePrompts") == Some(&Value::Bool(true)) {
        value["prompts"] = json!([format!("What is in the {}?", kb.name.to_lowercase())]);
    }
    value
}

/// `POST /v1/ai/kb/list`.
pub fn list_knowledge_bases(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let body = match object_body(req, "the body is required and must be a JSON object") {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let query = match KbList::read(shared, &body) {
        Ok(query) => query,
        Err(m) => return error(req.op, 400, "INVALID_REQUEST", &m),
    };
    let admin_id = shared.world().users.admin().map(|(u, _)| u.id);
    let kbs = query.select(admin_id);
    let (page, size) = (query.page, query.size);
    let total = kbs.len();
    let content: Vec<Value> = kbs
        .iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .map(|kb| kb_json(shared, kb, &body))
        .collect();
    let total_pages = total.div_ceil(size);
    Reply::json(
        200,
        &json!({
            "content": content,
            "number": page,
            "size": size,
            "first": page == 0,
            "last": page.saturating_add(1) >= total_pages,
            "empty": content.is_empty(),
            "numberOfElements": content.len(),
            "totalElements": total,
            "totalPages": total_pages,
            "fileLimit": shared.config.ai.kb_file_limit,
        }),
    )
}

/// What a list request asks for, read from its body.
struct KbList {
    statuses: Option<Vec<String>>,
    sort_by: Option<Vec<String>>,
    directions: Option<Vec<String>>,
    after: Option<i64>,
    before: Option<i64>,
    created_by: Option<Option<i64>>,
    page: usize,
    size: usize,
}

impl KbList {
    /// Reads and checks a list request's body; otherwise the message of its 400.
    fn read(shared: &Shared, body: &Map<String, Value>) -> Result<KbList, String> {
        let statuses = strings(body, "status")?;
        let sort_by = strings(body, "sortBy")?;
        let directions = strings(body, "sortDirection")?;
        if let Some(bad) = statuses
            .iter()
            .flatten()
            .find(|s| !crate::facts::values("KnowledgeBaseStatus").contains(&s.as_str()))
        {
            return Err(format!("unknown status {}", crate::fs::shown(bad)));
        }
        if let Some(bad) = sort_by
            .iter()
            .flatten()
            .find(|s| !["name", "createdOn"].contains(&s.as_str()))
        {
            return Err(format!("unknown sortBy {}", crate::fs::shown(bad)));
        }
        if let Some(name) = [
            "includePlaceholderData",
            "includeProcessingStatistics",
            "includePrompts",
        ]
        .into_iter()
        .find(|name| body.get(*name).is_some_and(|v| !v.is_boolean()))
        {
            return Err(format!("{name} must be a boolean"));
        }
        Ok(KbList {
            statuses,
            sort_by,
            directions,
            after: epoch_filter(body, "createdAfter", false)?,
            before: epoch_filter(body, "createdBefore", false)?,
            created_by: creator_filter(shared, body, false)?,
            page: count_field(body, "page", 0, 0)?,
            size: count_field(body, "size", KB_PAGE_SIZE, 1)?,
        })
    }

    /// The knowledge bases the request selects, in the order it asks for.
    fn select(&self, admin_id: Option<i64>) -> Vec<&'static KbDef> {
        let mut kbs: Vec<&KbDef> = KNOWLEDGE_BASES
            .iter()
            .filter(|kb| {
                self.statuses
                    .as_ref()
                    .is_none_or(|s| s.iter().any(|x| x == kb.status))
            })
            .filter(|kb| self.after.is_none_or(|a| date_ms(kb.created) >= a))
            .filter(|kb| self.before.is_none_or(|b| date_ms(kb.created) < b))
            // Every knowledge base of the sandbox was created by the first admin.
            .filter(|_| self.created_by.is_none_or(|c| c.is_some() && c == admin_id))
            .collect();
        let field = self
            .sort_by
            .as_ref()
            .and_then(|s| s.first().cloned())
            .unwrap_or_else(|| "name".into());
        if field == "createdOn" {
            kbs.sort_by_key(|kb| date_ms(kb.created));
        } else {
            kbs.sort_by_key(|kb| kb.name);
        }
        if self
            .directions
            .as_ref()
            .and_then(|d| d.first())
            .is_some_and(|d| d.eq_ignore_ascii_case("desc"))
        {
            kbs.reverse();
        }
        kbs
    }
}

/// The body's field `name` as an array of strings; `None` when absent.
fn strings(body: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, String> {
    let items = match body.get(name) {
        None => return Ok(None),
        Some(Value::Array(items)) => items.iter().map(|i| i.as_str().map(str::to_string)),
        Some(_) => return Err(format!("{name} must be an array of strings")),
    };
    let strings: Option<Vec<String>> = items.collect();
    strings
        .map(Some)
        .ok_or_else(|| format!("{name} must be an array of strings"))
}

/// `POST /v1/ai/kb/{kb-id}/ask`.
pub fn ask_knowledge_base(shared: &Shared, req: &ApiRequest, _caller: &Caller) -> Reply {
    let id = req.param("kb-id");
    let Some(kb) = KNOWLEDGE_BASES
        .iter()
        .find(|kb| kb.id == id && kb.status != "DELETED")
    else {
        return error(
            req.op,
            404,
            "KNOWLEDGE_BASE_NOT_FOUND",
            &format!("no knowledge base {id}"),
        );
    };
    let (question, body) = match question(req, None) {
        Ok(q) => q,
        Err(reply) => return reply,
    };
    let hits = best_hits(&documents_in(shared, kb.folders), &question);
    let mut answer = answer_in_new_conversation(shared, &hits);
    answer["knowledgeBaseId"] = json!(kb.id);
    if include_citations(&body) {
        answer["citations"] = json!(grouped_citations(&hits, CitationStyle::SourceText));
    }
    Reply::json(200, &answer)
}
