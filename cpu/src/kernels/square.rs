//! `square` on the CPU: `scalar`, the loop anyone writes first, and `simd` (see [`super::elementwise`]).

use gpuworthy_core::workloads::Square;
use std::ops::Range;

use gpuworthy_core::{Implements, PartOutput, Result};
use rayon::prelude::*;

use super::elementwise::{PARALLEL_FROM, VARIANTS};
use super::{CHUNK_1D, STREAM_ABOVE, host_phases, part_slices};
use crate::CpuBackend;
use crate::simd::simd_kernel;

simd_kernel! {
    /// `y = x * x` over one chunk, with streaming stores when `stream`.
    fn square_chunk<S>(s, x: &[f32], y: &mut [f32], stream: bool) {
        let head = if stream { s.aligned_prefix(y) } else { 0 };
        for (x, y) in x[..head].iter().zip(&mut y[..head]) {
            *y = x * x;
        }
        let (x, y) = (&x[head..], &mut y[head..]);
        let mut xs = x.chunks_exact(S::LANES);
        let mut ys = y.chunks_exact_mut(S::LANES);
        if stream {
            for (x, y) in (&mut xs).zip(&mut ys) {
                let v = s.load(x);
                s.store_stream(y, s.mul(v, v));
            }
            s.fence();
        } else {
            for (x, y) in (&mut xs).zip(&mut ys) {
                let v = s.load(x);
                s.store(y, s.mul(v, v));
            }
        }
        for (x, y) in xs.remainder().iter().zip(ys.into_remainder()) {
            *y = x * x;
        }
    }
}

impl Implements<Square> for CpuBackend {
    host_phases!(Square, square_into, |input| vec![0.0; input.len()]);

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.to_vec()
    }

    /// `scalar` (one thread; the compiler vectorises it) below [`PARALLEL_FROM`], where waking the thread pool costs
    /// more than it saves (at 2^18, on 16 cores and on 2) and where `simd` runs on one thread too (on an H200's
    /// 16-core AVX-512 host its explicit vectors were slower than the compiler's loop at 2^18; measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so); `simd` on every thread above.
    fn best_variant(&self, params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        if params.0 < PARALLEL_FROM { "scalar" } else { "simd" }
    }

    fn run_into(&self, variant: &str, x: &Vec<f32>, y: &mut Vec<f32>) -> Result<()> {
        if y.len() != x.len() {
            *y = vec![0.0; x.len()];
        }
        self.square_into(variant, x, y)
    }

    /// Reads `x[units]` where it lies and writes the group's output in place.
    fn reads_parts_in_place(&self, _variant: &str, _params: &gpuworthy_core::workloads::Len) -> bool {
        true
    }

    fn run_part(&self, variant: &str, x: &Vec<f32>, units: Range<usize>, place: &mut PartOutput<'_>) -> Result<()> {
        let (x, y) = part_slices(x, units, place)?;
        self.square_into(variant, x, y)
    }
}

impl CpuBackend {
    /// `y = x * x` by `variant`; `x` and `y` have the same length.
    fn square_into(&self, variant: &str, x: &[f32], y: &mut [f32]) -> Result<()> {
        match variant {
            "scalar" => x.iter().zip(y.iter_mut()).for_each(|(x, y)| *y = x * x),
            "simd" if x.len() < PARALLEL_FROM => square_chunk(self.simd(), x, y, false),
            "simd" => {
                let (stream, level) = (y.len() > STREAM_ABOVE, self.simd());
                x.par_chunks(CHUNK_1D)
                    .zip(y.par_chunks_mut(CHUNK_1D))
                    .for_each(|(x, y)| square_chunk(level, x, y, stream));
            }
            _ => return Err(<Self as Implements<Square>>::unknown_variant(self, variant)),
        }
        Ok(())
    }
}
