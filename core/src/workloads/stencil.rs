//! `stencil`: a 3×3 box blur with clamp-to-edge. 2D grids, tiles with halos, reuse of loaded data.

use std::ops::Range;

use rayon::prelude::*;

use super::softmax::validate_2d;
use super::{Shape2, conformance_2d, square_ladder};
use crate::Result;
use crate::rng;
use crate::workload::{Cost, Mismatch, Precision, Sharding, Tolerance, Workload, checked_area, describe_2d};

/// The rows `rows` of an image of `height` rows with their halo: the row above and the row below where the image
/// has them, since each output row reads its neighbours. Returns the rows to cut and how many halo rows lead.
fn with_halo(rows: &Range<usize>, height: usize) -> (Range<usize>, usize) {
    let first = rows.start.saturating_sub(1);
    ((first..(rows.end + 1).min(height)), rows.start - first)
}

/// `y[r][c]` = the mean of the 3×3 neighbourhood of `(r, c)`, coordinates clamped to the image. Input uniform in
/// `[0, 1)`. Any `height, width ≥ 1`; a 1×1 image is its own blur.
///
/// ```
/// use gpuworthy_core::{Workload, workloads::{Stencil, StencilInput}};
/// let y = Stencil::reference(&StencilInput::new(1, 1, vec![0.25]).unwrap()).unwrap();
/// assert_eq!(y, vec![0.25]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Stencil;

/// A row-major image.
#[derive(Debug, Clone, PartialEq)]
pub struct StencilInput {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// `height × width` pixels, row-major.
    pub data: Vec<f32>,
}

impl StencilInput {
    /// An image from its shape and pixels, validated.
    pub fn new(height: usize, width: usize, data: Vec<f32>) -> Result<Self> {
        let input = StencilInput { height, width, data };
        Stencil::validate(&input)?;
        Ok(input)
    }
}

/// The rounding it must allow: an output is nine non-negative terms summed in `f32` in any order (with or without
/// FMA contraction) and scaled by 1/9, so its relative error is at most about 10 roundings, 10 × 6e-8 = 6e-7 (the
/// absolute part covers outputs near 0, where the inputs are near 0 too). The wrong answer it must reject: a dropped
/// or repeated neighbour changes an output by a ninth of one input, about a ninth of the output (0.1 relative) for
/// pixels of average value, 10^4 times the bound; only a neighbour below 1e-4 of the mean of the nine goes unseen.
const TOLERANCE: Tolerance = Tolerance { absolute: 1e-6, relative: 1e-5 };

impl Workload for Stencil {
    const NAME: &'static str = "stencil";
    const LESSON: &'static str = "2D grids, tiles with halos, data reuse";
    type Params = Shape2;
    type Input = StencilInput;
    type Output = Vec<f32>;

    /// Bands of rows, each cut with its halo rows (`with_halo`): a member blurs its band with the rows its edge
    /// pixels read, and the join drops the halo rows' outputs, which a member at the band's edge clamps wrongly.
    fn sharding() -> Option<Sharding<Self>> {
        Some(Sharding {
            unit: "rows",
            units: |p| p.rows,
            part: |p, r| Shape2::new(with_halo(&r, p.rows).0.len(), p.cols),
            cut: |input, r| {
                let (rows, _) = with_halo(&r, input.height);
                StencilInput {
                    height: rows.len(),
                    width: input.width,
                    data: crate::shard::copy_of(&input.data[rows.start * input.width..rows.end * input.width]),
                }
            },
            join: |input, parts| {
                let own: Vec<&[f32]> = parts
                    .iter()
                    .map(|(rows, part)| {
                        let (_, leading) = with_halo(rows, input.height);
                        // A member's output of the wrong length joins short or long, and the check then says so.
                        let start = (leading * input.width).min(part.len());
                        &part[start..(start + rows.len() * input.width).min(part.len())]
                    })
                    .collect();
                crate::shard::concatenate_slices(&own)
            },
            unit_costs: None,
            // A part's output has its halo rows too: only its own rows go to its place.
            in_place: Some(crate::workload::InPlace {
                output: |input, previous| Some(crate::shard::reused_or_zeroed(previous, input.height * input.width)),
                split: |input, output, ranges| {
                    crate::shard::split_units(output.as_mut_slice(), ranges, input.width)
                        .into_iter()
                        .map(|slice| crate::workload::PartOutput::F32(vec![slice]))
                        .collect()
                },
                fill: |input, rows, part, slices| {
                    let (_, leading) = with_halo(&rows, input.height);
                    let start = (leading * input.width).min(part.len());
                    slices.fill(&[&part[start..(start + rows.len() * input.width).min(part.len())]])
                },
                input_bytes: |input| vec![bytemuck::cast_slice(&input.data)],
            }),
        })
    }

    fn params(input: &StencilInput) -> Shape2 {
        Shape2::new(input.height, input.width)
    }

    fn validate(input: &StencilInput) -> Result<()> {
        validate_2d("stencil image", input.height, input.width, input.data.len())
    }

    fn generate(params: &Shape2, seed: u64) -> Result<StencilInput> {
        crate::memory::check_host_memory::<Self>(params)?;
        let n = checked_area("stencil image", params.rows, params.cols)?;
        Ok(StencilInput { height: params.rows, width: params.cols, data: rng::uniform_f32(seed, 0, n, 0.0, 1.0) })
    }

    fn reference(input: &StencilInput) -> Result<Vec<f32>> {
        Self::validate(input)?;
        let (h, w) = (input.height, input.width);
        let mut out = vec![0.0f32; input.data.len()];
        if w == 0 {
            return Ok(out);
        }
        out.par_chunks_mut(w).enumerate().for_each(|(r, out_row)| {
            for (c, y) in out_row.iter_mut().enumerate() {
                let mut total = 0.0f64;
                for dr in [-1isize, 0, 1] {
                    let rr = r.saturating_add_signed(dr).min(h - 1);
                    for dc in [-1isize, 0, 1] {
                        let cc = c.saturating_add_signed(dc).min(w - 1);
                        total += input.data[rr * w + cc] as f64;
                    }
                }
                *y = (total / 9.0) as f32;
            }
        });
        Ok(out)
    }

    fn check(input: &StencilInput, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_2d(input.width))
    }

    fn host_bytes(params: &Shape2) -> Option<u64> {
        (params.rows as u64).checked_mul(params.cols as u64)?.checked_mul(8)
    }

    fn cost(params: &Shape2) -> Cost {
        let n = (params.rows * params.cols) as u64;
        Cost { bytes: 8 * n, flops: 9 * n, elements: n }
    }

    /// On the CPU, the output's lines are read before they are written, but by `simd` past
    /// [`CPU_STREAM_ABOVE`](crate::traffic::CPU_STREAM_ABOVE) pixels.
    fn traffic(params: &Shape2, backend: crate::BackendKind, variant: &str) -> u64 {
        let n = params.rows * params.cols;
        let streamed = variant == "simd" && n > crate::traffic::CPU_STREAM_ABOVE;
        let line_reads =
            if backend == crate::BackendKind::Cpu { crate::traffic::cpu_line_reads(n as u64, streamed) } else { 0 };
        Self::cost(params).bytes + line_reads
    }

    /// A square image like the ladder's, its side a multiple of 64 pixels and no power of two. The shape decides the
    /// rate, not only the bytes: on two cores a probe of 384x8192 ran slower per pixel than one of 1664x1664, and on
    /// the 16-core hosts the probes of rows of 8192 pixels predicted the image of 2048x2048 too slow in four of ten
    /// evaluations (measured: docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so,
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn streaming_probe(bytes: u64) -> Option<Shape2> {
        let pixels = bytes.div_ceil(Self::cost(&Shape2::square(1)).bytes.max(1));
        let mut side = ((pixels as f64).sqrt().ceil() as u64).div_ceil(64).max(1) * 64;
        while side * side < pixels {
            side += 64;
        }
        if side.is_power_of_two() {
            side += 64;
        }
        Some(Shape2::square(usize::try_from(side).ok()?))
    }

    fn ladder() -> Vec<Shape2> {
        square_ladder(64, 16384)
    }

    fn quick_ladder() -> Vec<Shape2> {
        square_ladder(64, 2048).into_iter().step_by(2).collect()
    }

    fn conformance_params() -> Vec<Shape2> {
        conformance_2d()
    }

    fn large_params() -> Vec<Shape2> {
        vec![Shape2::new(5801, 5800)]
    }

    fn special_inputs() -> Vec<(&'static str, StencilInput)> {
        let mut data = rng::uniform_f32(6, 0, 9 * 11, 0.0, 1.0);
        data[0] = f32::INFINITY; // a corner: spreads to its clamped neighbourhood only
        data[5 * 11 + 5] = f32::NAN; // the middle: spreads to its 3×3 neighbourhood only
        vec![("+inf in a corner and NaN in the middle", StencilInput { height: 9, width: 11, data })]
    }

    fn invalid_inputs() -> Vec<(&'static str, StencilInput, &'static str)> {
        vec![("0 x 5 of 3 values", StencilInput { height: 0, width: 5, data: vec![0.0; 3] }, "0 x 5")]
    }
}

#[cfg(feature = "proptest")]
impl crate::random::RandomInputs for Stencil {
    fn random() -> proptest::strategy::BoxedStrategy<StencilInput> {
        use crate::random::prelude::*;
        // An empty grid, a one-row or one-column grid, and the rest; heights and widths of 0 are both drawn.
        (prop_oneof![Just(0usize), 1usize..=60], prop_oneof![Just(0usize), 1usize..=300])
            .prop_flat_map(|(height, width)| {
                values(height * width, 0.0, 1.0).prop_map(move |data| StencilInput { height, width, data })
            })
            .boxed()
    }
}
