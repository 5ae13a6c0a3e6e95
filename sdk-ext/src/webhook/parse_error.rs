//! Why a delivery body could not be read: what the scanner ([`super::scan`]) finds wrong and
//! the delivery's reader ([`super::delivery`]) reports. A leaf both depend on.

use std::fmt;

/// Why a delivery body could not be read at all.
#[derive(Debug)]
#[non_exhaustive]
pub enum DeliveryParseError {
    /// The body is not JSON.
    NotJson(serde_json::Error),
    /// The body is JSON but not an object with a `data` array.
    NoDataArray,
    /// The body is larger than the receiver parses; it is handed over raw.
    TooLarge {
        /// The body's size.
        bytes: usize,
        /// The receiver's parse limit.
        limit: usize,
    },
    /// The body's `data` has more elements than the receiver reads from one delivery; it is
    /// handed over raw.
    TooManyItems {
        /// How many elements `data` has.
        items: usize,
        /// The receiver's limit.
        limit: usize,
    },
}

impl fmt::Display for DeliveryParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliveryParseError::NotJson(_) => f.write_str("delivery body is not json"),
            DeliveryParseError::NoDataArray => f.write_str("delivery body has no `data` array"),
            DeliveryParseError::TooLarge { bytes, limit } => {
                write!(
                    f,
                    "delivery body of {bytes} bytes is over the {limit}-byte parse limit"
                )
            }
            DeliveryParseError::TooManyItems { items, limit } => {
                write!(
                    f,
                    "delivery has {items} elements in `data`, over the limit of {limit}"
                )
            }
        }
    }
}

impl std::error::Error for DeliveryParseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeliveryParseError::NotJson(error) => Some(error),
            DeliveryParseError::NoDataArray
            | DeliveryParseError::TooLarge { .. }
            | DeliveryParseError::TooManyItems { .. } => None,
        }
    }
}
