//! `alias_accessors` (code → code): one accessor for a value the platform sends under two
//! names.
//!
//! Where the platform's clients read a field under another name than the reference (hybrid
//! search chunks' `chunkText` beside the reference's `text`; ask-KB citation chunks'
//! `sourceText` beside `text`), the spec declares both properties and marks the second with
//! `x-pubapi-alias-of: <the other>`. A serde `alias` cannot express this: a body that carries
//! both names (the sandbox sends both, and nothing says the platform never does) would be
//! refused as a duplicate field. So both stay fields, and this transform adds to the type
//!
//! ```text
//! impl HybridSearchChunk {
//!     /// `text`, or `chunkText` where the platform sends it under that name.
//!     pub fn text(&self) -> Option<&str> { self.text.as_deref().or(self.chunk_text.as_deref()) }
//! }
//! ```
//!
//! named after the primary property. Both must be optional strings; anything else is refused.

use crate::CodegenError;
use heck::ToSnakeCase;
use openapiv3::{OpenAPI, ReferenceOr, SchemaKind, Type};
use quote::{format_ident, quote};

/// The extension naming the property a property is another name of.
pub const ALIAS_OF: &str = "x-pubapi-alias-of";

/// `(schema, primary property, alias property)` for every alias in the component schemas.
pub fn aliases(spec: &OpenAPI) -> Vec<(String, String, String)> {
    let Some(components) = &spec.components else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (name, schema) in &components.schemas {
        let ReferenceOr::Item(schema) = schema else {
            continue;
        };
        let SchemaKind::Type(Type::Object(object)) = &schema.schema_kind else {
            continue;
        };
        for (property, field) in &object.properties {
            if let ReferenceOr::Item(field) = field
                && let Some(primary) = field
                    .schema_data
                    .extensions
                    .get(ALIAS_OF)
                    .and_then(|v| v.as_str())
            {
                found.push((name.clone(), primary.to_string(), property.clone()));
            }
        }
    }
    found
}

fn refused(schema: &str, problem: String) -> CodegenError {
    CodegenError::Unsupported {
        operation: format!("schema {schema}"),
        problem: format!("alias_accessors: {problem}"),
    }
}

/// Adds the accessors to `mod types`; returns how many were added.
///
/// # Errors
/// [`CodegenError::Unsupported`] when an alias names a property the schema lacks, or a field
/// that is not an optional string.
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<usize, CodegenError> {
    let aliases = aliases(spec);
    let Some(types) = crate::code::module_mut(&mut file.items, "types") else {
        return Ok(0);
    };
    for (schema, primary, alias) in &aliases {
        let position = types
            .iter()
            .position(|item| matches!(item, syn::Item::Struct(s) if s.ident == schema))
            .ok_or_else(|| refused(schema, "no struct in mod types".into()))?;
        let syn::Item::Struct(strukt) = &types[position] else {
            unreachable!("matched a struct above");
        };
        for property in [primary, alias] {
            let ident = property.to_snake_case();
            let field = strukt
                .fields
                .iter()
                .find(|f| f.ident.as_ref().is_some_and(|i| i == &ident))
                .ok_or_else(|| refused(schema, format!("no property {property}")))?;
            let ty = field.ty.to_token_stream_string();
            if ty != "::std::option::Option<::std::string::String>" {
                return Err(refused(
                    schema,
                    format!("{property} is {ty}, not an optional string"),
                ));
            }
        }
        let ty = &strukt.ident;
        let method = format_ident!("{}", primary.to_snake_case());
        let other = format_ident!("{}", alias.to_snake_case());
        let doc = format!("`{primary}`, or `{alias}` where the platform sends it under that name.");
        let accessor: syn::Item = syn::parse_quote! {
            impl #ty {
                #[doc = #doc]
                pub fn #method(&self) -> ::std::option::Option<&str> {
                    self.#method.as_deref().or(self.#other.as_deref())
                }
            }
        };
        types.insert(position + 1, accessor);
    }
    Ok(aliases.len())
}

trait TokenString {
    fn to_token_stream_string(&self) -> String;
}

impl TokenString for syn::Type {
    fn to_token_stream_string(&self) -> String {
        quote!(#self).to_string().replace(' ', "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{assert_holds, spec};
    use quote::ToTokens;

    fn code(fields: &str) -> syn::File {
        syn::parse_str(&format!(
            "pub mod types {{ pub struct Chunk {{ {fields} }} }}"
        ))
        .unwrap()
    }

    const SPEC: &str = "paths: {}
components:
  schemas:
    Chunk:
      type: object
      properties:
        text: {type: string}
        chunkText: {type: string, x-pubapi-alias-of: text}
";

    #[test]
    fn an_alias_gets_one_accessor_named_after_the_primary() {
        let mut file = code(
            "pub text: ::std::option::Option<::std::string::String>, \
             pub chunk_text: ::std::option::Option<::std::string::String>,",
        );
        assert_eq!(apply(&mut file, &spec(SPEC)).unwrap(), 1);
        let text = file.to_token_stream().to_string();
        assert_holds(
            &text,
            &[
                "pub fn text (& self)",
                "self . text . as_deref () . or (self . chunk_text . as_deref ())",
            ],
        );
    }

    #[test]
    fn an_alias_of_a_missing_or_non_string_field_is_refused() {
        for fields in [
            "pub text: ::std::option::Option<::std::string::String>,",
            "pub text: ::std::option::Option<i64>, \
             pub chunk_text: ::std::option::Option<::std::string::String>,",
        ] {
            let mut file = code(fields);
            assert!(
                matches!(
                    apply(&mut file, &spec(SPEC)),
                    Err(CodegenError::Unsupported { .. })
                ),
                "{fields}"
            );
        }
    }
}
