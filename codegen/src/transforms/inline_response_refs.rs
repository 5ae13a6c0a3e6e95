//! `inline_response_refs`: replaces every `$ref` to `#/components/responses/...` in an
//! operation by a copy of the response, so the transforms after it can edit one operation's
//! responses without touching the shared component. Removes nothing.

use crate::CodegenError;
use crate::walk::{operation_name, operations_mut, resolve_response};
use openapiv3::{OpenAPI, ReferenceOr};

/// Inlines response references.
///
/// # Errors
/// [`CodegenError::Unsupported`] when a reference does not resolve.
pub fn apply(spec: &mut OpenAPI) -> Result<(), CodegenError> {
    let lookup = spec.clone();
    let mut failure = None;
    operations_mut(spec, |path, method, operation| {
        let name = operation_name(path, method, operation);
        let responses = operation
            .responses
            .responses
            .values_mut()
            .chain(operation.responses.default.as_mut());
        for response in responses {
            if let ReferenceOr::Reference { reference } = response {
                let reference = reference.clone();
                match resolve_response(&lookup, response) {
                    Some(resolved) => *response = ReferenceOr::Item(resolved.clone()),
                    None => {
                        failure.get_or_insert(CodegenError::Unsupported {
                            operation: name.clone(),
                            problem: format!("response reference {reference} does not resolve"),
                        });
                    }
                }
            }
        }
    });
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{spec, unsupported};
    use openapiv3::StatusCode;

    #[test]
    fn shared_response_becomes_an_inline_copy() {
        let mut s = spec(
            "paths:\n  /a:\n    get:\n      operationId: a\n      responses:\n        '401': {$ref: '#/components/responses/Unauthorized'}\ncomponents:\n  responses:\n    Unauthorized: {description: no}\n",
        );
        apply(&mut s).unwrap();
        let op = s.paths.paths["/a"].as_item().unwrap().get.as_ref().unwrap();
        let r = &op.responses.responses[&StatusCode::Code(401)];
        assert_eq!(r.as_item().unwrap().description, "no");
    }

    #[test]
    fn dangling_response_reference_is_an_error() {
        let mut s = spec(
            "paths:\n  /a:\n    get:\n      operationId: a\n      responses:\n        '401': {$ref: '#/components/responses/Missing'}\n",
        );
        let refusal = unsupported(apply(&mut s));
        assert!(refusal.starts_with("a: "), "{refusal}");
    }
}
