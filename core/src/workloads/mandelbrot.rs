//! `mandelbrot`: iteration counts of `z = z² + c` over a region. Compute-bound with almost no input, so GPU-worthy
//! even with transfers; its uneven work per pixel is the lesson on branch divergence (warps and SIMD lanes alike).

use std::fmt;
use std::ops::Range;

use rayon::prelude::*;

use super::{Shape2, conformance_2d, square_ladder};
use crate::shard::concatenate;
use crate::workload::{Cost, Mismatch, Precision, Sharding, Workload, check_lengths, checked_area};
use crate::{Error, Result};

/// Iteration counts for a `width x height` image of the complex plane.
///
/// Pixel `(i, j)` (column `i`, row `j`) samples its centre, computed in `f32` exactly as
/// [`MandelbrotParams::pixel_centre`] does; from `z = 0`, `z = z² + c` is iterated in `f32` until `|z|² > 4` or
/// `max_iter` iterations. Every backend computes the centre the same way, so counts differ only where FMA
/// contraction changes a trajectory near the set's boundary: the check looks at every pixel, and accepts a differing
/// count only where that pixel's count depends on the rounding (see [`rounding_sensitive`] and
/// [`parting_iteration`]).
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

/// Rows of a taller image: an instance with a band draws rows `first_row .. first_row + height` of an image
/// `image_height` rows tall, each pixel exactly as the whole image's run draws it (a device group's member draws such
/// a band).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// The image row the instance's row 0 is.
    pub first_row: usize,
    /// The rows of the whole image, which set the pixel height.
    pub image_height: usize,
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
    /// `None` for a whole image; the rows of a taller one otherwise.
    pub band: Option<Band>,
}

impl MandelbrotParams {
    /// The default iteration limit.
    pub const DEFAULT_MAX_ITER: u32 = 256;

    /// A `width x height` image of the default region at 256 iterations.
    pub fn new(width: usize, height: usize) -> Self {
        MandelbrotParams { width, height, max_iter: Self::DEFAULT_MAX_ITER, region: Region::DEFAULT, band: None }
    }

    /// The image row this instance's row 0 is: 0 for a whole image.
    pub fn first_row(&self) -> usize {
        self.band.map_or(0, |b| b.first_row)
    }

    /// The rows of the whole image: `height` for a whole image.
    pub fn image_height(&self) -> usize {
        self.band.map_or(self.height, |b| b.image_height)
    }

    /// The rows `rows` of this instance as an instance of their own ([`Band`]).
    pub fn rows(&self, rows: Range<usize>) -> MandelbrotParams {
        let band = Band { first_row: self.first_row() + rows.start, image_height: self.image_height() };
        MandelbrotParams { height: rows.len(), band: Some(band), ..*self }
    }

    /// The step between pixel centres along x and y, in `f32`.
    pub fn steps(&self) -> (f32, f32) {
        let r = self.region;
        ((r.x_max - r.x_min) / self.width as f32, (r.y_max - r.y_min) / self.image_height() as f32)
    }

    /// The point `c` that pixel `(column, row)` samples: `min + (index + 0.5) · step`, each operation in `f32`, the
    /// row counted in the whole image.
    #[inline]
    pub fn pixel_centre(&self, column: usize, row: usize) -> (f32, f32) {
        let (dx, dy) = self.steps();
        let image_row = self.first_row() + row;
        (self.region.x_min + (column as f32 + 0.5) * dx, self.region.y_min + (image_row as f32 + 0.5) * dy)
    }

    /// Each row's relative cost, estimated from a coarse sample of the image (at most 256 rows of 32 pixels, each
    /// iterated to at most 4096 steps, a pixel still inside then counted at `max_iter`): the rows inside the set
    /// cost `max_iter` iterations a pixel, those far outside a few, so equal numbers of rows are far from equal work.
    pub fn row_costs(&self) -> Vec<f64> {
        const SAMPLE_ROWS: usize = 256;
        const SAMPLE_COLUMNS: usize = 32;
        const SAMPLE_ITER: u32 = 4096;
        if self.height == 0 || self.width == 0 {
            return vec![1.0; self.height];
        }
        let sampled_rows = self.height.min(SAMPLE_ROWS);
        let columns = self.width.min(SAMPLE_COLUMNS);
        let limit = self.max_iter.min(SAMPLE_ITER);
        let samples: Vec<f64> = (0..sampled_rows)
            .into_par_iter()
            .map(|s| {
                let row = s * self.height / sampled_rows + self.height / sampled_rows / 2;
                let iterations: f64 = (0..columns)
                    .map(|c| {
                        let (cx, cy) = self.pixel_centre(c * self.width / columns, row);
                        let count = escape_count(cx, cy, limit);
                        f64::from(if count == limit { self.max_iter } else { count })
                    })
                    .sum();
                // A pixel that escapes at once still costs its store.
                1.0 + iterations / columns as f64
            })
            .collect();
        (0..self.height).map(|row| samples[(row * sampled_rows / self.height).min(sampled_rows - 1)]).collect()
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
        if let Some(band) = self.band {
            let rows = band.first_row..band.first_row + self.height;
            write!(f, " (rows {rows:?} of {})", band.image_height)?;
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

/// Where [`escape_count_rounded`] fuses a multiply and an add into one FMA (one rounding instead of two): each field
/// names an operation of the iteration and which of its products, if any, is fused.
#[derive(Debug, Clone, Copy)]
struct Fusions {
    /// The centre: `min + (index + 0.5) · step` as one FMA per axis.
    centre: bool,
    /// `y = 2xy + cy` as `fma(2x, y, cy)`.
    y: bool,
    /// `x = x² − y² + cx`: 0 as written, 1 as `fma(x, x, −y²) + cx`, 2 as `fma(−y, y, x²) + cx`.
    x: u8,
    /// The escape test's `x² + y²`: 0 as written, 1 as `fma(x, x, y²)`, 2 as `fma(y, y, x²)`.
    radius: u8,
}

impl Fusions {
    /// Every combination: 36.
    fn all() -> impl Iterator<Item = Fusions> {
        (0..36u8).map(|k| Fusions { centre: k & 1 != 0, y: k & 2 != 0, x: (k / 4) % 3, radius: k / 12 })
    }
}

/// [`escape_count`] with the multiply-adds of `fused` fused, as a GPU compiler may fuse them.
fn escape_count_rounded(p: &MandelbrotParams, (column, row): (usize, usize), fused: Fusions) -> u32 {
    let (cx, cy) = if fused.centre {
        let (dx, dy) = p.steps();
        ((column as f32 + 0.5).mul_add(dx, p.region.x_min), (row as f32 + 0.5).mul_add(dy, p.region.y_min))
    } else {
        p.pixel_centre(column, row)
    };
    let (mut x, mut y) = (0.0f32, 0.0f32);
    let mut count = 0;
    while count < p.max_iter {
        let (x2, y2) = (x * x, y * y);
        let radius = match fused.radius {
            1 => x.mul_add(x, y2),
            2 => y.mul_add(y, x2),
            _ => x2 + y2,
        };
        if radius > 4.0 {
            break;
        }
        let next_y = if fused.y { (2.0 * x).mul_add(y, cy) } else { 2.0 * x * y + cy };
        x = match fused.x {
            1 => x.mul_add(x, -y2) + cx,
            2 => (-y).mul_add(y, x2) + cx,
            _ => x2 - y2 + cx,
        };
        y = next_y;
        count += 1;
    }
    count
}

/// Whether a pixel's count depends on how its arithmetic is rounded: it changes when the centre or the iteration
/// fuses a multiply and an add (36 ways: [`Fusions`]), or when the iteration runs in `f64`. GPU compilers contract
/// differently from one another (llvmpipe's counts are not always one of these), so a differing count is honest
/// where the pixel is sensitive; where all of these agree, a differing count is a bug.
pub fn rounding_sensitive(p: &MandelbrotParams, column: usize, row: usize) -> bool {
    let (cx, cy) = p.pixel_centre(column, row);
    let reference = escape_count(cx, cy, p.max_iter);
    let in_f64 = {
        let (cx, cy) = (f64::from(cx), f64::from(cy));
        let (mut x, mut y, mut count) = (0.0f64, 0.0f64, 0);
        while count < p.max_iter && x * x + y * y <= 4.0 {
            (x, y) = (x * x - y * y + cx, 2.0 * x * y + cy);
            count += 1;
        }
        count
    };
    in_f64 != reference || Fusions::all().any(|fused| escape_count_rounded(p, (column, row), fused) != reference)
}

/// How far the `f32` and `f64` orbits of a pixel may drift apart before its count is a matter of rounding: 2^-10, in a
/// plane where the escape radius is 2.
const PARTED: f64 = 1.0 / 1024.0;

/// The iteration from which a pixel's count depends on how its arithmetic is rounded: the first at which its `f32`
/// orbit (the reference's) and its `f64` orbit are more than [`PARTED`] apart, or its reference count if they never
/// are. Near the set's boundary a rounding error grows from iteration to iteration; once the two orbits have parted,
/// an orbit computed with any other rounding (a contraction, a reassociation, a driver's own arithmetic) has parted
/// from both, and may escape at any later iteration. Before it, every honest orbit follows the reference: a count
/// lower than this (a pixel left at zero, a row not computed) is wrong.
pub fn parting_iteration(p: &MandelbrotParams, column: usize, row: usize) -> u32 {
    let (cx, cy) = p.pixel_centre(column, row);
    let (wx, wy) = (f64::from(cx), f64::from(cy));
    let (mut x, mut y, mut x64, mut y64) = (0.0f32, 0.0f32, 0.0f64, 0.0f64);
    let mut count = 0;
    while count < p.max_iter {
        if (f64::from(x) - x64).hypot(f64::from(y) - y64) > PARTED {
            return count;
        }
        let (x2, y2) = (x * x, y * y);
        if x2 + y2 > 4.0 {
            break;
        }
        y = 2.0 * x * y + cy;
        x = x2 - y2 + cx;
        (x64, y64) = (x64 * x64 - y64 * y64 + wx, 2.0 * x64 * y64 + wy);
        count += 1;
    }
    count
}

/// Whether a count that differs from the reference's is honest for its pixel: the pixel is [`rounding_sensitive`], or
/// the count is at or past its [`parting_iteration`].
fn honest_difference(p: &MandelbrotParams, column: usize, row: usize, count: u32) -> bool {
    count >= parting_iteration(p, column, row) || rounding_sensitive(p, column, row)
}

impl Workload for Mandelbrot {
    const NAME: &'static str = "mandelbrot";
    const LESSON: &'static str = "compute-bound with almost no input; branch divergence";
    type Params = MandelbrotParams;
    type Input = MandelbrotParams;
    type Output = Vec<u32>;

    /// Bands of rows ([`MandelbrotParams::rows`]), cut where the estimated cost divides in proportion to the shares
    /// ([`MandelbrotParams::row_costs`]): the rows through the set cost far more than those above and below it.
    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "rows",
            units: |p| p.height,
            part: |p, r| p.rows(r),
            cut: |p, r| p.rows(r),
            join: |_, parts| concatenate(parts),
            unit_costs: Some(MandelbrotParams::row_costs),
            in_place: Some(crate::array_in_place!(
                U32,
                len: |p: &MandelbrotParams| p.height * p.width,
                per_unit: |p: &MandelbrotParams| p.width,
                inputs: |_| Vec::new(),
            )),
        })
    }

    fn params(input: &MandelbrotParams) -> MandelbrotParams {
        *input
    }

    fn validate(p: &MandelbrotParams) -> Result<()> {
        checked_area("mandelbrot image", p.height, p.width)?;
        let r = p.region;
        if ![r.x_min, r.x_max, r.y_min, r.y_max].iter().all(|v| v.is_finite()) {
            return Err(Error::invalid(format!("mandelbrot region must be finite, got {r:?}")));
        }
        if let Some(band) = p.band
            && band.first_row.checked_add(p.height).is_none_or(|end| end > band.image_height)
        {
            return Err(Error::invalid(format!(
                "mandelbrot band of {} rows from row {} lies outside its image of {} rows",
                p.height, band.first_row, band.image_height
            )));
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
        // Every pixel is looked at: a differing count is honest only where the pixel's count depends on the rounding
        // (`honest_difference`). The first that does not is the error.
        let differing = expected.iter().zip(actual).filter(|(e, a)| e != a).count();
        let width = p.width.max(1);
        let stable = (0..expected.len())
            .into_par_iter()
            .find_first(|&i| expected[i] != actual[i] && !honest_difference(p, i % width, i / width, actual[i]));
        match stable {
            None => Ok(()),
            Some(i) => Err(Mismatch::new(format!(
                "{differing} of {} pixels differ, and each may only where its count depends on the rounding; at row {}, \
                 column {} every rounding gives {} (and the orbits part at iteration {}), got {}",
                expected.len(),
                i / width,
                i % width,
                expected[i],
                parting_iteration(p, i % width, i / width),
                actual[i]
            ))),
        }
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

    /// 512x512, where the image from the host is a toss-up between CUDA's pipelined path and wgpu: their downloads of
    /// 1 MiB were off the curves through 256x256 and 1024x1024, and auto, calibrated without it, took the slower
    /// wgpu over CUDA on an H200 and an H100 (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn calibration_extra() -> Vec<MandelbrotParams> {
        vec![MandelbrotParams::new(512, 512)]
    }

    fn conformance_params() -> Vec<MandelbrotParams> {
        let mut params: Vec<_> =
            conformance_2d().into_iter().map(|s: Shape2| MandelbrotParams::new(s.cols, s.rows)).collect();
        params.push(MandelbrotParams { max_iter: 0, ..MandelbrotParams::new(17, 33) });
        params.push(MandelbrotParams { max_iter: 1000, ..MandelbrotParams::new(130, 70) });
        params
    }

    fn large_params() -> Vec<MandelbrotParams> {
        vec![MandelbrotParams { max_iter: 8, ..MandelbrotParams::new(6000, 5801) }]
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


#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Mandelbrot {
    fn random() -> proptest::strategy::BoxedStrategy<MandelbrotParams> {
        use crate::random::prelude::*;
        (side(90), side(90), prop_oneof![Just(0u32), Just(1u32), 2u32..300])
            .prop_map(|(width, height, max_iter)| MandelbrotParams { max_iter, ..MandelbrotParams::new(width, height) })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 × 31 pixels at 256 iterations: llvmpipe returned 103 at column 1, row 9 (the reference says 108), one of two
    /// differing pixels, 3.2% of the image.
    fn small_image() -> MandelbrotParams {
        MandelbrotParams::new(2, 31)
    }

    #[test]
    fn differing_counts_at_rounding_sensitive_pixels_pass_on_a_small_image() {
        let p = small_image();
        let expected = Mandelbrot::reference(&p).unwrap();
        assert!(rounding_sensitive(&p, 1, 9), "the pixel llvmpipe changed depends on the rounding");
        let mut actual = expected.clone();
        let y_fused = Fusions { centre: false, y: true, x: 0, radius: 0 };
        actual[9 * 2 + 1] = escape_count_rounded(&p, (1, 9), y_fused); // 103, as llvmpipe gave
        assert_ne!(actual, expected);
        let mirror = (p.height - 1 - 9) * 2 + 1; // the conjugate pixel, as sensitive
        assert!(rounding_sensitive(&p, 1, p.height - 1 - 9));
        actual[mirror] =
            escape_count_rounded(&p, (1, p.height - 1 - 9), Fusions { centre: true, y: true, x: 2, radius: 1 });
        assert!(Mandelbrot::check(&p, &expected, &actual, Precision::Fp32).is_ok());
    }

    #[test]
    fn a_differing_count_where_every_rounding_agrees_fails_however_few() {
        let p = small_image();
        let expected = Mandelbrot::reference(&p).unwrap();
        // Column 1, row 15 samples c = 0.25 + 0i, the cusp of the main cardioid, where z creeps towards 1/2: every
        // rounding runs all 256 iterations.
        let inside = 15 * 2 + 1;
        assert_eq!(expected[inside], 256);
        assert!(!rounding_sensitive(&p, 1, 15));
        // A sensitive pixel differing as well does not excuse it.
        let mut actual = expected.clone();
        actual[9 * 2 + 1] = escape_count_rounded(&p, (1, 9), Fusions { centre: false, y: true, x: 0, radius: 0 });
        actual[inside] = 255;
        let error = Mandelbrot::check(&p, &expected, &actual, Precision::Fp32).unwrap_err().to_string();
        assert!(error.contains("row 15, column 1 every rounding gives 256 (and the orbits part at iteration 256), got 255"), "{error}");
    }

    /// A planted wrong answer: one row of a 257 x 100 image left uncomputed (0.4% of its pixels) fails.
    #[test]
    fn a_missing_row_fails_however_small_a_share_of_the_image() {
        let p = MandelbrotParams::new(257, 100);
        let expected = Mandelbrot::reference(&p).unwrap();
        let mut actual = expected.clone();
        actual[50 * 257..51 * 257].fill(0);
        let error = Mandelbrot::check(&p, &expected, &actual, Precision::Fp32).unwrap_err().to_string();
        assert!(error.contains("row 50"), "{error}");
    }

    #[test]
    fn pixels_inside_and_far_outside_the_set_do_not_depend_on_rounding() {
        let p = MandelbrotParams::new(64, 64);
        let counts = Mandelbrot::reference(&p).unwrap();
        let (inside, outside) = (32 * 64 + 24, 0); // c near -0.5 + 0i; c = -2 - 1.5i, escaping at once
        assert_eq!(counts[inside], 256);
        assert!(counts[outside] <= 1);
        assert!(!rounding_sensitive(&p, 24, 32));
        assert!(!rounding_sensitive(&p, 0, 0));
    }
}
