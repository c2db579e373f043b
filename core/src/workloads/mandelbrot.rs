//! `mandelbrot`: iteration counts of `z = z² + c` over a region. Compute-bound with almost no input, so GPU-worthy
//! even with transfers; its uneven work per pixel is the lesson on branch divergence (warps and SIMD lanes alike).

use std::fmt;

use rayon::prelude::*;

use super::{Shape2, conformance_2d, square_ladder};
use crate::workload::{Cost, Mismatch, Precision, Workload, check_lengths, checked_area};
use crate::{Error, Result};

/// Iteration counts for a `width x height` image of the complex plane.
///
/// Pixel `(i, j)` (column `i`, row `j`) samples its centre, computed in `f32` exactly as
/// [`MandelbrotParams::pixel_centre`] does; from `z = 0`, `z = z² + c` is iterated in `f32` until `|z|² > 4` or
/// `max_iter` iterations. Every backend computes the centre the same way, so counts differ only where FMA
/// contraction changes a trajectory near the set's boundary: the check accepts 1% of pixels differing.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Mandelbrot, MandelbrotParams}};
/// let counts = Mandelbrot::reference(&MandelbrotParams::new(3, 3)).unwrap();
/// assert_eq!(counts[4], 256); // the centre pixel, c = -0.5 + 0i, is in the set
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Mandelbrot;

/// The rectangle of the complex plane an image samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Region {
    /// Real part of the left edge.
    pub x_min: f32,
    /// Real part of the right edge.
    pub x_max: f32,
    /// Imaginary part of row 0's edge.
    pub y_min: f32,
    /// Imaginary part of the last row's edge.
    pub y_max: f32,
}

impl Region {
    /// The whole set: x ∈ [-2, 1], y ∈ [-1.5, 1.5].
    pub const DEFAULT: Region = Region { x_min: -2.0, x_max: 1.0, y_min: -1.5, y_max: 1.5 };
}

/// The image size, iteration limit and region; also the whole input (there is no data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MandelbrotParams {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// The most iterations per pixel.
    pub max_iter: u32,
    /// The region sampled.
    pub region: Region,
}

impl MandelbrotParams {
    /// The default iteration limit.
    pub const DEFAULT_MAX_ITER: u32 = 256;

    /// A `width x height` image of the default region at 256 iterations.
    pub fn new(width: usize, height: usize) -> Self {
        MandelbrotParams { width, height, max_iter: Self::DEFAULT_MAX_ITER, region: Region::DEFAULT }
    }

    /// The step between pixel centres along x and y, in `f32`.
    pub fn steps(&self) -> (f32, f32) {
        let r = self.region;
        ((r.x_max - r.x_min) / self.width as f32, (r.y_max - r.y_min) / self.height as f32)
    }

    /// The point `c` that pixel `(column, row)` samples: `min + (index + 0.5) · step`, each operation in `f32`.
    #[inline]
    pub fn pixel_centre(&self, column: usize, row: usize) -> (f32, f32) {
        let (dx, dy) = self.steps();
        (self.region.x_min + (column as f32 + 0.5) * dx, self.region.y_min + (row as f32 + 0.5) * dy)
    }
}

impl fmt::Display for MandelbrotParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)?;
        if self.max_iter != Self::DEFAULT_MAX_ITER {
            write!(f, " ({} iterations)", self.max_iter)?;
        }
        if self.region != Region::DEFAULT {
            let r = self.region;
            write!(f, " [{}, {}] x [{}, {}]", r.x_min, r.x_max, r.y_min, r.y_max)?;
        }
        Ok(())
    }
}

/// The scalar iteration for one point, the definition every backend follows.
#[inline]
pub fn escape_count(cx: f32, cy: f32, max_iter: u32) -> u32 {
    let (mut x, mut y) = (0.0f32, 0.0f32);
    let mut count = 0;
    while count < max_iter {
        let (x2, y2) = (x * x, y * y);
        if x2 + y2 > 4.0 {
            break;
        }
        y = 2.0 * x * y + cy;
        x = x2 - y2 + cx;
        count += 1;
    }
    count
}

/// The smallest share of pixels that must equal the reference.
const MIN_MATCHING: f64 = 0.99;

impl Workload for Mandelbrot {
    const NAME: &'static str = "mandelbrot";
    const LESSON: &'static str = "compute-bound with almost no input; branch divergence";
    type Params = MandelbrotParams;
    type Input = MandelbrotParams;
    type Output = Vec<u32>;

    fn params(input: &MandelbrotParams) -> MandelbrotParams {
        *input
    }

    fn validate(p: &MandelbrotParams) -> Result<()> {
        checked_area("mandelbrot image", p.height, p.width)?;
        let r = p.region;
        if ![r.x_min, r.x_max, r.y_min, r.y_max].iter().all(|v| v.is_finite()) {
            return Err(Error::invalid(format!("mandelbrot region must be finite, got {r:?}")));
        }
        Ok(())
    }

    /// There is no input to make, but the counts will be allocated from these parameters alone: they are checked
    /// against the machine's memory here, where other workloads check before allocating their input.
    fn generate(params: &MandelbrotParams, _seed: u64) -> Result<MandelbrotParams> {
        Self::validate(params)?;
        crate::memory::check_host_memory::<Self>(params)?;
        Ok(*params)
    }

    /// Rows are computed in parallel; each pixel is [`escape_count`] at [`MandelbrotParams::pixel_centre`].
    fn reference(p: &MandelbrotParams) -> Result<Vec<u32>> {
        Self::validate(p)?;
        crate::memory::check_host_memory::<Self>(p)?;
        let mut counts = vec![0u32; p.width * p.height];
        if p.width == 0 {
            return Ok(counts);
        }
        counts.par_chunks_mut(p.width).enumerate().for_each(|(row, out)| {
            for (column, count) in out.iter_mut().enumerate() {
                let (cx, cy) = p.pixel_centre(column, row);
                *count = escape_count(cx, cy, p.max_iter);
            }
        });
        Ok(counts)
    }

    fn check(p: &MandelbrotParams, expected: &Vec<u32>, actual: &Vec<u32>, _: Precision) -> Result<(), Mismatch> {
        check_lengths(expected.len(), actual.len())?;
        if let Some(i) = actual.iter().position(|&c| c > p.max_iter) {
            return Err(Mismatch::new(format!(
                "pixel {i} counts {} iterations, above max_iter {}",
                actual[i], p.max_iter
            )));
        }
        let differing = expected.iter().zip(actual).filter(|(e, a)| e != a).count();
        let matching = 1.0 - differing as f64 / expected.len().max(1) as f64;
        if matching < MIN_MATCHING {
            let first = expected.iter().zip(actual).position(|(e, a)| e != a).unwrap_or(0);
            return Err(Mismatch::new(format!(
                "{differing} of {} pixels differ ({:.3}%, at most 1% may), first at row {}, column {}: expected {}, got {}",
                expected.len(),
                100.0 * (1.0 - matching),
                first / p.width.max(1),
                first % p.width.max(1),
                expected[first],
                actual[first]
            )));
        }
        Ok(())
    }

    /// Bytes are the output; flops are an upper bound (every pixel running `max_iter` iterations) until a run is
    /// known: see [`Workload::cost_of_run`].
    fn host_bytes(params: &MandelbrotParams) -> Option<u64> {
        (params.width as u64).checked_mul(params.height as u64)?.checked_mul(4)
    }

    fn cost(p: &MandelbrotParams) -> Cost {
        let pixels = (p.width * p.height) as u64;
        Cost { bytes: 4 * pixels, flops: 8 * pixels * p.max_iter as u64, elements: pixels }
    }

    /// 8 flops per iteration actually run.
    fn cost_of_run(p: &MandelbrotParams, counts: &Vec<u32>) -> Cost {
        let iterations: u64 = counts.iter().map(|&c| c as u64).sum();
        Cost { flops: 8 * iterations, ..Self::cost(p) }
    }

    fn ladder() -> Vec<MandelbrotParams> {
        square_ladder(64, 8192).into_iter().map(|s| MandelbrotParams::new(s.cols, s.rows)).collect()
    }

    fn quick_ladder() -> Vec<MandelbrotParams> {
        [64, 256, 1024].into_iter().map(|s| MandelbrotParams::new(s, s)).collect()
    }

    fn conformance_params() -> Vec<MandelbrotParams> {
        let mut params: Vec<_> =
            conformance_2d().into_iter().map(|s: Shape2| MandelbrotParams::new(s.cols, s.rows)).collect();
        params.push(MandelbrotParams { max_iter: 0, ..MandelbrotParams::new(17, 33) });
        params.push(MandelbrotParams { max_iter: 1000, ..MandelbrotParams::new(130, 70) });
        params
    }

    /// Regions away from the default: one inside the main cardioid (every pixel runs all iterations) and one far
    /// outside the set (every pixel escapes at once). A zoom onto the boundary is left out on purpose: there, FMA
    /// contraction changes a large share of the chaotic trajectories, which says nothing about correctness.
    fn special_inputs() -> Vec<(&'static str, MandelbrotParams)> {
        let inside = Region { x_min: -0.3, x_max: 0.1, y_min: -0.2, y_max: 0.2 };
        let outside = Region { x_min: 3.0, x_max: 4.0, y_min: 3.0, y_max: 4.0 };
        vec![
            (
                "a region inside the set at 500 iterations",
                MandelbrotParams { max_iter: 500, region: inside, ..MandelbrotParams::new(61, 47) },
            ),
            ("a region outside the set", MandelbrotParams { region: outside, ..MandelbrotParams::new(33, 17) }),
        ]
    }
}
