//! `softmax` row by row. `scalar` is three loops per row on one thread with the standard library's `exp`, summing
//! in `f64`. `simd`
//! gives rows to rayon tasks and runs each row in three vector passes that stay in L1 for rows up to a few thousand
//! columns: the maximum (watching for NaN), `exp(x − max)` written out and summed, then a scale by the reciprocal.
//! Fusing further would not save memory traffic on a CPU, where the row is cached between passes; on a GPU the same
//! passes are separate kernels unless fused, which is the lesson.

use gpuworthy_core::workloads::Softmax;
use gpuworthy_core::{Implements, Result};
use rayon::prelude::*;

use super::host_phases;
use crate::CpuBackend;
use crate::simd::simd_kernel;

/// Rows whose maximum is not finite (NaN, +inf, or all −inf) are NaN throughout, as the specification says.
fn scalar_row(x: &[f32], y: &mut [f32]) {
    let mut max = f32::NEG_INFINITY;
    let mut nan = false;
    for &v in x {
        max = max.max(v);
        nan |= v.is_nan();
    }
    if nan || !max.is_finite() {
        y.fill(f32::NAN);
        return;
    }
    // The row's sum in f64: an f32 running sum of 2^17 terms drifts by 1e-4 and more (rows then sum to 1.0009).
    let mut total = 0.0f64;
    for (y, &v) in y.iter_mut().zip(x) {
        *y = (v - max).exp();
        total += *y as f64;
    }
    let scale = (1.0 / total) as f32;
    y.iter_mut().for_each(|y| *y *= scale);
}

simd_kernel! {
    /// One row in three vector passes.
    fn simd_row<S>(s, x: &[f32], y: &mut [f32]) {
        let lanes = S::LANES;
        let body = x.len() - x.len() % lanes;

        let mut vmax = s.splat(f32::NEG_INFINITY);
        let mut vnan = s.is_nan(vmax); // no lane set
        for c in x[..body].chunks_exact(lanes) {
            let v = s.load(c);
            vmax = s.max(vmax, v);
            vnan = s.or(vnan, s.is_nan(v));
        }
        let mut max = s.reduce_max(vmax);
        let mut nan = s.any(vnan);
        for &v in &x[body..] {
            max = max.max(v);
            nan |= v.is_nan();
        }
        if nan || !max.is_finite() {
            y.fill(f32::NAN);
            return;
        }

        // Each block of SUM_BLOCK columns is summed in two f32 vector accumulators and its total added in f64, so no
        // f32 accumulator takes more than SUM_BLOCK / (2 lanes) terms however long the row.
        const SUM_BLOCK: usize = 4096;
        let vm = s.splat(max);
        let mut total = 0.0f64;
        for (xb, yb) in x[..body].chunks(SUM_BLOCK).zip(y[..body].chunks_mut(SUM_BLOCK)) {
            let mut vsum = [s.splat(0.0); 2];
            for (i, (xc, yc)) in xb.chunks_exact(lanes).zip(yb.chunks_exact_mut(lanes)).enumerate() {
                let e = s.exp(s.sub(s.load(xc), vm));
                s.store(yc, e);
                vsum[i % 2] = s.add(vsum[i % 2], e);
            }
            total += s.reduce_add(s.add(vsum[0], vsum[1])) as f64;
        }
        for (y, &v) in y[body..].iter_mut().zip(&x[body..]) {
            *y = (v - max).exp();
            total += *y as f64;
        }

        let scale = (1.0 / total) as f32;
        let vscale = s.splat(scale);
        for yc in y[..body].chunks_exact_mut(lanes) {
            let v = s.load(yc);
            s.store(yc, s.mul(v, vscale));
        }
        y[body..].iter_mut().for_each(|y| *y *= scale);
    }
}

impl Implements<Softmax> for CpuBackend {
    host_phases!(Softmax, softmax_into, |input| vec![0.0; input.data.len()]);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "simd"]
    }

    /// The SIMD rows: the fastest at every size measured.
    fn best_variant(&self, _params: &<Softmax as gpuworthy_core::Workload>::Params) -> &'static str {
        "simd"
    }
}

impl CpuBackend {
    /// `variant` of softmax on `input`, into `output` (made by the phases' macro: the resident output on a launch, a
    /// fresh one on a run), reading the input where it lies.
    fn softmax_into(
        &self,
        variant: &str,
        input: &<Softmax as gpuworthy_core::Workload>::Input,
        output: &mut <Softmax as gpuworthy_core::Workload>::Output,
    ) -> Result<()> {
        let vectorised = match variant {
            "scalar" => false,
            "simd" => true,
            _ => return Err(<Self as Implements<Softmax>>::unknown_variant(self, variant)),
        };
        let (cols, x, y) = (input.cols, &input.data, output);
        if cols == 0 {
            return Ok(());
        }
        match vectorised {
            false => x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)).for_each(|(x, y)| scalar_row(x, y)),
            true => {
                // Short rows are grouped so that each task has at least a few thousand elements.
                let rows_per_task = (4096 / cols).max(1);
                x.par_chunks(cols * rows_per_task).zip(y.par_chunks_mut(cols * rows_per_task)).for_each(|(x, y)| {
                    x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)).for_each(|(x, y)| simd_row(self.simd(), x, y));
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use gpuworthy_core::workloads::{Shape2, Softmax};
    use gpuworthy_core::{Implements, Precision, Workload};

    use crate::CpuBackend;

    /// Rows of 2^20 columns: an `f32` running sum drifted by up to 1e-3 there (rows summed to 1.0009), failing the
    /// check; every variant must pass it.
    #[test]
    fn long_rows_sum_to_one() {
        let cpu = CpuBackend::new().unwrap();
        let input = Softmax::generate(&Shape2::new(2, 1 << 20), 5).unwrap();
        let expected = Softmax::reference(&input).unwrap();
        for variant in Implements::<Softmax>::variants(&cpu) {
            let actual = Implements::<Softmax>::run(&cpu, variant, &input).unwrap();
            Softmax::check(&input, &expected, &actual, Precision::Fp32).unwrap_or_else(|m| panic!("{variant}: {m}"));
        }
    }
}
