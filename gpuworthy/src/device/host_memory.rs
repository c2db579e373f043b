//! How a device's data crosses between host and device memory, as an option of the facade: [`HostMemory`] (pageable,
//! pinned, pipelined), [`Device::open_with_host_memory`] and [`Device::with_host_memory`] to open a device that moves
//! data so, and [`Device::transfer_rates`] to measure the copies themselves.
//!
//! Only CUDA has a choice today; the option still lives here, beside [`Device`], so that code above the facade (the
//! command-line tool, the Python package) asks for it by name and never names the backend that has it. A device
//! whose backend has no such choice refuses a pinned or pipelined request with [`Error::InvalidInput`], saying which
//! backend has it, rather than quietly moving pageable memory; the CUDA crate's own enum stays the backend's, mapped
//! from this one in one place.

use gpuworthy_core::{Backend, BackendKind, Error, Result};

use crate::device::Device;
use crate::device::spec::DeviceSpec;

/// The kind of host memory a device's transfers go through.
///
/// ```
/// use gpuworthy::{Device, DeviceSpec, HostMemory};
///
/// // The CPU computes where its data already is: pageable memory is all it has, and pinned memory is refused.
/// let cpu = Device::open_with_host_memory(DeviceSpec::Cpu, HostMemory::Pageable)?;
/// assert_eq!(cpu.label().to_string(), "cpu");
/// let err = Device::open_with_host_memory(DeviceSpec::Cpu, HostMemory::Pinned).unwrap_err();
/// assert!(err.to_string().contains("CUDA"), "{err}");
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HostMemory {
    /// Ordinary (pageable) memory: what a `Vec` is. Every device can do this.
    #[default]
    Pageable,
    /// Page-locked memory, staged by the backend (CUDA only).
    Pinned,
    /// As [`HostMemory::Pinned`] for each phase alone; a whole run ([`Device::run`]) is pipelined: cut into chunks
    /// that flow through several streams, so that host staging, both copy directions and the kernels overlap (CUDA
    /// only).
    Pipelined,
}

impl HostMemory {
    /// The backends that can move data through this kind of memory.
    pub fn available_on(self, kind: BackendKind) -> bool {
        self == HostMemory::Pageable || kind == BackendKind::Cuda
    }

    /// The refusal of `what`, a device that cannot move data through this memory.
    fn refused_on(self, what: &dyn std::fmt::Display) -> Error {
        let name = match self {
            HostMemory::Pageable => "pageable",
            HostMemory::Pinned => "pinned",
            HostMemory::Pipelined => "pipelined",
        };
        Error::invalid(format!("{what} has no {name} host memory: pinned and pipelined transfers are CUDA's"))
    }
}

#[cfg(feature = "cuda")]
impl From<HostMemory> for gpuworthy_cuda::HostMemory {
    fn from(memory: HostMemory) -> Self {
        match memory {
            HostMemory::Pageable => gpuworthy_cuda::HostMemory::Pageable,
            HostMemory::Pinned => gpuworthy_cuda::HostMemory::Pinned,
            HostMemory::Pipelined => gpuworthy_cuda::HostMemory::Pipelined,
        }
    }
}

/// Measured host-device copy rates, in decimal GB/s ([`Device::transfer_rates`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransferRates {
    /// Bytes per copy.
    pub bytes: usize,
    /// Host to device from pageable memory.
    pub host_to_device_pageable: f64,
    /// Host to device from pinned memory.
    pub host_to_device_pinned: f64,
    /// Device to host into pageable memory.
    pub device_to_host_pageable: f64,
    /// Device to host into pinned memory.
    pub device_to_host_pinned: f64,
}

#[cfg(feature = "cuda")]
impl From<gpuworthy_cuda::TransferRates> for TransferRates {
    fn from(r: gpuworthy_cuda::TransferRates) -> Self {
        TransferRates {
            bytes: r.bytes,
            host_to_device_pageable: r.host_to_device_pageable,
            host_to_device_pinned: r.host_to_device_pinned,
            device_to_host_pageable: r.device_to_host_pageable,
            device_to_host_pinned: r.device_to_host_pinned,
        }
    }
}

impl Device {
    /// This device moving its data through pinned (page-locked) host staging memory, where its backend has that mode
    /// ([`HostMemory::Pinned`]); `None` for the other backends, and where the device cannot be opened a second time.
    pub fn with_pinned_host_memory(&self) -> Option<Device> {
        self.with_host_memory(HostMemory::Pinned).ok()
    }

    /// This device with its whole runs ([`Device::run`]) pipelined: data on the host cut into chunks that flow
    /// through several streams, so that host staging, both copy directions and the kernels overlap
    /// ([`HostMemory::Pipelined`]); each phase alone moves through pinned staging. `None` for the other backends, and
    /// where the device cannot be opened a second time.
    pub fn pipelined(&self) -> Option<Device> {
        self.with_host_memory(HostMemory::Pipelined).ok()
    }

    /// Opens the device `spec` names, moving its data through `memory`. [`HostMemory::Pageable`] is
    /// [`Device::open`]; pinned and pipelined memory are CUDA's, and any other device refuses them with
    /// [`Error::InvalidInput`] before it is opened.
    pub fn open_with_host_memory(spec: DeviceSpec, memory: HostMemory) -> Result<Device> {
        if !memory.available_on(spec.kind()) {
            return Err(memory.refused_on(&spec));
        }
        match spec {
            #[cfg(feature = "cuda")]
            DeviceSpec::Cuda { ordinal } if memory != HostMemory::Pageable => {
                gpuworthy_cuda::CudaBackend::with_host_memory(ordinal, memory.into()).map(Device::from)
            }
            spec => Device::open(spec),
        }
    }

    /// This device opened again, moving its data through `memory` (the device itself stays as it was). A device
    /// that has only pageable memory returns itself for [`HostMemory::Pageable`] and refuses the others with
    /// [`Error::InvalidInput`].
    pub fn with_host_memory(&self, memory: HostMemory) -> Result<Device> {
        match self {
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => {
                gpuworthy_cuda::CudaBackend::with_host_memory(b.context().ordinal(), memory.into()).map(Device::from)
            }
            _ if memory == HostMemory::Pageable => Ok(self.clone()),
            _ => Err(memory.refused_on(&self.label())),
        }
    }

    /// Measures this device's raw copy rates for `bytes` bytes each way, pageable and pinned, as the median of
    /// `repetitions` copies after one warm-up each. Only CUDA devices have a choice of host memory to compare: the
    /// others answer [`Error::Unsupported`].
    pub fn transfer_rates(&self, bytes: usize, repetitions: usize) -> Result<TransferRates> {
        // Built without CUDA, only the refusal is left, which needs neither.
        #[cfg(not(feature = "cuda"))]
        let _ = (bytes, repetitions);
        match self {
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => b.transfer_rates(bytes, repetitions).map(TransferRates::from),
            _ => Err(Error::unsupported(self.kind(), "transfer rates")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_and_pipelined_memory_are_refused_off_cuda_and_pageable_is_the_device_itself() {
        let cpu = Device::cpu().unwrap();
        assert!(cpu.with_host_memory(HostMemory::Pageable).unwrap().same_device(&cpu));
        for memory in [HostMemory::Pinned, HostMemory::Pipelined] {
            let err = cpu.with_host_memory(memory).unwrap_err();
            assert!(matches!(err, Error::InvalidInput(_)) && err.to_string().contains("CUDA"), "{err}");
            let err = Device::open_with_host_memory(DeviceSpec::Wgpu { adapter: None }, memory).unwrap_err();
            assert!(err.to_string().contains("wgpu has no"), "{err}");
        }
        assert!(matches!(cpu.transfer_rates(1 << 10, 1), Err(Error::Unsupported { .. })));
    }
}
