//! `sum`: a reduction. Synchronisation, shared memory, atomics, and the order of floating-point additions.

use super::{BEYOND_128_MIB, Len, element_sharding, conformance_1d, ladder_1d, off_ladder_params, quick_ladder_1d};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload};
use crate::workload::Sharding;

/// `s = Σ x[i]`. Input: `x` uniform in `[0, 1)`, so the sum is about n/2 and a relative error means something.
///
/// The output is `f64` so that the reference keeps its precision; backends that sum in `f32` widen their result. No
/// variant may add sequentially into one `f32` accumulator: beyond about 2^20 elements that fails the check, which
/// is the lesson.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::Sum};
/// assert_eq!(Sum::reference(&vec![0.5, 0.25]).unwrap(), 0.75);
/// assert_eq!(Sum::reference(&vec![]).unwrap(), 0.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Sum;

/// The tolerance, as a fraction of the sum of magnitudes.
const RELATIVE: f64 = 1e-5;

impl Workload for Sum {
    const NAME: &'static str = "sum";
    const LESSON: &'static str = "reduction: synchronisation, shared memory, atomics, floating-point order";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = f64;

    /// Each member sums its part; the partial sums are added in `f64`.
    fn sharding() -> Option<Sharding<Self>> {
        Some(element_sharding(|_, parts| parts.iter().map(|(_, partial)| partial).sum()))
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

    fn reference(input: &Vec<f32>) -> Result<f64> {
        Ok(input.iter().map(|&x| x as f64).sum())
    }

    /// `|s − ref₆₄| ≤ 1e-5·Σ|x|`: relative to the sum of magnitudes, which bounds the rounding error of any order of
    /// additions (for the specification's inputs in `[0, 1)` it is the sum itself). A pairwise or tree sum in `f32`
    /// errs by at most about 2^-24·log2(n) of it (2e-6 at n = 2^28), a compensated or `f64` one by far less. A dropped
    /// element of average size (0.5 of n/2) is a relative error of 1/n, so this rejects it while n < 10^5 (the
    /// conformance sizes 1000 … 65537); beyond that no `f32` result can tell one element apart from rounding.
    fn check(input: &Vec<f32>, expected: &f64, actual: &f64, _: Precision) -> Result<(), Mismatch> {
        let magnitude: f64 = input.iter().map(|&x| (x as f64).abs()).sum();
        let tolerance = Tolerance { absolute: RELATIVE * magnitude, relative: 0.0 };
        if tolerance.accepts(*expected, *actual) {
            Ok(())
        } else {
            Err(Mismatch::new(format!(
                "sum: expected {expected}, got {actual} (error {:e}, tolerance {RELATIVE:e} x the sum of magnitudes {magnitude:e})",
                (actual - expected).abs()
            )))
        }
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(4)
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 4 * n, flops: n, elements: n }
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
            let mut x = rng::uniform_f32(5, 0, 100, 0.0, 1.0);
            x[pos] = v;
            x
        };
        let mut both = with(10, f32::INFINITY);
        both[90] = f32::NEG_INFINITY;
        vec![
            ("a NaN gives NaN", with(37, f32::NAN)),
            ("+inf gives +inf", with(99, f32::INFINITY)),
            ("-inf gives -inf", with(0, f32::NEG_INFINITY)),
            ("+inf and -inf give NaN", both),
        ]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Sum {
    fn random() -> proptest::strategy::BoxedStrategy<Vec<f32>> {
        use crate::random::prelude::*;
        length().prop_flat_map(|n| values(n, -1.0, 1.0)).boxed()
    }
}
