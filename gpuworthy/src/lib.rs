//! # gpuworthy
//!
//! Is this work worth sending to the GPU? This crate is the facade users depend on: it re-exports the workloads
//! ([`core`]) and the backends ([`cpu`], [`cuda`], [`wgpu`]), measures every phase a GPU user pays for ([`measure`]),
//! parses sizes as people write them ([`size`]) and picks a workload by name at run time ([`dispatch`]).
//!
//! ```
//! use gpuworthy::core::{Workload, workloads::{Len, Sum}};
//! use gpuworthy::{cpu::CpuBackend, measure::{MeasureOptions, measure}};
//!
//! let input = Sum::generate(&Len(1 << 20), 7)?;
//! let m = measure::<Sum, _>(&CpuBackend::new()?, "simd", &input, &MeasureOptions::quick())?;
//! println!("sum of 2^20: kernel {:?} (median of {})", m.kernel.median, m.kernel.samples);
//! # Ok::<(), gpuworthy::core::Error>(())
//! ```

#![deny(missing_docs)]

pub use gpuworthy_core as core;
pub use gpuworthy_cpu as cpu;
pub use gpuworthy_cuda as cuda;
pub use gpuworthy_wgpu as wgpu;

pub mod dispatch;
pub mod measure;
pub mod size;
