//! The document Q&A handle, `client.documents()`: a question about one document version,
//! or its summary.

use crate::Client;
use crate::error::Error;
use crate::prelude::*;
use pubapi_sdk::types::{
    DocumentAskRequest, DocumentAskResponse, DocumentSummaryRequest, DocumentSummaryResponse,
};

/// Questions about, and summaries of, one document version: `client.documents()`.
#[derive(Debug, Clone, Copy)]
pub struct Documents<'a> {
    pub(crate) client: &'a Client,
}

impl Documents<'_> {
    /// Asks a question about the document version `entry_id`
    /// (`POST /v1/ai/document/{entryId}/ask`); a blank question is refused before sending.
    pub async fn ask(
        &self,
        entry_id: &str,
        request: DocumentAskRequest,
    ) -> Result<DocumentAskResponse, Error> {
        let sent = self.client.sdk().ask_document().entry_id(entry_id);
        Ok(sent.body(request).send().await?.into_inner())
    }

    /// Summarizes the document version `entry_id` (`POST /v1/ai/document/{entryId}/summary`),
    /// with an optional chat history.
    pub async fn summarize(
        &self,
        entry_id: &str,
        request: Option<DocumentSummaryRequest>,
    ) -> Result<DocumentSummaryResponse, Error> {
        let call = self.client.sdk().summarize_document().entry_id(entry_id);
        let call = match request {
            Some(request) => call.body(request),
            None => call,
        };
        Ok(call.send().await?.into_inner())
    }
}
