//! `square`: `y = x * x`, element-wise. The first kernel, and memory-bound: 8 bytes move per flop.

use super::{Len, conformance_1d, ladder_1d, quick_ladder_1d};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, describe_1d};

/// `y[i] = x[i]²`. Input: `x` uniform in `[-1, 1)`. Output: `y`, as long as `x`.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Len, Square}};
/// let x = Square::generate(&Len(4), 1).unwrap();
/// let y = Square::reference(&x).unwrap();
/// assert_eq!(y[0], x[0] * x[0]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Square;

/// Multiplication is correctly rounded everywhere, so only the flushing of subnormal results may differ.
const TOLERANCE: Tolerance = Tolerance { absolute: f32::MIN_POSITIVE as f64, relative: 1e-6 };

impl Workload for Square {
    const NAME: &'static str = "square";
    const LESSON: &'static str = "the first kernel: launches are asynchronous, and the work is memory-bound";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_input: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        crate::memory::check_host_memory::<Self>(params)?;
        Ok(rng::uniform_f32(seed, 0, params.0, -1.0, 1.0))
    }

    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(input.iter().map(|&x| x * x).collect())
    }

    fn check(_input: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_1d)
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(8)
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 8 * n, flops: n, elements: n }
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

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        let mut specials = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-30, 1e20, f32::MAX];
        // Repeat past a SIMD width so the special values also pass through the vector body, not only the tail.
        specials.extend(specials.clone().iter().rev());
        specials.extend(rng::uniform_f32(3, 0, 37, -1.0, 1.0));
        vec![("NaN, ±inf, ±0, overflow and underflow", specials)]
    }
}
