//! `matmul`'s `avx512-bf16` rung: bf16 products through AVX512-BF16's `vdpbf16ps`, on CPUs that have it (Intel from
//! Cooper Lake and Sapphire Rapids, AMD from Zen 4). One `vdpbf16ps` multiplies 32 pairs of bf16 values and adds
//! each lane's two products to an `f32` sum: twice the multiply-adds of an `f32` FMA per instruction, on half the
//! bytes. It is what a CPU's bf16 GEMM is built from (oneDNN's AVX512-BF16 kernels), and the CPU's answer to the
//! GPU's tensor cores in the guide's chapter 27 (`docs/27-precision.md`); AMX, a further step, is not used.
//!
//! The shape follows the instruction. Both operands are consumed in pairs along `k`: A is packed as one 32-bit word
//! per pair (`A[i][2p]` in the low half, `A[i][2p+1]` in the high), broadcast to every lane; B is packed into panels of
//! 16 columns, each pair of its rows interleaved so that lane `j` holds `(B[2p][j], B[2p+1][j])`. A micro-tile keeps 16
//! rows by 16 columns of C in 16 of the 32 vector registers and, per pair of `k`, loads one vector of B and issues
//! one broadcast and one `vdpbf16ps` per row. `k` is cut into blocks of 256 pairs, so that a panel's block of B
//! (16 KiB) stays in L1 while every tile of a row block passes over it; rows of C are shared among rayon's threads in
//! blocks. Values are rounded to bf16 to nearest, ties to even, as they are packed; an odd `k` and the edges of C are
//! padded with zeros, whose products add nothing.

use std::arch::x86_64::*;

use gpuworthy_core::Dtype;
use rayon::prelude::*;

/// Columns of C a panel of B holds: the `f32` lanes of one 512-bit vector.
const LANES: usize = 16;
/// Rows of C a micro-tile keeps in registers: 16 accumulators, a vector of B and a broadcast within 32 registers.
const ROWS: usize = 16;
/// Pairs of `k` per block: a panel's block of B is `256 × 16 × 4` bytes, 16 KiB, within L1.
const PAIRS_PER_BLOCK: usize = 256;
/// Rows of C a task computes: a few tiles, so that the threads share a square of 1024 in tens of tasks.
const ROWS_PER_TASK: usize = 4 * ROWS;

/// Whether this CPU runs AVX512-BF16 (with AVX-512F, whose loads and stores the rung uses).
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16")
}

/// `lo` and `hi` rounded to bf16 and packed into one word, `lo` in the low half: a pair as `vdpbf16ps` reads it.
fn pair(lo: f32, hi: f32) -> u32 {
    u32::from(Dtype::Bf16.encode(lo)) | (u32::from(Dtype::Bf16.encode(hi)) << 16)
}

/// `c = a · b` for row-major `a` (`m × k`), `b` (`k × n`) and `c` (`m × n`), in bf16 products and `f32` sums.
///
/// # Panics
///
/// If [`available`] is false: the caller lists the rung only where it is.
pub(super) fn matmul(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    assert!(available(), "the avx512-bf16 rung needs AVX512-BF16");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let pairs = k.div_ceil(2);
    let padded_rows = m.next_multiple_of(ROWS);
    // A: one word per pair of each row, rows past `m` zero.
    let mut packed_a = vec![0u32; padded_rows * pairs];
    packed_a.par_chunks_mut(pairs).take(m).enumerate().for_each(|(i, row)| {
        let source = &a[i * k..(i + 1) * k];
        for (p, word) in row.iter_mut().enumerate() {
            *word = pair(source[2 * p], source.get(2 * p + 1).copied().unwrap_or(0.0));
        }
    });
    // B: panels of 16 columns, each a run of `pairs` vectors; columns past `n` zero.
    let panels = n.div_ceil(LANES);
    let mut packed_b = vec![0u32; panels * pairs * LANES];
    packed_b.par_chunks_mut(pairs * LANES).enumerate().for_each(|(panel, words)| {
        let j0 = panel * LANES;
        let width = LANES.min(n - j0);
        for (p, vector) in words.chunks_exact_mut(LANES).enumerate() {
            let (r0, r1) = (2 * p, 2 * p + 1);
            for (l, word) in vector.iter_mut().take(width).enumerate() {
                let hi = if r1 < k { b[r1 * n + j0 + l] } else { 0.0 };
                *word = pair(b[r0 * n + j0 + l], hi);
            }
        }
    });
    c.par_chunks_mut(ROWS_PER_TASK * n).enumerate().for_each(|(task, rows_of_c)| {
        let i0 = task * ROWS_PER_TASK;
        let task_rows = rows_of_c.len() / n;
        for p0 in (0..pairs).step_by(PAIRS_PER_BLOCK) {
            let block = PAIRS_PER_BLOCK.min(pairs - p0);
            for panel in 0..panels {
                let j0 = panel * LANES;
                let width = LANES.min(n - j0);
                let b_block = &packed_b[(panel * pairs + p0) * LANES..(panel * pairs + p0 + block) * LANES];
                for t0 in (0..task_rows).step_by(ROWS) {
                    let rows = ROWS.min(task_rows - t0);
                    let a_tile = &packed_a[(i0 + t0) * pairs + p0..];
                    let c_tile = &mut rows_of_c[t0 * n + j0..];
                    // SAFETY: `available()` was checked above, so the CPU runs AVX-512F and AVX512-BF16. `a_tile`
                    // starts at row `i0 + t0` of packed A, which has `ROWS` rows from there (its rows are padded to a
                    // multiple of `ROWS`), each `pairs` words apart, and the tile reads `block` words of each from
                    // `p0` (`p0 + block <= pairs`); `b_block` holds `block` vectors of `LANES` words; `c_tile` starts
                    // at row `t0`, column `j0` of this task's rows of C, and the tile writes `rows` rows of `width`
                    // columns, `n` apart: the last ends at `(t0 + rows - 1) * n + j0 + width <= task_rows * n`.
                    unsafe { tile(a_tile, pairs, b_block, block, c_tile, n, rows, width, p0 == 0) };
                }
            }
        }
    });
}

/// One micro-tile: `rows` rows (at most [`ROWS`]) by `width` columns (at most [`LANES`]) of C, `c_stride` apart,
/// plus (or, for the first block of `k`, set to) the products of `pairs` pairs of A's rows (`a_stride` apart) with a
/// panel's block of B.
///
/// # Safety
///
/// The CPU runs AVX-512F and AVX512-BF16; `a` holds [`ROWS`] rows of at least `pairs` words, `a_stride` apart; `b` at
/// least `pairs * LANES` words; `c` at least `(rows - 1) * c_stride + width` values.
#[target_feature(enable = "avx512f,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    a: &[u32],
    a_stride: usize,
    b: &[u32],
    pairs: usize,
    c: &mut [f32],
    c_stride: usize,
    rows: usize,
    width: usize,
    first: bool,
) {
    let mask: __mmask16 = if width == LANES { !0 } else { (1u16 << width) - 1 };
    let mut acc = [_mm512_setzero_ps(); ROWS];
    if !first {
        for (r, sum) in acc.iter_mut().enumerate().take(rows) {
            // SAFETY: row `r < rows` of C starts at `r * c_stride`, and the masked load reads its first `width`
            // values, which the caller promises are in `c`.
            *sum = unsafe { _mm512_maskz_loadu_ps(mask, c.as_ptr().add(r * c_stride)) };
        }
    }
    for p in 0..pairs {
        // SAFETY: `b` holds `pairs` vectors of `LANES` words; this reads the `p`-th, unaligned.
        let column_pairs = unsafe { _mm512_loadu_si512(b.as_ptr().add(p * LANES).cast()) };
        // SAFETY: 512 bits of interleaved bf16 pairs, reinterpreted as the bf16 vector type they are.
        let column_pairs: __m512bh = unsafe { std::mem::transmute::<__m512i, __m512bh>(column_pairs) };
        for (r, sum) in acc.iter_mut().enumerate() {
            let row_pair = _mm512_set1_epi32(a[r * a_stride + p] as i32);
            // SAFETY: as above, a vector of 32 bf16 values (the same pair in every lane).
            let row_pair: __m512bh = unsafe { std::mem::transmute::<__m512i, __m512bh>(row_pair) };
            *sum = _mm512_dpbf16_ps(*sum, row_pair, column_pairs);
        }
    }
    for (r, sum) in acc.iter().enumerate().take(rows) {
        // SAFETY: as for the load: the masked store writes the first `width` values of row `r` of C.
        unsafe { _mm512_mask_storeu_ps(c.as_mut_ptr().add(r * c_stride), mask, *sum) };
    }
}
