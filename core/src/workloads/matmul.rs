//! `matmul`: `C = A·B`, row-major. Compute-bound: coalescing, tiling, shared memory, register blocking, and how a
//! hand-written kernel compares with the vendor's library.

use std::fmt;

use rayon::prelude::*;

use super::square_ladder;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Workload, check_lengths, checked_area};
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
                a: crate::shard::copy_of(&input.a[r.start * input.k..r.end * input.k]),
                b: crate::shard::copy_of(&input.b),
            },
            join: |_, parts| concatenate(parts),
            unit_costs: None,
            in_place: Some(crate::array_in_place!(
                F32,
                len: |input: &MatmulInput| input.m * input.n,
                per_unit: |input: &MatmulInput| input.n,
                inputs: |input| vec![bytemuck::cast_slice(&input.a), bytemuck::cast_slice(&input.b)],
            )),
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

    /// The bound each precision's result must meet, derived from its unit roundoff and K: see [`check_matmul`].
    fn check(
        input: &MatmulInput,
        expected: &Vec<f32>,
        actual: &Vec<f32>,
        precision: Precision,
    ) -> Result<(), Mismatch> {
        check_matmul(input, expected, actual, precision)
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

/// The chance a correct result fails [`check_matmul`]'s per-entry bound, over all its entries: one in a million.
const FALSE_ALARM: f64 = 1e-6;

/// The fewest entries whose root-mean-square error [`check_matmul`] holds to its precision's bound: enough for the
/// mean of the squared errors to be within a few percent of its expectation.
const FEWEST_ENTRIES_FOR_RMS: usize = 1024;

/// Checks a matmul result against the `f64` reference `expected` at the bound `precision` allows, derived from its
/// unit roundoff and K.
///
/// **The model.** Entry (i, j) of C is Σₖ pₖ, pₖ = a_ik·b_kj. A precision rounds each input to a format of unit
/// roundoff u ([`Precision::input_unit_roundoff`]: 0 for fp32, 2^-10 for TF32, 2^-11 for fp16, 2^-8 for bf16), so each
/// product is formed as pₖ(1 + dₖ) with |dₖ| ≤ 2u + u² (the product itself is exact in a tensor core), and the K
/// products are summed in `f32` (unit roundoff v = 2^-24), each addition wrong by at most v times its partial sum.
///
/// **Each entry** (a wrong answer: a product dropped or counted twice, a stale tile) must satisfy
/// `|c − ref| ≤ (λ(2u + u²) + s)·w + (2u + v)·|ref|`, where w = min(‖a_i‖∞‖b_j‖₂, ‖a_i‖₂‖b_j‖∞) ≥ ‖p‖₂ is
/// computed from row and column norms. The input rounding's error Σₖ dₖpₖ is a sum of independent bounded terms:
/// their mean (a truncating conversion's bias, at most 2u per product) moves the entry by at most 2u·|ref|, and by
/// Hoeffding's inequality the rest exceeds λ(2u + u²)‖p‖₂ with probability at most 2·exp(−λ²/2), which
/// λ = √(2 ln(2MN / 10⁻⁶)) makes one in a million over all MN entries. The partial sums grow like √(k/K)·‖p‖₂, so
/// the K additions' errors total at most about (2/3)K·v·‖p‖₂ even where they do not cancel (s = K·v for tensor
/// cores, below); `f32` sums rounded to nearest have errors of mean zero, which Hoeffding's inequality bounds by
/// s = λ√K·v. v·|ref| is the reference's own rounding to `f32`.
///
/// **The whole result** (a result computed in a lower precision than claimed, such as a bf16 result passed off as
/// TF32) must satisfy `ρ ≤ √((2u + u²)² + a²) + v`, where ρ = ‖C − ref‖_F / √(Σᵢⱼ‖p_ij‖₂²) is the root-mean-square
/// error relative to the products' norms (the denominator is Σₖ(Σᵢa²ᵢₖ)(Σⱼb²ₖⱼ): K(M + N) work). The input
/// rounding contributes E[(Σₖdₖpₖ)²] ≤ (2u + u²)²‖p‖₂² at every K, and rounding to nearest about (u/√3)²‖p‖₂², so a
/// precision coarser than claimed shows here however large K is (bf16's ρ is about 2^-8/√3 = 2.3e-3, above TF32's
/// bound of 2^-9 + … = 2.0e-3 up to K = 8192), where the per-entry bound, which must allow the largest of MN entries,
/// grows past it. The accumulation adds a, uncorrelated with the inputs' rounding: `f32` sums rounded to nearest cancel
/// (a = 4√K·v), a tensor core's, aligned and normalised by truncation (Fasi, Higham, Mikaitis and Pranesh, "Numerical
/// behavior of NVIDIA tensor cores", 2021), need not (a = K·v). The statistic is held to its bound only where C has
/// [`FEWEST_ENTRIES_FOR_RMS`] entries and every input is finite.
///
/// NaN must meet NaN and an infinity the same infinity.
pub fn check_matmul(
    input: &MatmulInput,
    expected: &[f32],
    actual: &[f32],
    precision: Precision,
) -> std::result::Result<(), Mismatch> {
    check_lengths(expected.len(), actual.len())?;
    let MatmulInput { m, k, n, .. } = *input;
    if input.a.len() != m * k || input.b.len() != k * n || expected.len() != m * n {
        return Err(Mismatch::new(format!("the input is not {m}x{k}x{n}: {}", Matmul::validate(input).err().map_or(String::new(), |e| e.to_string()))));
    }
    if m * n == 0 {
        return Ok(());
    }
    let (u, v) = (precision.input_unit_roundoff(), precision.accumulator_unit_roundoff());
    let rounding = 2.0 * u + u * u;
    let lambda = (2.0 * (2.0 * (m * n) as f64 / FALSE_ALARM).ln()).sqrt();
    let root_k = (k as f64).sqrt();
    let (entry_sums, rms_sums) = if precision == Precision::Fp32 {
        (lambda * root_k * v, 4.0 * root_k * v)
    } else {
        (k as f64 * v, k as f64 * v)
    };
    let spread = lambda * rounding + entry_sums;
    // Row norms of A (∞ and 2), column norms of B, and the sums of squares along K the statistic needs.
    let row_norms: Vec<(f64, f64)> = (0..m).into_par_iter().map(|i| norms(&input.a[i * k..(i + 1) * k])).collect();
    let mut column_max = vec![0.0f64; n];
    let mut column_squares = vec![0.0f64; n];
    let mut b_row_squares = vec![0.0f64; k];
    for (p, row) in input.b.chunks_exact(n.max(1)).enumerate().take(k) {
        for ((max, squares), &b) in column_max.iter_mut().zip(&mut column_squares).zip(row) {
            let b = b as f64;
            *max = max.max(b.abs());
            *squares += b * b;
            b_row_squares[p] += b * b;
        }
    }
    let column_norms: Vec<(f64, f64)> = column_max.into_iter().zip(column_squares.into_iter().map(f64::sqrt)).collect();
    let bound = |i: usize, j: usize, reference: f64| {
        let ((a_max, a_two), (b_max, b_two)) = (row_norms[i], column_norms[j]);
        let w = (a_max * b_two).min(a_two * b_max);
        spread * w + (2.0 * u + v) * reference.abs()
    };
    let bad = expected.par_iter().zip(actual).enumerate().find_first(|&(index, (&e, &a))| {
        let (e, a) = (e as f64, a as f64);
        if !e.is_finite() || !a.is_finite() {
            return !(e == a || (e.is_nan() && a.is_nan()));
        }
        (a - e).abs() > bound(index / n, index % n, e)
    });
    if let Some((index, (&e, &a))) = bad {
        let (i, j) = (index / n, index % n);
        let range = if precision == Precision::Fp16 && !a.is_finite() && e.is_finite() {
            " (fp16 holds magnitudes up to 65504: an input beyond it became infinite)"
        } else {
            ""
        };
        return Err(Mismatch::new(format!(
            "row {i}, column {j}: expected {e:e}, got {a:e}, off by {:.3e} where {precision} at K = {k} allows \
             {:.3e}{range}",
            (a as f64 - e as f64).abs(),
            bound(i, j, e as f64)
        )));
    }
    let finite = input.a.iter().chain(&input.b).all(|x| x.is_finite());
    if !finite || m * n < FEWEST_ENTRIES_FOR_RMS {
        return Ok(());
    }
    let a_column_squares = input.a.par_chunks(k.max(1)).fold(
        || vec![0.0f64; k],
        |mut sums, row| {
            for (s, &a) in sums.iter_mut().zip(row) {
                *s += a as f64 * a as f64;
            }
            sums
        },
    );
    let a_column_squares = a_column_squares.reduce(|| vec![0.0f64; k], |x, y| x.iter().zip(&y).map(|(x, y)| x + y).collect());
    let norms_squared: f64 = a_column_squares.iter().zip(&b_row_squares).map(|(a, b)| a * b).sum();
    if norms_squared == 0.0 {
        return Ok(());
    }
    let error_squared: f64 = expected.par_iter().zip(actual).map(|(&e, &a)| (a as f64 - e as f64).powi(2)).sum();
    let rms = (error_squared / norms_squared).sqrt();
    let allowed = rounding.hypot(rms_sums) + v;
    if rms > allowed {
        return Err(Mismatch::new(format!(
            "the root-mean-square error is {rms:.3e} of the products' norms, above the {allowed:.3e} that {precision} \
             ({}) allows at K = {k}: computed in a lower precision than {precision}?",
            precision.describe()
        )));
    }
    Ok(())
}

/// The largest magnitude and the Euclidean norm of `values`.
fn norms(values: &[f32]) -> (f64, f64) {
    let (max, squares) = values.iter().fold((0.0f64, 0.0f64), |(max, squares), &x| {
        let x = x as f64;
        (max.max(x.abs()), squares + x * x)
    });
    (max, squares.sqrt())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What hardware computing in `precision` returns: the inputs rounded by `round`, the products summed in `f64`
    /// (more accurate than any accumulator, so that only the inputs' rounding shows).
    fn computed_with(input: &MatmulInput, round: impl Fn(f32) -> f32 + Sync) -> Vec<f32> {
        let a: Vec<f32> = input.a.iter().map(|&x| round(x)).collect();
        let b: Vec<f32> = input.b.iter().map(|&x| round(x)).collect();
        Matmul::reference(&MatmulInput { a, b, ..input.clone() }).unwrap()
    }

    /// `x` truncated to TF32's 10 stored mantissa bits, as a tensor core given raw `f32` operands takes them.
    fn truncated_to_tf32(x: f32) -> f32 {
        f32::from_bits(x.to_bits() & !((1 << 13) - 1))
    }

    fn instance(k: usize) -> (MatmulInput, Vec<f32>) {
        let input = Matmul::generate(&MatmulParams::new(40, k, 48), k as u64).unwrap();
        let expected = Matmul::reference(&input).unwrap();
        (input, expected)
    }

    #[test]
    fn each_precision_passes_its_own_check_and_every_coarser_one() {
        for k in [1, 16, 300, 2048] {
            let (input, expected) = instance(k);
            for computed in Precision::ALL {
                let actual = computed_with(&input, |x| computed.round(x));
                for claimed in Precision::ALL {
                    if claimed.input_unit_roundoff() >= computed.input_unit_roundoff() {
                        let verdict = check_matmul(&input, &expected, &actual, claimed);
                        assert!(verdict.is_ok(), "{computed} result checked as {claimed}, K = {k}: {verdict:?}");
                    }
                }
            }
            let truncated = computed_with(&input, truncated_to_tf32);
            assert!(check_matmul(&input, &expected, &truncated, Precision::Tf32).is_ok(), "truncated TF32, K = {k}");
        }
    }

    #[test]
    fn a_result_computed_in_a_lower_precision_than_claimed_fails() {
        for k in [16, 300, 2048] {
            let (input, expected) = instance(k);
            for (computed, claimed) in [
                (Precision::Bf16, Precision::Tf32),
                (Precision::Bf16, Precision::Fp16),
                (Precision::Bf16, Precision::Fp32),
                (Precision::Tf32, Precision::Fp32),
                (Precision::Fp16, Precision::Fp32),
            ] {
                let actual = computed_with(&input, |x| computed.round(x));
                let verdict = check_matmul(&input, &expected, &actual, claimed);
                let message = verdict.expect_err(&format!("a {computed} result passed as {claimed} at K = {k}")).message;
                assert!(message.contains(claimed.name()), "{message}");
            }
            let truncated = computed_with(&input, truncated_to_tf32);
            assert!(check_matmul(&input, &expected, &truncated, Precision::Fp32).is_err(), "truncated TF32 as fp32");
        }
    }

    #[test]
    fn a_dropped_product_fails_in_every_precision() {
        // The largest of an entry's K products stands out of bf16's rounding noise (which spreads as 2^-8·√K/3)
        // while K is small; fp32's sums tell it at every K.
        for (k, precisions) in [(8, &Precision::ALL[..]), (64, &Precision::ALL[..]), (4096, &[Precision::Fp32][..])] {
            let (input, expected) = instance(k);
            for &precision in precisions {
                let mut actual = computed_with(&input, |x| precision.round(x));
                // Entry (3, 5) without its largest product.
                let product = |p: usize| input.a[3 * k + p] * input.b[p * input.n + 5];
                let p = (0..k).max_by(|&x, &y| product(x).abs().total_cmp(&product(y).abs())).unwrap();
                actual[3 * input.n + 5] -= product(p);
                let message = check_matmul(&input, &expected, &actual, precision).unwrap_err().message;
                assert!(message.contains("row 3, column 5"), "{precision} K = {k}: {message}");
            }
        }
    }

    #[test]
    fn special_values_must_match_and_empty_shapes_pass() {
        let (_, input) = Matmul::special_inputs().remove(0);
        let expected = Matmul::reference(&input).unwrap();
        assert!(check_matmul(&input, &expected, &expected, Precision::Bf16).is_ok());
        let mut wrong = expected.clone();
        let nan = wrong.iter().position(|x| x.is_nan()).unwrap();
        wrong[nan] = 0.0;
        assert!(check_matmul(&input, &expected, &wrong, Precision::Bf16).is_err());
        let empty = MatmulInput::new(0, 5, 3, vec![], vec![0.0; 15]).unwrap();
        assert!(check_matmul(&empty, &[], &[], Precision::Fp32).is_ok());
        assert!(check_matmul(&empty, &[], &[1.0], Precision::Fp32).is_err());
        let no_depth = MatmulInput::new(2, 0, 3, vec![], vec![]).unwrap();
        assert!(check_matmul(&no_depth, &[0.0; 6], &[0.0; 6], Precision::Fp32).is_ok());
        assert!(check_matmul(&no_depth, &[0.0; 6], &[0.0, 0.0, 1e-30, 0.0, 0.0, 0.0], Precision::Bf16).is_err());
    }

    #[test]
    fn fp16_overflow_is_named() {
        let input = MatmulInput::new(1, 2, 1, vec![70000.0, 1.0], vec![1.0, 1.0]).unwrap();
        let expected = Matmul::reference(&input).unwrap();
        let actual = computed_with(&input, |x| Precision::Fp16.round(x));
        assert_eq!(actual, [f32::INFINITY], "70000 rounds past fp16's largest value");
        let message = check_matmul(&input, &expected, &actual, Precision::Fp16).unwrap_err().message;
        assert!(message.contains("65504"), "{message}");
    }
}
