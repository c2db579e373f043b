//! Where a GPU starts to win, and the verdict in plain words, from a sweep's rows.
//!
//! A crossover is the smallest size from which a GPU beats the best CPU variant at every larger size where both were
//! measured, computed twice: *resident* (the GPU's kernel against the CPU's, as when the data already lives on the GPU)
//! and *host* (the GPU's upload + kernel + download against the CPU's kernel, as when the data starts and ends in host
//! memory, through the GPU's faster transfer mode where the sweep measured its pipelined path too, and labelled so).
//! Only full-precision variants on devices that are GPUs count; each reduced precision measured (TF32, bf16, fp16)
//! gives its own crossovers beside, with its variants allowed, so that a reader sees how far precision moves them.

use std::time::Duration;

use gpuworthy_core::{BackendKind, Precision};
use serde::Serialize;

use crate::device::DeviceLabel;
use crate::measure::duration;
use crate::measure::names::SizeLabel;
use crate::model::rows::{Row, best, cpu_label, labels, sizes};
use crate::model::{Model, Phase, Prediction, deciding_phase};

/// The size from which a GPU wins at every larger size measured, and that GPU's label; `None` when none does.
pub type Crossing = Option<(SizeLabel, String)>;

/// A crossing as reports write it: `16777216 (cuda)`, or `none in range`.
pub fn describe(crossing: &Crossing) -> String {
    crossing.as_ref().map_or("none in range".to_owned(), |(size, gpu)| format!("{size} ({gpu})"))
}

/// Where a GPU starts to beat the best CPU variant.
#[derive(Debug, Clone, Serialize)]
pub struct Crossover {
    /// With data resident on the GPU: the smallest size from which a GPU's kernel beats the CPU at every larger
    /// size, and that GPU backend's label; `None` when no GPU does in the range measured.
    pub resident: Crossing,
    /// With data on the host: the same with the GPU's end-to-end time.
    pub host: Crossing,
    /// For each reduced precision the sweep measured (in [`Precision::ALL`]'s order), the crossovers with that
    /// precision's variants allowed beside the full-precision ones.
    pub by_precision: Vec<PrecisionCrossover>,
    /// The verdict in plain words.
    pub verdict: String,
}

/// The crossovers with the variants of one reduced precision allowed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionCrossover {
    /// The precision allowed.
    #[serde(serialize_with = "crate::model::rows::precision_label")]
    pub precision: Precision,
    /// With data resident on the GPU.
    pub resident: Crossing,
    /// With data on the host.
    pub host: Crossing,
}

/// The smallest size from which `gpu` beats the CPU at every larger size where both were measured.
fn crossover_of(rows: &[Row], gpu: &DeviceLabel, time: &impl Fn(&Row) -> f64) -> Option<SizeLabel> {
    let mut from: Option<SizeLabel> = None;
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

/// A crossover found in rows: the size, and the GPU that crossed there.
type Found = Option<(SizeLabel, DeviceLabel)>;

/// The earliest crossovers of any GPU in `rows`: with data resident (kernel times), and with data on the host
/// (end-to-end times).
fn earliest_crossovers(rows: &[Row], gpus: &[DeviceLabel]) -> (Found, Found) {
    let all_sizes = sizes(rows);
    let position = |size: &Option<SizeLabel>| {
        size.as_ref().map_or(usize::MAX, |s| all_sizes.iter().position(|x| x == s).unwrap_or(usize::MAX))
    };
    let earliest = |time: &dyn Fn(&Row) -> f64| {
        gpus.iter()
            .map(|g| (crossover_of(rows, g, &time), g.clone()))
            .min_by_key(|(size, _)| position(size))
            .and_then(|(size, g)| size.map(|s| (s, g)))
    };
    (earliest(&|r: &Row| r.kernel_s), earliest(&Row::host_time))
}

/// Crossovers as reports write them: the host crossing names the transfer mode when the pipelined path is what
/// crossed (`cuda, pipelined`).
fn written(rows: &[Row], (resident, host): &(Found, Found)) -> (Crossing, Crossing) {
    let resident = resident.as_ref().map(|(size, gpu)| (size.clone(), gpu.to_string()));
    let host = host.as_ref().map(|(size, gpu)| {
        let mode = best(rows, size, gpu, Row::host_time).map_or("pageable", Row::host_transfer);
        (size.clone(), if mode == "pageable" { gpu.to_string() } else { format!("{gpu}, {mode}") })
    });
    (resident, host)
}

/// The crossovers and verdict of one workload's rows; `None` without both a CPU row and a GPU backend's row.
pub fn crossover(rows: &[Row]) -> Option<Crossover> {
    if !rows.iter().any(|r| r.backend.is_gpu()) || !rows.iter().any(|r| r.backend == BackendKind::Cpu) {
        return None;
    }
    let workload = &rows[0].workload;
    let gpus = labels(rows, |r| r.on_gpu);
    if gpus.is_empty() {
        let adapters: Vec<String> = labels(rows, |r| r.backend.is_gpu()).iter().map(ToString::to_string).collect();
        let adapters = adapters.join(", ");
        return Some(Crossover {
            resident: None,
            host: None,
            by_precision: Vec::new(),
            verdict: format!(
                "{workload}: no GPU was measured ({adapters} runs on a CPU adapter, not a GPU), so there is no crossover."
            ),
        });
    }
    // Crossovers and the verdict compare full-precision variants with the (full-precision) CPU; reduced-precision
    // ones are given beside, labelled, where they move a crossover.
    let full: Vec<Row> =
        rows.iter().filter(|r| r.is_full_precision() && (r.on_gpu || r.backend == BackendKind::Cpu)).cloned().collect();
    let found = earliest_crossovers(&full, &gpus);
    let by_precision: Vec<PrecisionCrossover> = Precision::ALL
        .into_iter()
        .filter(|p| p.is_reduced() && rows.iter().any(|r| r.precision == *p))
        .map(|precision| {
            let allowed: Vec<Row> = rows
                .iter()
                .filter(|r| {
                    (r.on_gpu || r.backend == BackendKind::Cpu) && (r.is_full_precision() || r.precision == precision)
                })
                .cloned()
                .collect();
            let (resident, host) = written(&allowed, &earliest_crossovers(&allowed, &gpus));
            PrecisionCrossover { precision, resident, host }
        })
        .collect();
    let mut verdict = verdict(&full, &gpus, &found);
    let (resident, host) = written(&full, &found);
    let moved: Vec<String> = by_precision
        .iter()
        .filter(|c| (&c.resident, &c.host) != (&resident, &host))
        .map(|c| {
            format!("in {}, resident from {}, host from {}", c.precision, describe(&c.resident), describe(&c.host))
        })
        .collect();
    if !moved.is_empty() {
        verdict.push_str(&format!(
            " With reduced-precision kernels, which this verdict leaves out: {}.",
            moved.join("; ")
        ));
    }
    Some(Crossover { resident, host, by_precision, verdict })
}

/// The verdict: when the GPU is worth it, with the figures that say why, at the largest size both measured.
fn verdict(rows: &[Row], gpus: &[DeviceLabel], (resident, host): &(Found, Found)) -> String {
    let workload = &rows[0].workload;
    let all_sizes = sizes(rows);
    let cpu_label = cpu_label();
    // The largest size with a CPU row and a row of the GPU that matters (the crossover's, else the fastest one).
    let gpu = host.as_ref().or(resident.as_ref()).map_or(&gpus[0], |(_, g)| g);
    let Some(size) = all_sizes
        .iter()
        .rev()
        .find(|s| best(rows, s, &cpu_label, Row::host_time).is_some() && best(rows, s, gpu, |r| r.kernel_s).is_some())
    else {
        return format!("{workload}: the CPU and the GPU were never measured at the same size.");
    };
    let cpu = best(rows, size, &cpu_label, Row::host_time).expect("found above");
    let kernel = best(rows, size, gpu, |r| r.kernel_s).expect("found above");
    let end_to_end = best(rows, size, gpu, Row::host_time).expect("found above");
    // Why the GPU loses with the data on the host: the model's rule (as `auto` explains its choices), on the phases
    // measured here, with each kernel's launch overhead from the model fitted to these rows.
    let model = Model::from_rows(rows);
    let launch_of = |r: &Row| {
        model
            .devices
            .iter()
            .find(|d| d.label == r.label)
            .and_then(|d| d.workloads.iter().find(|w| w.workload == r.workload))
            .and_then(|w| w.variants.iter().find(|v| v.variant == r.variant))
            .map_or(0.0, |v| v.kernel.fit.fixed_s.min(r.kernel_s))
    };
    let measured = |r: &Row, moves: bool| Prediction {
        device: r.label.clone(),
        is_gpu: r.on_gpu,
        variant: r.variant.clone(),
        upload_s: if moves { r.upload_s } else { 0.0 },
        launch_s: launch_of(r),
        kernel_s: r.kernel_s,
        download_s: if moves { r.download_s } else { 0.0 },
        total_s: if moves { r.host_time() } else { r.kernel_s },
        pipelined: moves && r.host_transfer() == "pipelined",
    };
    let mut gpu_on_host = measured(end_to_end, true);
    gpu_on_host.launch_s = launch_of(kernel);
    gpu_on_host.kernel_s = kernel.kernel_s;
    let host_phase = deciding_phase(&measured(cpu, false), &gpu_on_host);
    let on_host = HostVerdict { cpu, kernel, end_to_end, launch_s: launch_of(kernel), phase: host_phase };
    let host_part = host_sentence(host, size, gpu, &on_host);
    let resident_part = resident_sentence(rows, resident, size, gpu, cpu, kernel);
    format!("{workload}: {host_part}; {resident_part}.")
}

/// The rows and the deciding phase a verdict's host half reads ([`host_sentence`]).
struct HostVerdict<'a> {
    /// The CPU's fastest row at the size.
    cpu: &'a Row,
    /// The GPU's fastest kernel there.
    kernel: &'a Row,
    /// The GPU's fastest run from the host there.
    end_to_end: &'a Row,
    /// That kernel's launch overhead, from the model fitted to the rows.
    launch_s: f64,
    /// The phase that decides between the CPU and the GPU from the host.
    phase: Phase,
}

/// The host half of a verdict: from which size the GPU wins with the data on the host, or, where it never does in
/// the range, the phase that keeps it behind at `size`.
fn host_sentence(host: &Found, size: &SizeLabel, gpu: &DeviceLabel, v: &HostVerdict<'_>) -> String {
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    let HostVerdict { cpu, kernel, end_to_end, launch_s, phase } = *v;
    match host {
        Some((from, g)) => format!(
            "GPU-worthy from {from} even when the data starts on the host ({g} end-to-end {} against the CPU's {} at {size}: {:.1}x)",
            t(end_to_end.host_time()),
            t(cpu.kernel_s),
            cpu.kernel_s / end_to_end.host_time()
        ),
        None if phase == Phase::LaunchOverhead => format!(
            "never GPU-worthy in this range when the data starts on the host: at {size}, launching {gpu}'s kernel \
         ({}, of which {} is launch overhead) takes longer than the CPU's whole pass ({}, {})",
            t(kernel.kernel_s),
            t(launch_s),
            cpu.variant,
            t(cpu.kernel_s)
        ),
        None if phase == Phase::Kernel => format!(
            "never GPU-worthy in this range when the data starts on the host: at {size}, {gpu}'s fastest kernel alone \
         ({}, {}) takes longer than the CPU's whole pass ({}, {}), before any transfer",
            kernel.variant,
            t(kernel.kernel_s),
            cpu.variant,
            t(cpu.kernel_s)
        ),
        None if end_to_end.host_transfer() == "pipelined" => format!(
            "never GPU-worthy in this range when the data starts on the host: at {size}, even {gpu}'s pipelined run \
         (transfers overlapped with the kernel) takes {} while the CPU's whole pass ({}) takes {}",
            t(end_to_end.host_time()),
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
    }
}

/// The resident half of a verdict: from which size the GPU wins with the data already on it, or the CPU's lead at
/// `size`.
fn resident_sentence(
    rows: &[Row],
    resident: &Found,
    size: &SizeLabel,
    gpu: &DeviceLabel,
    cpu: &Row,
    kernel: &Row,
) -> String {
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    match resident {
        Some((from, g)) => {
            let k = best(rows, size, g, |r| r.kernel_s).unwrap_or(kernel);
            format!(
                "GPU-worthy from {from} when the data already lives on the GPU ({g} {} {} against {}: {:.0}x at {size})",
                kernel_of(&k.variant),
                t(k.kernel_s),
                t(cpu.kernel_s),
                cpu.kernel_s / k.kernel_s
            )
        }
        None => format!(
            "the CPU wins even with the data resident on the GPU ({gpu} {} {} against {} at {size})",
            kernel_of(&kernel.variant),
            t(kernel.kernel_s),
            t(cpu.kernel_s)
        ),
    }
}

/// A variant's kernel as a verdict names it: `vec4 kernel`, or `kernel` alone for a variant named so (a raw kernel's).
fn kernel_of(variant: &str) -> String {
    if variant == "kernel" { variant.to_owned() } else { format!("{variant} kernel") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw kernel's variant is called `kernel`: the verdict does not say "kernel kernel".
    #[test]
    fn a_kernel_is_named_once_in_a_verdict() {
        assert_eq!(kernel_of("kernel"), "kernel");
        assert_eq!(kernel_of("vec4"), "vec4 kernel");
    }

    fn row(size: &str, backend: BackendKind, kernel: f64, e2e: f64) -> Row {
        Row::with_times("square", size, backend, kernel, e2e)
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

    /// A GPU whose pageable run loses but whose pipelined run wins crosses on the host through the pipelined path,
    /// and the crossing says so; where the pipelined path also loses, the verdict names it.
    #[test]
    fn the_host_crossover_takes_the_faster_transfer_mode_and_names_it() {
        let pipelined =
            |size, kernel, e2e, piped| Row { pipelined_s: Some(piped), ..row(size, BackendKind::Cuda, kernel, e2e) };
        let rows = vec![
            row("10", BackendKind::Cpu, 1.0, 1.0),
            pipelined("10", 0.1, 9.0, 2.0),
            row("100", BackendKind::Cpu, 10.0, 10.0),
            pipelined("100", 0.5, 30.0, 8.0),
            row("1000", BackendKind::Cpu, 100.0, 100.0),
            pipelined("1000", 5.0, 300.0, 60.0),
        ];
        let c = crossover(&rows).unwrap();
        assert_eq!(c.host, Some(("100".into(), "cuda, pipelined".into())));
        assert!(c.verdict.contains("end-to-end 60.0 s"), "{}", c.verdict);
        let slower = vec![row("10", BackendKind::Cpu, 1.0, 1.0), pipelined("10", 0.1, 9.0, 3.0)];
        let c = crossover(&slower).unwrap();
        assert_eq!(c.host, None);
        assert!(c.verdict.contains("pipelined run"), "{}", c.verdict);
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
    fn a_cpu_adapter_is_never_called_a_gpu() {
        let mut lavapipe = row("10", BackendKind::Wgpu, 0.5, 0.6);
        lavapipe.on_gpu = false;
        lavapipe.label = DeviceLabel::named("wgpu(cpu)");
        let c = crossover(&[row("10", BackendKind::Cpu, 1.0, 1.0), lavapipe]).unwrap();
        assert_eq!((c.resident, c.host), (None, None));
        assert!(c.verdict.contains("no GPU was measured") && !c.verdict.contains("GPU-worthy"), "{}", c.verdict);
    }

    #[test]
    fn reduced_precision_neither_sets_the_crossover_nor_goes_unlabelled() {
        let mut tf32 = row("100", BackendKind::Cuda, 1.0, 1.0);
        tf32.precision = gpuworthy_core::Precision::Tf32;
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
        assert_eq!(c.by_precision.len(), 1);
        assert_eq!(c.by_precision[0].precision, gpuworthy_core::Precision::Tf32);
        assert_eq!(c.by_precision[0].resident, Some(("100".into(), "cuda".into())));
        assert!(
            c.verdict.contains("reduced-precision kernels") && c.verdict.contains("in tf32, resident from 100 (cuda)"),
            "{}",
            c.verdict
        );
        assert!(!c.verdict.contains("tf32 kernel"), "{}", c.verdict);
    }

    #[test]
    fn a_slow_kernel_is_named_as_the_reason_not_the_transfer() {
        let rows = vec![row("10", BackendKind::Cpu, 1.0, 1.0), row("10", BackendKind::Wgpu, 5.0, 5.5)];
        let c = crossover(&rows).unwrap();
        assert!(c.verdict.contains("kernel alone") && !c.verdict.contains("moving about"), "{}", c.verdict);
    }

    #[test]
    fn a_launch_bound_gpu_is_named_as_such() {
        let mut rows = Vec::new();
        for (size, cpu, gpu) in [("1000", 1e-6, 10.0e-6), ("4000", 2e-6, 10.1e-6), ("16000", 4e-6, 10.4e-6)] {
            let mut c = row(size, BackendKind::Cpu, cpu, cpu);
            let mut g = row(size, BackendKind::Cuda, gpu, 3.0 * gpu);
            c.bytes = size.parse().unwrap();
            g.bytes = c.bytes;
            rows.extend([c, g]);
        }
        let c = crossover(&rows).unwrap();
        assert!(c.verdict.contains("launch overhead"), "{}", c.verdict);
    }

    #[test]
    fn no_gpu_means_no_crossover() {
        assert!(crossover(&[row("10", BackendKind::Cpu, 1.0, 1.0)]).is_none());
    }
}
