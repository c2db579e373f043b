//! The measurement harness shared by the benches, the command-line tool and the dispatcher.
//!
//! It measures every phase a user pays for, apart: `compile` (the first use of a variant: kernel compilation and
//! pipeline creation), `first_call` (the first upload, launch and download after that), `upload`, `kernel` (the
//! backend's device timer: CUDA events, timestamp queries, or the host clock on the CPU; on a GPU, after a spin-up,
//! each sample is the mean of a batch of back-to-back launches, so the device stays busy while it is timed),
//! `download`, and
//! `end_to_end` (the wall clock of upload + launch + download, synchronised). The phases after the first call time the
//! kernel that runs from then on: where the first call ran one that compiled sooner, the harness waits for the faster
//! one compiling in the background ([`Implements::settle`]) first. It always warms up, always
//! synchronises before reading a host clock, and reports the median and spread of several repetitions.
//!
//! The number of repetitions adapts to the work: at least [`MeasureOptions::min_repetitions`], and more until
//! [`MeasureOptions::target_time`] has been spent on a phase or [`MeasureOptions::max_repetitions`] is reached, so
//! that a microsecond kernel gets hundreds of samples and a one-second one a handful.
//!
//! This folder is the bottom of the facade: how a run is timed (this module), how people write sizes ([`size`]),
//! and how workloads are named ([`names`]). It imports nothing else of the facade.

pub mod names;
pub mod size;

use self::names::{SizeLabel, VariantName};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use gpuworthy_core::spin_up;
use gpuworthy_core::{
    Cost, Implements, KernelClock, MAX_LAUNCHES_PER_TIMING, Mismatch, Precision, Result, Workload, launches_per,
};

/// How long and how often to measure.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Untimed end-to-end runs before measuring (after the first call, which is timed on its own).
    pub warmup: usize,
    /// On a GPU, how long to keep the device busy with back-to-back launches right before the kernel is timed.
    /// GPUs lower their clocks soon after going idle, and the upload phase before leaves them idle: without this,
    /// an H200 through Vulkan measured a copy at very different rates from run to run, and a shorter spin-up with
    /// gaps between launches was not always enough (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    pub spin_up: Duration,
    /// The fewest timed repetitions per phase.
    pub min_repetitions: usize,
    /// The most timed repetitions per phase.
    pub max_repetitions: usize,
    /// Stop adding repetitions to a phase once this much time has been spent on it.
    pub target_time: Duration,
    /// Check the first call's output against the scalar reference.
    pub validate: bool,
    /// The seed of the generated input.
    pub seed: u64,
    /// Time the end-to-end phase as a program that keeps its result buffer from one call to the next would run it
    /// ([`Implements::run_into`], NumPy's `out=`): every run writes into the previous run's output instead of a
    /// fresh one. The last run's output is checked too when the options validate.
    pub reuse_output: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            warmup: 2,
            spin_up: Duration::from_millis(500),
            min_repetitions: 5,
            max_repetitions: 200,
            target_time: Duration::from_millis(300),
            validate: true,
            seed: 1,
            reuse_output: false,
        }
    }
}

impl MeasureOptions {
    /// Fewer repetitions and less time per phase, for sweeps on slow machines.
    pub fn quick() -> Self {
        MeasureOptions {
            warmup: 1,
            spin_up: Duration::from_millis(300),
            min_repetitions: 3,
            max_repetitions: 50,
            target_time: Duration::from_millis(60),
            ..Self::default()
        }
    }
}

/// The median and spread of repeated timings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The median.
    pub median: Duration,
    /// The fastest repetition.
    pub min: Duration,
    /// The slowest repetition.
    pub max: Duration,
    /// The 25th percentile.
    pub p25: Duration,
    /// The 75th percentile.
    pub p75: Duration,
    /// How many repetitions.
    pub samples: usize,
}

impl Stats {
    /// Summarises samples (at least one).
    pub fn from_samples(mut samples: Vec<Duration>) -> Stats {
        assert!(!samples.is_empty(), "statistics of no samples");
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            min: samples[0],
            max: samples[samples.len() - 1],
            p25: at(0.25),
            p75: at(0.75),
            samples: samples.len(),
        }
    }

    /// The interquartile range relative to the median, a robust measure of spread.
    pub fn relative_spread(&self) -> f64 {
        let median = self.median.as_secs_f64();
        if median == 0.0 { 0.0 } else { (self.p75 - self.p25).as_secs_f64() / median }
    }
}

/// Everything measured for one workload, size, backend and variant.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The workload's name.
    pub workload: &'static str,
    /// The size, as the workload displays it.
    pub size: SizeLabel,
    /// The variant.
    pub variant: VariantName,
    /// Reduced-precision variants are labelled in every report.
    pub precision: Precision,
    /// The clock behind [`Measurement::kernel`].
    pub kernel_clock: KernelClock,
    /// First use of the variant: compiling its kernel, building its pipeline (zero once cached). Where a backend
    /// answers the first calls with a kernel that compiles sooner while a faster one compiles in the background
    /// ([`Implements::settle`]), this is the time until the first could run: what a program's first call waits for.
    pub compile: Duration,
    /// The first upload, launch and download after compiling, synchronised.
    pub first_call: Duration,
    /// Host to device.
    pub upload: Stats,
    /// The kernel alone, on resident data, by the device's timer.
    pub kernel: Stats,
    /// Device to host.
    pub download: Stats,
    /// Upload, launch and download, synchronised.
    pub end_to_end: Stats,
    /// The cost of one run, for throughput.
    pub cost: Cost,
    /// The check of the first call's output, when validation was asked for.
    pub check: Option<CheckResult>,
}

impl Measurement {
    /// Decimal GB/s of the cost's bytes in time `t`; 0 for an empty input (no bytes, no time).
    pub fn gb_per_s(&self, t: Duration) -> f64 {
        per_second(self.cost.bytes, t) / 1e9
    }

    /// Decimal GFLOP/s of the cost's flops in time `t`; 0 for an empty input.
    pub fn gflop_per_s(&self, t: Duration) -> f64 {
        per_second(self.cost.flops, t) / 1e9
    }
}

/// `amount / t`, and 0 where there was nothing to do: an empty input takes no time on a device and moves nothing.
fn per_second(amount: u64, t: Duration) -> f64 {
    if amount == 0 { 0.0 } else { amount as f64 / t.as_secs_f64() }
}

/// Repeats `run` (which returns the time of one repetition) until the options say enough.
fn repeat(options: &MeasureOptions, mut run: impl FnMut() -> Result<Duration>) -> Result<Stats> {
    let mut samples = Vec::new();
    let started = Instant::now();
    while samples.len() < options.min_repetitions
        || (samples.len() < options.max_repetitions && started.elapsed() < options.target_time)
    {
        samples.push(run()?);
    }
    Ok(Stats::from_samples(samples))
}

/// A result's check against the reference: `Ok`, or the mismatch.
pub type CheckResult = std::result::Result<(), Mismatch>;

/// The end-to-end phase alone (upload, launch and download of `variant` through [`Implements::run`], synchronised),
/// with the same warm-up and repetitions as [`measure`], and the first run's output checked against the reference when
/// the options validate: for a second transfer mode of a backend already measured in full (CUDA's pipelined runs).
pub fn measure_end_to_end<W, B>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
) -> Result<(Stats, Option<CheckResult>)>
where
    W: Workload,
    B: Implements<W>,
{
    backend.prepare_for(variant, &W::params(input))?;
    let output = backend.run(variant, input)?;
    backend.settle(variant, &W::params(input))?;
    checked_end_to_end(backend, variant, input, options, output)
}

/// The first call's `output` checked when the options validate, then the end-to-end phase timed
/// ([`warm_end_to_end`]); the check reported is the first call's, or where it passed and the runs wrote into a reused
/// output, that output's after the last of them.
fn checked_end_to_end<W: Workload, B: Implements<W>>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
    output: W::Output,
) -> Result<(Stats, Option<CheckResult>)> {
    let precision = backend.precision(variant);
    let first = check_output::<W>(input, &output, precision, options)?;
    let (stats, reused) = warm_end_to_end(backend, variant, input, options, output)?;
    Ok((stats, check_reused::<W>(input, first, reused.as_ref(), precision, options)?))
}

/// The check to report: `first`, or where it passed and there is a `reused` output, that output's.
fn check_reused<W: Workload>(
    input: &W::Input,
    first: Option<CheckResult>,
    reused: Option<&W::Output>,
    precision: Precision,
    options: &MeasureOptions,
) -> Result<Option<CheckResult>> {
    match (first, reused) {
        (Some(Ok(())), Some(output)) => check_output::<W>(input, output, precision, options),
        (first, _) => Ok(first),
    }
}

/// `output`'s check against the reference when the options validate, else `None`.
fn check_output<W: Workload>(
    input: &W::Input,
    output: &W::Output,
    precision: Precision,
    options: &MeasureOptions,
) -> Result<Option<CheckResult>> {
    if !options.validate {
        return Ok(None);
    }
    let expected = W::reference(input)?;
    Ok(Some(W::check(input, &expected, output, precision)))
}

/// The warm-up runs, then the end-to-end phase repeated: each run synchronised before the clock starts, and ended by
/// the run itself (its download waits for the device). The clock stops when the result is in hand, before it is
/// dropped: freeing the caller's vector is not part of the run (a large fresh result takes a while to free, measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so; the peers' clocks stop before theirs too).
///
/// With [`MeasureOptions::reuse_output`], every run writes into `first` (the first call's output) through
/// [`Implements::run_into`], which is returned for its check; otherwise `first` is dropped and each run makes its
/// own output.
fn warm_end_to_end<W: Workload, B: Implements<W>>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
    first: W::Output,
) -> Result<(Stats, Option<W::Output>)> {
    let mut reused = options.reuse_output.then_some(first);
    let mut once = || -> Result<Duration> {
        backend.synchronize()?;
        let start = Instant::now();
        if let Some(output) = reused.as_mut() {
            backend.run_into(variant, input, output)?;
            return Ok(start.elapsed());
        }
        let output = backend.run(variant, input)?;
        let elapsed = start.elapsed();
        drop(output);
        Ok(elapsed)
    };
    for _ in 0..options.warmup {
        once()?;
    }
    let stats = repeat(options, &mut once)?;
    Ok((stats, reused))
}

/// Measures `variant` of `W` on `backend` for `input`.
///
/// ```
/// use gpuworthy::measure::{MeasureOptions, measure};
/// use gpuworthy::core::{Workload, workloads::{Len, Square}};
/// use gpuworthy::cpu::CpuBackend;
///
/// let input = Square::generate(&Len(1 << 16), 1)?;
/// let m = measure::<Square, _>(&CpuBackend::new()?, "simd", &input, &MeasureOptions::quick())?;
/// assert!(matches!(m.check, Some(Ok(()))));
/// println!("{:.1} GB/s", m.gb_per_s(m.kernel.median));
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
pub fn measure<W, B>(backend: &B, variant: &str, input: &W::Input, options: &MeasureOptions) -> Result<Measurement>
where
    W: Workload,
    B: Implements<W>,
{
    let compile_start = Instant::now();
    backend.prepare_for(variant, &W::params(input))?;
    let compile = compile_start.elapsed();

    let first_start = Instant::now();
    let output = backend.run(variant, input)?;
    let first_call = first_start.elapsed();

    let params = W::params(input);
    // What runs from here on is what the rest times: a faster kernel compiling in the background is waited for.
    backend.settle(variant, &params)?;
    let precision = backend.precision(variant);
    let cost = W::cost_of_run(&params, &output);
    let (end_to_end, check) = checked_end_to_end(backend, variant, input, options, output)?;

    // Upload alone: each repetition makes a fresh resident copy; it is dropped outside the timed region.
    let upload = repeat(options, || {
        backend.synchronize()?;
        let start = Instant::now();
        let resident = backend.upload(input)?;
        backend.synchronize()?;
        let elapsed = start.elapsed();
        drop(resident);
        Ok(elapsed)
    })?;

    let mut resident = backend.upload(input)?;
    backend.launch(variant, &mut resident)?;
    backend.synchronize()?;
    let per_sample = launches_per_sample(backend, variant, &mut resident, options)?;
    let kernel = time_kernel_batches(backend, variant, &mut resident, per_sample, options)?;
    let download = repeat(options, || {
        backend.synchronize()?;
        let start = Instant::now();
        let output = backend.download(&mut resident)?;
        let elapsed = start.elapsed();
        drop(output);
        Ok(elapsed)
    })?;

    Ok(Measurement {
        workload: W::NAME,
        size: params.to_string().into(),
        variant: variant.into(),
        precision,
        kernel_clock: backend.kernel_clock(),
        compile,
        first_call,
        upload,
        kernel,
        download,
        end_to_end,
        cost,
        check,
    })
}

/// Three clocks around the same kernel, for the lesson that CUDA (and wgpu) launches are asynchronous.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockComparison {
    /// Wrong on purpose: the host clock around the launch call alone, without synchronising. On a GPU this is the
    /// time to enqueue the kernel, not to run it.
    pub launch_unsynchronised: Stats,
    /// The host clock around the launch and a synchronisation: the kernel, plus the launch and wake-up latency.
    pub launch_synchronised: Stats,
    /// The backend's device timer (CUDA events, timestamp queries; the host clock on the CPU).
    pub device_timer: Stats,
}

/// Times one launch of `variant` on resident data three ways ([`ClockComparison`]), one launch per sample, after the
/// same warm-up and spin-up as [`measure`]. The device is synchronised before each sample, so no unsynchronised
/// sample finds the queue full.
pub fn compare_clocks<W, B>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
) -> Result<ClockComparison>
where
    W: Workload,
    B: Implements<W>,
{
    let mut resident = resident_and_warm::<W, B>(backend, variant, input, options)?;
    if backend.kind().is_gpu() {
        spin_up(backend, options.spin_up, &mut || backend.launch(variant, &mut resident))?;
    }
    let launch_unsynchronised = repeat(options, || {
        backend.synchronize()?;
        let start = Instant::now();
        backend.launch(variant, &mut resident)?;
        Ok(start.elapsed())
    })?;
    let launch_synchronised = repeat(options, || {
        backend.synchronize()?;
        let start = Instant::now();
        backend.launch(variant, &mut resident)?;
        backend.synchronize()?;
        Ok(start.elapsed())
    })?;
    let device_timer = repeat(options, || backend.time_on_device(&mut || backend.launch(variant, &mut resident)))?;
    backend.synchronize()?;
    Ok(ClockComparison { launch_unsynchronised, launch_synchronised, device_timer })
}

/// One launch of `variant` on data uploaded once, timed by the device's own timer only (the third clock of
/// [`compare_clocks`], after the same warm-up and spin-up): a kernel's time where its other phases would cost more than
/// it (calibration's streaming probes, whose uploads and downloads of hundreds of MiB would take longer than their
/// kernels).
pub fn time_resident_kernel<W, B>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
) -> Result<Stats>
where
    W: Workload,
    B: Implements<W>,
{
    let mut resident = resident_and_warm::<W, B>(backend, variant, input, options)?;
    let per_sample = launches_per_sample(backend, variant, &mut resident, options)?;
    let device_timer = time_kernel_batches(backend, variant, &mut resident, per_sample, options)?;
    backend.synchronize()?;
    Ok(device_timer)
}

/// How many launches each kernel sample times: on a GPU, after a spin-up of `options.spin_up`, a batch of back-to-back
/// launches of about 2 ms of device time (at most [`MAX_LAUNCHES_PER_TIMING`]); one on a CPU. Timing one launch at a
/// time leaves the GPU idle between launches while the host reads the clock, and its clock governor then lowers the
/// clocks during the measurement: on an H200 through Vulkan, softmax's kernels measured far over their time in
/// some runs. It also puts the timer's own cost into every sample, which differs between backends: one launch at a
/// time, a microsecond kernel measured over its batched time through Vulkan against CUDA's events (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
fn launches_per_sample<W: Workload, B: Implements<W>>(
    backend: &B,
    variant: &str,
    resident: &mut B::Resident,
    options: &MeasureOptions,
) -> Result<usize> {
    if !backend.kind().is_gpu() {
        return Ok(1);
    }
    let one = spin_up(backend, options.spin_up, &mut || backend.launch(variant, resident))?;
    Ok(launches_per(Duration::from_millis(2), one, MAX_LAUNCHES_PER_TIMING))
}

/// The kernel's samples ([`repeat`]), each the device-timed mean of `per_sample` back-to-back launches.
fn time_kernel_batches<W: Workload, B: Implements<W>>(
    backend: &B,
    variant: &str,
    resident: &mut B::Resident,
    per_sample: usize,
    options: &MeasureOptions,
) -> Result<Stats> {
    repeat(options, || {
        let batch =
            backend.time_on_device(&mut || (0..per_sample).try_for_each(|_| backend.launch(variant, resident)))?;
        Ok(batch / per_sample as u32)
    })
}

/// `input` uploaded, `variant` launched `options.warmup + 1` times and the device synchronised.
fn resident_and_warm<W, B>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    options: &MeasureOptions,
) -> Result<B::Resident>
where
    W: Workload,
    B: Implements<W>,
{
    backend.settle(variant, &W::params(input))?;
    let mut resident = backend.upload(input)?;
    for _ in 0..=options.warmup {
        backend.launch(variant, &mut resident)?;
    }
    backend.synchronize()?;
    Ok(resident)
}

/// The largest number of launches per transfer [`launches_per_transfer`] accepts.
pub const MAX_LAUNCHES_PER_TRANSFER: usize = 1 << 16;

/// Host time of one upload, `launches` kernels and one download, synchronised, divided by `launches`: the cost per
/// kernel when data stays on the device for several kernels between transfers (the transfers amortised).
pub fn launches_per_transfer<W, B>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    launches: usize,
    options: &MeasureOptions,
) -> Result<Stats>
where
    W: Workload,
    B: Implements<W>,
{
    if launches == 0 || launches > MAX_LAUNCHES_PER_TRANSFER {
        return Err(gpuworthy_core::Error::invalid(format!(
            "launches per transfer must be 1 to {MAX_LAUNCHES_PER_TRANSFER}, got {launches}"
        )));
    }
    backend.settle(variant, &W::params(input))?;
    for _ in 0..options.warmup.max(1) {
        backend.run(variant, input)?;
    }
    let per_launch = repeat(options, || {
        backend.synchronize()?;
        let start = Instant::now();
        let mut resident = backend.upload(input)?;
        for _ in 0..launches {
            backend.launch(variant, &mut resident)?;
        }
        backend.download(&mut resident)?;
        Ok(start.elapsed() / launches as u32)
    })?;
    Ok(per_launch)
}

/// A duration with a unit that keeps three significant digits: `812 ns`, `4.21 µs`, `13.5 ms`, `2.04 s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    let (value, unit) = match s {
        s if s < 1e-6 => (s * 1e9, "ns"),
        s if s < 1e-3 => (s * 1e6, "µs"),
        s if s < 1.0 => (s * 1e3, "ms"),
        s => (s, "s"),
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS`.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_three_digits() {
        assert_eq!(duration(Duration::from_nanos(812)), "812 ns");
        assert_eq!(duration(Duration::from_nanos(4_213)), "4.21 µs");
        assert_eq!(duration(Duration::from_micros(13_540)), "13.5 ms");
        assert_eq!(duration(Duration::from_millis(2_040)), "2.04 s");
    }

    #[test]
    fn stats_take_median_and_quartiles() {
        let ms = |v: u64| Duration::from_millis(v);
        let s = Stats::from_samples(vec![ms(5), ms(1), ms(3), ms(2), ms(4)]);
        assert_eq!((s.median, s.min, s.max, s.p25, s.p75, s.samples), (ms(3), ms(1), ms(5), ms(2), ms(4), 5));
        assert!((s.relative_spread() - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn spin_up_keeps_launching_for_its_duration_and_stops_soon_after() {
        let backend = gpuworthy_cpu::CpuBackend::new().unwrap();
        let mut calls = 0;
        let started = Instant::now();
        spin_up(&backend, Duration::from_millis(30), &mut || {
            calls += 1;
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(30), "stopped early: {took:?}");
        // One batch of about 5 ms may follow the deadline; the rest is slack for a loaded machine.
        assert!(took < Duration::from_millis(300), "ran on for {took:?}");
        assert!(calls >= 10, "{calls} calls in {took:?}");
    }

    /// What one call takes, as the spin-up reports it to size the batches timed after it: not the first call's time
    /// where that call was slowed and the ones after it were not.
    #[test]
    fn a_slow_first_call_does_not_size_the_batches() {
        let backend = gpuworthy_cpu::CpuBackend::new().unwrap();
        let mut calls = 0;
        let one = spin_up(&backend, Duration::from_millis(40), &mut || {
            calls += 1;
            std::thread::sleep(if calls == 1 { Duration::from_millis(20) } else { Duration::from_micros(200) });
            Ok(())
        })
        .unwrap();
        assert!(one < Duration::from_millis(10), "one call said to take {one:?} after {calls} calls");
        assert!(one >= Duration::from_micros(200), "{one:?}");
        // With no time for batches, the first call is all there is.
        let only = spin_up(&backend, Duration::ZERO, &mut || {
            std::thread::sleep(Duration::from_millis(2));
            Ok(())
        })
        .unwrap();
        assert!(only >= Duration::from_millis(2), "{only:?}");
    }

    #[test]
    fn clocks_and_launches_per_transfer_measure_the_cpu() {
        use gpuworthy_core::workloads::{Len, Square};
        let backend = gpuworthy_cpu::CpuBackend::new().unwrap();
        let input = <Square as Workload>::generate(&Len(1 << 16), 1).unwrap();
        let options = MeasureOptions::quick();
        let clocks = compare_clocks::<Square, _>(&backend, "simd", &input, &options).unwrap();
        // The CPU's launch is synchronous: all three clocks see the kernel.
        assert!(clocks.launch_unsynchronised.median > Duration::ZERO && clocks.device_timer.median > Duration::ZERO);
        let one = launches_per_transfer::<Square, _>(&backend, "simd", &input, 1, &options).unwrap();
        assert!(one.median > Duration::ZERO);
        for bad in [0, MAX_LAUNCHES_PER_TRANSFER + 1] {
            assert!(launches_per_transfer::<Square, _>(&backend, "simd", &input, bad, &options).is_err());
        }
    }

    /// The end-to-end phase alone checks the first run's output when asked to, and repeats as `measure` does.
    #[test]
    fn end_to_end_alone_checks_and_repeats() {
        use gpuworthy_core::workloads::{Len, Square};
        let cpu = gpuworthy_cpu::CpuBackend::new().unwrap();
        let input = Square::generate(&Len(1000), 2).unwrap();
        let options = MeasureOptions { min_repetitions: 3, max_repetitions: 3, ..MeasureOptions::quick() };
        let (stats, check) = measure_end_to_end::<Square, _>(&cpu, "simd", &input, &options).unwrap();
        assert!(matches!(check, Some(Ok(()))), "{check:?}");
        assert_eq!(stats.samples, 3);
        let unchecked = MeasureOptions { validate: false, ..options };
        assert!(measure_end_to_end::<Square, _>(&cpu, "simd", &input, &unchecked).unwrap().1.is_none());
        assert!(measure_end_to_end::<Square, _>(&cpu, "no such variant", &input, &options).is_err());
    }

    #[test]
    fn runs_into_a_reused_output_are_timed_and_their_last_output_is_the_one_checked() {
        use gpuworthy_core::workloads::{Len, Square};
        let cpu = gpuworthy_cpu::CpuBackend::new().unwrap();
        let input = Square::generate(&Len(1000), 2).unwrap();
        let options =
            MeasureOptions { min_repetitions: 3, max_repetitions: 3, reuse_output: true, ..MeasureOptions::quick() };
        let (stats, check) = measure_end_to_end::<Square, _>(&cpu, "simd", &input, &options).unwrap();
        assert!(matches!(check, Some(Ok(()))), "{check:?}");
        assert_eq!(stats.samples, 3);
        let m = measure::<Square, _>(&cpu, "simd", &input, &options).unwrap();
        assert!(matches!(m.check, Some(Ok(()))), "{:?}", m.check);

        // A reused output that ends up wrong fails the check even though the first call's output passed.
        let right = Square::reference(&input).unwrap();
        let mut wrong = right.clone();
        wrong[999] += 1.0;
        let precision = Precision::Fp32;
        let first = check_output::<Square>(&input, &right, precision, &options).unwrap();
        assert!(matches!(first, Some(Ok(()))));
        let reported = check_reused::<Square>(&input, first, Some(&wrong), precision, &options).unwrap();
        assert!(matches!(reported, Some(Err(_))), "{reported:?}");
        // Without a reused output, or with a first check that already failed, the first check stands.
        let failed = check_output::<Square>(&input, &wrong, precision, &options).unwrap();
        let reported = check_reused::<Square>(&input, failed.clone(), Some(&right), precision, &options).unwrap();
        assert_eq!(reported, failed);
        assert_eq!(check_reused::<Square>(&input, None, Some(&wrong), precision, &options).unwrap(), None);
    }

    #[test]
    fn repeat_respects_the_minimum_and_maximum() {
        let options = MeasureOptions {
            min_repetitions: 3,
            max_repetitions: 7,
            target_time: Duration::from_secs(3600),
            ..MeasureOptions::default()
        };
        let s = repeat(&options, || Ok(Duration::from_nanos(1))).unwrap();
        assert_eq!(s.samples, 7);
        let options = MeasureOptions { target_time: Duration::ZERO, ..options };
        assert_eq!(repeat(&options, || Ok(Duration::from_nanos(1))).unwrap().samples, 3);
    }
}
