//! `stencil`: the 3×3 box blur. `scalar` visits each output pixel and its nine clamped neighbours on one thread.
//! `simd` gives bands of rows to rayon tasks; for each output row it first adds the three input rows (above, the
//! row, below, clamped) into a row of column sums, then adds three neighbouring column sums: four additions per pixel
//! instead of eight, all in vectors, and every input row is read from cache three times instead of memory nine.
//! Images past the caches are written with streaming stores (8 bytes of memory traffic per pixel instead of 12),
//! faster at 8192x8192 on a 16-core Xeon host (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).

use gpuworthy_core::workloads::Stencil;
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{STREAM_ABOVE, host_phases, stream_fence};
use crate::CpuBackend;
use crate::simd::simd_kernel;

fn scalar(data: &[f32], h: usize, w: usize, out: &mut [f32]) {
    for r in 0..h {
        for c in 0..w {
            let mut total = 0.0f32;
            for rr in [r.saturating_sub(1), r, (r + 1).min(h - 1)] {
                for cc in [c.saturating_sub(1), c, (c + 1).min(w - 1)] {
                    total += data[rr * w + cc];
                }
            }
            out[r * w + c] = total / 9.0;
        }
    }
}

simd_kernel! {
    /// One output row from its three (clamped) input rows, using `sums` (length `w`) as scratch; its interior
    /// written with streaming stores when `stream`.
    fn simd_row<S>(s, above: &[f32], row: &[f32], below: &[f32], sums: &mut [f32], out: &mut [f32], stream: bool) {
        let lanes = S::LANES;
        let w = row.len();
        let body = w - w % lanes;
        for (((a, r), b), sum) in above[..body]
            .chunks_exact(lanes)
            .zip(row[..body].chunks_exact(lanes))
            .zip(below[..body].chunks_exact(lanes))
            .zip(sums[..body].chunks_exact_mut(lanes))
        {
            s.store(sum, s.add(s.add(s.load(a), s.load(r)), s.load(b)));
        }
        for c in body..w {
            sums[c] = above[c] + row[c] + below[c];
        }

        let ninth = 1.0 / 9.0;
        out[0] = (sums[0] + sums[0] + sums[w.min(2) - 1]) * ninth;
        if w == 1 {
            return;
        }
        out[w - 1] = (sums[w - 2] + sums[w - 1] + sums[w - 1]) * ninth;
        // Interior columns 1..w-1: out[c] = sums[c-1] + sums[c] + sums[c+1].
        let mut c = 1;
        if stream {
            // Streaming stores need aligned addresses: the columns before the first aligned one, one by one.
            let head = (1 + s.aligned_prefix(&out[1..])).min(w - 1);
            for c in 1..head {
                out[c] = (sums[c - 1] + sums[c] + sums[c + 1]) * ninth;
            }
            c = head;
        }
        let vninth = s.splat(ninth);
        while c + lanes < w {
            let total = s.add(s.add(s.load(&sums[c - 1..]), s.load(&sums[c..])), s.load(&sums[c + 1..]));
            if stream {
                s.store_stream(&mut out[c..], s.mul(total, vninth));
            } else {
                s.store(&mut out[c..], s.mul(total, vninth));
            }
            c += lanes;
        }
        for c in c..w - 1 {
            out[c] = (sums[c - 1] + sums[c] + sums[c + 1]) * ninth;
        }
    }
}

impl Implements<Stencil> for CpuBackend {
    host_phases!(Stencil, stencil_into, |input| vec![0.0; input.data.len()]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "simd"]
    }

    /// The SIMD rows.
    fn best_variant(&self, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> &'static str {
        "simd"
    }
}

impl CpuBackend {
    /// `variant` of stencil on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn stencil_into(
        &self,
        variant: &str,
        input: &<Stencil as gpuworthy_core::Workload>::Input,
        output: &mut <Stencil as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let (h, w, data, out) = (input.height, input.width, &input.data, output);
        let vectorised = match variant {
            "scalar" => false,
            "simd" => true,
            _ => return Err(<Self as Implements<Stencil>>::unknown_variant(self, variant)),
        };
        if h == 0 || w == 0 {
            return Ok(());
        }
        if !vectorised {
            scalar(data, h, w, out);
            return Ok(());
        }
        let (rows_per_task, level) = ((16384 / w).clamp(1, 64), self.simd());
        // Past the caches the output is written with streaming stores: written once and never read, it moves 8
        // bytes per pixel instead of 12.
        let stream = out.len() > STREAM_ABOVE;
        out.par_chunks_mut(rows_per_task * w).enumerate().for_each(|(band, out)| {
            let mut sums = vec![0.0f32; w];
            for (i, out) in out.chunks_exact_mut(w).enumerate() {
                let r = band * rows_per_task + i;
                let row = |r: usize| &data[r * w..(r + 1) * w];
                simd_row(level, row(r.saturating_sub(1)), row(r), row((r + 1).min(h - 1)), &mut sums, out, stream);
            }
            if stream {
                stream_fence(level);
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use gpuworthy_core::workloads::{Shape2, Stencil};
    use gpuworthy_core::{Implements, Precision, Workload};

    use super::STREAM_ABOVE;
    use crate::CpuBackend;

    /// Past [`STREAM_ABOVE`] pixels the rows are written with streaming stores; an odd width starts every other row
    /// off the vector alignment, so the columns before the first aligned one take the scalar path.
    #[test]
    fn images_written_with_streaming_stores_match_the_reference() {
        let cpu = CpuBackend::new().unwrap();
        let shape = Shape2::new(STREAM_ABOVE / 2047 + 1, 2047);
        assert!(shape.rows * shape.cols > STREAM_ABOVE);
        let input = Stencil::generate(&shape, 7).unwrap();
        let expected = Stencil::reference(&input).unwrap();
        let actual = Implements::<Stencil>::run(&cpu, "simd", &input).unwrap();
        Stencil::check(&input, &expected, &actual, Precision::Fp32).unwrap();
    }
}
