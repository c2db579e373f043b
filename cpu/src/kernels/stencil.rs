//! `stencil`: the 3×3 box blur. `scalar` visits each output pixel and its nine clamped neighbours on one thread.
//! `simd` gives bands of rows to rayon tasks; for each output row it first adds the three input rows (above, the
//! row, below, clamped) into a row of column sums, then adds three neighbouring column sums: six additions per pixel
//! instead of eight, all in vectors, and every input row is read from cache three times instead of memory nine.

use gpuworthy_core::workloads::Stencil;
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::host_phases;
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
    /// One output row from its three (clamped) input rows, using `sums` (length `w`) as scratch.
    fn simd_row<S>(s, above: &[f32], row: &[f32], below: &[f32], sums: &mut [f32], out: &mut [f32]) {
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
        let vninth = s.splat(ninth);
        while c + lanes < w {
            let total = s.add(s.add(s.load(&sums[c - 1..]), s.load(&sums[c..])), s.load(&sums[c + 1..]));
            s.store(&mut out[c..], s.mul(total, vninth));
            c += lanes;
        }
        for c in c..w - 1 {
            out[c] = (sums[c - 1] + sums[c] + sums[c + 1]) * ninth;
        }
    }
}

impl Implements<Stencil> for CpuBackend {
    host_phases!(Stencil, |input| vec![0.0; input.data.len()]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "simd"]
    }

    /// The SIMD rows.
    fn best_variant(&self, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> &'static str {
        "simd"
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        let (h, w, data, out) = (r.input.height, r.input.width, &r.input.data, &mut r.output);
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
        out.par_chunks_mut(rows_per_task * w).enumerate().for_each(|(band, out)| {
            let mut sums = vec![0.0f32; w];
            for (i, out) in out.chunks_exact_mut(w).enumerate() {
                let r = band * rows_per_task + i;
                let row = |r: usize| &data[r * w..(r + 1) * w];
                simd_row(level, row(r.saturating_sub(1)), row(r), row((r + 1).min(h - 1)), &mut sums, out);
            }
        });
        Ok(())
    }
}
