//! `square` and `saxpy`: `naive` launches one thread per element; `vec4` moves `float4`s in a grid-stride loop sized
//! to the device (a few blocks per multiprocessor), so each thread issues a quarter of the memory instructions.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::workloads::{Saxpy, SaxpyInput, Square};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, phased, run_into_fresh};
use crate::pipeline::{OutputFrom, Pipeline, element_chunks};
use crate::{CudaBackend, HostMemory, driver_error};

/// Resident data of `square` and `saxpy`.
#[derive(Debug)]
pub struct ElementwiseResident {
    n: usize,
    a: f32,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// How an elementwise kernel covers the vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grid {
    /// One thread per element.
    PerElement,
    /// `float4`s in a grid-stride loop over a few blocks per multiprocessor.
    StridedVec4,
}

/// The variants of `square`.
pub(crate) static SQUARE: VariantTable<Grid> = VariantTable {
    workload: "square",
    variants: &[
        Variant::new("naive", &["square_naive"], Grid::PerElement),
        Variant::new("vec4", &["square_vec4"], Grid::StridedVec4),
    ],
};

/// The variants of `saxpy`.
pub(crate) static SAXPY: VariantTable<Grid> = VariantTable {
    workload: "saxpy",
    variants: &[
        Variant::new("naive", &["saxpy_naive"], Grid::PerElement),
        Variant::new("vec4", &["saxpy_vec4"], Grid::StridedVec4),
    ],
};

impl CudaBackend {
    /// Launches `variant` over the first `n` elements of `x` and `y` on `stream`; `a` is saxpy's scalar, passed first.
    fn launch_elementwise(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<Grid>,
        a: Option<f32>,
        x: &CudaView<'_, f32>,
        y: &mut CudaViewMut<'_, f32>,
        n: usize,
    ) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if n == 0 {
            return Ok(());
        }
        let n = n as u64;
        let block = self.elementwise_block_size();
        // The grid-stride variant keeps the same number of threads in flight per multiprocessor whatever the block.
        let blocks_per_sm = (32 * 256 / block as u64).max(1);
        let blocks = match variant.launch {
            Grid::StridedVec4 => n.div_ceil(4 * block as u64).min(blocks_per_sm * self.multiprocessors as u64),
            Grid::PerElement => n.div_ceil(block as u64),
        };
        let cfg = config((blocks, 1), (block, 1), 0)?;
        let mut launch = stream.launch_builder(&function);
        if let Some(a) = &a {
            launch.arg(a);
        }
        launch.arg(x).arg(y).arg(&n);
        // SAFETY: the kernels take (float a,)? const float* x, float* y, unsigned long long n; x and y hold at least
        // n floats and start 16-byte aligned (256-byte aligned allocations, views at multiples of a pipeline chunk),
        // so the vec4 kernels' float4 accesses are aligned.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    /// The launch of `variant` over the whole resident vectors, on the backend's stream.
    fn launch_resident(&self, variant: &Variant<Grid>, with_a: bool, r: &mut ElementwiseResident) -> Result<()> {
        let a = with_a.then_some(r.a);
        self.launch_elementwise(&self.stream, variant, a, &r.x.slice(..), &mut r.y.slice_mut(..), r.n)
    }

    /// A pipelined run (see [`HostMemory::Pipelined`]) into `output`: `x` (and saxpy's `y`) uploaded chunk by chunk,
    /// each chunk's result downloaded while the next ones are staged, copied and computed. `a` is saxpy's scalar.
    fn run_elementwise_pipelined(
        &self,
        variant: &Variant<Grid>,
        a: Option<f32>,
        x: &[f32],
        y: Option<&[f32]>,
        output: &mut Vec<f32>,
    ) -> Result<()> {
        self.prepare_kernels(variant)?;
        let n = x.len();
        crate::memory::host_output(output, n);
        if n == 0 {
            return Ok(());
        }
        let (ranges, chunks) = element_chunks(n, if y.is_some() { 2 } else { 1 }, true);
        let mut devices = vec![self.uninit::<f32>(n)?];
        let mut separate = None;
        let (inputs, output_from) = match y {
            Some(y) => {
                devices.push(self.uninit::<f32>(n)?);
                (vec![x, y], OutputFrom::Input(1))
            }
            None => (vec![x], OutputFrom::Buffer(separate.insert(self.uninit::<f32>(n)?))),
        };
        let job = Pipeline {
            inputs,
            chunks,
            output_from: vec![output_from],
            launch_on_backend_stream: false,
            outputs: vec![output.as_mut_slice()],
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let r = ranges[c].clone();
            match &mut output_from[0] {
                OutputFrom::Buffer(y) => self.launch_elementwise(
                    stream,
                    variant,
                    a,
                    &devices[0].slice(r.clone()),
                    &mut y.slice_mut(r.clone()),
                    r.len(),
                ),
                _ => {
                    let (x, y) = devices.split_at_mut(1);
                    self.launch_elementwise(
                        stream,
                        variant,
                        a,
                        &x[0].slice(r.clone()),
                        &mut y[0].slice_mut(r.clone()),
                        r.len(),
                    )
                }
            }
        })
    }
}

impl Implements<Square> for CudaBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        SQUARE.names()
    }

    /// `vec4`: `float4` accesses at the copy peak from 2^16 up.
    fn best_variant(&self, _params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(SQUARE.lookup::<Square, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<ElementwiseResident> {
        Ok(ElementwiseResident { n: x.len(), a: 0.0, x: self.to_device(x)?, y: self.zeros(x.len())? })
    }

    fn launch(&self, variant: &str, r: &mut ElementwiseResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = SQUARE.lookup::<Square, _>(self, variant)?;
        self.launch_resident(variant, false, r)
    }

    fn run(&self, variant: &str, x: &Vec<f32>) -> Result<Vec<f32>> {
        run_into_fresh::<Square>(self, variant, x)
    }

    fn run_into(&self, variant: &str, x: &Vec<f32>, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Square>(self, variant, x)?;
            return Ok(());
        }
        self.run_elementwise_pipelined(SQUARE.lookup::<Square, _>(self, variant)?, None, x, None, output)
    }

    fn download(&self, r: &mut ElementwiseResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }
}

impl Implements<Saxpy> for CudaBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        SAXPY.names()
    }

    /// `vec4`: `float4` accesses at the copy peak from 2^16 up.
    fn best_variant(&self, _params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(SAXPY.lookup::<Saxpy, _>(self, variant)?)
    }

    fn upload(&self, input: &SaxpyInput) -> Result<ElementwiseResident> {
        Saxpy::validate(input)?;
        Ok(ElementwiseResident {
            n: input.x.len(),
            a: input.a,
            x: self.to_device(&input.x)?,
            y: self.to_device(&input.y)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut ElementwiseResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = SAXPY.lookup::<Saxpy, _>(self, variant)?;
        self.launch_resident(variant, true, r)
    }

    fn run(&self, variant: &str, input: &SaxpyInput) -> Result<Vec<f32>> {
        run_into_fresh::<Saxpy>(self, variant, input)
    }

    fn run_into(&self, variant: &str, input: &SaxpyInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Saxpy>(self, variant, input)?;
            return Ok(());
        }
        Saxpy::validate(input)?;
        let variant = SAXPY.lookup::<Saxpy, _>(self, variant)?;
        self.run_elementwise_pipelined(variant, Some(input.a), &input.x, Some(&input.y), output)
    }

    fn download(&self, r: &mut ElementwiseResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }
}
