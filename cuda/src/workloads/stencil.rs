//! `stencil`: the 3×3 box blur. `naive` reads nine neighbours from global memory per pixel (the cache catches most
//! of them); `tiled` stages a 34×34 tile with its halo in shared memory and computes a 32×32 output tile from it.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::{Stencil, StencilInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int};
use crate::{CudaBackend, driver_error};

/// Resident data of `stencil`.
#[derive(Debug)]
pub struct StencilResident {
    height: usize,
    width: usize,
    src: CudaSlice<f32>,
    dst: CudaSlice<f32>,
}

/// The variants of `stencil`, with the rows of output one block covers (blocks are 32 × 8 threads).
pub(crate) static STENCIL: VariantTable<u64> = VariantTable {
    workload: "stencil",
    variants: &[Variant::new("naive", &["stencil_naive"], 8), Variant::new("tiled", &["stencil_tiled"], 32)],
};

impl Implements<Stencil> for CudaBackend {
    type Resident = StencilResident;

    fn variants(&self) -> Vec<&'static str> {
        STENCIL.names()
    }

    /// `tiled`: the halo staged in shared memory (169 against 278 µs at 8192² on an H200).
    fn best_variant(&self, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> &'static str {
        "tiled"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(STENCIL.lookup::<Stencil, _>(self, variant)?)
    }

    fn upload(&self, input: &StencilInput) -> Result<StencilResident> {
        Stencil::validate(input)?;
        int("image height", input.height)?;
        int("image width", input.width)?;
        Ok(StencilResident {
            height: input.height,
            width: input.width,
            src: self.to_device(&input.data)?,
            dst: self.zeros(input.data.len())?,
        })
    }

    fn launch(&self, variant: &str, r: &mut StencilResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = STENCIL.lookup::<Stencil, _>(self, variant)?;
        let (kernel, rows_per_block) = (variant.kernels[0], variant.launch);
        let function = self.function(kernel)?;
        if r.height == 0 || r.width == 0 {
            return Ok(());
        }
        let cfg = config(((r.width as u64).div_ceil(32), (r.height as u64).div_ceil(rows_per_block)), (32, 8), 0)?;
        let (h, w) = (int("image height", r.height)?, int("image width", r.width)?);
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&r.src).arg(&mut r.dst).arg(&h).arg(&w);
        // SAFETY: the kernels take (const float* src, float* dst, int height, int width); both hold height·width
        // floats and the grid covers the image in the tiles the kernel was written for.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    fn download(&self, r: &mut StencilResident) -> Result<Vec<f32>> {
        self.to_host(&r.dst, r.height * r.width)
    }
}
