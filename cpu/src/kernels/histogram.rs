//! `histogram`: `scalar` counts into one table on one thread. `private` gives each rayon task its own tables and
//! merges them at the end: no atomics and no sharing, the CPU's privatisation.
//!
//! Within a task, consecutive values go to four interleaved tables (for up to 4096 bins), so that a run of equal
//! bins (the skewed distribution puts 90% of values in one bin) becomes four independent chains of increments
//! instead of one chain where each increment waits for the previous store.

use gpuworthy_core::workloads::{Histogram, bin_of};
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{CHUNK_1D, host_phases};
use crate::CpuBackend;

/// Up to this many bins, four tables fit in L1 and L2 comfortably.
const MAX_BINS_FOR_FOUR_TABLES: usize = 4096;

/// Counts `x` into `counts` (length `bins`), through four interleaved tables when they are small.
fn count_into(x: &[f32], bins: usize, counts: &mut [u32]) {
    if bins > MAX_BINS_FOR_FOUR_TABLES {
        for bin in x.iter().filter_map(|&v| bin_of(v, bins)) {
            counts[bin] += 1;
        }
        return;
    }
    let mut tables = vec![0u32; 4 * bins];
    let (t0, rest) = tables.split_at_mut(bins);
    let (t1, rest) = rest.split_at_mut(bins);
    let (t2, t3) = rest.split_at_mut(bins);
    let scale = bins as f32;
    let last = bins - 1;
    // NaN is the only value for which `v == v` fails; it is skipped. `as usize` saturates, so negative values and
    // −inf land in bin 0 and +inf past the end, clamped to the last bin.
    let bin = |v: f32| ((v * scale) as usize).min(last);
    let mut quads = x.chunks_exact(4);
    for q in &mut quads {
        if q[0] == q[0] {
            t0[bin(q[0])] += 1;
        }
        if q[1] == q[1] {
            t1[bin(q[1])] += 1;
        }
        if q[2] == q[2] {
            t2[bin(q[2])] += 1;
        }
        if q[3] == q[3] {
            t3[bin(q[3])] += 1;
        }
    }
    for bin in quads.remainder().iter().filter_map(|&v| bin_of(v, bins)) {
        t0[bin] += 1;
    }
    for (i, c) in counts.iter_mut().enumerate() {
        *c += t0[i] + t1[i] + t2[i] + t3[i];
    }
}

impl Implements<Histogram> for CpuBackend {
    host_phases!(Histogram, |input| vec![0; input.bins]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "private"]
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        let (bins, x) = (r.input.bins, &r.input.x);
        r.output = match variant {
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
                            count_into(chunk, bins, &mut counts);
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
