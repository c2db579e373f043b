//! `softmax`: row-wise `exp(x − max) / Σ exp(x − max)`. Kernel fusion: one pass over the data instead of three.

use super::{Shape2, conformance_2d, square_ladder};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, checked_area, describe_2d};
use crate::{Error, Result};

/// Row-wise softmax of a `rows x cols` row-major matrix with entries uniform in `[-8, 8)`.
///
/// A row whose maximum is not finite (it holds NaN or +inf, or every entry is −inf) is NaN throughout; other rows
/// are unaffected.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Softmax, SoftmaxInput}};
/// let y = Softmax::reference(&SoftmaxInput::new(1, 2, vec![0.0, 0.0]).unwrap()).unwrap();
/// assert_eq!(y, vec![0.5, 0.5]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Softmax;

/// A row-major matrix for softmax.
#[derive(Debug, Clone, PartialEq)]
pub struct SoftmaxInput {
    /// Number of rows, each normalised on its own.
    pub rows: usize,
    /// Number of columns (the length of each row).
    pub cols: usize,
    /// `rows × cols` values, row-major.
    pub data: Vec<f32>,
}

impl SoftmaxInput {
    /// A matrix from its shape and data, validated.
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Result<Self> {
        let input = SoftmaxInput { rows, cols, data };
        Softmax::validate(&input)?;
        Ok(input)
    }
}

/// The rounding it must allow: `y = e / S` where each `e` comes from a fast `exp` of an argument in [-16, 0] (CUDA's
/// `__expf` is off by up to 2 + 1.16·|x| ulp, about 20 ulp = 1.2e-6 relative there) and `S` is summed in `f32` in a
/// tree or by warps (about log2(cols) roundings, 24 × 6e-8 = 1.4e-6 at 2^24 columns): a few 1e-6 relative in all,
/// which 1e-4 allows with a margin of 30 for the order of the sum. The wrong answer it must reject: a row whose sum
/// misses one term `e_j` has every output too large by `e_j / S` relative and sums to 1 + `y_j`; with x uniform in
/// [-8, 8) the largest term is about 1 and `S` about cols / 16, so a missing largest term is seen by both checks up
/// to rows of about 16 / 1e-4 = 160000 columns (the conformance and one-term-missing tests stay below that). A
/// smaller term of a longer row is within the rounding the sum is allowed.
const TOLERANCE: Tolerance = Tolerance { absolute: 1e-6, relative: 1e-4 };
/// How far a row's sum may be from 1: its `cols` outputs each carry the relative error above, and they sum to 1.
const ROW_SUM_TOLERANCE: f64 = 1e-4;

/// Validates that `data_len` matches `rows × cols` for a named 2D input.
pub(crate) fn validate_2d(what: &str, rows: usize, cols: usize, data_len: usize) -> Result<()> {
    let area = checked_area(what, rows, cols)?;
    if area != data_len {
        return Err(Error::invalid(format!("{what} of {rows} x {cols} needs {area} values, got {data_len}")));
    }
    Ok(())
}

impl Workload for Softmax {
    const NAME: &'static str = "softmax";
    const LESSON: &'static str = "kernel fusion: one pass over the data instead of several";
    type Params = Shape2;
    type Input = SoftmaxInput;
    type Output = Vec<f32>;

    fn params(input: &SoftmaxInput) -> Shape2 {
        Shape2::new(input.rows, input.cols)
    }

    fn validate(input: &SoftmaxInput) -> Result<()> {
        validate_2d("softmax matrix", input.rows, input.cols, input.data.len())
    }

    fn generate(params: &Shape2, seed: u64) -> Result<SoftmaxInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        let n = checked_area("softmax matrix", params.rows, params.cols)?;
        Ok(SoftmaxInput { rows: params.rows, cols: params.cols, data: rng::uniform_f32(seed, 0, n, -8.0, 8.0) })
    }

    fn reference(input: &SoftmaxInput) -> Result<Vec<f32>> {
        Self::validate(input)?;
        let mut out = vec![0.0f32; input.data.len()];
        if input.cols == 0 {
            return Ok(out);
        }
        for (row, y) in input.data.chunks_exact(input.cols).zip(out.chunks_exact_mut(input.cols)) {
            let max =
                row.iter().fold(f64::NEG_INFINITY, |m, &x| if (x as f64) > m || x.is_nan() { x as f64 } else { m });
            if !max.is_finite() || row.iter().any(|x| x.is_nan()) {
                y.fill(f32::NAN);
                continue;
            }
            let total: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
            for (y, &x) in y.iter_mut().zip(row) {
                *y = ((x as f64 - max).exp() / total) as f32;
            }
        }
        Ok(out)
    }

    fn check(input: &SoftmaxInput, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_2d(input.cols))?;
        if input.cols == 0 {
            return Ok(());
        }
        for (r, row) in actual.chunks_exact(input.cols).enumerate() {
            let total: f64 = row.iter().map(|&y| y as f64).sum();
            if total.is_finite() && (total - 1.0).abs() > ROW_SUM_TOLERANCE {
                return Err(Mismatch::new(format!("row {r} sums to {total}, expected 1 within {ROW_SUM_TOLERANCE}")));
            }
        }
        Ok(())
    }

    fn host_bytes(params: &Shape2) -> Option<u64> {
        (params.rows as u64).checked_mul(params.cols as u64)?.checked_mul(8)
    }

    fn cost(params: &Shape2) -> Cost {
        let n = (params.rows * params.cols) as u64;
        Cost { bytes: 8 * n, flops: 5 * n, elements: n }
    }

    /// Square matrices 64² … 8192², then wide rows 256 × 2^10 … 256 × 2^18.
    fn ladder() -> Vec<Shape2> {
        let mut ladder = square_ladder(64, 8192);
        ladder.extend((10..=18).step_by(2).map(|e| Shape2::new(256, 1 << e)));
        ladder
    }

    fn quick_ladder() -> Vec<Shape2> {
        vec![Shape2::square(64), Shape2::square(256), Shape2::square(1024), Shape2::new(256, 1 << 14)]
    }

    fn conformance_params() -> Vec<Shape2> {
        let mut shapes = conformance_2d();
        shapes.push(Shape2::new(3, 65537));
        shapes
    }

    /// The same special values at three widths: 37 columns (a scalar path on the GPUs), 40 (rows of whole `vec4`s)
    /// and 8200 (whole `vec4`s, longer than a GPU kernel keeps in registers).
    fn special_inputs() -> Vec<(&'static str, SoftmaxInput)> {
        let with_specials = |cols: usize| {
            let mut data = rng::uniform_f32(9, 0, 5 * cols, -8.0, 8.0);
            data[3] = f32::NAN; // row 0
            data[cols + 20] = f32::INFINITY; // row 1
            data[2 * cols + 5] = f32::NEG_INFINITY; // row 2: finite max, that entry is 0
            data[3 * cols..4 * cols].fill(f32::NEG_INFINITY); // row 3: no finite maximum
            data[4 * cols + 36] = 80.0; // row 4: a large value must not overflow exp
            SoftmaxInput { rows: 5, cols, data }
        };
        vec![
            ("NaN, +inf, -inf and an all -inf row, 37 columns", with_specials(37)),
            ("NaN, +inf, -inf and an all -inf row, 40 columns", with_specials(40)),
            ("NaN, +inf, -inf and an all -inf row, 8200 columns", with_specials(8200)),
        ]
    }
}
