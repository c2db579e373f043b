//! `mandelbrot`: `scalar` iterates one pixel at a time on one thread. `simd` gives rows to rayon (work-stealing
//! evens out rows of very different cost) and iterates `LANES` pixels at once: lanes that have escaped are masked
//! out of the count, but the vector keeps going until every lane has escaped or `max_iter` is reached. That is
//! branch divergence, the CPU's face of it: a vector is as slow as its slowest lane.
//!
//! The arithmetic is the reference's, operation for operation, with no fused multiply-add, so the counts match the
//! scalar reference exactly.

use gpuworthy_core::workloads::{Mandelbrot, MandelbrotParams, escape_count};
use gpuworthy_core::{Error, Implements, Result};
use rayon::prelude::*;

use super::host_phases;
use crate::CpuBackend;
use crate::simd::simd_kernel;

/// The simd variant counts in `f32` lanes, exact up to 2^24.
const MAX_SIMD_ITER: u32 = 1 << 24;

fn scalar_row(p: &MandelbrotParams, row: usize, out: &mut [u32]) {
    for (column, count) in out.iter_mut().enumerate() {
        let (cx, cy) = p.pixel_centre(column, row);
        *count = escape_count(cx, cy, p.max_iter);
    }
}

simd_kernel! {
    /// One row, `LANES` pixels at a time.
    fn simd_row<S>(s, p: &MandelbrotParams, row: usize, out: &mut [u32]) {
        let lanes = S::LANES;
        let (dx, _) = p.steps();
        let (_, cy) = p.pixel_centre(0, row);
        let (vdx, vx0, vcy) = (s.splat(dx), s.splat(p.region.x_min), s.splat(cy));
        let (two, four, one, half) = (s.splat(2.0), s.splat(4.0), s.splat(1.0), s.splat(0.5));
        let lane_offsets: Vec<f32> = (0..lanes).map(|l| l as f32).collect();
        let body = out.len() - out.len() % lanes;
        let mut counts = vec![0.0f32; lanes];
        for (start, out) in (0..body).step_by(lanes).zip(out[..body].chunks_exact_mut(lanes)) {
            // c = x_min + (column + 0.5) * dx, as `MandelbrotParams::pixel_centre` computes it.
            let column = s.add(s.splat(start as f32), s.load(&lane_offsets));
            let cx = s.add(vx0, s.mul(s.add(column, half), vdx));
            let (mut x, mut y, mut count) = (s.splat(0.0), s.splat(0.0), s.splat(0.0));
            let mut escaped = s.is_nan(x); // no lane set
            for _ in 0..p.max_iter {
                let (x2, y2) = (s.mul(x, x), s.mul(y, y));
                escaped = s.or(escaped, s.lt(four, s.add(x2, y2)));
                if s.all(escaped) {
                    break;
                }
                count = s.select(escaped, count, s.add(count, one));
                y = s.add(s.mul(s.mul(two, x), y), vcy);
                x = s.add(s.sub(x2, y2), cx);
            }
            s.store(&mut counts, count);
            for (o, c) in out.iter_mut().zip(&counts) {
                *o = *c as u32;
            }
        }
        for (column, count) in out.iter_mut().enumerate().skip(body) {
            let (cx, cy) = p.pixel_centre(column, row);
            *count = escape_count(cx, cy, p.max_iter);
        }
    }
}

impl Implements<Mandelbrot> for CpuBackend {
    host_phases!(Mandelbrot, mandelbrot_into, |input| vec![0; input.width * input.height]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "simd"]
    }

    /// The SIMD rows: several pixels per instruction.
    fn best_variant(&self, _params: &<Mandelbrot as gpuworthy_core::Workload>::Params) -> &'static str {
        "simd"
    }
}

impl CpuBackend {
    /// `variant` of mandelbrot on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn mandelbrot_into(
        &self,
        variant: &str,
        input: &<Mandelbrot as gpuworthy_core::Workload>::Input,
        output: &mut <Mandelbrot as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let level = self.simd();
        let simd = move |p: &MandelbrotParams, row: usize, out: &mut [u32]| simd_row(level, p, row, out);
        let row_kernel: &(dyn Fn(&MandelbrotParams, usize, &mut [u32]) + Sync) = match variant {
            "scalar" => &scalar_row,
            "simd" => &simd,
            _ => return Err(<Self as Implements<Mandelbrot>>::unknown_variant(self, variant)),
        };
        let (p, out) = (input, output);
        if variant == "simd" && p.max_iter > MAX_SIMD_ITER {
            return Err(Error::TooLarge {
                what: format!("max_iter {} for the simd variant", p.max_iter),
                limit: format!("{MAX_SIMD_ITER} (2^24: counts are kept in f32 lanes); use the scalar variant"),
            });
        }
        if p.width == 0 {
            return Ok(());
        }
        if variant == "scalar" {
            out.chunks_exact_mut(p.width).enumerate().for_each(|(row, out)| row_kernel(p, row, out));
        } else {
            out.par_chunks_mut(p.width).enumerate().for_each(|(row, out)| row_kernel(p, row, out));
        }
        Ok(())
    }
}
