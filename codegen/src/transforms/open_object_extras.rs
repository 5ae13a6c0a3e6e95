//! `open_object_extras` (code → code): the other properties of an open object are optional.
//!
//! An object schema with `additionalProperties: {}` becomes a struct whose other properties
//! are kept in `#[serde(flatten)] pub extra: Map<String, Value>`: the way to send a field the
//! reference says exists without naming it (an agent ask's "other optional fields"). typify
//! 0.6 makes that map a required field of the type's builder (its `Default` starts `extra` as
//! `Err("no value supplied for extra")`, so a builder without `.extra(..)` fails to convert)
//! and derives no `Default` for the type. This transform starts `extra` empty in every
//! builder, and derives `Default` for each such type whose builder then starts every field
//! empty (no required property, no default of the spec's).

use crate::code::{module_mut, self_name};
use std::collections::BTreeSet;

/// The field typify gives the other properties of an open object.
const EXTRA: &str = "extra";

/// Starts `extra` empty in every builder and derives `Default` where every field is then
/// optional; returns the names of the builders changed.
pub fn apply(file: &mut syn::File) -> BTreeSet<String> {
    let Some(types) = module_mut(&mut file.items, "types") else {
        return BTreeSet::new();
    };
    let mut changed = BTreeSet::new();
    let mut all_optional = BTreeSet::new();
    if let Some(builders) = module_mut(types, "builder") {
        for item in builders.iter_mut() {
            let syn::Item::Impl(block) = item else {
                continue;
            };
            let is_default = block.trait_.as_ref().is_some_and(|(_, path, _)| {
                path.segments.last().is_some_and(|s| s.ident == "Default")
            });
            let Some(name) = self_name(&block.self_ty).filter(|_| is_default) else {
                continue;
            };
            let Some(fields) = default_fields(block) else {
                continue;
            };
            let mut started_empty = false;
            for field in fields.iter_mut() {
                if member_is(&field.member, EXTRA) && is_call_of(&field.expr, "Err") {
                    field.expr = syn::parse_quote!(Ok(Default::default()));
                    started_empty = true;
                }
            }
            if started_empty {
                // A field the spec gives a default starts as `Ok(super::defaults::..)`, which
                // a derived `Default` would not give: only empty starts make the derive.
                let empty = quote::quote!(Ok(Default::default())).to_string();
                if fields.iter().all(|field| {
                    let expr = &field.expr;
                    quote::quote!(#expr).to_string() == empty
                }) {
                    all_optional.insert(name.clone());
                }
                changed.insert(name);
            }
        }
    }
    for item in types.iter_mut() {
        if let syn::Item::Struct(s) = item
            && all_optional.contains(&s.ident.to_string())
        {
            derive_default(&mut s.attrs);
        }
    }
    changed
}

/// The field initialisers of `fn default() -> Self { Self { .. } }`.
fn default_fields(
    block: &mut syn::ItemImpl,
) -> Option<&mut syn::punctuated::Punctuated<syn::FieldValue, syn::Token![,]>> {
    let function = block.items.iter_mut().find_map(|item| match item {
        syn::ImplItem::Fn(f) if f.sig.ident == "default" => Some(f),
        _ => None,
    })?;
    match function.block.stmts.last_mut()? {
        syn::Stmt::Expr(syn::Expr::Struct(body), None) => Some(&mut body.fields),
        _ => None,
    }
}

fn member_is(member: &syn::Member, name: &str) -> bool {
    matches!(member, syn::Member::Named(ident) if ident == name)
}

/// Whether `expr` is a call of the function or variant `name` (`Ok(..)`, `Err(..)`).
fn is_call_of(expr: &syn::Expr, name: &str) -> bool {
    match expr {
        syn::Expr::Call(call) => matches!(
            &*call.func,
            syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == name)
        ),
        _ => false,
    }
}

/// Adds `Default` to the type's `#[derive(..)]` unless it is there.
fn derive_default(attrs: &mut [syn::Attribute]) {
    type Paths = syn::punctuated::Punctuated<syn::Path, syn::Token![,]>;
    for attr in attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
        let Ok(mut paths) = attr.parse_args_with(Paths::parse_terminated) else {
            continue;
        };
        if paths
            .iter()
            .any(|p| p.segments.last().is_some_and(|s| s.ident == "Default"))
        {
            return;
        }
        paths.push(syn::parse_quote!(Default));
        *attr = syn::parse_quote!(#[derive(#paths)]);
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn generated() -> syn::File {
        syn::parse_quote! {
            pub mod types {
                #[derive(::serde::Deserialize, Clone, Debug)]
                pub struct Open {
                    pub name: Option<String>,
                    #[serde(flatten)]
                    pub extra: ::serde_json::Map<String, ::serde_json::Value>,
                }
                #[derive(::serde::Deserialize, Clone, Debug)]
                pub struct OpenWithRequired {
                    pub question: String,
                    #[serde(flatten)]
                    pub extra: ::serde_json::Map<String, ::serde_json::Value>,
                }
                #[derive(::serde::Deserialize, Clone, Debug)]
                pub struct Closed {
                    pub question: String,
                }
                #[derive(::serde::Deserialize, Clone, Debug)]
                pub struct OpenWithDefault {
                    pub include: bool,
                    #[serde(flatten)]
                    pub extra: ::serde_json::Map<String, ::serde_json::Value>,
                }
                pub mod builder {
                    impl ::std::default::Default for Open {
                        fn default() -> Self {
                            Self {
                                name: Ok(Default::default()),
                                extra: Err("no value supplied for extra".to_string()),
                            }
                        }
                    }
                    impl ::std::default::Default for OpenWithRequired {
                        fn default() -> Self {
                            Self {
                                question: Err("no value supplied for question".to_string()),
                                extra: Err("no value supplied for extra".to_string()),
                            }
                        }
                    }
                    impl ::std::default::Default for OpenWithDefault {
                        fn default() -> Self {
                            Self {
                                include: Ok(super::defaults::default_bool::<true>()),
                                extra: Err("no value supplied for extra".to_string()),
                            }
                        }
                    }
                    impl ::std::default::Default for Closed {
                        fn default() -> Self {
                            Self {
                                question: Err("no value supplied for question".to_string()),
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn an_open_objects_extra_starts_empty_and_a_type_without_required_fields_gets_default() {
        let mut file = generated();
        let changed = apply(&mut file);
        assert_eq!(
            changed.into_iter().collect::<Vec<_>>(),
            ["Open", "OpenWithDefault", "OpenWithRequired"]
        );
        let code = quote!(#file).to_string();
        assert!(!code.contains("no value supplied for extra"), "{code}");
        assert!(
            code.contains("no value supplied for question"),
            "a required field stays required: {code}"
        );
        assert!(
            code.contains(
                "# [derive (:: serde :: Deserialize , Clone , Debug , Default)] pub struct Open {"
            ),
            "{code}"
        );
        assert!(
            code.contains(
                "# [derive (:: serde :: Deserialize , Clone , Debug)] pub struct OpenWithRequired"
            ),
            "a type with a required field gets no Default: {code}"
        );
        assert!(
            code.contains(
                "# [derive (:: serde :: Deserialize , Clone , Debug)] pub struct OpenWithDefault"
            ),
            "a type whose field has the spec's default gets no derived Default: {code}"
        );
        assert!(
            code.contains("# [derive (:: serde :: Deserialize , Clone , Debug)] pub struct Closed"),
            "{code}"
        );
    }

    #[test]
    fn a_type_that_derives_default_already_is_left_as_it_is() {
        let mut attrs: Vec<syn::Attribute> = vec![syn::parse_quote!(#[derive(Clone, Default)])];
        derive_default(&mut attrs);
        let attr = &attrs[0];
        assert_eq!(quote!(#attr).to_string(), "# [derive (Clone , Default)]");
    }
}
