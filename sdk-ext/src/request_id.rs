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
//!
//! A caller may give an id of its own instead, as services have them: the id of the request
//! it is answering, passed on ([`CallOptions::request_id`](crate::options::CallOptions::request_id)).
//! Any token of visible ASCII up to [`MAX_LEN`] characters is taken as given, byte for byte,
//! so the platform's logs and the service's show the same text: a UUID in either case, an
//! nginx `$request_id` (32 hex digits), a W3C trace id (32 hex digits), `req-42`. An id that
//! could not travel in a header as it is (a space, a line break, another control character,
//! a character outside ASCII), an empty one or a longer one is refused when it is parsed, with
//! an [`InvalidRequestId`] naming the problem: nothing is ever sent with it.

use bytes::Bytes;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
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

/// The longest id a [`RequestId`] holds, in characters: room for the ids services pass on (a
/// UUID, 32 hex digits, a trace id with a prefix, a load balancer's composite id).
pub const MAX_LEN: usize = 200;
const _: () = assert!(MAX_LEN >= 36);

/// A request's id: the SDK's own, an RFC 9562 version 7 UUID in its 36-character text form,
/// unique in the process (a counter) and across processes (the time and 42 bits drawn once per
/// process); or a caller's, any token of visible ASCII up to [`MAX_LEN`] characters (see the
/// [module doc](self)). Cheap to clone: the text is shared (the SDK's own ids share the block
/// they were written in with their header values, so making one allocates nothing of its own).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(
    /// The id's text: visible ASCII only.
    Bytes,
);

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
                let whole = RequestId::numbered(unix_millis(), first);
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
            let id = RequestId(block.slice(at..at + 36));
            let value = id.header_value();
            (id, value)
        })
    }

    /// The id of a header value made by [`RequestId::next_with_header`] or
    /// [`RequestId::header_value`]: `None` for any other value. (A copy of the text: the
    /// policy keeps a call's id as a [`RequestId`], and makes its header from it.)
    #[cfg(test)]
    pub(crate) fn of_header(value: &http::HeaderValue) -> Option<RequestId> {
        RequestId::of_token(value.as_bytes())
    }

    /// `bytes` as an id, when they are one: 1 to [`MAX_LEN`] bytes of visible ASCII.
    fn of_token(bytes: &[u8]) -> Option<RequestId> {
        if bytes.is_empty() || bytes.len() > MAX_LEN || !bytes.iter().all(u8::is_ascii_graphic) {
            return None;
        }
        Some(RequestId(Bytes::copy_from_slice(bytes)))
    }

    /// The id of a UUID's text.
    #[cfg(test)]
    fn of_uuid(uuid: [u8; 36]) -> RequestId {
        RequestId(Bytes::copy_from_slice(&uuid))
    }

    /// The text of the id made at `millis` (Unix time) with the counter value `count`: the
    /// time in the first 12 hex digits, `7`, the process's random bits, the variant, and the
    /// counter's low 32 bits in the last 8 hex digits.
    fn numbered(millis: u64, count: u64) -> [u8; 36] {
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
        text
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Only visible ASCII is ever kept.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The header value of this id, sharing its text (no allocation).
    pub(crate) fn header_value(&self) -> http::HeaderValue {
        // Visible ASCII only: always a valid header value.
        http::HeaderValue::from_maybe_shared(self.0.clone())
            .unwrap_or(http::HeaderValue::from_static(""))
    }
}

/// A caller's own id, such as the id of the request a service is answering
/// ([`CallOptions::request_id`](crate::options::CallOptions::request_id)): any token of
/// visible ASCII (`!` to `~`) of 1 to [`MAX_LEN`] characters, kept as given.
///
/// ```
/// use pubapi_sdk_ext::RequestId;
/// use pubapi_sdk_ext::request_id::InvalidRequestId;
///
/// // A UUID, an nginx `$request_id`, a W3C trace id: each kept as it is written.
/// for inbound in [
///     "0192F3A8-5B1C-7D2E-8F3A-9C4B5D6E7F80",
///     "7f3c5e0a9b2d4c6e8f1a3b5c7d9e0f21",
///     "4bf92f3577b34da6a3ce929d0e0e4736",
/// ] {
///     assert_eq!(inbound.parse::<RequestId>()?.as_str(), inbound);
/// }
/// assert_eq!("req 42".parse::<RequestId>(), Err(InvalidRequestId::Space { position: 4 }));
/// # Ok::<(), InvalidRequestId>(())
/// ```
impl std::str::FromStr for RequestId {
    type Err = InvalidRequestId;

    fn from_str(text: &str) -> Result<RequestId, InvalidRequestId> {
        if text.is_empty() {
            return Err(InvalidRequestId::Empty);
        }
        for (at, c) in text.chars().enumerate() {
            let position = at + 1;
            match c {
                ' ' => return Err(InvalidRequestId::Space { position }),
                '\r' | '\n' => return Err(InvalidRequestId::LineBreak { position }),
                c if c.is_ascii_control() => return Err(InvalidRequestId::Control { position }),
                c if !c.is_ascii() => return Err(InvalidRequestId::NotAscii { position }),
                _ => {}
            }
        }
        // Every character is one byte from here on.
        RequestId::of_token(text.as_bytes()).ok_or(InvalidRequestId::TooLong {
            length: text.len(),
            max: MAX_LEN,
        })
    }
}

/// Why a caller's text is not a request id ([`RequestId`]'s `FromStr`). It does not repeat
/// the text, which may come from outside; a position counts characters from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidRequestId {
    /// No text at all.
    Empty,
    /// More characters than a [`RequestId`] holds.
    TooLong {
        /// The text's length, in characters.
        length: usize,
        /// [`MAX_LEN`].
        max: usize,
    },
    /// A space: an id is one token.
    Space {
        /// Where.
        position: usize,
    },
    /// A carriage return or a line feed, which would end the header.
    LineBreak {
        /// Where.
        position: usize,
    },
    /// Another control character (a tab, NUL, DEL, ...).
    Control {
        /// Where.
        position: usize,
    },
    /// A character outside ASCII, which a header does not carry as text.
    NotAscii {
        /// Where.
        position: usize,
    },
}

impl fmt::Display for InvalidRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, position) = match *self {
            InvalidRequestId::Empty => return f.write_str("a request id is empty"),
            InvalidRequestId::TooLong { length, max } => {
                return write!(
                    f,
                    "a request id of {length} characters: at most {max} are sent"
                );
            }
            InvalidRequestId::Space { position } => ("a space", position),
            InvalidRequestId::LineBreak { position } => ("a line break", position),
            InvalidRequestId::Control { position } => ("a control character", position),
            InvalidRequestId::NotAscii { position } => ("a character outside ascii", position),
        };
        write!(
            f,
            "a request id has {what} at character {position}: an id is one token of visible ascii"
        )
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

/// What a caller's id may hold that a URL's fragment would change or that would not read
/// back the same: percent-encoded there (`%` itself included).
const IN_FRAGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'`');

/// Marks a transport error's URL with the call's id (see the module doc).
pub(crate) fn mark(error: reqwest::Error, id: RequestId) -> reqwest::Error {
    let Some(mut url) = error.url().cloned() else {
        return error;
    };
    let id = utf8_percent_encode(id.as_str(), IN_FRAGMENT);
    url.set_fragment(Some(&format!("{FRAGMENT}{id}")));
    error.with_url(url)
}

/// The id a transport error's URL carries.
pub(crate) fn of_transport(error: &reqwest::Error) -> Option<RequestId> {
    let text = error.url()?.fragment()?.strip_prefix(FRAGMENT)?;
    let bytes: Vec<u8> = percent_decode_str(text).collect();
    RequestId::of_token(&bytes)
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
                assert_eq!(RequestId::of_header(&value), Some(id.clone()));
                assert!(unique.insert(id.clone()), "{id} repeated");
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
            assert_eq!(
                id,
                RequestId::of_uuid(RequestId::numbered(millis, count)),
                "{id}"
            );
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
    fn a_callers_id_of_visible_ascii_up_to_max_len_is_kept_byte_for_byte() {
        let longest = "!".repeat(MAX_LEN);
        for text in [
            "0192f3a8-5b1c-7d2e-8f3a-9c4b5d6e7f80",
            // Upper case stays upper case: the id the service logged.
            "0192F3A8-5B1C-4D2E-8F3A-9C4B5D6E7F80",
            // nginx's $request_id, a W3C trace id.
            "7f3c5e0a9b2d4c6e8f1a3b5c7d9e0f21",
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "req-42",
            "x",
            "a%2F#b\"<>`~",
            &longest,
        ] {
            let id: RequestId = text.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(id.as_str(), text);
            assert_eq!(id.header_value().to_str().unwrap(), text);
            assert_eq!(RequestId::of_header(&id.header_value()), Some(id.clone()));
        }
    }

    #[test]
    fn a_callers_id_that_is_not_one_token_of_visible_ascii_is_refused_naming_the_problem() {
        let too_long = "a".repeat(MAX_LEN + 1);
        let cases = [
            ("", InvalidRequestId::Empty),
            (
                too_long.as_str(),
                InvalidRequestId::TooLong {
                    length: MAX_LEN + 1,
                    max: MAX_LEN,
                },
            ),
            ("req 42", InvalidRequestId::Space { position: 4 }),
            (" req", InvalidRequestId::Space { position: 1 }),
            (
                "req\r\nX-Evil: 1",
                InvalidRequestId::LineBreak { position: 4 },
            ),
            ("req\n", InvalidRequestId::LineBreak { position: 4 }),
            ("req\t42", InvalidRequestId::Control { position: 4 }),
            ("req\u{0}", InvalidRequestId::Control { position: 4 }),
            ("req\u{7f}", InvalidRequestId::Control { position: 4 }),
            ("müller", InvalidRequestId::NotAscii { position: 2 }),
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<RequestId>(), Err(expected), "{text:?}");
        }
        // The messages name the problem and where, and not the text.
        let said: Vec<String> = ["", "req 42", "req\r\n", "müller"]
            .iter()
            .map(|text| text.parse::<RequestId>().unwrap_err().to_string())
            .collect();
        assert_eq!(
            said,
            [
                "a request id is empty",
                "a request id has a space at character 4: an id is one token of visible ascii",
                "a request id has a line break at character 4: an id is one token of visible ascii",
                "a request id has a character outside ascii at character 2: an id is one token of visible ascii",
            ]
        );
        assert_eq!(
            too_long.parse::<RequestId>().unwrap_err().to_string(),
            format!(
                "a request id of {} characters: at most {MAX_LEN} are sent",
                MAX_LEN + 1
            )
        );
    }

    #[test]
    fn header_values_that_are_not_ids_give_none() {
        for value in [
            http::HeaderValue::from_static(""),
            http::HeaderValue::from_static("a b"),
            http::HeaderValue::from_str(&"a".repeat(MAX_LEN + 1)).unwrap(),
            http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        ] {
            assert_eq!(RequestId::of_header(&value), None, "{value:?}");
        }
    }

    #[test]
    fn a_transport_errors_url_carries_any_id_back_unchanged_and_nothing_else() {
        let failed = || {
            reqwest::Client::new()
                .get("http://127.0.0.1:9/pubapi/v1/whoami")
                .header("x", "\u{7f}")
                .build()
                .unwrap_err()
                .with_url("http://127.0.0.1:9/pubapi/v1/whoami".parse().unwrap())
        };
        let (own, _) = RequestId::next_with_header();
        for id in [
            own,
            "a%2F#b\"<>`~".parse().unwrap(),
            "%41".parse().unwrap(),
            "4bf92f3577b34da6a3ce929d0e0e4736".parse().unwrap(),
        ] {
            let marked = mark(failed(), id.clone());
            assert_eq!(of_transport(&marked), Some(id.clone()), "{id}");
            assert_eq!(marked.url().unwrap().path(), "/pubapi/v1/whoami");
        }
        assert_eq!(of_transport(&failed()), None);
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
