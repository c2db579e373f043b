//! The numerics under the cost model: a phase's time as a function of a run's cost ([`CostFit`], a non-negative
//! least-squares fit), and the measured points it passes through ([`Curve`]).
//!
//! Kept apart from [`crate::model`], which decides what to fit and how predictions combine, so that the arithmetic
//! can be read and tested on its own and depends on nothing but [`Cost`].

use gpuworthy_core::Cost;
use serde::{Deserialize, Serialize};

/// A phase's time as a function of a run's cost: `fixed_s + bytes·per_byte_s + flops·per_flop_s`, every term ≥ 0.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CostFit {
    /// Seconds every run pays, whatever its size: launch and synchronisation overhead.
    pub fixed_s: f64,
    /// Seconds per byte moved (the inverse of the bandwidth reached).
    pub per_byte_s: f64,
    /// Seconds per floating-point operation (the inverse of the arithmetic rate reached).
    pub per_flop_s: f64,
}

impl CostFit {
    /// The predicted seconds for a run of this cost.
    pub fn predict(&self, cost: &Cost) -> f64 {
        self.fixed_s + cost.bytes as f64 * self.per_byte_s + cost.flops as f64 * self.per_flop_s
    }

    /// The fit to `(cost, seconds)` samples with the least relative squared error among those whose coefficients
    /// are all non-negative; `None` without a sample of positive time.
    pub fn fit(samples: &[(Cost, f64)]) -> Option<CostFit> {
        let samples: Vec<(Cost, f64)> = samples.iter().copied().filter(|(_, t)| t.is_finite() && *t > 0.0).collect();
        if samples.is_empty() {
            return None;
        }
        let features = |c: &Cost| [1.0, c.bytes as f64, c.flops as f64];
        // Columns scaled to at most 1, so that the normal equations stay well conditioned across 12 decades.
        let mut scale = [1.0f64; 3];
        for (cost, _) in &samples {
            for (s, f) in scale.iter_mut().zip(features(cost)) {
                *s = s.max(f);
            }
        }
        // A term that is the same in every sample (mandelbrot's bytes at one size, a flop count that does not change)
        // cannot be told from the fixed term: leave it out, so that overhead is called overhead.
        let varies = |i: usize| {
            let values = samples.iter().map(|(c, _)| features(c)[i]);
            values.clone().fold(f64::MAX, f64::min) < values.fold(f64::MIN, f64::max)
        };
        let mut best: Option<(f64, CostFit)> = None;
        // Every subset of the three terms (the active-set view of non-negative least squares, small enough to
        // enumerate): solve each, keep the feasible one with the least error.
        for mask in 1u8..8 {
            let terms: Vec<usize> = (0..3).filter(|i| mask & (1 << i) != 0).collect();
            if terms.iter().any(|&i| i > 0 && !varies(i)) {
                continue;
            }
            let rows: Vec<Vec<f64>> = samples
                .iter()
                .map(|(cost, t)| {
                    let f = features(cost);
                    terms.iter().map(|&i| f[i] / scale[i] / t).collect()
                })
                .collect();
            let Some(solution) = least_squares(&rows) else { continue };
            if solution.iter().any(|&x| x < 0.0 || !x.is_finite()) {
                continue;
            }
            let mut coefficients = [0.0; 3];
            for (&i, x) in terms.iter().zip(&solution) {
                coefficients[i] = x / scale[i];
            }
            let fit = CostFit { fixed_s: coefficients[0], per_byte_s: coefficients[1], per_flop_s: coefficients[2] };
            let error: f64 = samples.iter().map(|(c, t)| ((fit.predict(c) - t) / t).powi(2)).sum();
            if best.as_ref().is_none_or(|(e, _)| error < *e) {
                best = Some((error, fit));
            }
        }
        best.map(|(_, fit)| fit)
    }
}

/// A phase's measured times at the calibrated sizes, and the fit that extends them to any size.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Curve {
    /// The fit over all points.
    pub fit: CostFit,
    /// `(bytes, flops, seconds)` at each calibrated size, by increasing bytes.
    pub points: Vec<(u64, u64, f64)>,
    /// The bytes the kernel really moved at each point ([`gpuworthy_core::Workload::traffic`]), where they were
    /// recorded: a kernel's curves; empty for transfers and for calibrations made before they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic: Vec<u64>,
}

impl Curve {
    /// A curve through these `(cost, seconds)` samples (the median of repeated sizes), made non-decreasing: a point
    /// slower than a larger one keeps the larger one's time, since more work of one kernel does not take less time,
    /// and such a point is a measurement's noise (the first size measured on a GPU, before its clocks settle, can
    /// take longer than the next two; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). The fit
    /// is made through those points. `None` without a sample of
    /// positive time.
    pub fn through(samples: &[(Cost, f64)]) -> Option<Curve> {
        let mut points: Vec<(u64, u64, f64)> = Vec::new();
        let mut sorted: Vec<(Cost, f64)> = samples.iter().copied().filter(|(_, t)| *t > 0.0 && t.is_finite()).collect();
        sorted.sort_by(|a, b| (a.0.bytes, a.0.flops).cmp(&(b.0.bytes, b.0.flops)).then(a.1.total_cmp(&b.1)));
        for group in sorted.chunk_by(|a, b| (a.0.bytes, a.0.flops) == (b.0.bytes, b.0.flops)) {
            let (cost, t) = group[group.len() / 2];
            points.push((cost.bytes, cost.flops, t));
        }
        let mut fastest_after = f64::INFINITY;
        for point in points.iter_mut().rev() {
            point.2 = point.2.min(fastest_after);
            fastest_after = point.2;
        }
        let monotone: Vec<(Cost, f64)> =
            points.iter().map(|&(bytes, flops, t)| (Cost { bytes, flops, elements: 0 }, t)).collect();
        let fit = CostFit::fit(&monotone)?;
        Some(Curve { fit, points, traffic: Vec::new() })
    }

    /// [`Curve::through`] `(cost, bytes really moved, seconds)` samples, keeping at each point the bytes its kernel
    /// moved (the most of the samples at that cost).
    pub fn through_moving(samples: &[(Cost, u64, f64)]) -> Option<Curve> {
        let mut curve = Curve::through(&samples.iter().map(|&(cost, _, t)| (cost, t)).collect::<Vec<_>>())?;
        curve.traffic = curve
            .points
            .iter()
            .map(|&(bytes, flops, _)| {
                let at = samples.iter().filter(|(c, _, _)| (c.bytes, c.flops) == (bytes, flops));
                at.map(|&(_, moved, _)| moved).max().unwrap_or(bytes)
            })
            .collect();
        Some(curve)
    }

    /// Whether this curve's measured time is below `other`'s at the calibrated sizes nearest to `cost` on each side
    /// (the one side there is, outside the calibrated range). Between two calibrated sizes the curves only
    /// interpolate, and cannot tell where two variants cross: a variant that was slower at one of the neighbouring
    /// sizes is not known to be faster in between (a CPU's thread pool that does not pay below 2^20 elements, with
    /// calibrated sizes at 2^16 and 2^20, is one such case).
    pub fn faster_at_neighbours(&self, other: &Curve, cost: &Cost) -> bool {
        let shared: Vec<(u64, f64, f64)> = self
            .points
            .iter()
            .filter_map(|p| other.points.iter().find(|q| (q.0, q.1) == (p.0, p.1)).map(|q| (p.0, p.2, q.2)))
            .collect();
        let below = shared.iter().filter(|p| p.0 <= cost.bytes).max_by_key(|p| p.0);
        let above = shared.iter().filter(|p| p.0 >= cost.bytes).min_by_key(|p| p.0);
        [below, above].into_iter().flatten().all(|&(_, mine, theirs)| mine < theirs)
    }

    /// The predicted seconds for a run of this cost.
    pub fn predict(&self, cost: &Cost) -> f64 {
        let fitted = self.fit.predict(cost);
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else { return fitted };
        let at = |p: &(u64, u64, f64)| Cost { bytes: p.0, flops: p.1, elements: 0 };
        // The coordinate along the ladder: bytes, or flops where the bytes do not change (mandelbrot's iterations).
        let x = |bytes: u64, flops: u64| ((bytes.max(1)) as f64).ln() + 1e-9 * ((flops.max(1)) as f64).ln();
        let here = x(cost.bytes, cost.flops);
        if here <= x(first.0, first.1) {
            return fitted * first.2 / self.fit.predict(&at(first)).max(f64::MIN_POSITIVE);
        }
        if here >= x(last.0, last.1) {
            return fitted * last.2 / self.fit.predict(&at(last)).max(f64::MIN_POSITIVE);
        }
        for pair in self.points.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let (xa, xb) = (x(a.0, a.1), x(b.0, b.1));
            if here >= xa && here <= xb && xb > xa {
                let w = (here - xa) / (xb - xa);
                return (a.2.ln() * (1.0 - w) + b.2.ln() * w).exp();
            }
        }
        fitted
    }
}

impl Curve {
    /// The predicted seconds of a whole run from the host (its transfers and the host's work around them, or a
    /// pipelined run) of this cost. Within the calibrated sizes, [`Curve::predict`]; past the largest, the largest
    /// size's time and, for each byte more, the seconds a byte took between the two largest sizes: the rate the
    /// transfers have reached there, where the fit over every size, weighted to the small ones that are mostly fixed
    /// cost, grows with a rate of their own. Scaled from the fit instead, whole runs past the ladder came out too slow,
    /// and from the two largest sizes close (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    /// Where the two largest sizes give no positive rate (a
    /// measurement's noise), the fit's growth stands.
    pub fn predict_whole_run(&self, cost: &Cost) -> f64 {
        self.predict_whole_run_within(cost, None)
    }

    /// [`Curve::predict_whole_run`], its growth past the calibrated sizes at most `per_byte` seconds a byte where
    /// that is given: the rate the device's transfers reached at larger sizes, measured with other workloads
    /// ([`crate::model::DeviceModel::host_transfer_per_byte_beyond`]).
    pub fn predict_whole_run_within(&self, cost: &Cost, per_byte: Option<f64>) -> f64 {
        match self.growth_at_top() {
            Some((top, time, own)) if cost.bytes > top => {
                time + (cost.bytes - top) as f64 * per_byte.map_or(own, |device| own.min(device))
            }
            _ => self.predict(cost),
        }
    }

    /// The largest calibrated size's bytes and seconds, and the seconds a byte the curve grew by from the size before
    /// it; `None` with fewer than two sizes, or where the two give no positive growth (a measurement's noise).
    pub fn growth_at_top(&self) -> Option<(u64, f64, f64)> {
        match self.points.as_slice() {
            [.., (b0, _, t0), (b1, _, t1)] if b1 > b0 && t1 > t0 => Some((*b1, *t1, (t1 - t0) / (b1 - b0) as f64)),
            _ => None,
        }
    }

    /// The predicted seconds of a kernel of this cost. Within the calibrated sizes, [`Curve::predict`]; past the
    /// largest, its time above the fixed (launch) part grows in proportion to the work, the larger of the growth in
    /// bytes and in flops, and for a memory-bound kernel (at most [`MEMORY_BOUND_FLOPS_PER_BYTE`]) by at least
    /// the device's streaming rate for each byte more, where that is known ([`StreamBound::EachByteMore`]). A fit over all sizes, weighted to the small
    /// launch-bound ones, extrapolates as if they went on: matmul's split-k kernel, calibrated up to 1024 where it is
    /// still mostly launch, was predicted far too fast for 8192 (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so); and the largest calibrated size may
    /// still run from a cache, which the streaming rate corrects. The prediction starts from each of the
    /// [`EXTRAPOLATE_FROM_LAST`] largest sizes and takes the least, so that one slowed measurement does not scale.
    ///
    /// `moved` is the bytes the kernel really moves at `cost` ([`gpuworthy_core::Workload::traffic`]), where known:
    /// with the bytes it moved at the calibrated sizes, a memory-bound kernel's time grows with those, not with the
    /// cost's (a CPU kernel whose ordinary stores read 4 bytes an element more up to 2^22 elements and whose streaming
    /// stores do not past it; a softmax whose long rows are read twice), and is streamed for the bytes it moves. With
    /// the variant's own rate measured past the cache ([`StreamBound::Measured`]), the prediction is that rate for
    /// every byte it moves.
    pub fn predict_kernel(&self, cost: &Cost, stream: Option<StreamBound>, moved: Option<u64>) -> f64 {
        let start = self.points.len().saturating_sub(EXTRAPOLATE_FROM_LAST);
        let Some((last, earlier)) = self.points[start..].split_last() else { return self.fit.predict(cost) };
        let &(bytes, flops, t) = last;
        if cost.bytes <= bytes && cost.flops <= flops {
            return self.predict(cost);
        }
        let memory_bound = cost.flops <= MEMORY_BOUND_FLOPS_PER_BYTE * cost.bytes;
        let fixed = self.fit.fixed_s.min(t);
        let growth = |now: u64, then: u64| if then == 0 { 1.0 } else { now as f64 / then as f64 };
        // The bytes each calibrated point moved, and the prediction's, where both are known.
        let moved = moved.filter(|_| self.traffic.len() == self.points.len());
        let moved_at = |bytes: u64, flops: u64| {
            let index = self.points.iter().position(|p| (p.0, p.1) == (bytes, flops));
            moved.and(index).map(|i| self.traffic[i])
        };
        // Measured rates: seconds per byte above the fixed part, at the largest calibrated size (for `Measured`) and
        // at each probe, interpolated along the bytes; the fixed part added once. That part is the one at the top
        // of the ladder (the intercept of the line through its two largest sizes, where that is more than the fit's):
        // a CPU pays the wake-up of its threads from the size where it runs in parallel, which the fit over every
        // size, most of them on one thread, does not see (from the fit's intercept, the CPU's stencil past the ladder
        // was predicted too slow; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
        // The line runs along the bytes (those moved, where known). Along the flops, matmul's split-k kernels came
        // close past the ladder on both GPUs, but a what-if GPU of slower memory, whose smaller sizes the roofline
        // raises, was then predicted faster than the GPU itself.
        let top_fixed = match (earlier.last(), moved_at(bytes, flops)) {
            (Some(&(b0, f0, t0)), then) => {
                let (x0, x1) = match (then, moved_at(b0, f0)) {
                    (Some(x1), Some(x0)) => (x0, x1),
                    _ => (b0, bytes),
                };
                let slope = if x1 > x0 { (t - t0) / (x1 - x0) as f64 } else { 0.0 };
                (t - slope * x1 as f64).min(0.9 * t)
            }
            _ => fixed,
        }
        .max(fixed);
        let above_launch =
            |(b, per_byte): (u64, f64)| (b, ((per_byte * b as f64 - top_fixed) / b.max(1) as f64).max(0.0));
        let now = moved.unwrap_or(cost.bytes);
        match stream.as_ref().filter(|_| memory_bound) {
            Some(StreamBound::Measured(probes)) => {
                let top = moved_at(bytes, flops).unwrap_or(bytes).max(1);
                let beyond: Vec<(u64, f64)> = probes.iter().copied().filter(|p| p.0 > top).map(above_launch).collect();
                // A largest size that was all launch says nothing of the cache's rate: taken as at most
                // [`CACHE_RATE_MAX`] times the first probe's.
                let top_rate = ((t - top_fixed) / top as f64).max(beyond.first().map_or(0.0, |p| p.1 / CACHE_RATE_MAX));
                let anchors: Vec<(u64, f64)> = std::iter::once((top, top_rate)).chain(beyond).collect();
                return top_fixed + now as f64 * per_byte_between(&anchors, now);
            }
            Some(StreamBound::FromMemory(probes)) => {
                let anchors: Vec<(u64, f64)> = probes.iter().copied().map(above_launch).collect();
                return top_fixed + now as f64 * per_byte_between(&anchors, now);
            }
            _ => {}
        }
        // The prediction from one calibrated point: its time above `fixed` grown with the work.
        let from_above = |&(bytes, flops, t): &(u64, u64, f64), fixed: f64| {
            let (now, then) = match (moved, moved_at(bytes, flops)) {
                (Some(now), Some(then)) => (now, then),
                _ => (cost.bytes, bytes),
            };
            let work = match moved {
                Some(_) if memory_bound => growth(now, then),
                _ => growth(now, then).max(growth(cost.flops, flops)),
            };
            let proportional = fixed + (t - fixed).max(0.0) * work.max(1.0);
            let streamed = match stream.as_ref().filter(|_| memory_bound) {
                Some(StreamBound::EachByteMore(per_byte)) => t + now.saturating_sub(then) as f64 * *per_byte,
                Some(StreamBound::Measured(_) | StreamBound::FromMemory(_)) | None => 0.0,
            };
            proportional.max(streamed)
        };
        let from = |point: &(u64, u64, f64)| from_above(point, fixed);
        // An earlier size counts where its time above the launch is at least half what the last size's rate gives
        // it: one still mostly launch says little about the rate past the ladder. The test compares times above the
        // launch only, so that scaling a curve's work (a what-if GPU's arithmetic) scales its prediction alike.
        let above_last = (t - fixed).max(0.0);
        let usable = |p: &&(u64, u64, f64)| {
            let growth = growth(bytes, p.0).max(growth(flops, p.1)).max(1.0);
            (p.2 - fixed) >= 0.5 * above_last / growth
        };
        // A kernel bound by its arithmetic (matmul, mandelbrot) starts from its largest size alone: at its smaller
        // sizes the launch hides most of the work, and cuBLAS on an H100, extrapolated from 512^3, was predicted far
        // too fast for 4096^3. Its time above the fixed part at the top of the
        // ladder grows with the work: a GPU's mandelbrot at 1024x1024 still spends more on its launch and its
        // last wave (the intercept through 512x512 and 1024x1024) than the fit's fixed part; grown from above the fit's, it
        // was predicted too slow past the ladder on both GPUs (measured:
        // docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
        if !memory_bound {
            return from_above(last, top_fixed);
        }
        earlier.iter().filter(usable).map(from).fold(from(last), f64::min)
    }
}

impl Curve {
    /// The predicted seconds of a kernel of this cost, bound by its arithmetic, that was also timed at `probe`
    /// (`(bytes, flops, seconds)`), a size past the calibrated ones ([`gpuworthy_core::Workload::compute_probe`]).
    /// Between the largest calibrated size and the probe, the time interpolated along the flops; past the probe, its
    /// time above the fixed (launch) part grown with them. A GPU that the largest calibrated size does not fill runs
    /// faster per flop past it, which growing that size's time with the flops cannot know: WGSL's matmul on an H100
    /// ran 2048^3 well under [`Curve::predict_kernel`]'s time (measured:
    /// docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so). A memory-bound cost,
    /// one within the calibrated sizes and a probe no larger than they are keep [`Curve::predict_kernel`]; a probe
    /// faster than the largest calibrated size counts as that size's time (more work does not take less).
    pub fn predict_kernel_probed(&self, cost: &Cost, probe: (u64, u64, f64)) -> f64 {
        let plain = self.predict_kernel(cost, None, None);
        let Some(&(_, top_flops, top_s)) = self.points.last() else { return plain };
        let (_, probe_flops, probe_s) = probe;
        let memory_bound = cost.flops <= MEMORY_BOUND_FLOPS_PER_BYTE * cost.bytes;
        if memory_bound || cost.flops <= top_flops || probe_flops <= top_flops || probe_s.is_nan() {
            return plain;
        }
        let probe_s = probe_s.max(top_s);
        if cost.flops <= probe_flops {
            let w = (cost.flops - top_flops) as f64 / (probe_flops - top_flops) as f64;
            return top_s + (probe_s - top_s) * w;
        }
        let fixed = self.fit.fixed_s.clamp(0.0, top_s);
        fixed + (probe_s - fixed) * (cost.flops as f64 / probe_flops as f64)
    }
}

/// How a streaming rate enters the prediction of a memory-bound kernel past its calibrated sizes
/// ([`Curve::predict_kernel`]), in seconds per byte.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamBound {
    /// The device's rate (a copy's, [`crate::model::calibration::measure_streaming`]) for each byte past the largest
    /// calibrated size, which may itself have run from a cache.
    EachByteMore(f64),
    /// This variant's own rates, measured above the calibrated sizes
    /// ([`crate::model::calibration::measure_workload_streaming`]): `(bytes moved, seconds per byte)`, fewest bytes first.
    /// The prediction's seconds per byte are interpolated between the largest calibrated size's and the probes'
    /// ([`per_byte_between`]), and are the largest probe's past it: a cache that others share empties gradually,
    /// not at a step.
    Measured(Vec<(u64, f64)>),
    /// The same for a kernel that moves more than the device's last-level cache holds: the probes past the cache
    /// alone. On a 16-core host with 300 MiB of it, saxpy ran much faster with 288 MiB of traffic than with 768 MiB
    /// or more; interpolated between the two, 768 MiB was predicted too fast (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    FromMemory(Vec<(u64, f64)>),
}

/// The seconds per byte at `bytes` through `anchors` (bytes, seconds per byte; fewest bytes first): interpolated
/// along the logarithms of both between the two anchors around `bytes`, the nearest anchor's outside them.
pub fn per_byte_between(anchors: &[(u64, f64)], bytes: u64) -> f64 {
    let (Some(&(first_bytes, first)), Some(&(last_bytes, last))) = (anchors.first(), anchors.last()) else {
        return 0.0;
    };
    if bytes <= first_bytes {
        return first;
    }
    if bytes >= last_bytes {
        return last;
    }
    let x = |b: u64| (b.max(1) as f64).ln();
    // Logarithms of rates that may be zero (a calibrated size that was all launch): interpolated from a floor.
    let ln = |r: f64| r.max(1e-18).ln();
    for pair in anchors.windows(2) {
        let ((low_bytes, low), (high_bytes, high)) = (pair[0], pair[1]);
        if bytes <= high_bytes && high_bytes > low_bytes {
            let w = ((x(bytes) - x(low_bytes)) / (x(high_bytes) - x(low_bytes))).clamp(0.0, 1.0);
            return (ln(low) * (1.0 - w) + ln(high) * w).exp();
        }
    }
    last
}

/// How many of a curve's largest calibrated sizes a prediction past them starts from ([`Curve::predict_kernel`]):
/// each gives a prediction, and the least is taken. One short measurement slowed by something else on the machine
/// (a two-core machine's histogram at 2^22 ran at half the rate of 2^20 and of every size past it) would otherwise
/// scale into every prediction beyond it; interference only ever makes a run slower, so the fastest rate of the
/// last few sizes is the machine's own (for a memory-bound kernel; a size still mostly launch left out, and none
/// credited with more than twice the last size's rate). Replayed over the committed calibrations and evaluations of
/// an H100, an H200 and a two-core machine, starting from the last three sizes instead of the last one brought more
/// kernel-only predictions past the ladder within the evaluation's goal on each (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const EXTRAPOLATE_FROM_LAST: usize = 3;

/// How many times the first streaming probe's rate a memory-bound kernel's largest calibrated size is credited with
/// at most, where that size was all launch ([`Curve::predict_kernel`]): a cache serves a few times what memory does,
/// not more. CUDA's `tiled` stencil on an H100 and an H200 took its launch's time from 64x64 to 1024x1024; with
/// ten times the probe's rate allowed at 1024x1024, 2048x2048 (32 MiB, half the L2) was predicted too fast; the
/// L2 had served it at less than twice the rate of memory (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const CACHE_RATE_MAX: f64 = 3.0;

/// Flops per byte up to which a kernel is taken to be bound by memory ([`Curve::predict_kernel`]): square, saxpy,
/// sum, softmax, histogram, stencil and expressions are; matmul and mandelbrot, whose time grows with their flops,
/// are not.
pub const MEMORY_BOUND_FLOPS_PER_BYTE: u64 = 16;

/// Solves `min Σ (row·x − 1)²` through the normal equations; `None` when they are singular.
fn least_squares(rows: &[Vec<f64>]) -> Option<Vec<f64>> {
    let n = rows.first()?.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for row in rows {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += row[i] * row[j];
            }
            a[i][n] += row[i];
        }
    }
    // Gaussian elimination with partial pivoting on the augmented matrix.
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let factor = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= factor * p;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_past_its_calibrated_sizes_grows_with_its_work_and_streams_no_faster_than_memory() {
        let cost = |bytes: u64, flops: u64| Cost { bytes, flops, elements: 0 };
        // Launch-bound small sizes and one larger one, like matmul calibrated to 1024 (bytes x4, flops x8 per step).
        let matmul = Curve::through(&[
            (cost(3 << 20, 1 << 27), 9.2e-6),
            (cost(12 << 20, 1 << 30), 20.8e-6),
            (cost(48 << 20, 1 << 33), 61.1e-6),
        ])
        .unwrap();
        // Grown from above the fixed part at the top: the intercept of the line through the two largest sizes along
        // the bytes, or the fit's where that is more.
        let top_fixed = (61.1e-6f64 - (61.1e-6 - 20.8e-6) * 48.0 / 36.0).max(matmul.fit.fixed_s.min(61.1e-6));
        let twice = matmul.predict_kernel(&cost(192 << 20, 1 << 36), None, None);
        assert!((twice - (top_fixed + (61.1e-6 - top_fixed) * 8.0)).abs() < 1e-12, "{twice}");
        // Within the calibrated sizes, the curve itself.
        assert_eq!(
            matmul.predict_kernel(&cost(12 << 20, 1 << 30), Some(StreamBound::EachByteMore(1.0)), None),
            matmul.predict(&cost(12 << 20, 1 << 30))
        );
        // A memory-bound kernel whose largest size ran from a cache: bounded by the streaming rate past it.
        let square = Curve::through(&[(cost(1 << 20, 1 << 17), 4e-6), (cost(32 << 20, 1 << 22), 10e-6)]).unwrap();
        let per_byte = 1.0 / 2.9e12;
        let past = cost(512 << 20, 1 << 26);
        let streamed = square.predict_kernel(&past, Some(StreamBound::EachByteMore(per_byte)), None);
        assert!((streamed - (10e-6 + (480u64 << 20) as f64 * per_byte)).abs() < 1e-12, "{streamed}");
        assert!(square.predict_kernel(&past, None, None) < streamed);
    }

    /// A GPU's mandelbrot: at 1024x1024 it still spends more on its launch and its last wave than the fit over every
    /// size puts there. Four times the pixels past the ladder take four times the time above that fixed part, the
    /// intercept of the line through the two largest sizes.
    #[test]
    fn a_kernel_bound_by_its_arithmetic_grows_from_above_the_fixed_part_at_its_top() {
        let pixels = |side: u64| Cost { bytes: 4 * side * side, flops: 512 * side * side, elements: side * side };
        let samples = [(pixels(64), 9.6e-6), (pixels(256), 10.4e-6), (pixels(512), 18.2e-6), (pixels(1024), 36.5e-6)];
        let curve = Curve::through(&samples).unwrap();
        assert!(curve.fit.fixed_s < 11e-6, "{}", curve.fit.fixed_s);
        let top_fixed = 36.5e-6 - (36.5e-6 - 18.2e-6) * 4.0 / 3.0;
        let four_times = curve.predict_kernel(&pixels(2048), None, None);
        assert!((four_times - (top_fixed + (36.5e-6 - top_fixed) * 4.0)).abs() < 1e-12, "{four_times}");
        let from_the_fit = curve.fit.fixed_s + (36.5e-6 - curve.fit.fixed_s) * 4.0;
        assert!(four_times < 0.95 * from_the_fit, "{four_times} against {from_the_fit}");
    }

    #[test]
    fn a_slowed_last_size_does_not_scale_into_the_predictions_past_it() {
        // 1 ns a byte past a 1 µs launch at 1, 4 and 16 MiB, but the 16 MiB measurement shared the machine and took
        // twice its time: past it, the prediction follows the faster rate of the sizes before.
        let at = |mib: u64, t: f64| (cost(mib << 20, mib << 18), t);
        let rate = |mib: u64| 1e-6 + (mib << 20) as f64 * 1e-9;
        let clean = Curve::through(&[at(1, rate(1)), at(4, rate(4)), at(16, rate(16))]).unwrap();
        let slowed = Curve::through(&[at(1, rate(1)), at(4, rate(4)), at(16, 2.0 * rate(16))]).unwrap();
        let past = cost(256 << 20, 1 << 26);
        let (expected, predicted) = (clean.predict_kernel(&past, None, None), slowed.predict_kernel(&past, None, None));
        assert!((predicted / expected - 1.0).abs() < 0.1, "{predicted} against {expected}");
        assert!((expected / rate(256) - 1.0).abs() < 0.1, "{expected} against {}", rate(256));
        // A size that is mostly launch does not stand in for the rate: its work is lost in the fixed part.
        let launch_bound = Curve::through(&[at(1, 1.0e-6), at(4, 1.1e-6), at(16, rate(16))]).unwrap();
        assert!(launch_bound.predict_kernel(&past, None, None) > 0.9 * rate(256));
    }

    /// A GPU that 1024^3 does not fill (eight times the flops of 512^3 in less than twice the time), probed at 3072^3:
    /// 2048^3 lies on the line between them, 6144^3 grows from the probe with the flops, and without the probe the same
    /// curve puts 2048^3 far above the line, at the flops' eight times.
    #[test]
    fn a_kernel_probed_past_its_ladder_is_interpolated_up_to_the_probe_and_grown_from_it_beyond() {
        let matmul = |n: u64| cost(12 * n * n, 2 * n * n * n);
        let samples = [(matmul(256), 42.2e-6), (matmul(512), 74.9e-6), (matmul(1024), 141.8e-6)];
        let curve = Curve::through(&samples).unwrap();
        let probe = (matmul(3072).bytes, matmul(3072).flops, 1.65e-3);
        let between = curve.predict_kernel_probed(&matmul(2048), probe);
        let on_the_line = 141.8e-6 + (1.65e-3 - 141.8e-6) * (7.0 / 26.0);
        assert!((between - on_the_line).abs() < 1e-9, "{between}");
        assert!(curve.predict_kernel(&matmul(2048), None, None) > 1.3 * between);
        let beyond = curve.predict_kernel_probed(&matmul(6144), probe);
        assert!(beyond > 7.5 * 1.65e-3 && beyond < 8.0 * 1.65e-3, "{beyond}");
        // Within the ladder, and with a probe no larger than its top, the curve alone.
        let inside = matmul(512);
        assert_eq!(curve.predict_kernel_probed(&inside, probe), curve.predict_kernel(&inside, None, None));
        let small_probe = (matmul(768).bytes, matmul(768).flops, 1e-4);
        assert_eq!(
            curve.predict_kernel_probed(&matmul(2048), small_probe),
            curve.predict_kernel(&matmul(2048), None, None)
        );
        // A probe that ran faster than the ladder's top counts as the top's time: no size past it is predicted faster.
        let fast_probe = (probe.0, probe.1, 1e-6);
        assert!(curve.predict_kernel_probed(&matmul(2048), fast_probe) >= 141.8e-6);
    }

    fn cost(bytes: u64, flops: u64) -> Cost {
        Cost { bytes, flops, elements: bytes / 4 }
    }

    /// WGSL's matmul from the host on an H100 (`nvidia-h100-24-calibration.json`): a fixed cost of about 100 µs at
    /// the small sizes, and transfers that reach their rate only between the two largest. Past them a whole run grows
    /// at that rate; the fit's growth, weighted to the small sizes, nearly doubled it.
    #[test]
    fn a_whole_run_past_its_calibrated_sizes_grows_at_the_rate_of_its_two_largest() {
        let at = |bytes: u64, t: f64| (Cost { bytes, flops: 0, elements: 0 }, t);
        let samples = [
            at(12288, 118.8e-6),
            at(49152, 133.4e-6),
            at(786432, 225.4e-6),
            at(3145728, 766.0e-6),
            at(12582912, 1146.5e-6),
        ];
        let curve = Curve::through(&samples).unwrap();
        let past = Cost { bytes: 50331648, flops: 0, elements: 0 };
        let rate = (1146.5e-6 - 766.0e-6) / (12582912.0 - 3145728.0);
        let expected = 1146.5e-6 + (50331648.0 - 12582912.0) * rate;
        assert!((curve.predict_whole_run(&past) - expected).abs() < 1e-12, "{}", curve.predict_whole_run(&past));
        assert!(curve.predict(&past) > 1.2 * expected, "the fit's growth: {}", curve.predict(&past));
        // Within the calibrated sizes, the curve itself; two largest sizes with no rate between them leave the fit's.
        assert_eq!(curve.predict_whole_run(&samples[3].0), curve.predict(&samples[3].0));
        let flat = Curve::through(&[at(1 << 20, 50e-6), at(4 << 20, 300e-6), at(16 << 20, 300e-6)]).unwrap();
        assert_eq!(flat.predict_whole_run(&past), flat.predict(&past));
    }

    #[test]
    fn a_fit_recovers_overhead_and_bandwidth() {
        let truth = CostFit { fixed_s: 5e-6, per_byte_s: 1.0 / 2e12, per_flop_s: 0.0 };
        let samples: Vec<(Cost, f64)> =
            (10..30).step_by(2).map(|p| cost(1 << p, 10 * p)).map(|c| (c, truth.predict(&c))).collect();
        let fit = CostFit::fit(&samples).unwrap();
        for (c, t) in &samples {
            assert!((fit.predict(c) - t).abs() / t < 1e-6, "{fit:?}");
        }
        assert!(fit.fixed_s > 4e-6 && fit.per_flop_s < 1e-18, "{fit:?}");
    }

    #[test]
    fn a_fit_never_goes_negative() {
        // Noisy, shrinking times would want a negative slope: the fit keeps every term at zero or above.
        let samples = [(cost(1 << 10, 0), 9e-6), (cost(1 << 20, 0), 8e-6), (cost(1 << 24, 0), 7.5e-6)];
        let fit = CostFit::fit(&samples).unwrap();
        assert!(fit.fixed_s >= 0.0 && fit.per_byte_s >= 0.0 && fit.per_flop_s >= 0.0, "{fit:?}");
    }

    #[test]
    fn a_point_slower_than_a_larger_one_takes_the_larger_ones_time() {
        let at = |bytes: u64| Cost { bytes, flops: 0, elements: 0 };
        let samples = [(at(8192), 7.1e-6), (at(131072), 5.2e-6), (at(2 << 20), 4.2e-6), (at(32 << 20), 9.4e-6)];
        let curve = Curve::through(&samples).unwrap();
        let times: Vec<f64> = curve.points.iter().map(|p| p.2).collect();
        assert_eq!(times, [4.2e-6, 4.2e-6, 4.2e-6, 9.4e-6]);
        assert!(curve.predict(&at(8192)) <= 4.2e-6 * 1.0001, "{}", curve.predict(&at(8192)));
    }

    #[test]
    fn a_curve_passes_through_its_points_and_follows_the_fit_beyond() {
        // A cache step between 1 MiB and 16 MiB that no straight line follows.
        let samples = [(cost(1 << 20, 0), 10e-6), (cost(4 << 20, 0), 20e-6), (cost(16 << 20, 0), 400e-6)];
        let curve = Curve::through(&samples).unwrap();
        for (c, t) in &samples {
            assert!((curve.predict(c) - t).abs() / t < 1e-9, "{c:?}: {}", curve.predict(c));
        }
        let between = curve.predict(&cost(2 << 20, 0));
        assert!(between > 10e-6 && between < 20e-6, "{between}");
        assert!(curve.predict(&cost(64 << 20, 0)) > 400e-6);
    }

    /// A CPU kernel writes with ordinary stores up to its calibrated sizes (12 bytes moved per element for 8 of cost)
    /// and with streaming stores past them (8 for 8): knowing the bytes moved, the prediction past the ladder grows
    /// with them and lands on the time at the same rate; from the cost alone it comes out 1.5x too slow. Streamed
    /// past the cache, the same holds.
    #[test]
    fn past_the_ladder_a_kernel_grows_with_the_bytes_it_moves() {
        let rate = 100e9;
        let (fixed, per_element) = (2e-6, 8u64);
        let samples: Vec<(Cost, u64, f64)> = (18..=22)
            .map(|p| {
                let n = 1u64 << p;
                (Cost { bytes: per_element * n, flops: n, elements: n }, 12 * n, fixed + (12 * n) as f64 / rate)
            })
            .collect();
        let curve = Curve::through_moving(&samples).unwrap();
        assert_eq!(curve.traffic, samples.iter().map(|s| s.1).collect::<Vec<_>>());
        let n = 1u64 << 24;
        let past = Cost { bytes: per_element * n, flops: n, elements: n };
        let truth = fixed + (8 * n) as f64 / rate;
        for stream in [None, Some(StreamBound::EachByteMore(1.0 / rate))] {
            let knowing = curve.predict_kernel(&past, stream.clone(), Some(8 * n));
            assert!((knowing / truth - 1.0).abs() < 0.05, "{stream:?}: {knowing} against {truth}");
            let blind = curve.predict_kernel(&past, stream.clone(), None);
            assert!(blind / truth > 1.4, "{stream:?}: {blind} against {truth}");
        }
        // A curve that never recorded the bytes moved (an older calibration) ignores them.
        let older = Curve { traffic: Vec::new(), ..curve.clone() };
        assert_eq!(older.predict_kernel(&past, None, Some(8 * n)), curve.predict_kernel(&past, None, None));
    }

    /// A CPU kernel calibrated inside the cache at 100 GB/s, whose variant streams from memory at 40 GB/s: with that
    /// rate measured, its prediction past the cache is that rate's time, where the copy's rate for each byte more
    /// (60 GB/s) left it 1.3x fast.
    #[test]
    fn past_the_cache_a_variant_is_predicted_from_its_own_streaming_rate() {
        let samples: Vec<(Cost, f64)> = (18..=22)
            .map(|p| {
                let n = 1u64 << p;
                (Cost { bytes: 8 * n, flops: n, elements: n }, 2e-6 + (8 * n) as f64 / 100e9)
            })
            .collect();
        let curve = Curve::through(&samples).unwrap();
        let n = 1u64 << 26;
        let past = Cost { bytes: 8 * n, flops: n, elements: n };
        let truth = (8 * n) as f64 / 40e9;
        let own = curve.predict_kernel(&past, Some(StreamBound::Measured(vec![(1 << 29, 1.0 / 40e9)])), None);
        assert!((own / truth - 1.0).abs() < 1e-9, "{own} against {truth}");
        let copy = curve.predict_kernel(&past, Some(StreamBound::EachByteMore(1.0 / 60e9)), None);
        assert!(truth / copy > 1.3, "{copy} against {truth}");
        // Faster than the calibrated sizes' rate too: a measurement past the cache is not bounded by them.
        let quick = curve.predict_kernel(&past, Some(StreamBound::Measured(vec![(1 << 29, 1.0 / 400e9)])), None);
        assert!((quick / ((8 * n) as f64 / 400e9) - 1.0).abs() < 1e-9, "{quick}");
        // A kernel bound by its arithmetic is not held to any streaming rate.
        let heavy = Cost { bytes: 8 * n, flops: 1000 * n, elements: n };
        assert_eq!(
            curve.predict_kernel(&heavy, Some(StreamBound::Measured(vec![(1 << 29, 1.0 / 40e9)])), None),
            curve.predict_kernel(&heavy, None, None)
        );
    }

    /// Between the largest calibrated size (in the cache, 100 GB/s at 32 MiB) and the probes (64 GB/s at 192 MiB, 40
    /// GB/s at 768 MiB), the rate moves along the logarithm of the bytes from one to the next: a cache that empties
    /// gradually, not at a step. Past the last probe it is the last probe's.
    #[test]
    fn between_the_ladder_and_the_probes_the_rate_is_interpolated() {
        let samples: Vec<(Cost, f64)> = (20..=22)
            .map(|p| {
                let n = 1u64 << p;
                (Cost { bytes: 8 * n, flops: n, elements: n }, (8 * n) as f64 / 100e9)
            })
            .collect();
        let curve = Curve::through(&samples).unwrap();
        let (mid, far) = (192u64 << 20, 768u64 << 20);
        let probes = StreamBound::Measured(vec![(mid, 1.0 / 64e9), (far, 1.0 / 40e9)]);
        let rate_at = |bytes: u64| {
            let cost = Cost { bytes, flops: bytes / 8, elements: bytes / 8 };
            bytes as f64 / curve.predict_kernel(&cost, Some(probes.clone()), None)
        };
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-6;
        assert!(close(rate_at(mid), 64e9), "{}", rate_at(mid));
        assert!(close(rate_at(far), 40e9) && close(rate_at(4 * far), 40e9));
        // Halfway along the logarithm from 32 MiB to 192 MiB: the geometric mean of the two rates.
        let halfway = ((32.0f64 * 192.0).sqrt() * (1u64 << 20) as f64) as u64;
        assert!((rate_at(halfway) / (100e9f64 * 64e9).sqrt() - 1.0).abs() < 1e-3, "{}", rate_at(halfway));
        let rates: Vec<f64> = [48u64, 96, 192, 384, 768].iter().map(|m| rate_at(m << 20)).collect();
        assert!(rates.windows(2).all(|w| w[1] <= w[0]), "{rates:?}");
        // Past the cache, the probes alone: nearest outside them, interpolated between them.
        let memory = StreamBound::FromMemory(vec![(mid, 1.0 / 64e9), (far, 1.0 / 40e9)]);
        let from_memory = |bytes: u64| {
            let cost = Cost { bytes, flops: bytes / 8, elements: bytes / 8 };
            bytes as f64 / curve.predict_kernel(&cost, Some(memory.clone()), None)
        };
        assert!(close(from_memory(48 << 20), 64e9) && close(from_memory(4 * far), 40e9));
        assert!((from_memory(384 << 20) / (64e9f64 * 40e9).sqrt() - 1.0).abs() < 1e-3);
    }

    /// A CPU kernel on one thread at its smallest size and on sixteen from the next, which pay 40 µs to wake them:
    /// past the ladder the rates are taken above that (the intercept through the two largest sizes), not above the
    /// fit's few microseconds, so that a size twice the largest is not predicted as if it paid the wake-up twice.
    #[test]
    fn rates_past_the_ladder_are_taken_above_the_wake_up_of_the_threads() {
        let wake = 40e-6;
        let rate = 500e9;
        let samples = [
            (Cost { bytes: 32 << 10, flops: 0, elements: 0 }, 3e-6),
            (Cost { bytes: 1 << 20, flops: 0, elements: 0 }, wake + (1u64 << 20) as f64 / rate),
            (Cost { bytes: 12 << 20, flops: 0, elements: 0 }, wake + (12u64 << 20) as f64 / rate),
        ];
        let curve = Curve::through(&samples).unwrap();
        let probe = 96u64 << 20;
        let probe_time = wake + probe as f64 / 200e9;
        let probes = StreamBound::Measured(vec![(probe, probe_time / probe as f64)]);
        // At the probe, the probe's time; at twice the top, the wake-up once and a rate between the two.
        let at = |bytes: u64| curve.predict_kernel(&Cost { bytes, flops: 0, elements: 0 }, Some(probes.clone()), None);
        assert!((at(probe) / probe_time - 1.0).abs() < 1e-6, "{}", at(probe));
        let twice = 24u64 << 20;
        let w = 2f64.ln() / 8f64.ln();
        let between = (rate.ln() * (1.0 - w) + 200e9f64.ln() * w).exp();
        let expected = wake + twice as f64 / between;
        assert!((at(twice) / expected - 1.0).abs() < 1e-6, "{} against {expected}", at(twice));
    }

    /// A GPU kernel that was all launch up to its largest calibrated size (CUDA's `tiled` stencil from 64x64 to
    /// 1024x1024) says nothing of its cache's rate: past the ladder, its rate starts from at most [`CACHE_RATE_MAX`]
    /// times the first probe's and reaches the probe's at the probe.
    #[test]
    fn a_ladder_that_was_all_launch_starts_at_most_a_few_times_the_probes_rate() {
        let launch = 4.5e-6;
        let samples = [
            (Cost { bytes: 32 << 10, flops: 0, elements: 0 }, launch),
            (Cost { bytes: 512 << 10, flops: 0, elements: 0 }, launch + 0.1e-6),
            (Cost { bytes: 8 << 20, flops: 0, elements: 0 }, launch + 0.2e-6),
        ];
        let curve = Curve::through(&samples).unwrap();
        let (probe, memory) = (96u64 << 20, 3e12);
        let probes = StreamBound::Measured(vec![(probe, (launch + probe as f64 / memory) / probe as f64)]);
        let at = |bytes: u64| curve.predict_kernel(&Cost { bytes, flops: 0, elements: 0 }, Some(probes.clone()), None);
        let twice = 16u64 << 20;
        let above_launch = at(twice) - launch;
        let w = 2f64.ln() / 12f64.ln();
        let fastest = twice as f64 / (memory * CACHE_RATE_MAX.powf(1.0 - w));
        assert!(above_launch >= 0.99 * fastest, "{above_launch} s above the launch, at least {fastest}");
        assert!(above_launch < twice as f64 / memory, "slower than memory: {above_launch}");
    }
}
