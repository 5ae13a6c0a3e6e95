//! The knowledge-base handle, `client.knowledge_bases()`: one page of the list, every
//! knowledge base as a stream, and questions to one. Its state is typed in [`crate::ai`].

use crate::Client;
use crate::ai::pages;
use crate::error::Error;
use crate::prelude::*;
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{
    KnowledgeBase, KnowledgeBaseAskRequest, KnowledgeBaseAskResponse, KnowledgeBaseListRequest,
    KnowledgeBasePage,
};

/// Knowledge bases: `client.knowledge_bases()`.
#[derive(Debug, Clone, Copy)]
pub struct KnowledgeBases<'a> {
    pub(crate) client: &'a Client,
}

impl KnowledgeBases<'_> {
    /// One page of the list (`POST /v1/ai/kb/list`). Filter by creator and creation time
    /// with [`KnowledgeBaseListFilters`](crate::ai::KnowledgeBaseListFilters) (a user id and
    /// instants, sent as the decimal strings the wire takes).
    pub async fn page(
        &self,
        request: KnowledgeBaseListRequest,
    ) -> Result<KnowledgeBasePage, Error> {
        Ok(self
            .client
            .sdk()
            .list_knowledge_bases()
            .body(request)
            .send()
            .await?
            .into_inner())
    }

    /// All knowledge bases of the list as a stream, page by page: `page` from the request's
    /// (or 0) upwards, each with the request's `size` (or the platform's default). The stream
    /// ends after a page that says `last`, an empty page, or a short one (fewer items than
    /// the page size); an error ends it too, after yielding the error.
    ///
    /// ```no_run
    /// use pubapi_sdk_ext::prelude::*; // StreamExt::next
    /// use pubapi_sdk_ext::types::KnowledgeBaseListRequest;
    /// use std::num::NonZeroU64;
    /// # async fn run(client: pubapi_sdk_ext::Client) -> Result<(), pubapi_sdk_ext::Error> {
    /// let request = KnowledgeBaseListRequest { size: NonZeroU64::new(50), ..Default::default() };
    /// let mut all = client.knowledge_bases().list(request);
    /// while let Some(kb) = all.next().await {
    ///     println!("{:?}", kb?.id);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list(
        &self,
        request: KnowledgeBaseListRequest,
    ) -> BoxStream<'static, Result<KnowledgeBase, Error>> {
        let client = self.client.clone();
        let asked = request.size;
        pages(request.page.unwrap_or(0), move |number| {
            let client = client.clone();
            let request = KnowledgeBaseListRequest {
                page: Some(number),
                ..request.clone()
            };
            async move {
                let page = client.knowledge_bases().page(request).await?;
                // The size asked for, else the one the page says it has.
                let size = asked
                    .map(|size| size.get())
                    .or(page.size.and_then(|size| u64::try_from(size).ok()));
                let short = size.is_some_and(|size| {
                    u64::try_from(page.content.len()).unwrap_or(u64::MAX) < size
                });
                let more = page.last != Some(true) && !page.content.is_empty() && !short;
                Ok((page.content, more))
            }
        })
    }

    /// Asks a knowledge base (`POST /v1/ai/kb/{kb-id}/ask`). The reference does not show
    /// the answer's fields: it is typed with the ones the platform's clients read (the text,
    /// the conversation, citations whose chunks' text [`source_text`] reads under either
    /// name), and keeps every other field in `extra`.
    ///
    /// [`source_text`]: crate::types::KnowledgeBaseCitationChunk::source_text
    pub async fn ask(
        &self,
        kb_id: &str,
        request: KnowledgeBaseAskRequest,
    ) -> Result<KnowledgeBaseAskResponse, Error> {
        let call = self
            .client
            .sdk()
            .ask_knowledge_base()
            .kb_id(kb_id)
            .body(request);
        Ok(call.send().await?.into_inner())
    }
}
