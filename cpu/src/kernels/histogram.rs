//! `histogram`: `scalar` counts into one table on one thread. `private` gives each rayon task its own tables and
//! merges them at the end: no atomics and no sharing, the CPU's privatisation.
//!
//! Within a task, bins are computed a vector at a time, and consecutive values go to four interleaved tables (for
//! up to 4096 bins), so that a run of equal bins (the skewed distribution puts 90% of values in one bin) becomes
//! four independent chains of increments instead of one chain where each increment waits for the previous store.

use gpuworthy_core::workloads::{Histogram, bin_of};
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{CHUNK_1D, host_phases};
use crate::CpuBackend;
use crate::simd::{Supported, simd_kernel};

/// Up to this many bins, four tables per task fit in L1 and L2 comfortably.
const MAX_BINS_FOR_FOUR_TABLES: usize = 4096;

simd_kernel! {
    /// Counts `x` into `tables`: `copies` tables of `bins + 1` counters each, the last counter of each collecting
    /// NaN (which is not counted). Bins are computed a vector at a time: `min(max(x·B, 0), B−1)`, truncated, with
    /// NaN lanes sent to the discard counter; then lane `l` increments table `l % copies` (`copies` is 1 or 4).
    fn count_into_tables<S>(s, x: &[f32], bins: usize, copies: usize, tables: &mut [u32]) {
        let stride = bins + 1;
        let (scale, last, zero) = (s.splat(bins as f32), s.splat((bins - 1) as f32), s.splat(0.0));
        let discard = s.splat(bins as f32);
        debug_assert!(copies.is_power_of_two());
        let table_mask = copies - 1; // `lane % copies` without a division
        let mut index = [0u32; 16];
        let index = &mut index[..S::LANES];
        let mut vectors = x.chunks_exact(S::LANES);
        for chunk in &mut vectors {
            let v = s.load(chunk);
            let bin = s.min(s.max(s.mul(v, scale), zero), last);
            s.store_truncated(index, s.select(s.is_nan(v), discard, bin));
            for (lane, &i) in index.iter().enumerate() {
                tables[(lane & table_mask) * stride + i as usize] += 1;
            }
        }
        for bin in vectors.remainder().iter().filter_map(|&v| bin_of(v, bins)) {
            tables[bin] += 1;
        }
    }
}

/// Counts `x` into `counts` (length `bins`) through private tables.
fn count_into(level: Supported, x: &[f32], bins: usize, counts: &mut [u32]) {
    let copies = if bins <= MAX_BINS_FOR_FOUR_TABLES { 4 } else { 1 };
    let stride = bins + 1;
    let mut tables = vec![0u32; copies * stride];
    count_into_tables(level, x, bins, copies, &mut tables);
    for table in tables.chunks_exact(stride) {
        counts.iter_mut().zip(table).for_each(|(c, t)| *c += t);
    }
}

impl Implements<Histogram> for CpuBackend {
    host_phases!(Histogram, histogram_into, |input| vec![0; input.bins]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "private"]
    }

    /// Private per-thread histograms merged at the end: no contention.
    fn best_variant(&self, _params: &<Histogram as gpuworthy_core::Workload>::Params) -> &'static str {
        "private"
    }
}

impl CpuBackend {
    /// `variant` of histogram on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn histogram_into(
        &self,
        variant: &str,
        input: &<Histogram as gpuworthy_core::Workload>::Input,
        output: &mut <Histogram as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let (bins, x) = (input.bins, &input.x);
        *output = match variant {
            "scalar" => {
                let mut counts = vec![0u32; bins];
                for bin in x.iter().filter_map(|&v| bin_of(v, bins)) {
                    counts[bin] += 1;
                }
                counts
            }
            "private" => {
                // Tasks of at least 64 Ki values, and more values per task when the tables are large, so that
                // zeroing and merging tables stays small next to counting.
                let per_task = CHUNK_1D.max(16 * bins);
                x.par_chunks(per_task)
                    .fold(
                        || vec![0u32; bins],
                        |mut counts, chunk| {
                            count_into(self.simd(), chunk, bins, &mut counts);
                            counts
                        },
                    )
                    .reduce(
                        || vec![0u32; bins],
                        |mut a, b| {
                            a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                            a
                        },
                    )
            }
            _ => return Err(<Self as Implements<Histogram>>::unknown_variant(self, variant)),
        };
        Ok(())
    }
}
