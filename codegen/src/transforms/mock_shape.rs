//! `mock_shape`: what progenitor's `httpmock` output looks like, for the `mock_*` transforms
//! that reshape it and for [`crate::mocks`], which runs them. Not a transform itself: the
//! names progenitor gives an operation's `When`/`Then` wrappers and `Then` methods, and how to
//! find a wrapper's `impl` block and its methods. It sits below both, so the transforms need
//! nothing from the module that calls them.

use heck::{ToSnakeCase, ToUpperCamelCase};

/// The name progenitor gives the `When` wrapper of operation `operation_id`.
pub(crate) fn when_type(operation_id: &str) -> String {
    format!("{}_when", operation_id.to_snake_case()).to_upper_camel_case()
}

/// The name progenitor gives the `Then` wrapper of operation `operation_id`.
pub(crate) fn then_type(operation_id: &str) -> String {
    format!("{}_then", operation_id.to_snake_case()).to_upper_camel_case()
}

/// The name progenitor gives the `Then` method answering `status`: the snake-case canonical
/// reason (`404` → `not_found`).
pub(crate) fn status_method(status: u16) -> Option<String> {
    let reason = http::StatusCode::from_u16(status)
        .ok()?
        .canonical_reason()?;
    Some(reason.to_snake_case())
}

/// The `impl` block of the type named `type_name` inside `pub mod operations`.
pub(crate) fn impl_block_mut<'a>(
    file: &'a mut syn::File,
    type_name: &str,
) -> Option<&'a mut syn::ItemImpl> {
    let operations = file.items.iter_mut().find_map(|item| match item {
        syn::Item::Mod(m) if m.ident == "operations" => Some(m),
        _ => None,
    })?;
    let (_, items) = operations.content.as_mut()?;
    items.iter_mut().find_map(|item| match item {
        syn::Item::Impl(block)
            if block.trait_.is_none()
                && matches!(&*block.self_ty, syn::Type::Path(p) if p.path.is_ident(type_name)) =>
        {
            Some(block)
        }
        _ => None,
    })
}

/// The names of the methods of an `impl` block.
pub(crate) fn method_names(block: &syn::ItemImpl) -> Vec<String> {
    block
        .items
        .iter()
        .filter_map(|item| match item {
            syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The spec the `mock_*` transforms' tests run on, written once.
#[cfg(test)]
pub(crate) mod fixture {
    use openapiv3::OpenAPI;

    /// The text of a spec whose first operation is `deleteWebhook` (`DELETE /hooks/{id}`):
    /// a summary, a path and a header parameter, a bodiless `204`, a `404` with the typed
    /// `WebhookError` body and a `429` with a `Retry-After` header; `more_paths` follow it.
    pub(crate) fn delete_webhook_and(more_paths: &str) -> String {
        format!(
            "paths:
  /hooks/{{id}}:
    delete:
      operationId: deleteWebhook
      summary: Delete a webhook.
      parameters:
        - {{name: id, in: path, required: true, description: The webhook id., schema: {{type: string}}}}
        - {{name: X-Service-Act-As, in: header, description: Acts as this user., schema: {{type: string}}}}
      responses:
        '204': {{description: The webhook was deleted.}}
        '404':
          description: unknown hook
          content: {{application/json: {{schema: {{$ref: '#/components/schemas/WebhookError'}}}}}}
        '429':
          description: throttled
          headers:
            Retry-After: {{$ref: '#/components/headers/RetryAfter'}}
{more_paths}components:
  headers:
    RetryAfter: {{description: Seconds until the limit resets., schema: {{type: integer}}}}
  schemas:
    WebhookError: {{type: object}}
    Report: {{type: object}}
"
        )
    }

    /// The spec of `deleteWebhook` alone (see [`delete_webhook_and`]).
    pub(crate) fn delete_webhook() -> OpenAPI {
        crate::transforms::fixture::spec(&delete_webhook_and(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_progenitor() {
        assert_eq!(when_type("listEventsV1"), "ListEventsV1When");
        assert_eq!(then_type("deleteWebhook"), "DeleteWebhookThen");
        assert_eq!(status_method(404).as_deref(), Some("not_found"));
        assert_eq!(status_method(303).as_deref(), Some("see_other"));
        assert_eq!(status_method(429).as_deref(), Some("too_many_requests"));
        assert_eq!(status_method(999), None);
    }

    #[test]
    fn the_fixture_is_one_operation_with_its_three_kinds_of_answer() {
        let spec = fixture::delete_webhook();
        let operations = crate::walk::operations(&spec);
        assert_eq!(operations.len(), 1);
        assert_eq!(operations[0].operation.responses.responses.len(), 3);
    }
}
