//! `softmax`: row-wise `exp(x − max) / Σ exp(x − max)`. Kernel fusion: one pass over the data instead of three.

use super::{Shape2, conformance_2d, off_ladder_params, square_ladder};
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Tolerance, Workload, checked_area, describe_2d};
use crate::{Error, Result};
use crate::shard::concatenate;
use crate::workload::Sharding;

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

/// Workgroups (CUDA blocks) a `split` softmax aims to launch: enough to fill a large GPU (132 multiprocessors of an
/// H100, several blocks each) even when the rows are few.
pub const SPLIT_TARGET_GROUPS: usize = 1024;

/// From this many rows a softmax is not split: one workgroup per row already fills the GPU. Measured on an H100 with
/// WGSL's kernels, 256 long rows took the same time split or not (bound by the second read of each row, which a
/// split keeps), 256 rows of 16384 columns took longer split, and 64 rows of 131072 shorter
/// (docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
pub const SPLIT_BELOW_ROWS: usize = 128;

/// The fewest columns one workgroup of a `split` softmax takes: fewer would leave each of its threads a handful of
/// values, and the second kernel's combining of the row's partial results would cost more than it saves.
pub const SPLIT_MIN_CHUNK: usize = 4096;

/// Chunks are a whole number of this many columns, so that every chunk of a row that starts on a 16-byte boundary
/// does too (`vec4` loads) and a 512-thread workgroup's strided loop has the same trip count in every chunk.
pub const SPLIT_CHUNK_ALIGN: usize = 2048;

/// How the `split` variants of the GPU backends cut each row of a `rows x cols` softmax: `(chunk_cols, chunks)`,
/// one workgroup per (row, chunk). One workgroup per row leaves a GPU mostly idle when the rows are few (fewer than
/// [`SPLIT_BELOW_ROWS`]) and long (the logits of a language model while it generates: a few dozen rows of 32768 to
/// 262144 columns); splitting each row over [`SPLIT_TARGET_GROUPS`] `/ rows` workgroups, each at least
/// [`SPLIT_MIN_CHUNK`] columns, fills it. One chunk means the row is not worth splitting (`fused` is then the better
/// variant).
pub fn split_columns(rows: usize, cols: usize) -> (usize, usize) {
    if rows >= SPLIT_BELOW_ROWS {
        return (cols.max(1), 1);
    }
    split_columns_of_at_least(rows, cols, SPLIT_MIN_CHUNK)
}

/// [`split_columns`] for any number of rows, with chunks of at least `min_chunk` columns: for a backend whose
/// one-workgroup-per-row kernel needs more rows than WGSL's to fill the GPU, and longer chunks to gain from splitting
/// them.
pub fn split_columns_of_at_least(rows: usize, cols: usize, min_chunk: usize) -> (usize, usize) {
    if rows == 0 || cols == 0 {
        return (cols.max(1), 1);
    }
    let wanted = SPLIT_TARGET_GROUPS.div_ceil(rows);
    let most = (cols / min_chunk.max(1)).max(1);
    let chunk_cols = cols.div_ceil(wanted.clamp(1, most)).next_multiple_of(SPLIT_CHUNK_ALIGN).min(cols);
    (chunk_cols, cols.div_ceil(chunk_cols))
}

impl Workload for Softmax {
    const NAME: &'static str = "softmax";
    const LESSON: &'static str = "kernel fusion: one pass over the data instead of several";
    type Params = Shape2;
    type Input = SoftmaxInput;
    type Output = Vec<f32>;

    /// Whole rows per member: a row is normalised by its own maximum and sum, so no member needs another's.
    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "rows",
            units: |p| p.rows,
            part: |p, r| Shape2::new(r.len(), p.cols),
            cut: |input, r| SoftmaxInput {
                rows: r.len(),
                cols: input.cols,
                data: crate::shard::copy_of(&input.data[r.start * input.cols..r.end * input.cols]),
            },
            join: |_, parts| concatenate(parts),
            unit_costs: None,
            in_place: Some(crate::array_in_place!(
                F32,
                len: |input: &SoftmaxInput| input.rows * input.cols,
                per_unit: |input: &SoftmaxInput| input.cols,
                inputs: |input| vec![bytemuck::cast_slice(&input.data)],
            )),
        })
    }

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

    /// 4 bytes more per element where the input is read twice (the GPUs' `split` always, their `fused` for rows
    /// longer than [`FUSED_ROW_READ_ONCE`](crate::traffic::FUSED_ROW_READ_ONCE)) or the output's lines are read before
    /// they are written (the CPU, which writes with ordinary stores).
    fn traffic(params: &Shape2, backend: crate::BackendKind, variant: &str) -> u64 {
        let n = (params.rows * params.cols) as u64;
        let more = match backend {
            crate::BackendKind::Cpu => crate::traffic::cpu_line_reads(n, false),
            _ if variant == "split" => 4 * n,
            _ if variant == "fused" && params.cols > crate::traffic::FUSED_ROW_READ_ONCE => 4 * n,
            _ => 0,
        };
        Self::cost(params).bytes + more
    }

    /// Square matrices 64² … 8192², then wide rows 256 × 2^10 … 256 × 2^18.
    /// Rows of 8192 columns, as in the ladder's largest square.
    fn streaming_probe(bytes: u64) -> Option<Shape2> {
        Some(off_ladder_params::<Self>(bytes, |rows| Shape2::new(rows, 8192)))
    }

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

    fn large_params() -> Vec<Shape2> {
        vec![Shape2::new(5801, 5800)]
    }

    /// The same special values at four widths: 37 columns (a scalar path on the GPUs), 40 (rows of whole `vec4`s),
    /// 8200 (whole `vec4`s, longer than a GPU kernel keeps in registers) and 20484, with the special values in the
    /// last of the four chunks a `split` variant cuts each row into ([`split_columns`]).
    fn special_inputs() -> Vec<(&'static str, SoftmaxInput)> {
        let with_specials = |cols: usize, from: usize| {
            let mut data = rng::uniform_f32(9, 0, 5 * cols, -8.0, 8.0);
            data[from + 3] = f32::NAN; // row 0
            data[cols + from + 20] = f32::INFINITY; // row 1
            data[2 * cols + from + 5] = f32::NEG_INFINITY; // row 2: finite max, that entry is 0
            data[3 * cols..4 * cols].fill(f32::NEG_INFINITY); // row 3: no finite maximum
            data[4 * cols + from + 36] = 80.0; // row 4: a large value must not overflow exp
            SoftmaxInput { rows: 5, cols, data }
        };
        vec![
            ("NaN, +inf, -inf and an all -inf row, 37 columns", with_specials(37, 0)),
            ("NaN, +inf, -inf and an all -inf row, 40 columns", with_specials(40, 0)),
            ("NaN, +inf, -inf and an all -inf row, 8200 columns", with_specials(8200, 0)),
            (
                "NaN, +inf, -inf and an all -inf row, in the last split chunk of 20484 columns",
                with_specials(20484, 20440),
            ),
        ]
    }

    fn invalid_inputs() -> Vec<(&'static str, SoftmaxInput, &'static str)> {
        vec![("3 x 4 of 11 values", SoftmaxInput { rows: 3, cols: 4, data: vec![0.0; 11] }, "3 x 4")]
    }
}


#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Softmax {
    fn random() -> proptest::strategy::BoxedStrategy<SoftmaxInput> {
        use crate::random::prelude::*;
        (side(40), side(600))
            .prop_flat_map(|(rows, cols)| values(rows * cols, -8.0, 8.0).prop_map(move |data| (rows, cols, data)))
            .prop_map(|(rows, cols, data)| SoftmaxInput { rows, cols, data })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes each backend's variants really move: a second read of long rows on the GPUs (always with `split`),
    /// the lines of the output read before they are written on the CPU.
    #[test]
    fn long_rows_and_the_cpu_move_more_than_the_cost() {
        use crate::BackendKind::{Cpu, Cuda, Wgpu};
        let (square, long) = (Shape2::square(4096), Shape2::new(256, 65536));
        let more = |shape: Shape2| Softmax::cost(&shape).bytes * 3 / 2;
        for backend in [Cuda, Wgpu] {
            assert_eq!(Softmax::traffic(&square, backend, "fused"), Softmax::cost(&square).bytes);
            assert_eq!(Softmax::traffic(&long, backend, "fused"), more(long));
            assert_eq!(Softmax::traffic(&square, backend, "split"), more(square));
        }
        let edge = Shape2::new(2, crate::traffic::FUSED_ROW_READ_ONCE);
        assert_eq!(Softmax::traffic(&edge, Wgpu, "fused"), Softmax::cost(&edge).bytes);
        assert_eq!(Softmax::traffic(&square, Cpu, "simd"), more(square));
    }

    #[test]
    fn split_columns_fill_the_gpu_for_few_long_rows_and_leave_other_shapes_whole() {
        // Few long rows: chunks of a whole number of aligned columns, covering the row exactly once.
        assert_eq!(split_columns(64, 131072), (8192, 16));
        assert_eq!(split_columns(64, 16384), (4096, 4));
        assert_eq!(split_columns(1, 1 << 20), (4096, 256));
        // As many rows as fill the GPU one workgroup each: not split.
        assert_eq!(split_columns(SPLIT_BELOW_ROWS, 1 << 20), (1 << 20, 1));
        assert_eq!(split_columns(256, 65536), (65536, 1));
        // Ragged rows: every chunk but the last is full, and none is empty.
        let (chunk, chunks) = split_columns(3, 100_003);
        assert!(chunk % SPLIT_CHUNK_ALIGN == 0 && chunk * (chunks - 1) < 100_003 && chunk * chunks >= 100_003);
        // Many rows, or short ones: one chunk, the whole row.
        assert_eq!(split_columns(4096, 4096), (4096, 1));
        assert_eq!(split_columns(256, 4096), (4096, 1));
        assert_eq!(split_columns(1, 100), (100, 1));
        assert_eq!(split_columns(0, 0), (1, 1));
        // The special values of the widest special input lie in the last chunk of four.
        let (chunk, chunks) = split_columns(5, 20484);
        assert!(chunks == 4 && chunk * 3 <= 20440);
        // Longer chunks where asked for, at any number of rows.
        assert_eq!(split_columns_of_at_least(256, 65536, 8192), (16384, 4));
        assert_eq!(split_columns_of_at_least(128, 65536, 8192), (8192, 8));
        assert_eq!(split_columns_of_at_least(256, 16384, 8192), (8192, 2));
        // No shape gives more chunks than the target asks for, however long the row.
        assert!(split_columns(1, usize::MAX / 8).1 <= SPLIT_TARGET_GROUPS);
    }
}
