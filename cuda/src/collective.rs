//! GPU-to-GPU traffic through NCCL: a communicator over several CUDA devices, either every device of one process at
//! once (`ncclCommInitAll`) or this process's one device as a rank of a world of processes (`ncclCommInitRank`, the
//! ranks sharing the identifier rank 0 made), with the collectives a device group needs (an all-reduce of a
//! reduction's value) and the measurements calibration and the guide read (an all-reduce's time by size, a peer
//! copy's rate).
//!
//! NCCL is an existing engine, not one written here: cudarc's `nccl` module binds it and loads `libnccl` when first
//! used, so a machine without it builds and runs, and [`nccl_version`] names the missing library in
//! [`Error::Unavailable`] before anything calls into it. Each communicator enqueues on its member's own stream, the
//! one every phase of that backend runs on, so a collective is ordered after the kernel that wrote its data and
//! before the download that reads it, with no event in between.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits, sys};
use cudarc::nccl::{Comm, Id, NcclType, ReduceOp, result as nccl};
use gpuworthy_core::{BackendKind, Error, Result};

use crate::{CudaBackend, driver_error, lock};

/// The identifier every rank of one communicator passes to NCCL: rank 0 makes it ([`unique_id`]) and hands it to the
/// others, through a file or an address.
pub type UniqueId = [u8; 128];

/// NCCL's version (`22803` for 2.28.3): an [`Error::Unavailable`] naming NCCL where `libnccl` cannot be loaded.
pub fn nccl_version() -> Result<i32> {
    // SAFETY: the probes only try to open the shared libraries by name; they call no CUDA or NCCL function.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(unavailable("NCCL needs the NVIDIA driver library (libcuda), which was not found"));
    }
    // SAFETY: as above.
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err(unavailable(
            "NCCL's library (libnccl.so) was not found: install NCCL (a runtime-only install that has just \
             libnccl.so.2 also needs its development package's libnccl.so link)",
        ));
    }
    nccl::get_nccl_version().map_err(nccl_error("reading NCCL's version"))
}

/// A new identifier for one communicator (on rank 0, to hand to the other ranks).
pub fn unique_id() -> Result<UniqueId> {
    nccl_version()?;
    let id = Id::new().map_err(nccl_error("making a unique identifier"))?;
    Ok(id.internal().map(|c| c as u8))
}

/// A communicator over CUDA devices: one NCCL communicator per device this process drives, in rank order.
pub struct Collective {
    /// Locked while a collective is enqueued: NCCL's calls on one communicator must not interleave.
    comms: Mutex<Vec<Comm>>,
    /// The backends the communicators enqueue on, in the same order.
    members: Vec<Arc<CudaBackend>>,
    /// The number of ranks in the communicator (this process's members and every other process's).
    world: usize,
}

// SAFETY: an NCCL communicator is a handle that any thread may use, one thread at a time; every use goes through the
// mutex, and the handles are destroyed (`ncclCommAbort`, cudarc's drop) by whichever thread drops the last owner.
unsafe impl Send for Collective {}
// SAFETY: as above: shared access only reaches the communicators through the mutex.
unsafe impl Sync for Collective {}

impl std::fmt::Debug for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ordinals: Vec<usize> = self.members.iter().map(|m| m.context().ordinal()).collect();
        f.debug_struct("Collective").field("devices", &ordinals).field("world", &self.world).finish()
    }
}

/// A value an all-reduce adds across members, where it lies on its device.
pub enum DeviceValue<'a> {
    /// One `f64` (the built-in `sum`'s total).
    F64(&'a mut CudaSlice<f64>, usize),
    /// One `f32` (an expression reduction's result, after its partials).
    F32(&'a mut CudaSlice<f32>, usize),
}

impl<'a> DeviceValue<'a> {
    /// The value a resident reduction's download reads, where `resident` is this backend's resident data of one
    /// (the built-in `sum`, or an expression that reduces); `None` for any other data.
    pub fn of_reduction(resident: &'a mut dyn std::any::Any) -> Option<DeviceValue<'a>> {
        if resident.is::<crate::workloads::SumResident>() {
            let sum = resident.downcast_mut::<crate::workloads::SumResident>()?;
            return Some(DeviceValue::F64(sum.total_mut(), 0));
        }
        let expression = resident.downcast_mut::<crate::expr::ExprOnDevice>()?;
        expression.reduction_value().map(|(partials, at)| DeviceValue::F32(partials, at))
    }
}

impl Collective {
    /// One communicator over `members`, every one driven by this process (at least two, each a different device).
    /// Peer access is enabled between every pair that supports it, so that a peer copy goes over the devices' own
    /// link rather than through the host.
    pub fn one_process(members: &[Arc<CudaBackend>]) -> Result<Collective> {
        nccl_version()?;
        let mut ordinals: Vec<usize> = members.iter().map(|m| m.context().ordinal()).collect();
        if members.len() < 2 {
            return Err(Error::invalid("a collective needs at least two CUDA devices"));
        }
        ordinals.sort_unstable();
        if let Some(pair) = ordinals.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::invalid(format!(
                "cuda:{} appears twice: NCCL's members of one process are distinct devices",
                pair[0]
            )));
        }
        for a in members {
            for b in members {
                if !Arc::ptr_eq(a, b) {
                    enable_peer_access(a, b)?;
                }
            }
        }
        let streams = members.iter().map(|m| Arc::clone(m.stream())).collect();
        let comms = Comm::from_devices(streams).map_err(nccl_error("opening a communicator over the devices"))?;
        Ok(Collective { comms: Mutex::new(comms), members: members.to_vec(), world: members.len() })
    }

    /// This process's `member` as rank `rank` of `world`, every rank passing the same `id` (blocks until every rank
    /// has joined: NCCL's own rendezvous over the network interface the identifier names).
    pub fn for_rank(member: Arc<CudaBackend>, rank: usize, world: usize, id: &UniqueId) -> Result<Collective> {
        nccl_version()?;
        if world == 0 || rank >= world {
            return Err(Error::invalid(format!("rank {rank} of a world of {world}")));
        }
        let id = Id::uninit(id.map(|b| b as core::ffi::c_char));
        let comm = Comm::from_rank(Arc::clone(member.stream()), rank, world, id)
            .map_err(nccl_error(format!("joining the communicator as rank {rank} of {world}")))?;
        Ok(Collective { comms: Mutex::new(vec![comm]), members: vec![member], world })
    }

    /// The number of ranks in the communicator.
    pub fn world(&self) -> usize {
        self.world
    }

    /// The devices this process drives in it, in rank order.
    pub fn members(&self) -> &[Arc<CudaBackend>] {
        &self.members
    }

    /// Adds `values` (one per member of this process, in order) across every rank, each member's value replaced by
    /// the sum, enqueued on the members' streams after whatever they hold (nothing is waited for).
    pub fn all_reduce_values(&self, values: Vec<DeviceValue<'_>>) -> Result<()> {
        let comms = lock(&self.comms);
        if values.len() != comms.len() {
            return Err(Error::invalid(format!("{} values for {} members", values.len(), comms.len())));
        }
        let _queues = self.members.iter().map(|m| m.hold_queue()).collect::<Result<Vec<_>>>()?;
        grouped(|| {
            for (comm, value) in comms.iter().zip(values) {
                match value {
                    DeviceValue::F64(slice, at) => all_reduce_one(comm, slice, at)?,
                    DeviceValue::F32(slice, at) => all_reduce_one(comm, slice, at)?,
                }
            }
            Ok(())
        })
    }

    /// Times an all-reduce (a sum) of `elements` `f32`s on every member: one run to warm up (NCCL connects its
    /// channels on first use), then `repeats` runs, each from enqueueing on every member to every member's stream
    /// synchronised, on the host's clock as nccl-tests reads it. Checks the first run's result (every rank adds
    /// `rank + 1`) and returns the times.
    pub fn time_all_reduce(&self, elements: usize, repeats: usize) -> Result<Vec<Duration>> {
        if elements == 0 {
            return Err(Error::invalid("an all-reduce of no elements"));
        }
        let first_rank = self.first_rank()?;
        let mut buffers = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| m.to_device(&vec![(first_rank + i + 1) as f32; elements]))
            .collect::<Result<Vec<CudaSlice<f32>>>>()?;
        let run = |buffers: &mut Vec<CudaSlice<f32>>| -> Result<Duration> {
            let started = Instant::now();
            {
                let comms = lock(&self.comms);
                let _queues = self.members.iter().map(|m| m.hold_queue()).collect::<Result<Vec<_>>>()?;
                grouped(|| {
                    for (comm, buffer) in comms.iter().zip(buffers.iter_mut()) {
                        comm.all_reduce_in_place(buffer, &ReduceOp::Sum)
                            .map_err(nccl_error("enqueueing an all-reduce"))?;
                    }
                    Ok(())
                })?;
            }
            self.synchronize()?;
            Ok(started.elapsed())
        };
        run(&mut buffers)?;
        let expected = (self.world * (self.world + 1) / 2) as f32;
        for (member, buffer) in self.members.iter().zip(&buffers) {
            let values = member.to_host(buffer, elements)?;
            if let Some((at, value)) = values.iter().enumerate().find(|(_, v)| **v != expected) {
                return Err(Error::Device {
                    backend: BackendKind::Cuda,
                    message: format!(
                        "the all-reduce left {value} at element {at} on cuda:{}, not {expected}",
                        member.context().ordinal()
                    ),
                });
            }
        }
        (0..repeats.max(1)).map(|_| run(&mut buffers)).collect()
    }

    /// Times a copy of `bytes` from `from`'s memory to `to`'s (members of this process, by position), over their own
    /// link where peer access is on: one copy to warm up, then `repeats`, each on the host's clock to the copy's
    /// end. Checks that the bytes arrived.
    pub fn time_peer_copy(&self, from: usize, to: usize, bytes: usize, repeats: usize) -> Result<Vec<Duration>> {
        let (Some(source), Some(target)) = (self.members.get(from), self.members.get(to)) else {
            return Err(Error::invalid(format!("no members {from} and {to} among {}", self.members.len())));
        };
        let elements = bytes.div_ceil(4).max(1);
        let pattern: Vec<u32> = (0..elements as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let sent = source.to_device(&pattern)?;
        let mut received = target.zeros::<u32>(elements)?;
        let copy = |received: &mut CudaSlice<u32>| -> Result<Duration> {
            let started = Instant::now();
            {
                let _queue = target.hold_queue()?;
                target.stream().memcpy_dtod(&sent, received).map_err(driver_error("copying between devices"))?;
            }
            let _queue = target.hold_queue()?;
            target.wait_for_stream("copying between devices")?;
            Ok(started.elapsed())
        };
        copy(&mut received)?;
        if target.to_host(&received, elements)? != pattern {
            return Err(Error::Device {
                backend: BackendKind::Cuda,
                message: "a peer copy's bytes did not arrive as sent".into(),
            });
        }
        (0..repeats.max(1)).map(|_| copy(&mut received)).collect()
    }

    /// Waits for every member's stream.
    fn synchronize(&self) -> Result<()> {
        for member in &self.members {
            let _queue = member.hold_queue()?;
            member.wait_for_stream("waiting for a collective")?;
        }
        Ok(())
    }

    /// The rank of this process's first member.
    fn first_rank(&self) -> Result<usize> {
        let comms = lock(&self.comms);
        comms.first().map(|c| c.rank()).ok_or_else(|| Error::invalid("a collective with no members"))
    }
}

/// Runs `enqueue` between `ncclGroupStart` and `ncclGroupEnd`, so that one thread can enqueue a collective on several
/// communicators (each call alone would wait for the others' ranks); the group is ended also after an error.
fn grouped(enqueue: impl FnOnce() -> Result<()>) -> Result<()> {
    nccl::group_start().map_err(nccl_error("starting a group of collectives"))?;
    let enqueued = enqueue();
    let ended = nccl::group_end().map_err(nccl_error("ending a group of collectives"));
    enqueued.and(ended.map(|_| ()))
}

/// Enqueues an in-place all-reduce of element `at` of `slice` on `comm`.
fn all_reduce_one<T: NcclType + DeviceRepr + ValidAsZeroBits>(
    comm: &Comm,
    slice: &mut CudaSlice<T>,
    at: usize,
) -> Result<()> {
    if at >= slice.len() {
        return Err(Error::invalid(format!("element {at} of a buffer of {}", slice.len())));
    }
    let mut one = slice.slice_mut(at..at + 1);
    comm.all_reduce_in_place(&mut one, &ReduceOp::Sum).map_err(nccl_error("enqueueing an all-reduce")).map(|_| ())
}

/// Lets `from`'s kernels and copies reach `to`'s memory directly, where the two devices can (already enabled is
/// fine; a pair that cannot is left to the driver's copies through the host).
fn enable_peer_access(from: &CudaBackend, to: &CudaBackend) -> Result<()> {
    let mut can = 0;
    let (a, b) = (from.context().ordinal() as i32, to.context().ordinal() as i32);
    // SAFETY: writes one int through a valid pointer; both are devices the driver opened.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.context().cu_device(), to.context().cu_device()) }
        .result()
        .map_err(driver_error("asking whether two devices reach each other"))?;
    if can == 0 {
        return Ok(());
    }
    from.context().bind_to_thread().map_err(driver_error("binding a device's context"))?;
    // SAFETY: the current context is `from`'s (bound above) and `to`'s context is alive for the call.
    match unsafe { sys::cuCtxEnablePeerAccess(to.context().cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        other => {
            return Err(Error::Device {
                backend: BackendKind::Cuda,
                message: format!("enabling peer access from cuda:{a} to cuda:{b}: {other:?}"),
            });
        }
    }
    // Every buffer here comes from the device's default memory pool (allocated on the stream), which the context's
    // peer access does not reach: the pool itself must let the other device in, or a peer copy of its memory goes
    // through the host (38.4 GB/s between two H200s, against 380 GB/s for PyTorch's plain allocations).
    let mut pool = std::ptr::null_mut();
    // SAFETY: writes one pool handle through a valid pointer, for a device the driver opened.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, to.context().cu_device()) }
        .result()
        .map_err(driver_error("reading a device's memory pool"))?;
    let access = sys::CUmemAccessDesc {
        location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: a },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `pool` is `to`'s default pool (read above) and `access` one valid descriptor of a device that can reach
    // it (asked above).
    unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }
        .result()
        .map_err(driver_error(format!("letting cuda:{a} reach cuda:{b}'s memory pool")))
}

/// An [`Error::Unavailable`] for NCCL with this reason.
fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: BackendKind::Cuda, reason: reason.into() }
}

/// An [`Error::Device`] for an NCCL error while doing `what`, with NCCL's own words for it.
fn nccl_error(what: impl Into<String>) -> impl FnOnce(nccl::NcclError) -> Error {
    let what = what.into();
    move |e| {
        // SAFETY: ncclGetErrorString returns a static string for any result code; the library is loaded (the error
        // came from it).
        let text = unsafe { std::ffi::CStr::from_ptr(cudarc::nccl::sys::ncclGetErrorString(e.0)) };
        Error::Device { backend: BackendKind::Cuda, message: format!("NCCL, {what}: {}", text.to_string_lossy()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver (or without NCCL) every entry point is a clear `Unavailable`, never a panic; with both, the
    /// version is NCCL 2.x.
    #[test]
    fn nccl_is_found_or_named_as_missing() {
        match nccl_version() {
            Ok(version) => assert!(version >= 20000, "NCCL version {version}"),
            Err(e) => {
                assert!(e.is_unavailable(), "{e}");
                assert!(e.to_string().contains("NCCL") || e.to_string().contains("libcuda"), "{e}");
                assert!(unique_id().unwrap_err().is_unavailable());
            }
        }
    }
}
