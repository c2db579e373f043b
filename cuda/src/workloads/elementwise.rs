//! `square` and `saxpy`: `naive` launches one thread per element; `vec4` moves `float4`s in a grid-stride loop sized
//! to the device (a few blocks per multiprocessor), so each thread issues a quarter of the memory instructions.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::{Saxpy, SaxpyInput, Square};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::config;
use crate::{CudaBackend, driver_error};

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
    /// Launches `variant` over the resident vectors; `with_a` passes saxpy's scalar first.
    fn launch_elementwise(&self, variant: &Variant<Grid>, with_a: bool, r: &mut ElementwiseResident) -> Result<()> {
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        if r.n == 0 {
            return Ok(());
        }
        let n = r.n as u64;
        let block = self.elementwise_block_size();
        // The grid-stride variant keeps the same number of threads in flight per multiprocessor whatever the block.
        let blocks_per_sm = (32 * 256 / block as u64).max(1);
        let blocks = match variant.launch {
            Grid::StridedVec4 => n.div_ceil(4 * block as u64).min(blocks_per_sm * self.multiprocessors as u64),
            Grid::PerElement => n.div_ceil(block as u64),
        };
        let cfg = config((blocks, 1), (block, 1), 0)?;
        let mut launch = self.stream.launch_builder(&function);
        if with_a {
            launch.arg(&r.a);
        }
        launch.arg(&r.x).arg(&mut r.y).arg(&n);
        // SAFETY: the kernels take (float a,)? const float* x, float* y, unsigned long long n; x and y hold n floats
        // (at least one) in 256-byte aligned device allocations, so the vec4 kernels' float4 accesses are aligned.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
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
        self.launch_elementwise(variant, false, r)
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
        self.launch_elementwise(variant, true, r)
    }

    fn download(&self, r: &mut ElementwiseResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.n)
    }
}
