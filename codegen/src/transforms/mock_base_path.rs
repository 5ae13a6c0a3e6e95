//! `mock_base_path` (code → code, typed mocks): the mocks match paths below the API's base path.
//!
//! Progenitor's `httpmock` generator anchors every path regex at the operation's path
//! (`^/v1/webhooks$`), but the API lives below the path of the spec's server URL
//! (`https://{domain}/pubapi`), and a client's base URL includes it: a request arrives as
//! `/pubapi/v1/webhooks`. This transform puts the servers' path in front of every path regex
//! and writes it once as `pub const BASE_PATH`, so a test points its client at
//! `server.url(BASE_PATH)`. It refuses servers whose paths differ.

use crate::CodegenError;
use openapiv3::OpenAPI;
use proc_macro2::{Literal, TokenTree};
use syn::visit_mut::VisitMut;

/// The path of the spec's server URLs (`/pubapi`), without a trailing slash; empty when the
/// spec names no server.
///
/// # Errors
/// [`CodegenError::Unsupported`] when two servers have different paths.
pub fn base_path(spec: &OpenAPI) -> Result<String, CodegenError> {
    let mut paths = spec.servers.iter().map(|server| {
        let url = server.url.as_str();
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
        path.trim_end_matches('/').to_string()
    });
    let first = paths.next().unwrap_or_default();
    if let Some(other) = paths.find(|p| *p != first) {
        return Err(CodegenError::Unsupported {
            operation: "servers".into(),
            problem: format!("server paths differ ({first:?} and {other:?}): no one base path"),
        });
    }
    Ok(first)
}

/// Prefixes every path regex of `file` with the base path, appends `BASE_PATH`, and returns
/// how many regexes it rewrote.
///
/// # Errors
/// [`CodegenError::Unsupported`] from [`base_path`]; [`CodegenError::Unparseable`] when no
/// path regex is found (progenitor's output changed shape).
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<usize, CodegenError> {
    let base = base_path(spec)?;
    let mut prefixer = Prefixer {
        base: &base,
        rewritten: 0,
    };
    prefixer.visit_file_mut(file);
    if prefixer.rewritten == 0 {
        return Err(CodegenError::Unparseable(
            "mock_base_path found no path regex: progenitor's output changed".into(),
        ));
    }
    let doc = format!(
        "The path the API lives under (the path of the spec's server URL, `{base}`): point the \
         client under test at `server.url(BASE_PATH)`, which is what [`crate::base_url`] does."
    );
    file.items.push(syn::parse_quote! {
        #[doc = #doc]
        pub const BASE_PATH: &str = #base;
    });
    Ok(prefixer.rewritten)
}

struct Prefixer<'a> {
    base: &'a str,
    rewritten: usize,
}

impl Prefixer<'_> {
    /// The regex with the base path after its `^`, or `None` when `value` is no path regex.
    fn prefixed(&mut self, value: &str) -> Option<String> {
        let rest = value.strip_prefix("^/")?;
        self.rewritten += 1;
        Some(format!("^{}/{rest}", regex_escape(self.base)))
    }
}

/// Escapes the regex metacharacters of a literal path (the base path has none today).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl VisitMut for Prefixer<'_> {
    fn visit_lit_str_mut(&mut self, lit: &mut syn::LitStr) {
        if let Some(value) = self.prefixed(&lit.value()) {
            *lit = syn::LitStr::new(&value, lit.span());
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        if !mac.path.is_ident("format") {
            return;
        }
        let mut trees: Vec<TokenTree> = mac.tokens.clone().into_iter().collect();
        let Some(TokenTree::Literal(first)) = trees.first() else {
            return;
        };
        let Ok(lit) = syn::parse_str::<syn::LitStr>(&first.to_string()) else {
            return;
        };
        if let Some(value) = self.prefixed(&lit.value()) {
            trees[0] = TokenTree::Literal(Literal::string(&value));
            mac.tokens = trees.into_iter().collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{assert_holds, spec, unsupported};
    use quote::ToTokens;

    fn with_servers(servers: &str) -> OpenAPI {
        spec(&format!("servers:\n{servers}paths: {{}}\n"))
    }

    #[test]
    fn base_path_is_the_server_urls_path() {
        let s = with_servers("  - url: https://{domain}/pubapi/\n");
        assert_eq!(base_path(&s).unwrap(), "/pubapi");
        assert_eq!(
            base_path(&with_servers("  - url: https://h\n")).unwrap(),
            ""
        );
    }

    #[test]
    fn servers_with_different_paths_are_refused() {
        let s = with_servers("  - url: https://a/pubapi\n  - url: https://b/other\n");
        unsupported(base_path(&s));
    }

    #[test]
    fn path_regexes_and_path_value_formats_get_the_prefix_and_the_constant_is_written() {
        let mut file: syn::File = syn::parse_quote! {
            fn new() { regex::Regex::new("^/v1/webhooks/[^/]*$").unwrap(); }
            fn id(value: &str) { format!("^/v1/webhooks/{}$", value); }
            fn other() { let _ = "plain"; }
        };
        let rewritten = apply(
            &mut file,
            &with_servers("  - url: https://{domain}/pubapi\n"),
        );
        assert_eq!(rewritten.unwrap(), 2);
        let out = file.into_token_stream().to_string();
        assert_holds(
            &out,
            &[
                "\"^/pubapi/v1/webhooks/[^/]*$\"",
                "format ! (\"^/pubapi/v1/webhooks/{}$\" , value)",
                "\"plain\"",
                "pub const BASE_PATH : & str = \"/pubapi\"",
            ],
        );
    }
}
