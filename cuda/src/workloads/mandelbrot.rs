//! `mandelbrot`: one thread per pixel in 16×16 blocks. The kernel uses round-to-nearest intrinsics for every
//! operation, so no multiply-add is fused and the counts match the CPU reference exactly.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuworthy_core::workloads::{Mandelbrot, MandelbrotParams};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{config, int};
use crate::{CudaBackend, driver_error};

/// Resident data of `mandelbrot`: the parameters and the counts buffer.
#[derive(Debug)]
pub struct MandelbrotResident {
    params: MandelbrotParams,
    counts: CudaSlice<u32>,
}

/// The variants of `mandelbrot`.
pub(crate) static MANDELBROT: VariantTable<()> =
    VariantTable { workload: "mandelbrot", variants: &[Variant::new("naive", &["mandelbrot_naive"], ())] };

impl Implements<Mandelbrot> for CudaBackend {
    type Resident = MandelbrotResident;

    fn variants(&self) -> Vec<&'static str> {
        MANDELBROT.names()
    }

    /// The only variant.
    fn best_variant(&self, _params: &<Mandelbrot as gpuworthy_core::Workload>::Params) -> &'static str {
        "naive"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(MANDELBROT.lookup::<Mandelbrot, _>(self, variant)?)
    }

    fn upload(&self, p: &MandelbrotParams) -> Result<MandelbrotResident> {
        Mandelbrot::validate(p)?;
        int("image width", p.width)?;
        int("image height", p.height)?;
        Ok(MandelbrotResident { params: *p, counts: self.zeros(p.width * p.height)? })
    }

    fn launch(&self, variant: &str, r: &mut MandelbrotResident) -> Result<()> {
        let _queue = self.hold_queue();
        let variant = MANDELBROT.lookup::<Mandelbrot, _>(self, variant)?;
        let kernel = variant.kernels[0];
        let function = self.function(kernel)?;
        let p = r.params;
        if p.width == 0 || p.height == 0 {
            return Ok(());
        }
        let cfg = config(((p.width as u64).div_ceil(16), (p.height as u64).div_ceil(16)), (16, 16), 0)?;
        let (width, height) = (int("image width", p.width)?, int("image height", p.height)?);
        let (dx, dy) = p.steps();
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&mut r.counts).arg(&width).arg(&height).arg(&p.max_iter);
        launch.arg(&p.region.x_min).arg(&p.region.y_min).arg(&dx).arg(&dy);
        // SAFETY: mandelbrot_naive(unsigned* counts, int width, int height, unsigned max_iter, float x_min,
        // float y_min, float dx, float dy); counts holds width·height values and the grid covers the image.
        unsafe { launch.launch(cfg) }.map_err(driver_error(format!("launching {kernel}")))?;
        Ok(())
    }

    fn download(&self, r: &mut MandelbrotResident) -> Result<Vec<u32>> {
        self.to_host(&r.counts, r.params.width * r.params.height)
    }
}
