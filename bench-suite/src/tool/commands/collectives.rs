//! `gpuworthy collectives`: what the GPUs' own traffic costs, through NCCL: an all-reduce of one value (the latency a
//! reduction's combine pays) and of a large array (the bandwidth a broadcast or a halo exchange could reach), and a
//! peer copy each way. One process driving every GPU of `--backend cuda:0,1` (or `cuda:*`), or, started as a rank
//! (`GPUWORTHY_RANK`, `GPUWORTHY_WORLD_SIZE`, `GPUWORTHY_RENDEZVOUS`), this process's `--backend cuda:N` as one rank
//! of a world of processes, the NCCL identifier handed over through the rendezvous.
//!
//! A command of its own, beside `transfers` (the host's links), because these figures belong to a set of devices
//! rather than to one, and because a rank's run of it is the smallest test that processes can talk at all.

use gpuworthy::device::collective::Collective;
use gpuworthy::device::group::DeviceGroup;
use gpuworthy::device::rank::Rank;
use gpuworthy::measure::{Stats, duration};
use gpuworthy::{Device, DeviceSpec};

use crate::tool::exit::{Exit, usage};

/// `gpuworthy collectives`: NCCL's all-reduce of four bytes and of `size`, and peer copies of `size`, each the
/// median of `repeats` after one to warm up and check.
pub(crate) fn collectives(backend: &str, size: &str, repeats: usize) -> anyhow::Result<()> {
    let bytes = gpuworthy::measure::size::parse_count(size).map_err(usage)?;
    if bytes == 0 {
        return Err(Exit::usage("--size must be at least one byte"));
    }
    if repeats == 0 {
        return Err(Exit::usage("--repeats must be at least 1"));
    }
    let rank = Rank::from_env().map_err(usage)?;
    // Usage first, before any library is probed: a rank names one CUDA device, a process a group of them.
    let cuda_only = backend.split('+').all(|part| part.trim() == "cuda" || part.trim().starts_with("cuda:"));
    match &rank {
        Some(_) if !cuda_only || DeviceGroup::is_group(backend) => {
            return Err(Exit::usage(format!("a rank's collective runs on one CUDA device (cuda:N), not {backend}")));
        }
        None if !cuda_only || !DeviceGroup::is_group(backend) => {
            return Err(Exit::usage(format!(
                "collectives runs over a group of CUDA devices (cuda:0,1 or cuda:*), not {backend}; one rank of \
                 several processes takes GPUWORTHY_RANK, GPUWORTHY_WORLD_SIZE and GPUWORTHY_RENDEZVOUS"
            )));
        }
        _ => {}
    }
    let version = Collective::nccl_version()?;
    let collective = match &rank {
        Some(rank) => {
            let spec: DeviceSpec = backend.parse().map_err(usage)?;
            Collective::for_rank(&Device::open(spec)?, rank)?
        }
        None => Collective::open(&DeviceGroup::open(backend)?)?,
    };
    let world = collective.world();
    let driving = collective.names().join(", ");
    match &rank {
        Some(rank) => out!("NCCL {version}, rank {} of {world} on {driving}, median of {repeats}:", rank.rank),
        None => out!("NCCL {version}, one process driving {driving} ({world} ranks), median of {repeats}:"),
    }
    let one = collective.time_all_reduce(4, repeats)?;
    out!("  all-reduce (sum) of 4 B: {}", timing(&one));
    let large = collective.time_all_reduce(bytes, repeats)?;
    let algbw = bytes as f64 / large.median.as_secs_f64() / 1e9;
    // nccl-tests' bus bandwidth: what each link carried, 2(n-1)/n of the array for a ring all-reduce over n ranks.
    let busbw = algbw * 2.0 * (world as f64 - 1.0) / world as f64;
    out!(
        "  all-reduce (sum) of {}: {}, {algbw:.1} GB/s algorithm bandwidth ({busbw:.1} GB/s on each link)",
        amount(bytes),
        timing(&large)
    );
    let members = collective.names().len();
    for from in 0..members {
        for to in (0..members).filter(|&to| to != from) {
            let copy = collective.time_peer_copy(from, to, bytes, repeats)?;
            out!(
                "  peer copy {} -> {} of {}: {}, {:.1} GB/s",
                collective.names()[from],
                collective.names()[to],
                amount(bytes),
                timing(&copy),
                bytes as f64 / copy.median.as_secs_f64() / 1e9
            );
        }
    }
    out!("  ok: every all-reduce and copy checked on the first run");
    Ok(())
}

/// A median with its spread (the 25th to 75th percentile).
fn timing(stats: &Stats) -> String {
    format!("{} (p25-p75 {}-{})", duration(stats.median), duration(stats.p25), duration(stats.p75))
}

/// Bytes as the largest binary unit they fill (`256.0 MiB`, `4 B`).
fn amount(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
