//! `gpuworthy run WORKLOAD --backend DEVICE` in a process that is one rank of a world (`GPUWORTHY_RANK`,
//! `GPUWORTHY_WORLD_SIZE`, `GPUWORTHY_RENDEZVOUS`): each rank runs its equal share of the units on its own device and
//! publishes its part; rank 0 gathers every part, joins them, checks the whole against the reference and reports
//! each rank's run. Started as `torchrun` starts its processes, one per GPU:
//!
//! ```sh
//! for r in 0 1; do
//!   GPUWORTHY_RANK=$r GPUWORTHY_WORLD_SIZE=2 GPUWORTHY_RENDEZVOUS=/tmp/run1 gpuworthy run square --backend cuda:$r &
//! done; wait
//! ```
//!
//! A module of its own because a rank's run is one part of a group's, measured in its own process: the same cut and
//! join as [`super::run_group`]'s, the parts handed over through the rendezvous ([`gpuworthy::device::rank`]).

use std::time::{Duration, Instant};

use gpuworthy::core::Precision;
use gpuworthy::core::shard::PartBytes;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::device::rank::Rank;
use gpuworthy::measure::duration;
use gpuworthy::measure::size::{ParseSize, WorkloadOptions};
use gpuworthy::{Device, DeviceSpec};

use crate::tool::exit::{Exit, usage};

/// Runs this rank's share of `workload` on `spec` and, on rank 0, joins and checks every rank's.
pub(crate) fn run_as_rank(
    rank: Rank,
    workload: &str,
    spec: DeviceSpec,
    size: Option<&str>,
    params: &WorkloadOptions,
    seed: u64,
) -> anyhow::Result<()> {
    let device = Device::open(spec).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?;
    let mut visitor = AsRank { rank: &rank, device: &device, size, params, seed };
    visit_workload_named(workload, &mut visitor).map_err(usage)?
}

struct AsRank<'a> {
    rank: &'a Rank,
    device: &'a Device,
    size: Option<&'a str>,
    params: &'a WorkloadOptions,
    seed: u64,
}

impl WorkloadVisitor for AsRank<'_> {
    type Output = anyhow::Result<()>;

    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        let Some(sharding) = W::sharding() else {
            return Err(Exit::usage(format!("{} does not split over ranks", W::NAME)));
        };
        let Rank { rank, world, .. } = *self.rank;
        let mut params = match self.size {
            Some(s) => W::Params::parse_size(s).map_err(usage)?,
            None => W::quick_ladder().pop().ok_or_else(|| Exit::usage("the workload has no default size"))?,
        };
        params.apply(self.params).map_err(usage)?;
        self.device.check_size::<W>(&params).map_err(usage)?;
        // Every rank makes the same input from the same seed and cuts its own range: equal shares, since a rank does
        // not know the others' devices.
        let input = W::generate(&params, self.seed).map_err(usage)?;
        let ranges = sharding.split(&params, &vec![1.0; world])?;
        let part = (sharding.cut)(&input, ranges[rank].clone());
        let variant = self.device.best_variant::<W>(&W::params(&part));
        self.device.run::<W>(variant, &part)?;
        let start = Instant::now();
        let output = self.device.run::<W>(variant, &part)?;
        let time = start.elapsed();
        let key = format!("{}-{}", W::NAME, size_key(&params.to_string()));
        self.rank.publish(&format!("{key}.part"), &output.to_part_bytes())?;
        self.rank.publish(&format!("{key}.time"), &time.as_secs_f64().to_part_bytes())?;
        let label = self.device.label();
        if rank != 0 {
            out!(
                "rank {rank} of {world}: {} {params}, {} {:?} on {label} ({variant}) in {}; published to {}",
                W::NAME,
                sharding.unit,
                ranges[rank],
                duration(time),
                self.rank.dir.display()
            );
            return Ok(());
        }
        let parts = self.rank.gather(&format!("{key}.part"))?;
        let times = self.rank.gather(&format!("{key}.time"))?;
        let join_start = Instant::now();
        let outputs = ranges
            .iter()
            .zip(&parts)
            .map(|(range, bytes)| W::Output::from_part_bytes(bytes).map(|o| (range.clone(), o)))
            .collect::<Result<Vec<_>, _>>()?;
        let whole = (sharding.join)(&input, outputs);
        let join = join_start.elapsed();
        self.rank.clear(&format!("{key}.part"))?;
        self.rank.clear(&format!("{key}.time"))?;
        out!("{} {params} over {world} ranks (one process each), split by {} in equal shares:", W::NAME, sharding.unit);
        out!("  {:<6} {:>24} {:>12}", "rank", sharding.unit, "run");
        let mut slowest = Duration::ZERO;
        for (r, (range, bytes)) in ranges.iter().zip(&times).enumerate() {
            let seconds = f64::from_part_bytes(bytes)?;
            let time = Duration::try_from_secs_f64(seconds).unwrap_or_default();
            slowest = slowest.max(time);
            out!("  {:<6} {:>24} {:>12}", r, format!("{}..{}", range.start, range.end), duration(time));
        }
        out!(
            "  the slowest rank {}; rank 0 joined the parts in {} (rank 0 ran on {label}; each rank's device is its own)",
            duration(slowest),
            duration(join)
        );
        let expected = W::reference(&input).map_err(usage)?;
        if let Err(mismatch) = W::check(&input, &expected, &whole, Precision::Fp32) {
            return Err(Exit::check_failed(format!("FAILED: the ranks' joined result: {mismatch}")));
        }
        out!("  ok: the ranks' joined result matches the reference");
        Ok(())
    }
}

/// A size as a rendezvous key's part: `4096x4096` stays, spaces and brackets become `_`.
fn size_key(size: &str) -> String {
    size.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}
