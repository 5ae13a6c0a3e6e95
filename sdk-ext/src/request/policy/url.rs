//! The URL checks of step 2 of [`crate::request`]: path-valued query parameters re-encoded,
//! and the URL still in the operation's path shape with every path value one valid segment.

use crate::request::rejection::LocalRejection;
use pubapi_sdk::operations::Operation;

/// Checks that the URL still has the operation's shape. Every path value went through
/// [`pubapi_sdk::path::encode_segment`] (one segment, `/` and `\\` encoded), so each literal
/// segment of the template must be where the template puts it, and each value segment must
/// decode to a value [`crate::path::encode_segment`] accepts: not empty, not `.` or `..`, no
/// `/` or backslash. A bad value is refused naming its parameter.
pub(super) fn check_path(operation: &'static Operation, path: &str) -> Result<(), LocalRejection> {
    // A template without values: what the segments' walk checks is that the path ends with
    // it, after the base URL's own path (both start with `/`). A template with values never
    // matches here: a URL's path has `{` percent-encoded.
    if path.ends_with(operation.path) {
        return Ok(());
    }
    if operation.path.contains('{') {
        return check_segments(operation, path);
    }
    Err(shape_error(operation, path))
}

/// [`check_path`]'s walk over the segments ([`crate::path::against_template`]).
pub(super) fn check_segments(
    operation: &'static Operation,
    path: &str,
) -> Result<(), LocalRejection> {
    use crate::path::TemplateSegment::{Literal, Value};
    for (expected, sent) in crate::path::against_template(operation.path, path) {
        let segment = sent.ok_or_else(|| shape_error(operation, path))?;
        match expected {
            Value(parameter) => {
                let value = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
                crate::path::check_segment(&value).map_err(|error| LocalRejection::PathValue {
                    operation: operation.id,
                    parameter,
                    error,
                })?;
            }
            Literal(literal) if segment != literal => return Err(shape_error(operation, path)),
            Literal(_) => {}
        }
    }
    // Before the template's segments, at least the empty one of the path's leading `/`.
    if path.matches('/').count() < operation.path.matches('/').count() {
        return Err(shape_error(operation, path));
    }
    Ok(())
}

fn shape_error(operation: &'static Operation, path: &str) -> LocalRejection {
    LocalRejection::Path {
        template: operation.path,
        sent: path.to_string(),
    }
}

/// Re-encodes the query parameters that hold a file or folder path
/// ([`Operation::path_queries`]): the generated builder form-encodes them (`%2F` for every
/// slash, `+` for a space), while the reference wants each element percent-encoded and the
/// separating slashes kept. An invalid path is refused naming its parameter.
pub(super) fn encode_path_queries(
    operation: &'static Operation,
    request: &mut reqwest::Request,
) -> Result<(), LocalRejection> {
    if operation.path_queries.is_empty() || request.url().query().is_none() {
        return Ok(());
    }
    let mut query = String::new();
    for (name, value) in request.url().query_pairs() {
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&url_form(&name));
        query.push('=');
        match operation.path_queries.iter().find(|p| **p == name) {
            Some(parameter) => {
                // `/` is the whole tree, and a folder may be written with a trailing slash.
                let folder = match value.strip_suffix('/') {
                    Some(trimmed) if !trimmed.is_empty() => trimmed,
                    _ => &value,
                };
                let path = if folder == "/" {
                    Ok("/".to_string())
                } else {
                    crate::path::encode_folder_path(folder)
                };
                let path = path.map_err(|error| LocalRejection::PathValue {
                    operation: operation.id,
                    parameter,
                    error,
                })?;
                query.push_str(&path);
            }
            None => query.push_str(&url_form(&value)),
        }
    }
    request.url_mut().set_query(Some(&query));
    Ok(())
}

/// Form-encodes one query name or value, as the generated builder does.
fn url_form(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
