//! Seeded, counter-based random inputs: element `i` of a stream depends only on `(seed, stream, i)`.
//!
//! A counter-based generator (a SplitMix64 finaliser over the element index) rather than a sequential one, because
//! inputs reach 2^28 elements: each element can be computed independently, so generation runs on every core with
//! rayon and still yields the same bytes on every machine, thread count and backend.

use rayon::prelude::*;

/// Mixes a 64-bit value into a well-distributed one (the SplitMix64 finaliser).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random 64-bit word for element `index` of stream `stream` under `seed`.
#[inline]
pub fn word(seed: u64, stream: u64, index: u64) -> u64 {
    mix64(mix64(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)) ^ index)
}

/// A uniform `f32` in `[0, 1)` with 24 random bits (every value exactly representable).
#[inline]
pub fn unit_f32(word: u64) -> f32 {
    (word >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// `n` values uniform in `[low, high)`, computed in parallel; `high − low` must be a power of two times a value
/// with few bits (as in the specification's ranges) for every value to stay below `high` after rounding.
pub fn uniform_f32(seed: u64, stream: u64, n: usize, low: f32, high: f32) -> Vec<f32> {
    let span = high - low;
    (0..n as u64).into_par_iter().map(|i| low + span * unit_f32(word(seed, stream, i))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_values_and_in_range() {
        let a = uniform_f32(7, 1, 10_000, -1.0, 1.0);
        let b = uniform_f32(7, 1, 10_000, -1.0, 1.0);
        assert_eq!(a, b);
        assert!(a.iter().all(|&v| (-1.0..1.0).contains(&v)));
        let mean = a.iter().map(|&v| v as f64).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn streams_and_seeds_differ() {
        assert_ne!(uniform_f32(7, 1, 8, 0.0, 1.0), uniform_f32(7, 2, 8, 0.0, 1.0));
        assert_ne!(uniform_f32(7, 1, 8, 0.0, 1.0), uniform_f32(8, 1, 8, 0.0, 1.0));
    }
}
