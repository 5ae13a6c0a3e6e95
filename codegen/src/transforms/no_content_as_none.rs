//! `no_content_as_none` (code → code): a body-less success next to a typed one is `None`, not
//! an error.
//!
//! [`drop_bodiless_success`](super::drop_bodiless_success) removes the events lists' `204` so
//! progenitor can generate them; the generated `send()` would then answer the 204, a success
//! of the reference ("nothing after the cursor"), as `Error::UnexpectedResponse`. For each
//! status that transform removed, this one makes the operation's `send()` return
//! `ResponseValue<Option<T>>`: `Some(page)` for the typed success, and for the removed status
//! `None` with the response's status and headers.

use super::Removal;
use crate::CodegenError;
use heck::ToUpperCamelCase;
use std::collections::BTreeMap;
use syn::visit_mut::VisitMut;

/// Rewrites the `send()` of every operation whose body-less success was removed.
///
/// # Errors
/// [`CodegenError::Unparseable`] when such an operation's builder or its `send()` does not
/// have the shape progenitor 0.15 writes (its output changed), or the removed status is not
/// a number.
pub fn apply(file: &mut syn::File, removals: &[Removal]) -> Result<(), CodegenError> {
    let mut targets: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for removal in removals
        .iter()
        .filter(|r| r.transform == "drop_bodiless_success")
    {
        let status = removal.what.parse::<u16>().map_err(|_| {
            CodegenError::Unparseable(format!(
                "no_content_as_none: {} removed {:?}, not one status",
                removal.subject, removal.what
            ))
        })?;
        targets
            .entry(removal.subject.to_upper_camel_case())
            .or_default()
            .push(status);
    }
    let mut rewrite = Rewrite {
        targets: &targets,
        done: Vec::new(),
        failure: None,
    };
    rewrite.visit_file_mut(file);
    if let Some(failure) = rewrite.failure {
        return Err(failure);
    }
    let missing: Vec<_> = targets
        .keys()
        .filter(|name| !rewrite.done.contains(name))
        .collect();
    if !missing.is_empty() {
        return Err(CodegenError::Unparseable(format!(
            "no_content_as_none found no builder `send()` for {missing:?}: progenitor's output changed"
        )));
    }
    Ok(())
}

struct Rewrite<'a> {
    targets: &'a BTreeMap<String, Vec<u16>>,
    done: Vec<String>,
    failure: Option<CodegenError>,
}

impl VisitMut for Rewrite<'_> {
    fn visit_item_impl_mut(&mut self, item: &mut syn::ItemImpl) {
        let syn::Type::Path(self_ty) = &*item.self_ty else {
            return;
        };
        let Some(name) = self_ty.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        let Some(statuses) = self.targets.get(&name) else {
            return;
        };
        for impl_item in &mut item.items {
            if let syn::ImplItem::Fn(send) = impl_item
                && send.sig.ident == "send"
            {
                match rewrite_send(send, statuses) {
                    Ok(()) => self.done.push(name.clone()),
                    Err(problem) => {
                        self.failure.get_or_insert(CodegenError::Unparseable(format!(
                            "no_content_as_none: {name}::send {problem}: progenitor's output changed"
                        )));
                    }
                }
            }
        }
    }
}

fn rewrite_send(send: &mut syn::ImplItemFn, statuses: &[u16]) -> Result<(), &'static str> {
    let syn::ReturnType::Type(_, output) = &mut send.sig.output else {
        return Err("returns nothing");
    };
    let value = first_generic(output, "Result")
        .and_then(|ok| first_generic(ok, "ResponseValue"))
        .ok_or("does not return Result<ResponseValue<T>, _>")?;
    let page = value.clone();
    *value = syn::parse_quote!(::std::option::Option<#page>);

    let Some(syn::Stmt::Expr(syn::Expr::Match(by_status), None)) = send.block.stmts.last_mut()
    else {
        return Err("does not end in a match on the status");
    };
    let typed = by_status
        .arms
        .iter_mut()
        .filter(|arm| success_status(&arm.pat))
        .map(|arm| {
            let body = &arm.body;
            arm.body = syn::parse_quote!((#body).and_then(|value: ResponseValue<#page>| {
                value.map(::std::option::Option::Some)
            }));
        })
        .count();
    if typed == 0 {
        return Err("has no arm for a 2xx status");
    }
    let wildcard = by_status
        .arms
        .iter()
        .position(|arm| matches!(arm.pat, syn::Pat::Wild(_)))
        .ok_or("has no `_` arm")?;
    for status in statuses {
        let code = syn::LitInt::new(&format!("{status}u16"), proc_macro2::Span::call_site());
        by_status.arms.insert(
            wildcard,
            syn::parse_quote! {
                #code => Ok(ResponseValue::new(
                    ::std::option::Option::None,
                    response.status(),
                    response.headers().clone(),
                )),
            },
        );
    }
    let doc = format!(
        " Sends the request. A {} (no content) is `None`; the typed success is `Some`.",
        statuses
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(" or ")
    );
    send.attrs.push(syn::parse_quote!(#[doc = #doc]));
    Ok(())
}

/// The first generic argument of `ty` when `ty` is the path `name<..>`.
fn first_generic<'t>(ty: &'t mut syn::Type, name: &str) -> Option<&'t mut syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let segment = path.path.segments.last_mut()?;
    if segment.ident != name {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &mut segment.arguments else {
        return None;
    };
    match args.args.first_mut()? {
        syn::GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}

fn success_status(pat: &syn::Pat) -> bool {
    matches!(pat, syn::Pat::Lit(syn::PatLit { lit: syn::Lit::Int(code), .. })
        if code.base10_parse::<u16>().is_ok_and(|c| (200..300).contains(&c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn builder() -> syn::File {
        syn::parse_quote! {
            pub mod builder {
                impl<'a> ListEvents<'a> {
                    pub async fn send(self) -> Result<ResponseValue<types::Page>, Error<()>> {
                        let response = result?;
                        match response.status().as_u16() {
                            200u16 => ResponseValue::from_response(response).await,
                            _ => Err(Error::UnexpectedResponse(response)),
                        }
                    }
                }
                impl<'a> Whoami<'a> {
                    pub async fn send(self) -> Result<ResponseValue<types::Me>, Error<()>> {
                        match response.status().as_u16() {
                            200u16 => ResponseValue::from_response(response).await,
                            _ => Err(Error::UnexpectedResponse(response)),
                        }
                    }
                }
            }
        }
    }

    fn removed(subject: &str, what: &str) -> Removal {
        Removal {
            transform: "drop_bodiless_success",
            subject: subject.into(),
            what: what.into(),
        }
    }

    fn text(file: &syn::File) -> String {
        file.to_token_stream().to_string()
    }

    #[test]
    fn the_removed_204_answers_none_and_the_page_some() {
        let mut file = builder();
        apply(&mut file, &[removed("listEvents", "204")]).unwrap();
        let code = text(&file);
        assert!(
            code.contains(
                "Result < ResponseValue < :: std :: option :: Option < types :: Page > >"
            ),
            "{code}"
        );
        assert!(
            code.contains("204u16 => Ok (ResponseValue :: new (:: std :: option :: Option :: None"),
            "{code}"
        );
        assert!(
            code.contains(
                "and_then (| value : ResponseValue < types :: Page > | { value . map (:: std :: option :: Option :: Some) })"
            ),
            "{code}"
        );
        let arm_204 = code.find("204u16").unwrap();
        assert!(
            arm_204 < code.find("_ => Err").unwrap(),
            "before the wildcard"
        );
        // Operations without a removed status are untouched.
        assert!(
            code.contains("Result < ResponseValue < types :: Me >"),
            "{code}"
        );
        assert_eq!(code.matches("204u16").count(), 1);
    }

    #[test]
    fn other_transforms_removals_are_not_read() {
        let mut file = builder();
        let mut other = removed("listEvents", "204");
        other.transform = "raw_error_responses";
        apply(&mut file, &[other]).unwrap();
        assert_eq!(text(&file), text(&builder()));
    }

    #[test]
    fn an_operation_whose_send_is_not_found_is_an_error() {
        let mut file = builder();
        let error = apply(&mut file, &[removed("listWebhooks", "204")]).unwrap_err();
        assert!(error.to_string().contains("ListWebhooks"), "{error}");
    }

    #[test]
    fn a_send_that_does_not_end_in_a_status_match_is_an_error() {
        let mut file: syn::File = syn::parse_quote! {
            impl<'a> ListEvents<'a> {
                pub async fn send(self) -> Result<ResponseValue<types::Page>, Error<()>> {
                    todo()
                }
            }
        };
        let error = apply(&mut file, &[removed("listEvents", "204")]).unwrap_err();
        assert!(error.to_string().contains("match on the status"), "{error}");
    }
}
