//! The hybrid search handle, `client.search()`: one page of results, or every result as a
//! stream.

use crate::Client;
use crate::ai::pages;
use crate::error::Error;
use crate::prelude::*;
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{HybridSearchRequest, HybridSearchResponse, HybridSearchResult};

/// Hybrid (semantic + keyword) search: `client.search()`.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    pub(crate) client: &'a Client,
}

impl Search<'_> {
    /// One page of results.
    pub async fn page(&self, request: HybridSearchRequest) -> Result<HybridSearchResponse, Error> {
        Ok(self
            .client
            .sdk()
            .hybrid_search()
            .body(request)
            .send()
            .await?
            .into_inner())
    }

    /// All results as a stream, page by page (`page` from the request's, or 0, upwards)
    /// until the response says `last` or a page is empty. Every page is an AI call.
    pub fn results(
        &self,
        request: HybridSearchRequest,
    ) -> BoxStream<'static, Result<HybridSearchResult, Error>> {
        let client = self.client.clone();
        pages(request.page.unwrap_or(0), move |number| {
            let client = client.clone();
            let request = HybridSearchRequest {
                page: Some(number),
                ..request.clone()
            };
            async move {
                let page = client.search().page(request).await?;
                let more = page.last == Some(false) && !page.results.is_empty();
                Ok((page.results, more))
            }
        })
    }
}
