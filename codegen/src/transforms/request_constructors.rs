//! `request_constructors` (code → code): a `new` constructor for every request body type that
//! has required fields, taking exactly those fields.
//!
//! typify gives a request struct either `Default` (when every field is optional) or nothing
//! but a struct literal and a builder whose missing fields fail only at run time. A caller
//! should not have to spell every optional field to send a question, and the orphan rule keeps
//! inherent constructors out of `pubapi-sdk-ext`, so this transform adds, for every component
//! schema used as a JSON request body whose `required` list is not empty,
//!
//! ```text
//! impl AgentAskRequest {
//!     pub fn new(question: impl TryInto<AgentAskRequestQuestion, Error: Display>)
//!         -> Result<Self, error::ConversionError> { … }
//! }
//! ```
//!
//! - the parameters are the schema's `required` fields, in the order of that list;
//! - a field typify checks (a constrained newtype such as a question with `minLength`, or a
//!   date with a `pattern`: a tuple struct with a private field) is taken as
//!   `impl TryInto<T, Error: Display>`, so a `&str` or the checked value itself both work, and
//!   the constructor returns `Result<Self, error::ConversionError>` whose message starts with
//!   the field's wire name (`date_start: doesn't match pattern …`);
//! - any other field is taken as `impl Into<T>` (a `&str` for a `String`, an array for a
//!   `Vec`), and a constructor with only such fields returns `Self`;
//! - the optional fields get their serde default (`#[serde(default = "…")]`) or
//!   `Default::default()` (`None`, an empty `Vec`, `false`).
//!
//! Schemas without required fields keep typify's `Default`, which is then honest.
//!
//! [`apply`] finds each of the [`targets`] in `mod types` and inserts its `constructor` after
//! it, which is written in steps: a `parameter` per required field, the `initialisers` of every
//! field, and the `new_fn` around them.

use crate::CodegenError;
use openapiv3::{OpenAPI, ReferenceOr, SchemaKind, Type};
use quote::quote;
use std::collections::BTreeSet;

/// The component schemas used as a JSON request body, with their `required` lists, in
/// component order; schemas whose list is empty are left out.
pub fn targets(spec: &OpenAPI) -> Vec<(String, Vec<String>)> {
    let mut bodies = BTreeSet::new();
    for (_, _, op) in spec.operations() {
        let Some(ReferenceOr::Item(body)) = &op.request_body else {
            continue;
        };
        for media in body.content.values() {
            if let Some(ReferenceOr::Reference { reference }) = &media.schema
                && let Some(name) = reference.strip_prefix("#/components/schemas/")
            {
                bodies.insert(name.to_string());
            }
        }
    }
    let Some(components) = &spec.components else {
        return Vec::new();
    };
    components
        .schemas
        .iter()
        .filter(|(name, _)| bodies.contains(*name))
        .filter_map(|(name, schema)| match schema {
            ReferenceOr::Item(s) => match &s.schema_kind {
                SchemaKind::Type(Type::Object(o)) if !o.required.is_empty() => {
                    Some((name.clone(), o.required.clone()))
                }
                // An object that also says which optional fields it needs one of (`anyOf` of
                // `required` lists, which `required_alternatives` leaves out for progenitor).
                SchemaKind::Any(a)
                    if a.typ.as_deref() == Some("object") && !a.required.is_empty() =>
                {
                    Some((name.clone(), a.required.clone()))
                }
                _ => None,
            },
            ReferenceOr::Reference { .. } => None,
        })
        .collect()
}

/// Adds the constructors to `mod types`; returns how many were added.
///
/// # Errors
/// [`CodegenError::Unparseable`] when a target has no struct in `mod types`, or a required
/// field has no struct field (progenitor's output changed).
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<usize, CodegenError> {
    let targets = targets(spec);
    let Some(types) = crate::code::module_mut(&mut file.items, "types") else {
        return Ok(0);
    };
    let checked: BTreeSet<String> = types.iter().filter_map(checked_newtype).collect();
    for (name, required) in &targets {
        let position = types
            .iter()
            .position(|item| matches!(item, syn::Item::Struct(s) if s.ident == name))
            .ok_or_else(|| unparseable(format!("no struct {name} in mod types")))?;
        let syn::Item::Struct(strukt) = &types[position] else {
            unreachable!("matched a struct above");
        };
        let constructor = constructor(strukt, required, &checked)?;
        types.insert(position + 1, constructor);
    }
    Ok(targets.len())
}

fn unparseable(what: String) -> CodegenError {
    CodegenError::Unparseable(format!(
        "request_constructors: {what}: progenitor's output changed"
    ))
}

/// The name of a newtype whose value typify checks: a tuple struct with one private field.
fn checked_newtype(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Struct(s) => match &s.fields {
            syn::Fields::Unnamed(f)
                if f.unnamed.len() == 1
                    && matches!(f.unnamed[0].vis, syn::Visibility::Inherited) =>
            {
                Some(s.ident.to_string())
            }
            _ => None,
        },
        _ => None,
    }
}

/// The wire name of a field: its `#[serde(rename = "…")]`, else its identifier.
fn wire_name(field: &syn::Field) -> String {
    serde_value(field, "rename").unwrap_or_else(|| {
        field
            .ident
            .as_ref()
            .map(|i| i.to_string().trim_start_matches("r#").to_string())
            .unwrap_or_default()
    })
}

/// The string value of `key = "…"` in the field's `#[serde(…)]` attributes.
fn serde_value(field: &syn::Field, key: &str) -> Option<String> {
    let mut found = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                let value: syn::LitStr = meta.value()?.parse()?;
                found = Some(value.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

/// One required field as a parameter of `new`.
struct Parameter {
    /// How `new` takes it: `impl TryInto<T, Error: Display>` or `impl Into<T>`.
    declaration: proc_macro2::TokenStream,
    /// The statement that turns it into the field's value.
    conversion: proc_macro2::TokenStream,
    /// Whether the conversion can fail (the field's type is a checked newtype).
    fallible: bool,
}

/// The `impl Name { pub fn new(..) }` of one target: a parameter per required field, in the
/// order of `required`, and every other field at its default.
fn constructor(
    strukt: &syn::ItemStruct,
    required: &[String],
    checked: &BTreeSet<String>,
) -> Result<syn::Item, CodegenError> {
    let name = &strukt.ident;
    let syn::Fields::Named(fields) = &strukt.fields else {
        return Err(unparseable(format!(
            "{name} is not a struct with named fields"
        )));
    };
    let by_wire: Vec<(String, &syn::Field)> =
        fields.named.iter().map(|f| (wire_name(f), f)).collect();
    let mut parameters = Vec::new();
    for wire in required {
        let (_, field) = by_wire
            .iter()
            .find(|(w, _)| w == wire)
            .ok_or_else(|| unparseable(format!("{name} has no field for required {wire}")))?;
        parameters.push(parameter(field, wire, checked));
    }
    let inits = initialisers(fields, required);
    syn::parse2(new_fn(name, required, &parameters, &inits)).map_err(|e| unparseable(e.to_string()))
}

/// A required field as a parameter: a checked newtype through `TryInto` (its error prefixed
/// with the wire name), anything else through `Into`.
fn parameter(field: &syn::Field, wire: &str, checked: &BTreeSet<String>) -> Parameter {
    let ident = field.ident.as_ref().expect("named field");
    let ty = &field.ty;
    let is_checked = match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| checked.contains(&s.ident.to_string())),
        _ => false,
    };
    if is_checked {
        Parameter {
            declaration: quote!(#ident: impl ::std::convert::TryInto<#ty, Error: ::std::fmt::Display>),
            conversion: quote! {
                let #ident = #ident.try_into().map_err(|e| {
                    self::error::ConversionError::from(::std::format!("{}: {}", #wire, e))
                })?;
            },
            fallible: true,
        }
    } else {
        Parameter {
            declaration: quote!(#ident: impl ::std::convert::Into<#ty>),
            conversion: quote!(let #ident = #ident.into();),
            fallible: false,
        }
    }
}

/// The struct literal's fields: a required one by its parameter, an optional one by its serde
/// default or `Default::default()`.
fn initialisers(fields: &syn::FieldsNamed, required: &[String]) -> Vec<proc_macro2::TokenStream> {
    fields
        .named
        .iter()
        .map(|f| {
            let ident = f.ident.as_ref().expect("named field");
            if required.contains(&wire_name(f)) {
                quote!(#ident)
            } else if let Some(path) = serde_value(f, "default") {
                let path: syn::Path = syn::parse_str(&path).expect("serde default is a path");
                quote!(#ident: #path())
            } else {
                quote!(#ident: ::std::default::Default::default())
            }
        })
        .collect()
}

/// The `impl` block with `new`, returning `Result` when a parameter's conversion can fail and
/// `Self` otherwise.
fn new_fn(
    name: &syn::Ident,
    required: &[String],
    parameters: &[Parameter],
    inits: &[proc_macro2::TokenStream],
) -> proc_macro2::TokenStream {
    let params = parameters.iter().map(|p| &p.declaration);
    let conversions = parameters.iter().map(|p| &p.conversion);
    let listed = required
        .iter()
        .map(|r| format!("`{r}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if parameters.iter().any(|p| p.fallible) {
        let doc = format!(
            "A `{name}` with its required fields ({listed}) set and the optional fields left \
             unset. Fails with an error naming the field when a value breaks the spec's \
             constraint on it."
        );
        quote! {
            impl #name {
                #[doc = #doc]
                pub fn new(#(#params),*) -> ::std::result::Result<Self, self::error::ConversionError> {
                    #(#conversions)*
                    ::std::result::Result::Ok(Self { #(#inits),* })
                }
            }
        }
    } else {
        let doc = format!(
            "A `{name}` with its required fields ({listed}) set and the optional fields left \
             unset."
        );
        quote! {
            impl #name {
                #[doc = #doc]
                pub fn new(#(#params),*) -> Self {
                    #(#conversions)*
                    Self { #(#inits),* }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture::{self, assert_holds};

    const SPEC: &str = r#"
paths:
  /ask:
    post:
      operationId: ask
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/AskRequest'}
      responses:
        '200': {description: ok}
  /list:
    post:
      operationId: list
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/ListRequest'}
      responses:
        '200': {description: ok}
  /hook:
    post:
      operationId: hook
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/HookRequest'}
      responses:
        '200': {description: ok}
components:
  schemas:
    AskRequest:
      type: object
      required: [question, date_start]
      properties:
        question: {type: string, minLength: 1}
        date_start: {type: string}
        includeCitations: {type: boolean}
        tags: {type: array, items: {type: string}}
    ListRequest:
      type: object
      properties:
        page: {type: integer}
    HookRequest:
      type: object
      required: [url]
      properties:
        url: {type: string}
        suppress: {type: boolean, default: true}
    Unused:
      type: object
      required: [x]
      properties:
        x: {type: string}
"#;

    fn generated() -> String {
        let spec = fixture::spec(SPEC);
        let tokens = crate::settings::run_progenitor(&spec).expect("progenitor runs");
        let mut file: syn::File = syn::parse2(tokens).expect("parses");
        assert_eq!(apply(&mut file, &spec).expect("applies"), 2);
        prettyplease::unparse(&file)
    }

    #[test]
    fn an_object_with_required_alternatives_keeps_its_required_list() {
        let spec = fixture::spec(&SPEC.replace(
            "      required: [url]\n",
            "      required: [url]\n      anyOf:\n        - required: [suppress]\n        - required: [url]\n",
        ));
        assert!(matches!(
            spec.components.as_ref().unwrap().schemas["HookRequest"]
                .as_item()
                .unwrap()
                .schema_kind,
            SchemaKind::Any(_)
        ));
        assert!(targets(&spec).contains(&("HookRequest".to_string(), vec!["url".to_string()])));
    }

    #[test]
    fn targets_are_request_bodies_with_required_fields_in_list_order() {
        let spec = fixture::spec(SPEC);
        assert_eq!(
            targets(&spec),
            vec![
                (
                    "AskRequest".to_string(),
                    vec!["question".to_string(), "date_start".to_string()]
                ),
                ("HookRequest".to_string(), vec!["url".to_string()]),
            ]
        );
    }

    /// The body of the `impl` the transform wrote for `ty` in `code`, without whitespace.
    fn impl_of(code: &str, ty: &str) -> String {
        let body = code
            .split(&format!("impl {ty} {{"))
            .nth(1)
            .unwrap_or_else(|| panic!("{ty} gets an impl"));
        body[..body.find("\n    }\n").expect("impl ends")]
            .split_whitespace()
            .collect()
    }

    #[test]
    fn checked_field_makes_the_constructor_fallible_and_names_the_field() {
        let new = impl_of(&generated(), "AskRequest");
        assert_holds(
            &new,
            &[
                "pubfnnew(",
                "question:impl::std::convert::TryInto<AskRequestQuestion,Error:::std::fmt::Display,>",
                "date_start:impl::std::convert::Into<::std::string::String>",
                "\"question\"",
                "->::std::result::Result<Self,self::error::ConversionError>",
                "include_citations:::std::default::Default::default()",
            ],
        );
    }

    #[test]
    fn plain_fields_give_an_infallible_constructor_using_serde_defaults() {
        let new = impl_of(&generated(), "HookRequest");
        assert_holds(
            &new,
            &[
                "pubfnnew(url:impl::std::convert::Into<::std::string::String>)->Self",
                "suppress:defaults::",
            ],
        );
    }

    #[test]
    fn schemas_without_required_fields_or_not_sent_get_none() {
        let code = generated();
        assert!(!code.contains("A `ListRequest` with"));
        assert!(!code.contains("A `Unused` with"));
    }
}
