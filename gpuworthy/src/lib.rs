//! # gpuworthy
//!
//! Is this work worth sending to the GPU? This crate is the facade users depend on: the run-time [`Device`] (the CPU,
//! a CUDA GPU or a wgpu adapter, chosen while the program runs) on which every workload runs through the same phases,
//! the workloads ([`core`]) and the backends ([`cpu`], [`cuda`], [`wgpu`]), the harness that measures every phase a
//! GPU user pays for ([`measure`]), sizes as people write them ([`measure::size`]), the built-in workloads chosen by
//! name ([`device::dispatch`]) and the run-time list of workloads that a program's own workloads join
//! ([`choose::catalog`]).
//!
//! The modules are folders that read in one direction, each standing on those before it: [`measure`] (timing, sizes,
//! names), [`device`] (what runs work), [`model`] (measurements into predictions), [`choose`] (the fastest device)
//! and [`user_code`] (users' own expressions and kernels).
//!
//! ```
//! use gpuworthy::Device;
//! use gpuworthy::core::{Workload, workloads::{Len, Sum}};
//! use gpuworthy::measure::MeasureOptions;
//!
//! let device = Device::from_env()?;                  // GPUWORTHY_BACKEND, else a GPU if usable, else the CPU
//! let input = Sum::generate(&Len(1 << 20), 7)?;
//! let variant = device.best_variant::<Sum>(&Len(1 << 20));
//! let total = device.run::<Sum>(variant, &input)?;
//! let m = device.measure::<Sum>(variant, &input, &MeasureOptions::quick())?;
//! println!("sum of 2^20 on {device}: {total}, kernel {:?} (median of {})", m.kernel.median, m.kernel.samples);
//! # Ok::<(), gpuworthy::core::Error>(())
//! ```
//!
//! ## Cargo features
//!
//! `cuda` and `wgpu` (both on by default) compile those backends in. Without one, opening its device returns
//! [`core::Error::NotCompiled`] naming the feature: `default-features = false, features = ["wgpu"]` builds a program
//! with the CPU and wgpu that does not link cudarc.

#![deny(missing_docs)]

pub use gpuworthy_core as core;
pub use gpuworthy_cpu as cpu;
#[cfg(feature = "cuda")]
pub use gpuworthy_cuda as cuda;
#[cfg(feature = "wgpu")]
pub use gpuworthy_wgpu as wgpu;

pub mod choose;
pub mod device;
pub mod measure;
pub mod model;
pub mod user_code;

pub use device::erased::ErasedImplements;
pub use device::foreign::PreparedExpression;
pub use device::host_memory::{HostMemory, TransferRates};
pub use device::listing::{AdapterSummary, ListedDevice};
pub use device::spec::DeviceSpec;
pub use device::{Device, DeviceLabel, DeviceWorkload, OpenedDevices, Resident};
