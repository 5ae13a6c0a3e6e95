//! `open_enums` (code → code): gives every enum that [`open_response_enums`](super::open_response_enums)
//! opened its values back, as an open Rust enum.
//!
//! The spec transform has to reduce a server-sent string enum to a plain string so typify does
//! not emit a closed enum that refuses a value the platform adds later. typify then emits a
//! newtype `struct X(pub String)`. This transform replaces that newtype with
//!
//! ```text
//! #[non_exhaustive]
//! pub enum X { Known1, Known2, …, Unknown(String) }
//! ```
//!
//! with serde going through `String` (`from`/`into`), so an unknown value is kept verbatim and
//! serialises back byte for byte; `as_str()`, `is_known()`, `FromStr<Err = Infallible>`,
//! `From<String>`/`From<&str>`, `Display`, `AsRef<str>`; and equality, ordering and hashing by
//! the text, so `Unknown("enabled".into())` equals `Enabled`.
//!
//! Variant names are the values in UpperCamelCase (`fs:add_file` → `FsAddFile`,
//! `ERR_403_DEVELOPER_OVER_QPS` → `Err403DeveloperOverQps`), with `*` read as `any`
//! (`fs:*` → `FsAny`). Two values with one name, a value named `Unknown` or a value that gives
//! no identifier are refused.
//!
//! [`apply`] finds each opened newtype and swaps in `open_enum`'s items, which are written in
//! four steps: the `variants` named from the values, the enum's `declaration`, its
//! `conversions` to and from the text, and its `identity_by_text`.

use super::Removal;
use crate::CodegenError;
use openapiv3::{OpenAPI, ReferenceOr, SchemaKind, Type};
use quote::{format_ident, quote};

/// The opened component schemas of `original` and their values, in spec order: every
/// component whose top-level string enum `open_response_enums` removed.
pub fn opened(original: &OpenAPI, removals: &[Removal]) -> Vec<(String, Vec<String>)> {
    let Some(components) = &original.components else {
        return Vec::new();
    };
    components
        .schemas
        .iter()
        .filter(|(name, _)| {
            removals
                .iter()
                .any(|r| r.transform == "open_response_enums" && &r.subject == *name)
        })
        .filter_map(|(name, schema)| match schema {
            ReferenceOr::Item(s) => match &s.schema_kind {
                SchemaKind::Type(Type::String(t)) if !t.enumeration.is_empty() => Some((
                    name.clone(),
                    t.enumeration.iter().flatten().cloned().collect(),
                )),
                _ => None,
            },
            ReferenceOr::Reference { .. } => None,
        })
        .collect()
}

/// The variant name of an enum value.
///
/// # Errors
/// When the value gives no Rust identifier or is named like the `Unknown` case.
pub fn variant_name(value: &str) -> Result<String, String> {
    let spelled = value.replace('*', "_any_");
    let name = heck::ToUpperCamelCase::to_upper_camel_case(spelled.as_str());
    match name.chars().next() {
        None => Err(format!("value {value:?} gives no variant name")),
        Some(c) if !c.is_ascii_alphabetic() => {
            Err(format!("value {value:?} gives {name}, not an identifier"))
        }
        _ if name == "Unknown" => Err(format!(
            "value {value:?} is named like the Unknown case of an open enum"
        )),
        _ if !name.chars().all(|c| c.is_ascii_alphanumeric()) => {
            Err(format!("value {value:?} gives {name}, not an identifier"))
        }
        _ => Ok(name),
    }
}

/// Replaces the newtype of every opened enum in `mod types` with its open enum.
///
/// # Errors
/// [`CodegenError::Unsupported`] for values no variant can be named after (or two values with
/// one name); [`CodegenError::Unparseable`] when progenitor's output has no newtype for an
/// opened schema.
pub fn apply(
    file: &mut syn::File,
    original: &OpenAPI,
    removals: &[Removal],
) -> Result<usize, CodegenError> {
    let opened = opened(original, removals);
    let Some(types) = crate::code::module_mut(&mut file.items, "types") else {
        return Ok(0);
    };
    for (name, values) in &opened {
        let position = types
            .iter()
            .position(|item| matches!(item, syn::Item::Struct(s) if s.ident == name))
            .ok_or_else(|| {
                CodegenError::Unparseable(format!(
                    "open_enums: no newtype {name} in mod types: progenitor's output changed"
                ))
            })?;
        let syn::Item::Struct(newtype) = types.remove(position) else {
            unreachable!("matched a struct above");
        };
        let docs: Vec<syn::Attribute> = newtype
            .attrs
            .into_iter()
            .filter(|a| a.path().is_ident("doc"))
            .collect();
        types.retain(|item| !is_newtype_impl(item, name));
        let enum_items = open_enum(name, values, &docs)?;
        types.splice(position..position, enum_items);
    }
    Ok(opened.len())
}

fn last_ident(ty: &syn::Type) -> Option<&syn::Ident> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// `impl … for Name` and `impl From<Name> for String`: the newtype's own impls.
fn is_newtype_impl(item: &syn::Item, name: &str) -> bool {
    let syn::Item::Impl(imp) = item else {
        return false;
    };
    let self_name = last_ident(&imp.self_ty);
    if self_name.is_some_and(|i| i == name) {
        return true;
    }
    let Some((_, trait_path, _)) = &imp.trait_ else {
        return false;
    };
    let Some(last) = trait_path.segments.last() else {
        return false;
    };
    let from_name = last.ident == "From"
        && matches!(&last.arguments, syn::PathArguments::AngleBracketed(args)
            if args.args.iter().any(|a| matches!(a, syn::GenericArgument::Type(t) if last_ident(t).is_some_and(|i| i == name))));
    from_name && self_name.is_some_and(|i| i == "String")
}

/// The open enum that replaces the newtype `name`: its declaration, its conversions to and
/// from the text, and its identity by the text.
fn open_enum(
    name: &str,
    values: &[String],
    docs: &[syn::Attribute],
) -> Result<Vec<syn::Item>, CodegenError> {
    let variants = variants(name, values)?;
    let ty = format_ident!("{name}");
    let declaration = declaration(&ty, &variants, docs);
    let conversions = conversions(&ty, &variants);
    let identity = identity_by_text(&ty);
    let tokens = quote! {
        #declaration
        #conversions
        #identity
    };
    let file: syn::File =
        syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))?;
    Ok(file.items)
}

/// Each value with its variant, in spec order; refused when two values give one variant or a
/// value gives none.
fn variants<'a>(
    name: &str,
    values: &'a [String],
) -> Result<Vec<(syn::Ident, &'a str)>, CodegenError> {
    let refused = |problem: String| CodegenError::Unsupported {
        operation: format!("schema {name}"),
        problem,
    };
    let mut variants: Vec<(syn::Ident, &str)> = Vec::new();
    for value in values {
        let v = variant_name(value).map_err(refused)?;
        if let Some((_, other)) = variants.iter().find(|(i, _)| i == v.as_str()) {
            return Err(refused(format!(
                "values {other:?} and {value:?} both give the variant {v}"
            )));
        }
        variants.push((format_ident!("{v}"), value));
    }
    Ok(variants)
}

/// The enum itself (the newtype's docs, one variant per value and `Unknown`), with `KNOWN`,
/// `as_str` and `is_known`.
fn declaration(
    ty: &syn::Ident,
    variants: &[(syn::Ident, &str)],
    docs: &[syn::Attribute],
) -> proc_macro2::TokenStream {
    let decls = variants.iter().map(|(v, value)| {
        let doc = format!("`{value}`");
        quote! { #[doc = #doc] #v, }
    });
    let to_str = variants
        .iter()
        .map(|(v, value)| quote! { Self::#v => #value, });
    let known = variants.iter().map(|(_, value)| *value);
    quote! {
        #(#docs)*
        ///
        /// An open enum: a value this version does not know is kept verbatim in `Unknown`
        /// and serialised back as it came.
        #[derive(::serde::Deserialize, ::serde::Serialize, Clone, Debug)]
        #[serde(from = "::std::string::String", into = "::std::string::String")]
        #[non_exhaustive]
        pub enum #ty {
            #(#decls)*
            /// A value the spec does not list, kept verbatim.
            Unknown(::std::string::String),
        }
        impl #ty {
            /// The values the spec lists, in spec order.
            pub const KNOWN: &'static [&'static str] = &[#(#known),*];
            /// The value as sent on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    #(#to_str)*
                    Self::Unknown(value) => value.as_str(),
                }
            }
            /// Whether the value is one the spec lists.
            pub fn is_known(&self) -> bool {
                Self::KNOWN.contains(&self.as_str())
            }
        }
    }
}

/// The conversions from and to the text: `From<String>` (what serde reads through),
/// `From<&str>`, `From<X> for String` (what serde writes through), `FromStr`, `Display` and
/// `AsRef<str>`.
fn conversions(ty: &syn::Ident, variants: &[(syn::Ident, &str)]) -> proc_macro2::TokenStream {
    let from_str = variants
        .iter()
        .map(|(v, value)| quote! { #value => Self::#v, });
    quote! {
        impl ::std::convert::From<::std::string::String> for #ty {
            fn from(value: ::std::string::String) -> Self {
                match value.as_str() {
                    #(#from_str)*
                    _ => Self::Unknown(value),
                }
            }
        }
        impl ::std::convert::From<&str> for #ty {
            fn from(value: &str) -> Self {
                Self::from(value.to_string())
            }
        }
        impl ::std::convert::From<#ty> for ::std::string::String {
            fn from(value: #ty) -> Self {
                match value {
                    #ty::Unknown(value) => value,
                    known => known.as_str().to_string(),
                }
            }
        }
        impl ::std::str::FromStr for #ty {
            type Err = ::std::convert::Infallible;
            fn from_str(value: &str) -> ::std::result::Result<Self, Self::Err> {
                Ok(Self::from(value))
            }
        }
        impl ::std::fmt::Display for #ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl ::std::convert::AsRef<str> for #ty {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
    }
}

/// Equality (with `str` and `&str` too), hashing and ordering by the text, so
/// `Unknown("enabled".into())` equals `Enabled`.
fn identity_by_text(ty: &syn::Ident) -> proc_macro2::TokenStream {
    quote! {
        impl ::std::cmp::PartialEq for #ty {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }
        impl ::std::cmp::Eq for #ty {}
        impl ::std::cmp::PartialEq<str> for #ty {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl ::std::cmp::PartialEq<&str> for #ty {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
        impl ::std::hash::Hash for #ty {
            fn hash<H: ::std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state);
            }
        }
        impl ::std::cmp::PartialOrd for #ty {
            fn partial_cmp(&self, other: &Self) -> ::std::option::Option<::std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl ::std::cmp::Ord for #ty {
            fn cmp(&self, other: &Self) -> ::std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{assert_holds, spec};
    use quote::ToTokens;

    const SPEC: &str = "paths: {}
components:
  schemas:
    WebhookState: {type: string, description: Webhook status., enum: [enabled, disabled]}
    Kind: {type: string, enum: ['fs:add_file', 'fs:*']}
";

    /// What typify emits for an opened enum (abridged).
    fn newtype_file(name: &str) -> syn::File {
        let ty = format_ident!("{name}");
        syn::parse2(quote! {
            pub mod types {
                ///Webhook status.
                #[derive(::serde::Deserialize, ::serde::Serialize, Clone, Debug)]
                #[serde(transparent)]
                pub struct #ty(pub ::std::string::String);
                impl ::std::ops::Deref for #ty { type Target = ::std::string::String; fn deref(&self) -> &::std::string::String { &self.0 } }
                impl ::std::convert::From<#ty> for ::std::string::String { fn from(value: #ty) -> Self { value.0 } }
                impl ::std::convert::From<#ty> for Other { fn from(value: #ty) -> Self { todo!() } }
                pub struct Other;
            }
        })
        .unwrap()
    }

    fn removal(subject: &str) -> Removal {
        Removal {
            transform: "open_response_enums",
            subject: subject.into(),
            what: "enum [..]".into(),
        }
    }

    #[test]
    fn newtype_becomes_an_open_enum_with_an_unknown_case() {
        let original = spec(SPEC);
        let mut file = newtype_file("WebhookState");
        let n = apply(&mut file, &original, &[removal("WebhookState")]).unwrap();
        assert_eq!(n, 1);
        let out = file.into_token_stream().to_string();
        assert!(!out.contains("struct WebhookState"), "{out}");
        assert!(!out.contains("Deref for WebhookState"), "{out}");
        assert_holds(
            &out,
            &[
                "pub enum WebhookState { # [doc = \"`enabled`\"] Enabled",
                "Unknown (:: std :: string :: String)",
                "# [serde (from = \"::std::string::String\" , into = \"::std::string::String\")]",
                "Webhook status.",
                // impls of other types that mention it are kept
                "for Other",
            ],
        );
    }

    #[test]
    fn wildcards_are_named_any() {
        assert_eq!(variant_name("fs:add_file").unwrap(), "FsAddFile");
        assert_eq!(variant_name("fs:*").unwrap(), "FsAny");
        assert_eq!(
            variant_name("ERR_403_DEVELOPER_OVER_QPS").unwrap(),
            "Err403DeveloperOverQps"
        );
        assert_eq!(variant_name("WebUI").unwrap(), "WebUi");
    }

    #[test]
    fn values_that_name_no_variant_are_refused() {
        assert!(variant_name("unknown").is_err());
        assert!(variant_name("403").is_err());
        assert!(variant_name("").is_err());
    }

    #[test]
    fn two_values_with_one_variant_are_refused() {
        let original = spec(
            "paths: {}\ncomponents:\n  schemas:\n    WebhookState: {type: string, enum: [on-line, on_line]}\n",
        );
        let mut file = newtype_file("WebhookState");
        let err = apply(&mut file, &original, &[removal("WebhookState")]).unwrap_err();
        assert!(
            matches!(&err, CodegenError::Unsupported { problem, .. } if problem.contains("both give the variant OnLine")),
            "{err:?}"
        );
    }

    #[test]
    fn only_opened_components_are_listed() {
        let original = spec(SPEC);
        let listed = opened(&original, &[removal("Kind")]);
        assert_eq!(
            listed,
            vec![(
                "Kind".to_string(),
                vec!["fs:add_file".to_string(), "fs:*".to_string()]
            )]
        );
    }
}
