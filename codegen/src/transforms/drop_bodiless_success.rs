//! `drop_bodiless_success`: removes body-less 2xx responses of an operation that also has a 2xx
//! with a body.
//!
//! Progenitor 0.15 asserts that an operation has at most one success type and panics on
//! `200 JSON` + `204 no content` (the events lists). After this transform the generated method
//! returns the page on 200, and the 204 arrives as an unexpected response, which
//! `pubapi-sdk-ext` turns into "caught up". Two different typed success bodies cannot be
//! adapted and are reported as an error.

use super::Removal;
use crate::CodegenError;
use crate::walk::{operation_name, operations_mut, status_class, status_label};
use openapiv3::{OpenAPI, ReferenceOr};

/// Removes the body-less 2xx responses where a typed 2xx exists.
///
/// # Errors
/// [`CodegenError::Unsupported`] when an operation has two 2xx responses with different bodies.
pub fn apply(spec: &mut OpenAPI) -> Result<Vec<Removal>, CodegenError> {
    let mut removals = Vec::new();
    let mut failure = None;
    operations_mut(spec, |path, method, operation| {
        let name = operation_name(path, method, operation);
        let typed: Vec<_> = operation
            .responses
            .responses
            .iter()
            .filter(|(code, _)| status_class(code) == 2)
            .filter_map(|(code, r)| match r {
                ReferenceOr::Item(r) if !r.content.is_empty() => {
                    Some((code.clone(), r.content.clone()))
                }
                _ => None,
            })
            .collect();
        if typed.windows(2).any(|w| w[0].1 != w[1].1) {
            failure.get_or_insert(CodegenError::Unsupported {
                operation: name,
                problem: "two 2xx responses with different bodies".into(),
            });
            return;
        }
        if typed.is_empty() {
            return;
        }
        operation.responses.responses.retain(|code, r| {
            let bodiless = matches!(r, ReferenceOr::Item(r) if r.content.is_empty());
            let drop = status_class(code) == 2 && bodiless;
            if drop {
                removals.push(Removal {
                    transform: "drop_bodiless_success",
                    subject: name.clone(),
                    what: status_label(code),
                });
            }
            !drop
        });
    });
    failure.map_or(Ok(removals), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{spec, unsupported};
    use openapiv3::StatusCode;

    #[test]
    fn no_content_next_to_a_page_is_removed() {
        let mut s = spec(
            "paths:\n  /events:\n    get:\n      operationId: listEvents\n      responses:\n        '200': {description: page, content: {application/json: {schema: {type: object}}}}\n        '204': {description: caught up}\n",
        );
        let removed = apply(&mut s).unwrap();
        assert_eq!(removed[0].what, "204");
        let op = s.paths.paths["/events"]
            .as_item()
            .unwrap()
            .get
            .as_ref()
            .unwrap();
        assert!(!op.responses.responses.contains_key(&StatusCode::Code(204)));
    }

    #[test]
    fn a_lone_no_content_is_kept() {
        let mut s = spec(
            "paths:\n  /w:\n    delete:\n      operationId: deleteIt\n      responses:\n        '204': {description: gone}\n",
        );
        assert!(apply(&mut s).unwrap().is_empty());
    }

    #[test]
    fn two_different_success_bodies_are_refused() {
        let mut s = spec(
            "paths:\n  /x:\n    get:\n      operationId: x\n      responses:\n        '200': {description: a, content: {application/json: {schema: {type: object}}}}\n        '201': {description: b, content: {application/json: {schema: {type: string}}}}\n",
        );
        unsupported(apply(&mut s));
    }
}
