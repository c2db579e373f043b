//! Raw kernels on CUDA ([`gpuworthy_core::raw`]): the kernel's own CUDA C, compiled through the backend's NVRTC
//! cache ([`CudaBackend::custom_kernel`], keyed by a hash of the source and options, kept on disk like the generated
//! kernels) and launched on the backend's stream inside its queue lock, with the module's calling convention.
//!
//! Unlike an expression's, a raw kernel's indexing is the caller's: gpuworthy cannot split it into chunks or fold its
//! grid, so a shape past the grid's limits (2^31 - 1 blocks along x, 65535 along y) or past a C `int` is refused with
//! the limit named, before any allocation.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::raw::{Raw, RawInput, RawParams, Shape};
use gpuworthy_core::{Backend, Error, Implements, Result, Workload};

use crate::CudaBackend;
use crate::workloads::{int, launch_config};

/// The one variant: the kernel's CUDA C.
const KERNEL: &str = "kernel";

/// A raw kernel's arrays on the device, with what its launch passes.
pub struct RawOnDevice {
    params: RawParams,
    /// The kernel, found once at upload so that a launch does not hash its source again.
    kernel: crate::CustomKernel,
    inputs: Vec<CudaSlice<f32>>,
    outputs: Vec<CudaSlice<f32>>,
    n: usize,
}

/// The grid of blocks that covers `shape` with blocks of `block` threads.
fn grid(shape: Shape, block: (u32, u32)) -> (u64, u64) {
    let (width, height) = shape.extent();
    ((width as u64).div_ceil(u64::from(block.0)), (height as u64).div_ceil(u64::from(block.1)))
}

impl Implements<Raw> for CudaBackend {
    type Resident = RawOnDevice;

    fn variants(&self) -> Vec<&'static str> {
        vec![KERNEL]
    }

    /// A kernel without CUDA C is [`Error::Unsupported`]; a shape past the device's memory, a C `int` or the grid's
    /// limits is [`Error::TooLarge`] naming the limit.
    fn check_size(&self, params: &RawParams) -> Result<()> {
        let Some(body) = params.kernel.cuda_body() else {
            return Err(Error::unsupported(
                self.kind(),
                format!("raw kernel `{}` (it has no CUDA C)", params.kernel.name()),
            ));
        };
        if let Some(bytes) = self.device_memory() {
            gpuworthy_core::memory::check_device_memory::<Raw>(params, bytes, &self.device().name)?;
        }
        let (width, height) = params.shape.extent();
        int("a width", width)?;
        int("a height", height)?;
        int("a length", params.shape.elements()?)?;
        launch_config(grid(params.shape, body.block), body.block, 0).map(drop)
    }

    fn best_variant(&self, _: &RawParams) -> &'static str {
        KERNEL
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if variant == KERNEL { Ok(()) } else { Err(Implements::<Raw>::unknown_variant(self, variant)) }
    }

    /// Compiles the kernel's CUDA C (or finds it in the cache): its own phase in every measurement.
    fn prepare_for(&self, variant: &str, params: &RawParams) -> Result<()> {
        Implements::<Raw>::prepare(self, variant)?;
        Implements::<Raw>::check_size(self, params)?;
        let body = params.kernel.cuda_body().ok_or_else(|| Error::unsupported(self.kind(), params.kernel.name()))?;
        self.custom_kernel(&body.source, &body.entry, &[]).map(drop)
    }

    fn upload(&self, input: &RawInput) -> Result<RawOnDevice> {
        Raw::validate(input)?;
        Implements::<Raw>::check_size(self, &input.params)?;
        let n = input.params.shape.elements()?;
        let body = input
            .params
            .kernel
            .cuda_body()
            .ok_or_else(|| Error::unsupported(self.kind(), input.params.kernel.name()))?;
        let kernel = self.custom_kernel(&body.source, &body.entry, &[])?;
        let inputs = input.arrays.iter().map(|a| self.buffer_from(a)).collect::<Result<Vec<_>>>()?;
        let outputs = (0..input.params.kernel.outputs().len()).map(|_| self.buffer_zeroed(n)).collect::<Result<_>>()?;
        Ok(RawOnDevice { params: input.params.clone(), kernel, inputs, outputs, n })
    }

    fn launch(&self, variant: &str, data: &mut RawOnDevice) -> Result<()> {
        Implements::<Raw>::prepare(self, variant)?;
        let body =
            data.params.kernel.cuda_body().ok_or_else(|| Error::unsupported(self.kind(), data.params.kernel.name()))?;
        if data.n == 0 {
            return Ok(());
        }
        let config = launch_config(grid(data.params.shape, body.block), body.block, 0)?;
        let (width, height) = data.params.shape.extent();
        let shape: Vec<i32> = match data.params.shape {
            Shape::Line(n) => vec![int("a length", n)?],
            Shape::Grid { .. } => vec![int("a width", width)?, int("a height", height)?],
        };
        let scalars = &data.params.scalars;
        self.with_stream(|stream| {
            let mut launch = stream.launch_builder(data.kernel.function());
            for input in &data.inputs {
                launch.arg(input);
            }
            for output in &mut data.outputs {
                launch.arg(output);
            }
            for scalar in scalars {
                launch.arg(scalar);
            }
            for extent in &shape {
                launch.arg(extent);
            }
            // SAFETY: the arguments follow the raw-kernel convention the caller's source declares (one const float*
            // per input, one float* per output, one float per scalar, then int n or int width, int height), each
            // buffer holding the shape's elements (one at least); the grid covers the shape with the body's block.
            // What the kernel then touches is the caller's code, as with any hand-written kernel: it runs in device
            // memory, where an access out of bounds is a driver error returned by the next synchronisation, not a
            // write to this process's memory.
            unsafe { launch.launch(config) }
                .map(drop)
                .map_err(crate::driver_error(format!("launching `{}`", body.entry)))
        })
    }

    fn download(&self, data: &mut RawOnDevice) -> Result<Vec<Vec<f32>>> {
        data.outputs.iter().map(|output| self.read_buffer(output, data.n)).collect()
    }
}
