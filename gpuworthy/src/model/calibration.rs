//! Calibration: measuring on this machine what the cost model needs, and keeping it between runs.
//!
//! `gpuworthy calibrate` (or [`crate::choose::catalog::calibrate`], over any list of workloads) runs each workload's short
//! ladder (and its smallest size) on every device and variant with short measurements ([`calibrate_workload`]), fits
//! the [`Model`] to the rows ([`Calibration::from_parts`]), and stores it as JSON with the
//! machine's fingerprint (CPU model and threads, each GPU's name and driver, gpuworthy's version). Programs load it at start
//! ([`Calibration::load`]); a file that is missing, unreadable, corrupt, from another machine or from another version
//! of gpuworthy is not trusted: the loader says why (a warning for the caller to show) and `auto` falls back to its
//! conservative default.
//!
//! The file lives at `GPUWORTHY_CALIBRATION` when that is set, else in the user's cache directory
//! (`$XDG_CACHE_HOME/gpuworthy/calibration.json`, `~/.cache/…` on Linux, `~/Library/Caches/…` on macOS,
//! `%LOCALAPPDATA%\gpuworthy\…` on Windows).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpuworthy_core::{Backend, BackendKind, Cost, Error, Precision, Result, Workload, env};
use serde::{Deserialize, Serialize};

use crate::Device;
use crate::device::{DeviceLabel, DeviceWorkload};
use crate::measure::names::{SizeLabel, WorkloadName};
use crate::measure::{MeasureOptions, utc_now};
use crate::model::rows::Row;
use crate::model::sweep::{Progress, SweepOptions, sweep_workload};
use crate::model::{ComputeProbe, Model, OwnStreaming};

/// What the calibration of a machine depends on: when any of it changes, the calibration is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineFingerprint {
    /// The CPU's model name.
    pub cpu: String,
    /// The CPU backend's instruction set and threads.
    pub cpu_backend: String,
    /// Each other device: label, name and driver.
    pub devices: Vec<String>,
    /// gpuworthy's version.
    pub gpuworthy_version: String,
}

impl MachineFingerprint {
    /// The fingerprint of this machine with these devices.
    pub fn of(devices: &[Device]) -> MachineFingerprint {
        let cpu = devices.iter().find(|d| d.kind() == BackendKind::Cpu);
        MachineFingerprint {
            cpu: cpu.map_or_else(String::new, |d| d.device().name.clone()),
            cpu_backend: cpu.map_or_else(String::new, |d| d.device().driver.clone()),
            devices: devices.iter().filter(|d| d.kind() != BackendKind::Cpu).map(ToString::to_string).collect(),
            gpuworthy_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// A machine's calibration: its fingerprint, when it was measured, the rows measured, and the model fitted to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The machine it describes.
    pub fingerprint: MachineFingerprint,
    /// When it was measured (UTC).
    pub measured_utc: String,
    /// How long the measurement took, in seconds.
    pub took_s: f64,
    /// The sizes measured, per workload ([`calibration_ladder`]): `calibrate --evaluate` measures the others.
    pub sizes: Vec<(WorkloadName, Vec<SizeLabel>)>,
    /// The fitted model.
    pub model: Model,
}

/// What loading a calibration found.
#[derive(Debug)]
pub enum Loaded {
    /// A calibration of this machine.
    Calibrated(Box<Calibration>),
    /// No file: the machine was never calibrated.
    Missing(PathBuf),
    /// A file that is not trusted, and why (to be shown as a warning).
    Ignored(String),
}

/// The sizes calibration measures: the short ladder, and the smallest size of the full ladder, so that the model
/// interpolates down to the launch-bound sizes instead of extrapolating to them.
pub fn calibration_ladder<W: Workload>() -> Vec<W::Params> {
    calibration_sizes::<W>(&W::ladder(), W::quick_ladder())
}

/// [`calibration_ladder`] of a workload measured at ladders of its own making (an expression's lengths): `quick`,
/// with the smallest size of `full` first and the workload's [`Workload::calibration_extra`] sizes of `full` in
/// their places.
pub fn calibration_sizes<W: Workload>(full: &[W::Params], quick: Vec<W::Params>) -> Vec<W::Params> {
    let mut ladder = quick;
    if let Some(smallest) = full.first()
        && !ladder.contains(smallest)
    {
        ladder.insert(0, smallest.clone());
    }
    for extra in W::calibration_extra() {
        if full.contains(&extra) && !ladder.contains(&extra) {
            let bytes = W::cost(&extra).bytes;
            let at = ladder.iter().position(|p| W::cost(p).bytes > bytes).unwrap_or(ladder.len());
            ladder.insert(at, extra);
        }
    }
    ladder
}

/// The length of the streaming probe ([`measure_streaming`]): square at 2^26 elements moves 512 MiB, past every
/// cache in view (an H100's L2 is 50 MiB, an H200's 60 MiB, and the last-level cache of the 16-core host they
/// share a machine with held square at 2^24, 128 MiB, at twice the bandwidth it had at 2^26).
pub const STREAM_PROBE_LEN: usize = 1 << 26;

/// Each device's seconds per byte streamed past its caches: square at [`STREAM_PROBE_LEN`] elements with its
/// documented best variant, the data resident, the median of single launches timed by the device's own clock
/// ([`Device::time_resident_kernel`]) after the spin-up of calibration's short measurement. The
/// model bounds a memory-bound workload's kernel past its calibrated sizes by it: quick ladders stop within the
/// caches (square at 2^22 moves 32 MiB), where a kernel is faster per byte than from memory, and an H200
/// calibrated up to 2^22 predicted square 2^26 far too fast (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). A device that cannot
/// hold the probe (or this machine's memory) is left out.
pub fn measure_streaming(devices: &[Device], progress: &dyn Progress) -> Vec<(DeviceLabel, f64)> {
    use gpuworthy_core::workloads::{Len, Square};
    let params = Len(STREAM_PROBE_LEN);
    progress.plan(devices.len() as u64);
    let Ok(input) = Square::generate(&params, 1) else { return Vec::new() };
    let bytes = Square::cost(&params).bytes as f64;
    let options = MeasureOptions { validate: false, ..calibration_options().measure };
    let mut rates = Vec::new();
    for device in devices.iter().filter(|d| d.supports::<Square>()) {
        progress.now_measuring(format!("{}: streaming {} MiB", device.label(), (bytes as u64) >> 20));
        let variant = device.best_variant::<Square>(&params);
        // The kernel alone, on data uploaded once: the other phases of a whole measurement (fresh host copies of 512
        // MiB for every upload, download and end-to-end run) added seconds to every calibration (measured:
        // docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
        if device.check_size::<Square>(&params).is_ok()
            && let Ok(stats) = device.time_resident_kernel::<Square>(variant, &input, &options)
        {
            rates.push((device.label(), stats.median.as_secs_f64() / bytes));
        }
        progress.advance(1);
    }
    rates
}

/// The bytes a run moves from which CUDA's pipelined path has chunks enough to overlap (four chunks each way, of 4
/// MiB or more). Calibration's ladder stops below it for most workloads (square at 2^22 elements moves 32 MiB: four
/// chunks of 4 MiB up and four down, each lane used about once), where a pipelined run is mostly filling and
/// draining, and a curve through such sizes alone extrapolates as if it never overlapped: mandelbrot 4096x4096,
/// predicted from 1024x1024, ran pipelined far faster (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const PIPELINED_FULL_BYTES: u64 = 64 << 20;

/// The sizes calibration times a pipelined path at: `ladder`, and where its largest moves fewer than
/// [`PIPELINED_FULL_BYTES`], the first size of the workload's full ladder that moves that many.
pub fn pipelined_ladder<W: Workload>(ladder: &[W::Params]) -> Vec<W::Params> {
    pipelined_sizes::<W>(ladder, &W::ladder())
}

/// [`pipelined_ladder`] with the full ladder given.
pub fn pipelined_sizes<W: Workload>(ladder: &[W::Params], full: &[W::Params]) -> Vec<W::Params> {
    let mut sizes = ladder.to_vec();
    if ladder.last().is_none_or(|p| W::cost(p).bytes < PIPELINED_FULL_BYTES)
        && let Some(full) = full.iter().find(|p| W::cost(p).bytes >= PIPELINED_FULL_BYTES)
    {
        sizes.push(full.clone());
    }
    sizes
}

/// The spin-up of each of calibration's measurements, short: at twice this, spin-ups took about half of a
/// calibration of a GPU machine (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const CALIBRATION_SPIN_UP: Duration = Duration::from_millis(50);

/// How many times its device's fastest kernel a variant may take at two sizes in a row, not catching up, before
/// calibration leaves it out of the larger sizes ([`crate::model::sweep::falls_behind`]): the model never chooses it there,
/// and a slow variant's measurements are among the longest of a calibration (an expression's `scalar` interpreter
/// on a 16-core host; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const DROP_SLOWER_THAN: f64 = 8.0;

/// How calibration measures: short measurements, and a time budget per measurement.
///
/// Each measurement's spin-up is [`CALIBRATION_SPIN_UP`]: calibration measures about 300 (device, variant, size)
/// points one after another, so a device is already busy when each starts, and the spin-up only has to fill its queue.
pub fn calibration_options() -> SweepOptions {
    SweepOptions {
        measure: MeasureOptions {
            warmup: 1,
            spin_up: CALIBRATION_SPIN_UP,
            min_repetitions: 3,
            max_repetitions: 20,
            target_time: Duration::from_millis(25),
            validate: true,
            seed: 1,
            reuse_output: false,
        },
        budget: Duration::from_millis(1500),
        pipelined: false,
        validate_up_to_flops: 100_000_000,
        drop_slower_than: Some(DROP_SLOWER_THAN),
        precisions: Vec::new(),
    }
}

/// `W`'s upload and download over `ladder` on `device` (its documented best variant at each size), as rows labelled
/// `label`; sizes the device refuses or that fail are left out.
fn transfer_rows<W: DeviceWorkload>(
    label: &DeviceLabel,
    device: &Device,
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &dyn Progress,
) -> Vec<Row> {
    let mut rows = Vec::new();
    with_each_input::<W>(device, ladder, options, progress, "pinned transfers", |params, variant, input, measure| {
        if let Ok(m) = device.measure::<W>(variant, input, measure) {
            let mut row = Row::new::<W>(device, params, &m);
            row.label = label.clone();
            rows.push(row);
        }
    });
    rows
}

/// Calls `visit(params, variant, input, options)` for each size of `ladder` that `device` accepts and that generates,
/// with the device's documented best variant there and unvalidated measure options, after telling `progress` (the
/// size and `what`).
fn with_each_input<W: DeviceWorkload>(
    device: &Device,
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &dyn Progress,
    what: &str,
    mut visit: impl FnMut(&W::Params, &'static str, &W::Input, &MeasureOptions),
) {
    let measure = MeasureOptions { validate: false, ..options.measure.clone() };
    for params in ladder {
        progress.advance(1);
        progress.now_measuring(format!("{} {params} {what}", W::NAME));
        if device.check_size::<W>(params).is_err() {
            continue;
        }
        let Ok(input) = W::generate(params, options.measure.seed) else { continue };
        visit(params, device.best_variant::<W>(params), &input, &measure);
    }
}

/// Whole runs of `W` over `ladder` through `device`'s pipelined path (its documented best variant at each size), as
/// `(cost, seconds)` samples; sizes the device refuses or that fail are left out.
fn pipelined_samples<W: DeviceWorkload>(
    device: &Device,
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &dyn Progress,
) -> Vec<(Cost, f64)> {
    let mut samples = Vec::new();
    with_each_input::<W>(device, ladder, options, progress, "pipelined", |params, variant, input, measure| {
        if let Ok((stats, _)) = device.measure_end_to_end::<W>(variant, input, measure) {
            samples.push((W::cost(params), stats.median.as_secs_f64()));
        }
    });
    samples
}

/// The default place of the calibration file: `GPUWORTHY_CALIBRATION`, else the user's cache directory; `None` when
/// neither is known.
pub fn default_path() -> Result<Option<PathBuf>> {
    if let Some(path) = env::read("GPUWORTHY_CALIBRATION")? {
        return Ok(Some(PathBuf::from(path)));
    }
    let cache = dirs::cache_dir();
    Ok(cache.map(|dir| dir.join("gpuworthy").join("calibration.json")))
}

/// The devices calibration measures on: each opened device, and the twins that move data through pinned memory
/// and through the pipelined path, where a device has them.
#[derive(Debug)]
pub struct CalibrationDevices {
    /// Every opened device.
    pub devices: Vec<Device>,
    /// Each device's pinned twin ([`Device::with_pinned_host_memory`]), under its device's label.
    pub pinned: Vec<(DeviceLabel, Device)>,
    /// Each device's pipelined twin ([`Device::pipelined`]), under its device's label.
    pub pipelined: Vec<(DeviceLabel, Device)>,
}

impl CalibrationDevices {
    /// `devices` and their twins, opened now.
    pub fn of(devices: &[Device]) -> CalibrationDevices {
        CalibrationDevices {
            devices: devices.to_vec(),
            pinned: devices.iter().filter_map(|d| Some((d.label(), d.with_pinned_host_memory()?))).collect(),
            pipelined: devices.iter().filter_map(|d| Some((d.label(), d.pipelined()?))).collect(),
        }
    }
}

/// What calibration measured of one workload.
#[derive(Debug, Clone, Default)]
pub struct WorkloadCalibration {
    /// The workload.
    pub workload: WorkloadName,
    /// The sizes measured, as the workload displays them.
    pub sizes: Vec<SizeLabel>,
    /// Every (size, device, variant) measured.
    pub rows: Vec<Row>,
    /// Transfers through pinned staging memory, one variant per size, labelled with their device.
    pub pinned_rows: Vec<Row>,
    /// Whole runs through each pipelined path: the device's label and `(cost, seconds)` samples.
    pub pipelined_runs: Vec<(DeviceLabel, Vec<(Cost, f64)>)>,
    /// The workload's own rates from memory on each device ([`measure_workload_streaming`]).
    pub streaming: Vec<(DeviceLabel, OwnStreaming)>,
    /// The kernel of a workload bound by its arithmetic, timed past the ladder on each GPU ([`measure_compute_probe`]).
    pub compute_probes: Vec<(DeviceLabel, ComputeProbe)>,
    /// Each device's answer to [`Device::reads_parts_in_place`] at the largest size, for its best variant there:
    /// `(label, through its own path, through its pipelined twin)`.
    pub parts_in_place: Vec<(DeviceLabel, bool, bool)>,
}

/// Measures `W`'s calibration ladder on every device and variant, and its transfers through each pinned and
/// pipelined twin. A device that does not implement `W` is left out (the sweep notes it).
pub fn calibrate_workload<W: DeviceWorkload>(
    devices: &CalibrationDevices,
    progress: &dyn Progress,
) -> WorkloadCalibration {
    calibrate_workload_over::<W>(devices, &W::ladder(), W::quick_ladder(), progress)
}

/// `W` calibrated on the CPU alone, with the CPU's streaming probe (so that sizes past the ladder are bounded as a
/// whole calibration bounds them): seconds of measuring, for a prediction that puts this machine's CPU beside a
/// reference machine's GPUs when this machine's calibration has no CPU curve for `W`.
pub fn calibrate_cpu_for<W: DeviceWorkload>(cpu: &Device, progress: &dyn Progress) -> Calibration {
    let cpu = std::slice::from_ref(cpu);
    let part = calibrate_workload::<W>(&CalibrationDevices::of(cpu), progress);
    let mut calibration = Calibration::from_parts(cpu, vec![part], Instant::now());
    let streaming = measure_streaming(cpu, progress);
    for device in &mut calibration.model.devices {
        device.stream_s_per_byte = streaming.iter().find(|(label, _)| *label == device.label).map(|(_, s)| *s);
    }
    calibration
}

/// [`calibrate_workload`] over ladders given (`full` and `quick`) instead of the workload's own: for a workload whose
/// sizes depend on more than its type (an expression's program).
pub fn calibrate_workload_over<W: DeviceWorkload>(
    devices: &CalibrationDevices,
    full: &[W::Params],
    quick: Vec<W::Params>,
    progress: &dyn Progress,
) -> WorkloadCalibration {
    calibrate_workload_with::<W>(devices, full, quick, &calibration_options(), progress)
}

/// [`calibrate_workload_over`] with measurement options of the caller's (an expression's check, which recomputes a
/// bounded `f64` reference, is validated at fewer sizes than its flops would allow).
pub fn calibrate_workload_with<W: DeviceWorkload>(
    devices: &CalibrationDevices,
    full: &[W::Params],
    quick: Vec<W::Params>,
    options: &SweepOptions,
    progress: &dyn Progress,
) -> WorkloadCalibration {
    let options = options.clone();
    let ladder = calibration_sizes::<W>(full, quick);
    let planned: usize = devices.devices.iter().map(|d| d.variants::<W>().len()).sum();
    progress.plan((ladder.len() * planned) as u64);
    let sweep = sweep_workload::<W>(&devices.devices, &ladder, &options, progress);
    let mut part = WorkloadCalibration {
        workload: W::NAME.into(),
        sizes: ladder.iter().map(|p| SizeLabel::from(p.to_string())).collect(),
        rows: sweep.rows,
        ..WorkloadCalibration::default()
    };
    for (label, device) in devices.pinned.iter().filter(|(_, d)| d.supports::<W>()) {
        progress.plan(ladder.len() as u64);
        part.pinned_rows.extend(transfer_rows::<W>(label, device, &ladder, &options, progress));
    }
    for (label, device) in devices.pipelined.iter().filter(|(_, d)| d.supports::<W>()) {
        let sizes = pipelined_sizes::<W>(&ladder, full);
        progress.plan(sizes.len() as u64);
        part.pipelined_runs.push((label.clone(), pipelined_samples::<W>(device, &sizes, &options, progress)));
    }
    let top = ladder.iter().map(|p| W::cost(p).bytes).max().unwrap_or(0);
    part.streaming = measure_workload_streaming::<W>(&devices.devices, top, progress);
    part.compute_probes = measure_compute_probe::<W>(&devices.devices, &part.rows, progress);
    remeasure_slower_than_larger::<W>(&devices.devices, &ladder, &mut part, &options, progress);
    if let Some(largest) = ladder.last() {
        let in_place =
            |d: &Device| d.supports::<W>() && d.reads_parts_in_place::<W>(d.best_variant::<W>(largest), largest);
        for device in &devices.devices {
            let twin = devices.pipelined.iter().find(|(label, _)| *label == device.label()).map(|(_, d)| d);
            part.parts_in_place.push((device.label(), in_place(device), twin.is_some_and(in_place)));
        }
    }
    part
}

/// How many times another variant's kernel at the same size the device's fastest kernel at the size before may take
/// before it is measured again ([`remeasure_slower_than_larger`]): variants close to each other trade places with the
/// noise of a measurement.
pub const LOST_THE_LEAD: f64 = 1.1;

/// How many times longer than a larger size of the same variant a calibrated kernel may take before it is measured
/// again ([`remeasure_slower_than_larger`]).
pub const SLOWER_THAN_LARGER: f64 = 1.5;

/// Measures again, once, each calibrated kernel that took more than [`SLOWER_THAN_LARGER`] times a larger size of
/// the same variant on the same device (a later size of the ladder, or a streaming probe of that variant, by the
/// bytes it moved), and keeps the faster of the two measurements. A kernel's time does not fall as its input grows;
/// one that did was slowed by something else on the machine, and one such size bends every prediction past it: on
/// an H100, one slowed size of CUDA's `tiled` stencil made its unprobed `naive` variant look many times faster than
/// it ran past the ladder (measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so). A kernel that was
/// its device's fastest at the size before
/// and takes more than [`LOST_THE_LEAD`] times another variant's here is measured again too: the variant leading a
/// device is the one auto runs, and a slowed measurement of it moves the choice. One H100 calibration timed CUDA's
/// fused softmax at 256x16384 slowed, behind its `split` variant after leading it at 1024x1024; auto then chose
/// WGSL for softmax at 2048x2048, slower than CUDA there (measured:
/// docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so). Such a kernel that really fell behind (a tiled matmul
/// overtaken by cuBLAS) only costs one
/// measurement more.
pub fn remeasure_slower_than_larger<W: DeviceWorkload>(
    devices: &[Device],
    ladder: &[W::Params],
    part: &mut WorkloadCalibration,
    options: &SweepOptions,
    progress: &dyn Progress,
) {
    let position = |size: &str| ladder.iter().position(|p| p.to_string() == size);
    let suspects: Vec<usize> = (0..part.rows.len())
        .filter(|&i| {
            let row = &part.rows[i];
            let Some(at) = position(&row.size) else { return false };
            let larger_ran_faster = part.rows.iter().any(|other| {
                other.label == row.label
                    && other.variant == row.variant
                    && position(&other.size).is_some_and(|j| j > at)
                    && other.kernel_s * SLOWER_THAN_LARGER < row.kernel_s
            });
            let probed_faster = part.streaming.iter().any(|(label, own)| {
                *label == row.label
                    && own.variant == row.variant
                    && own.probes.iter().any(|&(bytes, per_byte)| {
                        bytes > row.traffic_bytes && bytes as f64 * per_byte * SLOWER_THAN_LARGER < row.kernel_s
                    })
            });
            // The device's fastest full-precision kernel at the size before, now behind another variant's here.
            let lost_the_lead = at > 0 && row.precision == Precision::Fp32 && {
                let on_device = |size: usize| {
                    part.rows.iter().filter(move |r| {
                        r.label == row.label && r.precision == Precision::Fp32 && position(&r.size) == Some(size)
                    })
                };
                let leader = on_device(at - 1).min_by(|a, b| a.kernel_s.total_cmp(&b.kernel_s));
                let best_here = on_device(at).map(|r| r.kernel_s).reduce(f64::min);
                matches!((leader, best_here), (Some(leader), Some(best))
                    if leader.variant == row.variant && row.kernel_s > LOST_THE_LEAD * best)
            };
            larger_ran_faster || probed_faster || lost_the_lead
        })
        .collect();
    if suspects.is_empty() {
        return;
    }
    progress.plan(suspects.len() as u64);
    let measure = MeasureOptions { validate: false, ..options.measure.clone() };
    for i in suspects {
        let row = &part.rows[i];
        let (Some(params), Some(device)) =
            (position(&row.size).map(|at| &ladder[at]), devices.iter().find(|d| d.label() == row.label))
        else {
            continue;
        };
        progress.now_measuring(format!("{}: {} {params} with {}, measured again", row.label, W::NAME, row.variant));
        let again = W::generate(params, measure.seed)
            .ok()
            .and_then(|input| device.measure::<W>(&row.variant, &input, &measure).ok())
            .map(|m| Row::new::<W>(device, params, &m));
        progress.advance(1);
        if let Some(again) = again.filter(|again| again.kernel_s < part.rows[i].kernel_s) {
            part.rows[i] = again;
        }
    }
}

/// The bytes of the far streaming probe of every workload ([`measure_workload_streaming`]): twice this machine's
/// last-level cache, and the copy's 512 MiB ([`STREAM_PROBE_LEN`]) at least, past every cache of the host and of
/// the GPUs in view. A smaller probe still ran partly from the cache: saxpy at 604 MB of traffic (402 MB of arrays, on
/// a 16-core host whose cache holds 300 MiB) ran faster than a copy streamed (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub fn far_probe_bytes() -> u64 {
    let copy_bytes = gpuworthy_core::workloads::Square::cost(&gpuworthy_core::workloads::Len(STREAM_PROBE_LEN)).bytes;
    gpuworthy_cpu::last_level_cache_bytes().unwrap_or(0).saturating_mul(2).max(copy_bytes)
}

/// The data sizes of `W`'s streaming probes above a calibration ladder whose largest size moves `top` bytes, fewest
/// first: one near the ladder ([`NEAR_PROBE_GROWTH`] times its top), the far probe ([`far_probe_bytes`]), and where
/// the far probe is eight times the ladder's top or more, one between them (their geometric mean), where a CPU's data
/// no longer stays in its cache although the cache could hold it (the cache is shared with other cores, and on a
/// machine shared with others, with theirs) and a GPU's has left its L2. Each size is a
/// [`Workload::streaming_probe`]: on none of the workload's ladders.
pub fn streaming_probe_sizes<W: Workload>(top: u64) -> Vec<W::Params> {
    let far = far_probe_bytes();
    let mut sizes = Vec::new();
    if top > 0 {
        sizes.extend(W::streaming_probe((top as f64 * NEAR_PROBE_GROWTH) as u64));
    }
    if top > 0 && far / top >= 8 {
        let between = ((top as f64) * (far as f64)).sqrt() as u64;
        sizes.extend(W::streaming_probe(between));
    }
    sizes.extend(W::streaming_probe(far));
    sizes.sort_by_key(|p| W::cost(p).bytes);
    sizes.dedup_by(|a, b| a.to_string() == b.to_string());
    sizes
}

/// How far above the ladder's top the near streaming probe is ([`streaming_probe_sizes`]), in bytes: the sizes
/// just past the ladder are where a cache stops holding the data, and a rate interpolated across them from probes
/// far apart missed both ways. On 16-core hosts with 300 MiB of last-level cache, square at 2^24 (128 MiB) was
/// predicted too slow from its probes at 192 and 768 MiB; on two cores, whose cache holds 32 MiB, the stencil at
/// 2048x2048 ran at the ladder top's rate and was predicted far too slow from probes at 96 and 768 MiB (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so,
/// docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so). A probe at 2.5 times the top (rounded up to a
/// size on no ladder: 96 MiB for square, 1664x1664 or 21 MiB for
/// the stencil) measures that range instead.
pub const NEAR_PROBE_GROWTH: f64 = 2.5;

/// `W`'s own rate from memory on each device: its [`streaming_probe_sizes`] above a ladder whose top moves `top`
/// bytes, each input generated once and run on every device that implements `W` and can hold it, with the device's
/// documented best variant at the far probe, the data resident, the median of single launches by the device's own
/// timer ([`Device::time_resident_kernel`]), per byte that variant really moves ([`Workload::traffic`]). The model
/// predicts that variant past the ladder from these rates, interpolated between the ladder's largest size and the
/// probes ([`crate::model::fit::StreamBound::Measured`]), instead of from the copy's rate ([`measure_streaming`]): each
/// workload streams at a rate of its own (softmax and stencil slower than the copy on a 16-core host, and WGSL's
/// fused softmax at 4096x4096 on an H200; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
/// Devices that
/// measure nothing (no such size, too little memory, a failure) are left out, and so is a wgpu adapter that runs on
/// the CPU (lavapipe): it shares the CPU's memory, is never the fastest there past the ladder, and its probes took a
/// large share of a calibration on two cores (measured:
/// docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
pub fn measure_workload_streaming<W: DeviceWorkload>(
    devices: &[Device],
    top: u64,
    progress: &dyn Progress,
) -> Vec<(DeviceLabel, OwnStreaming)> {
    let sizes = streaming_probe_sizes::<W>(top);
    let Some(far) = sizes.last() else { return Vec::new() };
    let devices: Vec<(&Device, &'static str)> = devices
        .iter()
        .filter(|d| d.kind() == BackendKind::Cpu || d.is_gpu())
        .filter(|d| d.supports::<W>() && d.check_size::<W>(far).is_ok())
        .map(|d| (d, d.best_variant::<W>(far)))
        .collect();
    if devices.is_empty() {
        return Vec::new();
    }
    progress.plan((sizes.len() * devices.len()) as u64);
    let options = MeasureOptions { validate: false, ..calibration_options().measure };
    let mut streaming: Vec<(DeviceLabel, OwnStreaming)> = Vec::new();
    for params in &sizes {
        let input = W::generate(params, 1).ok();
        for &(device, variant) in &devices {
            progress.now_measuring(format!("{}: {} {params}, streaming from memory", device.label(), W::NAME));
            let timed = input
                .as_ref()
                .filter(|_| device.check_size::<W>(params).is_ok())
                .and_then(|input| device.time_resident_kernel::<W>(variant, input, &options).ok());
            progress.advance(1);
            let Some(stats) = timed else { continue };
            let moved = W::traffic(params, device.kind(), variant).max(1);
            let per_byte_s = stats.median.as_secs_f64() / moved as f64;
            match streaming.iter_mut().find(|(label, _)| *label == device.label()) {
                Some((_, own)) => own.probes.push((moved, per_byte_s)),
                None => streaming.push((
                    device.label(),
                    OwnStreaming { variant: variant.into(), probes: vec![(moved, per_byte_s)] },
                )),
            }
        }
    }
    streaming
}

/// The longest a compute probe may be expected to take, one launch ([`measure_compute_probe`]): the probe is
/// skipped on a device whose largest calibrated size, grown with the flops, says it would take longer; an H100's
/// matmul at 3072^3 takes well under it (measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
pub const COMPUTE_PROBE_MAX_S: f64 = 0.05;

/// `W`'s kernel at its [`Workload::compute_probe`] size on each GPU that implements `W` and can hold it (not a CPU
/// adapter such as lavapipe, which shares the CPU's cores and would take seconds), with the device's documented best
/// variant there, the data resident, the median of single launches by the device's own timer
/// ([`Device::time_resident_kernel`]). A device is skipped where `rows` (the calibrated ladder) put that variant's
/// probe above [`COMPUTE_PROBE_MAX_S`]. Empty for a workload with no such size.
pub fn measure_compute_probe<W: DeviceWorkload>(
    devices: &[Device],
    rows: &[Row],
    progress: &dyn Progress,
) -> Vec<(DeviceLabel, ComputeProbe)> {
    let Some(params) = W::compute_probe() else { return Vec::new() };
    let cost = W::cost(&params);
    let expected = |device: &Device, variant: &str| {
        let largest = rows.iter().filter(|r| r.label == device.label() && r.variant == variant).max_by_key(|r| r.flops);
        largest.map(|r| r.kernel_s * cost.flops as f64 / r.flops.max(1) as f64)
    };
    let devices: Vec<(&Device, &'static str)> = devices
        .iter()
        .filter(|d| d.is_gpu() && d.supports::<W>() && d.check_size::<W>(&params).is_ok())
        .map(|d| (d, d.best_variant::<W>(&params)))
        .filter(|(d, variant)| expected(d, variant).is_some_and(|t| t <= COMPUTE_PROBE_MAX_S))
        .collect();
    if devices.is_empty() {
        return Vec::new();
    }
    progress.plan(devices.len() as u64);
    let Ok(input) = W::generate(&params, 1) else {
        progress.advance(devices.len() as u64);
        return Vec::new();
    };
    let options = MeasureOptions { validate: false, ..calibration_options().measure };
    let mut probes = Vec::new();
    for (device, variant) in devices {
        progress.now_measuring(format!("{}: {} {params} with {variant}, past the ladder", device.label(), W::NAME));
        let timed = device.time_resident_kernel::<W>(variant, &input, &options);
        progress.advance(1);
        if let Ok(stats) = timed {
            let seconds = stats.median.as_secs_f64();
            let probe = ComputeProbe { variant: variant.into(), bytes: cost.bytes, flops: cost.flops, seconds };
            probes.push((device.label(), probe));
        }
    }
    probes
}

impl Calibration {
    /// The calibration of `devices` from what [`calibrate_workload`] measured of each workload, which began at
    /// `started`: the model fitted to every row.
    pub fn from_parts(devices: &[Device], parts: Vec<WorkloadCalibration>, started: Instant) -> Calibration {
        let rows: Vec<Row> = parts.iter().flat_map(|p| p.rows.iter().cloned()).collect();
        let mut model = Model::from_rows(&rows);
        let pinned_rows: Vec<Row> = parts.iter().flat_map(|p| p.pinned_rows.iter().cloned()).collect();
        let mut pinned_labels: Vec<&DeviceLabel> = pinned_rows.iter().map(|r| &r.label).collect();
        pinned_labels.sort_unstable();
        pinned_labels.dedup();
        for label in pinned_labels {
            model.add_pinned_transfers(label, &pinned_rows);
        }
        // The CPU's last-level cache, which tells the model which sizes past the ladder can still run from it.
        for device in model.devices.iter_mut().filter(|d| d.backend == gpuworthy_core::BackendKind::Cpu && !d.is_gpu) {
            device.cache_bytes = gpuworthy_cpu::last_level_cache_bytes();
        }
        // A GPU's L2, where its driver says (CUDA); a GPU whose driver does not (Vulkan) takes it from a device of
        // the same name that does, the same chip through another API.
        for device in model.devices.iter_mut().filter(|d| d.is_gpu) {
            let Some(own) = devices.iter().find(|d| d.label() == device.label) else { continue };
            device.cache_bytes = own.cache_bytes().or_else(|| {
                devices.iter().filter(|d| d.device().name == own.device().name).find_map(|d| d.cache_bytes())
            });
        }
        for part in &parts {
            for (label, own) in &part.streaming {
                let device = model.devices.iter_mut().find(|d| d.label == *label);
                if let Some(w) = device.and_then(|d| d.workloads.iter_mut().find(|w| w.workload == part.workload)) {
                    w.streaming = Some(own.clone());
                }
            }
            for (label, own, pipelined) in &part.parts_in_place {
                let device = model.devices.iter_mut().find(|d| d.label == *label);
                if let Some(w) = device.and_then(|d| d.workloads.iter_mut().find(|w| w.workload == part.workload)) {
                    (w.parts_in_place, w.parts_in_place_pipelined) = (*own, *pipelined);
                }
            }
            for (label, probe) in &part.compute_probes {
                let device = model.devices.iter_mut().find(|d| d.label == *label);
                if let Some(w) = device.and_then(|d| d.workloads.iter_mut().find(|w| w.workload == part.workload)) {
                    w.compute_probe = Some(probe.clone());
                }
            }
        }
        let mut sizes = Vec::new();
        for part in parts {
            for (label, samples) in part.pipelined_runs {
                model.add_pipelined_runs(&label, &part.workload, samples);
            }
            sizes.push((part.workload, part.sizes));
        }
        Calibration {
            fingerprint: MachineFingerprint::of(devices),
            measured_utc: utc_now(),
            took_s: started.elapsed().as_secs_f64(),
            sizes,
            model,
        }
    }

    /// Adds `other` (a calibration of more workloads on the same machine, such as expressions) to this one: its
    /// workloads and rates replace those of the same name, its sizes join, its time adds.
    pub fn merge(&mut self, other: Calibration) {
        self.model.merge(other.model);
        for (workload, sizes) in other.sizes {
            self.sizes.retain(|(w, _)| *w != workload);
            self.sizes.push((workload, sizes));
        }
        self.took_s += other.took_s;
        self.measured_utc = other.measured_utc;
    }

    /// Writes the calibration as JSON at `path`, making its folder.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| Error::invalid(format!("cannot write the calibration to {}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| Error::invalid(e.to_string()))?;
        std::fs::write(path, json).map_err(io)
    }

    /// Reads the calibration at `path` and checks that it describes `machine`.
    pub fn load(path: &Path, machine: &MachineFingerprint) -> Loaded {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing(path.to_owned()),
            Err(e) => return Loaded::Ignored(format!("cannot read the calibration {}: {e}", path.display())),
        };
        let calibration: Calibration = match serde_json::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                return Loaded::Ignored(format!(
                    "the calibration {} is corrupt ({e}); run `gpuworthy calibrate` again",
                    path.display()
                ));
            }
        };
        if calibration.fingerprint != *machine {
            let why = if calibration.fingerprint.gpuworthy_version != machine.gpuworthy_version {
                format!("gpuworthy {}, not {}", calibration.fingerprint.gpuworthy_version, machine.gpuworthy_version)
            } else {
                "another machine or other devices".to_owned()
            };
            return Loaded::Ignored(format!(
                "the calibration {} describes {why}; run `gpuworthy calibrate` on this one",
                path.display()
            ));
        }
        Loaded::Calibrated(Box::new(calibration))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> MachineFingerprint {
        MachineFingerprint {
            cpu: "a CPU".into(),
            cpu_backend: "AVX2, 2 threads".into(),
            devices: vec!["wgpu(cpu): llvmpipe".into()],
            gpuworthy_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    fn saved(dir: &str, calibration: &Calibration) -> PathBuf {
        let path = std::env::temp_dir().join(format!("gpuworthy-test-{dir}-{}", std::process::id())).join("c.json");
        calibration.save(&path).unwrap();
        path
    }

    /// Removes the folder [`saved`] made for `path` (a failing test leaves it, to be looked at).
    fn forget(path: &std::path::Path) {
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    fn calibration(fingerprint: MachineFingerprint) -> Calibration {
        Calibration { fingerprint, measured_utc: utc_now(), took_s: 1.0, sizes: Vec::new(), model: Model::default() }
    }

    #[test]
    fn a_calibration_of_this_machine_round_trips() {
        let path = saved("round", &calibration(machine()));
        assert!(matches!(Calibration::load(&path, &machine()), Loaded::Calibrated(_)));
        forget(&path);
    }

    #[test]
    fn a_corrupt_file_is_ignored_with_the_reason() {
        let path = saved("corrupt", &calibration(machine()));
        std::fs::write(&path, "{ \"fingerprint\": 3").unwrap();
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("corrupt"), "{why}"),
            other => panic!("{other:?}"),
        }
        forget(&path);
    }

    #[test]
    fn a_file_from_another_machine_or_version_is_ignored() {
        let other = MachineFingerprint { cpu: "another CPU".into(), ..machine() };
        let path = saved("foreign", &calibration(other));
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("another machine"), "{why}"),
            other => panic!("{other:?}"),
        }
        forget(&path);
        let old = MachineFingerprint { gpuworthy_version: "0.0.1".into(), ..machine() };
        let path = saved("stale", &calibration(old));
        match Calibration::load(&path, &machine()) {
            Loaded::Ignored(why) => assert!(why.contains("gpuworthy 0.0.1"), "{why}"),
            other => panic!("{other:?}"),
        }
        forget(&path);
    }

    /// Every workload's calibration ladder: its extra sizes in it, in order of bytes; then the pipelined path's
    /// sizes, which start with that ladder and add at most one size, from which the chunks overlap.
    #[test]
    fn every_calibration_ladder_holds_its_extra_sizes_and_the_pipelined_path_reaches_overlapping_chunks() {
        fn check<W: Workload>() {
            let ladder = calibration_ladder::<W>();
            for extra in W::calibration_extra() {
                assert!(ladder.contains(&extra), "{}: {extra} left out", W::NAME);
            }
            let bytes: Vec<u64> = ladder.iter().map(|p| W::cost(p).bytes).collect();
            assert!(bytes.windows(2).all(|w| w[0] <= w[1]), "{}: {bytes:?}", W::NAME);
            let sizes = pipelined_ladder::<W>(&ladder);
            assert_eq!(&sizes[..ladder.len()], &ladder[..], "{}: the calibration ladder first", W::NAME);
            let largest = W::cost(sizes.last().unwrap()).bytes;
            assert!(largest >= PIPELINED_FULL_BYTES, "{}: {largest} bytes at most", W::NAME);
            assert!(sizes.len() <= ladder.len() + 1, "{}: one size more at most", W::NAME);
        }
        struct Check;
        impl crate::device::dispatch::WorkloadVisitor for Check {
            type Output = ();
            fn visit<W: crate::device::dispatch::CommandLineWorkload>(&mut self) {
                check::<W>();
            }
        }
        crate::device::dispatch::visit_each_workload(&mut Check);
        let mandelbrot: Vec<String> =
            calibration_ladder::<gpuworthy_core::workloads::Mandelbrot>().iter().map(ToString::to_string).collect();
        assert_eq!(mandelbrot, ["64x64", "256x256", "512x512", "1024x1024"]);
    }

    /// The CPU, square's ladder of 4096 and 65536 elements, calibration's options, and what they measured.
    fn square_calibrated_on_the_cpu() -> (Device, [gpuworthy_core::workloads::Len; 2], SweepOptions, WorkloadCalibration)
    {
        use gpuworthy_core::workloads::{Len, Square};
        let cpu = Device::cpu().unwrap();
        let ladder = [Len(1 << 12), Len(1 << 16)];
        let options = calibration_options();
        let rows = sweep_workload::<Square>(std::slice::from_ref(&cpu), &ladder, &options, &()).rows;
        let part = WorkloadCalibration { workload: Square::NAME.into(), rows, ..WorkloadCalibration::default() };
        (cpu, ladder, options, part)
    }

    /// A calibrated kernel slower than a larger size of its variant is measured again and the faster kept; one that
    /// is not slower is left as it was.
    #[test]
    fn a_kernel_slower_than_a_larger_size_is_measured_again() {
        use gpuworthy_core::workloads::Square;
        let (cpu, ladder, options, mut part) = square_calibrated_on_the_cpu();
        let slowed = part.rows.iter().position(|r| r.size == "4096" && r.variant == "simd").unwrap();
        part.rows[slowed].kernel_s = 1.0;
        let untouched = part.rows.iter().position(|r| r.size == "65536" && r.variant == "simd").unwrap();
        part.rows[untouched].end_to_end_s = 2.0;
        remeasure_slower_than_larger::<Square>(std::slice::from_ref(&cpu), &ladder, &mut part, &options, &());
        assert!(part.rows[slowed].kernel_s < 0.1, "measured again: {}", part.rows[slowed].kernel_s);
        assert_eq!(part.rows[untouched].end_to_end_s, 2.0, "the largest size has nothing larger to be slower than");
        // A probe of the variant that moved more bytes in less time counts as a larger size.
        let top = part.rows.iter().position(|r| r.size == "65536" && r.variant == "simd").unwrap();
        part.rows[top].kernel_s = 1.0;
        let probe = (1u64 << 24, 1e-9);
        part.streaming = vec![(cpu.label(), OwnStreaming { variant: "simd".into(), probes: vec![probe] })];
        remeasure_slower_than_larger::<Square>(std::slice::from_ref(&cpu), &ladder, &mut part, &options, &());
        assert!(part.rows[top].kernel_s < 0.1, "measured again: {}", part.rows[top].kernel_s);
    }

    /// A kernel that led its device at the size before and trails another variant here is measured again; one that
    /// trailed at the size before is not, for trailing now.
    #[test]
    fn a_kernel_that_lost_its_lead_is_measured_again() {
        use gpuworthy_core::workloads::Square;
        let (cpu, ladder, options, mut part) = square_calibrated_on_the_cpu();
        let at = |part: &WorkloadCalibration, size: &str, variant: &str| {
            part.rows.iter().position(|r| r.size == size && r.variant == variant).unwrap()
        };
        let leader = at(&part, "4096", "scalar");
        part.rows[leader].kernel_s = 1e-12;
        let slowed = at(&part, "65536", "scalar");
        part.rows[slowed].kernel_s = 1.0;
        remeasure_slower_than_larger::<Square>(std::slice::from_ref(&cpu), &ladder, &mut part, &options, &());
        assert!(part.rows[slowed].kernel_s < 0.1, "measured again: {}", part.rows[slowed].kernel_s);
        let trailing = at(&part, "65536", "simd");
        part.rows[trailing].kernel_s = 1.0;
        remeasure_slower_than_larger::<Square>(std::slice::from_ref(&cpu), &ladder, &mut part, &options, &());
        assert_eq!(part.rows[trailing].kernel_s, 1.0, "simd did not lead at 4096");
    }

    /// The probes above a ladder: one near its top, then farther, fewest bytes first, each on no ladder.
    #[test]
    fn streaming_probes_start_near_the_ladder_and_grow() {
        use gpuworthy_core::workloads::{Square, Stencil};
        fn check<W: Workload>(top: u64) {
            let sizes = streaming_probe_sizes::<W>(top);
            let bytes: Vec<u64> = sizes.iter().map(|p| W::cost(p).bytes).collect();
            assert!(bytes.windows(2).all(|b| b[0] < b[1]), "{}: {bytes:?}", W::NAME);
            let near = (top as f64 * NEAR_PROBE_GROWTH) as u64;
            assert!(bytes[0] >= near && bytes[0] < 2 * near, "{}: the nearest probe {} for {near}", W::NAME, bytes[0]);
            assert!(*bytes.last().unwrap() >= far_probe_bytes(), "{}: {bytes:?}", W::NAME);
            let ladder: Vec<String> = W::ladder().iter().map(|p| p.to_string()).collect();
            assert!(sizes.iter().all(|p| !ladder.contains(&p.to_string())), "{}: a probe on the ladder", W::NAME);
        }
        check::<Square>(32 << 20);
        check::<Stencil>(8 << 20);
    }

    /// Matmul's compute probe lies past its quick ladder and on none of its ladders, and only a GPU is probed: the
    /// CPU, which its ladder already fills, is not.
    #[test]
    fn the_compute_probe_lies_past_the_ladder_and_runs_on_gpus_only() {
        use gpuworthy_core::workloads::{Matmul, MatmulParams};
        let probe = Matmul::compute_probe().unwrap();
        let top = Matmul::quick_ladder().last().map(Matmul::cost).unwrap();
        assert!(Matmul::cost(&probe).flops > top.flops);
        assert!(!Matmul::ladder().contains(&probe) && !Matmul::quick_ladder().contains(&probe));
        let cpu = Device::cpu().unwrap();
        let ladder = [MatmulParams::square(64)];
        let rows = sweep_workload::<Matmul>(std::slice::from_ref(&cpu), &ladder, &calibration_options(), &()).rows;
        assert!(!rows.is_empty());
        assert!(measure_compute_probe::<Matmul>(std::slice::from_ref(&cpu), &rows, &()).is_empty());
    }

    #[test]
    fn a_missing_file_is_missing() {
        let path = std::env::temp_dir().join("gpuworthy-test-no-such-dir/calibration.json");
        assert!(matches!(Calibration::load(&path, &machine()), Loaded::Missing(_)));
    }
}
