//! `gpuworthy sweep --backends cpu,cuda,cuda:*`: the groups among the backends swept over the same sizes, each size
//! measured on the group and on each member alone, from the host and resident, and the size from which the group
//! pays ("a second GPU pays from 2^24").
//!
//! A module of its own beside the sweep of single devices because a group has no variants of its own (each member
//! runs its best) and its figures are ratios to its members alone, not rows of the device table; it measures with
//! the same functions as `run --backend GROUP` ([`super::run_group`]), so the two cannot disagree.

use std::time::Duration;

use gpuworthy::core::Precision;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::device::group::DeviceGroup;
use gpuworthy::measure::duration;
use gpuworthy::measure::size::{Ladder, ParseSize, SizeRequest};

use crate::tool::exit::{Exit, usage};
use crate::tool::progress::progress_bar;
use gpuworthy::choose::group_run::{calibrated, measure_from_host, measure_resident};

/// How much faster than its fastest member alone a group must be to be said to pay: less is within the noise of a
/// few runs.
const PAYS: f64 = 1.1;

/// Sweeps each of `workloads` on each group over the sizes `request` names, a table per workload and group.
pub(crate) fn sweep_groups(groups: &[DeviceGroup], workloads: &[String], request: &SizeRequest) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    let calibrated = calibrated();
    for group in groups {
        for workload in workloads {
            let mut sweep = GroupSweep { group, request, calibrated: calibrated.as_ref(), failed: &mut failed };
            visit_workload_named(workload, &mut sweep).map_err(usage)??;
        }
    }
    if !failed.is_empty() {
        return Err(Exit::check_failed(format!("FAILED: {}", failed.join("; "))));
    }
    Ok(())
}

/// The sizes `request` names for `W`, with its options set.
fn sizes<W: CommandLineWorkload>(request: &SizeRequest) -> anyhow::Result<Vec<W::Params>> {
    let mut sizes = match &request.ladder {
        Ladder::Full => W::ladder(),
        Ladder::Quick => W::quick_ladder(),
        Ladder::Listed(listed) => {
            listed.iter().map(|s| W::Params::parse_size(s)).collect::<Result<_, _>>().map_err(usage)?
        }
    };
    for params in &mut sizes {
        params.apply(&request.options).map_err(usage)?;
    }
    Ok(sizes)
}

/// One size's figures: the fastest member alone and the group, from the host and resident.
struct Point {
    size: String,
    fastest_member: String,
    alone: Duration,
    group: Duration,
    kernel_alone: Duration,
    kernel_group: Duration,
}

struct GroupSweep<'a> {
    group: &'a DeviceGroup,
    request: &'a SizeRequest,
    calibrated: Option<&'a gpuworthy::choose::auto::Auto>,
    failed: &'a mut Vec<String>,
}

impl WorkloadVisitor for GroupSweep<'_> {
    type Output = anyhow::Result<()>;

    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        let group = self.group;
        if !group.supports::<W>() {
            out!("{} on {}: not every member implements it, or it does not split; left out", W::NAME, group.label());
            return Ok(());
        }
        let progress = progress_bar();
        let mut points = Vec::new();
        for params in sizes::<W>(self.request)? {
            if group.members().iter().any(|m| m.check_size::<W>(&params).is_err()) {
                continue;
            }
            progress.set_message(format!("{} {params} on {}", W::NAME, group.label()));
            let input = W::generate(&params, 1).map_err(usage)?;
            let host = measure_from_host::<W>(group, &input, 3, self.calibrated, Default::default())?;
            let resident = measure_resident::<W>(group, &input, 3, None)?;
            let expected = W::reference(&input).map_err(usage)?;
            for (output, path) in [(&host.median.output, "from the host"), (&resident.output, "resident")] {
                if let Err(mismatch) = W::check(&input, &expected, output, Precision::Fp32) {
                    self.failed.push(format!("{} {params} on {} {path}: {mismatch}", W::NAME, group.label()));
                }
            }
            let (fastest, alone) =
                host.alone.iter().enumerate().min_by_key(|(_, t)| **t).map(|(i, t)| (i, *t)).unwrap_or_default();
            points.push(Point {
                size: params.to_string(),
                fastest_member: group.names()[fastest].clone(),
                alone,
                group: host.group_time(),
                kernel_alone: resident.fastest_alone,
                kernel_group: resident.slowest,
            });
        }
        progress.finish_and_clear();
        print_points(W::NAME, group, &points)
    }
}

/// The smallest size from which every larger size has the group at least [`PAYS`] times faster, if one does.
fn pays_from(points: &[Point], ratio: impl Fn(&Point) -> f64) -> Option<&str> {
    let from = points.iter().rposition(|p| ratio(p) < PAYS).map_or(0, |last_loss| last_loss + 1);
    points.get(from).map(|p| p.size.as_str())
}

fn print_points(workload: &str, group: &DeviceGroup, points: &[Point]) -> anyhow::Result<()> {
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-12);
    out!(
        "{workload} on the group {} (each size: the fastest member alone and the group; medians of 3):",
        group.label()
    );
    out!(
        "  {:<14} {:>12} {:>12} {:>12} {:>7}   {:>12} {:>12} {:>7}",
        "size",
        "fastest",
        "alone",
        "group",
        "ratio",
        "kernel alone",
        "group's",
        "ratio"
    );
    for p in points {
        out!(
            "  {:<14} {:>12} {:>12} {:>12} {:>6.2}x   {:>12} {:>12} {:>6.2}x",
            p.size,
            p.fastest_member,
            duration(p.alone),
            duration(p.group),
            ratio(p.alone, p.group),
            duration(p.kernel_alone),
            duration(p.kernel_group),
            ratio(p.kernel_alone, p.kernel_group)
        );
    }
    let say = |from: Option<&str>| from.map_or("at no size swept".to_owned(), |s| format!("from {s}"));
    out!(
        "  the group pays ({PAYS}x its fastest member or more, at that size and every larger one): from the host {}; \
         resident {}",
        say(pays_from(points, |p| ratio(p.alone, p.group))),
        say(pays_from(points, |p| ratio(p.kernel_alone, p.kernel_group)))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_pays_from_the_first_size_after_its_last_loss() {
        let point = |size: &str, ratio: f64| Point {
            size: size.to_owned(),
            fastest_member: "cuda:0".to_owned(),
            alone: Duration::from_secs_f64(ratio),
            group: Duration::from_secs(1),
            kernel_alone: Duration::from_secs(1),
            kernel_group: Duration::from_secs(1),
        };
        let by_host = |p: &Point| p.alone.as_secs_f64() / p.group.as_secs_f64();
        let points = [point("1K", 0.5), point("1M", 1.5), point("4M", 0.9), point("16M", 1.8), point("64M", 1.9)];
        assert_eq!(pays_from(&points, by_host), Some("16M"));
        assert_eq!(pays_from(&points[..3], by_host), None);
        assert_eq!(pays_from(&points[3..], by_host), Some("16M"));
        assert_eq!(pays_from(&[], by_host), None);
    }
}
