//! The progenitor settings pubapi generates with, and the guarded call into progenitor.

use crate::CodegenError;
use openapiv3::OpenAPI;
use progenitor::{GenerationSettings, Generator, InterfaceStyle, TagStyle};
use quote::quote;

/// Builder interface (adding an optional parameter to the spec is not a breaking change for a
/// published crate), one extension trait per tag (`ClientWebhooksExt`, ... and a `prelude`),
/// and an inner type carrying the request policy that `pubapi-sdk-ext` installs.
fn settings() -> GenerationSettings {
    let mut settings = GenerationSettings::new();
    settings
        .with_interface(InterfaceStyle::Builder)
        .with_tag(TagStyle::Separate)
        .with_inner_type(quote!(crate::hooks::Inner))
        .with_derive("PartialEq");
    settings
}

/// Runs progenitor on an adapted spec. Progenitor asserts (panics) on some shapes instead of
/// returning an error; the panic is caught and returned as [`CodegenError::ProgenitorPanic`].
pub(crate) fn run_progenitor(spec: &OpenAPI) -> Result<proc_macro2::TokenStream, CodegenError> {
    guarded(|| Generator::new(&settings()).generate_tokens(spec))
}

/// The crate the typed mocks refer to for the operations' types.
const SDK_CRATE_PATH: &str = "pubapi_sdk";

/// Runs progenitor's `httpmock` generator on the same adapted spec, with the same settings, so
/// the mocks name the very types `pubapi-sdk` generates (`pubapi_sdk::types::..`).
pub(crate) fn run_progenitor_httpmock(
    spec: &OpenAPI,
) -> Result<proc_macro2::TokenStream, CodegenError> {
    guarded(|| Generator::new(&settings()).httpmock(spec, SDK_CRATE_PATH))
}

/// Calls progenitor with its panics caught and turned into errors.
fn guarded(
    run: impl FnOnce() -> Result<proc_macro2::TokenStream, progenitor::Error> + std::panic::UnwindSafe,
) -> Result<proc_macro2::TokenStream, CodegenError> {
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(run);
    std::panic::set_hook(previous_hook);
    match outcome {
        Ok(Ok(tokens)) => Ok(tokens),
        Ok(Err(e)) => Err(CodegenError::Progenitor(e.to_string())),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(CodegenError::ProgenitorPanic(message))
        }
    }
}
