//! Traversal helpers shared by the code transforms (progenitor's output as a `syn::File`).

/// The items of the inline module `name` among `items` (`types`, or `builder` inside it).
pub(crate) fn module_mut<'a>(
    items: &'a mut [syn::Item],
    name: &str,
) -> Option<&'a mut Vec<syn::Item>> {
    items.iter_mut().find_map(|item| match item {
        syn::Item::Mod(m) if m.ident == name => m.content.as_mut().map(|(_, items)| items),
        _ => None,
    })
}

/// The name of the type an `impl` block is for (its path's last segment).
pub(crate) fn self_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}
