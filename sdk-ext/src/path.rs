//! Encoding file paths and ids for use inside a URL path.
//!
//! The reference says each element of a file path placed in a URL is
//! percent-encoded and the separating slashes are not. Every element goes
//! through the one encoder of the generated client,
//! [`pubapi_sdk::path::encode_segment`], which encodes every byte outside the
//! RFC 3986 unreserved set (`A-Z a-z 0-9 - . _ ~`), so `%`, `?`, `#`, `;`, `\`
//! and non-ASCII text cannot change the URL's meaning. What no encoding can
//! make safe is refused here with a typed error: `.` and `..` (URL parsers
//! resolve them away), empty elements, and, in a value that must be one
//! segment (an id), a `/` or `\`, which a proxy that decodes `%2F` would
//! split into two segments.

use std::fmt;

use pubapi_sdk::path::encode_segment as encode_element;

/// Encodes a folder or file path: each element percent-encoded, the
/// separating slashes kept. An absolute path keeps its single leading slash.
///
/// Refused: the empty path, empty elements (`a//b`, a trailing `/`, and so
/// the bare root `/`), the dot segments `.` and `..`, and any element with a
/// backslash.
///
/// ```
/// use pubapi_sdk_ext::path::{encode_folder_path, PathError};
///
/// assert_eq!(encode_folder_path("/Shared/Q3 report/ü?.pdf")?, "/Shared/Q3%20report/%C3%BC%3F.pdf");
/// assert_eq!(encode_folder_path("a/b")?, "a/b");
/// assert!(matches!(encode_folder_path("/Shared/../admin"), Err(PathError::DotSegment { .. })));
/// # Ok::<(), PathError>(())
/// ```
pub fn encode_folder_path(path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let (prefix, relative) = match path.strip_prefix('/') {
        Some(rest) => ("/", rest),
        None => ("", path),
    };
    let mut out = String::with_capacity(path.len() + path.len() / 2);
    out.push_str(prefix);
    for (index, element) in relative.split('/').enumerate() {
        check_element(element, index)?;
        if index > 0 {
            out.push('/');
        }
        out.push_str(&encode_element(element));
    }
    Ok(out)
}

/// Encodes one path value, such as an id, as a single URL segment.
///
/// Refused: the empty value, `.`, `..`, and any value with a `/` or a
/// backslash (an id never holds one; encoded as `%2F` it would still be read
/// as a separator by any proxy that decodes it).
///
/// ```
/// use pubapi_sdk_ext::path::{encode_segment, PathError};
///
/// assert_eq!(encode_segment("abc-123")?, "abc-123");
/// assert_eq!(encode_segment("a b?")?, "a%20b%3F");
/// assert!(matches!(encode_segment("w1/../../v1/whoami"), Err(PathError::Slash { .. })));
/// assert!(encode_segment("..").is_err());
/// # Ok::<(), pubapi_sdk_ext::path::PathError>(())
/// ```
pub fn encode_segment(value: &str) -> Result<String, PathError> {
    check_segment(value)?;
    Ok(encode_element(value))
}

/// Checks a value that must be one path segment: not empty, not a dot
/// segment, no `/`, no backslash.
pub(crate) fn check_segment(value: &str) -> Result<(), PathError> {
    if value.is_empty() {
        return Err(PathError::Empty);
    }
    check_element(value, 0)?;
    if value.contains('/') {
        return Err(PathError::Slash {
            element: value.to_owned(),
        });
    }
    Ok(())
}

/// One segment of an operation's path template (`/v1/files/{fileId}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TemplateSegment<'t> {
    /// Written as is: `files`.
    Literal(&'t str),
    /// A parameter's value, by its name: `fileId`.
    Value(&'t str),
}

/// Pairs each segment of `template` with the segment of the URL path `path` at its place,
/// walking from the end, since the base URL's own path comes before the template's; a
/// segment the path has run out of is paired with `None`.
///
/// The one walk behind both the policy's check of a sent URL and the error's look-up of the
/// operation that answered.
pub(crate) fn against_template<'t, 'p>(
    template: &'t str,
    path: &'p str,
) -> impl Iterator<Item = (TemplateSegment<'t>, Option<&'p str>)> {
    let mut sent = path.rsplit('/');
    let template = template.strip_prefix('/').unwrap_or(template);
    template.rsplit('/').map(move |expected| {
        let expected = match expected.strip_prefix('{').and_then(|e| e.strip_suffix('}')) {
            Some(parameter) => TemplateSegment::Value(parameter),
            None => TemplateSegment::Literal(expected),
        };
        (expected, sent.next())
    })
}

fn check_element(element: &str, index: usize) -> Result<(), PathError> {
    if element.is_empty() {
        return Err(PathError::EmptyElement { index });
    }
    if element == "." || element == ".." {
        return Err(PathError::DotSegment {
            index,
            element: element.to_owned(),
        });
    }
    if element.contains('\\') {
        return Err(PathError::Backslash {
            index,
            element: element.to_owned(),
        });
    }
    Ok(())
}

/// Why a path or path value was refused.
///
/// `index` counts elements from 0, after the leading slash of an absolute
/// path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathError {
    /// The path or value is empty.
    Empty,
    /// An element between two slashes, or after a trailing slash, is empty.
    EmptyElement {
        /// Position of the element.
        index: usize,
    },
    /// The element is `.` or `..`, which URL parsers resolve away.
    DotSegment {
        /// Position of the element.
        index: usize,
        /// The element itself.
        element: String,
    },
    /// The element has a backslash, which URL parsers treat as a slash.
    Backslash {
        /// Position of the element.
        index: usize,
        /// The element itself.
        element: String,
    },
    /// A value that must be one segment (an id) has a `/`.
    Slash {
        /// The value itself.
        element: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => f.write_str("path is empty"),
            PathError::EmptyElement { index } => write!(f, "path element {index} is empty"),
            PathError::DotSegment { index, element } => {
                write!(f, "path element {index} ({element:?}) is a dot segment")
            }
            PathError::Backslash { index, element } => {
                write!(f, "path element {index} ({element:?}) contains a backslash")
            }
            PathError::Slash { element } => write!(
                f,
                "{element:?} contains a `/`, and a single path value (an id) cannot hold one"
            ),
        }
    }
}

impl std::error::Error for PathError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use percent_encoding::percent_decode_str;
    use reqwest::Url;

    const BASE: &str = "https://example.test/pubapi/v1/x";

    #[test]
    fn elements_are_percent_encoded_and_slashes_kept() {
        assert_eq!(
            encode_folder_path("/Shared/a b/c%2e/d?e#f;g").unwrap(),
            "/Shared/a%20b/c%252e/d%3Fe%23f%3Bg"
        );
        assert_eq!(encode_folder_path("rel/ü").unwrap(), "rel/%C3%BC");
        assert_eq!(encode_folder_path("A-z_0.9~").unwrap(), "A-z_0.9~");
    }

    #[test]
    fn dot_segments_are_rejected_with_their_element() {
        assert_eq!(
            encode_folder_path("/Shared/../admin"),
            Err(PathError::DotSegment {
                index: 1,
                element: "..".into()
            })
        );
        assert_eq!(
            encode_folder_path("./a"),
            Err(PathError::DotSegment {
                index: 0,
                element: ".".into()
            })
        );
        assert!(encode_folder_path("a/.../b").is_ok());
        assert!(encode_folder_path("a/.b/b.").is_ok());
    }

    #[test]
    fn empty_elements_are_rejected_except_the_leading_slash() {
        assert_eq!(encode_folder_path(""), Err(PathError::Empty));
        for (path, index) in [("/", 0), ("//a", 0), ("a//b", 1), ("/a/b/", 2)] {
            assert_eq!(
                encode_folder_path(path),
                Err(PathError::EmptyElement { index }),
                "{path:?}"
            );
        }
        assert_eq!(encode_folder_path("/a").unwrap(), "/a");
    }

    #[test]
    fn backslashes_are_rejected_with_their_element() {
        assert_eq!(
            encode_folder_path("/a/b\\c"),
            Err(PathError::Backslash {
                index: 1,
                element: "b\\c".into()
            })
        );
        assert_eq!(
            encode_segment("\\"),
            Err(PathError::Backslash {
                index: 0,
                element: "\\".into()
            })
        );
    }

    #[test]
    fn segment_with_a_slash_is_refused_naming_it() {
        for value in ["a/b", "/", "w1/../../v1/whoami"] {
            assert_eq!(
                encode_segment(value),
                Err(PathError::Slash {
                    element: value.into()
                })
            );
        }
    }

    #[test]
    fn segment_rejects_dots_and_empty() {
        assert_eq!(encode_segment(""), Err(PathError::Empty));
        assert!(matches!(
            encode_segment("."),
            Err(PathError::DotSegment { .. })
        ));
        assert!(matches!(
            encode_segment(".."),
            Err(PathError::DotSegment { .. })
        ));
        assert_eq!(encode_segment("%2e%2e").unwrap(), "%252e%252e");
    }

    #[test]
    fn dot_dot_regression_stays_on_the_endpoint() {
        // The generated encoder sent `..` through and the URL parser
        // resolved `/v1/users/../files` to `/v1/files`.
        assert!(encode_segment("..").is_err());
        let url = Url::parse(&format!(
            "{BASE}/{}/files",
            encode_segment("%2e%2e").unwrap()
        ))
        .unwrap();
        assert_eq!(url.path(), "/pubapi/v1/x/%252e%252e/files");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(PathError::Empty.to_string(), "path is empty");
        assert_eq!(
            encode_folder_path("a/..").unwrap_err().to_string(),
            "path element 1 (\"..\") is a dot segment"
        );
        assert_eq!(
            encode_folder_path("a\\b").unwrap_err().to_string(),
            "path element 0 (\"a\\\\b\") contains a backslash"
        );
        assert_eq!(
            encode_folder_path("a//").unwrap_err().to_string(),
            "path element 1 is empty"
        );
    }

    fn generated(rng: &mut SplitMix64) -> String {
        const POOL: &[&str] = &[
            "a", "Z", "0", "/", "/", "/", ".", ".", "..", "\\", "%", "%2e", "%2F", "?", "#", ";",
            " ", "+", "&", "=", ":", "@", "~", "-", "_", "é", "ü", "😀", "\u{0}", "\t", "\n",
            "\u{7f}", "\u{a0}", "[", "]", "{", "}", "|", "^", "`", "\"", "'", "<", ">",
        ];
        let len = rng.below(12) as usize;
        (0..len)
            .map(|_| POOL[rng.below(POOL.len() as u64) as usize])
            .collect()
    }

    fn decode(encoded: &str) -> String {
        percent_decode_str(encoded)
            .decode_utf8()
            .unwrap()
            .into_owned()
    }

    /// Feeds 50,000 inputs generated from `seed` to `encode`; each one it accepts must decode
    /// back to the input and pass `check(input, encoded)`. Returns how many it accepted.
    fn round_trips(
        seed: u64,
        encode: fn(&str) -> Result<String, PathError>,
        check: impl Fn(&str, &str),
    ) -> usize {
        let mut rng = SplitMix64::new(seed);
        let mut accepted = 0;
        for _ in 0..50_000 {
            let input = generated(&mut rng);
            let Ok(encoded) = encode(&input) else {
                continue;
            };
            accepted += 1;
            assert_eq!(decode(&encoded), input);
            check(&input, &encoded);
        }
        accepted
    }

    #[test]
    fn encoded_paths_decode_to_the_input_with_the_same_segment_count() {
        let accepted = round_trips(7, encode_folder_path, |input, encoded| {
            let elements: Vec<&str> = input.trim_start_matches('/').split('/').collect();
            let encoded_elements: Vec<&str> = encoded.trim_start_matches('/').split('/').collect();
            assert_eq!(encoded_elements.len(), elements.len(), "{input:?}");
            // What reqwest will actually request.
            let url = Url::parse(&format!("{BASE}/{}", encoded.trim_start_matches('/'))).unwrap();
            let segments: Vec<&str> = url.path_segments().unwrap().skip(3).collect();
            assert_eq!(segments.len(), elements.len(), "{input:?} -> {url}");
            for (segment, element) in segments.iter().zip(&elements) {
                assert_eq!(decode(segment), *element, "{input:?}");
            }
            assert!(url.query().is_none() && url.fragment().is_none());
        });
        assert!(accepted > 5_000, "{accepted}");
    }

    #[test]
    fn encoded_segments_decode_to_the_input_as_one_segment() {
        let accepted = round_trips(11, encode_segment, |input, encoded| {
            let url = Url::parse(&format!("{BASE}/{encoded}/status")).unwrap();
            let segments: Vec<&str> = url.path_segments().unwrap().collect();
            assert_eq!(segments.len(), 5, "{input:?} -> {url}");
            assert_eq!(decode(segments[3]), input);
            assert_eq!(segments[4], "status");
        });
        assert!(accepted > 10_000, "{accepted}");
    }

    #[test]
    fn a_template_is_walked_against_a_url_path_from_the_end() {
        use TemplateSegment::{Literal, Value};
        let template = "/v1/files/{fileId}";
        let walk = |path| against_template(template, path).collect::<Vec<_>>();
        assert_eq!(
            walk("/pubapi/v1/files/abc"),
            [
                (Value("fileId"), Some("abc")),
                (Literal("files"), Some("files")),
                (Literal("v1"), Some("v1")),
            ]
        );
        assert_eq!(
            walk("/x"),
            [
                (Value("fileId"), Some("x")),
                (Literal("files"), Some("")),
                (Literal("v1"), None),
            ]
        );
    }
}
