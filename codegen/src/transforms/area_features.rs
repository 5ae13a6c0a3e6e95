//! `area_features` (code → code): the generated code of an area of the API compiles only with
//! the area's cargo feature of `pubapi-sdk` (`ai`, `audit`, `events`, `webhooks`), so a service
//! that uses one area does not pay for the others' code. Progenitor has no such option.
//!
//! Each tag of the spec belongs to one feature ([`FEATURES`]), or to none ([`ALWAYS`]: the
//! identity behind the token, which every client needs). A tag in neither list is refused, so a
//! new area cannot slip in ungated by accident. Gated with `#[cfg(feature = "…")]`:
//! - the tag's extension trait (`ClientAuditExt`), its impl for `Client` and its `prelude`
//!   re-export;
//! - the request builders of the tag's operations (`builder::CreateLoginsAudit`);
//! - every item of the `types` module (with its builder, its impls, the serde defaults it
//!   names) that only these reach: a type several areas reach is gated with
//!   `any(feature = "…", …)`, and one reached by an ungated area or by no operation at all
//!   stays ungated. "Reach" is found twice and the union kept: in the generated code (an item
//!   reaches every `types` item whose name it mentions, in code or in a serde attribute's
//!   string), and in the original spec (an operation reaches every component schema its
//!   `$ref`s lead to, which also finds the payload shapes an `anyOf` no longer names after
//!   `free_form_any_of`). A name seen where it is not a use only widens a gate, which is safe.
//!
//! The error bodies (the schemas marked with
//! [`x-pubapi-error-format`](super::operation_facts::ERROR_FORMAT)) stay ungated too: every
//! answer of every area is judged by the same code in `pubapi-sdk-ext`, which decodes the three
//! formats by status.
//!
//! The cross-cutting tables ([`operation_table`](super::operation_table) and
//! [`limits`](super::limits)) stay ungated: the request path of `pubapi-sdk-ext` reads them
//! for every area, and they are constants, cheap to compile.
//!
//! [`apply`] goes in steps: the gate of each tag (`tag_gates`) and of each builder its trait
//! returns (`builder_gates`); `gate_areas` gates the traits, impls, builders and re-exports and
//! collects the names the builders mention; `spec_roots` adds what the spec says an area reaches
//! and the error bodies; `gate_types` then gates the `types` items by what reaches them.

use crate::CodegenError;
use crate::walk::{operations, schema_ref_name};
use openapiv3::OpenAPI;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{BTreeMap, BTreeSet};

/// The cargo features of `pubapi-sdk`'s areas and the spec tags each one holds.
pub const FEATURES: [(&str, &[&str]); 4] = [
    (
        "ai",
        &[
            "agents",
            "document-ai",
            "assistant",
            "copilot",
            "knowledge-bases",
            "hybrid-search",
        ],
    ),
    ("audit", &["audit"]),
    ("events", &["events"]),
    ("webhooks", &["webhooks"]),
];

/// The tags whose code is always compiled.
pub const ALWAYS: [&str; 1] = ["identity"];

/// Which builds an item is needed in: every build, or those with one of some features.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Gate {
    /// Reached by no area (yet): stays ungated.
    #[default]
    Unreached,
    /// Needed in every build.
    Always,
    /// Needed with any of these features.
    Features(BTreeSet<&'static str>),
}

impl Gate {
    /// Adds `other`; returns whether that widened the gate.
    fn widen(&mut self, other: &Gate) -> bool {
        let before = self.clone();
        *self = match (std::mem::take(self), other) {
            (Gate::Always, _) | (_, Gate::Always) => Gate::Always,
            (Gate::Unreached, other) => other.clone(),
            (Gate::Features(mut mine), Gate::Features(theirs)) => {
                mine.extend(theirs.iter().copied());
                Gate::Features(mine)
            }
            (mine, Gate::Unreached) => mine,
        };
        *self != before
    }

    /// The `#[cfg(..)]` attribute, or `None` for an ungated item.
    fn attribute(&self) -> Option<syn::Attribute> {
        let Gate::Features(features) = self else {
            return None;
        };
        let features: Vec<&str> = features.iter().copied().collect();
        Some(match features.as_slice() {
            [one] => syn::parse_quote!(#[cfg(feature = #one)]),
            many => syn::parse_quote!(#[cfg(any(#(feature = #many),*))]),
        })
    }
}

/// The feature of a tag: `Ok(None)` for a tag in [`ALWAYS`].
///
/// # Errors
/// [`CodegenError::Unsupported`] for a tag in neither list.
pub fn feature_of(tag: &str) -> Result<Option<&'static str>, CodegenError> {
    if ALWAYS.contains(&tag) {
        return Ok(None);
    }
    FEATURES
        .iter()
        .find(|(_, tags)| tags.contains(&tag))
        .map(|(feature, _)| Some(*feature))
        .ok_or_else(|| CodegenError::Unsupported {
            operation: format!("tag {tag}"),
            problem: "belongs to no feature of area_features::FEATURES (nor ALWAYS)".into(),
        })
}

fn gate_of(tag: &str) -> Result<Gate, CodegenError> {
    Ok(match feature_of(tag)? {
        None => Gate::Always,
        Some(feature) => Gate::Features(BTreeSet::from([feature])),
    })
}

/// What [`apply`] gated, for tests and the report.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gated {
    /// Items of the generated file (and its modules) that got a `#[cfg]`.
    pub items: usize,
    /// The `types` items that no operation reaches, left ungated.
    pub unreached: BTreeSet<String>,
}

/// The gate of each item: by the name of the extension trait, the builder or the `types` item.
type Gates = BTreeMap<String, Gate>;

/// Names a gate reaches: where the search of the `types` items starts.
type Roots = Vec<(Gate, BTreeSet<String>)>;

/// Gates the generated code of each area behind its feature.
///
/// # Errors
/// A tag of the spec that belongs to no feature ([`feature_of`]).
pub fn apply(file: &mut syn::File, spec: &OpenAPI) -> Result<Gated, CodegenError> {
    let tag_gates = tag_gates(spec)?;
    let builder_gates = builder_gates(file, &tag_gates);
    let mut gated = Gated::default();
    let mut roots = gate_areas(file, &tag_gates, &builder_gates, &mut gated);
    roots.extend(spec_roots(spec)?);
    let Some(types) = crate::code::module_mut(&mut file.items, "types") else {
        return Ok(gated);
    };
    gate_types(types, &roots, &mut gated);
    Ok(gated)
}

/// The gate of each tag, by the name of its extension trait (`ClientAuditExt`).
fn tag_gates(spec: &OpenAPI) -> Result<Gates, CodegenError> {
    let mut tag_gates = Gates::new();
    for tag in &spec.tags {
        let trait_name = format!(
            "Client{}Ext",
            heck::ToUpperCamelCase::to_upper_camel_case(tag.name.as_str())
        );
        tag_gates.insert(trait_name, gate_of(&tag.name)?);
    }
    Ok(tag_gates)
}

/// The gate of each builder: the builders each extension trait returns belong to its tag.
fn builder_gates(file: &syn::File, tag_gates: &Gates) -> Gates {
    let mut builder_gates = Gates::new();
    for item in &file.items {
        if let syn::Item::Trait(t) = item
            && let Some(gate) = tag_gates.get(&t.ident.to_string())
        {
            for name in names_in(&t.to_token_stream()) {
                builder_gates.insert(name, gate.clone());
            }
        }
    }
    builder_gates
}

/// Gates each area's extension trait, its impl, its builders and its `prelude` re-export;
/// returns the names each gated builder mentions, the first roots of the `types` search.
fn gate_areas(
    file: &mut syn::File,
    tag_gates: &Gates,
    builder_gates: &Gates,
    gated: &mut Gated,
) -> Roots {
    let mut roots = Roots::new();
    for item in &mut file.items {
        match item {
            syn::Item::Trait(t) => {
                if let Some(gate) = tag_gates.get(&t.ident.to_string()) {
                    gated.items += gate_item(&mut t.attrs, gate);
                }
            }
            syn::Item::Impl(block) => {
                let Some((_, path, _)) = &block.trait_ else {
                    continue;
                };
                let name = path.segments.last().map(|s| s.ident.to_string());
                if let Some(gate) = name.and_then(|n| tag_gates.get(&n)) {
                    gated.items += gate_item(&mut block.attrs, gate);
                }
            }
            syn::Item::Mod(m) if m.ident == "builder" => {
                for item in m.content.iter_mut().flat_map(|(_, items)| items) {
                    let Some(name) = item_name(item, builder_gates) else {
                        continue;
                    };
                    let gate = builder_gates[&name].clone();
                    roots.push((gate.clone(), names_in(&item.to_token_stream())));
                    gated.items += gate_item(attrs_mut(item), &gate);
                }
            }
            syn::Item::Mod(m) if m.ident == "prelude" => {
                for item in m.content.iter_mut().flat_map(|(_, items)| items) {
                    if let syn::Item::Use(u) = item {
                        let names = names_in(&u.tree.to_token_stream());
                        if let Some(gate) = names.iter().find_map(|n| tag_gates.get(n)) {
                            gated.items += gate_item(&mut u.attrs, gate);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    roots
}

/// The roots the spec adds: each component schema an area's operations reach through `$ref`s,
/// and the error bodies, needed in every build.
fn spec_roots(spec: &OpenAPI) -> Result<Roots, CodegenError> {
    let mut roots = Roots::new();
    for (component, gate) in spec_reach(spec)? {
        roots.push((gate, BTreeSet::from([component])));
    }
    for (name, schema) in spec.components.iter().flat_map(|c| &c.schemas) {
        let extensions = match schema {
            openapiv3::ReferenceOr::Item(schema) => &schema.schema_data.extensions,
            openapiv3::ReferenceOr::Reference { .. } => continue,
        };
        if extensions.contains_key(super::operation_facts::ERROR_FORMAT) {
            let rust = heck::ToUpperCamelCase::to_upper_camel_case(name.as_str());
            roots.push((Gate::Always, BTreeSet::from([rust])));
        }
    }
    Ok(roots)
}

/// Gates the items of the `types` module (and of its `builder`, `defaults` and `error`
/// modules) by the areas that reach them from `roots`.
fn gate_types(types: &mut [syn::Item], roots: &Roots, gated: &mut Gated) {
    // Every named item of `types` and its modules; an item and its builder share a name.
    let mut names: BTreeSet<String> = BTreeSet::new();
    collect_names(types, &mut names);
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    collect_uses(types, &names, &mut uses);

    let mut gates = Gates::new();
    for (gate, mentioned) in roots {
        let mut todo: Vec<&String> = mentioned.iter().filter(|n| names.contains(*n)).collect();
        while let Some(name) = todo.pop() {
            if gates.entry(name.clone()).or_default().widen(gate) {
                todo.extend(uses.get(name).into_iter().flatten());
            }
        }
    }
    gate_named(types, &names, &gates, gated);
}

fn collect_names(items: &[syn::Item], names: &mut BTreeSet<String>) {
    for item in items {
        match item {
            syn::Item::Struct(s) => drop(names.insert(s.ident.to_string())),
            syn::Item::Enum(e) => drop(names.insert(e.ident.to_string())),
            syn::Item::Type(t) => drop(names.insert(t.ident.to_string())),
            syn::Item::Fn(f) => drop(names.insert(f.sig.ident.to_string())),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect_names(inner, names);
                }
            }
            _ => {}
        }
    }
}

fn collect_uses(
    items: &[syn::Item],
    names: &BTreeSet<String>,
    uses: &mut BTreeMap<String, BTreeSet<String>>,
) {
    for item in items {
        if let syn::Item::Mod(m) = item {
            if let Some((_, inner)) = &m.content {
                collect_uses(inner, names, uses);
            }
        } else if let Some(name) = item_name(item, names) {
            let mentioned = names_in(&item.to_token_stream());
            uses.entry(name)
                .or_default()
                .extend(mentioned.into_iter().filter(|n| names.contains(n)));
        }
    }
}

fn gate_named(items: &mut [syn::Item], names: &BTreeSet<String>, gates: &Gates, gated: &mut Gated) {
    for item in items {
        if let syn::Item::Mod(m) = item {
            if let Some((_, inner)) = m.content.as_mut() {
                gate_named(inner, names, gates, gated);
            }
            continue;
        }
        let Some(name) = item_name(item, names) else {
            continue;
        };
        match gates.get(&name) {
            Some(gate) => gated.items += gate_item(attrs_mut(item), gate),
            None => drop(gated.unreached.insert(name)),
        }
    }
}

/// The name an item is filed under among `known`: a type's or function's own name, an impl's
/// self type, or (for `impl From<Mine> for String`) the first known name in its trait.
fn item_name<V>(item: &syn::Item, known: &impl Known<V>) -> Option<String> {
    let name = match item {
        syn::Item::Struct(s) => s.ident.to_string(),
        syn::Item::Enum(e) => e.ident.to_string(),
        syn::Item::Type(t) => t.ident.to_string(),
        syn::Item::Fn(f) => f.sig.ident.to_string(),
        syn::Item::Impl(block) => {
            let own = crate::code::self_name(&block.self_ty).filter(|n| known.knows(n));
            return own.or_else(|| {
                let (_, path, _) = block.trait_.as_ref()?;
                names_in(&path.to_token_stream())
                    .into_iter()
                    .find(|n| known.knows(n))
            });
        }
        _ => return None,
    };
    known.knows(&name).then_some(name)
}

/// A set of names (or a map keyed by them).
trait Known<V> {
    fn knows(&self, name: &str) -> bool;
}

impl Known<()> for BTreeSet<String> {
    fn knows(&self, name: &str) -> bool {
        self.contains(name)
    }
}

impl<V> Known<V> for BTreeMap<String, V> {
    fn knows(&self, name: &str) -> bool {
        self.contains_key(name)
    }
}

fn attrs_mut(item: &mut syn::Item) -> &mut Vec<syn::Attribute> {
    match item {
        syn::Item::Struct(s) => &mut s.attrs,
        syn::Item::Enum(e) => &mut e.attrs,
        syn::Item::Type(t) => &mut t.attrs,
        syn::Item::Fn(f) => &mut f.attrs,
        syn::Item::Impl(i) => &mut i.attrs,
        syn::Item::Trait(t) => &mut t.attrs,
        syn::Item::Use(u) => &mut u.attrs,
        syn::Item::Mod(m) => &mut m.attrs,
        syn::Item::Const(c) => &mut c.attrs,
        other => panic!(
            "area_features gates no {:?}",
            other.to_token_stream().to_string()
        ),
    }
}

/// Puts the gate's `#[cfg]` on an item; returns 1 if it did.
fn gate_item(attrs: &mut Vec<syn::Attribute>, gate: &Gate) -> usize {
    match gate.attribute() {
        Some(cfg) => {
            attrs.insert(0, cfg);
            1
        }
        None => 0,
    }
}

/// Every identifier in `tokens`, and every word of its string literals (serde's
/// `default = "defaults::default_bool::<true>"` names a function); doc comments are skipped.
fn names_in(tokens: &TokenStream) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    walk_tokens(tokens.clone(), &mut out);
    out
}

fn walk_tokens(tokens: TokenStream, out: &mut BTreeSet<String>) {
    let mut after_pound = false;
    for tree in tokens {
        match &tree {
            TokenTree::Ident(ident) => drop(out.insert(ident.to_string())),
            TokenTree::Literal(lit) => {
                if let Ok(syn::Lit::Str(s)) = syn::parse2::<syn::Lit>(lit.to_token_stream()) {
                    let value = s.value();
                    let words = value.split(|c: char| !(c.is_alphanumeric() || c == '_'));
                    out.extend(words.filter(|w| !w.is_empty()).map(str::to_string));
                }
            }
            TokenTree::Group(group) => {
                let is_doc = after_pound
                    && matches!(group.stream().into_iter().next(),
                        Some(TokenTree::Ident(i)) if i == "doc");
                if !is_doc {
                    walk_tokens(group.stream(), out);
                }
            }
            TokenTree::Punct(_) => {}
        }
        after_pound = matches!(&tree, TokenTree::Punct(p) if p.as_char() == '#');
    }
}

/// The component schemas each area's operations reach in the spec (through `$ref`s, nested
/// component to component), as Rust type names with the union of their gates.
fn spec_reach(spec: &OpenAPI) -> Result<Gates, CodegenError> {
    let components: BTreeMap<&str, serde_json::Value> = spec
        .components
        .iter()
        .flat_map(|c| &c.schemas)
        .map(|(name, schema)| Ok((name.as_str(), to_json(schema)?)))
        .collect::<Result<_, CodegenError>>()?;
    let mut out = Gates::new();
    for op in operations(spec) {
        let [tag] = op.operation.tags.as_slice() else {
            continue;
        };
        let gate = gate_of(tag)?;
        let mut todo: Vec<String> = Vec::new();
        refs_in(&to_json(op.operation)?, &mut todo);
        // Responses and parameters may be components too: read those the operation names.
        let mut seen: BTreeSet<String> = BTreeSet::new();
        while let Some(reference) = todo.pop() {
            if !seen.insert(reference.clone()) {
                continue;
            }
            if let Some(name) = schema_ref_name(&reference) {
                let rust = heck::ToUpperCamelCase::to_upper_camel_case(name);
                out.entry(rust).or_default().widen(&gate);
                if let Some(schema) = components.get(name) {
                    refs_in(schema, &mut todo);
                }
            } else if let Some(json) = component_json(spec, &reference)? {
                refs_in(&json, &mut todo);
            }
        }
    }
    Ok(out)
}

fn to_json(value: &impl serde::Serialize) -> Result<serde_json::Value, CodegenError> {
    serde_json::to_value(value).map_err(|e| CodegenError::Unparseable(e.to_string()))
}

/// A `#/components/{responses,parameters,requestBodies}/Name` as JSON.
fn component_json(
    spec: &OpenAPI,
    reference: &str,
) -> Result<Option<serde_json::Value>, CodegenError> {
    let Some(components) = &spec.components else {
        return Ok(None);
    };
    let mut parts = reference.trim_start_matches("#/components/").splitn(2, '/');
    let (Some(kind), Some(name)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    Ok(match kind {
        "responses" => components.responses.get(name).map(to_json).transpose()?,
        "parameters" => components.parameters.get(name).map(to_json).transpose()?,
        "requestBodies" => components
            .request_bodies
            .get(name)
            .map(to_json)
            .transpose()?,
        "headers" => components.headers.get(name).map(to_json).transpose()?,
        _ => None,
    })
}

fn refs_in(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", serde_json::Value::String(r)) => out.push(r.clone()),
                    _ => refs_in(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::fixture;

    #[test]
    fn every_tag_belongs_to_one_feature_or_none() {
        assert_eq!(feature_of("knowledge-bases").unwrap(), Some("ai"));
        assert_eq!(feature_of("audit").unwrap(), Some("audit"));
        assert_eq!(feature_of("identity").unwrap(), None);
        let err = feature_of("billing").unwrap_err().to_string();
        assert!(err.contains("tag billing"), "{err}");
    }

    #[test]
    fn gates_union_into_any_and_always_wins() {
        let ai = gate_of("agents").unwrap();
        let mut gate = Gate::default();
        assert!(gate.widen(&ai));
        assert!(!gate.widen(&ai));
        assert!(gate.widen(&gate_of("events").unwrap()));
        let cfg = gate.attribute().unwrap().to_token_stream().to_string();
        assert_eq!(
            cfg,
            "# [cfg (any (feature = \"ai\" , feature = \"events\"))]"
        );
        assert!(gate.widen(&Gate::Always));
        assert!(gate.attribute().is_none());
    }

    #[test]
    fn names_skip_docs_and_read_serde_strings() {
        let item: syn::Item = syn::parse_quote! {
            /// Mentions Unrelated.
            struct A {
                #[serde(default = "defaults::default_bool::<true>")]
                b: Option<B>,
            }
        };
        let names = names_in(&item.to_token_stream());
        assert!(
            names.contains("B") && names.contains("default_bool"),
            "{names:?}"
        );
        assert!(!names.contains("Unrelated"), "{names:?}");
    }

    /// Two areas, a type only one reaches, one both reach, one that only identity reaches,
    /// a serde default, a payload shape reached only through the spec, and an error body.
    #[test]
    fn gates_traits_builders_and_the_types_only_an_area_reaches() {
        let spec = fixture::spec(
            "tags: [{name: audit}, {name: events}, {name: identity}]\n\
             paths:\n\
             \x20 /a: {get: {operationId: a, tags: [audit], responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Page'}}}}}}}\n\
             \x20 /e: {get: {operationId: e, tags: [events], responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Shape'}}}}}}}\n\
             components:\n\
             \x20 schemas:\n\
             \x20   Page: {type: object}\n\
             \x20   Shape: {type: object}\n\
             \x20   Oops: {type: object, x-pubapi-error-format: general}\n",
        );
        let mut file: syn::File = syn::parse_quote! {
            pub mod types {
                pub struct Page { pub s: Shared, #[serde(default = "defaults::flag")] pub f: bool }
                impl From<Page> for String { fn from(_: Page) -> String { String::new() } }
                pub struct Shared;
                pub struct Shape;
                pub struct Me { pub s: Shared }
                pub struct Orphan;
                pub struct Oops;
                pub mod defaults { pub(super) fn flag() -> bool { true } }
            }
            pub mod builder {
                use super::types;
                pub struct A<'a> { page: types::Page, c: &'a () }
                pub struct E<'a> { c: &'a (), s: types::Shared }
                pub struct W<'a> { me: types::Me, c: &'a () }
            }
            pub trait ClientAuditExt { fn a(&self) -> builder::A<'_>; }
            impl ClientAuditExt for Client { fn a(&self) -> builder::A<'_> { todo!() } }
            pub trait ClientEventsExt { fn e(&self) -> builder::E<'_>; }
            pub trait ClientIdentityExt { fn w(&self) -> builder::W<'_>; }
            pub mod prelude { pub use super::ClientAuditExt; pub use super::ClientIdentityExt; }
        };
        let gated = apply(&mut file, &spec).unwrap();
        let code = prettyplease::unparse(&file);
        let gate_before = |item: &str| {
            let at = code
                .find(item)
                .unwrap_or_else(|| panic!("{item} in {code}"));
            let line_start = code[..at].trim_end().rfind('\n').map_or(0, |i| i + 1);
            code[line_start..at].trim().to_string()
        };
        let audit = "#[cfg(feature = \"audit\")]";
        assert_eq!(gate_before("pub struct Page"), audit);
        assert_eq!(gate_before("impl From<Page> for String"), audit);
        assert_eq!(gate_before("pub(super) fn flag"), audit);
        assert_eq!(
            gate_before("pub struct Shape"),
            "#[cfg(feature = \"events\")]"
        );
        assert!(
            !gate_before("pub struct Shared").starts_with("#[cfg"),
            "identity reaches it"
        );
        assert!(!gate_before("pub struct Me").starts_with("#[cfg"));
        assert!(
            !gate_before("pub struct Oops").starts_with("#[cfg"),
            "an error format"
        );
        assert_eq!(gate_before("pub struct A<'a>"), audit);
        assert_eq!(gate_before("pub trait ClientAuditExt"), audit);
        assert_eq!(gate_before("impl ClientAuditExt for Client"), audit);
        assert_eq!(gate_before("pub use super::ClientAuditExt"), audit);
        assert!(!gate_before("pub trait ClientIdentityExt").starts_with("#[cfg"));
        assert_eq!(gated.unreached, BTreeSet::from(["Orphan".to_string()]));
    }

    #[test]
    fn a_type_two_areas_reach_is_gated_by_both() {
        let spec = fixture::spec("tags: [{name: audit}, {name: events}]\npaths: {}\n");
        let mut file: syn::File = syn::parse_quote! {
            pub mod types { pub struct Both; }
            pub mod builder {
                pub struct A { b: types::Both }
                pub struct E { b: types::Both }
            }
            pub trait ClientAuditExt { fn a(&self) -> builder::A; }
            pub trait ClientEventsExt { fn e(&self) -> builder::E; }
        };
        apply(&mut file, &spec).unwrap();
        let code = prettyplease::unparse(&file);
        assert!(
            code.contains(
                "#[cfg(any(feature = \"audit\", feature = \"events\"))]\n    pub struct Both"
            ),
            "{code}"
        );
    }
}
