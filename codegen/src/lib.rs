//! `pubapi-codegen`: turns `spec/openapi.yaml` into the generated Rust client of `pubapi-sdk`
//! and the typed mocks of `pubapi-httpmock` (progenitor's httpmock generator on the same adapted
//! spec, then the `mock_*` transforms).
//!
//! It is a pure function, spec text in, Rust source out ([`generate`]), run by
//! `cargo xtask regenerate`. Progenitor 0.15 cannot take the spec as it is, so the spec goes
//! through named [`transforms`] first (spec → spec), progenitor runs, and the output goes through
//! code → code transforms. Every transform says what it takes away from the generated surface
//! and which part of `pubapi-sdk-ext` handles it instead; the spec itself keeps the full truth.
//!
//! The output is formatted with `prettyplease` (stable Rust, no rustfmt needed) and is
//! byte-for-byte deterministic for a given spec.

mod code;
mod error;
mod format;
mod mocks;
mod settings;
pub mod spec;
pub mod transforms;
mod walk;

pub use error::CodegenError;
pub use transforms::Removal;

/// The result of one generation run.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The complete contents of `sdk/src/generated.rs`.
    pub code: String,
    /// The complete contents of `httpmock/src/generated.rs`: the typed mocks of
    /// `pubapi-httpmock`, one `When`/`Then` pair per operation.
    pub httpmock_code: String,
    /// SHA-256 of the spec text, as written in the preamble.
    pub spec_hash: String,
    /// What the spec transforms removed from the generated surface, for the report.
    pub removals: Vec<Removal>,
}

/// Generates the client code for `pubapi-sdk` and the typed mocks for `pubapi-httpmock` from
/// the OpenAPI document `spec_text` (YAML or JSON).
///
/// # Errors
/// [`CodegenError`] when the spec does not parse, breaks a rule the transforms rely on, or
/// progenitor refuses (or panics on) it.
pub fn generate(spec_text: &str) -> Result<Generated, CodegenError> {
    let original = spec::load(spec_text)?;
    let mut adapted = original.clone();
    let removals = transforms::apply_spec_transforms(&mut adapted)?;

    let tokens = settings::run_progenitor(&adapted)?;
    let mut file: syn::File =
        syn::parse2(tokens).map_err(|e| CodegenError::Unparseable(e.to_string()))?;
    transforms::mark_deprecated::apply(&mut file, &original);
    transforms::redact_secrets::apply(&mut file, &original);
    if transforms::strict_path_encoding::apply(&mut file) == 0 {
        return Err(CodegenError::Unparseable(
            "strict_path_encoding found no encode_path call: progenitor's output changed".into(),
        ));
    }
    transforms::open_enums::apply(&mut file, &original, &removals)?;
    transforms::no_content_as_none::apply(&mut file, &removals)?;
    transforms::request_constructors::apply(&mut file, &original)?;
    transforms::open_object_extras::apply(&mut file);
    transforms::alias_accessors::apply(&mut file, &original)?;
    transforms::schemars_derive::apply(&mut file);
    transforms::area_features::apply(&mut file, &original)?;
    transforms::plain_patterns::apply(&mut file)?;
    file.items
        .push(transforms::operation_table::item(&original, &removals)?);
    file.items.push(transforms::limits::item(&original)?);
    file.items.push(transforms::audit_kinds::item(&original)?);

    let spec_hash = spec::hash(spec_text);
    let code = format::render(&file, &spec_hash);
    let httpmock_code = format::render(&mocks::generate(&original, &adapted)?, &spec_hash);
    Ok(Generated {
        code,
        httpmock_code,
        spec_hash,
        removals,
    })
}
