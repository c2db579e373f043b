//! `gpuworthy sweep`: every size of a workload's ladder on every available backend and variant, the winner per size,
//! the crossover size from which a GPU beats the best CPU variant, and a verdict in plain words.
//!
//! The crossover is computed twice. *Resident*: the GPU's kernel time against the CPU's, as when the data already
//! lives on the GPU (inside a larger GPU pipeline). *Host*: the GPU's end-to-end time (upload, kernel, download)
//! against the CPU's kernel time, as when the data starts and ends in host memory, where the CPU computes on it
//! directly. A crossover is the smallest size from which the GPU wins at every larger size measured.
//!
//! Crossovers and verdicts compare full-precision variants with the CPU (reduced-precision ones, TF32, are given beside
//! and labelled), count only devices that are GPUs (a CPU adapter such as lavapipe is labelled `wgpu(cpu)` and never
//! called a GPU), crown a winner for data on the host only where the CPU was measured at that size, and name the phase
//! that decides: the transfers, or the GPU's kernel itself when that alone is slower than the CPU.
//!
//! Sizes a backend cannot take are reported, not skipped silently, and so are variants that would take too long at
//! the next size (the budget is per measurement, [`SweepOptions::budget`]): the CPU's `naive` matmul stops long
//! before 8192.

use std::collections::BTreeSet;
use std::time::Duration;

use gpuworthy::core::{Backend, BackendKind, Error, Precision, Workload};
use gpuworthy::measure::{MeasureOptions, Measurement};
use gpuworthy::{Device, OnEveryBackend};
use indicatif::ProgressBar;
use serde::Serialize;

use crate::report::duration;

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
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            measure: MeasureOptions::quick(),
            budget: Duration::from_secs(4),
            validate_up_to_flops: 20_000_000_000,
        }
    }
}

/// One measured (workload, size, backend, variant).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Workload name.
    pub workload: &'static str,
    /// Size as the workload displays it.
    pub size: String,
    /// Elements of the output (pixels, matrix entries) or input (1D): the plots' x axis.
    pub elements: u64,
    /// The backend.
    #[serde(serialize_with = "backend_name")]
    pub backend: BackendKind,
    /// How reports name the backend on its device: `cpu`, `cuda`, `wgpu`, or `wgpu(cpu)` for a CPU adapter.
    pub label: String,
    /// Whether the device is a GPU: false for the CPU and for a CPU adapter such as lavapipe, which no verdict calls
    /// a GPU.
    pub on_gpu: bool,
    /// Variant name.
    pub variant: String,
    /// `full`, or `reduced (tf32)` for reduced-precision variants.
    pub precision: &'static str,
    /// The clock behind the kernel time.
    pub kernel_clock: String,
    /// First use of the variant (compilation), seconds.
    pub compile_s: f64,
    /// First upload + launch + download, seconds.
    pub first_call_s: f64,
    /// Median upload, seconds.
    pub upload_s: f64,
    /// Median kernel time, seconds.
    pub kernel_s: f64,
    /// 25th percentile of the kernel time.
    pub kernel_p25_s: f64,
    /// 75th percentile of the kernel time.
    pub kernel_p75_s: f64,
    /// Median download, seconds.
    pub download_s: f64,
    /// Median upload + kernel + download, synchronised, seconds.
    pub end_to_end_s: f64,
    /// Bytes a perfect implementation moves.
    pub bytes: u64,
    /// Flops of the run.
    pub flops: u64,
    /// Kernel-time throughput, decimal GB/s.
    pub gb_per_s: f64,
    /// Kernel-time throughput, decimal GFLOP/s.
    pub gflop_per_s: f64,
    /// `ok`, `not checked`, or the mismatch.
    pub check: String,
}

/// Writes a backend as its name, as the command line spells it.
fn backend_name<S: serde::Serializer>(kind: &BackendKind, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(kind.name())
}

impl Row {
    fn new(device: &Device, elements: u64, m: &Measurement) -> Row {
        Row {
            workload: m.workload,
            size: m.size.clone(),
            elements,
            backend: device.kind(),
            label: device.label(),
            on_gpu: device.is_gpu(),
            variant: m.variant.clone(),
            precision: match m.precision {
                Precision::Full => "full",
                Precision::Reduced => "reduced (tf32)",
            },
            kernel_clock: m.kernel_clock.to_string(),
            compile_s: m.compile.as_secs_f64(),
            first_call_s: m.first_call.as_secs_f64(),
            upload_s: m.upload.median.as_secs_f64(),
            kernel_s: m.kernel.median.as_secs_f64(),
            kernel_p25_s: m.kernel.p25.as_secs_f64(),
            kernel_p75_s: m.kernel.p75.as_secs_f64(),
            download_s: m.download.median.as_secs_f64(),
            end_to_end_s: m.end_to_end.median.as_secs_f64(),
            bytes: m.cost.bytes,
            flops: m.cost.flops,
            gb_per_s: m.gb_per_s(m.kernel.median),
            gflop_per_s: m.gflop_per_s(m.kernel.median),
            check: match &m.check {
                None => "not checked".into(),
                Some(Ok(())) => "ok".into(),
                Some(Err(e)) => format!("FAILED: {e}"),
            },
        }
    }

    /// Whether the variant computes in full `f32` precision (crossovers and verdicts compare only these with the CPU).
    pub fn is_full_precision(&self) -> bool {
        self.precision == "full"
    }

    /// The time that counts when the data starts on the host: end-to-end on a GPU, the kernel on the CPU (which
    /// computes where the data already is).
    pub fn host_time(&self) -> f64 {
        if self.backend == BackendKind::Cpu { self.kernel_s } else { self.end_to_end_s }
    }
}

/// Something the sweep did not measure, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// Workload name.
    pub workload: &'static str,
    /// Size as the workload displays it.
    pub size: String,
    /// The backend's label (as in [`Row::label`]), or `all` when nothing could run.
    pub backend: String,
    /// Variant name.
    pub variant: String,
    /// What happened.
    pub message: String,
}

/// Everything a sweep of one workload produced.
#[derive(Debug, Clone, Serialize, Default)]
pub struct WorkloadSweep {
    /// Workload name.
    pub workload: &'static str,
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
        self.rows.iter().filter(|r| r.check.starts_with("FAILED"))
    }
}

/// The size from which a GPU wins at every larger size measured, and that GPU's label; `None` when none does.
pub type Crossing = Option<(String, String)>;

/// Where a GPU starts to beat the best CPU variant.
#[derive(Debug, Clone, Serialize)]
pub struct Crossover {
    /// With data resident on the GPU: the smallest size from which a GPU's kernel beats the CPU at every larger
    /// size, and that GPU backend's label; `None` when no GPU does in the range measured.
    pub resident: Option<(String, String)>,
    /// With data on the host: the same with the GPU's end-to-end time.
    pub host: Option<(String, String)>,
    /// With reduced-precision variants (TF32) counted too, where the sweep measured any and they move a crossover:
    /// `(resident, host)` as above.
    pub reduced_precision: Option<(Crossing, Crossing)>,
    /// The verdict in plain words.
    pub verdict: String,
}

/// Sweeps `W` over `ladder` on every device of `devices`.
pub fn sweep_workload<W: OnEveryBackend>(
    devices: &[Device],
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &ProgressBar,
) -> WorkloadSweep {
    let mut out = WorkloadSweep { workload: W::NAME, ..Default::default() };
    let mut stopped: BTreeSet<(String, String)> = BTreeSet::new();
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
        measure_options.validate = cost.flops <= options.validate_up_to_flops;
        progress.set_message(format!("{} {params}", W::NAME));
        for device in devices {
            let label = device.label();
            let variants = device.variants::<W>();
            if let Err(e) = device.check_size::<W>(params) {
                progress.inc(variants.len() as u64);
                out.notes.push(note::<W>(params, &label, "all", format!("refused {params}: {e}")));
                continue;
            }
            for variant in variants {
                progress.inc(1);
                if stopped.contains(&(label.clone(), variant.to_owned())) {
                    continue;
                }
                match device.measure::<W>(variant, &input, &measure_options) {
                    Ok(m) => {
                        let per_run = m.end_to_end.median.max(m.kernel.median).as_secs_f64();
                        // One measurement runs the work about 14 times (first call, warm-up, three phases of
                        // repetitions); stop before a size whose measurement would overrun the budget.
                        if let Some(growth) = growth {
                            let predicted = per_run * growth * 14.0;
                            if predicted > options.budget.as_secs_f64() {
                                stopped.insert((label.clone(), variant.to_owned()));
                                out.notes.push(note::<W>(
                                    params,
                                    &label,
                                    variant,
                                    format!(
                                        "stopped after {params}: the next size would take about {} per run ({} per \
                                     measurement, over the budget of {})",
                                        duration(Duration::from_secs_f64(per_run * growth)),
                                        duration(Duration::from_secs_f64(predicted)),
                                        duration(options.budget)
                                    ),
                                ));
                            }
                        }
                        out.rows.push(Row::new(device, cost.elements, &m));
                    }
                    Err(e) => {
                        let refused = matches!(e, Error::TooLarge { .. });
                        stopped.insert((label.clone(), variant.to_owned()));
                        let what = if refused { "refused" } else { "failed" };
                        out.notes.push(note::<W>(params, &label, variant, format!("{what} at {params}: {e}")));
                    }
                }
            }
        }
    }
    out.crossover = crossover(&out.rows);
    out
}

fn note<W: Workload>(params: &W::Params, backend: &str, variant: &str, message: String) -> Note {
    Note {
        workload: W::NAME,
        size: params.to_string(),
        backend: backend.to_owned(),
        variant: variant.to_owned(),
        message,
    }
}

/// The best row of the backend labelled `label` at `size` by `time`.
pub(crate) fn best<'a>(rows: &'a [Row], size: &str, label: &str, time: impl Fn(&Row) -> f64) -> Option<&'a Row> {
    rows.iter()
        .filter(|r| r.size == size && r.label == label && !r.check.starts_with("FAILED"))
        .min_by(|a, b| time(a).total_cmp(&time(b)))
}

/// The sizes of `rows`, in ladder order.
pub fn sizes(rows: &[Row]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    for r in rows {
        if !sizes.contains(&r.size) {
            sizes.push(r.size.clone());
        }
    }
    sizes
}

/// The labels of the backends in `rows`, in the order they were measured, with those that satisfy `keep`.
pub fn labels(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| keep(r)) {
        if !labels.contains(&r.label) {
            labels.push(r.label.clone());
        }
    }
    labels
}

/// The label of the CPU backend's rows.
pub(crate) fn cpu_label() -> String {
    BackendKind::Cpu.name().to_owned()
}

/// The smallest size from which `gpu` beats the CPU at every larger size where both were measured.
fn crossover_of(rows: &[Row], gpu: &str, time: &impl Fn(&Row) -> f64) -> Option<String> {
    let mut from: Option<String> = None;
    let cpu_label = cpu_label();
    for size in sizes(rows) {
        let (Some(cpu), Some(g)) = (best(rows, &size, &cpu_label, Row::host_time), best(rows, &size, gpu, time)) else {
            continue;
        };
        if time(g) < cpu.kernel_s {
            from.get_or_insert(size);
        } else {
            from = None;
        }
    }
    from
}

/// The earliest crossovers of any GPU in `rows`: with data resident (kernel times), and with data on the host
/// (end-to-end times).
fn earliest_crossovers(rows: &[Row], gpus: &[String]) -> (Crossing, Crossing) {
    let all_sizes = sizes(rows);
    let position = |size: &Option<String>| {
        size.as_ref().map_or(usize::MAX, |s| all_sizes.iter().position(|x| x == s).unwrap_or(usize::MAX))
    };
    let earliest = |time: &dyn Fn(&Row) -> f64| {
        gpus.iter()
            .map(|g| (crossover_of(rows, g, &time), g.clone()))
            .min_by_key(|(size, _)| position(size))
            .and_then(|(size, g)| size.map(|s| (s, g)))
    };
    (earliest(&|r: &Row| r.kernel_s), earliest(&|r: &Row| r.end_to_end_s))
}

fn crossover(rows: &[Row]) -> Option<Crossover> {
    if !rows.iter().any(|r| r.backend.is_gpu()) || !rows.iter().any(|r| r.backend == BackendKind::Cpu) {
        return None;
    }
    let workload = rows[0].workload;
    let gpus = labels(rows, |r| r.on_gpu);
    if gpus.is_empty() {
        let adapters = labels(rows, |r| r.backend.is_gpu()).join(", ");
        return Some(Crossover {
            resident: None,
            host: None,
            reduced_precision: None,
            verdict: format!(
                "{workload}: no GPU was measured ({adapters} runs on a CPU adapter, not a GPU), so there is no crossover."
            ),
        });
    }
    // Crossovers and the verdict compare full-precision variants with the (full-precision) CPU; reduced-precision
    // ones are given beside, labelled, where they move a crossover.
    let full: Vec<Row> =
        rows.iter().filter(|r| r.is_full_precision() && (r.on_gpu || r.backend == BackendKind::Cpu)).cloned().collect();
    let (resident, host) = earliest_crossovers(&full, &gpus);
    let reduced_precision = if rows.iter().any(|r| !r.is_full_precision()) {
        let with_reduced: Vec<Row> =
            rows.iter().filter(|r| r.on_gpu || r.backend == BackendKind::Cpu).cloned().collect();
        let moved = earliest_crossovers(&with_reduced, &gpus);
        (moved != (resident.clone(), host.clone())).then_some(moved)
    } else {
        None
    };
    let mut verdict = verdict(&full, &gpus, &resident, &host);
    if let Some((reduced_resident, reduced_host)) = &reduced_precision {
        let show =
            |x: &Option<(String, String)>| x.as_ref().map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"));
        verdict.push_str(&format!(
            " With reduced-precision (TF32) kernels, which this verdict leaves out: resident from {}, host from {}.",
            show(reduced_resident),
            show(reduced_host)
        ));
    }
    Some(Crossover { resident, host, reduced_precision, verdict })
}

/// The verdict: when the GPU is worth it, with the figures that say why, at the largest size both measured.
fn verdict(
    rows: &[Row],
    gpus: &[String],
    resident: &Option<(String, String)>,
    host: &Option<(String, String)>,
) -> String {
    let workload = rows[0].workload;
    let all_sizes = sizes(rows);
    let cpu_label = cpu_label();
    // The largest size with a CPU row and a row of the GPU that matters (the crossover's, else the fastest one).
    let gpu = host.as_ref().or(resident.as_ref()).map(|(_, g)| g.as_str()).unwrap_or(&gpus[0]);
    let Some(size) = all_sizes
        .iter()
        .rev()
        .find(|s| best(rows, s, &cpu_label, Row::host_time).is_some() && best(rows, s, gpu, |r| r.kernel_s).is_some())
    else {
        return format!("{workload}: the CPU and the GPU were never measured at the same size.");
    };
    let cpu = best(rows, size, &cpu_label, Row::host_time).expect("found above");
    let kernel = best(rows, size, gpu, |r| r.kernel_s).expect("found above");
    let end_to_end = best(rows, size, gpu, |r| r.end_to_end_s).expect("found above");
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    let host_part = match host {
        Some((from, g)) => format!(
            "GPU-worthy from {from} even when the data starts on the host ({g} end-to-end {} against the CPU's {} at {size}: {:.1}x)",
            t(end_to_end.end_to_end_s),
            t(cpu.kernel_s),
            cpu.kernel_s / end_to_end.end_to_end_s
        ),
        None if kernel.kernel_s >= cpu.kernel_s => format!(
            "never GPU-worthy in this range when the data starts on the host: at {size}, {gpu}'s fastest kernel alone \
             ({}, {}) takes longer than the CPU's whole pass ({}, {}), before any transfer",
            kernel.variant,
            t(kernel.kernel_s),
            cpu.variant,
            t(cpu.kernel_s)
        ),
        None => {
            let moved = end_to_end.upload_s + end_to_end.download_s;
            let per_element = end_to_end.bytes as f64 / end_to_end.elements.max(1) as f64;
            format!(
                "never GPU-worthy in this range when the data starts on the host: at {size}, moving about {per_element:.0} B per element \
                 to {gpu} and back takes {} while the CPU's whole pass ({}) takes {}",
                t(moved),
                cpu.variant,
                t(cpu.kernel_s)
            )
        }
    };
    let resident_part = match resident {
        Some((from, g)) => {
            let k = best(rows, size, g, |r| r.kernel_s).unwrap_or(kernel);
            format!(
                "GPU-worthy from {from} when the data already lives on the GPU ({g} {} kernel {} against {}: {:.0}x at {size})",
                k.variant,
                t(k.kernel_s),
                t(cpu.kernel_s),
                cpu.kernel_s / k.kernel_s
            )
        }
        None => format!(
            "the CPU wins even with the data resident on the GPU ({gpu} {} kernel {} against {} at {size})",
            kernel.variant,
            t(kernel.kernel_s),
            t(cpu.kernel_s)
        ),
    };
    format!("{workload}: {host_part}; {resident_part}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table;

    fn row(size: &str, backend: BackendKind, kernel: f64, e2e: f64) -> Row {
        Row {
            workload: "square",
            size: size.into(),
            elements: size.parse().unwrap_or(1),
            backend,
            label: backend.to_string(),
            on_gpu: backend.is_gpu(),
            variant: "v".into(),
            precision: "full",
            kernel_clock: String::new(),
            compile_s: 0.0,
            first_call_s: 0.0,
            upload_s: e2e / 2.0,
            kernel_s: kernel,
            kernel_p25_s: kernel,
            kernel_p75_s: kernel,
            download_s: e2e / 2.0,
            end_to_end_s: e2e,
            bytes: 8,
            flops: 1,
            gb_per_s: 0.0,
            gflop_per_s: 0.0,
            check: "ok".into(),
        }
    }

    #[test]
    fn a_failed_check_is_shown_as_failed_and_never_wins() {
        let mut failed = row("10", BackendKind::Cuda, 0.5, 0.5);
        failed.check = "FAILED: element 3: expected 1, got 2".into();
        let sweep = WorkloadSweep {
            workload: "square",
            rows: vec![row("10", BackendKind::Cpu, 1.0, 1.0), failed],
            ..WorkloadSweep::default()
        };
        assert_eq!(sweep.failed_checks().count(), 1);
        let text = table(&sweep);
        assert!(text.contains("FAILED") && text.contains("cuda/v at 10: FAILED: element 3"), "{text}");
        let line = text.lines().find(|l| l.starts_with("10")).unwrap();
        assert!(!line.contains("cuda 2.0x"), "a failed variant won: {line}");
    }

    #[test]
    fn crossover_is_where_the_gpu_keeps_winning() {
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Cuda, 2.0, 9.0),
            row("100", BackendKind::Cpu, 10.0, 10.0),
            row("100", BackendKind::Cuda, 5.0, 90.0),
            row("1000", BackendKind::Cpu, 100.0, 100.0),
            row("1000", BackendKind::Cuda, 20.0, 900.0),
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.resident, Some(("100".into(), "cuda".into())));
        assert_eq!(c.host, None);
        assert!(c.verdict.contains("never GPU-worthy in this range when the data starts on the host"), "{}", c.verdict);
        assert!(c.verdict.contains("from 100 when the data already lives on the GPU"), "{}", c.verdict);
    }

    #[test]
    fn a_win_that_does_not_last_is_no_crossover() {
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Wgpu, 0.5, 0.5),
            row("100", BackendKind::Cpu, 10.0, 10.0),
            row("100", BackendKind::Wgpu, 20.0, 20.0),
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.resident, None);
        assert_eq!(c.host, None);
    }

    #[test]
    fn the_host_winner_needs_the_cpu_at_that_size() {
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Cuda, 2.0, 3.0),
            row("100", BackendKind::Cuda, 5.0, 90.0),
            row("100", BackendKind::Wgpu, 6.0, 80.0),
        ];
        let text = table(&WorkloadSweep { workload: "square", rows, ..WorkloadSweep::default() });
        let line = text.lines().find(|l| l.starts_with("100")).unwrap();
        assert!(line.contains("cpu not measured") && !line.contains("wgpu 1.1x"), "{line}");
    }

    #[test]
    fn a_cpu_adapter_is_never_called_a_gpu() {
        let mut lavapipe = row("10", BackendKind::Wgpu, 0.5, 0.6);
        lavapipe.on_gpu = false;
        lavapipe.label = "wgpu(cpu)".into();
        let c = crossover(&[row("10", BackendKind::Cpu, 1.0, 1.0), lavapipe]).unwrap();
        assert_eq!((c.resident, c.host), (None, None));
        assert!(c.verdict.contains("no GPU was measured") && !c.verdict.contains("GPU-worthy"), "{}", c.verdict);
    }

    #[test]
    fn reduced_precision_neither_sets_the_crossover_nor_goes_unlabelled() {
        let mut tf32 = row("100", BackendKind::Cuda, 1.0, 1.0);
        tf32.precision = "reduced (tf32)";
        tf32.variant = "tf32".into();
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            row("10", BackendKind::Cuda, 2.0, 9.0),
            row("100", BackendKind::Cpu, 10.0, 10.0),
            row("100", BackendKind::Cuda, 20.0, 90.0),
            tf32,
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.resident, None, "a TF32 kernel set the full-precision crossover");
        assert_eq!(c.reduced_precision.as_ref().and_then(|(r, _)| r.clone()), Some(("100".into(), "cuda".into())));
        assert!(c.verdict.contains("reduced-precision (TF32)") && !c.verdict.contains("tf32 kernel"), "{}", c.verdict);
    }

    #[test]
    fn a_slow_kernel_is_named_as_the_reason_not_the_transfer() {
        let rows = vec![row("10", BackendKind::Cpu, 1.0, 1.0), row("10", BackendKind::Wgpu, 5.0, 5.5)];
        let c = crossover(&rows).unwrap();
        assert!(c.verdict.contains("kernel alone") && !c.verdict.contains("moving about"), "{}", c.verdict);
    }

    #[test]
    fn no_gpu_means_no_crossover() {
        assert!(crossover(&[row("10", BackendKind::Cpu, 1.0, 1.0)]).is_none());
    }
}
