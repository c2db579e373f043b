//! Reference machines: calibrations of GPU machines, measured with this version of gpuworthy and shipped inside it,
//! so that a reader without a GPU can ask what one would do with their work.
//!
//! A prediction "on" a reference machine combines two models: this machine's CPU (from its own calibration, or from
//! rows measured a moment ago) and the reference machine's GPUs with their own host link (the transfers over that
//! machine's PCIe bus, measured there). Neither half is extrapolated from the other: the CPU curves are this CPU's,
//! the GPU curves are that GPU's. What the combination cannot know is how this machine's memory would feed that GPU's
//! bus; every answer made from it says that it is a prediction, from which machine, measured when.
//!
//! The calibrations are the JSON `gpuworthy calibrate` writes, compiled in with `include_str!` and parsed on use: a
//! new reference machine is one file and one entry in [`REFERENCE_MACHINES`].

use gpuworthy_core::{BackendKind, Cost, Error, Result};

use crate::device::DeviceLabel;
use crate::measure::names::SizeLabel;
use crate::model::calibration::Calibration;
use crate::model::rows::Row;
use crate::model::{DeviceModel, Model, Placement, Prediction};

/// A GPU machine whose calibration ships with gpuworthy.
#[derive(Debug, Clone, Copy)]
pub struct ReferenceMachine {
    /// The name `--on` takes.
    pub name: &'static str,
    /// Its calibration, as `gpuworthy calibrate` wrote it.
    json: &'static str,
}

/// The reference machines, the first the default.
pub const REFERENCE_MACHINES: &[ReferenceMachine] = &[
    ReferenceMachine { name: "nvidia-h100", json: include_str!("../../reference/nvidia-h100.json") },
    ReferenceMachine { name: "nvidia-h200", json: include_str!("../../reference/nvidia-h200.json") },
    // Two H200s of one host: calibrated with the host's contention between its GPUs and its CPU, so that a group's
    // prediction (`explain --on nvidia-h200-x2`) knows what the host carries for two at once.
    ReferenceMachine { name: "nvidia-h200-x2", json: include_str!("../../reference/nvidia-h200-x2.json") },
];

/// The reference machine named `name`; an error lists the known names.
pub fn find(name: &str) -> Result<&'static ReferenceMachine> {
    REFERENCE_MACHINES.iter().find(|m| m.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
        let known: Vec<&str> = REFERENCE_MACHINES.iter().map(|m| m.name).collect();
        Error::invalid(format!("no reference machine is named `{name}`; known: {}", known.join(", ")))
    })
}

impl ReferenceMachine {
    /// The machine's calibration.
    pub fn calibration(&self) -> Result<Calibration> {
        serde_json::from_str(self.json)
            .map_err(|e| Error::invalid(format!("the reference calibration of {} is unreadable: {e}", self.name)))
    }

    /// How an answer made from this machine is labelled: its name, its GPU and host (from the calibration's
    /// fingerprint), and when it was measured, with which version of gpuworthy.
    pub fn attribution(&self) -> Result<String> {
        let calibration = self.calibration()?;
        let fingerprint = &calibration.fingerprint;
        let day = calibration.measured_utc.split_whitespace().next().unwrap_or(&calibration.measured_utc).to_owned();
        // "cuda: NVIDIA H100 80GB HBM3 (CUDA driver ...)" -> "NVIDIA H100 80GB HBM3".
        let gpu = fingerprint
            .devices
            .first()
            .map(|d| {
                let name = d.split_once(": ").map_or(d.as_str(), |(_, name)| name);
                name.split(" (").next().unwrap_or(name).to_owned()
            })
            .unwrap_or_else(|| "no GPU".to_owned());
        let threads = fingerprint.cpu_backend.rsplit(", ").next().unwrap_or_default();
        Ok(format!(
            "{} ({gpu}; host {}, {threads}), calibrated {day} with gpuworthy {}",
            self.name, fingerprint.cpu, fingerprint.gpuworthy_version
        ))
    }

    /// This machine's CPU (the devices of `local` that are not GPUs, and the CPU's rates) with this reference
    /// machine's GPUs and their rates: the model of "this CPU beside that GPU".
    pub fn beside(&self, local: &Model) -> Result<Model> {
        self.beside_as(local, &WhatIf::default())
    }

    /// As [`ReferenceMachine::beside`], with this machine's GPUs changed as `what_if` describes.
    pub fn beside_as(&self, local: &Model, what_if: &WhatIf) -> Result<Model> {
        what_if.validate()?;
        let mut reference = self.calibration()?.model;
        // The contention only: the copies a member is charged need this calibration's own record of which parts its
        // devices read in place, which a calibration older than that record does not have.
        if let Some((_, host)) = self.contention_measured_elsewhere()? {
            reference.contention = host.contention;
        }
        Ok(combine(local, &what_if.apply(&reference)))
    }

    /// Where this machine's calibration measured no set of its GPUs at once (one GPU on its host), the reference
    /// machine whose host did, with the same GPUs (`nvidia-h200-x2` for `nvidia-h200`), and its model: a group on this
    /// machine is predicted with the contention measured there. `None` where this machine measured its own, or no
    /// other machine has its GPUs.
    pub fn contention_measured_elsewhere(&self) -> Result<Option<(&'static str, Model)>> {
        let own = self.calibration()?;
        if !own.model.contention.is_empty() {
            return Ok(None);
        }
        // A GPU as its fingerprint names it, less its driver: `cuda: NVIDIA H200`.
        let gpus = |c: &Calibration| -> Vec<String> {
            c.fingerprint.devices.iter().map(|d| d.split(" (").next().unwrap_or(d).to_owned()).collect()
        };
        for other in REFERENCE_MACHINES.iter().filter(|m| m.name != self.name) {
            let theirs = other.calibration()?;
            if !theirs.model.contention.is_empty() && gpus(&theirs) == gpus(&own) {
                return Ok(Some((other.name, theirs.model)));
            }
        }
        Ok(None)
    }

    /// What this reference machine's GPUs would have done with the sizes of `rows` (one workload's sweep on this
    /// machine, with its CPU): the predicted crossovers, resident and from the host, and the prediction at the largest
    /// size. `None` when the rows do not give the CPU a curve (fewer than two sizes) or the reference machine does
    /// not know the workload.
    pub fn what_it_would_do(&self, rows: &[Row]) -> Result<Option<WhatItWouldDo>> {
        let Some(workload) = rows.first().map(|r| r.workload.as_str()) else { return Ok(None) };
        let model = self.beside(&Model::from_rows(rows))?;
        // A device knows the workload where it has a fitted curve for it: one size swept gives none.
        let knows = |d: &DeviceModel| d.workloads.iter().any(|w| w.workload == workload && !w.variants.is_empty());
        let cpu_knows = model.devices.iter().any(|d| !d.is_gpu && knows(d));
        let gpu_knows = model.devices.iter().any(|d| d.is_gpu && knows(d));
        if !cpu_knows || !gpu_knows {
            return Ok(None);
        }
        let mut sizes: Vec<(SizeLabel, Cost)> = Vec::new();
        for r in rows {
            if !sizes.iter().any(|(s, _)| *s == r.size) {
                sizes.push((r.size.clone(), Cost { bytes: r.bytes, flops: r.nominal_flops, elements: r.elements }));
            }
        }
        let Some((largest, cost)) = sizes.last().cloned() else { return Ok(None) };
        Ok(Some(WhatItWouldDo {
            resident: model.crossover(workload, &sizes, Placement::Resident),
            host: model.crossover(workload, &sizes, Placement::Host),
            largest,
            at_largest_resident: model.predict(workload, &cost, Placement::Resident),
            at_largest_host: model.predict(workload, &cost, Placement::Host),
        }))
    }
}

/// The CPU of `local` (the CPU backend's device; a CPU adapter such as lavapipe is left out, as any GPU of this
/// machine is), with `reference`'s GPUs; the CPU's rates with the GPUs'. The error kept is the reference machine's
/// (its GPUs' share of the uncertainty; this CPU's was never evaluated beside them), and so is how its host slowed
/// device sets run at once (its GPUs' links and that host's memory: this CPU's memory beside them was never measured).
pub fn combine(local: &Model, reference: &Model) -> Model {
    let gpus: Vec<&DeviceLabel> = reference.devices.iter().filter(|d| d.is_gpu).map(|d| &d.label).collect();
    let mut devices: Vec<_> = local
        .devices
        .iter()
        .filter(|d| !d.is_gpu && d.backend == BackendKind::Cpu && !gpus.contains(&&d.label))
        .cloned()
        .collect();
    devices.extend(reference.devices.iter().filter(|d| d.is_gpu).cloned());
    let kept: Vec<&DeviceLabel> = devices.iter().map(|d| &d.label).collect();
    let mut rates: Vec<_> = local
        .rates
        .iter()
        .filter(|r| local.devices.iter().any(|d| d.label == r.label && !d.is_gpu) && kept.contains(&&r.label))
        .cloned()
        .collect();
    rates.extend(reference.rates.iter().filter(|r| gpus.contains(&&r.label)).cloned());
    Model {
        devices,
        error: reference.error.clone(),
        rates,
        contention: reference.contention.clone(),
        host_copy_s_per_byte: reference.host_copy_s_per_byte,
        allowed: local.allowed.clone(),
    }
}

/// A GPU that was never measured, described by how it differs from a reference machine's: its memory's streaming
/// rate, its arithmetic as a share of the reference GPU's, its link to the host, or memory it shares with the CPU
/// (Apple silicon, an integrated GPU). [`WhatIf::apply`] turns the reference GPU's measured curves into this GPU's
/// predicted ones by the roofline's two bounds, and nothing more:
///
/// - a kernel takes at least its reference time above the launch, divided by the share of arithmetic (as if every
///   kernel were compute-bound, which is pessimistic for memory-bound ones only where the share is below the memory
///   ratio), and at least its bytes at the new memory rate; the launch overhead stays the reference's;
/// - a transfer's time above its fixed cost grows by the ratio of the reference link's rate for it (at its largest
///   calibrated size, half of the workload's bytes taken to cross each way) to the new one, and shared memory needs no
///   transfer at all;
/// - the pipelined path is left out: how its overlap would change is not something two bounds can say.
///
/// Everything it predicts is labelled a what-if: no GPU of that kind was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WhatIf {
    /// The GPU memory's streaming rate, bytes per second (`None`: the reference GPU's).
    pub memory_bytes_per_s: Option<f64>,
    /// The GPU's arithmetic as a share of the reference GPU's, in (0, 1] or above (`None`: the same).
    pub compute_share: Option<f64>,
    /// The link to the host, bytes per second each way (`None`: the reference machine's).
    pub link_bytes_per_s: Option<f64>,
    /// Memory shared with the CPU: nothing is copied, data on the host is data on the GPU.
    pub unified: bool,
}

impl WhatIf {
    /// Whether anything differs from the reference GPU.
    pub fn is_some(&self) -> bool {
        self.memory_bytes_per_s.is_some()
            || self.compute_share.is_some()
            || self.link_bytes_per_s.is_some()
            || self.unified
    }

    /// Refuses rates that are not positive finite numbers, naming the one.
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("the GPU memory's rate", self.memory_bytes_per_s),
            ("the share of arithmetic", self.compute_share),
            ("the host link's rate", self.link_bytes_per_s),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                return Err(Error::invalid(format!("{name} must be a positive number, not {v}")));
            }
        }
        Ok(())
    }

    /// How the GPU differs, in words: `memory 256 GB/s, 25% of the arithmetic, a 12 GB/s link`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.memory_bytes_per_s {
            parts.push(format!("memory {:.0} GB/s", m / 1e9));
        }
        if let Some(c) = self.compute_share {
            parts.push(format!("{:.0}% of the arithmetic", 100.0 * c));
        }
        if self.unified {
            parts.push("memory shared with the CPU (no copies)".to_owned());
        } else if let Some(l) = self.link_bytes_per_s {
            parts.push(format!("a {:.0} GB/s link to the host", l / 1e9));
        }
        parts.join(", ")
    }

    /// `reference`'s GPUs turned into this GPU's ([`WhatIf`] says how); its other devices as they are.
    pub fn apply(&self, reference: &Model) -> Model {
        let mut model = reference.clone();
        for device in model.devices.iter_mut().filter(|d| d.is_gpu) {
            let new_s_per_byte = self.memory_bytes_per_s.map(|rate| 1.0 / rate);
            let share = self.compute_share.unwrap_or(1.0);
            if let Some(s) = new_s_per_byte {
                device.stream_s_per_byte = Some(device.stream_s_per_byte.map_or(s, |old| old.max(s)));
            }
            for workload in &mut device.workloads {
                for variant in &mut workload.variants {
                    let curve = &mut variant.kernel;
                    let fixed = curve.fit.fixed_s;
                    for point in &mut curve.points {
                        let launch = fixed.min(point.2);
                        let memory = new_s_per_byte.map_or(0.0, |s| point.0 as f64 * s);
                        point.2 = launch + ((point.2 - launch) / share).max(memory);
                    }
                    curve.fit.per_flop_s /= share;
                    curve.fit.per_byte_s /= share;
                    if let Some(s) = new_s_per_byte {
                        curve.fit.per_byte_s = curve.fit.per_byte_s.max(s);
                    }
                }
                // The streaming probes (seconds per byte past the ladder) stream no faster than the new memory.
                if let (Some(s), Some(own)) = (new_s_per_byte, workload.streaming.as_mut()) {
                    for probe in &mut own.probes {
                        probe.1 = probe.1.max(s);
                    }
                }
                // A compute probe changes as its variant's calibrated points did.
                if let Some(probe) = workload.compute_probe.as_mut() {
                    let fixed = workload
                        .variants
                        .iter()
                        .find(|v| v.variant == probe.variant)
                        .map_or(0.0, |v| v.kernel.fit.fixed_s);
                    let launch = fixed.min(probe.seconds);
                    let memory = new_s_per_byte.map_or(0.0, |s| probe.bytes as f64 * s);
                    probe.seconds = launch + ((probe.seconds - launch) / share).max(memory);
                }
                if self.unified {
                    workload.upload = crate::model::fit::Curve::default();
                    workload.download = crate::model::fit::Curve::default();
                    workload.upload_pinned = None;
                    workload.download_pinned = None;
                } else if let Some(link) = self.link_bytes_per_s {
                    for curve in [&mut workload.upload, &mut workload.download]
                        .into_iter()
                        .chain(workload.upload_pinned.as_mut())
                        .chain(workload.download_pinned.as_mut())
                    {
                        // The reference link's rate for this transfer, at its largest calibrated size, taking half of
                        // the cost's bytes to cross each way (square's input up and its output down; a workload
                        // that moves more one way than the other is off by that share).
                        let fixed = curve.fit.fixed_s;
                        let Some(&(bytes, _, t)) = curve.points.last() else { continue };
                        let above = t - fixed.min(t);
                        if above <= 0.0 {
                            continue;
                        }
                        let ratio = (bytes as f64 / 2.0 / above / link).max(1.0);
                        for point in &mut curve.points {
                            let base = fixed.min(point.2);
                            point.2 = base + (point.2 - base) * ratio;
                        }
                        curve.fit.per_byte_s *= ratio;
                    }
                }
                if self.is_some() {
                    workload.pipelined = None;
                }
                // A whole run's overhead was measured over the reference's own link: a link of another speed, or
                // none, is reasoned about through the phases.
                if self.unified || self.link_bytes_per_s.is_some() {
                    workload.host_overhead = None;
                }
            }
        }
        model
    }
}

/// What a reference machine's GPUs would have done with one workload's sizes ([`ReferenceMachine::what_it_would_do`]).
#[derive(Debug, Clone)]
pub struct WhatItWouldDo {
    /// The predicted crossover with the data resident on the GPU: the size and the GPU.
    pub resident: Option<(SizeLabel, DeviceLabel)>,
    /// The predicted crossover with the data on the host.
    pub host: Option<(SizeLabel, DeviceLabel)>,
    /// The largest size.
    pub largest: SizeLabel,
    /// Each device's prediction at the largest size with the data resident, fastest first.
    pub at_largest_resident: Vec<Prediction>,
    /// Each device's prediction at the largest size with the data on the host, fastest first.
    pub at_largest_host: Vec<Prediction>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceModel, WorkloadModel};

    /// The H100's prediction for `workload` at `cost` on cuda, with the GPU changed as `what_if` says.
    fn cuda_on_h100(what_if: WhatIf, workload: &str, cost: Cost, placement: Placement) -> Prediction {
        let model = find("nvidia-h100").unwrap().beside_as(&Model::default(), &what_if).unwrap();
        model.predict(workload, &cost, placement).into_iter().find(|p| p.device.as_str() == "cuda").unwrap()
    }

    #[test]
    fn a_what_if_gpu_follows_the_roofline_bounds() {
        let square = Cost { bytes: 8 << 26, flops: 1 << 26, elements: 1 << 26 };
        let matmul = Cost { bytes: 3 * 4 * (1 << 24), flops: 2 << 36, elements: 1 << 24 };
        let same = WhatIf::default();
        let slow_memory = WhatIf { memory_bytes_per_s: Some(300e9), ..same };
        // A memory-bound kernel takes at least its bytes at the new rate (to within 1%: between two streaming probes
        // the launch is shared out along the bytes); a compute-bound one keeps its time.
        let base = cuda_on_h100(same, "square", square, Placement::Resident).kernel_s;
        let slow = cuda_on_h100(slow_memory, "square", square, Placement::Resident).kernel_s;
        assert!(slow >= 0.99 * (8u64 << 26) as f64 / 300e9 && slow > 5.0 * base, "{base} -> {slow}");
        let base = cuda_on_h100(same, "matmul", matmul, Placement::Resident).kernel_s;
        let slow = cuda_on_h100(slow_memory, "matmul", matmul, Placement::Resident).kernel_s;
        assert!((slow - base).abs() <= 0.05 * base, "matmul is compute-bound: {base} -> {slow}");
        // A quarter of the arithmetic: the compute-bound kernel takes about four times as long.
        let quarter = cuda_on_h100(WhatIf { compute_share: Some(0.25), ..same }, "matmul", matmul, Placement::Resident);
        assert!(quarter.kernel_s > 3.5 * base && quarter.kernel_s < 4.5 * base, "{base} -> {}", quarter.kernel_s);
        // The same at 2048^3, between the calibrated sizes and matmul's compute probe, which changes with them.
        let between = Cost { bytes: 3 * 4 * (1 << 22), flops: 2 << 33, elements: 1 << 22 };
        let base = cuda_on_h100(same, "matmul", between, Placement::Resident).kernel_s;
        let quarter =
            cuda_on_h100(WhatIf { compute_share: Some(0.25), ..same }, "matmul", between, Placement::Resident);
        assert!(quarter.kernel_s > 3.5 * base && quarter.kernel_s < 4.5 * base, "{base} -> {}", quarter.kernel_s);
        // A slower link makes data from the host dearer; shared memory makes it free.
        let host = cuda_on_h100(same, "square", square, Placement::Host);
        let narrow = cuda_on_h100(WhatIf { link_bytes_per_s: Some(2e9), ..same }, "square", square, Placement::Host);
        assert!(narrow.upload_s > 2.0 * host.upload_s, "{} -> {}", host.upload_s, narrow.upload_s);
        let unified = WhatIf { unified: true, ..same };
        let shared = cuda_on_h100(unified, "square", square, Placement::Host);
        let resident = cuda_on_h100(unified, "square", square, Placement::Resident);
        assert!(!shared.pipelined && shared.upload_s == 0.0 && shared.download_s == 0.0);
        assert_eq!(shared.total_s, resident.total_s);
        // Nonsense is refused with its name.
        let e = find("nvidia-h100")
            .unwrap()
            .beside_as(&Model::default(), &WhatIf { memory_bytes_per_s: Some(0.0), ..same });
        assert!(e.unwrap_err().to_string().contains("memory"));
        assert_eq!(slow_memory.describe(), "memory 300 GB/s");
    }

    /// The built-in workloads added after a reference machine was calibrated: `explain --on` says it has no GPU
    /// measurements of them rather than predicting the CPU alone.
    const CALIBRATED_BEFORE: &[(&str, &str)] = &[("nvidia-h100", "scan"), ("nvidia-h200", "scan")];

    /// The one-H200 machine's groups are predicted with the contention its two-H200 host measured; the H100's, whose
    /// GPU no shipped host measured two at once, with none.
    #[test]
    fn a_machine_of_one_gpu_borrows_the_contention_of_a_host_of_the_same_gpus() {
        let h200 = find("nvidia-h200").unwrap();
        let (from, model) = h200.contention_measured_elsewhere().unwrap().expect("nvidia-h200-x2 has the same GPUs");
        assert_eq!(from, "nvidia-h200-x2");
        assert!(!model.contention.is_empty());
        let beside = h200.beside_as(&Model::default(), &WhatIf::default()).unwrap();
        assert_eq!(beside.contention, model.contention);
        assert_eq!(beside.host_copy_s_per_byte, h200.calibration().unwrap().model.host_copy_s_per_byte);
        assert!(find("nvidia-h200-x2").unwrap().contention_measured_elsewhere().unwrap().is_none());
        assert!(find("nvidia-h100").unwrap().contention_measured_elsewhere().unwrap().is_none());
    }

    #[test]
    fn every_reference_calibration_parses_and_knows_every_builtin_workload_on_a_gpu() {
        for machine in REFERENCE_MACHINES {
            let calibration = machine.calibration().unwrap();
            let gpus: Vec<&DeviceModel> = calibration.model.devices.iter().filter(|d| d.is_gpu).collect();
            assert!(!gpus.is_empty(), "{} has no GPU", machine.name);
            for workload in crate::choose::catalog::Catalog::builtin().names() {
                if CALIBRATED_BEFORE.contains(&(machine.name, workload)) {
                    continue;
                }
                assert!(
                    gpus.iter().any(|d| d.workloads.iter().any(|w| w.workload == workload && !w.variants.is_empty())),
                    "{} does not know {workload} on a GPU",
                    machine.name
                );
            }
            assert!(machine.attribution().unwrap().contains(machine.name));
        }
    }

    #[test]
    fn an_unknown_machine_is_refused_with_the_known_names() {
        let e = find("a-toaster").unwrap_err().to_string();
        assert!(e.contains("a-toaster") && e.contains("nvidia-h100"), "{e}");
        assert_eq!(find("NVIDIA-H100").unwrap().name, "nvidia-h100");
    }

    fn device(label: &str, is_gpu: bool) -> DeviceModel {
        DeviceModel {
            label: DeviceLabel::named(label),
            backend: label.split('(').next().unwrap_or(label).parse().unwrap(),
            is_gpu,
            workloads: vec![WorkloadModel::kernels_only("square", Vec::new())],
            stream_s_per_byte: None,
            cache_bytes: None,
        }
    }

    #[test]
    fn the_combination_is_this_cpu_beside_the_reference_gpus() {
        let local = Model {
            devices: vec![device("cpu", false), device("wgpu(cpu)", false), device("cuda", true)],
            ..Model::default()
        };
        let reference = Model {
            devices: vec![device("cpu", false), device("cuda", true), device("wgpu", true)],
            ..Model::default()
        };
        let combined = combine(&local, &reference);
        let labels: Vec<(&str, bool)> = combined.devices.iter().map(|d| (d.label.as_str(), d.is_gpu)).collect();
        // This machine's CPU adapter (lavapipe) and GPU are left out; the reference's CPU is not used.
        assert_eq!(labels, [("cpu", false), ("cuda", true), ("wgpu", true)]);
    }
}
