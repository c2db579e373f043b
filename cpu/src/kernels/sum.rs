//! `sum`: the reduction lesson on the CPU.
//!
//! `pairwise` is NumPy's algorithm on one thread: split in halves down to blocks of 128, sum each block with eight
//! independent `f32` accumulators, add the halves. Its error grows with log n rather than n, which is why it passes
//! where a sequential `f32` loop fails. `simd` sums blocks of 1024 in `f32` vector accumulators, widens each block's
//! sum to `f64`, and adds the chunks' sums across rayon tasks in `f64`.

use gpuworthy_core::workloads::Sum;
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{CHUNK_1D, host_phases};
use crate::CpuBackend;
use crate::simd::simd_kernel;

/// NumPy's pairwise summation: exact halves down to blocks of 128, each summed by eight accumulators.
fn pairwise(x: &[f32]) -> f32 {
    const BLOCK: usize = 128;
    if x.len() <= BLOCK {
        let mut acc = [0.0f32; 8];
        let mut chunks = x.chunks_exact(8);
        for c in &mut chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        let tail: f32 = chunks.remainder().iter().sum();
        ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
    } else {
        let half = (x.len() / 2).next_multiple_of(8);
        pairwise(&x[..half]) + pairwise(&x[half..])
    }
}

simd_kernel! {
    /// The sum of one chunk: blocks of 1024 in four vector accumulators, each block's total added in `f64`.
    fn sum_chunk<S>(s, x: &[f32]) -> f64 {
        const BLOCK: usize = 1024;
        let mut total = 0.0f64;
        let mut blocks = x.chunks_exact(BLOCK);
        for block in &mut blocks {
            let mut acc = [s.splat(0.0); 4];
            for group in block.chunks_exact(4 * S::LANES) {
                for (i, acc) in acc.iter_mut().enumerate() {
                    *acc = s.add(*acc, s.load(&group[i * S::LANES..]));
                }
            }
            total += s.reduce_add(s.add(s.add(acc[0], acc[1]), s.add(acc[2], acc[3]))) as f64;
        }
        total + blocks.remainder().iter().map(|&v| v as f64).sum::<f64>()
    }
}

impl Implements<Sum> for CpuBackend {
    host_phases!(Sum, sum_into, |input| 0.0);

    fn variants(&self) -> Vec<&'static str> {
        vec!["pairwise", "simd"]
    }

    /// The SIMD pairwise sum: the fastest at every size measured.
    fn best_variant(&self, _params: &<Sum as gpuworthy_core::Workload>::Params) -> &'static str {
        "simd"
    }
}

impl CpuBackend {
    /// `variant` of sum on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn sum_into(
        &self,
        variant: &str,
        input: &<Sum as gpuworthy_core::Workload>::Input,
        output: &mut <Sum as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let x = input;
        *output = match variant {
            "pairwise" => pairwise(x) as f64,
            "simd" => x.par_chunks(CHUNK_1D).map(|chunk| sum_chunk(self.simd(), chunk)).sum(),
            _ => return Err(<Self as Implements<Sum>>::unknown_variant(self, variant)),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_is_exact_on_small_integers() {
        let x: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
        assert_eq!(pairwise(&x), x.iter().map(|&v| v as f64).sum::<f64>() as f32);
        assert_eq!(pairwise(&[]), 0.0);
    }
}
