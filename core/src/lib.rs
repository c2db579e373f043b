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
//! assert!(Sum::check(&input, &expected, &(fast as f64), Precision::Fp32).is_ok());
//! println!("{} moves {} bytes", Sum::NAME, Sum::cost(&Len(1 << 16)).bytes);
//! # Ok::<(), gpuworthy_core::Error>(())
//! ```
//!
//! A backend implements it in phases (see [`Implements`]): `upload`, `launch` (asynchronous), `download`. The CPU,
//! CUDA and wgpu backends live in their own crates and depend on this one only.

#![deny(missing_docs)]

pub mod backend;
pub mod dtype;
pub mod env;
pub mod error;
pub mod expr;
pub mod kind;
pub mod memory;
pub mod precision;
#[cfg(feature = "proptest")]
pub mod random;
pub mod raw;
pub mod rng;
pub mod shard;
pub mod traffic;
pub mod variants;
pub mod wait;
pub mod workload;
pub mod workloads;

pub use backend::{
    Backend, DeviceInfo, DeviceType, Implements, KernelClock, MAX_LAUNCHES_PER_TIMING, QueueGuard, QueueLock,
    launches_per, spin_up, time_synchronous,
};
pub use dtype::Dtype;
pub use error::{Error, Result};
pub use kind::BackendKind;
pub use precision::Precision;
pub use variants::{KernelSource, Variant, VariantTable};
pub use wait::WaitLimit;
pub use workload::{Cost, InPlace, Mismatch, PartOutput, Resemblance, Sharding, Tolerance, Workload};

/// The one list of workloads: calls the macro `$callback` with every workload's name and type, so that code which
/// must do something for each workload (the names below, run-time dispatch by name, the facade's `Device`, the
/// conformance trials, the benches) is generated from this list and cannot miss one.
///
/// `for_each_workload!(path::to::callback)` expands to
/// `path::to::callback! { [] square: Square, saxpy: Saxpy, … }` (the types as full paths), and
/// `for_each_workload!(callback; extra tokens)` passes `extra tokens` inside the leading brackets, for the callback's
/// own arguments. Adding a workload means adding its line here and its own files (`core/src/workloads/<name>.rs`,
/// `cpu/src/kernels/<name>.rs`, `cuda/src/workloads/<name>.rs` with `cuda/kernels/<name>.cu`,
/// `wgpu-backend/src/workloads/<name>.rs` with `shaders/<name>.wgsl`): the modules are declared by
/// [`workload_modules!`] from this list, and every other list follows from it.
///
/// ```
/// macro_rules! count {
///     ([] $($name:ident: $workload:ty),* $(,)?) => { [$(stringify!($name)),*].len() };
/// }
/// assert_eq!(gpuworthy_core::for_each_workload!(count), gpuworthy_core::WORKLOAD_NAMES.len());
/// ```
#[macro_export]
macro_rules! for_each_workload {
    ($($callback:ident)::+ $(; $($extra:tt)*)?) => {
        $($callback)::+! {
            [$($($extra)*)?]
            square: $crate::workloads::Square,
            saxpy: $crate::workloads::Saxpy,
            sum: $crate::workloads::Sum,
            softmax: $crate::workloads::Softmax,
            matmul: $crate::workloads::Matmul,
            mandelbrot: $crate::workloads::Mandelbrot,
            histogram: $crate::workloads::Histogram,
            stencil: $crate::workloads::Stencil,
            scan: $crate::workloads::Scan,
        }
    };
}

/// Declares one module per workload of the list, named after the workload (`mod square; mod saxpy; …`), for
/// [`for_each_workload!`]: each crate keeps a workload's code in a file of that name, and this line declares them
/// all, so that a new workload's files join without an edit to the folder's `mod.rs`.
///
/// `for_each_workload!(gpuworthy_core::workload_modules)` declares private modules; with `; pub use` it also
/// re-exports each module's public items.
#[macro_export]
macro_rules! workload_modules {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        $(mod $name;)*
    };
    ([pub use] $($name:ident: $workload:ty),* $(,)?) => {
        $(mod $name; pub use $name::*;)*
    };
}

macro_rules! workload_names {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        /// The names of the workloads, in the order of the specification.
        pub const WORKLOAD_NAMES: &[&str] = &[$(<$workload as Workload>::NAME),*];

        #[cfg(test)]
        #[test]
        fn each_listed_name_is_its_workloads_name() {
            $(assert_eq!(stringify!($name), <$workload as Workload>::NAME);)*
        }
    };
}

for_each_workload!(workload_names);
