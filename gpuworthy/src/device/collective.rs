//! GPU-to-GPU traffic for device groups and ranks, through NCCL: a [`Collective`] is one communicator over a group's
//! CUDA members (one process, a thread driving them all) or over this process's device as one rank of a world of
//! processes (the identifier rank 0 makes handed to the others through the rendezvous, as `torchrun`'s ranks hand
//! theirs through `MASTER_ADDR`).
//!
//! It is a value of its own beside [`DeviceGroup`] rather than part of it because opening one is a collective act
//! (every rank must join, NCCL connects its channels) and costs tens of milliseconds, and because only groups of CUDA
//! devices have one: a group stays cheap to open and the same for every backend, and the code that wants the GPUs to
//! talk opens the collective once and passes it where it is used ([`DeviceGroup::launch_and_all_reduce`]).

use std::time::Duration;

#[cfg(not(feature = "cuda"))]
use gpuworthy_core::BackendKind;
use gpuworthy_core::{Error, Result};

use crate::device::group::DeviceGroup;
use crate::device::rank::Rank;
use crate::device::{Device, DeviceWorkload};
use crate::measure::Stats;

/// A communicator over CUDA devices (see the module's documentation).
#[derive(Debug)]
pub struct Collective {
    #[cfg(feature = "cuda")]
    inner: gpuworthy_cuda::collective::Collective,
    /// How reports name this process's members, in rank order.
    names: Vec<String>,
}

/// The rendezvous key under which rank 0 publishes the communicator's identifier.
#[cfg(feature = "cuda")]
const ID_KEY: &str = "nccl-id";

impl Collective {
    /// NCCL's version as `major.minor.patch`, or [`Error::Unavailable`] naming what is missing.
    pub fn nccl_version() -> Result<String> {
        #[cfg(feature = "cuda")]
        {
            let v = gpuworthy_cuda::collective::nccl_version()?;
            // NCCL_VERSION_CODE is major * 10000 + minor * 100 + patch from 2.9 on.
            Ok(format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
        }
        #[cfg(not(feature = "cuda"))]
        Err(not_built())
    }

    /// One communicator over every member of `group`, all CUDA devices driven by this process (at least two).
    pub fn open(group: &DeviceGroup) -> Result<Collective> {
        let not_cuda = |name: &str| {
            Error::invalid(format!(
                "{} has a member that is not a CUDA device ({name}): NCCL joins CUDA devices only",
                group.label()
            ))
        };
        #[cfg(feature = "cuda")]
        {
            let mut cuda = Vec::new();
            for (device, name) in group.members().iter().zip(group.names()) {
                match device {
                    Device::Cuda(backend) => cuda.push(std::sync::Arc::clone(backend)),
                    _ => return Err(not_cuda(name)),
                }
            }
            let inner = gpuworthy_cuda::collective::Collective::one_process(&cuda)?;
            Ok(Collective { inner, names: group.names().to_vec() })
        }
        #[cfg(not(feature = "cuda"))]
        {
            // Built without CUDA, every member is another backend's.
            Err(group.names().first().map_or_else(not_built, |name| not_cuda(name)))
        }
    }

    /// `device` as `rank`'s member of a communicator over every rank: rank 0 makes the identifier and publishes it
    /// in the rendezvous, the others wait for it there; then every rank joins (NCCL waits for all of them).
    pub fn for_rank(device: &Device, rank: &Rank) -> Result<Collective> {
        #[cfg(feature = "cuda")]
        if let Device::Cuda(backend) = device {
            // Every rank publishes under the key (rank 0 the identifier, the others nothing) so that each can gather
            // it and read rank 0's: the gather waits for rank 0 however late it comes.
            let id = if rank.rank == 0 { gpuworthy_cuda::collective::unique_id()?.to_vec() } else { Vec::new() };
            rank.publish(ID_KEY, &id)?;
            let published = rank.gather(ID_KEY)?;
            let id: gpuworthy_cuda::collective::UniqueId = published[0].as_slice().try_into().map_err(|_| {
                Error::invalid(format!(
                    "rank 0's NCCL identifier in {} is {} bytes, not 128",
                    rank.dir.display(),
                    published[0].len()
                ))
            })?;
            let inner = gpuworthy_cuda::collective::Collective::for_rank(
                std::sync::Arc::clone(backend),
                rank.rank,
                rank.world,
                &id,
            );
            // Joined (or failed), every rank has read the identifier: rank 0 clears the key for the next run.
            if rank.rank == 0 {
                rank.clear(ID_KEY)?;
            }
            return Ok(Collective { inner: inner?, names: vec![format!("cuda:{}", backend.context().ordinal())] });
        }
        let _ = rank;
        Err(Error::invalid(format!("a rank's collective runs on a CUDA device, not {}", device.label())))
    }

    /// The number of ranks (every process's members).
    pub fn world(&self) -> usize {
        #[cfg(feature = "cuda")]
        return self.inner.world();
        #[cfg(not(feature = "cuda"))]
        0
    }

    /// How reports name this process's members, in rank order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// An all-reduce (a sum) of `bytes` of `f32`s over every rank: one to warm up and check, then `repeats` timed,
    /// each from enqueueing to every member done, on the host's clock.
    pub fn time_all_reduce(&self, bytes: usize, repeats: usize) -> Result<Stats> {
        let elements = bytes.div_ceil(4).max(1);
        #[cfg(feature = "cuda")]
        return Ok(Stats::from_samples(self.inner.time_all_reduce(elements, repeats)?));
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (elements, repeats);
            Err(not_built())
        }
    }

    /// A copy of `bytes` from member `from`'s memory to member `to`'s (positions among this process's members):
    /// one to warm up and check, then `repeats` timed.
    pub fn time_peer_copy(&self, from: usize, to: usize, bytes: usize, repeats: usize) -> Result<Stats> {
        #[cfg(feature = "cuda")]
        return Ok(Stats::from_samples(self.inner.time_peer_copy(from, to, bytes, repeats)?));
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (from, to, bytes, repeats);
            Err(not_built())
        }
    }
}

impl Collective {
    /// Whether every part of `resident` is a CUDA reduction whose value stays on its GPU, as
    /// [`DeviceGroup::launch_and_all_reduce`] needs.
    pub fn keeps_value_on_gpus<W: DeviceWorkload>(resident: &mut crate::device::group::GroupResident<W>) -> bool {
        #[cfg(feature = "cuda")]
        return resident
            .parts_mut()
            .into_iter()
            .all(|(_, _, data)| gpuworthy_cuda::collective::DeviceValue::of_reduction(data.data_mut()).is_some());
        #[cfg(not(feature = "cuda"))]
        {
            let _ = resident;
            false
        }
    }
}

/// One resident step of a reduction with its combine on the GPUs ([`DeviceGroup::launch_and_all_reduce`]), on the
/// host's clock, and where its time went.
#[derive(Debug, Clone)]
pub struct AllReduceStep<O> {
    /// The reduction's value.
    pub output: O,
    /// From the first launch to the value on the host.
    pub total: Duration,
    /// Enqueueing every member's launch.
    pub launches: Duration,
    /// Enqueueing the all-reduce: NCCL's group of one call per member (returns before the GPUs run it, unless NCCL
    /// waits).
    pub all_reduce: Duration,
    /// The first member's download of the sum: waiting for its kernel, the all-reduce, and the copy.
    pub download: Duration,
}

impl DeviceGroup {
    /// [`DeviceGroup::launch_and_join`] with the combine on the GPUs: every member's launch enqueued, the members'
    /// values added by an NCCL all-reduce on their own streams, and the sum downloaded from the first member alone.
    /// For a reduction (`sum`, an expression that reduces) resident on every member of `collective`'s group; the
    /// times are the host's, from the first launch to the value on the host, with each phase's share.
    pub fn launch_and_all_reduce<W: DeviceWorkload>(
        &self,
        collective: &Collective,
        resident: &mut crate::device::group::GroupResident<W>,
    ) -> Result<AllReduceStep<W::Output>> {
        if collective.names() != self.names() {
            return Err(Error::invalid(format!(
                "the collective joins {}, not this group's members {}",
                collective.names().join(","),
                self.names().join(",")
            )));
        }
        let holding = resident.parts().len();
        if holding != self.members().len() {
            return Err(Error::invalid(format!(
                "{holding} of {} members hold a part of {}: an all-reduce needs every member's",
                self.members().len(),
                W::NAME
            )));
        }
        if !Collective::keeps_value_on_gpus(resident) {
            return Err(Error::invalid(format!("{} is not a reduction whose value stays on its GPU", W::NAME)));
        }
        let started = std::time::Instant::now();
        #[cfg(feature = "cuda")]
        {
            use gpuworthy_cuda::collective::DeviceValue;
            self.launch_every_part(resident)?;
            let launches = started.elapsed();
            let mut parts = resident.parts_mut();
            let values = parts
                .iter_mut()
                .map(|(_, _, data)| {
                    DeviceValue::of_reduction(data.data_mut()).ok_or_else(|| {
                        Error::invalid(format!("{} is not a reduction whose value stays on its GPU", W::NAME))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            collective.inner.all_reduce_values(values)?;
            let all_reduce = started.elapsed() - launches;
            let (member, _, data) = &mut parts[0];
            let output = self.members()[*member].download::<W>(data)?;
            let total = started.elapsed();
            Ok(AllReduceStep { output, total, launches, all_reduce, download: total - launches - all_reduce })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (collective, started);
            Err(not_built())
        }
    }
}

/// Why nothing here runs in a build without the CUDA backend.
#[cfg(not(feature = "cuda"))]
fn not_built() -> Error {
    Error::Unavailable { backend: BackendKind::Cuda, reason: "gpuworthy was built without the cuda feature".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group with a member that is not CUDA has no collective, and says which member; NCCL itself is found or
    /// named as missing, never a panic.
    #[test]
    fn a_collective_is_refused_with_its_reason() {
        let group = DeviceGroup::new(vec![Device::cpu().unwrap(), Device::cpu().unwrap()]).unwrap();
        let refused = Collective::open(&group).unwrap_err().to_string();
        assert!(refused.contains("not a CUDA device") && refused.contains("cpu"), "{refused}");
        match Collective::nccl_version() {
            Ok(version) => assert!(version.starts_with("2."), "{version}"),
            Err(e) => assert!(e.is_unavailable(), "{e}"),
        }
    }
}
