//! `matmul`: `C = A·B`, row-major. Compute-bound: coalescing, tiling, shared memory, register blocking, and how a
//! hand-written kernel compares with the vendor's library.

use std::fmt;

use rayon::prelude::*;

use super::square_ladder;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, checked_area, describe_2d};
use crate::{Error, Result};
use crate::shard::concatenate;
use crate::workload::Sharding;

/// `C[M×N] = A[M×K] · B[K×N]`, all row-major, A and B uniform in `[-1, 1)`.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Matmul, MatmulInput}};
/// let input = MatmulInput::new(1, 2, 1, vec![1.0, 2.0], vec![3.0, 4.0]).unwrap();
/// assert_eq!(Matmul::reference(&input).unwrap(), vec![11.0]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Matmul;

/// The shape `M x K x N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatmulParams {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of A, rows of B: the length of each dot product.
    pub k: usize,
    /// Columns of B and C.
    pub n: usize,
}

impl MatmulParams {
    /// The shape `m x k x n`.
    pub const fn new(m: usize, k: usize, n: usize) -> Self {
        MatmulParams { m, k, n }
    }

    /// The square shape `size x size x size`.
    pub const fn square(size: usize) -> Self {
        MatmulParams { m: size, k: size, n: size }
    }
}

impl fmt::Display for MatmulParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.k, self.n)
    }
}

/// Two row-major matrices to multiply.
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulInput {
    /// Rows of A.
    pub m: usize,
    /// Columns of A and rows of B.
    pub k: usize,
    /// Columns of B.
    pub n: usize,
    /// `m × k` values, row-major.
    pub a: Vec<f32>,
    /// `k × n` values, row-major.
    pub b: Vec<f32>,
}

impl MatmulInput {
    /// Two matrices from their shapes and data, validated.
    pub fn new(m: usize, k: usize, n: usize, a: Vec<f32>, b: Vec<f32>) -> Result<Self> {
        let input = MatmulInput { m, k, n, a, b };
        Matmul::validate(&input)?;
        Ok(input)
    }
}

impl Workload for Matmul {
    const NAME: &'static str = "matmul";
    const LESSON: &'static str = "compute-bound: tiling, shared memory, register blocking, the vendor library";
    type Params = MatmulParams;
    type Input = MatmulInput;
    type Output = Vec<f32>;

    /// Rows of A per member, all of B on every member (the broadcast), rows of C written by their member.
    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "rows of A",
            units: |p| p.m,
            part: |p, r| MatmulParams { m: r.len(), ..*p },
            cut: |input, r| MatmulInput {
                m: r.len(),
                k: input.k,
                n: input.n,
                a: input.a[r.start * input.k..r.end * input.k].to_vec(),
                b: input.b.clone(),
            },
            join: |_, parts| concatenate(parts),
            unit_costs: None,
        })
    }

    fn params(input: &MatmulInput) -> MatmulParams {
        MatmulParams::new(input.m, input.k, input.n)
    }

    fn validate(input: &MatmulInput) -> Result<()> {
        let MatmulInput { m, k, n, .. } = *input;
        let a_len = checked_area("matrix A", m, k)?;
        let b_len = checked_area("matrix B", k, n)?;
        checked_area("matrix C", m, n)?;
        if input.a.len() != a_len || input.b.len() != b_len {
            return Err(Error::invalid(format!(
                "matmul {m}x{k}x{n} needs A of {m} x {k} = {a_len} values and B of {k} x {n} = {b_len} values \
                 (inner dimensions must match), got A of {} and B of {}",
                input.a.len(),
                input.b.len()
            )));
        }
        Ok(())
    }

    fn generate(p: &MatmulParams, seed: u64) -> Result<MatmulInput> {
        crate::memory::check_host_memory::<Self>(p)?;
        let a_len = checked_area("matrix A", p.m, p.k)?;
        let b_len = checked_area("matrix B", p.k, p.n)?;
        Ok(MatmulInput {
            m: p.m,
            k: p.k,
            n: p.n,
            a: rng::uniform_f32(seed, 0, a_len, -1.0, 1.0),
            b: rng::uniform_f32(seed, 1, b_len, -1.0, 1.0),
        })
    }

    /// Each entry is a sequential `f64` dot product; rows are computed in parallel (the order within an entry, and so
    /// the result, does not depend on the thread count).
    fn reference(input: &MatmulInput) -> Result<Vec<f32>> {
        Self::validate(input)?;
        let MatmulInput { k, n, .. } = *input;
        let mut c = vec![0.0f32; input.m * n];
        if n == 0 {
            return Ok(c);
        }
        c.par_chunks_mut(n).enumerate().for_each(|(i, c_row)| {
            let mut acc = vec![0.0f64; n];
            for (p, &a) in input.a[i * k..(i + 1) * k].iter().enumerate() {
                for (acc, &b) in acc.iter_mut().zip(&input.b[p * n..(p + 1) * n]) {
                    *acc += a as f64 * b as f64;
                }
            }
            for (c, acc) in c_row.iter_mut().zip(acc) {
                *c = acc as f32;
            }
        });
        Ok(c)
    }

    /// Full precision: `|c − ref₆₄| ≤ 1e-5 + 2e-7·K`. With A and B uniform in `[-1, 1)` each product has a variance
    /// of 1/9 and each `f32` addition adds a rounding error of at most 2^-24 of the running sum (about √(k/9) after
    /// k terms), so the error of a sequential `f32` dot product spreads about 8e-9·K; the tolerance is about 25 times
    /// that, which blocked, tiled and FMA-contracted orders all meet. A product term that is dropped or counted
    /// twice moves some entry by its own size (of order 0.1 to 1), which this rejects at every K up to 10^5. Reduced
    /// precision (TF32 inputs, 10 mantissa bits): `1e-4 + 1.5e-3·√K`, the spread of the inputs' rounding.
    fn check(
        input: &MatmulInput,
        expected: &Vec<f32>,
        actual: &Vec<f32>,
        precision: Precision,
    ) -> Result<(), Mismatch> {
        let k = input.k as f64;
        let tolerance = match precision {
            Precision::Full => Tolerance { absolute: 1e-5 + 2e-7 * k, relative: 0.0 },
            Precision::Reduced => Tolerance { absolute: 1e-4 + 1.5e-3 * k.sqrt(), relative: 0.0 },
        };
        tolerance.check_slices(expected, actual, describe_2d(input.n))
    }

    fn host_bytes(p: &MatmulParams) -> Option<u64> {
        let (m, k, n) = (p.m as u64, p.k as u64, p.n as u64);
        let elements = m.checked_mul(k)?.checked_add(k.checked_mul(n)?)?.checked_add(m.checked_mul(n)?)?;
        elements.checked_mul(4)
    }

    fn cost(p: &MatmulParams) -> Cost {
        let (m, k, n) = (p.m as u64, p.k as u64, p.n as u64);
        Cost { bytes: 4 * (m * k + k * n + m * n), flops: 2 * m * n * k, elements: m * n }
    }

    fn ladder() -> Vec<MatmulParams> {
        square_ladder(32, 8192).into_iter().map(|s| MatmulParams::square(s.rows)).collect()
    }

    fn quick_ladder() -> Vec<MatmulParams> {
        [64, 256, 512, 1024].into_iter().map(MatmulParams::square).collect()
    }

    /// 3072^3: between the full ladder's 2048^3 and 4096^3, so that 2048^3 is interpolated and the larger sizes grow
    /// from a GPU already full. A multiple of 1024, like the ladder's sizes from 1024 on: no kernel meets a ragged edge
    /// there that it does not meet on the ladder.
    fn compute_probe() -> Option<MatmulParams> {
        Some(MatmulParams::square(3072))
    }

    fn conformance_params() -> Vec<MatmulParams> {
        [(0, 5, 3), (4, 0, 3), (4, 5, 0), (1, 1, 1), (1, 7, 3), (17, 33, 65), (64, 64, 64), (129, 65, 257)]
            .into_iter()
            .map(|(m, k, n)| MatmulParams::new(m, k, n))
            .collect()
    }

    fn special_inputs() -> Vec<(&'static str, MatmulInput)> {
        let mut input = Self::generate(&MatmulParams::new(5, 9, 19), 4).expect("small shape");
        input.a[9] = f32::NAN; // row 1 of C is NaN
        input.b[3] = f32::INFINITY; // column 3 of C is ±inf or NaN
        vec![("NaN in A, +inf in B", input)]
    }

    fn invalid_inputs() -> Vec<(&'static str, MatmulInput, &'static str)> {
        vec![("2x3 times 2x4", MatmulInput { m: 2, k: 3, n: 4, a: vec![0.0; 6], b: vec![0.0; 8] }, "inner dimensions")]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Matmul {
    fn random() -> proptest::strategy::BoxedStrategy<MatmulInput> {
        use crate::random::prelude::*;
        (side(40), side(70), side(40))
            .prop_flat_map(|(m, k, n)| {
                (values(m * k, -1.0, 1.0), values(k * n, -1.0, 1.0)).prop_map(move |(a, b)| (m, k, n, a, b))
            })
            .prop_map(|(m, k, n, a, b)| MatmulInput { m, k, n, a, b })
            .boxed()
    }
}
