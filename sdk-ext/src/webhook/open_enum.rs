//! A string enum that keeps names it does not know.
//!
//! The platform adds event names and value spellings over time; a receiver built against this
//! version must still accept them. Every enum made here has one variant per documented name and
//! `Other(String)` for the rest, parses infallibly, and compares and hashes by its text, so
//! `Other("fs:add_file")` built by hand still equals the named variant.

/// Declares an open string enum: named variants with their wire text, plus `Other(String)`.
///
/// Generates `ALL`, `as_str`, `is_known`, `FromStr` (infallible), `From<&str>`, `From<String>`,
/// `Display`, `PartialEq`/`Eq`/`Hash` by text, and serde as a plain string.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $text:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone)]
        #[non_exhaustive]
        $vis enum $name {
            $(
                #[doc = concat!("`", $text, "`")]
                $(#[$vmeta])*
                $variant,
            )+
            /// A name this version of the SDK does not know, kept verbatim.
            ///
            /// Compares equal to a named variant with the same text.
            Other(String),
        }

        impl $name {
            /// Every name this version of the SDK knows, in the order of the reference.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name as it appears on the wire.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)+
                    Self::Other(text) => text,
                }
            }

            /// Whether the name is one this version of the SDK knows.
            #[must_use]
            pub fn is_known(&self) -> bool {
                Self::ALL.iter().any(|known| known.as_str() == self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::std::convert::Infallible;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Ok(match text {
                    $($text => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                })
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text.parse() {
                    Ok(value) => value,
                    Err(never) => match never {},
                }
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                match text.as_str() {
                    $($text => Self::$variant,)+
                    _ => Self::Other(text),
                }
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    $(Self::$variant => f.write_str(stringify!($variant)),)+
                    Self::Other(text) => f.debug_tuple("Other").field(text).finish(),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $name {}

        impl ::std::hash::Hash for $name {
            fn hash<H: ::std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state);
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }
    };
}

pub(crate) use open_enum;
