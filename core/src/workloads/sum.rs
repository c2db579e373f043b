//! `sum`: a reduction. Synchronisation, shared memory, atomics, and the order of floating-point additions.

use super::{Len, conformance_1d, ladder_1d, quick_ladder_1d};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload};

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

const TOLERANCE: Tolerance = Tolerance { absolute: 0.0, relative: 1e-5 };

impl Workload for Sum {
    const NAME: &'static str = "sum";
    const LESSON: &'static str = "reduction: synchronisation, shared memory, atomics, floating-point order";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = f64;

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_input: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        Ok(rng::uniform_f32(seed, 0, params.0, 0.0, 1.0))
    }

    fn reference(input: &Vec<f32>) -> Result<f64> {
        Ok(input.iter().map(|&x| x as f64).sum())
    }

    fn check(_: &Vec<f32>, expected: &f64, actual: &f64, _: Precision) -> Result<(), Mismatch> {
        if TOLERANCE.accepts(*expected, *actual) {
            Ok(())
        } else {
            Err(Mismatch::new(format!(
                "sum: expected {expected}, got {actual} (relative error {:e}, tolerance 1e-5)",
                ((actual - expected) / expected).abs()
            )))
        }
    }

    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 4 * n, flops: n, elements: n }
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
