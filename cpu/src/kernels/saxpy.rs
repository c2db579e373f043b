//! `saxpy` on the CPU: `scalar`, the loop anyone writes first, and `simd` (see [`super::elementwise`]).

use std::ops::Range;

use gpuworthy_core::workloads::{Saxpy, SaxpyInput};
use gpuworthy_core::{Implements, PartOutput, Result, Workload};
use rayon::prelude::*;

use super::elementwise::{PARALLEL_FROM, VARIANTS};
use super::{CHUNK_1D, host_phases, part_slices};
use crate::CpuBackend;
use crate::simd::simd_kernel;

simd_kernel! {
    /// `y = a * x + y` over one chunk, its vectors aligned to `y`: an allocator returns large buffers 16 bytes past
    /// a page, so without the peel every full-width load and store straddles two cache lines.
    fn saxpy_chunk<S>(s, a: f32, x: &[f32], y: &mut [f32]) {
        let head = s.aligned_prefix(y);
        for (x, y) in x[..head].iter().zip(&mut y[..head]) {
            *y = a.mul_add(*x, *y);
        }
        let (x, y) = (&x[head..], &mut y[head..]);
        let va = s.splat(a);
        let mut xs = x.chunks_exact(S::LANES);
        let mut ys = y.chunks_exact_mut(S::LANES);
        for (x, y) in (&mut xs).zip(&mut ys) {
            s.store(y, s.mul_add(va, s.load(x), s.load(y)));
        }
        for (x, y) in xs.remainder().iter().zip(ys.into_remainder()) {
            *y = a.mul_add(*x, *y);
        }
    }
}

impl Implements<Saxpy> for CpuBackend {
    // `y` copied on every core into memory mapped by those cores: a clone copies on one thread, and on a 32-core
    // host its first touch of 256 MiB took forty times the update itself.
    host_phases!(Saxpy, saxpy_into, |input| {
        let mut y = vec![0.0; input.y.len()];
        gpuworthy_core::shard::copy_into(&mut y, &input.y);
        y
    });

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.to_vec()
    }

    /// As for square: `scalar` below [`PARALLEL_FROM`] (at 2^18 the pool cost more than it saved on 16 cores and on
    /// 2; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so), `simd` on every thread above.
    fn best_variant(&self, params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        if params.n < PARALLEL_FROM { "scalar" } else { "simd" }
    }

    /// `y` copied into the group's output in place (on every core), then updated there: no cut, no join.
    fn reads_parts_in_place(&self, _variant: &str, _params: &gpuworthy_core::workloads::SaxpyParams) -> bool {
        true
    }

    fn run_part(&self, variant: &str, input: &SaxpyInput, units: Range<usize>, place: &mut PartOutput<'_>) -> Result<()> {
        Saxpy::validate(input)?;
        let (y, out) = part_slices(&input.y, units.clone(), place)?;
        gpuworthy_core::shard::copy_into(out, y);
        self.saxpy_in_place(variant, input.a, &input.x[units], out)
    }
}

impl CpuBackend {
    /// `variant` of saxpy on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn saxpy_into(
        &self,
        variant: &str,
        input: &<Saxpy as gpuworthy_core::Workload>::Input,
        output: &mut <Saxpy as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        self.saxpy_in_place(variant, input.a, &input.x, output)
    }
}

impl CpuBackend {
    /// `y += a * x` by `variant`; `x` and `y` have the same length.
    fn saxpy_in_place(&self, variant: &str, a: f32, x: &[f32], y: &mut [f32]) -> Result<()> {
        match variant {
            "scalar" => x.iter().zip(y.iter_mut()).for_each(|(x, y)| *y += a * x),
            "simd" if x.len() < PARALLEL_FROM => saxpy_chunk(self.simd(), a, x, y),
            "simd" => {
                let level = self.simd();
                x.par_chunks(CHUNK_1D).zip(y.par_chunks_mut(CHUNK_1D)).for_each(|(x, y)| saxpy_chunk(level, a, x, y));
            }
            _ => return Err(<Self as Implements<Saxpy>>::unknown_variant(self, variant)),
        }
        Ok(())
    }
}
