//! A device group's run measured, with the shares chosen: from the host (each member alone on the whole input, the
//! shares, then the group's median run) and resident (upload once, launches timed on the host's clock and on each
//! member's own timer, download and join).
//!
//! It sits with the choices because the shares come from them (the calibration's balance where it predicts every
//! member, [`predict_group`], else each member's speed alone), and it is the one measurement of a group that the
//! command line's `run --backend GROUP` and the Python package's `run(backend=GROUP)` both report, so neither
//! measures it in its own way.

use std::time::{Duration, Instant};

use gpuworthy_core::{Backend, Error, Result};

use crate::choose::auto::Auto;
use crate::choose::group::predict_group;
use crate::device::DeviceWorkload;
use crate::device::collective::{AllReduceStep, Collective};
use crate::device::group::{DeviceGroup, GroupRun, shares_from_times};
use crate::model::Placement;

/// A group's run from the host, measured ([`measure_from_host`]).
pub struct FromHost<W: DeviceWorkload> {
    /// Each member's time alone on the whole input, in member order.
    pub alone: Vec<Duration>,
    /// The shares the group ran with.
    pub shares: Vec<f64>,
    /// Where the shares came from, in words.
    pub shares_from: String,
    /// The group's median run (by its members' time and the join).
    pub median: GroupRun<W>,
    /// Where the arrays were page-locked: the bytes locked and how long locking took, once, before the timed runs.
    pub page_lock: Option<(usize, Duration)>,
}

impl<W: DeviceWorkload> FromHost<W> {
    /// The group's time: its members at once and the join.
    pub fn group_time(&self) -> Duration {
        self.median.parallel + self.median.join
    }

    /// The fastest member's time alone over the group's: what the group bought (above 1) or cost (below).
    pub fn speedup(&self) -> f64 {
        let fastest_alone = self.alone.iter().copied().min().unwrap_or(Duration::ZERO);
        fastest_alone.as_secs_f64() / self.group_time().as_secs_f64().max(1e-12)
    }
}

/// This machine's calibrated model, where it has one: the shares of a group's run come from it.
pub fn calibrated() -> Option<Auto> {
    Auto::open().ok().filter(|auto| auto.model.is_some())
}

/// How a group's run from the host treats the host's arrays ([`measure_from_host`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostArrays {
    /// Every timed run, the group's and each member's alone, writes into an output kept from the run before, as
    /// `out=` does, so that none maps fresh pages.
    pub reuse_output: bool,
    /// The input's arrays and the kept output are page-locked in place once, before the timed runs (as
    /// `tensor.pin_memory()`), so that the GPUs copy straight from and to them, with no staging copy on the cores.
    /// Implies `reuse_output`.
    pub page_locked: bool,
}

/// Measures `input` on `group` from the host: each member alone on the whole input, the shares (predicted by
/// `calibrated`'s model where it knows every member, else in proportion to each member's speed alone), and the
/// median of `repeats` runs of the group with those shares, the host's arrays treated as `arrays` says.
pub fn measure_from_host<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    repeats: usize,
    calibrated: Option<&Auto>,
    arrays: HostArrays,
) -> Result<FromHost<W>> {
    let reuse = arrays.reuse_output || arrays.page_locked;
    // The output the timed runs write into: allocated (and mapped) before any of them.
    let in_place = W::sharding().and_then(|s| s.in_place);
    let mut kept = if reuse { in_place.as_ref().and_then(|p| (p.output)(input, None)) } else { None };
    let mut locks = Vec::new();
    let mut page_lock = None;
    if arrays.page_locked {
        let output = kept.as_mut().ok_or_else(|| {
            Error::invalid(format!("{} is not written in place: there is no output to page-lock", W::NAME))
        })?;
        // SAFETY: `input` is borrowed for this whole function, and the kept output is only ever moved (never
        // freed) until the locks are dropped below: a run that fails puts it back into `kept`
        // ([`DeviceGroup::run_reusing`]), and `locks`, declared after `kept`, drops first on every early return.
        let (held, took) = unsafe { group.page_lock::<W>(input, output) }?;
        locks = held;
        page_lock = Some((locks.iter().map(|l| l.bytes()).sum::<usize>(), took));
    }
    let alone = group.time_each_alone::<W>(input, kept.as_mut())?;
    let labels: Vec<_> = group.members().iter().map(|m| m.label()).collect();
    let predicted = calibrated.and_then(|auto| predict_group::<W>(auto, &W::params(input), Placement::Host, &labels));
    let (shares, shares_from) = match predicted {
        Some(p) => (
            p.members.iter().map(|m| m.fraction).collect(),
            format!(
                "as the calibration balances them (predicted {})",
                crate::measure::duration(Duration::from_secs_f64(p.total_s))
            ),
        ),
        None => (shares_from_times(&alone), "in proportion to each member's time alone".to_owned()),
    };
    let mut runs: Vec<GroupRun<W>> = Vec::with_capacity(repeats.max(1));
    for _ in 0..repeats.max(1) {
        let mut run = group.run_reusing::<W>(input, &shares, &mut kept)?;
        if reuse {
            // The run keeps a copy for the check; its output itself goes on to the next run.
            let copy = run.output.clone();
            kept = Some(std::mem::replace(&mut run.output, copy));
        }
        runs.push(run);
    }
    drop(locks);
    runs.sort_by_key(|r| r.parallel + r.join);
    let median = runs.swap_remove(runs.len() / 2);
    Ok(FromHost { alone, shares, shares_from, median, page_lock })
}

/// A group's resident phases, measured ([`measure_resident`]).
pub struct Resident<O> {
    /// Each member's share of the resident parts: in proportion to its kernel alone on the whole input.
    pub shares: Vec<f64>,
    /// The parts uploaded to every member at once.
    pub upload: Duration,
    /// A launch of every part on the host's clock (median).
    pub wall: Duration,
    /// The slowest member's kernel on its own timer (median): the group's kernel.
    pub slowest: Duration,
    /// The fastest member's kernel on the whole input alone (median).
    pub fastest_alone: Duration,
    /// A launch of every part with its download and the parts' join, on the host's clock (median): the group's
    /// resident step with its combine ([`DeviceGroup::launch_and_join`]).
    pub with_combine: Duration,
    /// The fastest member alone on the whole input, a launch and its download on the host's clock (median): the
    /// same step on one device.
    pub with_combine_alone: Duration,
    /// With a collective over the group's GPUs and a reduction whose value stays on them: the step of median total
    /// time with its combine done by an NCCL all-reduce on the GPUs and the value downloaded from one
    /// ([`DeviceGroup::launch_and_all_reduce`]), its phases, and its output, to be checked like the others.
    pub with_all_reduce: Option<AllReduceStep<O>>,
    /// The parts downloaded at once.
    pub download: Duration,
    /// The parts joined.
    pub join: Duration,
    /// One launch's joined output on freshly uploaded parts.
    pub output: O,
}

impl<O> Resident<O> {
    /// The group's kernel against the fastest member's alone.
    pub fn speedup(&self) -> f64 {
        self.fastest_alone.as_secs_f64() / self.slowest.as_secs_f64().max(1e-12)
    }

    /// The group's launch with its combine against the fastest member's launch with its download, both on the host's
    /// clock.
    pub fn speedup_with_combine(&self) -> f64 {
        self.with_combine_alone.as_secs_f64() / self.with_combine.as_secs_f64().max(1e-12)
    }
}

/// The group's resident phases: the parts uploaded to every member at once, `repeats` launches (each the wall time
/// of all members and the slowest member's kernel on its own timer, medians) beside the fastest member's kernel on
/// the whole input alone, and the parts downloaded and joined; the output is one launch's on freshly uploaded parts.
///
/// The parts are in proportion to each member's resident kernel alone on the whole input, not to its run from the
/// host: a resident launch pays no transfer, and shares taken from runs from the host (noisy, and dominated by the
/// links) left one of two equal H200s with 55.4% of `s = sum(x*x)` at 2^30 and its kernel 545 µs against the other's
/// (measured: docs/results/nvidia-h200-x2/groups/groups-runs-6.txt).
///
/// With `collective` (opened over the group's members), a reduction's step is also measured with its combine on the
/// GPUs ([`Resident::with_all_reduce`]); any other workload leaves it out.
pub fn measure_resident<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    repeats: usize,
    collective: Option<&Collective>,
) -> Result<Resident<W::Output>> {
    let repeats = repeats.max(1);
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    // Each member alone on the whole input, resident, one after another (so one member's data is freed before the
    // next uploads).
    let mut alone = Vec::with_capacity(group.members().len());
    for member in group.members() {
        let variant = member.best_variant::<W>(&W::params(input));
        let mut resident = member.upload::<W>(input)?;
        member.launch::<W>(variant, &mut resident)?;
        let mut kernels = Vec::with_capacity(repeats);
        let mut steps = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            kernels.push(member.time_on_device(&mut || member.launch::<W>(variant, &mut resident))?);
            let start = Instant::now();
            member.launch::<W>(variant, &mut resident)?;
            member.download::<W>(&mut resident)?;
            steps.push(start.elapsed());
        }
        alone.push((median(kernels), median(steps)));
    }
    let fastest = alone.iter().min_by_key(|(kernel, _)| *kernel).copied().unwrap_or_default();
    let (fastest_alone, with_combine_alone) = fastest;
    let shares = shares_from_times(&alone.iter().map(|(kernel, _)| *kernel).collect::<Vec<_>>());
    let shares = &shares;
    let upload_start = Instant::now();
    let mut resident = group.upload::<W>(input, shares)?;
    let upload = upload_start.elapsed();
    group.launch::<W>(&mut resident)?;
    let launches: Vec<_> = (0..repeats).map(|_| group.launch::<W>(&mut resident)).collect::<Result<_>>()?;
    let wall = median(launches.iter().map(|l| l.wall).collect());
    let slowest = median(launches.iter().map(|l| l.slowest()).collect());
    let steps = (0..repeats).map(|_| group.launch_and_join::<W>(&mut resident, input).map(|(_, t)| t));
    let with_combine = median(steps.collect::<Result<_>>()?);
    let (_, download, join) = group.download::<W>(&mut resident, input)?;
    drop(resident);
    let with_all_reduce = match collective {
        Some(collective) if W::sharding().is_some_and(|s| s.in_place.is_none()) => {
            // On parts of their own: an all-reduce leaves every member holding the whole sum.
            let mut parts = group.upload::<W>(input, shares)?;
            if Collective::keeps_value_on_gpus(&mut parts) {
                group.launch_and_all_reduce::<W>(collective, &mut parts)?;
                let steps = (0..repeats).map(|_| group.launch_and_all_reduce::<W>(collective, &mut parts));
                let mut steps = steps.collect::<Result<Vec<_>>>()?;
                steps.sort_by_key(|step| step.total);
                Some(steps.swap_remove(steps.len() / 2))
            } else {
                None
            }
        }
        _ => None,
    };
    // The result checked is one launch's on freshly uploaded parts: a launch may update its data in place (saxpy's
    // y), so the timed launches' result is not the reference's.
    let mut fresh = group.upload::<W>(input, shares)?;
    group.launch::<W>(&mut fresh)?;
    let (output, _, _) = group.download::<W>(&mut fresh, input)?;
    Ok(Resident {
        shares: shares.clone(),
        upload,
        wall,
        slowest,
        fastest_alone,
        with_combine,
        with_combine_alone,
        with_all_reduce,
        download,
        join,
        output,
    })
}
