//! `scan`: the inclusive prefix sum, `y[i] = x[0] + … + x[i]`. The classic lesson where the GPU needs a different
//! algorithm: the loop a CPU runs (`y[i] = y[i-1] + x[i]`) is one long chain of dependent additions, so a GPU must
//! reorganise the additions into trees (Hillis–Steele, Blelloch, reduce-then-scan) or chain whole tiles (a single
//! pass with decoupled look-back), and the order it adds in changes the rounding.
//!
//! ## Specification
//!
//! - **Input**: `x[n]`, `f32`, uniform in `[0, 1)` (as for `sum`: the prefixes grow, so a relative error means
//!   something). **Output**: `y[n]`, `f32`, the *inclusive* scan: `y[0] = x[0]`.
//! - **Sizes**: the 1D ladder (2^10 … 2^28), the 1D conformance sizes (0 … 2^22 + 3), and 2^25 + 5 (past a 128 MiB
//!   buffer binding). n = 0 gives an empty output.
//! - **Cost**: 8n bytes (read x once, write y once: what a single pass moves; a reduce-then-scan reads x twice,
//!   and says so in its variant's description), n flops.
//! - **Special values**: a NaN makes every later prefix NaN; +inf makes later prefixes +inf until a −inf, from
//!   which on they are NaN.
//!
//! ## The tolerance, and why
//!
//! A sum of k terms whose additions form a tree of depth d errs by at most about d·u·Σ|x| (u = 2^-24, the unit
//! roundoff of `f32`; Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2). Each output of a scan is
//! such a sum, so the check is, for every i,
//!
//! `|y[i] − ref₆₄[i]| ≤ (2·⌈log2(n)⌉ + 16)·u·Σ_{j ≤ i} |x[j]|`
//!
//! with the reference and the magnitudes summed in `f64`. What each method's depth is:
//!
//! - a **sequential `f32` running sum** has depth i: at n = 2^26 its prefixes reach 3.4·10^7, where the spacing of
//!   `f32` values is 4, so most additions of a value below 1 are lost: the bound fails there. No variant may chain
//!   `f32` additions along the array; that is the lesson.
//! - **Hillis–Steele** (log2 n passes, each `y[i] += y[i − 2^k]`): depth ⌈log2 n⌉.
//! - **Blelloch / reduce-then-scan**: a tree up and one down, per level of tiles: depth at most 2·⌈log2 n⌉ plus
//!   the few sequential additions inside a thread's run of elements.
//! - **tiles chained by a carry** (the CPU's two-pass scan, the single-pass decoupled look-back): the carry between
//!   tiles is kept in `f64` (or a compensated pair of `f32`), so the chain adds no `f32` rounding; each output is
//!   its tile's local tree prefix plus the carry, rounded once.
//!
//! The 16 covers the sequential runs inside a thread (at most 8 elements) and the final roundings. The bound is
//! tight where it matters: an *exclusive* scan, or a scan shifted by one element, is wrong by a whole `x[i]` (about
//! 0.5) at position i, where the bound is about 60·u·i/2, so it fails within the first 10^5 elements; and the first
//! element, whose bound is 60·u·x[0], catches both at once.

use super::{BEYOND_128_MIB, Len, element_sharding, conformance_1d, ladder_1d, off_ladder_params, quick_ladder_1d};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload};
use crate::workload::Sharding;

/// `y[i] = x[0] + … + x[i]`. Input: `x` uniform in `[0, 1)`. Output: `y`, as long as `x`.
///
/// ```
/// use gpuworthy_core::{Precision, Workload, workloads::{Len, Scan}};
/// assert_eq!(Scan::reference(&vec![1.0, 2.0, 3.0]).unwrap(), [1.0, 3.0, 6.0]);
/// let x = Scan::generate(&Len(1000), 1).unwrap();
/// let y = Scan::reference(&x).unwrap();
/// let exclusive: Vec<f32> = std::iter::once(0.0).chain(y[..999].iter().copied()).collect();
/// assert!(Scan::check(&x, &y, &exclusive, Precision::Fp32).is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Scan;

/// The unit roundoff of `f32`.
const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

impl Scan {
    /// The depth of additions the check allows an output of a scan of `n` elements: `2·⌈log2(n)⌉ + 16`.
    pub fn allowed_depth(n: usize) -> f64 {
        let log2 = usize::BITS - n.saturating_sub(1).leading_zeros();
        (2 * log2 + 16) as f64
    }
}

impl Workload for Scan {
    const NAME: &'static str = "scan";
    const LESSON: &'static str = "a loop-carried dependence: the GPU needs another algorithm, and adds in another order";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    /// Each member scans its part alone; each part's total is carried into every later part, the carry summed in
    /// `f64` and added once per element (one more rounding, within the check's bound for a blocked scan).
    fn sharding() -> Option<Sharding<Self>> {
        Some(element_sharding::<Self>(|_, parts| {
                let mut out = Vec::with_capacity(parts.iter().map(|(_, part)| part.len()).sum());
                let mut carry = 0.0f64;
                for (_, part) in parts {
                    let total = part.last().copied();
                    out.extend(part.iter().map(|&v| if carry == 0.0 { v } else { (f64::from(v) + carry) as f32 }));
                    carry += total.map_or(0.0, f64::from);
                }
                out
            }))
    }

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_input: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        crate::memory::check_host_memory::<Self>(params)?;
        Ok(rng::uniform_f32(seed, 0, params.0, 0.0, 1.0))
    }

    /// The running sum in `f64`, rounded to `f32` once per element.
    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        let mut total = 0.0f64;
        Ok(input
            .iter()
            .map(|&x| {
                total += x as f64;
                total as f32
            })
            .collect())
    }

    /// Every element within `(2·⌈log2(n)⌉ + 16)·u·Σ_{j ≤ i}|x[j]|` of the `f64` prefix (the module's argument).
    fn check(input: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        crate::workload::check_lengths(expected.len(), actual.len())?;
        let depth = Self::allowed_depth(input.len());
        let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
        for (i, (&x, &y)) in input.iter().zip(actual).enumerate() {
            exact += x as f64;
            magnitude += (x as f64).abs();
            let tolerance = Tolerance { absolute: depth * UNIT_ROUNDOFF * magnitude, relative: 0.0 };
            let want = if exact.is_nan() { f64::NAN } else { exact as f32 as f64 };
            if !tolerance.accepts(want, y as f64) {
                return Err(Mismatch::new(format!(
                    "y[{i}]: expected {want:e}, got {y:e} (tolerance {:.3e} = {depth} x 2^-24 x the prefix's magnitude {magnitude:e})",
                    tolerance.absolute
                )));
            }
        }
        Ok(())
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(8)
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 8 * n, flops: n, elements: n }
    }

    fn streaming_probe(bytes: u64) -> Option<Len> {
        Some(off_ladder_params::<Self>(bytes, Len))
    }

    fn ladder() -> Vec<Len> {
        ladder_1d().into_iter().map(Len).collect()
    }

    fn quick_ladder() -> Vec<Len> {
        quick_ladder_1d().into_iter().map(Len).collect()
    }

    fn conformance_params() -> Vec<Len> {
        conformance_1d().into_iter().map(Len).collect()
    }

    fn large_params() -> Vec<Len> {
        vec![Len(BEYOND_128_MIB)]
    }

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        let with = |pos: usize, v: f32| {
            let mut x = rng::uniform_f32(7, 0, 3000, 0.0, 1.0);
            x[pos] = v;
            x
        };
        let mut both = with(100, f32::INFINITY);
        both[2000] = f32::NEG_INFINITY;
        let mut zeros = vec![0.0f32; 40];
        zeros[3] = -0.0;
        zeros[33] = 1.0;
        vec![
            ("a NaN makes every later prefix NaN", with(1500, f32::NAN)),
            ("+inf makes every later prefix +inf", with(2999, f32::INFINITY)),
            ("+inf then -inf: NaN from the -inf on", both),
            ("zeros, a -0 and one 1", zeros),
        ]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Scan {
    fn random() -> proptest::strategy::BoxedStrategy<Vec<f32>> {
        use crate::random::prelude::*;
        length().prop_flat_map(|n| values(n, -1.0, 1.0)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(n: usize) -> Vec<f32> {
        Scan::generate(&Len(n), 3).unwrap()
    }

    #[test]
    fn the_reference_passes_its_own_check() {
        for n in conformance_1d() {
            let x = input(n);
            let y = Scan::reference(&x).unwrap();
            assert!(Scan::check(&x, &y, &y, Precision::Fp32).is_ok(), "n = {n}");
        }
        for (label, x) in Scan::special_inputs() {
            let y = Scan::reference(&x).unwrap();
            assert_eq!(Scan::check(&x, &y, &y, Precision::Fp32), Ok(()), "{label}");
        }
    }

    #[test]
    fn an_exclusive_scan_and_a_shift_fail() {
        for n in [2, 31, 1000, 65537] {
            let x = input(n);
            let y = Scan::reference(&x).unwrap();
            let exclusive: Vec<f32> = std::iter::once(0.0).chain(y[..n - 1].iter().copied()).collect();
            assert!(Scan::check(&x, &y, &exclusive, Precision::Fp32).is_err(), "exclusive, n = {n}");
            let ahead: Vec<f32> = y[1..].iter().copied().chain(std::iter::once(y[n - 1])).collect();
            assert!(Scan::check(&x, &y, &ahead, Precision::Fp32).is_err(), "shifted, n = {n}");
            let mut dropped = y.clone();
            dropped[n / 2..].iter_mut().for_each(|v| *v -= x[n / 2]);
            assert!(Scan::check(&x, &y, &dropped, Precision::Fp32).is_err() || x[n / 2] == 0.0, "dropped, n = {n}");
        }
    }

    /// The lesson: a sequential `f32` running sum is far outside the bound at 2^25, while a tree of pairwise sums
    /// of each prefix's tiles is inside it.
    #[test]
    fn a_sequential_f32_running_sum_fails_where_a_blocked_one_passes() {
        let n = 1 << 25;
        let x = input(n);
        let y = Scan::reference(&x).unwrap();
        let mut running = 0.0f32;
        let sequential: Vec<f32> = x
            .iter()
            .map(|&v| {
                running += v;
                running
            })
            .collect();
        assert!(Scan::check(&x, &y, &sequential, Precision::Fp32).is_err());
        // Runs of 8 scanned sequentially in f32, each offset by an f64 carry and rounded once.
        let mut blocked = Vec::with_capacity(n);
        let mut carry = 0.0f64;
        for tile in x.chunks(8) {
            let mut local = 0.0f32;
            for &v in tile {
                local += v;
                blocked.push((carry + local as f64) as f32);
            }
            carry += tile.iter().map(|&v| v as f64).sum::<f64>();
        }
        assert_eq!(Scan::check(&x, &y, &blocked, Precision::Fp32), Ok(()));
    }

    #[test]
    fn the_allowed_depth_grows_with_log2_n() {
        assert_eq!(Scan::allowed_depth(0), 16.0);
        assert_eq!(Scan::allowed_depth(1), 16.0);
        assert_eq!(Scan::allowed_depth(1024), 36.0);
        assert_eq!(Scan::allowed_depth(1025), 38.0);
    }
}
