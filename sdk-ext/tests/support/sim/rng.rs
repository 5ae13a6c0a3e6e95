//! The simulation's one source of chance: a SplitMix64 generator per seed, so a run is its
//! seed and reruns identically.

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast, and enough for choosing timings.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..high` (`low` when the range is empty).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.next_u64() % (high - low)
    }

    /// `true` with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 100) < percent
    }

    /// A generator of its own for one part of the run, so that what one part draws does not
    /// shift what another draws.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}
