//! Where in a JSON body a value did not decode: the path (`items[2].id`) read back from
//! serde_json's error position, so a body is decoded once, by one deserializer, and the
//! path is worked out only when it failed ([`Error::Decode`](crate::Error::Decode)).

/// The JSON path (`items[2].id`) of the value that ends at `line`:`column` of `body`, as
/// serde_json reports the position of a mismatch: just after the value that did not fit,
/// or just after the object that missed a field (whose path it then is). `.` is the root.
pub(crate) fn json_path_at(body: &[u8], line: usize, column: usize) -> String {
    enum Frame {
        Object(Option<String>),
        Array(usize),
    }
    // serde_json counts lines from 1 and columns as bytes since the line's start.
    let line_start = if line <= 1 {
        0
    } else {
        body.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(body.len(), |(i, _)| i + 1)
    };
    let end = line_start.saturating_add(column).min(body.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut expecting_key = false;
    let mut i = 0;
    while i < end {
        match body[i] {
            b'{' => {
                stack.push(Frame::Object(None));
                expecting_key = true;
            }
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
                expecting_key = false;
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(index)) => *index += 1,
                Some(Frame::Object(key)) => {
                    *key = None;
                    expecting_key = true;
                }
                None => {}
            },
            b'"' => {
                let start = i + 1;
                i = start;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                if expecting_key && let Some(Frame::Object(key)) = stack.last_mut() {
                    let raw = &body[start..i.min(body.len())];
                    let text = serde_json::from_slice::<String>(
                        &[b"\"".as_slice(), raw, b"\"".as_slice()].concat(),
                    )
                    .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned());
                    *key = Some(text);
                    expecting_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None) => {}
            Frame::Array(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if path.is_empty() {
        ".".to_string()
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::json_path_at;
    use proptest::prelude::*;
    use serde::Deserialize;

    /// The path serde_path_to_error finds for a body that does not decode as `T`, and the
    /// one [`json_path_at`] reads from serde_json's position alone.
    fn both<T: for<'de> Deserialize<'de>>(body: &str) -> (String, String) {
        let mut deserializer = serde_json::Deserializer::from_str(body);
        let expected = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
            Ok(_) => panic!("{body} decoded"),
            Err(e) => e.path().to_string(),
        };
        let error = serde_json::from_str::<T>(body).err().unwrap();
        (
            expected,
            json_path_at(body.as_bytes(), error.line(), error.column()),
        )
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        id: u32,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Page {
        items: Vec<Item>,
        #[serde(rename = "next id")]
        next: Option<u32>,
    }

    #[test]
    fn a_mismatch_is_named_by_its_json_path() {
        for body in [
            r#"{"items":[{"id":1},{"id":"three"}]}"#,
            r#"{"items":[{"id":1,"tags":["a",2]}]}"#,
            "{\n  \"items\": [\n    {\"id\": 1},\n    {\"tags\": []}\n  ]\n}",
            r#"{"items":[],"next id":"x"}"#,
            r#"{"items":{"id":1}}"#,
            r#"{"a\"b":{"id":[1,2]},"items":[{"id":-1}]}"#,
            r#"[1]"#,
        ] {
            let (expected, found) = both::<Page>(body);
            assert_eq!(found, expected, "{body}");
        }
        let (_, found) = both::<Page>(r#"{"items":[{"id":1},{"id":"three"}]}"#);
        assert_eq!(found, "items[1].id");
        let (_, found) = both::<Page>(r#"{"items":[{"id":1},{"tags":[]}]}"#);
        assert_eq!(found, "items[1]", "a missing field is named by its object");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Meta {
        size: u32,
    }

    /// A flattened struct: serde reads the object into a buffer before the fields fit.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        id: u32,
        #[serde(flatten)]
        meta: Meta,
    }

    /// An untagged enum: serde tries each variant on a buffered copy of the value.
    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Either {
        Number(u32),
        Item(Item),
    }

    /// An internally tagged enum: the tag is found in a buffered copy of the object.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Tagged {
        Item(Item),
        Meta { size: u32 },
    }

    /// The buffering shapes inside a page, by key and by index.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Shapes {
        #[serde(default)]
        flat: Vec<Flat>,
        #[serde(default)]
        either: Vec<Either>,
        #[serde(default)]
        tagged: Option<Tagged>,
    }

    #[test]
    fn a_mismatch_in_a_flattened_struct_is_named_as_serde_path_to_error_names_it() {
        for (body, path) in [
            (
                r#"{"flat":[{"id":1,"size":2},{"id":1,"size":"x"}]}"#,
                "flat[1]",
            ),
            (r#"{"flat":[{"id":"x","size":2}]}"#, "flat[0].id"),
            (r#"{"flat":[{"id":1}]}"#, "flat[0]"),
            (
                "{\"flat\":[{\"size\":1,\n \"id\":1},\n{\"id\":2}]}",
                "flat[1]",
            ),
        ] {
            let (expected, found) = both::<Shapes>(body);
            assert_eq!((found.as_str(), expected.as_str()), (path, path), "{body}");
        }
        let at_the_root = both::<Flat>(r#"{"id":1,"size":"x"}"#);
        assert_eq!(at_the_root, (".".to_owned(), ".".to_owned()));
    }

    /// An untagged or internally tagged enum fails after serde_json has read the whole value
    /// into a buffer: the position serde_json reports is past the value's container, whose
    /// path is then named (serde_path_to_error names the value itself). Where the value is
    /// its container's own check (a tag read from the object's own fields), both agree.
    #[test]
    fn a_mismatch_in_a_buffered_enum_is_named_by_its_container() {
        for (body, expected, found) in [
            (r#"{"either":[1,{"id":"x"}]}"#, "either[1]", "either"),
            (r#"{"either":[{"id":[1,{"a":2}]}]}"#, "either[0]", "either"),
            (r#"{"tagged":{"kind":"Meta","size":"x"}}"#, "tagged", "."),
            (
                r#"{"tagged":{"kind":"None"}}"#,
                "tagged.kind",
                "tagged.kind",
            ),
            (r#"{"tagged":{"size":1}}"#, "tagged", "tagged"),
        ] {
            assert_eq!(
                both::<Shapes>(body),
                (expected.to_owned(), found.to_owned()),
                "{body}"
            );
        }
    }

    proptest! {
        /// Arrays of arrays of numbers with one value replaced by a string, at any depth
        /// and with any whitespace: the path matches serde_path_to_error's.
        #[test]
        fn the_path_matches_serde_path_to_error(
            rows in prop::collection::vec(prop::collection::vec(0u8..200, 0..5), 1..6),
            pick in any::<prop::sample::Index>(),
            spaces in "[ \n]{0,2}",
        ) {
            let cells: usize = rows.iter().map(Vec::len).sum();
            prop_assume!(cells > 0);
            let target = pick.index(cells);
            let mut seen = 0;
            let mut body = String::from("[");
            for (r, row) in rows.iter().enumerate() {
                if r > 0 { body.push(','); body.push_str(&spaces); }
                body.push('[');
                for (c, value) in row.iter().enumerate() {
                    if c > 0 { body.push(','); body.push_str(&spaces); }
                    if seen == target {
                        body.push_str("\"no, \\\"not\\\" [this]\"");
                    } else {
                        body.push_str(&value.to_string());
                    }
                    seen += 1;
                }
                body.push(']');
            }
            body.push(']');
            let (expected, found) = both::<Vec<Vec<u8>>>(&body);
            prop_assert_eq!(found, expected, "{}", body);
        }
    }
}
