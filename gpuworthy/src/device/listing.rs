//! The devices each backend's driver reports, found without opening them ([`Device::list`]): what `gpuworthy devices`
//! shows and a program iterates to open every GPU it has.
//!
//! A listing is a [`DeviceSpec`] per device, the same value [`Device::open`] takes, so that code above the facade
//! counts and opens devices without naming a backend's type. Only wgpu describes an adapter before it is opened (a
//! CUDA device says its name once its context exists), so that description is the one optional part.

use std::fmt;

use gpuworthy_core::BackendKind;

use crate::device::Device;
use crate::device::spec::DeviceSpec;

/// A device a backend's driver reports, found without opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedDevice {
    /// How to open it ([`Device::open`]); its text is what `GPUWORTHY_BACKEND` and `--backend` take.
    pub spec: DeviceSpec,
    /// What the driver says of it before it is opened: a wgpu adapter's description; `None` for the CPU and CUDA
    /// devices, which are described once opened ([`Device::device`](gpuworthy_core::Backend::device)).
    pub adapter: Option<AdapterSummary>,
}

/// A wgpu adapter as its driver describes it, before a device is made on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// The adapter's name (`NVIDIA H200`, `llvmpipe (LLVM 19.1.1, 256 bits)`).
    pub name: String,
    /// Its type as wgpu names it (`DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu`, `Other`).
    pub device_type: String,
    /// The graphics API it is reached through (`vulkan`, `metal`, `dx12`).
    pub api: String,
    /// The driver's name.
    pub driver: String,
}

impl fmt::Display for AdapterSummary {
    /// `llvmpipe (LLVM 19.1.1, 256 bits) (Cpu, vulkan, llvmpipe)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {}, {})", self.name, self.device_type, self.api, self.driver)
    }
}

impl Device {
    /// Every device of `kind` this machine reports, in the driver's order, without opening any: the CPU; each CUDA
    /// ordinal the driver counts; each wgpu adapter in preference order, named by its index (`wgpu:0`, `wgpu:1`).
    /// A backend without a driver here, or left out of this build, lists nothing (never a panic).
    ///
    /// ```
    /// use gpuworthy::{Device, DeviceSpec};
    /// use gpuworthy::core::BackendKind;
    ///
    /// let cpus = Device::list(BackendKind::Cpu);
    /// assert_eq!(cpus.len(), 1);
    /// assert_eq!(cpus[0].spec, DeviceSpec::Cpu);
    /// for gpu in Device::list(BackendKind::Cuda) {
    ///     println!("{}", gpu.spec);                      // cuda:0, cuda:1, ...
    /// }
    /// ```
    pub fn list(kind: BackendKind) -> Vec<ListedDevice> {
        let plain = |spec| ListedDevice { spec, adapter: None };
        match kind {
            BackendKind::Cpu => vec![plain(DeviceSpec::Cpu)],
            BackendKind::Cuda => {
                #[cfg(feature = "cuda")]
                return (0..gpuworthy_cuda::CudaBackend::device_count())
                    .map(|ordinal| plain(DeviceSpec::Cuda { ordinal }))
                    .collect();
                #[cfg(not(feature = "cuda"))]
                Vec::new()
            }
            BackendKind::Wgpu => {
                #[cfg(feature = "wgpu")]
                return gpuworthy_wgpu::WgpuBackend::adapters()
                    .into_iter()
                    .enumerate()
                    .map(|(i, info)| ListedDevice {
                        spec: DeviceSpec::Wgpu { adapter: Some(i.to_string()) },
                        adapter: Some(AdapterSummary {
                            name: info.name,
                            device_type: format!("{:?}", info.device_type),
                            api: info.backend.to_string(),
                            driver: info.driver,
                        }),
                    })
                    .collect();
                #[cfg(not(feature = "wgpu"))]
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_device_names_its_own_backend_and_wgpu_adapters_are_described() {
        for kind in BackendKind::ALL {
            for listed in Device::list(kind) {
                assert_eq!(listed.spec.kind(), kind, "{}", listed.spec);
                assert_eq!(listed.adapter.is_some(), kind == BackendKind::Wgpu, "{}", listed.spec);
            }
        }
    }
}
