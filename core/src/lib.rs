//! # gpuworthy-core
//!
//! The part of gpuworthy that does not depend on where work runs: the eight [`workloads`], each a [`Workload`] with
//! its seeded input generator, scalar reference, tolerance check and [`Cost`]; the [`Backend`] and [`Implements`]
//! traits every backend implements; [`BackendKind`]; and the one [`enum@Error`] type.
//!
//! ## A guided tour
//!
//! A workload is described once:
//!
//! ```
//! use gpuworthy_core::{Precision, Workload, workloads::{Len, Sum}};
//!
//! let input = Sum::generate(&Len(1 << 16), 42)?;          // the same bytes on every backend
//! let expected = Sum::reference(&input)?;                  // sequential, in f64
//! let fast: f32 = input.iter().sum();                      // a naive f32 sum, for illustration
//! assert!(Sum::check(&input, &expected, &(fast as f64), Precision::Full).is_ok());
//! println!("{} moves {} bytes", Sum::NAME, Sum::cost(&Len(1 << 16)).bytes);
//! # Ok::<(), gpuworthy_core::Error>(())
//! ```
//!
//! A backend implements it in phases (see [`Implements`]): `upload`, `launch` (asynchronous), `download`. The CPU,
//! CUDA and wgpu backends live in their own crates and depend on this one only.

#![deny(missing_docs)]

pub mod backend;
pub mod env;
pub mod error;
pub mod memory;
pub mod rng;
pub mod workload;
pub mod workloads;

pub use backend::{
    Backend, BackendKind, DeviceInfo, Implements, KernelClock, MAX_LAUNCHES_PER_TIMING, QueueGuard, QueueLock,
    launches_per, spin_up, time_synchronous,
};
pub use error::{Error, Result};
pub use workload::{Cost, Mismatch, Precision, Tolerance, Workload};

/// The names of the eight workloads, in the order of the specification.
pub const WORKLOAD_NAMES: [&str; 8] =
    ["square", "saxpy", "sum", "softmax", "matmul", "mandelbrot", "histogram", "stencil"];
