//! `gpuworthy calibrate --evaluate`: how often `auto`'s choice was the fastest, measured at the sizes calibration
//! did not use.
//!
//! The last step of the facade's chain (measurement, device, rows, fit, model, crossover, sweep, calibration, auto):
//! it reads a calibration and asks auto, so it sits above both and neither imports it.

use serde::Serialize;

use crate::choose::auto::{Auto, Choice};
use crate::device::{DeviceLabel, DeviceWorkload};
use crate::measure::names::{SizeLabel, VariantName, WorkloadName};
use crate::model::Placement;
use crate::model::calibration::{Calibration, calibration_options};
use crate::model::rows::Row;
use crate::model::sweep::{Progress, SweepOptions, sweep_workload};

/// One evaluated point: auto's choice at a size calibration did not measure, against the fastest measured there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationPoint {
    /// The workload.
    pub workload: WorkloadName,
    /// The size.
    pub size: SizeLabel,
    /// Where the data was.
    pub placement: Placement,
    /// The device auto chose.
    pub auto_device: DeviceLabel,
    /// The variant auto chose.
    pub auto_variant: VariantName,
    /// Whether auto chose the device's pipelined path (data on the host).
    pub auto_pipelined: bool,
    /// The measured time of auto's choice (end to end for data on the host, the kernel for resident data); `None`
    /// where it was not measured at this size (refused, or stopped by the time budget).
    pub auto_s: Option<f64>,
    /// The fastest full-precision (device, variant) measured, with ` pipelined` where that was its pipelined path.
    pub fastest: String,
    /// Its time.
    pub fastest_s: f64,
    /// `auto_s / fastest_s`: 1 when auto chose the fastest.
    pub regret: Option<f64>,
    /// The model's prediction for auto's choice, in the same terms as `auto_s` (the whole run from the host, the
    /// kernel for resident data): beside `auto_s`, the prediction's error.
    pub predicted_s: Option<f64>,
    /// Whether the size moves more bytes than any size calibration measured of the workload: the model extrapolated
    /// to it.
    pub past_ladder: bool,
    /// Whether auto's choice was settled by a trial ([`Auto::decide`]) rather than by the model alone.
    pub by_trial: bool,
    /// Auto's reason ([`Choice::reason`]): the predictions that decided, and after a trial every contender's time in
    /// it, to set beside the measurements.
    pub reason: String,
}

impl EvaluationPoint {
    /// How far the prediction was from the measurement, relatively: `|predicted / measured - 1|`.
    pub fn prediction_error(&self) -> Option<f64> {
        Some((self.predicted_s? / self.auto_s.filter(|s| *s > 0.0)? - 1.0).abs())
    }
}

/// A point of the evaluation that could not be measured or decided: counted and reported, never dropped silently.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationFailure {
    /// The workload.
    pub workload: WorkloadName,
    /// The size.
    pub size: SizeLabel,
    /// Where the data was.
    pub placement: Placement,
    /// What failed, with the error.
    pub what: String,
}

/// Auto's choices over the ladder sizes calibration did not use, measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Evaluation {
    /// Every point.
    pub points: Vec<EvaluationPoint>,
    /// The points that failed: auto could not decide, the input could not be made, or a measurement failed (its
    /// check included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<EvaluationFailure>,
}

impl Evaluation {
    /// Adds `other`'s points and failures to these.
    pub fn extend(&mut self, other: Evaluation) {
        self.points.extend(other.points);
        self.failures.extend(other.failures);
    }

    /// The regrets of the points where auto's choice was measured.
    pub fn regrets(&self) -> Vec<f64> {
        let mut regrets: Vec<f64> = self.points.iter().filter_map(|p| p.regret).collect();
        regrets.sort_by(f64::total_cmp);
        regrets
    }

    /// The prediction errors ([`EvaluationPoint::prediction_error`]) at the points past the calibration ladder,
    /// largest last.
    pub fn errors_past_ladder(&self) -> Vec<f64> {
        let mut errors: Vec<f64> =
            self.points.iter().filter(|p| p.past_ladder).filter_map(EvaluationPoint::prediction_error).collect();
        errors.sort_by(f64::total_cmp);
        errors
    }

    /// `(points measured, points within 10% of the fastest, median regret, worst regret)`.
    pub fn summary(&self) -> (usize, usize, f64, f64) {
        regret_summary(self.regrets())
    }
}

/// `(points, points within 10% of the fastest, median regret, worst regret)` of `regrets`, sorted here.
pub fn regret_summary(mut regrets: Vec<f64>) -> (usize, usize, f64, f64) {
    regrets.sort_by(f64::total_cmp);
    let within = regrets.iter().filter(|&&r| r <= 1.10).count();
    let median = regrets.get(regrets.len() / 2).copied().unwrap_or(f64::NAN);
    let worst = regrets.last().copied().unwrap_or(f64::NAN);
    (regrets.len(), within, median, worst)
}

/// The most bytes a size evaluated moves: 1 GiB, 32 to 256 times the largest calibrated size. The ladders' last
/// sizes (square and saxpy at 2^28 elements, stencil at 16384x16384: 2 to 3 GiB through fresh host memory on every
/// run, on every device and variant) are the slowest points of the evaluation, and ask nothing of the model that
/// the size below does not: both are past every calibrated size and every cache.
pub const EVALUATION_MAX_BYTES: u64 = 1 << 30;

/// The regret above which a point is measured again before it counts.
pub const REMEASURE_ABOVE: f64 = 1.10;

/// How far a prediction past the calibration ladder may be from auto's choice's measured time before that is
/// measured once more (keeping the faster): the goal for those predictions, 25%.
pub const REMEASURE_PREDICTION_OFF: f64 = 0.25;

/// How evaluation measures: calibration's short measurements, with a budget of [`EVALUATION_BUDGET`] per
/// measurement (the larger sizes calibration left out take longer), every variant at every size (calibration leaves
/// out those far behind), and the pipelined paths measured too, so that the fastest measured with data on the host is
/// the faster transfer mode.
pub fn evaluation_options() -> SweepOptions {
    SweepOptions { budget: EVALUATION_BUDGET, pipelined: true, drop_slower_than: None, ..calibration_options() }
}

/// The longest one measurement of the evaluation may be expected to take before its variant stops at that size (half
/// the sweep's): only variants tens to hundreds of times slower than the fastest reach it (CUDA's `atomic` sum, the
/// CPU's one-thread loops at 2^28 elements), and auto's choice, if stopped, is measured on its own.
pub const EVALUATION_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Measures `W`'s ladder sizes that `calibration` did not use on `auto`'s devices, and compares auto's choice (by
/// its model) with the fastest measured there, for data on the host and resident.
pub fn evaluate_workload<W: DeviceWorkload>(
    calibration: &Calibration,
    auto: &Auto,
    progress: &dyn Progress,
) -> Evaluation {
    evaluate_workload_over::<W>(calibration, auto, &W::ladder(), progress)
}

/// [`evaluate_workload`] over a full ladder given instead of the workload's own.
pub fn evaluate_workload_over<W: DeviceWorkload>(
    calibration: &Calibration,
    auto: &Auto,
    full: &[W::Params],
    progress: &dyn Progress,
) -> Evaluation {
    evaluate_workload_with::<W>(calibration, auto, full, &evaluation_options(), progress)
}

/// [`evaluate_workload_over`] with measurement options of the caller's.
pub fn evaluate_workload_with<W: DeviceWorkload>(
    calibration: &Calibration,
    auto: &Auto,
    full: &[W::Params],
    options: &SweepOptions,
    progress: &dyn Progress,
) -> Evaluation {
    let options = options.clone();
    let devices = &auto.devices;
    let used: Vec<SizeLabel> =
        calibration.sizes.iter().find(|(w, _)| w == W::NAME).map_or_else(Vec::new, |(_, sizes)| sizes.clone());
    let ladder: Vec<_> = full
        .iter()
        .filter(|p| !used.iter().any(|s| *s == p.to_string()) && W::cost(p).bytes <= EVALUATION_MAX_BYTES)
        .cloned()
        .collect();
    let calibrated_bytes =
        full.iter().filter(|p| used.iter().any(|s| *s == p.to_string())).map(|p| W::cost(p).bytes).max().unwrap_or(0);
    let planned: usize = devices.iter().map(|d| d.variants::<W>().len()).sum();
    progress.plan((ladder.len() * planned) as u64);
    let mut rows = sweep_workload::<W>(devices, &ladder, &options, progress).rows;
    let (mut points, mut failures) = (Vec::new(), Vec::new());
    for params in &ladder {
        for placement in [Placement::Host, Placement::Resident] {
            let size = SizeLabel::from(params.to_string());
            let failed =
                |what: String| EvaluationFailure { workload: W::NAME.into(), size: size.clone(), placement, what };
            // Auto's choice as a program calling it would get it: a close call settled by a trial.
            let choice = match auto.decide::<W>(params, placement, None) {
                Ok(choice) => choice,
                Err(e) => {
                    failures.push(failed(format!("auto could not decide: {e}")));
                    continue;
                }
            };
            let label = choice.device.label();
            let measured =
                |rows: &[Row]| rows.iter().any(|r| r.size == size && r.label == label && r.variant == choice.variant);
            // The sweep's budget may have stopped auto's choice before this size (it extrapolates from the size
            // before, and the ladder jumps): measure it on its own, so that every point counts.
            if !measured(&rows) {
                progress.now_measuring(format!("{} {params} on {label}, auto's choice", W::NAME));
                match measure_choice::<W>(&choice, params, &options) {
                    Ok(row) => rows.push(row),
                    Err(e) => failures.push(failed(format!("measuring auto's choice {label} {}: {e}", choice.variant))),
                }
            }
            // Only a workload calibrated at sizes of its own has a ladder to be past (an expression never calibrated
            // is predicted from a base expression's curves).
            let past_ladder = !used.is_empty() && W::cost(params).bytes > calibrated_bytes;
            // The model's prediction for the variant chosen: a trial may have chosen another variant of the device
            // than the one the model preferred (cuBLAS's `cublas` for its `splitk`).
            let predicted_s = auto.predicted_time::<W>(params, placement, &choice);
            let point_of = |rows: &[Row]| evaluation_point(rows, W::NAME, &size, placement, &choice, predicted_s);
            let Some(mut point) = point_of(&rows) else {
                failures.push(failed("no measurement at this size passed its check".to_owned()));
                continue;
            };
            let measure_again = |rows: &mut Vec<Row>, label: &DeviceLabel, variant: &str, pipelined: bool| {
                measure_again::<W>(rows, auto, params, (label, variant, pipelined), &options, progress)
            };
            // A large regret is measured once more, auto's choice and the fastest both (each keeps its faster
            // measurement): on a machine of few cores, a measurement that shared them with another device's threads
            // (a CPU adapter's) can take twice its time, and one such sample should not decide the point.
            if point.regret.is_some_and(|r| r > REMEASURE_ABOVE) {
                let again = [(choice.device.label(), VariantName::from(choice.variant), choice.pipelined)]
                    .into_iter()
                    .chain(fastest_of(&rows, &size, &point.fastest));
                for (label, variant, pipelined) in again {
                    if let Err(what) = measure_again(&mut rows, &label, &variant, pipelined) {
                        failures.push(failed(what));
                    }
                }
                if let Some(again) = point_of(&rows) {
                    point = again;
                }
            }
            // So is a prediction past the ladder further than [`REMEASURE_PREDICTION_OFF`] from auto's choice's
            // measured time: on a 16-core host shared with others, the CPU's stencil at 4096x4096 took twice as
            // long in one evaluation as in the next (measured:
            // docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
            if past_ladder && point.prediction_error().is_some_and(|e| e > REMEASURE_PREDICTION_OFF) {
                if let Err(what) = measure_again(&mut rows, &choice.device.label(), choice.variant, choice.pipelined) {
                    failures.push(failed(what));
                }
                if let Some(again) = point_of(&rows) {
                    point = again;
                }
            }
            point.past_ladder = past_ladder;
            points.push(point);
        }
    }
    Evaluation { points, failures }
}

/// Measures `(label, variant, pipelined)` once more at `params`, into the rows; the error says which failed.
fn measure_again<W: DeviceWorkload>(
    rows: &mut Vec<Row>,
    auto: &Auto,
    params: &W::Params,
    (label, variant, pipelined): (&DeviceLabel, &str, bool),
    options: &SweepOptions,
    progress: &dyn Progress,
) -> std::result::Result<(), String> {
    let on = if pipelined { &auto.pipelined } else { &auto.devices };
    let device = on.iter().find(|d| d.label() == *label).ok_or_else(|| format!("{label} is not open"))?;
    progress.now_measuring(format!("{} {params} on {label}, measured again", W::NAME));
    let m = W::generate(params, options.measure.seed)
        .and_then(|input| device.measure::<W>(variant, &input, &options.measure))
        .map_err(|e| format!("measuring {label} {variant} again: {e}"))?;
    let mut row = Row::new::<W>(device, params, &m);
    row.pipelined_s = pipelined.then_some(row.end_to_end_s);
    rows.push(row);
    Ok(())
}

/// Auto's choice measured on its own at `params` (its pipelined twin's whole run as its pipelined time), checked as
/// every measurement of the sweep is.
fn measure_choice<W: DeviceWorkload>(
    choice: &Choice,
    params: &W::Params,
    options: &SweepOptions,
) -> gpuworthy_core::Result<Row> {
    let m = W::generate(params, options.measure.seed)
        .and_then(|input| choice.device.measure::<W>(choice.variant, &input, &options.measure))?;
    let mut row = Row::new::<W>(&choice.device, params, &m);
    row.pipelined_s = choice.pipelined.then_some(row.end_to_end_s);
    Ok(row)
}

/// The device, variant and path that a point names fastest (`cuda vec4`, `cuda vec4 pipelined`), from the rows at
/// `size`.
fn fastest_of(rows: &[Row], size: &SizeLabel, fastest: &str) -> Option<(DeviceLabel, VariantName, bool)> {
    let pipelined = fastest.ends_with(" pipelined");
    rows.iter()
        .find(|r| r.size == *size && format!("{} {}", r.label, r.variant) == fastest.trim_end_matches(" pipelined"))
        .map(|r| (r.label.clone(), r.variant.clone(), pipelined))
}

/// Auto's `choice` at `size` against the fastest of `rows` there, with the model's prediction for it
/// (`predicted_s`); `None` where nothing was measured at that size.
fn evaluation_point(
    rows: &[Row],
    workload: &str,
    size: &str,
    placement: Placement,
    choice: &Choice,
    predicted_s: Option<f64>,
) -> Option<EvaluationPoint> {
    let time = |r: &Row| match placement {
        Placement::Host | Placement::PinnedHost => r.host_time(),
        Placement::Resident => r.kernel_s,
    };
    // Auto's choice in the transfer mode it chose: pipelined, or the device's phased run.
    let auto_time = |r: &Row| match placement {
        Placement::Host | Placement::PinnedHost if choice.pipelined => r.pipelined_s.unwrap_or(r.end_to_end_s),
        Placement::Host | Placement::PinnedHost => r.phased_host_time(),
        Placement::Resident => r.kernel_s,
    };
    let candidates: Vec<&Row> = rows
        .iter()
        .filter(|r| r.size == size && r.is_full_precision() && !r.check.is_failed() && time(r) > 0.0)
        .collect();
    let fastest = candidates.iter().min_by(|a, b| time(a).total_cmp(&time(b)))?;
    let label = choice.device.label();
    // The faster of auto's choice's measurements, where it was measured again.
    let auto_s = candidates
        .iter()
        .filter(|r| r.label == label && r.variant == choice.variant)
        .map(|r| auto_time(r))
        .min_by(f64::total_cmp);
    Some(EvaluationPoint {
        workload: workload.into(),
        size: size.into(),
        placement,
        auto_device: label,
        auto_variant: choice.variant.into(),
        auto_pipelined: choice.pipelined,
        auto_s,
        fastest: format!(
            "{} {}{}",
            fastest.label,
            fastest.variant,
            if placement.moves_data() && fastest.host_transfer() == "pipelined" { " pipelined" } else { "" }
        ),
        fastest_s: time(fastest),
        regret: auto_s.map(|a| a / time(fastest)),
        predicted_s,
        past_ladder: false,
        by_trial: choice.by_trial,
        reason: choice.reason.clone(),
    })
}
