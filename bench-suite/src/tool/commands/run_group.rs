//! `gpuworthy run WORKLOAD --backend cpu+wgpu` (or `cuda:0,1`, `cuda:*`, `cpu+cuda`): one workload at one size split
//! over a device group, each member's share taken from a timed run of each member alone, the group's run repeated
//! and its median reported beside each member alone, and the joined result checked against the reference.
//!
//! A module of its own because a group's run has other phases than one device's (no kernel of its own: the members
//! run at once, each cutting its part from the input, and the host joins), so it shares the size parsing and the
//! exit codes with `run`, not its table. `run --expr` with a group reports through [`run_input_on_group`] too. The
//! measurement itself is the facade's ([`gpuworthy::choose::group_run`]), which the Python package reports as well.

use anyhow::Context;
use gpuworthy::HostMemory;
use gpuworthy::choose::group_run::{HostArrays, calibrated, measure_from_host, measure_resident};
use gpuworthy::core::{BackendKind, Precision};
use gpuworthy::device::DeviceWorkload;
use gpuworthy::device::collective::Collective;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::device::group::DeviceGroup;
use gpuworthy::measure::size::{ParseSize, WorkloadOptions};
use gpuworthy::measure::{MeasureOptions, duration};

use crate::tool::exit::{Exit, usage};

/// Runs `workload` on the group written `group`, as `run` does on one device.
pub(crate) fn run_on_group(
    workload: &str,
    group: &str,
    memory: HostMemory,
    arrays: HostArrays,
    size: Option<&str>,
    params: &WorkloadOptions,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let group = DeviceGroup::open_with_host_memory(group, memory)
        .map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?;
    let mut visitor = OnGroup { group: &group, arrays, size, params, options };
    visit_workload_named(workload, &mut visitor).map_err(usage)?
}

struct OnGroup<'a> {
    group: &'a DeviceGroup,
    arrays: HostArrays,
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
        run_input_on_group::<W>(self.group, &input, &params.to_string(), self.arrays, self.options)
    }
}

/// Runs `input` on `group` and reports it: shares from each member's time alone, the group's median of a few runs
/// beside each member alone, the host's cut and join, and the joined result checked (the report of `run --backend`
/// with a group, for a built-in workload or an expression).
pub(crate) fn run_input_on_group<W: DeviceWorkload>(
    group: &DeviceGroup,
    input: &W::Input,
    shown: &str,
    arrays: HostArrays,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let Some(sharding) = W::sharding() else {
        return Err(Exit::usage(format!("{} does not split over a device group", W::NAME)));
    };
    let repeats = options.min_repetitions.clamp(3, 9);
    let host = measure_from_host::<W>(group, input, repeats, calibrated().as_ref(), arrays)
        .map_err(|e| if matches!(e, gpuworthy::core::Error::InvalidInput(_)) { usage(e) } else { e.into() })?;
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
    let group_time = host.group_time();
    if median.in_place {
        out!(
            "  group: {} (median of {repeats}; in place: the whole output allocated in {}, then each member read its \
             part of the input where it lies, or cut it on its own thread, and wrote into its place; nothing \
             joined), {:.2}x the fastest member alone",
            duration(group_time),
            duration(median.allocate),
            host.speedup()
        );
    } else {
        out!(
            "  group: {} (median of {repeats}; the members at once {}, of which cutting their parts from the input at \
             most {}; joining the parts {}), {:.2}x the fastest member alone",
            duration(group_time),
            duration(median.parallel),
            duration(median.split),
            duration(median.join),
            host.speedup()
        );
    }
    if let Some((0, _)) = host.page_lock {
        out!("  no member page-locks host memory (only CUDA GPUs do): the arrays stayed pageable");
    } else if let Some((bytes, took)) = host.page_lock {
        out!(
            "  the input and the output page-locked in place once, before the timed runs: {:.1} MiB in {}",
            bytes as f64 / (1 << 20) as f64,
            duration(took)
        );
    }
    if arrays.reuse_output || arrays.page_locked {
        out!("  every timed run, the group's and each member's alone, wrote into the output of the run before it");
    }
    let collective = nccl_over(group)?;
    let resident = measure_resident::<W>(group, input, repeats, collective.as_ref())?;
    let resident_shares: Vec<String> = {
        let total: f64 = resident.shares.iter().sum();
        resident.shares.iter().map(|s| format!("{:.1}%", 100.0 * s / total)).collect()
    };
    out!(
        "  resident parts in proportion to each member's kernel alone on the whole input: {}",
        resident_shares.join(" / ")
    );
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
    out!(
        "  resident, a launch with its download and join on the host's clock: {} (the fastest member alone, a launch \
         and its download: {}, {:.2}x)",
        duration(resident.with_combine),
        duration(resident.with_combine_alone),
        resident.speedup_with_combine()
    );
    if let Some(step) = &resident.with_all_reduce {
        out!(
            "  resident, a launch with its combine through NCCL (an all-reduce on the GPUs, the value downloaded from \
             the first): {} ({:.2}x the fastest member alone; the host's combine above: {}): the launches enqueued in \
             {}, the all-reduce in {}, the value downloaded {} later",
            duration(step.total),
            resident.with_combine_alone.as_secs_f64() / step.total.as_secs_f64().max(1e-12),
            duration(resident.with_combine),
            duration(step.launches),
            duration(step.all_reduce),
            duration(step.download)
        );
    }
    let all_reduced = resident.with_all_reduce.map(|step| step.output);
    let resident = resident.output;
    if options.validate {
        let expected = W::reference(input).map_err(usage)?;
        let mut outputs = vec![(&median.output, "the joined result"), (&resident, "the resident parts' joined result")];
        if let Some(output) = &all_reduced {
            outputs.push((output, "the resident parts' result combined through NCCL"));
        }
        for (output, what) in outputs {
            if let Err(mismatch) = W::check(input, &expected, output, Precision::Fp32) {
                return Err(Exit::check_failed(format!("FAILED: {what}: {mismatch}")));
            }
        }
        out!("  ok: the joined result matches the reference, from the host and from the resident parts");
    }
    Ok(())
}

/// A collective over `group` where every member is a CUDA GPU (two or more), for a reduction's combine on the GPUs;
/// `None` for any other group, and where NCCL is missing (said, not an error: the host's combine still runs).
fn nccl_over(group: &DeviceGroup) -> anyhow::Result<Option<Collective>> {
    let all_cuda = group.members().iter().all(|m| m.backend().kind() == BackendKind::Cuda);
    if !all_cuda || group.members().len() < 2 {
        return Ok(None);
    }
    match Collective::open(group) {
        Ok(collective) => Ok(Some(collective)),
        Err(e) if e.is_unavailable() => {
            out!("  no combine through NCCL: {e}");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
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
