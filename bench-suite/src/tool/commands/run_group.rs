//! `gpuworthy run WORKLOAD --backend cpu+wgpu` (or `cuda:0,1`, `cuda:*`, `cpu+cuda`): one workload at one size split
//! over a device group, each member's share taken from a timed run of each member alone, the group's run repeated
//! and its median reported beside each member alone, and the joined result checked against the reference.
//!
//! A module of its own because a group's run has other phases than one device's (no kernel of its own: the members
//! run at once, each cutting its part from the input, and the host joins), so it shares the size parsing and the
//! exit codes with `run`, not its table. `run --expr` with a group reports through [`run_input_on_group`] too.

use std::time::Duration;

use anyhow::Context;
use gpuworthy::choose::auto::Auto;
use gpuworthy::choose::group::predict_group;
use gpuworthy::core::{Backend, Precision};
use gpuworthy::device::DeviceWorkload;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::device::group::{DeviceGroup, GroupRun, shares_from_times};
use gpuworthy::measure::size::{ParseSize, WorkloadOptions};
use gpuworthy::measure::{MeasureOptions, duration};
use gpuworthy::model::Placement;

use crate::tool::exit::{Exit, usage};

/// Runs `workload` on the group written `group`, as `run` does on one device.
pub(crate) fn run_on_group(
    workload: &str,
    group: &str,
    size: Option<&str>,
    params: &WorkloadOptions,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let group = DeviceGroup::open(group).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?;
    let mut visitor = OnGroup { group: &group, size, params, options };
    visit_workload_named(workload, &mut visitor).map_err(usage)?
}

struct OnGroup<'a> {
    group: &'a DeviceGroup,
    size: Option<&'a str>,
    params: &'a WorkloadOptions,
    options: &'a MeasureOptions,
}

impl WorkloadVisitor for OnGroup<'_> {
    type Output = anyhow::Result<()>;

    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        if W::sharding().is_none() {
            return Err(Exit::usage(format!(
                "{} does not split over a device group yet; the workloads that do: {}",
                W::NAME,
                splitting_workloads().join(", ")
            )));
        }
        let mut params = match self.size {
            Some(s) => W::Params::parse_size(s).map_err(usage)?,
            None => W::quick_ladder().pop().context("the workload has no default size")?,
        };
        params.apply(self.params).map_err(usage)?;
        for member in self.group.members() {
            member.check_size::<W>(&params).map_err(usage)?;
        }
        let input = W::generate(&params, self.options.seed).map_err(usage)?;
        run_input_on_group::<W>(self.group, &input, &params.to_string(), self.options)
    }
}

/// Runs `input` on `group` and reports it: shares from each member's time alone, the group's median of a few runs
/// beside each member alone, the host's cut and join, and the joined result checked (the report of `run --backend`
/// with a group, for a built-in workload or an expression).
pub(crate) fn run_input_on_group<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    shown: &str,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let Some(sharding) = W::sharding() else {
        return Err(Exit::usage(format!("{} does not split over a device group", W::NAME)));
    };
    let repeats = options.min_repetitions.clamp(3, 9);
    let host = from_host::<W>(group, input, repeats, calibrated().as_ref())?;
    let (alone, shares, median) = (&host.alone, &host.shares, &host.median);
    let total: f64 = shares.iter().sum();
    let by_cost = if sharding.unit_costs.is_some() { ", where its estimated cost divides so" } else { "" };
    out!(
        "{} {shown} on the group {} ({} members), split by {} {}{by_cost}:",
        W::NAME,
        group.label(),
        group.members().len(),
        sharding.unit,
        host.shares_from
    );
    out!(
        "  {:<12} {:>7} {:>24} {:>18} {:>12} {:>12}",
        "member",
        "share",
        sharding.unit,
        "variant",
        "in group",
        "alone"
    );
    for (i, name) in group.names().iter().enumerate() {
        let part = median.members.iter().find(|m| m.member == i);
        let units = part.map_or("none".to_owned(), |p| format!("{}..{}", p.units.start, p.units.end));
        let variant = part.map_or("-", |p| p.variant);
        let in_group = part.map_or("-".to_owned(), |p| duration(p.time));
        out!(
            "  {:<12} {:>6.1}% {:>24} {:>18} {:>12} {:>12}",
            name,
            100.0 * shares[i] / total,
            units,
            variant,
            in_group,
            duration(alone[i])
        );
    }
    let fastest_alone = alone.iter().copied().min().unwrap_or(Duration::ZERO);
    let group_time = host.group_time();
    out!(
        "  group: {} (median of {repeats}; the members at once {}, of which cutting their parts from the input at \
         most {}; joining the parts {}), {:.2}x the fastest member alone",
        duration(group_time),
        duration(median.parallel),
        duration(median.split),
        duration(median.join),
        fastest_alone.as_secs_f64() / group_time.as_secs_f64().max(1e-12)
    );
    let resident = resident_phases::<W>(group, input, shares, repeats)?;
    out!(
        "  resident: upload to every member at once {}; a launch {} on the host's clock, its slowest member's kernel {} \
         on its own timer (the fastest member alone on the whole input: {}, {:.2}x); download {} and join {}",
        duration(resident.upload),
        duration(resident.wall),
        duration(resident.slowest),
        duration(resident.fastest_alone),
        resident.speedup(),
        duration(resident.download),
        duration(resident.join)
    );
    let resident = resident.output;
    if options.validate {
        let expected = W::reference(input).map_err(usage)?;
        for (output, what) in [(&median.output, "the joined result"), (&resident, "the resident parts' joined result")]
        {
            if let Err(mismatch) = W::check(input, &expected, output, Precision::Full) {
                return Err(Exit::check_failed(format!("FAILED: {what}: {mismatch}")));
            }
        }
        out!("  ok: the joined result matches the reference, from the host and from the resident parts");
    }
    Ok(())
}

/// A group's run from the host, measured: each member alone on the whole input, the shares (from the calibration
/// where it predicts every member, else in proportion to each member's speed alone), and the median of `repeats`
/// runs of the group with those shares.
pub(crate) struct FromHost<W: DeviceWorkload> {
    /// Each member's time alone, in member order.
    pub alone: Vec<Duration>,
    /// The shares the group ran with.
    pub shares: Vec<f64>,
    /// Where the shares came from, in words.
    pub shares_from: String,
    /// The group's median run (by its members' time and the join).
    pub median: GroupRun<W>,
}

impl<W: DeviceWorkload> FromHost<W> {
    /// The group's time: its members at once and the join.
    pub fn group_time(&self) -> Duration {
        self.median.parallel + self.median.join
    }
}

/// This machine's calibrated model, where it has one: the shares of a group's run come from it.
pub(crate) fn calibrated() -> Option<Auto> {
    Auto::open().ok().filter(|auto| auto.model.is_some())
}

/// Measures `input` on `group` from the host ([`FromHost`]), the shares predicted by `calibrated`'s model where it
/// knows every member ([`predict_group`]).
pub(crate) fn from_host<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    repeats: usize,
    calibrated: Option<&Auto>,
) -> anyhow::Result<FromHost<W>> {
    let alone = group.time_each_alone::<W>(input)?;
    let labels: Vec<_> = group.members().iter().map(|m| m.label()).collect();
    let predicted = calibrated.and_then(|auto| predict_group::<W>(auto, &W::params(input), Placement::Host, &labels));
    let (shares, shares_from) = match predicted {
        Some(p) => (
            p.members.iter().map(|m| m.fraction).collect(),
            format!("as the calibration balances them (predicted {})", duration(Duration::from_secs_f64(p.total_s))),
        ),
        None => (shares_from_times(&alone), "in proportion to each member's time alone".to_owned()),
    };
    let mut runs = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        runs.push(group.run::<W>(input, &shares)?);
    }
    runs.sort_by_key(|r| r.parallel + r.join);
    let median = runs.swap_remove(runs.len() / 2);
    Ok(FromHost { alone, shares, shares_from, median })
}

/// A group's resident phases, measured ([`resident_phases`]).
pub(crate) struct Resident<O> {
    /// The parts uploaded to every member at once.
    pub upload: Duration,
    /// A launch of every part on the host's clock (median).
    pub wall: Duration,
    /// The slowest member's kernel on its own timer (median): the group's kernel.
    pub slowest: Duration,
    /// The fastest member's kernel on the whole input alone (median).
    pub fastest_alone: Duration,
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
}

/// The group's resident phases: the parts uploaded to every member at once, `repeats` launches (each the wall time
/// of all members and the slowest member's kernel on its own timer, medians) beside the fastest member's kernel on
/// the whole input alone, and the parts downloaded and joined; the output is one launch's on freshly uploaded parts.
pub(crate) fn resident_phases<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    shares: &[f64],
    repeats: usize,
) -> anyhow::Result<Resident<W::Output>> {
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
        for _ in 0..repeats {
            kernels.push(member.time_on_device(&mut || member.launch::<W>(variant, &mut resident))?);
        }
        alone.push(median(kernels));
    }
    let fastest_alone = alone.iter().copied().min().unwrap_or_default();
    let upload_start = std::time::Instant::now();
    let mut resident = group.upload::<W>(input, shares)?;
    let upload = upload_start.elapsed();
    group.launch::<W>(&mut resident)?;
    let launches: Vec<_> = (0..repeats).map(|_| group.launch::<W>(&mut resident)).collect::<Result<_, _>>()?;
    let wall = median(launches.iter().map(|l| l.wall).collect());
    let slowest = median(launches.iter().map(|l| l.slowest()).collect());
    let (_, download, join) = group.download::<W>(&mut resident, input)?;
    drop(resident);
    // The result checked is one launch's on freshly uploaded parts: a launch may update its data in place (saxpy's
    // y), so the timed launches' result is not the reference's.
    let mut fresh = group.upload::<W>(input, shares)?;
    group.launch::<W>(&mut fresh)?;
    let (output, _, _) = group.download::<W>(&mut fresh, input)?;
    Ok(Resident { upload, wall, slowest, fastest_alone, download, join, output })
}

/// The built-in workloads a group can run.
fn splitting_workloads() -> Vec<&'static str> {
    struct Splits;
    impl WorkloadVisitor for Splits {
        type Output = Option<&'static str>;
        fn visit<W: CommandLineWorkload>(&mut self) -> Option<&'static str> {
            W::sharding().map(|_| W::NAME)
        }
    }
    gpuworthy::device::dispatch::visit_each_workload(&mut Splits).into_iter().flatten().collect()
}
