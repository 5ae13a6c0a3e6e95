//! Wire conformance of hybrid search (reference 2.7, 4.6).

mod wire;

use pubapi_sdk::types;
use pubapi_sdk_ext::prelude::*;
use serde_json::{Value, json};
use wire::{Expect, Reply};

fn results_body() -> Value {
    json!({
        "results": [
            {
                "filename": "contract.pdf",
                "entryId": "ent-1001",
                "objectId": "obj-5",
                "chunks": [
                    {"chunkId": "chk-1", "score": 0.87, "text": "Either party may terminate with 90 days notice."},
                    {"chunkId": "chk-2", "score": 0.5, "text": "Notice must be given in writing."}
                ]
            }
        ],
        "totalElements": 1,
        "totalPages": 1,
        "number": 0,
        "size": 10,
        "first": true,
        "last": true
    })
}

wire::request_tests! {
    hybrid_search_request_full_sends_every_field_of_the_reference:
        bob, Reply::json(200, &results_body()),
        |sdk| sdk
            .hybrid_search()
            .body(
                types::HybridSearchRequest::builder()
                    .query("notice period".to_string())
                    .semantic_weight(0.75)
                    .folder_path("/Shared/Contracts 2026".to_string())
                    .limit(std::num::NonZeroU64::new(50))
                    .file_types(vec!["pdf".to_string(), "docx".to_string()])
                    .date_from("2026-01-01".parse::<types::CalendarDate>().ok())
                    .date_to("2026-03-31".parse::<types::CalendarDate>().ok())
                    .page(2)
                    .size(std::num::NonZeroU64::new(10)),
            )
        => Expect::post("/v1/hybrid-search")
            .act_as(wire::BOB)
            .json(json!({
                "query": "notice period",
                "semanticWeight": 0.75,
                "folderPath": "/Shared/Contracts 2026",
                "limit": 50,
                "fileTypes": ["pdf", "docx"],
                "dateFrom": "2026-01-01",
                "dateTo": "2026-03-31",
                "page": 2,
                "size": 10
            }));

    /// The query is the one required field (the platform refuses a search without one): the
    /// constructor sends it and nothing the caller did not set.
    hybrid_search_request_minimal_sends_only_the_query:
        client, Reply::json(200, &results_body()),
        |sdk| sdk.hybrid_search().body(types::HybridSearchRequest::new("notice period").unwrap())
        => Expect::post("/v1/hybrid-search").json(json!({"query": "notice period"}));
}

#[tokio::test]
async fn hybrid_search_success_decodes_results_chunks_scores_and_paging() {
    let found = wire::success!(results_body(), |sdk| sdk
        .hybrid_search()
        .body(types::HybridSearchRequest::builder().query("notice period".to_string())));
    assert_eq!(found.results[0].chunks[0].score, Some(0.87));
}

wire::error_tests! {
    hybrid_search_errors_decode_ai_format:
        "hybridSearch", [400, 401, 429, 500],
        |sdk| sdk
            .hybrid_search()
            .body(types::HybridSearchRequest::builder().query("notice period".to_string()));
}

#[tokio::test]
async fn hybrid_search_forward_compat_ignores_unknown_fields_at_every_level() {
    wire::forward_compat!(
        &results_body(),
        &["", "/results/0", "/results/0/chunks/1"],
        |sdk| sdk
            .hybrid_search()
            .body(types::HybridSearchRequest::builder().query("notice period".to_string()))
    );
}
