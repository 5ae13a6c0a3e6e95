//! `plain_patterns` (code → code): the spec's string `pattern`s checked by plain generated
//! functions instead of a regular expression engine.
//!
//! typify checks a string's `pattern` with `regress` (an ECMAScript regex engine), compiled
//! into every build of `pubapi-sdk` whatever its areas, for the spec's five patterns: `\S`
//! (a question or query that is not blank), `^[^*]` and `^/` (an audited file or folder path),
//! and the calendar date and report date (`YYYY-MM-DD`, the latter with an optional
//! `THH:MM:SSZ`, months and leap days checked). This transform replaces each
//! `static PATTERN: LazyLock<regress::Regex>` and its `PATTERN.find(value).is_none()` test with
//! a call to a function of the generated `patterns` module that says the same in plain Rust
//! (the error message stays the pattern's). A pattern it does not know fails the generation,
//! so a new one in the spec is never checked by nothing; `sdk/tests/patterns.rs` checks every
//! function against `regress` (a dev-dependency there) on generated strings.

use crate::CodegenError;
use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use std::collections::BTreeSet;
use syn::visit_mut::VisitMut;

/// A pattern this transform knows: the pattern as the spec writes it, the function that
/// checks it, and the function's doc and body (`value: &str` in, `bool` out).
struct Known {
    pattern: &'static str,
    function: &'static str,
    doc: &'static str,
    body: fn() -> TokenStream,
}

/// The calendar date of the two date patterns: `YYYY-MM-DD` at the start of `v`, a month
/// 01–12, a day within the month, 29 February in a Gregorian leap year only (the pattern's
/// years: the last two digits a multiple of 4 other than `00`, or `00` after a multiple of 4).
fn date_check() -> TokenStream {
    quote! {
        let v = value.as_bytes();
        let digits = |range: ::std::ops::Range<usize>| {
            v[range].iter().try_fold(0u32, |n, b| b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0')))
        };
        if v.len() < 10 || v[4] != b'-' || v[7] != b'-' {
            return false;
        }
        let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
            return false;
        };
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return false,
        };
        if !(1..=days).contains(&day) {
            return false;
        }
    }
}

/// The patterns of the spec, each with its plain check.
const KNOWN: [Known; 5] = [
    Known {
        pattern: r"\S",
        function: "has_non_space",
        doc: r"`\S`: some character that is neither an ECMAScript white space nor a line terminator.",
        body: || {
            quote! {
                value.chars().any(|c| {
                    !matches!(
                        c,
                        '\u{9}'..='\u{d}'
                            | ' '
                            | '\u{a0}'
                            | '\u{1680}'
                            | '\u{2000}'..='\u{200a}'
                            | '\u{2028}'
                            | '\u{2029}'
                            | '\u{202f}'
                            | '\u{205f}'
                            | '\u{3000}'
                            | '\u{feff}'
                    )
                })
            }
        },
    },
    Known {
        pattern: "^[^*]",
        function: "starts_with_other_than_star",
        doc: "`^[^*]`: a first character, and not `*`.",
        body: || quote!(value.chars().next().is_some_and(|c| c != '*')),
    },
    Known {
        pattern: "^/",
        function: "starts_with_slash",
        doc: "`^/`: starts with `/`.",
        body: || quote!(value.starts_with('/')),
    },
    Known {
        pattern: "^([0-9]{4}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)$",
        function: "is_calendar_date",
        doc: "The calendar date pattern: `YYYY-MM-DD` and nothing else, a day the Gregorian \
              calendar has.",
        body: || {
            let date = date_check();
            quote!({ #date value.len() == 10 })
        },
    },
    Known {
        pattern: "^([0-9]{4}-((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)?$",
        function: "is_report_date",
        doc: "The report date pattern: a calendar date as `is_calendar_date` checks it, alone or \
              followed by `THH:MM:SSZ` (hours 00–23, minutes and seconds 00–59).",
        body: || {
            let date = date_check();
            quote!({
                #date
                match &v[10..] {
                    [] => true,
                    [b'T', h1, h2, b':', m1, m2, b':', s1, s2, b'Z'] => {
                        let two = |a: u8, b: u8, max: u8| {
                            a.is_ascii_digit() && b.is_ascii_digit() && (a - b'0') * 10 + (b - b'0') <= max
                        };
                        two(*h1, *h2, 23) && two(*m1, *m2, 59) && two(*s1, *s2, 59)
                    }
                    _ => false,
                }
            })
        },
    },
];

/// Rewrites every regex check of a pattern in `file` to its plain function and appends the
/// `patterns` module with the functions used; returns how many checks it rewrote.
///
/// # Errors
/// [`CodegenError::Unsupported`] for a pattern not in `KNOWN`, or a `PATTERN` static
/// without the test that follows it in typify's output.
pub fn apply(file: &mut syn::File) -> Result<usize, CodegenError> {
    let mut rewriter = Rewriter {
        used: BTreeSet::new(),
        rewritten: 0,
        error: None,
    };
    rewriter.visit_file_mut(file);
    if let Some(error) = rewriter.error {
        return Err(error);
    }
    if rewriter.rewritten > 0 {
        let functions = KNOWN
            .iter()
            .filter(|known| rewriter.used.contains(known.function))
            .map(|known| {
                let name = format_ident!("{}", known.function);
                let doc = known.doc;
                let body = (known.body)();
                quote! {
                    #[doc = #doc]
                    pub(crate) fn #name(value: &str) -> bool {
                        #body
                    }
                }
            });
        file.items.push(syn::parse_quote! {
            /// The checks of the spec's string `pattern`s (the `plain_patterns` transform), each
            /// with the meaning of the ECMAScript regex the spec writes.
            // A build without an area's feature leaves that area's checks unused.
            #[allow(dead_code)]
            mod patterns {
                #(#functions)*
            }
        });
    }
    Ok(rewriter.rewritten)
}

struct Rewriter {
    used: BTreeSet<&'static str>,
    rewritten: usize,
    error: Option<CodegenError>,
}

/// The first string literal in `tokens`: the pattern of `Regex::new("..")`.
fn first_string(tokens: TokenStream) -> Option<String> {
    tokens.into_iter().find_map(|tree| match tree {
        TokenTree::Literal(literal) => syn::parse_str::<syn::LitStr>(&literal.to_string())
            .ok()
            .map(|s| s.value()),
        TokenTree::Group(group) => first_string(group.stream()),
        _ => None,
    })
}

impl Rewriter {
    fn fail(&mut self, problem: String) {
        self.error.get_or_insert(CodegenError::Unsupported {
            operation: "a string pattern".into(),
            problem,
        });
    }

    /// The known pattern of a `static PATTERN` statement, or `None` for another statement.
    fn pattern_of(&mut self, stmt: &syn::Stmt) -> Option<&'static Known> {
        let syn::Stmt::Item(syn::Item::Static(item)) = stmt else {
            return None;
        };
        if item.ident != "PATTERN" {
            return None;
        }
        let Some(pattern) = first_string(item.expr.to_token_stream()) else {
            self.fail("a PATTERN static without its pattern".into());
            return None;
        };
        let known = KNOWN.iter().find(|known| known.pattern == pattern);
        if known.is_none() {
            self.fail(format!(
                "pattern {pattern:?} has no plain check in plain_patterns::KNOWN"
            ));
        }
        known
    }
}

impl VisitMut for Rewriter {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, block);
        let mut index = 0;
        while index < block.stmts.len() {
            let Some(known) = self.pattern_of(&block.stmts[index]) else {
                index += 1;
                continue;
            };
            let test = quote!(PATTERN.find(value).is_none()).to_string();
            let follows = matches!(
                block.stmts.get(index + 1),
                Some(syn::Stmt::Expr(syn::Expr::If(check), _))
                    if check.cond.to_token_stream().to_string() == test
            );
            if !follows {
                self.fail(format!(
                    "the PATTERN of {:?} is not tested as typify does",
                    known.pattern
                ));
                return;
            }
            block.stmts.remove(index);
            if let syn::Stmt::Expr(syn::Expr::If(check), _) = &mut block.stmts[index] {
                let function = format_ident!("{}", known.function);
                *check.cond = syn::parse_quote!(!super::patterns::#function(value));
            }
            self.used.insert(known.function);
            self.rewritten += 1;
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_pattern_becomes_a_call_and_its_function_is_appended() {
        let mut file: syn::File = syn::parse_quote! {
            pub mod types {
                impl ::std::str::FromStr for Path {
                    type Err = self::error::ConversionError;
                    fn from_str(value: &str) -> ::std::result::Result<Self, self::error::ConversionError> {
                        static PATTERN: ::std::sync::LazyLock<::regress::Regex> =
                            ::std::sync::LazyLock::new(|| { ::regress::Regex::new("^/").unwrap() });
                        if PATTERN.find(value).is_none() {
                            return Err("doesn't match pattern \"^/\"".into());
                        }
                        Ok(Self(value.to_string()))
                    }
                }
            }
        };
        assert_eq!(apply(&mut file).unwrap(), 1);
        let out = file.to_token_stream().to_string();
        // The call in place of the regex, the pattern's message kept, the function appended.
        for expected in [
            "if ! super :: patterns :: starts_with_slash (value)",
            "doesn't match pattern",
            "fn starts_with_slash (value : & str) -> bool",
        ] {
            assert!(out.contains(expected), "{expected}: {out}");
        }
        // No regex left, and only the functions used.
        for unexpected in ["regress", "fn has_non_space"] {
            assert!(!out.contains(unexpected), "{unexpected}: {out}");
        }
    }

    #[test]
    fn an_unknown_pattern_fails_the_generation() {
        let mut file: syn::File = syn::parse_quote! {
            fn from_str(value: &str) -> Result<(), ()> {
                static PATTERN: ::std::sync::LazyLock<::regress::Regex> =
                    ::std::sync::LazyLock::new(|| { ::regress::Regex::new("^[a-z]+$").unwrap() });
                if PATTERN.find(value).is_none() {
                    return Err(());
                }
                Ok(())
            }
        };
        let error = apply(&mut file).unwrap_err().to_string();
        assert!(error.contains("^[a-z]+$"), "{error}");
    }

    #[test]
    fn every_known_body_parses_as_a_function() {
        for known in &KNOWN {
            let body = (known.body)();
            let parsed: Result<syn::ItemFn, _> =
                syn::parse2(quote!(fn check(value: &str) -> bool { #body }));
            assert!(parsed.is_ok(), "{}: {body}", known.function);
        }
    }
}
