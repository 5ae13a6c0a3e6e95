//! Deterministic ids and pseudo-random numbers: the same seed and the same sequence of calls
//! give the same ids, so tests and snapshots are stable.

/// SplitMix64: a tiny, good-enough generator for ids and synthetic data.
#[derive(Debug, Clone)]
pub struct IdGen {
    state: u64,
}

impl IdGen {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        IdGen { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// `prefix` followed by 12 hex digits.
    pub fn id(&mut self, prefix: &str) -> String {
        format!("{prefix}{:012x}", self.next_u64() >> 16)
    }

    /// A decimal id of 9 digits, as a string (entry, group and object ids).
    pub fn numeric(&mut self) -> String {
        format!("{}", 100_000_000 + self.next_u64() % 900_000_000)
    }
}

/// The SplitMix64 finaliser: a stateless hash of one word.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a string, for deriving stable values (tokens, checksums) from text.
pub fn hash_str(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(h)
}

/// A hex checksum of some content (not cryptographic; 32 hex digits).
pub fn checksum(content: &str) -> String {
    let a = hash_str(content);
    let b = mix(a ^ 0x5DEE_CE66_D1CE_4E5B);
    format!("{a:016x}{b:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_ids() {
        let mut a = IdGen::new(7);
        let mut b = IdGen::new(7);
        assert_eq!(a.id("wh_"), b.id("wh_"));
        assert_eq!(a.numeric(), b.numeric());
        assert_ne!(IdGen::new(7).id("x"), IdGen::new(8).id("x"));
        assert_eq!(IdGen::new(1).id("wh_").len(), 15);
    }

    #[test]
    fn checksums_are_stable_hex() {
        assert_eq!(checksum("a"), checksum("a"));
        assert_ne!(checksum("a"), checksum("b"));
        assert_eq!(checksum("a").len(), 32);
    }
}
