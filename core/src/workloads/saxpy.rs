//! `saxpy`: `y = a*x + y`, in place. The STREAM triad: fused multiply-add and an in-place update, memory-bound.

use std::fmt;

use super::{BEYOND_128_MIB, conformance_1d, ladder_1d, off_ladder_params, quick_ladder_1d};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, describe_1d};
use crate::{Error, Result};
use crate::shard::concatenate;
use crate::workload::Sharding;

/// `y[i] = a·x[i] + y[i]`, updating `y` in place. Inputs: `x`, `y` uniform in `[-1, 1)`; `a` = 2.5 by default.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Saxpy, SaxpyParams}};
/// let input = Saxpy::generate(&SaxpyParams::new(3), 1).unwrap();
/// let y = Saxpy::reference(&input).unwrap();
/// assert!((y[0] - (2.5 * input.x[0] + input.y[0])).abs() < 1e-6);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Saxpy;

/// The length and the scalar `a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaxpyParams {
    /// Elements of `x` and `y`.
    pub n: usize,
    /// The scalar multiplier.
    pub a: f32,
}

impl SaxpyParams {
    /// The default scalar of the specification.
    pub const DEFAULT_A: f32 = 2.5;

    /// `n` elements with the default `a`.
    pub fn new(n: usize) -> Self {
        SaxpyParams { n, a: Self::DEFAULT_A }
    }
}

impl fmt::Display for SaxpyParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.a == Self::DEFAULT_A { write!(f, "{}", self.n) } else { write!(f, "{} (a={})", self.n, self.a) }
    }
}

/// The scalar and the two vectors; `y` is the one updated.
#[derive(Debug, Clone, PartialEq)]
pub struct SaxpyInput {
    /// The scalar multiplier.
    pub a: f32,
    /// The vector scaled by `a`.
    pub x: Vec<f32>,
    /// The vector added to, and the output.
    pub y: Vec<f32>,
}

/// FMA and a separate multiply and add differ by one rounding.
const TOLERANCE: Tolerance = Tolerance { absolute: 1e-6, relative: 1e-6 };

impl Workload for Saxpy {
    const NAME: &'static str = "saxpy";
    const LESSON: &'static str = "fused multiply-add and in-place update: the STREAM triad";
    type Params = SaxpyParams;
    type Input = SaxpyInput;
    type Output = Vec<f32>;

    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "elements",
            units: |p| p.n,
            part: |p, r| SaxpyParams { n: r.len(), ..*p },
            cut: |input, r| SaxpyInput { a: input.a, x: crate::shard::copy_of(&input.x[r.clone()]), y: crate::shard::copy_of(&input.y[r]) },
            join: |_, parts| concatenate(parts),
            unit_costs: None,
            in_place: Some(crate::array_in_place!(
                F32,
                len: |input: &SaxpyInput| input.x.len(),
                per_unit: |_| 1,
                inputs: |input| vec![bytemuck::cast_slice(&input.x), bytemuck::cast_slice(&input.y)],
            )),
        })
    }

    fn params(input: &SaxpyInput) -> SaxpyParams {
        SaxpyParams { n: input.x.len(), a: input.a }
    }

    fn validate(input: &SaxpyInput) -> Result<()> {
        if input.x.len() != input.y.len() {
            return Err(Error::invalid(format!(
                "saxpy needs x and y of the same length, got x of {} and y of {} elements",
                input.x.len(),
                input.y.len()
            )));
        }
        Ok(())
    }

    fn generate(params: &SaxpyParams, seed: u64) -> Result<SaxpyInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        Ok(SaxpyInput {
            a: params.a,
            x: rng::uniform_f32(seed, 0, params.n, -1.0, 1.0),
            y: rng::uniform_f32(seed, 1, params.n, -1.0, 1.0),
        })
    }

    fn reference(input: &SaxpyInput) -> Result<Vec<f32>> {
        Self::validate(input)?;
        let a = input.a as f64;
        Ok(input.x.iter().zip(&input.y).map(|(&x, &y)| (a * x as f64 + y as f64) as f32).collect())
    }

    fn check(_: &SaxpyInput, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_1d)
    }

    fn host_bytes(params: &SaxpyParams) -> Option<u64> {
        (params.n as u64).checked_mul(12)
    }

    fn cost(params: &SaxpyParams) -> Cost {
        let n = params.n as u64;
        Cost { bytes: 12 * n, flops: 2 * n, elements: n }
    }

    fn streaming_probe(bytes: u64) -> Option<SaxpyParams> {
        Some(off_ladder_params::<Self>(bytes, SaxpyParams::new))
    }

    fn ladder() -> Vec<SaxpyParams> {
        ladder_1d().into_iter().map(SaxpyParams::new).collect()
    }

    fn quick_ladder() -> Vec<SaxpyParams> {
        quick_ladder_1d().into_iter().map(SaxpyParams::new).collect()
    }

    fn conformance_params() -> Vec<SaxpyParams> {
        let mut params: Vec<_> = conformance_1d().into_iter().map(SaxpyParams::new).collect();
        params.push(SaxpyParams { n: 1025, a: -0.75 });
        params
    }

    fn large_params() -> Vec<SaxpyParams> {
        vec![SaxpyParams::new(BEYOND_128_MIB)]
    }

    fn special_inputs() -> Vec<(&'static str, SaxpyInput)> {
        let x = [f32::NAN, f32::INFINITY, 1.0, f32::NEG_INFINITY, 0.5, 1.0, -1.0, 2.0, 3.0, 1e38];
        let y = [1.0, 1.0, f32::INFINITY, 0.0, f32::NAN, f32::NEG_INFINITY, 0.25, -5.0, 0.0, 1e38];
        let repeat = |v: &[f32]| v.iter().cycle().take(3 * v.len()).copied().collect::<Vec<_>>();
        vec![("NaN, ±inf and overflow in x and y", SaxpyInput { a: 2.5, x: repeat(&x), y: repeat(&y) })]
    }

    fn invalid_inputs() -> Vec<(&'static str, SaxpyInput, &'static str)> {
        vec![("x of 3 and y of 4", SaxpyInput { a: 2.0, x: vec![1.0; 3], y: vec![1.0; 4] }, "same length")]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Saxpy {
    fn random() -> proptest::strategy::BoxedStrategy<SaxpyInput> {
        use crate::random::prelude::*;
        (length(), -4.0f32..4.0)
            .prop_flat_map(|(n, a)| (values(n, -1.0, 1.0), values(n, -1.0, 1.0)).prop_map(move |(x, y)| (a, x, y)))
            .prop_map(|(a, x, y)| SaxpyInput { a, x, y })
            .boxed()
    }
}
