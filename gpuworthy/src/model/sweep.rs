//! `gpuworthy sweep`: every size of a workload's ladder on every available backend and variant, the winner per size,
//! the crossover size from which a GPU beats the best CPU variant, and a verdict in plain words.
//!
//! This module measures (the loop over sizes, devices and variants) and holds the rows as values a program can use;
//! [`crate::model::crossover`] reads them into crossovers and a verdict. The command-line tool renders and exports them.
//!
//! Sizes a backend cannot take are reported, not skipped silently, and so are variants that would take too long at
//! the next size (the budget is per measurement, [`SweepOptions::budget`]): the CPU's `naive` matmul stops long
//! before 8192.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use gpuworthy_core::{Error, Precision, Workload};
use serde::Serialize;

use crate::Device;
use crate::device::{DeviceLabel, DeviceWorkload};
use crate::measure::names::{SizeLabel, VariantName, WorkloadName};
use crate::measure::{MeasureOptions, duration};
use crate::model::crossover::{Crossover, crossover};
use crate::model::rows::{Check, Row, best, cpu_label, labels};

/// Where a sweep reports its progress (a progress bar, a log, or nothing: `()`).
pub trait Progress {
    /// `steps` more measurements are planned.
    fn plan(&self, steps: u64) {
        let _ = steps;
    }
    /// `steps` measurements are done (or skipped).
    fn advance(&self, steps: u64) {
        let _ = steps;
    }
    /// What is being measured now.
    fn now_measuring(&self, what: String) {
        let _ = what;
    }
}

/// No progress report.
impl Progress for () {}

/// How a sweep measures.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Repetitions and time per phase.
    pub measure: MeasureOptions,
    /// The most time one measurement (all phases of one variant at one size) may take; a variant whose next size
    /// would take longer stops, with a note.
    pub budget: Duration,
    /// Check outputs against the reference where it costs at most this many flops.
    pub validate_up_to_flops: u64,
    /// Also measure the end-to-end phase through each device's pipelined path where it has one (CUDA), and let the
    /// host crossover take the faster transfer mode.
    pub pipelined: bool,
    /// Stop measuring a variant whose kernel took more than this many times its device's fastest full-precision
    /// kernel at two sizes in a row, not catching up ([`falls_behind`]); the device's documented best
    /// variant at the next size is always measured. `None`: every variant at every size (a sweep's table, and the
    /// evaluation, which judges the fastest among all).
    pub drop_slower_than: Option<f64>,
    /// Only the variants computing in these precisions (`gpuworthy sweep --precision fp32,tf32,bf16`); every
    /// variant where empty.
    pub precisions: Vec<Precision>,
}

/// Whether a variant whose kernel took `before` and then `now` times its device's fastest at two sizes in a row
/// (`before` `None` at the first size) is left out of the sizes after them: more than `factor` times at both, and
/// not catching up (at the second at least [`CATCHING_UP`] of the first). Such a variant is not the fastest of its
/// device past them (a CPU's `scalar` kernels, many times its `simd` ones, at the tops of a 16-core host's
/// calibration ladders; measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so); one that is catching
/// up (a CPU's threaded variant at the smallest
/// sizes, behind a single-threaded one until its threads pay) is kept.
pub fn falls_behind(before: Option<f64>, now: f64, factor: f64) -> bool {
    before.is_some_and(|before| before > factor && now > factor && now >= CATCHING_UP * before)
}

/// The share of its lead a variant far behind may win back from one size to the next and still count as not catching
/// up ([`falls_behind`]): measurements of a variant a constant factor behind move by a few percent either way.
pub const CATCHING_UP: f64 = 0.75;

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            measure: MeasureOptions::quick(),
            budget: Duration::from_secs(4),
            validate_up_to_flops: 20_000_000_000,
            pipelined: true,
            drop_slower_than: None,
            precisions: Vec::new(),
        }
    }
}

/// Something the sweep did not measure, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// Workload name.
    pub workload: WorkloadName,
    /// Size as the workload displays it.
    pub size: SizeLabel,
    /// The backend's label (as in [`Row::label`]), or `all` when nothing could run.
    pub backend: String,
    /// Variant name.
    pub variant: VariantName,
    /// What happened.
    pub message: String,
}

/// Everything a sweep of one workload produced.
#[derive(Debug, Clone, Serialize, Default)]
pub struct WorkloadSweep {
    /// Workload name.
    pub workload: WorkloadName,
    /// Measurements, by size then backend then variant.
    pub rows: Vec<Row>,
    /// What was not measured.
    pub notes: Vec<Note>,
    /// The crossovers and verdict.
    pub crossover: Option<Crossover>,
}

impl WorkloadSweep {
    /// The measurements whose output failed its check against the reference.
    pub fn failed_checks(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.check.is_failed())
    }

    /// The fastest kernel at `size` with the data already where each backend computes (resident on a GPU), among
    /// the rows that passed their check; `None` when nothing at that size did.
    pub fn resident_winner(&self, size: &str) -> Option<Winner<'_>> {
        winner(&self.rows, size, |r| r.kernel_s)
    }

    /// The fastest way through `size` with the data on the host: the CPU's kernel against each GPU's whole run
    /// through its faster transfer mode ([`Row::host_time`]). The CPU computes where the data already is, so without
    /// the CPU at this size no backend is crowned: [`HostWinner::CpuNotMeasured`].
    pub fn host_winner(&self, size: &str) -> HostWinner<'_> {
        let Some(fastest) = winner(&self.rows, size, Row::host_time) else { return HostWinner::NoneMeasured };
        if best(&self.rows, size, &cpu_label(), Row::host_time).is_none() {
            return HostWinner::CpuNotMeasured;
        }
        HostWinner::Winner(fastest)
    }
}

impl WorkloadSweep {
    /// The fastest GPU's kernel at `size` against the CPU's, each with its data where it computes: how many times
    /// faster than the CPU the GPU is once the data lives on it. `None` without the CPU or a GPU at that size.
    pub fn gpu_over_cpu_resident(&self, size: &str) -> Option<OverCpu<'_>> {
        over_cpu(&self.rows, size, |r| r.kernel_s)
    }

    /// The fastest GPU's whole run from the host at `size` (through its faster transfer mode, [`Row::host_time`])
    /// against the CPU's pass over data already on the host: below 1, sending the data is not worth it.
    pub fn gpu_over_cpu_from_host(&self, size: &str) -> Option<OverCpu<'_>> {
        over_cpu(&self.rows, size, Row::host_time)
    }
}

/// The fastest GPU at one size set against the CPU, by one measure of time: the question the tool asks, which a
/// winner's lead over its runner-up does not answer (two GPUs close together, both far ahead of the CPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverCpu<'a> {
    /// The fastest GPU's best row.
    pub gpu: &'a Row,
    /// The CPU's time over the GPU's: above 1 the GPU is that many times faster, below 1 slower.
    pub speedup: f64,
}

/// The fastest GPU at `size` by `time` against the CPU's best, among rows that passed their check.
fn over_cpu<'a>(rows: &'a [Row], size: &str, time: impl Fn(&Row) -> f64 + Copy) -> Option<OverCpu<'a>> {
    let cpu = best(rows, size, &cpu_label(), time)?;
    let gpu = labels(rows, |r| r.size == size && r.label != cpu_label())
        .iter()
        .filter_map(|label| best(rows, size, label, time))
        .min_by(|a, b| time(a).total_cmp(&time(b)))?;
    Some(OverCpu { gpu, speedup: time(cpu) / time(gpu) })
}

/// The backend that was fastest at one size, by one measure of time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Winner<'a> {
    /// Its best row (the variant, and its times).
    pub row: &'a Row,
    /// How many times faster it was than the best of the other backends; `None` when it was the only one measured.
    pub over_runner_up: Option<f64>,
}

/// Who wins at one size with the data on the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HostWinner<'a> {
    /// The fastest, the CPU among those measured.
    Winner(Winner<'a>),
    /// The CPU has no row at this size that passed its check (a budget stopped it, it was not asked for, or it
    /// failed), so no GPU is crowned: the CPU needs no transfer, and the comparison that matters is missing.
    CpuNotMeasured,
    /// No row at this size passed its check.
    NoneMeasured,
}

/// The fastest backend at `size` by `time`, each backend represented by its best row that passed its check.
fn winner<'a>(rows: &'a [Row], size: &str, time: impl Fn(&Row) -> f64 + Copy) -> Option<Winner<'a>> {
    let mut ranked: Vec<&Row> =
        labels(rows, |r| r.size == size).iter().filter_map(|label| best(rows, size, label, time)).collect();
    ranked.sort_by(|a, b| time(a).total_cmp(&time(b)));
    let (&first, rest) = ranked.split_first()?;
    Some(Winner { row: first, over_runner_up: rest.first().map(|second| time(second) / time(first)) })
}

/// Sweeps `W` over `ladder` on every device of `devices`.
pub fn sweep_workload<W: DeviceWorkload>(
    devices: &[Device],
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &dyn Progress,
) -> WorkloadSweep {
    let mut out = WorkloadSweep { workload: W::NAME.into(), ..Default::default() };
    let mut stopped: BTreeSet<(DeviceLabel, VariantName)> = BTreeSet::new();
    // Each variant's kernel over its device's fastest full-precision kernel at the last size measured.
    let mut behind: BTreeMap<(DeviceLabel, VariantName), f64> = BTreeMap::new();
    // Each device's pipelined twin, where its backend has one: its end-to-end phase is measured too, and the host
    // crossover takes the faster mode.
    let pipelined: Vec<Option<Device>> =
        devices.iter().map(|d| if options.pipelined { d.pipelined() } else { None }).collect();
    for (i, params) in ladder.iter().enumerate() {
        let input = match W::generate(params, options.measure.seed) {
            Ok(input) => input,
            Err(e) => {
                out.notes.push(note::<W>(params, "all", "", format!("could not generate the input: {e}")));
                continue;
            }
        };
        let cost = W::cost(params);
        let growth = ladder.get(i + 1).map(|next| {
            let next = W::cost(next);
            (next.bytes as f64 / cost.bytes.max(1) as f64).max(next.flops as f64 / cost.flops.max(1) as f64)
        });
        let mut measure_options = options.measure.clone();
        measure_options.validate = W::check_work(params) <= options.validate_up_to_flops;
        progress.now_measuring(format!("{} {params}", W::NAME));
        for (device, pipelined) in devices.iter().zip(&pipelined) {
            let label = device.label();
            if let Err(e) = device.implementation::<W>() {
                if i == 0 {
                    out.notes.push(note::<W>(params, label.as_str(), "all", format!("not measured: {e}")));
                }
                continue;
            }
            let variants: Vec<&str> = device
                .variants::<W>()
                .into_iter()
                .filter(|v| options.precisions.is_empty() || options.precisions.contains(&device.precision::<W>(v)))
                .collect();
            if let Err(e) = device.check_size::<W>(params) {
                progress.advance(variants.len() as u64);
                out.notes.push(note::<W>(params, label.as_str(), "all", format!("refused {params}: {e}")));
                continue;
            }
            for variant in variants {
                progress.advance(1);
                if stopped.contains(&(label.clone(), VariantName::from(variant))) {
                    continue;
                }
                match device.measure::<W>(variant, &input, &measure_options) {
                    Ok(m) => {
                        let per_run = m.end_to_end.median.max(m.kernel.median).as_secs_f64();
                        if let Some(message) = growth.and_then(|g| over_budget(params, per_run, g, options.budget)) {
                            stopped.insert((label.clone(), VariantName::from(variant)));
                            out.notes.push(note::<W>(params, label.as_str(), variant, message));
                        }
                        let mut row = Row::new::<W>(device, params, &m);
                        if let Some(twin) = pipelined {
                            match twin.measure_end_to_end::<W>(variant, &input, &measure_options) {
                                Ok((_, Some(Err(e)))) => row.check = Check::Failed(format!("(pipelined run) {e}")),
                                Ok((stats, _)) => row.pipelined_s = Some(stats.median.as_secs_f64()),
                                Err(e) => out.notes.push(note::<W>(
                                    params,
                                    label.as_str(),
                                    variant,
                                    format!("pipelined run failed at {params}: {e}"),
                                )),
                            }
                        }
                        out.rows.push(row);
                    }
                    Err(e) => {
                        let refused = matches!(e, Error::TooLarge { .. });
                        stopped.insert((label.clone(), VariantName::from(variant)));
                        let what = if refused { "refused" } else { "failed" };
                        out.notes.push(note::<W>(params, label.as_str(), variant, format!("{what} at {params}: {e}")));
                    }
                }
            }
            if let (Some(factor), Some(next)) = (options.drop_slower_than, ladder.get(i + 1)) {
                let far_behind = FarBehind { factor, stopped: &mut stopped, behind: &mut behind };
                leave_out_far_behind::<W>(&mut out, device, params, next, far_behind);
            }
        }
    }
    out.crossover = crossover(&out.rows);
    out
}

/// Why a variant stops after `params`: its next size, `growth` times the work, would take a measurement past
/// `budget` (one measurement runs the work about 14 times: first call, warm-up, three phases of repetitions).
fn over_budget(params: &impl std::fmt::Display, per_run_s: f64, growth: f64, budget: Duration) -> Option<String> {
    let predicted = per_run_s * growth * 14.0;
    (predicted > budget.as_secs_f64()).then(|| {
        format!(
            "stopped after {params}: the next size would take about {} per run ({} per measurement, over the budget \
             of {})",
            duration(Duration::from_secs_f64(per_run_s * growth)),
            duration(Duration::from_secs_f64(predicted)),
            duration(budget)
        )
    })
}

/// What [`leave_out_far_behind`] reads and updates: the factor, the variants stopped, and each variant's kernel over
/// its device's fastest at the last size.
struct FarBehind<'a> {
    factor: f64,
    stopped: &'a mut BTreeSet<(DeviceLabel, VariantName)>,
    behind: &'a mut BTreeMap<(DeviceLabel, VariantName), f64>,
}

/// Stops the variants of `device` that fell further behind its fastest full-precision kernel at `params` than the
/// factor allows (the one best at `next` always stays), with a note for each.
fn leave_out_far_behind<W: DeviceWorkload>(
    out: &mut WorkloadSweep,
    device: &Device,
    params: &W::Params,
    next: &W::Params,
    far: FarBehind<'_>,
) {
    let label = device.label();
    let size = params.to_string();
    let here: Vec<&Row> = out.rows.iter().filter(|r| r.label == label && r.size == size).collect();
    let fastest = here.iter().filter(|r| r.precision == Precision::Fp32).map(|r| r.kernel_s).reduce(f64::min);
    let Some(fastest) = fastest.filter(|f| *f > 0.0) else { return };
    let keep = device.best_variant::<W>(next);
    let mut notes = Vec::new();
    for row in here {
        let key = (label.clone(), row.variant.clone());
        let now = row.kernel_s / fastest;
        if row.variant != keep && falls_behind(far.behind.get(&key).copied(), now, far.factor) {
            far.stopped.insert(key.clone());
            let message = format!("left out after {params}: {now:.0} times the fastest kernel here");
            notes.push(note::<W>(params, label.as_str(), &row.variant, message));
        }
        far.behind.insert(key, now);
    }
    out.notes.extend(notes);
}

fn note<W: Workload>(params: &W::Params, backend: &str, variant: &str, message: String) -> Note {
    Note {
        workload: W::NAME.into(),
        size: params.to_string().into(),
        backend: backend.to_owned(),
        variant: variant.into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variant far behind at two sizes in a row and not catching up is left out; one catching up, or behind at one
    /// size only, is not.
    #[test]
    fn a_variant_far_behind_and_not_catching_up_is_left_out() {
        assert!(falls_behind(Some(20.0), 19.0, 8.0));
        assert!(falls_behind(Some(20.0), 40.0, 8.0));
        assert!(!falls_behind(None, 40.0, 8.0), "one size says too little");
        assert!(!falls_behind(Some(20.0), 9.0, 8.0), "catching up");
        assert!(!falls_behind(Some(20.0), 7.0, 8.0));
        assert!(!falls_behind(Some(7.0), 20.0, 8.0));
    }

    /// An expression's `scalar` interpreter, tens of times the `blocks` evaluator on a CPU, is measured at the first
    /// two lengths of a calibration-like sweep at least and left out of the last, with a note (one length more where
    /// a measurement disturbed by the machine made it look as if catching up); `blocks`, the documented best, is
    /// measured at every length. Without the option every variant is measured everywhere.
    #[test]
    fn a_sweep_leaves_out_a_variant_far_behind_when_asked() {
        use gpuworthy_core::expr::{ExprParams, Expression};
        let cpu = Device::cpu().unwrap();
        let ladder: Vec<ExprParams> = [1 << 12, 1 << 13, 1 << 14, 1 << 15]
            .iter()
            .map(|&n| {
                crate::user_code::expression::ExpressionRequest::from_command_line("y = exp(-x*x) * sin(3*x)", &[], &[])
                    .unwrap()
                    .params(n)
                    .unwrap()
            })
            .collect();
        // A low factor: the interpreter stays far beyond it even on a machine busy with other tests.
        let options = SweepOptions { drop_slower_than: Some(3.0), ..crate::model::calibration::calibration_options() };
        let sweep = sweep_workload::<Expression>(std::slice::from_ref(&cpu), &ladder, &options, &());
        let at = |variant: &str| sweep.rows.iter().filter(|r| r.variant == variant).count();
        assert_eq!(at("blocks"), 4);
        assert!((2..4).contains(&at("scalar")), "{:?}", sweep.notes);
        assert!(sweep.notes.iter().any(|n| n.variant == "scalar" && n.message.starts_with("left out after")));
        let every = SweepOptions { drop_slower_than: None, ..options };
        let sweep = sweep_workload::<Expression>(std::slice::from_ref(&cpu), &ladder, &every, &());
        assert_eq!(sweep.rows.iter().filter(|r| r.variant == "scalar").count(), 4);
    }
    use gpuworthy_core::BackendKind;

    fn row(size: &str, backend: BackendKind, kernel: f64, e2e: f64) -> Row {
        Row::with_times("square", size, backend, kernel, e2e)
    }

    fn sweep(rows: Vec<Row>) -> WorkloadSweep {
        WorkloadSweep { workload: "square".into(), rows, ..WorkloadSweep::default() }
    }

    #[test]
    fn the_host_winner_needs_the_cpu_at_that_size() {
        let s = sweep(vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Cuda, 2.0, 3.0),
            row("100", BackendKind::Cuda, 5.0, 90.0),
            row("100", BackendKind::Wgpu, 6.0, 80.0),
        ]);
        assert_eq!(s.host_winner("100"), HostWinner::CpuNotMeasured);
        let HostWinner::Winner(w) = s.host_winner("10") else { panic!("the CPU was measured at 10") };
        assert_eq!((w.row.label.as_str(), w.over_runner_up), ("cpu", Some(3.0)));
        // With the data resident the GPUs compare without the CPU.
        let w = s.resident_winner("100").unwrap();
        assert_eq!((w.row.label.as_str(), w.over_runner_up), ("cuda", Some(6.0 / 5.0)));
        assert_eq!(s.resident_winner("1000"), None);
    }

    #[test]
    fn a_failed_check_never_wins_and_a_lone_survivor_has_no_ratio() {
        let mut failed = row("10", BackendKind::Cuda, 0.5, 0.5);
        failed.check = Check::Failed("element 3: expected 1, got 2".into());
        let s = sweep(vec![row("10", BackendKind::Cpu, 1.0, 1.0), failed]);
        let w = s.resident_winner("10").unwrap();
        assert_eq!((w.row.label.as_str(), w.over_runner_up), ("cpu", None));
        let mut only_failed = row("20", BackendKind::Cpu, 1.0, 1.0);
        only_failed.check = Check::Failed("short".into());
        assert_eq!(sweep(vec![only_failed]).host_winner("20"), HostWinner::NoneMeasured);
    }

    /// Two GPUs close together and far ahead of the CPU: the winner's lead is small, the speed-up over the CPU is not,
    /// and from the host the same GPUs lose to the CPU.
    #[test]
    fn the_gpu_is_set_against_the_cpu_not_only_against_the_runner_up() {
        let s = sweep(vec![
            row("16M", BackendKind::Cpu, 418e-6, 418e-6),
            row("16M", BackendKind::Cuda, 36e-6, 4.28e-3),
            row("16M", BackendKind::Wgpu, 37e-6, 15e-3),
            row("64M", BackendKind::Cuda, 136e-6, 12.9e-3),
        ]);
        assert!((s.resident_winner("16M").unwrap().over_runner_up.unwrap() - 37.0 / 36.0).abs() < 1e-9);
        let resident = s.gpu_over_cpu_resident("16M").unwrap();
        assert_eq!(resident.gpu.label.as_str(), "cuda");
        assert!((resident.speedup - 418.0 / 36.0).abs() < 1e-9, "{}", resident.speedup);
        let host = s.gpu_over_cpu_from_host("16M").unwrap();
        assert_eq!(host.gpu.label.as_str(), "cuda");
        assert!((host.speedup - 418e-6 / 4.28e-3).abs() < 1e-9 && host.speedup < 1.0, "{}", host.speedup);
        // No CPU at a size, or no GPU: nothing to set against.
        assert_eq!(s.gpu_over_cpu_resident("64M"), None);
        assert_eq!(sweep(vec![row("1", BackendKind::Cpu, 1.0, 1.0)]).gpu_over_cpu_from_host("1"), None);
        // A GPU whose check failed is not the GPU the CPU is set against.
        let mut failed = row("1", BackendKind::Cuda, 0.1, 0.1);
        failed.check = Check::Failed("wrong".into());
        let s = sweep(vec![row("1", BackendKind::Cpu, 1.0, 1.0), failed, row("1", BackendKind::Wgpu, 0.5, 2.0)]);
        let resident = s.gpu_over_cpu_resident("1").unwrap();
        assert_eq!((resident.gpu.label.as_str(), resident.speedup), ("wgpu", 2.0));
    }
}
