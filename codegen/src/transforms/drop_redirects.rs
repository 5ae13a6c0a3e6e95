//! `drop_redirects`: removes 3xx responses.
//!
//! Progenitor 0.15 has no match arm for 3xx and ignores response headers, so a 303 would be
//! reported as an unexpected response at best (and followed by reqwest's default client at
//! worst). The only 3xx of the API is the audit job's `303 See Other` with `Location`; the
//! generated method keeps the `200 {status: running}` arm, and `pubapi-sdk-ext` (whose HTTP
//! client never follows redirects) reads the 303 status, `Location` and body itself.

use super::Removal;
use crate::walk::{operation_name, operations_mut, status_class, status_label};
use openapiv3::OpenAPI;

/// Removes every 3xx response and reports each removal.
pub fn apply(spec: &mut OpenAPI) -> Vec<Removal> {
    let mut removals = Vec::new();
    operations_mut(spec, |path, method, operation| {
        let name = operation_name(path, method, operation);
        operation.responses.responses.retain(|code, _| {
            let keep = status_class(code) != 3;
            if !keep {
                removals.push(Removal {
                    transform: "drop_redirects",
                    subject: name.clone(),
                    what: status_label(code),
                });
            }
            keep
        });
    });
    removals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::spec;
    use openapiv3::StatusCode;

    #[test]
    fn see_other_is_removed_and_200_kept() {
        let mut s = spec(
            "paths:\n  /job:\n    get:\n      operationId: getJob\n      responses:\n        '200': {description: running}\n        '303': {description: done}\n",
        );
        let removed = apply(&mut s);
        assert_eq!(removed.len(), 1);
        assert_eq!(
            (removed[0].subject.as_str(), removed[0].what.as_str()),
            ("getJob", "303")
        );
        let op = s.paths.paths["/job"]
            .as_item()
            .unwrap()
            .get
            .as_ref()
            .unwrap();
        let codes: Vec<_> = op.responses.responses.keys().cloned().collect();
        assert_eq!(codes, vec![StatusCode::Code(200)]);
    }
}
