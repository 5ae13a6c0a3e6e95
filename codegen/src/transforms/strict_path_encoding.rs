//! `strict_path_encoding` (code → code): path values go through `pubapi_sdk::path`.
//!
//! Progenitor's `encode_path` leaves `\` and the dot segments alone, and the WHATWG URL parser
//! reqwest uses then turns a backslash into a separator and resolves `..` away:
//! `id = "x\..\job-2"` requests `/v1/audit/jobs/job-2`, another job on the same endpoint, and
//! no check after URL parsing can tell. This transform replaces every `encode_path(..)` call of
//! the generated methods with `crate::path::encode_segment(..)`, which percent-encodes every
//! byte outside the RFC 3986 unreserved set (so `/` is `%2F` and `\` is `%5C`). A value then
//! always stays one segment, and `pubapi-sdk-ext`'s request policy refuses the values that
//! still name something else (`.`, `..`, an encoded slash or backslash) before sending.

use syn::visit_mut::VisitMut;

/// Rewrites every `encode_path(x)` call in `file` to `crate::path::encode_segment(x)` and
/// returns how many it rewrote.
pub fn apply(file: &mut syn::File) -> usize {
    let mut rewriter = Rewriter { rewritten: 0 };
    rewriter.visit_file_mut(file);
    rewriter.rewritten
}

struct Rewriter {
    rewritten: usize,
}

impl Rewriter {
    /// Rewrites the calls inside a macro's tokens (progenitor builds URLs with `format!`,
    /// whose arguments syn keeps as tokens).
    fn rewrite_tokens(&mut self, tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
        use proc_macro2::{TokenStream, TokenTree};
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        for (index, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Ident(ident)
                    if ident == "encode_path"
                        && !matches!(index.checked_sub(1).map(|i| &trees[i]), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                        && matches!(trees.get(index + 1), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis) =>
                {
                    out.extend(quote::quote!(crate::path::encode_segment));
                    self.rewritten += 1;
                }
                TokenTree::Group(group) => {
                    let mut inner = proc_macro2::Group::new(
                        group.delimiter(),
                        self.rewrite_tokens(group.stream()),
                    );
                    inner.set_span(group.span());
                    out.extend([TokenTree::Group(inner)]);
                }
                other => out.extend([other.clone()]),
            }
        }
        out
    }
}

impl VisitMut for Rewriter {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        mac.tokens = self.rewrite_tokens(std::mem::take(&mut mac.tokens));
    }

    fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
        syn::visit_mut::visit_expr_call_mut(self, call);
        if let syn::Expr::Path(func) = call.func.as_mut()
            && func.qself.is_none()
            && func.path.is_ident("encode_path")
        {
            func.path = syn::parse_quote!(crate::path::encode_segment);
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
    fn encode_path_calls_use_the_strict_encoder() {
        let mut file: syn::File = syn::parse_quote! {
            fn url(id: &str, other: &str) -> String {
                let direct = encode_path(id);
                format!("{}/v1/x/{}/{}", base, encode_path(&id.to_string()), other::encode_path(other))
            }
        };
        assert_eq!(apply(&mut file), 2);
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "let direct = crate :: path :: encode_segment (id)",
                "crate :: path :: encode_segment (& id . to_string ())",
            ],
        );
        assert!(
            out.contains("other :: encode_path (other)"),
            "only the bare progenitor helper is rewritten: {out}"
        );
    }
}
