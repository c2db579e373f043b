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

use crate::calibration::Calibration;
use crate::device::DeviceLabel;
use crate::model::{Model, Placement, Prediction};
use crate::rows::Row;

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
    ReferenceMachine { name: "nvidia-h100", json: include_str!("../reference/nvidia-h100.json") },
    ReferenceMachine { name: "nvidia-h200", json: include_str!("../reference/nvidia-h200.json") },
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
        let reference = self.calibration()?.model;
        Ok(combine(local, &reference))
    }

    /// What this reference machine's GPUs would have done with the sizes of `rows` (one workload's sweep on this
    /// machine, with its CPU): the predicted crossovers, resident and from the host, and the prediction at the largest
    /// size. `None` when the rows do not give the CPU a curve (fewer than two sizes) or the reference machine does
    /// not know the workload.
    pub fn what_it_would_do(&self, rows: &[Row]) -> Result<Option<WhatItWouldDo>> {
        let Some(workload) = rows.first().map(|r| r.workload) else { return Ok(None) };
        let model = self.beside(&Model::from_rows(rows))?;
        let cpu_knows = model.devices.iter().any(|d| !d.is_gpu && d.workloads.iter().any(|w| w.workload == workload));
        let gpu_knows = model.devices.iter().any(|d| d.is_gpu && d.workloads.iter().any(|w| w.workload == workload));
        if !cpu_knows || !gpu_knows {
            return Ok(None);
        }
        let mut sizes: Vec<(String, Cost)> = Vec::new();
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
/// (its GPUs' share of the uncertainty; this CPU's was never evaluated beside them).
pub fn combine(local: &Model, reference: &Model) -> Model {
    let gpus: Vec<&DeviceLabel> = reference.devices.iter().filter(|d| d.is_gpu).map(|d| &d.label).collect();
    let cpu = BackendKind::Cpu.name();
    let mut devices: Vec<_> =
        local.devices.iter().filter(|d| !d.is_gpu && d.backend == cpu && !gpus.contains(&&d.label)).cloned().collect();
    devices.extend(reference.devices.iter().filter(|d| d.is_gpu).cloned());
    let kept: Vec<&DeviceLabel> = devices.iter().map(|d| &d.label).collect();
    let mut rates: Vec<_> = local
        .rates
        .iter()
        .filter(|r| local.devices.iter().any(|d| d.label == r.label && !d.is_gpu) && kept.contains(&&r.label))
        .cloned()
        .collect();
    rates.extend(reference.rates.iter().filter(|r| gpus.contains(&&r.label)).cloned());
    Model { devices, error: reference.error.clone(), rates }
}

/// What a reference machine's GPUs would have done with one workload's sizes ([`ReferenceMachine::what_it_would_do`]).
#[derive(Debug, Clone)]
pub struct WhatItWouldDo {
    /// The predicted crossover with the data resident on the GPU: the size and the GPU.
    pub resident: Option<(String, DeviceLabel)>,
    /// The predicted crossover with the data on the host.
    pub host: Option<(String, DeviceLabel)>,
    /// The largest size.
    pub largest: String,
    /// Each device's prediction at the largest size with the data resident, fastest first.
    pub at_largest_resident: Vec<Prediction>,
    /// Each device's prediction at the largest size with the data on the host, fastest first.
    pub at_largest_host: Vec<Prediction>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::Curve;
    use crate::model::{DeviceModel, WorkloadModel};

    #[test]
    fn every_reference_calibration_parses_and_knows_every_builtin_workload_on_a_gpu() {
        for machine in REFERENCE_MACHINES {
            let calibration = machine.calibration().unwrap();
            let gpus: Vec<&DeviceModel> = calibration.model.devices.iter().filter(|d| d.is_gpu).collect();
            assert!(!gpus.is_empty(), "{} has no GPU", machine.name);
            for workload in crate::catalog::Catalog::builtin().names() {
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
            backend: label.split('(').next().unwrap_or(label).to_owned(),
            is_gpu,
            workloads: vec![WorkloadModel {
                workload: "square".into(),
                upload: Curve::default(),
                download: Curve::default(),
                upload_pinned: None,
                download_pinned: None,
                pipelined: None,
                variants: Vec::new(),
            }],
            stream_s_per_byte: None,
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
