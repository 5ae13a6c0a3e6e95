//! The one error of code generation, [`CodegenError`]: each variant says which stage failed
//! (reading the spec, a transform, progenitor, parsing its output) and why, in the words
//! `cargo xtask regenerate` prints.

/// Why code generation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodegenError {
    /// The spec text is not a valid OpenAPI 3.0 document.
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// The spec uses a construct that the transforms cannot adapt for progenitor.
    #[error("unsupported construct in {operation}: {problem}")]
    Unsupported {
        /// The operation concerned.
        operation: String,
        /// What is wrong.
        problem: String,
    },
    /// progenitor returned an error.
    #[error("progenitor failed: {0}")]
    Progenitor(String),
    /// progenitor panicked (it asserts on some spec shapes instead of returning errors).
    #[error("progenitor panicked: {0}")]
    ProgenitorPanic(String),
    /// progenitor's output did not parse as Rust.
    #[error("generated code does not parse: {0}")]
    Unparseable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `cargo xtask regenerate` prints for each stage, word for word as before the derive.
    #[test]
    fn each_variant_says_its_stage_and_its_cause() {
        let text = |e: CodegenError| e.to_string();
        assert_eq!(
            text(CodegenError::InvalidSpec("x".into())),
            "invalid spec: x"
        );
        assert_eq!(
            text(CodegenError::Unsupported {
                operation: "getReport".into(),
                problem: "a range".into()
            }),
            "unsupported construct in getReport: a range"
        );
        assert_eq!(
            text(CodegenError::Progenitor("x".into())),
            "progenitor failed: x"
        );
        assert_eq!(
            text(CodegenError::ProgenitorPanic("x".into())),
            "progenitor panicked: x"
        );
        assert_eq!(
            text(CodegenError::Unparseable("x".into())),
            "generated code does not parse: x"
        );
        let error = CodegenError::Progenitor("x".into());
        assert!(std::error::Error::source(&error).is_none());
    }
}
