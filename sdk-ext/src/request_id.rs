//! The id every request carries: one per call, kept across its retries, sent in
//! [`REQUEST_ID_HEADER`], recorded on the call's span and kept on the call's error
//! ([`crate::Error::request_id`]): on the answer of a call that got one, and, for a call that
//! got none, in the fragment of the URL its transport error names (`…#request-id=<id>`; a
//! URL's fragment is never sent, and the error's `Display` shows it).
//!
//! The platform's own clients send a request-id header with every call and log it with
//! their errors (the header's name is not shown; `x-request-id` is the common one). One id
//! for all the attempts of a call is the rule of the Azure SDK guidelines: the server's logs
//! then show the retries of one call together.
//!
//! Ids are RFC 9562 version 7 UUIDs, so log pipelines that validate UUIDs take them and they
//! sort by time: the Unix time in milliseconds (48 bits), the version digit `7`, 42 bits
//! drawn once per process (the 12 of `rand_a` and 30 of `rand_b`), the variant bits `10`, and
//! a 32-bit counter of the process's ids (RFC 9562's "fixed-length dedicated counter",
//! section 6.2, method 1). Ids are written in blocks of 64 sharing one time, which costs no
//! more than a counter alone.

use bytes::Bytes;
use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The ids handed out so far in the process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many ids [`RequestId::next_with_header`] writes at once: a divisor of 256, so that
/// the ids of one block differ only in their last two hex digits.
const BLOCK: usize = 64;
const _: () = assert!(256 % BLOCK == 0);

/// The header a request's id travels in.
pub const REQUEST_ID_HEADER: http::HeaderName = http::HeaderName::from_static("x-request-id");

/// A request's id: an RFC 9562 version 7 UUID in its 36-character text form (see the
/// [module doc](self)), unique in the process (a counter) and across processes (the time and
/// 42 bits drawn once per process). `Copy`: it costs no allocation to keep.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId([u8; 36]);

impl RequestId {
    /// A new id and its header value. The values come from blocks of [`BLOCK`] ids written
    /// into one buffer per thread, which each value shares: a request's header costs no
    /// allocation of its own.
    pub(crate) fn next_with_header() -> (RequestId, http::HeaderValue) {
        thread_local! {
            /// The current block, and the index of its next id.
            static IDS: RefCell<(Bytes, usize)> = const { RefCell::new((Bytes::new(), BLOCK)) };
        }
        IDS.with_borrow_mut(|(block, next)| {
            if *next == BLOCK {
                let first = COUNTER.fetch_add(BLOCK as u64, Ordering::Relaxed);
                // A block starts at a multiple of `BLOCK` (at most 256), so its ids differ
                // only in the counter's last two hex digits: the first id is written whole,
                // the others are copies with those two digits changed.
                let whole = RequestId::numbered(unix_millis(), first).0;
                let mut text = Vec::with_capacity(BLOCK * 36);
                for count in first..first + BLOCK as u64 {
                    let mut id = whole;
                    id[34] = HEX[((count >> 4) & 0xf) as usize];
                    id[35] = HEX[(count & 0xf) as usize];
                    text.extend_from_slice(&id);
                }
                *block = Bytes::from(text);
                *next = 0;
            }
            let at = *next * 36;
            *next += 1;
            let bytes = block.slice(at..at + 36);
            let mut id = [0; 36];
            id.copy_from_slice(&bytes);
            // Hex digits and dashes only: always a valid header value.
            let value = http::HeaderValue::from_maybe_shared(bytes)
                .unwrap_or(http::HeaderValue::from_static(""));
            (RequestId(id), value)
        })
    }

    /// The id of a header value made by [`RequestId::next_with_header`].
    pub(crate) fn of_header(value: &http::HeaderValue) -> Option<RequestId> {
        value.as_bytes().try_into().ok().map(RequestId)
    }

    /// The id made at `millis` (Unix time) with the counter value `count`: the time in the
    /// first 12 hex digits, `7`, the process's random bits, the variant, and the counter's
    /// low 32 bits in the last 8 hex digits.
    fn numbered(millis: u64, count: u64) -> RequestId {
        static TEMPLATE: OnceLock<[u8; 36]> = OnceLock::new();
        let mut text = *TEMPLATE.get_or_init(|| {
            let random = crate::rng::SplitMix64::from_entropy().next_u64();
            let mut text = [b'-'; 36];
            text[14] = b'7';
            // rand_a: 12 bits.
            write_hex(&mut text, 15..18, random & 0xfff);
            // The variant `10` and 2 random bits, then 28 more random bits of rand_b.
            text[19] = HEX[(0x8 | ((random >> 12) & 0x3)) as usize];
            write_hex(&mut text, 20..28, (random >> 14) & 0xfff_ffff);
            text
        });
        write_hex(&mut text, 0..13, millis & 0xffff_ffff_ffff);
        write_hex(&mut text, 28..36, count & 0xffff_ffff);
        RequestId(text)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits and dashes are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl RequestId {
    /// The header value of this id (for a caller-given id; the SDK's own come with theirs).
    pub(crate) fn header_value(&self) -> http::HeaderValue {
        // Hex digits and dashes only: always a valid header value.
        http::HeaderValue::from_bytes(&self.0).unwrap_or(http::HeaderValue::from_static(""))
    }
}

/// A caller's own id, such as the id of the request a service is answering
/// ([`CallOptions::request_id`](crate::options::CallOptions::request_id)): any RFC 9562 UUID
/// in its 36-character text form (any version; upper-case digits are written lower-case).
///
/// ```
/// use pubapi_sdk_ext::RequestId;
///
/// let id: RequestId = "0192F3A8-5B1C-7D2E-8F3A-9C4B5D6E7F80".parse()?;
/// assert_eq!(id.as_str(), "0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f80");
/// assert!("req-42".parse::<RequestId>().is_err());
/// # Ok::<(), pubapi_sdk_ext::request_id::InvalidRequestId>(())
/// ```
impl std::str::FromStr for RequestId {
    type Err = InvalidRequestId;

    fn from_str(text: &str) -> Result<RequestId, InvalidRequestId> {
        let bytes: [u8; 36] = text.as_bytes().try_into().map_err(|_| InvalidRequestId)?;
        let mut id = [0; 36];
        for (i, (byte, out)) in bytes.iter().zip(&mut id).enumerate() {
            *out = match (i, byte) {
                (8 | 13 | 18 | 23, b'-') => b'-',
                (8 | 13 | 18 | 23, _) => return Err(InvalidRequestId),
                (_, b) if b.is_ascii_hexdigit() => b.to_ascii_lowercase(),
                _ => return Err(InvalidRequestId),
            };
        }
        Ok(RequestId(id))
    }
}

/// A request id given as text that is not a UUID's 36-character form (8-4-4-4-12 hex
/// digits). It does not repeat the text, which may come from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidRequestId;

impl fmt::Display for InvalidRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request id is a uuid: 8-4-4-4-12 hex digits")
    }
}

impl std::error::Error for InvalidRequestId {}

/// Writes `value`'s low hex digits into `text[range]` from the right, skipping the dashes.
fn write_hex(text: &mut [u8; 36], range: std::ops::Range<usize>, mut value: u64) {
    for i in range.rev().filter(|i| !matches!(i, 8 | 13 | 18 | 23)) {
        text[i] = HEX[(value & 0xf) as usize];
        value >>= 4;
    }
}

/// Milliseconds since the Unix epoch (0 for a clock set before it).
fn unix_millis() -> u64 {
    crate::time::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.as_str())
    }
}

/// The fragment that carries a request id on a transport error's URL.
const FRAGMENT: &str = "request-id=";

/// Marks a transport error's URL with the call's id (see the module doc).
pub(crate) fn mark(error: reqwest::Error, id: RequestId) -> reqwest::Error {
    let Some(mut url) = error.url().cloned() else {
        return error;
    };
    url.set_fragment(Some(&format!("{FRAGMENT}{id}")));
    error.with_url(url)
}

/// The id a transport error's URL carries.
pub(crate) fn of_transport(error: &reqwest::Error) -> Option<RequestId> {
    let text = error.url()?.fragment()?.strip_prefix(FRAGMENT)?;
    let bytes: [u8; 36] = text.as_bytes().try_into().ok()?;
    bytes
        .iter()
        .all(|b| *b == b'-' || b.is_ascii_hexdigit())
        .then_some(RequestId(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_with_headers_are_unique_across_threads_and_blocks_and_match_their_header() {
        let per_thread = 3 * BLOCK + 5;
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    (0..per_thread)
                        .map(|_| RequestId::next_with_header())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut unique = std::collections::HashSet::new();
        for thread in threads {
            for (id, value) in thread.join().unwrap() {
                assert_eq!(value.to_str().unwrap(), id.as_str());
                assert_eq!(RequestId::of_header(&value), Some(id));
                assert!(unique.insert(id), "{id} repeated");
            }
        }
        assert_eq!(unique.len(), 4 * per_thread);
    }

    #[test]
    fn every_id_of_a_block_is_the_id_its_time_and_counter_value_write_whole() {
        for _ in 0..3 * BLOCK + 7 {
            let (id, _) = RequestId::next_with_header();
            let text = id.as_str();
            let millis = u64::from_str_radix(&text[..13].replace('-', ""), 16).unwrap();
            let count = u64::from_str_radix(&text[28..], 16).unwrap();
            assert_eq!(id, RequestId::numbered(millis, count), "{id}");
        }
    }

    #[test]
    fn ids_are_rfc_9562_version_7_uuids_of_the_time_they_were_made() {
        let before = unix_millis();
        let (id, _) = RequestId::next_with_header();
        let after = unix_millis();
        let text = id.as_str();
        // Version 7, variant 10 (RFC 9562 sections 4.1, 4.2, 5.7).
        assert_eq!(&text[14..15], "7", "{text}");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
        let millis = u64::from_str_radix(&text[..13].replace('-', ""), 16).unwrap();
        // The block may have been written by an earlier test of this thread.
        assert!(millis <= after && millis + 60_000 >= before, "{text}");
    }

    #[test]
    fn a_caller_given_id_parses_only_as_a_uuid() {
        let cases = [
            ("0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f80", true),
            ("0192F3A8-5B1C-4D2E-8F3A-9C4B5D6E7F80", true),
            ("0192f3a85b1c7d2e8f3a9c4b5d6e7f80", false),
            ("0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f8", false),
            ("0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f8g", false),
            ("0192f3a8+5b1c-7d2e-8f3a-9c4b5d6e7f80", false),
            ("0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f80 ", false),
            ("", false),
        ];
        for (text, valid) in cases {
            let parsed = text.parse::<RequestId>();
            assert_eq!(parsed.is_ok(), valid, "{text:?}");
            if let Ok(id) = parsed {
                assert_eq!(id.as_str(), text.to_ascii_lowercase());
                assert_eq!(id.header_value().to_str().unwrap(), id.as_str());
            }
        }
    }

    #[test]
    fn ids_are_uuid_shaped_and_never_repeat() {
        let ids: Vec<(RequestId, http::HeaderValue)> =
            (0..10_000).map(|_| RequestId::next_with_header()).collect();
        let unique: std::collections::HashSet<_> = ids.iter().map(|(id, _)| id).collect();
        assert_eq!(unique.len(), ids.len());
        for (id, value) in &ids[..3] {
            let text = id.as_str();
            let groups: Vec<usize> = text.split('-').map(str::len).collect();
            assert_eq!(groups, [8, 4, 4, 4, 12], "{text}");
            assert!(text.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()));
            assert_eq!(value.to_str().unwrap(), text);
        }
    }
}
