//! `square` and `saxpy`: one pass over memory. The `scalar` variants are the single-threaded loops anyone writes
//! first; `simd` runs explicit vector code, on the calling thread below [`PARALLEL_FROM`] elements and split over
//! rayon tasks above, so that it is never the slower of the two at a size where the thread pool does not pay.

use gpuworthy_core::workloads::{Saxpy, Square};
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{CHUNK_1D, STREAM_ABOVE, host_phases};
use crate::CpuBackend;
use crate::simd::simd_kernel;

const VARIANTS: [&str; 2] = ["scalar", "simd"];

/// From this many elements the parallel `simd` pass beats the one-thread loop (measured on 2 and 16 cores): below
/// it, `simd` runs on the calling thread. With the pool woken at every size, `simd` took 51.2 µs at 2^18 on an
/// H200's 16-core host where `scalar` took 32.8 µs, and a model calibrated at 2^16 and 2^20, where `simd` was the
/// faster, chose it there.
const PARALLEL_FROM: usize = 1 << 20;

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

impl Implements<Square> for CpuBackend {
    host_phases!(Square, |input| vec![0.0; input.len()]);

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.to_vec()
    }

    /// `scalar` (one thread; the compiler vectorises it) below [`PARALLEL_FROM`], where waking the thread pool costs
    /// more than it saves (at 2^18, with the pool: 64 µs against 26 on 16 cores, 85 against 51 on 2) and where `simd`
    /// runs on one thread too (on an H200's 16-core AVX-512 host its explicit vectors took 33.7 µs at 2^18 against
    /// the compiler's loop's 26.5; on 2 cores, saxpy's 16.1 against 18.9); `simd` on every thread above.
    fn best_variant(&self, params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        if params.0 < PARALLEL_FROM { "scalar" } else { "simd" }
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        let (x, y) = (&r.input, &mut r.output);
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

impl Implements<Saxpy> for CpuBackend {
    host_phases!(Saxpy, |input| input.y.clone());

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.to_vec()
    }

    /// As for square: `scalar` below [`PARALLEL_FROM`] (at 2^18 the pool took 46 against 29 µs on 16 cores, 87
    /// against 43 µs on 2), `simd` on every thread above.
    fn best_variant(&self, params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        if params.n < PARALLEL_FROM { "scalar" } else { "simd" }
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        let (a, x, y) = (r.input.a, &r.input.x, &mut r.output);
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
