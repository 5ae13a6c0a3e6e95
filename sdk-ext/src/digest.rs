//! The hashes the SDK takes: SHA-256 for keys and fingerprints (token budgets, dedup keys,
//! long part-file names, webhook secrets), SHA-1 for the platform's `clientIdHash`, a
//! constant-time comparison of webhook secrets, and the lowercase hex that digests are
//! written in.
//!
//! They come from `aws-lc-rs`, which reqwest's rustls already compiles into every build of the
//! SDK (with more features than these need), so hashing adds no crate to a user's build.

use aws_lc_rs::digest;

/// The SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    hasher.finish()
}

/// A SHA-256 fed in parts.
#[derive(Clone)]
pub(crate) struct Sha256(digest::Context);

impl Sha256 {
    /// A hash of nothing yet.
    pub(crate) fn new() -> Self {
        Sha256(digest::Context::new(&digest::SHA256))
    }

    /// Feeds the next bytes.
    pub(crate) fn update(&mut self, part: &[u8]) {
        self.0.update(part);
    }

    /// The digest of everything fed.
    pub(crate) fn finish(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.0.finish().as_ref());
        out
    }
}

impl std::fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sha256")
    }
}

/// The SHA-1 of `bytes` (only where the platform itself uses SHA-1: `clientIdHash`).
#[cfg(feature = "webhooks")]
pub(crate) fn sha1(bytes: &[u8]) -> [u8; 20] {
    let mut out = [0u8; 20];
    out.copy_from_slice(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, bytes).as_ref());
    out
}

/// Whether two digests are equal, in a time that does not depend on where they differ.
#[cfg(feature = "webhooks")]
pub(crate) fn equal_in_constant_time(a: &[u8; 32], b: &[u8; 32]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

/// `bytes` in lowercase hex, two digits a byte (a long part-file name, a dedup key,
/// `clientIdHash`).
#[cfg(any(feature = "audit", feature = "webhooks", test))]
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    /// FIPS 180-2's "abc" examples, and SHA-256 fed in parts equals one call.
    #[test]
    fn digests_match_the_standards_examples() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut parts = Sha256::new();
        parts.update(b"a");
        parts.update(b"bc");
        assert_eq!(parts.finish(), sha256(b"abc"));
        #[cfg(feature = "webhooks")]
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }

    #[cfg(feature = "webhooks")]
    #[test]
    fn constant_time_equality_tells_equal_from_different_digests() {
        let a = sha256(b"a");
        assert!(equal_in_constant_time(&a, &sha256(b"a")));
        assert!(!equal_in_constant_time(&a, &sha256(b"b")));
    }
}
