//! `gpuworthy sweep`: every size of a workload's ladder on every available backend and variant, the winner per size,
//! the crossover size from which a GPU beats the best CPU variant, and a verdict in plain words.
//!
//! The crossover is computed twice. *Resident*: the GPU's kernel time against the CPU's, as when the data already
//! lives on the GPU (inside a larger GPU pipeline). *Host*: the GPU's end-to-end time (upload, kernel, download)
//! against the CPU's kernel time, as when the data starts and ends in host memory, where the CPU computes on it
//! directly. A crossover is the smallest size from which the GPU wins at every larger size measured.
//!
//! Sizes a backend cannot take are reported, not skipped silently, and so are variants that would take too long at
//! the next size (the budget is per measurement, [`SweepOptions::budget`]): the CPU's `naive` matmul stops long
//! before 8192.

use std::collections::BTreeSet;
use std::time::Duration;

use gpuworthy::core::{BackendKind, Error, Implements, Precision, Workload};
use gpuworthy::cpu::CpuBackend;
use gpuworthy::cuda::CudaBackend;
use gpuworthy::measure::{MeasureOptions, Measurement, measure};
use gpuworthy::wgpu::WgpuBackend;
use indicatif::ProgressBar;
use serde::Serialize;

use crate::report::duration;

/// The backends a sweep runs on, opened once.
#[derive(Default)]
pub struct Backends {
    /// The CPU backend, when asked for.
    pub cpu: Option<CpuBackend>,
    /// The CUDA backend, when asked for and available.
    pub cuda: Option<CudaBackend>,
    /// The wgpu backend, when asked for and available.
    pub wgpu: Option<WgpuBackend>,
    /// Backends asked for but unavailable, with the reason.
    pub unavailable: Vec<(BackendKind, String)>,
}

impl Backends {
    /// Opens each of `kinds`, recording why any cannot run here.
    pub fn open(kinds: &[BackendKind]) -> Self {
        let mut backends = Backends::default();
        for &kind in kinds {
            let failed = match kind {
                BackendKind::Cpu => CpuBackend::new().map(|b| backends.cpu = Some(b)).err(),
                BackendKind::Cuda => CudaBackend::new(0).map(|b| backends.cuda = Some(b)).err(),
                BackendKind::Wgpu => WgpuBackend::new().map(|b| backends.wgpu = Some(b)).err(),
            };
            if let Some(e) = failed {
                backends.unavailable.push((kind, e.to_string()));
            }
        }
        backends
    }
}

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
    /// Backend name.
    pub backend: &'static str,
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

impl Row {
    fn new(backend: BackendKind, elements: u64, m: &Measurement) -> Row {
        Row {
            workload: m.workload,
            size: m.size.clone(),
            elements,
            backend: backend.name(),
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

    /// The time that counts when the data starts on the host: end-to-end on a GPU, the kernel on the CPU (which
    /// computes where the data already is).
    pub fn host_time(&self) -> f64 {
        if self.backend == "cpu" { self.kernel_s } else { self.end_to_end_s }
    }
}

/// Something the sweep did not measure, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// Workload name.
    pub workload: &'static str,
    /// Size as the workload displays it.
    pub size: String,
    /// Backend name.
    pub backend: &'static str,
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

/// Where a GPU starts to beat the best CPU variant.
#[derive(Debug, Clone, Serialize)]
pub struct Crossover {
    /// With data resident on the GPU: the smallest size from which a GPU's kernel beats the CPU at every larger
    /// size, and that GPU backend; `None` when no GPU does in the range measured.
    pub resident: Option<(String, &'static str)>,
    /// With data on the host: the same with the GPU's end-to-end time.
    pub host: Option<(String, &'static str)>,
    /// The verdict in plain words.
    pub verdict: String,
}

/// Sweeps `W` over `ladder` on every backend in `backends`.
pub fn sweep_workload<W: Workload>(
    backends: &Backends,
    ladder: &[W::Params],
    options: &SweepOptions,
    progress: &ProgressBar,
) -> WorkloadSweep
where
    CpuBackend: Implements<W>,
    CudaBackend: Implements<W>,
    WgpuBackend: Implements<W>,
{
    let mut out = WorkloadSweep { workload: W::NAME, ..Default::default() };
    let mut stopped: BTreeSet<(&'static str, String)> = BTreeSet::new();
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
        let mut run = |backend: Option<&dyn Runs<W>>| {
            let Some(backend) = backend else { return };
            let kind = backend.kind_of();
            if let Err(e) = backend.fits(params) {
                progress.inc(backend.variant_names().len() as u64);
                out.notes.push(note::<W>(params, kind.name(), "all", format!("refused {params}: {e}")));
                return;
            }
            for variant in backend.variant_names() {
                progress.inc(1);
                if stopped.contains(&(kind.name(), variant.to_owned())) {
                    continue;
                }
                match backend.measure_variant(variant, &input, &measure_options) {
                    Ok(m) => {
                        let per_run = m.end_to_end.median.max(m.kernel.median).as_secs_f64();
                        // One measurement runs the work about 14 times (first call, warm-up, three phases of
                        // repetitions); stop before a size whose measurement would overrun the budget.
                        if let Some(growth) = growth {
                            let predicted = per_run * growth * 14.0;
                            if predicted > options.budget.as_secs_f64() {
                                stopped.insert((kind.name(), variant.to_owned()));
                                out.notes.push(note::<W>(
                                    params,
                                    kind.name(),
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
                        out.rows.push(Row::new(kind, cost.elements, &m));
                    }
                    Err(e) => {
                        let refused = matches!(e, Error::TooLarge { .. });
                        stopped.insert((kind.name(), variant.to_owned()));
                        let what = if refused { "refused" } else { "failed" };
                        out.notes.push(note::<W>(params, kind.name(), variant, format!("{what} at {params}: {e}")));
                    }
                }
            }
        };
        run(backends.cpu.as_ref().map(|b| b as &dyn Runs<W>));
        run(backends.cuda.as_ref().map(|b| b as &dyn Runs<W>));
        run(backends.wgpu.as_ref().map(|b| b as &dyn Runs<W>));
    }
    out.crossover = crossover(&out.rows);
    out
}

fn note<W: Workload>(params: &W::Params, backend: &'static str, variant: &str, message: String) -> Note {
    Note { workload: W::NAME, size: params.to_string(), backend, variant: variant.to_owned(), message }
}

/// A backend seen through the one workload a sweep runs, so that the three backend types fit in one loop.
trait Runs<W: Workload> {
    fn kind_of(&self) -> BackendKind;
    fn fits(&self, params: &W::Params) -> gpuworthy::core::Result<()>;
    fn variant_names(&self) -> Vec<&'static str>;
    fn measure_variant(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> gpuworthy::core::Result<Measurement>;
}

impl<W: Workload, B: Implements<W>> Runs<W> for B {
    fn kind_of(&self) -> BackendKind {
        self.kind()
    }
    fn fits(&self, params: &W::Params) -> gpuworthy::core::Result<()> {
        self.check_size(params)
    }
    fn variant_names(&self) -> Vec<&'static str> {
        self.variants()
    }
    fn measure_variant(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> gpuworthy::core::Result<Measurement> {
        measure::<W, B>(self, variant, input, options)
    }
}

/// The best row of `backend` at `size` by `time`.
fn best<'a>(rows: &'a [Row], size: &str, backend: &str, time: impl Fn(&Row) -> f64) -> Option<&'a Row> {
    rows.iter()
        .filter(|r| r.size == size && r.backend == backend && !r.check.starts_with("FAILED"))
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

/// The smallest size from which `gpu` beats the CPU at every larger size where both were measured.
fn crossover_of(rows: &[Row], gpu: &str, time: &impl Fn(&Row) -> f64) -> Option<String> {
    let mut from: Option<String> = None;
    for size in sizes(rows) {
        let (Some(cpu), Some(g)) = (best(rows, &size, "cpu", Row::host_time), best(rows, &size, gpu, time)) else {
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

fn crossover(rows: &[Row]) -> Option<Crossover> {
    let gpus: Vec<&'static str> =
        ["cuda", "wgpu"].into_iter().filter(|g| rows.iter().any(|r| r.backend == *g)).collect();
    if gpus.is_empty() || !rows.iter().any(|r| r.backend == "cpu") {
        return None;
    }
    let position = |size: &Option<String>| {
        size.as_ref().map_or(usize::MAX, |s| sizes(rows).iter().position(|x| x == s).unwrap_or(usize::MAX))
    };
    let earliest = |time: &dyn Fn(&Row) -> f64| {
        gpus.iter()
            .map(|g| (crossover_of(rows, g, &time), *g))
            .min_by_key(|(size, _)| position(size))
            .and_then(|(size, g)| size.map(|s| (s, g)))
    };
    let resident = earliest(&|r: &Row| r.kernel_s);
    let host = earliest(&|r: &Row| r.end_to_end_s);
    let verdict = verdict(rows, &gpus, &resident, &host);
    Some(Crossover { resident, host, verdict })
}

/// The verdict: when the GPU is worth it, with the figures that say why, at the largest size both measured.
fn verdict(
    rows: &[Row],
    gpus: &[&'static str],
    resident: &Option<(String, &str)>,
    host: &Option<(String, &str)>,
) -> String {
    let workload = rows[0].workload;
    let all_sizes = sizes(rows);
    // The largest size with a CPU row and a row of the GPU that matters (the crossover's, else the fastest one).
    let gpu = host.as_ref().or(resident.as_ref()).map(|(_, g)| *g).unwrap_or(gpus[0]);
    let Some(size) = all_sizes
        .iter()
        .rev()
        .find(|s| best(rows, s, "cpu", Row::host_time).is_some() && best(rows, s, gpu, |r| r.kernel_s).is_some())
    else {
        return format!("{workload}: the CPU and the GPU were never measured at the same size.");
    };
    let cpu = best(rows, size, "cpu", Row::host_time).expect("found above");
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

/// The per-size table of one workload: each backend's best kernel and end-to-end time, the winner and speed-up with
/// data resident and with data on the host.
pub fn table(sweep: &WorkloadSweep) -> String {
    use std::fmt::Write;
    let rows = &sweep.rows;
    let backends: Vec<&str> =
        ["cpu", "cuda", "wgpu"].into_iter().filter(|b| rows.iter().any(|r| r.backend == *b)).collect();
    let mut out = String::new();
    let _ = write!(out, "{:<16}", "size");
    for b in &backends {
        let _ = write!(out, " {:>22}", format!("{b} kernel"));
        if *b != "cpu" {
            let _ = write!(out, " {:>12}", format!("{b} e2e"));
        }
    }
    let _ = writeln!(out, "  {:<24} {:<24}", "resident: winner", "host: winner");
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    for size in sizes(rows) {
        let _ = write!(out, "{size:<16}");
        for b in &backends {
            match best(rows, &size, b, |r| r.kernel_s) {
                Some(r) => {
                    let _ = write!(out, " {:>22}", format!("{} ({})", t(r.kernel_s), r.variant));
                }
                None => {
                    let failed =
                        rows.iter().any(|r| r.size == size && r.backend == *b && r.check.starts_with("FAILED"));
                    let _ = write!(out, " {:>22}", if failed { "FAILED" } else { "-" });
                }
            }
            if *b != "cpu" {
                let e2e = best(rows, &size, b, |r| r.end_to_end_s).map_or("-".into(), |r| t(r.end_to_end_s));
                let _ = write!(out, " {e2e:>12}");
            }
        }
        let winner = |time: &dyn Fn(&Row) -> f64| {
            let mut ranked: Vec<&Row> = backends.iter().filter_map(|b| best(rows, &size, b, |r| time(r))).collect();
            ranked.sort_by(|a, b| time(a).total_cmp(&time(b)));
            match ranked.as_slice() {
                [first, second, ..] => format!("{} {:.1}x", first.backend, time(second) / time(first)),
                [only] => only.backend.to_owned(),
                [] => "-".into(),
            }
        };
        let _ = writeln!(out, "  {:<24} {:<24}", winner(&|r: &Row| r.kernel_s), winner(&Row::host_time));
    }
    for r in sweep.failed_checks() {
        let _ = writeln!(out, "  {}/{} at {}: {}", r.backend, r.variant, r.size, r.check);
    }
    for n in &sweep.notes {
        let _ = writeln!(out, "  note: {}/{}: {}", n.backend, n.variant, n.message);
    }
    if let Some(c) = &sweep.crossover {
        let show =
            |x: &Option<(String, &str)>| x.as_ref().map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"));
        let _ = writeln!(out, "  crossover, data resident on the GPU: {}", show(&c.resident));
        let _ = writeln!(out, "  crossover, data on the host:         {}", show(&c.host));
        let _ = writeln!(out, "  {}", c.verdict);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: &str, backend: &'static str, kernel: f64, e2e: f64) -> Row {
        Row {
            workload: "square",
            size: size.into(),
            elements: size.parse().unwrap_or(1),
            backend,
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
        let mut failed = row("10", "cuda", 0.5, 0.5);
        failed.check = "FAILED: element 3: expected 1, got 2".into();
        let sweep = WorkloadSweep {
            workload: "square",
            rows: vec![row("10", "cpu", 1.0, 1.0), failed],
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
            row("10", "cpu", 1.0, 1.0),
            row("10", "cuda", 2.0, 9.0),
            row("100", "cpu", 10.0, 10.0),
            row("100", "cuda", 5.0, 90.0),
            row("1000", "cpu", 100.0, 100.0),
            row("1000", "cuda", 20.0, 900.0),
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.resident, Some(("100".into(), "cuda")));
        assert_eq!(c.host, None);
        assert!(c.verdict.contains("never GPU-worthy in this range when the data starts on the host"), "{}", c.verdict);
        assert!(c.verdict.contains("from 100 when the data already lives on the GPU"), "{}", c.verdict);
    }

    #[test]
    fn a_win_that_does_not_last_is_no_crossover() {
        let rows = vec![
            row("10", "cpu", 1.0, 1.0),
            row("10", "wgpu", 0.5, 0.5),
            row("100", "cpu", 10.0, 10.0),
            row("100", "wgpu", 20.0, 20.0),
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.resident, None);
        assert_eq!(c.host, None);
    }

    #[test]
    fn no_gpu_means_no_crossover() {
        assert!(crossover(&[row("10", "cpu", 1.0, 1.0)]).is_none());
    }
}
