use std::fmt;

/// Why code generation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodegenError {
    /// The spec text is not a valid OpenAPI 3.0 document.
    InvalidSpec(String),
    /// The spec uses a construct that the transforms cannot adapt for progenitor.
    Unsupported {
        /// The operation concerned.
        operation: String,
        /// What is wrong.
        problem: String,
    },
    /// progenitor returned an error.
    Progenitor(String),
    /// progenitor panicked (it asserts on some spec shapes instead of returning errors).
    ProgenitorPanic(String),
    /// progenitor's output did not parse as Rust.
    Unparseable(String),
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidSpec(m) => write!(f, "invalid spec: {m}"),
            Self::Unsupported { operation, problem } => {
                write!(f, "unsupported construct in {operation}: {problem}")
            }
            Self::Progenitor(m) => write!(f, "progenitor failed: {m}"),
            Self::ProgenitorPanic(m) => write!(f, "progenitor panicked: {m}"),
            Self::Unparseable(m) => write!(f, "generated code does not parse: {m}"),
        }
    }
}

impl std::error::Error for CodegenError {}
