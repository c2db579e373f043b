//! `gpuworthy calibrate --evaluate --sets`: how often the device set `auto` chooses for data on the host (a device
//! alone, every GPU of a kind together, the CPU beside them: [`choose_set`]) was the fastest set, measured.
//!
//! At each size of a workload's ladder, every set the choice was made among is run: each device alone and each group
//! [`candidate_groups`] forms, with the shares the model balanced for it, through the path each member's prediction
//! took (a member predicted pipelined runs pipelined), each as auto's run on it would go: a device alone through its
//! own run ([`crate::Device::run`]: a group of one would cut and join for nothing), a group through
//! [`DeviceGroup::run`], both returning a fresh output, timed on the host's clock, the median of a few runs after an
//! untimed one whose output is checked against the reference. The
//! regret of a point is the measured time of auto's set over the fastest set's. Only the sets auto chose among are
//! measured: a set with other shares might be faster still, which this evaluation does not claim to know.

use std::time::Duration;

use gpuworthy_core::{Backend, Precision};
use serde::Serialize;

use crate::choose::auto::Auto;
use crate::choose::evaluation::{EVALUATION_MAX_BYTES, EvaluationFailure, REMEASURE_ABOVE, regret_summary};
use crate::choose::group::{GroupPrediction, MemberPrediction, candidate_groups, choose_set, open_set, predict_group};
use crate::device::DeviceWorkload;
use crate::device::group::DeviceGroup;
use crate::measure::names::{SizeLabel, WorkloadName};
use crate::model::Placement;
use crate::model::sweep::Progress;

/// Timed runs of each set at each size, after one untimed (checked).
pub const SET_REPEATS: usize = 3;

/// A set whose untimed run took longer than this is timed once, not [`SET_REPEATS`] times.
const ONE_RUN_ABOVE: Duration = Duration::from_secs(1);

/// One set measured at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredSet {
    /// The set as written (`cuda`, `cpu+cuda×2`), with its shares where it is a group.
    pub set: String,
    /// The model's prediction for it, seconds.
    pub predicted_s: f64,
    /// Its median measured time, seconds.
    pub measured_s: f64,
}

/// One evaluated point: auto's set against the fastest set measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetPoint {
    /// The workload.
    pub workload: WorkloadName,
    /// The size.
    pub size: SizeLabel,
    /// Every set measured, auto's among them.
    pub sets: Vec<MeasuredSet>,
    /// The set auto chose (an entry of `sets`).
    pub auto_set: String,
    /// The fastest set measured.
    pub fastest_set: String,
    /// Auto's set's measured time over the fastest's.
    pub regret: f64,
}

impl SetPoint {
    /// The measured set named `name`.
    pub fn set(&self, name: &str) -> Option<&MeasuredSet> {
        self.sets.iter().find(|s| s.set == name)
    }
}

/// Auto's choices of device set, measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SetEvaluation {
    /// Every point.
    pub points: Vec<SetPoint>,
    /// What could not be measured or decided, with the error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<EvaluationFailure>,
}

impl SetEvaluation {
    /// Adds `other`'s points and failures to these.
    pub fn extend(&mut self, other: SetEvaluation) {
        self.points.extend(other.points);
        self.failures.extend(other.failures);
    }

    /// `(points, points within 10% of the fastest set, median regret, worst regret)`.
    pub fn summary(&self) -> (usize, usize, f64, f64) {
        regret_summary(self.points.iter().map(|p| p.regret).collect())
    }
}

/// A set's name by its members that run, with their shares where it is a group (`cpu+cuda×2 18% / 41% / 41%`), a
/// device alone by its label: a group whose CPU is given nothing is the GPUs' group, and is named so.
fn set_name(set: &GroupPrediction) -> String {
    let running: Vec<MemberPrediction> = set.members.iter().filter(|m| m.fraction > 0.0).cloned().collect();
    match running.as_slice() {
        [only] => only.device.to_string(),
        _ => {
            let running = GroupPrediction { members: running, total_s: set.total_s, slowdowns: None };
            format!("{} {}", running.name(), running.shares())
        }
    }
}

/// The sets auto chooses among for `W` at `params` with data on the host: each device alone (its fastest
/// prediction) and each group that gives more than one member work.
fn candidate_sets<W: DeviceWorkload>(auto: &Auto, params: &W::Params, gpus: usize) -> Vec<GroupPrediction> {
    let Some((predictions, _)) = auto.predict::<W>(params, Placement::Host) else { return Vec::new() };
    let mut sets: Vec<GroupPrediction> = Vec::new();
    for p in &predictions {
        if sets.iter().any(|s| s.members[0].device == p.device) {
            continue; // the device's fastest prediction came first
        }
        sets.push(GroupPrediction {
            members: vec![MemberPrediction { device: p.device.clone(), fraction: 1.0, prediction: Some(p.clone()) }],
            total_s: p.total_s,
            slowdowns: None,
        });
    }
    let groups = candidate_groups(&predictions, gpus)
        .into_iter()
        .filter_map(|members| predict_group::<W>(auto, params, Placement::Host, &members))
        .filter(|g| g.members.iter().filter(|m| m.fraction > 0.0).count() > 1);
    sets.extend(groups);
    sets
}

/// The median time of `run` (one run of a set: its output and its time), after one untimed run whose output is
/// checked against `expected`.
fn time_set<W: DeviceWorkload>(
    input: &W::Input,
    expected: &W::Output,
    run: impl Fn() -> gpuworthy_core::Result<(W::Output, Duration)>,
) -> gpuworthy_core::Result<Duration> {
    let (output, took) = run()?;
    W::check(input, expected, &output, Precision::Fp32)
        .map_err(|m| gpuworthy_core::Error::invalid(format!("the result does not match the reference: {m}")))?;
    drop(output);
    let repeats = if took > ONE_RUN_ABOVE { 1 } else { SET_REPEATS };
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        times.push(run()?.1);
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// One run of `set` on `input`, as [`crate::choose::group::run_on_fastest_set`] runs it: a device alone runs the
/// predicted variant on the whole input ([`crate::Device::run`]), a group its members at once with the set's shares
/// ([`DeviceGroup::run`]); both return a fresh output, as a program calling them gets.
fn run_set<W: DeviceWorkload>(
    set: &GroupPrediction,
    members: &[crate::Device],
    shares: &[f64],
    input: &W::Input,
) -> gpuworthy_core::Result<(W::Output, Duration)> {
    let running: Vec<usize> = (0..shares.len()).filter(|&i| shares[i] > 0.0).collect();
    if let ([only], Some(device)) = (running.as_slice(), running.first().and_then(|&i| members.get(i))) {
        let variant = set.members[*only].prediction.as_ref().map_or_else(
            || device.best_variant::<W>(&W::params(input)),
            |p| {
                device
                    .variants::<W>()
                    .into_iter()
                    .find(|v| *v == p.variant.as_str())
                    .unwrap_or(device.best_variant::<W>(&W::params(input)))
            },
        );
        let started = std::time::Instant::now();
        let output = device.run::<W>(variant, input)?;
        return Ok((output, started.elapsed()));
    }
    let group = DeviceGroup::new(members.to_vec())?;
    let run = group.run::<W>(input, shares)?;
    Ok((run.output, run.parallel + run.join))
}

/// Measures, at each size of `full` that moves no more than [`EVALUATION_MAX_BYTES`], every set auto chooses among
/// for `W` with data on the host, and compares auto's choice ([`choose_set`], with every GPU of the fastest kind this
/// machine has) with the fastest. A workload that does not split has no sets: nothing is measured.
pub fn evaluate_sets_over<W: DeviceWorkload>(
    auto: &Auto,
    full: &[W::Params],
    progress: &dyn Progress,
) -> SetEvaluation {
    let mut evaluation = SetEvaluation::default();
    if W::sharding().is_none() {
        return evaluation;
    }
    let gpus =
        auto.devices.iter().filter(|d| d.kind().is_gpu()).map(crate::choose::group::devices_of_kind).max().unwrap_or(0);
    let sizes: Vec<&W::Params> = full.iter().filter(|p| W::cost(p).bytes <= EVALUATION_MAX_BYTES).collect();
    progress.plan(sizes.len() as u64);
    for params in sizes {
        let size = SizeLabel::from(params.to_string());
        let failed = |what: String| EvaluationFailure {
            workload: W::NAME.into(),
            size: size.clone(),
            placement: Placement::Host,
            what,
        };
        let Some(choice) = choose_set::<W>(auto, params, Placement::Host, gpus) else {
            evaluation.failures.push(failed("the model does not know the workload".to_owned()));
            progress.advance(1);
            continue;
        };
        let (input, expected) = match W::generate(params, 1).and_then(|i| W::reference(&i).map(|e| (i, e))) {
            Ok(made) => made,
            Err(e) => {
                evaluation.failures.push(failed(format!("making the input: {e}")));
                progress.advance(1);
                continue;
            }
        };
        let mut sets = Vec::new();
        let mut opened = Vec::new();
        for set in candidate_sets::<W>(auto, params, gpus) {
            let name = set_name(&set);
            if sets.iter().any(|s: &MeasuredSet| s.set == name) {
                continue; // the same members running with the same shares: measured already
            }
            progress.now_measuring(format!("{} {params} on {name}", W::NAME));
            let measured = open_set(auto, &set).and_then(|(members, shares)| {
                let time = time_set::<W>(&input, &expected, || run_set::<W>(&set, &members, &shares, &input))?;
                Ok((time, members, shares))
            });
            match measured {
                Ok((time, members, shares)) => {
                    sets.push(MeasuredSet { set: name, predicted_s: set.total_s, measured_s: time.as_secs_f64() });
                    opened.push((set, members, shares));
                }
                Err(e) => evaluation.failures.push(failed(format!("{name}: {e}"))),
            }
        }
        progress.advance(1);
        let auto_set = set_name(&choice.prediction);
        let fastest = |sets: &[MeasuredSet]| {
            sets.iter().enumerate().min_by(|a, b| a.1.measured_s.total_cmp(&b.1.measured_s)).map(|(i, _)| i)
        };
        let (Some(mut fastest_at), Some(chosen_at)) = (fastest(&sets), sets.iter().position(|s| s.set == auto_set))
        else {
            evaluation.failures.push(failed(format!("auto's set {auto_set} was not measured")));
            continue;
        };
        // A large regret is measured once more, auto's set and the fastest both, each keeping its faster time, as
        // the evaluation of single devices does ([`REMEASURE_ABOVE`]): one slowed sample should not decide a point.
        if sets[chosen_at].measured_s > REMEASURE_ABOVE * sets[fastest_at].measured_s {
            for at in [chosen_at, fastest_at] {
                let (set, members, shares) = &opened[at];
                progress.now_measuring(format!("{} {params} on {}, measured again", W::NAME, sets[at].set));
                match time_set::<W>(&input, &expected, || run_set::<W>(set, members, shares, &input)) {
                    Ok(again) => sets[at].measured_s = sets[at].measured_s.min(again.as_secs_f64()),
                    Err(e) => evaluation.failures.push(failed(format!("{} measured again: {e}", sets[at].set))),
                }
            }
            fastest_at = fastest(&sets).unwrap_or(fastest_at);
        }
        let (chosen, fastest) = (&sets[chosen_at], &sets[fastest_at]);
        let regret = chosen.measured_s / fastest.measured_s.max(1e-12);
        let fastest_set = fastest.set.clone();
        evaluation.points.push(SetPoint { workload: W::NAME.into(), size, sets, auto_set, fastest_set, regret });
    }
    evaluation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_named_by_its_running_members_with_its_shares() {
        let member = |label: &str, fraction: f64| MemberPrediction {
            device: crate::device::DeviceLabel::named(label),
            fraction,
            prediction: None,
        };
        let group = |members| GroupPrediction { members, total_s: 1.0, slowdowns: None };
        assert_eq!(set_name(&group(vec![member("cuda", 1.0)])), "cuda");
        assert_eq!(set_name(&group(vec![member("cpu", 0.0), member("cuda", 1.0)])), "cuda");
        assert_eq!(set_name(&group(vec![member("cpu", 0.25), member("cuda", 0.75)])), "cpu+cuda 25% / 75%");
        let gpus_only = group(vec![member("cpu", 0.0), member("cuda", 0.5), member("cuda", 0.5)]);
        assert_eq!(set_name(&gpus_only), "cuda×2 50% / 50%");
        let evaluation = SetEvaluation {
            points: [1.0, 1.05, 1.3]
                .iter()
                .map(|&regret| SetPoint {
                    workload: "square".into(),
                    size: "1024".into(),
                    sets: Vec::new(),
                    auto_set: "cuda".into(),
                    fastest_set: "cuda".into(),
                    regret,
                })
                .collect(),
            failures: Vec::new(),
        };
        assert_eq!(evaluation.summary(), (3, 2, 1.05, 1.3));
    }
}
