//! `mock_path_values_encoded` (code → code, typed mocks): a path parameter's `When` method
//! matches the value as the client sends it.
//!
//! Progenitor's `httpmock` generator pastes the value into the path regex as it is:
//! `format!("^/v1/webhooks/{}$", value.to_string())`. The client percent-encodes every path
//! value (`pubapi_sdk::path::encode_segment`, see `strict_path_encoding`) and httpmock matches
//! the raw, still encoded path, so `id("doc 1")` would never match the `doc%201` that arrives;
//! and a value holding a regex metacharacter (`.`, `+`, `(`) would match other ids or not
//! compile at all. This transform encodes the value with the client's own encoder, then
//! escapes it for the regex.

use crate::CodegenError;
use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::visit_mut::VisitMut;

/// Rewrites the value of every path regex `format!` in `file` and returns how many it rewrote.
///
/// # Errors
/// [`CodegenError::Unparseable`] when there is none: progenitor's output changed shape.
pub fn apply(file: &mut syn::File) -> Result<usize, CodegenError> {
    let mut rewriter = Rewriter { rewritten: 0 };
    rewriter.visit_file_mut(file);
    if rewriter.rewritten == 0 {
        return Err(CodegenError::Unparseable(
            "mock_path_values_encoded found no path regex format!: progenitor's output changed"
                .into(),
        ));
    }
    Ok(rewriter.rewritten)
}

struct Rewriter {
    rewritten: usize,
}

/// Whether `tokens` are the arguments of a path regex `format!`: a string literal starting
/// with `^/`, then `, value.to_string()`.
fn is_path_regex_format(tokens: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let starts_with_path_regex = matches!(
        trees.first(),
        Some(TokenTree::Literal(lit)) if lit.to_string().starts_with("\"^/")
    );
    let rest: String = trees.iter().skip(1).map(ToString::to_string).collect();
    starts_with_path_regex && rest.replace(' ', "") == ",value.to_string()"
}

impl VisitMut for Rewriter {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        if mac.path.is_ident("format") && is_path_regex_format(&mac.tokens) {
            let Some(literal) = mac.tokens.clone().into_iter().next() else {
                return;
            };
            mac.tokens = quote! {
                #literal,
                ::regex::escape(&::pubapi_sdk::path::encode_segment(&value.to_string()))
            };
            self.rewritten += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::assert_holds;
    use quote::ToTokens;

    #[test]
    fn the_path_value_is_encoded_then_escaped() {
        let mut file: syn::File = syn::parse_quote! {
            fn id(self, value: &str) -> Self {
                let re = regex::Regex::new(&format!("^/v1/webhooks/{}$", value.to_string())).unwrap();
                Self(self.0.path_matches(re))
            }
        };
        assert_eq!(apply(&mut file).unwrap(), 1);
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "format ! (\"^/v1/webhooks/{}$\" , :: regex :: escape (& :: pubapi_sdk :: path :: encode_segment (& value . to_string ())))",
            ],
        );
    }

    #[test]
    fn other_format_calls_are_left_alone() {
        let mut file: syn::File = syn::parse_quote! {
            fn f(value: u8) -> String { format!("{}", value.to_string()) }
        };
        assert!(matches!(
            apply(&mut file),
            Err(CodegenError::Unparseable(_))
        ));
    }
}
