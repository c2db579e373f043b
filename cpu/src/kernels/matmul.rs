//! `matmul` on the CPU, three rungs:
//!
//! - `naive`: the i-k-j loop, rows of C spread over rayon. The inner loop streams a row of B into a row of C, which
//!   the compiler vectorises for the baseline instruction set; every row of B is fetched from memory again for
//!   every row of C once B outgrows the cache.
//! - `blocked`: the BLIS scheme. B is packed into panels of `KC` rows by `NR` columns, A into slivers of `MR` rows,
//!   so that a micro-kernel can keep an `MR × NR` block of C in registers and stream contiguous packed data from L1
//!   and L2. The block is a [`MicroTile`] chosen per CPU, as BLAS libraries choose their kernels: 6 × 2 vectors (12
//!   of AVX2's 16 registers; one broadcast and two multiply-adds per element of A) and, on Intel's AVX-512, 24 × 1
//!   vector (24 of 32 registers; each element of A's broadcast folded into its one multiply-add). Tasks take blocks
//!   of at most `MC` rows of C, cut into column parts where the rows alone make too few tasks to keep every thread
//!   busy to the end; A and B are each packed once per product, in parallel steps of their own, so tasks only
//!   compute; the packed buffers start on a cache line.
//! - `library`: the `matrixmultiply` crate's `sgemm`, a well-kept Rust GEMM of the same design, as the vendor
//!   reference.
//! - `bf16`: `blocked` with A and B rounded to bf16 as they are packed: the precision of a bf16 matmul (bf16 data,
//!   `f32` products and sums) in `f32` arithmetic, reported as bf16. It runs at `blocked`'s speed on any CPU: it
//!   shows what bf16 costs in accuracy, not what it gains in time.
//! - `avx512-bf16`: bf16 products through AVX512-BF16's `vdpbf16ps`, two multiply-adds per lane and instruction
//!   ([`avx512_bf16`]); listed only on a CPU that has the instructions.

use gpuworthy_core::workloads::Matmul;
use gpuworthy_core::{Implements, Precision, Result};
use rayon::prelude::*;

use super::host_phases;

#[cfg(target_arch = "x86_64")]
mod avx512_bf16;
use crate::CpuBackend;
use crate::simd::{self, Supported, simd_kernel};

/// A micro-tile: rows of C (the rows of a packed sliver of A) by vectors of columns (the sliver of B is
/// `vectors · lanes` wide), all in accumulator registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MicroTile {
    rows: usize,
    vectors: usize,
}

/// 6 rows by 2 vectors: 12 accumulators, a broadcast and two vectors of B, within AVX2's 16 registers; the best of
/// the shapes on AMD's AVX-512 too (its 24 × 1 and 12 × 2 ran slower on a Zen 4 EPYC; measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
const SIX_BY_TWO: MicroTile = MicroTile { rows: 6, vectors: 2 };

/// 24 rows by 1 vector: 24 of AVX-512's 32 registers, and each element of A used by one multiply-add, so the compiler
/// folds its broadcast into the FMA (`vfmadd231ps mem{1to16}`): 28 instructions for 24 multiply-adds where 6 × 2
/// takes 24 for 12. On the H200 machine's Xeon it beat 6 × 2 at 1024 and 4096 (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
const TWENTY_FOUR_BY_ONE: MicroTile = MicroTile { rows: 24, vectors: 1 };

/// The micro-tile for this CPU at `level`: 24 × 1 on Intel's AVX-512, 6 × 2 elsewhere.
fn micro_tile(level: simd::Level) -> MicroTile {
    #[cfg(target_arch = "x86_64")]
    if level == simd::Level::Avx512 && simd::vendor_is_intel() {
        return TWENTY_FOUR_BY_ONE;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = level; // one tile serves every level off x86-64
    SIX_BY_TWO
}

/// Depth of a packed panel: `KC` rows of B and columns of A, sized so that a sliver of B (`KC × NR`, 32 KiB at most)
/// stays in L1.
const KC: usize = 256;
/// The most rows of C per task: an `MC × KC` packed block of A (96 KiB) stays in L2.
const MC: usize = 96;
/// Columns of B per packed panel: a `KC × NC` panel (2 MiB) stays in the last-level cache.
const NC: usize = 2048;

fn naive(a: &[f32], b: &[f32], c: &mut [f32], k: usize, n: usize) {
    c.par_chunks_mut(n).enumerate().for_each(|(i, c_row)| {
        c_row.fill(0.0);
        for (p, &a_ip) in a[i * k..(i + 1) * k].iter().enumerate() {
            for (c, &b) in c_row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *c += a_ip * b;
            }
        }
    });
}

/// Packs columns `j0..j0+nc` of rows `p0..p0+kc` of B (row-major, `n` columns) into slivers of `nr` columns: sliver
/// `s` holds, for each row `p`, the `nr` values `B[p][j0 + s·nr ..]`, zero-padded past the matrix's edge.
/// Each value passes through `round` on its way ([`Rounding`]).
fn pack_b<R: Rounding>(
    b: &[f32],
    n: usize,
    (p0, kc): (usize, usize),
    (j0, nc): (usize, usize),
    nr: usize,
    packed: &mut [f32],
    round: R,
) {
    packed.par_chunks_mut(kc * nr).enumerate().for_each(|(s, sliver)| {
        let j = j0 + s * nr;
        let width = nr.min(j0 + nc - j);
        for (p, dst) in sliver.chunks_exact_mut(nr).enumerate() {
            let row = &b[(p0 + p) * n + j..][..width];
            dst[..width].iter_mut().zip(row).for_each(|(d, &v)| *d = round(v));
            dst[width..].fill(0.0);
        }
    });
}

/// How packing rounds each value of A and B: the identity for `f32` products (which compiles to a copy), or to
/// bf16 for the `bf16` variant, whose `f32` arithmetic then runs on bf16 data.
trait Rounding: Fn(f32) -> f32 + Copy + Send + Sync {}
impl<R: Fn(f32) -> f32 + Copy + Send + Sync> Rounding for R {}

/// The values as they are.
fn unrounded(x: f32) -> f32 {
    x
}

/// The value rounded to bf16 (to nearest, ties to even).
fn to_bf16(x: f32) -> f32 {
    Precision::Bf16.round(x)
}

/// Packs rows `i0..i0+mc` of columns `p0..p0+kc` of A (row-major, `k` columns) into slivers of `mr` rows: sliver
/// `s` holds, for each column `p`, the `mr` values `A[i0 + s·mr ..][p]`, zero-padded past the matrix's edge.
/// Each value passes through `round` on its way ([`Rounding`]).
fn pack_a<R: Rounding>(
    a: &[f32],
    k: usize,
    (i0, mc): (usize, usize),
    (p0, kc): (usize, usize),
    mr: usize,
    packed: &mut [f32],
    round: R,
) {
    for (s, sliver) in packed.chunks_exact_mut(kc * mr).enumerate() {
        let i = i0 + s * mr;
        let height = mr.min(i0 + mc - i);
        for (p, dst) in sliver.chunks_exact_mut(mr).enumerate() {
            for (r, d) in dst.iter_mut().enumerate() {
                *d = if r < height { round(a[(i + r) * k + p0 + p]) } else { 0.0 };
            }
        }
    }
}

/// The shape of a task's block of C and whether it adds to what is there.
#[derive(Clone, Copy)]
struct Block {
    /// Rows of C covered by the task.
    rows: usize,
    /// Columns of C covered by the task (the width of each of its row slices).
    columns: usize,
    kc: usize,
    /// Add to C (later panels of K) rather than overwrite it (the first).
    accumulate: bool,
}

simd_kernel! {
    /// Multiplies a packed block of A (`rows × kc`, in slivers of `tile.rows` rows) by packed slivers of B (`kc ×
    /// columns`, `tile.vectors · LANES` wide) into the task's block of C, given as one slice per row.
    fn block_kernel<S>(s, packed_a: &[f32], packed_b: &[f32], c_rows: &mut [&mut [f32]], blk: Block, tile: MicroTile) {
        match tile {
            TWENTY_FOUR_BY_ONE => block_of_slivers::<S, 24, 1>(s, packed_a, packed_b, c_rows, blk),
            SIX_BY_TWO => block_of_slivers::<S, 6, 2>(s, packed_a, packed_b, c_rows, blk),
            _ => unreachable!("no micro-kernel is compiled for {tile:?}"),
        }
    }
}

/// Floats in the largest micro-tile: 24 × 16 (6 × 32 is 192).
const MAX_TILE_FLOATS: usize = 24 * 16;

/// The body of [`block_kernel`] for an `R × W·LANES` micro-tile: `R · W` accumulators in registers.
#[inline(always)]
fn block_of_slivers<S: simd::Simd, const R: usize, const W: usize>(
    s: S,
    packed_a: &[f32],
    packed_b: &[f32],
    c_rows: &mut [&mut [f32]],
    blk: Block,
) {
    let nr = W * S::LANES;
    let kc = blk.kc;
    // An edge tile's accumulators, stored to be copied out in part: on the stack, since this runs for every task and
    // panel inside the timed product.
    let mut tile = [0.0f32; MAX_TILE_FLOATS];
    assert!(R * nr <= MAX_TILE_FLOATS, "a {R} x {nr} micro-tile does not fit the edge buffer");
    for (sj, b_sliver) in packed_b.chunks_exact(kc * nr).enumerate() {
        let j = sj * nr;
        let width = nr.min(blk.columns - j);
        for (si, a_sliver) in packed_a.chunks_exact(kc * R).enumerate() {
            let i = si * R;
            let height = R.min(blk.rows - i);
            let mut acc = [[s.splat(0.0); W]; R];
            for (ap, bp) in a_sliver.chunks_exact(R).zip(b_sliver.chunks_exact(nr)) {
                let b: [S::V; W] = std::array::from_fn(|v| s.load(&bp[v * S::LANES..]));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let av = s.splat(ap[r]);
                    for (acc, b) in acc.iter_mut().zip(&b) {
                        *acc = s.mul_add(av, *b, *acc);
                    }
                }
            }
            if height == R && width == nr {
                for (row, acc) in c_rows[i..i + R].iter_mut().zip(&acc) {
                    for (v, acc) in acc.iter().enumerate() {
                        let dst = &mut row[j + v * S::LANES..];
                        if blk.accumulate {
                            s.store(dst, s.add(s.load(dst), *acc));
                        } else {
                            s.store(dst, *acc);
                        }
                    }
                }
            } else {
                for (r, acc) in acc.iter().enumerate() {
                    for (v, acc) in acc.iter().enumerate() {
                        s.store(&mut tile[r * nr + v * S::LANES..], *acc);
                    }
                }
                for (r, row) in c_rows[i..i + height].iter_mut().enumerate() {
                    for (d, t) in row[j..j + width].iter_mut().zip(&tile[r * nr..]) {
                        *d = if blk.accumulate { *d + t } else { *t };
                    }
                }
            }
        }
    }
}

/// Rows of C per task for `m` rows on `threads` threads: a multiple of `mr` (the micro-tile's rows), at most `MC`, and
/// as many tasks as a whole number of rounds of the threads. A fixed `MC` left cores idle: at m = 1024, 11 tasks for
/// 16 threads.
fn rows_per_task(m: usize, threads: usize, mr: usize) -> usize {
    let threads = threads.max(1);
    let rounds = m.div_ceil(threads * MC).max(1);
    m.div_ceil(threads * rounds).next_multiple_of(mr).clamp(mr, MC)
}

/// Tasks per thread that a product is cut into where its rows alone make fewer: rayon deals tasks out by work
/// stealing, not one to each thread, so with one task per thread a thread that wakes late leaves another to run
/// two and the product takes twice as long.
const TASKS_PER_THREAD: usize = 4;

/// The narrowest column part a task takes: 256 columns keep each packed sliver of A in use for eight slivers of B
/// (sixteen with the 24 × 1 tile).
const MIN_PART_COLUMNS: usize = 256;

/// How many parts to cut a panel `width` columns wide into (each a whole number of `nr`-wide slivers), for
/// `row_blocks` blocks of rows on `threads` threads: enough for [`TASKS_PER_THREAD`] tasks a thread, no part narrower
/// than [`MIN_PART_COLUMNS`].
fn column_parts(row_blocks: usize, width: usize, nr: usize, threads: usize) -> usize {
    let wanted = (TASKS_PER_THREAD * threads.max(1)).div_ceil(row_blocks.max(1));
    let slivers = width.div_ceil(nr);
    wanted.clamp(1, (width / MIN_PART_COLUMNS).max(1)).min(slivers)
}

/// The most floats of B, and of A, packed at once: every `KC`-deep panel of a column block of B when they fit (64
/// MiB, never more than B itself once B is `NC` columns wide), else one panel at a time; A in bands of whole row
/// blocks, all of A when it fits.
const PACKED_FLOATS: usize = 16 << 20;

/// One parallel step packs all of a column block's panels of B, one packs a band of A's rows for all of them, and one
/// more runs every task over all of them: three forks of the thread pool per column block instead of two per `KC`
/// panel, no task waits at a panel's end for the slowest, and A is packed once however many column parts its rows are
/// cut into. On the H200 machine's 16 cores this brought it closer to NumPy at 1024 and past it at 4096 (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
fn blocked(level: Supported, a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    blocked_packing_at_most(level, a, b, c, (m, k, n), PACKED_FLOATS, micro_tile(level.level()), unrounded);
}

/// [`blocked`] on A and B rounded to bf16 as they are packed: bf16 data, `f32` products and sums (this CPU's
/// bf16 instructions, AVX512-BF16 or AMX, are not used: the rung computes what they would, at `f32`'s speed).
fn blocked_bf16(level: Supported, a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    blocked_packing_at_most(level, a, b, c, (m, k, n), PACKED_FLOATS, micro_tile(level.level()), to_bf16);
}

/// [`blocked`], packing at most `packed_floats` of B at once (where that is less than one panel, one panel) and of A
/// (where that is less than one row block's panels, one row block), in micro-tiles of `tile`, at SIMD `level`, each
/// value of A and B passed through `round` as it is packed.
#[allow(clippy::too_many_arguments)]
fn blocked_packing_at_most<R: Rounding>(
    level: Supported,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    packed_floats: usize,
    tile: MicroTile,
    round: R,
) {
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let nr = tile.vectors * level.level().lanes();
    let mc = rows_per_task(m, rayon::current_num_threads(), tile.rows);
    let panel_width = NC.min(n).next_multiple_of(nr);
    let depth = if k * panel_width <= packed_floats { k } else { KC };
    let padded_depth = depth.next_multiple_of(KC);
    // Rows of A packed at once: as few bands as keep A's packing within the limit, each whole row blocks (a band of
    // `m` rows rounds up past the limit by less than a block: 4096 x 4096 is one band).
    let bands = (m * padded_depth).div_ceil(packed_floats).max(1);
    let band_rows = m.div_ceil(bands).next_multiple_of(mc);
    let b_len = padded_depth * panel_width;
    let a_len = padded_depth * band_rows.next_multiple_of(tile.rows);
    PACKED.with(|kept| {
        let mut own = Packed::default();
        let mut kept = kept.try_borrow_mut();
        let packed = match kept.as_deref_mut() {
            Ok(kept) => kept,
            Err(_) => &mut own,
        };
        let (packed_a, packed_b) = (line_aligned(&mut packed.a, a_len), line_aligned(&mut packed.b, b_len));
        multiply_packing(level, a, b, c, (k, n), (mc, band_rows, tile, nr, depth), (packed_a, packed_b), round);
    });
}

/// The packed operands of a product.
#[derive(Default)]
struct Packed {
    a: Vec<f32>,
    b: Vec<f32>,
}

thread_local! {
    /// The packed panels of A and B, kept on the calling thread from one product to the next (as large as the largest
    /// product on it has needed, at most `PACKED_FLOATS` each or one panel): a fresh buffer is zeroed on this one
    /// thread before any packing starts (4 MiB each for a 1024 product). A product that finds them in use (one that a
    /// rayon worker runs while it waits inside another) packs into buffers of its own.
    static PACKED: std::cell::RefCell<Packed> = std::cell::RefCell::new(Packed::default());
}

/// Floats in a 64-byte cache line.
const LINE_FLOATS: usize = 64 / size_of::<f32>();

/// The first `len` floats of `buf` from its first 64-byte boundary on, `buf` grown to hold them. An allocator returns
/// large buffers 16 bytes past a page: without this, every vector load of a packed sliver straddles two cache lines
/// (on Intel, a split load costs two of the load ports' slots).
fn line_aligned(buf: &mut Vec<f32>, len: usize) -> &mut [f32] {
    if buf.len() < len + LINE_FLOATS {
        buf.resize(len + LINE_FLOATS, 0.0);
    }
    // `align_offset` may decline to answer (usize::MAX); the window is then merely unaligned, never wrong.
    let offset = buf.as_ptr().align_offset(64).min(LINE_FLOATS);
    &mut buf[offset..offset + len]
}

/// Packs rows `i0..i0 + rows` of A (`k` columns) for the panels of depths `d0..d0 + dk` into `packed`, panel after
/// panel (`slivers · KC · mr` floats apart), within a panel sliver after sliver (`kc · mr` floats each): the slivers
/// of any run of rows in one panel are one contiguous slice, as [`block_kernel`] reads them. Every sliver of every
/// panel is a task of its own.
fn pack_a_band<R: Rounding>(
    a: &[f32],
    k: usize,
    (i0, rows): (usize, usize),
    (d0, dk): (usize, usize),
    mr: usize,
    packed: &mut [f32],
    round: R,
) {
    let slivers = rows.div_ceil(mr);
    packed.par_chunks_mut(slivers * KC * mr).take(dk.div_ceil(KC)).enumerate().for_each(|(i, panel)| {
        let p0 = d0 + i * KC;
        let kc = KC.min(d0 + dk - p0);
        panel[..slivers * kc * mr].par_chunks_mut(kc * mr).enumerate().for_each(|(s, sliver)| {
            let i = i0 + s * mr;
            pack_a(a, k, (i, mr.min(i0 + rows - i)), (p0, kc), mr, sliver, round);
        });
    });
}

/// The body of [`blocked_packing_at_most`]: tasks of `mc` rows and a part of each column block, micro-tiles `nr`
/// wide, A packed `depth` deep in bands of `band_rows` rows into `packed_a`, and for each band B packed `depth` deep
/// one column block at a time into `packed_b`. The band is the outer loop, so that A is packed once; B is packed again
/// for each band, which only products too large for one band do (above 64 MiB of A).
#[allow(clippy::too_many_arguments)]
fn multiply_packing<R: Rounding>(
    level: Supported,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (k, n): (usize, usize),
    (mc, band_rows, tile, nr, depth): (usize, usize, MicroTile, usize, usize),
    (packed_a, packed_b): (&mut [f32], &mut [f32]),
    round: R,
) {
    let mr = tile.rows;
    let threads = rayon::current_num_threads();
    for d0 in (0..k).step_by(depth) {
        let dk = depth.min(k - d0);
        let panels = dk.div_ceil(KC);
        for (band, c_band) in c.chunks_mut(band_rows * n).enumerate() {
            let rows_in_band = c_band.len() / n;
            let row_blocks = rows_in_band.div_ceil(mc);
            let a_panel_floats = rows_in_band.div_ceil(mr) * KC * mr;
            let band_a = &mut packed_a[..panels * a_panel_floats];
            pack_a_band(a, k, (band * band_rows, rows_in_band), (d0, dk), mr, band_a, round);
            let band_a = &*band_a;
            for j0 in (0..n).step_by(NC) {
                let nc = NC.min(n - j0);
                let width = nc.next_multiple_of(nr);
                let slivers = width / nr;
                let parts = column_parts(row_blocks, width, nr, threads);
                // Part `p` takes slivers `p·slivers/parts ..`: whole slivers, as even as they divide.
                let part_start = |p: usize| (p * slivers / parts) * nr;
                let band_b = &mut packed_b[..panels * KC * width];
                band_b.par_chunks_mut(KC * width).enumerate().for_each(|(i, panel)| {
                    let p0 = d0 + i * KC;
                    let kc = KC.min(d0 + dk - p0);
                    pack_b(b, n, (p0, kc), (j0, nc), nr, &mut panel[..kc * width], round);
                });
                let band_b = &*band_b;
                // Each task's block of C as one slice per row: blocks of `mc` rows, each row cut at the parts' edges.
                let mut tasks = Vec::with_capacity(row_blocks * parts);
                for (block, c_rows) in c_band.chunks_mut(mc * n).enumerate() {
                    let mut part_rows: Vec<Vec<&mut [f32]>> = (0..parts).map(|_| Vec::new()).collect();
                    for row in c_rows.chunks_exact_mut(n) {
                        let mut rest = &mut row[j0..j0 + nc];
                        for (p, rows) in part_rows.iter_mut().enumerate() {
                            let columns = part_start(p + 1).min(nc) - part_start(p);
                            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(columns);
                            rows.push(piece);
                            rest = tail;
                        }
                    }
                    tasks.extend(part_rows.into_iter().enumerate().map(|(p, rows)| (block, p, rows)));
                }
                tasks.into_par_iter().for_each(|(block, part, mut c_rows)| {
                    let rows = c_rows.len();
                    // The block's slivers within the band: `mc` is a whole number of them.
                    let a_slivers = block * mc / mr..block * mc / mr + rows.div_ceil(mr);
                    let columns = part_start(part + 1).min(nc) - part_start(part);
                    let b_slivers = part_start(part) / nr..part_start(part + 1) / nr;
                    let panel_pairs = band_b.chunks(KC * width).zip(band_a.chunks(a_panel_floats));
                    for (i, (panel_b, panel_a)) in panel_pairs.enumerate() {
                        let p0 = d0 + i * KC;
                        let kc = KC.min(d0 + dk - p0);
                        let block_a = &panel_a[a_slivers.start * kc * mr..a_slivers.end * kc * mr];
                        let block_b = &panel_b[b_slivers.start * kc * nr..b_slivers.end * kc * nr];
                        let blk = Block { rows, columns, kc, accumulate: p0 > 0 };
                        block_kernel(level, block_a, block_b, &mut c_rows, blk, tile);
                    }
                });
            }
        }
    }
}

fn library(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    // SAFETY: the pointers come from slices of exactly m·k, k·n and m·n elements (validated at upload), and the
    // strides describe those row-major matrices: row stride k, n and n, column stride 1. C does not alias A or B.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// Whether the rung written in AVX512-BF16's bf16 dot products runs here: the CPU has them, and the SIMD level in
/// use is AVX-512 (`GPUWORTHY_CPU_SIMD=avx2` or `portable` leaves it out with the other AVX-512 code).
fn has_bf16_instructions(level: Supported) -> bool {
    #[cfg(target_arch = "x86_64")]
    return level.level() == simd::Level::Avx512 && avx512_bf16::available();
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        false
    }
}

impl Implements<Matmul> for CpuBackend {
    host_phases!(Matmul, matmul_into, |input| vec![0.0; input.m * input.n]);

    /// `bf16` is `blocked` on inputs rounded to bf16, `avx512-bf16` bf16 products in the CPU's bf16 instructions
    /// (where it has them): reduced precision, checked at bf16's bound.
    fn variants(&self) -> Vec<&'static str> {
        let mut variants = vec!["naive", "blocked", "library", "bf16"];
        if has_bf16_instructions(self.simd()) {
            variants.push("avx512-bf16");
        }
        variants
    }

    fn precision(&self, variant: &str) -> Precision {
        if matches!(variant, "bf16" | "avx512-bf16") { Precision::Bf16 } else { Precision::Fp32 }
    }

    /// `library` (matrixmultiply) below 512³ multiply-adds, where its lower start-up cost wins; `blocked` from there, where
    /// its threading scales further (measured on 16 cores:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn best_variant(&self, params: &<Matmul as gpuworthy_core::Workload>::Params) -> &'static str {
        if (params.m as u128) * (params.k as u128) * (params.n as u128) < 512 * 512 * 512 {
            "library"
        } else {
            "blocked"
        }
    }
}

impl CpuBackend {
    /// `variant` of matmul on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn matmul_into(
        &self,
        variant: &str,
        input: &<Matmul as gpuworthy_core::Workload>::Input,
        output: &mut <Matmul as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let known = matches!(variant, "naive" | "blocked" | "library" | "bf16")
            || (variant == "avx512-bf16" && has_bf16_instructions(self.simd()));
        if !known {
            return Err(<Self as Implements<Matmul>>::unknown_variant(self, variant));
        }
        let (m, k, n) = (input.m, input.k, input.n);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let (a, b, c) = (&input.a, &input.b, output);
        match variant {
            "naive" => naive(a, b, c, k, n),
            "blocked" => blocked(self.simd(), a, b, c, m, k, n),
            "bf16" => blocked_bf16(self.simd(), a, b, c, m, k, n),
            #[cfg(target_arch = "x86_64")]
            "avx512-bf16" => avx512_bf16::matmul(a, b, c, m, k, n),
            _ => library(a, b, c, m, k, n),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_fill_every_thread_and_stay_within_the_cache_block() {
        // Square products (n = m columns, slivers of B 32 wide), in either micro-tile's rows.
        let cases = [(1024, 16), (4096, 16), (1024, 2), (1, 16), (7, 3), (100_000, 16), (96 * 16, 16)];
        for ((m, threads), mr) in
            cases.into_iter().flat_map(|case| [SIX_BY_TWO, TWENTY_FOUR_BY_ONE].map(|t| (case, t.rows)))
        {
            let mc = rows_per_task(m, threads, mr);
            assert!(mc.is_multiple_of(mr) && (mr..=MC).contains(&mc), "{m} rows, {threads} threads: {mc} rows a task");
            let row_blocks = m.div_ceil(mc);
            let tasks = row_blocks * column_parts(row_blocks, m.min(NC).next_multiple_of(32), 32, threads);
            // Every thread has a task where there are rows enough, and the last round of tasks keeps most threads busy.
            assert!(
                tasks >= threads.min(m.div_ceil(mr)),
                "{m} rows, {threads} threads, {mr}-row slivers: {tasks} tasks"
            );
            if tasks >= threads {
                let busy = tasks as f64 / (tasks.div_ceil(threads) * threads) as f64;
                assert!(busy >= 0.8, "{m} rows, {threads} threads: {tasks} tasks keep {busy:.2} of the threads busy");
            }
        }
    }

    /// Generated inputs of an `m × k × n` product, and their product by `naive`.
    fn with_naive_product(m: usize, k: usize, n: usize) -> (gpuworthy_core::workloads::MatmulInput, Vec<f32>) {
        use gpuworthy_core::Workload;
        use gpuworthy_core::workloads::MatmulParams;
        let input = Matmul::generate(&MatmulParams { m, k, n }, 7).unwrap();
        let mut product = vec![0.0; m * n];
        naive(&input.a, &input.b, &mut product, k, n);
        (input, product)
    }

    #[test]
    fn column_parts_make_tasks_enough_and_cover_the_panel_in_whole_slivers() {
        for (row_blocks, width, nr, threads) in
            [(16, 1024, 32, 16), (46, 2048, 32, 16), (12, 1024, 32, 2), (1, 64, 32, 16)]
        {
            let parts = column_parts(row_blocks, width, nr, threads);
            let slivers = width / nr;
            assert!((1..=slivers).contains(&parts), "{parts} parts of {slivers} slivers");
            let tasks = row_blocks * parts;
            let enough = tasks >= TASKS_PER_THREAD * threads || parts == (width / MIN_PART_COLUMNS).max(1).min(slivers);
            assert!(enough, "{row_blocks} row blocks x {parts} parts for {threads} threads");
        }
        assert_eq!(column_parts(16, 1024, 32, 16), 4, "1024 on 16 threads: 64 tasks");
        assert_eq!(column_parts(12, 1024, 32, 2), 1, "1024 on 2 threads: the rows alone make tasks enough");
    }

    #[test]
    fn packing_all_of_a_and_b_at_once_or_a_panel_and_row_block_at_a_time_gives_the_naive_product() {
        use gpuworthy_core::{Precision, Workload};
        // Depths that end inside a panel and span several; widths past one column block (NC) and ragged edges; one
        // thread (one task per row block) and sixteen (row blocks cut into column parts); both micro-tiles, whatever
        // this CPU runs (24 × 1 is slow where registers are fewer, but right).
        for threads in [1, 16] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (m, k, n) in [(13, 3 * KC + 5, 37), (7, 2 * KC, NC + 40), (1, KC - 1, 5), (50, KC + 3, 1000)] {
                let (input, expected) = with_naive_product(m, k, n);
                for (limit, tile) in
                    [usize::MAX, 1].into_iter().flat_map(|l| [(l, SIX_BY_TWO), (l, TWENTY_FOUR_BY_ONE)])
                {
                    let mut c = vec![f32::NAN; m * n];
                    let level = Supported::best();
                    pool.install(|| {
                        blocked_packing_at_most(level, &input.a, &input.b, &mut c, (m, k, n), limit, tile, unrounded);
                    });
                    let check = Matmul::check(&input, &expected, &c, Precision::Fp32);
                    let how = format!("{threads} threads, packing at most {limit} floats, {tile:?}");
                    assert!(check.is_ok(), "{m}x{k}x{n}, {how}: {check:?}");
                }
            }
        }
    }

    /// The `bf16` rung computes in bf16's precision, not `f32`'s: it passes bf16's check and fails `f32`'s, and it
    /// equals `blocked` on inputs rounded to bf16 beforehand.
    #[test]
    fn the_bf16_rung_rounds_its_inputs_to_bf16() {
        use gpuworthy_core::Workload;
        use gpuworthy_core::workloads::MatmulParams;
        let (m, k, n) = (40, 300, 70);
        let input = Matmul::generate(&MatmulParams::new(m, k, n), 3).unwrap();
        let expected = Matmul::reference(&input).unwrap();
        let level = Supported::best();
        let mut c = vec![f32::NAN; m * n];
        blocked_bf16(level, &input.a, &input.b, &mut c, m, k, n);
        assert!(Matmul::check(&input, &expected, &c, Precision::Bf16).is_ok());
        assert!(Matmul::check(&input, &expected, &c, Precision::Fp32).is_err(), "the bf16 rung computed in f32");
        let rounded = |x: &[f32]| x.iter().map(|&v| Precision::Bf16.round(v)).collect::<Vec<f32>>();
        let mut on_rounded = vec![f32::NAN; m * n];
        blocked(level, &rounded(&input.a), &rounded(&input.b), &mut on_rounded, m, k, n);
        assert_eq!(c, on_rounded);
    }

    /// The `avx512-bf16` rung, where the CPU has the instructions, computes in bf16's precision on every shape the
    /// packing pads (an odd `k`, edges of rows and columns, one element, several blocks of `k`): it passes bf16's
    /// check and fails `f32`'s, and it equals the `bf16` rung's inputs multiplied in `f64` to within `f32` sums.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx512_bf16_rung_multiplies_bf16_inputs_on_every_shape() {
        use gpuworthy_core::Workload;
        use gpuworthy_core::workloads::MatmulParams;
        if !avx512_bf16::available() {
            eprintln!("this CPU has no AVX512-BF16: the avx512-bf16 rung is not listed here, and not tested");
            assert!(!<CpuBackend as Implements<Matmul>>::variants(&CpuBackend::new().unwrap()).contains(&"avx512-bf16"));
            return;
        }
        let shapes = [(1, 1, 1), (3, 0, 5), (1, 7, 3), (17, 33, 15), (40, 300, 70), (33, 1025, 47), (96, 512, 64), (5, 2, 129)];
        for (m, k, n) in shapes {
            let input = Matmul::generate(&MatmulParams::new(m, k, n), 11).unwrap();
            let expected = Matmul::reference(&input).unwrap();
            let mut c = vec![f32::NAN; m * n];
            avx512_bf16::matmul(&input.a, &input.b, &mut c, m, k, n);
            let check = Matmul::check(&input, &expected, &c, Precision::Bf16);
            assert!(check.is_ok(), "{m}x{k}x{n}: {check:?}");
            // The products of bf16-rounded inputs, summed in f64: the rung's sums differ only by f32 rounding.
            let rounded = |x: &[f32]| x.iter().map(|&v| f64::from(Precision::Bf16.round(v))).collect::<Vec<f64>>();
            let (a, b) = (rounded(&input.a), rounded(&input.b));
            for i in 0..m {
                for j in 0..n {
                    let exact: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                    let scale: f64 = (0..k).map(|p| (a[i * k + p] * b[p * n + j]).abs()).sum();
                    let error = (f64::from(c[i * n + j]) - exact).abs();
                    assert!(error <= scale * 2f64.powi(-22), "{m}x{k}x{n} at ({i}, {j}): {} against {exact}", c[i * n + j]);
                }
            }
        }
        let (m, k, n) = (64, 512, 48);
        let input = Matmul::generate(&MatmulParams::new(m, k, n), 5).unwrap();
        let expected = Matmul::reference(&input).unwrap();
        let mut c = vec![f32::NAN; m * n];
        avx512_bf16::matmul(&input.a, &input.b, &mut c, m, k, n);
        assert!(Matmul::check(&input, &expected, &c, Precision::Fp32).is_err(), "the avx512-bf16 rung computed in f32");
        assert!(<CpuBackend as Implements<Matmul>>::variants(&CpuBackend::new().unwrap()).contains(&"avx512-bf16"));
    }

    /// A product that starts while the thread's kept buffer is in use (as when a rayon worker waiting inside one
    /// product runs another task's product) packs into a buffer of its own, and is right.
    #[test]
    fn a_product_started_inside_another_is_right() {
        use gpuworthy_core::{Precision, Workload};
        let (m, k, n) = (40, 300, 70);
        let (input, expected) = with_naive_product(m, k, n);
        PACKED.with(|kept| {
            let _in_use = kept.borrow_mut();
            let mut c = vec![f32::NAN; m * n];
            blocked(Supported::best(), &input.a, &input.b, &mut c, m, k, n);
            let check = Matmul::check(&input, &expected, &c, Precision::Fp32);
            assert!(check.is_ok(), "{check:?}");
        });
    }
}
