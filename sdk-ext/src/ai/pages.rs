//! Page streams over knowledge bases and hybrid search results.

use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use futures_util::stream::BoxStream;
use pubapi_sdk::types::{
    HybridSearchRequest, HybridSearchResponse, HybridSearchResult, KnowledgeBase,
    KnowledgeBaseAskRequest, KnowledgeBaseAskResponse, KnowledgeBaseListRequest, KnowledgeBasePage,
    KnowledgeBaseStatus,
};
use std::collections::VecDeque;
use std::fmt;

/// The state of a knowledge base, an open enum over the generated [`KnowledgeBaseStatus`]:
/// the reference names `ACTIVE`, `DELETED` and `CREATED`; any other value is kept as
/// [`KnowledgeBaseState::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KnowledgeBaseState {
    /// A state the reference names (`ACTIVE`, `DELETED`, `CREATED`).
    Known(KnowledgeBaseStatus),
    /// A state the reference does not name, as sent.
    Other(String),
}

impl KnowledgeBaseState {
    /// The state as the API spells it.
    pub fn as_str(&self) -> &str {
        match self {
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Active) => "ACTIVE",
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Deleted) => "DELETED",
            KnowledgeBaseState::Known(KnowledgeBaseStatus::Created) => "CREATED",
            KnowledgeBaseState::Other(other) => other,
        }
    }
}

impl From<&str> for KnowledgeBaseState {
    fn from(state: &str) -> Self {
        state
            .parse::<KnowledgeBaseStatus>()
            .map(KnowledgeBaseState::Known)
            .unwrap_or_else(|_| KnowledgeBaseState::Other(state.to_string()))
    }
}

impl From<KnowledgeBaseStatus> for KnowledgeBaseState {
    fn from(state: KnowledgeBaseStatus) -> Self {
        KnowledgeBaseState::Known(state)
    }
}

impl fmt::Display for KnowledgeBaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Typed reads of a [`KnowledgeBase`] (the generated type keeps `status` as sent).
pub trait KnowledgeBaseExt {
    /// The knowledge base's `status`, typed; `None` when the body has none.
    fn state(&self) -> Option<KnowledgeBaseState>;
}

impl KnowledgeBaseExt for KnowledgeBase {
    fn state(&self) -> Option<KnowledgeBaseState> {
        self.status.as_deref().map(KnowledgeBaseState::from)
    }
}

/// Knowledge bases: `client.knowledge_bases()`.
#[derive(Debug, Clone, Copy)]
pub struct KnowledgeBases<'a> {
    client: &'a Client,
}

/// Hybrid (semantic + keyword) search: `client.search()`.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    client: &'a Client,
}

impl Client {
    /// The knowledge-base endpoints.
    pub fn knowledge_bases(&self) -> KnowledgeBases<'_> {
        KnowledgeBases { client: self }
    }

    /// The hybrid search endpoint.
    pub fn search(&self) -> Search<'_> {
        Search { client: self }
    }
}

impl KnowledgeBases<'_> {
    /// One page of the list (`POST /v1/ai/kb/list`).
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

use futures_util::StreamExt as _;

/// The items of numbered pages as one stream, from page `first` upwards: `fetch` reads page
/// `n` and says whether another follows. An error is yielded and ends the stream, as does
/// the last page number.
fn pages<T, F, Fut>(first: i64, fetch: F) -> BoxStream<'static, Result<T, Error>>
where
    T: Send + 'static,
    F: FnMut(i64) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(Vec<T>, bool), Error>> + Send,
{
    let state = (Some(first), VecDeque::new(), fetch);
    futures_util::stream::unfold(state, |(mut next, mut buffer, mut fetch)| async move {
        loop {
            if let Some(item) = buffer.pop_front() {
                return Some((Ok(item), (next, buffer, fetch)));
            }
            let number = next.take()?;
            match fetch(number).await {
                Ok((items, more)) => {
                    next = more.then(|| number.checked_add(1)).flatten();
                    buffer.extend(items);
                }
                Err(e) => return Some((Err(e), (None, buffer, fetch))),
            }
        }
    })
    .boxed()
}
