//! `json_only_responses`: where a response offers `application/json` and other media types,
//! keeps only JSON.
//!
//! Progenitor 0.15 picks JSON silently and always sends `Accept: application/json`; this makes
//! the choice explicit and reported. The audit report's `text/csv` is fetched by
//! `pubapi-sdk-ext` (with `Accept: text/csv`, streamed).

use super::Removal;
use crate::walk::{operation_name, operations_mut, status_label};
use openapiv3::{OpenAPI, ReferenceOr};

const JSON: &str = "application/json";

/// Drops the non-JSON media types of responses that also offer JSON.
pub fn apply(spec: &mut OpenAPI) -> Vec<Removal> {
    let mut removals = Vec::new();
    operations_mut(spec, |path, method, operation| {
        let name = operation_name(path, method, operation);
        for (code, response) in operation.responses.responses.iter_mut() {
            let ReferenceOr::Item(response) = response else {
                continue;
            };
            if response.content.len() < 2 || !response.content.contains_key(JSON) {
                continue;
            }
            response.content.retain(|media_type, _| {
                let keep = media_type == JSON;
                if !keep {
                    removals.push(Removal {
                        transform: "json_only_responses",
                        subject: name.clone(),
                        what: format!("{} {media_type}", status_label(code)),
                    });
                }
                keep
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
    fn csv_next_to_json_is_removed() {
        let mut s = spec(
            "paths:\n  /r:\n    get:\n      operationId: getReport\n      responses:\n        '200':\n          description: report\n          content:\n            text/csv: {schema: {type: string}}\n            application/json: {schema: {type: object}}\n",
        );
        let removed = apply(&mut s);
        assert_eq!(removed[0].what, "200 text/csv");
        let op = s.paths.paths["/r"].as_item().unwrap().get.as_ref().unwrap();
        let r = op.responses.responses[&StatusCode::Code(200)]
            .as_item()
            .unwrap();
        assert_eq!(
            r.content.keys().collect::<Vec<_>>(),
            vec!["application/json"]
        );
    }

    #[test]
    fn csv_alone_is_left_as_it_is() {
        let mut s = spec(
            "paths:\n  /r:\n    get:\n      operationId: getReport\n      responses:\n        '200':\n          description: report\n          content:\n            text/csv: {schema: {type: string}}\n",
        );
        assert!(apply(&mut s).is_empty());
    }
}
