//! The typed mocks of `pubapi-httpmock`: progenitor's `httpmock` generator run on the adapted
//! spec (the one the client is generated from, so the mocks name the client's own types), then
//! the `mock_*` code → code transforms (see [`crate::transforms`]) that give the mocks back what
//! the spec transforms took away, make them fit the API's base path and path encoding, and
//! let each operation answer in sequence.

use crate::transforms::{
    mock_base_path, mock_docs, mock_path_values_encoded, mock_removed_responses, mock_sequences,
};
use crate::{CodegenError, settings};
use openapiv3::OpenAPI;

/// Generates the `pubapi-httpmock` file from the spec as written (`original`) and the spec
/// progenitor saw (`adapted`).
pub(crate) fn generate(original: &OpenAPI, adapted: &OpenAPI) -> Result<syn::File, CodegenError> {
    let tokens = settings::run_progenitor_httpmock(adapted)?;
    let mut file: syn::File =
        syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))?;
    mock_removed_responses::apply(&mut file, original, adapted)?;
    mock_path_values_encoded::apply(&mut file)?;
    mock_base_path::apply(&mut file, original)?;
    mock_sequences::apply(&mut file, original)?;
    mock_docs::apply(&mut file, original)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use crate::transforms::mock_shape::{
        impl_block_mut, method_names, status_method, then_type, when_type,
    };
    use crate::walk::{operation_name, operations, resolve_response};
    use openapiv3::StatusCode;
    use quote::ToTokens;

    /// The project's spec: every operation gets its pair, every documented status its `Then`
    /// method, and each JSON error body its own format's type (`AiError`, `WebhookError`,
    /// `GeneralError`).
    #[test]
    fn every_operation_and_every_documented_status_of_the_spec_has_its_typed_mock() {
        let text = include_str!("../../spec/openapi.yaml");
        let generated = crate::generate(text).expect("the spec generates");
        let mut file: syn::File = syn::parse_str(&generated.httpmock_code).expect("it parses");
        let spec = crate::spec::load(text).expect("the spec loads");
        let mut error_types = std::collections::BTreeSet::new();
        for op in operations(&spec) {
            let id = operation_name(op.path, op.method, op.operation);
            assert!(
                impl_block_mut(&mut file, &when_type(&id)).is_some(),
                "{id}: When"
            );
            let then = impl_block_mut(&mut file, &then_type(&id)).expect("a Then");
            let methods = method_names(then);
            for (code, response) in &op.operation.responses.responses {
                let StatusCode::Code(status) = code else {
                    panic!("{id}: a range");
                };
                let method = status_method(*status).expect("a canonical reason");
                let found = then.items.iter().find_map(|item| match item {
                    syn::ImplItem::Fn(f) if f.sig.ident == method => Some(f),
                    _ => None,
                });
                let found = found.unwrap_or_else(|| panic!("{id}: no {method} in {methods:?}"));
                let response = resolve_response(&spec, response).expect("resolves");
                let schema = response
                    .content
                    .get("application/json")
                    .and_then(|m| m.schema.as_ref())
                    .and_then(|s| match s {
                        openapiv3::ReferenceOr::Reference { reference } => {
                            crate::walk::schema_ref_name(reference)
                        }
                        openapiv3::ReferenceOr::Item(_) => None,
                    });
                if *status >= 400
                    && let Some(schema) = schema
                {
                    let signature = found.sig.to_token_stream().to_string();
                    assert!(
                        signature.contains(&format!("types :: {schema}")),
                        "{id} {status}: {signature}"
                    );
                    error_types.insert(schema.to_string());
                }
            }
        }
        assert_eq!(
            error_types.into_iter().collect::<Vec<_>>(),
            ["AiError", "GeneralError", "WebhookError"]
        );
    }
}
