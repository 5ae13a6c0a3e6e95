//! A small pseudo-random generator for the crate's own use: retry jitter, the fleet store's
//! booking nonces, and seeded test data. Private, so no public signature names it.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// A tiny seedable pseudo-random generator (SplitMix64).
///
/// Not for anything secret. Seeded in tests for reproducible sequences;
/// [`SplitMix64::from_entropy`] (also `Default`) seeds it from the
/// standard library's per-process random hash keys.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator that always yields the same sequence for `seed`.
    pub(crate) const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// A generator seeded from `RandomState`.
    pub(crate) fn from_entropy() -> Self {
        SplitMix64::new(RandomState::new().hash_one(0x5eed_u64))
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `[0, bound)`, or 0 when `bound` is 0.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

impl Default for SplitMix64 {
    fn default() -> Self {
        SplitMix64::from_entropy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(
            [rng.next_u64(), rng.next_u64(), rng.next_u64()],
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f
            ]
        );
    }

    #[test]
    fn entropy_seeded_generators_differ() {
        let (mut a, mut b) = (SplitMix64::from_entropy(), SplitMix64::default());
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn below_stays_below_its_bound() {
        let mut rng = SplitMix64::new(5);
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
        for bound in [2, 3, 10, 1 << 40, u64::MAX] {
            for _ in 0..1000 {
                assert!(rng.below(bound) < bound);
            }
        }
    }
}
