//! [`DeviceWorkload`]: which backends implement a workload, so that a [`crate::Device`] runs it where it can and
//! refuses it by name elsewhere.
//!
//! A workload type cannot be asked at run time whether a backend implements it, so each workload answers for each
//! backend: the eight built-in ones everywhere (generated from the one list of workloads), a workload defined in
//! another crate for the backends it has kernels for. The answer is a trait object of the backend's
//! [`Implements`](gpuworthy_core::Implements), through which the device's phases reach the backend's own types.

use gpuworthy_core::Workload;
use gpuworthy_cpu::CpuBackend;
#[cfg(feature = "cuda")]
use gpuworthy_cuda::CudaBackend;
#[cfg(feature = "wgpu")]
use gpuworthy_wgpu::WgpuBackend;

use crate::device::erased::ErasedImplements;

/// What [`crate::Device::best_variant`] answers on a backend that does not implement the workload: not a variant of
/// anything, so every phase given it refuses with [`Error::Unsupported`](gpuworthy_core::Error::Unsupported).
pub const NO_VARIANT: &str = "unsupported";

/// A workload a [`crate::Device`] can run, and which of its backends implement it.
///
/// Each method answers for one backend: `Some(backend)` where that backend implements the workload
/// ([`Implements<Self>`](gpuworthy_core::Implements)), `None` (the default) where it does not, and there the device
/// returns [`Error::Unsupported`](gpuworthy_core::Error::Unsupported). The eight built-in workloads run on every backend; a workload defined in another crate
/// implements what it can. One for the CPU alone:
///
/// ```
/// use gpuworthy::{Device, DeviceWorkload, ErasedImplements};
/// use gpuworthy::core::{Backend, BackendKind, Cost, Error, Implements, Mismatch, Precision, Result, Workload};
/// use gpuworthy::cpu::CpuBackend;
///
/// /// `y = x + 1`.
/// struct AddOne;
///
/// impl Workload for AddOne {
///     const NAME: &'static str = "add_one";
///     const LESSON: &'static str = "a workload of one's own";
///     type Params = usize;
///     type Input = Vec<f32>;
///     type Output = Vec<f32>;
///     fn params(input: &Vec<f32>) -> usize { input.len() }
///     fn validate(_: &Vec<f32>) -> Result<()> { Ok(()) }
///     fn generate(n: &usize, seed: u64) -> Result<Vec<f32>> { Ok((0..*n).map(|i| (i as u64 ^ seed) as f32).collect()) }
///     fn reference(x: &Vec<f32>) -> Result<Vec<f32>> { Ok(x.iter().map(|v| v + 1.0).collect()) }
///     fn check(_: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> std::result::Result<(), Mismatch> {
///         if expected == actual { Ok(()) } else { Err(Mismatch::new("differs")) }
///     }
///     fn host_bytes(n: &usize) -> Option<u64> { (*n as u64).checked_mul(8) }
///     fn cost(n: &usize) -> Cost { Cost { bytes: 8 * *n as u64, flops: *n as u64, elements: *n as u64 } }
///     fn ladder() -> Vec<usize> { vec![1 << 10, 1 << 16] }
///     fn quick_ladder() -> Vec<usize> { vec![1 << 10] }
///     fn conformance_params() -> Vec<usize> { vec![0, 1, 1000] }
///     fn special_inputs() -> Vec<(&'static str, Vec<f32>)> { Vec::new() }
/// }
///
/// impl Implements<AddOne> for CpuBackend {
///     type Resident = (Vec<f32>, Vec<f32>);
///     fn variants(&self) -> Vec<&'static str> { vec!["serial"] }
///     fn best_variant(&self, _: &usize) -> &'static str { "serial" }
///     fn prepare(&self, _: &str) -> Result<()> { Ok(()) }
///     fn upload(&self, x: &Vec<f32>) -> Result<Self::Resident> { Ok((x.clone(), Vec::new())) }
///     fn launch(&self, variant: &str, (x, y): &mut Self::Resident) -> Result<()> {
///         if variant != "serial" { return Err(Implements::<AddOne>::unknown_variant(self, variant)); }
///         *y = x.iter().map(|v| v + 1.0).collect();
///         Ok(())
///     }
///     fn download(&self, (_, y): &mut Self::Resident) -> Result<Vec<f32>> { Ok(y.clone()) }
/// }
///
/// impl DeviceWorkload for AddOne {
///     fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> { Some(backend) }
/// }
///
/// let x = AddOne::generate(&1000, 1)?;
/// assert_eq!(Device::cpu()?.run::<AddOne>("serial", &x)?, AddOne::reference(&x)?);
/// if let Ok(gpu) = Device::wgpu(None) {
///     let err = gpu.run::<AddOne>("serial", &x).unwrap_err();       // no WGSL for it: refused, by name
///     assert!(matches!(err, Error::Unsupported { backend: BackendKind::Wgpu, .. }));
///     assert!(err.to_string().contains("add_one"));
/// }
/// # Ok::<(), Error>(())
/// ```
pub trait DeviceWorkload: Workload {
    /// The CPU backend's implementation of this workload, if it has one: `Some(backend)`.
    fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        let _ = backend;
        None
    }

    /// The CUDA backend's implementation of this workload, if it has one: `Some(backend)`.
    #[cfg(feature = "cuda")]
    fn on_cuda(backend: &CudaBackend) -> Option<&dyn ErasedImplements<Self>> {
        let _ = backend;
        None
    }

    /// The wgpu backend's implementation of this workload, if it has one: `Some(backend)`.
    #[cfg(feature = "wgpu")]
    fn on_wgpu(backend: &WgpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        let _ = backend;
        None
    }
}

macro_rules! on_every_backend {
    ([] $($name:ident: $workload:ty),* $(,)?) => {$(
        impl DeviceWorkload for $workload {
            fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> {
                Some(backend)
            }

            #[cfg(feature = "cuda")]
            fn on_cuda(backend: &CudaBackend) -> Option<&dyn ErasedImplements<Self>> {
                Some(backend)
            }

            #[cfg(feature = "wgpu")]
            fn on_wgpu(backend: &WgpuBackend) -> Option<&dyn ErasedImplements<Self>> {
                Some(backend)
            }
        }
    )*};
}

gpuworthy_core::for_each_workload!(on_every_backend);

// A user's expression (`gpuworthy_core::expr`: the CPU evaluates it, CUDA and wgpu run code generated from it) and a
// raw kernel (`gpuworthy_core::raw`: every backend implements the workload, and refuses a kernel without a body for it
// with `Error::Unsupported` before any data is made) run on every backend too.
on_every_backend!([] expr: gpuworthy_core::expr::Expression, raw: gpuworthy_core::raw::Raw);
