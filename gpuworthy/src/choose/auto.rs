//! `auto`: run each call where the calibrated cost model predicts it is fastest, and say why.
//!
//! ```no_run
//! use gpuworthy::core::{Workload, workloads::{Len, Square}};
//!
//! let input = Square::generate(&Len(1 << 20), 1)?;
//! let (output, choice) = gpuworthy::choose::auto::run::<Square>(&input)?;  // data on the host, result wanted there
//! println!("ran on {} ({}): {}", choice.device.label(), choice.variant, choice.reason);
//! # Ok::<(), gpuworthy::core::Error>(())
//! ```
//!
//! The devices are opened once per process ([`Device::all_available`]) and the calibration is loaded once
//! ([`crate::model::calibration`]). Without a calibration (or with one that is not trusted, which is said once on standard
//! error) the choice is the documented conservative default: the CPU, unless the data is resident and at least
//! [`DEFAULT_RESIDENT_BYTES`], where the best available GPU is chosen. Where the model predicts a device's pipelined
//! path fastest for data on the host, the choice is that device's pipelined twin ([`Device::pipelined`], opened once
//! with the devices), so that [`run`] moves the data as the prediction assumed.
//!
//! Where the model cannot tell two devices apart (their predictions within [`TRIAL_MARGIN`] or the model's own error)
//! and the work is short, the call that runs it settles the question by a trial ([`Auto::decide`]): each contender is
//! timed on the input once, and the verdict is kept for the rest of the process. A model calibrated on one machine
//! meets others whose hosts, links and clocks differ; at launch-bound sizes its errors reach tens of percent, and a
//! few runs of each contender, which cost less than a millisecond there, are worth more than the prediction.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use gpuworthy_core::{Backend, BackendKind, Error, Result};

use crate::device::{DeviceLabel, DeviceWorkload};
use crate::measure::names::{SizeLabel, WorkloadName};
use crate::model::calibration::{Calibration, Loaded, MachineFingerprint, default_path};
use crate::model::{Model, Placement, Prediction, deciding_phase};
use crate::{Device, Resident};

/// Predictions within this much of the fastest are settled by a trial where they are short ([`TRIAL_UP_TO_S`]), even
/// where the model's own error is smaller: at the sizes where launches and transfers decide, the evaluation's
/// predictions were far from their measurements on GPU machines the model was not tuned on (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const TRIAL_MARGIN: f64 = 0.5;

/// The longest a contender may be predicted to take for a trial to time it: a trial runs each a few times, which past
/// this costs a first call more than a wrong choice among close ones would, and past it the model's error is the
/// bandwidth's, smaller than at launch-bound sizes.
pub const TRIAL_UP_TO_S: f64 = 0.02;

/// Rounds of a trial: each round times every contender once, in turn, so that a drift of the machine (a clock that
/// rises, a neighbour that wakes) falls on every contender alike; each contender's time is its median over the rounds.
pub const TRIAL_ROUNDS: usize = 7;

/// The time one sample in a trial should take: launches are timed in batches of about this much, and whole runs from
/// the host repeated back to back for about as long, so that neither a timer's own cost nor a device or thread pool
/// waking after another contender's turn weighs on a short run.
pub const TRIAL_SAMPLE: Duration = Duration::from_micros(500);

/// A trial's verdict: the contender that was fastest, and every contender's time in words.
#[derive(Debug, Clone)]
struct Verdict {
    label: DeviceLabel,
    variant: &'static str,
    pipelined: bool,
    times: String,
}

/// What one trial settles: a workload (or its instance) at one size, its data in one place.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct TrialKey {
    /// The workload as the model names it: its instance where it has one (an expression's program).
    workload: WorkloadName,
    /// The size, as the workload displays its parameters: the one form every workload's parameters share.
    size: SizeLabel,
    /// Where the data starts and ends.
    placement: Placement,
}

/// Trials already run; `None` where no trial could be run (fewer than two contenders could), so that it is not
/// tried again.
type Trials = HashMap<TrialKey, Option<Verdict>>;

/// The length of the sums each output element of a workload of `cost` accumulates: its flops per output element,
/// halved (K for a matmul), at least 1: what a precision's error bound grows with
/// ([`gpuworthy_core::Precision::relative_error_bound`]).
pub fn sum_length(cost: &gpuworthy_core::Cost) -> usize {
    (cost.flops / (2 * cost.elements.max(1))).max(1) as usize
}

/// The precisions a caller allows, from the precisions it named and the relative error it accepts, at `cost`: `None`
/// where it gave neither (`f32` alone for auto, every variant of a named device); else the named ones (every one where
/// none was named) whose [`gpuworthy_core::Precision::relative_error_bound`] at this size is within `tolerance`, `f32`
/// always unless it was left out by name. What [`Auto::allowing`] takes.
///
/// ```
/// use gpuworthy::core::{Cost, Precision};
/// use gpuworthy::choose::auto::allowed_precisions;
///
/// let matmul_8192 = Cost { bytes: 3 * 4 * 8192 * 8192, flops: 2 * 8192u64.pow(3), elements: 8192 * 8192 };
/// assert_eq!(allowed_precisions(&matmul_8192, &[], None), None);
/// let allowed = allowed_precisions(&matmul_8192, &[], Some(3e-3)).unwrap();
/// assert_eq!(allowed, [Precision::Fp32, Precision::Tf32, Precision::Fp16], "bf16's bound is 7.8e-3");
/// ```
pub fn allowed_precisions(
    cost: &gpuworthy_core::Cost,
    named: &[gpuworthy_core::Precision],
    tolerance: Option<f64>,
) -> Option<Vec<gpuworthy_core::Precision>> {
    use gpuworthy_core::Precision;
    if named.is_empty() && tolerance.is_none() {
        return None;
    }
    let within = tolerance.map(|t| Precision::within_tolerance(t, sum_length(cost)));
    let base = if named.is_empty() { Precision::ALL.to_vec() } else { named.to_vec() };
    Some(base.into_iter().filter(|p| within.as_ref().is_none_or(|w| w.contains(p))).collect())
}

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
    /// The verdicts of the trials run so far ([`Auto::decide`]).
    trials: Mutex<Trials>,
}

impl Auto {
    /// Opens the devices and loads the calibration (from [`default_path`]). A backend that cannot run here is left
    /// out; one that fails for any other reason (a bad `GPUWORTHY_*` variable) is that error, so that a bad setting
    /// is never taken as a missing device and the choice silently made without it.
    pub fn open() -> Result<Auto> {
        let mut opened = Device::all_available();
        if let Some(bad) = opened.unavailable.iter().position(|(_, e)| !e.is_unavailable()) {
            return Err(opened.unavailable.swap_remove(bad).1);
        }
        let devices = opened.devices;
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
        Ok(Auto { devices, pipelined, model, uncalibrated, trials: Mutex::default() })
    }

    /// With this model (tests, or a model made by hand) on these devices.
    pub fn with_model(devices: Vec<Device>, model: Model) -> Auto {
        let pipelined = pipelined_twins(&devices);
        Auto { devices, pipelined, model: Some(model), uncalibrated: None, trials: Mutex::default() }
    }

    /// This `Auto`, choosing also among variants that compute in `precisions` (`f32` ones always): a caller who
    /// accepts bf16 for a matmul gets a bf16 rung where it is predicted fastest, and one who does not never does
    /// ([`Model::allowing`]). Without a model the conservative default is `f32` whatever is allowed.
    ///
    /// ```
    /// use gpuworthy::{Device, choose::auto::Auto, model::Model};
    /// use gpuworthy::core::Precision;
    ///
    /// let auto = Auto::with_model(vec![Device::cpu()?], Model::default()).allowing(&[Precision::Bf16]);
    /// assert_eq!(auto.model.as_ref().unwrap().allowed, [Precision::Bf16]);
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn allowing(mut self, precisions: &[gpuworthy_core::Precision]) -> Auto {
        self.model = self.model.map(|m| m.allowing(precisions));
        self
    }

    /// With no model on these devices, for the reason `why` (said in every choice's reason): the conservative default
    /// decides.
    pub fn without_model(devices: Vec<Device>, why: impl Into<String>) -> Auto {
        Auto { devices, pipelined: Vec::new(), model: None, uncalibrated: Some(why.into()), trials: Mutex::default() }
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
        self.predict_with::<W>(params, placement, None)
    }

    /// [`Auto::predict`], with `variant` preferred on the device `label` where it is given (`(label, variant)`), so
    /// that a trial can ask for another variant's prediction.
    fn predict_with<W: DeviceWorkload>(
        &self,
        params: &W::Params,
        placement: Placement,
        variant: Option<(&DeviceLabel, &'static str)>,
    ) -> Option<(Vec<Prediction>, &'static str)> {
        let cost = W::cost(params);
        let devices = &self.devices;
        let preferred = |label: &DeviceLabel| match variant {
            Some((on, variant)) if on == label => Some(variant),
            _ => devices.iter().find(|d| d.label() == *label).map(|d| d.best_variant::<W>(params)),
        };
        // The instance's own calibration (an expression calibrated by `calibrate --expr`, or a built-in workload), else
        // what it resembles (an expression never measured: the base expression's curves and the devices' rates).
        let instance = W::instance(params).unwrap_or_else(|| W::NAME.to_owned());
        self.model.as_ref().and_then(|model| {
            if model.knows(&instance) {
                let moved = |kind: BackendKind, variant: &str| Some(W::traffic(params, kind, variant));
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

    /// The model's prediction for `choice` itself, in seconds (the kernel for resident data, the whole run for data on
    /// the host): the prediction the choice carries for its device, or where a trial chose another variant of that
    /// device than the model preferred, that variant's own (where the model gives it one). `None` without a
    /// prediction for the device.
    pub fn predicted_time<W: DeviceWorkload>(
        &self,
        params: &W::Params,
        placement: Placement,
        choice: &Choice,
    ) -> Option<f64> {
        let label = choice.device.label();
        let time = |p: &Prediction| if placement == Placement::Resident { p.kernel_s } else { p.total_s };
        let same = |p: &&Prediction| p.device == label && p.pipelined == choice.pipelined;
        let of_device = choice.predictions.iter().find(same)?;
        if of_device.variant == choice.variant {
            return Some(time(of_device));
        }
        let own =
            self.predict_with::<W>(params, placement, Some((&label, choice.variant))).and_then(|(predictions, _)| {
                predictions.iter().find(same).filter(|p| p.variant == choice.variant).map(time)
            });
        Some(own.unwrap_or_else(|| time(of_device)))
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
                    by_trial: false,
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
            by_trial: false,
        })
    }

    /// [`Auto::choose`], and where its choice is close to another's (another device, or another variant of a device
    /// in the running, predicted within [`TRIAL_MARGIN`], or the model's error where that is larger) and short (at
    /// most [`TRIAL_UP_TO_S`]), settled by a trial: each contender
    /// timed on `input` in [`TRIAL_ROUNDS`] interleaved rounds (the kernel in device-timed batches for resident data
    /// and on a CPU, the whole run on a GPU for data on the host), the
    /// fastest chosen, and the reason says so with every contender's time. Without `input`, the trial times the
    /// workload's seeded input of `params`, made only if a trial runs. A trial runs once per workload instance, size
    /// and placement in this `Auto`; later calls take its verdict at the cost of a lookup. A contender that fails
    /// drops out; where fewer than two can be timed, or no seeded input can be made, the model's choice stands.
    ///
    /// ```
    /// use gpuworthy::{Device, choose::auto::Auto, model::{Model, Placement}};
    /// use gpuworthy::core::workloads::{Len, Square};
    ///
    /// let auto = Auto::with_model(vec![Device::cpu()?], Model::default());
    /// let choice = auto.decide::<Square>(&Len(1 << 16), Placement::Host, None)?;
    /// assert!(!choice.by_trial, "one device: nothing to settle");
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn decide<W: DeviceWorkload>(
        &self,
        params: &W::Params,
        placement: Placement,
        input: Option<&W::Input>,
    ) -> Result<Choice> {
        let choice = self.choose::<W>(params, placement)?;
        let time_of = |p: &Prediction| if placement == Placement::Resident { p.kernel_s } else { p.total_s };
        let label = choice.device.label();
        let Some(chosen) = choice.predictions.iter().find(|p| p.device == label && p.pipelined == choice.pipelined)
        else {
            return Ok(choice);
        };
        if time_of(chosen) > TRIAL_UP_TO_S {
            return Ok(choice);
        }
        let workload = W::instance(params).map_or_else(|| WorkloadName::from(W::NAME), WorkloadName::from);
        let key = TrialKey { workload, size: params.to_string().into(), placement };
        let earlier = self.trials.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
        let verdict = match earlier {
            Some(verdict) => verdict,
            None => {
                let limit = time_of(chosen) * (1.0 + self.toss_up_margin().max(TRIAL_MARGIN));
                let mut contenders: Vec<(&Device, &'static str, bool)> = choice
                    .predictions
                    .iter()
                    .filter(|p| time_of(p) <= limit)
                    .filter_map(|p| {
                        let on = if p.pipelined { &self.pipelined } else { &self.devices };
                        let device = on.iter().find(|d| d.label() == p.device)?;
                        let variant = device.variants::<W>().into_iter().find(|v| *v == p.variant)?;
                        device.check_size::<W>(params).ok()?;
                        Some((device, variant, p.pipelined))
                    })
                    .collect();
                // Each contender device's other variants predicted as close: between variants, too, a rule of which
                // was fastest on the reference machines can lose on this one.
                let devices: Vec<&Device> =
                    contenders.iter().filter(|(_, _, pipelined)| !pipelined).map(|(d, _, _)| *d).collect();
                for device in devices {
                    let label = device.label();
                    for variant in device.variants::<W>() {
                        if contenders.iter().any(|(d, v, p)| d.label() == label && *v == variant && !p) {
                            continue;
                        }
                        let close = self.predict_with::<W>(params, placement, Some((&label, variant))).is_some_and(
                            |(predictions, _)| {
                                predictions.iter().any(|p| {
                                    p.device == label && !p.pipelined && p.variant == variant && time_of(p) <= limit
                                })
                            },
                        );
                        if close {
                            contenders.push((device, variant, false));
                        }
                    }
                }
                let verdict = if contenders.len() < 2 {
                    None
                } else {
                    // Without an input of the caller's, a seeded one; where none can be made, the model decides.
                    match input {
                        Some(input) => trial::<W>(&contenders, input, placement),
                        None => W::generate(params, 1).ok().and_then(|made| trial::<W>(&contenders, &made, placement)),
                    }
                };
                self.trials.lock().unwrap_or_else(PoisonError::into_inner).insert(key, verdict.clone());
                verdict
            }
        };
        let Some(verdict) = verdict else { return Ok(choice) };
        let on = if verdict.pipelined { &self.pipelined } else { &self.devices };
        let Some(device) = on.iter().find(|d| d.label() == verdict.label) else { return Ok(choice) };
        Ok(Choice {
            device: device.clone(),
            variant: verdict.variant,
            pipelined: verdict.pipelined,
            reason: format!("{}; settled by a trial: {}", choice.reason, verdict.times),
            predictions: choice.predictions,
            by_trial: true,
        })
    }
}

/// One contender of a trial, ready to be timed: its data resident where its kernel is what counts.
struct Contender<'a, W: DeviceWorkload> {
    device: &'a Device,
    variant: &'static str,
    pipelined: bool,
    /// The input uploaded, and the launches per sample on a GPU ([`TRIAL_SAMPLE`]; 1 on a CPU, whose samples are
    /// single launches), where the kernel is timed; `None` where the whole run from the host is.
    resident: Option<(Resident<W>, usize)>,
    samples: Vec<f64>,
}

impl<W: DeviceWorkload> Contender<'_, W> {
    /// One sample, in seconds, as the harness measures it: on a GPU the mean of a batch of launches on the device's
    /// timer; on a CPU the median of single launches back to back for about [`TRIAL_SAMPLE`] (the harness times a
    /// CPU's kernel one launch a sample, and a batch's mean took in its rare slow launches: on an H100's host an
    /// expression at 1024 elements was slower in a trial's batches than in the evaluation, and lost its trials to
    /// cuda; measured: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so); a whole run's median back to back
    /// for about as long, the first
    /// unkept where there were more than one.
    fn sample(&mut self, input: &W::Input) -> Result<f64> {
        let (device, variant) = (self.device, self.variant);
        match &mut self.resident {
            Some((resident, _)) if !device.is_gpu() => steady_time(TRIAL_SAMPLE, || {
                let one = device.backend().time_on_device(&mut || device.launch::<W>(variant, resident))?;
                Ok(one.as_secs_f64())
            }),
            Some((resident, batch)) => {
                let batch = *batch;
                let time = device
                    .backend()
                    .time_on_device(&mut || (0..batch).try_for_each(|_| device.launch::<W>(variant, resident)))?;
                Ok(time.as_secs_f64() / batch as f64)
            }
            None => steady_time(TRIAL_SAMPLE, || {
                let start = std::time::Instant::now();
                device.run::<W>(variant, input)?;
                Ok(start.elapsed().as_secs_f64())
            }),
        }
    }
}

/// The steady time of a whole run, in seconds: `run` (which times one) repeated back to back for about `budget`, at
/// least once, and the median kept with the first run left out where there were more than one. The first run after
/// another contender's turn pays for waking this device and the host's threads that drive it (on an H100's host, a
/// whole run of 8192 elements took 2.1-2.5 times its steady time that way), which a program calling it again and
/// again does not, nor the evaluation's measurements.
fn steady_time(budget: Duration, mut run: impl FnMut() -> Result<f64>) -> Result<f64> {
    let started = std::time::Instant::now();
    let mut runs = vec![run()?];
    while started.elapsed() < budget {
        runs.push(run()?);
    }
    if runs.len() > 1 {
        runs.remove(0);
    }
    runs.sort_by(f64::total_cmp);
    Ok(runs[runs.len() / 2])
}

/// Times each of `contenders` on `input` and names the fastest; `None` where fewer than two could be timed. What is
/// timed is what the model predicts and the evaluation measures: the kernel for resident data and on a CPU (which
/// computes where the data is), for about [`TRIAL_SAMPLE`] a sample ([`Contender::sample`]); a GPU's whole run
/// (its upload, kernel and download, or its pipelined run) for data on the host, back to back for about as long, so
/// that each sample is the steady time a program calling it repeatedly sees. After a warm-up, [`TRIAL_ROUNDS`]
/// rounds time every contender in turn, and each keeps the median of its samples.
fn trial<'a, W: DeviceWorkload>(
    contenders: &[(&'a Device, &'static str, bool)],
    input: &W::Input,
    placement: Placement,
) -> Option<Verdict> {
    let params = W::params(input);
    let prepare = |&(device, variant, pipelined): &(&'a Device, &'static str, bool)| -> Result<Contender<'a, W>> {
        device.settle::<W>(variant, &params)?;
        let mut contender = Contender { device, variant, pipelined, resident: None, samples: Vec::new() };
        if placement == Placement::Resident || !device.is_gpu() {
            let mut resident = device.upload::<W>(input)?;
            device.launch::<W>(variant, &mut resident)?;
            let warm = device
                .backend()
                .time_on_device(&mut || (0..3).try_for_each(|_| device.launch::<W>(variant, &mut resident)))?;
            // A GPU's samples are batches of about TRIAL_SAMPLE; a CPU's are single launches (`Contender::sample`).
            let batch = if device.is_gpu() {
                let one = (warm / 3).max(Duration::from_nanos(100));
                (TRIAL_SAMPLE.as_nanos() / one.as_nanos()).clamp(1, 4096) as usize
            } else {
                1
            };
            contender.resident = Some((resident, batch));
        } else {
            device.run::<W>(variant, input)?;
        }
        // One sample unkept: the first after the warm-up.
        contender.sample(input)?;
        Ok(contender)
    };
    let mut ready: Vec<Contender<'a, W>> = contenders.iter().filter_map(|c| prepare(c).ok()).collect();
    for _ in 0..TRIAL_ROUNDS {
        for contender in &mut ready {
            if let Ok(s) = contender.sample(input) {
                contender.samples.push(s);
            }
        }
    }
    let timed: Vec<(&Contender<'_, W>, f64)> = ready
        .iter()
        .filter(|c| !c.samples.is_empty())
        .map(|c| {
            let mut samples = c.samples.clone();
            samples.sort_by(f64::total_cmp);
            (c, samples[samples.len() / 2])
        })
        .collect();
    if timed.len() < 2 {
        return None;
    }
    let (winner, _) = *timed.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let times: Vec<String> = timed
        .iter()
        .map(|(c, s)| {
            let path = if c.pipelined { " pipelined" } else { "" };
            let time = crate::measure::duration(Duration::from_secs_f64(*s));
            format!("{} {}{path} {time}", c.device.label(), c.variant)
        })
        .collect();
    Some(Verdict {
        label: winner.device.label(),
        variant: winner.variant,
        pipelined: winner.pipelined,
        times: times.join(", "),
    })
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
    /// Why, in words: the predicted times and the phase that decides, or the default applied; after a trial, every
    /// contender's time.
    pub reason: String,
    /// Whether a trial settled it ([`Auto::decide`]) rather than the model alone.
    pub by_trial: bool,
}

/// A prediction for this machine's CPU beside a reference machine's GPUs ([`predict_beside_reference`]).
pub struct BesideReference {
    /// The chooser over this machine's CPU and the reference machine's GPUs, with the mixed model.
    pub auto: Auto,
    /// Every device's prediction, fastest first; empty where neither side knows the workload.
    pub predictions: Vec<Prediction>,
    /// Whether the CPU's curves were measured just now, this machine's calibration having none for the workload.
    pub cpu_measured_now: bool,
}

/// `W` at `params` predicted on this machine's CPU beside `machine`'s GPUs, changed by `what_if`
/// ([`ReferenceMachine::beside_as`]): the CPU's curves from this machine's calibration, else from `calibrate_cpu`
/// (the command line's `explain --on` and the Python package's `explain(on=...)` both predict so).
///
/// [`ReferenceMachine::beside_as`]: crate::model::reference::ReferenceMachine::beside_as
pub fn predict_beside_reference<W: DeviceWorkload>(
    machine: &crate::model::reference::ReferenceMachine,
    what_if: &crate::model::reference::WhatIf,
    params: &W::Params,
    placement: Placement,
    calibrate_cpu: impl FnOnce(&Device) -> Result<Calibration>,
) -> Result<BesideReference> {
    let cpu = Device::cpu()?;
    let mut local = Auto::open()?.model.unwrap_or_default();
    let predict = |local: &Model| -> Result<(Auto, Vec<Prediction>)> {
        let auto = Auto::with_model(vec![cpu.clone()], machine.beside_as(local, what_if)?);
        let predictions = auto.predict::<W>(params, placement).map(|(p, _)| p).unwrap_or_default();
        Ok((auto, predictions))
    };
    let (auto, predictions) = predict(&local)?;
    if predictions.iter().any(|p| !p.is_gpu) {
        return Ok(BesideReference { auto, predictions, cpu_measured_now: false });
    }
    local.merge(calibrate_cpu(&cpu)?.model);
    let (auto, predictions) = predict(&local)?;
    Ok(BesideReference { auto, predictions, cpu_measured_now: true })
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
        // Kept as words (an error is not `Clone`), without a second "invalid input: " when it is one already.
        let auto = Auto::open().map_err(|e| match e {
            Error::InvalidInput(message) => message,
            other => other.to_string(),
        })?;
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
    let choice = global()?.decide::<W>(&W::params(input), Placement::Host, Some(input))?;
    let output = choice.device.run::<W>(choice.variant, input)?;
    Ok((output, choice))
}

/// Uploads `input` to the device where the model predicts `W`'s kernel fastest, for data that will stay there across
/// launches: launch it with `choice.device.launch(choice.variant, &mut resident)`.
pub fn upload<W: DeviceWorkload>(input: &W::Input) -> Result<(Resident<W>, Choice)> {
    let choice = global()?.decide::<W>(&W::params(input), Placement::Resident, Some(input))?;
    let resident = choice.device.upload::<W>(input)?;
    Ok((resident, choice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fit::{CostFit, Curve};
    use crate::model::{DeviceModel, VariantModel, WorkloadModel};
    use gpuworthy_core::workloads::{Len, Square};

    /// The CPU device as the model's "cpu", and a made-up GPU that the devices list lacks.
    fn model_with(cpu_per_byte: f64) -> Model {
        let workload = |fit: CostFit| {
            let kernel = Curve { fit, points: Vec::new(), traffic: Vec::new() };
            WorkloadModel::kernels_only(
                "square",
                vec![VariantModel { variant: "simd".into(), full_precision: true, precision: None, kernel }],
            )
        };
        Model {
            rates: Vec::new(),
            error: None,
            contention: Vec::new(),
            host_copy_s_per_byte: None,
            allowed: Vec::new(),
            devices: vec![DeviceModel {
                label: DeviceLabel::named("cpu"),
                backend: BackendKind::Cpu,
                is_gpu: false,
                workloads: vec![workload(CostFit { per_byte_s: cpu_per_byte, ..CostFit::default() })],
                stream_s_per_byte: None,
                cache_bytes: None,
            }],
        }
    }

    /// A model of `square` on the CPU (`simd`) and on `gpu` (`vec4`), each at its seconds per byte.
    fn two_device_model(gpu: &Device, cpu_per_byte: f64, gpu_per_byte: f64) -> Model {
        let mut model = model_with(cpu_per_byte);
        let mut other = model.devices[0].clone();
        other.label = gpu.label();
        other.backend = gpu.kind();
        other.is_gpu = true;
        other.workloads[0].variants[0].variant = "vec4".into();
        other.workloads[0].variants[0].kernel.fit.per_byte_s = gpu_per_byte;
        model.devices.push(other);
        model
    }

    /// A whole run timed in a trial: the slow first run of a turn is left out, short runs are repeated for about the
    /// budget, a long one runs once, and an error stops the sample.
    #[test]
    fn a_whole_runs_sample_is_its_steady_time() {
        let mut calls = 0;
        let slow_first = steady_time(Duration::from_millis(5), || {
            calls += 1;
            std::thread::sleep(Duration::from_micros(50));
            Ok(if calls == 1 { 1.0 } else { 0.25 })
        })
        .unwrap();
        assert_eq!(slow_first, 0.25);
        assert!(calls >= 3, "{calls} runs");
        let mut long = 0;
        let once = steady_time(Duration::ZERO, || {
            long += 1;
            Ok(0.5)
        });
        assert_eq!((once.unwrap(), long), (0.5, 1));
        assert!(steady_time(Duration::from_millis(1), || Err(Error::invalid("gone"))).is_err());
    }

    /// Two devices predicted within [`TRIAL_MARGIN`] of each other for a short kernel are timed on the spot, once per
    /// size and placement: the reason names every contender's time and the choice is the faster measured. Devices
    /// predicted far apart, or work predicted past [`TRIAL_UP_TO_S`], are left to the model. Needs a wgpu adapter
    /// (lavapipe on a CPU).
    #[test]
    fn a_close_call_is_settled_by_a_trial_once() {
        let Some(gpu) = BackendKind::Wgpu.opened_or_skipped(Device::wgpu(None)) else { return };
        let devices = vec![Device::cpu().unwrap(), gpu.clone()];
        let close = Auto::with_model(devices.clone(), two_device_model(&gpu, 1.0e-10, 1.2e-10));
        let params = Len(1 << 16);
        let choice = close.decide::<Square>(&params, Placement::Resident, None).unwrap();
        assert!(choice.by_trial, "{}", choice.reason);
        let settled = choice.reason.split("settled by a trial: ").nth(1).unwrap_or_default().to_owned();
        assert!(
            settled.contains("cpu simd") && settled.contains(&format!("{} vec4", gpu.label())),
            "{}",
            choice.reason
        );
        // The choice is the faster of the two times the trial wrote.
        let times: Vec<(String, f64)> = settled
            .split(", ")
            .map(|part| {
                // "<device> <variant> <value> <unit>"
                let words: Vec<&str> = part.split(' ').collect();
                let scale = match words[words.len() - 1] {
                    "ns" => 1e-9,
                    "µs" => 1e-6,
                    "ms" => 1e-3,
                    _ => 1.0,
                };
                let value: f64 = words[words.len() - 2].parse().unwrap_or_else(|_| panic!("{part}"));
                (words[0].to_owned(), value * scale)
            })
            .collect();
        let fastest = times.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert_eq!(choice.device.label().as_str(), fastest.0, "{}", choice.reason);
        let again = close.decide::<Square>(&params, Placement::Resident, None).unwrap();
        assert_eq!((again.device.label(), again.reason), (choice.device.label(), choice.reason));
        assert_eq!(close.trials.lock().unwrap().len(), 1, "the second call took the first's verdict");

        let far = Auto::with_model(devices.clone(), two_device_model(&gpu, 1.0e-10, 1.0e-8));
        let choice = far.decide::<Square>(&params, Placement::Resident, None).unwrap();
        assert!(!choice.by_trial && choice.device.label().as_str() == "cpu", "{}", choice.reason);
        // Predicted at 0.42 and 0.5 s: past TRIAL_UP_TO_S, the model decides.
        let long = Auto::with_model(devices, two_device_model(&gpu, 1.0e-9, 1.2e-9));
        let choice = long.decide::<Square>(&Len(1 << 26), Placement::Resident, None).unwrap();
        assert!(!choice.by_trial, "{}", choice.reason);
        assert!(long.trials.lock().unwrap().is_empty());
    }

    /// The CPU's `square` with two variants predicted within 10% of each other: `simd` at 0.1 ns a byte, `scalar` at
    /// 0.11.
    fn cpu_simd_and_scalar() -> Model {
        let mut model = model_with(1.0e-10);
        let mut scalar = model.devices[0].workloads[0].variants[0].clone();
        scalar.variant = "scalar".into();
        scalar.kernel.fit.per_byte_s = 1.1e-10;
        model.devices[0].workloads[0].variants.push(scalar);
        model
    }

    /// Two variants of one device predicted as close are settled by a trial as two devices are: the rule that
    /// prefers one of them is a fact of the reference machines, not of this one.
    #[test]
    fn two_variants_predicted_as_close_are_settled_by_a_trial() {
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], cpu_simd_and_scalar());
        let choice = auto.decide::<Square>(&Len(1 << 16), Placement::Host, None).unwrap();
        assert!(choice.by_trial, "{}", choice.reason);
        assert!(choice.reason.contains("cpu simd") && choice.reason.contains("cpu scalar"), "{}", choice.reason);
        // Alone, each is the only device calibrated: no trial.
        let single = Auto::with_model(vec![Device::cpu().unwrap()], model_with(1.0e-10));
        assert!(!single.decide::<Square>(&Len(1 << 16), Placement::Host, None).unwrap().by_trial);
    }

    /// The prediction for a choice is its own variant's: where a trial chose another variant than the model's, the
    /// evaluation compares that variant's measurement with that variant's prediction.
    #[test]
    fn a_choice_is_predicted_as_the_variant_it_chose() {
        let auto = Auto::with_model(vec![Device::cpu().unwrap()], cpu_simd_and_scalar());
        let params = Len(1 << 16);
        let bytes = <Square as gpuworthy_core::Workload>::cost(&params).bytes as f64;
        let per_byte = |variant: &str| if variant == "simd" { 1.0e-10 } else { 1.1e-10 };
        let modelled = auto.choose::<Square>(&params, Placement::Resident).unwrap();
        let predicted = auto.predicted_time::<Square>(&params, Placement::Resident, &modelled).unwrap();
        assert!((predicted / (per_byte(modelled.variant) * bytes) - 1.0).abs() < 1e-9, "{predicted}");
        let other = if modelled.variant == "simd" { "scalar" } else { "simd" };
        let tried = Choice { variant: other, by_trial: true, ..modelled };
        let predicted = auto.predicted_time::<Square>(&params, Placement::Resident, &tried).unwrap();
        assert!((predicted / (per_byte(other) * bytes) - 1.0).abs() < 1e-9, "{other}: {predicted}");
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
        let auto = Auto::without_model(vec![Device::cpu().unwrap()], "test");
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
        let auto = Auto::without_model(devices, "test");
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
