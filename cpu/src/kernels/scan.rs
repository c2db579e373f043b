//! `scan` on the CPU: the inclusive prefix sum.
//!
//! `scalar` is the loop a CPU programmer writes, `y[i] = y[i-1] + x[i]`, with its running sum kept in `f64` (in
//! `f32` it fails the check past about 2^24 elements: the lesson of [`gpuworthy_core::workloads::Scan`]). It is one
//! chain of dependent additions, so it runs at one addition's latency per element on one core.
//!
//! `blocked` is the two-pass scan that splits the chain: pass 1 sums each chunk of [`CHUNK`] elements in `f64`, in
//! parallel; the chunks' totals are scanned on one thread (a few thousand additions); pass 2 scans each chunk in
//! parallel, starting from its carry. Inside a chunk, runs of [`RUN`] elements are scanned in `f32` (independent
//! chains the processor overlaps) and each is added to the chunk's `f64` carry, rounded once: every output is within a
//! few roundings of the exact prefix, whatever n. The vector instructions are the compiler's (the runs' `f64`
//! additions); an in-register prefix needs lane shuffles this crate's SIMD layer does not offer.

use gpuworthy_core::workloads::Scan;
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::{CHUNK_1D, host_phases};
use crate::CpuBackend;

/// Elements per task of the blocked scan.
const CHUNK: usize = CHUNK_1D;

/// Elements scanned in `f32` before they are added to the `f64` carry: short enough that the run's rounding stays
/// within the check's bound, long enough to overlap several runs' chains.
const RUN: usize = 8;

/// Below this many elements `blocked` runs its two passes on the calling thread: waking the pool costs more.
const PARALLEL_FROM: usize = 1 << 18;

/// The sum of `x` in `f64`, in 8 independent accumulators (the compiler keeps them in vector registers).
fn total(x: &[f32]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut runs = x.chunks_exact(8);
    for run in &mut runs {
        for (a, &v) in acc.iter_mut().zip(run) {
            *a += v as f64;
        }
    }
    let tail: f64 = runs.remainder().iter().map(|&v| v as f64).sum();
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

/// Scans `x` into `y` starting from `carry`: runs of [`RUN`] in `f32`, each added to the `f64` carry.
fn scan_from(carry: f64, x: &[f32], y: &mut [f32]) {
    let mut carry = carry;
    for (xs, ys) in x.chunks(RUN).zip(y.chunks_mut(RUN)) {
        let mut local = 0.0f32;
        for (&v, out) in xs.iter().zip(ys.iter_mut()) {
            local += v;
            *out = (carry + local as f64) as f32;
        }
        carry += total(xs);
    }
}

impl Implements<Scan> for CpuBackend {
    host_phases!(Scan, scan_into, |input| vec![0.0; input.len()]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "blocked"]
    }

    /// `blocked`: its runs overlap where `scalar` waits on each addition, and it uses every core.
    fn best_variant(&self, _params: &<Scan as gpuworthy_core::Workload>::Params) -> &'static str {
        "blocked"
    }
}

impl CpuBackend {
    /// `variant` of scan on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn scan_into(
        &self,
        variant: &str,
        input: &<Scan as gpuworthy_core::Workload>::Input,
        output: &mut <Scan as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let (x, y) = (input, output);
        match variant {
            "scalar" => {
                let mut running = 0.0f64;
                for (&v, out) in x.iter().zip(y.iter_mut()) {
                    running += v as f64;
                    *out = running as f32;
                }
            }
            "blocked" if x.len() < PARALLEL_FROM => scan_from(0.0, x, y),
            "blocked" => {
                let totals: Vec<f64> = x.par_chunks(CHUNK).map(total).collect();
                let carries: Vec<f64> = totals
                    .iter()
                    .scan(0.0f64, |carry, &t| {
                        let before = *carry;
                        *carry += t;
                        Some(before)
                    })
                    .collect();
                x.par_chunks(CHUNK)
                    .zip(y.par_chunks_mut(CHUNK))
                    .zip(carries.par_iter())
                    .for_each(|((x, y), &carry)| scan_from(carry, x, y));
            }
            _ => return Err(<Self as Implements<Scan>>::unknown_variant(self, variant)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::workloads::Len;
    use gpuworthy_core::{Precision, Workload};

    #[test]
    fn both_variants_pass_past_the_size_where_an_f32_running_sum_fails() {
        let backend = CpuBackend::new().unwrap();
        let x = Scan::generate(&Len((1 << 25) + 3), 11).unwrap();
        let expected = Scan::reference(&x).unwrap();
        for variant in ["scalar", "blocked"] {
            let y = Implements::<Scan>::run(&backend, variant, &x).unwrap();
            assert_eq!(Scan::check(&x, &expected, &y, Precision::Fp32), Ok(()), "{variant}");
        }
    }
}
