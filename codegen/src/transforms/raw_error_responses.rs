//! `raw_error_responses`: removes the 4xx, 5xx and `default` responses of every operation.
//!
//! The API has three error body formats (AI, webhooks, general/audit) and several bodiless
//! errors (a 500 with no described body, 429s whose body is not shown). Progenitor 0.15 panics
//! when one operation's errors have different schemas or mix typed and bodiless ones. With this
//! transform every error arrives as the raw `reqwest::Response`
//! (`progenitor_client::Error::UnexpectedResponse`), status, headers and body intact, and
//! `pubapi-sdk-ext` decodes it into its typed error by status and the operation's area. The
//! error schemas stay components, so their types are still generated.

use super::Removal;
use crate::walk::{operation_name, operations_mut, status_class, status_label};
use openapiv3::OpenAPI;

/// Removes the error responses and reports each removal.
pub fn apply(spec: &mut OpenAPI) -> Vec<Removal> {
    let mut removals = Vec::new();
    operations_mut(spec, |path, method, operation| {
        let name = operation_name(path, method, operation);
        operation.responses.responses.retain(|code, _| {
            let error = matches!(status_class(code), 4 | 5);
            if error {
                removals.push(Removal {
                    transform: "raw_error_responses",
                    subject: name.clone(),
                    what: status_label(code),
                });
            }
            !error
        });
        if operation.responses.default.take().is_some() {
            removals.push(Removal {
                transform: "raw_error_responses",
                subject: name,
                what: "default".into(),
            });
        }
    });
    removals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;
    use openapiv3::StatusCode;

    #[test]
    fn typed_and_bodiless_errors_are_all_removed() {
        let mut s = spec(
            "paths:\n  /ask:\n    post:\n      operationId: ask\n      responses:\n        '200': {description: ok}\n        '400': {description: bad, content: {application/json: {schema: {type: object}}}}\n        '500': {description: no body}\n        default: {description: other}\n",
        );
        let removed: Vec<_> = apply(&mut s).into_iter().map(|r| r.what).collect();
        assert_eq!(removed, vec!["400", "500", "default"]);
        let op = s.paths.paths["/ask"]
            .as_item()
            .unwrap()
            .post
            .as_ref()
            .unwrap();
        assert_eq!(
            op.responses.responses.keys().cloned().collect::<Vec<_>>(),
            vec![StatusCode::Code(200)]
        );
        assert!(op.responses.default.is_none());
    }
}
