//! A success body the generated code decodes, read by the policy (within the attempt's time)
//! and tied to the id of its call, so that every failure after the answer came keeps the id:
//! a body whose read fails, and a body that does not decode.
//!
//! The generated code decodes a success from the bytes of its body and, when they do not fit,
//! hands back the bytes alone (`progenitor_client::Error::InvalidResponsePayload`), without the
//! response. So the policy hands the generated code a body whose bytes it knows again: their
//! address, while they live, is the key of the call's id in a small table, and the entry goes
//! when the last copy of the bytes is dropped. [`Error`](crate::Error) looks the body up when
//! it turns a decode failure into [`Error::Decode`](crate::Error::Decode). An empty body (which
//! has no address of its own, and decodes as no JSON value) is answered as the decode failure
//! it will be, with the id, through the error the hook hands back ([`EmptySuccess`]).

use crate::request_id::RequestId;
use bytes::Bytes;
use pubapi_sdk::operations::Operation;
use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

/// The id of each live success body the policy read, by the address of its first byte.
static IDS: LazyLock<Mutex<HashMap<usize, RequestId>>> = LazyLock::new(Mutex::default);

fn ids() -> std::sync::MutexGuard<'static, HashMap<usize, RequestId>> {
    IDS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether the generated code decodes `operation`'s `answer` from JSON: the policy then reads
/// the body itself. A 303 or a 204 is handed back unread, and so is an answer that says it is
/// not JSON (a CSV report, which the SDK asks for by hand and reads as it comes).
pub(crate) fn is_decoded(operation: &'static Operation, answer: &reqwest::Response) -> bool {
    let says_other = answer
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|media| !media.as_bytes().windows(4).any(|w| w == b"json"));
    !says_other
        && documented(operation, answer.status()).is_some_and(|response| {
            response.generated
                && response
                    .content_types
                    .iter()
                    .any(|media| media.ends_with("json"))
        })
}

/// The response the spec documents as `operation`'s answer of `status`, if it does.
pub(crate) fn documented(
    operation: &'static Operation,
    status: http::StatusCode,
) -> Option<&'static pubapi_sdk::operations::Response> {
    // Three digits compared as bytes: cheaper than the status's text, on every call.
    let code = status.as_u16();
    let digits = [
        b'0' + (code / 100 % 10) as u8,
        b'0' + (code / 10 % 10) as u8,
        b'0' + (code % 10) as u8,
    ];
    // Byte by byte: a slice comparison would call `memcmp` for each response.
    operation
        .responses
        .iter()
        .find(|response| matches!(response.status.as_bytes(), &[a, b, c] if [a, b, c] == digits))
}

/// A body's bytes, with the entry of its call's id, which goes with them.
struct Tagged {
    body: Bytes,
    key: usize,
}

impl AsRef<[u8]> for Tagged {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

impl Drop for Tagged {
    fn drop(&mut self) {
        ids().remove(&self.key);
    }
}

/// `body` (not empty) as bytes whose id [`id_of`] finds while they live. Bytes already
/// tagged at the same address (a static body a test's transport answers twice) are copied
/// first: an address names one call.
pub(crate) fn tag(body: Bytes, id: RequestId) -> Bytes {
    let mut ids = ids();
    let body = if ids.contains_key(&(body.as_ptr() as usize)) {
        Bytes::copy_from_slice(&body)
    } else {
        body
    };
    let key = body.as_ptr() as usize;
    ids.insert(key, id);
    drop(ids);
    Bytes::from_owner(Tagged { body, key })
}

/// The id of the call whose success body `body` is, while any copy of it lives.
pub(crate) fn id_of(body: &Bytes) -> Option<RequestId> {
    if body.is_empty() {
        return None;
    }
    ids().get(&(body.as_ptr() as usize)).cloned()
}

/// An empty success body where the generated code decodes JSON: the decode failure it would
/// be, with the id of the call (carried as the source of the error the hook answers).
#[derive(Debug, Clone)]
pub(crate) struct EmptySuccess {
    /// The call's id.
    pub(crate) request_id: Option<RequestId>,
}

impl EmptySuccess {
    /// The error the hook answers: a `reqwest::Error` whose source is this.
    pub(crate) async fn into_error(self) -> reqwest::Error {
        crate::request::rejection::error_with_source(Box::new(self)).await
    }

    /// The one among an error's sources, if any.
    pub(crate) fn in_sources<'e>(
        error: &'e (dyn std::error::Error + 'static),
    ) -> Option<&'e EmptySuccess> {
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(empty) = error.downcast_ref::<EmptySuccess>() {
                return Some(empty);
            }
            next = error.source();
        }
        None
    }
}

impl fmt::Display for EmptySuccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the success body is empty where a JSON value is expected")
    }
}

impl std::error::Error for EmptySuccess {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_body_gives_its_id_while_it_lives_and_the_entry_goes_with_it() {
        let id: RequestId = "req-tagged-body".parse().unwrap();
        let tagged = tag(Bytes::from_static(b"{\"a\":"), id.clone());
        let copy = tagged.clone();
        assert_eq!(id_of(&copy), Some(id.clone()));
        let key = tagged.as_ptr() as usize;
        drop(tagged);
        assert_eq!(id_of(&copy), Some(id.clone()), "a copy still lives");
        drop(copy);
        assert!(!ids().contains_key(&key));
        // The same bytes tagged twice while both live: each keeps its own call's id.
        let other: RequestId = "req-other-body".parse().unwrap();
        let (first, second) = (
            tag(Bytes::from_static(b"[1"), id.clone()),
            tag(Bytes::from_static(b"[1"), other.clone()),
        );
        assert_eq!(
            (id_of(&first), id_of(&second)),
            (Some(id), Some(other.clone()))
        );
        drop(first);
        assert_eq!(id_of(&second), Some(other));
        // Bytes the policy did not read have no id.
        assert_eq!(id_of(&Bytes::from(b"{\"a\":".to_vec())), None);
        assert_eq!(id_of(&Bytes::new()), None);
    }
}
