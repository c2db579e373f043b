//! `auto`: run each call where the calibrated cost model predicts it is fastest, and say why.
//!
//! ```no_run
//! use gpuworthy::core::{Workload, workloads::{Len, Square}};
//!
//! let input = Square::generate(&Len(1 << 20), 1)?;
//! let (output, choice) = gpuworthy::auto::run::<Square>(&input)?;  // data on the host, result wanted there
//! println!("ran on {} ({}): {}", choice.device.label(), choice.variant, choice.reason);
//! # Ok::<(), gpuworthy::core::Error>(())
//! ```
//!
//! The devices are opened once per process ([`Device::all_available`]) and the calibration is loaded once
//! ([`crate::calibration`]). Without a calibration (or with one that is not trusted, which is said once on standard
//! error) the choice is the documented conservative default: the CPU, unless the data is resident and at least
//! [`DEFAULT_RESIDENT_BYTES`], where the best available GPU is chosen. Where the model predicts a device's pipelined
//! path fastest for data on the host, the choice is that device's pipelined twin ([`Device::pipelined`], opened once
//! with the devices), so that [`run`] moves the data as the prediction assumed.

use std::sync::OnceLock;

use gpuworthy_core::{Backend, BackendKind, Error, Result};

use crate::calibration::{Calibration, Loaded, MachineFingerprint, default_path};
use crate::device::{DeviceLabel, DeviceWorkload};
use crate::model::{Model, Placement, Prediction, deciding_phase};
use crate::{Device, Resident};

/// Without a calibration, data resident on a GPU of at least this many bytes stays there.
pub const DEFAULT_RESIDENT_BYTES: u64 = 256 << 20;

/// The devices and model `auto` chooses among.
#[derive(Debug)]
pub struct Auto {
    /// Every device that opened.
    pub devices: Vec<Device>,
    /// The pipelined twin of each device that has one ([`Device::pipelined`]): where the model predicts that path
    /// fastest, the choice runs there.
    pub pipelined: Vec<Device>,
    /// The calibrated model, if this machine has a trusted calibration.
    pub model: Option<Model>,
    /// Why there is no model, when there is none.
    pub uncalibrated: Option<String>,
}

impl Auto {
    /// Opens the devices and loads the calibration (from [`default_path`]).
    pub fn open() -> Result<Auto> {
        let devices = Device::all_available().devices;
        let machine = MachineFingerprint::of(&devices);
        let (model, uncalibrated) = match default_path()? {
            None => (None, Some("no cache directory is known: set GPUWORTHY_CALIBRATION".to_owned())),
            Some(path) => match Calibration::load(&path, &machine) {
                Loaded::Calibrated(c) => (Some(c.model), None),
                Loaded::Missing(path) => (
                    None,
                    Some(format!(
                        "this machine is not calibrated ({} does not exist): run `gpuworthy calibrate`",
                        path.display()
                    )),
                ),
                Loaded::Ignored(why) => (None, Some(why)),
            },
        };
        let pipelined = pipelined_twins(&devices);
        Ok(Auto { devices, pipelined, model, uncalibrated })
    }

    /// With this model (tests, or a model made by hand) on these devices.
    pub fn with_model(devices: Vec<Device>, model: Model) -> Auto {
        let pipelined = pipelined_twins(&devices);
        Auto { devices, pipelined, model: Some(model), uncalibrated: None }
    }

    /// The model's predictions for `W` at `params` with its data at `placement`, fastest first, and how they were
    /// made (empty for the instance's own calibration, else a note that it was predicted from its cost); `None`
    /// without a model that knows the workload or what it resembles. On each device the variant its backend
    /// documents as best is preferred where that device is open here.
    pub fn predict<W: DeviceWorkload>(
        &self,
        params: &W::Params,
        placement: Placement,
    ) -> Option<(Vec<Prediction>, &'static str)> {
        let cost = W::cost(params);
        let devices = &self.devices;
        let preferred =
            |label: &DeviceLabel| devices.iter().find(|d| d.label() == *label).map(|d| d.best_variant::<W>(params));
        // The instance's own calibration (an expression calibrated by `calibrate --expr`, or a built-in workload), else
        // what it resembles (an expression never measured: the base expression's curves and the devices' rates).
        let instance = W::instance(params).unwrap_or_else(|| W::NAME.to_owned());
        self.model.as_ref().and_then(|model| {
            if model.knows(&instance) {
                let moved = |backend: &str, variant: &str| {
                    backend.parse::<BackendKind>().ok().map(|kind| W::traffic(params, kind, variant))
                };
                Some((model.predict_preferring(&instance, &cost, placement, &preferred, &moved), ""))
            } else {
                W::resemblance(params).filter(|r| model.knows(&r.like)).map(|r| {
                    (
                        model.predict_resembling(&r, placement, &preferred),
                        "; a prediction from its cost: never measured",
                    )
                })
            }
        })
    }

    /// The relative difference within which two of this model's predictions are a toss-up.
    pub fn toss_up_margin(&self) -> f64 {
        self.model.as_ref().map_or(crate::model::DEFAULT_TOSS_UP_MARGIN, Model::toss_up_margin)
    }

    /// Where `W` at `params` runs fastest with its data at `placement`, by the model, or by the default without one.
    pub fn choose<W: DeviceWorkload>(&self, params: &W::Params, placement: Placement) -> Result<Choice> {
        let cost = W::cost(params);
        let predicted = self.predict::<W>(params, placement);
        if let Some((predictions, how)) = predicted {
            for (rank, p) in predictions.iter().enumerate() {
                let on = if p.pipelined { &self.pipelined } else { &self.devices };
                let Some(device) = on.iter().find(|d| d.label() == p.device) else { continue };
                let Some(variant) = device.variants::<W>().into_iter().find(|v| *v == p.variant) else { continue };
                if device.check_size::<W>(params).is_err() {
                    continue;
                }
                let margin = self.toss_up_margin();
                let other = predictions.iter().enumerate().find(|(i, _)| *i != rank).map(|(_, other)| other);
                let reason = reason(p, other, margin) + how;
                return Ok(Choice {
                    device: device.clone(),
                    variant,
                    pipelined: p.pipelined,
                    predictions: predictions.clone(),
                    reason,
                });
            }
        }
        let why = self.uncalibrated.clone().unwrap_or_else(|| format!("the calibration has no {}", W::NAME));
        // A device that implements the workload but refuses this input's kind (a raw kernel without a body for it) is no
        // candidate either.
        let supporting: Vec<&Device> = self
            .devices
            .iter()
            .filter(|d| d.supports::<W>() && !matches!(d.check_size::<W>(params), Err(Error::Unsupported { .. })))
            .collect();
        let gpu = supporting.iter().find(|d| d.is_gpu());
        let (device, reason) = match gpu {
            Some(gpu) if placement == Placement::Resident && cost.bytes >= DEFAULT_RESIDENT_BYTES => {
                (*gpu, format!("the default for large resident data ({why})"))
            }
            _ => match supporting.iter().find(|d| !d.kind().is_gpu()).or(supporting.first()) {
                Some(cpu) if !cpu.kind().is_gpu() => (*cpu, format!("the default: the CPU ({why})")),
                Some(other) => (*other, format!("the first device that implements {} ({why})", W::NAME)),
                None => {
                    let tried: Vec<String> = self.devices.iter().map(|d| d.label().to_string()).collect();
                    return Err(Error::invalid(format!(
                        "no device here implements the workload `{}` (tried {})",
                        W::NAME,
                        tried.join(", ")
                    )));
                }
            },
        };
        Ok(Choice {
            device: device.clone(),
            variant: device.best_variant::<W>(params),
            pipelined: false,
            predictions: Vec::new(),
            reason,
        })
    }
}

/// What `auto` chose, and why.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The device.
    pub device: Device,
    /// The variant.
    pub variant: &'static str,
    /// Whether `device` is a pipelined twin: data on the host moves through chunks overlapped on several streams.
    pub pipelined: bool,
    /// The model's prediction for each device, fastest first (empty without a calibration).
    pub predictions: Vec<Prediction>,
    /// Why, in words: the predicted times and the phase that decides, or the default applied.
    pub reason: String,
}

/// The verdict on predictions sorted fastest first ([`Auto::predict`]): the fastest and why, in the words of
/// [`Choice::reason`] (a toss-up where the next is within `margin`); `None` without predictions.
pub fn verdict(predictions: &[Prediction], margin: f64) -> Option<String> {
    let fastest = predictions.first()?;
    let path = if fastest.pipelined { " (pipelined)" } else { "" };
    Some(format!("{}{path} ({})", fastest.device, reason(fastest, predictions.get(1), margin)))
}

/// Why `chosen` won over `other` (the next prediction), in words: the predicted times and the phase that decides, or,
/// where the two are within `margin` (the model's error) of each other, that they are a toss-up: a winner is not
/// named with false confidence.
fn reason(chosen: &Prediction, other: Option<&Prediction>, margin: f64) -> String {
    let time = |s: f64| crate::measure::duration(std::time::Duration::from_secs_f64(s));
    let path = if chosen.pipelined { " through the pipelined path" } else { "" };
    match other {
        None => "the only device calibrated for this workload".to_owned(),
        Some(other) if other.total_s >= chosen.total_s && other.total_s <= chosen.total_s * (1.0 + margin) => format!(
            "a toss-up: predicted {}{path} against {} on {}, within the model's error ({:.0}%)",
            time(chosen.total_s),
            time(other.total_s),
            other.device,
            100.0 * margin
        ),
        Some(other) => format!(
            "predicted {}{path} against {} on {}; decided by {}",
            time(chosen.total_s),
            time(other.total_s),
            other.device,
            deciding_phase(chosen, other)
        ),
    }
}

/// The pipelined twin of each of `devices` that has one.
fn pipelined_twins(devices: &[Device]) -> Vec<Device> {
    devices.iter().filter_map(Device::pipelined).collect()
}

/// The process's `auto`: opened on first use.
pub fn global() -> Result<&'static Auto> {
    static AUTO: OnceLock<std::result::Result<Auto, String>> = OnceLock::new();
    AUTO.get_or_init(|| {
        let auto = Auto::open().map_err(|e| e.to_string())?;
        if let Some(why) = &auto.uncalibrated {
            eprintln!("gpuworthy: warning: {why}; auto uses its conservative default");
        }
        Ok(auto)
    })
    .as_ref()
    .map_err(|e| Error::invalid(e.clone()))
}

/// Runs `W` on `input` (data on the host, result wanted there) where the model predicts it fastest.
pub fn run<W: DeviceWorkload>(input: &W::Input) -> Result<(W::Output, Choice)> {
    let choice = global()?.choose::<W>(&W::params(input), Placement::Host)?;
    let output = choice.device.run::<W>(choice.variant, input)?;
    Ok((output, choice))
}

/// Uploads `input` to the device where the model predicts `W`'s kernel fastest, for data that will stay there across
/// launches: launch it with `choice.device.launch(choice.variant, &mut resident)`.
pub fn upload<W: DeviceWorkload>(input: &W::Input) -> Result<(Resident<W>, Choice)> {
    let choice = global()?.choose::<W>(&W::params(input), Placement::Resident)?;
    let resident = choice.device.upload::<W>(input)?;
    Ok((resident, choice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{CostFit, Curve};
    use crate::model::{DeviceModel, VariantModel, WorkloadModel};
    use gpuworthy_core::workloads::{Len, Square};

    /// The CPU device as the model's "cpu", and a made-up GPU that the devices list lacks.
    fn model_with(cpu_per_byte: f64) -> Model {
        let workload = |fit: CostFit| WorkloadModel {
            workload: "square".into(),
            upload: Curve::default(),
            download: Curve::default(),
            upload_pinned: None,
            download_pinned: None,
            pipelined: None,
            host_overhead: None,
            streaming: None,
            variants: vec![VariantModel {
                variant: "simd".into(),
                full_precision: true,
                kernel: Curve { fit, points: Vec::new(), traffic: Vec::new() },
            }],
        };
        Model {
            rates: Vec::new(),
            error: None,
            devices: vec![DeviceModel {
                label: DeviceLabel::named("cpu"),
                backend: "cpu".into(),
                is_gpu: false,
                workloads: vec![workload(CostFit { per_byte_s: cpu_per_byte, ..CostFit::default() })],
                stream_s_per_byte: None,
                cache_bytes: None,
            }],
        }
    }

    #[test]
    fn a_calibrated_choice_names_its_device_variant_and_reason() {
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], model_with(1e-10));
        let choice = auto.choose::<Square>(&Len(1 << 20), Placement::Host).unwrap();
        assert_eq!((choice.device.label().as_str(), choice.variant), ("cpu", "simd"));
        assert!(choice.reason.contains("only device"), "{}", choice.reason);
    }

    #[test]
    fn two_devices_within_the_models_error_are_a_toss_up() {
        let prediction = |device: &str, total_s: f64| Prediction {
            device: DeviceLabel::named(device),
            is_gpu: device != "cpu",
            variant: "v".into(),
            upload_s: 0.0,
            launch_s: 1e-6,
            kernel_s: total_s,
            download_s: 0.0,
            total_s,
            pipelined: false,
        };
        let (cuda, wgpu) = (prediction("cuda", 4.0e-6), prediction("wgpu", 4.3e-6));
        let close = reason(&cuda, Some(&wgpu), 0.10);
        assert!(close.starts_with("a toss-up") && close.contains("wgpu") && close.contains("10%"), "{close}");
        let far = reason(&cuda, Some(&prediction("cpu", 9.0e-6)), 0.10);
        assert!(far.contains("decided by") && !far.contains("toss-up"), "{far}");
        assert!(reason(&cuda, Some(&wgpu), 0.05).contains("decided by"), "7.5% apart is outside a 5% error");
        let error = crate::model::ModelError {
            covered: "workloads".into(),
            points: 100,
            within_10: 96,
            p90_regret: 1.02,
            worst_regret: 1.4,
            p90_prediction_error: None,
        };
        assert_eq!(error.margin(), 0.05, "at least 5%");
        let measured = crate::model::ModelError { p90_prediction_error: Some(0.3), ..error };
        assert_eq!(measured.margin(), 0.3, "the prediction's error, where the evaluation measured it");
    }

    #[test]
    fn without_a_model_the_default_is_the_cpu() {
        let auto = Auto {
            devices: vec![Device::cpu().unwrap()],
            pipelined: Vec::new(),
            model: None,
            uncalibrated: Some("test".into()),
        };
        let choice = auto.choose::<Square>(&Len(1 << 28), Placement::Resident).unwrap();
        assert_eq!(choice.device.label().as_str(), "cpu");
        assert!(choice.reason.contains("default") && choice.reason.contains("test"), "{}", choice.reason);
    }

    /// Without a model, large resident data stays on a GPU where there is one; data on the host, and resident data
    /// below [`DEFAULT_RESIDENT_BYTES`], go to the CPU. On a machine without a GPU every choice is the CPU.
    #[test]
    fn without_a_model_large_resident_data_stays_on_a_gpu() {
        let devices = Device::all_available().devices;
        let gpu = devices.iter().find(|d| d.is_gpu()).map(|d| d.label().to_string());
        let auto = Auto { devices, pipelined: Vec::new(), model: None, uncalibrated: Some("test".into()) };
        // Square moves 8 bytes per element: 2^25 elements are exactly the threshold.
        let at_threshold = Len((DEFAULT_RESIDENT_BYTES / 8) as usize);
        let just_below = Len(at_threshold.0 - 1);
        let chosen =
            |params: &Len, placement| auto.choose::<Square>(params, placement).unwrap().device.label().to_string();
        assert_eq!(chosen(&at_threshold, Placement::Resident), gpu.unwrap_or_else(|| "cpu".to_owned()));
        assert_eq!(chosen(&just_below, Placement::Resident), "cpu");
        assert_eq!(chosen(&at_threshold, Placement::Host), "cpu");
    }
}
