//! Loading the OpenAPI document.

use crate::CodegenError;
use openapiv3::OpenAPI;
use sha2::{Digest, Sha256};

/// Parses the spec text (YAML, which includes JSON) into an OpenAPI 3.0 document.
///
/// # Errors
/// [`CodegenError::InvalidSpec`] when the text is not YAML or not an OpenAPI 3.0.x document.
pub fn load(text: &str) -> Result<OpenAPI, CodegenError> {
    let spec: OpenAPI =
        serde_yaml::from_str(text).map_err(|e| CodegenError::InvalidSpec(e.to_string()))?;
    if !spec.openapi.starts_with("3.0.") {
        return Err(CodegenError::InvalidSpec(format!(
            "openapi version {} is not 3.0.x (progenitor reads 3.0 only)",
            spec.openapi
        )));
    }
    Ok(spec)
}

/// The SHA-256 of the spec text, lowercase hex: written in the generated preamble.
pub fn hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_openapi_3_1() {
        let err = load("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n").unwrap_err();
        assert!(matches!(err, CodegenError::InvalidSpec(m) if m.contains("3.1.0")));
    }

    #[test]
    fn rejects_text_that_is_not_openapi() {
        assert!(matches!(
            load("- a\n- b\n"),
            Err(CodegenError::InvalidSpec(_))
        ));
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
